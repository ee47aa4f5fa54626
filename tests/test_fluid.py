"""The fluid price (``solvers.fluid``): max-min fair rates, the event loop, its bound, and its use by ``plink order``."""

import numpy as np
import pytest

from plink.solvers import fluid
from plink.solvers.contention import Network, SharedCostModel, shared_lower_bound
from plink.solvers.fluid import (FLUID_MAX_RANKS, FluidCostModel, fluid_lower_bound, fluid_time_reference,
                                 max_min_rates, pricing_model)


def _flat(n, cap=1.0):
    """``n`` hosts in one group, every NIC ``cap`` bytes/s, no latency."""
    return Network(latency=np.zeros((n, n)), nic_send=np.full(n, cap), nic_recv=np.full(n, cap),
                   groups=np.zeros(n, dtype=int), up=[cap], down=[cap])


def test_max_min_rates_textbook_example():
    # link 0 (cap 1) carries flows 0, 1, 2; link 1 (cap 2) carries flows 2, 3 (Bertsekas & Gallager)
    r = max_min_rates(np.array([[0, 0], [0, 0], [0, 1], [1, 1]]), np.array([1.0, 2.0]))
    assert r == pytest.approx([1 / 3, 1 / 3, 1 / 3, 5 / 3])
    # a flow's own cap binds first; the others share what it leaves
    r = max_min_rates(np.array([[0], [0]]), np.array([1.0]), private=np.array([0.1, np.inf]))
    assert r == pytest.approx([0.1, 0.9])
    assert len(max_min_rates(np.zeros((0, 2), dtype=int), np.ones(1))) == 0
    with pytest.raises(ValueError, match="no link of finite capacity"):
        max_min_rates(np.array([[0]]), np.array([np.inf]))


@pytest.mark.parametrize("seed", range(6))
def test_max_min_rates_is_feasible_and_every_flow_has_a_bottleneck(seed):
    rng = np.random.default_rng(seed)
    F, L, P = 30, 8, 3
    slots = rng.integers(0, L, (F, P))
    cap = rng.uniform(0.5, 3.0, L)
    private = np.where(rng.random(F) < 0.2, rng.uniform(0.01, 0.3, F), np.inf)
    r = max_min_rates(slots, cap, private)
    load = np.zeros(L)
    for f in range(F):
        for s in set(slots[f].tolist()):
            load[s] += r[f]
    assert np.all(load <= cap * (1 + 1e-9))
    for f in range(F):  # max-min: a saturated link on which no flow gets more, or its own cap
        own = r[f] >= private[f] * (1 - 1e-9)
        sat = [s for s in set(slots[f].tolist()) if load[s] >= cap[s] * (1 - 1e-9)
               and all(r[g] <= r[f] * (1 + 1e-9) for g in range(F) if s in slots[g])]
        assert own or sat, f


def test_a_parent_takes_its_children_one_after_the_other():
    # Open MPI's tree over 6 ranks: 3 and 5 send to 1, 4 to 2 (NIC shared: 1 is done at 2 units, 2 at 1);
    # 2's message reaches 0 at full rate from 1 to 2, then 1's from 2 to 3; 0 sends to both 3 -> 5;
    # 1 sends to 3 and 5: 5 -> 7.  The clocks give each of 0's messages its whole round (2 units): 8.
    net = _flat(6)
    assert FluidCostModel("bintree", net, 1.0)(np.arange(6)) == pytest.approx(7.0)
    assert SharedCostModel("bintree", net, 1.0)(np.arange(6)) == pytest.approx(8.0)
    # so the shared model's bound (8) is no bound of the fluid; fluid_lower_bound is
    assert shared_lower_bound(SharedCostModel("bintree", net, 1.0)) == pytest.approx(8.0)
    assert fluid_lower_bound(FluidCostModel("bintree", net, 1.0)) <= 7.0


def test_flows_on_one_uplink_cost_what_the_clocks_say():
    # two racks, every rack-crossing flow of a round on one uplink: the busiest link binds both models
    n = 8
    g = np.repeat([0, 1], 4)
    net = Network(latency=np.zeros((n, n)), nic_send=np.full(n, 4.0), nic_recv=np.full(n, 4.0), groups=g,
                  up=[1.0, 1.0], down=[1.0, 1.0])
    perm = np.array([0, 4, 1, 5, 2, 6, 3, 7])  # rd's first round: 4 flows each way over the uplinks
    f, c = FluidCostModel("rd", net, 1.0), SharedCostModel("rd", net, 1.0)
    assert f(perm) == pytest.approx(c(perm))
    for algo in ("ring", "dbt"):  # priced as the shared model
        assert FluidCostModel(algo, net, 1.0)(perm) == SharedCostModel(algo, net, 1.0)(perm)


