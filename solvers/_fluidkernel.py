"""Compiled (numba) kernel of ``solvers.fluid``: the same event loop and progressive filling, array-based.

Imported lazily by ``solvers.fluid`` when numba can be loaded; otherwise the
numpy loop there runs (the reference the tests compare this with).  Links of
infinite capacity (the intra-group dummy slot) are skipped, so a flow that
names one twice is counted once, as in ``max_min_rates``.
"""

from __future__ import annotations

import numpy as np

from ._ringkernel import _jit


@_jit
def fluid_time(slots, cap, private, nbytes, rnd, src, dst, todo0, w):  # pragma: no cover - compiled
    """Seconds until the last flow ends (see ``solvers.fluid.FluidCostModel.fluid_time``); ``w`` the
    flows' weights (weighted max-min shares; all 1: plain max-min)."""
    F, P = slots.shape
    L = cap.shape[0]
    n, R = todo0.shape
    todo = todo0.copy()
    left = nbytes.copy()
    done = np.zeros(F, dtype=np.bool_)
    n_done = 0
    for f in range(F):
        if left[f] <= 0.0:
            done[f] = True
            n_done += 1
            for r in (src[f], dst[f]):
                todo[r, rnd[f]] -= 1
    level = np.empty(n, dtype=np.int64)
    for r in range(n):
        k = 0
        while k < R and todo[r, k] == 0:
            k += 1
        level[r] = k
    run = np.empty(F, dtype=np.int64)
    rate = np.empty(F, dtype=np.float64)
    live = np.empty(F, dtype=np.bool_)
    best = np.empty(F, dtype=np.float64)
    remaining = np.empty(L, dtype=np.float64)
    count = np.empty(L, dtype=np.float64)  # live weight per link
    t = 0.0
    while n_done < F:
        a = 0
        for f in range(F):
            if not done[f] and level[src[f]] == rnd[f] and level[dst[f]] == rnd[f]:
                run[a] = f
                a += 1
        # progressive filling over the running flows
        for j in range(L):
            remaining[j] = cap[j]
            count[j] = 0.0
        for i in range(a):
            live[i] = True
            for q in range(P):
                s = slots[run[i], q]
                if np.isfinite(cap[s]):
                    count[s] += w[run[i]]
        n_live = a
        while n_live > 0:
            m = np.inf
            for i in range(a):
                if live[i]:
                    f = run[i]
                    b = private[f] / w[f]
                    for q in range(P):
                        s = slots[f, q]
                        if np.isfinite(cap[s]):
                            share = remaining[s] / count[s]
                            if share < b:
                                b = share
                    best[i] = b
                    if b < m:
                        m = b
            if not np.isfinite(m):
                raise ValueError("a flow crosses no link of finite capacity")
            lim = m * (1 + 1e-12)
            for i in range(a):
                if live[i] and best[i] <= lim:
                    live[i] = False
                    n_live -= 1
                    f = run[i]
                    rate[i] = m * w[f]
                    for q in range(P):
                        s = slots[f, q]
                        if np.isfinite(cap[s]):
                            remaining[s] = max(remaining[s] - m * w[f], 0.0)
                            count[s] -= w[f]
        dt = np.inf
        for i in range(a):
            need = left[run[i]] / rate[i]
            if need < dt:
                dt = need
        t += dt
        lim = dt * (1 + 1e-9)
        for i in range(a):
            f = run[i]
            if left[f] / rate[i] <= lim:
                left[f] = 0.0
                done[f] = True
                n_done += 1
                for r in (src[f], dst[f]):
                    todo[r, rnd[f]] -= 1
                    while level[r] < R and todo[r, level[r]] == 0:
                        level[r] += 1
            else:
                left[f] -= rate[i] * dt
    return t
