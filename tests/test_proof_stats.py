"""The proof benchmark's statistics (benchmarks/collectives_netns.py): held-out ratios and the
measurement's split-half reliability, on synthetic runs whose truth is known."""

import numpy as np
import pytest

from benchmarks.collectives_netns import (_splits, contenders, held_out, partly_sorted, rack_contiguous, reliability,
                                          runoff_figures)


def _orders(runs: dict[str, list[float]]) -> dict:
    return {n: {"runs": {"c": r}} for n, r in runs.items()}


def test_splits_are_balanced_and_each_once():
    s = list(_splits(6))
    assert len(s) == 10  # C(6, 3) / 2
    assert all(sorted(a + b) == list(range(6)) and len(a) == 3 for a, b in s)
    assert len({tuple(a) for a, _ in s} | {tuple(b) for _, b in s}) == 20
    assert len(list(_splits(5))) == 10  # odd: C(5, 2), halves of 2 and 3


def test_held_out_removes_the_winners_curse():
    # 15 orders with the same true time and 5% noise: the in-sample minimum is biased low, so an
    # order's in-sample ratio to it is biased high; held out, the ratio is about 1.
    rng = np.random.default_rng(3)
    runs = {f"o{i}": (1.0 + 0.05 * rng.standard_normal(6)).tolist() for i in range(15)}
    orders, names = _orders(runs), list(runs)
    best = min(np.median(r) for r in runs.values())
    in_sample = np.mean([np.median(runs[n]) / best for n in names])
    held = np.mean([held_out(orders, names, "c", n) for n in names])
    assert in_sample > 1.03
    assert abs(held - 1.0) < 0.015
    # the chosen best re-measures above the held-out half's minimum: the size of the bias
    assert held_out(orders, names, "c", None) > 1.02


def test_held_out_keeps_a_real_difference():
    rng = np.random.default_rng(4)
    runs = {"fast": (1.0 + 0.01 * rng.standard_normal(6)).tolist(),
            "slow": (1.2 + 0.01 * rng.standard_normal(6)).tolist()}
    orders = _orders(runs)
    assert held_out(orders, ["fast", "slow"], "c", "slow") == pytest.approx(1.2, rel=0.03)
    assert held_out(orders, ["fast", "slow"], "c", "fast") == pytest.approx(1.0, rel=0.01)
    assert held_out(orders, ["fast", "slow"], "c", None) == pytest.approx(1.0, rel=0.01)
    assert held_out(_orders({"a": [1.0, 2.0], "b": [1.0, 2.0]}), ["a", "b"], "c", "a") is None  # < 4 runs


def test_reliability_separates_signal_from_noise():
    rng = np.random.default_rng(5)
    truth = np.linspace(1.0, 2.0, 12)
    clean = {f"o{i}": (t + 0.001 * rng.standard_normal(6)).tolist() for i, t in enumerate(truth)}
    noise = {f"o{i}": (1.0 + 0.05 * rng.standard_normal(6)).tolist() for i in range(12)}
    assert reliability(_orders(clean), list(clean), "c") > 0.99
    assert abs(reliability(_orders(noise), list(noise), "c")) < 0.5
    assert reliability(_orders({"a": [1.0], "b": [2.0]}), ["a", "b"], "c") is None


def test_partly_sorted_swaps_hosts_across_racks():
    racks = [0, 1, 0, 1, 2, 2, 0, 1]
    base = rack_contiguous(racks)
    rng = np.random.default_rng(0)
    for k in (1, 2, 4):
        o = partly_sorted(racks, k, rng)
        assert sorted(o) == list(range(len(racks)))
        moved = [i for i in range(len(o)) if o[i] != base[i]]
        assert 2 <= len(moved) <= 2 * k
        assert any(racks[o[i]] != racks[base[i]] for i in moved)


