"""Valid lower bounds on the cost models: how far from optimal can an order be?

``ring_lower_bound``: for a symmetric matrix, the Held-Karp 1-tree bound with
subgradient optimisation of node penalties (every tour is a 1-tree with all
degrees 2, so ``L(pi) = min 1-tree(c + pi_i + pi_j) - 2 sum pi`` is a lower
bound for every ``pi``).  Each iteration is a dense O(N^2) Prim's algorithm
in numpy; the number of iterations is capped by a time budget.  For an
asymmetric matrix, the weaker ``sum_h min_g c[h, g]`` (every host has a
successor) is used.

``round_lower_bound`` (``hd``, ``bcube``): in each round every host talks to
``p`` partners (1 for ``hd``, ``B - 1`` for BCube), so the round's maximum is
at least ``max_h`` of the ``p``-th cheapest exchange from ``h``; the bound is
the sum over rounds.  Non power-of-two ``hd`` adds the pre-step, in which
``2r`` of the hosts are paired: at least the ``2r``-th smallest per-host
cheapest exchange.

``dbt_lower_bound``: in each tree every host but the root has a parent edge
``c[parent, child]`` and the tree cost is at least any single edge under it,
so a tree costs at least the second largest per-host cheapest *incoming* edge
(at S/2; the direction matters for asymmetric costs), and at least the depth
times the cheapest edge.

References: M. Held, R. M. Karp, "The traveling-salesman problem and minimum
spanning trees", Oper. Res. 18, 1970, and Part II, Math. Prog. 1, 1971.
"""

from __future__ import annotations

import time

import numpy as np

from .costmodels import CostModel, dbt_levels


def _prim_one_tree(w: np.ndarray) -> tuple[float, np.ndarray]:
    """Minimum 1-tree of symmetric ``w`` (special node 0). Returns (weight, degrees). O(N^2)."""
    n = w.shape[0]
    deg = np.zeros(n, dtype=np.int64)
    # MST over nodes 1..n-1
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    in_tree[1] = True
    best = w[1].copy()
    parent = np.full(n, 1)
    best[in_tree] = np.inf
    total = 0.0
    for _ in range(n - 2):
        j = int(np.argmin(best))
        total += best[j]
        deg[j] += 1
        deg[parent[j]] += 1
        in_tree[j] = True
        best[j] = np.inf
        row = w[j]
        upd = (~in_tree) & (row < best)
        best[upd] = row[upd]
        parent[upd] = j
    # two cheapest edges from node 0
    r = w[0, 1:]
    two = np.argpartition(r, 1)[:2] + 1 if n > 3 else np.arange(1, n)
    total += float(w[0, two].sum())
    deg[0] += len(two)
    deg[two] += 1
    return float(total), deg


def ring_lower_bound(matrix: np.ndarray, upper: float | None = None, time_budget: float = 1.0, max_iter: int = 300) -> float:
    """Lower bound on every ring's cost over ``matrix`` (see module docstring)."""
    m = np.asarray(matrix, dtype=float)
    n = m.shape[0]
    if n < 2:
        return 0.0
    if n == 2:
        return float(m[0, 1] + m[1, 0])
    off = m + np.diag(np.full(n, np.inf))
    simple = float(off.min(axis=1).sum())
    if not np.allclose(m, m.T):
        return max(simple, float(off.min(axis=0).sum()))
    start = time.perf_counter()
    pi = np.zeros(n)
    best = -np.inf
    lam = 2.0
    stall = 0
    ub = upper
    for it in range(max_iter):
        w = m + pi[:, None] + pi[None, :]
        np.fill_diagonal(w, np.inf)
        tree, deg = _prim_one_tree(w)
        val = tree - 2.0 * pi.sum()
        if val > best + 1e-12:
            best, stall = val, 0
        else:
            stall += 1
            if stall >= 10:
                lam /= 2.0
                stall = 0
        g = deg - 2
        norm = float((g * g).sum())
        if norm == 0:  # the 1-tree is a tour: bound is tight
            break
        if time.perf_counter() - start > time_budget or lam < 1e-6:
            break
        target = ub if ub is not None and ub > val else val * 1.01 + 1e-9
        pi = pi + lam * (target - val) / norm * g
    # numerical safety: penalties are floats; shave a relative 1e-9
    bound = max(best, simple)
    return float(bound - abs(bound) * 1e-9)


def _sym_round_matrix(model: CostModel, size: float) -> np.ndarray:
    c = model.pc.matrix(size)
    c = np.maximum(c, c.T)
    np.fill_diagonal(c, np.inf)
    return c


def round_lower_bound(model: CostModel) -> float:
    """Lower bound for ``hd`` / ``bcube`` (see module docstring)."""
    n = model.n
    if n < 2:
        return 0.0
    total = 0.0
    cache: dict[tuple[float, int], np.ndarray] = {}
    latency_only = not np.any(model.pc.inv_bw)
    for ia, ib, frac in model._rounds:
        # distinct exchange partners per involved host (a round may list a pair once, as hd
        # does, or once from each side, as bcube does); the fewest of them is safe for all
        lo, hi = np.minimum(ia, ib), np.maximum(ia, ib)
        pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)
        hosts, counts = np.unique(pairs.ravel(), return_counts=True)
        involved = len(hosts)
        partners = max(1, int(counts.min()))
        key = (0.0 if latency_only else frac, partners)
        if key not in cache:
            c = _sym_round_matrix(model, model.size * frac)
            cache[key] = np.partition(c, partners - 1, axis=1)[:, partners - 1]
        kth = cache[key]
        # some `involved` of the n hosts take part: the round's max is at least the
        # involved-th smallest per-host value
        total += float(np.sort(kth)[involved - 1])
    return total


def dbt_lower_bound(model: CostModel) -> float:
    """Lower bound for ``dbt`` (see module docstring)."""
    n = model.n
    if n < 2:
        return 0.0
    c = model.pc.matrix(model.size / 2)
    np.fill_diagonal(c, np.inf)
    # a tree edge costs c[parent, child] (one direction): the cheapest edge *into* each host
    into = np.sort(c.min(axis=0))
    single = float(into[-2])  # every host but the root has a parent edge
    depth = len(dbt_levels(n))
    cheapest = float(np.min(c))
    return max(single, depth * cheapest)


def lower_bound(model: CostModel, upper: float | None = None, time_budget: float = 1.0) -> float:
    """The best cheap lower bound for ``model`` (any algorithm)."""
    if model.algo == "ring":
        return ring_lower_bound(model.ring_matrix, upper, time_budget)
    if model.algo in ("hd", "rd", "bcube"):
        return round_lower_bound(model)
    return dbt_lower_bound(model)
