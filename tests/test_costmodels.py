"""Cost models against slow, obviously-correct reference implementations."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plink.solvers.costmodels import (
    CostModel,
    PairCost,
    bcube_cost,
    bcube_rounds,
    check_algorithm,
    dbt_cost,
    dbt_levels,
    dbt_root,
    hd_cost,
    hd_rounds,
    is_power_of,
    rd_rounds,
    ring_cost,
    ring_hops,
)

# ---------------------------------------------------------------------------
# references: plain loops over the definitions (dissertation §5.2.1, MPICH)


def c_ref(lat, bw, a, b, size):
    cost = lat[a][b]
    if bw is not None:
        cost += size * 8e-3 / bw[a][b]
    return cost


def ring_ref(lat, bw, p, size):
    n = len(p)
    if n < 2:
        return 0.0
    return sum(c_ref(lat, bw, p[i], p[i - 1], size) for i in range(n))


def hd_ref(lat, bw, p, size):
    """MPICH MPIR_Allreduce_intra_reduce_scatter_allgather, reduce-scatter phase."""
    n = len(p)
    if n < 2:
        return 0.0
    pof2 = 1
    while pof2 * 2 <= n:
        pof2 *= 2
    rem = n - pof2
    total = 0.0
    if rem:
        worst = 0.0
        for rank in range(2 * rem):
            if rank % 2 == 0:  # even ranks send their vector to rank + 1
                a, b = p[rank], p[rank + 1]
                worst = max(worst, c_ref(lat, bw, a, b, size), c_ref(lat, bw, b, a, size))
        total += worst

    def old(newrank):
        return newrank * 2 + 1 if newrank < rem else newrank + rem

    mask = 1
    while mask < pof2:
        worst = 0.0
        for nr in range(pof2):
            partner = nr ^ mask
            a, b = p[old(nr)], p[old(partner)]
            worst = max(worst, c_ref(lat, bw, a, b, size / (2 * mask)))
        total += worst
        mask *= 2
    return total


def dbt_ref(lat, bw, p, size):
    n = len(p)
    if n < 2:
        return 0.0

    def tree(shift):
        def host(rank):
            return p[(rank - shift) % n]

        def T(i, j):
            if i >= j:
                return 0.0
            m = (i + j) // 2
            best = 0.0
            if i <= m - 1:
                lroot = (i + m - 1) // 2
                best = max(best, c_ref(lat, bw, host(m), host(lroot), size / 2) + T(i, m - 1))
            if m + 1 <= j:
                rroot = (m + 1 + j) // 2
                best = max(best, c_ref(lat, bw, host(m), host(rroot), size / 2) + T(m + 1, j))
            return best

        return T(0, n - 1)

    return max(tree(0), tree(1))


def digits(x, base, width):
    out = []
    for _ in range(width):
        out.append(x % base)
        x //= base
    return out


def undigits(ds, base):
    return sum(d * base**k for k, d in enumerate(ds))


def bcube_ref(lat, bw, p, size, base):
    n = len(p)
    width = round(math.log(n, base)) if n > 1 else 0
    total = 0.0
    for i in range(width):
        worst = 0.0
        for j in range(n):
            dj = digits(j, base, width)
            for k in range(1, base):
                dk = list(dj)
                dk[i] = (dk[i] + k) % base
                peer = undigits(dk, base)
                s = size / base ** (i + 1)
                worst = max(worst, c_ref(lat, bw, p[j], p[peer], s), c_ref(lat, bw, p[peer], p[j], s))
        total += worst
    return total


# ---------------------------------------------------------------------------


def random_instance(rng, n, with_bw, symmetric=True):
    lat = rng.uniform(1, 100, size=(n, n))
    if symmetric:
        lat = (lat + lat.T) / 2
    np.fill_diagonal(lat, 0)
    bw = None
    if with_bw:
        bw = rng.uniform(1, 50, size=(n, n))
        if symmetric:
            bw = (bw + bw.T) / 2
        np.fill_diagonal(bw, np.nan)
    return lat, bw


instances = st.tuples(
    st.integers(min_value=1, max_value=24),  # n
    st.booleans(),  # with bandwidth
    st.integers(min_value=0, max_value=2**31 - 1),  # seed
    st.sampled_from([0, 1000, 4 * 1024**2]),  # size
)


@settings(max_examples=60, deadline=None)
@given(instances, st.booleans())
def test_ring_hd_dbt_match_reference(inst, symmetric):
    n, with_bw, seed, size = inst
    rng = np.random.default_rng(seed)
    lat, bw = random_instance(rng, n, with_bw, symmetric)
    pc = PairCost.from_matrices(lat, bw)
    p = rng.permutation(n)
    bwl = None if bw is None else bw.tolist()
    assert ring_cost(pc, p, size) == pytest.approx(ring_ref(lat.tolist(), bwl, p.tolist(), size))
    assert dbt_cost(pc, p, size) == pytest.approx(dbt_ref(lat.tolist(), bwl, p.tolist(), size))
    assert hd_cost(pc, p, size) == pytest.approx(hd_ref(lat.tolist(), bwl, p.tolist(), size))
    for algo, ref in (("ring", ring_ref), ("hd", hd_ref), ("dbt", dbt_ref)):
        assert CostModel(algo, pc, size)(p) == pytest.approx(ref(lat.tolist(), bwl, p.tolist(), size))


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([(2, 1), (2, 2), (2, 3), (2, 4), (3, 1), (3, 2), (3, 3), (4, 1), (4, 2), (5, 2)]),
    st.booleans(),
    st.integers(min_value=0, max_value=2**31 - 1),
)
def test_bcube_matches_reference(shape, with_bw, seed):
    base, power = shape
    n = base**power
    rng = np.random.default_rng(seed)
    lat, bw = random_instance(rng, n, with_bw, symmetric=False)
    pc = PairCost.from_matrices(lat, bw)
    p = rng.permutation(n)
    size = 1 << 20
    bwl = None if bw is None else bw.tolist()
    expect = bcube_ref(lat.tolist(), bwl, p.tolist(), size, base)
    assert bcube_cost(pc, p, size, base) == pytest.approx(expect)
    assert CostModel("bcube", pc, size, base)(p) == pytest.approx(expect)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=2, max_value=30), st.integers(min_value=0, max_value=2**31 - 1), st.integers(0, 29))
def test_ring_invariant_under_rotation_and_reversal(n, seed, shift):
    rng = np.random.default_rng(seed)
    lat, _ = random_instance(rng, n, False, symmetric=True)
    pc = PairCost.from_matrices(lat)
    p = rng.permutation(n)
    base = ring_cost(pc, p)
    assert ring_cost(pc, np.roll(p, shift % n)) == pytest.approx(base)
    assert ring_cost(pc, p[::-1]) == pytest.approx(base)


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=20), st.integers(min_value=0, max_value=2**31 - 1))
def test_all_models_invariant_under_host_relabelling(n, seed):
    """Permuting hosts in the matrix and in the order together changes nothing."""
    rng = np.random.default_rng(seed)
    lat, bw = random_instance(rng, n, True, symmetric=True)
    p = rng.permutation(n)
    sigma = rng.permutation(n)  # new label of host h is sigma[h]
    inv = np.argsort(sigma)
    lat2 = lat[np.ix_(inv, inv)]
    bw2 = bw[np.ix_(inv, inv)]
    pc, pc2 = PairCost.from_matrices(lat, bw), PairCost.from_matrices(lat2, bw2)
    for algo in ("ring", "hd", "dbt"):
        a = CostModel(algo, pc, 1 << 16)(p)
        b = CostModel(algo, pc2, 1 << 16)(sigma[p])
        assert a == pytest.approx(b)


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=2, max_value=16), st.integers(min_value=0, max_value=2**31 - 1))
def test_models_are_monotone_in_pair_costs(n, seed):
    """Raising any pair's latency never makes a collective cheaper."""
    rng = np.random.default_rng(seed)
    lat, _ = random_instance(rng, n, False)
    p = rng.permutation(n)
    a, b = rng.choice(n, size=2, replace=False)
    lat2 = lat.copy()
    lat2[a, b] += 50
    lat2[b, a] += 50
    for algo in ("ring", "hd", "dbt"):
        before = CostModel(algo, PairCost.from_matrices(lat))(p)
        after = CostModel(algo, PairCost.from_matrices(lat2))(p)
        assert after >= before - 1e-9


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_hd_power_of_two_xor_relabelling(k):
    """Recursive halving pairs ranks j and j^2^i: XOR-shifting all ranks keeps every pair."""
    n = 2**k
    rng = np.random.default_rng(k)
    lat, _ = random_instance(rng, n, False)
    pc = PairCost.from_matrices(lat)
    p = rng.permutation(n)
    x = int(rng.integers(n))
    q = p[np.arange(n) ^ x]
    assert hd_cost(pc, p) == pytest.approx(hd_cost(pc, q))


