"""Shared uplink capacity: what a group's hosts get when they all cross its boundary at once.

Isolated pair tests cannot see oversubscription: one TCP flow gets ~383 Mbit/s
inside and across racks alike on the emulated cluster, while four concurrent
cross-rack flows *share* the rack uplink's ~385 Mbit/s (``../shared/notes``).
A collective loads every rack uplink with all its flows at the same time, so
this phase measures exactly that, after the latency rounds:

1. **groups**: the groups ``plink order`` will price from the same matrices
   (:func:`infer_groups`, :func:`plink.structure.probegroups.infer_probe_groups`): inferred
   from the latency matrix and, when ``--bandwidth`` measured one, from the inverse pair
   bandwidths (the pairs of a round run concurrently, so cross-group pairs share uplinks and
   measure slower than in-group pairs, a signal that survives busy hosts): the latency's
   groups, each split where the bandwidth's grouping splits it and the pairs between the parts
   measured far (:func:`plink.structure.probegroups.split_by_far_pairs`);
2. **one test per group** ``G``: every host of ``G`` sends to a distinct host
   outside ``G`` (up) and, at the same time, receives from another distinct
   outside host (down), for ``seconds``.  The outside hosts are taken round-robin
   over the other groups, so the far ends spread over all other uplinks and
   ``G``'s own uplink is the one carrying the most flows.  ``min(|G|, N - |G|)``
   flows per direction (a group larger than half the cluster gets fewer flows,
   still enough to fill a shared uplink);
3. ``up_bps`` / ``down_bps`` = the sum of the flows' receiver-side rates, in
   **bytes per second**, the median of ``passes`` interleaved tests (default 3; each
   pass's sums are kept, their spread is the test's noise), stored as
   :class:`plink.data.probefile.Uplink` in the probe file's ``uplinks`` (the
   shared-link cost models read them).

The transport is a ``stage`` callable, ``stage(requests, timeout) -> {tag:
reply | error string}`` with ``requests = [(host, op, kwargs, tag)]``: every
request is sent before any reply is awaited, so the flows of a test run
concurrently.  :func:`session_stage` makes one from the probe's agent sessions
(the agent's ``tcp_listen`` / ``tcp_send`` / ``tcp_result`` operations).

Cost: ``passes`` tests of ``seconds`` (+ set-up) per group, K groups: O(passes x K)
wall time, O(N) flows per test.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from plink.data.probefile import Uplink

Stage = Callable[[list, float], dict]


def infer_groups(latency: np.ndarray, random_state=0,
                 bandwidth: np.ndarray | None = None) -> tuple[list[list[int]], str]:
    """Groups of hosts (lists of indices) from a latency matrix and/or the pair bandwidths, and the method used.

    The groups ``plink order`` will price, from the same matrices
    (:func:`plink.structure.probegroups.infer_probe_groups`, as
    :func:`plink.pricing.find_groups` infers them): the latency and, when it has
    a value for at least N pairs, the inverse pair bandwidth (pairs of a round
    run at once, so cross-group pairs that shared an uplink measure slower); of
    the latency's groups, split where the bandwidth measured parts far apart.  An uplink test
    of other groups than those would measure no link the model prices
    (``plink.pricing.network`` leaves such a test out).  One group when neither
    matrix has a measured pair for every host.  O(that of ``infer_hierarchy`` on each matrix).
    """
    lat = np.asarray(latency, dtype=float)
    n = lat.shape[0]
    if n < 4:
        return [list(range(n))], "too few hosts"
    from plink.structure.probegroups import infer_probe_groups, placed_hosts

    bw = None if bandwidth is None else np.asarray(bandwidth, dtype=float)
    if not placed_hosts(lat).all() and (bw is None or not placed_hosts(bw).all()):
        return [list(range(n))], "no complete matrix to group by"
    labels, _, source = infer_probe_groups(lat, bw, seed=random_state)
    groups = [np.flatnonzero(labels == k).tolist() for k in np.unique(labels)]
    method = "plink.structure.hierarchy.infer_hierarchy " + source.replace("inferred from", "on")
    return sorted(groups, key=lambda g: g[0]), method


def _spread(outside: list[list[int]], shift: int) -> list[int]:
    """Hosts of the other groups, round-robin over the groups (starting at group ``shift``)."""
    groups = [g for g in outside if g]
    if not groups:
        return []
    groups = groups[shift % len(groups):] + groups[:shift % len(groups)]
    out, k = [], 0
    while any(k < len(g) for g in groups):
        out += [g[k] for g in groups if k < len(g)]
        k += 1
    return out


def plan_flows(groups: Sequence[Sequence[int]], g: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The (src, dst) flows of group ``g``'s test: up (out of the group) and down (into it).

    Every host sends at most one flow and receives at most one flow."""
    inside = list(groups[g])
    others = [list(groups[k]) for k in range(len(groups)) if k != g]
    up_dst = _spread(others, 0)
    m = min(len(inside), len(up_dst))
    up = list(zip(inside[:m], up_dst[:m]))
    # the down senders: the same outside pool, rotated so a host's up partner is not its down partner
    pool = _spread(others, 1)
    down_src = pool[m:] + pool[:m] if len(pool) > m else pool[1:] + pool[:1]
    down = list(zip(down_src[:m], inside[:m]))
    return up, down


