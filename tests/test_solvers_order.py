"""plink order end to end: certified optima for small N, reports, CLI options and errors."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from plink.cli import cli
from plink.errors import PlinkError
from plink.order import order_hosts
from plink.data.probefile import from_matrix
from plink.data.simulate import simulate_datacenter
from plink.solvers.costmodels import CostModel, PairCost
from plink.solvers.exact import solve_exact
from plink.solvers.solve import minimise


def _probe(n, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.random((n, n)) * 100 + 10
    m = np.maximum(m, m.T)
    np.fill_diagonal(m, 0)
    return from_matrix(m, [f"h{i}" for i in range(n)])


@pytest.mark.parametrize("algo,n", [("ring", 12), ("hd", 8), ("dbt", 8), ("bcube", 8), ("hd", 6)])
def test_small_clusters_are_certified_optimal(algo, n):
    probe = _probe(n, 1)
    res = order_hosts(probe, algo, time_limit=5, model="pairsum")
    assert res.proven_optimal is True
    assert res.lower_bound == pytest.approx(res.cost_plink)
    model = CostModel(algo, PairCost.from_matrices(probe.latency), res.size)
    assert res.cost_plink == pytest.approx(solve_exact(model)[1])
    assert res.cost_plink <= res.cost_input and res.cost_plink <= res.cost_random_median


def test_trivial_sizes():
    for n in (1, 2):
        for algo in ("ring", "hd", "dbt"):
            res = order_hosts(_probe(max(n, 1), 0) if n > 1 else _probe(1), algo, time_limit=1)
            assert res.proven_optimal and res.solver["name"] == "trivial"
    res = order_hosts(_probe(3), "ring", time_limit=1)
    assert res.proven_optimal and res.order == [0, 1, 2]


def test_larger_cluster_reports_bound_and_is_never_worse(tmp_path):
    probe = simulate_datacenter(racks=4, hosts_per_rack=8, seed=2)
    for algo in ("ring", "hd", "dbt", "bcube"):
        res = order_hosts(probe, algo, time_limit=1.0, max_iter=2000, model="pairsum")
        assert res.proven_optimal is False
        assert res.lower_bound is not None and 0 < res.lower_bound <= res.cost_plink
        assert res.cost_plink <= res.cost_input
        assert sorted(res.order) == list(range(32))


def test_ring_lower_bound_is_close_on_a_datacenter():
    probe = simulate_datacenter(racks=4, hosts_per_rack=8, seed=3)
    res = order_hosts(probe, "ring", time_limit=2.0, max_iter=3000, model="pairsum")
    # 1-tree bound and ILS meet within a few percent on a clustered instance
    assert res.cost_plink / res.lower_bound < 1.05


def test_jobs_two_processes_deterministic():
    model = CostModel("hd", PairCost.from_matrices(_probe(32, 5).latency), 0)
    a = minimise(model, time_limit=30, max_iter=1500, jobs=2, seed=1)
    b = minimise(model, time_limit=30, max_iter=1500, jobs=2, seed=1)
    assert a.perm.tolist() == b.perm.tolist() and a.info["jobs"] == 2


def test_smt_stage_through_order_hosts():
    probe = _probe(12, 4)
    res = order_hosts(probe, "hd", time_limit=0.5, max_iter=500, smt_time=60, model="pairsum")
    model = CostModel("hd", PairCost.from_matrices(probe.latency), res.size)
    assert res.solver["smt"]["status"] == "proven" and res.proven_optimal
    assert res.lower_bound <= res.cost_plink
    assert res.cost_plink == pytest.approx(model(np.array(res.order)))


def test_groups_warm_start_through_cli(tmp_path):
    from plink.data.groupfile import Groups

    probe = simulate_datacenter(racks=4, hosts_per_rack=8, seed=9)
    racks = ["/".join(lab) for lab in probe.truth.labels]
    names = sorted(set(racks))
    labels = np.array([names.index(r) for r in racks])
    gpath = tmp_path / "g.json"
    Groups(hosts=probe.names, labels=labels).save(gpath)
    ppath = tmp_path / "p.json"
    probe.save(ppath)
    r = CliRunner().invoke(cli, ["order", str(ppath), "--groups", str(gpath), "--time-limit", "0.5", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["cost_plink"] <= d["cost_input"]
    res = order_hosts(probe, "hd", time_limit=0.5, max_iter=10, labels=labels, model="pairsum")
    # the grouping start keeps racks contiguous, so it beats the shuffled input by far
    assert res.solver["start"] in ("groups", "nearest-neighbour", "greedy-edge")
    assert res.cost_plink < 0.8 * res.cost_input


def test_bad_input():
    p = _probe(6)
    with pytest.raises(PlinkError, match="time limit"):
        order_hosts(p, "ring", time_limit=0)
    with pytest.raises(PlinkError, match="time limit"):
        order_hosts(p, "ring", time_limit=-1)
    with pytest.raises(PlinkError, match="unknown algorithm"):
        order_hosts(p, "tree")
    with pytest.raises(PlinkError, match="power of 3"):
        order_hosts(p, "bcube", base=3)
    with pytest.raises(PlinkError, match="smt"):
        order_hosts(p, "ring", smt_time=-1)
    with pytest.raises(PlinkError, match="jobs"):
        order_hosts(p, "ring", jobs=-1)
    with pytest.raises(PlinkError, match="labels"):
        order_hosts(p, "ring", labels=[0, 1])


def test_cli_order_report_and_options(tmp_path):
    probe = _probe(10, 6)
    path = tmp_path / "p.json"
    probe.save(path)
    runner = CliRunner()
    r = runner.invoke(cli, ["order", str(path), "--algo", "ring", "--json", "--jobs", "1", "--smt-time", "0",
                            "--model", "pairsum"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["proven_optimal"] is True and d["solver"]["name"] == "held-karp"
    assert d["cost_model"] == "pairsum" and d["unit"] == "us"
    r = runner.invoke(cli, ["order", str(path), "--algo", "ring", "-o", str(tmp_path / "o.txt")])
    assert r.exit_code == 0
    assert "proven optimal: yes" in r.output
    # dbt over 10 hosts is beyond exhaustive search: a bound is reported instead when it says something
    r = runner.invoke(cli, ["order", str(path), "--algo", "dbt", "--time-limit", "0.5", "--jobs", "2"])
    assert r.exit_code == 0
    assert "proven optimal: no" in r.output and "lower bound" in r.output
    gap = float(r.output.split("at most ")[1].split("%")[0])
    assert 0 <= gap <= 100
    # the pair-sum dbt bound on this instance is > 2x below the order: not printed
    r = runner.invoke(cli, ["order", str(path), "--algo", "dbt", "--time-limit", "0.5", "--model", "pairsum"])
    assert r.exit_code == 0
    assert "proven optimal: no" in r.output and "lower bound" not in r.output
    r = runner.invoke(cli, ["order", str(path), "--time-limit", "0"])
    assert r.exit_code != 0


class _InterruptedAt(CostModel):
    """Ctrl-C at the ``calls``-th price."""

    def __init__(self, *a, calls, **kw):
        super().__init__(*a, **kw)
        self.calls = calls

    def __call__(self, perm):
        self.calls -= 1
        if self.calls == 0:
            raise KeyboardInterrupt
        return super().__call__(perm)


def test_ctrl_c_in_the_pairsum_search_keeps_the_best_start_only_when_asked():
    probe = simulate_datacenter(racks=4, hosts_per_rack=4, seed=1)
    pc = PairCost.from_matrices(probe.latency)
    kw = dict(time_limit=60.0, exact=False, labels=np.repeat(np.arange(4), 4))
    res = minimise(_InterruptedAt("hd", pc, 0, calls=300), keep_on_interrupt=True, **kw)
    assert res.info["interrupted"] is True and res.method == "warm start" and res.lower_bound is None
    assert sorted(res.perm.tolist()) == list(range(16)) and res.info["seconds"] < 30  # not the 60 s limit
    model = CostModel("hd", pc, 0)
    assert res.cost == pytest.approx(model(res.perm)) == pytest.approx(res.info["start_cost"])
    assert res.cost <= model(np.arange(16))
    full = minimise(model, max_iter=500, **kw)
    assert "interrupted" not in full.info and full.cost <= res.cost
    with pytest.raises(KeyboardInterrupt):  # a library caller who did not ask gets the interrupt
        minimise(_InterruptedAt("hd", pc, 0, calls=300), **kw)


def test_ctrl_c_in_the_exact_search_keeps_the_best_start_only_when_asked(monkeypatch):
    """Small N goes to the exact search; Ctrl-C there, when asked, gives the best warm start
    too (before, it wrote nothing)."""
    import plink.solvers.solve as solve

    probe = simulate_datacenter(racks=2, hosts_per_rack=4, seed=1)
    model = CostModel("ring", PairCost.from_matrices(probe.latency), 0)

    def interrupted(_model, *a, **kw):
        raise KeyboardInterrupt

    assert solve.exact_feasible(model)
    monkeypatch.setattr(solve, "solve_exact", interrupted)
    res = minimise(model, labels=np.repeat(np.arange(2), 4), keep_on_interrupt=True)
    assert res.info["interrupted"] is True and res.info["search"] == "exact" and res.method == "warm start"
    assert sorted(res.perm.tolist()) == list(range(8)) and res.lower_bound is None and not res.proven_optimal
    assert res.cost == pytest.approx(model(res.perm)) and res.cost <= model(np.arange(8))
    with pytest.raises(KeyboardInterrupt):
        minimise(model)


def test_an_order_its_lower_bound_meets_is_proven_optimal():
    """Hosts on a circle (distance = chord): the optimal ring is the circle, and the lower bound meets
    its cost but for the bound's float shave (1e-9 relative). The report said "not proven, at most
    0.0% above optimal" (TSPLIB's berlin52 from a CSV: 7542 against 7541.99999)."""
    import plink
    from plink.data.probefile import from_matrix

    n = 60
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)[np.random.default_rng(0).permutation(n)]
    xy = np.c_[np.cos(a), np.sin(a)] * 1000
    d = np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]) + 1
    np.fill_diagonal(d, 0)
    r = plink.order_hosts(from_matrix(d), algo="ring", model="pairsum", size=0, time_limit=1, seed=0)
    chord = 2 * 1000 * np.sin(np.pi / n) + 1
    assert r.cost_plink == pytest.approx(n * chord, rel=1e-12)
    assert r.proven_optimal is True and r.solver.get("proven_by") == "lower bound"
    racks = np.repeat(np.arange(6), 8)  # a loose bound (930 against 1020) proves nothing
    d = np.where(racks[:, None] == racks[None, :], 10.0, 100.0)
    np.fill_diagonal(d, 0)
    r = plink.order_hosts(from_matrix(d), algo="ring", model="pairsum", size=0, time_limit=0.5, seed=0)
    assert r.cost_plink == 1020 and not r.proven_optimal and r.lower_bound < 1000


