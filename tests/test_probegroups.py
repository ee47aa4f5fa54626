"""The groups of a probe from its latency and inverse bandwidth (plink.structure.probegroups):
the latency's groups, split only where the bandwidth says the parts are far apart."""

import json
from pathlib import Path

import numpy as np
import pytest

from plink.structure.metrics import ami, refines, separation
from plink.structure.probegroups import (FAR_RATIO, _canonical, _group, infer_probe_groups, inverse, placed_hosts,
                                        slowness, split_by_far_pairs, split_far_halves, split_slow_pairs)

TRUTH = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3, 3])  # racks of 4, 4, 2, 4


def _matrix(labels, near, far, noise, seed):
    rng = np.random.default_rng(seed)
    n = len(labels)
    m = np.where(labels[:, None] == labels[None, :], near, far) + rng.uniform(0, noise, (n, n))
    m = np.minimum(m, m.T)
    np.fill_diagonal(m, 0.0)
    return m


def _dealt_bandwidth(rack_of_two_pair: float) -> np.ndarray:
    """Pair bandwidths (Mbit/s) of TRUTH's racks as a concurrent probe reads them: in-rack pairs at
    the NIC's 300, cross-rack pairs at half that (a shared uplink), but the rack of 2's hosts read
    at the full rate from racks 0 and 1 (pairs alone on their uplinks), and their own pair at
    ``rack_of_two_pair``."""
    inv = _matrix(TRUTH, 1 / 300, 1 / 150, 1e-5, 1)
    np.fill_diagonal(inv, np.nan)
    bw = 1.0 / inv
    bw[8, :4] = bw[:4, 8] = bw[9, 4:8] = bw[4:8, 9] = 300.0
    bw[8, 9] = bw[9, 8] = rack_of_two_pair
    return bw


def test_a_crossing_bandwidth_grouping_does_not_deal_a_rack_of_two_to_others():
    """The inverse bandwidth's own grouping deals the rack of 2's hosts into racks 0 and 1 (as in
    benchmarks/results/2026-11-29-D-seed13): the groupings cross. Its split of the rack of 2 is
    between a pair read at the in-rack rate, so the latency's 4 racks stay."""
    lat = _matrix(TRUTH, 35.0, 60.0, 8.0, 0)
    bw = _dealt_bandwidth(300.0)
    dealt = TRUTH.copy()
    dealt[8], dealt[9] = 0, 1
    assert split_by_far_pairs(TRUTH, dealt, 1.0 / bw).tolist() == TRUTH.tolist()
    inferred = _group(1.0 / bw, placed_hosts(bw), 0)  # what the bandwidth alone finds: it crosses
    assert not refines(inferred, TRUTH) and not refines(TRUTH, inferred)
    lab, conf, source = infer_probe_groups(lat, bw)
    assert ami(TRUTH, lab) == pytest.approx(1.0) and source == "inferred from latency"
    assert conf == pytest.approx(separation(lat, lab))


def test_a_split_the_bandwidth_measures_far_is_taken():
    """The same, but the rack of 2's own pair measured at a third of the rate: that is evidence the
    two hosts are apart (a pair bandwidth only drops when something is shared), so the latency's
    group of 2 is split; the bandwidth's merges into racks 0 and 1 are still not taken."""
    bw = _dealt_bandwidth(100.0)
    dealt = TRUTH.copy()
    dealt[8], dealt[9] = 0, 1
    got = split_by_far_pairs(TRUTH, dealt, 1.0 / bw)
    want = TRUTH.copy()
    want[9], want[10:] = 3, 4
    assert got.tolist() == want.tolist()
    lab, _, source = infer_probe_groups(_matrix(TRUTH, 35.0, 60.0, 8.0, 0), bw)
    assert lab.max() + 1 == 5 and refines(lab, TRUTH) and source == "inferred from latency, split by bandwidth"


