"""The shared-link cost models against a slow step-by-step reference simulator."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plink.solvers.contention import (
    Network,
    SharedCostModel,
    conservative_uplinks,
    shared_lower_bound,
)

# ---------------------------------------------------------------------------
# reference: each algorithm written out as the library code runs it, one
# message at a time, then every step priced with plain loops over dicts


def ref_ring(n, S):
    steps = []
    for _ in range(2 * (n - 1)):
        steps.append(([(r, (r + 1) % n, S / n) for r in range(n)], True))
    return steps


def _virtual(n):
    pof2 = 1
    while pof2 * 2 <= n:
        pof2 *= 2
    return pof2, n - pof2


def ref_rabenseifner(n, S):
    """ompi_coll_base_allreduce_intra_redscat_allgather, message by message."""
    pof2, rem = _virtual(n)
    steps = []
    if rem:
        steps.append(([m for i in range(rem) for m in ((2 * i, 2 * i + 1, S / 2), (2 * i + 1, 2 * i, S / 2))], True))
        steps.append(([(2 * i + 1, 2 * i, S / 2) for i in range(rem)], True))

    def real(v):
        return v * 2 if v < rem else v + rem

    window = S
    for mask in [1 << k for k in range(pof2.bit_length() - 1)]:
        window /= 2
        steps.append(([(real(v), real(v ^ mask), window) for v in range(pof2)], True))
    for mask in reversed([1 << k for k in range(pof2.bit_length() - 1)]):
        steps.append(([(real(v), real(v ^ mask), S / (2 * mask)) for v in range(pof2)], True))
    if rem:
        steps.append(([(2 * i, 2 * i + 1, S) for i in range(rem)], True))
    return steps


def ref_rd(n, S):
    """ompi_coll_base_allreduce_intra_recursivedoubling."""
    pof2, rem = _virtual(n)
    steps = []
    if rem:
        steps.append(([(2 * i, 2 * i + 1, S) for i in range(rem)], True))

    def real(v):
        return v * 2 + 1 if v < rem else v + rem

    mask = 1
    while mask < pof2:
        steps.append(([(real(v), real(v ^ mask), S) for v in range(pof2)], True))
        mask <<= 1
    if rem:
        steps.append(([(2 * i + 1, 2 * i, S) for i in range(rem)], True))
    return steps


def _tree(i, j, depth, parent, edges):
    if i > j:
        return
    m = (i + j) // 2
    if parent is not None:
        edges.append((parent, m, depth))
    _tree(i, m - 1, depth + 1, m, edges)
    _tree(m + 1, j, depth + 1, m, edges)


def ref_dbt(n, S):
    """Two trees side by side (a flow's 4th field: which tree's clock it moves), each a reduce
    from the deepest level up, then a broadcast down; then every edge's S/2 each way at once."""
    edges = []
    _tree(0, n - 1, 0, None, edges)
    both = [(p, c, d, 0) for p, c, d in edges] + [((p - 1) % n, (c - 1) % n, d, 1) for p, c, d in edges]
    depths = sorted({d for _, _, d, _ in both})
    steps = [([(c, p, 0.0, t) for p, c, dd, t in both if dd == d], True) for d in reversed(depths)]
    steps += [([(p, c, 0.0, t) for p, c, dd, t in both if dd == d], True) for d in depths]
    steps.append(([(c, p, S / 2) for p, c, _, _ in both] + [(p, c, S / 2) for p, c, _, _ in both], False))
    return steps