def test_jobs_beyond_the_cores_are_capped_and_said(monkeypatch):
    """--jobs had no upper bound: --jobs 100000 would fork that many search processes (an outside-in
    check read it in resolve_jobs). More jobs than cores are capped at the cores, with a note."""
    import os

    from plink.order import order_hosts
    from plink.solvers.solve import resolve_jobs

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert resolve_jobs(100000) == 2 and resolve_jobs(0) == 2 and resolve_jobs(1) == 1
    res = order_hosts(simulate_datacenter(racks=2, hosts_per_rack=3, seed=1), "ring", model="pairsum", jobs=64,
                      time_limit=0.5, seed=0)
    assert "--jobs 64 is more than this machine's 2 cores: 2 jobs ran" in res.notes
    assert res.solver.get("jobs", 2) <= 2


def test_a_bound_meets_a_tiny_cost_only_relatively():
    """On a matrix of ~1e-310 the tolerance's floor of 1e-300 was larger than the cost itself, so a bound of
    0 'met' it: 'proven optimal: yes' where the same matrix at normal scale was 'no' (outside-in check)."""
    from plink.data.probefile import from_matrix
    from plink.order import order_hosts

    rng = np.random.default_rng(0)
    m = rng.uniform(1, 2, (23, 23))
    m = (m + m.T) / 2
    np.fill_diagonal(m, 0)
    names = [f"h{i}" for i in range(23)]
    normal = order_hosts(from_matrix(m * 100, names), "ring", model="pairsum", time_limit=1, seed=0)
    tiny = order_hosts(from_matrix(m * 1e-310, names), "ring", model="pairsum", time_limit=1, seed=0)
    assert not (tiny.proven_optimal and not normal.proven_optimal)


