"""plink watch: hysteresis, lock, stale-lock takeover, corrupt state, history, drift."""

import json
import re
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from plink.errors import PlinkError
from plink.data.probefile import ProbeData
from plink.data.simulate import simulate_datacenter
from plink.watch import (
    EXIT_BUSY, EXIT_CHANGED, EXIT_KEPT, StateError, StateLock, WatchBusy, drift_report, read_state, watch,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# reproducible searches; the decision rule is tested with the pair-sum model, whose cost moves with every
# link's noise (the shared model's, on latency-only probes, is dominated by the assumed NIC term)
OPTS = dict(time_limit=30, max_iter=20000, seed=0, model="pairsum")


def dc(seed, jitter=0.05, **kw):
    """16 hosts in 4 racks; ``seed`` decides which name sits in which rack."""
    return simulate_datacenter(racks=4, hosts_per_rack=4, seed=seed, jitter=jitter, **kw)


def noisy(probe: ProbeData, seed: int, sigma: float = 0.05) -> ProbeData:
    """The same datacenter measured again: multiplicative noise on every pair."""
    rng = np.random.default_rng(seed)
    noise = np.exp(rng.normal(0, sigma, probe.latency.shape))
    noise = np.sqrt(noise * noise.T)
    return ProbeData(hosts=probe.hosts, latency=probe.latency * noise, meta=dict(probe.meta))


class Clock:
    """Deterministic run times, one minute apart."""

    def __init__(self):
        self.t = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self):
        self.t += timedelta(minutes=1)
        return self.t


def runs(d):
    return sorted(p.name for p in (d / "history").iterdir() if not p.name.startswith("."))


def snapshot(d):
    """Every file under the state dir (but the lock) with its content."""
    out = {}
    for p in sorted(d.rglob("*")):
        if p.is_file() and p.name != "lock":
            out[str(p.relative_to(d))] = p.read_bytes()
    return out


# -- the decision -------------------------------------------------------------


def test_first_run_then_kept_on_noise(tmp_path):
    clock = Clock()
    base = dc(1)
    r1 = watch(tmp_path, lambda: base, now=clock, **OPTS)
    assert (r1.status, r1.changed, r1.exit_code) == ("initial", True, EXIT_CHANGED)
    order = r1.order
    assert sorted(order) == sorted(base.names)
    assert (tmp_path / "hosts.txt").read_text().split() == order
    doc = json.loads((tmp_path / "order.json").read_text())
    assert [h["name"] for h in doc["hosts"]] == order
    for k in range(3):  # re-measured with noise: the order must not flap
        r = watch(tmp_path, lambda: noisy(base, k), now=clock, **OPTS)
        assert (r.status, r.exit_code) == ("kept", EXIT_KEPT), r.summary()
        assert r.gain < 0.05 and r.order == order
    assert (tmp_path / "hosts.txt").read_text().split() == order
    assert len(runs(tmp_path)) == 4
    assert read_state(tmp_path)["runs"] == 4 and read_state(tmp_path)["changes"] == 1
    # only the run that changed the order stored one
    assert [(tmp_path / "history" / r / "order.json").exists() for r in runs(tmp_path)] == [True, False, False, False]


def test_reorders_when_hosts_move_and_hysteresis_threshold(tmp_path):
    clock = Clock()
    watch(tmp_path, lambda: dc(1), now=clock, **OPTS)
    before = read_state(tmp_path)["order"]
    moved = dc(2)  # same names, different racks: the current order is now bad
    r = watch(tmp_path / "x", lambda: dc(1), now=clock, **OPTS)  # a second state dir, untouched below
    high = watch(tmp_path, lambda: moved, min_gain=0.99, now=clock, **OPTS)
    assert high.status == "kept" and 0.05 < high.gain < 0.99 and high.order == before
    r = watch(tmp_path, lambda: moved, now=clock, **OPTS)
    assert r.status == "reordered" and r.gain >= 0.05 and r.exit_code == EXIT_CHANGED
    assert r.cost_new < r.cost_current and r.previous_order == before
    assert read_state(tmp_path)["order"] == r.order != before
    assert "new order: predicted gain" in "\n".join(r.summary())


def test_no_flapping_between_two_measurements(tmp_path):
    clock = Clock()
    a, b = noisy(dc(3), 10, 0.1), noisy(dc(3), 11, 0.1)  # 10% noise, measured alternately
    results = [watch(tmp_path, lambda p=p: p, now=clock, **OPTS) for p in (a, b, a, b, a, b)]
    # it may settle once, then it must stay: never back and forth
    assert results[0].changed and sum(r.changed for r in results[1:]) <= 1
    assert all(not r.changed for r in results[3:])
    assert all(r.gain < 0.05 for r in results[3:])
    # a threshold above the noise: never a second change
    results = [watch(tmp_path / "hi", lambda p=p: p, min_gain=0.1, now=clock, **OPTS) for p in (a, b, a, b)]
    assert [r.changed for r in results] == [True, False, False, False]


def test_window_damps_noise(tmp_path):
    clock = Clock()
    base = dc(3)
    rng = np.random.default_rng(7)
    probes = [noisy(base, int(rng.integers(1 << 30)), 0.15) for _ in range(8)]
    one = [watch(tmp_path / "w1", lambda p=p: p, now=clock, **OPTS) for p in probes]
    three = [watch(tmp_path / "w3", lambda p=p: p, window=3, now=clock, **OPTS) for p in probes]
    assert [r.probes_used for r in three] == [1, 2, 3, 3, 3, 3, 3, 3]
    assert sum(r.changed for r in three[1:]) < sum(r.changed for r in one[1:])
    with pytest.raises(PlinkError, match="window"):
        watch(tmp_path / "w0", lambda: base, window=0, **OPTS)


def test_initial_order_from_another_host_list(tmp_path):
    probe = dc(1)
    with pytest.raises(PlinkError, match="another host list.*not in the probe"):
        watch(tmp_path, lambda: probe, initial_order=probe.names[:-1] + ["ghost"], **OPTS)
    assert not (tmp_path / "state.json").exists() and runs(tmp_path) == []
    # a good initial order that is already fine is kept
    best = watch(tmp_path / "b", lambda: probe, **OPTS).order
    r = watch(tmp_path / "c", lambda: probe, initial_order=best, **OPTS)
    assert r.status == "kept" and r.order == best


