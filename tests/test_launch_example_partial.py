"""examples/netns-cluster/launch.py keeps what it measured when a later step
fails: the cluster, probe and launches are replaced by stand-ins (no root
needed), the orders, files and bookkeeping are the example's own."""

import contextlib
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from plink.data.probefile import Host
from plink.data.simulate import simulate_datacenter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "netns-cluster"))

import launch  # noqa: E402


@pytest.fixture
def stand_ins(monkeypatch):
    probe = simulate_datacenter(racks=2, hosts_per_rack=3, seed=1, shuffle=False)
    probe.hosts = [Host(f"h{i}", f"10.0.0.{i + 1}") for i in range(probe.n)]
    cluster = SimpleNamespace(hosts=[SimpleNamespace(name=h.name, rack=i // 3) for i, h in enumerate(probe.hosts)])
    monkeypatch.setattr(launch, "cluster", lambda *a, **k: contextlib.nullcontext(cluster))
    monkeypatch.setattr(launch, "probe_cluster", lambda c, count=50: probe)

    def gloo(c, order_files, size, repeats=3, **kw):  # each order: 1 s per rack crossing
        out = []
        for k, f in enumerate(order_files):
            hosts = [h.name for h in launch.read_order_hosts(f)]
            racks = [int(h[1:]) // 3 for h in hosts]
            t = float(sum(racks[i] != racks[i - 1] for i in range(len(racks))))
            out += [{"order": k, "rank": r, "seconds": [t] * repeats} for r in range(len(hosts))]
        return out

    monkeypatch.setattr(launch, "run_gloo", gloo)
    monkeypatch.setattr(launch, "check_placement", lambda *a, **k: [])
    return probe


def test_missing_mpirun_is_reported_and_the_gloo_results_are_kept(stand_ins, monkeypatch):
    monkeypatch.setattr(launch.shutil, "which", lambda name: None)
    called = []
    monkeypatch.setattr(launch, "run_mpirun", lambda *a, **k: called.append(1))
    s = launch.experiment(2, 3, size=2**20, n_random=2, repeats=1, torchrun=False, log=lambda m: None)
    assert called == [] and "mpirun not found" in s["failed"]["mpirun"]
    assert s["orders"]["plink"]["rack_crossings"] == 2 and s["plink_seconds"] == 2.0
    assert s["interleaved_seconds"] == 6.0 and "NOT MEASURED: the mpirun step failed" in launch.render(s)


def test_a_failing_torchrun_step_keeps_gloo_and_still_runs_mpirun(stand_ins, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("torchrun did not finish within 300 s")

    monkeypatch.setattr(launch, "run_torchrun", boom)
    monkeypatch.setattr(launch.shutil, "which", lambda name: "/usr/bin/" + name)
    monkeypatch.setattr(launch, "run_mpirun", lambda c, hostfile, order_file, size, repeats=3, port=0:
                        [{"order": 0, "rank": r, "seconds": [0.5] * repeats} for r in range(6)])
    s = launch.experiment(2, 3, size=2**20, n_random=1, repeats=2, log=lambda m: None)
    assert list(s["failed"]) == ["torchrun"] and "within 300 s" in s["failed"]["torchrun"]
    assert s["torchrun"] == {} and s["mpirun"]["plink"]["seconds"] == 0.5
    assert np.isfinite(s["measured_speedup_vs_worst"])