def ref_bcube(n, S, B):
    x = round(np.log(n) / np.log(B))
    steps = []
    for i in list(range(x)) + list(reversed(range(x))):
        flows = []
        for j in range(n):
            digits = [(j // B**t) % B for t in range(x)]
            for k in range(1, B):
                d = list(digits)
                d[i] = (d[i] + k) % B
                flows.append((j, sum(v * B**t for t, v in enumerate(d)), S / B ** (i + 1)))
        steps.append((flows, True))
    return steps


def ref_price(steps, perm, lat, nic_s, nic_r, groups, up, down, outer=(), path=None, clocked=False):
    """Bandwidth: per step, the busiest link, summed; with ``clocked`` (rd, hd, BCube, bintree), on
    per-rank clocks instead: a flow starts when both its ranks' clocks have reached it, takes the
    time of the busiest link it crosses in its step, and moves both clocks on to its end; the last
    clock.  Latency: every rank keeps a clock (a tree of dbt's two keeps its own); a message
    a -> b sent at a's clock arrives latency[a, b] later and moves b's clock on to it if later;
    the last clock.  The two terms add."""
    levels = [(groups, up, down), *outer]
    total = 0.0
    clock = {}
    bw_clock = {}
    for flows, pays_latency in steps:
        load = {}
        if pays_latency:
            new = dict(clock)
            for a, b, _, *tree in flows:
                key_a, key_b = (tuple(tree), a), (tuple(tree), b)
                new[key_b] = max(new.get(key_b, 0.0), clock.get(key_a, 0.0) + lat[perm[a]][perm[b]])
            clock = new
        crossed = []  # the links of each flow
        for a, b, nbytes, *_ in flows:
            ha, hb = perm[a], perm[b]
            links = [("s", 0, ha), ("r", 0, hb)]
            for lv, (lab, _, _) in enumerate(levels):
                if lab[ha] != lab[hb]:
                    links += [("u", lv, lab[ha]), ("d", lv, lab[hb])]
            for link in links:
                load[link] = load.get(link, 0.0) + nbytes
            crossed.append(links)
        cap = {"s": [nic_s], "r": [nic_r], "u": [lv[1] for lv in levels], "d": [lv[2] for lv in levels]}
        if clocked:
            if not any(nbytes for _, _, nbytes, *_ in flows):
                continue
            new = dict(bw_clock)
            for (a, b, nbytes, *_), links in zip(flows, crossed):
                ha, hb = perm[a], perm[b]
                took = max(load[k, lv, i] / cap[k][lv][i] for k, lv, i in links)
                if path is not None and ha != hb:
                    took = max(took, nbytes / path[ha][hb])
                end = max(bw_clock.get(a, 0.0), bw_clock.get(b, 0.0)) + took
                new[a], new[b] = max(new.get(a, 0.0), end), max(new.get(b, 0.0), end)
            bw_clock = new
            continue
        times = [v / cap[k][lv][i] for (k, lv, i), v in load.items()]
        if path is not None:  # a flow alone on its path
            times += [nbytes / path[perm[a]][perm[b]] for a, b, nbytes, *_ in flows if perm[a] != perm[b]]
        total += max(times, default=0.0)
    return total + max(bw_clock.values(), default=0.0) + max(clock.values(), default=0.0)


CLOCKED = ("hd", "rd", "bcube", "bintree")  #: the algorithms whose bandwidth term runs on per-rank clocks


def ref_bintree(n, S):
    """Open MPI's fanout-2 tree as its source comment draws it: 0 -> 1, 2; 1 -> 3, 5; 2 -> 4, 6; ..."""
    parent = {}
    level_start, width = 0, 1
    while level_start < n:
        nxt = level_start + width
        for i in range(width):
            for c in (nxt + i, nxt + i + width):
                if level_start + i < n and c < n:
                    parent[c] = level_start + i
        level_start, width = nxt, width * 2

    def depth(r):
        return 0 if r == 0 else 1 + depth(parent[r])

    def height(r):
        return max((1 + height(c) for c, p in parent.items() if p == r), default=0)

    depths = sorted({depth(c) for c in parent})
    steps = [([(c, p, 0.0) for c, p in parent.items() if depth(c) == d], True) for d in reversed(depths)]  # reduce
    steps += [([(p, c, 0.0) for c, p in parent.items() if depth(c) == d], True) for d in depths]  # broadcast
    # whole messages, store-and-forward: the reduce leaves first (a rank sends when its subtree is done),
    # then the broadcast depth by depth
    heights = sorted({height(c) for c in parent})
    steps += [([(c, p, S) for c, p in parent.items() if height(c) == h], False) for h in heights]
    steps += [([(p, c, S) for c, p in parent.items() if depth(c) == d], False) for d in depths]
    return steps


def ref_steps(algo, n, S, B=2):
    return {"bintree": lambda: ref_bintree(n, S), "ring": lambda: ref_ring(n, S), "hd": lambda: ref_rabenseifner(n, S), "rd": lambda: ref_rd(n, S),
            "dbt": lambda: ref_dbt(n, S), "bcube": lambda: ref_bcube(n, S, B)}[algo]()


def random_net(rng, n, k, outer=False, path=False):
    g = np.sort(rng.integers(0, k, size=n))
    _, g = np.unique(g, return_inverse=True)
    lat = rng.uniform(1e-6, 1e-3, size=(n, n))
    np.fill_diagonal(lat, 0)
    k = g.max() + 1
    levels = ()
    if outer:  # a row level: pairs of groups
        row = g // 2
        r = row.max() + 1
        levels = ((row, rng.uniform(5e7, 1e9, r), rng.uniform(5e7, 1e9, r)),)
    pair = rng.uniform(2e7, 1e9, size=(n, n)) if path else None
    return Network(lat, rng.uniform(1e8, 1e9, n), rng.uniform(1e8, 1e9, n), g,
                   rng.uniform(5e7, 1e9, k), rng.uniform(5e7, 1e9, k), outer=levels, path=pair)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 13), k=st.integers(1, 4), seed=st.integers(0, 10**6),
       algo=st.sampled_from(["ring", "hd", "rd", "dbt", "bintree"]), size=st.sampled_from([0.0, 1e3, 16 * 2**20]),
       outer=st.booleans(), path=st.booleans())
def test_models_match_reference(n, k, seed, algo, size, outer, path):
    rng = np.random.default_rng(seed)
    net = random_net(rng, n, k, outer, path)
    m = SharedCostModel(algo, net, size)
    for _ in range(3):
        p = rng.permutation(n)
        want = ref_price(ref_steps(algo, n, size), p, net.latency, net.nic_send, net.nic_recv, net.groups,
                         net.up, net.down, net.outer, net.path, clocked=algo in CLOCKED) if n > 1 else 0.0
        assert m(p) == pytest.approx(want, rel=1e-9, abs=1e-15)
        assert m.batch(p[None, :])[0] == pytest.approx(want, rel=1e-9, abs=1e-15)


@settings(max_examples=20, deadline=None)
@given(nb=st.sampled_from([(4, 2), (8, 2), (9, 3), (16, 4), (16, 2), (27, 3)]), k=st.integers(1, 3),
       seed=st.integers(0, 10**6))
def test_bcube_matches_reference(nb, k, seed):
    n, b = nb
    rng = np.random.default_rng(seed)
    net = random_net(rng, n, k)
    m = SharedCostModel("bcube", net, 1e6, base=b)
    p = rng.permutation(n)
    want = ref_price(ref_bcube(n, 1e6, b), p, net.latency, net.nic_send, net.nic_recv, net.groups, net.up, net.down,
                     clocked=True)
    assert m(p) == pytest.approx(want, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 13), k=st.integers(1, 4), seed=st.integers(0, 10**6),
       algo=st.sampled_from(["ring", "hd", "rd", "dbt", "bintree"]), outer=st.booleans())
def test_uplink_bytes_against_the_reference_steps(n, k, seed, algo, outer):
    """Bytes over group uplinks: every flow of the reference steps that joins two groups, once per level
    whose labels differ (the bytes-less latency steps of the reference carry none)."""
    rng = np.random.default_rng(seed)
    net = random_net(rng, n, k, outer)
    m = SharedCostModel(algo, net, 2**20)
    perms = np.array([rng.permutation(n) for _ in range(3)])
    want = [sum(b * sum(lab[p[a]] != lab[p[c]] for lab, _, _ in net.levels())
                for flows, _ in ref_steps(algo, n, 2**20) for a, c, b, *_ in flows) if n > 1 else 0.0 for p in perms]
    assert m.uplink_bytes(perms) == pytest.approx(want, rel=1e-12, abs=1e-9)
    assert m.uplink_bytes(perms[0]) == pytest.approx(want[0], rel=1e-12, abs=1e-9)
    assert m.has_uplinks() == (len(np.unique(net.groups)) > 1 or any(len(np.unique(lab)) > 1 for lab, _, _ in net.outer))


