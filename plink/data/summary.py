"""A probe file at a glance: what ``plink show`` prints.

:func:`summarize` returns plain data (hosts, coverage, latency and
bandwidth percentiles, measured uplinks, truth levels and, given groups, their
members and what the grouping said of them); :func:`display_order` is the host order
of the heatmap: by group when a groups file is given (then by true location,
so racks inside a group stay together), else by true location when the probe
has ground truth, else the file's order.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from plink.data.inputs import is_number
from plink.data.probefile import measured_pairs

PERCENTILES = (0, 10, 50, 90, 100)


def _round(v: float, digits: int, significant: bool = False) -> float:
    """``v`` to ``digits`` decimals or, with ``significant``, to ``digits`` significant digits (bandwidths in
    Gbit/s: 10 kbit/s is 1e-5, which 4 decimals made 0)."""
    return float(f"{v:.{digits}g}") if significant else round(v, digits)


def _pct(values: np.ndarray, digits: int, significant: bool = False) -> dict[str, float] | None:
    """The percentiles of ``values``, each rounded by :func:`_round`."""
    if values.size == 0:
        return None
    q = np.percentile(values, PERCENTILES)
    return {("min" if p == 0 else "max" if p == 100 else f"p{p}"): _round(float(v), digits, significant)
            for p, v in zip(PERCENTILES, q)}


def _both_directions(probe, iu, bw_only: bool):
    """Where the input was asymmetric, ``(measured values, both directions of every pair)``: the cost
    matrix keeps each pair's slower direction and ``latency_best`` its faster one, so the two together
    are the directions as measured (a pair measured one way only counts that value twice). The
    percentiles of the slower direction alone read high: Seattle's median RTT showed as 0.40 s where the
    file's is 0.21 s. None for a symmetric input."""
    if probe.latency_best is None:
        return None
    if bw_only:
        slow = probe.bandwidth[iu]
        with np.errstate(divide="ignore"):
            fast = 8e-3 / probe.latency_best[iu]  # (the inverse bandwidth of the faster direction)
        fast = np.where(np.isnan(slow), np.nan, fast)
    else:
        slow, fast = probe.latency[iu], probe.latency_best[iu]
    full = np.r_[slow, fast]
    return full[~np.isnan(full)], full


def uplink_flows(u) -> int | None:
    """The flows per direction an uplink's test ran (its file's ``flows``), None when not recorded
    (or not a finite number >= 1: a file's ``Infinity``)."""
    v = u.extra.get("flows")
    return int(v) if is_number(v) and 1 <= v < math.inf else None


def crossing(hosts: int, flows: int | None) -> str:
    """How many of an uplink test's ``hosts`` sent across it at once, for a reader: "all crossing at once",
    or, for a group larger than the rest of the cluster (its test runs ``min(|G|, N - |G|)`` flows per
    direction, :mod:`plink.probes.uplinks`), "3 of its 5 hosts crossing at once"; ``flows`` None (a file
    without it): all."""
    if flows is None or flows >= hosts:
        return "all crossing at once"
    return f"{flows} of its {hosts} hosts crossing at once"


def summarize(probe, groups=None) -> dict[str, Any]:
    """Counts and percentiles of a :class:`~plink.data.probefile.ProbeData` (O(N²))."""
    n = probe.n
    iu = np.triu_indices(n, 1)
    lat = probe.latency[iu]
    measured = ~np.isnan(lat)
    # a bandwidth matrix given as input: its "latency" is only the inverse bandwidth plink
    # uses as a distance, not a time to show as one
    bw_only = probe.inverse_bandwidth and probe.bandwidth is not None
    both = _both_directions(probe, iu, bw_only)
    lat = both[0] if both is not None and not bw_only else lat[measured]
    out: dict[str, Any] = {
        "hosts": n,
        "pairs": n * (n - 1) // 2,
        "measured_pairs": int(measured.sum()),
        "missing_pairs": probe.n_missing_pairs(),
        "coverage": round(probe.coverage(), 6),
        "latency_us": None if bw_only else _pct(lat, 3),
        "method": probe.meta.get("method"),
    }
    if probe.bandwidth is not None:
        bw = probe.bandwidth[iu]
        out["bandwidth_gbps"] = _pct(both[0] if both is not None and bw_only else bw[~np.isnan(bw)], 4, significant=True)
        out["bandwidth_pairs"] = int(measured_pairs(probe, bandwidth=True)[iu].sum())
        # plink probe measures pair bandwidth N/2 pairs at a time: a pair whose round shared an uplink
        # reads less than its path; what the racks' uplinks carry is the uplink test's
        out["bandwidth_concurrent"] = bool(probe.meta.get("bandwidth")) and not probe.inverse_bandwidth
    if probe.uplinks:
        out["uplinks"] = [{"hosts": len(u.hosts), "first": probe.names[u.hosts[0]] if len(u.hosts) else None,
                           "up_mbit": round(u.up_bps * 8e-6, 1), "down_mbit": round(u.down_bps * 8e-6, 1),
                           "flows": uplink_flows(u)}
                          for u in probe.uplinks]
    if probe.truth is not None:
        out["truth_levels"] = list(probe.truth.levels)
        out["truth_counts"] = {
            lev: len(set(probe.truth.level_labels(d + 1))) for d, lev in enumerate(probe.truth.levels)
        }
    if groups is not None:
        labels = groups.aligned_to(probe.names)
        out["groups"] = int(labels.max()) + 1
        out["group_sizes"] = np.bincount(labels).tolist()
        # what plink show's text says of the structure, in its JSON too
        out["members"] = [[probe.names[i] for i in np.flatnonzero(labels == k)] for k in range(out["groups"])]
        if probe.uplinks:  # an uplink test run on other groups (the probe's, then): plink order does not price it
            sets = {frozenset(np.flatnonzero(labels == k).tolist()) for k in range(out["groups"])}
            for u, row in zip(probe.uplinks, out["uplinks"]):
                row["a_group_shown"] = frozenset(int(h) for h in u.hosts) in sets
        for key in ("low_confidence_hosts", "alone_hosts", "ami", "truth_level", "ami_levels", "ami_levels_against",
                    "split_by_bandwidth", "bandwidth_used"):
            if (groups.metrics or {}).get(key) is not None:
                out[key] = groups.metrics[key]
        within = labels[iu[0]] == labels[iu[1]]
        what, full, digits = ("bandwidth", probe.bandwidth[iu], 4) if bw_only else ("latency", probe.latency[iu], 3)
        unit = "gbps" if bw_only else "us"
        if both is not None:  # every direction as measured, each pair's twice
            full, within = both[1], np.r_[within, within]
        ok = ~np.isnan(full)
        if (ok & within).any():  # (bandwidths to significant digits, as their percentiles)
            out[f"median_{what}_within_groups_{unit}"] = _round(float(np.median(full[ok & within])), digits, bw_only)
        if (ok & ~within).any():
            out[f"median_{what}_between_groups_{unit}"] = _round(float(np.median(full[ok & ~within])), digits, bw_only)
    return out


def display_order(probe, groups=None) -> np.ndarray:
    """Host indices in heatmap order (see the module docstring)."""
    n = probe.n
    keys: list[Any] = [np.arange(n)]
    if probe.truth is not None:
        truth = ["\x1f".join(t) for t in probe.truth.labels]
        _, code = np.unique(np.array(truth, dtype=object), return_inverse=True)
        keys.append(code)
    if groups is not None:
        keys.append(groups.aligned_to(probe.names))
    return np.lexsort(keys)