def _flat_latency_and_bandwidth():
    """Busy hosts: the latency shows no racks (every pair 40-70 us); the concurrent bandwidths of
    TRUTH's racks do (cross-rack pairs at half the rate)."""
    rng = np.random.default_rng(3)
    lat = 40.0 + rng.uniform(0, 30.0, (14, 14))
    lat = np.minimum(lat, lat.T)
    np.fill_diagonal(lat, 0.0)
    inv = _matrix(TRUTH, 1 / 300, 1 / 150, 1e-5, 2)
    np.fill_diagonal(inv, np.nan)
    return lat, 1.0 / inv


def test_a_flat_latency_takes_the_bandwidth_racks():
    """The latency shows one group, the bandwidths the racks: the bandwidth's grouping is the
    result, as before."""
    lat, bw = _flat_latency_and_bandwidth()
    lab, _, source = infer_probe_groups(lat, bw)
    assert ami(TRUTH, lab) == pytest.approx(1.0) and source == "inferred from bandwidth"


def test_the_latency_splits_are_kept_where_the_bandwidth_merges():
    """The bandwidth merges racks 0 and 1 (their pairs read at the full rate); the latency's finer
    grouping stays: merged racks would price the flows between them as free."""
    coarse = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 2, 2])
    inv = _matrix(coarse, 1.0, 2.0, 0.01, 4)
    assert split_by_far_pairs(TRUTH, coarse, inv).tolist() == TRUTH.tolist()


def test_parts_join_again_unless_far_and_unmeasured_pairs_are_no_evidence():
    """One latency group of 6 that the bandwidth cuts in 3 parts: parts a|b measured far, b|c at
    the in-group rate, so b and c join again; a part with no measured pair to the others stays with
    them. Labels come back numbered by first appearance."""
    lab = np.zeros(6, int)
    other = np.array([2, 2, 0, 0, 1, 1])
    inv = np.ones((6, 6))
    inv[np.ix_([0, 1], [2, 3, 4, 5])] = inv[np.ix_([2, 3, 4, 5], [0, 1])] = FAR_RATIO * 1.1
    assert split_by_far_pairs(lab, other, inv).tolist() == [0, 0, 1, 1, 1, 1]
    inv[np.ix_([0, 1], [2, 3, 4, 5])] = inv[np.ix_([2, 3, 4, 5], [0, 1])] = FAR_RATIO * 0.9
    assert split_by_far_pairs(lab, other, inv).tolist() == [0] * 6
    inv[np.ix_([0, 1], [2, 3, 4, 5])] = inv[np.ix_([2, 3, 4, 5], [0, 1])] = np.nan
    assert split_by_far_pairs(lab, other, inv).tolist() == [0] * 6
    # no pair measured at all: the latency's groups, renumbered
    assert split_by_far_pairs(np.array([5, 5, 2, 2]), np.array([0, 1, 0, 1]),
                              np.full((4, 4), np.nan)).tolist() == [0, 0, 1, 1]


def _merged_latency_probe():
    """TRUTH's racks, but the latency cannot tell racks 2 and 3 apart (one group of 6, as two racks
    behind one switch would look); the concurrent bandwidths can: their pairs share the uplinks
    and read half the rate."""
    from plink.data.probefile import Host, ProbeData

    seen = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2])
    lat = _matrix(seen, 35.0, 60.0, 4.0, 5)
    inv = _matrix(TRUTH, 1 / 300, 1 / 150, 1e-5, 6)
    np.fill_diagonal(inv, np.nan)
    return ProbeData(hosts=[Host(f"h{i:02d}") for i in range(14)], latency=lat, bandwidth=1e-3 / inv)