def test_host_list_changed_reorders_and_keeps_history(tmp_path):
    clock = Clock()
    watch(tmp_path, lambda: dc(1), now=clock, **OPTS)
    bigger = simulate_datacenter(racks=5, hosts_per_rack=4, seed=1)
    r = watch(tmp_path, lambda: bigger, now=clock, **OPTS)
    assert r.status == "hosts-changed" and r.changed
    assert "lacks 4 probed host(s)" in "\n".join(r.notes)
    assert sorted(r.order) == sorted(bigger.names)
    assert r.drift["hosts_added"] == [n for n in bigger.names if n not in dc(1).names]
    first = runs(tmp_path)[0]
    old = json.loads((tmp_path / "history" / first / "order.json").read_text())
    assert len(old["hosts"]) == 16  # the previous order is still in the history


def test_incomplete_probe_never_replaces_the_order(tmp_path):
    clock = Clock()
    first = watch(tmp_path, lambda: dc(1), now=clock, **OPTS)
    moved = dc(2)  # would be re-ordered if complete
    lat = moved.latency.copy()
    dead = moved.index("vm004")
    lat[dead, :] = lat[:, dead] = np.nan
    lat[dead, dead] = 0
    partial = ProbeData(hosts=moved.hosts, latency=lat, meta={"complete": False, "unreachable": ["vm004"]})
    r = watch(tmp_path, lambda: partial, now=clock, **OPTS)
    assert r.status == "kept" and r.order == first.order and r.noteworthy
    assert any("incomplete (unreachable: vm004)" in n for n in r.notes)
    assert r.incomplete == "unreachable: vm004"
    head = r.summary()[0]
    assert head.endswith(f"order kept: the probe is incomplete (unreachable: vm004); predicted gain {r.gain:.1%}")
    assert r.gain >= r.min_gain  # the headline must not claim the gain was too small


def test_kept_when_nothing_cheaper_says_so():
    from plink.watch import WatchResult

    r = WatchResult(status="kept", changed=False, state_dir="d", run="r", algo="ring", hosts=4, min_gain=0.0, gain=0.0)
    assert r.summary()[0] == "plink watch d: order kept: no order cheaper than the current one was found (predicted gain 0.0%)"
    r = WatchResult(status="kept", changed=False, state_dir="d", run="r", algo="ring", hosts=4, min_gain=0.05, gain=0.01)
    assert r.summary()[0] == "plink watch d: order kept: predicted gain 1.0% < 5.0%"


def test_a_reorder_below_the_model_resolution_says_so():
    """--min-gain under the model's resolution lets a gain the model cannot resolve re-order the
    job: the summary says so (and a gain above it does not get the remark)."""
    from plink.solvers.resolution import RESOLUTION
    from plink.watch import WatchResult

    small = WatchResult(status="reordered", changed=True, state_dir="d", run="r", algo="ring", hosts=4,
                        min_gain=0.005, gain=RESOLUTION / 2)
    assert small.summary()[0].startswith("plink watch d: new order: predicted gain 1.0% >= 0.5% (1.00% is within "
                                         "the shared model's 2% resolution")
    assert small.to_dict()["gain_resolved"] is False
    large = WatchResult(status="reordered", changed=True, state_dir="d", run="r", algo="ring", hosts=4,
                        min_gain=0.005, gain=2 * RESOLUTION)
    assert large.summary()[0] == "plink watch d: new order: predicted gain 4.0% >= 0.5%"
    assert large.to_dict()["gain_resolved"] is True
    # the pair sum resolves less (10%): the same 4% gain is within it
    ps = WatchResult(status="reordered", changed=True, state_dir="d", run="r", algo="ring", hosts=4,
                     min_gain=0.005, gain=2 * RESOLUTION, model="pairsum")
    assert "within the pairsum model's 10% resolution" in ps.summary()[0] and ps.gain_resolved is False
    # the same rule as plink order's '~': the gain's speedup 1 / (1 - gain) against 1 + resolution
    edge = 1 - 1 / (1 + RESOLUTION)
    assert WatchResult(status="kept", changed=False, state_dir="d", run="r", algo="ring", hosts=4, min_gain=0.05,
                       gain=edge * 1.001).gain_resolved is True
    assert WatchResult(status="kept", changed=False, state_dir="d", run="r", algo="ring", hosts=4, min_gain=0.05,
                       gain=edge * 0.999).gain_resolved is False


# -- drift --------------------------------------------------------------------


def test_drift_report_names_the_changed_link():
    old = dc(1)
    lat = old.latency.copy()
    i, j = old.index("vm003"), old.index("vm011")
    lat[i, j] = lat[j, i] = lat[i, j] * 5
    new = ProbeData(hosts=old.hosts, latency=lat)
    rep = drift_report(old, new, top=3)
    top = rep["links"][0]
    assert {top["a"], top["b"]} == {"vm003", "vm011"} and abs(top["change"] - 4.0) < 1e-3
    assert rep["median_change"] == 0.0 and rep["pairs_compared"] == 120


# -- the lock -----------------------------------------------------------------


