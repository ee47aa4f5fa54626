"""Z3 stage: proves optimality on tiny instances, improves a poor order, stays sound."""

import numpy as np
import pytest

from plink.solvers.costmodels import CostModel, PairCost
from plink.solvers.exact import solve_exact
from plink.solvers.smt import choose_scale, smt_improve


def _model(algo, n, seed, integer=False):
    rng = np.random.default_rng(seed)
    lat = rng.random((n, n)) * 100
    lat = np.maximum(lat, lat.T)
    if integer:
        lat = np.round(lat)
    return CostModel(algo, PairCost.from_matrices(lat), 0)


@pytest.mark.parametrize("algo,n", [("ring", 7), ("hd", 8), ("dbt", 6), ("bcube", 8)])
def test_smt_proves_the_exact_optimum(algo, n):
    model = _model(algo, n, 1)
    perm, opt, _ = solve_exact(model)
    r = smt_improve(model, perm, time_limit=60)
    assert r.status == "proven" and r.improved == 0
    assert r.lower_bound <= opt and opt - r.lower_bound <= r.tolerance + 1e-9 * opt
    assert r.tolerance > 0  # random float costs: optimal up to the documented scaling


def test_smt_improves_a_poor_order_to_the_optimum():
    model = _model("ring", 7, 2)
    _, opt, _ = solve_exact(model)
    worst = np.arange(7)
    r = smt_improve(model, worst, time_limit=60)
    assert r.improved >= 1 and r.cost < model(worst)
    assert r.status == "proven" and r.cost == pytest.approx(opt, abs=r.tolerance + 1e-9)


def test_smt_exact_with_integer_costs():
    model = _model("hd", 8, 3, integer=True)
    perm, opt, _ = solve_exact(model)
    r = smt_improve(model, perm, time_limit=60)
    assert r.status == "proven" and r.tolerance == 0.0 and r.scale == 1.0
    assert r.lower_bound == pytest.approx(opt)


def test_scale_and_bad_input():
    assert choose_scale([np.array([[0.0, 1.5], [1.5, 0.0]])]) == (10.0, True)
    s, exact = choose_scale([np.array([[0.0, np.pi], [np.pi, 0.0]])])
    assert not exact and s * np.pi <= 1e8
    with pytest.raises(ValueError):
        smt_improve(_model("ring", 5, 0), np.arange(5), time_limit=0)


def test_smt_times_out_honestly_on_large_n():
    model = _model("ring", 60, 4)
    r = smt_improve(model, np.arange(60), time_limit=1.0)
    assert r.status in ("timeout", "improved-then-timeout")
    assert r.lower_bound is None
    assert r.cost <= model(np.arange(60))