def test_halves_are_whole_passes():
    # 2 passes of 3 runs: one split, pass against pass
    assert list(_splits(6, passes=2)) == [([0, 1, 2], [3, 4, 5])]
    assert all(sorted(a + b) == list(range(8)) and len(a) == 4 for a, b in _splits(8, passes=4))
    assert len(list(_splits(8, passes=4))) == 3
    # load that shifts one pass's runs together is not counted as the orders' own difference:
    # pass 1 has a per-order offset (the load of the moment), pass 2 none; no order is slower
    within, across = [], []
    for seed in range(6, 12):
        rng = np.random.default_rng(seed)
        shift = {f"o{i}": rng.normal(0, 0.05) for i in range(60)}
        runs = {n: [1.0 + s + 0.002 * rng.standard_normal() for _ in range(3)]
                + [1.0 + 0.002 * rng.standard_normal() for _ in range(3)] for n, s in shift.items()}
        within.append(reliability(_orders(runs), list(runs), "c"))
        across.append(reliability(_orders(runs), list(runs), "c", passes=2))
    assert np.mean(within) > 0.4  # splitting inside the passes: the load looks like the orders'
    assert abs(np.mean(across)) < 0.25


def test_within_ties():
    from benchmarks.collectives_netns import within_ties
    rng = np.random.default_rng(7)
    truth = np.array([1.0, 1.1, 1.2, 1.3, 1.4, 1.5])
    # the model ties all six; the measurement ranks them the same in both passes -> 1.0
    runs = {f"o{i}": [t + 0.001 * rng.standard_normal() for _ in range(6)] for i, t in enumerate(truth)}
    rho, n = within_ties(_orders(runs), list(runs), "c", np.ones(6), passes=2)
    assert n == 6 and rho == pytest.approx(1.0)
    assert within_ties(_orders(runs), list(runs), "c", truth, passes=2) is None  # no tied class
    assert within_ties(_orders(runs), list(runs), "c", np.ones(6), passes=1) is None


def test_gap_agreement_and_its_table():
    from benchmarks.collectives_netns import agreement_table, gap_agreement

    pred = np.array([1.0, 1.001, 2.0, 4.0])
    meas = np.array([1.0, 0.9, 2.5, 3.0])
    gap, agree = gap_agreement(pred, meas)
    # pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    np.testing.assert_allclose(gap, [0.001, 1.0, 3.0, 0.998, 2.996, 1.0], rtol=1e-3)
    assert agree.tolist() == [False, True, True, True, True, True]
    text = agreement_table([(gap, agree)])
    rows = {ln.split("  ")[1].strip(): ln.split()[-3:] for ln in text.splitlines()[1:]}
    assert rows["0.0% - 0.5%"] == ["1", "pairs", "0.00"]
    assert rows["2.0% - 5.0%"] == ["0", "pairs", "-"]
    assert rows[">= 10.0%"] == ["5", "pairs", "1.00"]


def _doc(truth: dict[str, float], noise: float, passes: int, runoff: int, seed: int, repeats: int = 3) -> dict:
    """A saved case of collective ``mpi_ring`` whose orders' true times are ``truth`` (orders with
    the same name prefix before ``=`` are one order measured under two names), ``passes`` first
    passes and ``runoff`` runoff passes of ``repeats`` runs, lognormal noise."""
    rng = np.random.default_rng(seed)
    doc = {"repeats": repeats, "models": ["default"], "orders": {}, "collectives": {"mpi_ring": {}}}
    for i, (n, t) in enumerate(truth.items()):
        same = [m for m in doc["orders"] if m.split("=")[0] == n.split("=")[0]]
        if same:
            doc["orders"][n] = doc["orders"][same[0]]
            continue
        runs = (t * np.exp(noise * rng.standard_normal(passes * repeats))).tolist()
        doc["orders"][n] = {"order": [i], "runs": {"mpi_ring": runs}, "measured": {"mpi_ring": float(np.median(runs))}}
    cont = contenders(doc, "mpi_ring", 1.15)
    for n in cont:
        doc["orders"][n]["runoff"] = {"mpi_ring": (truth[n] * np.exp(noise * rng.standard_normal(runoff * repeats))).tolist()}
    doc["runoff"] = {"passes": runoff, "within": 1.15, "contenders": {"mpi_ring": cont},
                     "sessions": [{"passes": runoff, "cluster": "test"}]}
    return doc


