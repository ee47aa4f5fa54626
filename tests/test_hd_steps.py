"""The pure parts of benchmarks/hd_steps_netns.py: flows per Rabenseifner step and the report from saved data."""

import json

import numpy as np
import pytest

from benchmarks.hd_steps_netns import (
    ALONE, EVERY, TCP_COUNTERS, analyse, exchange_times, fluid_ends, iperf_patterns, link_rates, main, make_orders, masks, step_flows,
    step_model, uplink_busy)

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


def test_fluid_ends_of_rack_contiguous_and_interleaved():
    # contiguous: every step inside a rack or one flow per uplink; in the fluid each step takes its
    # bytes at the NIC's rate (48 ms for 2 MiB at 350 Mbit/s), except the in-rack mask-4/8 steps that
    # share no link either: the ends are the step model's sums, the same for every rank
    for name in ("rack-contiguous", "rack-interleaved"):
        order = make_orders(RACKS, 7)[name]
        ends = fluid_ends(RACKS, order, MIB4, 350, 350)
        assert ends.shape == (16, 8)
        model = np.cumsum([m for _, _, m in step_model([RACKS[i] for i in order], MIB4, 350, 350)])
        assert ends == pytest.approx(np.tile(model, (16, 1)), rel=1e-9)


def test_analyse_prints_the_trace_beside_the_fluid_and_the_tcp_counters():
    doc = synthetic()
    for name, runs in doc["mpi"].items():
        model = np.cumsum([m for _, _, m in step_model([RACKS[i] for i in doc["orders"][name]], MIB4, 350, 350)])
        for k, r in enumerate(runs):
            # rank r ends each step 1 ms x r after the model's end: the last rank (15) 15 ms late every step
            r["trace"] = [[(model + 1e-3 * rank).tolist() for rank in range(16)]] * 2
            r["tcp"] = dict(zip(TCP_COUNTERS, (100 + k, k, 7)))
    text = analyse(doc)[0]
    table = text[text.index("Back to back, every rank"):]
    row = next(line for line in table.splitlines() if line.strip().startswith("rack-interleaved"))
    assert row.split()[1:3] == ["207/15", "96/15"] and row.split()[-1] == f"{0.611 + 0.015:.3f}"
    below = table.splitlines()[table.splitlines().index(row) + 1:][:3]
    assert [b.split()[0] for b in below] == ["uplinks", "exchanges", "the"]
    assert below[2].split()[2:4] == ["192/0", "96/0"]
    # step 0: all ready at 0, rank r's exchange takes the price + r ms; step 1 (partner r ^ 2): rank r is
    # ready at the price + max(r, r ^ 2) ms (2 for rank 0, 15 for 13 and 15: 13 ms apart) and takes the
    # price less max(r, r ^ 2) - r ms (2 ms when r's bit 1 is clear)
    assert below[1].split()[1:3] == ["0:192-207", "13:94-96"]
    assert "rack-interleaved  100/0/7  101/1/7" in text
    # with --sndbuf the fluid's ends with buffered senders follow (the same here: every exchange symmetric)
    below = analyse(doc, 4 * 2**20)[0].splitlines()
    i = next(j for j, line in enumerate(below) if line.strip().startswith("rack-interleaved") and "/15" in line)
    assert below[i + 3].split()[:2] == ["the", "fluid"] and below[i + 4].split()[:2] == ["buffered", "4096K"]
    assert below[i + 4].split()[2:] == below[i + 3].split()[2:]
    # without traces and counters (runs before 2026-11-30 19:00 UTC) neither table is printed
    assert "Back to back, every rank" not in analyse(synthetic())[0] and "TCP counters" not in analyse(synthetic())[0]


def test_queue_packets_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        main(["--queue-packets", "0"])
    assert "--queue-packets must be 1..100000" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--sndbuf", "4MiB"])  # an analysis option only
    assert "--sndbuf goes with --analyse-only" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--sysctl", "net.ipv4.tcp_wmem;x=1"])
    assert "--sysctl takes NAME=VALUE pairs" in capsys.readouterr().err


def test_exchange_times_and_uplink_busy_of_a_traced_run():
    # rack-interleaved: steps 0, 1, 6, 7 cross every uplink (4 exchanges per direction); every rank
    # ends each step exactly at the step model's sum (one run), then the same with rank 0 late
    order = make_orders(RACKS, 7)["rack-interleaved"]
    rr = [RACKS[i] for i in order]
    model = np.array([m for _, _, m in step_model(rr, MIB4, 350, 350)])
    ends = np.tile(np.cumsum(model), (1, 16, 1))
    ready, took = exchange_times(ends)
    assert ready == pytest.approx(np.zeros((1, 8)), abs=1e-12)
    assert took == pytest.approx(np.tile(model, (16, 1)))
    busy = uplink_busy(ends, rr, MIB4, 350)
    assert np.isnan(busy[2:6]).all()
    assert busy[[0, 1, 6, 7]] == pytest.approx([1.0] * 4)  # 4 flows x bytes / rate: the step model's time
    late = ends.copy()
    late[0, 0, 0] += model[0]  # rank 0 ends the first step twice as late: its rack's uplink windows double
    ready, took = exchange_times(late)
    assert took[0, 0] == pytest.approx(2 * model[0]) and ready[0, 1] == pytest.approx(model[0])
    b = uplink_busy(late, rr, MIB4, 350)
    # step 0: rank 0's exchange with rank 1 (another rack) ends with the later of the two, so it doubles the
    # windows of 4 of the 8 directions: out of and into each of the two racks
    assert b[0] == pytest.approx((4 * 1.0 + 4 * 0.5) / 8)
    assert b[[6, 7]] == pytest.approx([1.0] * 2)  # (the allgather: untouched)
