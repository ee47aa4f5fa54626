"""Autotune (dissertation §4.2.3): re-balance a 2LHA plan from measured link stats.

*Quicktune* is a one-shot global re-assignment: GMs to groups in proportion
to each group's aggregate outbound bandwidth ``sum_{m in g} sum_{n not in g}
BW(m, n)``, then LMs to the members of each group in proportion to each
node's aggregate bandwidth ``sum_n BW(i, n)`` — the greedy LPT partition of
:mod:`plink.schedule.plan` with the *measured* effective bandwidths.  Pairs that
carried no traffic are priced as the median measured link of the same kind
(same group / other group) of that node, else of all nodes.

*Finetune* evolves the current plan one step at a time.  Per node ``i``,
from the bytes ``D(i, j)`` it sent to ``j``, the effective bandwidth
``BW(i, j)`` and ``RTT(i, j)``::

    t(i) = max_j RTT(i, j) + sum_j D(i, j) / sum_j BW(i, j)      t^(i) = t(i) / mean_n t(n)
    l(i) = sum_j D(i, j)                                         l^(i) = (l(i) - min l) / (max l - min l)
    B(i) = beta l^(i) + gamma t^(i)

If ``max B / min B > epsilon`` it moves one GM (if the most blamed node has
none, one LM) from the most blamed node to the least blamed one; when the
same node is the bottleneck again, it moves ``2^streak`` masters (the
streak is kept in the schedule file's ``autotune`` field).  An LM can only
move inside its group: if the least blamed node is in another group, the
LM goes to the least blamed member of the bottleneck's group.  A GM that
moves to another group makes the target that group's LM for the chunk.
Each step is ``O(C k + N^2)``.

Stats file (JSON, ``"format": "plink-stats", "version": 1``)::

    {"format": "plink-stats", "version": 1,
     "links": [{"src": "vm000", "dst": "vm003", "bytes": 1048576, "seconds": 0.0021, "rtt_us": 48.0}, ...]}

``bytes`` sent from ``src`` to ``dst`` over the window, ``seconds`` the time
the link spent moving them (so ``bytes/seconds`` is the effective
bandwidth), ``rtt_us`` optional.  :func:`model_stats` produces the same
from the time model; :func:`plink.schedule.executor.all_reduce` can record them.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plink.errors import OptionError, PlinkError
from plink.data.fileio import atomic_write_text, check_envelope, read_json
from plink.data.inputs import host_key, host_positions, is_number
from plink.schedule.plan import Plan, assign_masters, capacities

STATS_FORMAT = "plink-stats"
STATS_VERSION = 1


@dataclass
class LinkStats:
    """Measured per-link stats, aligned to a host list: ``(N, N)`` arrays, NaN where unknown."""

    hosts: list[str]
    nbytes: np.ndarray
    seconds: np.ndarray
    rtt_us: np.ndarray

    def bandwidth(self) -> np.ndarray:
        """Effective bandwidth in bytes/s (NaN where the link carried nothing)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            bw = self.nbytes / self.seconds
        bw[~(np.isfinite(bw) & (bw > 0))] = np.nan
        return bw

    def to_dict(self) -> dict:
        links = []
        n = len(self.hosts)
        for i in range(n):
            for j in range(n):
                if i != j and np.isfinite(self.nbytes[i, j]) and self.nbytes[i, j] > 0:
                    row: dict[str, Any] = {"src": self.hosts[i], "dst": self.hosts[j],
                                           "bytes": int(self.nbytes[i, j]), "seconds": float(self.seconds[i, j])}
                    if np.isfinite(self.rtt_us[i, j]):
                        row["rtt_us"] = round(float(self.rtt_us[i, j]), 3)
                    links.append(row)
        return {"format": STATS_FORMAT, "version": STATS_VERSION, "hosts": list(self.hosts), "links": links}

    def save(self, path: str | os.PathLike) -> None:
        doc = self.to_dict()
        body = ",\n  ".join(json.dumps(x) for x in doc.pop("links"))
        head = json.dumps(doc)[:-1]
        atomic_write_text(path, f'{head}, "links": [\n  {body}\n]}}\n')


