"""BalancedGrouper, BalancedRandom, constrained assignment, group_hosts."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from plink.errors import InputError, OptionError, PlinkError
from plink.structure.group import (
    BalancedGrouper,
    BalancedRandom,
    constrained_assignment,
    default_groups,
    group_hosts,
    size_bounds,
)
from plink.structure.metrics import ami
from plink.data.simulate import simulate_datacenter


def blobs(k, per, d=3, spread=0.05, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(k, d))
    x = np.repeat(centers, per, axis=0) + spread * rng.normal(size=(k * per, d))
    truth = np.repeat(np.arange(k), per)
    perm = rng.permutation(k * per)
    return x[perm], truth[perm]


def test_default_groups_is_sqrt():
    assert [default_groups(n) for n in (1, 3, 16, 64, 100, 1000)] == [1, 2, 4, 8, 10, 32]


def test_size_bounds_endpoints():
    assert size_bounds(64, 8, 1.0) == (8, 8)
    assert size_bounds(70, 8, 1.0) == (8, 9)  # floor / ceil of N/k
    assert size_bounds(64, 8, 2.0) == (4, 16)  # >= sqrt(N)/2
    assert size_bounds(100, 10, 2.0) == (5, 20)
    assert size_bounds(64, 8, 1.5) == (5, 12)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 400), frac=st.floats(0.0, 1.0), e=st.floats(1.0, 2.0))
def test_size_bounds_always_feasible(n, frac, e):
    k = 1 + int(frac * (n - 1))
    lo, hi = size_bounds(n, k, e)
    assert 1 <= lo <= n / k <= hi <= n
    assert k * lo <= n <= k * hi
    if e == 1.0:
        assert (lo, hi) == (n // k, -(-n // k))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 40), kfrac=st.floats(0.0, 1.0), e=st.floats(1.0, 2.0), seed=st.integers(0, 10**6))
def test_balance_constraints_hold(n, kfrac, e, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)) * rng.uniform(0.1, 5, size=(n, 1))  # uneven density
    k = 1 + int(kfrac * (n - 1))
    g = BalancedGrouper(k, elasticity=e, n_init=2, random_state=seed).fit(x)
    lo, hi = size_bounds(n, k, e)
    assert g.sizes_.sum() == n and len(g.sizes_) == k
    assert g.sizes_.min() >= lo and g.sizes_.max() <= hi
    assert set(np.unique(g.labels_)) == set(range(k))


def test_assignment_is_exact_against_brute_force():
    """Exhaustive search over all assignments of 7 items to 3 groups."""
    import itertools

    rng = np.random.default_rng(4)
    for trial in range(5):
        cost = rng.uniform(size=(7, 3))
        lo, hi = 2, 3
        best = min(
            (sum(cost[i, a[i]] for i in range(7)), a)
            for a in itertools.product(range(3), repeat=7)
            if all(lo <= a.count(g) <= hi for g in range(3))
        )
        labels = constrained_assignment(cost, lo, hi)
        assert cost[np.arange(7), labels].sum() == pytest.approx(best[0])


def test_column_generation_matches_full_lp():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    c = rng.normal(size=(20, 2))
    cost = ((x[:, None] - c[None]) ** 2).sum(-1)
    full = constrained_assignment(cost, 12, 18, full_below=10**9)
    colgen = constrained_assignment(cost, 12, 18, full_below=0)
    pick = np.arange(300)
    assert cost[pick, colgen].sum() == pytest.approx(cost[pick, full].sum(), rel=1e-9)


def test_recovers_blobs_and_is_deterministic():
    x, truth = blobs(6, 6)
    a = BalancedGrouper(random_state=3).fit(x)
    assert a.n_groups_ == 6
    assert ami(truth, a.labels_) == pytest.approx(1.0)
    b = BalancedGrouper(random_state=3).fit(x)
    assert np.array_equal(a.labels_, b.labels_)
    assert a.labels_[0] == 0  # canonical numbering
    np.testing.assert_allclose(a.cluster_centers_[a.labels_[0]], x[a.labels_ == a.labels_[0]].mean(0))
    assert a.inertia_ == pytest.approx(((x - a.cluster_centers_[a.labels_]) ** 2).sum())


def test_elasticity_lets_uneven_clusters_stay_whole():
    # 3 tight clusters of 10, 10 and 5 hosts, k = 3: perfect balance (8/9 each) must move
    # hosts between clusters; with elasticity 2 (sizes 4..17) the natural clusters stay whole
    rng = np.random.default_rng(1)
    centers = np.array([[0, 0], [10, 0], [0, 10]], float)
    sizes = [10, 10, 5]
    x = np.concatenate([c + 0.1 * rng.normal(size=(s, 2)) for c, s in zip(centers, sizes)])
    truth = np.repeat([0, 1, 2], sizes)
    strict = BalancedGrouper(3, elasticity=1.0, random_state=0).fit(x)
    loose = BalancedGrouper(3, elasticity=2.0, random_state=0).fit(x)
    assert sorted(strict.sizes_) == [8, 8, 9]
    assert ami(truth, strict.labels_) < 0.9
    assert sorted(loose.sizes_) == [5, 10, 10]
    assert ami(truth, loose.labels_) == pytest.approx(1.0)
    assert loose.inertia_ < strict.inertia_ / 10


def test_prefers_least_size_diversity():
    x, _ = blobs(4, 8, seed=2)
    g = BalancedGrouper(4, elasticity=2.0, n_init=6, random_state=0).fit(x)
    assert g.sizes_.std() == 0  # balanced natural clusters: equal sizes win


def test_balanced_random():
    r = BalancedRandom(random_state=0).fit(np.zeros((50, 2)))
    assert r.n_groups_ == 7
    assert r.sizes_.max() - r.sizes_.min() <= 1
    assert not np.array_equal(r.labels_, BalancedRandom(random_state=1).fit(50).labels_)
    assert np.array_equal(r.labels_, BalancedRandom(random_state=0).fit(50).labels_)
    with pytest.raises(PlinkError, match="at most the number of hosts"):
        BalancedRandom(51).fit(50)


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(n_groups=20), "at most the number of hosts"),
        (dict(n_groups=0), "positive integer"),
        (dict(elasticity=0.9), "between 1.0 and 2.0"),
        (dict(elasticity=2.5), "between 1.0 and 2.0"),
        (dict(n_init=0), "n_init"),
    ],
)
def test_bad_grouper_params(kw, msg):
    with pytest.raises(PlinkError, match=msg):
        BalancedGrouper(**kw).fit(np.random.default_rng(0).normal(size=(10, 2)))


def test_nonfinite_coordinates():
    x = np.zeros((5, 2))
    x[1, 1] = np.nan
    with pytest.raises(PlinkError, match="finite"):
        BalancedGrouper(2).fit(x)


def test_group_hosts_recovers_racks_at_low_noise():
    probe = simulate_datacenter(racks=6, hosts_per_rack=6, jitter=0.05, seed=3)
    g = group_hosts(probe, seed=0, embed_kw=dict(max_iter=600, n_restarts=1), n_init=4)
    assert g.k == 6
    assert g.metrics["ami"] == pytest.approx(1.0)
    assert g.metrics["paia_embedded"] >= 0.99
    assert g.coordinates.shape == (36, 10)
    assert (g.heights >= 0).all()
    assert g.hosts == probe.names
    assert g.params["groups"] == 6


def test_group_hosts_bad_input():
    probe = simulate_datacenter(racks=2, hosts_per_rack=2, seed=0)
    with pytest.raises(PlinkError, match="at most the number of hosts"):
        group_hosts(probe, n_groups=5)
    with pytest.raises(PlinkError, match="elasticity"):
        group_hosts(probe, elasticity=2.1)
    tiny = simulate_datacenter(racks=1, hosts_per_rack=2, seed=0)
    with pytest.raises(PlinkError, match="at least 3"):
        group_hosts(tiny)


# ---------------------------------------------------------------------------
# CLI: plink group / plink show


def _without_notes(err):
    """stderr without the notes on how a plain matrix was read (default unit, row names)."""
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith("plink: note: "))


def _run(argv, capsys):
    from plink.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture(scope="module")
def dc_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("dc") / "dc.json"
    simulate_datacenter(racks=4, hosts_per_rack=4, jitter=0.05, seed=2).save(path)
    return path


def test_cli_group_writes_groups_and_show_reads_them(dc_file, tmp_path, capsys):
    import json

    from plink.data.groupfile import load_groups

    out_file = tmp_path / "groups.json"
    code, out, err = _run(["group", str(dc_file), "-o", str(out_file), "--seed", "1", "--json",
                           "--method", "balanced"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["metrics"]["ami"] == pytest.approx(1.0)
    assert report["params"]["alpha"] == 1.0 and report["params"]["groups"] == 4
    g = load_groups(out_file)
    assert g.k == 4 and sorted(g.sizes()) == [4, 4, 4, 4]
    assert g.coordinates.shape == (16, 10) and g.heights.shape == (16,)
    assert g.metrics["paia_embedded"] >= 0.99

    code, out, err = _run(["show", str(dc_file), "--groups", str(out_file), "--json"], capsys)
    assert code == 0, err
    s = json.loads(out)
    assert s["hosts"] == 16 and s["coverage"] == 1.0 and s["groups"] == 4
    assert s["median_latency_within_groups_us"] < s["median_latency_between_groups_us"]
    assert set(s["latency_us"]) == {"min", "p10", "p50", "p90", "max"}

    code, out, err = _run(["show", str(dc_file), "--no-structure"], capsys)
    assert code == 0 and "measured pairs" in out and "16 hosts" in out


def test_cli_group_balanced_on_one_rack_writes_null_paia(tmp_path, capsys):
    """One rack: no triplet is comparable, PAIA is undefined; it was NaN and the write an internal error."""
    import json

    path = tmp_path / "one.json"
    simulate_datacenter(racks=1, hosts_per_rack=5, seed=0).save(path)
    out_file = tmp_path / "g.json"
    code, out, err = _run(["group", str(path), "--method", "balanced", "-o", str(out_file)], capsys)
    assert code == 0, err
    m = json.loads(out_file.read_text())["metrics"]
    assert m["paia_raw"] is None and m["paia_embedded"] is None and "PAIA" not in out + err


def test_cli_plots(dc_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    heat, pic, grp = tmp_path / "heat.png", tmp_path / "groups.png", tmp_path / "g.json"
    code, _, err = _run(["group", str(dc_file), "--method", "balanced", "-o", str(grp), "--plot", str(pic), "--dims", "2",
                         "--alpha", "2", "--no-heights", "--groups", "2", "--elasticity", "1.5"], capsys)
    assert code == 0, err
    code, _, err = _run(["show", str(dc_file), "--groups", str(grp), "--plot", str(heat)], capsys)
    assert code == 0, err
    for f in (heat, pic):
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_picture_format_matplotlib_cannot_write_is_refused_first(dc_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    code, _, err = _run(["show", str(dc_file), "--plot", str(tmp_path / "h.xyz")], capsys)
    assert code == 2 and "--plot: cannot draw a .xyz picture (give one of: " in err and "png" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "h.xyz").exists()


def test_plot_without_matplotlib_is_one_line(dc_file, tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = _run(["show", str(dc_file), "--plot", str(tmp_path / "h.png")], capsys)
    assert code == 1
    assert err.strip() == "plink: error: plotting needs matplotlib: pip install matplotlib (or the checkout's extra: pip install '.[plot]')"
    assert not (tmp_path / "h.png").exists()


def _csv(tmp_path, m, name="m.csv"):
    path = tmp_path / name
    rows = [",".join("" if np.isnan(v) else f"{v:g}" for v in row) for row in m]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--groups", "40"], "at most the number of hosts"),
        (["--elasticity", "3"], "between 1.0 and 2.0"),
        (["--alpha", "0.5"], "alpha must be between 1 and 2"),
        (["--dims", "0"], "n_components"),
        (["--alpha", "nan"], "alpha must be between 1 and 2"),
    ],
)
def test_cli_group_bad_options(dc_file, tmp_path, capsys, args, msg):
    code, out, err = _run(["group", str(dc_file), "--method", "balanced", "-o", str(tmp_path / "g.json"), *args],
                          capsys)
    assert code == 2  # a value out of range: a usage error (it was 1)
    assert err.startswith("plink: error: ") and msg in err and err.count("\n") == 1
    assert not (tmp_path / "g.json").exists()


def test_cli_group_bad_matrices(tmp_path, capsys):
    two = _csv(tmp_path, np.array([[0, 1], [1, 0]], float), "two.csv")
    code, _, err = _run(["group", str(two), "--method", "balanced"], capsys)
    err = _without_notes(err)
    assert code == 1 and "at least 3" in err and err.count("\n") == 1

    n = 12
    sparse = np.full((n, n), np.nan)
    np.fill_diagonal(sparse, 0)
    for i in range(n):  # a ring with 2 neighbours each side: connected, 24 of 66 pairs measured
        for step in (1, 2):
            j = (i + step) % n
            sparse[i, j] = sparse[j, i] = 10.0 + step
    for method in ("balanced", "hierarchy"):
        code, _, err = _run(["group", str(_csv(tmp_path, sparse, "sparse.csv")), "--method", method], capsys)
        err = _without_notes(err)
        assert code == 1 and "mostly missing" in err and err.count("\n") == 1
    # plink show still summarises it, with the reason there is no structure as a note
    code, out, err = _run(["show", str(tmp_path / "sparse.csv"), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["structure_note"].startswith("no structure inferred: the matrix is mostly missing (36% of pairs measured)")
    code, out, err = _run(["show", str(tmp_path / "sparse.csv")], capsys)
    assert code == 0 and "plink: note: no structure inferred: the matrix is mostly missing" in err

    n = 8
    lonely = np.ones((n, n)) * 10
    np.fill_diagonal(lonely, 0)
    lonely[3, :] = lonely[:, 3] = np.nan
    lonely[3, 3] = 0
    for method in ("balanced", "hierarchy"):
        code, _, err = _run(["group", str(_csv(tmp_path, lonely, "lonely.csv")), "--method", method], capsys)
        err = _without_notes(err)
        assert code == 1 and "h3 has 0 measured pair" in err and err.count("\n") == 1


def test_cli_show_groups_for_other_hosts(dc_file, tmp_path, capsys):
    from plink.data.groupfile import Groups

    other = tmp_path / "other.json"
    Groups(hosts=["x", "y", "z"], labels=np.array([0, 0, 1])).save(other)
    code, _, err = _run(["show", str(dc_file), "--groups", str(other)], capsys)
    assert code == 1 and "lacks 16 host(s) of the probe file" in err


def test_each_level_is_scored_against_the_true_level_nearest_it(tmp_path):
    """With ground truth, the levels' AMI paired level i with the i-th true level from the racks up:
    a forced --groups 87 gives 87 / 13 / 12 groups, and its third level, the 12 racks exactly, was
    scored against the single cluster (0.000). Each level is scored against the true level nearest it in
    number of groups, and the line says which."""
    from plink.data.simulate import simulate_datacenter
    from plink.structure.hierarchy import infer_groups

    probe = simulate_datacenter(4, (5, 9), rows=3, tenant_us=1.0, noisy_hosts=0.05, outlier_frac=0.03,
                                missing_frac=0.03, seed=1)
    g = infer_groups(probe, n_groups=probe.n)
    counts = [int(lv.max()) + 1 for lv in g.levels]
    assert counts[0] == probe.n and counts[-1] == 12
    assert g.metrics["ami_levels_against"][-1] == "rack" and g.metrics["ami_levels"][-1] == pytest.approx(1.0)
    auto = infer_groups(probe)
    assert auto.metrics["ami_levels_against"] == ["rack", "row"][:len(auto.levels)]


def test_groups_k_uses_the_pair_bandwidths(tmp_path):
    """`--groups K` cut the latencies alone into K groups; on a probe whose racks only its pair
    bandwidths separate, the true K scored AMI 0.26 where the default scored 1.000. Now it finds
    the racks too, and says the bandwidths made the groups."""
    import os
    import subprocess
    import sys

    from plink.data.groupfile import load_groups
    from plink.data.simulate import simulate_datacenter
    from plink.structure.hierarchy import HierarchicalGrouper, infer_groups
    from plink.structure.metrics import ami

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = tmp_path / "b7.json"
    probe = simulate_datacenter(4, 6, row_us=21.0, bandwidth=True, seed=7)
    probe.save(path)
    truth = [t[-1] for t in probe.truth.labels]
    assert ami(truth, HierarchicalGrouper(4).fit(probe).labels_) < 0.5  # the latencies' cut alone
    env = dict(os.environ, PYTHONPATH=root)
    run = [sys.executable, "-m", "plink", "group", str(path)]
    forced = subprocess.run(run + ["--groups", "4", "-o", str(tmp_path / "g4.json")], capture_output=True,
                            text=True, env=env, timeout=120)
    auto = subprocess.run(run + ["-o", str(tmp_path / "g.json")], capture_output=True, text=True, env=env,
                          timeout=120)
    assert forced.returncode == auto.returncode == 0
    g4 = load_groups(tmp_path / "g4.json")
    assert g4.k == 4 and ami(truth, g4.aligned_to(probe.names)) == pytest.approx(1.0)
    said = "--groups K used the pair bandwidths"
    assert said in " ".join(forced.stdout.split() + forced.stderr.split())
    assert said not in auto.stdout + auto.stderr
    # K off the true one: parts the bandwidths keep apart are joined last
    for k, floor in ((3, 0.8), (5, 0.9)):
        g = infer_groups(probe, n_groups=k)
        assert g.k == k and g.metrics["bandwidth_used"] and g.metrics["ami"] > floor


def test_cut_with_bandwidth_joins_far_parts_last():
    """Parts the bandwidths measure far apart are joined only when no other pair is left; among the
    rest, the parts the latencies' cut puts together first."""
    from plink.structure.probegroups import cut_with_bandwidth

    racks = np.repeat(np.arange(3), 4)
    bw = np.where(racks[:, None] == racks[None, :], 10.0, 4.0)
    lat = np.full((12, 12), 50.0)  # the latency shows nothing
    np.fill_diagonal(lat, 0.0)
    cut = np.arange(12) % 3  # a latency cut that deals every rack out
    assert ami(racks, cut_with_bandwidth(racks, cut, lat, bw, 3)) == pytest.approx(1.0)
    assert ami(racks, cut_with_bandwidth(racks.copy(), cut, lat, bw, 2)) > 0.5  # two racks joined, not dealt
    two = cut_with_bandwidth(racks, cut, lat, bw, 2)
    assert len(set(map(tuple, [np.unique(two[racks == r]) for r in range(3)]))) == 2
    assert all(len(np.unique(two[racks == r])) == 1 for r in range(3))
    six = cut_with_bandwidth(racks, np.arange(12) % 6, lat, bw, 6)  # refined by the cut, each rack halved
    assert six.max() == 5 and all(len(np.unique(racks[six == g])) == 1 for g in range(6))
    # the bandwidths silent between two racks: the cut's pairing decides which parts join
    bw2 = bw.copy()
    bw2[np.ix_(racks == 0, racks == 1)] = bw2[np.ix_(racks == 1, racks == 0)] = 10.0
    cut2 = np.where(racks == 2, 1, 0)
    got = cut_with_bandwidth(np.repeat(np.arange(3), 4), cut2, lat, bw2, 2)
    assert ami(cut2, got) == pytest.approx(1.0)