def test_contenders_are_plinks_orders_and_the_near_best_once_each():
    doc = _doc({"a": 1.0, "plink-ring-lat": 1.6, "b": 1.1, "b=copy": 1.1, "slow": 2.0, "plink-ring-bw": 1.05},
               noise=0.001, passes=2, runoff=0, seed=1)
    got = contenders(doc, "mpi_ring", 1.15)
    assert set(got) == {"a", "b", "plink-ring-bw", "plink-ring-lat"} or set(got) == {"a", "b=copy", "plink-ring-bw",
                                                                                     "plink-ring-lat"}
    assert got[0] == "a" and "slow" not in got  # fastest first; an order far from the best is left out


def test_runoff_tells_a_real_gap_from_ties():
    # 6 orders tied, plink's among them, and plink's --bandwidth order 12% slower; 10% noise per run:
    # two passes cannot tell; with 6 more passes the runoff finds the tie and the gap
    truth = {f"tie{i}": 1.0 for i in range(5)} | {"plink-ring-lat": 1.0, "plink-ring-bw": 1.12, "far": 2.0}
    lat, bw = [], []
    for seed in range(8):
        f = runoff_figures(_doc(truth, 0.10, 2, 6, seed), "mpi_ring", list(truth),
                           {"plink_lat_default": "plink-ring-lat", "plink_bw_default": "plink-ring-bw"}, 2)
        doc_cont = _doc(truth, 0.10, 2, 6, seed)["runoff"]["contenders"]["mpi_ring"]
        assert "far" not in doc_cont and {"plink-ring-lat", "plink-ring-bw"} <= set(doc_cont)
        assert f["runoff_orders"] == len(doc_cont) >= 4
        lo, hi = f["plink_lat_default_runoff_spread"]
        assert 0.8 < lo <= hi < 1.2  # the splits' 10th-90th percentile (the mean may lie outside it)
        lat.append(f["plink_lat_default_runoff"])
        bw.append(f["plink_bw_default_runoff"])
    assert abs(np.mean(lat) - 1.0) < 0.03
    assert abs(np.mean(bw) - 1.12) < 0.04
    assert runoff_figures({**_doc(truth, 0.1, 2, 6, 0), "runoff": None}, "mpi_ring", list(truth), {}, 2) == {}


def test_an_interrupted_runoff_keeps_its_runs_apart(monkeypatch):
    """A runoff stopped mid-way (Ctrl-C, a failed mpirun) leaves the saved file as it was, its runs
    kept in the session but not counted; a complete one adds whole passes to every name of an order."""
    import types

    import benchmarks.collectives_netns as cn

    truth = {"a": 1.0, "a=copy": 1.0, "plink-ring-lat": 1.02, "far": 2.0}
    doc = _doc(truth, 0.01, 2, 0, seed=2)
    for o in doc["orders"].values():
        o.pop("runoff", None)
    doc.pop("runoff")
    doc |= {"hosts": ["h0", "h1", "h2", "h3"], "probes": {"latency": {}}, "size_bytes": 1, "mpi_size_bytes": 1}
    doc["collectives"] = {"mpi_ring": {}}
    monkeypatch.setattr(cn, "from_dict", lambda d: types.SimpleNamespace(hosts=[types.SimpleNamespace(name=f"h{i}")
                                                                              for i in range(4)]))
    monkeypatch.setattr(cn, "order_files", lambda c, tmp, name, hosts: {"openmpi": name, "hosts": [h.name for h in hosts]})
    calls, fail = [], True

    def fake_mpi(c, exe, hostfile, want, size, repeats, mca=(), specs=None):
        calls.append(hostfile)
        if len(calls) == 3 and fail:
            raise RuntimeError("mpirun failed")
        return {"4": [1.0] * repeats}

    monkeypatch.setattr(cn, "run_mpi", fake_mpi)
    saves = []
    with pytest.raises(RuntimeError):
        cn.run_runoff(None, doc, None, "exe", 2, 1.15, lambda: saves.append(1))
    assert saves and not any("runoff" in o for o in doc["orders"].values())
    assert doc["runoff"]["passes"] == 0 and not doc["runoff"]["sessions"][0]["complete"]
    assert doc["runoff"]["sessions"][0]["runs"]  # what was measured is kept, apart
    assert cn.runoff_figures(doc, "mpi_ring", list(doc["orders"]), {}, 2) == {}
    fail = False
    cn.run_runoff(None, doc, None, "exe", 2, 1.15, lambda: None)
    assert doc["runoff"]["passes"] == 2 and doc["runoff"]["sessions"][1]["complete"]
    assert "runs" not in doc["runoff"]["sessions"][1]
    assert doc["orders"]["a"]["runoff"]["mpi_ring"] == [1.0] * 6 == doc["orders"]["a=copy"]["runoff"]["mpi_ring"]
    assert "runoff" not in doc["orders"]["far"]


