"""The hedge over groupings that latencies alone cannot rule out: ``solvers.hedge``,
``plink.structure.probegroups.splits_in_two`` and ``plink order``'s use of them."""

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from plink.cli import cli
from plink.data.probefile import from_dict, from_matrix
from plink.order import order_hosts
from plink.pricing import Groups, find_groups, network
from plink.solvers.contention import SharedCostModel
from plink.solvers.fluid import pricing_model
from plink.solvers.hedge import hedged_pick, regrets
from plink.structure.probegroups import inverse, joins_of_two, splits_in_two

E24 = Path(__file__).parent.parent / "benchmarks/results/2026-11-30-E-seed24/E.json"
MIB4 = 4 * 2**20


@pytest.fixture(scope="module")
def e24():
    """Proof case E seed 24 (24 hosts; its latency probe merged a rack of 2 with a rack of 3)."""
    return json.loads(E24.read_text())


# ---- hedged_pick -------------------------------------------------------------------------------

def test_regrets_are_each_candidates_worst_ratio_to_the_best_of_a_grouping():
    prices = [[1.0, 1.01, 2.0],
              [3.0, 1.5, 1.5]]
    assert np.allclose(regrets(prices), [2.0, 1.01, 2.0])


def test_pick_takes_the_least_worst_regret_among_the_near_cheapest_only():
    prices = [[1.00, 1.015, 1.10, 1.03],   # the groups found
              [2.00, 1.200, 1.00, 1.05]]   # a split
    # candidate 2 has the least worst regret but is 10% dearer under the groups found; 3 is 3% dearer
    assert hedged_pick(prices) == 1
    assert hedged_pick(prices, tolerance=0.05) == 3
    assert hedged_pick(prices, tolerance=0.0) == 0


def test_pick_keeps_the_searchs_order_for_a_regret_lower_by_less_than_the_tolerance():
    prices = [[1.00, 1.00],
              [1.015, 1.00]]
    assert hedged_pick(prices) == 0
    assert hedged_pick(prices, tolerance=0.01) == 1


def test_pick_leaves_out_what_is_not_allowed_and_moves_when_the_search_is_not_near():
    prices = [[1.00, 1.01, 0.90],
              [1.00, 1.50, 1.00]]
    assert hedged_pick(prices) == 2  # (the search's order is 11% above candidate 2: not near)
    assert hedged_pick(prices, allowed=[True, True, False]) == 0


@pytest.mark.parametrize("prices, kw, msg", [
    ([[1.0, 0.0]], {}, "> 0"),
    ([[1.0, np.nan]], {}, "finite"),
    ([1.0, 2.0], {}, "matrix"),
    ([[1.0, 2.0]], {"tolerance": -0.1}, "tolerance"),
    ([[1.0, 2.0]], {"allowed": [False, False]}, "allowed"),
    ([[1.0, 2.0]], {"allowed": [True]}, "allowed"),
])
def test_pick_refuses_bad_input(prices, kw, msg):
    with pytest.raises(ValueError, match=msg):
        hedged_pick(prices, **kw)


# ---- splits_in_two -----------------------------------------------------------------------------

def test_splits_cut_each_group_of_four_or_more_where_its_latencies_part():
    # group 0: hosts 0-3 = pairs {0,1} and {2,3} (10 us inside, 30 us across); group 1: hosts 4-5
    lat = np.full((6, 6), 100.0)
    for a, b in [(0, 1), (2, 3), (4, 5)]:
        lat[a, b] = lat[b, a] = 10.0
    for a in (0, 1):
        for b in (2, 3):
            lat[a, b] = lat[b, a] = 30.0
    lat[0, 2] = np.nan  # one direction missing: the other is read
    np.fill_diagonal(lat, 0.0)
    labels = np.array([0, 0, 0, 0, 1, 1])
    out = splits_in_two(lat, labels)
    assert len(out) == 1  # (the group of 2 is not split)
    assert out[0][0] == out[0][1] == 0 and out[0][2] == out[0][3] == 2
    assert (out[0][4:] == 1).all() and (labels == [0, 0, 0, 0, 1, 1]).all()  # (the input is left alone)
    assert splits_in_two(lat, labels, min_size=2)[1].tolist() == [0, 0, 0, 0, 1, 2]


def test_a_group_with_no_measured_pair_inside_is_not_split():
    lat = np.full((5, 5), np.nan)
    lat[3, 4] = 5.0
    assert splits_in_two(lat, np.array([0, 0, 0, 0, 1])) == []


# ---- plink order -------------------------------------------------------------------------------

def _worst_regret(probe, orders, labels):
    """Each order's worst ratio to the cheapest of ``orders`` over the groupings ``labels``."""
    prices = [[float(pricing_model(SharedCostModel("bintree", network(probe, Groups(lab, "test")), MIB4))(o))
               for o in orders] for lab in labels]
    return regrets(prices)