def test_bad_group_labels_are_one_line_input_errors():
    """A NaN label became a rack of its own, silently; a 2-D array or a None label gave a bare IndexError
    or TypeError from deep inside (outside-in check). Valid labels are taken as before."""
    from plink.errors import InputError

    p = _probe(6)
    for bad, msg in (([0, 0, 0, 1, 1, float("nan")], r"host 'h5' has no group \(label nan\)"),
                     (np.array([0, 0, 0, 1, 1, np.nan]), r"host 'h5' has no group \(label nan\)"),
                     ([0, 0, None, 1, 1, 1], r"host 'h2' has no group \(label None\)"),
                     (np.zeros((6, 1)), r"one label per host \(1-D\), got an array of shape \(6, 1\)"),
                     ([[0], [0], [0], [1], [1], [1]], "host 'h0' has group label \\[0\\], which is not a label"),
                     ("abcdef", "a sequence of one label per host, got str"),
                     ([0, 1], "2 group labels for 6 hosts")):
        with pytest.raises(InputError, match=msg) as exc:
            order_hosts(p, "ring", labels=bad, time_limit=0.1)
        assert "\n" not in str(exc.value)
    by_number = order_hosts(p, "ring", labels=[1, 1, 1, 5, 5, 5], time_limit=0.2, seed=0)
    by_name = order_hosts(p, "ring", labels=["r1", "r1", "r1", "r5", "r5", "r5"], time_limit=0.2, seed=0)
    assert by_number.group_labels == by_name.group_labels == [0, 0, 0, 1, 1, 1]
    assert by_number.order == by_name.order and by_number.groups["k"] == 2


