"""The 2LHA time model: rounds of messages priced with alpha-beta and NIC sharing, and its baselines.

Time model (:func:`predict_time`), phase-synchronous alpha-beta with
per-node link sharing: the messages of one round run concurrently; a
node's concurrent sends share its NIC, and so do its receives, so round
``r`` takes::

    T_r = max_{(i,j) in r} lat_ij + max_i max( sum_j B_r(i,j) / bw_ij , sum_j B_r(j,i) / bw_ji )

where ``B_r(i, j)`` are the bytes ``i`` sends ``j`` in round ``r``, ``lat``
is the probe's latency (µs, as in the ordering cost models) and ``bw`` the
pair bandwidth when alone (Gbit/s; without a bandwidth matrix every pair is
assumed to have the same ``assumed_gbps``, 10 Gbit/s by default, and the
summary says so: a latency-only model would price a sharded PS's ``N^2``
messages like one).  The total is ``sum_r T_r`` — no overlap of rounds,
so it is conservative for 2LHA (whose chunks pipeline, §4.1.2); rack
uplink sharing is not modelled.  The same model prices the baselines:
flat ring all-reduce (reduce-scatter + all-gather, ``2(N-1)`` rounds of
``S/N`` to the ring successor, ring in group order) and fully sharded PS
(every node serves ``S/N``: push round, pull round).

:func:`plan_traffic` computes a 2LHA plan's rounds straight from the plan
(no DAG; equal to what :func:`plink.schedule.verify.verify` records for the
expanded DAG, tested).  Cost ``O(M + N)`` per round for ``M`` messages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plink.errors import PlinkError
from plink.schedule.plan import Plan
from plink.solvers.costmodels import PairCost


@dataclass
class Traffic:
    """Messages of one round: ``bytes[m]`` from ``src[m]`` to ``dst[m]``; the round happens ``repeat`` times."""

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    repeat: int = 1

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
    src, dst, nb, rnd = [], [], [], []

    def put(s, d, b, r):
        src.append(s)
        dst.append(d)
        nb.append(b)
        rnd.append(r)

    put(nodes[member], own_lm[member], lens[member], np.ones(int(member.sum()), dtype=np.int64))
    lm_o = plan.lm[other]
    gm_o = np.broadcast_to(x[:, None], (c, plan.k))[other]
    len_o = np.broadcast_to(ln[:, None], (c, plan.k))[other]
    put(lm_o, gm_o, len_o, np.broadcast_to(lm_depth[None, :], (c, plan.k))[other])
    gs = np.broadcast_to(gm_send[:, None], (c, plan.k))[other]
    put(gm_o, lm_o, len_o, gs)
    m3 = member & in_gm_group
    put(own_lm[m3], nodes[m3], lens[m3], np.broadcast_to(gm_send[:, None], (c, plan.n))[m3])
    m4 = member & ~in_gm_group
    put(own_lm[m4], nodes[m4], lens[m4], np.broadcast_to(gm_send[:, None] + 1, (c, plan.n))[m4])
    s, d, b, r = (np.concatenate(v) for v in (src, dst, nb, rnd))
    if len(r) == 0:
        return []
    return [Traffic(s[r == i], d[r == i], b[r == i]) for i in range(1, int(r.max()) + 1)]


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


#: bandwidth assumed for every pair when the probe has no bandwidth matrix (Gbit/s)
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
        if not (math.isfinite(assumed_gbps) and assumed_gbps > 0):
            raise PlinkError(f"assumed bandwidth must be a number > 0 Gbit/s, got {assumed_gbps}")
        bw = np.full(lat.shape, float(assumed_gbps))
        np.fill_diagonal(bw, np.nan)
    return PairCost.from_matrices(lat, bw)


def pair_cost_note(probe) -> str | None:
    """What :func:`pair_cost` fills in for ``probe`` (its unmeasured entries, at the worst measured
    value), as a note for the user, or None when every pair was measured. O(N^2)."""
    off = ~np.eye(probe.n, dtype=bool)
    gaps = []
    lat_missing = int((off & ~np.isfinite(np.asarray(probe.latency, dtype=float))).sum())
    if lat_missing:
        gaps.append(f"{lat_missing} unmeasured latency entries at the largest measured latency")
    if probe.bandwidth is not None:
        bw_missing = int((off & ~np.isfinite(np.asarray(probe.bandwidth, dtype=float))).sum())
        if bw_missing:
            gaps.append(f"{bw_missing} unmeasured bandwidth entries at the smallest measured bandwidth")
    return "predicted times price " + " and ".join(gaps) if gaps else None


def round_time(t: Traffic, pc: PairCost) -> float:
    """``T_r`` of one round (module docstring), in µs."""
    if len(t.src) == 0:
        return 0.0
    cost = t.nbytes * pc.inv_bw[t.src, t.dst]
    send = np.bincount(t.src, weights=cost)  # (only the maxima count: no need for a slot per node)
    recv = np.bincount(t.dst, weights=cost)
    return float(pc.latency[t.src, t.dst].max() + max(send.max(), recv.max()))


def predict_time(name: str, traffic: list[Traffic], pc: PairCost, labels) -> Prediction:
    labels = np.asarray(labels)
    per = [round_time(t, pc) for t in traffic]
    total = sum(p * t.repeat for p, t in zip(per, traffic))
    rounds = sum(t.repeat for t in traffic)
    nbytes = sum(float(t.nbytes.sum()) * t.repeat for t in traffic)
    cross = sum(float(t.nbytes[labels[t.src] != labels[t.dst]].sum()) * t.repeat for t in traffic)
    return Prediction(name, float(total), int(rounds), nbytes, cross, per)


def ring_traffic(labels, size: float) -> list[Traffic]:
    """Flat ring all-reduce in group order: ``2(N-1)`` rounds of ``S/N`` bytes to the successor."""
    labels = np.asarray(labels)
    n = len(labels)
    if n < 2:
        return []
    order = np.argsort(labels, kind="stable")
    t = Traffic(order, np.roll(order, -1), np.full(n, size / n), repeat=2 * (n - 1))
    return [t]


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


def predict_all(traffic: list[Traffic], pc: PairCost, labels, size: float) -> dict[str, Prediction]:
    """Predicted times of the 2LHA ``traffic`` and of flat ring and sharded PS over the same hosts and size."""
    labels = np.asarray(labels)
    return {
        "2lha": predict_time("2lha", traffic, pc, labels),
        "ring": predict_time("ring", ring_traffic(labels, size), pc, labels),
        "ps": predict_time("ps", ps_traffic(len(labels), size), pc, labels),
    }


def compare(plan: Plan, pc: PairCost, traffic: list[Traffic] | None = None) -> dict[str, Prediction]:
    """Predicted 2LHA vs flat ring vs sharded PS for the plan's hosts, groups and size."""
    return predict_all(traffic if traffic is not None else plan_traffic(plan), pc, plan.labels, plan.size)
