"""Probe a cluster over SSH in O(N) rounds: :func:`probe_hosts`.

1. An agent (:mod:`probes.agent`) is started on every host over SSH,
   at most ``concurrency`` connections at a time; hosts that cannot be
   reached are reported and their pairs left missing.  A per-run random key
   authenticates every probe packet (HMAC, replay window) and TCP test.
2. Latency (``udp``): the pairs are scheduled in the rounds of
   :func:`probes.rounds.round_robin` (N-1 rounds for even N) and each agent
   gets its whole part of the schedule in one message; the agents run it on
   their own clocks (slot ``k`` starts ``k x slot`` s after a common start)
   and stream results back, so a round costs no controller round trip.
   Samples are taken in *passes* over all rounds (the second pass in another
   round order, so a burst of load never hits all of a pair's samples); with
   ``max_count > count`` further passes re-probe only the pairs whose p10 is
   not yet stable (:mod:`probes.sampling`), until ``max_count``.  Every agent
   also pings itself once per pass: the per-host echo overhead.
   ``fping`` / ``icmp`` and bandwidth run round by round from the controller.
3. Failures are detected in parallel: every wait has one deadline for all
   hosts, and a host silent for ``reply_timeout`` s (heartbeats included) is
   declared dead, so k hosts dying cost about one timeout, not k.  When every
   host is lost the probe stops (``meta["aborted"]``).
4. With ``checkpoint`` every measurement is appended to ``checkpoint +
   ".journal"`` (:mod:`probes.journal`; O(pairs) per round, not O(N^2)); the
   probe file is written at the end and the journal removed.  ``resume=True``
   reads the probe file and the journal and measures exactly what is missing
   for the options given (latency and/or bandwidth).
5. Agents exit when the probe ends, when their SSH channel closes, or when
   they hear nothing (not even a heartbeat) for ``hb_timeout`` s.

Wall time is about ``rounds x count x interval`` (+ ``rounds x 2 x
bw_seconds`` with bandwidth) plus connection setup;
``benchmarks/probe_time.py`` measures the ratio.
"""

from __future__ import annotations

import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from plink.errors import PlinkError, ProbeFileError
from plink.data.hostlist import HostEntry, parse_hostlist, read_hostlist
from plink.data.probefile import Host, ProbeData, new_meta

