"""Search rank orders under the shared-link model (``solvers.contention``): ``minimise_shared``.

Under contention a ring is no longer a travelling-salesman tour: its bandwidth
time is set by the busiest link of a step (a rack uplink carrying two flows doubles
it), not by a sum of hops.  What works:

1. **Exact** for small N: every order (host 0 fixed at rank 0 where the
   step structure is invariant under a transitive group of rank relabellings:
   ring rotations, ``hd``/``rd`` with N a power of two under ``XOR``, BCube
   digit shifts), priced in vectorised batches (``SharedCostModel.batch``).
   Up to ``solvers.exact.EXHAUSTIVE_MAX_EVALS`` orders: a certified optimum
   *of the shared model*.
2. **Group-contiguous starts**: each group's hosts on consecutive ranks, so a
   ring leaves and enters every group once (one flow per uplink direction)
   and the heavy first steps of halving-doubling / BCube and the subtrees of
   the tree stay inside groups.  Candidates: the groups in index order
   (rack-contiguous), groups by size (largest first, so power-of-two
   groups are aligned blocks of ``hd``/``rd``/BCube), and, for up to 6
   groups, every order of the groups (``G!``; for the ring, which costs the
   same rotated, and for 7 groups, the ``(G-1)!`` cyclic orders; from 8 groups on,
   the groups along a short tour by their mean latency, :func:`group_tour`); inside a group a
   nearest-neighbour path by latency, entered at the host closest to the
   previous group's exit host.  Until 2026-11-30 every algorithm got the
   cyclic orders only, so the first rank's group was fixed: for
   Rabenseifner over 24 ranks in 6 racks (proof case E, seed 23) the best of
   them was priced 10% above the best order of the racks (the first 16 ranks
   fold in pairs, so which racks come first matters), and the annealing did
   not close the gap.  **Group-interleaved starts** too (round-robin
   over the groups, in index order and largest first): they spread every
   step's flows evenly over the uplinks, which is what Open MPI's binary tree
   (every edge carries S at once) wants; on unequal racks annealing from the
   contiguous starts alone stayed 1.48x above them (proof run B).  Plus the caller's ``starts``, the input
   order, and greedy-edge and nearest-neighbour tours over the latencies
   (they keep racks together through the nearest pairs even when the
   inferred groups are wrong).
3. **Refinement**: batched simulated annealing under the full model.  Each
   iteration proposes ``batch`` moves (swap two ranks, swap two ranks of one
   group, reverse a segment, move a segment of 1-3 ranks, exchange two
   whole group blocks), prices them in one vectorised call, and takes the
   cheapest with the Metropolis rule.  The objective adds 1% of a smooth
   term (mean flow latency and root-mean-square link load per step) to
   break the plateaus of the max-based model; the best order is kept by the
   model's own cost.  Temperature ``1e-3`` of the start's cost, cooled
   geometrically to ``1e-6`` of it.
4. **Tie-break** (:func:`fewer_uplink_bytes`, the last fifth of the time):
   of the orders priced within the model's resolution (2%,
   ``solvers.resolution``) of the best found, the one sending the fewest
   bytes over group uplinks.  The model does not tell such orders apart
   (measured: pairs priced under 2% apart came out in the predicted order in
   44-66% of cases), and on the emulated cluster the one crossing the racks
   less measured faster more often than not: where plink's orders for one
   collective from a latency and a ``--bandwidth`` probe (each the best of
   its model) differ in bytes over the racks' uplinks, the one with fewer was
   faster in 14 of 19 (Open MPI's tree 7 of 11, recursive doubling 3 of 4,
   Rabenseifner 4 of 4; ``benchmarks/uplink_bytes_tally.py`` over the runs of
   2026-11-23 to 11-29).
5. **By price** (:func:`by_price`, when the caller reports with another
   model than the search's, as ``plink order`` does with the fluid one):
   the annealed order, or one of the ``PRICED_STARTS`` starts the clocks
   price lowest when the price is more than the tie tolerance lower.  The
   clocks and the fluid disagree most for Rabenseifner on unequal racks:
   on the 50 shipped proof runs the annealed order was priced 1.02-1.33x a
   start in 18 of 300 searches.  With every group order as a start too,
   over those 300 searches (``python benchmarks/search_starts.py``, same
   seed and iterations): the order is priced >2% lower in 26 (down to
   0.77x; Rabenseifner 18, recursive doubling 8), >2% higher in 3
   (recursive doubling, up to 1.045x: another annealing path), geometric
   mean 0.991.  A descent on the price after it (tried 2026-11-30) priced
   orders lower still but measured no better on proof case D seed 25
   (README): the price does not resolve differences of a few percent.

Complexity: exact O(evals x flows); per annealing iteration O(batch x
flows).  Deterministic for a seed with ``max_iter`` (candidate orders priced);
otherwise time-limited.  With ``keep_on_interrupt``, a ``KeyboardInterrupt``
(Ctrl-C) during the annealing ends it with the best order so far
(``info["interrupted"]``); otherwise it propagates as usual.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from .contention import SharedCostModel
from .exact import EXHAUSTIVE_MAX_EVALS
from .resolution import RESOLUTION
from .ringsearch import greedy_edge_tour, nearest_neighbour_tour
from .solve import SolveResult, interrupted_result

#: the tie-break's tolerance: orders priced within the model's resolution are not told apart by it
TIE_TOLERANCE = RESOLUTION
BATCH = 24  #: candidate orders priced per iteration, in the annealing and the tie-break
#: group orders enumerated as starts, at most: every order of up to 6 groups; of 7 groups (and for the
#: ring) the cyclic ones.  Every order of 7 groups (5,040) took 1.4 s to build and price for hd at 128
#: ranks (timed once on this machine, a random network: a scratch measurement, not a benchmark)
MAX_GROUP_ORDERS = 720
#: starting orders (the cheapest on the search's model) that ``by_price`` prices with the report's model
PRICED_STARTS = 32


def _transitive(model: SharedCostModel) -> bool:
    n = model.n
    if model.algo in ("ring", "bcube"):
        return True
    if model.algo in ("hd", "rd"):
        return (n & (n - 1)) == 0
    return False


def exact_count(model: SharedCostModel) -> int:
    n = model.n
    return math.factorial(n - 1) if _transitive(model) else math.factorial(n)


def exhaustive_shared(model: SharedCostModel, batch: int = 20000) -> tuple[np.ndarray, float]:
    """Optimal order of ``model`` by pricing every order (with symmetry breaking)."""
    n = model.n
    if _transitive(model):
        gen = ((0,) + p for p in itertools.permutations(range(1, n)))
    else:
        gen = itertools.permutations(range(n))
    best_cost, best = math.inf, None
    while True:
        chunk = list(itertools.islice(gen, batch))
        if not chunk:
            break
        arr = np.array(chunk, dtype=np.int64)
        c = model.batch(arr)
        i = int(np.argmin(c))
        if c[i] < best_cost:
            best_cost, best = float(c[i]), arr[i].copy()
    return best, float(model(best))


# ---------------------------------------------------------------------------
# group-contiguous starts


def _path(lat: np.ndarray, hosts: np.ndarray, start: int) -> list[int]:
    """Nearest-neighbour path through ``hosts`` from ``start`` (by latency)."""
    left = [int(h) for h in hosts if h != start]
    out = [int(start)]
    while left:
        row = lat[out[-1], left]
        j = int(np.argmin(row))
        out.append(left.pop(j))
    return out


def contiguous_order(lat: np.ndarray, groups: np.ndarray, group_order, paths: dict | None = None) -> np.ndarray:
    """Hosts group by group in ``group_order``; inside a group a nearest-neighbour path, entered at
    the host nearest the previous group's last one.  ``paths``: a dict kept between calls, so that
    many group orders share each ``(group, entry host)`` path (``group_starts``)."""
    out: list[int] = []
    for g in group_order:
        hosts = np.flatnonzero(groups == g)
        if len(hosts) == 0:
            continue
        start = int(hosts[0]) if not out else int(hosts[np.argmin(lat[out[-1], hosts])])
        key = (g, start)
        path = None if paths is None else paths.get(key)
        if path is None:
            path = _path(lat, hosts, start)
            if paths is not None:
                paths[key] = path
        out += path
    return np.array(out, dtype=np.int64)


def rack_contiguous(groups: np.ndarray) -> np.ndarray:
    """The plain alternative: groups in index order, hosts in index order inside each."""
    return np.argsort(np.asarray(groups), kind="stable").astype(np.int64)


#: :func:`contiguous_orders` tries every order of the groups up to this many (5 groups: 120)
CONTIGUOUS_ORDERS = 120


def group_distances(lat: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``(k, k)`` mean latency between the hosts of every two groups (both directions; unmeasured
    entries left out, a pair of groups with none at the largest mean found). O(N^2 + k^2)."""
    labels = np.asarray(groups)
    k = int(labels.max()) + 1
    sym = np.asarray(lat, dtype=float)
    sym = np.where(np.isfinite(sym), sym, np.nan)
    sym = np.nanmean(np.stack([sym, sym.T]), axis=0)  # (all-NaN pairs stay NaN, without a warning)
    onehot = np.zeros((len(labels), k))
    onehot[np.arange(len(labels)), labels] = 1.0
    ok = np.isfinite(sym)
    np.fill_diagonal(ok, False)
    total = onehot.T @ np.where(ok, sym, 0.0) @ onehot
    count = onehot.T @ ok.astype(float) @ onehot
    with np.errstate(invalid="ignore", divide="ignore"):
        dist = total / count
    finite = dist[np.isfinite(dist)]
    dist[~np.isfinite(dist)] = finite.max() if finite.size else 1.0
    np.fill_diagonal(dist, 0.0)
    return dist


