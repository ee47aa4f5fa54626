"""Probe a cluster over SSH in O(N) rounds: :func:`probe_hosts`.

1. An agent (:mod:`probes.agent`) is started on every host over SSH,
   at most ``concurrency`` connections at a time; hosts that cannot be
   reached are reported and their pairs left missing.
2. The pairs are probed in the rounds of :func:`probes.rounds.round_robin`
   (N-1 rounds for even N): all pairs of a round at once, both directions,
   latency first, then bandwidth when asked for.
3. After every round the probe file is written atomically to
   ``checkpoint``, so a crash keeps every measured pair; ``resume=True``
   reloads it and measures only what is missing (in the same rounds).
4. A host that dies mid-probe is reported; the pair it was in is dropped for
   that round and its remaining pairs are skipped, the rest is measured.
5. Agents are closed at the end (also on errors and Ctrl-C); they exit on
   their own when the SSH channel closes or their deadline passes.

Wall time is about ``rounds x per_pair_time`` plus connection setup, where
``per_pair_time = count x interval`` (+ ``2 x bw_seconds`` with bandwidth);
``benchmarks/probe_time.py`` measures the ratio.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from plink.errors import PlinkError, ProbeFileError
from plink.data.hostlist import HostEntry, parse_hostlist, read_hostlist
from plink.data.probefile import Host, ProbeData, new_meta

from .methods import BW_TOOLS, LATENCY_METHODS, method_unavailable, run_bandwidth, run_latency
from .rounds import remaining_rounds, round_robin


@dataclass(frozen=True)
class ProgressEvent:
    """What a progress callback receives."""

    phase: str  # "connect", "round", "done"
    done: int  # hosts connected / rounds finished
    total: int
    message: str = ""
    elapsed: float = 0.0


def per_pair_seconds(count: int, interval: float, bandwidth: bool = False, bw_seconds: float = 0.0) -> float:
    """The configured probe time of one pair (both directions in parallel
    for latency, one after the other for bandwidth): the physical bound of a
    round."""
    return count * interval + (2 * bw_seconds if bandwidth else 0.0)


def _as_entries(hosts) -> list[HostEntry]:
    if isinstance(hosts, (str, Path)):
        return read_hostlist(hosts)
    out = []
    for h in hosts:
        if isinstance(h, HostEntry):
            out.append(h)
        elif isinstance(h, str):
            out.extend(parse_hostlist(h))
        else:
            raise PlinkError(f"not a host: {h!r}")
    names = [e.name for e in out]
    if len(set(names)) != len(names):
        raise PlinkError("duplicate host names in the host list")
    return out


def _nan(n: int) -> np.ndarray:
    return np.full((n, n), np.nan)


class _State:
    """Directional matrices being filled in, and what to write."""

    def __init__(self, entries, bandwidth: bool):
        n = len(entries)
        self.entries = entries
        self.n = n
        self.lat, self.med, self.p90, self.loss = _nan(n), _nan(n), _nan(n), _nan(n)
        self.bw = _nan(n) if bandwidth else None
        self.addresses: list[str | None] = [None] * n
        self.bw_kept: np.ndarray | None = None
        self.rounds_done: list[int] = []
        self.schedule: list[dict] = []

    def pair_done(self, a: int, b: int) -> bool:
        ok = np.isfinite(self.lat[a, b]) or np.isfinite(self.lat[b, a])
        if self.bw is not None:
            ok = ok and (np.isfinite(self.bw[a, b]) or np.isfinite(self.bw[b, a]))
        return bool(ok)

    def load(self, path: Path, method: str) -> None:
        from plink.data.probefile import load

        try:
            old = load(path)
        except PlinkError as exc:
            raise PlinkError(f"cannot resume from {path}: {exc}") from None
        names = [e.name for e in self.entries]
        if old.names != names:
            raise ProbeFileError(
                f"cannot resume from {path}: its hosts differ from the host list "
                f"({len(old.names)} vs {len(names)} hosts, or another order)"
            )
        if old.meta.get("method") not in (None, method):
            raise ProbeFileError(f"cannot resume from {path}: it was probed with --method {old.meta.get('method')}")
        self.lat = old.latency.copy()
        np.fill_diagonal(self.lat, np.nan)
        for attr, m in (("med", old.latency_median), ("p90", old.latency_p90)):
            if m is not None:
                setattr(self, attr, m.copy())
        if old.bandwidth is not None:
            if self.bw is not None:
                self.bw = old.bandwidth.copy()
            else:  # a latency-only resume keeps the bandwidth measured before
                self.bw_kept = old.bandwidth.copy()
        loss = old.meta.get("loss")
        if isinstance(loss, list) and len(loss) == self.n:
            self.loss = np.array([[np.nan if v is None else v for v in row] for row in loss], dtype=float)
        self.addresses = [h.address for h in old.hosts]
        self.rounds_done = list(old.meta.get("rounds_done", []))
        self.schedule = list(old.meta.get("schedule", []))

    def to_probe(self, meta: dict) -> ProbeData:
        hosts = [Host(e.name, self.addresses[i], e.ssh_target) for i, e in enumerate(self.entries)]
        loss = [[None if not np.isfinite(v) else round(float(v), 4) for v in row] for row in self.loss]
        meta = dict(meta, loss=loss)
        bw = self.bw if self.bw is not None else self.bw_kept
        return ProbeData(
            hosts=hosts, latency=self.lat.copy(), latency_median=self.med.copy(), latency_p90=self.p90.copy(),
            bandwidth=None if bw is None else bw.copy(), meta=meta,
        )


def probe_hosts(
    hosts,
    method: str = "udp",
    count: int = 20,
    interval: float = 0.01,
    timeout: float = 1.0,
    bandwidth: bool = False,
    bw_seconds: float = 2.0,
    streams: int = 1,
    bw_tool: str = "auto",
    checkpoint: str | Path | None = None,
    resume: bool = False,
    progress: Callable[[ProgressEvent], None] | None = None,
    ssh=None,
    connect: Callable | None = None,
    after_round: Callable[[int, list], None] | None = None,
    uplinks: bool = False,
) -> ProbeData:
    """Measure pairwise latency (and bandwidth) between ``hosts``.

    ``hosts`` is a host-list path or a list of :class:`HostEntry` / strings.
    Returns the :class:`ProbeData`; ``meta["complete"]`` is False and
    ``meta["unreachable"]`` / ``meta["dead"]`` name the hosts when pairs are
    missing.  ``ssh`` is a :class:`probes.ssh.SSHOptions`; ``connect`` replaces
    the SSH transport (``connect(entries, token, deadline, on_done) ->
    (sessions, failures)``, used by loopback tests).  ``after_round(r, pairs)``
    is called after each round's checkpoint.  ``uplinks``: after the rounds,
    measure each inferred group's shared uplink with all its hosts crossing
    the boundary at once (:mod:`probes.uplinks`, ``bw_seconds`` per group).

    Complexity: ``R = N - 1`` (even N) or ``N`` (odd N) rounds of ``N/2``
    concurrent pairs, so O(N) wall time and O(N^2) measurements.
    """
    if method not in LATENCY_METHODS:
        raise PlinkError(f"unknown method {method!r} (use {', '.join(LATENCY_METHODS)})")
    if bw_tool not in BW_TOOLS:
        raise PlinkError(f"unknown bandwidth tool {bw_tool!r} (use {', '.join(BW_TOOLS)})")
    if count < 1 or count > 100000:
        raise PlinkError("--count must be 1..100000")
    if not 0 < interval <= 10 or not 0 < timeout <= 60:
        raise PlinkError("--interval must be in (0, 10] s and --timeout in (0, 60] s")
    if (bandwidth or uplinks) and (not 0 < bw_seconds <= 600 or not 1 <= streams <= 64):
        raise PlinkError("--bw-seconds must be in (0, 600] and --streams 1..64")
    entries = _as_entries(hosts)
    n = len(entries)
    if n < 2:
        raise PlinkError("need at least 2 hosts to probe")
    state = _State(entries, bandwidth)
    checkpoint = Path(checkpoint) if checkpoint is not None else None
    if checkpoint is not None and not checkpoint.absolute().parent.is_dir():
        raise PlinkError(f"cannot write {checkpoint}: directory {checkpoint.parent} does not exist")
    if resume:
        if checkpoint is None:
            raise PlinkError("--resume needs the output file (-o) of the interrupted probe")
        if checkpoint.exists():
            state.load(checkpoint, method)
    done = [(a, b) for a, b in ((i, j) for i in range(n) for j in range(i + 1, n)) if state.pair_done(a, b)]
    todo = remaining_rounds(n, done)
    all_rounds = round_robin(n)
    t_start = time.monotonic()
    pair_time = per_pair_seconds(count, interval, bandwidth, bw_seconds)
    round_budget = pair_time + timeout + 30.0
    deadline = len(todo) * round_budget * 2 + 300.0
    token = secrets.token_hex(16)

    def report(phase, k, total, msg=""):
        if progress is not None:
            progress(ProgressEvent(phase, k, total, msg, time.monotonic() - t_start))

    meta = new_meta(
        method, samples=count, interval_s=interval, statistic="p10", rounds=len(all_rounds),
        bandwidth=({"tool": bw_tool, "seconds": bw_seconds, "streams": streams} if bandwidth else None),
    )
    unreachable: dict[str, str] = {}
    dead: dict[str, str] = {}
    errors: list[str] = []
    sessions: dict = {}
    measured_uplinks: list = []

    def write(complete: bool) -> ProbeData:
        missing = sum(1 for i in range(n) for j in range(i + 1, n) if not state.pair_done(i, j))
        m = dict(meta, complete=complete and missing == 0, missing_pairs=missing, rounds_done=sorted(set(state.rounds_done)),
                 schedule=state.schedule, unreachable=unreachable, dead=dead, errors=errors[:50],
                 elapsed_s=round(time.monotonic() - t_start, 3))
        probe = state.to_probe(m)
        if measured_uplinks:
            probe.uplinks = list(measured_uplinks)
        if checkpoint is not None:
            probe.save(checkpoint)
        return probe

    if not todo:
        report("done", 0, 0, "nothing left to measure")
        return write(True)

    # hosts needed: those with a pair left
    needed = sorted({h for _, ps in todo for p in ps for h in p})
    report("connect", 0, len(needed))
    connected = [0]

    def on_done(i, err):
        connected[0] += 1
        report("connect", connected[0], len(needed), err or "")

    if connect is None:
        from .ssh import SSHOptions, start_agents

        opts = ssh if ssh is not None else SSHOptions()

        def connect(ents, tok, dl, cb):
            return start_agents(ents, opts, tok, dl, on_done=cb)

    try:
        sub = [entries[i] for i in needed]
        got, failed = connect(sub, token, deadline, lambda k, err: on_done(needed[k], err))
        sessions = {needed[k]: s for k, s in got.items()}
        for k, why in failed.items():
            unreachable[entries[needed[k]].name] = why
        for i, s in sessions.items():
            state.addresses[i] = s.info.get("addr") or state.addresses[i]
            why = method_unavailable(method, s.info)
            if why:
                unreachable[entries[i].name] = f"{entries[i].name}: --method {method}: {why}"
        bad = {i for i in needed if entries[i].name in unreachable}
        for i in bad & sessions.keys():
            sessions.pop(i).close()
        rounds = [(r, [p for p in ps if not (set(p) & bad)]) for r, ps in todo]
        rounds = [(r, ps) for r, ps in rounds if ps]
        write(False)
        lost: dict[int, str] = {}
        for k, (r, pairs) in enumerate(rounds):
            report("round", k, len(rounds), f"round {r + 1}/{len(all_rounds)}")
            pairs = [p for p in pairs if p[0] not in lost and p[1] not in lost]
            if not pairs:
                continue
            t0 = time.monotonic()
            lat = run_latency(pairs, sessions, method, r, count, interval, timeout, lost)
            bw, tools = ({}, {})
            ok_pairs = [p for p in pairs if p[0] not in lost and p[1] not in lost]
            if bandwidth and ok_pairs:
                bw, tools = run_bandwidth(ok_pairs, sessions, bw_tool, bw_seconds, streams, lost)
            measured = []
            for a, b in pairs:
                if a in lost or b in lost:
                    continue  # a host died during the round: its pair stays missing
                for src, dst in ((a, b), (b, a)):
                    st = lat.get((src, dst))
                    if isinstance(st, str):
                        errors.append(st)
                    elif st is not None:
                        state.lat[src, dst], state.med[src, dst] = st.p10, st.median
                        state.p90[src, dst], state.loss[src, dst] = st.p90, st.loss
                    if bandwidth:
                        v = bw.get((src, dst))
                        if isinstance(v, str):
                            errors.append(v)
                        elif v is not None:
                            state.bw[src, dst] = v
                if state.pair_done(a, b):
                    measured.append([a, b])
            for i, why in lost.items():
                if entries[i].name not in dead:
                    dead[entries[i].name] = why
            state.rounds_done.append(r)
            state.schedule.append({"round": r, "pairs": measured, "seconds": round(time.monotonic() - t0, 3),
                                   **({"bw_tools": sorted(set(tools.values()))} if tools else {})})
            # keep the agents' deadlines ahead of us
            ext = []
            for i, s in sessions.items():
                if i not in lost and not s.dead:
                    try:
                        ext.append((i, s.send("extend", deadline=deadline)))
                    except Exception as exc:
                        lost.setdefault(i, str(exc))
            for i, rid in ext:
                try:
                    sessions[i].wait(rid, 30.0)
                except Exception as exc:
                    lost.setdefault(i, str(exc))
            for i, why in lost.items():
                dead.setdefault(entries[i].name, why)
            write(False)
            report("round", k + 1, len(rounds), f"round {r + 1}/{len(all_rounds)}")
            if after_round is not None:
                after_round(r, pairs)
        if uplinks:
            report("uplinks", 0, 1, "shared uplinks")
            _probe_uplinks(state, sessions, lost, bw_seconds, meta, errors, measured_uplinks)
            report("uplinks", 1, 1, "shared uplinks")
    finally:
        for s in sessions.values():
            s.close()
    probe = write(True)
    report("done", len(rounds), len(rounds))
    return probe


def _probe_uplinks(state, sessions, lost, seconds, meta, errors, out) -> None:
    """The shared-uplink phase (:mod:`probes.uplinks`) over the open agent sessions."""
    from .uplinks import infer_groups, measure_uplinks, session_stage

    live = {i: s for i, s in sessions.items() if i not in lost and not getattr(s, "dead", False)}
    lat = state.lat.copy()
    keep = sorted(live)
    if len(keep) < 4:
        meta["uplinks"] = {"skipped": f"only {len(keep)} hosts reachable"}
        return
    t0 = time.monotonic()
    ix = np.ix_(keep, keep)
    groups, how = infer_groups(lat[ix], bandwidth=None if state.bw is None else state.bw[ix])
    groups = [[keep[k] for k in g] for g in groups]
    if len(groups) < 2:
        meta["uplinks"] = {"groups": how, "n_groups": len(groups),
                           "skipped": "no groups found: nothing crosses a group boundary"}
        errors.append(f"uplinks: {how} found no groups of hosts, so no shared uplink was measured "
                      "(with --bandwidth the groups come from the pair bandwidths, which separate racks better)")
        return
    addresses = {i: s.info.get("addr") or state.addresses[i] for i, s in live.items()}
    out.extend(measure_uplinks(session_stage(live), addresses, groups, seconds, errors=errors))
    meta["uplinks"] = {"groups": how, "n_groups": len(groups), "seconds": seconds, "tool": "agent",
                       "elapsed_s": round(time.monotonic() - t0, 3)}