from .journal import Journal, journal_path, read_journal
from .methods import BW_TOOLS, LATENCY_METHODS, _stage, method_unavailable, run_bandwidth, run_latency, run_scheduled
from .rounds import pack_rounds, round_robin
from .sampling import host_overhead, is_stable, p10_interval, quantile_sorted


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
    """What is known per direction, and what to write.

    Directions loaded from a probe file carry only their statistics;
    directions measured in this run (or replayed from the journal) keep
    their samples, from which the statistics are computed at the end.
    """

    def __init__(self, entries, bandwidth: bool):
        n = len(entries)
        self.entries = entries
        self.n = n
        self.lat, self.med, self.p90, self.loss = _nan(n), _nan(n), _nan(n), _nan(n)
        self.bw = _nan(n)
        self.want_bw = bandwidth
        self.had_bw = False
        self.addresses: list[str | None] = [None] * n
        self.samples: dict[tuple[int, int], list] = {}
        self.sent: dict[tuple[int, int], int] = {}
        self.self_rtts: dict[int, list] = {}
        self.old_meta: dict = {}

    # -- what is done ------------------------------------------------------
    def lat_done(self, a: int, b: int) -> bool:
        return bool(np.isfinite(self.lat[a, b]) or np.isfinite(self.lat[b, a])
                    or self.samples.get((a, b)) or self.samples.get((b, a)))

    def bw_done(self, a: int, b: int) -> bool:
        return bool(np.isfinite(self.bw[a, b]) or np.isfinite(self.bw[b, a]))

    def pair_done(self, a: int, b: int) -> bool:
        return self.lat_done(a, b) and (not self.want_bw or self.bw_done(a, b))

    # -- input -----------------------------------------------------------
    def add_latency(self, src: int, dst: int, sent: int, rtts) -> None:
        if src == dst:
            self.self_rtts.setdefault(src, []).extend(rtts)
            return
        self.sent[(src, dst)] = self.sent.get((src, dst), 0) + int(sent)
        self.samples.setdefault((src, dst), []).extend(rtts)

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
        self.old_meta = dict(old.meta)
        self.lat = old.latency.copy()
        np.fill_diagonal(self.lat, np.nan)
        for attr, m in (("med", old.latency_median), ("p90", old.latency_p90)):
            if m is not None:
                setattr(self, attr, m.copy())
        if old.bandwidth is not None:
            self.bw = old.bandwidth.copy()
            self.had_bw = True
        loss = old.meta.get("loss")
        if isinstance(loss, list) and len(loss) == self.n:
            self.loss = np.array([[np.nan if v is None else v for v in row] for row in loss], dtype=float)
        self.addresses = [h.address for h in old.hosts]

    def replay(self, path: Path, method: str) -> None:
        lat, bw, addrs = read_journal(path, [e.name for e in self.entries], method)
        for (s, d), (sent, rtts) in lat.items():
            self.add_latency(s, d, sent, rtts)
        for (s, d), g in bw.items():
            self.bw[s, d] = g
            self.had_bw = True
        for i, a in addrs.items():
            if 0 <= i < self.n:
                self.addresses[i] = a

    # -- output ----------------------------------------------------------
    def finish(self, level: float = 0.9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Statistics of every sampled direction into the matrices; returns
        the p10 interval (low, high) and the samples-received matrices."""
        n = self.n
        lo, hi, got = _nan(n), _nan(n), np.zeros((n, n), dtype=int)
        for (s, d), rtts in self.samples.items():
            x = sorted(rtts)
            sent = self.sent.get((s, d), len(x))
            got[s, d] = len(x)
            self.loss[s, d] = max(0.0, 1.0 - len(x) / sent) if sent else 1.0
            if len(x) == 0:
                continue
            p10, lo[s, d], hi[s, d] = p10_interval(x, level)
            self.lat[s, d] = p10
            self.med[s, d], self.p90[s, d] = quantile_sorted(x, 0.5), quantile_sorted(x, 0.9)
        return lo, hi, got

    def to_probe(self, meta: dict) -> ProbeData:
        hosts = [Host(e.name, self.addresses[i], e.ssh_target) for i, e in enumerate(self.entries)]
        loss = [[None if not np.isfinite(v) else round(float(v), 4) for v in row] for row in self.loss]
        meta = dict(meta, loss=loss)
        bw = self.bw if (self.want_bw or self.had_bw) else None
        return ProbeData(
            hosts=hosts, latency=self.lat.copy(), latency_median=self.med.copy(), latency_p90=self.p90.copy(),
            bandwidth=None if bw is None else bw.copy(), meta=meta,
        )


def _matrix(m: np.ndarray, digits: int = 2) -> list:
    return [[None if not np.isfinite(v) else round(float(v), digits) for v in row] for row in m]


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
    reply_timeout: float = 10.0,
    hb_timeout: float = 20.0,
    passes: int = 1,
    max_count: int | None = None,
    tol: float = 0.1,
    self_ping: bool = True,
    uplinks: bool = False,
    kernel_stamps: bool = True,
) -> ProbeData:
    """Measure pairwise latency (and bandwidth) between ``hosts``.

    ``hosts`` is a host-list path or a list of :class:`HostEntry` / strings.
    ``count`` samples per pair and direction are taken in ``passes``
    interleaved passes over the rounds (``udp`` only; other methods take them
    in one pass); with ``max_count > count`` the pairs whose p10 is not yet
    stable (confidence interval wider than ``tol`` of the value, see
    :mod:`probes.sampling`) get further passes of ``count / passes``
    samples until stable or ``max_count``.  Returns the :class:`ProbeData`;
    ``meta["complete"]`` is False and ``meta["unreachable"]`` /
    ``meta["dead"]`` (``{name: why}``) name the hosts when pairs are
    missing; ``meta["aborted"]`` says why the probe stopped early (every host
    lost).  ``meta["latency_p10_ci_us"]`` ({"low", "high"} matrices),
    ``meta["confidence"]`` (per pair, 0..1), ``meta["samples_received"]`` and
    ``meta["host_overhead_us"]`` (each host's self-ping p10) describe how
    sure each value is.  ``meta["phases_s"]`` is the wall time of each phase
    (``connect``, ``measure``, ``journal`` appends, ``close``, ``write``)
    and the longest heartbeat pass over all agents (``heartbeat_pass_max``).

    ``reply_timeout`` is the one failure timeout: a host silent that long is
    dead.  ``ssh`` is a :class:`probes.ssh.SSHOptions`; ``connect`` replaces
    the SSH transport (``connect(entries, key, deadline, on_done) ->
    (sessions, failures)``, used by loopback tests).  ``after_round(r,
    pairs)`` is called after each finished round (bandwidth, fping, icmp)
    or pass (``udp``).  ``uplinks``: after the rounds, measure each inferred
    group's shared uplink with all its hosts crossing the boundary at once
    (:mod:`probes.uplinks`, ``bw_seconds`` per group).  ``kernel_stamps``
    (``udp``): time each echo from the kernel's receive timestamps and take
    the reflector's own turnaround out (TWAMP-style, RFC 5357), so a busy
    host's late wake-ups do not count as network latency; False keeps the
    user-space times (for comparison).

    Complexity: ``R = N - 1`` (even N) or ``N`` (odd N) rounds of ``N/2``
    concurrent pairs per pass, so O(N) wall time, O(N^2) measurements and
    O(N) controller work per round (the journal appends only new pairs).
    """
    if method not in LATENCY_METHODS:
        raise PlinkError(f"unknown method {method!r} (use {', '.join(LATENCY_METHODS)})")
    if bw_tool not in BW_TOOLS:
        raise PlinkError(f"unknown bandwidth tool {bw_tool!r} (use {', '.join(BW_TOOLS)})")
    if count < 1 or count > 100000:
        raise PlinkError("--count must be 1..100000")
    if max_count is not None and not count <= max_count <= 100000:
        raise PlinkError("--max-count must be >= --count and <= 100000")
    if not 1 <= passes <= count:
        raise PlinkError("--passes must be 1..--count")
    if not 0 < interval <= 10 or not 0 < timeout <= 60:
        raise PlinkError("--interval must be in (0, 10] s and the reply timeout in (0, 60] s")
    if not 0 < reply_timeout <= 600:
        raise PlinkError("--timeout must be in (0, 600] s")
    if (bandwidth or uplinks) and (not 0 < bw_seconds <= 600 or not 1 <= streams <= 64):
        raise PlinkError("--bw-seconds must be in (0, 600] and --streams 1..64")
    entries = _as_entries(hosts)
    n = len(entries)
    if n < 2:
        raise PlinkError("need at least 2 hosts to probe")
    if method != "udp":
        passes, max_count = 1, None
    state = _State(entries, bandwidth)
    checkpoint = Path(checkpoint) if checkpoint is not None else None
    if checkpoint is not None and not checkpoint.absolute().parent.is_dir():
        raise PlinkError(f"cannot write {checkpoint}: directory {checkpoint.parent} does not exist")
    jpath = journal_path(checkpoint) if checkpoint is not None else None
    if resume:
        if checkpoint is None:
            raise PlinkError("--resume needs the output file (-o) of the interrupted probe")
        if checkpoint.exists():
            state.load(checkpoint, method)
        if jpath.exists():
            state.replay(jpath, method)
    elif jpath is not None and jpath.exists():
        jpath.unlink()  # a fresh probe: an old journal is not ours
    all_rounds = round_robin(n)
    pairs_all = [p for r in all_rounds for p in r]
    lat_todo = [p for p in pairs_all if not state.lat_done(*p)]
    bw_todo = [p for p in pairs_all if bandwidth and not state.bw_done(*p)]
    t_start = time.monotonic()
    key = secrets.token_hex(32)

    def report(phase, k, total, msg=""):
        if progress is not None:
            progress(ProgressEvent(phase, k, total, msg, time.monotonic() - t_start))

    old_samples = state.old_meta.get("samples")
    samples_meta = count if not isinstance(old_samples, int) or not resume else min(old_samples, count)
    if resume and not lat_todo and isinstance(old_samples, int):
        samples_meta = old_samples  # nothing re-measured: the file's latency is as it was
    meta = new_meta(
        method, samples=samples_meta, interval_s=interval, statistic="p10", rounds=len(all_rounds),
        passes=passes, max_samples=max_count or count,
        bandwidth=({"tool": bw_tool, "seconds": bw_seconds, "streams": streams} if bandwidth
                   else state.old_meta.get("bandwidth")),
    )
    if resume and isinstance(old_samples, int) and lat_todo and old_samples != count:
        meta["samples_note"] = (f"pairs measured with {old_samples} (first run) and {count} (resume) samples; "
                                "'samples' is the smaller")
    unreachable: dict[str, str] = {}
    dead: dict[str, str] = {}
    errors: list[str] = []
    schedule: list[dict] = []
    aborted: list[str] = []
    measured_uplinks: list = []
    phases: dict[str, float] = {}  # wall seconds per phase (meta["phases_s"])
    journal = Journal(jpath, [e.name for e in entries], method) if jpath is not None else None

    def write(final: bool) -> ProbeData:
        lo, hi, got = state.finish()
        missing = sum(1 for a, b in pairs_all if not state.pair_done(a, b))
        with np.errstate(invalid="ignore", divide="ignore"):
            conf = np.clip(1.0 - (hi - lo) / 2.0 / state.lat, 0.0, 1.0)
        conf[got == 0] = np.nan
        h = host_overhead(state.self_rtts, n)
        done_rounds = [r for r, ps in enumerate(all_rounds) if all(state.pair_done(a, b) for a, b in ps)]
        m = dict(meta, complete=missing == 0, missing_pairs=missing, rounds_done=done_rounds,
                 schedule=schedule, unreachable=unreachable, dead=dead, errors=errors[:50],
                 elapsed_s=round(time.monotonic() - t_start, 3))
        if phases:
            m["phases_s"] = {k: round(v, 3) for k, v in phases.items()}
        if state.samples:
            m.update(latency_p10_ci_us={"low": _matrix(lo), "high": _matrix(hi)}, confidence=_matrix(conf, 3),
                     samples_received=got.tolist())
        if np.isfinite(h).any():
            m["host_overhead_us"] = [None if not np.isfinite(v) else round(float(v), 2) for v in h]
        if aborted:
            m["aborted"] = aborted[0]
        probe = state.to_probe(m)
        if measured_uplinks:
            probe.uplinks = list(measured_uplinks)
        if checkpoint is not None:
            probe.save(checkpoint)
        return probe

    if not lat_todo and not bw_todo:
        report("done", 0, 0, "nothing left to measure")
        if journal is not None:
            journal.close(remove=True)
        return write(True)

    needed = sorted({h for p in lat_todo + bw_todo for h in p})
    report("connect", 0, len(needed))
    connected = [0]

    def on_done(i, err):
        connected[0] += 1
        report("connect", connected[0], len(needed), err or "")

    pair_time = per_pair_seconds(max_count or count, interval, bandwidth, bw_seconds)
    deadline = len(all_rounds) * (pair_time + 2 * timeout) * 3 + 600.0  # hard cap; heartbeats do the rest
    if connect is None:
        from .ssh import SSHOptions, start_agents

        opts = ssh if ssh is not None else SSHOptions()

        def connect(ents, k, dl, cb):
            return start_agents(ents, opts, k, dl, on_done=cb, hb_timeout=hb_timeout)

    from .session import Fleet

    fleet = None
    # One thread per SSH transport (paramiko): with hundreds of hosts a thread
    # that wakes for I/O waits up to the switch interval for the GIL at every
    # wake-up (the "convoy effect"), which made one heartbeat pass over 256
    # agents take ~22 s (measured) -- past the agents' 20 s timeout.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, 0.0005))
    try:
        sub = [entries[i] for i in needed]
        t_phase = time.monotonic()
        got, failed = connect(sub, key, deadline, lambda k, err: on_done(needed[k], err))
        phases["connect"] = time.monotonic() - t_phase
        t_phase = time.monotonic()
        sessions = {needed[k]: s for k, s in got.items()}
        for k, why in failed.items():
            unreachable[entries[needed[k]].name] = why
        for i, s in sessions.items():
            state.addresses[i] = s.info.get("addr") or state.addresses[i]
            if journal is not None and state.addresses[i]:
                journal.address(i, state.addresses[i])
            why = method_unavailable(method, s.info)
            if why:
                unreachable[entries[i].name] = f"{entries[i].name}: --method {method}: {why}"
        bad = {i for i in needed if entries[i].name in unreachable}
        for i in bad & sessions.keys():
            sessions.pop(i).close()
        fleet = Fleet(sessions, silence=reply_timeout)

        def gone(i):
            return i in bad or i in fleet.lost

        def note_lost():
            for i, why in fleet.lost.items():
                if entries[i].name not in dead and entries[i].name not in unreachable:
                    dead[entries[i].name] = why
            if sessions and not fleet.live():
                aborted.append(f"lost contact with all {len(sessions)} connected hosts "
                               f"(a network partition or the controller's own link?); first: "
                               f"{next(iter(fleet.lost.values()))}")
            elif len(fleet.live()) < 2 and len(sessions) >= 2 and not aborted:
                aborted.append(f"fewer than 2 hosts left ({len(fleet.lost)} of {len(sessions)} lost)")
            return bool(aborted)

        def flush():
            if journal is not None:
                t = time.monotonic()
                journal.flush()
                phases["journal"] = phases.get("journal", 0.0) + time.monotonic() - t

        # ---- latency
        if lat_todo and method == "udp":
            # stage 0: `passes` interleaved passes of ceil(count / passes) samples;
            # stage j >= 1 (adaptive): the unstable pairs get as many samples again as
            # they have (doubling), capped by max_count, in passes of the same size.
            per_pass = -(-count // passes)
            budget = max(max_count or count, per_pass * passes)
            pending = [p for p in lat_todo if not gone(p[0]) and not gone(p[1])]
            taken = {p: 0 for p in pending}
            stage, sub = 0, 0
            while pending and not aborted:
                have = min(taken[p] for p in pending)
                m = passes if stage == 0 else max(1, min(have, budget - have) // per_pass)
                rounds = []
                for j in range(m):
                    rounds += pack_rounds(pending, n, shift=sub + j)
                sub += m
                t0 = time.monotonic()
                report("round", stage, stage + 1,
                       f"pass {stage + 1}: {len(pending)} pairs, {m} x {len(rounds) // m} rounds")

                def on_rows(src, dst, sent, rtts):
                    state.add_latency(src, dst, sent, rtts)
                    if journal is not None:
                        journal.latency(src, dst, sent, rtts)

                res = run_scheduled(fleet, rounds, per_pass, interval, timeout, reply_timeout, on_rows, flush,
                                    self_ping=self_ping and stage == 0, stamps=kernel_stamps)
                errors.extend(res["errors"])
                for p in pending:
                    taken[p] += m * per_pass
                schedule.append({"pass": stage, "passes": m, "rounds": len(rounds), "pairs": len(pending),
                                 "count": per_pass, "seconds": round(time.monotonic() - t0, 3),
                                 "slot_s": res["slot_s"]})
                flush()
                if note_lost():
                    break
                if after_round is not None:
                    after_round(stage, pending)
                stage += 1
                pending = [p for p in pending if not gone(p[0]) and not gone(p[1])
                           and taken[p] + per_pass <= budget and not all(
                               is_stable(state.samples.get(d, []), tol) for d in (p, p[::-1]))]
        elif lat_todo:
            rounds = [(r, [p for p in ps if p in set(lat_todo)]) for r, ps in enumerate(all_rounds)]
            rounds = [(r, ps) for r, ps in rounds if ps]
            for k, (r, pairs) in enumerate(rounds):
                pairs = [p for p in pairs if not gone(p[0]) and not gone(p[1])]
                if not pairs:
                    continue
                report("round", k, len(rounds), f"round {r + 1}/{len(all_rounds)}")
                t0 = time.monotonic()
                lat = run_latency(pairs, fleet, method, r, count, interval, timeout, reply_timeout,
                                  stamps=kernel_stamps)
                measured = []
                for (src, dst), st in lat.items():
                    if isinstance(st, str):
                        errors.append(st)
                    elif st is not None:
                        state.add_latency(src, dst, st[0], st[1])
                        if journal is not None:
                            journal.latency(src, dst, st[0], st[1])
                for a, b in pairs:
                    if state.lat_done(a, b):
                        measured.append([a, b])
                schedule.append({"round": r, "pairs": measured, "seconds": round(time.monotonic() - t0, 3)})
                flush()
                if note_lost():
                    break
                if after_round is not None:
                    after_round(r, pairs)

        # ---- bandwidth, round by round
        if bw_todo and not aborted:
            todo = set(bw_todo)
            rounds = [(r, [p for p in ps if p in todo]) for r, ps in enumerate(all_rounds)]
            rounds = [(r, ps) for r, ps in rounds if ps]
            for k, (r, pairs) in enumerate(rounds):
                pairs = [p for p in pairs if not gone(p[0]) and not gone(p[1])]
                if not pairs:
                    continue
                report("round", k, len(rounds), f"bandwidth round {r + 1}/{len(all_rounds)}")
                t0 = time.monotonic()
                bw, tools = run_bandwidth(pairs, fleet, bw_tool, bw_seconds, streams, reply_timeout)
                measured = []
                for (src, dst), v in bw.items():
                    if isinstance(v, str):
                        errors.append(v)
                    elif v is not None:
                        state.bw[src, dst] = v
                        if journal is not None:
                            journal.bandwidth(src, dst, v)
                for a, b in pairs:
                    if state.bw_done(a, b):
                        measured.append([a, b])
                schedule.append({"round": r, "bandwidth_pairs": measured, "seconds": round(time.monotonic() - t0, 3),
                                 "bw_tools": sorted(set(tools.values()))})
                flush()
                if note_lost():
                    break
                if after_round is not None:
                    after_round(r, pairs)
        if uplinks and fleet is not None and not aborted:
            report("uplinks", 0, 1, "shared uplinks")
            _probe_uplinks(state, fleet, bw_seconds, reply_timeout, meta, errors, measured_uplinks)
            report("uplinks", 1, 1, "shared uplinks")
        if fleet is not None:
            note_lost()
        phases["measure"] = time.monotonic() - t_phase
    except BaseException:
        # interrupted (Ctrl-C, an error): keep what was measured in the probe file
        if checkpoint is not None:
            try:
                write(False)
                journal.close(remove=True)
            except Exception:
                pass  # the journal still has it
        raise
    finally:
        sys.setswitchinterval(switch)
        t = time.monotonic()
        if fleet is not None:
            phases["heartbeat_pass_max"] = fleet.beat_max_s
            fleet.close()
            phases["close"] = time.monotonic() - t
        else:
            for s in locals().get("sessions", {}).values():
                s.close()
        if journal is not None:
            journal.flush()
    t = time.monotonic()
    probe = write(True)
    if journal is not None:
        journal.close(remove=True)
    phases["write"] = time.monotonic() - t
    probe.meta["phases_s"] = {k: round(v, 3) for k, v in phases.items()}
    report("done", 1, 1)
    return probe


def _probe_uplinks(state, fleet, seconds, reply_timeout, meta, errors, out) -> None:
    """The shared-uplink phase (:mod:`probes.uplinks`) over the fleet's live agents."""
    from .uplinks import infer_groups, measure_uplinks

    keep = sorted(fleet.live())
    if len(keep) < 4:
        meta["uplinks"] = {"skipped": f"only {len(keep)} hosts reachable"}
        return
    t0 = time.monotonic()
    ix = np.ix_(keep, keep)
    state.finish()  # the latency matrix from the samples so far (it is otherwise built at the end)
    groups, how = infer_groups(state.lat[ix], bandwidth=None if state.bw is None else state.bw[ix])
    groups = [[keep[k] for k in g] for g in groups]
    if len(groups) < 2:
        meta["uplinks"] = {"groups": how, "n_groups": len(groups),
                           "skipped": "no groups found: nothing crosses a group boundary"}
        errors.append(f"uplinks: {how} found no groups of hosts, so no shared uplink was measured "
                      "(the groups come from the latency or the pair bandwidths, whichever separates better)")
        return
    addresses = {i: fleet.sessions[i].info.get("addr") or state.addresses[i] for i in keep}

    def stage(requests, timeout):
        return _stage(fleet, requests, time.monotonic() + timeout)

    out.extend(measure_uplinks(stage, addresses, groups, seconds, reply_timeout=reply_timeout, errors=errors))
    meta["uplinks"] = {"groups": how, "n_groups": len(groups), "seconds": seconds, "tool": "agent",
                       "elapsed_s": round(time.monotonic() - t0, 3)}