def stats_from_dict(doc: Any, hosts: list[str], path: str = "<stats>") -> LinkStats:
    """Validate a stats document and align it to ``hosts`` (unknown hosts are an error)."""
    check_envelope(doc, path, STATS_FORMAT, STATS_VERSION, "stats")
    links = doc.get("links")
    if not isinstance(links, list) or not links:
        raise PlinkError(f"{path}: 'links' must be a non-empty list")
    pos = host_positions(hosts)  # (case ignored: one host to a resolver, as everywhere)
    n = len(hosts)
    nb, sec, rtt = (np.full((n, n), np.nan) for _ in range(3))
    for k, row in enumerate(links):
        if not isinstance(row, dict):
            raise PlinkError(f"{path}: link {k} is not an object")
        for end in ("src", "dst"):
            if not isinstance(row.get(end), str) or host_key(row.get(end)) not in pos:
                raise PlinkError(f"{path}: link {k}: stats for unknown host {row.get(end)!r} (not in the schedule)")
        i, j = pos[host_key(row["src"])], pos[host_key(row["dst"])]
        if i == j:
            raise PlinkError(f"{path}: link {k} goes from {row['src']!r} to itself")
        vals = {}
        for key in ("bytes", "seconds", "rtt_us"):  # each named when it is the bad one (rtt_us: optional)
            if key == "rtt_us" and row.get(key) is None:
                vals[key] = np.nan
                continue
            if key not in row:
                raise PlinkError(f"{path}: link {k}: needs numeric 'bytes' and 'seconds' ('{key}' is missing)")
            v = row[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)):  # (true and "5" were taken as numbers)
                raise PlinkError(f"{path}: link {k}: '{key}' must be a number, not {str(v)[:40]!r}")
            try:
                vals[key] = float(v)
            except OverflowError:
                raise PlinkError(f"{path}: link {k}: '{key}' is too large ({str(v)[:40]})") from None
            if not math.isfinite(vals[key]) or vals[key] < 0:  # (Infinity, NaN, 1e400: a blame of 300 digits)
                raise PlinkError(f"{path}: link {k}: '{key}' must be finite and >= 0, not {str(v)[:40]}")
        b, s, r = vals["bytes"], vals["seconds"], vals["rtt_us"]
        if b > 0 and s == 0:
            raise PlinkError(f"{path}: link {k}: 'seconds' must be > 0 when 'bytes' is (got {row['bytes']} bytes in 0 s)")
        nb[i, j] = np.nansum([nb[i, j], b])
        sec[i, j] = np.nansum([sec[i, j], s])
        rtt[i, j] = np.fmax(rtt[i, j], r)
    return LinkStats(list(hosts), nb, sec, rtt)


def check_every_sender(stats: LinkStats, path: str = "stats") -> None:
    """Raise :class:`PlinkError` unless every host of ``stats`` sent bytes on some link: in a 2LHA
    schedule every node sends, so a host without a link sent is one whose rank's stats were not
    merged in, and Finetune would blame it nothing and move masters onto it (Quicktune: give it a
    made-up bandwidth). O(N^2)."""
    sent = np.nansum(np.where(np.isfinite(stats.nbytes), stats.nbytes, 0.0), axis=1) > 0
    if len(sent) > 1 and not sent.all():
        lacking = [h for h, ok in zip(stats.hosts, sent) if not ok]
        few = ", ".join(repr(h) for h in lacking[:4]) + (f" and {len(lacking) - 4} more" if len(lacking) > 4 else "")
        raise PlinkError(f"{path}: no link sent by {len(lacking)} of the schedule's {len(sent)} hosts ({few}): "
                         "every node of a schedule sends, so merge the stats of every rank "
                         "(all_reduce(..., stats=...) on each) before retuning")