def test_show_names_a_balanced_level_as_such(tmp_path):
    """A balanced groups file (sqrt(N) equal groups, what 2LHA uses) was labelled "finest (e.g. racks)"."""
    from click.testing import CliRunner

    from plink.cli import cli
    from plink.data.simulate import simulate_datacenter

    path = tmp_path / "p.json"
    simulate_datacenter(4, 4, seed=1).save(path)
    r = CliRunner()
    for method, label in (("balanced", "balanced (k-means)"), ("hierarchy", "finest (e.g. racks)")):
        g = tmp_path / f"{method}.json"
        assert r.invoke(cli, ["group", str(path), "--method", method, "-o", str(g)]).exit_code == 0
        assert json.loads(g.read_text())["params"]["method"] == method
        out = r.invoke(cli, ["show", str(path), "--groups", str(g)], env={"COLUMNS": "200"})
        assert out.exit_code == 0 and label in out.output


def test_groups_file_written_by_hand_and_groups_that_disagree_with_labels(tmp_path):
    """A groups file's 'groups' (its members, written for people) contradicting its 'labels' was read
    with the labels winning, without a word: a hand edit of the readable list did nothing. Now they
    must agree, and a file may give 'groups' alone."""
    from plink.data.groupfile import Groups, load_groups
    from plink.errors import ProbeFileError

    hand = tmp_path / "hand.json"
    hand.write_text(json.dumps({"format": "plink-groups", "version": 1, "groups": [["a", "c"], ["b", "d"]]}))
    g = load_groups(hand)
    assert g.hosts == ["a", "c", "b", "d"] and g.labels.tolist() == [0, 0, 1, 1]
    hand.write_text(json.dumps({"format": "plink-groups", "version": 1, "hosts": ["a", "b", "c", "d"],
                                "groups": [["a", "c"], ["b", "d"]]}))
    assert load_groups(hand).aligned_to(["a", "b", "c", "d"]).tolist() == [0, 1, 0, 1]
    saved = tmp_path / "g.json"
    Groups(hosts=["a", "b", "c", "d"], labels=np.array([0, 1, 0, 1])).save(saved)
    assert load_groups(saved).labels.tolist() == [0, 1, 0, 1]  # plink group's own files: both, agreeing
    doc = json.loads(saved.read_text())
    for groups, msg in (([["a", "b"], ["c", "d"]], "'groups' and 'labels' disagree"),
                        ([["a", "c"], ["b", "d", "a"]], "host 'a' is in two groups"),
                        ([["a", "c"], ["b"]], "name different hosts"),
                        ([["a", "c"], []], "non-empty lists")):
        saved.write_text(json.dumps({**doc, "groups": groups}))
        with pytest.raises(ProbeFileError, match=msg):
            load_groups(saved)
    hand.write_text(json.dumps({"format": "plink-groups", "version": 1, "hosts": ["a", "b", "e"],
                                "groups": [["a"], ["b"]]}))
    with pytest.raises(ProbeFileError, match="host 'e' is in no group"):
        load_groups(hand)


