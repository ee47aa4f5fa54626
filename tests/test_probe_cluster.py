"""`plink probe` against a real emulated cluster: 2 racks x 4 hosts in network
namespaces, sshd per host, rack uplinks shaped with htb (200 Mbit/s shared by
the rack vs 400 Mbit/s host links), shells as on a fresh VM.  Skipped, with the reason, without root,
ip netns or sshd; CI runs it as root.
"""

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from plink.data.probefile import load
from plink.probes.netns import NetnsCluster, unavailable_reason
from plink.probes.probe import probe_hosts
from plink.probes.ssh import SSHOptions

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def cluster():
    reason = unavailable_reason(sshd=True)
    if reason:
        pytest.skip(reason)
    with NetnsCluster(racks=2, hosts_per_rack=4, host_mbit=400,
                      uplink_mbit=200, extra_hops=4, clean_shell=True) as c:
        yield c


def plink(*args, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "plink", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def assert_nothing_left(cluster, seconds=10, after="the probe"):
    """Only sshd listens and runs on every host within ``seconds`` after ``after``."""
    end = time.monotonic() + seconds
    while True:
        leftovers = cluster.leftovers()
        if not leftovers:
            return
        if time.monotonic() > end:
            pytest.fail(f"still there {seconds} s after {after}: {leftovers}")
        time.sleep(0.2)


def check_schedule(meta, n, pairs_expected, key="bandwidth_pairs"):
    seen = set()
    for rnd in meta["schedule"]:
        if key not in rnd:
            continue
        hosts = [h for p in rnd[key] for h in p]
        assert len(hosts) == len(set(hosts)), f"a host in two pairs of round {rnd['round']}"
        for a, b in rnd[key]:
            assert (a, b) not in seen
            seen.add((a, b))
    assert seen == set(pairs_expected)


def test_full_probe_latency_and_bandwidth(cluster, tmp_path):
    out = tmp_path / "probe.json"
    r = plink("probe", cluster.hostfile, "-o", str(out), "--ssh-config", cluster.ssh_config,
              "--count", "10", "--interval", "0.005", "--bandwidth", "--bw-tool", "agent", "--bw-seconds", "0.5",
              "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["complete"] and summary["missing_pairs"] == 0 and summary["exit_code"] == 0
    # 7 latency rounds (one pass) and 7 bandwidth rounds; it counted the schedule's entries (8)
    assert summary["rounds_run"] == 14

    p = load(out)
    n = p.n
    assert n == 8 and p.n_missing_pairs() == 0
    assert np.isfinite(p.bandwidth[~np.eye(n, dtype=bool)]).all()
    # O(N) rounds: N-1 rounds of N/2 disjoint pairs, every pair once
    lat, bw = p.meta["schedule"][0], p.meta["schedule"][1:]
    assert p.meta["rounds"] == 7 and lat["rounds"] == 7 and lat["pairs"] == 28 and len(bw) == 7
    assert all(len(r["bandwidth_pairs"]) == 4 for r in bw)
    check_schedule(p.meta, n, itertools.combinations(range(n), 2))
    # the pairs of a round ran at the same time: the agents' schedule has 7 slots of one pair's
    # probe time (10 x 5 ms + a guard), not 28; the pass's wall time adds start-up and the
    # results' streaming (1.43 s once on a loaded 2-core machine, so it is only checked for a
    # timeout's worth of waiting), a bandwidth round about 2 x 0.5 s
    assert lat["slot_s"] < 10 * 0.005 * 1.1
    assert lat["seconds"] < lat["rounds"] * lat["slot_s"] + 3.0
    assert max(r["seconds"] for r in bw) < 2 * (2 * 0.5)
    # hosts reported by the agents: their own addresses
    assert [h.address for h in p.hosts] == [h.address for h in cluster.hosts]

    # bandwidth across racks (a shared 200 Mbit/s uplink) is measurably lower
    # than inside a rack (400 Mbit/s host links)
    rack = np.array([cluster.rack_of(h.name) for h in p.hosts])
    same = (rack[:, None] == rack[None, :]) & ~np.eye(n, dtype=bool)
    cross = rack[:, None] != rack[None, :]
    intra_bw, cross_bw = np.median(p.bandwidth[same]), np.median(p.bandwidth[cross])
    assert 0.15 < intra_bw < 0.45, intra_bw  # Gbit/s, at most the 400 Mbit/s host link
    assert cross_bw < 0.7 * intra_bw, (intra_bw, cross_bw)
    assert p.bandwidth[cross].max() < 0.21  # never above the uplink rate
    assert p.latency[~np.eye(n, dtype=bool)].min() > 0
    assert_nothing_left(cluster)


def test_udp_pass_reports_its_rounds_as_their_results_come_back(cluster, tmp_path):
    """A udp pass runs on the agents' clocks; its progress counted passes (0 of 1 until the pass
    was over), so a long pass showed no progress. Now it counts the pass's rounds as results arrive."""
    events = []
    opts = SSHOptions(ssh_config=cluster.ssh_config, retries=0, connect_timeout=5)
    probe_hosts(cluster.hostfile, count=40, interval=0.01, ssh=opts, progress=events.append)
    rounds = [(e.done, e.total) for e in events if e.phase == "round"]
    assert rounds[0] == (0, 7) and rounds[-1] == (7, 7)
    assert len({d for d, _ in rounds}) >= 3  # seen moving (7 rounds of 0.4 s; results stream every 0.25 s)
    assert [d for d, _ in rounds] == sorted(d for d, _ in rounds)
    assert_nothing_left(cluster)


def test_hosts_die_mid_probe_cost_one_timeout_then_resume(cluster, tmp_path):
    import threading

    out = tmp_path / "probe.json"
    victims = [cluster.hosts[5].name, cluster.hosts[2].name]
    count, interval, timeout = 40, 0.01, 3.0
    bound = 7 * count * interval
    killer = threading.Timer(0.35 * bound + 1.0, lambda: [cluster.kill_host(v, link_delay=0) for v in victims])
    opts = SSHOptions(ssh_config=cluster.ssh_config, retries=0, connect_timeout=5)

    def started(ev):
        if ev.phase == "round" and not killer.is_alive() and not killer.finished.is_set():
            killer.start()

    try:
        t0 = time.monotonic()
        part = probe_hosts(cluster.hostfile, count=count, interval=interval, checkpoint=out, ssh=opts,
                           reply_timeout=timeout, progress=started)
        wall = time.monotonic() - t0
        killer.join()
        # reported, their remaining pairs missing, everything else measured
        assert not part.meta["complete"] and set(victims) <= set(part.meta["dead"])
        on_disk = load(out)
        vs = {on_disk.index(v) for v in victims}
        missing = {tuple(sorted(map(int, ij))) for ij in zip(*np.nonzero(np.triu(on_disk.missing_mask(), 1)))}
        assert missing and all(set(pair) & vs for pair in missing)
        assert on_disk.meta["missing_pairs"] == len(missing) and on_disk.meta["complete"] is False
        # two hosts dying cost about one timeout together, not one each
        assert wall < 2.0 + bound + 1.5 * timeout, (wall, bound)
        measured_before = on_disk.latency.copy()
    finally:
        for v in victims:
            cluster.revive_host(v)

    # the CLI on the partial file says why and exits 3 ... and --resume fills it in
    r = plink("probe", cluster.hostfile, "-o", str(out), "--ssh-config", cluster.ssh_config,
              "--count", str(count), "--interval", str(interval), "--resume", "--quiet")
    assert r.returncode == 0, r.stderr
    done = load(out)
    assert done.n_missing_pairs() == 0 and done.meta["complete"]
    known = ~np.isnan(measured_before)
    np.testing.assert_allclose(done.latency[known], measured_before[known], atol=1e-3)  # nothing re-measured
    assert done.meta["schedule"][0]["pairs"] == len(missing)  # only the victims' missing pairs were probed
    assert_nothing_left(cluster)


def test_unreachable_host_gives_partial_file_and_exit_3(cluster, tmp_path):
    hosts = tmp_path / "hosts.txt"
    # three real hosts (a Slurm range with OpenMPI slots) and an address inside the
    # testbed's subnet that no one has
    pre, nobody = cluster.prefix, f"{cluster.subnet}.9.9"
    assert [h.name for h in cluster.hosts[:3]] == [f"{pre}r0h0", f"{pre}r0h1", f"{pre}r0h2"]
    hosts.write_text(f"# comment\n{pre}r0h[0-2] slots=4\n\nroot@{nobody}   # nobody\n")
    out = tmp_path / "probe.json"
    r = plink("probe", str(hosts), "-o", str(out), "--ssh-config", cluster.ssh_config,
              "--known-hosts", cluster.known_hosts, "--count", "5", "--interval", "0.005",
              "--retries", "0", "--timeout", "3")
    assert r.returncode == 3, r.stderr
    assert f"{nobody} unreachable" in r.stderr and "exit 3" in r.stderr
    p = load(out)
    assert p.n_missing_pairs() == 3 and nobody in p.meta["unreachable"]
    assert np.isfinite(p.latency[:3, :3]).all()
    assert_nothing_left(cluster)


def test_unknown_host_keys_are_refused_by_the_cli(cluster, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"{cluster.hosts[0].name}\n{cluster.hosts[4].name}\n")
    out = tmp_path / "p.json"
    out.write_text("a good probe file of an earlier run\n")
    args = ["probe", str(hosts), "-o", str(out), "--ssh-config", cluster.ssh_config,
            "--known-hosts", str(kh), "--count", "3", "--retries", "0"]
    r = plink(*args)
    # every host refused: nothing measured, one line, exit 1, and the file a user had is left as it was
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "nothing measured: 2 of 2 hosts unreachable" in r.stderr and "not in known_hosts" in r.stderr
    assert f"{out} left as it was" in r.stderr and out.read_text() == "a good probe file of an earlier run\n"
    r = plink(*args, "--accept-new-host-keys")
    assert r.returncode == 0, r.stderr
    assert len(kh.read_text().splitlines()) == 2


def _probe_stopped_mid_way(cluster, out, how: str) -> tuple[int, str]:
    """``plink probe`` of the cluster into ``out``, stopped by ``how`` (``"kill"``: SIGKILL,
    ``"terminate"``: SIGTERM) once its journal holds 16 latency directions; its exit code and stderr."""
    from plink.probes.journal import journal_path

    jp = journal_path(out)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "plink", "probe", cluster.hostfile, "-o", str(out), "--ssh-config",
            cluster.ssh_config, "--count", "60", "--interval", "0.01", "--quiet"]
    proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if jp.exists() and jp.read_text().count('["l"') >= 16:
                break
            time.sleep(0.05)
        getattr(proc, how)()
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def test_controller_killed_mid_probe_keeps_measured_pairs(cluster, tmp_path):
    from plink.probes.journal import journal_path, read_journal

    out = tmp_path / "probe.json"
    jp = journal_path(out)
    _probe_stopped_mid_way(cluster, out, "kill")  # SIGKILL: no cleanup code runs in the controller
    names = [h.name for h in cluster.hosts]
    lat, _, _ = read_journal(jp, names, "udp")
    assert 16 <= len(lat) < 56 and not out.exists()
    # the agents notice the closed channel and exit: nothing left on the hosts
    assert_nothing_left(cluster)
    r = plink("probe", cluster.hostfile, "-o", str(out), "--ssh-config", cluster.ssh_config,
              "--count", "60", "--interval", "0.01", "--resume", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["missing_pairs"] == 0
    done = load(out)
    assert done.meta["rounds_done"] == list(range(7)) and done.meta["schedule"][0]["pairs"] < 28
    assert not jp.exists()


def test_sigterm_mid_probe_keeps_measured_pairs_like_ctrl_c(cluster, tmp_path):
    """SIGTERM (timeout, Slurm, Kubernetes) killed the controller at once, leaving only the journal;
    it now stops the probe as Ctrl-C does: the file keeps what was measured, the agents leave, exit 143."""
    from plink.probes.journal import journal_path

    out = tmp_path / "probe.json"
    jp = journal_path(out)
    code, err = _probe_stopped_mid_way(cluster, out, "terminate")
    assert code == 143, err
    # the hint is the command to run, whole: the host list and the options given (--ssh-config above all)
    assert "stopped by SIGTERM:" in err and (f"kept in {out} (rerun with: plink probe {cluster.hostfile} -o {out} "
                                             f"--resume --count 60 --interval 0.01 --ssh-config {cluster.ssh_config})"
                                             ) in err, err
    assert len(err.strip().splitlines()) == 1, err
    part = load(out)
    assert 0 < 28 - part.n_missing_pairs() < 28 and not jp.exists()
    assert_nothing_left(cluster)


def test_controller_partition_exits_3_and_agents_leave(cluster, tmp_path):
    """The controller loses its route to every host mid-probe: exit 3 within
    about two timeouts with one clear line, and every agent exits on its own."""
    import threading

    out = tmp_path / "probe.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "plink", "probe", cluster.hostfile, "-o", str(out), "--ssh-config",
            cluster.ssh_config, "--count", "200", "--interval", "0.01", "--timeout", "4"]
    link, subnet = f"{cluster.prefix}-up0", cluster.subnet
    proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        jp = out.with_name(out.name + ".journal")
        end = time.monotonic() + 60
        while time.monotonic() < end and not (jp.exists() and jp.read_text().count('["l"') >= 1):
            time.sleep(0.05)
        subprocess.run(["ip", "link", "set", link, "down"], check=True)
        t_cut = time.monotonic()
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - t_cut
    finally:
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["ip", "link", "set", link, "up"], check=False)
        subprocess.run(["ip", "route", "add", f"{subnet}.0.0/16", "via", f"{subnet}.250.2", "dev", link],
                       check=False)
    assert proc.returncode == 3, err
    assert took < 2 * 4 + 5, took
    lines = [l for l in err.splitlines() if l.startswith("plink: error")]
    assert len(lines) == 1 and "lost contact with all 8" in lines[0], err
    assert "Socket exception" not in err and "Traceback" not in err
    assert load(out).meta["aborted"].startswith("lost contact")
    # agents hear no heartbeat (their SSH connections hang, no FIN arrives) and leave within 30 s
    t = time.monotonic()
    assert_nothing_left(cluster, 30, after="the fault")
    assert time.monotonic() - t < 30


@pytest.mark.skipif(shutil.which("fping") is None, reason="fping not installed")
def test_probe_to_stdout_without_output_file(cluster, tmp_path):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"{cluster.hosts[1].name}\n{cluster.hosts[6].name}\n")
    r = plink("probe", str(hosts), "--ssh-config", cluster.ssh_config, "--count", "3", "--method", "fping")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "plink-probe" and doc["meta"]["method"] == "fping"
    assert doc["latency_us"][0][1] > 0 and "probed 2 hosts, 1/1 pairs in 1 round," in r.stderr