def load_stats(path: str | os.PathLike, hosts: list[str]) -> LinkStats:
    return stats_from_dict(read_json(path), hosts, str(path))


def model_stats(plan: Plan, pc, rounds=None) -> LinkStats:
    """Stats one all-reduce would produce under the time model (bytes per link; seconds = bytes / bw)."""
    from plink.schedule.timemodel import plan_traffic

    n = plan.n
    traffic = plan_traffic(plan) if rounds is None else rounds
    nb = sum(t.aggregated(n) for t in traffic)
    sec = nb * pc.inv_bw * 1e-6
    rtt = np.where(nb > 0, pc.latency, np.nan)
    nb = np.where(nb > 0, nb, np.nan)
    sec = np.where(np.isfinite(nb), np.maximum(sec, 1e-12), np.nan)
    return LinkStats(list(plan.hosts), nb, sec, rtt)


# ---------------------------------------------------------------------------
# Quicktune


def filled_bandwidth(stats: LinkStats, labels: np.ndarray) -> np.ndarray:
    """Measured effective bandwidth with unmeasured pairs priced as the median link of their kind."""
    bw = stats.bandwidth()
    n = len(labels)
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(n, dtype=bool)
    out = bw.copy()
    for kind in (same & off, ~same):
        every = bw[kind & np.isfinite(bw)]
        fallback = float(np.median(every)) if every.size else float(np.nanmedian(bw)) if np.isfinite(bw).any() else 1.0
        for i in range(n):
            row = kind[i]
            vals = bw[i][row & np.isfinite(bw[i])]
            fill = float(np.median(vals)) if vals.size else fallback
            miss = row & ~np.isfinite(bw[i])
            out[i, miss] = fill
    np.fill_diagonal(out, 0.0)
    return out


def quicktune(plan: Plan, stats: LinkStats) -> Plan:
    """One-shot re-assignment of all GMs and LMs from measured bandwidths (module docstring)."""
    bw = filled_bandwidth(stats, plan.labels)
    group_cap, node_cap = capacities(plan.labels, bw, "bandwidth")
    lm, gm = assign_masters(plan.labels, plan.chunks[:, 1], group_cap, node_cap)
    meta = dict(plan.meta, autotune="quicktune")
    return Plan(list(plan.hosts), plan.labels.copy(), plan.chunks.copy(), lm, gm, plan.size, "bandwidth", meta)


# ---------------------------------------------------------------------------
# Finetune


def blame(stats: LinkStats, beta: float = 1.0, gamma: float = 1.0) -> np.ndarray:
    """``B(i) = beta l^(i) + gamma t^(i)`` (module docstring); nodes that sent nothing get ``l = t = 0``."""
    d = np.nan_to_num(stats.nbytes, nan=0.0)
    bw = np.nan_to_num(stats.bandwidth(), nan=0.0)
    rtt = np.nan_to_num(stats.rtt_us, nan=0.0) * 1e-6
    l = d.sum(axis=1)
    bws = bw.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = rtt.max(axis=1) + np.where(bws > 0, l / bws, 0.0)
    mean_t = t.mean()
    t_hat = t / mean_t if mean_t > 0 else np.zeros_like(t)
    span = l.max() - l.min()
    l_hat = (l - l.min()) / span if span > 0 else np.zeros_like(l)
    return beta * l_hat + gamma * t_hat


@dataclass
class FinetuneResult:
    plan: Plan
    blame: np.ndarray
    ratio: float
    moved_gm: int = 0
    moved_lm: int = 0
    source: str | None = None
    target: str | None = None
    state: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"blame_ratio": self.ratio if np.isfinite(self.ratio) else None, "moved_gm": self.moved_gm,
                "moved_lm": self.moved_lm, "from": self.source, "to": self.target, "state": self.state}