def test_plink_group_shows_the_groups_plink_order_prices():
    """``plink group`` (hierarchy.infer_groups) splits its finest level by the bandwidths as
    ``plink order``'s pricing does, and says so; with --groups K it does not."""
    from plink.pricing import find_groups
    from plink.structure.hierarchy import infer_groups

    probe = _merged_latency_probe()
    g = infer_groups(probe)
    assert ami(TRUTH, g.labels) == pytest.approx(1.0) and g.metrics["split_by_bandwidth"] == 1
    assert g.metrics["groups"] == 4 and sorted(g.metrics["sizes"]) == [2, 4, 4, 4]
    assert g.levels[0] is g.labels and all(refines(g.labels, lv) for lv in g.levels[1:])
    priced = find_groups(probe)
    assert ami(g.labels, priced.labels) == pytest.approx(1.0)
    assert priced.source == "inferred from bandwidth"  # the split groups are exactly the bandwidth's
    fixed = infer_groups(probe, n_groups=3)
    assert fixed.metrics["groups"] == 3 and "split_by_bandwidth" not in fixed.metrics


def test_plink_group_prints_the_split(tmp_path):
    from click.testing import CliRunner

    from plink.cli import cli

    path = tmp_path / "probe.json"
    _merged_latency_probe().save(path)
    res = CliRunner().invoke(cli, ["group", str(path), "-o", str(tmp_path / "g.json")])
    assert res.exit_code == 0, res.output
    assert "14 hosts: 4" in res.output
    assert "split by the pair bandwidths: 1 more finest group than" in res.output


def test_plink_group_confidence_from_the_bandwidths_when_the_latency_saw_one_group():
    from plink.data.probefile import Host, ProbeData
    from plink.structure.hierarchy import infer_groups

    lat, bw = _flat_latency_and_bandwidth()
    g = infer_groups(ProbeData(hosts=[Host(f"h{i}") for i in range(14)], latency=lat, bandwidth=bw / 1000))
    assert ami(TRUTH, g.labels) == pytest.approx(1.0) and g.metrics["split_by_bandwidth"] == 3
    assert 0.0 <= g.confidence.min() and g.confidence.max() <= 1.0 and g.confidence.mean() < 1.0


BW_PROBES = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "2026-12-03-small-clusters-bw"


def _bw_probes():
    """(name, probe, true labels) of the shipped --bandwidth probes of small netns clusters."""
    from plink.data.probefile import load_json

    out = []
    for d in sorted(p for p in BW_PROBES.iterdir() if (p / "truth.json").is_file()):
        truth = json.loads((d / "truth.json").read_text())
        for f in sorted(d.glob("p*.json")):
            probe = load_json(f)
            out.append((f"{d.name}/{f.name}", probe, np.array([truth[h] for h in probe.names])))
    return out


def test_split_far_halves_on_the_small_netns_probes():
    """On every shipped --bandwidth probe of 6-9 hosts the true racks are never cut (in-rack pairs
    read what both hosts carry), and on the clusters with racks of 2 (3+3+2, 2+2+2, 2+2+2+2) every
    grouping with a rack of 2 merged into another rack, and the one group of all hosts of 2+2+2,
    is cut back into the racks. (Not always cut back: two racks of 3 merged, when a third of their
    pairs read at the full rate and average linkage of the bandwidths does not find them as the
    halves, 3+3 in 1 of 8; and 2+2+2+2 as one group, whose halves of 2 racks each hold as many
    cross-rack pairs as the pairs between them, in 2 of 6.)"""
    probes = _bw_probes()
    assert len(probes) == 56
    for name, probe, t in probes:
        inv = inverse(probe.bandwidth)
        assert split_far_halves(t, inv).tolist() == _canonical(t).tolist(), name
        sizes = np.bincount(t)
        if name.split("-udp")[0] not in ("3-3-2", "2-2-2", "2-2-2-2"):
            continue
        for a in range(len(sizes)):
            for b in range(a + 1, len(sizes)):
                if 2 in (sizes[a], sizes[b]):
                    merged = np.where(t == b, a, t)
                    assert ami(t, split_far_halves(merged, inv)) == pytest.approx(1.0), (name, a, b)
        if name.startswith("2-2-2-udp"):
            assert ami(t, split_far_halves(np.zeros(probe.n, int), inv)) == pytest.approx(1.0), name