def test_order_hedges_a_latency_probe_and_reports_it(e24):
    """E seed 24's latency probe, the tree: the hedged order (measured 10% faster than the run's
    own latency-probe order, README) holds up better under the split groupings, costs no more
    than 2% under the groups found, and is never above the rack-contiguous or input order."""
    probe = from_dict(e24["probes"]["latency"])
    hedged = order_hosts(probe, "bintree", size=MIB4, max_iter=1000, n_random=20)
    plain = order_hosts(probe, "bintree", size=MIB4, max_iter=1000, n_random=20, hedge=False)
    h = hedged.solver["hedge"]
    assert "hedge" not in plain.solver
    assert h["groupings"] == 5 and h["changed"] and h["regret"] * 1.02 < h["regret_found"]
    assert hedged.order != plain.order
    assert hedged.cost_plink <= min(plain.cost_plink * 1.02, hedged.cost_contiguous, hedged.cost_input)
    assert any(n.startswith("hedged over 5 grouping(s)") for n in hedged.notes)
    assert not any("hedged" in n for n in plain.notes)
    # the claim, checked by pricing both orders under every grouping again
    found = find_groups(probe).labels
    worst = _worst_regret(probe, [np.array(hedged.order), np.array(plain.order)],
                          [found] + splits_in_two(probe.structure_latency, found))
    assert worst[0] < worst[1]
    again = order_hosts(probe, "bintree", size=MIB4, max_iter=1000, n_random=20)
    assert again.order == hedged.order  # (deterministic with max_iter)


@pytest.mark.parametrize("how", ["bandwidth", "labels", "pairsum"])
def test_no_hedge_when_the_groups_do_not_rest_on_latencies_alone(e24, how):
    """No split groupings once the bandwidths or given groups made the groups, or with the pair-sum
    model; and no joins on this probe either (no two of its groups read as one rack)."""
    probe = from_dict(e24["probes"]["bandwidth" if how == "bandwidth" else "latency"])
    kw = {"labels": find_groups(probe).labels} if how == "labels" else {}
    if how == "pairsum":
        kw["model"] = "pairsum"
    r = order_hosts(probe, "bintree" if how != "pairsum" else "hd", size=MIB4, max_iter=200, n_random=20, **kw)
    assert "hedge" not in r.solver


def test_hedge_with_bandwidth_ignored_is_on_again(e24):
    probe = from_dict(e24["probes"]["bandwidth"])
    r = order_hosts(probe, "ring", size=MIB4, max_iter=200, n_random=20, use_bandwidth=False)
    assert find_groups(probe, use_bandwidth=False).source == "inferred from latency"
    assert r.solver["hedge"]["groupings"] >= 1


def test_cli_no_hedge(e24, tmp_path):
    p = tmp_path / "lat.json"
    p.write_text(json.dumps(e24["probes"]["latency"]))
    runner = CliRunner()
    on = runner.invoke(cli, ["order", str(p), "--algo", "bintree", "--size", "4MiB", "--time-limit", "1", "--json"])
    off = runner.invoke(cli, ["order", str(p), "--algo", "bintree", "--size", "4MiB", "--time-limit", "1", "--json",
                              "--no-hedge"])
    assert on.exit_code == 0 and off.exit_code == 0, on.output + off.output
    assert json.loads(on.stdout)["solver"]["hedge"]["groupings"] == 5
    assert "hedge" not in json.loads(off.stdout)["solver"]
    assert "--no-hedge" in runner.invoke(cli, ["order", "--help"]).output


def test_hedge_time_shares(monkeypatch):
    """The searches of the hedge share ``--time-limit``: the found grouping's search half of it
    by default (``HEDGE_MAIN_SHARE``) and the splits the rest, or every search the same share;
    all of it without a split."""
    import plink.order as po
    assert po._hedge_times(3.0, 0) == (3.0, 0.0)
    assert po._hedge_times(3.0, 5) == pytest.approx((1.5, 0.3))
    monkeypatch.setattr(po, "HEDGE_MAIN_SHARE", None)
    assert po._hedge_times(3.0, 5) == pytest.approx((0.5, 0.5))
    assert po._hedge_times(3.0, 0) == (3.0, 0.0)


