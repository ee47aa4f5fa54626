"""Exact search against brute force (small N), lower bounds are valid."""

import itertools

import numpy as np
import pytest

from plink.solvers.bounds import lower_bound, ring_lower_bound
from plink.solvers.costmodels import CostModel, PairCost
from plink.solvers.exact import batch_costs, exact_feasible, exhaustive, held_karp, solve_exact


def _sym(rng, n, scale=100.0):
    m = rng.random((n, n)) * scale
    return np.maximum(m, m.T)


def _brute(model):
    perms = np.array(list(itertools.permutations(range(model.n))))
    return float(batch_costs(model, perms).min())


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_held_karp_equals_brute_force_asymmetric(n):
    rng = np.random.default_rng(n)
    m = rng.random((n, n)) * 50  # asymmetric on purpose: the DP follows hop direction
    perm, cost = held_karp(m)
    assert sorted(perm.tolist()) == list(range(n))
    assert cost == pytest.approx(sum(m[perm[r], perm[r - 1]] for r in range(n)))
    bf = min(sum(m[p[r], p[r - 1]] for r in range(n)) for p in itertools.permutations(range(n)))
    assert cost == pytest.approx(bf)


def test_held_karp_16_is_fast_and_beats_heuristics():
    rng = np.random.default_rng(16)
    m = _sym(rng, 16)
    perm, cost = held_karp(m)
    model = CostModel("ring", PairCost.from_matrices(m))
    assert cost == pytest.approx(model(perm))
    # no random order is cheaper than the certified optimum
    assert all(model(rng.permutation(16)) >= cost - 1e-9 for _ in range(200))


def test_batch_costs_match_model():
    rng = np.random.default_rng(1)
    lat, bw = _sym(rng, 8), _sym(rng, 8, 10) + 1
    pc = PairCost.from_matrices(lat, bw)
    perms = np.array([rng.permutation(8) for _ in range(50)])
    for algo in ("ring", "hd", "dbt", "bcube"):
        model = CostModel(algo, pc, 4e6)
        np.testing.assert_allclose(batch_costs(model, perms), [model(p) for p in perms])


@pytest.mark.parametrize("algo,n,base", [("hd", 6, 2), ("hd", 7, 2), ("dbt", 6, 2), ("dbt", 7, 2), ("bcube", 9, 3)])
def test_exhaustive_equals_brute_force_small(algo, n, base):
    rng = np.random.default_rng(n + len(algo))
    model = CostModel(algo, PairCost.from_matrices(_sym(rng, n)), 0, base)
    perm, cost, _ = exhaustive(model)
    assert cost == pytest.approx(model(perm))
    if n <= 7:
        assert cost == pytest.approx(_brute(model))


def test_exhaustive_equals_brute_force_n8():
    """N = 8 for hd, dbt and bcube, once each, with bandwidth (size matters)."""
    rng = np.random.default_rng(8)
    pc = PairCost.from_matrices(_sym(rng, 8), _sym(rng, 8, 10) + 1)
    perms = np.array(list(itertools.permutations(range(8))))
    for algo in ("hd", "dbt", "bcube"):
        model = CostModel(algo, pc, 8e6)
        perm, cost, evaluated = exhaustive(model)
        assert cost == pytest.approx(float(batch_costs(model, perms).min()))
        # symmetry breaking (host 0 at rank 0) is used exactly where it is valid
        assert evaluated == (40320 if algo == "dbt" else 5040)


def test_exact_limits():
    rng = np.random.default_rng(0)
    pc = PairCost.from_matrices(_sym(rng, 17))
    assert not exact_feasible(CostModel("ring", pc))
    assert exact_feasible(CostModel("ring", PairCost.from_matrices(_sym(rng, 16))))
    with pytest.raises(ValueError):
        exhaustive(CostModel("dbt", PairCost.from_matrices(_sym(rng, 12))))
    with pytest.raises(ValueError):
        held_karp(np.zeros((23, 23)))


def test_lower_bounds_are_valid():
    rng = np.random.default_rng(5)
    for algo, n in (("ring", 8), ("hd", 8), ("hd", 7), ("dbt", 8), ("bcube", 8)):
        pc = PairCost.from_matrices(_sym(rng, n), _sym(rng, n, 10) + 1)
        model = CostModel(algo, pc, 1e6)
        _, opt, _ = solve_exact(model)
        lb = lower_bound(model, upper=opt)
        assert 0 < lb <= opt + 1e-9, algo


def test_ring_one_tree_bound_is_tight_on_a_line():
    # hosts on a line: the optimum 2 * span is also the 1-tree bound
    x = np.arange(20, dtype=float)
    m = np.abs(x[:, None] - x[None, :])
    lb = ring_lower_bound(m, upper=38.0)
    assert lb == pytest.approx(38.0, rel=1e-3) and lb <= 38.0


def _instances():
    # (algo, n, base): every algorithm up to the exact-search limit, several random seeds each
    for seed in range(4):
        yield "ring", 6 + 3 * seed, 2, seed  # 6, 9, 12, 15 hosts (Held-Karp)
        yield "hd", (6, 7, 8, 8)[seed], 2, seed
        yield "dbt", (6, 7, 8, 8)[seed], 2, seed
        yield "bcube", (4, 8, 8, 9)[seed], (2, 2, 2, 3)[seed], seed