def test_second_run_while_locked_does_nothing(tmp_path):
    watch(tmp_path, lambda: dc(1), **OPTS)
    before = snapshot(tmp_path)
    called = []
    with StateLock(tmp_path):
        with pytest.raises(WatchBusy, match=rf"another plink watch \(pid {os.getpid()}.*this run did nothing"):
            watch(tmp_path, lambda: called.append(1) or dc(2), **OPTS)
    assert WatchBusy.exit_code == EXIT_BUSY
    assert not called and snapshot(tmp_path) == before
    # a lock taken by something else (flock(1), a backup) while the file names the last, finished run:
    # the message named that run's pid as the holder
    import fcntl

    fresh = tmp_path.with_name(tmp_path.name + "_fresh")  # no run ever: an empty lock file names no run
    fresh.mkdir()
    for state_dir, said in ((tmp_path, "the file names the last run, finished"),
                            (fresh, "no watch run has written the file")):
        fd = os.open(state_dir / "lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with pytest.raises(WatchBusy, match=rf"another process holds .*not a running plink watch: {said}"):
                watch(state_dir, lambda: called.append(1) or dc(2), **OPTS)
        finally:
            os.close(fd)
    assert not called and snapshot(tmp_path) == before


LOCK_AND_DIE = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from plink.watch import StateLock
    StateLock({d!r}).acquire()
    open(os.path.join({d!r}, '.state.json.abc.tmp'), 'w').write('half')
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_stale_lock_from_killed_run_is_taken_over(tmp_path):
    watch(tmp_path, lambda: dc(1), **OPTS)
    state_before = (tmp_path / "state.json").read_bytes()
    proc = subprocess.run([sys.executable, "-c", LOCK_AND_DIE.format(root=ROOT, d=str(tmp_path))])
    assert proc.returncode == -signal.SIGKILL
    lock = json.loads((tmp_path / "lock").read_text())
    assert lock["state"] == "running" and lock["pid"] != os.getpid()
    assert (tmp_path / "state.json").read_bytes() == state_before  # the killed run lost nothing
    r = watch(tmp_path, lambda: dc(1), **OPTS)
    assert r.stale_lock["pid"] == lock["pid"]
    assert ".state.json.abc.tmp" in r.stale_lock["removed"] and not (tmp_path / ".state.json.abc.tmp").exists()
    assert any("stale lock" in n for n in r.notes)
    assert json.loads((tmp_path / "lock").read_text())["state"] == "done"
    assert r.status == "kept"


def test_failed_probe_changes_nothing_and_releases_lock(tmp_path):
    watch(tmp_path, lambda: dc(1), **OPTS)
    before = snapshot(tmp_path)

    def boom():
        raise PlinkError("3 of 16 hosts unreachable")

    with pytest.raises(PlinkError, match="unreachable"):
        watch(tmp_path, boom, **OPTS)
    assert snapshot(tmp_path) == before
    assert json.loads((tmp_path / "lock").read_text())["state"] == "done"
    assert watch(tmp_path, lambda: dc(1), **OPTS).status == "kept"


# -- bad state directories -----------------------------------------------------


@pytest.mark.parametrize("garbage,why", [
    ("{not json", "invalid JSON"),
    ('{"format": "something-else", "version": 1}', "not a plink watch state file"),
    ('{"format": "plink-watch", "version": 1, "order": ["a", "a"]}', "not a list of distinct host names"),
])
def test_corrupt_state_is_reported_and_kept(tmp_path, garbage, why):
    watch(tmp_path, lambda: dc(1), **OPTS)
    (tmp_path / "state.json").write_text(garbage)
    before = snapshot(tmp_path)
    with pytest.raises(StateError, match=f"corrupt.*{why}.*--reset"):
        watch(tmp_path, lambda: dc(1), **OPTS)
    assert snapshot(tmp_path) == before
    r = watch(tmp_path, lambda: dc(1), reset=True, **OPTS)
    assert r.status == "initial" and any("moved the corrupt state file" in n for n in r.notes)
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("state.json.corrupt-")]
    assert len(aside) == 1 and aside[0].read_text() == garbage


def test_state_dir_not_a_directory(tmp_path):
    f = tmp_path / "file"
    f.write_text("precious")
    with pytest.raises(StateError, match="not a directory"):
        watch(f, lambda: dc(1), **OPTS)
    assert f.read_text() == "precious"


def _as_nobody(fn) -> str:
    """Run ``fn()`` in a forked child with the uid/gid of ``nobody`` (root can write anywhere, so
    as root the check needs an unprivileged process); returns what it raised, as text, or ''."""
    import pwd

    nobody = pwd.getpwnam("nobody")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges, run, report, never return into pytest
        os.close(r)
        msg = ""
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            msg = f"{type(exc).__name__}: {exc}"
        os.write(w, msg.encode() or b"-")
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    return "" if out == "-" else out


def test_state_dir_not_writable(tmp_path):
    if os.geteuid() == 0:
        import shutil
        import tempfile

        watch(tmp_path / "warm", lambda: dc(1), **OPTS)  # import everything before the fork
        base = tempfile.mkdtemp(prefix="plink-ro-")
        try:
            os.chmod(base, 0o755)
            d = os.path.join(base, "ro")
            os.mkdir(d)
            os.mkdir(os.path.join(d, "history"))
            os.chown(d, 65534, 65534)
            os.chmod(d, 0o500)
            out = _as_nobody(lambda: watch(d, lambda: dc(1), **OPTS))
        finally:
            shutil.rmtree(base)
        assert out.startswith("StateError") and "not writable" in out, out
        return
    d = tmp_path / "ro"
    d.mkdir()
    (d / "history").mkdir()
    d.chmod(0o500)
    try:
        with pytest.raises(StateError, match="not writable"):
            watch(d, lambda: dc(1), **OPTS)
    finally:
        d.chmod(0o700)


def test_history_pruned_and_derived_files_resynced(tmp_path):
    clock = Clock()
    emitted = tmp_path / "hosts.ompi"
    st = tmp_path / "st"
    for _ in range(4):
        r = watch(st, lambda: dc(1), keep=2, emit=[("openmpi", str(emitted))], slots=2, now=clock, **OPTS)
    assert len(runs(st)) == 2
    # pruning is housekeeping: counted in the status, but no reason for cron to mail
    assert r.pruned == 1 and r.status == "kept" and not r.noteworthy
    assert any("pruned 1 old run" in line for line in r.summary())
    order = read_state(st)["order"]
    lines = [ln for ln in emitted.read_text().splitlines() if not ln.startswith("#")]
    assert lines == [h for h in order for _ in range(2)]
    (st / "hosts.txt").write_text("stale\n")
    emitted.unlink()
    r = watch(st, lambda: dc(1), emit=[("openmpi", str(emitted))], slots=2, now=clock, **OPTS)
    assert r.status == "kept"
    assert (st / "hosts.txt").read_text().split() == order and emitted.exists()
    with pytest.raises(PlinkError, match="min-gain"):
        watch(st, lambda: dc(1), min_gain=5, **OPTS)


# -- the command ----------------------------------------------------------------


def run(*args):
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "plink", *args], capture_output=True, text=True, env=env, timeout=120)


def test_verbose_watch_shows_what_reading_the_probe_file_noted(tmp_path):
    """plink watch --probe-file -v said nothing of how it read a plain matrix (the unit it assumed, the
    placeholder names h0..h3 that then went into an --emit launcher file), where plink order says both.
    With -v the notes are shown; a cron run (no -v) stays quiet."""
    m = tmp_path / "u4.csv"
    m.write_text("0,1000,1000,1000\n1000,0,1000,1000\n1000,1000,0,1000\n1000,1000,1000,0\n")
    loud = run("watch", str(tmp_path / "a"), "--probe-file", str(m), "--time-limit", "0.2", "-v")
    assert loud.returncode == EXIT_CHANGED, loud.stderr
    assert "read in us, the default unit" in loud.stderr and "a launcher file needs real names" in loud.stderr
    quiet = run("watch", str(tmp_path / "b"), "--probe-file", str(m), "--time-limit", "0.2")
    assert quiet.returncode == EXIT_CHANGED and quiet.stderr == ""


