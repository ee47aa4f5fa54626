import numpy as np
import pytest

from plink import order_hosts, simulate_datacenter
from plink.errors import PlinkError
from plink.order import pair_cost
from plink.data.probefile import Host, ProbeData
from plink.solvers.anneal import anneal, nearest_neighbour_ring
from plink.solvers.costmodels import CostModel, PairCost


def test_simulate_is_deterministic_and_shuffled():
    a = simulate_datacenter(racks=4, hosts_per_rack=4, seed=7)
    b = simulate_datacenter(racks=4, hosts_per_rack=4, seed=7)
    c = simulate_datacenter(racks=4, hosts_per_rack=4, seed=8)
    np.testing.assert_array_equal(a.latency, b.latency)
    assert a.truth == b.truth
    assert not np.array_equal(a.latency, c.latency)
    racks = [lab[-1] for lab in a.truth.labels]
    assert sorted(set(racks)) == ["rack0", "rack1", "rack2", "rack3"]
    assert racks != sorted(racks)  # hosts come in random order


def test_simulate_levels_separate_latency():
    pd = simulate_datacenter(racks=4, hosts_per_rack=4, rows=2, jitter=0.0, height_us=0.0, shuffle=False)
    lab = pd.truth.labels
    same_rack = [pd.latency[i, j] for i in range(pd.n) for j in range(pd.n) if i != j and lab[i] == lab[j]]
    same_row = [pd.latency[i, j] for i in range(pd.n) for j in range(pd.n) if lab[i][:3] == lab[j][:3] and lab[i] != lab[j]]
    other_row = [pd.latency[i, j] for i in range(pd.n) for j in range(pd.n) if lab[i][:3] != lab[j][:3]]
    assert set(same_rack) == {20.0} and set(same_row) == {60.0} and set(other_row) == {120.0}


def test_simulate_noise_missing_and_bandwidth():
    pd = simulate_datacenter(racks=4, hosts_per_rack=8, missing_frac=0.1, outlier_frac=0.05, asymmetry=0.2,
                             bandwidth=True, oversubscription=4, jitter=0.0, seed=1, shuffle=False)
    assert 0.05 < 1 - pd.coverage() < 0.15
    lab = pd.truth.labels
    inside = [pd.bandwidth[i, j] for i in range(pd.n) for j in range(pd.n) if i != j and lab[i] == lab[j]]
    across = [pd.bandwidth[i, j] for i in range(pd.n) for j in range(pd.n) if lab[i] != lab[j]]
    assert np.nanmin(inside) == pytest.approx(25.0)
    assert np.nanmax(across) == pytest.approx(25.0 / 4)
    assert np.allclose(pd.latency, pd.latency.T, equal_nan=True)  # symmetrised on construction


def test_order_beats_random_and_never_worse_than_input():
    pd = simulate_datacenter(racks=4, hosts_per_rack=6, seed=2)
    for algo in ("ring", "hd", "dbt"):
        res = order_hosts(pd, algo, time_limit=0.5, seed=1, model="pairsum")
        assert res.cost_plink <= res.cost_input
        assert sorted(res.order) == list(range(pd.n))
        assert res.hosts == [pd.names[i] for i in res.order]
        model = CostModel(algo, pair_cost(pd)[0], res.size)
        assert model(np.array(res.order)) == pytest.approx(res.cost_plink)
    ring = order_hosts(pd, "ring", time_limit=1.0, seed=1, model="pairsum")
    assert ring.speedup_vs_random > 1.8  # 3x RTT ratio between rack and row here


def test_ring_order_keeps_racks_contiguous():
    pd = simulate_datacenter(racks=4, hosts_per_rack=4, seed=5, jitter=0.02)
    res = order_hosts(pd, "ring", time_limit=1.0, seed=0)
    racks = [pd.truth.labels[i][-1] for i in res.order]
    changes = sum(racks[k] != racks[k - 1] for k in range(len(racks)))
    assert changes == 4  # the ring enters and leaves each rack once


def test_trivial_sizes():
    for n in (1, 2, 3):
        lat = np.ones((n, n)) - np.eye(n)
        pd = ProbeData([Host(f"h{i}") for i in range(n)], lat)
        res = order_hosts(pd, "ring", time_limit=0.1)
        assert res.proven_optimal is True
        assert res.cost_plink == res.cost_input


def test_missing_pairs_priced_as_worst():
    lat = np.array([[0, 1, np.nan], [1, 0, 5], [np.nan, 5, 0]], dtype=float)
    pd = ProbeData([Host("a"), Host("b"), Host("c")], lat)
    pc, missing = pair_cost(pd)
    assert missing == 1 and pc.latency[0, 2] == 5
    nothing = ProbeData([Host("a"), Host("b")], np.array([[0, np.nan], [np.nan, 0]]))
    with pytest.raises(PlinkError, match="no pair of hosts was measured"):
        order_hosts(nothing)


def test_order_argument_errors():
    pd = simulate_datacenter(racks=2, hosts_per_rack=3)
    with pytest.raises(PlinkError, match="unknown algorithm"):
        order_hosts(pd, "star")
    with pytest.raises(PlinkError, match="time limit"):
        order_hosts(pd, time_limit=-1)
    with pytest.raises(PlinkError, match="power of 2"):
        order_hosts(pd, "bcube")


