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
        perm, cost, _ = exhaustive(CostModel(algo, PairCost.from_matrices(flat)), batch=7)
        assert perm.tolist() == list(range(6))


def test_exact_feasible_ring_uses_held_karp_limit():
    assert exact_feasible(_model("ring", 10), hk_max_n=10)
    assert not exact_feasible(_model("ring", 10), hk_max_n=9)


# ---------------------------------------------------------------------------
# the bounds' values, not only their validity (found by mutation testing, README "Development")

from plink.solvers.bounds import _prim_one_tree, dbt_lower_bound, round_lower_bound  # noqa: E402


def test_ring_bound_small_and_asymmetric_cases():
    assert ring_lower_bound(np.zeros((1, 1))) == 0.0
    assert ring_lower_bound(np.array([[0, 3.0], [5.0, 0]])) == 8.0
    m = np.array([[0, 1, 1], [5, 0, 5], [6, 6, 0]], dtype=float)
    # every host has a successor (rows: 1 + 5 + 6) and a predecessor (columns: 5 + 1 + 1)
    assert ring_lower_bound(m) == 12.0
    assert ring_lower_bound(m.T) == 12.0


def test_ring_bound_is_tight_when_the_one_tree_is_a_tour():
    sq = np.array([[0, 1, 2, 1], [1, 0, 1, 2], [2, 1, 0, 1], [1, 2, 1, 0]], dtype=float)
    lb = ring_lower_bound(sq)
    assert lb <= 4.0 and lb == pytest.approx(4.0, abs=1e-8)
    x = np.arange(20, dtype=float)
    line = np.abs(x[:, None] - x[None, :])
    assert 38.0 - 1e-3 <= ring_lower_bound(line, upper=38.0) <= 38.0
    # without the optimum as a target the subgradient steps aim 1% above each value: weaker, still far
    # above the plain 1-tree (21) and the successor bound (20)
    assert 30.0 < ring_lower_bound(line, time_budget=60) <= 38.0


@pytest.mark.parametrize("seed", range(3))
def test_ring_bound_subgradient_improves_on_the_plain_one_tree(seed):
    rng = np.random.default_rng(seed)
    pts = rng.random((12, 2))
    m = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    _, opt = held_karp(m)
    w = m + np.diag(np.full(12, np.inf))
    plain, _ = _prim_one_tree(w)
    lb = ring_lower_bound(m, time_budget=5.0)
    assert lb <= opt
    assert lb >= 0.97 * opt and lb > plain + 1e-9


@pytest.mark.parametrize("n, seed", [(3, 4), (4, 0), (5, 1), (9, 2), (15, 3)])
def test_prim_one_tree_against_scipy(n, seed):
    from scipy.sparse.csgraph import minimum_spanning_tree
    rng = np.random.default_rng(seed)
    m = _sym(rng, n) + 1
    w = m + np.diag(np.full(n, np.inf))
    total, deg = _prim_one_tree(w)
    mst = minimum_spanning_tree(m[1:, 1:]).toarray()
    two = np.sort(m[0, 1:])[:2]
    assert total == pytest.approx(mst.sum() + two.sum())
    want = np.zeros(n, dtype=int)
    for i, j in zip(*np.nonzero(mst)):
        want[i + 1] += 1
        want[j + 1] += 1
    want[0] = 2
    for j in np.argsort(m[0, 1:])[:2]:
        want[j + 1] += 1
    assert deg.tolist() == want.tolist() and deg.dtype == np.int64


def _round_bound_ref(model):
    """The module docstring's round bound, with plain loops."""
    n = model.n
    total = 0.0
    for a, b, frac in model._rounds:
        partners = {}
        for x, y in zip(a.tolist(), b.tolist()):
            partners.setdefault(x, set()).add(y)
            partners.setdefault(y, set()).add(x)
        p = min(len(v) for v in partners.values())
        c = model.pc.matrix(model.size * frac)
        per_host = sorted(sorted(max(c[h, g], c[g, h]) for g in range(n) if g != h)[p - 1] for h in range(n))
        total += per_host[len(partners) - 1]
    return total


@pytest.mark.parametrize("algo, n, base, size", [
    ("hd", 2, 2, 1e6), ("hd", 6, 2, 1e6), ("hd", 8, 2, 0), ("hd", 8, 2, 1e6), ("rd", 7, 2, 1e6), ("bcube", 9, 3, 1e6),
    ("bcube", 8, 2, 0), ("hd", 32, 2, 1e6), ("bcube", 27, 3, 1e6),
    ("hd", 128, 2, 1e6),  # large enough for np.partition to leave the rest of a row unsorted
])
def test_round_bound_equals_its_definition(algo, n, base, size):
    rng = np.random.default_rng(n)
    model = CostModel(algo, PairCost.from_matrices(rng.random((n, n)) * 100, rng.random((n, n)) * 10 + 1), size, base)
    lb = round_lower_bound(model)
    assert lb == pytest.approx(_round_bound_ref(model))
    assert lower_bound(model) == lb
    if n <= 8:
        assert lb <= _brute(model) * (1 + 1e-9)