@pytest.mark.parametrize("labels, shown", [
    ([1, "1", 1, 2, 2, 2], "(1 and '1')"),
    (["r1", "r1", "r1", 5, 5, 5], "(5 and 'r1')"),
    (np.array([0, "a", 0, 1, 1, 1], dtype=object), "(0 and 'a')"),
    ([np.int64(0), np.str_("0"), 0, 1, 1, 1], "(0 and '0')"),
])
def test_group_labels_mixing_numbers_and_strings_are_refused(labels, shown):
    """[1, "1", 2] was taken as three groups, silently (1 and "1" differ as values): labels of two kinds
    are almost surely a mistake (numbers read from one file, names from another)."""
    from plink.errors import InputError

    with pytest.raises(InputError) as exc:
        order_hosts(_probe(6), "ring", labels=labels, time_limit=0.1)
    assert str(exc.value) == f"labels mix numbers and strings {shown}: give one kind, group numbers or names"


def test_group_labels_mixing_strings_and_bytes_are_refused():
    """b"a" and "a" are two groups by value, as 1 and "1" are: a mistake, refused the same way."""
    from plink.errors import InputError

    with pytest.raises(InputError) as exc:
        order_hosts(_probe(6), "ring", labels=[b"a", "a", "a", "b", "b", "b"], time_limit=0.1)
    assert str(exc.value) == "labels mix strings and bytes ('a' and b'a'): give one kind, group numbers or names"


def test_library_option_errors_name_the_parameter():
    """order_hosts(nic_gbps=0) said '--nic-gbps must be > 0': a flag the library caller never gave. The
    messages name the parameter beside the flag, as '--jobs (jobs) must be a whole number' did."""
    from plink.errors import OptionError

    p = _probe(4)
    for kw, msg in ((dict(nic_gbps=0), r"--nic-gbps \(nic_gbps\) must be > 0, got 0"),
                    (dict(nic_gbps=float("nan")), r"--nic-gbps \(nic_gbps\) must be > 0, got nan"),
                    (dict(jobs=-1), r"--jobs \(jobs\) must be >= 0"),
                    (dict(smt_time=-1), r"--smt-time \(smt_time\) must be >= 0")):
        with pytest.raises(OptionError, match=msg):
            order_hosts(p, "ring", time_limit=0.1, **kw)


def _undocumented(fn, doc=None) -> list[str]:
    """The parameters of ``fn`` its docstring (or ``doc``) never names as ``name`` or ``name=...``."""
    import inspect
    import re

    doc = inspect.getdoc(fn) if doc is None else doc
    return [p for p in inspect.signature(fn).parameters if not re.search(rf"``{p}(=[^`]*)?``", doc)]


def test_order_hosts_and_load_document_every_parameter():
    """order_hosts' docstring left out seed, n_random and use_bandwidth and what it returns, and did not
    say that a seed with a time limit alone repeats nothing; load's left out bandwidth (outside-in check)."""
    import inspect

    from plink.data.probefile import load

    assert _undocumented(order_hosts) == []
    assert _undocumented(load) == ["path"]
    doc = " ".join(inspect.getdoc(order_hosts).split())
    assert "time-limited" in doc and "Returns an :class:`OrderResult`" in doc
