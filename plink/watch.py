"""Periodic re-probing for cron: ``plink watch``.

One run: take the state directory's lock, probe (an injectable callable, so
tests and ``--probe-file`` can stand in for the network), compare with the
last probe (the drift report), and write a new rank order only when it is
predicted to be at least ``min_gain`` cheaper than the current order, both
costed on the *new* probe (hysteresis: the order does not flap on noise).
With ``window = K > 1`` both are costed (and the new order searched) on the
element-wise median of the new probe and the K-1 previous ones instead,
which damps measurement noise further.

The state directory::

    DIR/lock                    pid and state of the run holding / last holding the lock
    DIR/state.json              the current order and bookkeeping (the commit point)
    DIR/order.json, hosts.txt   the current order (JSON order file, plain), for launchers
    DIR/history/<UTC time>/     probe.json and status.json of every run, order.json when it changed

Every file is written atomically (temp file + rename); a run's history
directory is built under a temporary name and renamed into place.  The
state file is written last, so a run killed at any point leaves the previous
state intact; the derived files (order.json, hosts.txt, ``--emit`` files)
are re-synchronised from the state on every run.

Locking: ``fcntl.flock`` on ``DIR/lock``.  A second run while one holds it
raises :class:`WatchBusy` (exit code 75) and touches nothing.  The kernel
drops the flock when its holder dies, so a lock file that still says
``running`` when we get the flock was left by a killed run: it is taken
over (and its temporary files are removed), and the status says so.

Exit codes of ``plink watch``: 0 the order was kept, 4 a new order was
written (first run, host list changed, or gain >= min_gain), 75 another run
holds the lock (EX_TEMPFAIL: this run did nothing), 1 an error (nothing
changed), 2 a usage error.

An incomplete probe (unreachable hosts: ``meta["complete"] is False``) never
replaces an order that covers the same hosts: the run keeps the order and
says which hosts were missing.  When the host list changed as well, no order
fits: the run is an error (exit 1, nothing written) naming the hosts added or
removed and the unreachable ones.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import re
import shutil
import socket
import stat
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from plink.errors import OptionError, PlinkError, ProbeFileError
from plink.data.fileio import atomic_write_text, is_stdout, missing_directory
from plink.data.probefile import ProbeData, load_json
from plink.solvers.resolution import UNRESOLVED, resolution_for, resolved

STATE_FORMAT = "plink-watch"
STATE_VERSION = 1
DEFAULT_MIN_GAIN = 0.05
DEFAULT_KEEP = 500

EXIT_KEPT = 0
EXIT_CHANGED = 4
EXIT_BUSY = 75  #: EX_TEMPFAIL (sysexits.h): try again later

_RUN_DIR = re.compile(r"^\d{8}T\d{6}Z(-\d+)?$")


class WatchBusy(PlinkError):
    """Another ``plink watch`` run holds the state directory's lock."""

    exit_code = EXIT_BUSY


class StateError(PlinkError):
    """The state directory cannot be used (corrupt, not writable, ...)."""


class StateCorrupt(StateError):
    """The state file is damaged (``--reset`` may move it aside)."""


# ---------------------------------------------------------------------------
# the lock


@dataclass
class LockInfo:
    """What the lock file said when we took it."""

    stale_pid: int | None = None  #: pid of a killed run whose lock we took over
    stale_since: str | None = None
    cleaned: list[str] = field(default_factory=list)


