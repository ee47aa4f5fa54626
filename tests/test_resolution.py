"""plink.solvers.resolution: orders the model does not tell apart, and what the report says of them."""

import numpy as np
import pytest
from scipy.stats import spearmanr

from plink.solvers.resolution import RESOLUTION, RESOLUTIONS, ranks, resolution_for, resolved, tie_classes


def test_tie_classes_are_no_wider_than_the_resolution():
    # a chain of 1.5% steps: chaining would make one class of all four; each class here spans <= 2%
    costs = [1.0, 1.015, 1.03, 1.045, 2.0]
    assert tie_classes(costs, 0.02) == [[0, 1], [2, 3], [4]]
    assert tie_classes([3.0, 1.0, 1.01, 3.05, 3.02, 2.0], 0.02) == [[1, 2], [5], [0, 4, 3]]
    assert tie_classes([1.0, 1.0, 1.0], 0.0) == [[0, 1, 2]]  # equal costs tie at any resolution
    assert tie_classes([], 0.02) == []


def test_ranks_share_the_mean_rank_of_their_class():
    np.testing.assert_allclose(ranks([5.0, 1.0, 1.01, 9.0, 1.015]), [4, 2, 2, 5, 2])
    # at resolution 0 the ranks are scipy's for distinct costs
    c = np.random.default_rng(0).random(12)
    np.testing.assert_allclose(ranks(c, 0.0), np.argsort(np.argsort(c)) + 1)


def test_spearman_at_the_resolution_drops_noise_below_it():
    """Two classes 3x apart, the model's in-class differences are noise (0.1%): ranking by them
    scores about the between-class share; tying them scores what the classes explain."""
    rng = np.random.default_rng(1)
    truth = np.repeat([1.0, 3.0], 10)
    meas = truth * (1 + 0.02 * rng.standard_normal(20))
    pred = truth * (1 + 0.001 * rng.standard_normal(20))
    raw = spearmanr(pred, meas)[0]
    tied = spearmanr(ranks(pred), meas)[0]
    assert tied > raw
    assert tied == pytest.approx(spearmanr(truth, meas)[0])


def test_resolved_and_bad_input():
    assert not resolved(1.0, 1.0 + RESOLUTION / 2)
    assert resolved(1.0, 1.0 + 2 * RESOLUTION)
    assert resolved(2.0 * (1 + 2 * RESOLUTION), 2.0)  # either argument order
    with pytest.raises(ValueError, match="resolution"):
        tie_classes([1.0], 1.5)
    with pytest.raises(ValueError, match="finite"):
        tie_classes([1.0, np.nan])
    assert resolution_for("shared") == RESOLUTION < resolution_for("pairsum") == RESOLUTIONS["pairsum"]
    with pytest.raises(ValueError, match="unknown cost model"):
        resolution_for("lp")


def test_order_report_marks_speedups_below_the_resolution():
    """plink's order and rack-contiguous on a clean 4 x 4 datacenter are priced alike: the report
    flags that speedup and not the large one over the input order."""
    from plink.data.simulate import simulate_datacenter
    from plink.order import order_hosts

    pd = simulate_datacenter(racks=4, hosts_per_rack=4, seed=3)
    res = order_hosts(pd, "ring", size=2**24, time_limit=0.5, max_iter=600, seed=0)
    lo, hi = res.speedup_range("contiguous")
    assert res.resolved("contiguous") == (lo > 1 + RESOLUTION or hi < 1 / (1 + RESOLUTION))
    assert res.resolved("random_median") and res.speedup_vs_random > 1.5
    d = res.to_dict()
    assert d["resolution"] == RESOLUTION
    assert d["speedup_resolved"]["random_median"] is True
    assert d["speedup_resolved"]["contiguous"] == res.resolved("contiguous")


def test_pairsum_orders_are_judged_at_the_pair_sums_resolution():
    """--model pairsum: its measured resolution is 10%, so a 5% speedup is marked, not claimed."""
    from plink.order import OrderResult

    res = OrderResult.__new__(OrderResult)
    res.cost_model = "pairsum"
    res.ranges = {"plink": [100.0, 100.0], "contiguous": [105.0, 105.0], "input": [150.0, 150.0],
                  "straddle": [80.0, 130.0]}
    assert res.resolution == RESOLUTIONS["pairsum"]
    assert not res.resolved("contiguous") and res.resolved("input")
    assert not res.resolved("straddle")  # a range on both sides of 1 is never a prediction
    res.cost_model = "shared"
    assert res.resolved("contiguous")


def test_speedups_at_the_edge_of_the_resolution_print_three_decimals():
    """1.0199x is within 2% and 1.0201x is not: both would print as 1.02x, once with '~'."""
    from plink.cli.order import _fmt_speedup
    from plink.order import OrderResult

    res = OrderResult.__new__(OrderResult)
    res.cost_model = "shared"
    res.ranges = {"plink": [1.0, 1.0], "in": [1.0199, 1.0199], "out": [1.0201, 1.0201], "far": [1.5, 1.5],
                  "near": [1.001, 1.001]}
    res.capacity_scenarios = {}
    assert _fmt_speedup(res, "in") == "~1.020x" and _fmt_speedup(res, "out") == "1.020x"
    assert _fmt_speedup(res, "far") == "1.50x" and _fmt_speedup(res, "near") == "~1.00x"
    # a span over unmeasured capacities: both ends with the digits either needs; '~' only when no
    # figure of it is beyond the resolution
    res.capacity_scenarios = {"uplinks non-blocking": {"in": 1.5, "out": 1.5, "far": 1.5, "near": 1.01}}
    assert _fmt_speedup(res, "in") == "1.020-1.500x" and _fmt_speedup(res, "near") == "~1.00-1.01x"