def session_stage(sessions: dict) -> Stage:
    """A ``stage`` over agent sessions (``send(op, **kw) -> id``, ``wait(id, timeout) -> dict``)."""

    def stage(requests: list, timeout: float) -> dict:
        sent, out = [], {}
        for host, op, kw, tag in requests:
            try:
                sent.append((host, sessions[host].send(op, **kw), tag))
            except Exception as exc:  # a lost agent: this flow fails, the others go on
                out[tag] = f"{getattr(sessions.get(host), 'name', host)}: {exc}"
        for host, rid, tag in sent:
            try:
                out[tag] = sessions[host].wait(rid, timeout)
            except Exception as exc:
                out[tag] = f"{getattr(sessions[host], 'name', host)}: {exc}"
        return out

    return stage


def run_flows(stage: Stage, flows: list[tuple[int, int]], addresses: Sequence[str], seconds: float,
              reply_timeout: float = 10.0) -> dict[tuple[int, int], float | str]:
    """Run all ``flows`` at once with the agent's TCP test: ``{(src, dst): bytes/s | error}``."""
    out: dict = {}
    ports = stage([(dst, "tcp_listen", {"streams": 1, "seconds": seconds, "timeout": reply_timeout}, (s, dst))
                   for s, dst in flows], reply_timeout + 20.0)
    live = []
    for f in flows:
        r = ports.get(f)
        if isinstance(r, dict) and "port" in r:
            live.append((f, r["port"]))
        else:
            out[f] = r if isinstance(r, str) else "no port"
    sends = stage([(s, "tcp_send", {"addr": addresses[d], "port": port, "seconds": seconds, "streams": 1,
                                    "timeout": reply_timeout}, (s, d)) for (s, d), port in live],
                  math.ceil(seconds) + reply_timeout + 20.0)
    fins = stage([(d, "tcp_result", {"timeout": reply_timeout}, (s, d)) for (s, d), _ in live],
                 2 * reply_timeout + 20.0)
    for f, _ in live:
        snd, fin = sends.get(f), fins.get(f)
        if isinstance(snd, str):
            out[f] = snd
        elif not isinstance(fin, dict) or fin.get("bytes", 0) <= 0 or fin.get("seconds", 0) <= 0:
            out[f] = fin if isinstance(fin, str) else f"no data from host {f[0]} to host {f[1]}"
        else:
            out[f] = fin["bytes"] / fin["seconds"]
    return out


def measure_uplinks(stage: Stage, addresses: Sequence[str], groups: Sequence[Sequence[int]], seconds: float = 2.0,
                    reply_timeout: float = 10.0, errors: list | None = None, passes: int = 3,
                    on_test=None) -> list[Uplink]:
    """``passes`` concurrent both-directions tests per group (see the module docstring).

    The passes are interleaved (pass 1 over every group, then pass 2, ...), so a burst of
    other load lands on one pass of several groups rather than on every pass of one.  A
    group's ``up_bps`` / ``down_bps`` are the medians of its passes, which are kept in
    ``extra["passes_up_bps"]`` / ``extra["passes_down_bps"]``: their spread is the test's
    measurement noise (:mod:`plink.structure.capacities` prices capacities that differ by
    less than it as one).  Groups whose tests all failed are left out (the reasons go to
    ``errors``); a group with no host outside it (K = 1) has no uplink to measure.
    ``on_test(done, total)``, when given, is told before the first test and after each (a
    progress bar).  O(passes x K) tests of ``seconds``."""
    if isinstance(passes, bool) or not isinstance(passes, int) or passes < 1:
        raise ValueError(f"passes must be an integer >= 1, got {passes!r}")
    plans = [plan_flows(groups, g) for g in range(len(groups))]
    ups: list[list[float]] = [[] for _ in groups]  # per group: each pass's sum up, and down
    downs: list[list[float]] = [[] for _ in groups]
    last: dict[int, tuple[list, list]] = {}  # per group: the flow rates of its last pass that measured
    failed = [0] * len(groups)
    total, done = passes * sum(1 for up, _ in plans if up), 0
    if on_test is not None:
        on_test(0, total)
    for _ in range(passes):
        for g, (up, down) in enumerate(plans):
            if not up:
                continue
            res = run_flows(stage, up + down, addresses, seconds, reply_timeout)
            done += 1
            if on_test is not None:
                on_test(done, total)
            bad = [v for v in res.values() if isinstance(v, str)]
            failed[g] += len(bad)
            if errors is not None:
                errors.extend(bad)
            rate_up = [res[f] for f in up if not isinstance(res[f], str)]
            rate_down = [res[f] for f in down if not isinstance(res[f], str)]
            if rate_up and rate_down:
                ups[g].append(float(sum(rate_up)))
                downs[g].append(float(sum(rate_down)))
                last[g] = (rate_up, rate_down)
    out = []
    for g, hosts in enumerate(groups):
        if g not in last:
            continue
        last_up, last_down = last[g]
        extra = {"flows": len(plans[g][0]), "failed_flows": failed[g], "seconds": seconds,
                 "flow_up_bps": [round(v, 1) for v in last_up], "flow_down_bps": [round(v, 1) for v in last_down]}
        if passes > 1:
            extra["passes_up_bps"] = [round(v, 1) for v in ups[g]]
            extra["passes_down_bps"] = [round(v, 1) for v in downs[g]]
        out.append(Uplink(tuple(int(h) for h in hosts), float(np.median(ups[g])), float(np.median(downs[g])), extra))
    return out
