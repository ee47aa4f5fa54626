"""Ring orders as symmetric TSP tours: construction, local search, iterated local search.

A ring all-reduce over ranks ``perm`` costs ``sum_r c[perm[r], perm[r-1]]``:
the length of a Hamiltonian cycle.  For a symmetric cost matrix this module
provides

* ``neighbour_lists``: the ``k`` cheapest partners of every host,
  O(N^2) numpy work.
* ``nearest_neighbour_tour`` and ``greedy_edge_tour`` (greedy matching of
  cheap edges into paths), the classic cheap starts; O(N^2) and
  O(N k log(N k) + F^2) with F the number of path fragments left.
* ``local_search``: 2-opt, Or-opt (moving a segment of 1-3 hosts, either
  orientation) and Or-3opt (exchanging two adjacent segments of any length,
  the 3-opt move that keeps both orientations) restricted to neighbour lists (``k``
  cheapest partners), driven by a work queue
  ("don't-look bits": a host is re-examined only when one of its tour edges
  changed).  Every move is costed in O(1) from the four to six edges it
  touches; applying a move rewrites the shorter side of the tour.
* ``iterated_local_search``: Lourenço-Martin-Stützle iterated local search:
  perturb with a local segment exchange (double bridge confined to a window
  of ``window`` positions, so only 3 edges change), re-optimise only around
  the perturbed edges, keep the result if it is no worse (``temperature``
  > 0 also accepts worse ones with probability ``exp(-delta / (temperature
  x mean edge))``; 0, the default, did no worse on pr1002 in a one-off
  test).  Deterministic for a seed and ``max_kicks``; otherwise it stops at
  ``time_limit`` seconds, or after ``stall`` perturbations without a better
  tour.

With numba (a default dependency; where it cannot load, the pure-Python code runs) ``local_search``
and ``iterated_local_search`` run the same moves compiled
(``solvers._ringkernel``; the compiled code is cached on disk after the first
call, per user: ``solvers._ringkernel.cache_dir``).
``python benchmarks/ring_kernel_speed.py`` times one local search from a random tour
with each engine: 4.0-7.8x faster at N = 1000 (3 seeds, 2 shared cores), the same
local optimum; ``PLINK_NO_NUMBA=1`` or ``engine="python"`` forces
the pure-Python code, which works over rows of the matrix viewed as
``memoryview``\\ s (no copy of the N x N matrix).  Complexity per kick is
independent of N except for the O(N) worst case of rewriting a tour side
(and, compiled, O(N) copies of the tour to undo a rejected kick).

References: G. A. Croes, "A method for solving traveling-salesman problems",
Oper. Res. 6, 1958 (2-opt); I. Or, PhD thesis, Northwestern, 1976 (Or-opt);
J. L. Bentley, "Fast algorithms for geometric traveling salesman problems",
ORSA J. Comput. 4, 1992 (neighbour lists, don't-look bits, greedy edge);
H. R. Lourenço, O. C. Martin, T. Stützle, "Iterated local search", 2003;
D. S. Johnson, L. A. McGeoch, "The traveling salesman problem: a case study
in local optimization", 1997.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from .costmodels import ring_hops

_EPS = 1e-10
_KERNEL: list = []


def kernel():
    """The compiled kernel module, or None (numba missing or ``PLINK_NO_NUMBA`` set)."""
    if os.environ.get("PLINK_NO_NUMBA", "") not in ("", "0"):
        return None
    if not _KERNEL:
        try:
            from . import _ringkernel
        except Exception:  # numba absent or unusable: pure Python
            _ringkernel = None
        _KERNEL.append(_ringkernel)
    return _KERNEL[0]


def warm_kernel() -> float:
    """Compile (or load from the disk cache) the compiled kernel now; returns the seconds it took.

    Does nothing (0.0) without the kernel.  ``minimise`` calls it before its
    clock starts, so a first run's compile time does not eat the search time.
    """
    kr = kernel()
    if kr is None:
        return 0.0
    t0 = time.perf_counter()
    m = np.ones((6, 6)) - np.eye(6)
    nb = np.ascontiguousarray(neighbour_lists(m, 3), dtype=np.int64)
    t = np.arange(6, dtype=np.int64)
    try:
        kr.local_search(m, nb, t)
        kr.ils_run(m, nb, t, t.copy(), t.copy(), np.zeros(2), np.zeros(3, dtype=np.int64),
                   np.ones(1, dtype=np.uint64), 1, 4, 0, 0, 0.0, False)
    except Exception:  # numba present but cannot compile here: pure Python from now on
        _KERNEL[:] = [None]
    return time.perf_counter() - t0


def _engine(engine: str):
    if engine not in ("auto", "numba", "python"):
        raise ValueError(f"engine must be 'auto', 'numba' or 'python', got {engine!r}")
    if engine == "python":
        return None
    kr = kernel()
    if kr is not None:
        warm_kernel()  # compile now (not charged to a time limit); on failure: pure Python
        kr = kernel()
    if kr is None and engine == "numba":
        raise RuntimeError("engine='numba' needs numba (a dependency of plink-locality; it did not load here) "
                           "and PLINK_NO_NUMBA unset")
    return kr


def _unit_scaled(matrix) -> np.ndarray:
    """``matrix`` as contiguous float64 times the power of two that puts its
    largest finite magnitude in [0.5, 1).

    The moves compare gains with an absolute ``_EPS``: on values of ~1e6 and
    more (a matrix in seconds read as microseconds, say) one ulp of an edge
    exceeds it, so rounding made moves look improving and a 2-opt move and
    its inverse alternated forever.  A power of two changes no rounding, only
    what ``_EPS`` is relative to (here: the longest edge).
    """
    m = np.ascontiguousarray(matrix, dtype=np.float64)
    finite = np.abs(m[np.isfinite(m)])
    top = float(finite.max()) if finite.size else 0.0
    if top == 0.0:
        return m
    return np.ldexp(m, -math.frexp(top)[1])  # (elementwise: 2**1074 itself overflows, a subnormal top needs it)


def tour_length(matrix: np.ndarray, tour) -> float:
    """Length of the closed tour ``tour`` over ``matrix`` (O(N)): ``costmodels.ring_hops``."""
    return ring_hops(matrix, np.asarray(tour, dtype=int))


def neighbour_lists(matrix: np.ndarray, k: int = 8, far: int = 0, chunk: int = 512) -> np.ndarray:
    """``(N, k + far)`` candidate partners per host, cheapest first. O(N^2).

    The ``k`` cheapest partners, plus ``far`` partners at geometric ranks
    ``2k, 4k, 8k, ...`` of the host's sorted row: on clustered costs (racks
    bigger than ``k``) the plain ``k`` nearest all sit in the host's own
    rack.  (A one-off test at 10,000 kicks showed no clear gain on 256 /
    1024-host simulated datacenters or pr1002, so the default is ``far = 0``.)
    """
    n = matrix.shape[0]
    k = max(1, min(k, n - 1))
    ranks = list(range(k))
    r = 2 * k
    while len(ranks) < k + far and r < n - 1:
        ranks.append(r)
        r *= 2
    width = len(ranks)
    out = np.empty((n, width), dtype=np.int64)
    for s in range(0, n, chunk):
        rows = np.array(matrix[s : s + chunk], dtype=float)
        rows[np.arange(len(rows)), np.arange(s, s + len(rows))] = np.inf
        if ranks[-1] < n - 2:
            idx = np.argpartition(rows, ranks, axis=1)
        else:
            idx = np.argsort(rows, axis=1)
        near = idx[:, :k]
        vals = np.take_along_axis(rows, near, 1)
        # stable tie-break on index keeps the lists deterministic
        order = np.lexsort((near, vals), axis=1)
        out[s : s + chunk, :k] = np.take_along_axis(near, order, 1)
        if width > k:
            out[s : s + chunk, k:] = idx[:, ranks[k:]]
    return out


def nearest_neighbour_tour(matrix: np.ndarray, start: int = 0) -> np.ndarray:
    """Greedy nearest-neighbour tour starting at ``start``. O(N^2)."""
    n = matrix.shape[0]
    visited = np.zeros(n, dtype=bool)
    tour = np.empty(n, dtype=int)
    cur = start
    for k in range(n):
        tour[k] = cur
        visited[cur] = True
        if k == n - 1:
            break
        row = np.where(visited, np.inf, matrix[cur])
        cur = int(np.argmin(row))
    return tour


def greedy_edge_tour(matrix: np.ndarray, k: int = 10, neighbours: np.ndarray | None = None) -> np.ndarray:
    """Greedy matching: add cheapest edges that keep degrees <= 2 and no cycle.

    Candidate edges are the ``k``-nearest-neighbour edges; the fragments left
    are joined greedily end to end.  O(N k log(N k) + F^2).
    """
    n = matrix.shape[0]
    if n <= 3:
        return np.arange(n)
    nb = neighbours if neighbours is not None else neighbour_lists(matrix, k)
    a = np.repeat(np.arange(n), nb.shape[1])
    b = nb.ravel()
    keep = a < b
    a, b = a[keep], b[keep]
    w = matrix[a, b]
    order = np.lexsort((b, a, w))
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    deg = [0] * n
    adj: list[list[int]] = [[] for _ in range(n)]
    edges = 0
    for e in order.tolist():
        u, v = int(a[e]), int(b[e])
        if deg[u] >= 2 or deg[v] >= 2:
            continue
        ru, rv = find(u), find(v)
        if ru == rv:
            continue
        parent[ru] = rv
        deg[u] += 1
        deg[v] += 1
        adj[u].append(v)
        adj[v].append(u)
        edges += 1
        if edges == n - 1:
            break
    # collect the path fragments (isolated hosts are fragments of one host)
    seen = [False] * n
    frags = []
    for x in range(n):
        if seen[x] or deg[x] == 2:
            continue
        path = [x]
        seen[x] = True
        prev, cur = -1, x
        while True:
            nxt = [y for y in adj[cur] if y != prev]
            if not nxt:
                break
            prev, cur = cur, nxt[0]
            path.append(cur)
            seen[cur] = True
        frags.append(path)
    if not frags:  # the greedy edges already closed... cannot happen (no cycles), keep safe
        return np.arange(n)
    # join fragments nearest-neighbour style over their endpoints: O(F^2) numpy
    f = len(frags)
    heads = np.array([p[0] for p in frags])
    tails = np.array([p[-1] for p in frags])
    used = np.zeros(f, dtype=bool)
    used[0] = True
    tour = list(frags[0])
    for _ in range(f - 1):
        end = tour[-1]
        dh = np.where(used, np.inf, matrix[end, heads])
        dt = np.where(used, np.inf, matrix[end, tails])
        jh, jt = int(np.argmin(dh)), int(np.argmin(dt))
        if dh[jh] <= dt[jt]:
            tour.extend(frags[jh])
            used[jh] = True
        else:
            tour.extend(reversed(frags[jt]))
            used[jt] = True
    return np.array(tour, dtype=int)


class _Tour:
    """Array tour with positions; 2-opt and Or-opt moves with O(1) deltas."""

    def __init__(self, matrix: np.ndarray, tour, neighbours: np.ndarray):
        self.mat = np.ascontiguousarray(matrix, dtype=float)
        self.D = [memoryview(r) for r in self.mat]
        self.n = len(tour)
        self.t = [int(x) for x in tour]
        self.pos = [0] * self.n
        for i, x in enumerate(self.t):
            self.pos[x] = i
        self.nb = [list(map(int, r)) for r in neighbours]
        self.or3 = True

    def length(self) -> float:
        return tour_length(self.mat, self.t)

    # --- primitives -------------------------------------------------------
    def _cyc(self, i: int, length: int) -> list[int]:
        n = self.n
        i %= n
        if i + length <= n:
            return self.t[i : i + length]
        return self.t[i:] + self.t[: i + length - n]

    def _write(self, i: int, seq: list[int]) -> None:
        n, t, pos = self.n, self.t, self.pos
        i %= n
        m = len(seq)
        if i + m <= n:
            t[i : i + m] = seq
            for k in range(i, i + m):
                pos[t[k]] = k
        else:
            for x in seq:
                t[i] = x
                pos[x] = i
                i += 1
                if i == n:
                    i = 0

    def reverse(self, u: int, v: int) -> None:
        """Reverse the path from host ``u`` forward to host ``v`` (or its complement)."""
        n = self.n
        i, j = self.pos[u], self.pos[v]
        length = (j - i) % n + 1
        if 2 * length > n:
            i, j = (j + 1) % n, (i - 1) % n
            length = n - length
        if length < 2:
            return
        seg = self._cyc(i, length)
        seg.reverse()
        self._write(i, seg)

    def move_segment(self, s1: int, length: int, u: int, rev: bool) -> None:
        """Move the segment of ``length`` hosts starting at ``s1`` between ``u`` and succ(``u``)."""
        n, pos = self.n, self.pos
        i = pos[s1]
        seg = self._cyc(i, length)
        if rev:
            seg.reverse()
        pu = pos[u]
        pv = pu + 1 if pu + 1 < n else 0
        lb = (pu - (i + length)) % n + 1  # hosts from after the segment to u
        lb2 = n - length - lb  # hosts from succ(u) to before the segment
        if lb <= lb2:
            self._write(i, self._cyc(i + length, lb) + seg)
        else:
            self._write(pv, seg + self._cyc(pv, lb2))

    # --- local search -----------------------------------------------------
    def improve(self, queue: deque, inq: list[bool]) -> float:
        """Run 2-opt + Or-opt from the hosts in ``queue`` until none improves. Returns the gain."""
        D, nb, t, pos, n = self.D, self.nb, self.t, self.pos, self.n
        total = 0.0
        while queue:
            a = queue.popleft()
            inq[a] = False
            gain = self._improve_host(a, D, nb, t, pos, n)
            if gain is None:
                continue
            total += gain[0]
            for x in gain[1]:
                if not inq[x]:
                    inq[x] = True
                    queue.append(x)
        return total

    def _improve_host(self, a, D, nb, t, pos, n):
        Da = D[a]
        pa = pos[a]
        succ_a = t[pa + 1 if pa + 1 < n else 0]
        pred_a = t[pa - 1]
        nba = nb[a]
        # 2-opt, successor direction: remove (a,b),(c,d); add (a,c),(b,d)
        b = succ_a
        dab = Da[b]
        for c in nba:
            dac = Da[c]
            g1 = dab - dac
            if g1 <= _EPS:
                break
            pc = pos[c]
            d = t[pc + 1 if pc + 1 < n else 0]
            if c == b or d == a:
                continue
            Dc = D[c]
            g = g1 + Dc[d] - D[b][d]
            if g > _EPS:
                self.reverse(b, c)
                return g, (a, b, c, d)
        # 2-opt, predecessor direction
        b = pred_a
        dab = Da[b]
        for c in nba:
            dac = Da[c]
            g1 = dab - dac
            if g1 <= _EPS:
                break
            d = t[pos[c] - 1]
            if c == b or d == a:
                continue
            g = g1 + D[c][d] - D[b][d]
            if g > _EPS:
                self.reverse(a, d)
                return g, (a, b, c, d)
        # Or-opt: a segment of 1..3 hosts with a at one end, a placed next to a neighbour c
        for length in (1, 2, 3):
            if length >= n - 2:
                break
            for a_first in (True, False):
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
                p = t[i - 1]
                nx = t[j + 1 if j + 1 < n else 0]
                g1 = D[p][s1] + D[s2][nx] - D[p][nx]
                if g1 <= _EPS:
                    continue
                for c in nba:
                    dac = Da[c]
                    if dac >= g1 - _EPS:
                        break
                    pc = pos[c]
                    if (pc - i) % n < length:
                        continue
                    Dc = D[c]
                    # edge (c, succ c)
                    e = t[pc + 1 if pc + 1 < n else 0]
                    if (pos[e] - i) % n >= length:
                        if a_first:  # c s1..s2 e
                            add = dac + D[s2][e] - Dc[e]
                            rev = False
                        else:  # c s2..s1 e
                            add = dac + D[s1][e] - Dc[e]
                            rev = True
                        g = g1 - add
                        if g > _EPS:
                            self.move_segment(s1, length, c, rev)
                            return g, (p, nx, s1, s2, c, e)
                    # edge (pred c, c)
                    e = t[pc - 1]
                    if (pos[e] - i) % n >= length:
                        if a_first:  # e s2..s1 c
                            add = dac + D[e][s2] - D[e][c]
                            rev = True
                        else:  # e s1..s2 c
                            add = dac + D[e][s1] - D[e][c]
                            rev = False
                        g = g1 - add
                        if g > _EPS:
                            self.move_segment(s1, length, e, rev)
                            return g, (p, nx, s1, s2, c, e)
        if self.or3:
            return self._or3opt(a, D, nb, t, pos, n)
        return None

    def _or3opt(self, t1, D, nb, t, pos, n):
        """Segment exchange: t1 [t2..t3] [t4..t5] t6 -> t1 [t4..t5] [t2..t3] t6 (pure 3-opt),
        or -> t1 [t4..t5] [t3..t2] t6 (the first segment reversed)."""
        p1 = pos[t1]
        t2 = t[p1 + 1 if p1 + 1 < n else 0]
        D1, D2 = D[t1], D[t2]
        d12 = D1[t2]
        for t4 in nb[t1]:
            g1 = d12 - D1[t4]
            if g1 <= _EPS:
                break
            if t4 == t2:
                continue
            p4 = pos[t4]
            t3 = t[p4 - 1]
            g1b = g1 + D[t3][t4]
            span = (p1 - p4) % n  # hosts from t4 forward to just before t1
            for t5 in nb[t2]:
                g2 = g1b - D2[t5]
                if g2 <= _EPS:
                    break
                p5 = pos[t5]
                if (p5 - p4) % n >= span:
                    continue  # t5 must lie in [t4, t1)
                t6 = t[p5 + 1 if p5 + 1 < n else 0]
                g = g2 + D[t5][t6] - D[t3][t6]
                if g > _EPS:
                    self._exchange(t1, t2, t3, t4, t5, t6)
                    return g, (t1, t2, t3, t4, t5, t6)
            # with the first segment reversed: t1 [t4..t5] [t3..t2] t6
            if t3 == t2:
                continue
            D3 = D[t3]
            for t5 in nb[t3]:
                g2 = g1b - D3[t5]
                if g2 <= _EPS:
                    break
                p5 = pos[t5]
                if (p5 - p4) % n >= span:
                    continue
                t6 = t[p5 + 1 if p5 + 1 < n else 0]
                g = g2 + D[t5][t6] - D2[t6]
                if g > _EPS:
                    self._exchange(t1, t2, t3, t4, t5, t6)
                    self.reverse(t2, t3)
                    return g, (t1, t2, t3, t4, t5, t6)
        return None

    def _exchange(self, t1, t2, t3, t4, t5, t6) -> None:
        """Cycle A B C with A=[t6..t1], B=[t2..t3], C=[t4..t5] -> A C B, rewriting the shortest pair."""
        n, pos = self.n, self.pos
        la = (pos[t1] - pos[t6]) % n + 1
        lb = (pos[t3] - pos[t2]) % n + 1
        lc = n - la - lb
        # A C B == C B A == B A C: swap whichever adjacent pair is shortest
        opts = ((lb + lc, pos[t2], lb), (la + lb, pos[t6], la), (lc + la, pos[t4], lc))
        total, start, l1 = min(opts)
        first = self._cyc(start, l1)
        second = self._cyc(start + l1, total - l1)
        self._write(start, second + first)


def local_search(
    matrix: np.ndarray, tour, neighbours: np.ndarray | None = None, k: int = 10, *, engine: str = "auto"
) -> np.ndarray:
    """2-opt + Or-opt + Or-3opt local optimum reached from ``tour`` (see module docstring).

    Repeats full passes over all hosts until one finds no improving move, so
    the result is a true local optimum of the neighbourhood.

    ``engine``: "auto" (compiled if numba is available), "numba" or "python".
    """
    kr = _engine(engine)
    n = len(tour)
    if n <= 4:
        return np.asarray(tour, dtype=int)
    nb = neighbours if neighbours is not None else neighbour_lists(matrix, k)
    m = _unit_scaled(matrix)  # gains are compared with an absolute _EPS
    if kr is not None:
        t = np.array(tour, dtype=np.int64)
        kr.local_search(m, np.ascontiguousarray(nb, dtype=np.int64), t)
        return t.astype(int)
    tr = _Tour(m, tour, nb)
    while tr.improve(deque(tr.t), [True] * n) > 0:  # until a full pass finds no move
        pass
    return np.array(tr.t, dtype=int)


@dataclass
class ILSResult:
    tour: np.ndarray
    cost: float
    kicks: int
    improvements: int
    elapsed: float


def iterated_local_search(
    matrix: np.ndarray,
    tour=None,
    *,
    time_limit: float = 5.0,
    max_kicks: int | None = None,
    seed: int = 0,
    neighbours: np.ndarray | None = None,
    k: int = 8,
    far: int = 0,
    window: int | None = None,
    deadline: float | None = None,
    kick: int = 0,
    temperature: float = 0.0,
    stall: int | None = None,
    engine: str = "auto",
) -> ILSResult:
    """Iterated 2-opt + Or-opt + Or-3opt local search for a symmetric ring (see module docstring).

    Starts from ``tour`` (default: greedy edge).  Stops after ``max_kicks``
    perturbations, ``time_limit`` seconds (or at the absolute
    ``time.perf_counter()`` value ``deadline``), or ``stall`` perturbations
    in a row that did not improve the best tour, whichever comes first;
    never returns a tour longer than the start.  ``neighbours`` (default
    ``neighbour_lists(matrix, k, far)``) are the candidate partners;
    ``window`` bounds the two segments of a perturbation (default 25, or 50
    compiled: the compiled search runs ~50x more kicks); ``kick`` 0
    exchanges them (``x A B y -> x B A y``), 1 also reverses one
    (``x B^r A y``).  ``engine``: "auto" (compiled if numba is available),
    "numba" or "python"; the two draw different random kicks, so their
    tours differ, but each is deterministic for a seed and ``max_kicks``.
    """
    kr = _engine(engine)  # compiles first if needed, before the clock starts
    start = time.perf_counter()
    stop_at = deadline if deadline is not None else start + time_limit
    original = np.ascontiguousarray(matrix, dtype=float)
    m = _unit_scaled(original)  # gains are compared with an absolute _EPS
    n = m.shape[0]
    nb = neighbours if neighbours is not None else neighbour_lists(m, k, far)
    if tour is None:
        tour = greedy_edge_tour(m, neighbours=nb)
    tour = np.asarray(tour, dtype=int)
    if n <= 4:
        from .exact import held_karp  # tiny: exact is cheapest

        t, c = held_karp(original) if n >= 2 else (tour, 0.0)
        return ILSResult(np.asarray(t), float(c), 0, 0, time.perf_counter() - start)
    if window is None:
        window = 25 if kr is None else 50
    if kr is not None:
        r = _ils_compiled(kr, m, nb, tour, start, stop_at, max_kicks, seed, window, stall, kick, temperature)
        r.cost = tour_length(original, r.tour)
        return r
    rng = random.Random(seed)
    tr = _Tour(m, tour, nb)
    q = deque(tr.t)
    inq = [True] * n
    tr.improve(q, inq)
    cur = tr.length()
    best_t, best = list(tr.t), cur
    kicks = improvements = last_best = 0
    w = max(4, min(window, n // 2))
    self_kick = kick
    temp = temperature * cur / n  # in units of the mean tour edge
    while True:
        if max_kicks is not None and kicks >= max_kicks:
            break
        if (kicks & 7) == 0 and time.perf_counter() >= stop_at:
            break
        if stall is not None and kicks - last_best >= stall:
            break
        kicks += 1
        saved_t, saved_pos = tr.t[:], tr.pos[:]
        # local double bridge: x | A | B | y  ->  x | B | A | y inside a window
        i = rng.randrange(n)
        la = rng.randint(1, w)
        lb = rng.randint(1, w)
        if la + lb >= n - 1:
            la, lb = 1, 1
        t, D = tr.t, tr.D
        x = t[i]
        a1 = t[(i + 1) % n]
        a2 = t[(i + la) % n]
        b1 = t[(i + la + 1) % n]
        b2 = t[(i + la + lb) % n]
        y = t[(i + la + lb + 1) % n]
        seg_a = tr._cyc(i + 1, la)
        seg_b = tr._cyc(i + la + 1, lb)
        if self_kick == 1:  # x B^r A y: not undone by a single exchange
            delta = (D[x][b2] + D[b1][a1] + D[a2][y]) - (D[x][a1] + D[a2][b1] + D[b2][y])
            seg_b.reverse()
        else:
            delta = (D[x][b1] + D[b2][a1] + D[a2][y]) - (D[x][a1] + D[a2][b1] + D[b2][y])
        tr._write(i + 1, seg_b + seg_a)
        for h in (x, a1, a2, b1, b2, y):
            if not inq[h]:
                inq[h] = True
                q.append(h)
        gain = tr.improve(q, inq)
        new = cur + delta - gain
        if new <= cur + _EPS or (temp > 0 and rng.random() < math.exp(-(new - cur) / temp)):
            if new < cur - _EPS:
                improvements += 1
            cur = new
            if cur < best - _EPS:
                best = cur
                best_t = tr.t[:]
                last_best = kicks
        else:
            tr.t, tr.pos = saved_t, saved_pos
    best_arr = local_search(m, best_t, nb, engine="python")  # a true local optimum
    return ILSResult(best_arr, tour_length(original, best_arr), kicks, improvements, time.perf_counter() - start)


def _ils_compiled(kr, m, nb, tour, start, stop_at, max_kicks, seed, window, stall, kick, temperature) -> ILSResult:
    """``iterated_local_search`` on the compiled kernel, returning to Python to check the clock.

    The kicks run in chunks sized to take ~20 ms (at most ``max_kicks`` in
    all); the kernel keeps its random state between chunks, so the result
    depends only on the seed and the number of kicks run.
    """
    n = m.shape[0]
    nb = np.ascontiguousarray(nb, dtype=np.int64)
    t = np.array(tour, dtype=np.int64)
    kr.local_search(m, nb, t)
    pos = np.empty(n, dtype=np.int64)
    pos[t] = np.arange(n)
    cur = tour_length(m, t)
    best_t = t.copy()
    fstate = np.array([cur, cur])
    istate = np.zeros(3, dtype=np.int64)
    # seed -> non-zero 64-bit xorshift state (splitmix64 of the seed)
    z = (int(seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    rng = np.array([(z ^ (z >> 31)) or 1], dtype=np.uint64)
    temp = temperature * cur / n  # in units of the mean tour edge
    chunk = 16
    while True:
        left = None if max_kicks is None else max_kicks - int(istate[0])
        if left is not None and left <= 0:
            break
        now = time.perf_counter()
        if now >= stop_at:
            break
        c = chunk if left is None else min(chunk, left)
        t0 = now
        done = kr.ils_run(m, nb, t, pos, best_t, fstate, istate, rng, c, window, stall or 0, kick, temp, False)
        if done < c:  # stalled
            break
        dt = time.perf_counter() - t0
        # aim at ~20 ms per call, never past the deadline
        rate = c / max(dt, 1e-6)
        chunk = int(max(1, min(rate * 0.02, rate * max(0.0, stop_at - time.perf_counter()) + 1, 4 * chunk)))
    kr.local_search(m, nb, best_t)  # a true local optimum (see local_search)
    best_arr = best_t.astype(int)
    return ILSResult(best_arr, tour_length(m, best_arr), int(istate[0]), int(istate[2]), time.perf_counter() - start)