def test_tie_ceiling_is_the_best_spearman_tied_classes_allow():
    from scipy.stats import spearmanr

    from benchmarks.collectives_netns import tie_ceiling
    from plink.solvers.resolution import ranks

    rng = np.random.default_rng(3)
    # classes of 8, 2 and 9 orders about 4x apart, each within 0.5% (the README's Gloo ring classes)
    pred = np.concatenate([0.75 * (1 + 0.005 * rng.random(8)), 2.25 * (1 + 0.005 * rng.random(2)),
                           3.0 * (1 + 0.005 * rng.random(9))])
    top = tie_ceiling(pred, 0.02)
    assert round(top, 3) == 0.906
    for _ in range(200):  # no measurement scores above it; one with every class in its block reaches it
        meas = rng.permutation(len(pred)).astype(float)
        assert spearmanr(ranks(pred, 0.02), meas)[0] <= top + 1e-12
    blocks = np.concatenate([rng.permutation(8), 8 + rng.permutation(2), 10 + rng.permutation(9)]).astype(float)
    assert spearmanr(ranks(pred, 0.02), blocks)[0] == pytest.approx(top)
    assert tie_ceiling(np.array([1.0, 2.0, 3.0, 4.0]), 0.02) == pytest.approx(1.0)
    assert round(tie_ceiling(pred[2:], 0.02), 3) == 0.899  # 6, 2 and 9: case C's rings without put


def test_pass_ratios_pair_the_orders_pass_by_pass_with_the_runoff():
    from benchmarks.collectives_netns import pass_ratios

    doc = {"repeats": 2, "runoff": {"passes": 1}, "orders": {
        "a": {"runs": {"c": [2.0, 2.2, 3.0, 3.0]}, "runoff": {"c": [1.1, 1.1]}},
        "b": {"runs": {"c": [1.0, 1.2, 2.0, 4.0]}, "runoff": {"c": [1.0, 1.2]}},
        "short": {"runs": {"c": [1.0, 1.0, 1.0]}},
    }}
    assert pass_ratios(doc, "c", "a", "b", 2) == pytest.approx([2.1 / 1.1, 1.0, 1.0])
    doc["orders"]["b"].pop("runoff")  # b not in the runoff: the first passes only
    assert pass_ratios(doc, "c", "a", "b", 2) == pytest.approx([2.1 / 1.1, 1.0])
    assert pass_ratios(doc, "c", "a", "short", 2) == []  # runs that do not split into the passes


def test_pair_bandwidth_benchmark_scaling_subset_and_table(tmp_path):
    """benchmarks/pair_bandwidth_netns.py off the cluster: the matrix scaled to its fastest pair, a
    subset drawn reproducibly, and the table of a saved run priced by both models."""
    import benchmarks.pair_bandwidth_netns as pb

    bw, names = pb.scaled_matrix(pb.MATRIX, "Gbit/s", 400.0)
    assert bw.shape == (16, 16) and np.nanmax(bw) == pytest.approx(400.0) and np.isnan(np.diag(bw)).all()
    pick = pb.subset(16, 6, 1)
    assert pick == pb.subset(16, 6, 1) and pick == sorted(set(pick)) and len(pick) == 6
    sub, sub_names = pb.scaled_matrix(pb.MATRIX, "Gbit/s", 100.0, pick)
    assert sub_names == [names[i] for i in pick] and np.nanmax(sub) == pytest.approx(100.0)
    ratio = sub / (bw[np.ix_(pick, pick)])  # the same pairs, one scale
    assert np.nanstd(ratio) < 1e-9
    fast = [0, 1, 2, 3, 4, 5]  # every pair at 100 Mbit/s but one slow pair: orders that use it are slower
    m = np.full((6, 6), 100.0)
    m[0, 1] = m[1, 0] = 1.0
    np.fill_diagonal(m, np.nan)
    doc = {"matrix": "m.csv", "max_mbit": 100.0, "names": [f"h{i}" for i in range(6)], "size_bytes": 2**20,
           "repeats": 1, "passes": 1, "bandwidth_mbit": m.tolist(),
           "orders": {"plink ring (shared)": [0, 2, 1, 3, 4, 5], "input order": fast,
                      "random 0": [1, 0, 2, 3, 4, 5], "random 1": [2, 3, 0, 1, 4, 5]},
           "runs": {"plink ring (shared)": {"4": [0.2]}, "input order": {"4": [1.0]},
                    "random 0": {"4": [1.1]}, "random 1": {"4": [1.2]}}}
    pred = pb.predictions(doc)
    ring = pred["4"]["shared"]
    assert ring["plink ring (shared)"] < ring["input order"] and ring["plink ring (shared)"] < ring["random 1"]
    text = pb.render(doc)
    assert "## Open MPI ring (coll_tuned 4)" in text and "recursive doubling" not in text
    # both models price the three orders over the slow pair alike (tied) and plink's lowest
    assert "Spearman(predicted, measured) over 4 orders: shared 0.77, non-blocking 0.77, pair sum 0.77" in text
    assert "plink ring (shared): 1.00x the best measured; measured 5.75x faster than the median random order" in text