def test_uplink_bytes_of_a_ring_over_two_racks():
    """4 hosts in 2 racks, ring of S: each of its 6 steps moves S/4 per flow; contiguous, 2 flows of
    every step cross (3 S in all), interleaved all 4 (6 S)."""
    net = _testbed(2, 2)
    m = SharedCostModel("ring", net, 4e6)
    assert m.uplink_bytes(np.array([0, 1, 2, 3])) == pytest.approx(3 * 4e6)
    assert m.uplink_bytes(np.array([0, 2, 1, 3])) == pytest.approx(6 * 4e6)


def _testbed(racks=4, per=4, rate=400e6 / 8):
    n = racks * per
    g = np.repeat(np.arange(racks), per)
    lat = np.where(g[:, None] == g[None, :], 2.5e-6, 7e-6)
    np.fill_diagonal(lat, 0)
    return Network(lat, np.full(n, rate), np.full(n, rate), g, np.full(racks, rate), np.full(racks, rate))


@pytest.mark.parametrize("racks,per", [(2, 4), (4, 4), (3, 5)])
def test_ring_uplink_flows_known_cases(racks, per):
    net = _testbed(racks, per)
    m = SharedCostModel("ring", net, 16 * 2**20)
    contiguous = np.arange(racks * per)
    interleaved = np.arange(racks * per).reshape(racks, per).T.ravel()
    assert m.max_uplink_flows(contiguous) == 1
    assert m.max_uplink_flows(interleaved) == per  # every hop leaves its rack: H flows per uplink
    # time ~ one flow's time x flows on the busiest uplink (the testbed note's measured rule)
    ratio = m(interleaved) / m(contiguous)
    assert ratio == pytest.approx(per, rel=0.02)


def test_testbed_table_in_seconds():
    """/work/shared/notes/testbed.md: 16 MB ring, 400 Mbit/s, rack-contiguous 0.62 / 0.67 s, interleaved 2.46 / 2.64 s."""
    S = 16 * 2**20
    for racks, contiguous_s, interleaved_s in ((2, 0.62, 2.46), (4, 0.67, 2.64)):
        net = _testbed(racks, 4)
        m = SharedCostModel("ring", net, S)
        n = racks * 4
        assert m(np.arange(n)) == pytest.approx(contiguous_s, rel=0.1)
        assert m(np.arange(n).reshape(racks, 4).T.ravel()) == pytest.approx(interleaved_s, rel=0.1)


def test_bintree_shape_of_open_mpi():
    from plink.solvers.contention import bintree_edges

    assert sorted((p, c) for p, c, _ in bintree_edges(7)) == [(0, 1), (0, 2), (1, 3), (1, 5), (2, 4), (2, 6)]


def test_conservative_uplinks_are_one_nic():
    nic = np.array([1.0, 2.0, 3.0, 10.0, 10.0])
    assert conservative_uplinks(nic, np.array([0, 0, 0, 1, 1])).tolist() == [2.0, 10.0]


@pytest.mark.parametrize("algo,n,base", [("ring", 2, 2), ("ring", 3, 2), ("ring", 6, 2), ("ring", 7, 2),
                                         ("hd", 3, 2), ("hd", 5, 2), ("hd", 6, 2), ("hd", 8, 2), ("rd", 3, 2),
                                         ("rd", 5, 2), ("rd", 7, 2), ("dbt", 5, 2), ("dbt", 6, 2), ("dbt", 7, 2),
                                         ("bcube", 8, 2), ("bcube", 3, 3), ("bintree", 5, 2), ("bintree", 7, 2)])
def test_lower_bound_never_above_exhaustive_optimum(algo, n, base):
    """Every order priced: the bound is below the optimum, and the exhaustive search with its
    symmetry breaking (host 0 at rank 0 where the algorithm allows it) finds that optimum."""
    from plink.solvers.groupsearch import exhaustive_shared

    rng = np.random.default_rng(n)
    for size, path in ((0.0, False), (4e6, False), (4e6, True)):
        net = random_net(rng, n, 3, path=path)
        m = SharedCostModel(algo, net, size, base=base)
        perms = np.array(list(itertools.permutations(range(n))))
        best = m.batch(perms).min()
        lb = shared_lower_bound(m)
        assert 0 < lb <= best * (1 + 1e-12)
        assert exhaustive_shared(m)[1] == pytest.approx(best, rel=1e-12)


def test_bad_network_inputs():
    with pytest.raises(ValueError, match="complete"):
        Network(np.full((2, 2), np.nan), np.ones(2), np.ones(2), np.zeros(2, int), np.ones(1), np.ones(1))
    with pytest.raises(ValueError, match="up"):
        Network(np.zeros((2, 2)), np.ones(2), np.ones(2), np.array([0, 1]), np.ones(1), np.ones(2))
    with pytest.raises(ValueError, match="path capacities"):
        Network(np.zeros((2, 2)), np.ones(2), np.ones(2), np.zeros(2, int), np.ones(1), np.ones(1),
                path=np.full((2, 2), np.nan))
    with pytest.raises(ValueError, match="power of 3"):
        SharedCostModel("bcube", _testbed(2, 4), 1.0, base=3)


# ---------------------------------------------------------------------------
# step structures and the lower bound, by hand


def test_identical_steps_merge_and_empty_steps_go():
    from plink.solvers.contention import _merge, _step

    empty = _step([], [], 1.0)
    a = _step([0, 1], [1, 0], 5.0)
    b = _step([0, 1], [1, 0], 5.0, repeat=2)
    other = _step([0, 1], [1, 0], 5.0, latency=False)
    out = _merge([empty, a, other, b])
    assert len(out) == 2
    m = out[0]
    assert (m.src.tolist(), m.dst.tolist(), m.nbytes.tolist(), m.repeat, m.latency) == ([0, 1], [1, 0], [5.0, 5.0], 3, True)
    assert out[1] is other
    # steps built from other int and float types are the same steps
    same = _merge([_step(np.array([0, 1], dtype=np.int32), np.array([1, 0], dtype=np.int32), 5),
                   _step([0, 1], [1, 0], 5.0)])
    assert len(same) == 1 and same[0].repeat == 2
    assert (same[0].src.dtype, same[0].dst.dtype, same[0].nbytes.dtype) == (np.int64, np.int64, float)