class StateLock:
    """An exclusive, non-blocking ``flock`` on ``DIR/lock`` holding our pid.

    The file records ``{"pid", "host", "started", "state": "running"|"done"}``.
    Usable as a context manager.  Taking the lock is O(1).
    """

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        self.path = self.dir / "lock"
        self.fd: int | None = None
        self.info = LockInfo()

    def _read(self, fd: int) -> dict:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            raw = os.read(fd, 4096).decode("utf-8", "replace")
            doc = json.loads(raw) if raw.strip() else {}
            return doc if isinstance(doc, dict) else {}
        except (OSError, ValueError, RecursionError):
            return {}

    def _write(self, doc: dict) -> None:
        assert self.fd is not None
        data = (json.dumps(doc) + "\n").encode()
        os.lseek(self.fd, 0, os.SEEK_SET)
        os.ftruncate(self.fd, 0)
        os.write(self.fd, data)
        os.fsync(self.fd)

    def acquire(self) -> LockInfo:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StateError(f"cannot create the lock file {self.path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            prev = self._read(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                if prev.get("state") != "running":  # the holder is not a watch run: it would have written the file
                    last = "the file names the last run, finished" if prev else "no watch run has written the file"
                    raise WatchBusy(f"another process holds {self.path} (not a running plink watch: {last}; e.g. a "
                                    "flock or a backup): this run did nothing") from None
                who = f"pid {prev.get('pid', '?')}"
                if prev.get("host") and prev.get("host") != socket.gethostname():
                    who += f" on {prev['host']}"
                since = f", started {prev['started']}" if prev.get("started") else ""
                raise WatchBusy(
                    f"another plink watch ({who}{since}) holds {self.path}: this run did nothing"
                ) from None
            raise StateError(f"cannot lock {self.path}: {exc.strerror or exc}") from None
        self.fd = fd
        prev = self._read(fd)
        if prev.get("state") == "running":
            # we got the flock, so its holder is gone: a killed run
            pid = prev.get("pid")
            self.info.stale_pid = int(pid) if isinstance(pid, int) else -1
            self.info.stale_since = str(prev.get("started", "?"))
        try:
            self._write({"pid": os.getpid(), "host": socket.gethostname(), "started": _iso(_utcnow()), "state": "running"})
        except OSError as exc:
            self.release()
            raise StateError(f"cannot write the lock file {self.path}: {exc.strerror or exc}") from None
        return self.info

    def release(self, finished: bool = True) -> None:
        if self.fd is None:
            return
        try:
            if finished:
                doc = self._read(self.fd)
                doc["state"] = "done"
                doc["finished"] = _iso(_utcnow())
                self._write(doc)
        except OSError:
            pass
        finally:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None

    def __enter__(self) -> LockInfo:
        return self.acquire()

    def __exit__(self, exc_type, exc, tb) -> None:
        self.release(finished=True)


# ---------------------------------------------------------------------------
# drift


def drift_report(old: ProbeData, new: ProbeData, top: int = 5) -> dict:
    """Which links changed most between two probes of (mostly) the same hosts.

    Compares latency (and bandwidth when both probes have it) on the pairs
    measured in both, by ``|log(new/old)|``.  Returns the ``top`` links that
    changed by :data:`DRIFT_MIN` or more, with their old and new values and
    relative change, the median relative change, and the hosts added or
    removed.  O(N^2 log N).
    """
    old_names, new_names = old.names, new.names
    common = [n for n in new_names if n in set(old_names)]
    rep: dict[str, Any] = {
        "hosts_added": [n for n in new_names if n not in set(old_names)],
        "hosts_removed": [n for n in old_names if n not in set(new_names)],
        "common_hosts": len(common),
        "pairs_compared": 0,
        "median_change": None,
        "links": [],
    }
    if len(common) < 2:
        return rep
    oi = [old.index(n) for n in common]
    ni = [new.index(n) for n in common]

    def compare(a: np.ndarray, b: np.ndarray, unit: str) -> tuple[list[dict], np.ndarray]:
        a = a[np.ix_(oi, oi)]
        b = b[np.ix_(ni, ni)]
        iu = np.triu_indices(len(common), 1)
        av, bv = a[iu], b[iu]
        ok = np.isfinite(av) & np.isfinite(bv) & (av > 0) & (bv > 0)
        ratio = np.full(av.shape, np.nan)
        ratio[ok] = bv[ok] / av[ok]
        score = np.where(ok, np.abs(np.log(np.where(ok, ratio, 1.0))), -1.0)
        links = []
        for k in np.argsort(-score, kind="stable")[:top]:
            if score[k] < 0 or abs(ratio[k] - 1.0) < DRIFT_MIN:  # (an unchanged link read "+0%")
                break
            links.append({
                "a": common[iu[0][k]], "b": common[iu[1][k]], "metric": unit,
                "old": float(f"{av[k]:.4g}"), "new": float(f"{bv[k]:.4g}"),  # (3 decimals of a Gbit/s read 0 for kbit/s)
                "change": round(float(ratio[k] - 1.0), 4),
            })
        return links, ratio[ok]

    links, ratios = compare(old.latency, new.latency, "latency_us")
    rep["pairs_compared"] = int(ratios.size)
    if ratios.size:
        rep["median_change"] = round(float(np.median(np.abs(ratios - 1.0))), 4)
    # a bandwidth matrix read alone: its "latency" is the inverse bandwidth, no latency to list (its links are
    # the bandwidth links below; they were listed twice, once as 'us')
    rep["median_change_of"] = "bandwidth" if new.inverse_bandwidth else "latency"
    rep["links"] = [] if new.inverse_bandwidth else links
    if old.bandwidth is not None and new.bandwidth is not None:
        rep["bandwidth_links"], _ = compare(old.bandwidth, new.bandwidth, "bandwidth_gbps")
    return rep


#: a link is listed as changed by :func:`drift_report` from this relative change (1%)
DRIFT_MIN = 0.01


def format_drift(rep: dict) -> list[str]:
    """Human-readable lines of a :func:`drift_report`."""
    lines = []
    if rep.get("hosts_added"):
        lines.append(f"hosts added: {', '.join(rep['hosts_added'])}")
    if rep.get("hosts_removed"):
        lines.append(f"hosts removed: {', '.join(rep['hosts_removed'])}")
    if rep.get("median_change") is not None:
        lines.append(f"median {rep.get('median_change_of', 'latency')} change over {rep['pairs_compared']} pairs: "
                     f"{rep['median_change']:+.1%}".replace("+", ""))
    if rep.get("pairs_compared") and not rep.get("links") and not rep.get("bandwidth_links"):
        lines.append(f"no link changed by {DRIFT_MIN:.0%} or more")
    for link in rep.get("links", []) + rep.get("bandwidth_links", []):
        from plink.units import format_bandwidth, format_us

        fmt = format_us if link["metric"] == "latency_us" else format_bandwidth
        lines.append(f"  {link['a']} - {link['b']}: {fmt(link['old'])} -> {fmt(link['new'])} ({link['change']:+.0%})")
    return lines


# ---------------------------------------------------------------------------
# one run


@dataclass
class WatchResult:
    """What one ``plink watch`` run decided (also written as status.json)."""

    status: str  #: "initial" | "reordered" | "kept" | "hosts-changed"
    changed: bool
    state_dir: str
    run: str  #: history directory name
    algo: str
    hosts: int
    min_gain: float
    gain: float | None = None  #: predicted cost reduction of the new order vs the current one
    cost_current: float | None = None  #: current order on the new probe (``cost_unit``, cost model)
    cost_new: float | None = None  #: best order found on the new probe
    model: str = "shared"  #: the cost model: "shared" (seconds) or "pairsum" (µs)
    cost_unit: str = "s"
    order: list[str] = field(default_factory=list)  #: the order in force after this run
    previous_order: list[str] | None = None
    drift: dict | None = None
    stale_lock: dict | None = None
    notes: list[str] = field(default_factory=list)
    #: what the cost model assumed rather than measured (``plink order``'s notes: NICs without a bandwidth,
    #: group uplinks nobody measured): printed with the costs and first in status.json's ``notes``, but no
    #: reason on its own to speak up under cron (a latency-only probe assumes them on every run)
    model_notes: list[str] = field(default_factory=list)
    probes_used: int = 1  #: probes in the median the decision was costed on (--window)
    incomplete: str = ""  #: why the probe was incomplete (then the order is never replaced), else ""
    pruned: int = 0  #: old runs removed from the history (--keep)
    started: str = ""
    elapsed: float = 0.0

    @property
    def noteworthy(self) -> bool:
        """Worth a line even in quiet mode: a new order or something to look at."""
        return self.changed or bool(self.notes)

    @property
    def exit_code(self) -> int:
        return EXIT_CHANGED if self.changed else EXIT_KEPT

    @property
    def gain_resolved(self) -> bool | None:
        """Whether the model resolves the predicted gain (``plink.solvers.resolution``); None without one."""
        if self.gain is None:
            return None
        if self.gain >= 1:  # the new order is predicted to cost nothing
            return True
        return resolved(1.0, 1.0 - self.gain, resolution_for(self.model))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["notes"] = [*d.pop("model_notes"), *d["notes"]]
        d["exit_code"] = self.exit_code
        d["gain_resolved"] = self.gain_resolved
        return d

    def summary(self) -> list[str]:
        """Lines for a human: what happened and why."""
        g = "n/a" if self.gain is None else f"{self.gain:.1%}"
        head = {
            "initial": f"first run: wrote the order of {self.hosts} hosts",
            "hosts-changed": "host list changed: the current order no longer fits; wrote a new order",
            "reordered": f"new order: predicted gain {g} >= {self.min_gain:.1%}",
            "kept": f"order kept: predicted gain {g} < {self.min_gain:.1%}",
        }[self.status]
        if self.status == "kept" and self.incomplete:
            head = f"order kept: the probe is incomplete ({self.incomplete}); predicted gain {g}"
        elif self.status == "kept" and self.gain is not None and self.gain >= self.min_gain:
            head = f"order kept: no order cheaper than the current one was found (predicted gain {g})"
        elif self.status == "reordered" and self.gain_resolved is False:
            r = resolution_for(self.model)
            head += (f" ({self.gain:.2%} is within the {self.model} model's {r:.0%} resolution: {UNRESOLVED}; "
                     f"a --min-gain of {r:.0%} or more avoids this)")
        lines = [f"plink watch {self.state_dir}: {head}"]
        if self.cost_current is not None and self.cost_new is not None:
            on = "the new probe" if self.probes_used <= 1 else f"the median of the last {self.probes_used} probes"
            from plink.units import format_us  # (as plink order prints its costs: 43.080 ms, not 0.04308 s)

            fmt = (lambda c: format_us(c * 1e6)) if self.cost_unit == "s" else format_us
            lines.append(f"{self.model} cost model on {on}: current {fmt(self.cost_current)}, "
                         f"best found {fmt(self.cost_new)} ({self.algo})")
        lines += self.model_notes
        lines += self.notes
        if self.pruned:
            lines.append(f"pruned {self.pruned} old run(s) from the history (--keep)")
        if self.drift is not None:
            lines += format_drift(self.drift)
        return lines


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat(timespec="seconds")


def _check_dir(state_dir: Path) -> None:
    if state_dir.exists() and not state_dir.is_dir():
        raise StateError(f"state directory {state_dir} exists and is not a directory")
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        (state_dir / "history").mkdir(exist_ok=True)
    except OSError as exc:
        raise StateError(f"cannot create state directory {state_dir}: {exc.strerror or exc}") from None
    if not os.access(state_dir, os.W_OK | os.X_OK) or not os.access(state_dir / "history", os.W_OK | os.X_OK):
        raise StateError(f"state directory {state_dir} is not writable")


def read_state(state_dir: str | os.PathLike) -> dict | None:
    """The state file of ``state_dir`` (``None`` before the first run)."""
    path = Path(state_dir) / "state.json"
    hint = f"nothing was changed; move it aside (the history in {Path(state_dir) / 'history'} is intact) or rerun with --reset"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StateCorrupt(f"{path} cannot be read ({exc}): {hint}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StateCorrupt(f"{path} is corrupt (invalid JSON at line {exc.lineno}: {exc.msg}): {hint}") from None
    except (RecursionError, ValueError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else " ".join(str(exc).split())[:100]
        raise StateCorrupt(f"{path} is corrupt (invalid JSON: {why}): {hint}") from None
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise StateCorrupt(f"{path} is corrupt (not a plink watch state file): {hint}")
    v = doc.get("version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise StateCorrupt(f"{path} is corrupt (version {v!r}): {hint}")
    if v > STATE_VERSION:
        raise StateError(f"{path} was written by a newer plink (state version {v}); upgrade plink")
    order = doc.get("order")
    if not isinstance(order, list) or not order or not all(isinstance(x, str) for x in order) or len(set(order)) != len(order):
        raise StateCorrupt(f"{path} is corrupt (its 'order' is not a list of distinct host names): {hint}")
    for key in ("runs", "changes"):
        x = doc.get(key, 0)
        if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < 2**53:
            raise StateCorrupt(f"{path} is corrupt (its {key!r} is {str(x)[:40]!r}, not a count): {hint}")
    for key in ("algo", "last_probe", "order_since", "order_run", "last_run"):
        x = doc.get(key)
        if x is not None and not isinstance(x, str):
            raise StateCorrupt(f"{path} is corrupt (its {key!r} is not a string): {hint}")
    lp = doc.get("last_probe")
    if lp is not None and (Path(lp).is_absolute() or ".." in Path(lp).parts or "\x00" in lp):
        raise StateCorrupt(f"{path} is corrupt (its 'last_probe' points outside the state directory): {hint}")
    return doc


def _new_run_name(history: Path, now: datetime) -> str:
    base = now.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name, k = base, 0
    while (history / name).exists():
        k += 1
        name = f"{base}-{k}"
    return name


def _clean_leftovers(state_dir: Path) -> list[str]:
    """Remove temporary files and half-built run directories of a killed run."""
    removed = []
    for d in (state_dir, state_dir / "history"):
        for p in d.glob(".*.tmp"):
            try:
                if p.is_dir():
                    shutil.rmtree(p)
                else:
                    p.unlink()
                removed.append(str(p.relative_to(state_dir)))
            except OSError:
                pass
    return removed


def _prune(history: Path, keep: int) -> list[str]:
    if keep <= 0:
        return []
    runs = sorted(p.name for p in history.iterdir() if p.is_dir() and _RUN_DIR.match(p.name))
    gone = runs[:-keep] if len(runs) > keep else []
    for name in gone:
        shutil.rmtree(history / name, ignore_errors=True)
    return gone


def _order_doc(names: Sequence[str], probe: ProbeData, algo: str, size: int, report: dict | None) -> dict:
    from plink.data.orderfile import FORMAT, VERSION

    hosts = []
    for r, n in enumerate(names):
        h = probe.hosts[probe.index(n)]
        hosts.append({"rank": r, **h.to_dict()})
    doc = {"format": FORMAT, "version": VERSION, "algo": algo, "size_bytes": size, "hosts": hosts}
    if report is not None:
        doc["report"] = report
    return doc


def _sync(path: str | os.PathLike, text: str, changed: bool = True) -> bool:
    """Write ``text`` to ``path`` atomically unless it already holds it; True when written.

    A stream holds nothing to compare with. A FIFO gets the order on every run that finds a
    reader on it, never waiting for one (reading it to compare, or opening it for writing with no
    reader, blocked the run for good, the lock held); ``-``, stdout and devices get it when
    ``changed`` (a new order, the first run: ``/dev/null`` read as "did not match" on every run).
    ``path`` is kept as given: ``Path("./-")`` is ``-``, stdout."""
    path = os.fspath(path)
    mode = None if is_stdout(path) else _mode(path)
    if mode == stat.S_IFIFO:
        return _write_fifo_if_read(path, text)
    if mode not in (0, stat.S_IFREG):  # stdout, a device, or what cannot be looked at
        if changed:
            atomic_write_text(path, text)
        return changed
    try:
        with open(path, encoding="utf-8") as fh:
            if fh.read() == text:
                return False
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write_text(path, text)
    return True


def _mode(path: str) -> int | None:
    """``path``'s file type bits (through symlinks); 0 when it does not exist yet, None when it
    cannot be looked at."""
    try:
        return stat.S_IFMT(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0
    except OSError:
        return None


def _file(path: str) -> bool:
    """``path`` is a regular file (through symlinks) or will be one, not stdout: it can be read back."""
    return not is_stdout(path) and _mode(path) in (0, stat.S_IFREG)


def _write_fifo_if_read(path: str, text: str) -> bool:
    """Write ``text`` into the FIFO ``path`` when a reader has it open; False (nothing written,
    nothing waited for) when none has."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # no reader
            return False
        raise PlinkError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        os.set_blocking(fd, True)  # a reader is there: let it take the text at its pace
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
    except OSError as exc:
        raise PlinkError(f"cannot write {path}: {exc.strerror or exc}") from None
    return True


def smoothed(probe: ProbeData, history: Path, window: int) -> tuple[ProbeData, int]:
    """``probe`` with its latency (and its pair bandwidths and faster directions, where it has them)
    replaced by the element-wise median over it and the ``window - 1`` newest probes in ``history``
    that cover the same hosts; its uplinks, truth and meta are kept (the newest measurement).

    Unreadable or mismatching history probes are skipped.  Returns the
    smoothed data and the number of probes used.  O(window * N^2).
    """
    if window <= 1:
        return probe, 1
    keys = ("latency", "bandwidth", "latency_best")
    mats = {k: [getattr(probe, k)] for k in keys if getattr(probe, k) is not None}
    used = 1
    names = probe.names
    runs = sorted((p for p in history.iterdir() if p.is_dir() and _RUN_DIR.match(p.name)), reverse=True)
    for run in runs:
        if used >= window:
            break
        try:
            old = load_json(run / "probe.json")
        except ProbeFileError:
            continue
        if sorted(old.names) != sorted(names):
            continue
        idx = np.ix_(*[[old.index(n) for n in names]] * 2)
        used += 1
        for k, lst in mats.items():
            m = getattr(old, k)
            if m is not None:  # (a probe without bandwidths adds nothing to their median)
                lst.append(m[idx])
    if used == 1:
        return probe, 1
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN pairs stay missing
            med = {k: np.nanmedian(np.stack(lst), axis=0) for k, lst in mats.items()}
    # (without its bandwidths and uplinks a window of 2 or more priced another model: 15.8 ms became 38.8 ms
    # on an unchanged file)
    return replace(probe, latency=med["latency"], bandwidth=med.get("bandwidth"),
                   latency_best=med.get("latency_best"), latency_median=None, latency_p90=None,
                   meta=dict(probe.meta)), used


def check_same_hosts(order: Sequence[str], probe: ProbeData, source: str) -> list[str]:
    """Raise if the order ``source`` is not over exactly the probe's hosts; else return it in the probe's
    spelling (names differing only in case are one host, as in every file plink reads)."""
    from plink.data.inputs import case_note, first_duplicate, host_key, hosts_not_in

    twice = first_duplicate(list(order))  # ('VM027' beside 'vm027' was taken: one host twice)
    if twice is not None:
        i, j = twice
        note = case_note(list(order), i, j)
        raise PlinkError(f"{source} lists host {order[j]!r} twice" + (f" ({note})" if note else ""))
    spelling = {host_key(n): n for n in probe.names}
    extra, missing = hosts_not_in(order, probe.names), hosts_not_in(probe.names, order)
    if extra or missing:
        parts = []
        if extra:
            parts.append(f"lists {len(extra)} host(s) not in the probe ({', '.join(extra[:3])}{', ...' if len(extra) > 3 else ''})")
        if missing:
            parts.append(f"lacks {len(missing)} probed host(s) ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")
        raise PlinkError(f"{source} is from another host list: it {' and '.join(parts)}")
    return [spelling[host_key(n)] for n in order]


def _host_names(field) -> list[str]:
    """Host names from a probe file's ``meta.unreachable`` / ``meta.dead``:
    ``{name: why}`` as ``plink probe`` writes it (a list of names is read too)."""
    if isinstance(field, dict):
        return [str(k) for k in field]
    if isinstance(field, (list, tuple)):
        return [str(k) for k in field]
    return []


@dataclass
class Decision:
    """What :func:`decide` chose: ``status`` as in :class:`WatchResult`, the order in force after the run."""

    status: str
    order: list[str]
    cost_current: float | None
    cost_new: float | None
    gain: float | None
    result: Any  #: what ``solve`` returned (its report is written when the order changes)
    notes: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)  #: :func:`model_assumptions` of the search


def relative_gain(cost_current: float, cost_new: float) -> float:
    """``(cost_current - cost_new) / cost_current``; 0 when the current order costs nothing."""
    return 0.0 if cost_current <= 0 else (cost_current - cost_new) / cost_current


def should_reorder(cost_current: float, cost_new: float, min_gain: float, incomplete: bool = False) -> bool:
    """The hysteresis rule: adopt the new order only when it is strictly cheaper and its relative
    gain is at least ``min_gain``, and never on an incomplete probe."""
    return not incomplete and cost_new < cost_current and relative_gain(cost_current, cost_new) >= min_gain


def decide(probe: ProbeData, current: Sequence[str] | None, solve: Callable[..., Any], algo: str, search: dict,
           min_gain: float, *, incomplete: str = "", source: str = "the current order",
           strict: bool = False) -> Decision:
    """Watch's decision on ``probe`` (the new probe, or the median of the window) given the ``current`` order.

    No current order: search one (``initial``).  The current order is over other hosts: search a
    new one (``hosts-changed``; with ``strict``, e.g. a user's ``--initial-order`` file, that is
    an error instead).  Else search from the current order (``solve`` on the probe subset in that
    order, whose ``cost_input`` is the current order's cost) and adopt the result when
    :func:`should_reorder` says so (``reordered``), else ``kept``.  ``incomplete`` (a reason,
    empty when the probe is complete) keeps the order; when the current order is over other
    hosts too, no order fits: :class:`PlinkError` naming the change and the reason, before any
    search.  Cost: one ``solve`` call.
    """
    if current is None:
        result = solve(probe, algo, **search)
        notes = [f"the probe is incomplete ({incomplete}): the first order was searched without the missing "
                 "pairs' measurements"] if incomplete else []
        return Decision("initial", list(result.hosts), None, result.cost_plink, None, result, notes,
                        model_assumptions(result))
    current = list(current)
    if not (set(current) == set(probe.names) and len(current) == probe.n):
        notes = []
        try:
            check_same_hosts(current, probe, source)
        except PlinkError as exc:
            if strict:
                raise
            notes.append(str(exc))
        if incomplete:  # the current order no longer fits, and an incomplete probe never replaces it
            raise PlinkError(_changed_and_incomplete(current, probe, incomplete, source, notes))
        result = solve(probe, algo, **search)
        return Decision("hosts-changed", list(result.hosts), None, result.cost_plink, None, result, notes,
                        model_assumptions(result))
    # search from the current order: cost_input is the current order on this probe
    result = solve(probe.subset([probe.index(n) for n in current]), algo, **search)
    assumed = model_assumptions(result)
    cost_cur, cost_new = float(result.cost_input), float(result.cost_plink)
    gain = relative_gain(cost_cur, cost_new)
    if should_reorder(cost_cur, cost_new, min_gain, incomplete=bool(incomplete)):
        return Decision("reordered", list(result.hosts), cost_cur, cost_new, gain, result, [], assumed)
    notes = [f"the probe is incomplete ({incomplete}): order kept"] if incomplete else []
    return Decision("kept", current, cost_cur, cost_new, gain, result, notes, assumed)


def model_assumptions(result: Any) -> list[str]:
    """What the shared cost model assumed rather than measured when ``result`` was searched: ``plink
    order``'s own notes on it (``OrderResult.assumption_notes``: host NICs without a bandwidth, group
    uplinks nobody measured; none for the pair-sum model or a size of 0 bytes), empty for a result
    without them (a stand-in solver).  O(1)."""
    return list(getattr(result, "assumption_notes", None) or [])


def _changed_and_incomplete(current: Sequence[str], probe: ProbeData, incomplete: str, source: str,
                            notes: Sequence[str]) -> str:
    """The error of a run whose host list changed on an incomplete probe: no order fits (the current one
    is over other hosts, and an incomplete probe never writes a new one)."""
    from plink.data.inputs import hosts_not_in

    def some(names: list[str]) -> str:
        return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    added, removed = hosts_not_in(probe.names, current), hosts_not_in(current, probe.names)
    parts = []
    if added:
        parts.append(f"hosts added: {some(added)}")
    if removed:
        parts.append(f"hosts removed: {some(removed)}")
    change = "; ".join(parts) or (notes[0] if notes else "the same hosts, spelled in another case")
    return (f"the host list changed ({change}) but the probe is incomplete ({incomplete}): no new order written, "
            f"nothing changed; {source} is for the old host list (make the hosts reachable or correct the host "
            "list, then rerun)")


def watch(
    state_dir: str | os.PathLike,
    prober: Callable[[], ProbeData],
    *,
    algo: str = "ring",
    size: int | None = None,
    base: int = 2,
    min_gain: float = DEFAULT_MIN_GAIN,
    time_limit: float = 5.0,
    seed: int = 0,
    max_iter: int | None = None,
    initial_order: Sequence[str] | None = None,
    emit: Sequence[tuple[str, str]] = (),
    slots: int = 1,
    keep: int = DEFAULT_KEEP,
    window: int = 1,
    reset: bool = False,
    top: int = 5,
    now: Callable[[], datetime] = _utcnow,
    solve: Callable[..., Any] | None = None,
    model: str = "shared",
    nic_gbps: float | None = None,
) -> WatchResult:
    """One cron run over ``state_dir``: probe, compare, re-order if it pays.

    ``prober()`` returns the new :class:`ProbeData`.  The new order is
    searched from the current one (so it is never predicted worse) and is
    adopted only when ``(cost_current - cost_new) / cost_current >=
    min_gain``, both on the new probe (on the median of the last ``window``
    probes when ``window > 1``).  ``emit`` is a list of ``(format,
    path)`` launcher files kept in sync with the current order.  Raises
    :class:`WatchBusy` when another run holds the lock and
    :class:`StateError` for an unusable state directory; in both cases
    nothing is changed.  ``model``: ``"shared"`` (default, as ``plink
    order``: NICs and group uplinks shared by concurrent flows, seconds) or
    ``"pairsum"`` (the dissertation's sum of pair costs, µs); ``nic_gbps``: the
    host NICs of a probe without bandwidths (shared model; ``None``: 10 Gbit/s,
    as ``plink order``); what the model assumed is in the result's ``model_notes``.
    Cost: one probe plus one ``order_hosts`` search.
    """
    from plink.order import DEFAULT_SIZE, order_hosts

    solve = solve or order_hosts
    size = DEFAULT_SIZE if size is None else int(size)
    _check_args(model=model, window=window, min_gain=min_gain, slots=slots, emit=emit, state_dir=state_dir)
    if nic_gbps is not None:  # (checked as plink order checks it, before anything is probed)
        from plink.order import check_options

        check_options(algo, model=model, nic_gbps=nic_gbps)
    _check_emit_outside_state(Path(state_dir), emit)
    search = dict(size=size, time_limit=time_limit, seed=seed, base=base, model=model)
    if max_iter is not None:  # a reproducible search (tests, benchmarks)
        search["max_iter"] = max_iter
    if nic_gbps is not None:
        search["nic_gbps"] = nic_gbps
    state_dir = Path(state_dir)
    _check_dir(state_dir)
    started = now()
    t0 = datetime.now(timezone.utc)
    lock = StateLock(state_dir)
    info = lock.acquire()
    try:
        notes: list[str] = []
        stale = _take_over(state_dir, info, notes)
        state = _load_state(state_dir, reset, started, notes)
        probe = prober()
        if not isinstance(probe, ProbeData):
            raise PlinkError("the prober did not return probe data")
        if emit:  # names no launcher file can hold: an error before anything is written
            from plink.launch.emitters import check_launcher_names

            check_launcher_names(probe.names, "an --emit file", "give the hosts their names or addresses")
        incomplete = _incompleteness(probe)
        drift = _drift(state_dir, state, probe, top, notes)

        # decide on the median of the last `window` probes (1: the new probe alone)
        decide_on, used = smoothed(probe, state_dir / "history", window)
        current, source = _current_order(state_dir, state, initial_order, probe)
        if state is not None and initial_order is not None:  # (it was dropped without a word)
            notes.append(f"--initial-order not used: {state_dir / 'state.json'} holds the order in force "
                         "(--reset starts again from the file)")
        d = decide(decide_on, current, solve, algo, search, min_gain, incomplete=incomplete,
                   source=f"the current order ({source})", strict=state is None)
        notes += d.notes
        notes += _setting_changes(state, algo, model)

        changed = d.status != "kept"
        history = state_dir / "history"
        run = _new_run_name(history, started)
        res = WatchResult(
            status=d.status, changed=changed, state_dir=str(state_dir), run=run, algo=algo, hosts=probe.n,
            min_gain=min_gain, gain=None if d.gain is None else round(d.gain, 6),
            cost_current=d.cost_current, cost_new=d.cost_new, model=model,
            cost_unit=str(getattr(d.result, "unit", "s" if model == "shared" else "us")), order=d.order,
            previous_order=current, drift=drift, stale_lock=stale, notes=notes, model_notes=d.assumed,
            probes_used=used,
            incomplete=incomplete, started=_iso(started),
        )
        order_doc = _order_doc(d.order, probe, algo, size, _report(d))

        # the order's files first, the state last: a file that cannot be written (an --emit path through
        # a missing directory) then leaves the state as it was, and the next run writes the order again
        _sync_derived(state_dir, d.order, order_doc, probe, changed, emit=emit, slots=slots, algo=algo, notes=notes)
        _write_history(history, run, probe, order_doc if changed else None, res, t0)
        new_state = _new_state(state, d, run=run, started=started, algo=algo, size=size, base=base,
                               min_gain=min_gain, model=model)
        atomic_write_text(state_dir / "state.json", json.dumps(new_state, indent=1, allow_nan=False) + "\n")
        # routine housekeeping: in the status (-v, --json), never a reason to speak up under cron
        res.pruned = len(_prune(history, keep))
        res.elapsed = round((datetime.now(timezone.utc) - t0).total_seconds(), 3)
        return res
    finally:
        lock.release(finished=True)


def _check_args(*, model: str, window: int, min_gain: float, slots: int, emit: Sequence[tuple[str, str]],
                state_dir=None) -> None:
    """Raise :class:`PlinkError` for the first unusable argument of :func:`watch`, before anything is touched."""
    from plink.launch.emitters import FORMATS, check_slots

    if model not in ("shared", "pairsum"):
        raise OptionError(f"--model must be shared or pairsum, got {model!r}")
    if window < 1:
        raise OptionError(f"--window must be >= 1 probes, got {window}")
    if not (0 <= min_gain < 1) or math.isnan(min_gain):
        raise OptionError(f"--min-gain must be in [0, 1) (a fraction, e.g. 0.05 for 5%), got {min_gain}")
    check_slots(slots, 1)
    for fmt, _ in emit:
        if fmt == "plain" and slots != 1:
            raise OptionError("--emit plain:PATH writes one line per host: --slots applies to launcher formats")
        if fmt not in FORMATS or fmt in ("json", "slurm-topology"):
            raise OptionError(f"--emit: cannot keep a {fmt!r} file in sync (use one of: {', '.join(f for f in FORMATS if f not in ('json', 'slurm-topology'))})")
    for fmt, path in emit:  # before anything is probed or written: an error changes nothing
        missing = missing_directory(path)
        if missing is not None and state_dir is not None and os.path.abspath(missing) == os.path.abspath(state_dir):
            missing = None  # the state directory, which the run makes before it writes anything
        if missing is not None:  # (usage errors, exit 2, as -o's are)
            raise OptionError(f"cannot write --emit {fmt}:{path}: directory {missing} does not exist")
        if Path(path).is_dir():
            raise OptionError(f"cannot write --emit {fmt}:{path}: it is a directory (name a file in it)")


def is_state_file(state_dir, path) -> bool:
    """Whether ``path`` is (or would be) one of STATE_DIR's own files: state.json (and what is put
    aside from it), order.json, hosts.txt, the lock, anything under history/."""
    own = os.path.realpath(state_dir)
    target = os.path.realpath(path)
    parent, name = os.path.split(target)
    if os.path.commonpath([own, target]) != own:
        return False
    return parent != own or name in {"state.json", "order.json", "hosts.txt", "lock"} or name.startswith("state.json")


def _check_emit_outside_state(state_dir: Path, emit: Sequence[tuple[str, str]]) -> None:
    """An ``--emit`` file is never one of STATE_DIR's own files: a launcher file written over
    state.json made the next run fail."""
    for fmt, path in emit:
        if is_state_file(state_dir, path):
            raise OptionError(f"cannot write --emit {fmt}:{path}: it is one of {state_dir}'s own files "
                             f"(state.json, order.json, hosts.txt, lock, history/); write it elsewhere or under another name")


def _take_over(state_dir: Path, info: LockInfo, notes: list[str]) -> dict | None:
    """After a killed run (a stale lock): remove its leftovers, say so in ``notes``; the ``stale_lock`` record."""
    if info.stale_pid is None:
        return None
    cleaned = _clean_leftovers(state_dir)
    notes.append(
        f"took over a stale lock: the run with pid {info.stale_pid} (started {info.stale_since}) was killed"
        + (f"; removed its temporary files {', '.join(cleaned)}" if cleaned else "")
    )
    return {"pid": info.stale_pid, "started": info.stale_since, "removed": cleaned}


def _load_state(state_dir: Path, reset: bool, started: datetime, notes: list[str]) -> dict | None:
    """The state file (``None`` before the first run); with ``reset`` a corrupt one is moved aside."""
    try:
        return read_state(state_dir)
    except StateCorrupt:
        if not reset:
            raise
        aside = state_dir / f"state.json.corrupt-{started.strftime('%Y%m%dT%H%M%SZ')}"
        os.replace(state_dir / "state.json", aside)
        notes.append(f"--reset: moved the corrupt state file to {aside.name}")
        return None


def _incompleteness(probe: ProbeData) -> str:
    """Why ``probe`` is incomplete (empty when it is complete); raises when no pair was measured."""
    if not (probe.meta.get("complete") is False or probe.n_missing_pairs()):
        return ""
    gone = _host_names(probe.meta.get("unreachable")) + _host_names(probe.meta.get("dead"))
    incomplete = f"unreachable: {', '.join(gone)}" if gone else f"{probe.n_missing_pairs()} pairs missing"
    if probe.n > 1 and probe.n_missing_pairs() >= probe.n * (probe.n - 1) // 2:
        from plink.data.probefile import measured_pairs

        what = ("no latency was measured, only pair bandwidths" if measured_pairs(probe, bandwidth=True).any()
                else "no pair of hosts was measured")
        raise PlinkError(f"{what} ({incomplete}): nothing changed")
    return incomplete


def _drift(state_dir: Path, state: dict | None, probe: ProbeData, top: int, notes: list[str]) -> dict | None:
    """The drift report of ``probe`` against the last run's probe (``None`` without a readable one)."""
    if state is None or not state.get("last_probe"):
        return None
    try:
        old = load_json(state_dir / state["last_probe"])
        return drift_report(old, probe, top=top)
    except ProbeFileError as exc:
        notes.append(f"no drift report: the last probe cannot be read ({exc})")
        return None


def _current_order(state_dir: Path, state: dict | None, initial_order: Sequence[str] | None,
                   probe: ProbeData) -> tuple[list[str] | None, str]:
    """``(the order in force or None, where it comes from)``: the state's, else ``initial_order`` (checked)."""
    current = None if state is None else list(state["order"])
    source = f"{state_dir / 'state.json'}"
    if current is None and initial_order is not None:
        current = check_same_hosts(list(initial_order), probe, "the --initial-order file")
        source = "the --initial-order file"
    return current, source


def _setting_changes(state: dict | None, algo: str, model: str) -> list[str]:
    """Notes on an algorithm or cost model other than the last run's."""
    notes = []
    if state is not None and state.get("algo") not in (None, algo):
        notes.append(f"algorithm changed from {state.get('algo')} to {algo}")
    if state is not None and state.get("model", "pairsum") != model:
        notes.append(f"cost model changed from {state.get('model', 'pairsum')} to {model}")
    return notes


def _report(d: Decision) -> dict | None:
    """The search's report for the order file: ``None`` when the order was kept (it describes the rejected one)."""
    report = d.result.to_dict() if hasattr(d.result, "to_dict") else None
    if report is not None and d.status == "kept":
        report = None
    return report


def _write_history(history: Path, run: str, probe: ProbeData, order_doc: dict | None, res: WatchResult,
                   t0: datetime) -> None:
    """Write the run's history directory (probe, new order if any, status) under a temporary name, then rename it."""
    tmp = history / f".{run}.tmp"
    try:
        tmp.mkdir()
        probe.save(tmp / "probe.json")
        if order_doc is not None:
            atomic_write_text(tmp / "order.json", json.dumps(order_doc, indent=1, allow_nan=False) + "\n")
        res.elapsed = round((datetime.now(timezone.utc) - t0).total_seconds(), 3)
        atomic_write_text(tmp / "status.json", json.dumps(res.to_dict(), indent=1, allow_nan=False) + "\n")
        os.rename(tmp, history / run)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StateError(f"cannot write the history of this run in {history}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _new_state(state: dict | None, d: Decision, *, run: str, started: datetime, algo: str, size: int, base: int,
               min_gain: float, model: str) -> dict:
    """The state file's content after this run (the commit point)."""
    changed = d.status != "kept"
    prev_changes = 0 if state is None else int(state.get("changes", 0))
    return {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "algo": algo,
        "size_bytes": size,
        "base": base,
        "min_gain": min_gain,
        "order": d.order,
        "order_since": _iso(started) if changed else (state or {}).get("order_since", _iso(started)),
        "order_run": run if changed else (state or {}).get("order_run", run),
        "last_run": run,
        "last_probe": f"history/{run}/probe.json",
        "runs": (0 if state is None else int(state.get("runs", 0))) + 1,
        "changes": prev_changes + (1 if changed else 0),
        "cost": d.cost_new if changed else d.cost_current,
        "model": model,
    }


def _sync_derived(state_dir: Path, order: list[str], order_doc: dict, probe: ProbeData, changed: bool, *,
                  emit: Sequence[tuple[str, str]], slots: int, algo: str, notes: list[str]) -> None:
    """Re-synchronise order.json, hosts.txt and the ``emit`` files with ``order``; repairs go to ``notes``."""
    from plink.launch.emitters import emit as emit_text

    if changed or not (state_dir / "order.json").exists():
        atomic_write_text(state_dir / "order.json", json.dumps(order_doc, indent=1, allow_nan=False) + "\n")
    else:
        try:
            have = json.loads((state_dir / "order.json").read_text(encoding="utf-8"))
            have_names = [h["name"] for h in sorted(have["hosts"], key=lambda h: h["rank"])]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            have_names = None
        if have_names != order:
            atomic_write_text(state_dir / "order.json", json.dumps(order_doc, indent=1, allow_nan=False) + "\n")
            notes.append("order.json did not match the state (an interrupted run?): rewritten")
    from plink.launch.emitters import check_launcher_names

    try:
        check_launcher_names(order, "hosts.txt", "order.json has the order")
    except PlinkError as exc:  # e.g. region names of a wide-area matrix
        if (state_dir / "hosts.txt").exists():
            (state_dir / "hosts.txt").unlink()
        notes.append(f"hosts.txt not written: {exc}")
    else:
        _sync(state_dir / "hosts.txt", "".join(f"{n}\n" for n in order))
    ordered_hosts = [probe.hosts[probe.index(n)] for n in order]
    for fmt, path in emit:
        # a torchrun map's header names the file node-rank reads: the map itself, as plink emit's does
        # (state_dir/order.json is relative to cron's directory and on this host only)
        file = _file(path)
        text = emit_text(fmt, ordered_hosts, slots=slots, algo=algo,
                         order_file=str(path) if file else str(state_dir / "order.json"))
        existed = file and os.path.lexists(path)
        if _sync(path, text, changed) and not changed and file:
            notes.append(f"rewrote {path}: it did not match the current order" if existed else
                         f"wrote {path}: it was missing (a new --emit, or deleted)")