def test_uniform_matrix_closed_forms():
    n = 16
    lat = np.full((n, n), 10.0)
    np.fill_diagonal(lat, 0)
    pc = PairCost.from_matrices(lat)
    p = np.arange(n)
    assert ring_cost(pc, p) == pytest.approx(n * 10)
    assert hd_cost(pc, p) == pytest.approx(4 * 10)  # log2(16) rounds
    assert bcube_cost(pc, p, base=4) == pytest.approx(2 * 10)  # log4(16) rounds
    # in-order midpoint tree over 16 ranks has depth 4 (root at 7, deepest leaf 15)
    assert dbt_cost(pc, p) == pytest.approx(4 * 10)


def test_hd_non_power_of_two_adds_the_pre_step():
    n = 6  # pof2 = 4, r = 2: pairs (0,1), (2,3) first
    lat = np.full((n, n), 1.0)
    np.fill_diagonal(lat, 0)
    lat[0, 1] = lat[1, 0] = 100.0  # only the pre-step uses 0 -> 1
    pc = PairCost.from_matrices(lat)
    assert hd_cost(pc, np.arange(n)) == pytest.approx(100 + 2 * 1)


def test_bandwidth_term_units():
    lat = np.array([[0, 10.0], [10.0, 0]])
    bw = np.array([[np.nan, 8.0], [8.0, np.nan]])  # 8 Gbit/s = 1 byte/ns
    pc = PairCost.from_matrices(lat, bw)
    # 1 MB at 1 byte/ns = 1e6 ns = 1000 us, plus 10 us latency, two hops in a 2-ring
    assert ring_cost(pc, [0, 1], 10**6) == pytest.approx(2 * 1010)


