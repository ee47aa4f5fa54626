"""plink plot: PNGs before/after reordering and by group; bad input."""

import os
import subprocess
import sys

import numpy as np
import pytest

from plink.simulate import simulate_datacenter

pytest.importorskip("matplotlib")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "plink", *args], capture_output=True, text=True, env=env, timeout=120)


def test_mds_layout_separates_racks():
    from plink.pictures import mds_layout

    probe = simulate_datacenter(racks=4, hosts_per_rack=6, seed=2)
    x = mds_layout(probe.latency)
    rack = np.array([t[-1] for t in probe.truth.labels])
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    same = (rack[:, None] == rack[None]) & ~np.eye(probe.n, dtype=bool)
    assert d[same].max() < d[rack[:, None] != rack[None]].min()


def test_plot_writes_pngs_and_rejects_a_foreign_order(tmp_path):
    probe = simulate_datacenter(racks=3, hosts_per_rack=4, seed=1)
    p = tmp_path / "dc.json"
    probe.save(p)
    order = tmp_path / "order.txt"
    order.write_text("".join(f"{n}\n" for n in sorted(probe.names)))
    heat, emb = tmp_path / "ba.png", tmp_path / "hosts.png"
    proc = run("plot", str(p), "--order", str(order), "--heatmap", str(heat), "--embedding", str(emb))
    assert proc.returncode == 0, proc.stderr
    for f in (heat, emb):
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 5000
    order.write_text("".join(f"{n}\n" for n in probe.names[:-1] + ["stranger"]))
    proc = run("plot", str(p), "--order", str(order), "--heatmap", str(heat))
    assert proc.returncode == 1 and "another host list" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert run("plot", str(p)).returncode == 2
    assert run("plot", str(p), "--heatmap", str(heat)).returncode == 2  # needs --order