def test_group_refuses_json_with_an_explicit_dash(tmp_path):
    """`plink group P -o - --json` ignored --json (the groups file on stdout), where order refuses the pair."""
    from click.testing import CliRunner

    from plink.cli import cli
    from plink.data.simulate import simulate_datacenter

    path = tmp_path / "p.json"
    simulate_datacenter(2, 3, seed=0).save(path)
    r = CliRunner().invoke(cli, ["group", str(path), "-o", "-", "--json"])
    assert r.exit_code == 2 and "--json prints the metrics on stdout" in r.output
    r = CliRunner().invoke(cli, ["group", str(path), "--json"])  # no -o: the groups file, metrics in it
    assert r.exit_code == 0 and json.loads(r.stdout)["format"] == "plink-groups"


def test_a_groups_file_with_labels_but_no_hosts_says_what_is_missing(tmp_path):
    from plink.data.groupfile import load_groups
    from plink.errors import ProbeFileError

    f = tmp_path / "g.json"
    f.write_text('{"format": "plink-groups", "version": 1, "labels": [0, 0, 1]}')
    with pytest.raises(ProbeFileError, match="'labels' needs 'hosts', the host names in the same order"):
        load_groups(f)


def test_the_estimators_share_set_params_and_a_repr_of_their_parameters():
    from plink.errors import PlinkError
    from plink.structure.embed import ProbeEmbed
    from plink.structure.group import BalancedGrouper, BalancedRandom
    from plink.structure.hierarchy import HierarchicalGrouper

    assert repr(HierarchicalGrouper(3, random_state=1)) == "HierarchicalGrouper(n_groups=3, max_levels=3, random_state=1)"
    assert repr(BalancedRandom(2)) == "BalancedRandom(n_groups=2, random_state=None)"
    for est in (HierarchicalGrouper(), BalancedGrouper(), BalancedRandom(), ProbeEmbed()):
        assert repr(est).startswith(type(est).__name__ + "(") and eval(repr(est)).get_params() == est.get_params()
        with pytest.raises(PlinkError, match=f"{type(est).__name__} has no parameter 'nope'"):
            est.set_params(nope=1)


