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


def assert_nothing_left(cluster):
    """Only sshd listens and runs on every host once a probe has ended."""
    end = time.monotonic() + 10
    while True:
        leftovers = {}
        for h in cluster.hosts:
            socks = [s for s in cluster.listening(h.name) if '"sshd"' not in s]
            procs = []
            for pid in cluster.processes(h.name):
                try:
                    comm = Path(f"/proc/{pid}/comm").read_text().strip()
                except OSError:
                    continue
                if comm != "sshd":
                    procs.append(comm)
            if socks or procs:
                leftovers[h.name] = (socks, procs)
        if not leftovers:
            return
        if time.monotonic() > end:
            pytest.fail(f"left behind after the probe: {leftovers}")
        time.sleep(0.2)


def check_schedule(meta, n, pairs_expected):
    seen = set()
    for rnd in meta["schedule"]:
        hosts = [h for p in rnd["pairs"] for h in p]
        assert len(hosts) == len(set(hosts)), f"a host in two pairs of round {rnd['round']}"
        for a, b in rnd["pairs"]:
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

    p = load(out)
    n = p.n
    assert n == 8 and p.n_missing_pairs() == 0
    assert np.isfinite(p.bandwidth[~np.eye(n, dtype=bool)]).all()
    # O(N) rounds: N-1 rounds of N/2 disjoint pairs, every pair once
    assert p.meta["rounds"] == 7 and len(p.meta["schedule"]) == 7
    assert all(len(r["pairs"]) == 4 for r in p.meta["schedule"])
    check_schedule(p.meta, n, itertools.combinations(range(n), 2))
    # the pairs of a round ran at the same time: a round lasts about one pair's
    # probe time (10 x 5 ms + 2 x 0.5 s), not four
    per_pair = 10 * 0.005 + 2 * 0.5
    assert max(r["seconds"] for r in p.meta["schedule"]) < 2 * per_pair
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


def test_host_dies_mid_probe_then_resume(cluster, tmp_path):
    out = tmp_path / "probe.json"
    victim = cluster.hosts[5].name
    killed = []

    def after_round(r, pairs):
        if len(killed) == 0 and r == 1:  # two rounds done
            cluster.kill_host(victim)
            killed.append(r)

    opts = SSHOptions(ssh_config=cluster.ssh_config, retries=0, connect_timeout=5)
    try:
        part = probe_hosts(cluster.hostfile, count=10, interval=0.005, checkpoint=out, ssh=opts,
                           after_round=after_round)
        assert killed
        # reported, its remaining pairs missing, everything else measured
        assert not part.meta["complete"] and victim in part.meta["dead"]
        on_disk = load(out)
        v = on_disk.index(victim)
        missing = {tuple(sorted(map(int, ij))) for ij in zip(*np.nonzero(np.triu(on_disk.missing_mask(), 1)))}
        assert len(missing) == 5 and all(v in pair for pair in missing)  # 7 rounds, 2 done before death
        assert on_disk.meta["missing_pairs"] == 5 and on_disk.meta["complete"] is False
        measured_before = on_disk.latency.copy()
    finally:
        cluster.revive_host(victim)

    # the CLI on the partial file says why and exits 3 ... and --resume fills it in
    r = plink("probe", cluster.hostfile, "-o", str(out), "--ssh-config", cluster.ssh_config,
              "--count", "10", "--interval", "0.005", "--resume", "--quiet")
    assert r.returncode == 0, r.stderr
    done = load(out)
    assert done.n_missing_pairs() == 0 and done.meta["complete"]
    known = ~np.isnan(measured_before)
    np.testing.assert_array_equal(done.latency[known], measured_before[known])  # nothing re-measured or lost
    resumed = done.meta["schedule"][-5:]
    assert all(len(r["pairs"]) == 1 for r in resumed)  # only the victim's pairs were probed again
    check_schedule(done.meta, 8, itertools.combinations(range(8), 2))
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
    args = ["probe", str(hosts), "-o", str(tmp_path / "p.json"), "--ssh-config", cluster.ssh_config,
            "--known-hosts", str(kh), "--count", "3", "--retries", "0"]
    r = plink(*args)
    assert r.returncode == 3 and "not in known_hosts" in r.stderr
    r = plink(*args, "--accept-new-host-keys")
    assert r.returncode == 0, r.stderr
    assert len(kh.read_text().splitlines()) == 2


def test_controller_killed_mid_probe_keeps_measured_pairs(cluster, tmp_path):
    out = tmp_path / "probe.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [sys.executable, "-m", "plink", "probe", cluster.hostfile, "-o", str(out), "--ssh-config",
            cluster.ssh_config, "--count", "30", "--interval", "0.01", "--quiet"]
    proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                if len(load(out).meta.get("rounds_done", [])) >= 2:
                    break
            except Exception:
                pass  # not written yet
            time.sleep(0.05)
        proc.kill()  # SIGKILL: no cleanup code runs in the controller
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    part = load(out)
    assert not part.meta["complete"] and len(part.meta["rounds_done"]) >= 2
    assert 8 <= 28 - part.n_missing_pairs() < 28
    # the agents notice the closed channel and exit: nothing left on the hosts
    assert_nothing_left(cluster)
    r = plink("probe", cluster.hostfile, "-o", str(out), "--ssh-config", cluster.ssh_config,
              "--count", "30", "--interval", "0.01", "--resume", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["missing_pairs"] == 0
    assert load(out).meta["rounds_done"] == list(range(7))


@pytest.mark.skipif(shutil.which("fping") is None, reason="fping not installed")
def test_probe_to_stdout_without_output_file(cluster, tmp_path):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"{cluster.hosts[1].name}\n{cluster.hosts[6].name}\n")
    r = plink("probe", str(hosts), "--ssh-config", cluster.ssh_config, "--count", "3", "--method", "fping")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "plink-probe" and doc["meta"]["method"] == "fping"
    assert doc["latency_us"][0][1] > 0 and "probed 2 hosts, 1/1 pairs in 1 rounds" in r.stderr
