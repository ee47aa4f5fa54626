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
   for the options given (latency and/or bandwidth); without it a journal that
   holds measurements (an interrupted probe's) is refused, never dropped.
5. Agents exit when the probe ends, when their SSH channel closes, or when
   they hear nothing (not even a heartbeat) for ``hb_timeout`` s.

Wall time is about ``rounds x count x interval`` (+ ``rounds x 2 x
bw_seconds`` with bandwidth) plus connection setup;
``benchmarks/probe_time.py`` measures the ratio.
"""

from __future__ import annotations

import itertools
import secrets
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from plink.errors import OptionError, PlinkError, ProbeFileError
from plink.data.hostlist import HostEntry, parse_hostlist, read_hostlist
from plink.data.probefile import Host, ProbeData, new_meta

from .journal import Journal, journal_holds, journal_path, read_journal
from .methods import BW_TOOLS, LATENCY_METHODS, _stage, method_unavailable, run_bandwidth, run_latency, run_scheduled
from .rounds import pack_rounds, round_robin
from .sampling import host_overhead, is_stable, p10_interval, quantile_sorted


@dataclass(frozen=True)
class ProgressEvent:
    """What a progress callback receives."""

    phase: str  # "connect", "round", "uplinks", "done"
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
        dup = next(n for i, n in enumerate(names) if n in names[:i])
        same = [e.ssh_target for e in out if e.name == dup]
        raise PlinkError(f"duplicate host name {dup!r} in the host list ({', '.join(same[:3])}); hosts that "
                         "differ only by SSH port share one address, which probes cannot tell apart: give "
                         "each a name of its own (a Host alias in an SSH config, --ssh-config)")
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
        self.left_out: list[str] = []  # hosts of a resumed file that the host list leaves out
        # what a resumed file measured beyond the matrices (kept where this run measures nothing new):
        # the faster direction of each pair, per-pair meta matrices, per-host overheads, the uplink test
        self.old_best: np.ndarray | None = None
        self.old_pair_meta: dict[str, np.ndarray] = {}
        self.old_overhead: np.ndarray | None = None
        self.old_uplinks: list = []

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
        pos = {h: i for i, h in enumerate(old.names)}
        if not all(h in pos for h in names):  # a host the file does not have: another probe
            new = next(h for h in names if h not in pos)
            raise ProbeFileError(
                f"cannot resume from {path}: its hosts differ from the host list ({new} is not in it; a host "
                "list may leave hosts of the file out, not add any)"
            )
        if old.meta.get("method") not in (None, method):
            raise ProbeFileError(f"cannot resume from {path}: it was probed with --method {old.meta.get('method')}")
        # the file's hosts the list leaves out (e.g. one that died) are dropped with their pairs
        idx = np.array([pos[h] for h in names], dtype=np.int64)
        sub = np.ix_(idx, idx)
        kept = set(names)
        self.left_out = [h for h in old.names if h not in kept]
        self.old_meta = dict(old.meta)
        self.lat = old.latency[sub].copy()
        np.fill_diagonal(self.lat, np.nan)
        for attr, m in (("med", old.latency_median), ("p90", old.latency_p90)):
            if m is not None:
                setattr(self, attr, m[sub].copy())
        if old.bandwidth is not None:
            self.bw = old.bandwidth[sub].copy()
            self.had_bw = True
        loss = _meta_matrix(old.meta.get("loss"), old.n)
        if loss is not None:
            self.loss = loss[sub]
        self.addresses = [old.hosts[i].address for i in idx]
        if old.latency_best is not None:
            self.old_best = old.latency_best[sub].copy()
        for key, m in (("low", (old.meta.get("latency_p10_ci_us") or {}).get("low")),
                       ("high", (old.meta.get("latency_p10_ci_us") or {}).get("high")),
                       ("confidence", old.meta.get("confidence")), ("samples_received", old.meta.get("samples_received"))):
            m = _meta_matrix(m, old.n)
            if m is not None:
                self.old_pair_meta[key] = m[sub]
        oh = old.meta.get("host_overhead_us")
        if isinstance(oh, list) and len(oh) == old.n:
            self.old_overhead = np.array([np.nan if v is None else v for v in oh], dtype=float)[idx]
        where = {int(i): k for k, i in enumerate(idx)}
        for u in old.uplinks or ():  # an uplink whose hosts are all kept, in the new host indices
            if all(h in where for h in u.hosts):
                self.old_uplinks.append(type(u)(tuple(where[h] for h in u.hosts), u.up_bps, u.down_bps, dict(u.extra)))

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

    def to_probe(self, meta: dict, fresh: np.ndarray) -> ProbeData:
        """The probe so far (``fresh``: :meth:`fresh`)."""
        hosts = [Host(e.name, self.addresses[i], e.ssh_target) for i, e in enumerate(self.entries)]
        loss = [[None if not np.isfinite(v) else round(float(v), 4) for v in row] for row in self.loss]
        meta = dict(meta, loss=loss)
        bw = self.bw if (self.want_bw or self.had_bw) else None
        best = None
        if self.old_best is not None:  # the file's faster directions where this run did not measure the pair
            best = np.fmin(self.lat, self.lat.T)
            keep = np.isfinite(self.old_best) & ~fresh
            best[keep] = self.old_best[keep]
        return ProbeData(
            hosts=hosts, latency=self.lat.copy(), latency_median=self.med.copy(), latency_p90=self.p90.copy(),
            bandwidth=None if bw is None else bw.copy(), meta=meta, latency_best=best,
        )

    def fresh(self) -> np.ndarray:
        """``(N, N)`` bool: the pairs this run has samples of (either direction)."""
        f = np.zeros((self.n, self.n), dtype=bool)
        for (s, d), rtts in self.samples.items():
            if rtts:
                f[s, d] = f[d, s] = True
        return f


def _meta_matrix(rows, n: int) -> np.ndarray | None:
    """An ``(n, n)`` matrix kept in a probe file's meta (``null`` = NaN), or None when ``rows`` is not
    one (an older file, or another size): what :func:`_matrix` wrote, read back."""
    if not (isinstance(rows, list) and len(rows) == n and all(isinstance(r, list) and len(r) == n for r in rows)):
        return None
    return np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=float)


def _matrix(m: np.ndarray, digits: int = 2) -> list:
    return [[None if not np.isfinite(v) else round(float(v), digits) for v in row] for row in m]


@dataclass(frozen=True)
class _Options:
    """The measurement options of one probe run (see :func:`probe_hosts`)."""

    method: str
    count: int
    interval: float
    timeout: float
    bandwidth: bool
    bw_seconds: float
    streams: int
    bw_tool: str
    reply_timeout: float
    passes: int
    max_count: int | None
    tol: float
    self_ping: bool
    uplinks: bool
    kernel_stamps: bool
    uplink_passes: int = 3

    def check(self) -> None:
        """Raise :class:`PlinkError` naming the first option out of range."""
        if self.method not in LATENCY_METHODS:
            raise PlinkError(f"unknown method {self.method!r} (use {', '.join(LATENCY_METHODS)})")
        if self.bw_tool not in BW_TOOLS:
            raise PlinkError(f"unknown bandwidth tool {self.bw_tool!r} (use {', '.join(BW_TOOLS)})")
        if self.count < 1 or self.count > 100000:
            raise OptionError("--count must be 1..100000")
        if self.max_count is not None and not self.count <= self.max_count <= 100000:
            raise OptionError("--max-count must be >= --count and <= 100000")
        if not 1 <= self.passes <= self.count:
            raise OptionError("--passes must be 1..--count")
        if not 0 < self.interval <= 10 or not 0 < self.timeout <= 60:
            raise OptionError("--interval must be in (0, 10] s and the reply timeout in (0, 60] s")
        if not 0 < self.reply_timeout <= 600:
            raise OptionError("--timeout must be in (0, 600] s")
        if (self.bandwidth or self.uplinks) and (not 0 < self.bw_seconds <= 600 or not 1 <= self.streams <= 64):
            raise OptionError("--bw-seconds must be in (0, 600] and --streams 1..64")
        if not 1 <= self.uplink_passes <= 20:
            raise OptionError("--uplink-passes must be 1..20")
        if not 0 < self.tol < float("inf"):  # (NaN too: it went on to connect with a tolerance no pair can meet)
            raise OptionError(f"--tol must be a fraction of the pair's p10 above 0, got {self.tol:g}")


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
    uplink_passes: int = 3,
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
    (:mod:`probes.uplinks`, ``uplink_passes`` interleaved tests of ``bw_seconds``
    per group, their spread kept as the test's noise).  ``kernel_stamps``
    (``udp``): time each echo from the kernel's receive timestamps and take
    the reflector's own turnaround out (TWAMP-style, RFC 5357), so a busy
    host's late wake-ups do not count as network latency; False keeps the
    user-space times (for comparison).

    Complexity: ``R = N - 1`` (even N) or ``N`` (odd N) rounds of ``N/2``
    concurrent pairs per pass, so O(N) wall time, O(N^2) measurements and
    O(N) controller work per round (the journal appends only new pairs).
    """
    options = _Options(method=method, count=count, interval=interval, timeout=timeout, bandwidth=bandwidth,
                       bw_seconds=bw_seconds, streams=streams, bw_tool=bw_tool, reply_timeout=reply_timeout,
                       passes=passes, max_count=max_count, tol=tol, self_ping=self_ping, uplinks=uplinks,
                       kernel_stamps=kernel_stamps, uplink_passes=uplink_passes)
    options.check()
    entries = _as_entries(hosts)
    if len(entries) < 2:
        raise PlinkError("need at least 2 hosts to probe")
    if method != "udp":  # the controller runs the rounds: one pass, no adaptive sampling
        options = replace(options, passes=1, max_count=None)
    run = _Run(entries, options, checkpoint, progress, after_round)
    run.load_previous(resume)
    run.plan(resume)
    if not run.lat_todo and not run.bw_todo and not run._uplinks_wanted():
        return run.nothing_to_measure()
    run.measure(connect if connect is not None else _ssh_connect(ssh, hb_timeout))
    return run.finish()


def measured_anything(probe: ProbeData) -> bool:
    """Whether ``probe`` holds one measured pair at least (a latency or a bandwidth off the diagonal):
    one that reached no host is not written over the output file."""
    from plink.data.probefile import measured_pairs

    return bool(measured_pairs(probe).any() or measured_pairs(probe, bandwidth=True).any())


class _Run:
    """One run of :func:`probe_hosts`, phase by phase.

    It holds what the phases share: the hosts and options, what is known per
    direction (:class:`_State`), the checkpoint file and its journal, the
    agents (``sessions`` and their :class:`probes.session.Fleet`), and what
    goes into the meta: ``unreachable`` / ``dead`` hosts, ``errors``, the
    ``schedule``, why the probe was ``aborted`` and the wall time of each
    phase.  The phases are, in order: :meth:`load_previous`, :meth:`plan`,
    then :meth:`nothing_to_measure` or :meth:`measure` (start the agents,
    latency, bandwidth, uplinks) and :meth:`finish`.
    """

    def __init__(self, entries: list[HostEntry], options: _Options, checkpoint: str | Path | None,
                 progress: Callable[[ProgressEvent], None] | None, after_round: Callable[[int, list], None] | None):
        self.entries, self.n, self.opt = entries, len(entries), options
        self.progress, self.after_round = progress, after_round
        self.state = _State(entries, options.bandwidth)
        self.checkpoint = Path(checkpoint) if checkpoint is not None else None
        if self.checkpoint is not None and not self.checkpoint.absolute().parent.is_dir():
            raise PlinkError(f"cannot write {self.checkpoint}: directory {self.checkpoint.parent} does not exist")
        self.jpath = journal_path(self.checkpoint) if self.checkpoint is not None else None
        self.journal: Journal | None = None
        self.unreachable: dict[str, str] = {}
        self.dead: dict[str, str] = {}
        self.errors: list[str] = []
        self.schedule: list[dict] = []
        self.aborted: list[str] = []
        self.measured_uplinks: list = []
        self.phases: dict[str, float] = {}  # wall seconds per phase (meta["phases_s"])
        self.sessions: dict = {}  # host index -> agent session
        self.bad: set[int] = set()  # hosts connected but unusable (unreachable)
        self.fleet = None

    # -- setup -------------------------------------------------------------
    def load_previous(self, resume: bool) -> None:
        """With ``resume``, what the probe file and its journal already hold;
        otherwise remove an old journal (a fresh probe: it is not ours)."""
        if resume:
            if self.checkpoint is None:
                raise PlinkError("--resume needs the output file (-o) of the interrupted probe")
            if self.checkpoint.exists():
                self.state.load(self.checkpoint, self.opt.method)
            if self.jpath.exists():
                self.state.replay(self.jpath, self.opt.method)
            if self.state.had_bw and not self.opt.bandwidth:
                missing = sum(1 for a, b in itertools.combinations(range(self.n), 2) if not self.state.bw_done(a, b))
                if missing:
                    raise PlinkError(f"cannot resume {self.checkpoint} without --bandwidth: it was probed with it and "
                                     f"{missing} of {self.n * (self.n - 1) // 2} pairs have no bandwidth yet "
                                     "(give the first run's --bandwidth options again)")
        elif self.jpath is not None and self.jpath.exists():
            holds = journal_holds(self.jpath)
            if holds == "measurements":  # an interrupted probe's: the user's, not ours to drop
                raise PlinkError(f"{self.jpath} holds what an interrupted probe measured: --resume continues that "
                                 "probe (the same host list and options); to start over, delete the journal")
            if holds == "other":
                raise PlinkError(f"{self.jpath} is not a plink probe journal, and plink probe keeps its journal "
                                 "there: move it away, or write the probe elsewhere (-o)")
            self.jpath.unlink()  # a header (and addresses) alone

    def plan(self, resume: bool) -> None:
        """The rounds, the pairs left to measure, the run's key, the meta and the journal."""
        self.all_rounds = round_robin(self.n)
        self.pairs_all = [p for r in self.all_rounds for p in r]
        self.lat_todo = [p for p in self.pairs_all if not self.state.lat_done(*p)]
        self.bw_todo = [p for p in self.pairs_all if self.opt.bandwidth and not self.state.bw_done(*p)]
        self.t_start = time.monotonic()
        self.key = secrets.token_hex(32)
        self.meta = self._new_meta(resume)
        if self.jpath is not None:
            self.journal = Journal(self.jpath, [e.name for e in self.entries], self.opt.method)

    def _new_meta(self, resume: bool) -> dict:
        """The run's part of the meta; on resume ``samples`` is the smaller of
        the file's and this run's count (a note says so when they differ)."""
        o = self.opt
        old_samples = self.state.old_meta.get("samples")
        samples_meta = o.count if not isinstance(old_samples, int) or not resume else min(old_samples, o.count)
        if resume and not self.lat_todo and isinstance(old_samples, int):
            samples_meta = old_samples  # nothing re-measured: the file's latency is as it was
        meta = new_meta(
            o.method, samples=samples_meta, interval_s=o.interval, statistic="p10", rounds=len(self.all_rounds),
            passes=o.passes, max_samples=o.max_count or o.count,
            bandwidth=({"tool": o.bw_tool, "seconds": o.bw_seconds, "streams": o.streams} if o.bandwidth
                       else self.state.old_meta.get("bandwidth")),
        )
        if self.state.left_out:
            meta["left_out"] = list(self.state.left_out)
        if resume and isinstance(old_samples, int) and self.lat_todo and old_samples != o.count:
            meta["samples_note"] = (f"pairs measured with {old_samples} (first run) and {o.count} (resume) samples; "
                                    "'samples' is the smaller")
        return meta

    def report(self, phase: str, k: int, total: int, msg: str = "") -> None:
        """Tell the progress callback, if any."""
        if self.progress is not None:
            self.progress(ProgressEvent(phase, k, total, msg, time.monotonic() - self.t_start))

    # -- the run -----------------------------------------------------------
    def nothing_to_measure(self) -> ProbeData:
        """Everything is known already (a resume): write the file as it is."""
        self.report("done", 0, 0, "nothing left to measure")
        if self.journal is not None:
            self.journal.close(remove=True)
        return self.write()

    def measure(self, connect: Callable) -> None:
        """Start the agents and measure; when interrupted (Ctrl-C, an error)
        the probe file keeps what was measured.  The agents are closed in
        any case."""
        needed = sorted({h for p in self.lat_todo + self.bw_todo for h in p})
        if self._uplinks_wanted():  # the uplink test loads every group's hosts at once: all of them
            needed = list(range(self.n))
        self.report("connect", 0, len(needed))
        # One thread per SSH transport (paramiko): with hundreds of hosts a thread
        # that wakes for I/O waits up to the switch interval for the GIL at every
        # wake-up (the "convoy effect"), which made one heartbeat pass over 256
        # agents take ~22 s (measured) -- past the agents' 20 s timeout.
        switch = sys.getswitchinterval()
        sys.setswitchinterval(min(switch, 0.0005))
        try:
            t = time.monotonic()
            got, failed = self._start_agents(connect, needed)
            self.phases["connect"] = time.monotonic() - t
            t = time.monotonic()
            self._admit(needed, got, failed)
            self._measure_phases()
            self.phases["measure"] = time.monotonic() - t
        except BaseException:
            self._save_partial()
            raise
        finally:
            sys.setswitchinterval(switch)
            self._close_agents()

    def _start_agents(self, connect: Callable, needed: list[int]) -> tuple[dict, dict]:
        """``connect`` the hosts in ``needed`` (each one reported as it is done);
        returns its ``(sessions, failures)``, keyed by position in ``needed``."""
        o = self.opt
        pair_time = per_pair_seconds(o.max_count or o.count, o.interval, o.bandwidth, o.bw_seconds)
        deadline = len(self.all_rounds) * (pair_time + 2 * o.timeout) * 3 + 600.0  # hard cap; heartbeats do the rest
        connected = 0

        def on_done(k, err):
            nonlocal connected
            connected += 1
            self.report("connect", connected, len(needed), err or "")

        return connect([self.entries[i] for i in needed], self.key, deadline, on_done)

    def _admit(self, needed: list[int], got: dict, failed: dict) -> None:
        """Take the started agents: note (and journal) their addresses, name
        the hosts that failed or cannot run the method unreachable (closing
        their sessions), and make the fleet of the others."""
        from .session import Fleet

        entries, method = self.entries, self.opt.method
        self.sessions = {needed[k]: s for k, s in got.items()}
        for k, why in failed.items():
            self.unreachable[entries[needed[k]].name] = why
        for i, s in self.sessions.items():
            self.state.addresses[i] = s.info.get("addr") or self.state.addresses[i]
            if self.journal is not None and self.state.addresses[i]:
                self.journal.address(i, self.state.addresses[i])
            why = method_unavailable(method, s.info)
            if why:
                self.unreachable[entries[i].name] = f"{entries[i].name}: --method {method}: {why}"
        self.bad = {i for i in needed if entries[i].name in self.unreachable}
        for i in self.bad & self.sessions.keys():
            self.sessions.pop(i).close()
        self.fleet = Fleet(self.sessions, silence=self.opt.reply_timeout)

    def _measure_phases(self) -> None:
        """Latency, bandwidth and uplinks, each only if asked for and the probe not aborted."""
        if self.lat_todo and self.opt.method == "udp":
            self._latency_passes()
        elif self.lat_todo:
            self._latency_rounds()
        if self.bw_todo and not self.aborted:
            self._bandwidth_rounds()
        if self._uplinks_wanted() and not self.aborted:
            self.report("uplinks", 0, 1, "shared uplinks")  # then each group's test, pass by pass (_uplinks)
            if not self._uplinks():  # no test ran: the stage is over all the same
                self.report("uplinks", 1, 1, "shared uplinks")
        self._note_lost()

    # -- latency and bandwidth ---------------------------------------------
    def _latency_passes(self) -> None:
        """``udp`` latency: the agents run their part of each pass's rounds on their own clocks.

        Stage 0: ``passes`` interleaved passes of ceil(count / passes) samples;
        stage j >= 1 (adaptive): the unstable pairs get as many samples again as
        they have (doubling), capped by max_count, in passes of the same size.
        """
        o = self.opt
        per_pass = -(-o.count // o.passes)
        budget = max(o.max_count or o.count, per_pass * o.passes)
        pending = [p for p in self.lat_todo if self._live(p)]
        taken = {p: 0 for p in pending}
        stage, sub = 0, 0
        while pending and not self.aborted:
            have = min(taken[p] for p in pending)
            m = o.passes if stage == 0 else max(1, min(have, budget - have) // per_pass)
            rounds = []
            for j in range(m):
                rounds += pack_rounds(pending, self.n, shift=sub + j)
            sub += m
            t0 = time.monotonic()
            msg = f"pass {stage + 1}: {len(pending)} pairs, {m} x {len(rounds) // m} rounds"
            self.report("round", 0, len(rounds), msg)  # then the rounds (the agents' slots) as results come back
            res = run_scheduled(self.fleet, rounds, per_pass, o.interval, o.timeout, o.reply_timeout,
                                self._add_latency, self._flush, self_ping=o.self_ping and stage == 0,
                                stamps=o.kernel_stamps,
                                on_slot=lambda done, total, msg=msg: self.report("round", min(done, len(rounds)),
                                                                                 len(rounds), msg))
            self.errors.extend(res["errors"])
            for p in pending:
                taken[p] += m * per_pass
            self.schedule.append({"pass": stage, "passes": m, "rounds": len(rounds), "pairs": len(pending),
                                  "count": per_pass, "seconds": round(time.monotonic() - t0, 3),
                                  "slot_s": res["slot_s"]})
            if self._round_done(stage, pending):
                break
            stage += 1
            pending = [p for p in pending if self._live(p) and taken[p] + per_pass <= budget
                       and not all(is_stable(self.state.samples.get(d, []), o.tol) for d in (p, p[::-1]))]

    def _live_rounds(self, todo, what: str):
        """``(round, its pairs between live hosts)`` of the rounds holding ``todo``, each reported
        as it starts (``what``: a word before "round" in the message); rounds with none are skipped."""
        rounds = self._rounds_of(todo)
        for k, (r, pairs) in enumerate(rounds):
            pairs = [p for p in pairs if self._live(p)]
            if pairs:
                self.report("round", k, len(rounds), f"{what}round {r + 1}/{len(self.all_rounds)}")
                yield r, pairs

    def _latency_rounds(self) -> None:
        """``fping`` / ``icmp`` latency, round by round from the controller."""
        o = self.opt
        for r, pairs in self._live_rounds(self.lat_todo, ""):
            t0 = time.monotonic()
            lat = run_latency(pairs, self.fleet, o.method, r, o.count, o.interval, o.timeout, o.reply_timeout,
                              stamps=o.kernel_stamps)
            for (src, dst), st in lat.items():
                if isinstance(st, str):
                    self.errors.append(st)
                elif st is not None:
                    self._add_latency(src, dst, st[0], st[1])
            measured = [[a, b] for a, b in pairs if self.state.lat_done(a, b)]
            self.schedule.append({"round": r, "pairs": measured, "seconds": round(time.monotonic() - t0, 3)})
            if self._round_done(r, pairs):
                break

    def _bandwidth_rounds(self) -> None:
        """Bandwidth, round by round from the controller."""
        o = self.opt
        for r, pairs in self._live_rounds(self.bw_todo, "bandwidth "):
            t0 = time.monotonic()
            bw, tools = run_bandwidth(pairs, self.fleet, o.bw_tool, o.bw_seconds, o.streams, o.reply_timeout)
            for (src, dst), v in bw.items():
                if isinstance(v, str):
                    self.errors.append(v)
                elif v is not None:
                    self.state.bw[src, dst] = v
                    if self.journal is not None:
                        self.journal.bandwidth(src, dst, v)
            measured = [[a, b] for a, b in pairs if self.state.bw_done(a, b)]
            self.schedule.append({"round": r, "bandwidth_pairs": measured,
                                  "seconds": round(time.monotonic() - t0, 3),
                                  "bw_tools": sorted(set(tools.values()))})
            if self._round_done(r, pairs):
                break

    def _uplinks_wanted(self) -> bool:
        """Whether this run tests the shared uplinks: when asked, unless the resumed file has them
        already (kept as they are: a resume measures what is missing, and a test over the hosts of the
        missing pairs only would replace whole racks' figures by a part's)."""
        return bool(self.opt.uplinks) and not self.state.old_uplinks

    def _uplinks(self) -> bool:
        """The shared-uplink phase (:mod:`probes.uplinks`) over the fleet's live agents; whether
        tests ran (each reported to the progress callback as it ends)."""
        from .uplinks import infer_groups, measure_uplinks

        state, fleet, seconds = self.state, self.fleet, self.opt.bw_seconds
        keep = sorted(fleet.live())
        if len(keep) < 4:
            self.meta["uplinks"] = {"skipped": f"only {len(keep)} hosts reachable"}
            return False
        t0 = time.monotonic()
        state.finish()  # the latency matrix from the samples so far (it is otherwise built at the end)
        # the groups of every host measured (as plink order will group them), hosts lost since
        # included: grouped over the survivors alone, a rack left with one host joined another rack's
        # test, which then measured no link of the groups priced; a lost host is only left out of its test
        from plink.structure.probegroups import placed_hosts

        placed = np.flatnonzero(placed_hosts(state.lat)).tolist()
        over = placed if set(keep) <= set(placed) else keep
        ix = np.ix_(over, over)
        groups, how = infer_groups(state.lat[ix], bandwidth=state.bw[ix])  # NaN where not measured
        live = set(keep)
        groups = [g for g in ([over[k] for k in g if over[k] in live] for g in groups) if g]
        if len(groups) < 2:
            self.meta["uplinks"] = {"groups": how, "n_groups": len(groups),
                                    "skipped": "no groups found: nothing crosses a group boundary"}
            self.errors.append(f"uplinks: {how} found no groups of hosts, so no shared uplink was measured "
                               "(the groups come from the latency or the pair bandwidths, whichever separates "
                               "better)")
            return False
        addresses = {i: fleet.sessions[i].info.get("addr") or state.addresses[i] for i in keep}

        def stage(requests, timeout):
            return _stage(fleet, requests, time.monotonic() + timeout)

        self.measured_uplinks.extend(measure_uplinks(stage, addresses, groups, seconds,
                                                     reply_timeout=self.opt.reply_timeout, errors=self.errors,
                                                     passes=self.opt.uplink_passes,
                                                     on_test=lambda k, total: self.report(
                                                         "uplinks", k, total,
                                                         f"shared uplinks: {len(groups)} groups x "
                                                         f"{self.opt.uplink_passes} passes")))
        self.meta["uplinks"] = {"groups": how, "n_groups": len(groups), "seconds": seconds, "tool": "agent",
                                "passes": self.opt.uplink_passes,
                                "elapsed_s": round(time.monotonic() - t0, 3)}
        return True

    def _rounds_of(self, todo: list) -> list[tuple[int, list]]:
        """The rounds ``(r, pairs)`` of the full schedule cut to the pairs in
        ``todo``, the empty ones left out."""
        todo = set(todo)
        rounds = [(r, [p for p in ps if p in todo]) for r, ps in enumerate(self.all_rounds)]
        return [(r, ps) for r, ps in rounds if ps]

    def _add_latency(self, src: int, dst: int, sent: int, rtts) -> None:
        """Keep a direction's samples, and journal them."""
        self.state.add_latency(src, dst, sent, rtts)
        if self.journal is not None:
            self.journal.latency(src, dst, sent, rtts)

    def _round_done(self, r: int, pairs: list) -> bool:
        """After a round (or pass): flush the journal, note lost hosts and call
        ``after_round``; True when the probe must stop (see :meth:`_note_lost`)."""
        self._flush()
        if self._note_lost():
            return True
        if self.after_round is not None:
            self.after_round(r, pairs)
        return False

    # -- failures ----------------------------------------------------------
    def _live(self, pair: tuple[int, int]) -> bool:
        """Neither host of ``pair`` is unreachable or lost."""
        return not self._gone(pair[0]) and not self._gone(pair[1])

    def _gone(self, i: int) -> bool:
        """Host ``i`` is unreachable or lost."""
        return i in self.bad or i in self.fleet.lost

    def _note_lost(self) -> bool:
        """Name the hosts the fleet lost dead; abort when every host is lost
        or fewer than 2 are left.  Returns whether the probe is aborted."""
        for i, why in self.fleet.lost.items():
            name = self.entries[i].name
            if name not in self.dead and name not in self.unreachable:
                self.dead[name] = why
        if self.sessions and not self.fleet.live():
            self.aborted.append(f"lost contact with all {len(self.sessions)} connected hosts "
                                f"(a network partition or the controller's own link?); first: "
                                f"{next(iter(self.fleet.lost.values()))}")
        elif len(self.fleet.live()) < 2 and len(self.sessions) >= 2 and not self.aborted:
            self.aborted.append(f"fewer than 2 hosts left ({len(self.fleet.lost)} of {len(self.sessions)} lost)")
        return bool(self.aborted)

    # -- the end -----------------------------------------------------------
    def _flush(self) -> None:
        """Flush the journal (the time it takes is the ``journal`` phase)."""
        if self.journal is not None:
            t = time.monotonic()
            self.journal.flush()
            self.phases["journal"] = self.phases.get("journal", 0.0) + time.monotonic() - t

    def _save_partial(self) -> None:
        """Interrupted: keep what was measured in the probe file."""
        if self.checkpoint is not None:
            try:
                self.write()
                self.journal.close(remove=True)
            except Exception:
                pass  # the journal still has it

    def _close_agents(self) -> None:
        """Close the fleet (the agents exit), or the sessions if there is no
        fleet yet, and flush the journal."""
        t = time.monotonic()
        if self.fleet is not None:
            self.phases["heartbeat_pass_max"] = self.fleet.beat_max_s
            self.fleet.close()
            self.phases["close"] = time.monotonic() - t
        else:
            for s in self.sessions.values():
                s.close()
        if self.journal is not None:
            self.journal.flush()

    def finish(self) -> ProbeData:
        """Write the probe file, remove the journal and report done."""
        t = time.monotonic()
        probe = self.write()
        if self.journal is not None:
            self.journal.close(remove=True)
        self.phases["write"] = time.monotonic() - t
        probe.meta["phases_s"] = {k: round(v, 3) for k, v in self.phases.items()}
        self.report("done", 1, 1)
        return probe

    def write(self) -> ProbeData:
        """The probe so far, with its meta; saved to the checkpoint file if there is one."""
        state, n = self.state, self.n
        lo, hi, got = state.finish()
        missing = sum(1 for a, b in self.pairs_all if not state.pair_done(a, b))
        with np.errstate(invalid="ignore", divide="ignore"):
            conf = np.clip(1.0 - (hi - lo) / 2.0 / state.lat, 0.0, 1.0)
        conf[got == 0] = np.nan
        h = host_overhead(state.self_rtts, n)
        done_rounds = [r for r, ps in enumerate(self.all_rounds) if all(state.pair_done(a, b) for a, b in ps)]
        m = dict(self.meta, complete=missing == 0, missing_pairs=missing, rounds_done=done_rounds,
                 schedule=self.schedule, unreachable=self.unreachable, dead=self.dead, errors=self.errors[:50],
                 elapsed_s=round(time.monotonic() - self.t_start, 3))
        if self.phases:
            m["phases_s"] = {k: round(v, 3) for k, v in self.phases.items()}
        old = state.old_pair_meta
        fresh = state.fresh()
        if old:  # a resume: the file's figures for the pairs this run did not measure
            stale = ~fresh
            for cur, key in ((lo, "low"), (hi, "high"), (conf, "confidence")):
                if key in old:
                    cur[stale] = old[key][stale]
            if "samples_received" in old:
                got = np.where(stale & np.isfinite(old["samples_received"]), old["samples_received"], got).astype(int)
        if state.samples or old:
            m.update(latency_p10_ci_us={"low": _matrix(lo), "high": _matrix(hi)}, confidence=_matrix(conf, 3),
                     samples_received=got.tolist())
        if state.old_overhead is not None:
            h = np.where(np.isfinite(h), h, state.old_overhead)
        if np.isfinite(h).any():
            m["host_overhead_us"] = [None if not np.isfinite(v) else round(float(v), 2) for v in h]
        if self.aborted:
            m["aborted"] = self.aborted[0]
        probe = state.to_probe(m, fresh)
        if self.measured_uplinks:
            probe.uplinks = list(self.measured_uplinks)
        elif state.old_uplinks:  # a resume keeps the file's uplink test (not run again, see _uplinks_wanted)
            probe.uplinks = list(state.old_uplinks)
            if "uplinks" not in m or "skipped" in (m.get("uplinks") or {}):
                probe.meta["uplinks"] = dict(state.old_meta.get("uplinks") or {}, kept="from the resumed file")
        if self.checkpoint is not None and measured_anything(probe):
            probe.save(self.checkpoint)  # (a probe that measured nothing leaves the file as it was)
        return probe


def _ssh_connect(ssh, hb_timeout: float) -> Callable:
    """The default transport of :func:`probe_hosts`: start the agents over
    SSH with ``ssh`` (a :class:`probes.ssh.SSHOptions`, default options if None)."""
    from .ssh import SSHOptions, start_agents

    opts = ssh if ssh is not None else SSHOptions()

    def connect(ents, k, dl, cb):
        return start_agents(ents, opts, k, dl, on_done=cb, hb_timeout=hb_timeout)

    return connect