@pytest.mark.parametrize("algo", ["ring", "hd", "rd", "bcube", "bintree", "dbt"])
def test_two_ranks_move_the_buffer_each_way(algo):
    from plink.solvers.contention import schedule

    steps = schedule(algo, 2, 8.0)
    sent = [sum(s.repeat * s.nbytes[s.src == r].sum() for s in steps) for r in (0, 1)]
    # reduce + broadcast over one link: every algorithm moves the whole buffer, once each way
    # (the double binary tree sends half of it over each of its two trees)
    assert sum(sent) == 16.0 and sent[0] > 0 and sent[1] > 0


def test_recursive_doubling_pre_and_post_steps():
    from plink.solvers.contention import rd_steps

    steps = rd_steps(7, 8.0)  # 4 survivors, 3 extra ranks: 0 -> 1, 2 -> 3, 4 -> 5 first, then back
    pre = [s for s in steps if s.src.tolist() == [0, 2, 4]]
    post = [s for s in steps if s.src.tolist() == [1, 3, 5]]
    assert len(pre) == 1 and pre[0].dst.tolist() == [1, 3, 5]
    assert len(post) == 1 and post[0].dst.tolist() == [0, 2, 4]
    # the survivors 1, 3, 5 play virtual ranks 0-2 and rank 6 plays 3: exchanges 1<->3, 5<->6, then 1<->5, 3<->6
    swaps = sorted(sorted(zip(s.src.tolist(), s.dst.tolist())) for s in steps if len(s.src) == 4)
    assert swaps == [[(1, 3), (3, 1), (5, 6), (6, 5)], [(1, 5), (3, 6), (5, 1), (6, 3)]]


def test_rabenseifner_fold_and_volumes():
    from plink.solvers.contention import hd_steps

    steps = hd_steps(7, 8.0)  # the even ranks 0, 2, 4 survive with 6: halves to the nearest partner first
    flows = sorted((sorted(zip(s.src.tolist(), s.dst.tolist())), s.nbytes[0], s.repeat) for s in steps)
    assert flows == [
        ([(0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4)], 4.0, 1),  # the pairs swap halves
        ([(0, 1), (2, 3), (4, 5)], 8.0, 1),  # post: the survivor sends the result back
        ([(0, 2), (2, 0), (4, 6), (6, 4)], 4.0, 2),  # mask 1: S/2 each way, reduce-scatter and all-gather
        ([(0, 4), (2, 6), (4, 0), (6, 2)], 2.0, 2),  # mask 2: S/4
        ([(1, 0), (3, 2), (5, 4)], 4.0, 1),  # the odd rank hands its reduced half to the even one
    ]


def test_bintree_edges_as_documented():
    from plink.solvers.contention import bcube_steps, bintree_edges

    assert bintree_edges(7) == [(0, 1, 1), (0, 2, 1), (1, 3, 2), (1, 5, 2), (2, 4, 2), (2, 6, 2)]
    assert len(bcube_steps(8, 8.0)) == len(bcube_steps(8, 8.0, base=2)) == 3  # base 2 by default


def test_model_rejects_a_wrong_length_order():
    m = SharedCostModel("ring", _uniform_net(3), 8.0)
    with pytest.raises(ValueError) as e:
        m([0, 1])
    assert str(e.value) == "permutation must have 3 entries, got (2,)"


def _uniform_net(n, groups=None, lat=1e-4, nic=1e9, up=None, down=None):
    g = np.zeros(n, dtype=int) if groups is None else np.asarray(groups)
    k = int(g.max()) + 1
    latency = np.full((n, n), lat)
    return Network(latency, np.full(n, nic), np.full(n, nic), g,
                   np.full(k, nic) if up is None else up, np.full(k, nic) if down is None else down)


@pytest.mark.parametrize("algo, n", [("ring", 5), ("hd", 6), ("rd", 6), ("dbt", 5), ("bcube", 4), ("bintree", 7)])
def test_lower_bound_is_tight_on_a_uniform_single_group(algo, n):
    # equal latencies and NICs, no uplink crossed: every order costs the same, and the bound is that cost
    m = SharedCostModel(algo, _uniform_net(n), 1e6)
    assert shared_lower_bound(m) == pytest.approx(m(np.arange(n)), rel=1e-12)
    assert m.max_uplink_flows(np.arange(n)) == 0


def test_lower_bound_of_a_ring_by_hand():
    from plink.solvers.contention import shared_lower_bound

    # one-way latencies: out of host 0 1 ms at best, out of 1 1 ms, out of 2 3 ms: every ring sends
    # once out of each host, so its edges sum to 5 ms or more, and its longest window of 2(N-1) = 4
    # consecutive edges is at least their mean, 4/3 x that (the optimum here: 12 ms)
    lat = np.array([[0, 1, 4], [1, 0, 2], [5, 3, 0]]) * 1e-3
    lat_lb = 4 / 3 * 5e-3
    S = 3e6
    nic = np.array([1e9, 2e9, 4e9])
    for up, down, link in (([1e8, 1e9], [1e9, 1e9], 1e8), ([1e9, 1e9], [1e9, 5e7], 5e7),
                           ([1e12, 1e12], [1e12, 1e12], None)):
        net = Network(lat, nic, nic, np.array([0, 0, 1]), np.array(up), np.array(down))
        m = SharedCostModel("ring", net, S)
        per_flow = S / 3
        bw = per_flow / nic.max() if link is None else per_flow / link  # NIC term, or the slowest uplink
        assert shared_lower_bound(m) == pytest.approx(lat_lb + 4 * bw)
    one = Network(lat, nic, nic, np.array([0, 0, 0]), np.array([1e6]), np.array([1e6]))
    assert shared_lower_bound(SharedCostModel("ring", one, S)) == pytest.approx(lat_lb + 4 * S / 3 / 4e9)
    for send, recv in ((1e9, 4e9), (4e9, 1e9)):  # the slower side of the NICs bounds the step
        nics = Network(lat, np.full(3, send), np.full(3, recv), np.array([0, 0, 0]), [1e12], [1e12])
        assert shared_lower_bound(SharedCostModel("ring", nics, S)) == pytest.approx(lat_lb + 4 * S / 3 / 1e9)
    tiny = Network(np.zeros((1, 1)), [1e9], [1e9], np.array([0]), [1e9], [1e9])
    assert shared_lower_bound(SharedCostModel("ring", tiny, S)) == 0.0
    pair = _uniform_net(2, lat=1e-3)
    assert shared_lower_bound(SharedCostModel("ring", pair, S)) == pytest.approx(2 * (1e-3 + S / 2 / 1e9))


