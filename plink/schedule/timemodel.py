"""The 2LHA time model: rounds of messages priced on the network's shared links, and its baselines.

Time model (:func:`predict_time`), phase-synchronous: the messages of one
round run concurrently and the round ends with its slowest, and the next
round starts then.  2LHA's chunks pipeline (§4.1.2): the executor runs them
in waves, one wave's local rounds in a step with another's global ones
(:func:`pipelined`), and :func:`predict_all` prices those steps.  Two ways
to price a round:

- **shared links** (:func:`shared_round_time`, what ``plink schedule`` /
  ``plink verify`` report): the links of ``plink order``'s shared-link model
  (:func:`plink.pricing.network`: host NICs, each group's uplink in and out,
  outer levels, and for a matrix measured pair by pair each pair's own path).
  A round's messages between one pair are one flow (one connection); a round
  takes its largest one-way latency plus its busiest link's bytes over that
  link's capacity::

      T_r = max_{(i,j) in r} lat_ij + max_links  bytes_r(link) / capacity(link)

  2LHA's rounds across groups pay for the uplinks they share.  The flat
  ring baseline on a :class:`Network` is the ring ``plink order`` would
  choose, found by its search (:func:`ring_order`: deterministic, from the
  rack-contiguous ring over the network's groups, the racks priced), at
  ``plink order``'s own price of it
  (:class:`plink.solvers.contention.SharedCostModel`: the same bandwidth
  term, and its latency as the ring's chain of messages, not the slowest
  edge at every step, which overprices wide-area rings); the rack-contiguous
  ring's price is reported beside it (``ring_contiguous``).
- **pairs** (:func:`round_time`, the dissertation's alpha-beta; kept as the
  baseline in ``benchmarks/schedule.py`` and for ``autotune.model_stats``):
  each pair at its own bandwidth, a node's concurrent sends (and receives)
  sharing its NIC, no uplink::

      T_r = max_{(i,j) in r} lat_ij + max_i max( sum_j B_r(i,j) / bw_ij , sum_j B_r(j,i) / bw_ji )

  A ``plink probe --bandwidth`` file's pair bandwidths were measured a round
  of pairs at a time, pairs across groups sharing the groups' uplinks, so
  this prices every cross-group pair at a shared rate even alone (on proof
  case F's probe a flat ring at 1.373 s, where the shared-link model gives
  0.878 s and Gloo's ring measured 0.886-0.889 s).

The total is ``sum_r T_r``.  The same links price the baselines: flat ring
all-reduce (reduce-scatter + all-gather, ``2(N-1)`` rounds of ``S/N`` to the
ring successor; pair by pair the ring in group order) and fully sharded PS
(every node serves ``S/N``: push round, pull round).

:func:`plan_traffic` computes a 2LHA plan's rounds straight from the plan
(no DAG; equal to what :func:`plink.schedule.verify.verify` records for the
expanded DAG, tested).  Cost ``O(M + N)`` per round for ``M`` messages
(``O(M log M)`` for the shared links, which merge a pair's messages).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plink.data.inputs import is_number, is_whole_number
from plink.errors import InputError, OptionError
from plink.schedule.plan import Plan
from plink.solvers.contention import Network
from plink.solvers.costmodels import PairCost


@dataclass
class Traffic:
    """Messages of one round: ``bytes[m]`` from ``src[m]`` to ``dst[m]``; the round happens ``repeat`` times.
    ``chunk[m]``: the chunk a 2LHA message carries (for :func:`pipelined`), where known."""

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    repeat: int = 1
    chunk: np.ndarray | None = None

    def aggregated(self, n: int) -> np.ndarray:
        """Bytes per ordered pair as a dense ``(n, n)`` matrix."""
        return np.bincount(self.src * n + self.dst, weights=self.nbytes, minlength=n * n).reshape(n, n)


# ---------------------------------------------------------------------------
# traffic straight from a plan (no DAG; for large N)


def plan_traffic(plan: Plan) -> list[Traffic]:
    """The rounds of a 2LHA plan's messages, computed with numpy (``O(C N)``).

    Equal, message for message and round for round, to the traffic
    :func:`verify` records for ``expand(plan)`` (tested).  A message's round
    is its causal depth, so an LM without members sends to the GM in round
    1, not 2.
    """
    c = plan.n_chunks
    ln = plan.chunks[:, 1].astype(float)
    labels = plan.labels
    gsz = np.bincount(labels, minlength=plan.k)
    own_lm = plan.lm[:, labels]  # (C, N): LM of each node's group, per chunk
    x = plan.gm
    gx = labels[x]
    nodes = np.broadcast_to(np.arange(plan.n), (c, plan.n))
    lens = np.broadcast_to(ln[:, None], (c, plan.n))
    member = own_lm != nodes
    in_gm_group = labels[None, :] == gx[:, None]
    lm_depth = np.where(gsz >= 2, 2, 1)  # round of a (non-GM) LM's send to the GM
    other = np.broadcast_to(np.arange(plan.k), (c, plan.k)) != gx[:, None]
    gm_recv = np.where(gsz[gx] >= 2, 1, 0)  # (with one group, ``other`` is all False: no LM sends)
    gm_recv = np.maximum(gm_recv, np.where(other, lm_depth[None, :], 0).max(axis=1))
    gm_send = gm_recv + 1  # round of the GM's sends, per chunk
    src, dst, nb, rnd, chk = [], [], [], [], []
    by_node = np.broadcast_to(np.arange(c)[:, None], (c, plan.n))  # the chunk of every (chunk, node) entry
    by_group = np.broadcast_to(np.arange(c)[:, None], (c, plan.k))

    def put(s, d, b, r, ch):
        src.append(s)
        dst.append(d)
        nb.append(b)
        rnd.append(r)
        chk.append(ch)

    put(nodes[member], own_lm[member], lens[member], np.ones(int(member.sum()), dtype=np.int64), by_node[member])
    lm_o = plan.lm[other]
    gm_o = np.broadcast_to(x[:, None], (c, plan.k))[other]
    len_o = np.broadcast_to(ln[:, None], (c, plan.k))[other]
    put(lm_o, gm_o, len_o, np.broadcast_to(lm_depth[None, :], (c, plan.k))[other], by_group[other])
    gs = np.broadcast_to(gm_send[:, None], (c, plan.k))[other]
    put(gm_o, lm_o, len_o, gs, by_group[other])
    m3 = member & in_gm_group
    put(own_lm[m3], nodes[m3], lens[m3], np.broadcast_to(gm_send[:, None], (c, plan.n))[m3], by_node[m3])
    m4 = member & ~in_gm_group
    put(own_lm[m4], nodes[m4], lens[m4], np.broadcast_to(gm_send[:, None] + 1, (c, plan.n))[m4], by_node[m4])
    s, d, b, r, h = (np.concatenate(v) for v in (src, dst, nb, rnd, chk))
    if len(r) == 0:
        return []
    return [Traffic(s[r == i], d[r == i], b[r == i], chunk=h[r == i]) for i in range(1, int(r.max()) + 1)]


def check_waves(waves) -> None:
    """:class:`OptionError` unless ``waves`` (how many waves 2LHA's chunks run in) is a whole number >= 1."""
    if not (is_whole_number(waves) and waves >= 1):
        raise OptionError(f"waves must be a whole number >= 1, got {waves!r}")


def _check_assumed_gbps(gbps) -> None:
    """:class:`OptionError` unless ``gbps``, the host NICs' assumed bandwidth, is a number > 0."""
    if not (is_number(gbps) and math.isfinite(gbps) and gbps > 0):
        raise OptionError(f"--assume-bandwidth (assumed_gbps) must be a number > 0 Gbit/s, got {gbps!r}")


def pipelined(traffic: list[Traffic], n_chunks: int, waves: int) -> list[Traffic]:
    """The rounds of a 2LHA schedule as :func:`plink.schedule.executor.all_reduce` runs them: the
    chunks cut into ``waves`` (chunk ``c`` in wave ``c * W // C``, ``W = min(waves, C)``), wave ``w``
    doing its round ``d`` in step ``w + d``, so one wave's local rounds share a step with another's
    global ones.  ``W + R - 1`` steps for ``R`` rounds; one wave gives the rounds back.  Every
    message needs its ``chunk``. O(M)."""
    check_waves(waves)
    w = min(int(waves), int(n_chunks))
    if w <= 1 or not traffic:
        return list(traffic)
    if any(t.chunk is None for t in traffic):
        raise InputError("pipelined() needs the chunk of every message (Traffic.chunk)")
    if any(t.repeat != 1 for t in traffic):
        raise InputError("pipelined() takes rounds that happen once (Traffic.repeat == 1)")
    if any(len(t.chunk) and (t.chunk.min() < 0 or t.chunk.max() >= n_chunks) for t in traffic):
        raise InputError(f"a message's chunk is not one of the {n_chunks} chunks")
    steps: list[list[Traffic]] = [[] for _ in range(w + len(traffic) - 1)]
    for d, t in enumerate(traffic):
        wave = t.chunk * w // n_chunks
        for v in range(w):
            sel = wave == v
            steps[v + d].append(Traffic(t.src[sel], t.dst[sel], t.nbytes[sel], chunk=t.chunk[sel]))
    return [Traffic(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("src", "dst", "nbytes")),
                    chunk=np.concatenate([p.chunk for p in parts])) for parts in steps]