def test_anneal_deterministic_with_max_iter_and_improves():
    rng = np.random.default_rng(0)
    pts = rng.uniform(size=(30, 2))
    m = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    model = CostModel("ring", PairCost.from_matrices(m))
    a = anneal(model, 30, max_iter=20000, time_limit=60, seed=3, ring_matrix=model.ring_matrix)
    b = anneal(model, 30, max_iter=20000, time_limit=60, seed=3, ring_matrix=model.ring_matrix)
    np.testing.assert_array_equal(a.perm, b.perm)
    assert a.cost == pytest.approx(model(a.perm))
    assert a.cost < model(np.arange(30)) * 0.6
    # generic path (no incremental ring) agrees with its own cost
    g = anneal(model, 30, max_iter=3000, time_limit=60, seed=3)
    assert g.cost == pytest.approx(model(g.perm))
    assert g.cost <= model(np.arange(30))


def test_nearest_neighbour_is_a_permutation():
    rng = np.random.default_rng(1)
    m = rng.uniform(size=(12, 12))
    tour = nearest_neighbour_ring(m + m.T, 3)
    assert tour[0] == 3 and sorted(tour) == list(range(12))


def test_simulated_pair_bandwidth_never_exceeds_the_host_rate():
    """The jitter put the fastest simulated pairs 13-18% above --host-gbps (64 hosts, default jitter)."""
    import numpy as np

    from plink.data.simulate import simulate_datacenter

    for seed in range(3):
        p = simulate_datacenter(8, 8, bandwidth=True, host_gbps=25.0, seed=seed)
        bw = p.bandwidth[np.isfinite(p.bandwidth)]
        assert bw.max() <= 25.0 and (bw == 25.0).any() and bw.min() < 25.0 / 4 * 1.2


@pytest.mark.parametrize("seed, msg", [
    (-1, "seed must be 0 .. 2**32 - 1, got -1"),  # was numpy's 'expected non-negative integer'
    (2**32, "seed must be 0 .. 2**32 - 1, got 4294967296"),
    (1.5, "seed must be a whole number, got 1.5"),
    (float("nan"), "seed must be a whole number, got nan"),
    (True, "seed must be a whole number, got True"),
    ("1", "seed must be a whole number, got '1'"),
    (None, "seed must be a whole number, got None"),
])
def test_simulate_refuses_a_bad_seed_in_one_line(seed, msg):
    from plink.errors import OptionError

    with pytest.raises(OptionError) as exc:
        simulate_datacenter(racks=2, hosts_per_rack=2, seed=seed)
    assert str(exc.value) == msg and isinstance(exc.value, ValueError)


def test_simulate_takes_a_whole_seed_of_any_number_type_as_order_hosts_does():
    # seed=1.0 was a TypeError from numpy's SeedSequence; plink.order_hosts takes it (1e6 is a whole number)
    want = simulate_datacenter(racks=2, hosts_per_rack=3, seed=1)
    for seed in (1.0, np.int8(1), np.float32(1)):
        p = simulate_datacenter(racks=2, hosts_per_rack=3, seed=seed)
        assert np.array_equal(p.latency, want.latency)
        assert p.meta["seed"] == 1 and type(p.meta["seed"]) is int


@pytest.mark.parametrize("kw, msg", [
    (dict(jitter="x"), "jitter must be a number, got 'x'"),  # was numpy's "ufunc 'isfinite' not supported"
    (dict(rack_us="20"), "per-level latencies must be a number, got '20'"),
    (dict(asymmetry=True), "asymmetry must be a number, got True"),
    (dict(bandwidth="no"), "bandwidth must be True or False, got 'no'"),  # was read as True
    (dict(racks=2.5), "racks must be a positive integer, got 2.5"),
])
def test_simulate_refuses_a_parameter_of_the_wrong_type_in_one_line(kw, msg):
    from plink.errors import OptionError

    with pytest.raises(OptionError) as exc:
        simulate_datacenter(**{"racks": 2, "hosts_per_rack": 2, **kw})
    assert str(exc.value) == msg


def test_simulate_takes_whole_counts_of_any_number_type_as_it_takes_the_seed():
    # racks=2.0 was refused while seed=1.0 was taken
    want = simulate_datacenter(racks=2, hosts_per_rack=3, rows=1, seed=1)
    p = simulate_datacenter(racks=2.0, hosts_per_rack=np.float32(3), rows=np.int8(1), seed=1)
    assert np.array_equal(p.latency, want.latency) and p.n == 6


def test_a_ragged_latency_list_is_one_line_error():
    from plink.errors import InputError
    from plink.structure.hierarchy import infer_hierarchy

    with pytest.raises(InputError, match=r"^latency must be an N x N numeric matrix, got list$"):
        infer_hierarchy([[0, 1, 2], [1, 0], [2, 1, 0]])  # was numpy's "inhomogeneous shape" ValueError


def test_simulate_docstring_documents_every_parameter():
    import inspect

    doc = inspect.getdoc(simulate_datacenter)
    documented = set()  # the names of the 'name : type' lines of its Parameters section
    for line in doc.split("Parameters\n----------\n")[1].splitlines():
        if " : " in line and not line.startswith(" "):
            documented.update(n.strip() for n in line.split(" : ")[0].split(","))
    assert documented == set(inspect.signature(simulate_datacenter).parameters)
