"""benchmarks/unequal_shares.py: the fluid price with unequal (weighted) flow shares, over saved proof runs."""

from pathlib import Path

import numpy as np
import pytest

from benchmarks.unequal_shares import main, unequal_price
from plink.solvers.contention import Network
from plink.solvers.fluid import FluidCostModel

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "results" / "2026-11-30-C-seed30" / "C.json"


def _racks(n=8, k=2):
    g = np.arange(n) // (n // k)
    return Network(latency=np.zeros((n, n)), nic_send=np.ones(n), nic_recv=np.ones(n), groups=g,
                   up=np.full(k, 1.0), down=np.full(k, 1.0))


def test_unequal_price_is_the_price_at_sigma_0_and_seeded_otherwise():
    m = FluidCostModel("hd", _racks(), 4.0)
    perm = np.array([0, 4, 1, 5, 2, 6, 3, 7])  # every exchange of the first rounds crosses the uplink
    assert unequal_price(m, perm, 0.0, 8) == m(perm)
    a, b = unequal_price(m, perm, 0.5, 8), unequal_price(m, perm, 0.5, 8)
    assert a == b
    # the flows of a round that all start together on one shared uplink end together whatever their
    # weights (it stays full until the last byte): here the weights change nothing
    assert a == pytest.approx(m(perm))
    # with NICs and uplinks of unequal rates, flows end apart and the ranks' next rounds start apart
    rng = np.random.default_rng(0)
    n = 8
    net = Network(latency=np.zeros((n, n)), nic_send=rng.uniform(0.5, 2, n), nic_recv=rng.uniform(0.5, 2, n),
                  groups=np.arange(n) % 2, up=np.array([1.0, 0.7]), down=np.array([0.8, 1.2]))
    m = FluidCostModel("rd", net, 4.0)
    got = {round(unequal_price(m, perm, 0.5, 4, seed=s), 9) for s in range(3)}
    assert len(got) > 1 and m(perm) not in got


def test_main_over_one_saved_run(capsys):
    if not RUN.exists():
        pytest.skip("saved run not present")
    assert main([str(RUN), "--sigmas", "0", "0.4", "--draws", "2", "--runs"]) == 0
    out = capsys.readouterr().out
    assert "mpi_rabenseifner         latency" in out and "s=0.4" in out
    # sigma 0 is the price: the run's Spearman as the proof's analysis gives it (0.897 for C seed 30)
    row = next(line for line in out.splitlines() if line.startswith("2026-11-30-C-seed30/C.json")
               and "mpi_rabenseifner" in line and "latency" in line)
    assert row.split()[3] == "0.897"


def test_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["--sigmas", "-1"])
    assert "--sigmas must be >= 0" in capsys.readouterr().err