def test_find_groups_merges_no_racks_of_the_small_netns_bandwidth_probes():
    """plink order's groups (plink.pricing.find_groups, with the bandwidths) put hosts of two racks in
    one of several groups on none of the shipped --bandwidth probes; before split_far_halves 17 of the
    56 did (a rack of 2 with a rack of 3 in 3+3+2 and 2+3+3, two racks of 2 as one in 2+2+2), where
    the latency found fewer groups than racks and the bandwidth's own grouping had folded the racks
    of 2; none is one group (2 probes of 2+2+2+2 were, found one group by both matrices, before
    split_slow_pairs dealt their hosts again). Left: the latency's cuts of a rack, which are kept
    (2 probes: racks of 4 cut into pairs)."""
    from plink.pricing import find_groups

    groups = {name: (find_groups(probe).labels, t) for name, probe, t in _bw_probes()}
    merged = [name for name, (g, t) in groups.items() if not refines(g, t)]
    assert merged == []
    exact = [name for name, (g, t) in groups.items() if ami(t, g) > 1 - 1e-9]
    assert len(exact) == 54


def test_hosts_with_slower_nics_are_not_cut_off():
    """One rack of 6 in which hosts 0 and 1 read every pair at 3/4 of the others' rate (their NICs,
    not an uplink): the pairs between the halves {0, 1} and {2..5} read 1.33x slower than the pairs
    inside {2..5}, but each reads what its slower host carries, so the rack stays whole. Two racks of 3
    whose cross pairs read half the rate (a shared uplink) are cut."""
    bw = np.full((6, 6), 400.0)
    bw[:2, :] = bw[:, :2] = 300.0
    np.fill_diagonal(bw, np.nan)
    assert split_far_halves(np.zeros(6, int), inverse(bw)).tolist() == [0] * 6
    bw = np.full((6, 6), 400.0)
    bw[:3, 3:] = bw[3:, :3] = 200.0
    np.fill_diagonal(bw, np.nan)
    assert split_far_halves(np.zeros(6, int), inverse(bw)).tolist() == [0, 0, 0, 1, 1, 1]


# The hosts of TRUTH_332 as helper 56's p1 probe (benchmarks/results/2026-12-03-gloo-3-3-2-bw)
# read them: racks {0, 3, 6}, {1, 4, 7}, {2, 5}; cross-rack pairs at half the rate (a shared
# uplink) but these five, alone on their uplinks in their round.
TRUTH_332 = np.array([0, 1, 2, 0, 1, 2, 0, 1])
ALONE_332 = [(1, 5), (1, 6), (2, 3), (2, 6), (5, 7)]


def _bandwidth_332(alone=ALONE_332, slow=()) -> np.ndarray:
    t = TRUTH_332
    bw = np.where(t[:, None] == t[None, :], 380.0, 190.0)
    for i, j in alone:
        bw[i, j] = bw[j, i] = 380.0
    for i, j in slow:
        bw[i, j] = bw[j, i] = 190.0
    np.fill_diagonal(bw, np.nan)
    return bw


def test_a_rack_of_two_dealt_to_two_racks_is_dealt_again():
    """The latency shows no racks (one group); the bandwidth's own grouping is two groups of 4,
    {0, 2, 3, 6} and {1, 4, 5, 7}: the rack of 2 dealt to the racks of 3, each group holding one
    pair read at half the rate ((0, 2) and (4, 5)). The fewest groups with no such pair inside
    are the racks (before split_slow_pairs, plink order and plink group gave the two groups)."""
    bw = _bandwidth_332()
    lat = np.full((8, 8), 30.0) + np.random.default_rng(0).uniform(0, 1, (8, 8))
    np.fill_diagonal(lat, 0.0)
    assert _group(inverse(bw), placed_hosts(bw), 0).tolist() == [0, 1, 0, 0, 1, 1, 0, 1]
    lab, _, source = infer_probe_groups(lat, bw)
    assert ami(TRUTH_332, lab) == pytest.approx(1.0)
    assert source == "inferred from latency, split by bandwidth"
    assert split_slow_pairs(np.zeros(8, int), [0, 1, 0, 0, 1, 1, 0, 1], inverse(bw)).tolist() == \
        _canonical(TRUTH_332).tolist()