def test_conservative_uplinks_of_no_hosts():
    assert conservative_uplinks(np.array([]), np.array([], dtype=int)).tolist() == []


# ---------------------------------------------------------------------------
# the network's checks, exactly as a user reads them, and what it stores


def _net(lat=None, nic_send=None, nic_recv=None, groups=None, up=None, down=None, outer=()):
    lat = np.full((3, 3), 1e-4) if lat is None else lat
    return Network(lat, np.full(3, 1e9) if nic_send is None else nic_send,
                   np.full(3, 1e9) if nic_recv is None else nic_recv,
                   np.array([0, 0, 1]) if groups is None else groups,
                   np.full(2, 5e8) if up is None else up, np.full(2, 5e8) if down is None else down, outer=outer)


def _message(**kw):
    with pytest.raises(ValueError) as e:
        _net(**kw)
    return str(e.value)


def test_network_refuses_each_bad_input_with_its_message():
    assert _message(lat=np.zeros((2, 3))) == "latency matrix must be square, got shape (2, 3)"
    assert _message(lat=np.zeros(3)) == "latency matrix must be square, got shape (3,)"
    assert _message(lat=np.zeros((3, 3, 1))) == "latency matrix must be square, got shape (3, 3, 1)"
    complete = "latency matrix must be complete, finite and >= 0 off the diagonal; fill missing pairs first"
    for bad in (np.nan, np.inf, -1e-9):
        lat = np.full((3, 3), 1e-4)
        lat[2, 0] = bad
        assert _message(lat=lat) == complete
    groups = "groups must be 3 non-negative integers"
    assert _message(groups=np.array([0, 1])) == groups
    assert _message(groups=np.array([0, -1, 1])) == groups
    assert _message(groups=np.array([0.0, 0.0, 1.0])) == groups
    assert _message(groups=np.array([[0, 0, 1]])) == groups
    for name, size in (("nic_send", 3), ("nic_recv", 3), ("up", 2), ("down", 2)):
        assert _message(**{name: np.ones(size + 1)}) == f"{name} must have {size} entries, got shape ({size + 1},)"
        for bad in (0.0, -1.0, np.nan):
            a = np.ones(size)
            a[-1] = bad
            assert _message(**{name: a}) == f"{name} capacities must be > 0 bytes/s"
    level = "every outer level needs n labels 0..k-1 and k up and k down capacities"
    ok = (np.array([0, 1, 1]), np.ones(2), np.ones(2))
    assert _message(outer=((np.array([0, 1]), np.ones(2), np.ones(2)),)) == level
    assert _message(outer=((np.array([0, -1, 1]), np.ones(2), np.ones(2)),)) == level
    assert _message(outer=((ok[0], np.ones(3), ok[2]),)) == level
    assert _message(outer=((ok[0], ok[1], np.ones(1)),)) == level
    for up, down in ((np.array([1.0, 0.0]), ok[2]), (ok[1], np.array([-1.0, 1.0])), (ok[1], np.array([1.0, 0.0]))):
        assert _message(outer=(ok, (ok[0], up, down))) == "outer uplink capacities must be > 0 bytes/s"


def test_network_stores_clean_copies():
    lat = np.array([[np.nan, 1, 2], [1, 5, 3], [2, 3, 0]], dtype=float)  # the diagonal is never read
    groups = np.array([0, 0, 1], dtype=np.int32)
    net = _net(lat=lat, groups=groups, nic_send=[1, 2, 3], nic_recv=(4, 5, 6), up=[7, 8], down=[9, 10],
               outer=((np.zeros(3, dtype=np.int32), [11], [12]),))
    assert _net(lat=np.ones((3, 3), dtype=int)).latency.dtype == float
    assert net.latency.tolist() == [[0, 1, 2], [1, 0, 3], [2, 3, 0]]
    assert np.isnan(lat[0, 0]) and lat[1, 1] == 5  # the caller's matrix is untouched
    assert net.groups.dtype == np.int64 and net.groups.tolist() == [0, 0, 1]
    for name, want in (("nic_send", [1, 2, 3]), ("nic_recv", [4, 5, 6]), ("up", [7, 8]), ("down", [9, 10])):
        a = getattr(net, name)
        assert isinstance(a, np.ndarray) and a.dtype == float and a.tolist() == want
    (lab, up, down), = net.outer
    assert lab.dtype == np.int64 and up.dtype == float and down.dtype == float
    assert (lab.tolist(), up.tolist(), down.tolist()) == ([0, 0, 0], [11.0], [12.0])
    assert (net.n, net.n_groups) == (3, 2)
    assert [x.tolist() for lv in net.levels() for x in lv] == [[0, 0, 1], [7, 8], [9, 10], [0, 0, 0], [11], [12]]
    inv = 1 / np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], dtype=float)
    assert net.inverse_capacities().tolist() == pytest.approx(inv.tolist() + [0.0], rel=1e-15)


def test_an_empty_network_is_valid():
    net = Network(np.zeros((0, 0)), [], [], np.array([], dtype=int), [], [])
    assert (net.n, net.n_groups) == (0, 0)
    rows = Network(np.zeros((0, 0)), [], [], np.array([], dtype=int), [], [], outer=(([], [], []),))
    assert [len(x) for x in rows.outer[0]] == [0, 0, 0]
    assert SharedCostModel("ring", net, 8.0).steps == []


def test_link_index_names_every_link_of_every_flow():
    net = _net(outer=(([0, 1, 1], [1.0, 1.0], [1.0, 1.0]),))
    # slots: send NICs 0-2, recv NICs 3-5, group ups 6-7, downs 8-9, outer ups 10-11, downs 12-13, dummy 14
    idx = net.link_index(np.array([0, 0, 2]), np.array([1, 2, 0]), 14)
    assert idx.tolist() == [0, 0, 2, 4, 5, 3, 14, 6, 7, 14, 9, 8, 10, 10, 11, 13, 13, 12]
    two_d = net.link_index(np.array([[0, 0, 2]]), np.array([[1, 2, 0]]), 14)  # many orders: along the rows
    assert two_d.tolist() == [idx.tolist()]


# ---------------------------------------------------------------------------
# the model's own checks, its smooth companion and its flow counts


