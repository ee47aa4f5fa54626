"""Compiled (numba) kernel of ``solvers.ringsearch``: the same moves, array-based.

Imported lazily by ``solvers.ringsearch`` when numba can be loaded (a
default dependency) and ``PLINK_NO_NUMBA`` is not set; everything here mirrors
the pure-Python ``_Tour`` (2-opt both directions, Or-opt of 1-3 hosts in
either orientation, Or-3opt segment exchange, all over neighbour lists with
a FIFO work queue) and ``iterated_local_search`` (local double bridge inside
a window, accept if no worse), so a local optimum of one is a local optimum
of the other.  The tour is an array ``t`` with inverse ``pos``; a 2-opt
move reverses the shorter side in place.  Random numbers come from a
xorshift64* generator whose state lives in a caller-owned array, so running
``k`` kicks in several calls gives exactly the tour of one call.

Compiled functions are cached on disk (``cache=True``), so only the first
run compiles (~10 s on a loaded 2-core machine); see :func:`cache_dir` for
where.  Where no location is writable they are compiled in memory on every
first call of a process.
"""

from __future__ import annotations

import os

import numpy as np
import numba

_EPS = 1e-10


def cache_dir() -> str | None:
    """The directory this module's compiled code is cached in, or None when
    numba's own choice applies.

    In order: ``NUMBA_CACHE_DIR`` when set (numba's own setting: None here);
    else the per-user ``${XDG_CACHE_HOME:-~/.cache}/plink/numba`` (created);
    None when that cannot be created (numba then tries next to this file, else
    its own user cache, else compiles in memory).  Never next to this file by
    choice: ``pip uninstall`` does not remove numba's files there, and the
    ``plink`` folder they leave in site-packages then shadows a later editable
    install (``import plink`` found an empty namespace package).  Only this
    module's functions are affected, not the caller's other numba code.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "plink", "numba")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


_CACHE_DIR = cache_dir()


def _jit(f):
    # numba picks a function's cache location when it is decorated: point it at
    # _CACHE_DIR for this module's functions only, then restore the setting
    saved = numba.config.CACHE_DIR
    if _CACHE_DIR:
        numba.config.CACHE_DIR = _CACHE_DIR
    try:
        return numba.njit(cache=True, nogil=True, error_model="numpy")(f)
    except Exception:  # no writable cache location: compile in memory
        return numba.njit(cache=False, nogil=True, error_model="numpy")(f)
    finally:
        numba.config.CACHE_DIR = saved


@_jit
def _next(state):
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return x * np.uint64(2685821657736338717)


@_jit
def _randbelow(state, m):
    return np.int64((_next(state) >> np.uint64(11)) % np.uint64(m))


@_jit
def _reverse(t, pos, u, v):
    n = t.shape[0]
    i = pos[u]
    j = pos[v]
    length = (j - i + n) % n + 1
    if 2 * length > n:
        i2 = j + 1
        if i2 == n:
            i2 = 0
        j2 = i - 1
        if j2 < 0:
            j2 = n - 1
        i = i2
        j = j2
        length = n - length
    for _ in range(length // 2):
        a = t[i]
        b = t[j]
        t[i] = b
        pos[b] = i
        t[j] = a
        pos[a] = j
        i += 1
        if i == n:
            i = 0
        j -= 1
        if j < 0:
            j = n - 1


@_jit
def _move_segment(t, pos, buf, s1, length, u, rev):
    """Move the ``length`` hosts starting at ``s1`` between ``u`` and succ(``u``)."""
    n = t.shape[0]
    i = pos[s1]
    for k in range(length):
        q = i + k
        if q >= n:
            q -= n
        buf[k] = t[q]
    if rev:
        for k in range(length // 2):
            tmp = buf[k]
            buf[k] = buf[length - 1 - k]
            buf[length - 1 - k] = tmp
    pu = pos[u]
    pv = pu + 1 if pu + 1 < n else 0
    lb = ((pu - i - length) % n + n) % n + 1
    lb2 = n - length - lb
    if lb <= lb2:  # region from i: [seg][lb hosts] -> [lb hosts][seg]
        for k in range(lb):
            dst = (i + k) % n
            x = t[(i + length + k) % n]
            t[dst] = x
            pos[x] = dst
        for k in range(length):
            dst = (i + lb + k) % n
            x = buf[k]
            t[dst] = x
            pos[x] = dst
    else:  # region from pv: [lb2 hosts][seg] -> [seg][lb2 hosts]
        for k in range(lb2 - 1, -1, -1):
            dst = (pv + length + k) % n
            x = t[(pv + k) % n]
            t[dst] = x
            pos[x] = dst
        for k in range(length):
            dst = (pv + k) % n
            x = buf[k]
            t[dst] = x
            pos[x] = dst


@_jit
def _exchange(t, pos, buf, t1, t2, t3, t4, t5, t6):
    """A B C with A=[t6..t1], B=[t2..t3], C=[t4..t5] -> A C B, rewriting the shortest adjacent pair."""
    n = t.shape[0]
    la = (pos[t1] - pos[t6] + n) % n + 1
    lb = (pos[t3] - pos[t2] + n) % n + 1
    lc = n - la - lb
    total, start, l1 = lb + lc, pos[t2], lb
    if (la + lb, pos[t6], la) < (total, start, l1):
        total, start, l1 = la + lb, pos[t6], la
    if (lc + la, pos[t4], lc) < (total, start, l1):
        total, start, l1 = lc + la, pos[t4], lc
    for k in range(total):
        buf[k] = t[(start + k) % n]
    l2 = total - l1
    for k in range(l2):
        dst = (start + k) % n
        x = buf[l1 + k]
        t[dst] = x
        pos[x] = dst
    for k in range(l1):
        dst = (start + l2 + k) % n
        x = buf[k]
        t[dst] = x
        pos[x] = dst


@_jit
def _improve_host(D, nb, t, pos, buf, a, touched):
    """Try the moves around host ``a``; apply the first improving one. Returns its gain or -1."""
    n = t.shape[0]
    K = nb.shape[1]
    pa = pos[a]
    succ_a = t[pa + 1 if pa + 1 < n else 0]
    pred_a = t[pa - 1 if pa > 0 else n - 1]
    # 2-opt, successor direction: remove (a,b),(c,d); add (a,c),(b,d)
    b = succ_a
    dab = D[a, b]
    for kk in range(K):
        c = nb[a, kk]
        g1 = dab - D[a, c]
        if g1 <= _EPS:
            break
        pc = pos[c]
        d = t[pc + 1 if pc + 1 < n else 0]
        if c == b or d == a:
            continue
        g = g1 + D[c, d] - D[b, d]
        if g > _EPS:
            _reverse(t, pos, b, c)
            touched[0] = a
            touched[1] = b
            touched[2] = c
            touched[3] = d
            return g, 4
    # 2-opt, predecessor direction
    b = pred_a
    dab = D[a, b]
    for kk in range(K):
        c = nb[a, kk]
        g1 = dab - D[a, c]
        if g1 <= _EPS:
            break
        pc = pos[c]
        d = t[pc - 1 if pc > 0 else n - 1]
        if c == b or d == a:
            continue
        g = g1 + D[c, d] - D[b, d]
        if g > _EPS:
            _reverse(t, pos, a, d)
            touched[0] = a
            touched[1] = b
            touched[2] = c
            touched[3] = d
            return g, 4
    # Or-opt: a segment of 1..3 hosts with a at one end, placed next to a neighbour c
    for length in range(1, 4):
        if length >= n - 2:
            break
        for af in range(2):
            a_first = af == 0
            if length == 1 and not a_first:
                continue
            if a_first:
                i = pa
            else:
                i = pa - length + 1
                if i < 0:
                    i += n
            s1 = t[i]
            j = i + length - 1
            if j >= n:
                j -= n
            s2 = t[j]
            p = t[i - 1 if i > 0 else n - 1]
            nx = t[j + 1 if j + 1 < n else 0]
            g1 = D[p, s1] + D[s2, nx] - D[p, nx]
            if g1 <= _EPS:
                continue
            for kk in range(K):
                c = nb[a, kk]
                dac = D[a, c]
                if dac >= g1 - _EPS:
                    break
                pc = pos[c]
                if (pc - i + n) % n < length:
                    continue
                # edge (c, succ c)
                e = t[pc + 1 if pc + 1 < n else 0]
                if (pos[e] - i + n) % n >= length:
                    if a_first:  # c s1..s2 e
                        add = dac + D[s2, e] - D[c, e]
                        rev = False
                    else:  # c s2..s1 e
                        add = dac + D[s1, e] - D[c, e]
                        rev = True
                    g = g1 - add
                    if g > _EPS:
                        _move_segment(t, pos, buf, s1, length, c, rev)
                        touched[0] = p
                        touched[1] = nx
                        touched[2] = s1
                        touched[3] = s2
                        touched[4] = c
                        touched[5] = e
                        return g, 6
                # edge (pred c, c)
                e = t[pc - 1 if pc > 0 else n - 1]
                if (pos[e] - i + n) % n >= length:
                    if a_first:  # e s2..s1 c
                        add = dac + D[e, s2] - D[e, c]
                        rev = True
                    else:  # e s1..s2 c
                        add = dac + D[e, s1] - D[e, c]
                        rev = False
                    g = g1 - add
                    if g > _EPS:
                        _move_segment(t, pos, buf, s1, length, e, rev)
                        touched[0] = p
                        touched[1] = nx
                        touched[2] = s1
                        touched[3] = s2
                        touched[4] = c
                        touched[5] = e
                        return g, 6
    # Or-3opt segment exchange: t1 [t2..t3] [t4..t5] t6 -> t1 [t4..t5] [t2..t3] t6
    t1 = a
    p1 = pa
    t2 = succ_a
    d12 = D[t1, t2]
    for kk in range(K):
        t4 = nb[t1, kk]
        g1 = d12 - D[t1, t4]
        if g1 <= _EPS:
            break
        if t4 == t2:
            continue
        p4 = pos[t4]
        t3 = t[p4 - 1 if p4 > 0 else n - 1]
        g1b = g1 + D[t3, t4]
        span = (p1 - p4 + n) % n
        for mm in range(K):
            t5 = nb[t2, mm]
            g2 = g1b - D[t2, t5]
            if g2 <= _EPS:
                break
            p5 = pos[t5]
            if (p5 - p4 + n) % n >= span:
                continue
            t6 = t[p5 + 1 if p5 + 1 < n else 0]
            g = g2 + D[t5, t6] - D[t3, t6]
            if g > _EPS:
                _exchange(t, pos, buf, t1, t2, t3, t4, t5, t6)
                touched[0] = t1
                touched[1] = t2
                touched[2] = t3
                touched[3] = t4
                touched[4] = t5
                touched[5] = t6
                return g, 6
        # with the first segment reversed: t1 [t4..t5] [t3..t2] t6
        if t3 == t2:
            continue
        for mm in range(K):
            t5 = nb[t3, mm]
            g2 = g1b - D[t3, t5]
            if g2 <= _EPS:
                break
            p5 = pos[t5]
            if (p5 - p4 + n) % n >= span:
                continue
            t6 = t[p5 + 1 if p5 + 1 < n else 0]
            g = g2 + D[t5, t6] - D[t2, t6]
            if g > _EPS:
                _exchange(t, pos, buf, t1, t2, t3, t4, t5, t6)
                _reverse(t, pos, t2, t3)
                touched[0] = t1
                touched[1] = t2
                touched[2] = t3
                touched[3] = t4
                touched[4] = t5
                touched[5] = t6
                return g, 6
    return -1.0, 0


@_jit
def _improve(D, nb, t, pos, buf, queue, qstate, inq):
    """Drain the FIFO work queue (``qstate`` = [head, count]); returns the total gain."""
    n = t.shape[0]
    touched = np.empty(6, dtype=np.int64)
    total = 0.0
    head = qstate[0]
    count = qstate[1]
    while count > 0:
        a = queue[head]
        head += 1
        if head == n:
            head = 0
        count -= 1
        inq[a] = False
        g, m = _improve_host(D, nb, t, pos, buf, a, touched)
        if m == 0:
            continue
        total += g
        for k in range(m):
            x = touched[k]
            if not inq[x]:
                inq[x] = True
                tail = head + count
                if tail >= n:
                    tail -= n
                queue[tail] = x
                count += 1
    qstate[0] = head
    qstate[1] = count
    return total


def local_search(D, nb, t):
    """2-opt + Or-opt + Or-3opt local optimum from tour ``t`` (modified in place).

    Passes over all hosts until one finds no improving move, so the result
    is a true local optimum of the neighbourhood (the work queue alone only
    re-examines hosts whose own tour edges changed).  A thin wrapper of
    ``ils_run`` (one compiled entry point keeps the first compile short).
    """
    ils_run(D, nb, t, np.empty_like(t), t.copy(), np.zeros(2), np.zeros(3, dtype=np.int64),
            np.ones(1, dtype=np.uint64), 0, 4, 0, 0, 0.0, True)


@_jit
def ils_run(D, nb, t, pos, best_t, fstate, istate, rng, n_kicks, window, stall, kick, temp, polish):
    """Run up to ``n_kicks`` perturbations of the iterated local search.

    ``t``/``pos``: the current tour (a local optimum) and its inverse;
    ``best_t``: the best tour; ``fstate`` = [current length, best length];
    ``istate`` = [kicks, last improving kick, improvements]; ``rng`` the
    generator state.  All are updated in place so that calls can be chained.
    Stops early when ``stall`` (> 0) kicks in a row did not improve the best.
    A worse tour is accepted with probability ``exp(-increase / temp)`` when
    ``temp`` > 0.
    ``polish``: first rebuild ``pos`` from ``t`` and make ``t`` a true local
    optimum by full passes over all hosts (``fstate`` is not updated: for
    ``local_search``, with ``n_kicks`` = 0).
    Returns the number of kicks run.
    """
    n = t.shape[0]
    buf = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    inq = np.zeros(n, dtype=np.bool_)
    qstate = np.zeros(2, dtype=np.int64)
    if polish:
        for i in range(n):
            pos[t[i]] = i
        while True:  # until a pass over all hosts finds no move (don't-look bits are a heuristic)
            queue[:] = t
            inq[:] = True
            qstate[0] = 0
            qstate[1] = n
            if _improve(D, nb, t, pos, buf, queue, qstate, inq) <= 0.0:
                break
    saved_t = t.copy()
    saved_pos = pos.copy()
    w = max(4, min(window, n // 2))
    cur = fstate[0]
    best = fstate[1]
    done = 0
    six = np.empty(6, dtype=np.int64)
    for _ in range(n_kicks):
        if stall > 0 and istate[0] - istate[1] >= stall:
            break
        istate[0] += 1
        done += 1
        i = _randbelow(rng, n)
        la = 1 + _randbelow(rng, w)
        lb = 1 + _randbelow(rng, w)
        if la + lb >= n - 1:
            la = 1
            lb = 1
        x = t[i]
        a1 = t[(i + 1) % n]
        a2 = t[(i + la) % n]
        b1 = t[(i + la + 1) % n]
        b2 = t[(i + la + lb) % n]
        y = t[(i + la + lb + 1) % n]
        if kick == 1:
            delta = (D[x, b2] + D[b1, a1] + D[a2, y]) - (D[x, a1] + D[a2, b1] + D[b2, y])
        else:
            delta = (D[x, b1] + D[b2, a1] + D[a2, y]) - (D[x, a1] + D[a2, b1] + D[b2, y])
        # rewrite positions i+1 .. i+la+lb as B A (or B^r A); log nothing: saved_* restore
        tot = la + lb
        for k in range(tot):
            buf[k] = t[(i + 1 + k) % n]
        for k in range(lb):
            dst = (i + 1 + k) % n
            xx = buf[la + lb - 1 - k] if kick == 1 else buf[la + k]
            t[dst] = xx
            pos[xx] = dst
        for k in range(la):
            dst = (i + 1 + lb + k) % n
            xx = buf[k]
            t[dst] = xx
            pos[xx] = dst
        six[0] = x
        six[1] = a1
        six[2] = a2
        six[3] = b1
        six[4] = b2
        six[5] = y
        qstate[0] = 0
        qstate[1] = 0
        for k in range(6):
            h = six[k]
            if not inq[h]:
                inq[h] = True
                queue[qstate[1]] = h
                qstate[1] += 1
        gain = _improve(D, nb, t, pos, buf, queue, qstate, inq)
        new = cur + delta - gain
        accept = new <= cur + _EPS
        if not accept and temp > 0.0:
            u = np.float64(_next(rng) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
            accept = u < np.exp(-(new - cur) / temp)
        if accept:
            if new < cur - _EPS:
                istate[2] += 1
            cur = new
            if cur < best - _EPS:
                best = cur
                best_t[:] = t
                istate[1] = istate[0]
            saved_t[:] = t
            saved_pos[:] = pos
        else:
            t[:] = saved_t
            pos[:] = saved_pos
    fstate[0] = cur
    fstate[1] = best
    return done