def test_split_slow_pairs_keeps_racks_a_noisy_pair_or_two_would_cut():
    """A group of one rack whose pairs read slow by noise is not cut: one host read slow with 2 of
    its 2 rack-mates would be a group of 1 (not taken), with 2 of its 3 rack-mates likewise, and a
    rack of 4 cut 2 + 2 by two slow pairs has half its pairs between the halves at the full rate
    (not more than half slow: not taken). A group with no slow pair inside is left alone."""
    racks = np.array([0, 0, 0, 1, 1, 1, 1])
    bw = np.where(racks[:, None] == racks[None, :], 380.0, 190.0)
    np.fill_diagonal(bw, np.nan)
    for slow in ([(0, 1), (0, 2)], [(3, 4), (3, 5)], [(3, 5), (4, 6)]):
        noisy = bw.copy()
        for i, j in slow:
            noisy[i, j] = noisy[j, i] = 190.0
        assert split_slow_pairs(np.zeros(7, int), racks, inverse(noisy)).tolist() == racks.tolist(), slow
    assert split_slow_pairs(np.zeros(7, int), racks, inverse(bw)).tolist() == racks.tolist()
    # the same pairs slow, but the group is two racks: cut where more than half the pairs between are slow
    assert split_slow_pairs(np.zeros(7, int), np.zeros(7, int), inverse(bw)).tolist() == racks.tolist()


def test_split_slow_pairs_only_refines_its_parent_and_leaves_big_groups():
    """The hosts are dealt again only inside a parent group (the latency's), and a parent group over
    max_hosts is left as it is."""
    bw = _bandwidth_332()
    two = np.array([0, 1, 0, 0, 1, 1, 0, 1])
    parent = np.array([0, 0, 0, 0, 0, 0, 0, 1])  # host 7 apart by latency
    got = split_slow_pairs(parent, np.where(parent == 1, 2, two), inverse(bw))
    assert refines(got, parent)
    assert split_slow_pairs(np.zeros(8, int), two, inverse(bw), max_hosts=7).tolist() == two.tolist()


def test_slowness_is_the_pair_over_what_both_hosts_carry():
    bw = np.full((4, 4), 400.0)
    bw[0, :] = bw[:, 0] = 300.0  # host 0's NIC
    bw[2, 3] = bw[3, 2] = 200.0  # a shared uplink
    np.fill_diagonal(bw, np.nan)
    s = slowness(inverse(bw))
    assert np.isnan(np.diag(s)).all()
    assert s[0, 1] == pytest.approx(1.0) and s[1, 2] == pytest.approx(1.0) and s[2, 3] == pytest.approx(2.0)


def test_groups_split_by_the_bandwidths_get_the_confidence_of_both_matrices():
    """plink group on the Gloo walk's p1 (the latency one group, the racks from the bandwidths):
    each host's confidence is the larger of its separations on the latencies and the inverse
    bandwidths, as with --groups K; on the inverse bandwidths alone the rack of 2 read 0.25 and
    its host was called low-confidence, for the true racks."""
    from plink.data.probefile import load_json
    from plink.structure.hierarchy import _both_separations, infer_groups

    probe = load_json(BW_PROBES.parent / "2026-12-03-gloo-3-3-2-bw" / "p1.json")
    g = infer_groups(probe)
    assert ami(TRUTH_332, g.labels) == pytest.approx(1.0) and g.metrics["split_by_bandwidth"] == 2
    assert np.allclose(g.confidence, _both_separations(probe, probe.bandwidth, g.labels))
    assert g.metrics["low_confidence_hosts"] == []