def test_hedge_keeps_the_largest_groups_splits(monkeypatch):
    """At most ``HEDGE_MAX_SPLITS`` split groupings, those of the largest groups, in their order."""
    import plink.order as po
    rng = np.random.default_rng(0)
    sizes = [4, 7, 5, 4, 6, 4, 8]
    found = np.repeat(np.arange(len(sizes)), sizes)
    n = len(found)
    lat = np.where(found[:, None] == found[None, :], 10.0, 100.0) + rng.uniform(0, 1, (n, n))
    probe = from_matrix(lat)
    groups = Groups(found, "inferred from latency")
    every = splits_in_two(probe.structure_latency, found)
    assert len(every) == len(sizes)
    monkeypatch.setattr(po, "HEDGE_MAX_SPLITS", 3)
    kept, kind = po._hedge_groupings(probe, groups, "shared", None, True)
    assert kind == "split"
    split_group = [int(found[np.flatnonzero(lab != found)[0]]) for lab in kept]
    assert split_group == [1, 4, 6]  # (sizes 7, 6 and 8, in the groups' order)
    monkeypatch.setattr(po, "HEDGE_MAX_SPLITS", 10)
    assert len(po._hedge_groupings(probe, groups, "shared", None, True)[0]) == len(sizes)


# ---- joins: the bandwidths cannot tell two groups from one rack ------------------------------------

SMALL_BW = Path(__file__).parent.parent / "benchmarks/results/2026-12-03-small-clusters-bw"


def _rack_bandwidth(racks, fast=()):
    """Pair bandwidths: 400 inside a rack, 200 across (a shared uplink), 400 for the pairs ``fast``."""
    racks = np.asarray(racks)
    bw = np.where(racks[:, None] == racks[None, :], 400.0, 200.0)
    for i, j in fast:
        bw[i, j] = bw[j, i] = 400.0
    np.fill_diagonal(bw, np.nan)
    return bw


def test_joins_of_two_are_groups_whose_every_pair_between_reads_as_a_racks():
    racks = [0, 0, 0, 0, 1, 1, 1]
    cut = np.array([0, 0, 1, 1, 2, 2, 2])  # the rack of 4 cut in two
    joins = joins_of_two(cut, inverse(_rack_bandwidth(racks)))
    assert [j.tolist() for j in joins] == [[0, 0, 0, 0, 1, 1, 1]]
    # two racks with a pair alone on its uplinks (the full rate) but the others slow: no join
    assert joins_of_two(np.array(racks), inverse(_rack_bandwidth(racks, fast=[(0, 4)]))) == []
    # fewer than 2 measured pairs between: no evidence
    bw = _rack_bandwidth(racks)
    bw[np.ix_([0, 1], [2, 3])] = np.nan
    bw[np.ix_([2, 3], [0, 1])] = np.nan
    bw[0, 2] = bw[2, 0] = 400.0
    assert joins_of_two(cut, inverse(bw)) == []
    # the largest joins first, at most max_joins
    racks = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    cut = np.array([0, 0, 1, 1, 2, 2, 2, 3, 3, 3])
    joins = joins_of_two(cut, inverse(_rack_bandwidth(racks)), max_joins=1)
    assert [j.tolist() for j in joins] == [[0, 0, 1, 1, 2, 2, 2, 2, 2, 2]]


def test_plink_order_hedges_over_a_rack_the_latency_cut_in_two():
    """benchmarks/results/2026-12-03-small-clusters-bw/2-3-4-udp-bw/p0.json: racks of 2, 3 and 4 whose
    latencies cut the rack of 4 into two pairs (4 groups), every pair between them read at the full
    rate. Under the 4 groups every ring entering each group once is priced alike; the hedge over the
    two pairs joined takes one that keeps the rack of 4 together: 3 rack crossings, where the search's
    own (--no-hedge) crosses 4 times, one rack's uplink carrying two ring flows each way."""
    import plink.order as po
    from plink.data.probefile import load_json

    probe = load_json(SMALL_BW / "2-3-4-udp-bw" / "p0.json")
    truth = json.loads((SMALL_BW / "2-3-4-udp-bw" / "truth.json").read_text())
    groups = find_groups(probe)
    assert groups.k == 4
    joins, kind = po._hedge_groupings(probe, groups, "shared", None, True)
    assert kind == "join" and len(joins) == 1

    def crossings(r):
        rack = [truth[probe.names[i]] for i in r.order] if isinstance(r.order[0], int) else [truth[h] for h in r.order]
        return sum(rack[i] != rack[(i + 1) % len(rack)] for i in range(len(rack)))

    hedged = order_hosts(probe, "ring", max_iter=2000)
    plain = order_hosts(probe, "ring", max_iter=2000, hedge=False)
    assert hedged.solver["hedge"]["changed"] and hedged.solver["hedge"]["picked"] == "search under join 1"
    assert crossings(hedged) == 3 and crossings(plain) == 4
    assert any("two groups joined" in n for n in hedged.notes)
    joined = sorted(h for h in probe.names if truth[h] == 2)  # (the rack of 4, the latency's two pairs)
    note = " ".join(next(n for n in hedged.notes if "two groups joined" in n).split())
    assert "its worst: join 1, hosts " in note and all(h in note for h in joined), note
    # priced the same as the exhaustive search's proven optimum (but the float sums' last digits): still proven
    assert plain.proven_optimal and hedged.proven_optimal