MAX_WEIGHT = 1e6  #: blame weights are relative: far beyond any useful ratio, far below an overflow


def check_finetune(beta: float, gamma: float, epsilon: float, prefix: str = "") -> None:
    """Finetune's settings: weights in ``[0, MAX_WEIGHT]``, ``epsilon >= 1`` (a ratio), else
    :class:`~plink.errors.OptionError` (a usage error); ``prefix`` goes before each name (``"--"``
    for the command line's options)."""
    if not (is_number(epsilon) and epsilon >= 1):
        raise OptionError(f"{prefix}epsilon must be >= 1, got {epsilon!r}")
    for name, w in (("beta", beta), ("gamma", gamma)):
        if not (is_number(w) and 0 <= w <= MAX_WEIGHT):
            raise OptionError(f"{prefix}{name} must be a weight in [0, {MAX_WEIGHT:g}], got {w!r}")


def finetune(plan: Plan, stats: LinkStats, state: dict | None = None, *, beta: float = 1.0,
             gamma: float = 1.0, epsilon: float = 1.1) -> FinetuneResult:
    """One Finetune step (module docstring); ``state`` is the previous step's ``result.state``."""
    check_finetune(beta, gamma, epsilon)
    if list(stats.hosts) != list(plan.hosts):
        raise PlinkError("stats and schedule have different hosts")
    b = blame(stats, beta, gamma)
    hi, lo = int(np.argmax(b)), int(np.argmin(b))
    ratio = float(b[hi] / b[lo]) if b[lo] > 0 else (np.inf if b[hi] > 0 else 1.0)
    state = dict(state or {})
    if not ratio > epsilon or hi == lo:
        return FinetuneResult(plan.copy(), b, ratio, state={"bottleneck": None, "streak": 0})
    streak = int(state.get("streak", 0)) + 1 if state.get("bottleneck") == plan.hosts[hi] else 0
    units = 2 ** min(streak, 30)
    new = plan.copy()
    labels = new.labels
    moved_gm = moved_lm = 0
    target = lo
    # GMs first: prefer chunks whose LM in the target's group already is the target
    gms = np.flatnonzero(new.gm == hi)
    if len(gms):
        pref = new.lm[gms, labels[lo]] == lo
        gms = np.concatenate([gms[pref], gms[~pref]])[:units]
        for c in gms:
            new.lm[c, labels[lo]] = lo
            new.gm[c] = lo
        moved_gm = len(gms)
    left = units - moved_gm
    if left > 0:
        g = labels[hi]
        dest = lo
        if labels[lo] != g:
            mem = np.flatnonzero((labels == g) & (np.arange(new.n) != hi))
            dest = int(mem[np.argmin(b[mem])]) if len(mem) else -1
        if dest >= 0:
            lms = np.flatnonzero((new.lm[:, g] == hi) & (new.gm != hi))[:left]
            new.lm[lms, g] = dest
            moved_lm = len(lms)
            if moved_gm == 0:
                target = dest
    new.meta = dict(new.meta, autotune="finetune")
    new.__post_init__()
    return FinetuneResult(new, b, ratio, moved_gm, moved_lm, plan.hosts[hi], plan.hosts[target],
                          {"bottleneck": plan.hosts[hi], "streak": streak})


def save_stats_rows(path: str | os.PathLike, links: list[dict]) -> None:
    """Write link rows (e.g. every rank's ``stats["links"]`` from :func:`plink.schedule.executor.all_reduce`,
    gathered with ``dist.all_gather_object``) as a stats file, atomically."""
    doc = {"format": STATS_FORMAT, "version": STATS_VERSION, "links": list(links)}
    body = ",\n  ".join(json.dumps(x) for x in doc.pop("links"))
    atomic_write_text(path, json.dumps(doc)[:-1] + f', "links": [\n  {body}\n]}}\n')
