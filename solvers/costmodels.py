"""Cost models of collective algorithms over a rank order (dissertation §5.2.1).

Every model is a pure function of plain data: a :class:`PairCost` (pairwise
latency and, optionally, bandwidth), a permutation ``perm`` where
``perm[r]`` is the host that gets rank ``r``, and a message size ``S`` in
bytes.  The pair cost is the linear alpha-beta model of §5.2.2::

    c_ij(S) = lat_ij + S / bw_ij          (bandwidth known)
    c_ij(S) = lat_ij                      (latency only, as the paper settles on)

in microseconds (``lat`` in µs, ``bw`` in Gbit/s).  The models rank
permutations; they are the dissertation's formulas, not wall-clock
predictions.  What each sums:

``ring``  ``sum_r c[perm[r], perm[r-1]](S)`` over all N hops of the ring.
    Any N.

``hd``  halving-doubling (recursive halving reduce-scatter), ``sum_i max_j
    c[j, j XOR 2^i](S / 2^(i+1))`` for ``i < log2 N``.  The dissertation
    writes the partner as ``j + 2^i``; the real exchange partner of
    recursive halving (MPICH, Gloo) is ``j XOR 2^i`` and that is what is
    costed.  The all-gather phase mirrors the reduce-scatter with the same
    pairs and sizes, so, like the dissertation, only one phase is counted.
    N not a power of two: MPICH's ``MPIR_Allreduce_intra_reduce_scatter_allgather``
    scheme.  With ``r = N - 2^k`` (``2^k`` the largest power of two <= N), the
    first ``2r`` ranks pair up (``2i`` sends its whole vector to ``2i+1``),
    costing ``max_i c[2i, 2i+1](S)``; the ``2^k`` survivors (odd ranks below
    ``2r``, then ranks ``2r..N-1``) run the power-of-two algorithm.

``rd``  recursive doubling (Open MPI ``allreduce_intra_recursivedoubling``):
    the pairs of ``hd`` (including the non power-of-two pre-step), each
    round exchanging the full ``S``.

``dbt``  double binary tree (NCCL's, as modelled in §5.2.1).  Tree one is
    the in-order binary tree over ranks ``[0, N-1]`` rooted at the midpoint
    ``m = (i+j) // 2`` of every range, with subtrees ``[i, m-1]`` and
    ``[m+1, j]``; ``T(i, j) = max(c[m, root(left)](S/2) + T(left),
    c[m, root(right)](S/2) + T(right))``, an empty subtree costing nothing.
    Tree two is the mirror of §5.2.1: the same structure with every rank
    ``r`` replaced by ``r - 1 (mod N)``.  Each tree carries half the data;
    the cost is the maximum over the two trees.  Any N (NCCL builds its
    double binary tree for any N).

``bcube``  BCube with base ``B`` (Gloo's ``AllreduceBcube``), ``sum_i max_j
    max_{k=1..B-1} c[j, peer_k(j)](S / B^(i+1))`` for ``i < log_B N``,
    where ``peer_k(j)`` differs from ``j`` only in base-``B`` digit ``i``
    (``+k mod B``).  The dissertation writes ``j + k B^i``; the digit-wise
    peer group is what BCube exchanges with.  Gloo/Caffe2 accept BCube only
    when ``N = B^x`` (Caffe2 falls back to halving-doubling otherwise);
    plink raises ``ValueError`` instead of silently costing another
    algorithm.

Complexity: building a model is O(N log N); one evaluation is O(N log N)
(``hd``, ``bcube``) or O(N) (``ring``, ``dbt``) numpy work.

Reference: Liang Luo, *Towards Efficient Communication in Distributed
Machine Learning*, PhD dissertation, University of Washington, 2020, §5.2.1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

ALGORITHMS = ("ring", "hd", "rd", "dbt", "bcube")

#: microseconds per byte at 1 Gbit/s
_US_PER_BYTE_AT_1GBPS = 8e-3


def _real_matrix(m, what: str) -> np.ndarray:
    """``m`` as a float array; a one-line ``ValueError`` for text or complex values."""
    a = np.asarray(m)
    if a.dtype.kind == "c":
        raise ValueError(f"{what} matrix must be real numbers, got complex values")
    try:
        return np.array(a, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} matrix must be numbers, got {a.dtype} values") from None


@dataclass(frozen=True)
class PairCost:
    """Pairwise ``c_ij(S) = lat_ij + S * inv_bw_ij`` (µs; S in bytes).

    Build it with :meth:`from_matrices` ``(latency_us, bandwidth_gbps=None)``: ``latency_us``
    must be complete (no NaN) and >= 0: decide what a missing pair costs before building the
    model.  ``bandwidth_gbps`` may be ``None`` (latency-only model).  The fields are the
    latency (µs) and the inverse bandwidth (µs per byte, 0 where unknown).
    """

    latency: np.ndarray
    inv_bw: np.ndarray  # µs per byte, 0 where bandwidth is unknown/ignored

    def __post_init__(self):
        lat, inv = np.asarray(self.latency), np.asarray(self.inv_bw)
        if lat.ndim != 2 or lat.shape[0] != lat.shape[1] or inv.shape != lat.shape:
            raise ValueError(f"PairCost(latency, inv_bw) takes two square matrices of one shape, got {lat.shape} "
                             f"and {inv.shape} (build it with PairCost.from_matrices(latency_us, bandwidth_gbps))")

    @classmethod
    def from_matrices(cls, latency_us, bandwidth_gbps=None) -> "PairCost":
        """From a complete latency matrix (µs) and an optional bandwidth matrix (Gbit/s). O(N^2)."""
        lat = _real_matrix(latency_us, "latency")
        if lat.ndim != 2 or lat.shape[0] != lat.shape[1]:
            raise ValueError(f"latency matrix must be square, got shape {lat.shape}")
        off = ~np.eye(lat.shape[0], dtype=bool)
        if not np.all(np.isfinite(lat[off])):
            raise ValueError("latency matrix has missing or non-finite pairs; fill them before costing")
        if np.any(lat[off] < 0):
            raise ValueError("latency matrix has negative values: a latency is >= 0")
        np.fill_diagonal(lat, 0.0)
        if bandwidth_gbps is None:
            inv = np.zeros_like(lat)
        else:
            bw = _real_matrix(bandwidth_gbps, "bandwidth")
            if bw.shape != lat.shape:
                raise ValueError("bandwidth and latency matrices differ in shape")
            if not np.all(np.isfinite(bw[off])) or np.any(bw[off] <= 0):
                raise ValueError("bandwidth matrix must be positive and complete off the diagonal")
            inv = np.zeros_like(lat)
            inv[off] = _US_PER_BYTE_AT_1GBPS / bw[off]
        return cls(lat, inv)

    @property
    def n(self) -> int:
        return self.latency.shape[0]

    def matrix(self, size: float) -> np.ndarray:
        """The full ``(N, N)`` cost matrix ``c(size)``."""
        return self.latency + float(size) * self.inv_bw

    def pairs(self, a: np.ndarray, b: np.ndarray, size: float) -> np.ndarray:
        """``c[a, b](size)`` for index arrays ``a``, ``b`` (host indices)."""
        return self.latency[a, b] + float(size) * self.inv_bw[a, b]


# ---------------------------------------------------------------------------
# structures (depend on N only)


def check_orders(perms, n: int) -> np.ndarray:
    """``perms`` as int64 rank orders over ``n`` hosts: one order ``(n,)`` or many ``(M, n)``, each
    naming every host ``0..n-1`` exactly once; else a one-line ``ValueError`` (a host listed twice
    was priced as if the other host were free).  O(M N)."""
    p = np.asarray(perms)
    if p.ndim not in (1, 2) or p.shape[-1] != n:
        raise ValueError(f"an order must have {n} entries (one per host), got shape {p.shape}")
    if p.size and not (np.issubdtype(p.dtype, np.integer)
                       or (np.issubdtype(p.dtype, np.floating) and np.all(np.floor(p) == p))):
        raise ValueError(f"an order holds host indices 0..{n - 1} (whole numbers), got {p.dtype} values")
    p = p.astype(np.int64)
    rows = p.reshape(-1, n)
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        bad = int(rows.min() if rows.min() < 0 else rows.max())
        raise ValueError(f"an order holds host indices 0..{n - 1}, got {bad}")
    seen = np.zeros(rows.shape, dtype=bool)
    seen[np.arange(len(rows))[:, None], rows] = True
    if not seen.all():
        k, h = np.argwhere(~seen)[0]
        which = "" if p.ndim == 1 else f" (order {int(k)})"
        raise ValueError(f"an order must name every host once{which}: host {int(h)} is missing, another listed twice")
    return p


def is_power_of(n: int, base: int) -> bool:
    if n < 1 or base < 2:
        return False
    while n % base == 0:
        n //= base
    return n == 1


def hd_rounds(n: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Rounds of halving-doubling as ``(rank_a, rank_b, size_fraction)``.

    ``size_fraction`` multiplies S.  See the module docstring for N not a
    power of two.
    """
    rounds: list[tuple[np.ndarray, np.ndarray, float]] = []
    if n < 2:
        return rounds
    pof2 = 1 << (n.bit_length() - 1)
    r = n - pof2
    if r:
        evens = np.arange(r) * 2
        rounds.append((evens, evens + 1, 1.0))
    # survivors: new rank -> old rank
    survivors = np.concatenate([np.arange(r) * 2 + 1, np.arange(2 * r, n)]).astype(int)
    new = np.arange(pof2)
    i = 0
    while (1 << i) < pof2:
        partner = new ^ (1 << i)
        keep = new < partner  # each pair once
        rounds.append((survivors[new[keep]], survivors[partner[keep]], 1.0 / (1 << (i + 1))))
        i += 1
    return rounds