# ---------------------------------------------------------------------------
# time model and baselines


@dataclass
class Prediction:
    name: str
    time_us: float
    rounds: int
    bytes_total: float
    bytes_cross: float
    round_us: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "time_us": self.time_us, "rounds": self.rounds,
                "bytes_total": self.bytes_total, "bytes_cross_group": self.bytes_cross}


#: bandwidth assumed for every host NIC when the probe has no bandwidth matrix (Gbit/s)
ASSUMED_GBPS = 10.0


def pair_cost(probe, assumed_gbps: float | None = None) -> PairCost:
    """Pair costs of a probe; missing pairs priced as the worst measured pair (latency and bandwidth).

    Without a bandwidth matrix, ``assumed_gbps`` (if given) is every pair's bandwidth.
    """
    lat = np.array(probe.latency, dtype=float)
    off = ~np.eye(len(lat), dtype=bool)
    finite = lat[off & np.isfinite(lat)]
    lat[off & ~np.isfinite(lat)] = finite.max() if finite.size else 1.0
    bw = None
    if probe.bandwidth is not None:
        bw = np.array(probe.bandwidth, dtype=float)
        good = bw[off & np.isfinite(bw)]  # (ProbeData holds no bandwidth <= 0)
        bw[off & ~np.isfinite(bw)] = good.min() if good.size else 1.0
    elif assumed_gbps is not None:
        _check_assumed_gbps(assumed_gbps)
        bw = np.full(lat.shape, float(assumed_gbps))
        np.fill_diagonal(bw, np.nan)
    return PairCost.from_matrices(lat, bw)