def test_model_refuses_unknown_algorithms_and_bad_sizes():
    net = _uniform_net(4)
    with pytest.raises(ValueError) as e:
        SharedCostModel("tree", net, 8.0)
    assert str(e.value) == "unknown algorithm 'tree' (choose from ring, hd, rd, dbt, bcube, bintree)"
    from plink.solvers.contention import schedule

    with pytest.raises(ValueError) as e:
        schedule("tree", 4, 8.0)
    assert str(e.value) == "unknown algorithm 'tree' (choose from ring, hd, rd, dbt, bcube, bintree)"
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError) as e:
            SharedCostModel("ring", net, bad)
        assert str(e.value) == f"size must be >= 0 bytes, got {bad}"
    m = SharedCostModel("bcube", _uniform_net(9), 9, base=3)
    assert (m.algo, m.size, type(m.size), m.base, m.n, len(m.steps)) == ("bcube", 9.0, float, 3, 9, 2)
    assert m._L == 2 * 9 + 2 + 1


def test_ring_price_and_smooth_companion_by_hand():
    # 4 hosts in 2 racks of 2; ring 0 -> 1 -> 2 -> 3 -> 0 crosses each rack boundary once each way
    lat = np.array([[0, 1, 4, 4], [1, 0, 4, 4], [4, 4, 0, 2], [4, 4, 2, 0]]) * 1e-3
    nic = 1e9
    net = Network(lat, np.full(4, nic), np.full(4, 2 * nic), np.array([0, 0, 1, 1]), np.array([1e8, 2e8]),
                  np.array([4e8, 5e8]))
    S = 4e6
    m = SharedCostModel("ring", net, S)
    f = S / 4  # bytes per flow
    # flows 0->1 (1 ms), 1->2 (4 ms, up0, down1), 2->3 (2 ms), 3->0 (4 ms, up1, down0)
    times = [f / nic] * 4 + [f / (2 * nic)] * 4 + [f / 1e8, f / 2e8, f / 4e8, f / 5e8]
    # latency: the longest chain crosses 2(N-1) = 6 consecutive edges: twice the ring's 11 ms less its
    # cheapest two consecutive edges (3->0, 0->1: 5 ms)
    cost, soft = m.batch(np.arange(4)[None, :], smooth=True)
    assert cost.tolist() == pytest.approx([17e-3 + 6 * max(times)], rel=1e-12)
    # the companion: mean latency + root mean square over every priced link slot (unused slots count as 0)
    mean_lat = (1 + 4 + 2 + 4) / 4 * 1e-3
    rms = np.sqrt(sum(t * t for t in times) / 12)
    assert soft.tolist() == pytest.approx([6 * (mean_lat + rms)], rel=1e-12)
    assert m.batch(np.arange(4)).shape == (1,)  # one order as a flat array
    orders = np.array([[0, 1, 2, 3], [0, 2, 1, 3], [3, 1, 0, 2]])
    c3, s3 = m.batch(orders, smooth=True)
    for i, p in enumerate(orders):
        c1, s1 = m.batch(p[None, :], smooth=True)
        assert (c3[i], s3[i]) == (pytest.approx(c1[0], rel=1e-12), pytest.approx(s1[0], rel=1e-12))
        assert m(p) == pytest.approx(c1[0], rel=1e-12)
    assert not isinstance(m.batch(orders), tuple)


def test_recursive_doubling_on_rank_clocks_by_hand():
    """8 ranks, 1 byte, NICs of 1 byte/s, no latency; the pairs 2-3 and 5-7 on paths of 1/3 byte/s.
    Rounds: (0,1)(2,3)(4,5)(6,7), then (0,2)(1,3)(4,6)(5,7), then (0,4)(1,5)(2,6)(3,7).  Clocks
    after round 1: ranks 2, 3 at 3 s, the others 1 s; after round 2: 0-3 at 4 s (they wait for
    2 and 3), 4 and 6 at 2 s, 5 and 7 at 4 s; after round 3 all at 5 s.  The sum of the rounds'
    busiest links would be 3 + 3 + 1 = 7 s: each slow pair delays only the ranks behind it."""
    n = 8
    path = np.ones((n, n))
    for a, b in ((2, 3), (5, 7)):
        path[a, b] = path[b, a] = 1 / 3
    net = Network(np.zeros((n, n)), np.ones(n), np.ones(n), np.zeros(n, dtype=int), np.ones(1), np.ones(1), path=path)
    m = SharedCostModel("rd", net, 1.0)
    assert m(np.arange(n)) == pytest.approx(5.0, rel=1e-12)
    # the ring keeps the sum of its steps' busiest links: 14 steps of 1/8 byte, each at the slow pair's 3/8 s
    ring = SharedCostModel("ring", net, 1.0)
    assert ring(np.array([0, 1, 2, 3, 4, 6, 5, 7])) == pytest.approx(14 * 3 / 8, rel=1e-12)
    # the lower bound stays below: every flow at its 1 byte over the 1 byte/s NICs, 3 rounds
    assert shared_lower_bound(m) == pytest.approx(3.0, rel=1e-12)


def test_bintree_phases_by_hand():
    # 3 ranks: 0 -> 1, 0 -> 2; one group, send NICs 1 B/s and receive NICs 2 B/s so times are bytes or half
    lat = np.array([[0, 1, 2], [1, 0, 3], [2, 3, 0]]) * 1e-3
    net = Network(lat, np.ones(3), np.ones(3) * 2, np.zeros(3, int), [1.0], [1.0])
    S = 10.0
    m = SharedCostModel("bintree", net, S)
    assert [(s.src.tolist(), s.dst.tolist(), s.nbytes.tolist(), s.repeat) for s in m.steps] == [
        ([1, 2], [0, 0], [S, S], 1), ([0, 0], [1, 2], [S, S], 1)]  # the reduce's one height, the broadcast's one depth
    # reduce: 1 -> 0 and 2 -> 0: send NICs 10 s each, receive NIC of 0: 20 / 2 = 10 s -> 10 s
    # broadcast: 0 -> 1, 0 -> 2: send NIC of 0 20 s, receive NICs 5 s each -> 20 s
    want = 2 * 2e-3 + 10 + 20
    assert m(np.arange(3)) == pytest.approx(want, rel=1e-12)
    soft = m.batch(np.arange(3)[None, :], smooth=True)[1][0]
    slots = 2 * 3 + 2  # NICs and the one group's up and down (the intra-group slot is not priced)
    want_soft = 2 * 1.5e-3 + np.sqrt(300 / slots) + np.sqrt(450 / slots)
    assert soft == pytest.approx(want_soft, rel=1e-12)