def group_tour(lat: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The groups in the order of a short tour through them by :func:`group_distances` (greedy-edge
    tour, then 2-opt / Or-opt to a local optimum: :func:`plink.solvers.ringsearch.local_search`):
    what a user ordering racks by hand would do, nearest racks next to each other. O(k^2 log k)."""
    from .ringsearch import local_search

    dist = group_distances(lat, groups)
    k = len(dist)
    if k <= 3:
        return np.arange(k, dtype=np.int64)
    return np.asarray(local_search(dist, greedy_edge_tour(dist, k=min(10, k - 1))), dtype=np.int64)


def contiguous_orders(groups: np.ndarray, max_orders: int = CONTIGUOUS_ORDERS, seed: int = 0,
                      lat: np.ndarray | None = None) -> np.ndarray:
    """``(m, N)`` rack-contiguous orders: each group one block, hosts in index order inside it,
    the blocks in every order of the groups when there are at most ``max_orders`` (k! of them),
    else in index order, by size (largest first, then smallest first), with ``lat`` (an ``(N, N)``
    latency matrix) along a short tour through the groups (:func:`group_tour`), and seeded random
    orders up to ``max_orders``.  The first row is :func:`rack_contiguous`.  Which block comes where
    matters to a butterfly or a tree with unequal groups (which blocks meet at each step), and to
    a ring over groups far apart (PlanetLab's 163 groups: the best of 120 random orders of them was
    priced 3.9x plink's ring, the tour through them about 1.1x): the groups' numbering alone must
    not set the baseline plink's speedup is measured against.  O(m N)."""
    labels = np.asarray(groups)
    k = int(labels.max()) + 1 if labels.size else 0
    blocks = [np.flatnonzero(labels == g) for g in range(k)]
    if math.factorial(k) <= max_orders:
        perms = list(itertools.permutations(range(k)))
    else:
        sizes = np.array([len(b) for b in blocks])
        perms = [tuple(range(k)), tuple(int(g) for g in np.argsort(-sizes, kind="stable")),
                 tuple(int(g) for g in np.argsort(sizes, kind="stable"))]
        if lat is not None:
            perms.append(tuple(int(g) for g in group_tour(lat, labels)))
        perms = list(dict.fromkeys(perms))
        rng = np.random.default_rng(seed)
        seen = set(perms)
        while len(perms) < max_orders:
            p = tuple(int(g) for g in rng.permutation(k))
            if p not in seen:
                seen.add(p)
                perms.append(p)
    return np.array([np.concatenate([blocks[g] for g in p]) for p in perms], dtype=np.int64)


def interleaved_order(lat: np.ndarray, groups: np.ndarray, group_order) -> np.ndarray:
    """Round-robin over the groups in ``group_order``: rank ``j`` takes the next host of group
    ``j mod G`` (groups that run out drop out); inside a group a nearest-neighbour path.

    The opposite of group-contiguous: every collective step's flows are spread evenly over the
    group uplinks instead of concentrated on a few.  For Open MPI's binary tree (pipelined reduce
    and broadcast over every edge at once) this is what balances the uplinks.
    """
    paths = []
    for g in group_order:
        hosts = np.flatnonzero(groups == g)
        if len(hosts):
            paths.append(_path(lat, hosts, int(hosts[0])))
    out = [h for col in itertools.zip_longest(*paths) for h in col if h is not None]
    return np.array(out, dtype=np.int64)


def group_starts(model: SharedCostModel, max_groups_enumerated: int = 7) -> list[tuple[str, np.ndarray]]:
    lat = model.net.latency
    g = model.net.groups
    present = [int(x) for x in np.unique(g)]
    sizes = {k: int((g == k).sum()) for k in present}
    by_size = sorted(present, key=lambda k: (-sizes[k], k))
    out = [("rack-contiguous", rack_contiguous(g)),
           ("groups-by-size", contiguous_order(lat, g, by_size)),
           ("groups-interleaved", interleaved_order(lat, g, present)),
           ("groups-interleaved-by-size", interleaved_order(lat, g, by_size))]
    if 2 < len(present) <= max_groups_enumerated:
        # a ring costs the same rotated, so its cyclic orders of the groups are all of them; every other
        # algorithm tells a rotation apart (which groups the first ranks are: the non power-of-two fold of
        # hd/rd, the tree's root), so it gets every order while they are at most MAX_GROUP_ORDERS
        paths: dict = {}
        cyclic = model.algo == "ring" or math.factorial(len(present)) > MAX_GROUP_ORDERS
        head, rest = ((present[0],), present[1:]) if cyclic else ((), present)
        for perm in itertools.permutations(rest):
            out.append(("group-orders", contiguous_order(lat, g, head + perm, paths)))
    elif len(present) > max_groups_enumerated:
        # the groups along a short tour by their mean latency to each other (greedy edge, then 2-opt)
        out.append(("group-tour", contiguous_order(lat, g, group_tour(lat, g))))
    return out


# ---------------------------------------------------------------------------
# annealing


def _propose(perm: np.ndarray, groups: np.ndarray, rng: np.random.Generator, k: int) -> np.ndarray:
    n = len(perm)
    out = np.repeat(perm[None, :], k, axis=0)
    kinds = rng.integers(0, 5, size=k)
    for m in range(k):
        p = out[m]
        kind = kinds[m]
        if kind == 0:  # swap two ranks
            i, j = rng.choice(n, 2, replace=False)
            p[i], p[j] = p[j], p[i]
        elif kind == 1:  # swap two ranks whose hosts share a group
            i = int(rng.integers(n))
            same = np.flatnonzero(groups[p] == groups[p[i]])
            j = int(rng.choice(same))
            p[i], p[j] = p[j], p[i]
        elif kind == 2:  # reverse a segment
            i, j = sorted(rng.choice(n + 1, 2, replace=False))
            p[i:j] = p[i:j][::-1].copy()
        elif kind == 3:  # move a segment of 1-3 ranks
            ln = int(rng.integers(1, min(3, n - 1) + 1))
            i = int(rng.integers(0, n - ln + 1))
            seg = p[i:i + ln].copy()
            rest = np.concatenate([p[:i], p[i + ln:]])
            j = int(rng.integers(0, len(rest) + 1))
            out[m] = np.concatenate([rest[:j], seg, rest[j:]])
        else:  # exchange two maximal runs of one group each (group blocks)
            runs = np.flatnonzero(np.diff(groups[p]) != 0) + 1
            bounds = np.concatenate([[0], runs, [n]])
            if len(bounds) < 3:
                i, j = rng.choice(n, 2, replace=False)
                p[i], p[j] = p[j], p[i]
                continue
            a, b = sorted(rng.choice(len(bounds) - 1, 2, replace=False))
            A, B = p[bounds[a]:bounds[a + 1]], p[bounds[b]:bounds[b + 1]]
            out[m] = np.concatenate([p[:bounds[a]], B, p[bounds[a + 1]:bounds[b]], A, p[bounds[b + 1]:]])
    return out


def anneal_shared(model: SharedCostModel, init, *, time_limit: float = 2.0, max_iter: int | None = None,
                  seed: int = 0, batch: int = BATCH, deadline: float | None = None,
                  stopped: dict | None = None) -> tuple[np.ndarray, float, int]:
    """Batched annealing from ``init`` (see module docstring). Returns ``(perm, cost, iterations)``.

    ``max_iter`` counts candidate orders priced (``batch`` per iteration), like the
    pair-sum annealer's single moves, so the same budget costs about the same.
    With ``stopped`` (a dict) given, a ``KeyboardInterrupt`` ends the search with the best
    order so far and sets ``stopped["interrupted"] = True``; without it, it propagates.
    """
    rng = np.random.default_rng(seed)
    cur = np.asarray(init, dtype=np.int64).copy()
    n = len(cur)
    if n < 3:
        return cur, model(cur), 0
    groups = model.net.groups
    c0, s0 = model.batch(cur[None, :], smooth=True)
    cur_c = float(c0[0])
    cur_obj = cur_c + 0.01 * float(s0[0])
    best, best_c, best_obj = cur.copy(), cur_c, cur_obj
    t0 = 1e-3 * max(cur_c, 1e-12)
    start = time.perf_counter()
    stop = deadline if deadline is not None else start + time_limit
    it = 0
    iters = None if max_iter is None else -(-int(max_iter) // batch)
    try:
        while True:
            if iters is not None:
                if it >= iters:
                    break
                frac = it / max(1, iters)
            else:
                now = time.perf_counter()
                if now >= stop:
                    break
                frac = (now - start) / max(1e-9, stop - start)
            temp = t0 * 1e-3 ** frac
            cand = _propose(cur, groups, rng, batch)
            c, soft = model.batch(cand, smooth=True)
            obj = c + 0.01 * soft
            k = int(np.argmin(obj))
            d = obj[k] - cur_obj
            if d <= 0 or rng.random() < math.exp(-d / temp):
                cur, cur_c, cur_obj = cand[k].copy(), float(c[k]), float(obj[k])
                if cur_c < best_c - 1e-15 or (cur_c <= best_c + 1e-15 and cur_obj < best_obj):
                    best, best_c, best_obj = cur.copy(), cur_c, cur_obj
            it += 1
    except KeyboardInterrupt:  # Ctrl-C: the best order so far (its cost is recomputed below)
        if stopped is None:
            raise
        stopped["interrupted"] = True
    return best, float(model(best)), it


def fewer_uplink_bytes(model: SharedCostModel, perm, cost: float, *, tolerance: float = TIE_TOLERANCE,
                       others=(), other_costs=None, iters: int = 200, patience: int = 60, seed: int = 0,
                       batch: int = BATCH, deadline: float | None = None) -> tuple[np.ndarray, float, dict]:
    """The tie-break: among orders priced within ``tolerance`` of ``cost`` (the best found), one that
    sends the fewest bytes over group uplinks (``SharedCostModel.uplink_bytes``), then the cheapest.

    Starts from the cheapest-in-bytes of ``perm`` and ``others`` (e.g. the search's starting orders)
    inside the bound (``other_costs``: ``model``'s prices of ``others`` when the caller has them), then
    descends by the annealer's moves (batches of ``batch``) for up to ``iters``
    iterations, stopping after ``patience`` without a gain or at ``deadline``.  Returns
    ``(perm, its cost, info)``; ``info`` gives the bytes before and after.  O(iters x batch x flows).
    """
    bound = cost * (1.0 + tolerance) + 1e-15
    groups = model.net.groups
    pool = [np.asarray(perm, dtype=np.int64)] + [np.asarray(o, dtype=np.int64) for o in others]
    pc = (model.batch(np.array(pool)) if other_costs is None
          else np.concatenate([model.batch(pool[0][None, :]), np.asarray(other_costs, dtype=float)]))
    pb = model.uplink_bytes(np.array(pool))
    first_bytes = float(pb[0])
    ok = np.flatnonzero(pc <= bound)
    k = int(ok[np.lexsort((pc[ok], pb[ok]))[0]])
    cur, cur_c, cur_b = pool[k].copy(), float(pc[k]), float(pb[k])
    rng = np.random.default_rng(seed)
    idle = done = 0
    while done < iters and idle < patience and (deadline is None or time.perf_counter() < deadline):
        cand = _propose(cur, groups, rng, batch)
        c, b = model.batch(cand), model.uplink_bytes(cand)
        done += 1
        fit = np.flatnonzero(c <= bound)
        if len(fit):
            j = int(fit[np.lexsort((c[fit], b[fit]))[0]])
            if b[j] < cur_b - 1e-9 or (b[j] <= cur_b + 1e-9 and c[j] < cur_c - 1e-15):
                cur, cur_c, cur_b, idle = cand[j].copy(), float(c[j]), float(b[j]), 0
                continue
        idle += 1
    info = {"tolerance": tolerance, "uplink_bytes_before": first_bytes, "uplink_bytes": cur_b,
            "cost_before": float(cost), "iterations": done}
    return cur, cur_c, info


def _starting_orders(model, init, starts) -> tuple[list, np.ndarray]:
    """The search's starting orders ``[(name, perm)]`` (the input, ``starts``, the group
    heuristics, two tours) and their costs."""
    sym = np.maximum(model.net.latency, model.net.latency.T)
    tours = [("greedy-edge", greedy_edge_tour(sym)), ("nearest-neighbour", nearest_neighbour_tour(sym, 0))]
    cands = [("input", init)] + list(starts) + group_starts(model) + tours
    return cands, model.batch(np.array([p for _, p in cands]))


def by_price(price, model: SharedCostModel, perm, others, *, costs=None, tolerance: float = TIE_TOLERANCE,
             keep: int = PRICED_STARTS) -> tuple[np.ndarray, float, dict | None]:
    """The search's ``perm``, or the order ``price`` (another model of the same collective, e.g. the
    fluid one of ``solvers.fluid``) prices lowest when that is more than ``tolerance`` below it.

    The candidates are ``perm`` and the ``keep`` orders of ``others`` (the search's starting
    orders) that ``model`` prices lowest (``costs``: those prices, when the caller has them).  The
    search minimises ``model``; where the report prices
    with ``price``, the order it anneals to can be priced above a starting order it left (on the
    saved proof probes, Rabenseifner's annealed order was priced up to 1.33x a start:
    ``benchmarks/search_starts.py``).
    Of the candidates within ``tolerance`` of the cheapest, the fewest bytes over group uplinks
    wins, as in the tie-break.  Returns ``(order, its price, info or None when perm stays)``.
    O(keep) prices plus sorting the starts.
    """
    perm = np.asarray(perm, dtype=np.int64)
    others = [np.asarray(o, dtype=np.int64) for o in others]
    if others:
        order = np.argsort(model.batch(np.array(others)) if costs is None else np.asarray(costs),
                           kind="stable")[:keep]
        others = [others[i] for i in order]
    pool = [perm] + others
    pc = np.array([float(price(o)) for o in pool])
    j = int(np.argmin(pc))
    if not pc[j] * (1.0 + tolerance) < pc[0]:
        return perm, float(pc[0]), None
    near = np.flatnonzero(pc <= pc[j] * (1.0 + tolerance) + 1e-15)
    pb = model.uplink_bytes(np.array([pool[i] for i in near]))
    k = int(near[np.lexsort((pc[near], pb))[0]])
    return pool[k], float(pc[k]), {"price_before": float(pc[0]), "price": float(pc[k]), "candidates": len(pool)}


def minimise_shared(model: SharedCostModel, *, init=None, starts=(), time_limit: float = 5.0, seed: int = 0,
                    max_iter: int | None = None, exact: bool = True,
                    max_evals: int = EXHAUSTIVE_MAX_EVALS, keep_on_interrupt: bool = False,
                    tie_break: bool = True, price=None) -> SolveResult:
    """Minimise the shared-link model over rank orders (see module docstring); with ``tie_break``
    (default), of the orders priced within ``TIE_TOLERANCE`` of the best found, the one with the
    fewest bytes over group uplinks (:func:`fewer_uplink_bytes`; not after an exhaustive search).
    ``price``: the model the caller reports with, when not ``model``; the result is then the
    annealed order or a starting order priced lower by ``price`` (:func:`by_price`), and its
    ``cost`` is ``model``'s."""
    if not (time_limit > 0):
        raise ValueError(f"time limit must be > 0 seconds, got {time_limit}")
    t_start = time.perf_counter()
    n = model.n
    init = np.arange(n, dtype=np.int64) if init is None else np.asarray(init, dtype=np.int64)
    if sorted(init.tolist()) != list(range(n)):
        raise ValueError("the initial order is not a permutation of the hosts")
    cost_init = model(init)
    if n <= 2:
        return SolveResult(init, cost_init, True, cost_init, "trivial", {"note": "every order costs the same for N <= 2"})
    if exact and exact_count(model) <= max_evals:
        try:
            perm, cost = exhaustive_shared(model)
        except KeyboardInterrupt:
            if not keep_on_interrupt:
                raise
            return interrupted_result(*_starting_orders(model, init, starts), t_start, {"search": "exhaustive"})
        if cost > cost_init:
            perm, cost = init, cost_init
        return SolveResult(perm, cost, True, cost, "exhaustive",
                           {"seconds": round(time.perf_counter() - t_start, 3), "orders": exact_count(model)})
    cands, costs = _starting_orders(model, init, starts)
    k = int(np.argmin(costs))
    name, start_perm = cands[k]
    stopped: dict = {}
    tie = tie_break and model.has_uplinks()
    # the tie-break gets the last fifth of the time (with max_iter: a fifth as many iterations more)
    perm, cost, iters = anneal_shared(model, start_perm, time_limit=time_limit, max_iter=max_iter, seed=seed,
                                      deadline=t_start + time_limit * (0.8 if tie else 1.0),
                                      stopped=stopped if keep_on_interrupt else None)
    if cost > costs[k]:
        perm, cost = start_perm, float(costs[k])
    info = {"start": name, "start_cost": float(costs[k]), "starts": len(cands), "iterations": iters}
    orders = [p for _, p in cands]
    if tie and not stopped:
        budget = max(25, iters // 5) if max_iter is not None else 200  # (iters: the annealing's, all of max_iter)
        try:
            perm, cost, info["tie_break"] = fewer_uplink_bytes(
                model, perm, cost, others=orders, other_costs=costs, iters=budget, seed=seed,
                deadline=None if max_iter is not None else t_start + time_limit)
        except KeyboardInterrupt:  # Ctrl-C: the annealed order, as if there were no tie-break
            if not keep_on_interrupt:
                raise
            stopped["interrupted"] = True
    if price is not None and price is not model and not stopped.get("interrupted"):
        perm, _, repriced = by_price(price, model, perm, orders, costs=costs)
        if repriced is not None:
            cost = float(model(perm))
            info["by_price"] = repriced
    info.update({"seconds": round(time.perf_counter() - t_start, 3), **stopped})
    return SolveResult(perm, cost, False, None, "group-anneal", info)