@pytest.mark.parametrize("algo, n, base, seed", list(_instances()))
def test_lower_bound_never_exceeds_the_exact_optimum(algo, n, base, seed):
    rng = np.random.default_rng(100 + seed)
    lat = _sym(rng, n)
    if seed % 2:  # datacenter-like: two racks, cheap inside
        rack = rng.integers(0, 2, n)
        lat = np.where(rack[:, None] == rack[None, :], lat / 10, lat)
    pc = PairCost.from_matrices(lat, _sym(rng, n, 10) + 1)
    model = CostModel(algo, pc, 1e6, base=base)
    assert exact_feasible(model)
    _, opt, _ = solve_exact(model)
    assert opt == pytest.approx(_brute(model)) if n <= 8 else True
    lb = lower_bound(model)
    assert 0 < lb <= opt * (1 + 1e-9), (algo, n, lb, opt)
    # a bound given the optimum as the upper value must still not pass it
    assert lower_bound(model, upper=opt) <= opt * (1 + 1e-9)


def test_minimise_reports_an_unclamped_bound():
    # the stochastic path (exact=False) reports the bound as computed, never clamped to the cost
    from plink.solvers.solve import minimise
    rng = np.random.default_rng(3)
    model = CostModel("ring", PairCost.from_matrices(_sym(rng, 12)), 1e6)
    res = minimise(model, time_limit=0.5, seed=0, exact=False)
    _, opt, _ = solve_exact(model)
    assert res.cost >= opt * (1 - 1e-9)
    assert res.lower_bound == pytest.approx(lower_bound(model, upper=res.cost, time_budget=0.05), rel=0.05)
    assert res.lower_bound <= opt * (1 + 1e-9)


def test_exact_result_costlier_than_input_is_a_bug(monkeypatch):
    from plink.solvers import solve
    rng = np.random.default_rng(4)
    model = CostModel("hd", PairCost.from_matrices(_sym(rng, 6)), 1e6)
    worst = max(itertools.permutations(range(6)), key=lambda p: model(np.array(p)))
    monkeypatch.setattr(solve, "solve_exact", lambda m: (np.array(worst), float(m(np.array(worst))), "exhaustive"))
    with pytest.raises(RuntimeError, match="costlier order than the input"):
        solve.minimise(model, time_limit=1.0)


# ---------------------------------------------------------------------------
# symmetry breaking, limits and ties, exactly (found by mutation testing, README "Development")


def _model(algo, n, base=2, seed=0):
    rng = np.random.default_rng(seed)
    return CostModel(algo, PairCost.from_matrices(_sym(rng, n), _sym(rng, n, 10) + 1), 1e5, base)


@pytest.mark.parametrize("algo, n, base, evaluated", [
    ("ring", 6, 2, 120),   # rotations: host 0 at rank 0
    ("hd", 8, 2, 5040),    # XOR relabelling, N a power of two
    ("rd", 4, 2, 6),
    ("hd", 6, 2, 720),     # no symmetry off powers of two
    ("rd", 6, 2, 720),
    ("bcube", 9, 3, 40320),
    ("dbt", 5, 2, 120),
    ("dbt", 2, 2, 2),
])
def test_exhaustive_counts_the_orders_it_needs(algo, n, base, evaluated):
    model = _model(algo, n, base)
    perm, cost, k = exhaustive(model)
    assert k == evaluated
    assert cost == pytest.approx(_brute(model)) if n <= 8 else cost == pytest.approx(model(perm))
    # the limit is inclusive, and the same count decides exact_feasible
    assert exhaustive(model, max_evals=evaluated)[2] == evaluated
    assert exact_feasible(model, max_evals=evaluated) or algo == "ring"
    with pytest.raises(ValueError) as info:
        exhaustive(model, max_evals=evaluated - 1)
    assert str(info.value) == f"exhaustive search over {evaluated} orders exceeds the limit of {evaluated - 1}"
    if algo != "ring":
        assert not exact_feasible(model, max_evals=evaluated - 1)


def test_exhaustive_in_small_batches_counts_every_order():
    model = _model("hd", 6)
    perm, cost, k = exhaustive(model, batch=100)
    assert k == 720 and cost == pytest.approx(_brute(model))


def test_exhaustive_one_host_and_ties():
    one = CostModel("dbt", PairCost.from_matrices(np.zeros((1, 1))))
    perm, cost, k = exhaustive(one)
    assert perm.tolist() == [0] and type(cost) is float and cost == 0.0 and k == 1
    # every order costs the same: the first one enumerated wins (deterministic)
    flat = np.ones((6, 6)) - np.eye(6)
    for algo in ("dbt", "hd", "ring"):
        perm, cost, _ = exhaustive(CostModel(algo, PairCost.from_matrices(flat)))
        assert perm.tolist() == list(range(6))


def test_exact_feasible_ring_uses_held_karp_limit():
    assert exact_feasible(_model("ring", 10), hk_max_n=10)
    assert not exact_feasible(_model("ring", 10), hk_max_n=9)