@pytest.mark.parametrize("algo", ["ring", "hd", "rd", "dbt", "bintree"])
def test_no_bytes_no_uplink_flows(algo):
    net = _testbed(2, 4)
    m = SharedCostModel(algo, net, 0.0)
    interleaved = np.arange(8).reshape(2, 4).T.ravel()
    assert m.max_uplink_flows(interleaved) == 0
    assert SharedCostModel(algo, net, 1.0).max_uplink_flows(interleaved) >= 1


def test_uplink_flows_count_every_level():
    # two racks in one row: the row uplink carries what both racks send out
    g = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    row = g // 2
    lat = np.full((8, 8), 1e-5)
    net = Network(lat, np.full(8, 1e9), np.full(8, 1e9), g, np.full(4, 1e9), np.full(4, 1e9),
                  outer=((row, np.full(2, 1e9), np.full(2, 1e9)),))
    m = SharedCostModel("ring", net, 8.0)
    assert m.max_uplink_flows(np.arange(8)) == 1
    # ring 0 2 1 3 | 4 6 5 7: every hop inside a row crosses racks; 2 flows leave rack 0 ... and the row once
    assert m.max_uplink_flows(np.array([0, 2, 1, 3, 4, 6, 5, 7])) == 2
    # alternate rows: every hop crosses the row boundary, 4 flows on each row uplink
    assert m.max_uplink_flows(np.array([0, 4, 1, 5, 2, 6, 3, 7])) == 4


def test_bintree_across_three_racks_by_hand():
    # 3 ranks, 3 racks of one host; NICs 1 B/s, uplinks 2 B/s, so times are bytes or half of them
    lat = np.array([[0, 1, 2], [1, 0, 3], [2, 3, 0]]) * 1e-3
    net = Network(lat, np.ones(3), np.ones(3), np.array([0, 1, 2]), np.full(3, 2.0), np.full(3, 2.0))
    S = 10.0
    m = SharedCostModel("bintree", net, S)
    # ranks 0 <- 1, 0 <- 2 (reduce): send NICs of 1, 2: 10; recv NIC of 0: 20; ups of 1, 2: 5; down of 0: 10
    #   -> the busiest link, 20; the broadcast mirrors it
    orders = np.array([[0, 1, 2], [2, 1, 0], [1, 0, 2]])
    want = [2 * max(lat[p[0], p[1]], lat[p[0], p[2]]) + 2 * 20 for p in orders]
    assert m.batch(orders).tolist() == pytest.approx(want, rel=1e-12)
    assert want[0] != want[2]  # the orders' latency terms differ
    assert m.batch(orders.astype(float)).tolist() == pytest.approx(want, rel=1e-12)  # float ranks are cast


def _smooth_reference(model, perm):
    """The search's smooth companion written out: per step, mean flow latency plus the root mean
    square of every priced link slot's time (NICs, ups and downs of every level), times repeat."""
    net = model.net
    slots = 2 * net.n + 2 * sum(len(up) for _, up, _ in net.levels())
    total = 0.0
    for s in model.steps:
        hs, hd = perm[s.src], perm[s.dst]
        t = 0.0
        if s.latency:
            t += float(np.mean([net.latency[a, b] for a, b in zip(hs, hd)]))
        if s.nbytes.any():
            load = {}
            for a, b, nb in zip(hs, hd, s.nbytes):
                links = [("s", a), ("r", b)]
                for lv, (lab, _, _) in enumerate(net.levels()):
                    if lab[a] != lab[b]:
                        links += [("u", lv, lab[a]), ("d", lv, lab[b])]
                for link in links:
                    load[link] = load.get(link, 0.0) + nb
            caps = {"s": net.nic_send, "r": net.nic_recv}
            times = [v / (caps[k[0]][k[1]] if k[0] in caps else net.levels()[k[1]][1 if k[0] == "u" else 2][k[2]])
                     for k, v in load.items()]
            t += float(np.sqrt(sum(x * x for x in times) / slots))
        total += s.repeat * t
    return total


@pytest.mark.parametrize("algo,n", [("bintree", 7), ("hd", 6), ("dbt", 5), ("rd", 7)])
def test_smooth_companion_against_its_reference(algo, n):
    rng = np.random.default_rng(n)
    net = random_net(rng, n, 3, outer=True)
    m = SharedCostModel(algo, net, 1e6)
    perms = np.array([rng.permutation(n) for _ in range(3)])
    cost, soft = m.batch(perms, smooth=True)
    assert cost.tolist() == pytest.approx(m.batch(perms).tolist(), rel=1e-12)
    assert soft.tolist() == pytest.approx([_smooth_reference(m, p) for p in perms], rel=1e-9)


def test_latency_is_the_longest_chain_of_messages_by_hand():
    """One slow link (hosts 0-1, 10 ms; the rest 1 ms), no bytes: the latency term is the longest
    chain of messages, each rank moving on when its own message arrives, not every step's slowest."""
    lat = np.full((4, 4), 1e-3)
    np.fill_diagonal(lat, 0.0)
    lat[0, 1] = lat[1, 0] = 10e-3
    net = Network(lat, np.full(4, 1e9), np.full(4, 1e9), np.zeros(4, dtype=int), np.array([1e9]), np.array([1e9]))
    ring = SharedCostModel("ring", net, 0.0)
    # edges 10, 1, 1, 1 ms; a chain crosses 2(N-1) = 6 consecutive ones: 2 x 13 ms less the cheapest
    # two in a row (2 ms) = 24 ms, where "6 steps x the slowest edge" would say 60 ms
    assert ring(np.arange(4)) == pytest.approx(24e-3, rel=1e-12)
    assert ring(np.array([0, 2, 1, 3])) == pytest.approx(2 * 4e-3 - 2e-3, rel=1e-12)  # no slow edge: 6 ms
    # recursive doubling over hosts 0..3: step 1 pairs ranks (0,1), (2,3): clocks 10, 10, 1, 1 ms;
    # step 2 pairs (0,2), (1,3): ranks 2 and 3 get the 10 ms clocks' messages at 11 ms
    rd = SharedCostModel("rd", net, 0.0)
    assert rd(np.arange(4)) == pytest.approx(11e-3, rel=1e-12)
    # Open MPI's binary tree (0 -> 1, 2; 1 -> 3): reduce 3 -> 1 at 1 ms, 1 -> 0 at 11 ms (2 -> 0 at 1 ms);
    # broadcast 0 -> 1 at 21 ms, 1 -> 3 at 22 ms
    assert SharedCostModel("bintree", net, 0.0)(np.arange(4)) == pytest.approx(22e-3, rel=1e-12)