def test_bcube_rejects_n_not_power_of_base():
    pc = PairCost.from_matrices(np.ones((6, 6)) - np.eye(6))
    with pytest.raises(ValueError, match="power of 4"):
        CostModel("bcube", pc, 0, base=4)
    with pytest.raises(ValueError, match="base must be >= 2"):
        CostModel("bcube", pc, 0, base=1)


def test_model_input_validation():
    with pytest.raises(ValueError, match="unknown algorithm"):
        CostModel("tree", PairCost.from_matrices(np.zeros((2, 2))))
    with pytest.raises(ValueError, match="missing"):
        PairCost.from_matrices(np.array([[0, np.nan], [1, 0]]))
    with pytest.raises(ValueError, match="square"):
        PairCost.from_matrices(np.zeros((2, 3)))
    model = CostModel("ring", PairCost.from_matrices(np.zeros((3, 3))))
    with pytest.raises(ValueError, match="3 entries"):
        model([0, 1])


def test_is_power_of():
    assert [n for n in range(1, 70) if is_power_of(n, 4)] == [1, 4, 16, 64]
    assert not is_power_of(0, 2)


# ---------------------------------------------------------------------------
# edges the reference comparisons above do not reach (found by mutation testing, README "Development")


def _uniform(n, lat=10.0, gbps=8.0):
    latm = np.full((n, n), lat)
    bw = np.full((n, n), gbps)
    np.fill_diagonal(latm, 0)
    np.fill_diagonal(bw, np.nan)
    return PairCost.from_matrices(latm, bw)