def test_cli_exit_codes_quiet_and_json(tmp_path):
    p1, p2 = tmp_path / "p1.json", tmp_path / "p2.json"
    dc(1).save(p1)
    dc(2).save(p2)
    st = str(tmp_path / "state")
    first = run("watch", st, "--probe-file", str(p1), "--time-limit", "0.2")
    assert first.returncode == EXIT_CHANGED and "first run" in first.stdout, first.stderr
    quiet = run("watch", st, "--probe-file", str(p1), "--time-limit", "0.2")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (EXIT_KEPT, "", "")
    js = run("watch", st, "--probe-file", str(p2), "--time-limit", "0.2", "--json", "--min-gain", "5%")
    status = json.loads(js.stdout)
    assert js.returncode == EXIT_CHANGED == status["exit_code"] and status["status"] == "reordered"
    assert status["drift"]["links"]
    with open(os.path.join(st, "lock")) as fh:  # another run holds the lock
        import fcntl

        fcntl.flock(fh, fcntl.LOCK_EX)
        busy = run("watch", st, "--probe-file", str(p1))
        busy_json = run("watch", st, "--probe-file", str(p1), "--json")
    assert busy.returncode == EXIT_BUSY and "this run did nothing" in busy.stderr
    assert busy_json.returncode == EXIT_BUSY and json.loads(busy_json.stdout)["status"] == "busy"
    assert len(busy.stderr.strip().splitlines()) == 1
    (tmp_path / "state" / "state.json").write_text("{")
    bad = run("watch", st, "--probe-file", str(p1))
    assert bad.returncode == 1 and "corrupt" in bad.stderr and "Traceback" not in bad.stderr
    usage = run("watch", st)
    assert usage.returncode == 2 and "--probe-file" in usage.stderr


def test_unreachable_host_as_the_probe_writes_it(tmp_path):
    """meta.unreachable / meta.dead are {name: why} objects in real probe files."""
    from plink.probes.probe import probe_hosts
    from plink.probes.session import start_local_agents

    hosts = ["127.0.0.40", "127.0.0.41", "127.0.0.42", "127.0.0.43"]

    def connect(entries, key, deadline, on_done):  # the last host cannot be reached
        sessions, failures = start_local_agents(entries[:-1], key, deadline, on_done)
        failures[len(entries) - 1] = f"{entries[-1].name}: TimeoutError: timed out"
        return sessions, failures

    def prober():
        return probe_hosts(hosts, count=3, interval=0.002, connect=connect)

    probe = prober()
    assert probe.meta["unreachable"] == {"127.0.0.43": "127.0.0.43: TimeoutError: timed out"}
    st = tmp_path / "state"
    first = watch(st, prober, **OPTS)  # the first run orders what it has
    assert first.exit_code in (EXIT_KEPT, EXIT_CHANGED)
    second = watch(st, prober, **OPTS)
    assert second.exit_code == EXIT_KEPT and second.noteworthy
    assert any("127.0.0.43" in n for n in second.notes)
    # the same through the command line, from the written probe file
    path = tmp_path / "p.json"
    probe.save(path)
    r = run("watch", str(tmp_path / "st2"), "--probe-file", str(path), "--time-limit", "0.2", "-v")
    assert r.returncode in (EXIT_KEPT, EXIT_CHANGED) and "Traceback" not in r.stderr, r.stderr
    r = run("watch", str(tmp_path / "st2"), "--probe-file", str(path), "--time-limit", "0.2", "-v")
    assert r.returncode == EXIT_KEPT and "127.0.0.43" in r.stdout, r.stdout + r.stderr


def test_watch_takes_timeout_and_retries(tmp_path):
    r = run("watch", "--help")
    assert "--timeout" in r.stdout and "--retries" in r.stdout
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("127.0.0.1\n127.0.0.2\n")
    bad = run("watch", str(tmp_path / "s"), "--hosts", str(hosts), "--timeout", "0")
    assert bad.returncode == 2 and "--timeout" in bad.stderr