def test_the_two_trees_of_dbt_keep_their_own_clocks():
    """dbt's trees run side by side: its latency term is the slower tree's chain, not their sum."""
    from plink.solvers.contention import critical_latency, latency_hops

    rng = np.random.default_rng(5)
    n = 7
    lat = rng.uniform(1e-4, 1e-2, (n, n))
    np.fill_diagonal(lat, 0.0)
    hops, clock_rank = latency_hops("dbt", n)
    assert clock_rank.tolist() == list(range(n)) + [(a - 1) % n for a in range(n)]
    P = np.array([rng.permutation(n) for _ in range(4)])
    both = critical_latency("dbt", lat, P, hops, clock_rank)
    one = critical_latency("dbt", lat, P, [h for h in hops if h.src.max() < n], clock_rank)
    two = critical_latency("dbt", lat, P, [h for h in hops if h.src.min() >= n], clock_rank)
    assert both.tolist() == pytest.approx(np.maximum(one, two).tolist(), rel=1e-12)
    assert (both < one + two).all()


def test_latency_hops_defaults_and_refusals():
    from plink.solvers.contention import latency_hops

    hops, _ = latency_hops("bcube", 8)  # base 2 by default: 3 digits up, then down
    assert len(hops) == 6 and all(len(h.src) == 8 for h in hops)
    with pytest.raises(ValueError) as e:
        latency_hops("star", 4)
    assert str(e.value) == "unknown algorithm 'star' (choose from ring, hd, rd, dbt, bcube, bintree)"


@pytest.mark.parametrize("n", [2, 5, 6, 7, 16])
def test_tree_steps_count_each_level_up_and_down(n):
    """The steps the report counts ('in k of its M steps'): each level of a tree once up and once
    down, plus dbt's pipelined bandwidth step; Open MPI's unsegmented tree: the reduce's heights and
    the broadcast's depths, as many as its levels each."""
    from plink.solvers.contention import bintree_edges, bintree_steps, dbt_steps
    from plink.solvers.costmodels import dbt_levels

    assert sum(s.repeat for s in dbt_steps(n, 1.0)) == 2 * len(dbt_levels(n)) + 1
    depth = max(level for _, _, level in bintree_edges(n))
    assert sum(s.repeat for s in bintree_steps(n, 1.0)) == 2 * depth
    assert [s.latency for s in dbt_steps(n, 1.0)][-1] is False  # the bandwidth step waits on no latency


@pytest.mark.parametrize("algo", ["ring", "hd", "rd", "dbt", "bcube", "bintree"])
def test_no_steps_and_no_hops_below_two_ranks(algo):
    from plink.solvers.contention import latency_hops, schedule

    for n in (1,) if algo == "bcube" else (0, 1):  # (BCube refuses N = 0: not a power of its base)
        assert schedule(algo, n, 1e6) == []
        assert latency_hops(algo, n)[0] == []


def test_clocked_rounds_which_algorithms_and_refusals():
    """The ring and dbt keep the sum of their steps (no rounds); the others run their byte-carrying rounds
    in time order, unmerged (Rabenseifner's all-gather mirrors its reduce-scatter: 2 x 3 rounds at N = 8)."""
    from plink.solvers.contention import clocked_rounds

    assert clocked_rounds("ring", 8, 1.0) is None and clocked_rounds("dbt", 8, 1.0) is None
    assert clocked_rounds("rd", 1, 1.0) is None
    assert [len(r.src) for r in clocked_rounds("hd", 8, 8.0)] == [8] * 6
    assert [r.nbytes[0] for r in clocked_rounds("hd", 8, 8.0)] == [4.0, 2.0, 1.0, 1.0, 2.0, 4.0]
    assert clocked_rounds("rd", 8, 0.0) == []  # no bytes: no bandwidth term
    with pytest.raises(ValueError) as e:
        clocked_rounds("tree", 8, 1.0)
    assert str(e.value) == "unknown algorithm 'tree' (choose from ring, hd, rd, dbt, bcube, bintree)"
    with pytest.raises(ValueError, match="power of 2"):
        clocked_rounds("bcube", 6, 1.0)


def test_latency_hops_check_bcube_sizes():
    from plink.solvers.contention import latency_hops

    with pytest.raises(ValueError, match="power of 2"):
        latency_hops("bcube", 6)


def test_open_mpi_tree_is_priced_level_by_level_as_measured():
    """Open MPI's binary tree forced through coll_tuned sends each message whole (segment size 0),
    level by level. On 20 hosts in racks of 6, 2, 5, 3, 4 (benchmarks/collectives_netns.py case D,
    data shipped) the model every edge at once with the links' norm ranked the 20 measured orders
    with Spearman 0.44; the steps by height (reduce) and depth (broadcast) price the hand-out order
    at 16 busiest-link units of S / 300 Mbit/s (1.79 s, measured 1.80 s) and rank them 0.97."""
    import json
    from pathlib import Path

    from scipy.stats import spearmanr

    doc = json.loads((Path(__file__).parent.parent / "benchmarks/results/2026-11-27-D-seed4/D.json").read_text())
    rack, n = np.array(doc["rack"]), len(doc["rack"])
    units = SharedCostModel("bintree", Network(np.zeros((n, n)), np.ones(n), np.ones(n), rack, np.ones(5),
                                               np.ones(5)), 1.0)
    orders = {name: np.array(o["order"]) for name, o in doc["orders"].items()}
    assert units(orders["handout"]) == 16 and units(orders["rack-contiguous"]) == 26
    seen, pred, meas = set(), [], []
    for name, p in orders.items():
        if tuple(p) not in seen:
            seen.add(tuple(p))
            pred.append(units(p))
            meas.append(doc["orders"][name]["measured"]["mpi_tree"])
    assert len(pred) == 20 and spearmanr(pred, meas)[0] >= 0.9