def test_is_power_of_large_exact():
    # integer division: a float division loses 3**35 (> 2**53) and says no
    assert is_power_of(3**35, 3)
    assert not is_power_of(3**35 + 3, 3)


def test_ring_hops_batch_and_short_orders():
    rng = np.random.default_rng(0)
    m = rng.uniform(1, 9, (5, 5))
    perms = np.array([rng.permutation(5) for _ in range(3)])
    batch = ring_hops(m, perms)
    assert batch.shape == (3,)
    for i in range(3):
        one = ring_hops(m, perms[i])
        assert type(one) is float
        assert one == pytest.approx(sum(m[perms[i][r], perms[i][r - 1]] for r in range(5)))
        assert batch[i] == pytest.approx(one)
    short = ring_hops(m, [3])
    assert type(short) is float and short == 0.0
    zeros = ring_hops(m, np.zeros((4, 1), dtype=int))
    assert isinstance(zeros, np.ndarray) and zeros.shape == (4,) and not zeros.any()


def test_default_size_is_zero_bytes_and_default_base_two():
    """Without ``size`` every model prices latency only, even when bandwidths are known."""
    pc = _uniform(8)
    p = np.arange(8)
    assert ring_cost(pc, p) == pytest.approx(80.0)
    assert hd_cost(pc, p) == pytest.approx(30.0)
    assert bcube_cost(pc, p) == pytest.approx(30.0)  # base 2: three rounds
    assert dbt_cost(pc, p) == pytest.approx(dbt_cost(pc, p, 0.0))
    assert dbt_cost(pc, p) == pytest.approx(30.0)  # in-order tree over 8 ranks: depth 3
    assert CostModel("ring", pc)(p) == pytest.approx(80.0)
    assert CostModel("bcube", pc).base == 2
    assert CostModel("bcube", pc, base=8).base == 8


def test_rd_is_hd_pairs_with_the_full_vector():
    n = 8
    pc = _uniform(n)  # 8 Gbit/s: 1 us per 1000 bytes
    p = np.arange(n)
    s = 8000.0
    assert [(a.tolist(), b.tolist()) for a, b, _ in rd_rounds(n)] == \
        [(a.tolist(), b.tolist()) for a, b, _ in hd_rounds(n)]
    assert [f for _, _, f in rd_rounds(n)] == [1.0, 1.0, 1.0]
    assert CostModel("rd", pc, s)(p) == pytest.approx(3 * (10 + 8))
    assert CostModel("hd", pc, s)(p) == pytest.approx(3 * 10 + 4 + 2 + 1)


@pytest.mark.parametrize("n", [2, 5, 6, 8, 13])
def test_hd_rounds_pair_every_survivor_once(n):
    rounds = hd_rounds(n)
    pof2 = 1 << (n.bit_length() - 1)
    for a, b, _ in rounds[1 if n != pof2 else 0:]:
        assert len(a) == pof2 // 2
        assert sorted(a.tolist() + b.tolist()) == sorted(set(a.tolist() + b.tolist()))


@pytest.mark.parametrize("n, base", [(4, 2), (9, 3), (16, 4)])
def test_bcube_rounds_have_no_self_pairs(n, base):
    rounds = bcube_rounds(n, base)
    assert len(rounds) == round(math.log(n, base))
    for a, b, _ in rounds:
        assert len(a) == n * (base - 1)
        assert not np.any(a == b)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 16, 21])
def test_dbt_levels_are_the_tree_by_depth(n):
    levels = dbt_levels(n)
    edges = [(int(x), int(y)) for par, ch in levels for x, y in zip(par, ch)]
    children = [y for _, y in edges]
    assert len(edges) == n - 1 and sorted(children) == sorted(set(children))
    assert dbt_root(n) not in children and all(0 <= x < n for e in edges for x in e)
    # one level per depth, deepest first: the in-order midpoint tree has height ceil(log2(n+1)) - 1
    assert len(levels) == max(0, math.ceil(math.log2(n + 1)) - 1)
    depth = {dbt_root(n): 0}
    for par, ch in reversed(levels):
        for x, y in zip(par.tolist(), ch.tolist()):
            depth[y] = depth[x] + 1
    for k, (_, ch) in enumerate(levels):
        assert {depth[y] for y in ch.tolist()} == {len(levels) - k}


