"""Annealer and ring local search: incremental deltas, never worse than the start, determinism."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plink.solvers.anneal import anneal, group_order, make_evaluator, propose, warm_starts
from plink.solvers.costmodels import CostModel, PairCost
from plink.solvers.exact import held_karp
from plink.solvers.ringsearch import (
    greedy_edge_tour,
    iterated_local_search,
    local_search,
    neighbour_lists,
    tour_length,
)


def _pc(seed, n, bw=True):
    rng = np.random.default_rng(seed)
    lat = rng.random((n, n)) * 100
    lat = np.maximum(lat, lat.T)
    b = None
    if bw:
        b = rng.random((n, n)) * 10 + 1
        b = np.minimum(b, b.T)
    return PairCost.from_matrices(lat, b)


CASES = [("ring", 11, 2), ("hd", 16, 2), ("hd", 12, 2), ("dbt", 15, 2), ("dbt", 16, 2), ("bcube", 9, 3), ("bcube", 16, 4)]


@settings(max_examples=25, deadline=None)
@given(case=st.sampled_from(CASES), seed=st.integers(0, 10**6), bw=st.booleans(), steps=st.integers(1, 60))
def test_incremental_deltas_equal_full_evaluation(case, seed, bw, steps):
    algo, n, base = case
    model = CostModel(algo, _pc(seed, n, bw), 3e6, base)
    rng = random.Random(seed)
    perm = list(range(n))
    rng.shuffle(perm)
    ev = make_evaluator(model, perm)
    for _ in range(steps):
        ch = propose(ev.perm, rng)
        if not ch:
            continue
        cand = ev.perm[:]
        for r, h in ch.items():
            cand[r] = h
        assert sorted(cand) == list(range(n))
        c = ev.trial(ch)
        assert c == pytest.approx(model(np.array(cand)), rel=1e-9, abs=1e-9)
        if rng.random() < 0.5:
            ev.commit()
        else:
            ev.reject()
        assert ev.cost == pytest.approx(model(np.array(ev.perm)), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("algo,n", [("hd", 12), ("dbt", 13), ("bcube", 16)])
def test_critical_rank_is_in_the_costliest_exchange(algo, n):
    model = CostModel(algo, _pc(n, n), 1e6)
    ev = make_evaluator(model, list(range(n)))
    rng = random.Random(0)
    for _ in range(20):
        r = ev.critical(rng)
        assert 0 <= r < n
        if algo != "dbt":  # the rank belongs to a pair whose cost is its round's maximum
            assert any(
                r in (a[k], b[k]) and vals[k] == rmax
                for a, b, _s, _t, vals, rmax, _am, _tab in ev.rounds
                for k in range(len(vals))
            )


@pytest.mark.parametrize("algo,n,base", [("ring", 40, 2), ("hd", 32, 2), ("dbt", 30, 2), ("bcube", 27, 3)])
def test_anneal_never_worse_than_start_and_deterministic(algo, n, base):
    model = CostModel(algo, _pc(n, n), 1e6, base)
    start = warm_starts(model)[-1][1]
    a = anneal(model, init=start, max_iter=3000, time_limit=60, seed=3)
    b = anneal(model, init=start, max_iter=3000, time_limit=60, seed=3)
    assert a.cost <= model(start) + 1e-9
    assert a.cost == pytest.approx(model(a.perm))
    assert a.perm.tolist() == b.perm.tolist() and a.cost == b.cost
    assert sorted(a.perm.tolist()) == list(range(n))


def test_anneal_plain_callable_and_bad_input():
    target = np.arange(10)[::-1]
    res = anneal(lambda p: float(np.abs(p - target).sum()), 10, max_iter=4000, seed=0, time_limit=60)
    assert res.cost <= float(np.abs(np.arange(10) - target).sum())
    with pytest.raises(ValueError):
        anneal(lambda p: 0.0, 5, time_limit=0)
    with pytest.raises(ValueError):
        anneal(lambda p: 0.0, 5, init=[0, 0, 1, 2, 3])


def test_ring_local_search_and_ils():
    rng = np.random.default_rng(7)
    pts = rng.random((120, 2))
    m = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    nb = neighbour_lists(m, 8)
    g = greedy_edge_tour(m, neighbours=nb)
    assert sorted(g.tolist()) == list(range(120))
    ls = local_search(m, g, nb)
    assert sorted(ls.tolist()) == list(range(120))
    assert tour_length(m, ls) <= tour_length(m, g) + 1e-9
    r1 = iterated_local_search(m, g, max_kicks=400, time_limit=60, seed=1, neighbours=nb)
    r2 = iterated_local_search(m, g, max_kicks=400, time_limit=60, seed=1, neighbours=nb)
    assert r1.tour.tolist() == r2.tour.tolist()
    assert r1.cost <= tour_length(m, ls) + 1e-9
    assert r1.cost == pytest.approx(tour_length(m, r1.tour))
    # converged search stops early after `stall` fruitless perturbations
    r3 = iterated_local_search(m, g, max_kicks=10**6, time_limit=60, seed=1, neighbours=nb, stall=300)
    assert r3.kicks < 10**6 and r3.cost <= tour_length(m, ls) + 1e-9


def test_ils_finds_optimum_of_small_instance():
    rng = np.random.default_rng(11)
    pts = rng.random((14, 2))
    m = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    _, opt = held_karp(m)
    r = iterated_local_search(m, max_kicks=300, time_limit=60, seed=0)
    assert r.cost == pytest.approx(opt)


def test_group_warm_start_keeps_groups_contiguous():
    # 4 racks of 5: cheap inside a rack
    labels = np.repeat(np.arange(4), 5)
    rng = np.random.default_rng(2)
    perm = rng.permutation(20)
    labels = labels[perm]
    m = np.where(labels[:, None] == labels[None, :], 1.0, 10.0)
    np.fill_diagonal(m, 0)
    order = group_order(m, labels)
    assert sorted(order.tolist()) == list(range(20))
    assert tour_length(m, order) == pytest.approx(20 * 1 - 4 + 4 * 10)
    with pytest.raises(ValueError):
        group_order(m, labels[:5])


def test_warm_starts_include_the_grouping_when_given():
    from plink.solvers.anneal import warm_starts

    rng = np.random.default_rng(7)
    labels = rng.permutation(np.repeat(np.arange(4), 5))  # 4 groups of 5, shuffled hosts
    lat = np.where(labels[:, None] == labels[None, :], 10.0, 100.0) + rng.random((20, 20))
    lat = (lat + lat.T) / 2
    np.fill_diagonal(lat, 0)
    model = CostModel("hd", PairCost.from_matrices(lat), 1e6)
    names = [name for name, _ in warm_starts(model)]
    assert "groups" not in names
    starts = dict(warm_starts(model, labels=labels))
    assert list(starts) == names + ["groups"]
    perm = starts["groups"]
    assert sorted(perm.tolist()) == list(range(20))
    blocks = labels[perm]
    # group-contiguous: the label changes exactly 3 times along the order
    assert int(np.count_nonzero(blocks[1:] != blocks[:-1])) == 3