def network_groups(probe, labels) -> np.ndarray:
    """The groups whose uplinks price a schedule over ``labels``: the host sets of the probe's measured
    uplinks (the racks that exist, whatever groups the schedule was made for), and for hosts no
    uplink test covered, their groups in ``labels``. Labels ``0..k-1``. O(N)."""
    from plink.pricing import uplink_labels

    labels = np.unique(np.asarray(labels), return_inverse=True)[1].astype(np.int64).ravel()
    up = uplink_labels(probe)
    if up is None or not (up >= 0).any():
        return labels
    out = np.where(up >= 0, up, int(up.max()) + 1 + labels)
    return np.unique(out, return_inverse=True)[1].astype(np.int64).ravel()


def shared_network(probe, labels, assumed_gbps: float = ASSUMED_GBPS) -> Network:
    """The shared links of ``probe`` for a schedule over groups ``labels`` (one int per host):
    ``plink order``'s network (:func:`plink.pricing.network`; unmeasured pairs filled per group at
    the worst measured value) over :func:`network_groups`: the racks the probe measured, whatever
    groups the schedule was made for (a schedule over other groups is priced on them), and the
    schedule's groups for the hosts no uplink test covered, their uplinks assumed to carry one host
    NIC. Without measured bandwidth the host NICs are ``assumed_gbps``. Its ``notes`` say what was
    assumed. O(N^2)."""
    from plink.pricing import Groups, network

    labels = np.asarray(labels)
    if labels.shape != (probe.n,) or not np.issubdtype(labels.dtype, np.integer):
        raise InputError(f"labels must be {probe.n} integers, one group per host")
    _check_assumed_gbps(assumed_gbps)
    measured = probe.bandwidth is not None and bool(np.isfinite(
        np.asarray(probe.bandwidth, dtype=float)[~np.eye(probe.n, dtype=bool)]).any())
    # (a bandwidth matrix read alone: network()'s notes say there is no latency)
    return network(probe, Groups(network_groups(probe, labels), "schedule"), nic_gbps=None if measured else assumed_gbps)


