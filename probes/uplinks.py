"""Shared uplink capacity: what a group's hosts get when they all cross its boundary at once.

Isolated pair tests cannot see oversubscription: one TCP flow gets ~383 Mbit/s
inside and across racks alike on the emulated cluster, while four concurrent
cross-rack flows *share* the rack uplink's ~385 Mbit/s (``../shared/notes``).
A collective loads every rack uplink with all its flows at the same time, so
this phase measures exactly that, after the latency rounds:

1. **groups**: inferred from the latency matrix and, when ``--bandwidth`` measured one, from the
   pair bandwidth matrix (as ``log(max / bandwidth)``: the pairs of a round run concurrently, so
   cross-group pairs share uplinks and measure slower than in-group pairs, a signal that survives
   busy hosts); the finer of two nested groupings, else the one with the higher silhouette
   (:func:`infer_groups`); each with
   :func:`plink.structure.hierarchy.infer_hierarchy` when it is installed,
   else scipy's average linkage with the number of groups chosen by the
   silhouette (``K = 1`` when no split scores >= ``min_silhouette``);
2. **one test per group** ``G``: every host of ``G`` sends to a distinct host
   outside ``G`` (up) and, at the same time, receives from another distinct
   outside host (down), for ``seconds``.  The outside hosts are taken round-robin
   over the other groups, so the far ends spread over all other uplinks and
   ``G``'s own uplink is the one carrying the most flows.  ``min(|G|, N - |G|)``
   flows per direction (a group larger than half the cluster gets fewer flows,
   still enough to fill a shared uplink);
3. ``up_bps`` / ``down_bps`` = the sum of the flows' receiver-side rates, in
   **bytes per second**, stored as :class:`plink.data.probefile.Uplink` in the
   probe file's ``uplinks`` (the shared-link cost models read them).

The transport is a ``stage`` callable, ``stage(requests, timeout) -> {tag:
reply | error string}`` with ``requests = [(host, op, kwargs, tag)]``: every
request is sent before any reply is awaited, so the flows of a test run
concurrently.  :func:`session_stage` makes one from the probe's agent sessions
(the agent's ``tcp_listen`` / ``tcp_send`` / ``tcp_result`` operations).

Cost: one test of ``seconds`` (+ set-up) per group, K groups: O(K) wall time,
O(N) flows per test.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from plink.data.probefile import Uplink

Stage = Callable[[list, float], dict]


def infer_groups(latency: np.ndarray, min_silhouette: float = 0.25, random_state=0,
                 bandwidth: np.ndarray | None = None) -> tuple[list[list[int]], str]:
    """Groups of hosts (lists of indices) from a latency matrix and/or the pair bandwidths, and the method used.

    Groups are inferred from the latency and, when at least half the pairs
    have a bandwidth, from ``log(max bandwidth / bandwidth)`` (pairs of a
    round run at once, so cross-group pairs that shared an uplink measure
    slower); where one grouping refines the other the finer one is used, else
    the one whose silhouette on its own matrix is higher
    (:func:`plink.structure.metrics.choose_grouping`, as
    :func:`plink.pricing.find_groups` chooses).  Each inference is
    ``plink.structure.hierarchy.infer_hierarchy`` (its finest level) when
    available; else average linkage on the symmetrised matrix (missing pairs
    = the largest measured value), K in 2..N/2 by the best silhouette, one
    group when no K reaches ``min_silhouette``.  O(N^3) at most (linkage and
    silhouettes)."""
    lat = np.asarray(latency, dtype=float)
    n = lat.shape[0]
    if n < 4:
        return [list(range(n))], "too few hosts"
    candidates = [("latency", lat)]
    if bandwidth is not None and np.isfinite(bandwidth[~np.eye(n, dtype=bool)]).mean() > 0.5:
        bw = np.asarray(bandwidth, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            # log(max / bw): in-group pairs all get the NIC rate (~0), cross-group pairs that shared an
            # uplink in their round get a fraction of it; the log keeps a few starved pairs from dominating
            candidates.append(("log(max bandwidth / bandwidth)",
                               np.where(bw > 0, np.log(np.nanmax(bw) / bw), np.nan)))
    from plink.structure.metrics import choose_grouping

    try:
        from plink.structure.hierarchy import infer_hierarchy
    except ImportError:
        infer_hierarchy = None
    found = []
    off = ~np.eye(n, dtype=bool)
    for source, m in candidates:
        seen = (np.isfinite(m) & off) | (np.isfinite(m.T) & off)
        if not seen.any(axis=1).all():
            continue  # a host with no value in this matrix (e.g. latency not measured yet)
        if infer_hierarchy is not None:
            labels = np.asarray(infer_hierarchy(m, random_state=random_state).labels)
            method = f"plink.structure.hierarchy.infer_hierarchy on {source}"
        else:
            labels, method = _average_linkage(m, min_silhouette), f"average linkage on {source}, K by silhouette"
        found.append((labels, m, method))
    if not found:
        return [list(range(n))], "no complete matrix to group by"
    labels, _, method = found[choose_grouping([(f[0], f[1]) for f in found])]
    groups = [np.flatnonzero(labels == k).tolist() for k in np.unique(labels)]
    return sorted(groups, key=lambda g: g[0]), method


def _distance(m: np.ndarray) -> np.ndarray:
    """Symmetric, complete, zero-diagonal version of ``m`` (missing pairs = the largest value)."""
    n = m.shape[0]
    d = np.fmax(m, m.T)
    off = ~np.eye(n, dtype=bool)
    fill = np.nanmax(d[off]) if np.isfinite(d[off]).any() else 1.0
    d = np.where(np.isnan(d), fill, d)
    np.fill_diagonal(d, 0.0)
    return d


def _average_linkage(lat: np.ndarray, min_silhouette: float) -> np.ndarray:
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform
    from sklearn.metrics import silhouette_score

    n = lat.shape[0]
    d = _distance(lat)
    z = linkage(squareform(d, checks=False), method="average")
    best, best_s = np.zeros(n, dtype=int), min_silhouette
    for k in range(2, n // 2 + 1):
        labels = fcluster(z, k, criterion="maxclust") - 1
        if len(np.unique(labels)) < 2:
            continue
        s = silhouette_score(d, labels, metric="precomputed")
        if s > best_s + 1e-12:
            best, best_s = labels, s
    return best


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
                    reply_timeout: float = 10.0, errors: list | None = None) -> list[Uplink]:
    """One concurrent both-directions test per group (see the module docstring).

    Groups whose test failed completely are left out (the reasons go to ``errors``);
    a group with no host outside it (K = 1) has no uplink to measure."""
    out = []
    for g, hosts in enumerate(groups):
        up, down = plan_flows(groups, g)
        if not up:
            continue
        res = run_flows(stage, up + down, addresses, seconds, reply_timeout)
        bad = [v for v in res.values() if isinstance(v, str)]
        if errors is not None:
            errors.extend(bad)
        rate_up = [res[f] for f in up if not isinstance(res[f], str)]
        rate_down = [res[f] for f in down if not isinstance(res[f], str)]
        if not rate_up or not rate_down:
            continue
        out.append(Uplink(tuple(int(h) for h in hosts), float(sum(rate_up)), float(sum(rate_down)),
                          {"flows": len(up), "failed_flows": len(bad), "seconds": seconds,
                           "flow_up_bps": [round(v, 1) for v in rate_up],
                           "flow_down_bps": [round(v, 1) for v in rate_down]}))
    return out
