"""The pure parts of benchmarks/hd_steps_netns.py: flows per Rabenseifner step and the report from saved data."""

import json

import numpy as np
import pytest

from benchmarks.hd_steps_netns import (
    ALONE, EVERY, analyse, iperf_patterns, link_rates, main, make_orders, masks, step_flows, step_model)

RACKS = [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
MIB4 = 4 << 20


def rank_racks(name):
    return [RACKS[i] for i in make_orders(RACKS, 7)[name]]


def test_masks_are_reduce_scatter_then_allgather():
    assert masks(16) == [1, 2, 4, 8, 8, 4, 2, 1]


def test_orders_are_permutations():
    orders = make_orders(RACKS, 7)
    assert len(orders) == 6 and all(sorted(o) == list(range(16)) for o in orders.values())
    assert orders["interleave-01-23"] == [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]


def test_first_step_flows():
    # interleaved: ranks 2k and 2k+1 sit in different racks, every rank's host crosses its uplink
    assert step_flows(rank_racks("rack-interleaved"), 1) == 4
    assert step_model(rank_racks("rack-interleaved"), MIB4, 350, 350)[0] == pytest.approx(
        (4, "uplink", 2 * 2**20 * 8 * 4 / 350e6))
    # contiguous: the first step stays in the rack, the NIC alone carries it
    assert step_flows(rank_racks("rack-contiguous"), 1) == 0
    assert step_model(rank_racks("rack-contiguous"), MIB4, 350, 350)[0][:2] == (1, "nic")
    assert [f for f, _, _ in step_model(rank_racks("rack-contiguous"), MIB4, 350, 350)] == [1, 1, 4, 4, 4, 4, 1, 1]


def test_one_crossing_flow_on_a_slower_uplink_is_the_uplink():
    assert step_model([0, 1], 1000, 400, 100)[0] == pytest.approx((1, "uplink", 500 * 8 / 100e6))
    assert step_model([0, 1], 1000, 100, 400)[0][:2] == (1, "nic")


def test_link_rates_sum_flows_per_direction():
    assert link_rates([(0, 4), (1, 5), (2, 3)], RACKS, [100, 50, 7]) == {"down1": 150, "up0": 150}


def synthetic() -> dict:
    """Measured = 2 x model on NIC-bound steps, 1.5 x on uplink-bound ones; uplinks at 330 Mbit/s."""
    keep = ("rack-contiguous", "rack-interleaved", "random-0")
    orders = {k: v for k, v in make_orders(RACKS, 7).items() if k in keep}
    mpi = {}
    for name, o in orders.items():
        steps = [m * (2.0 if k == "nic" else 1.5) for _, k, m in step_model([RACKS[i] for i in o], MIB4, 350, 350)]
        mpi[name] = [{"pass": p, "allreduce": [sum(steps)] * 2, "free": [sum(steps)] * 2, "steps": [steps] * 2}
                     for p in range(2)]
    pats = iperf_patterns([list(range(4 * r, 4 * r + 4)) for r in range(4)])
    return {"cluster": {"hosts_per_rack": [4] * 4, "host_mbit": 350, "uplink_mbit": 350, "extra_hops": 4},
            "size_bytes": MIB4, "racks": RACKS, "passes": 2, "repeats": 2, "started": "t0", "finished": "t1",
            "iperf": {"seconds": 5,
                      "patterns": {n: {"pairs": p, "mbit": [[330.0] * len(p)] * 2} for n, p in pats.items()}},
            "orders": orders, "mpi": mpi}


def test_analyse_synthetic():
    text, figs = analyse(synthetic())
    assert figs["ratio_nic"] == pytest.approx([2.0, 2.0, 2.0])
    assert figs["ratio_uplink"] == pytest.approx([1.5, 1.5, 1.5])
    assert 0.9 < figs["pearson_steps"] <= 1.0
    assert figs["uplink_alone_mbit"] == pytest.approx(4 * 330) == figs["uplink_all_min_mbit"]
    assert "no shared spine bottleneck" in text and "4:0.192/0.288" in text
    assert text.count("rack-interleaved") == 1


def test_spine_bottleneck_is_reported():
    doc = synthetic()
    doc["iperf"]["patterns"][EVERY]["mbit"] = [[200.0] * 16] * 2
    assert "the spine limits them" in analyse(doc)[0]
    assert ALONE in analyse(doc)[0]


def test_analyse_only(tmp_path, capsys):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(synthetic()))
    assert main(["--analyse-only", str(path)]) == 0
    assert "Pearson(model, measured) over 24 steps of 3 orders" in capsys.readouterr().out
    assert np.isfinite(analyse(json.loads(path.read_text()))[1]["spearman_orders"])