def unmeasured_note(probe) -> str | None:
    """What :func:`shared_network` fills in for ``probe`` (unmeasured latency entries at the largest
    measured between their groups; a host without any measured bandwidth at the median host NIC, and
    the NICs' estimate, each host's fastest measured pair, resting on fewer pairs; for
    a matrix measured pair by pair, its unmeasured entries at the smallest measured between their
    groups), as a note for the user, or None when nothing was filled in. O(N^2)."""
    from plink.data.inputs import MATRIX_BANDWIDTH

    off = ~np.eye(probe.n, dtype=bool)
    gaps = []
    lat_missing = int((off & ~np.isfinite(np.asarray(probe.latency, dtype=float))).sum())
    if lat_missing:
        gaps.append(f"{lat_missing} unmeasured latency entries at the largest measured between their groups")
    if probe.bandwidth is not None:
        bw = np.isfinite(np.asarray(probe.bandwidth, dtype=float)) & off
        missing = int((off & ~bw).sum())
        if probe.meta.get("bandwidth_source") == MATRIX_BANDWIDTH:
            if missing:
                gaps.append(f"{missing} unmeasured bandwidth entries at the smallest measured between their groups")
        elif bw.any():
            hosts = int((~bw.any(axis=1)).sum()) if probe.n > 1 else 0
            if hosts:
                gaps.append(f"{hosts} host{'s' * (hosts != 1)} without a measured bandwidth at the median host NIC")
            elif missing:  # a host's NIC is its fastest measured pair: with its fast pairs unmeasured, too slow
                best = np.nanmax(np.where(bw, np.asarray(probe.bandwidth, dtype=float), np.nan), axis=1)
                slow = np.flatnonzero(best < np.median(best) / 2)
                named = ", ".join(f"{probe.names[i]} at {best[i]:.3g} Gbit/s" for i in slow[:3]) + (
                    f" and {len(slow) - 3} more" if len(slow) > 3 else "")
                gaps.append(f"host NICs as each host's fastest measured pair, with {missing} of {int(off.sum())} "
                            "bandwidth entries unmeasured" + (
                                f" (under half the median of {np.median(best):.3g} Gbit/s, perhaps for pairs "
                                f"unmeasured: {named})" if len(slow) else ""))
    return "predicted times price " + " and ".join(gaps) if gaps else None