def test_uplink_bytes_tally_on_a_shipped_run(capsys):
    """benchmarks/uplink_bytes_tally.py on case A seed 11: plink's tree orders differ in bytes over the
    racks' uplinks (latency probe's 40 MiB: 5 of the 15 edges cross racks, 8 MiB each; --bandwidth's 72 MiB:
    9), the others not; a file that is not a proof run is a usage error."""
    from pathlib import Path

    from benchmarks.uplink_bytes_tally import main

    run = Path(__file__).parent.parent / "benchmarks/results/2026-11-29-A-seed11/A.json"
    assert main([str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[1].startswith("2026-11-29-A-seed11/A | mpi_tree | 40 / 72 | ")
    assert out[1].endswith("faster by 2.6%") and out[2].startswith("fewer bytes over the uplinks faster in 1 of 1")
    with pytest.raises(SystemExit) as e:
        main([str(Path(__file__))])
    assert e.value.code == 2


def test_price_models_on_a_shipped_run(capsys):
    """benchmarks/price_models.py on case D seed 20 (a run the fluid price was not designed on): the
    search's clocks ranked recursive doubling's measured orders 0.888 and the tree's 0.872 (both probes,
    orders within 2% tied), the fluid price 0.974 and 0.939 / 0.946; a file that is not a proof case is
    a usage error."""
    from pathlib import Path

    from benchmarks.price_models import main

    run = Path(__file__).parent.parent / "benchmarks/results/2026-11-29-D-seed20/D.json"
    assert main([str(run), "--runs"]) == 0
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines()]
    assert ["2026-11-29-D-seed20/D.json", "mpi_recursive_doubling", "latency", "clocks", "0.888", "fluid",
            "0.974"] in rows
    assert ["2026-11-29-D-seed20/D.json", "mpi_tree", "bandwidth", "clocks", "0.872", "fluid", "0.946"] in rows
    assert ["mpi_tree", "latency", "1", "0.872", "0.939", "1", "/", "0", "1", "->", "0"] in rows
    with pytest.raises(SystemExit) as e:
        main([str(Path(__file__))])
    assert e.value.code == 2


def test_proof_sysctl_option_is_checked(capsys):
    from benchmarks.collectives_netns import first_of_each, main

    for argv, err in ((["--sysctl", "a b=1"], "--sysctl takes NAME=VALUE pairs"),
                      (["--runoff-only", "--sysctl", "net.core.wmem_max=1"], "--runoff-only takes the saved case's")):
        with pytest.raises(SystemExit):
            main(argv)
        assert err in capsys.readouterr().err
    # one name per distinct order, the first, in the order given
    orders = {"a": {"order": [0, 1]}, "b": {"order": [1, 0]}, "c": {"order": [0, 1]}, "d": {"order": [2, 3]}}
    assert first_of_each(orders, ["c", "a", "b", "d"]) == [0, 2, 3]