def test_dbt_two_ranks_cost_one_hop():
    lat = np.array([[0, 7.0], [5.0, 0]])
    pc = PairCost.from_matrices(lat)
    assert dbt_cost(pc, [0, 1]) == pytest.approx(7.0)
    assert CostModel("dbt", pc)([0, 1]) == pytest.approx(7.0)
    assert dbt_cost(pc, [0]) == 0.0


def test_cost_model_accepts_integer_valued_arrays():
    pc = _uniform(4)
    m = CostModel("ring", pc, 100)
    assert m(np.array([0.0, 2.0, 1.0, 3.0])) == pytest.approx(m([0, 2, 1, 3]))


def test_check_algorithm():
    for algo in ("ring", "hd", "rd", "dbt"):
        check_algorithm(algo, 6)
    check_algorithm("bcube", 8)
    check_algorithm("bcube", 9, base=3)
    with pytest.raises(ValueError, match=r"^unknown algorithm 'tree' \(choose from ring, hd, rd, dbt, bcube\)$"):
        check_algorithm("tree", 4)
    with pytest.raises(ValueError, match="needs N to be a power of 2, but N = 6"):
        check_algorithm("bcube", 6)
    with pytest.raises(ValueError, match="power of 3"):
        check_algorithm("bcube", 8, base=3)


def test_cost_model_messages():
    pc = _uniform(2)
    with pytest.raises(ValueError, match=r"^unknown algorithm 'x' \(choose from ring, hd, rd, dbt, bcube\)$"):
        CostModel("x", pc)
    with pytest.raises(ValueError, match=r"^size must be >= 0 bytes, got -1$"):
        CostModel("ring", pc, -1)


def test_pair_cost_from_matrices_types_and_diagonal():
    pc = PairCost.from_matrices([[5, 1], [2, 5]], [[0, 8], [4, 0]])  # integers, a non-zero diagonal
    assert pc.latency.dtype == float and pc.inv_bw.dtype == float
    assert pc.latency.tolist() == [[0.0, 1.0], [2.0, 0.0]]
    assert pc.inv_bw[0, 1] == pytest.approx(1e-3) and pc.inv_bw[1, 0] == pytest.approx(2e-3)
    assert pc.inv_bw[0, 0] == 0.0
    assert PairCost.from_matrices([[0, 1], [1, 0]], [[0, 0.5], [0.5, 0]]).inv_bw[0, 1] == pytest.approx(0.016)


@pytest.mark.parametrize("bw", [[[0, np.nan], [1, 0]], [[0, 0.0], [1, 0]], [[0, -1.0], [1, 0]], [[0, np.inf], [1, 0]]])
def test_pair_cost_rejects_bad_bandwidth(bw):
    with pytest.raises(ValueError, match=r"^bandwidth matrix must be positive and complete off the diagonal$"):
        PairCost.from_matrices([[0, 1], [1, 0]], bw)


def test_pair_cost_messages():
    with pytest.raises(ValueError, match=r"^bandwidth and latency matrices differ in shape$"):
        PairCost.from_matrices([[0, 1], [1, 0]], [[1.0]])
    with pytest.raises(ValueError, match=r"^latency matrix has missing or non-finite pairs; fill them before costing$"):
        PairCost.from_matrices([[0, np.inf], [1, 0]])


def test_pair_cost_reads_json_matrices():
    """Matrices as JSON gives them: ``null`` (None) on the diagonal."""
    pc = PairCost.from_matrices([[None, 2], [3, None]], [[None, 8], [8, None]])
    assert pc.latency.tolist() == [[0.0, 2.0], [3.0, 0.0]]
    assert pc.inv_bw.tolist() == [[0.0, 1e-3], [1e-3, 0.0]]