def test_a_groups_file_matches_host_names_whatever_their_case(tmp_path):
    """Probe and order files take names differing only in case as one host (and refuse two such names),
    but a groups file naming 'H0' for the probe's 'h0' was refused ("lacks ... 'h0'") by plink order,
    schedule and show (an outside-in check)."""
    import os
    import subprocess
    import sys

    from plink.data.groupfile import Groups

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    g = Groups(["H0", "h1", "H2", "h3"], np.array([0, 0, 1, 1]))
    assert g.aligned_to(["h0", "h1", "h2", "h3"]).tolist() == [0, 0, 1, 1]
    assert g.aligned_to(["h3", "h2", "h1", "h0"], extra_ok=True).tolist() == [1, 1, 0, 0]
    with pytest.raises(Exception, match="missing"):
        g.aligned_to(["h0", "h1", "h2", "h4"])
    m = tmp_path / "u4.csv"
    m.write_text("0,10,90,90\n10,0,90,90\n90,90,0,10\n90,90,10,0\n")
    gf = tmp_path / "g.json"
    gf.write_text('{"format": "plink-groups", "version": 1, "groups": [["H0", "h1"], ["H2", "h3"]]}')
    env = dict(os.environ, PYTHONPATH=root)
    for argv in (["order", str(m), "--groups", str(gf), "-o", str(tmp_path / "o.txt")],
                 ["schedule", str(m), "--groups", str(gf), "--size", "1MiB", "-o", str(tmp_path / "s.json")],
                 ["show", str(m), "--groups", str(gf), "--plot", str(tmp_path / "p.png")]):
        proc = subprocess.run([sys.executable, "-m", "plink", *argv, "--unit", "us"], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 0, (argv[0], proc.stderr)
        assert "not in the probe" not in proc.stderr  # (no 'left out' note for H0 and H2 either)


def test_a_groups_file_naming_one_host_twice_in_two_cases_is_refused(tmp_path):
    """Names differing only in case are one host to aligned_to, so a groups file with 'H0' in one group and
    'h0' in another was read silently and one of the two labels won (an outside-in check)."""
    from plink.data.groupfile import Groups, load_groups
    from plink.errors import ProbeFileError

    with pytest.raises(ProbeFileError, match=r"host 'h0' appears twice \(as 'H0': names differing only in case"):
        Groups(["H0", "h1", "h0"], np.array([0, 0, 1]))
    gf = tmp_path / "g.json"
    gf.write_text('{"format": "plink-groups", "version": 1, "groups": [["H0", "h1"], ["h0", "h3"]]}')
    with pytest.raises(ProbeFileError, match="g.json: groups: host 'h0' appears twice"):
        load_groups(gf)


def test_plink_show_takes_a_rack_map_of_the_whole_site(tmp_path):
    """plink order, schedule and emit take a groups file naming more hosts than the probe (they are
    left out, with a note); plink show refused it ('groups do not cover the same hosts')."""
    import json

    from click.testing import CliRunner

    from plink.cli import cli
    from plink.data.groupfile import Groups

    g = Groups(["a", "B", "c", "d", "e"], np.array([0, 1, 0, 2, 1]), levels=[np.array([0, 1, 0, 2, 1]),
               np.array([0, 1, 0, 1, 1])], confidence=np.array([0.5, 1.0, 0.25, 1.0, 0.75]),
               metrics={"low_confidence_hosts": ["a", "d"], "ami": 0.85, "silhouette": 0.4})
    sub = g.restricted_to(["c", "b", "a"])
    assert sub.hosts == ["c", "b", "a"] and sub.labels.tolist() == [0, 1, 0]
    assert [lv.tolist() for lv in sub.levels] == [[0, 1, 0], [0, 1, 0]]
    assert sub.confidence.tolist() == [0.25, 1.0, 0.5]
    # the whole site's AMI is no figure of part of it (plink show printed it as the probe's)
    assert sub.metrics == {"low_confidence_hosts": ["a"]}
    assert g.restricted_to(["e", "d", "c", "b", "a"]).metrics == g.metrics  # every host: all of them hold
    m = tmp_path / "m.csv"
    m.write_text(",a,b,c\na,0,90,10\nb,90,0,90\nc,10,90,0\n")
    gf = tmp_path / "g.json"
    g.save(gf)
    res = CliRunner().invoke(cli, ["show", str(m), "--unit", "us", "--groups", str(gf), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["groups"] == 2 and sorted(map(sorted, out["members"])) == [["a", "c"], ["b"]]  # (the probe's names)
    assert "names 2 host(s) not in the probe ('d', 'e'): left out of the groups" in res.stderr
    assert "ami" not in out
    res = CliRunner().invoke(cli, ["show", str(m), "--unit", "us", "--groups", str(gf), "--plot", str(tmp_path / "p.png")])
    assert res.exit_code == 0, res.output
    bad = tmp_path / "bad.csv"  # a probe host the groups lack is still an error
    bad.write_text(",a,b,z\na,0,90,10\nb,90,0,90\nz,10,90,0\n")
    res = CliRunner().invoke(cli, ["show", str(bad), "--unit", "us", "--groups", str(gf)])
    assert res.exit_code != 0 and str(res.exception) == f"groups file {gf} lacks 1 host(s) of the probe file, e.g. 'z'"
    res = CliRunner().invoke(cli, ["schedule", str(bad), "--unit", "us", "--groups", str(gf), "--size", "1MiB",
                                   "-o", str(tmp_path / "s.json")])
    assert res.exit_code != 0 and str(res.exception) == f"groups file {gf} lacks 1 host(s) of the probe file, e.g. 'z'"


# -- the library API: numpy numbers, complex input, what BalancedRandom takes ----------------------


def test_a_numpy_elasticity_of_any_width_is_a_number():
    x, _ = blobs(3, 6, seed=1)
    want = BalancedGrouper(3, elasticity=1.5, random_state=0).fit_predict(x)
    for e in (np.float32(1.5), np.float16(1.5)):  # was 'must be between 1.0 and 2.0'
        assert np.array_equal(BalancedGrouper(3, elasticity=e, random_state=0).fit_predict(x), want)
    assert np.array_equal(BalancedGrouper(3, tol=np.float32(1e-4), random_state=0).fit_predict(x),
                          BalancedGrouper(3, random_state=0).fit_predict(x))
    with pytest.raises(OptionError, match=r"^balance elasticity must be between 1.0 and 2.0, got True$"):
        BalancedGrouper(3, elasticity=True).fit(x)  # (a bool is not 1.0)
    with pytest.raises(OptionError, match=r"^tol must be a number in \[0, 1\), got np.False_$"):
        BalancedGrouper(3, tol=np.bool_(False)).fit(x)


@pytest.mark.filterwarnings("error")  # (numpy's ComplexWarning was all a user got)
def test_complex_coordinates_are_refused_as_hierarchical_grouper_refuses_a_complex_matrix():
    x, _ = blobs(3, 4)
    with pytest.raises(InputError, match=r"^coordinates must be real numbers, got complex ones$"):
        BalancedGrouper(3).fit_predict(x + 1j)


def test_balanced_random_takes_what_the_other_estimators_take():
    probe = simulate_datacenter(racks=2, hosts_per_rack=4, seed=1)  # was "object of type 'ProbeData' has no len()"
    want = BalancedRandom(random_state=0).fit_predict(8)
    for x in (probe, probe.latency, np.zeros((8, 3)), np.int64(8), list(range(8))):
        assert np.array_equal(BalancedRandom(random_state=0).fit_predict(x), want), type(x)


@pytest.mark.parametrize("x", [2.5, None, "abcd", np.array(3), {"a": 1, "b": 2}, True])
def test_balanced_random_refuses_what_is_not_hosts_in_one_line(x):
    with pytest.raises(InputError) as exc:
        BalancedRandom().fit(x)
    assert str(exc.value) == ("expected a ProbeData, an (N, N) matrix, (N, D) coordinates or a number of hosts, "
                              f"got {type(x).__name__}")


def test_the_estimators_methods_and_citations_are_documented():
    import plink.structure.group as group

    for method in (BalancedGrouper.fit_predict, BalancedGrouper.get_params, BalancedRandom.fit,
                   BalancedRandom.fit_predict, BalancedRandom.get_params):
        assert method.__doc__, method
    for cited in ("Arthur & Vassilvitskii 2007", "Bradley, Bennett & Demiriz 2000"):
        assert f"[{cited}] " in group.__doc__  # the reference that the class docstring cites