def check_traffic(t: Traffic, n: int) -> None:
    """Raise :class:`InputError` unless ``t``'s messages are between hosts ``0..n-1``, one ``src``, ``dst``
    and byte count each, the bytes finite and >= 0 (a host index past ``n`` would be read as another
    pair, a negative or NaN byte count would price a round wrongly). O(M)."""
    src, dst, nbytes = (np.asarray(a) for a in (t.src, t.dst, t.nbytes))
    if not (src.ndim == dst.ndim == nbytes.ndim == 1 and len(src) == len(dst) == len(nbytes)):
        raise InputError(f"a round needs one src, dst and byte count per message, got {src.shape}, {dst.shape} "
                         f"and {nbytes.shape}")
    if len(src) == 0:
        return
    if not (np.issubdtype(src.dtype, np.integer) and np.issubdtype(dst.dtype, np.integer)):
        raise InputError("a round's src and dst must be host indices (integers)")
    lo, hi = min(int(src.min()), int(dst.min())), max(int(src.max()), int(dst.max()))
    if lo < 0 or hi >= n:
        raise InputError(f"a round's host indices must be in 0..{n - 1}, got {lo if lo < 0 else hi}")
    if not np.all(np.isfinite(nbytes) & (nbytes >= 0)):
        raise InputError("a round's byte counts must be finite and >= 0")


def round_time(t: Traffic, pc: PairCost) -> float:
    """``T_r`` of one round (module docstring), in µs."""
    check_traffic(t, len(pc.latency))
    if len(t.src) == 0:
        return 0.0
    cost = t.nbytes * pc.inv_bw[t.src, t.dst]
    send = np.bincount(t.src, weights=cost)  # (only the maxima count: no need for a slot per node)
    recv = np.bincount(t.dst, weights=cost)
    return float(pc.latency[t.src, t.dst].max() + max(send.max(), recv.max()))