@pytest.mark.parametrize("algo, n", [("ring", 6), ("hd", 6), ("rd", 5), ("bcube", 8), ("dbt", 7), ("dbt", 1), ("hd", 1)])
def test_batch_equals_one_by_one(algo, n):
    rng = np.random.default_rng(n)
    lat, bw = random_instance(rng, n, True, symmetric=False)
    model = CostModel(algo, PairCost.from_matrices(lat, bw), 1 << 16)
    perms = np.array([rng.permutation(n) for _ in range(5)])
    out = model.batch(perms)
    assert out.shape == (5,)
    np.testing.assert_allclose(out, [model(p) for p in perms])
    with pytest.raises(ValueError, match=rf"^orders must be an \(M, {n}\) array, got shape \({n},\)$"):
        model.batch(perms[0])


def test_dbt_batch_uses_each_orders_own_mirror():
    rng = np.random.default_rng(11)
    lat, bw = random_instance(rng, 7, True, symmetric=False)
    model = CostModel("dbt", PairCost.from_matrices(lat, bw), 1 << 16)
    perms = np.array([rng.permutation(7) for _ in range(60)])
    np.testing.assert_allclose(model.batch(perms), [model(p) for p in perms])
    np.testing.assert_allclose(model.batch(perms.astype(float)), model.batch(perms))


def test_single_orders_cost_python_floats_and_models_keep_their_inputs():
    rng = np.random.default_rng(12)
    lat, bw = random_instance(rng, 8, True)
    pc = PairCost.from_matrices(lat, bw)
    p = rng.permutation(8)
    for value in (dbt_cost(pc, p, 100), hd_cost(pc, p, 100), bcube_cost(pc, p, 100), ring_cost(pc, p, 100)):
        assert type(value) is float
    for algo in ("ring", "hd", "rd", "dbt", "bcube"):
        model = CostModel(algo, pc, 100)
        assert type(model(p)) is float
        assert (model.algo, model.pc, model.size, model.n) == (algo, pc, 100.0, 8)


def test_an_order_that_lists_a_host_twice_is_refused_not_priced():
    """CostModel('ring', pc, 0)([0, 0, 0]) returned 0.0 (every hop a host to itself), and negative
    latencies priced -21 (outside-in check of the library)."""
    from plink.solvers.contention import Network, SharedCostModel
    from plink.solvers.costmodels import check_orders

    a = np.array([[0, 5, 9], [5, 0, 7], [9, 7, 0.0]])
    pc = PairCost.from_matrices(a)
    for algo in ("ring", "dbt", "hd"):
        model = CostModel(algo, pc, 1e6)
        for bad in ([0, 0, 0], [0, 1, 1], [0, 1, 3], [0, -1, 2], [0.5, 1, 2]):
            with pytest.raises(ValueError, match="an order"):
                model(bad)
        with pytest.raises(ValueError, match=r"an order must name every host once \(order 1\)"):
            model.batch([[0, 1, 2], [2, 2, 1]])
        assert model([2.0, 0.0, 1.0]) == model([2, 0, 1])  # (whole floats are indices)
    shared = SharedCostModel("ring", Network(a * 1e-6, np.ones(3) * 1e8, np.ones(3) * 1e8, np.zeros(3, int),
                                             np.ones(1) * 1e8, np.ones(1) * 1e8), 1e6)
    with pytest.raises(ValueError, match="every host once"):
        shared([1, 1, 0])
    assert check_orders([1, 0, 2], 3).dtype == np.int64
    with pytest.raises(ValueError, match="negative values"):
        PairCost.from_matrices(-a)
    with pytest.raises(ValueError, match="real numbers"):
        PairCost.from_matrices(a + 1j)
    with pytest.raises(ValueError, match="must be numbers"):
        PairCost.from_matrices(a, [["x"] * 3] * 3)
    with pytest.raises(ValueError, match="from_matrices"):
        PairCost(a, None)
