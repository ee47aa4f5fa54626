"""Simulated annealing over rank permutations (dissertation §5.2.3, first stage).

Neighbour moves: swap two ranks, reverse a segment (2-opt), move a segment
of 1-3 ranks elsewhere (Or-opt), and randomly permute a short sub-array,
the last two as in the dissertation.  For hd / BCube / dbt half of the
moves (``targeted``) are *critical swaps*: a rank in the costliest exchange
of a random round (hd, BCube), or on the costliest root-to-leaf path
(dbt), swapped with a random rank; the max-based costs only fall when a
critical exchange gets cheaper.  (In a one-off 3 s test on 256 hosts this
took dbt from 0.80 to 0.68 of the warm start's cost, hd from 0.91 to 0.89,
BCube from 0.91 to 0.88.)  Each move is a set of
``position -> host`` changes, costed incrementally by an evaluator bound to
the model:

* ``ring``: only the hops next to a changed rank, O(changes); for a
  symmetric matrix a segment reversal is costed from its two boundary hops
  only (O(1)).
* ``hd`` / ``bcube``: per round the vector of pair costs and its maximum are
  kept; a move recomputes only the pairs that contain a changed rank and
  rescans a round's vector (numpy, O(N) in C) only when its arg-max pair
  changed.
* ``dbt``: each tree keeps every subtree's cost; a move recomputes the
  changed nodes and their ancestors, O(changes x log N).
* Any other callable, or a move that changes more than ~N/8 ranks: full
  (vectorised) re-evaluation.

Temperature: ``T0 = t0_scale x (mean uphill delta of 100 random moves from
the start) / ln 2`` (``t0_scale = 1`` would accept an average uphill move
with probability 1/2; the default 0.001 only accepts small uphill moves and
walks the plateaus of the max-based models: it came out best of 1, 0.02,
0.005, 0.001 and 0.0002 in a one-off 3 s test on a 256-host hd and dbt
instance; ``benchmarks/solvers.py --only models`` measures what 3 s buy
over the warm start), cooled geometrically to ``1e-4 T0`` over
each restart (by iteration count when ``max_iter`` is
given, else by wall-clock time).  ``restarts`` reheats from the best order
found so far, at half the previous ``T0`` each time.  Deterministic for a
seed and ``max_iter``; with only a time limit the number of moves depends
on machine speed.

Warm starts (``warm_starts``): the input order, nearest neighbour and
greedy-edge rings over the pair costs, and, given group labels, the groups
in nearest-neighbour order with each group's hosts in nearest-neighbour
order.

Complexity: O(1)-O(log N) per move for the supported models as above,
plus O(N) numpy work per accepted move that rescans a round.

Reference: S. Kirkpatrick, C. D. Gelatt, M. P. Vecchi, "Optimization by
Simulated Annealing", Science 220(4598), 1983.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .costmodels import CostModel, dbt_levels
from .ringsearch import greedy_edge_tour, nearest_neighbour_tour


@dataclass
class AnnealResult:
    perm: np.ndarray
    cost: float
    iterations: int
    accepted: int
    elapsed: float


def nearest_neighbour_ring(matrix: np.ndarray, start: int = 0) -> np.ndarray:
    """Greedy nearest-neighbour tour over ``matrix`` starting at ``start``. O(N^2)."""
    return nearest_neighbour_tour(matrix, start)


# ---------------------------------------------------------------------------
# incremental evaluators


class _FullEval:
    """Re-evaluates the whole order on every trial."""

    def __init__(self, fn: Callable[[np.ndarray], float], perm: list[int]):
        self.fn = fn
        self.perm = perm
        self.cost = float(fn(np.array(perm)))
        self._pending: tuple[list[int], float] | None = None

    def trial(self, changes: dict[int, int]) -> float:
        p = self.perm[:]
        for r, h in changes.items():
            p[r] = h
        c = float(self.fn(np.array(p)))
        self._pending = (p, c)
        return c

    def commit(self) -> None:
        assert self._pending is not None
        self.perm[:], self.cost = self._pending[0], self._pending[1]
        self._pending = None

    def reject(self) -> None:
        self._pending = None


class _RingEval:
    """Ring: only hops adjacent to changed ranks. O(changes)."""

    def __init__(self, model: CostModel, perm: list[int]):
        self.m = np.ascontiguousarray(model.ring_matrix)
        self.D = [memoryview(r) for r in self.m]
        self.n = model.n
        self.perm = perm
        self.cost = float(model(np.array(perm)))
        self._pending = None

    def trial(self, changes: dict[int, int]) -> float:
        n, p, D = self.n, self.perm, self.D
        hops = set()
        for r in changes:
            hops.add(r)
            hops.add(r + 1 if r + 1 < n else 0)
        delta = 0.0
        for r in hops:
            q = r - 1 if r else n - 1
            old = D[p[r]][p[q]]
            new = D[changes.get(r, p[r])][changes.get(q, p[q])]
            delta += new - old
        c = self.cost + delta
        self._pending = (changes, c)
        return c

    def commit(self) -> None:
        changes, c = self._pending
        for r, h in changes.items():
            self.perm[r] = h
        self.cost = c
        self._pending = None

    def reject(self) -> None:
        self._pending = None


class _RoundsEval:
    """hd / bcube: per round pair costs and maxima; recompute touched pairs only."""

    #: keep per-round symmetric cost tables when they take at most this many bytes
    TABLE_BYTES = 128 * 1024**2

    def __init__(self, model: CostModel, perm: list[int]):
        self.model = model
        self.n = n = model.n
        self.perm = perm
        pc = model.pc
        self.lat = [memoryview(r) for r in np.ascontiguousarray(pc.latency)]
        self.has_bw = bool(np.any(pc.inv_bw))
        self.ib = [memoryview(r) for r in np.ascontiguousarray(pc.inv_bw)]
        use_tables = len(model._rounds) * n * n * 8 <= self.TABLE_BYTES
        self._keep = []  # the arrays behind the memoryviews
        self.rounds = []
        p = np.array(perm)
        shared = None
        for a, b, frac in model._rounds:
            s = model.size * frac
            touch: list[list[int]] = [[] for _ in range(n)]
            for k, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
                touch[x].append(k)
                touch[y].append(k)
            table = None
            if use_tables:
                if not self.has_bw and shared is not None:
                    table = shared  # latency only: every round has the same table
                else:
                    c = pc.matrix(s)
                    c = np.ascontiguousarray(np.maximum(c, c.T))
                    self._keep.append(c)
                    table = [memoryview(r) for r in c]
                    shared = table
            ha, hb = p[a], p[b]
            vals = np.maximum(pc.pairs(ha, hb, s), pc.pairs(hb, ha, s)).tolist()
            am = max(range(len(vals)), key=vals.__getitem__)
            self.rounds.append([a.tolist(), b.tolist(), s, touch, vals, vals[am], am, table])
        self.cost = float(sum(r[5] for r in self.rounds))
        self._pending = None

    def _pair(self, x: int, y: int, s: float) -> float:
        if self.has_bw:
            return max(self.lat[x][y] + s * self.ib[x][y], self.lat[y][x] + s * self.ib[y][x])
        return max(self.lat[x][y], self.lat[y][x])

    def trial(self, changes: dict[int, int]) -> float:
        p = self.perm
        total = 0.0
        undo = []  # (round, pair, old value)
        newmax = []
        for ri, (a, b, s, touch, vals, rmax, am, table) in enumerate(self.rounds):
            ks = set()
            for r in changes:
                ks.update(touch[r])
            if not ks:
                total += rmax
                newmax.append(None)
                continue
            best_new, best_k = -math.inf, -1
            for k in ks:
                x, y = a[k], b[k]
                hx, hy = changes.get(x, p[x]), changes.get(y, p[y])
                v = table[hx][hy] if table is not None else self._pair(hx, hy, s)
                undo.append((ri, k, vals[k]))
                vals[k] = v
                if v > best_new:
                    best_new, best_k = v, k
            if am in ks:
                k2 = max(range(len(vals)), key=vals.__getitem__)
                m2 = vals[k2]
            elif best_new > rmax:
                k2, m2 = best_k, best_new
            else:
                k2, m2 = am, rmax
            newmax.append((m2, k2))
            total += m2
        self._pending = (changes, total, undo, newmax)
        return total

    def critical(self, rng: random.Random) -> int:
        """A rank in the most expensive exchange of a random round."""
        rd = self.rounds[rng.randrange(len(self.rounds))]
        return rd[0][rd[6]] if rng.random() < 0.5 else rd[1][rd[6]]

    def commit(self) -> None:
        changes, total, _undo, newmax = self._pending
        for r, h in changes.items():
            self.perm[r] = h
        for rd, nm in zip(self.rounds, newmax):
            if nm is not None:
                rd[5], rd[6] = nm
        self.cost = total
        self._pending = None

    def reject(self) -> None:
        _c, _t, undo, _nm = self._pending
        for ri, k, old in reversed(undo):
            self.rounds[ri][4][k] = old
        self._pending = None


class _DbtEval:
    """Double binary tree: recompute changed nodes and their ancestors, O(changes log N)."""

    def __init__(self, model: CostModel, perm: list[int]):
        self.model = model
        self.n = n = model.n
        self.perm = perm
        self.half = model.size / 2
        self.lat = [memoryview(r) for r in np.ascontiguousarray(model.pc.latency)]
        self.has_bw = bool(np.any(model.pc.inv_bw))
        self.ib = [memoryview(r) for r in np.ascontiguousarray(model.pc.inv_bw)]
        self.parent = [-1] * n
        self.children: list[list[int]] = [[] for _ in range(n)]
        self.depth = [0] * n
        for par, ch in dbt_levels(n):
            for x, y in zip(par.tolist(), ch.tolist()):
                self.parent[y] = x
                self.children[x].append(y)
        self.root = (n - 1) // 2
        order = [self.root]
        for x in order:
            for y in self.children[x]:
                self.depth[y] = self.depth[x] + 1
                order.append(y)
        self.bottom_up = order[::-1]
        # rank playing each tree node: tree one is the identity, the mirror shifts by one
        self.rank_of = [list(range(n)), [(v - 1) % n for v in range(n)]]
        self.table = None
        if n * n * 8 <= _RoundsEval.TABLE_BYTES:
            c = np.ascontiguousarray(model.pc.matrix(self.half))
            self._keep = c
            self.table = [memoryview(r) for r in c]
        self.down = [self._full(0), self._full(1)]
        self.cost = max(self.down[0][self.root], self.down[1][self.root])
        self._pending = None

    def _host(self, tree: int, node: int, changes: dict[int, int]) -> int:
        r = node if tree == 0 else (node - 1) % self.n
        return changes.get(r, self.perm[r])

    def _edge(self, x: int, y: int) -> float:
        if self.table is not None:
            return self.table[x][y]
        if self.has_bw:
            return self.lat[x][y] + self.half * self.ib[x][y]
        return self.lat[x][y]

    def _full(self, tree: int) -> list[float]:
        down = [0.0] * self.n
        for x in self.bottom_up:
            hx = self._host(tree, x, {})
            best = 0.0
            for y in self.children[x]:
                v = self._edge(hx, self._host(tree, y, {})) + down[y]
                if v > best:
                    best = v
            down[x] = best
        return down

    def trial(self, changes: dict[int, int]) -> float:
        n = self.n
        new_roots = []
        overlays = []
        for tree in (0, 1):
            down = self.down[tree]
            dirty = set()
            for r in changes:
                node = r if tree == 0 else (r + 1) % n
                # the node's own subtree value changes, and its parent's edge to it
                while node >= 0 and node not in dirty:
                    dirty.add(node)
                    node = self.parent[node]
            over: dict[int, float] = {}
            rank_of, perm, children, tab = self.rank_of[tree], self.perm, self.children, self.table
            depth = self.depth
            for node in sorted(dirty, key=depth.__getitem__, reverse=True):
                r = rank_of[node]
                hx = changes.get(r, perm[r])
                row = tab[hx] if tab is not None else None
                best = 0.0
                for y in children[node]:
                    ry = rank_of[y]
                    hy = changes.get(ry, perm[ry])
                    v = (row[hy] if row is not None else self._edge(hx, hy)) + over.get(y, down[y])
                    if v > best:
                        best = v
                over[node] = best
            overlays.append(over)
            new_roots.append(over.get(self.root, down[self.root]))
        c = max(new_roots)
        self._pending = (changes, c, overlays)
        return c

    def critical(self, rng: random.Random) -> int:
        """A random rank on the costliest root-to-leaf path of the costlier tree."""
        tree = 0 if self.down[0][self.root] >= self.down[1][self.root] else 1
        down, children, rank_of, perm = self.down[tree], self.children, self.rank_of[tree], self.perm
        path = [self.root]
        node = self.root
        while children[node]:
            hx = perm[rank_of[node]]
            node = max(children[node], key=lambda y: self._edge(hx, perm[rank_of[y]]) + down[y])
            path.append(node)
        return rank_of[path[rng.randrange(len(path))]]

    def commit(self) -> None:
        changes, c, overlays = self._pending
        for r, h in changes.items():
            self.perm[r] = h
        for tree in (0, 1):
            d = self.down[tree]
            for k, v in overlays[tree].items():
                d[k] = v
        self.cost = c
        self._pending = None

    def reject(self) -> None:
        self._pending = None


class _Hybrid:
    """Incremental evaluator for small moves, full vectorised evaluation for big ones."""

    def __init__(self, model: CostModel, perm: list[int]):
        self.model = model
        self.inc = make_evaluator(model, perm)
        self.perm = self.inc.perm
        self.limit = max(8, model.n // 8)
        self._full = None

    @property
    def cost(self) -> float:
        return self.inc.cost

    def critical(self, rng: random.Random) -> int | None:
        f = getattr(self.inc, "critical", None)
        return f(rng) if f is not None else None

    def trial(self, changes: dict[int, int]) -> float:
        if len(changes) <= self.limit:
            self._full = None
            return self.inc.trial(changes)
        p = self.perm[:]
        for r, h in changes.items():
            p[r] = h
        c = float(self.model(np.array(p)))
        self._full = (p, c)
        return c

    def commit(self) -> None:
        if self._full is None:
            self.inc.commit()
            return
        p, _c = self._full
        self.perm[:] = p
        self.inc = make_evaluator(self.model, self.perm)
        self._full = None

    def reject(self) -> None:
        if self._full is None:
            self.inc.reject()
        self._full = None


def make_evaluator(model, perm: list[int]):
    """The incremental evaluator for ``model`` (a :class:`CostModel` or any callable)."""
    if isinstance(model, CostModel):
        if model.algo == "ring":
            return _RingEval(model, perm)
        if model.algo in ("hd", "rd", "bcube"):
            return _RoundsEval(model, perm)
        return _DbtEval(model, perm)
    return _FullEval(model, perm)


# ---------------------------------------------------------------------------
# moves


def propose(
    perm: list[int], rng: random.Random, kinds: tuple[int, ...] = (0, 1, 2, 3), mean_rev: float = 1e9
) -> dict[int, int]:
    """A random neighbour as ``{position: new host}``: swap, reversal, Or-opt or sub-array shuffle.

    ``kinds`` lists the move kinds to draw from (repeat one to weight it);
    reversal lengths are exponential with mean ``min(mean_rev, N/8)``.
    """
    n = len(perm)
    kind = kinds[rng.randrange(len(kinds))]
    if kind == 0:  # swap two ranks
        i, j = rng.sample(range(n), 2)
        return {i: perm[j], j: perm[i]}
    if kind == 1:  # reverse a segment (short ones more often)
        length = min(n, 2 + int(rng.expovariate(1.0 / max(2.0, min(mean_rev, n / 8)))))
        i = rng.randrange(n - length + 1)
        seg = perm[i : i + length]
        return {i + k: seg[-1 - k] for k in range(length)}
    if kind == 2:  # Or-opt: move a segment of 1..3 ranks by a short distance
        length = rng.randint(1, min(3, n - 2))
        i = rng.randrange(n - length + 1)
        seg = perm[i : i + length]
        rest = perm[:i] + perm[i + length :]
        span = max(1, min(len(rest), 16))
        j = min(len(rest), max(0, i + rng.randint(-span, span)))
        if rng.random() < 0.5:
            seg = seg[::-1]
        new = rest[:j] + seg + rest[j:]
        lo, hi = min(i, j), max(i + length, j + length)
        return {r: new[r] for r in range(lo, hi) if new[r] != perm[r]}
    # permute a random sub-array of 3..6 ranks
    length = min(n, rng.randint(3, 6))
    i = rng.randrange(n - length + 1)
    seg = perm[i : i + length]
    rng.shuffle(seg)
    return {i + k: seg[k] for k in range(length) if seg[k] != perm[i + k]}


def _calibrate(ev, perm, rng, samples: int = 100) -> float:
    ups = []
    for _ in range(samples):
        ch = propose(perm, rng)
        if not ch:
            continue
        d = ev.trial(ch) - ev.cost
        ev.reject()
        if d > 1e-12:
            ups.append(d)
    if not ups:
        return max(abs(ev.cost), 1.0) * 1e-3
    return float(np.mean(ups)) / math.log(2.0)


def anneal(
    cost_fn,
    n: int | None = None,
    *,
    init=None,
    time_limit: float = 5.0,
    max_iter: int | None = None,
    seed: int = 0,
    restarts: int = 3,
    ring_matrix: np.ndarray | None = None,
    deadline: float | None = None,
    t0_scale: float = 0.001,
    targeted: float = 0.5,
) -> AnnealResult:
    """Minimise ``cost_fn`` (a :class:`CostModel` or any ``perm -> float``) over permutations.

    Stops at ``time_limit`` seconds or ``max_iter`` moves in total, whichever
    comes first, and never returns an order worse than ``init``.
    ``ring_matrix`` is accepted for backward compatibility and ignored: a
    ring :class:`CostModel` is costed incrementally anyway.
    """
    del ring_matrix
    if not (time_limit > 0):
        raise ValueError(f"time limit must be > 0 seconds, got {time_limit}")
    if max_iter is not None and max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    if n is None:
        if not isinstance(cost_fn, CostModel):
            raise ValueError("n is required when cost_fn is not a CostModel")
        n = cost_fn.n
    start = time.perf_counter()
    stop_at = deadline if deadline is not None else start + time_limit
    perm = list(range(n)) if init is None else [int(x) for x in init]
    if sorted(perm) != list(range(n)):
        raise ValueError("init is not a permutation of range(n)")
    rng = random.Random(seed)
    if isinstance(cost_fn, CostModel):
        ev = _Hybrid(cost_fn, perm)
    else:
        ev = _FullEval(cost_fn, perm)
    perm = ev.perm
    best, best_cost = perm[:], ev.cost
    if n <= 3:
        return AnnealResult(np.array(best), best_cost, 0, 0, time.perf_counter() - start)
    if isinstance(cost_fn, CostModel) and cost_fn.algo != "ring":
        kinds, mean_rev = (0, 0, 1, 2, 3), 8.0  # position-structured models: mostly local moves
    else:
        kinds, mean_rev, targeted = (0, 1, 2, 3), 1e9, 0.0
    t0 = _calibrate(ev, perm, rng) * t0_scale
    restarts = max(1, restarts)
    it = acc = 0
    budget = (max_iter / restarts) if max_iter is not None else None
    span = (stop_at - time.perf_counter()) / restarts
    for rs in range(restarts):
        if rs:
            # reheat from the best order so far
            ev = _Hybrid(cost_fn, best[:]) if isinstance(cost_fn, CostModel) else _FullEval(cost_fn, best[:])
            perm = ev.perm
            t0 /= 2.0
        t_start = time.perf_counter()
        it_start = it
        temp = t0
        while True:
            if budget is not None:
                frac = (it - it_start) / budget if budget > 0 else 1.0
                if frac >= 1.0 or it >= max_iter:
                    break
                if (it & 63) == 0 and time.perf_counter() >= stop_at:
                    break
            elif (it & 63) == 0:
                now = time.perf_counter()
                if now >= stop_at:
                    break
                frac = (now - t_start) / span if span > 0 else 1.0
                if frac >= 1.0 and rs < restarts - 1:
                    break
            if (it & 63) == 0:
                temp = t0 * (1e-4 ** min(frac, 1.0))
            it += 1
            if targeted and rng.random() < targeted:
                # swap a rank on the critical path / in a round's costliest exchange
                i = ev.critical(rng)
                j = rng.randrange(n)
                ch = {i: perm[j], j: perm[i]} if i != j else {}
            else:
                ch = propose(perm, rng, kinds, mean_rev)
            if not ch:
                continue
            c = ev.trial(ch)
            d = c - ev.cost
            if d <= 0 or rng.random() < math.exp(-d / temp):
                ev.commit()
                acc += 1
                if c < best_cost - 1e-12:
                    best_cost = c
                    best = perm[:]
            else:
                ev.reject()
        if time.perf_counter() >= stop_at or (max_iter is not None and it >= max_iter):
            break
    best_arr = np.array(best, dtype=int)
    exact = float(cost_fn(best_arr))  # incremental sums drift in floating point
    return AnnealResult(best_arr, exact, it, acc, time.perf_counter() - start)


# ---------------------------------------------------------------------------
# warm starts


def _sym_matrix(model: CostModel) -> np.ndarray:
    c = model.pc.matrix(model.size)
    return np.maximum(c, c.T)


def group_order(matrix: np.ndarray, labels) -> np.ndarray:
    """Order groups by a nearest-neighbour ring over mean inter-group cost, hosts inside groups likewise.

    ``labels[h]`` is host ``h``'s group (any hashable, e.g. ints from a
    grouping).  O(N^2).
    """
    labels = np.asarray(labels)
    n = matrix.shape[0]
    if labels.shape != (n,):
        raise ValueError(f"labels must have one entry per host ({n}), got shape {labels.shape}")
    groups = [np.flatnonzero(labels == g) for g in dict.fromkeys(labels.tolist())]
    k = len(groups)
    gm = np.zeros((k, k))
    for a in range(k):
        for b in range(k):
            if a != b:
                gm[a, b] = matrix[np.ix_(groups[a], groups[b])].mean()
    gorder = nearest_neighbour_tour(gm, 0) if k > 1 else np.array([0])
    out = []
    prev = None
    for g in gorder:
        hosts = groups[int(g)]
        sub = matrix[np.ix_(hosts, hosts)]
        # start inside the group at the host closest to the previous group's last host
        s = 0 if prev is None else int(np.argmin(matrix[prev, hosts]))
        inner = hosts[nearest_neighbour_tour(sub, s)] if len(hosts) > 1 else hosts
        out.extend(int(h) for h in inner)
        prev = out[-1]
    return np.array(out, dtype=int)


def warm_starts(model: CostModel, labels=None, init=None) -> list[tuple[str, np.ndarray]]:
    """Cheap starting orders ``[(name, perm), ...]``: input, NN ring, greedy edge, grouping."""
    n = model.n
    out = [("input", np.arange(n) if init is None else np.asarray(init, dtype=int))]
    if n <= 3:
        return out
    m = _sym_matrix(model)
    out.append(("nearest-neighbour", nearest_neighbour_tour(m, 0)))
    out.append(("greedy-edge", greedy_edge_tour(m)))
    if labels is not None:
        out.append(("groups", group_order(m, labels)))
    return out