def shared_round_time(t: Traffic, net: Network) -> float:
    """``T_r`` of one round on the shared links of ``net`` (module docstring), in µs.

    The round's messages between one ordered pair are merged into one flow; every link's load is
    the bytes of the flows crossing it (:meth:`Network.link_index`: sending NIC, receiving NIC, the
    uplinks of every level crossed); with ``net.path``, no flow is faster than its pair alone.
    O(M log M) for ``M`` messages."""
    check_traffic(t, net.n)
    if len(t.src) == 0:
        return 0.0
    n = net.n
    pairs, inverse = np.unique(t.src * n + t.dst, return_inverse=True)
    nbytes = np.bincount(inverse, weights=t.nbytes)
    src, dst = pairs // n, pairs % n
    inv_cap = net.inverse_capacities()  # the last slot: flows inside a group, no link, 0
    slots = net.link_index(src, dst, len(inv_cap) - 1)
    loads = np.bincount(slots, weights=np.tile(nbytes, len(slots) // len(src)), minlength=len(inv_cap))
    seconds = float((loads * inv_cap).max())
    if net.path is not None:
        seconds = max(seconds, float((nbytes / net.path[src, dst]).max()))
    return (float(net.latency[src, dst].max()) + seconds) * 1e6


def predict_time(name: str, traffic: list[Traffic], cost: PairCost | Network, labels) -> Prediction:
    """``traffic``'s rounds priced on a :class:`Network`'s shared links or, given a
    :class:`PairCost`, pair by pair (module docstring)."""
    labels = np.asarray(labels)
    price = shared_round_time if isinstance(cost, Network) else round_time
    per = [price(t, cost) for t in traffic]
    total = sum(p * t.repeat for p, t in zip(per, traffic))
    rounds = sum(t.repeat for t in traffic)
    nbytes = sum(float(t.nbytes.sum()) * t.repeat for t in traffic)
    return Prediction(name, float(total), int(rounds), nbytes, cross_bytes(traffic, labels), per)


def cross_bytes(traffic: list[Traffic], labels) -> float:
    """Bytes of ``traffic`` (repeats counted) between hosts of different ``labels``. O(M)."""
    labels = np.asarray(labels)
    return float(sum(float(t.nbytes[labels[t.src] != labels[t.dst]].sum()) * t.repeat for t in traffic))


def ring_traffic(labels, size: float, order=None) -> list[Traffic]:
    """Flat ring all-reduce: ``2(N-1)`` rounds of ``S/N`` bytes to the successor, the ring in
    ``order`` (rank -> host), by default in group order."""
    labels = np.asarray(labels)
    n = len(labels)
    if n < 2:
        return []
    order = np.argsort(labels, kind="stable") if order is None else np.asarray(order, dtype=np.int64)
    t = Traffic(order, np.roll(order, -1), np.full(n, size / n), repeat=2 * (n - 1))
    return [t]


#: candidate orders :func:`ring_order` prices: ``plink order``'s annealer with this budget (and
#: seed 0) is deterministic; PlanetLab's 490 hosts take about 2 s, and the ring found there is
#: priced 5.376 s, ``plink order``'s own ring (its 5-second search) 5.432 s on the same links
#: (2026-12-02; 60,000 candidates gave 5.427 s: the budget is not what limits it).
RING_SEARCH_ITERS = 20_000


def ring_order(net: Network, size: float, max_iter: int = RING_SEARCH_ITERS,
               contiguous: tuple[np.ndarray, float] | None = None) -> tuple[np.ndarray, float]:
    """The flat ring baseline on ``net``: ``(order, seconds)``, the ring ``plink order`` would choose for
    an all-reduce of ``size`` bytes, by its own search (:func:`plink.solvers.groupsearch.minimise_shared`
    under :class:`plink.solvers.contention.SharedCostModel`) from the rack-contiguous ring
    (:func:`contiguous_ring`), with ``max_iter`` candidate orders and seed 0 (so the same input gives the same
    ring); never priced above that rack-contiguous ring.  ``contiguous``: :func:`contiguous_ring`'s
    result when the caller has it already.  O(max_iter x N)."""
    from plink.solvers.contention import SharedCostModel
    from plink.solvers.groupsearch import minimise_shared

    contiguous, contiguous_s = contiguous if contiguous is not None else contiguous_ring(net, size)
    model = SharedCostModel("ring", net, float(size), 2)
    if net.n < 3:
        return contiguous, contiguous_s
    res = minimise_shared(model, init=contiguous, time_limit=3600.0, max_iter=max_iter, seed=0)
    return np.asarray(res.perm, dtype=np.int64), float(res.cost)


def contiguous_ring(net: Network, size: float) -> tuple[np.ndarray, float]:
    """The rack-contiguous ring on ``net``, as ``plink order`` reports it: ``(order, seconds)``, the
    best by its price of :func:`plink.solvers.groupsearch.contiguous_orders` over ``net.groups``
    (every order of up to 5 racks; from 6 on, among 120, the racks along a short tour by their mean
    latency), hosts in index order inside each rack. O(120 N)."""
    from plink.solvers.contention import SharedCostModel
    from plink.solvers.groupsearch import contiguous_orders

    blocks = contiguous_orders(net.groups, lat=net.latency)
    costs = SharedCostModel("ring", net, float(size), 2).batch(blocks)
    k = int(np.argmin(costs))
    return blocks[k], float(costs[k])


def ps_traffic(n: int, size: float) -> list[Traffic]:
    """Fully sharded, colocated PS: push ``S/N`` to every other shard, then pull it back (2 rounds)."""
    if n < 2:
        return []
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    push = Traffic(i, j, np.full(len(i), size / n))
    pull = Traffic(j, i, np.full(len(i), size / n))
    return [push, pull]


def table41(labels, size: float) -> dict[str, dict[str, float]]:
    """Table 4.1's formulas for this N, group sizes and ``S`` (rounds, bytes on wire, cross-group bytes).

    With ``N`` hosts in ``k`` groups of sizes ``n_g``: 2LHA ``4`` rounds,
    ``2(N-1)S`` bytes, ``2(k-1)S`` cross-group; ring (reduce-scatter +
    all-gather) ``2(N-1)`` rounds, ``2(N-1)S`` bytes, ``2k(N-1)/N S``
    cross-group (``k`` ring edges cross groups); sharded PS ``2`` rounds,
    ``2(N-1)S`` bytes, ``2 sum_g n_g (N - n_g) / N S`` cross-group (Table
    4.1's ``2N(C-1)S`` for equal racks).  A single host has no rounds; 2LHA over one
    group, or over groups of one host each, has 2.
    """
    labels = np.asarray(labels)
    n = len(labels)
    sizes = np.bincount(labels)
    k = len(sizes)
    s = float(size)
    ring_cross = 2 * (k if k > 1 else 0) * (n - 1) / n * s
    return {
        "2lha": {"rounds": 4 if n > k and k > 1 else (2 if n > 1 else 0), "bytes_total": 2 * (n - 1) * s,
                 "bytes_cross": 2 * (k - 1) * s},
        "ring": {"rounds": 2 * (n - 1), "bytes_total": 2 * (n - 1) * s, "bytes_cross": ring_cross},
        "ps": {"rounds": 2 if n > 1 else 0, "bytes_total": 2 * (n - 1) * s,
               "bytes_cross": float(2 * (sizes * (n - sizes)).sum() / n * s)},
    }


def predict_all(traffic: list[Traffic], cost: PairCost | Network, labels, size: float, waves: int = 1,
                n_chunks: int | None = None) -> dict[str, Prediction]:
    """Predicted times of the 2LHA ``traffic`` and of flat ring and sharded PS over the same hosts and
    size, on shared links (a :class:`Network`) or pair by pair (a :class:`PairCost`).  With ``waves``
    > 1, 2LHA's time is that of its rounds in waves over ``n_chunks`` chunks (:func:`pipelined`); its
    ``rounds`` stay the schedule's.  On a :class:`Network` the ring is :func:`ring_order`'s and
    ``ring_contiguous`` :func:`contiguous_ring`'s, rack by rack over ``cost.groups``; pair by pair the ring runs in
    ``labels`` order.  Keys ``2lha``, ``ring`` (, ``ring_contiguous``), ``ps``."""
    labels = np.asarray(labels)
    check_waves(waves)
    if waves > 1 and traffic:  # priced once, in its waves: the steps carry the rounds' messages, bytes for bytes
        if n_chunks is None:
            raise OptionError("waves > 1 needs n_chunks")
        piped = predict_time("2lha", pipelined(traffic, n_chunks, waves), cost, labels)
        lha = Prediction("2lha", piped.time_us, len(traffic), piped.bytes_total, piped.bytes_cross, piped.round_us)
    else:
        lha = predict_time("2lha", traffic, cost, labels)
    out = {"2lha": lha}
    if isinstance(cost, Network) and len(labels) >= 2:
        # the ring plink order would choose, and the ring rack by rack over the racks priced, at its price
        contiguous, contiguous_s = contiguous_ring(cost, size)
        order, seconds = ring_order(cost, size, contiguous=(contiguous, contiguous_s))
        ring = predict_time("ring", ring_traffic(labels, size, order), cost, labels)
        out["ring"] = Prediction("ring", seconds * 1e6, ring.rounds, ring.bytes_total, ring.bytes_cross)
        seconds = contiguous_s
        ring = predict_time("ring_contiguous", ring_traffic(labels, size, contiguous), cost, labels)
        out["ring_contiguous"] = Prediction("ring_contiguous", seconds * 1e6, ring.rounds, ring.bytes_total,
                                            ring.bytes_cross)
    else:
        out["ring"] = predict_time("ring", ring_traffic(labels, size), cost, labels)
    out["ps"] = predict_time("ps", ps_traffic(len(labels), size), cost, labels)
    return out


def compare(plan: Plan, cost: PairCost | Network, traffic: list[Traffic] | None = None,
            waves: int = 1) -> dict[str, Prediction]:
    """Predicted 2LHA (in ``waves``; 1: its rounds back to back; ``plink schedule`` reports
    ``plink.schedule.executor.DEFAULT_WAVES``) vs flat ring vs sharded PS for the plan's hosts,
    groups and size."""
    return predict_all(traffic if traffic is not None else plan_traffic(plan), cost, plan.labels, plan.size,
                       waves, plan.n_chunks)