@pytest.mark.parametrize("n", [2, 3, 6, 8])
def test_dbt_bound_equals_its_definition(n):
    """On asymmetric costs (the bound used to take the cheaper of both directions' max, and passed the
    optimum at n = 8)."""
    rng = np.random.default_rng(n)
    model = CostModel("dbt", PairCost.from_matrices(rng.random((n, n)) * 100, rng.random((n, n)) * 10 + 1), 1e6)
    c = model.pc.matrix(5e5)  # asymmetric: a tree edge costs c[parent, child]
    cheapest = [min(c[g, h] for g in range(n) if g != h) for h in range(n)]
    depth = {2: 1, 3: 1, 6: 2, 8: 3}[n]
    want = max(sorted(cheapest)[-2], depth * min(cheapest))
    assert dbt_lower_bound(model) == pytest.approx(want)
    assert lower_bound(model) == dbt_lower_bound(model)
    assert dbt_lower_bound(model) <= _brute(model) * (1 + 1e-9)


def test_bounds_of_one_host_and_ring_dispatch():
    one = PairCost.from_matrices(np.zeros((1, 1)))
    assert round_lower_bound(CostModel("hd", one)) == 0.0
    assert dbt_lower_bound(CostModel("dbt", one)) == 0.0
    m = np.array([[0, 1, 1], [5, 0, 5], [6, 6, 0]], dtype=float)
    assert lower_bound(CostModel("ring", PairCost.from_matrices(m))) == 12.0


def test_held_karp_small_and_limits():
    perm, cost = held_karp(np.zeros((1, 1)))
    assert perm.tolist() == [0] and cost == 0.0
    perm, cost = held_karp(np.array([[0, 3.0], [5.0, 0]]))
    assert perm.tolist() == [0, 1] and type(cost) is float and cost == 8.0
    with pytest.raises(ValueError) as info:
        held_karp(np.zeros((23, 23)))
    assert str(info.value) == "Held-Karp needs 2^N memory: N = 23 is too large (max 22)"


def test_held_karp_memory_limit_is_inclusive(monkeypatch):
    from plink.solvers import exact
    monkeypatch.setattr(exact, "HELD_KARP_MEMORY_MAX_N", 6)
    m = _sym(np.random.default_rng(6), 6)
    assert held_karp(m)[1] == pytest.approx(min(
        sum(m[p[r], p[r - 1]] for r in range(6)) for p in itertools.permutations(range(6))))
    with pytest.raises(ValueError, match="N = 7 is too large \\(max 6\\)"):
        held_karp(_sym(np.random.default_rng(7), 7))


def test_solve_exact_names_its_method_and_passes_the_limit():
    assert solve_exact(_model("ring", 5))[2] == "held-karp"
    assert solve_exact(_model("dbt", 5))[2] == "exhaustive"
    with pytest.raises(ValueError, match="exceeds the limit of 100"):
        solve_exact(_model("dbt", 5), max_evals=100)


def test_dbt_bound_counts_incoming_edges():
    # hosts 2 and 3 are expensive to reach (100) but cheap to leave (1): whichever is not a tree's
    # root has a parent edge of 100
    c = np.ones((4, 4))
    c[:, 2] = c[:, 3] = 100.0
    model = CostModel("dbt", PairCost.from_matrices(c))
    assert dbt_lower_bound(model) == 100.0
    assert _brute(model) >= 100.0


def test_ring_bound_stops_on_a_tour_without_dividing_by_zero():
    import warnings
    sq = np.array([[0, 1, 2, 1], [1, 0, 1, 2], [2, 1, 0, 1], [1, 2, 1, 0]], dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ring_lower_bound(sq, max_iter=50) == pytest.approx(4.0, abs=1e-8)


def test_ring_bound_time_budget_zero_is_one_step_and_upper_is_passed_on():
    rng = np.random.default_rng(7)
    m = _sym(rng, 9) + 1
    w = m + np.diag(np.full(9, np.inf))
    plain, _ = _prim_one_tree(w)
    simple = float(w.min(axis=1).sum())
    first = max(plain, simple)
    model = CostModel("ring", PairCost.from_matrices(m))
    for lb in (ring_lower_bound(m, time_budget=0.0), lower_bound(model, time_budget=0.0)):
        assert type(lb) is float and lb == pytest.approx(first * (1 - 1e-9), rel=1e-12)
    x = np.arange(20, dtype=float)
    line = CostModel("ring", PairCost.from_matrices(np.abs(x[:, None] - x[None, :])))
    assert 38.0 - 1e-3 <= lower_bound(line, upper=38.0, time_budget=60) <= 38.0