def rd_rounds(n: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Rounds of recursive doubling: the pairs of :func:`hd_rounds`, each exchanging the full vector."""
    return [(a, b, 1.0) for a, b, _ in hd_rounds(n)]


def check_bcube(n: int, base: int) -> None:
    """ValueError unless BCube can run: ``base >= 2`` and ``N = base^x`` (as Gloo requires)."""
    if base < 2:
        raise ValueError(f"BCube base must be >= 2, got {base}")
    if not is_power_of(n, base):
        raise ValueError(
            f"BCube with base {base} needs N to be a power of {base}, but N = {n} "
            f"(Gloo accepts only N = base^x; pick another --base or algorithm)"
        )


def bcube_rounds(n: int, base: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Rounds of BCube as ``(rank_a, rank_b, size_fraction)``; ``N = base^x`` only."""
    check_bcube(n, base)
    rounds = []
    j = np.arange(n)
    stride = 1
    i = 0
    while stride < n:
        digit = (j // stride) % base
        a_list, b_list = [], []
        for k in range(1, base):
            peer = j + (((digit + k) % base) - digit) * stride
            a_list.append(j)
            b_list.append(peer)
        rounds.append((np.concatenate(a_list), np.concatenate(b_list), 1.0 / base ** (i + 1)))
        stride *= base
        i += 1
    return rounds


def dbt_levels(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Edges ``(parent_rank, child_rank)`` of tree one, grouped by child depth, deepest first."""
    by_depth: dict[int, list[tuple[int, int]]] = {}
    # iterative build over ranges to avoid recursion limits for large N
    stack = [(0, n - 1, 0, -1)]
    while stack:
        i, j, depth, parent = stack.pop()
        if i > j:
            continue
        m = (i + j) // 2
        if parent >= 0:
            by_depth.setdefault(depth, []).append((parent, m))
        stack.append((i, m - 1, depth + 1, m))
        stack.append((m + 1, j, depth + 1, m))
    levels = []
    for depth in sorted(by_depth, reverse=True):
        edges = np.array(by_depth[depth], dtype=int)
        levels.append((edges[:, 0], edges[:, 1]))
    return levels


def dbt_root(n: int) -> int:
    return (n - 1) // 2


# ---------------------------------------------------------------------------
# evaluation


def _rounds_cost(pc: PairCost, perm: np.ndarray, rounds, size: float):
    """Sum over rounds of the round's slowest exchange; ``perm`` is one order ``(N,)`` (returns a
    float) or ``(M, N)`` orders (returns ``(M,)``)."""
    total = np.zeros(perm.shape[:-1])
    for a, b, frac in rounds:
        ha, hb = perm[..., a], perm[..., b]
        s = size * frac
        # exchanges are bidirectional: the slower direction bounds the round
        c = np.maximum(pc.pairs(ha, hb, s), pc.pairs(hb, ha, s))
        total = total + c.max(axis=-1)
    return float(total) if perm.ndim == 1 else total


def ring_cost(pc: PairCost, perm, size: float = 0.0) -> float:
    """Ring: sum over ranks r of ``c[perm[r], perm[r-1]](S)`` (:func:`ring_hops` over ``c(S)``)."""
    return ring_hops(pc.matrix(size), perm)


def ring_hops(matrix: np.ndarray, perm):
    """THE ring cost, used everywhere: ``sum_r matrix[perm[r], perm[r-1]]`` over all N hops.

    ``perm`` is one order (returns a float) or ``(M, N)`` orders (returns
    ``(M,)``).  Fewer than two ranks cost 0.  O(N) per order.  The compiled
    ring kernel (``solvers._ringkernel``) keeps its own inner loop, tested
    equal to this.
    """
    p = np.asarray(perm)
    if p.shape[-1] < 2:
        return 0.0 if p.ndim == 1 else np.zeros(p.shape[0])
    out = matrix[p, np.roll(p, 1, axis=-1)].sum(axis=-1)
    return float(out) if p.ndim == 1 else out


def hd_cost(pc: PairCost, perm, size: float = 0.0) -> float:
    """Halving-doubling (see module docstring)."""
    p = np.asarray(perm)
    return _rounds_cost(pc, p, hd_rounds(len(p)), size)


def bcube_cost(pc: PairCost, perm, size: float = 0.0, base: int = 2) -> float:
    """BCube with base ``base`` (see module docstring)."""
    p = np.asarray(perm)
    return _rounds_cost(pc, p, bcube_rounds(len(p), base), size)


def _tree_cost(pc: PairCost, perm: np.ndarray, levels, size: float, n: int) -> np.ndarray:
    """Time of one tree (children before parents, each parent waits for its slowest child)."""
    down = np.zeros(perm.shape)
    for par, ch in levels:
        vals = pc.pairs(perm[..., par], perm[..., ch], size) + down[..., ch]
        # a parent may appear twice in a level (two children): combine by max
        if perm.ndim == 1:
            np.maximum.at(down, par, vals)
        else:  # per edge over all orders at once (ufunc.at over a batch is several times slower)
            for k, q in enumerate(par):
                down[:, q] = np.maximum(down[:, q], vals[:, k])
    return down[..., dbt_root(n)]


def _dbt(pc: PairCost, perm: np.ndarray, levels, size: float):
    """Double binary tree over ``perm`` ``(N,)`` (float) or ``(M, N)`` (``(M,)``): S/2 per tree."""
    n = perm.shape[-1]
    if n < 2:
        return 0.0 if perm.ndim == 1 else np.zeros(perm.shape[0])
    half = size / 2
    # the mirror tree: tree position a is played by rank a-1, i.e. the order rotated by one
    t = np.maximum(_tree_cost(pc, perm, levels, half, n), _tree_cost(pc, np.roll(perm, 1, axis=-1), levels, half, n))
    return float(t) if perm.ndim == 1 else t


def dbt_cost(pc: PairCost, perm, size: float = 0.0) -> float:
    """Double binary tree: max over the tree and its mirror, S/2 per tree."""
    p = np.asarray(perm)
    return _dbt(pc, p, dbt_levels(len(p)), size)


class CostModel:
    """A cost model bound to a pair-cost, size and algorithm: ``model(perm) -> float``.

    Precomputes the N-dependent structure once, so repeated evaluation (the
    solvers' inner loop) is a few vectorised gathers.
    """

    def __init__(self, algo: str, pc: PairCost, size: float = 0.0, base: int = 2):
        if algo not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {algo!r} (choose from {', '.join(ALGORITHMS)})")
        if size < 0:
            raise ValueError(f"size must be >= 0 bytes, got {size}")
        self.algo = algo
        self.pc = pc
        self.size = float(size)
        self.base = base
        n = pc.n
        self.n = n
        self._eval: Callable[[np.ndarray], float]
        if algo == "ring":
            self._matrix = pc.matrix(self.size)
            self._eval = lambda p: ring_hops(self._matrix, p)
        elif algo in ("hd", "rd", "bcube"):
            self._rounds = hd_rounds(n) if algo == "hd" else rd_rounds(n) if algo == "rd" else bcube_rounds(n, base)
            self._eval = lambda p: _rounds_cost(pc, p, self._rounds, self.size)
        else:
            self._levels = dbt_levels(n)
            self._eval = lambda p: _dbt(pc, p, self._levels, self.size)

    @property
    def ring_matrix(self) -> np.ndarray | None:
        """The ring's ``c(S)`` matrix (ring only), for incremental solvers."""
        return self._matrix if self.algo == "ring" else None

    def __call__(self, perm) -> float:
        p = np.asarray(perm)
        if p.shape != (self.n,):
            raise ValueError(f"permutation must have {self.n} entries, got {p.shape}")
        return self._eval(check_orders(p, self.n))

    def batch(self, perms) -> np.ndarray:
        """Costs of many orders at once: ``perms`` is ``(M, N)``; returns ``(M,)``. O(M N log N)."""
        p = np.asarray(perms)
        if p.ndim != 2 or p.shape[1] != self.n:
            raise ValueError(f"orders must be an (M, {self.n}) array, got shape {p.shape}")
        return self._eval(check_orders(p, self.n))


def check_algorithm(algo: str, n: int, base: int = 2) -> None:
    """Raise ``ValueError`` when ``algo`` cannot run on ``n`` ranks."""
    if algo not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algo!r} (choose from {', '.join(ALGORITHMS)})")
    if algo == "bcube":
        bcube_rounds(n, base)
