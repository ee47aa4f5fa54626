"""Cost models that price what flows share: host NICs and group (rack) uplinks, in seconds.

The dissertation's model (§5.2.1, ``solvers.costmodels``, here called
``pairsum``) sums independent pair costs.  Real collectives are limited by
what concurrent flows *share*: on a cluster with oversubscribed rack uplinks a
ring that sends two flows over one uplink direction takes twice as long as
one that sends one (measured on the emulated cluster: time ~ 0.62 s x the
largest number of ring flows on one uplink direction, 16 MiB, 400 Mbit/s).

**Model.**  A collective is a list of *steps*; in a step a set of flows
``rank a -> rank b`` with ``bytes`` each run concurrently.  Links are every
host NIC (send side and receive side) and, for every group of hosts (rack),
its uplink in each direction (``up``: leaving the group, ``down``:
entering it).  A flow crosses the sender's NIC, the receiver's NIC and, when
sender and receiver sit in different groups, the sender group's ``up`` and
the receiver group's ``down``.  Then ::

    bandwidth = sum over steps of  max_links (bytes on link / capacity)   (ring, dbt)
              = the last rank clock of the rounds below                   (hd, rd, bcube, bintree)
    latency   = the longest chain of messages (critical_latency)
    total     = latency + bandwidth

(the latency is one-way, in seconds; capacities in bytes/s).  A step's time
is the max-min fair completion time of its flows when one link is the
bottleneck; with equal caps it is exactly ``S_step x (largest number of
flows sharing a link) / cap``.  Where each pair's path was measured on its
own (``Network.path``: a bandwidth matrix from a file), a flow also takes at
least ``bytes / path``.

**Bandwidth on per-rank clocks** (hd, rd, bcube, bintree; since
2026-11-29).  These run a few rounds of large messages, and no library puts
a barrier between rounds: a rank starts its next exchange as soon as its
own partner is ready.  So the term follows each rank's clock through the
rounds in time order: a flow of a round starts when both its ranks' clocks
have reached it (a rendezvous: large messages wait for the receiver), takes
the time of the busiest link *it* crosses (every link's load is all the
round's flows on it: static shares), and moves both clocks to its end; the
term is the last clock.  A round whose cross-rack flows load an uplink then
delays only the ranks behind those flows, not every rank.  It is never more
than the sum of the rounds' busiest links, and equal to it when every rank
meets the busiest link in every round (the ring and dbt keep the sum: a
ring's clocks grow by its busiest link per step anyway, and dbt is one
pipelined step).  Measured (``benchmarks/collectives_netns.py
--analyse-only`` over the 35 runs saved before it): recursive doubling's Spearman
with the orders the model does not tell apart tied, mean 0.905 -> 0.917
(better in 12 runs, worse in 4; proof case A seed 15 0.81 -> 0.87, its own
repeat 0.88); Rabenseifner and the tree unchanged on average (0.894, 0.956
-> 0.955).  In case A seed 15 the step-synchronous sum priced three
orders (partly-sorted-1 and plink's two bintree orders) 20% above the
rack-contiguous one for recursive doubling; they measured 1.5-9% slower
than it, and the clocks price them with it.

**What ``plink order`` reports** for these four algorithms (up to 64 ranks,
since 2026-11-29) is not this bandwidth term but the fluid one of
``solvers.fluid`` over the same rounds: flows share every link max-min
fairly, re-shared as each flow ends, instead of each taking its round's
busiest link.  The clocks here stay the search's objective (fast in
batches); the fluid model prices the orders the search found.

The latency term follows each rank's clock, not the steps: a message sent
when its sender's clock reads ``t`` arrives ``latency`` later, and the
receiver moves on then (if it is not later itself).  The term is the last
clock: the longest chain of messages through the algorithm (the LogP view,
Culler et al. 1993; sends do not wait for the receiver, as in the eager
protocols of small messages).  A ring's chain crosses at most ``2(N-1)``
consecutive edges, so one slow edge costs it twice, not ``2(N-1)`` times as
"every step waits for its slowest flow" would say; on wide-area matrices,
where latency is most of the cost, that rule priced a ring by its slowest
edge alone and orders by the bottleneck, not by the edges they cross.

**Step structures** (``schedule``; S bytes, N ranks; each checked against the
library source named):

``ring``  Open MPI ``ompi_coll_base_allreduce_intra_ring``, Gloo's ring,
    NCCL ring: ``2(N-1)`` steps (reduce-scatter then all-gather), in each
    every rank ``r`` sends ``S/N`` bytes to ``r+1 mod N``.  Each host moves
    ``2(N-1)/N S`` bytes.

``hd``  Rabenseifner's reduce-scatter + all-gather as in Open MPI
    ``ompi_coll_base_allreduce_intra_redscat_allgather`` (MPICH's is the same
    for a power of two).  ``p' = 2^floor(log2 N)``, ``r = N - p'``.  Pre-step
    for the first ``2r`` ranks: even ``2i`` and odd ``2i+1`` swap halves
    (``S/2`` each way), then the odd rank sends its reduced half (``S/2``) to
    the even one, which survives as virtual rank ``i``; ranks ``>= 2r``
    become ``rank - r``.  Reduce-scatter: for ``mask = 1, 2, ..., p'/2``
    exchange ``S / (2 mask)`` bytes each way with ``vrank XOR mask`` (the
    *largest* volume goes to the nearest partner, distance 1, first); the
    all-gather mirrors it (``mask = p'/2 .. 1``, same volumes per partner).
    Post-step: each even rank ``< 2r`` sends the full ``S`` to ``rank + 1``.

``rd``  recursive doubling, Open MPI ``ompi_coll_base_allreduce_intra_recursivedoubling``:
    pre-step even ``2i`` sends ``S`` to ``2i+1`` (which survives as
    ``i``), ranks ``>= 2r`` become ``rank - r``; ``log2 p'`` steps
    exchanging the full ``S`` each way with ``vrank XOR 2^k``; post-step the
    odd rank sends ``S`` back to the even one.

``dbt``  NCCL's double binary tree (the trees of ``solvers.costmodels``:
    an in-order binary tree over ranks and its mirror shifted by one rank),
    pipelined: each tree carries ``S/2`` up (reduce) and ``S/2`` down
    (broadcast) over every edge, all concurrent, so the bandwidth term is one
    step with all these flows; the latency term is the slower tree's chain,
    up from the deepest level and back down (each tree keeps its clocks).

``bcube``  Gloo ``AllreduceBcube`` with base ``B`` (``N = B^x``): for digit
    ``i = 0..x-1`` every rank sends ``S / B^(i+1)`` to each of its ``B-1``
    peers differing only in digit ``i`` (reduce-scatter), and the all-gather
    repeats the same flows in reverse digit order.

``bintree``  Open MPI ``allreduce`` algorithm 2 (``nonoverlapping``: reduce to
    rank 0, then broadcast) with the binary-tree reduce (4) and broadcast (5)
    of ``coll_tuned``, over ``ompi_coll_base_topo_build_tree(2, comm, 0)``
    (children of the ``i``-th rank of level ``L``: ``2^(L+1) - 1 + i`` and
    that plus ``2^L``).  Forced through ``coll_tuned``, both run with the
    segment size of ``coll_tuned_reduce_algorithm_segmentsize`` /
    ``coll_tuned_bcast_algorithm_segmentsize``, 0 by default: one segment,
    each message whole (``ompi_coll_base_reduce_generic`` /
    ``ompi_coll_base_bcast_intra_generic``), so the tree is store-and-forward,
    level by level.  Reduce: a rank sends its ``S`` bytes up when its subtree
    is done, so the ranks of height ``h`` (the longest path down to a leaf)
    send together in step ``h`` (leaves first, a parent's two children at
    once where they are of one height: they share its NIC); broadcast: the
    ranks of depth ``d`` receive ``S`` from their parent in step ``d`` (a
    parent sends to both children at once).  Its bandwidth runs on per-rank
    clocks (below): a subtree that is done early sends up without waiting
    for the others of its height.  Measured with Open
    MPI 4.1.4 (``benchmarks/collectives_netns.py``, 4 MiB): on 20 hosts in
    racks of 6, 2, 5, 3 and 4 (case D) the hand-out order is 16 busiest-link
    units of ``S / 300 Mbit/s`` (1.79 s; measured 1.80 s), plink's 14 (1.57 s;
    1.54 s) and the rack-contiguous order 26 (2.91 s; 2.71 s): its upper levels
    sit in one rack and the next level's children all outside it.  Spearman
    (predicted, measured) over its 20 orders 0.97 with either probe; the model
    used until 2026-11-27, every edge at once with the links' Euclidean norm
    (an empirical fit to 16 hosts), scored 0.44 and 0.29 there.  A segment
    size set by the user pipelines the tree, which this model does not price.
    (The shared model only; not NCCL's tree.)

Identical steps are merged (``repeat``), so a ring is one step repeated
``2(N-1)`` times and costs one evaluation.

Complexity: one evaluation is O(sum of flows over distinct steps and of the
messages of one pass through the algorithm) numpy work: O(N) for ring (its
latency in closed form), O(N log N) for hd/rd, O(N) for dbt and bintree, O(N B log_B N) for BCube;
``batch`` evaluates M orders in one pass (O(M x that)).

References: D. Culler, R. Karp, D. Patterson et al., "LogP: towards a
realistic model of parallel computation", PPoPP 1993; R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of
collective communication operations in MPICH", IJHPCA 19(1), 2005;
P. Sanders, J. Speck, J. L. Träff, "Two-tree algorithms for full bandwidth
broadcast, reduction and scan", Parallel Computing 35(12), 2009 (double
binary tree); Open MPI ``ompi/mca/coll/base/coll_base_allreduce.c``; Gloo
``gloo/allreduce_bcube.h``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .costmodels import check_bcube, check_orders, dbt_levels

SHARED_ALGORITHMS = ("ring", "hd", "rd", "dbt", "bcube", "bintree")


# ---------------------------------------------------------------------------
# the network: latencies, NICs, groups and their uplinks


@dataclass(frozen=True)
class Network:
    """What the flows of a collective share.

    ``latency``: ``(N, N)`` one-way seconds, complete off the diagonal.
    ``nic_send`` / ``nic_recv``: ``(N,)`` bytes/s per host.  ``groups``:
    ``(N,)`` ints ``0..G-1``.  ``up`` / ``down``: ``(G,)`` bytes/s of each
    group's uplink leaving / entering the group.  ``outer``: further levels
    of shared links, each ``(labels, up, down)`` over the same hosts (e.g.
    uplinks measured for sets of racks, or rows of racks); a flow uses a
    level's uplinks when its two hosts have different labels there.
    ``notes``: the assumptions made to build it (reported to the user);
    ``assumed``: which capacities were assumed, not measured (``"nic"``, ``"uplinks"``);
    ``assumption_notes``: the notes (of ``notes``) that say what was assumed about them.
    ``path``: optional ``(N, N)`` bytes/s, the most one flow from ``a`` to ``b`` gets on its own
    (a pair's bandwidth measured alone, e.g. a public inter-region matrix): a flow then takes at
    least ``bytes / path[a, b]``, whatever it shares (the diagonal is ignored).
    """

    latency: np.ndarray
    nic_send: np.ndarray
    nic_recv: np.ndarray
    groups: np.ndarray
    up: np.ndarray
    down: np.ndarray
    notes: tuple[str, ...] = field(default=())
    outer: tuple = field(default=())
    assumed: tuple[str, ...] = field(default=())
    path: np.ndarray | None = None
    assumption_notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        lat = np.asarray(self.latency, dtype=float)
        if lat.ndim != 2 or lat.shape[0] != lat.shape[1]:
            raise ValueError(f"latency matrix must be square, got shape {lat.shape}")
        n = len(lat)
        off = ~np.eye(n, dtype=bool)
        if not np.all(np.isfinite(lat[off])) or np.any(lat[off] < 0):
            raise ValueError("latency matrix must be complete, finite and >= 0 off the diagonal; fill missing pairs first")
        lat = lat.copy()
        np.fill_diagonal(lat, 0.0)
        g = np.asarray(self.groups)
        if g.shape != (n,) or (n and (g.min() < 0 or not np.issubdtype(g.dtype, np.integer))):
            raise ValueError(f"groups must be {n} non-negative integers")
        k = int(g.max()) + 1 if n else 0
        arrays = {}
        for name, size in (("nic_send", n), ("nic_recv", n), ("up", k), ("down", k)):
            a = np.asarray(getattr(self, name), dtype=float)
            if a.shape != (size,):
                raise ValueError(f"{name} must have {size} entries, got shape {a.shape}")
            if not np.all(a > 0):
                raise ValueError(f"{name} capacities must be > 0 bytes/s")
            arrays[name] = a
        object.__setattr__(self, "latency", lat)
        object.__setattr__(self, "groups", g.astype(np.int64))
        for name, a in arrays.items():
            object.__setattr__(self, name, a)
        outer = []
        for lab, up, down in self.outer:
            lab = np.asarray(lab, dtype=np.int64)
            up, down = np.asarray(up, dtype=float), np.asarray(down, dtype=float)
            k = int(lab.max()) + 1 if n else 0
            if lab.shape != (n,) or (n and lab.min() < 0) or up.shape != (k,) or down.shape != (k,):
                raise ValueError("every outer level needs n labels 0..k-1 and k up and k down capacities")
            if not (np.all(up > 0) and np.all(down > 0)):
                raise ValueError("outer uplink capacities must be > 0 bytes/s")
            outer.append((lab, up, down))
        object.__setattr__(self, "outer", tuple(outer))
        if self.path is not None:
            path = np.array(self.path, dtype=float)
            if path.shape != (n, n) or not np.all(path[off] > 0):
                raise ValueError(f"path capacities must be an ({n}, {n}) matrix > 0 bytes/s off the diagonal "
                                 "(fill missing pairs first)")
            np.fill_diagonal(path, np.inf)
            object.__setattr__(self, "path", path)

    @property
    def n(self) -> int:
        return self.latency.shape[0]

    @property
    def n_groups(self) -> int:
        return len(self.up)

    def levels(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``[(labels, up, down), ...]``: the groups, then the ``outer`` levels."""
        return [(self.groups, self.up, self.down), *self.outer]

    def inverse_capacities(self) -> np.ndarray:
        """``1 / capacity`` of ``[send NICs, recv NICs, (ups, downs) per level, intra-group dummy]``."""
        parts = [1.0 / self.nic_send, 1.0 / self.nic_recv]
        for _, up, down in self.levels():
            parts += [1.0 / up, 1.0 / down]
        return np.concatenate(parts + [[0.0]])

    def link_index(self, hs: np.ndarray, hd: np.ndarray, dummy: int) -> np.ndarray:
        """Link slot of every (flow, link) pair: flows ``hs -> hd`` (host arrays of one shape; the
        slots of a flow's links are laid along the last axis, one block per link kind). O(flows x levels)."""
        n = self.n
        parts = [hs, n + hd]
        off = 2 * n
        for lab, up, _ in self.levels():
            gs, gd = lab[hs], lab[hd]
            cross = gs != gd
            k = len(up)
            parts += [np.where(cross, off + gs, dummy), np.where(cross, off + k + gd, dummy)]
            off += 2 * k
        return np.concatenate(parts, axis=-1)


def conservative_uplinks(nic: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Uplink capacity per group when nothing measured it: what one host NIC of the group carries.

    The oversubscribed case (the emulated cluster's, and common in clouds):
    one flow alone cannot see oversubscription, so isolated pair bandwidth
    says nothing about the uplink.  The median NIC of the group.
    """
    g = np.asarray(groups)
    k = int(g.max()) + 1 if len(g) else 0
    return np.array([float(np.median(nic[g == j])) for j in range(k)])


# ---------------------------------------------------------------------------
# step structures


@dataclass(frozen=True)
class Step:
    """Concurrent flows ``src[f] -> dst[f]`` (ranks) of ``nbytes[f]`` bytes, ``repeat`` times.

    ``latency``: whether the step's flows count in the search's smooth companion's latency
    (the bandwidth-only step of a pipelined tree does not; the latency term itself is the
    chain of messages, :func:`critical_latency`).  The step's bandwidth term is its busiest
    link's time (ring, dbt), or each flow's own busiest link on per-rank clocks (the others,
    :func:`clocked_rounds`).
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    repeat: int = 1
    latency: bool = True


def _step(src, dst, nbytes, repeat=1, latency=True) -> Step:
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    nb = np.broadcast_to(np.asarray(nbytes, dtype=float), src.shape).copy()
    return Step(src, dst, nb, repeat, latency)


def _both(a, b, nbytes) -> Step:
    """An exchange: ``a <-> b`` (rank arrays) with ``nbytes`` each way."""
    return _step(np.concatenate([a, b]), np.concatenate([b, a]), nbytes)


def _merge(steps: list[Step]) -> list[Step]:
    """Merge identical steps (same flows, bytes, latency flag) by summing ``repeat``."""
    out: dict[tuple, Step] = {}
    for s in steps:
        if len(s.src) == 0:
            continue
        key = (s.src.tobytes(), s.dst.tobytes(), s.nbytes.tobytes(), s.latency)
        if key in out:
            o = out[key]
            out[key] = Step(o.src, o.dst, o.nbytes, o.repeat + s.repeat, o.latency)
        else:
            out[key] = s
    return list(out.values())


def ring_steps(n: int, size: float) -> list[Step]:
    if n < 2:
        return []
    r = np.arange(n)
    return [_step(r, (r + 1) % n, size / n, repeat=2 * (n - 1))]


def _fold(n: int, survivor: int) -> tuple[np.ndarray, np.ndarray]:
    """Open MPI's fold of ``n`` ranks onto ``p' = 2^floor(log2 n)`` virtual ranks
    (``r = n - p'``): ranks ``2i, 2i+1`` (``i < r``) pair up and one of them
    (``2i + survivor``) plays virtual rank ``i``; ranks ``>= 2r`` play ``rank - r``.
    Returns the pairs' even ranks and the rank playing each virtual rank."""
    pof2 = 1 << (n.bit_length() - 1)
    rem = n - pof2
    v = np.arange(pof2)
    return np.arange(rem) * 2, np.where(v < rem, v * 2 + survivor, v + rem)


def _butterfly(real: np.ndarray, nbytes, descending: bool = False) -> list[Step]:
    """The exchanges of ``len(real)`` (a power of two) virtual ranks, played by the
    ranks ``real``: for ``mask = 1, 2, 4, ...`` (the reverse with ``descending``) virtual
    ranks ``v`` and ``v XOR mask`` swap ``nbytes(mask)`` bytes each way."""
    v = np.arange(len(real))
    masks = [1 << i for i in range(len(real).bit_length() - 1)]
    steps = []
    for mask in masks[::-1] if descending else masks:
        keep = v < (v ^ mask)
        steps.append(_both(real[v[keep]], real[(v ^ mask)[keep]], nbytes(mask)))
    return steps


def _hd_rounds(n: int, size: float) -> list[Step]:
    """Rabenseifner's messages in time order (n >= 2): the fold, the reduce-scatter's
    exchanges, the all-gather's in reverse, the unfold (empty fold steps for a power of two)."""
    evens, real = _fold(n, 0)  # the even ranks survive

    def halves(mask):
        return size / (2 * mask)

    pre = [_both(evens, evens + 1, size / 2), _step(evens + 1, evens, size / 2)]
    post = [_step(evens, evens + 1, size)]
    return pre + _butterfly(real, halves) + _butterfly(real, halves, descending=True) + post


def _rd_rounds(n: int, size: float) -> list[Step]:
    """Recursive doubling's messages in time order (n >= 2)."""
    evens, real = _fold(n, 1)  # the odd ranks survive
    return [_step(evens, evens + 1, size)] + _butterfly(real, lambda mask: size) + [_step(evens + 1, evens, size)]


def hd_steps(n: int, size: float) -> list[Step]:
    """Rabenseifner as in Open MPI (see module docstring); the fold's pairs are empty steps when n is a power of two."""
    return _merge(_hd_rounds(n, size)) if n >= 2 else []


def rd_steps(n: int, size: float) -> list[Step]:
    """Recursive doubling as in Open MPI (see module docstring)."""
    return _merge(_rd_rounds(n, size)) if n >= 2 else []


def dbt_steps(n: int, size: float) -> list[Step]:
    """Pipelined double binary tree (see module docstring)."""
    if n < 2:
        return []
    levels = dbt_levels(n)  # tree one, deepest first, positions == ranks
    steps: list[Step] = []
    par_all, ch_all = [], []
    for par, ch in levels:
        # tree two: position a is played by rank a - 1 (mod n)
        p2, c2 = (par - 1) % n, (ch - 1) % n
        pa = np.concatenate([par, p2])
        ca = np.concatenate([ch, c2])
        steps.append(_step(np.concatenate([ca, pa]), np.concatenate([pa, ca]), 0.0, repeat=2))
        par_all.append(pa)
        ch_all.append(ca)
    pa = np.concatenate(par_all)
    ca = np.concatenate(ch_all)
    # every edge of both trees: S/2 up (reduce) and S/2 down (broadcast), all concurrent
    steps.append(_step(np.concatenate([ca, pa]), np.concatenate([pa, ca]), size / 2, latency=False))
    return _merge(steps)


def bintree_edges(n: int) -> list[tuple[int, int, int]]:
    """``(parent, child, child_level)`` of Open MPI's fanout-2 tree rooted at rank 0.

    ``ompi_coll_base_topo_build_tree(2, comm, 0)``: level ``L`` holds ranks
    ``2^L - 1 .. 2^(L+1) - 2``; the ``i``-th rank of level ``L`` has children
    ``2^(L+1) - 1 + i`` and ``2^(L+1) - 1 + i + 2^L`` (7 ranks: 0 -> 1, 2;
    1 -> 3, 5; 2 -> 4, 6).
    """
    out = []
    level, first = 0, 0
    while first < n:
        delta = 1 << level
        nxt = first + delta
        for i in range(delta):
            r = first + i
            if r >= n:
                break
            for k in range(2):
                c = nxt + i + k * delta
                if c < n:
                    out.append((r, c, level + 1))
        first, level = nxt, level + 1
    return out


def bintree_heights(n: int) -> np.ndarray:
    """Height of every rank in :func:`bintree_edges`' tree: the longest path down to a leaf (leaves 0). O(N)."""
    h = np.zeros(n, dtype=np.int64)
    for par, ch, _ in reversed(bintree_edges(n)):  # (children come after their parents)
        h[par] = max(h[par], h[ch] + 1)
    return h


def _bintree_rounds(n: int, size: float) -> list[Step]:
    """The tree's messages in time order (n >= 2): the reduce by height, leaves first, then the broadcast by depth."""
    e = np.array(bintree_edges(n), dtype=np.int64)
    par, ch, depth = e[:, 0], e[:, 1], e[:, 2]
    height = bintree_heights(n)[ch]
    steps = [_step(ch[height == h], par[height == h], size) for h in range(int(height.max()) + 1)]
    steps += [_step(par[depth == d], ch[depth == d], size) for d in range(1, int(depth.max()) + 1)]
    return steps


def bintree_steps(n: int, size: float) -> list[Step]:
    """Open MPI allreduce algorithm 2 with unsegmented binary-tree reduce and broadcast (see module
    docstring): the reduce by height, leaves first, then the broadcast by depth."""
    return _merge(_bintree_rounds(n, size)) if n >= 2 else []


def _bcube_rounds(n: int, size: float, base: int) -> list[Step]:
    """BCube's messages in time order: the reduce-scatter digit by digit, the all-gather back."""
    j = np.arange(n)
    steps: list[Step] = []
    stride, i = 1, 0
    while stride < n:
        digit = (j // stride) % base
        src, dst = [], []
        for k in range(1, base):
            src.append(j)
            dst.append(j + (((digit + k) % base) - digit) * stride)
        steps.append(_step(np.concatenate(src), np.concatenate(dst), size / base ** (i + 1)))
        stride *= base
        i += 1
    return steps + steps[::-1]


def bcube_steps(n: int, size: float, base: int = 2) -> list[Step]:
    """Gloo's BCube (see module docstring); ``N = base^x`` only."""
    check_bcube(n, base)  # (N = 0 is refused; N = 1 has no rounds)
    return _merge(_bcube_rounds(n, size, base))


def _time_rounds(algo: str, n: int, size: float, base: int) -> list[Step]:
    """The rounds of ``hd``, ``rd``, ``bcube`` or ``bintree`` (n >= 2) in time order, unmerged."""
    if algo == "bcube":
        check_bcube(n, base)
        return _bcube_rounds(n, size, base)
    return {"hd": _hd_rounds, "rd": _rd_rounds, "bintree": _bintree_rounds}[algo](n, size)


def clocked_rounds(algo: str, n: int, size: float, base: int = 2) -> list[Step] | None:
    """The steps of ``algo`` in time order, unmerged, for its bandwidth term on per-rank clocks;
    ``None`` for ``ring`` and ``dbt``, whose bandwidth term is the sum of their steps' busiest
    links (see the module docstring)."""
    if n < 2 or algo in ("ring", "dbt"):
        return None
    if algo not in SHARED_ALGORITHMS:
        raise ValueError(f"unknown algorithm {algo!r} (choose from {', '.join(SHARED_ALGORITHMS)})")
    return [s for s in _time_rounds(algo, n, size, base) if len(s.src) and s.nbytes.any()]


def schedule(algo: str, n: int, size: float, base: int = 2) -> list[Step]:
    """The steps of ``algo`` over ``n`` ranks for ``size`` bytes."""
    if algo == "ring":
        return ring_steps(n, size)
    if algo == "hd":
        return hd_steps(n, size)
    if algo == "rd":
        return rd_steps(n, size)
    if algo == "dbt":
        return dbt_steps(n, size)
    if algo == "bcube":
        return bcube_steps(n, size, base)
    if algo == "bintree":
        return bintree_steps(n, size)
    raise ValueError(f"unknown algorithm {algo!r} (choose from {', '.join(SHARED_ALGORITHMS)})")


# ---------------------------------------------------------------------------
# the latency term: the critical path of per-rank clocks


@dataclass(frozen=True)
class Hop:
    """Messages ``src[f] -> dst[f]`` (clocks) sent at the same time; ``unique``: no clock receives twice."""

    src: np.ndarray
    dst: np.ndarray
    unique: bool


def _hop(src, dst) -> Hop:
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    return Hop(src, dst, len(np.unique(dst)) == len(dst))


def latency_hops(algo: str, n: int, base: int = 2) -> tuple[list[Hop], np.ndarray]:
    """``(hops in time order, rank of each clock)`` of ``algo``'s messages, for its latency term.

    A clock is a rank, except for ``dbt``, whose two trees run side by side
    (clocks ``n..2n-1`` are tree two's positions, played by rank ``position - 1 mod n``).
    The ring has no hops: its critical path has a closed form (see :func:`critical_latency`).
    """
    ranks = np.arange(n, dtype=np.int64)
    if n < 2 or algo == "ring":
        return [], ranks
    if algo in ("hd", "rd", "bcube"):  # the messages of the bandwidth steps, in time order
        return [_hop(s.src, s.dst) for s in _time_rounds(algo, n, 0.0, base) if len(s.src)], ranks
    if algo == "dbt":
        levels = dbt_levels(n)  # tree one, deepest first, positions == ranks
        hops = []
        for shift in (0, n):  # tree two: clocks n + position
            hops += [_hop(ch + shift, par + shift) for par, ch in levels]
            hops += [_hop(par + shift, ch + shift) for par, ch in levels[::-1]]
        return hops, np.concatenate([ranks, (ranks - 1) % n])
    if algo == "bintree":
        e = np.array(bintree_edges(n), dtype=np.int64)
        depths = sorted(set(e[:, 2].tolist()))
        hops = [_hop(e[e[:, 2] == d, 1], e[e[:, 2] == d, 0]) for d in depths[::-1]]
        hops += [_hop(e[e[:, 2] == d, 0], e[e[:, 2] == d, 1]) for d in depths]
        return hops, ranks
    raise ValueError(f"unknown algorithm {algo!r} (choose from {', '.join(SHARED_ALGORITHMS)})")


def critical_latency(algo: str, latency: np.ndarray, perms: np.ndarray, hops: list[Hop],
                     clock_rank: np.ndarray) -> np.ndarray:
    """The latency term of ``algo`` for each row of ``perms``: the longest chain of messages.

    Every rank keeps a clock; a message ``a -> b`` sent when ``a``'s clock reads ``t``
    arrives at ``t + latency[a, b]``, and ``b``'s clock becomes the later of its own and
    that (the LogP view: sends do not wait for the receiver, as in the eager protocols
    of small messages).  The term is the last clock.  The ring in closed form: of its
    ``2(N-1)`` steps a chain can cross at most ``2(N-1)`` consecutive edges, so the term
    is twice the sum of the ring's edges less its cheapest two consecutive edges.
    O(M x messages).
    """
    P = np.asarray(perms, dtype=np.int64)
    M, n = P.shape
    if n < 2:
        return np.zeros(M)
    if algo == "ring":
        e = latency[P, np.roll(P, -1, axis=1)]
        return 2.0 * e.sum(axis=1) - (e + np.roll(e, -1, axis=1)).min(axis=1)
    R = P[:, clock_rank]
    t = np.zeros((M, len(clock_rank)))
    rows = np.arange(M)[:, None]
    for h in hops:
        arrive = t[:, h.src] + latency[R[:, h.src], R[:, h.dst]]
        if h.unique:
            t[:, h.dst] = np.maximum(t[:, h.dst], arrive)
        else:
            np.maximum.at(t, (rows, h.dst[None, :]), arrive)
    return t.max(axis=1)


# ---------------------------------------------------------------------------
# evaluation


def _advance_clocks(t: np.ndarray, s: Step, flow: np.ndarray, unique: tuple[bool, bool]) -> np.ndarray:
    """Rank clocks ``t`` (M, N) after round ``s``, whose flows take ``flow`` (M, F) seconds: a flow
    starts when both its ranks are ready and both are busy until it ends.  ``unique``: whether no
    rank sends (receives) twice in the round."""
    end = np.maximum(t[:, s.src], t[:, s.dst]) + flow
    new = t.copy()
    for ranks, once in zip((s.src, s.dst), unique):
        if once:
            new[:, ranks] = np.maximum(new[:, ranks], end)
        else:
            np.maximum.at(new, (np.arange(len(t))[:, None], ranks[None, :]), end)
    return new


def _once(s: Step) -> tuple[bool, bool]:
    """Whether no rank sends, and whether no rank receives, twice in ``s``."""
    return len(np.unique(s.src)) == len(s.src), len(np.unique(s.dst)) == len(s.dst)


class SharedCostModel:
    """``model(perm) -> seconds`` of ``algo`` over ``net`` (see module docstring).

    ``perm[r]`` is the host at rank ``r``.  ``batch(perms)`` prices many
    orders at once; ``max_uplink_flows(perm)`` counts the flows on the busiest uplink.
    """

    kind = "shared"

    def __init__(self, algo: str, net: Network, size: float, base: int = 2):
        if algo not in SHARED_ALGORITHMS:
            raise ValueError(f"unknown algorithm {algo!r} (choose from {', '.join(SHARED_ALGORITHMS)})")
        if not size >= 0:
            raise ValueError(f"size must be >= 0 bytes, got {size}")
        self.algo = algo
        self.net = net
        self.size = float(size)
        self.base = base
        self.n = net.n
        self.steps = schedule(algo, net.n, self.size, base)
        self.hops, self._clock_rank = latency_hops(algo, net.n, base)
        self.rounds = clocked_rounds(algo, net.n, self.size, base)
        self._once = [_once(s) for s in self.rounds or ()]
        first: dict[tuple, int] = {}  # a round repeated (hd's all-gather mirrors its reduce-scatter) is priced once
        self._same_as = [first.setdefault((s.src.tobytes(), s.dst.tobytes(), s.nbytes.tobytes()), i)
                         for i, s in enumerate(self.rounds or ())]
        self._inv = net.inverse_capacities()
        self._L = len(self._inv)

    def batch(self, perms, smooth: bool = False):
        """Seconds for each row of ``perms`` (``(M, N)``). O(M x flows).

        With ``smooth``, also returns a smooth companion per order: the same
        sum with every max replaced by a mean (flow latency) or a root mean
        square (link time), which the search uses to break the model's plateaus.
        """
        P = np.asarray(perms, dtype=np.int64)
        if P.ndim == 1:
            P = P[None, :]
        M = P.shape[0]
        net, L = self.net, self._L
        total = critical_latency(self.algo, net.latency, P, self.hops, self._clock_rank)
        soft = np.zeros(M)
        clocked = self.rounds is not None
        if clocked:
            total += self._clocked_bandwidth(P, soft if smooth else None)
        for s in self.steps:
            carries = s.nbytes.any() and not clocked
            if not carries and not (smooth and s.latency):
                continue  # a step without bytes is in the chain above; only the companion reads it
            hs = P[:, s.src]
            hd = P[:, s.dst]
            if s.latency and smooth:
                soft += s.repeat * net.latency[hs, hd].mean(axis=1)
            if carries:
                times, _ = self._link_times(hs, hd, s.nbytes)
                step = times.max(axis=1)
                if net.path is not None:  # no flow is faster than its pair's path alone
                    step = np.maximum(step, (s.nbytes / net.path[hs, hd]).max(axis=1))
                total += s.repeat * step
                if smooth:
                    soft += s.repeat * np.sqrt((times[:, :-1] ** 2).mean(axis=1))
        return (total, soft) if smooth else total

    def _link_times(self, hs, hd, nbytes):
        """``(seconds of every link's load (M, L), link slot of every (flow, link) (M, parts x F))``
        of one step's flows ``hs -> hd`` (host arrays ``(M, F)``) of ``nbytes`` each."""
        M, L = hs.shape[0], self._L
        idx = self.net.link_index(hs, hd, L - 1)
        parts = idx.shape[1] // hs.shape[1]
        w = np.broadcast_to(np.tile(nbytes, parts), idx.shape)
        rows = (np.arange(M) * L)[:, None]
        loads = np.bincount((idx + rows).ravel(), weights=w.ravel(), minlength=M * L).reshape(M, L)
        return loads * self._inv, idx

    def _clocked_bandwidth(self, P: np.ndarray, soft: np.ndarray | None = None) -> np.ndarray:
        """The bandwidth term on per-rank clocks (see the module docstring): a flow starts when both
        its ranks are done with the previous round and takes its busiest link's time in its round
        (every link's load is the round's flows on it); both ranks move on when it ends.  Adds the
        smooth companion's link part (every round's root mean square link time) to ``soft`` if given.
        O(M x flows)."""
        M, n = P.shape
        t = np.zeros((M, n))
        seen: dict[int, tuple] = {}
        for s, once, key in zip(self.rounds, self._once, self._same_as):
            if key not in seen:
                hs, hd = P[:, s.src], P[:, s.dst]
                times, idx = self._link_times(hs, hd, s.nbytes)
                flow = np.take_along_axis(times, idx, axis=1).reshape(M, -1, len(s.src)).max(axis=1)
                if self.net.path is not None:  # no flow is faster than its pair's path alone
                    flow = np.maximum(flow, s.nbytes / self.net.path[hs, hd])
                seen[key] = flow, (np.sqrt((times[:, :-1] ** 2).mean(axis=1)) if soft is not None else None)
            flow, rms = seen[key]
            if soft is not None:
                soft += rms
            t = _advance_clocks(t, s, flow, once)
        return t.max(axis=1)

    def __call__(self, perm) -> float:
        p = np.asarray(perm)
        if p.shape != (self.n,):
            raise ValueError(f"permutation must have {self.n} entries, got {p.shape}")
        return float(self.batch(check_orders(p, self.n)[None, :])[0])

    def _link_index(self, hs, hd) -> np.ndarray:
        return self.net.link_index(hs, hd, self._L - 1)

    def _counts(self, hs, hd) -> np.ndarray:
        """Flows per link slot (the last slot, the intra-group dummy, counts flows that stay in a group)."""
        return np.bincount(self._link_index(hs, hd), minlength=self._L)

    def has_uplinks(self) -> bool:
        """Whether any level has two or more groups (so that a flow can cross an uplink)."""
        return any(len(np.unique(lab)) > 1 for lab, _, _ in self.net.levels())

    def uplink_bytes(self, perms) -> np.ndarray:
        """Bytes each row of ``perms`` (``(M, N)``, or one order) sends over group uplinks, every
        level a flow crosses counted once (the search's tie-break: traffic kept off shared uplinks
        is exposed less to load the probe did not see).  O(M x flows x levels)."""
        P = np.asarray(perms, dtype=np.int64)
        one = P.ndim == 1
        P = P[None, :] if one else P
        total = np.zeros(P.shape[0])
        for s in self.steps:
            if not s.nbytes.any():
                continue
            hs, hd = P[:, s.src], P[:, s.dst]
            for lab, _, _ in self.net.levels():
                total += s.repeat * ((lab[hs] != lab[hd]) * s.nbytes).sum(axis=1)
        return total[0] if one else total

    def max_uplink_flows(self, perm) -> int:
        """The largest number of flows of one step sharing one uplink direction (any level)."""
        p = np.asarray(perm, dtype=np.int64)
        best = 0
        for s in self.steps:
            if s.nbytes.any():
                c = self._counts(p[s.src], p[s.dst])
                best = max(best, int(c[2 * self.n: -1].max(initial=0)))
        return best


def shared_lower_bound(model: SharedCostModel) -> float:
    """A valid lower bound on ``model`` over every order.

    Latency: the critical path with every pair at the smallest latency (the
    term grows with every pair's latency); for the ring ``2(N-1)/N`` x the
    sum over hosts of each host's cheapest outgoing latency (the longest of
    the ring's windows is at least their mean, and every host sends over one
    edge), which is never below the former.  Per step, bandwidth >= the busiest
    rank's sent (and received) bytes over the fastest NIC, and, for the ring
    with two or more groups, ``S/N`` over the slowest uplink (every ring
    leaves and enters every group at least once).  Where the bandwidth term
    runs on per-rank clocks (hd, rd, BCube, bintree), the same clocks with
    every flow at its ranks' sent (received) bytes of its round over the
    fastest NIC (a flow is never faster: its sender's NIC carries at least
    those bytes in its round; the clocks only grow with the flows' times).
    O(N^2 + flows).
    """
    net = model.net
    n = model.n
    if n < 2:
        return 0.0
    lat = net.latency + np.diag(np.full(n, np.inf))
    if model.algo == "ring":  # (never below the chain with every pair at the minimum, 2(N-1) x min)
        total = 2.0 * (n - 1) / n * float(lat.min(axis=1).sum())
    else:
        floor = np.full((n, n), float(lat.min()))
        total = float(critical_latency(model.algo, floor, np.arange(n)[None, :], model.hops, model._clock_rank)[0])
    used = np.unique(net.groups)
    if model.rounds is not None:  # per-rank clocks, every flow as fast as its ranks' bytes on the fastest NICs
        t = np.zeros((1, n))
        for s, once in zip(model.rounds, model._once):
            sent = np.bincount(s.src, weights=s.nbytes, minlength=n) / net.nic_send.max()
            recv = np.bincount(s.dst, weights=s.nbytes, minlength=n) / net.nic_recv.max()
            t = _advance_clocks(t, s, np.maximum(sent[s.src], recv[s.dst])[None, :], once)
        return total + float(t.max())
    for s in model.steps:
        if not s.nbytes.any():
            continue
        sent = np.bincount(s.src, weights=s.nbytes).max()
        recv = np.bincount(s.dst, weights=s.nbytes).max()
        bw = max(sent / net.nic_send.max(), recv / net.nic_recv.max())
        if model.algo == "ring" and len(used) >= 2:
            bw = max(bw, float(s.nbytes[0]) / net.up[used].min(), float(s.nbytes[0]) / net.down[used].min())
        total += s.repeat * bw
    return float(total)
