"""benchmarks/send_buffers.py: the fluid price with buffered senders, over saved proof runs."""

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.collectives_netns import saved_cases
from benchmarks.send_buffers import main
from benchmarks.unequal_shares import unequal_price
from plink.solvers.contention import Network
from plink.solvers.fluid import FluidCostModel

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "2026-11-30-C-seed30" / "C.json"


def test_the_price_with_buffered_senders_is_the_price_without_a_buffer_and_lower_where_rates_differ():
    # 8 ranks over NICs of unequal rates and two uplinks: an exchange's two directions end apart, so
    # a buffered sender moves on before its partner has all of it
    rng = np.random.default_rng(0)
    n = 8
    net = Network(latency=np.full((n, n), 1e-4), nic_send=rng.uniform(0.5, 2, n), nic_recv=rng.uniform(0.5, 2, n),
                  groups=np.arange(n) % 2, up=np.array([1.0, 0.7]), down=np.array([0.8, 1.2]))
    m = FluidCostModel("hd", net, 4.0)
    perm = np.arange(n)
    assert unequal_price(m, perm, 0.0, 1, sndbuf=None) == m(perm)
    assert unequal_price(m, perm, 0.0, 1, sndbuf=0.0) == pytest.approx(m(perm))  # released at delivery: the price
    got = unequal_price(m, perm, 0.0, 1, sndbuf=1.0)
    assert got < m(perm) - 1.0
    assert got == pytest.approx(m(perm) - m.fluid_time(perm) + m.fluid_time(perm, sndbuf=1.0))
    # unequal shares on top are seeded: the same draws give the same price, other draws another
    assert unequal_price(m, perm, 0.5, 3, sndbuf=1.0) == unequal_price(m, perm, 0.5, 3, sndbuf=1.0)
    assert unequal_price(m, perm, 0.5, 3, sndbuf=1.0) != unequal_price(m, perm, 0.5, 3, seed=1, sndbuf=1.0)


def test_main_over_one_saved_run(capsys):
    if not RUN.exists():
        pytest.skip("saved run not present")
    assert main([str(RUN), "--sndbuf", "none", "4MiB", "--collectives", "mpi_rabenseifner", "--runs"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("2026-11-30-C-seed30/C.json")]
    # Rabenseifner's exchanges are symmetric: buffered senders change no price, so no Spearman (0.897)
    assert [r[2] for r in rows] == ["latency", "bandwidth"] and rows[0][3:] == ["0.897", "0.897"]
    assert "4096 KiB" in out


def test_bad_arguments(capsys):
    for argv, err in ((["--sigma", "-1"], "--sigma must be >= 0"), (["--sndbuf", "lots"], "size")):
        with pytest.raises(SystemExit):
            main(argv)
        assert err in capsys.readouterr().err


def test_saved_cases_leave_out_runs_with_other_kernel_settings(tmp_path):
    doc = {"probes": {}, "orders": {}}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "A.json").write_text(json.dumps(doc))
    (tmp_path / "a" / "Z.json").write_text(json.dumps(doc))  # not a case of the proof
    (tmp_path / "a" / "B.json").write_text("{broken")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "C.json").write_text(json.dumps({**doc, "sysctl": [["net.ipv4.tcp_wmem", "4096 16384 65536"]]}))
    (tmp_path / "b" / "D.json").write_text(json.dumps({**doc, "sysctl": []}))
    assert [p.relative_to(tmp_path).as_posix() for p in saved_cases(tmp_path)] == ["a/A.json", "b/D.json"]
    assert [p.name for p in saved_cases(tmp_path, settings=True)] == ["A.json", "C.json", "D.json"]