def _random_net(rng, n, path=False):
    k = int(rng.integers(1, 4))
    g = np.unique(rng.integers(0, k, n), return_inverse=True)[1]
    k = int(g.max()) + 1
    lat = rng.uniform(1e-5, 1e-4, (n, n))
    outer = ((np.arange(n) % 2, [3.0, 2.5], [2.0, 3.5]),) if rng.random() < 0.5 else ()
    return Network(latency=lat, nic_send=rng.uniform(0.5, 2.0, n), nic_recv=rng.uniform(0.5, 2.0, n), groups=g,
                   up=rng.uniform(0.5, 3.0, k), down=rng.uniform(0.5, 3.0, k), outer=outer,
                   path=rng.uniform(0.3, 3.0, (n, n)) if path else None)


@pytest.mark.parametrize("seed", range(4))
def test_compiled_kernel_matches_the_numpy_reference_and_stays_above_the_bound(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    for n, algo in ((7, "hd"), (12, "rd"), (11, "bintree"), (8, "bcube"), (16, "hd")):
        net = _random_net(rng, n, path=seed % 2 == 1)
        m = FluidCostModel(algo, net, 3.0)
        perms = np.array([rng.permutation(n) for _ in range(8)])
        got = m.batch(perms)
        monkeypatch.setattr(fluid, "_KERNEL", None)  # the numpy loop
        ref = m.batch(perms)
        monkeypatch.setattr(fluid, "_KERNEL", False)
        assert got == pytest.approx(ref, rel=1e-9)
        assert np.all(got >= fluid_lower_bound(m) * (1 - 1e-12))


def test_fluid_time_reference_handles_flows_without_bytes():
    slots = np.array([[0, 1], [0, 1]])
    t = fluid_time_reference(slots, np.array([1.0, 1.0]), np.full(2, np.inf), np.array([0.0, 2.0]),
                             np.array([0, 1]), np.array([0, 0]), np.array([1, 1]), np.array([[1, 1], [1, 1]]))
    assert t == pytest.approx(2.0)


def test_pricing_model_where_it_applies():
    net = _flat(8)
    assert isinstance(pricing_model(SharedCostModel("hd", net, 1.0)), FluidCostModel)
    ring = SharedCostModel("ring", net, 1.0)
    assert pricing_model(ring) is ring
    big = _flat(FLUID_MAX_RANKS + 1)
    m = SharedCostModel("rd", big, 1.0)
    assert pricing_model(m) is m
    f = FluidCostModel("rd", net, 1.0)
    assert pricing_model(f) is f
    # the search's companion is the shared model's
    p = np.arange(8)[None, :]
    assert np.all(np.array(f.batch(p, smooth=True)) == np.array(SharedCostModel("rd", net, 1.0).batch(p, smooth=True)))


def test_order_hosts_prices_with_the_fluid_and_proves_small_orders_for_it():
    from plink.data.probefile import Host, ProbeData
    from plink.order import order_hosts

    rng = np.random.default_rng(3)
    n = 6
    lat = rng.uniform(50, 60, (n, n))
    lat[:3, :3] = lat[3:, 3:] = rng.uniform(5, 6, (3, 3))
    lat = (lat + lat.T) / 2
    np.fill_diagonal(lat, 0)
    probe = ProbeData([Host(f"h{i}") for i in range(n)], lat)
    r = order_hosts(probe, "bintree", size=2**20, time_limit=1, n_random=20)
    assert r.solver["priced_by"] == "fluid"
    assert r.proven_optimal and r.solver["priced_orders"] == 720  # 6! orders: searched again on the price
    from plink.order import _models  # the price of every order, by the fluid model of the same network
    from plink.pricing import find_groups
    cm = _models("shared", "bintree", probe, find_groups(probe, None, 0, True), 0, 2**20, 2, True, None)[0]
    price = FluidCostModel.like(cm)
    assert r.cost_plink == pytest.approx(price(np.array(r.order)))
    assert r.cost_input == pytest.approx(price(np.arange(n)))
    import itertools
    assert r.cost_plink == pytest.approx(min(price.batch(np.array(list(itertools.permutations(range(n)))))))
    ring = order_hosts(probe, "ring", size=2**20, time_limit=1, n_random=20)
    assert ring.solver["priced_by"] == "shared"


def test_order_hosts_never_hands_back_an_order_priced_above_rack_contiguous(monkeypatch):
    """Where the price is not the search's model, the search's order can be priced above the
    rack-contiguous one; plink then hands back the latter (here the search is replaced by one
    that returns the input order, which crosses the racks in every round)."""
    import plink.order as po
    from plink.data.probefile import Host, ProbeData
    from plink.pricing import find_groups
    from plink.solvers.solve import SolveResult

    n = 8

    def probe_of(rack):
        lat = np.where(rack[:, None] == rack[None, :], 5.0, 80.0)
        np.fill_diagonal(lat, 0)
        return ProbeData([Host(f"h{i}") for i in range(n)], lat)

    base = np.repeat([0, 1], 4)
    cm = po._models("shared", "rd", probe_of(base), find_groups(probe_of(base), None, 0, True), 0, 2**20, 2,
                    True, None)[0]
    rng = np.random.default_rng(0)
    perms = np.array([rng.permutation(n) for _ in range(50)])
    bad = perms[np.argmax(FluidCostModel.like(cm).batch(perms))]
    assert FluidCostModel.like(cm)(bad) > 1.5 * FluidCostModel.like(cm)(np.arange(n))
    probe = probe_of(base[bad])  # its input order is the priciest order above

    def fake(model, cm, identity, notes, **kw):
        return SolveResult(identity, float(cm(identity)), False, None, "fake", {}), None

    monkeypatch.setattr(po, "_search", fake)
    r = po.order_hosts(probe, "rd", size=2**20, time_limit=1, n_random=10)
    assert len(set(base[bad][r.order[:4]])) == 1 and r.cost_plink == r.cost_contiguous < r.cost_input / 1.5
    assert any("priced above the rack-contiguous one" in n for n in r.notes)


def test_weighted_max_min_rates():
    # one link of capacity 4: weights 1 and 3 get 1 and 3
    assert max_min_rates(np.array([[0], [0]]), np.array([4.0]), weights=np.array([1.0, 3.0])) == pytest.approx([1, 3])
    # the textbook example with flow 3 weighted 2 (it is alone on link 1's rest: unchanged), then flow 2
    # weighted 2: link 0 levels at 1/4 (flows 0, 1 get 1/4, flow 2 gets 1/2), flow 3 takes link 1's 3/2
    slots = np.array([[0, 0], [0, 0], [0, 1], [1, 1]])
    assert max_min_rates(slots, np.array([1.0, 2.0]), weights=np.array([1, 1, 1, 2.0])) == pytest.approx(
        [1 / 3, 1 / 3, 1 / 3, 5 / 3])
    assert max_min_rates(slots, np.array([1.0, 2.0]), weights=np.array([1, 1, 2, 1.0])) == pytest.approx(
        [1 / 4, 1 / 4, 1 / 2, 3 / 2])
    # a flow's own cap still binds in bytes/s, whatever its weight
    assert max_min_rates(np.array([[0], [0]]), np.array([1.0]), private=np.array([0.1, np.inf]),
                         weights=np.array([5.0, 1.0])) == pytest.approx([0.1, 0.9])
    # equal weights are plain max-min
    rng = np.random.default_rng(0)
    slots = rng.integers(0, 5, (20, 3))
    cap = rng.uniform(0.5, 2.0, 5)
    assert max_min_rates(slots, cap, weights=np.full(20, 2.5)) == pytest.approx(max_min_rates(slots, cap))
    for bad in ([1.0], [1.0, 0.0], [1.0, np.inf]):
        with pytest.raises(ValueError, match="weights"):
            max_min_rates(np.array([[0], [0]]), np.array([1.0]), weights=np.array(bad))


@pytest.mark.parametrize("seed", range(3))
def test_weighted_fluid_time_compiled_matches_the_reference(seed, monkeypatch):
    rng = np.random.default_rng(10 + seed)
    for n, algo in ((8, "hd"), (12, "rd"), (11, "bintree")):
        net = _random_net(rng, n, path=seed == 1)
        m = FluidCostModel(algo, net, 3.0)
        perm = rng.permutation(n)
        w = np.exp(0.5 * rng.standard_normal(m.n_flows))
        got = m.fluid_time(perm, w)
        assert m.fluid_time(perm, np.ones(m.n_flows)) == pytest.approx(m.fluid_time(perm), rel=1e-12)
        monkeypatch.setattr(fluid, "_KERNEL", None)  # the numpy loop
        assert m.fluid_time(perm, w) == pytest.approx(got, rel=1e-9)
        monkeypatch.setattr(fluid, "_KERNEL", False)
        with pytest.raises(ValueError, match="weights"):
            m.fluid_time(perm, np.ones(m.n_flows + 1))
    assert FluidCostModel("ring", _flat(4), 1.0).n_flows == 0


def test_round_ends_of_a_parent_taking_its_children_in_turn():
    # the tree of test_a_parent_takes_its_children_one_after_the_other: rank 0 is done at 7
    m = FluidCostModel("bintree", _flat(6), 1.0)
    ends = m.round_ends(np.arange(6))
    assert ends.shape == (6, len(m.rounds))
    assert np.nanmax(ends) == pytest.approx(m.fluid_time(np.arange(6))) == pytest.approx(7.0)
    # every rank's rounds end in order, and a rank without a flow in a round has NaN there
    for r in range(6):
        e = ends[r][~np.isnan(ends[r])]
        assert len(e) and np.all(np.diff(e) >= 0)
    assert np.isnan(ends).any()
    # Rabenseifner on 4 ranks of one group, 1 byte/s NICs, 4 bytes: 2, then 1 (halves), then 1, 2
    hd = FluidCostModel("hd", _flat(4), 4.0)
    e = hd.round_ends(np.arange(4))
    real = [k for k in range(e.shape[1]) if not np.isnan(e[:, k]).all()]
    assert e[:, real] == pytest.approx(np.tile(np.cumsum([2.0, 1.0, 1.0, 2.0]), (4, 1)))


def test_the_compiled_kernel_is_used_unless_plink_no_numba(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setattr(fluid, "_KERNEL", False)  # not tried yet
    for value, compiled in ((None, True), ("0", True), ("", True), ("1", False), ("yes", False)):
        if value is None:
            monkeypatch.delenv("PLINK_NO_NUMBA", raising=False)
        else:
            monkeypatch.setenv("PLINK_NO_NUMBA", value)
        assert (fluid._kernel() is not None) == compiled, value
    monkeypatch.delenv("PLINK_NO_NUMBA", raising=False)

    def boom(*a, **k):
        raise AssertionError("the numpy loop ran")

    monkeypatch.setattr(fluid, "fluid_time_reference", boom)
    assert FluidCostModel("hd", _flat(4), 4.0).fluid_time(np.arange(4)) == pytest.approx(6.0)


@pytest.mark.parametrize("algo,n", [("bintree", 6), ("bintree", 11), ("hd", 8), ("rd", 6), ("bcube", 9)])
def test_fluid_lower_bound_is_at_least_every_ranks_nic_time(algo, n):
    # the bound's clocks add, per round, the larger of what a rank sends and receives over the fastest NIC:
    # so it is at least the largest sum of those over the rounds (and at most the price)
    base = 3 if algo == "bcube" else 2
    m = FluidCostModel(algo, _flat(n, cap=2.0), 3.0, base)
    nic = np.zeros(n)
    for s in m.rounds:
        sent = np.bincount(s.src, weights=s.nbytes, minlength=n)
        recv = np.bincount(s.dst, weights=s.nbytes, minlength=n)
        nic += np.maximum(sent, recv) / 2.0
    lb = fluid_lower_bound(m)
    assert nic.max() > 0 and nic.max() * (1 - 1e-12) <= lb <= m(np.arange(n)) * (1 + 1e-12)


def test_a_pairs_own_path_caps_its_flow():
    # 2 ranks, NICs of 1 byte/s, the pair's path 0.5: Rabenseifner's 2 exchanges of 1 byte take 2 s each
    net = Network(latency=np.zeros((2, 2)), nic_send=np.ones(2), nic_recv=np.ones(2), groups=np.zeros(2, dtype=int),
                  up=[1.0], down=[1.0], path=np.full((2, 2), 0.5))
    m = FluidCostModel("hd", net, 2.0)
    assert m.fluid_time([0, 1]) == pytest.approx(4.0)
    assert np.nanmax(m.round_ends([0, 1])) == pytest.approx(4.0)
    free = FluidCostModel("hd", _flat(2), 2.0)
    assert free.fluid_time([0, 1]) == pytest.approx(2.0)


def test_ring_and_dbt_have_no_fluid_rounds():
    for algo in ("ring", "dbt"):
        m = FluidCostModel(algo, _flat(4), 1.0)
        assert m.fluid_time(np.arange(4)) == 0.0
        assert m.round_ends(np.arange(4)).shape == (4, 0)


def test_fluid_time_weights_are_checked_and_reach_round_ends():
    m = FluidCostModel("hd", _racks_net(), 4.0)
    perm = np.array([0, 2, 1, 3])  # the first and last exchanges cross the shared uplinks
    for bad in (np.zeros(m.n_flows), np.full(m.n_flows, np.inf), -np.ones(m.n_flows)):
        with pytest.raises(ValueError, match="weights"):
            m.fluid_time(perm, bad)
    w = np.exp(np.random.default_rng(1).standard_normal(m.n_flows))
    ends, plain = m.round_ends(perm, w), m.round_ends(perm)
    assert np.nanmax(ends) == pytest.approx(m.fluid_time(perm, w))
    assert not np.allclose(np.nan_to_num(ends), np.nan_to_num(plain))


def _racks_net():
    """4 hosts in 2 groups of 2, fast NICs (10 bytes/s), group uplinks of 1 byte/s."""
    return Network(latency=np.zeros((4, 4)), nic_send=np.full(4, 10.0), nic_recv=np.full(4, 10.0),
                   groups=np.array([0, 0, 1, 1]), up=[1.0, 1.0], down=[1.0, 1.0])


def test_like_and_init_keep_the_base():
    shared = SharedCostModel("bcube", _flat(9), 1.0, base=3)
    f = FluidCostModel.like(shared)
    assert f.base == 3 and f.size == 1.0 and f.algo == "bcube"
    perm = np.random.default_rng(2).permutation(9)
    assert f(perm) == pytest.approx(FluidCostModel("bcube", _flat(9), 1.0, 3)(perm))
    assert pricing_model(SharedCostModel("rd", _flat(FLUID_MAX_RANKS), 1.0)).kind == "fluid"


def _two_steps(sndbuf, ends=None):
    """Rank 0 sends 2 bytes to rank 1 (round 0), then receives 2 bytes from rank 2 (round 1); every
    rank's send and receive side is a link of 1 byte/s of its own (send r: link r, receive r: 3 + r)."""
    slots = np.array([[0, 4], [2, 3]])
    todo0 = np.array([[1, 1], [1, 0], [0, 1]])
    return fluid_time_reference(slots, np.ones(6), np.full(2, np.inf), np.array([2.0, 2.0]), np.array([0, 1]),
                                np.array([0, 2]), np.array([1, 0]), todo0, None, ends, sndbuf=sndbuf)


def test_a_sender_moves_on_once_its_bytes_fit_the_send_buffer():
    # without a buffer rank 0 waits for its send to be delivered (2 s), then receives (2 s more)
    assert _two_steps(None) == pytest.approx(4.0) == _two_steps(0.0)
    # a buffer that holds the message: rank 0 receives at once, both flows end at 2
    assert _two_steps(2.0) == pytest.approx(2.0) == _two_steps(64.0)
    # a buffer of 1 byte: rank 0 moves on at 1 s, its receive ends at 3, its send drains at 2
    ends = np.full((3, 2), np.nan)
    assert _two_steps(1.0, ends) == pytest.approx(3.0)
    assert ends[0] == pytest.approx([1.0, 3.0])  # the sender is done with round 0 before delivery
    assert ends[1, 0] == pytest.approx(2.0)  # the receiver at delivery
    assert ends[2, 1] == pytest.approx(2.0)  # rank 2's 2 bytes: 1 left (its buffer) at 2 s


def test_send_buffers_change_nothing_for_symmetric_exchanges_and_are_checked():
    # Rabenseifner on one flat group: every exchange is symmetric, so each rank's receive ends
    # when its send does, whatever the buffer
    m = FluidCostModel("hd", _flat(8), 8.0)
    perm = np.random.default_rng(3).permutation(8)
    for b in (None, 0.0, 1.0, 3.0, 100.0):
        assert m.fluid_time(perm, sndbuf=b) == pytest.approx(m.fluid_time(perm))
    # across shared uplinks the price can change, and the default (None) is the plain price
    r = FluidCostModel("rd", _racks_net(), 4.0)
    for p in ([0, 2, 1, 3], [0, 1, 2, 3]):
        assert r.fluid_time(p, sndbuf=None) == r.fluid_time(p)
        assert np.nanmax(r.round_ends(p, sndbuf=4.0)) == pytest.approx(r.fluid_time(p, sndbuf=4.0))
    for bad in (-1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="sndbuf"):
            m.fluid_time(perm, sndbuf=bad)