def test_shared_model_is_the_default_and_recorded(tmp_path):
    p = tmp_path / "p.json"
    dc(1).save(p)
    st = str(tmp_path / "st")
    r = run("watch", st, "--probe-file", str(p), "--time-limit", "0.2", "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 4 and doc["model"] == "shared" and doc["cost_unit"] == "s", r.stderr
    assert 0 < doc["cost_new"] < 1.0  # seconds for a 25 MiB ring, not microseconds
    assert json.loads((tmp_path / "st" / "state.json").read_text())["model"] == "shared"
    r = run("watch", st, "--probe-file", str(p), "--time-limit", "0.2", "--model", "pairsum", "--json")
    doc = json.loads(r.stdout)
    assert doc["model"] == "pairsum" and doc["cost_unit"] == "us" and doc["cost_current"] > 1.0, r.stderr
    assert any("cost model changed from shared to pairsum" in n for n in doc["notes"])
    r = run("watch", st, "--probe-file", str(p), "--time-limit", "0.2", "--model", "pairsum", "-v")
    assert "pairsum cost model on the new probe: current" in r.stdout and " us," in r.stdout


def test_emit_into_a_missing_directory_changes_nothing(tmp_path):
    st = tmp_path / "st"
    with pytest.raises(PlinkError, match="does not exist"):
        watch(st, lambda: dc(1), emit=[("openmpi", str(tmp_path / "no" / "dir" / "h"))], **OPTS)
    assert not (st / "state.json").exists() and not (st / "history").exists()
    (tmp_path / "adir").mkdir()
    with pytest.raises(PlinkError) as e:  # a directory as the file: refused before anything is written
        watch(st, lambda: dc(1), emit=[("openmpi", str(tmp_path / "adir"))], **OPTS)
    assert str(e.value) == f"cannot write --emit openmpi:{tmp_path / 'adir'}: it is a directory (name a file in it)"
    assert not (st / "state.json").exists() and not (st / "history").exists()


@pytest.mark.parametrize("name", ["state.json", "order.json", "hosts.txt", "lock", "history/x.txt", "state.json.bak"])
def test_emit_over_the_state_dirs_own_files_is_refused(tmp_path, name):
    """--emit openmpi:STATE/state.json was written over the state, and the next run failed."""
    st = tmp_path / "st"
    watch(st, lambda: dc(1), **OPTS)
    state = (st / "state.json").read_bytes()
    with pytest.raises(PlinkError, match="one of .* own files"):
        watch(st, lambda: dc(1), emit=[("openmpi", str(st / name))], **OPTS)
    assert (st / "state.json").read_bytes() == state
    watch(st, lambda: dc(1), emit=[("openmpi", str(st / "hosts.ompi"))], **OPTS)  # a name of its own is fine
    assert (st / "hosts.ompi").exists() and watch(st, lambda: dc(1), **OPTS).exit_code == 0


def test_names_no_launcher_file_can_hold(tmp_path):
    """Region names (a wide-area matrix): order.json keeps them, hosts.txt is not written (it would
    read back as other hosts), and an --emit file is refused before anything is written."""
    probe = dc(1)
    probe.hosts[0] = probe.hosts[0].__class__("aws:sa-east-1")
    st = tmp_path / "st"
    with pytest.raises(PlinkError, match="'aws:sa-east-1' cannot be written to an --emit file"):
        watch(st, lambda: probe, emit=[("openmpi", str(tmp_path / "h.ompi"))], **OPTS)
    assert not (st / "state.json").exists() and not (tmp_path / "h.ompi").exists()
    res = watch(st, lambda: probe, **OPTS)
    assert res.exit_code == 4 and not (st / "hosts.txt").exists()
    assert any(n.startswith("hosts.txt not written: host name 'aws:sa-east-1'") for n in res.notes)
    assert "aws:sa-east-1" in (st / "order.json").read_text()


def test_cli_emit_over_the_probe_file_is_refused(tmp_path):
    p = tmp_path / "p.json"
    dc(1).save(p)
    before = p.read_bytes()
    r = run("watch", str(tmp_path / "st"), "--probe-file", str(p), "--emit", f"openmpi:{p}")
    assert r.returncode == 2 and "is the file --probe-file reads" in r.stderr and p.read_bytes() == before
    r = run("watch", str(tmp_path / "st"), "--probe-file", str(p), "--emit", f"bogus:{tmp_path / 'x'}")
    assert r.returncode == 2 and "--emit: cannot keep a 'bogus' file in sync" in r.stderr  # a bad option: usage
    # every --emit path refused is a usage error, as -o's are (a state file or a missing directory exited 1)
    for path, said in ((tmp_path / "st" / "state.json", "own files"), (tmp_path / "no" / "h", "does not exist")):
        r = run("watch", str(tmp_path / "st"), "--probe-file", str(p), "--emit", f"openmpi:{path}")
        assert r.returncode == 2 and said in r.stderr, r.stderr


def test_emit_to_a_fifo_is_written_when_read_and_never_waited_for(tmp_path):
    """A FIFO given to --emit was read to compare it with the order: the run blocked for good, even
    with a reader on the pipe; with no reader, opening it to write blocked as well (the lock held,
    every later cron run 75). A FIFO now gets the order on every run that finds a reader, and a run
    with none goes on. /dev/null compared unequal on every run ("rewrote /dev/null")."""
    import threading

    fifo = tmp_path / "ff"
    os.mkfifo(fifo)

    def run_with_reader():
        got, done = [], []
        reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
        reader.start()
        time.sleep(0.2)  # the reader has the pipe open (or is opening it) before the run writes
        runner = threading.Thread(target=lambda: done.append(
            watch(tmp_path / "st", lambda: dc(1), emit=[("openmpi", str(fifo))], **OPTS)), daemon=True)
        runner.start()
        runner.join(60)
        reader.join(10)
        return done, got

    done, got = run_with_reader()
    hosts = (tmp_path / "st" / "hosts.txt").read_text().splitlines()
    assert done and done[0].exit_code == 4 and got and got[0].splitlines()[-16:] == hosts
    # no reader: the run neither waits nor fails, and says nothing
    t = time.monotonic()
    res = watch(tmp_path / "st", lambda: dc(1), emit=[("openmpi", str(fifo))], **OPTS)
    assert res.exit_code == 0 and not res.notes and time.monotonic() - t < 30
    # a reader later gets the current order, though the run keeps it
    done, got = run_with_reader()
    assert done and done[0].exit_code == 0 and got and got[0].splitlines()[-16:] == hosts
    assert fifo.is_fifo()
    res = watch(tmp_path / "st", lambda: dc(1), emit=[("openmpi", os.devnull)], **OPTS)
    assert res.exit_code == 0 and not any("rewrote" in n for n in res.notes)


def test_emit_paths_watch_got_wrong(tmp_path, monkeypatch):
    """`--emit plain:./-` went to stdout (pathlib reads ./- as -); an --emit file in the state directory
    failed on the first run ("directory ... does not exist", though the run makes it); a file that
    could not be written after the state was committed left exit 1 with the state changed."""
    monkeypatch.chdir(tmp_path)
    watch(tmp_path / "st", lambda: dc(1), emit=[("plain", "./-"), ("openmpi", str(tmp_path / "st" / "h.ompi"))],
          **OPTS)
    assert (tmp_path / "-").read_text().split() == (tmp_path / "st" / "hosts.txt").read_text().split()
    assert (tmp_path / "st" / "h.ompi").exists()
    # a new order whose --emit file cannot be written: the state stays as it was, so the next run
    # writes the order again instead of calling it kept
    from plink.launch import emitters

    state = (tmp_path / "st" / "state.json").read_bytes()
    real = emitters.emit

    def broken(fmt, *a, **kw):
        if fmt == "deepspeed":
            raise PlinkError("cannot write the deepspeed file")
        return real(fmt, *a, **kw)

    monkeypatch.setattr(emitters, "emit", broken)
    with pytest.raises(PlinkError, match="deepspeed"):
        watch(tmp_path / "st", lambda: dc(2, jitter=0.3), emit=[("deepspeed", str(tmp_path / "d.txt"))], **OPTS)
    assert (tmp_path / "st" / "state.json").read_bytes() == state


def test_cli_emit_to_stdout_with_json_is_refused(tmp_path):
    p = tmp_path / "p.json"
    dc(1).save(p)
    r = run("watch", str(tmp_path / "st"), "--probe-file", str(p), "--emit", "openmpi:-", "--json")
    assert r.returncode == 2 and "--emit openmpi:- and --json would both write to stdout" in r.stderr
    assert json.loads(r.stdout)["status"] == "error" and not (tmp_path / "st").exists()  # the status alone


@pytest.mark.parametrize("bad", [["--size", "abc"], ["--algo", "nope"], ["--no-such-option"], []])
def test_cli_json_status_of_a_usage_error(tmp_path, bad):
    """--json prints the status always: an option click itself refuses too (it printed nothing)."""
    p = tmp_path / "p.json"
    dc(1).save(p)
    where = ["--probe-file", str(p)] if bad else []  # []: neither --hosts nor --probe-file
    r = run("watch", str(tmp_path / "st"), *where, *bad, "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 2 and doc["status"] == "error" and doc["exit_code"] == 2 and not doc["changed"]
    assert r.stderr.startswith("plink: error:") and doc["message"] in r.stderr
    assert json.loads(run("watch", str(tmp_path / "st"), *where, *bad).stdout or "null") is None  # without --json: no stdout


def test_cli_json_status_of_a_failed_run(tmp_path):
    """--json says "Print the run's status as JSON (always)"; a failed run printed nothing on stdout."""
    p = tmp_path / "p.json"
    p.write_text("{ not json")
    r = run("watch", str(tmp_path / "st"), "--probe-file", str(p), "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and doc["status"] == "error" and doc["exit_code"] == 1 and not doc["changed"]
    assert "invalid JSON" in doc["message"] and r.stderr.startswith("plink: error:")


def test_torchrun_map_kept_by_watch_names_itself_for_node_rank(tmp_path):
    """Its header told every node to run `plink node-rank STATE/order.json`, a path on this host
    relative to cron's directory; plink emit's names the map itself, which is copied to the nodes."""
    m = tmp_path / "n.torchrun"
    watch(tmp_path / "st", lambda: dc(1), emit=[("torchrun", str(m))], **OPTS)
    text = m.read_text()
    assert f"plink node-rank {m}" in text and "order.json" not in text


def test_nothing_measured_names_the_unreachable_hosts(tmp_path):
    probe = dc(1)
    probe.latency[:] = np.nan
    probe.meta["complete"] = False
    probe.meta["unreachable"] = {n: f"{n}: TimeoutError: timed out" for n in probe.names}
    with pytest.raises(PlinkError, match=r"no pair of hosts was measured \(unreachable: .*" + probe.names[0]):
        watch(tmp_path / "st", lambda: probe, **OPTS)
    assert not (tmp_path / "st" / "state.json").exists()


def test_drift_lists_only_links_that_changed():
    """Two identical probes listed their first links as changed by "+0%"."""
    from plink.watch import format_drift

    old = dc(1)
    rep = drift_report(old, ProbeData(hosts=old.hosts, latency=old.latency.copy()), top=5)
    assert rep["links"] == [] and rep["pairs_compared"] == 120
    assert format_drift(rep)[-1] == "no link changed by 1% or more"
    lat = old.latency.copy()
    lat[0, 1] = lat[1, 0] = lat[0, 1] * 1.5
    lat[2, 3] = lat[3, 2] = lat[2, 3] * 1.004  # under 1%: not listed
    rep = drift_report(old, ProbeData(hosts=old.hosts, latency=lat), top=5)
    assert [(x["a"], x["b"]) for x in rep["links"]] == [(old.names[0], old.names[1])]
    assert not any("+0%" in line for line in format_drift(rep))


def test_an_emit_added_on_a_later_run_is_written_not_rewritten(tmp_path):
    """A new --emit path on a run that kept the order was reported 'rewrote X: it did not match'."""
    watch(tmp_path / "st", lambda: dc(1), **OPTS)
    new = tmp_path / "hosts.ompi"
    res = watch(tmp_path / "st", lambda: dc(1), emit=[("openmpi", str(new))], **OPTS)
    assert not res.changed and new.exists()
    assert f"wrote {new}: it was missing (a new --emit, or deleted)" in res.notes
    new.write_text("stale\n")
    res = watch(tmp_path / "st", lambda: dc(1), emit=[("openmpi", str(new))], **OPTS)
    assert f"rewrote {new}: it did not match the current order" in res.notes


def test_a_probe_with_bandwidths_but_no_latency_is_said_so(tmp_path):
    p = dc(1, bandwidth=True)
    p.latency[:] = np.nan
    with pytest.raises(PlinkError, match=r"no latency was measured, only pair bandwidths \(.*\): nothing changed"):
        watch(tmp_path / "st", lambda: p, **OPTS)


@pytest.mark.parametrize("terminated", [False, True])
def test_cli_json_status_of_an_interrupted_run(tmp_path, monkeypatch, capsys, terminated):
    """--json promises the status always: a Ctrl-C or SIGTERM printed none."""
    import plink.watch as watch_mod
    from plink.cli import main
    from plink.errors import Terminated

    def stopped(*a, **kw):
        raise Terminated() if terminated else KeyboardInterrupt()

    monkeypatch.setattr(watch_mod, "watch", stopped)
    monkeypatch.setattr(Terminated, "received", terminated)
    p = tmp_path / "p.json"
    dc(1).save(p)
    with pytest.raises(SystemExit) as exc:
        main(["watch", str(tmp_path / "st"), "--probe-file", str(p), "--json"])
    out = capsys.readouterr()
    doc = json.loads(out.out)
    code = 143 if terminated else 130
    assert exc.value.code == code and doc == {"status": "terminated" if terminated else "interrupted", "changed": False,
                                              "message": "stopped by SIGTERM" if terminated else "stopped by Ctrl-C",
                                              "exit_code": code}


@pytest.mark.parametrize("bad", ["hosts", "probe"])
def test_cli_a_bad_input_on_the_first_run_makes_no_state_directory(tmp_path, bad):
    """A first run with a bad host list exited 1 ('nothing changed') but left DIR/history and DIR/lock."""
    f = tmp_path / "in.txt"
    f.write_text("a\nb\x01c\n")
    where = ["--hosts", str(f)] if bad == "hosts" else ["--probe-file", str(tmp_path / "missing.json")]
    r = run("watch", str(tmp_path / "st"), *where, "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["status"] == "error", r.stderr
    assert not (tmp_path / "st").exists()


def test_an_initial_order_beside_a_state_says_it_is_not_used(tmp_path):
    """--initial-order was dropped without a word once the state held an order (from another host list too)."""
    watch(tmp_path / "st", lambda: dc(1), **OPTS)
    res = watch(tmp_path / "st", lambda: dc(1), initial_order=["x", "y"], **OPTS)
    assert any(n.startswith("--initial-order not used:") and "(--reset starts again from the file)" in n
               for n in res.notes), res.notes
    assert not any("--initial-order" in n for n in watch(tmp_path / "st", lambda: dc(1), **OPTS).notes)


def test_cli_a_closed_stdout_keeps_the_runs_exit_code(tmp_path):
    """With stdout closed a run that wrote a new order exited 1 ('error, nothing changed'): cron's wrapper
    would not hand out the new launcher files. The report is lost (a warning says so); exit 4 stands."""
    p = tmp_path / "p.json"
    dc(1).save(p)
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "plink", "watch", str(tmp_path / "st"), "--probe-file", str(p), "--json"],
                       stderr=subprocess.PIPE, text=True, env=env, preexec_fn=lambda: os.close(1), timeout=120)
    assert r.returncode == 4, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("plink: warning: cannot print the run's report (standard "
                                                        "output is closed); the run itself changed the order: exit 4")
    assert (tmp_path / "st" / "state.json").exists()


def test_watch_prints_costs_as_plink_order_does(tmp_path):
    """plink watch printed '0.04309 s' where plink order prints '43.080 ms' for the same cost."""
    p = tmp_path / "p.json"
    dc(1).save(p)
    assert run("watch", str(tmp_path / "st"), "--probe-file", str(p), "--time-limit", "0.2").returncode == EXIT_CHANGED
    proc = run("watch", str(tmp_path / "st"), "--probe-file", str(p), "--time-limit", "0.2", "-v")  # kept: the costs
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in (proc.stdout + proc.stderr).splitlines() if "cost model on" in ln)
    assert re.search(r"current \d+\.\d{3} (us|ms|s), best found \d+\.\d{3} (us|ms|s) \(ring\)", line), line


def test_the_history_keeps_small_bandwidths(tmp_path, racked_bandwidth_csv):
    """A bandwidth matrix in kbit/s was kept in the history at 4 decimals of a Gbit/s, so as 0: every later
    run said 'no drift report: the last probe cannot be read' and --window was ignored; in Mbit/s the
    rounding read as changes of -21% to +23% on an unchanged file (outside-in check)."""
    from plink.data.inputs import load_input

    probe = load_input(racked_bandwidth_csv(50.0, 5.0, 0.5), kind="bandwidth", unit="Kbit/s").probe
    from plink.data.probefile import from_dict

    back = from_dict(probe.to_dict())
    np.testing.assert_allclose(back.bandwidth, probe.bandwidth, rtol=1e-3)
    np.testing.assert_allclose(back.latency, probe.latency, rtol=1e-3)  # (its inverse: microseconds per byte)
    state = tmp_path / "state"
    for _ in range(2):
        res = watch(state, lambda: probe, algo="ring", window=3, **OPTS)
    assert not any("cannot be read" in n for n in res.notes), res.notes
    assert res.probes_used == 2 and res.drift is not None and res.drift["median_change"] == pytest.approx(0, abs=1e-3)


def test_order_files_match_the_probe_whatever_the_case(tmp_path):
    """An order file in upper case was 'from another host list' for plink show --order and plink watch
    --initial-order, and a probe in upper case 'differed' from its schedule in plink verify, while groups,
    stats, node-rank and emit take names differing only in case as one host (outside-in check)."""
    from click.testing import CliRunner

    from plink.cli import cli
    from plink.watch import check_same_hosts

    probe = dc(1)
    upper = [n.upper() for n in reversed(probe.names)]
    assert check_same_hosts(upper, probe, "x") == list(reversed(probe.names))  # the probe's spelling
    with pytest.raises(PlinkError, match="lists 1 host"):
        check_same_hosts(upper[:-1] + ["OTHER"], probe, "x")
    with pytest.raises(PlinkError, match=r"x lists host '.*' twice \(as '.*': names differing only in case"):
        check_same_hosts(upper + [probe.names[0]], probe, "x")  # (it was taken: one host twice)
    p = tmp_path / "p.json"
    probe.save(p)
    o = tmp_path / "O.txt"
    o.write_text("\n".join(upper) + "\n")
    res = CliRunner().invoke(cli, ["show", str(p), "--order", str(o), "--plot", str(tmp_path / "b.png")])
    assert res.exit_code == 0, res.output
    res = watch(tmp_path / "w", lambda: probe, algo="ring", initial_order=upper, **OPTS)
    assert res.status in ("kept", "reordered") and set(res.order) == set(probe.names)
    s = tmp_path / "s.json"
    assert CliRunner().invoke(cli, ["schedule", str(p), "--size", "1MiB", "-o", str(s)]).exit_code == 0
    shouting = probe.to_dict()
    shouting["hosts"] = [dict(h, name=h["name"].upper()) if isinstance(h, dict) else h.upper() for h in shouting["hosts"]]
    pu = tmp_path / "pu.json"
    pu.write_text(json.dumps(shouting))
    res = CliRunner().invoke(cli, ["verify", str(s), str(pu)])
    assert res.exit_code == 0, (res.output, res.exception)


def test_watch_json_carries_what_reading_the_probe_file_said(tmp_path):
    """plink watch --json had the run's notes but not the input's ('the matrix names no hosts', a unit
    warning): a cron job reading the JSON never saw them (stderr shows them with -v only)."""
    from click.testing import CliRunner

    from plink.cli import cli

    m = tmp_path / "m.csv"
    m.write_text("0,10,90,90\n10,0,90,90\n90,90,0,10\n90,90,10,0\n")
    res = CliRunner().invoke(cli, ["watch", str(tmp_path / "w"), "--probe-file", str(m), "--unit", "us",
                                   "--time-limit", "1", "--json"])
    assert res.exit_code in (0, 4), (res.output, res.exception)
    doc = json.loads(res.stdout)
    assert any("names no hosts" in n for n in doc["input_notes"]), doc["input_notes"]
    assert "names no hosts" not in res.stderr  # (quiet without -v, as before)
    p = tmp_path / "p.json"
    dc(1).save(p)
    res = CliRunner().invoke(cli, ["watch", str(tmp_path / "w2"), "--probe-file", str(p), "--time-limit", "1", "--json"])
    assert json.loads(res.stdout)["input_notes"] == []


def test_a_window_keeps_the_probes_bandwidths_and_the_drift_report_their_digits(tmp_path, racked_bandwidth_csv):
    """--window 2 or more priced the median of the latencies alone: the probe's bandwidths and uplinks were
    dropped (15.8 ms became 38.8 ms on an unchanged file); the drift report rounded kbit/s to '0 -> 0 Gbit/s'
    and listed a bandwidth matrix's links a second time as microseconds (outside-in check)."""
    from plink.data.inputs import load_input
    from plink.watch import format_drift, smoothed

    probe = dc(2, bandwidth=True)
    state = tmp_path / "state"
    one = watch(state, lambda: probe, algo="ring", window=1, **OPTS)
    three = watch(state, lambda: probe, algo="ring", window=3, **OPTS)
    assert three.probes_used == 2 and three.cost_current == pytest.approx(one.cost_new, rel=1e-6)
    sm, used = smoothed(probe, state / "history", 3)
    assert used == 3 and sm.bandwidth is not None and sm.uplinks == probe.uplinks
    np.testing.assert_allclose(sm.bandwidth, probe.bandwidth, rtol=1e-3)
    kbit = load_input(racked_bandwidth_csv(50.0, 5.0, 0.5), kind="bandwidth", unit="Kbit/s").probe
    changed = kbit.bandwidth.copy()
    changed[0, 1] = changed[1, 0] = kbit.bandwidth[0, 1] / 2
    rep = drift_report(kbit, ProbeData(hosts=kbit.hosts, latency=8e-3 / np.where(np.isnan(changed), np.inf, changed),
                                       bandwidth=changed, meta=dict(kbit.meta)))
    assert rep["links"] == [] and rep["median_change_of"] == "bandwidth"
    (link,) = rep["bandwidth_links"]
    assert link["old"] == pytest.approx(kbit.bandwidth[0, 1], rel=1e-3) and link["change"] == pytest.approx(-0.5)
    line = format_drift(rep)[-1]
    assert " kbit/s -> " in line and line.endswith("kbit/s (-50%)"), line


def _with_unreachable(probe: ProbeData, name: str) -> ProbeData:
    """``probe`` plus a host ``name`` that could not be reached (its pairs unmeasured), as plink probe writes it."""
    from plink.data.probefile import Host

    n = probe.n + 1
    lat = np.full((n, n), np.nan)
    lat[:-1, :-1] = probe.latency
    lat[-1, -1] = 0.0
    why = {name: f"{name}: cannot resolve {name} (Name or service not known)"}
    return ProbeData(hosts=list(probe.hosts) + [Host(name)], latency=lat,
                     meta={**probe.meta, "complete": False, "unreachable": why})


def test_a_host_added_but_unreachable_writes_no_order_and_says_so(tmp_path):
    """A misspelled host added to the host list was put into a new order (mid-ring, a rack split three ways),
    exit 4, and nothing printed said it was unreachable (only status.json): no order fits, so the run is an
    error naming the host, and the state, the order files and the --emit files stay as they were."""
    clock = Clock()
    emit = tmp_path / "hosts.ompi"
    st = tmp_path / "st"
    watch(st, lambda: dc(1), emit=[("openmpi", str(emit))], now=clock, **OPTS)
    before, emitted = snapshot(st), emit.read_text()
    bad = _with_unreachable(dc(1), "oi51r9h9")
    with pytest.raises(PlinkError) as exc:
        watch(st, lambda: bad, emit=[("openmpi", str(emit))], now=clock, **OPTS)
    msg = str(exc.value)
    assert msg.startswith("the host list changed (hosts added: oi51r9h9) but the probe is incomplete "
                          "(unreachable: oi51r9h9): no new order written"), msg
    assert f"the current order ({st / 'state.json'}) is for the old host list" in msg
    assert snapshot(st) == before and emit.read_text() == emitted
    # the command line: one error line, exit 1 (an error, nothing changed), and --json's status says it too
    p = tmp_path / "bad.json"
    bad.save(p)
    r = run("watch", str(st), "--probe-file", str(p), "--model", "pairsum", "--time-limit", "0.2")
    assert r.returncode == 1 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "unreachable: oi51r9h9" in r.stderr and "Traceback" not in r.stderr
    r = run("watch", str(st), "--probe-file", str(p), "--model", "pairsum", "--time-limit", "0.2", "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and doc["status"] == "error" and "unreachable: oi51r9h9" in doc["message"]
    assert snapshot(st) == before


def test_a_first_order_on_an_incomplete_probe_names_the_unreachable_hosts_in_its_output(tmp_path):
    """The first run ordered what it had (exit 4) and its output did not say a host was unreachable."""
    p = tmp_path / "p.json"
    _with_unreachable(dc(1), "gone1").save(p)
    r = run("watch", str(tmp_path / "st"), "--probe-file", str(p), "--model", "pairsum", "--time-limit", "0.2")
    assert r.returncode == EXIT_CHANGED, r.stderr
    assert "the probe is incomplete (unreachable: gone1)" in r.stdout, r.stdout


def test_costs_on_assumed_capacities_say_what_was_assumed(tmp_path):
    """plink watch quoted 'current 36.838 ms, best found 36.818 ms' from NICs assumed at 10 Gbit/s without a
    word (status.json: "notes": []), where plink order on the same probe says 'no bandwidth measured: host
    NICs assumed 10 Gbit/s (set --nic-gbps)' (outside-in check). Its notes come from the same function,
    a run that only keeps the order stays quiet, and --nic-gbps sets the NICs as plink order's does."""
    from plink.order import order_hosts

    shared = dict(time_limit=5, max_iter=2000, seed=0, model="shared")
    probe = dc(1)
    nic_note = "no bandwidth measured: host NICs assumed 10 Gbit/s (set --nic-gbps)"
    assert nic_note in order_hosts(probe, "ring", max_iter=2000).notes  # plink order's own words
    st = tmp_path / "st"
    first = watch(st, lambda: probe, **shared)
    assert first.model_notes[0] == nic_note and "uplink" in first.model_notes[1], first.model_notes
    kept = watch(st, lambda: probe, **shared)
    assert kept.status == "kept" and not kept.noteworthy  # (assumed on every run: no reason to mail cron)
    lines = kept.summary()
    at = next(i for i, ln in enumerate(lines) if "cost model on the new probe" in ln)
    assert lines[at + 1] == nic_note, lines
    status = json.loads((st / "history" / runs(st)[-1] / "status.json").read_text())
    assert status["notes"][:2] == kept.model_notes and "model_notes" not in status
    fast = watch(tmp_path / "fast", lambda: probe, nic_gbps=25, **shared)
    assert fast.model_notes[0] == "no bandwidth measured: host NICs assumed 25 Gbit/s"
    # measured bandwidths: the NICs are not assumed (the uplinks, not measured here, still are); the pair sum
    # assumes no capacity
    bw = dc(2, bandwidth=True)
    assert watch(tmp_path / "bw", lambda: bw, **shared).model_notes == [
        n for n in order_hosts(bw, "ring", max_iter=2000).notes if "measured: assumed" in n] != []
    assert watch(tmp_path / "ps", lambda: probe, **OPTS).model_notes == []
    p = tmp_path / "p.json"
    probe.save(p)
    r = run("watch", str(tmp_path / "cli"), "--probe-file", str(p), "--time-limit", "0.2", "--nic-gbps", "0")
    assert r.returncode == 2 and "--nic-gbps (nic_gbps) must be > 0" in r.stderr and not (tmp_path / "cli").exists()
    r = run("watch", str(tmp_path / "cli"), "--probe-file", str(p), "--time-limit", "0.2", "--nic-gbps", "40")
    assert r.returncode == EXIT_CHANGED and "host NICs assumed 40 Gbit/s" in r.stdout, r.stdout + r.stderr
