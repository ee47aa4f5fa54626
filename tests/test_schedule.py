"""2LHA plan, action DAG, schedule file and verifier."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plink.schedule.dag import Dag, Schedule, ScheduleError, expand, from_dict, load_schedule
from plink.errors import InputError, OptionError, PlinkError
from plink.data.probefile import ProbeData, from_matrix
from plink.schedule.plan import (Plan, assign_masters, balance, chunk_buffer, fallback_groups, lpt_assign,
                            node_loads, plan_schedule)
from plink.data.simulate import simulate_datacenter
from plink.schedule.timemodel import compare, pair_cost, plan_traffic, table41
from plink.schedule.verify import verify


def uniform_probe(n, lat=50.0, bw=10.0):
    m = np.full((n, n), lat)
    b = np.full((n, n), bw)
    np.fill_diagonal(m, 0.0)
    np.fill_diagonal(b, np.nan)
    return from_matrix(m, [f"h{i}" for i in range(n)], bandwidth=b)


def make_plan(labels, size, chunk, capacity="cardinality"):
    labels = np.asarray(labels)
    probe = uniform_probe(len(labels))
    return plan_schedule(probe, labels, size=size, chunk=chunk, capacity=capacity)


@st.composite
def shapes(draw):
    n = draw(st.integers(2, 14))
    k = draw(st.integers(1, n))
    rest = draw(st.lists(st.integers(0, k - 1), min_size=n - k, max_size=n - k))
    labels = list(range(k)) + rest
    perm = draw(st.permutations(list(range(n))))
    labels = [labels[p] for p in perm]
    chunk = draw(st.integers(1, 64))
    nchunks = draw(st.integers(1, 9))
    size = chunk * (nchunks - 1) + draw(st.integers(1, chunk))
    return labels, size, min(chunk, size)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(shapes())
def test_generated_schedules_verify(shape):
    labels, size, chunk = shape
    plan = make_plan(labels, size, chunk)
    rep = verify(expand(plan))
    assert rep.ok, rep.errors
    n, k = len(labels), max(labels) + 1
    t41 = table41(labels, size)["2lha"]
    assert rep.bytes_total == 2 * (n - 1) * size == t41["bytes_total"]
    assert rep.bytes_cross == 2 * (k - 1) * size == t41["bytes_cross"]
    assert rep.rounds <= 4
    if n > k > 1 and all(c >= 2 for c in np.bincount(labels)):
        assert rep.rounds == 4
    # the numpy traffic of the plan is the DAG's traffic, round by round
    fast = plan_traffic(plan)
    assert len(fast) == len(rep.traffic)
    for a, b in zip(fast, rep.traffic):
        np.testing.assert_array_equal(a.aggregated(n), b.aggregated(n))


# ---------------------------------------------------------------------------
# the verifier must be able to fail


def rebuild_without(dag: Dag, drop: int) -> Dag:
    out = Dag(list(dag.hosts), dag.labels.copy(), dag.chunks.copy())
    new_id = {}
    for a in range(len(dag)):
        if a == drop:
            continue
        new_id[a] = len(out)
        deps = [new_id[d] for d in dag.deps[a] if d != drop]
        out.add(dag.node[a], dag.chunk[a], dag.op[a], dag.peers[a], dag.reduce[a], deps)
    return out


def find(dag, **kw):
    for a in range(len(dag)):
        if all(getattr(dag, f)[a] == v for f, v in kw.items()):
            return a
    raise LookupError(kw)


@pytest.fixture(scope="module")
def base():
    # 3 groups of 3: every role exists (members, LMs, GM); 2 chunks
    plan = make_plan([0, 0, 0, 1, 1, 1, 2, 2, 2], size=8, chunk=4)
    dag = expand(plan)
    assert verify(dag).ok
    return plan, dag


def member_of_non_gm_group(plan, c=0):
    gx = plan.labels[plan.gm[c]]
    for i in range(plan.n):
        g = plan.labels[i]
        if g != gx and plan.lm[c, g] != i:
            return i
    raise LookupError


def test_rejects_dropped_send(base):
    plan, dag = base
    m = member_of_non_gm_group(plan)
    bad = rebuild_without(dag, find(dag, node=m, chunk=0, op="send"))
    rep = verify(bad)
    assert not rep.ok
    assert any("without a matching SendTo" in e for e in rep.errors)
    assert any("deadlock" in e for e in rep.errors)


def test_rejects_duplicate_contribution(base):
    plan, dag = base
    m = member_of_non_gm_group(plan)
    x = int(plan.gm[0])
    bad = dag.copy()
    f = find(bad, node=m, chunk=0, op="fetch")
    bad.add(m, 0, "send", [x], deps=[f])  # m also sends straight to the GM ...
    r = find(bad, node=x, chunk=0, op="recv", peers=tuple(int(plan.lm[0, g]) for g in range(3) if g != plan.labels[x]))
    bad.peers[r] = bad.peers[r] + (m,)  # ... which adds it on top of m's LM's partial sum
    rep = verify(bad)
    assert not rep.ok
    assert any(e.startswith("double counting") for e in rep.errors)


def test_rejects_sum_instead_of_copy(base):
    plan, dag = base
    m = member_of_non_gm_group(plan)
    lead = int(plan.lm[0, plan.labels[m]])
    bad = dag.copy()
    r = find(bad, node=lead, chunk=0, op="recv", reduce="copy")
    bad.reduce[r] = "sum"  # the LM adds the global sum to its own partial: counts its group twice
    rep = verify(bad)
    assert any(e.startswith("double counting") for e in rep.errors)


def test_rejects_missing_contribution(base):
    plan, dag = base
    m = member_of_non_gm_group(plan)
    lead = int(plan.lm[0, plan.labels[m]])
    bad = rebuild_without(dag, find(dag, node=m, chunk=0, op="send"))
    r = find(bad, node=lead, chunk=0, op="recv", reduce="sum")
    bad.peers[r] = tuple(p for p in bad.peers[r] if p != m)
    rep = verify(bad)
    assert not rep.ok
    assert any("without the contributions of nodes [%d]" % m in e for e in rep.errors)


def test_rejects_cycle_and_race(base):
    plan, dag = base
    m = member_of_non_gm_group(plan)
    bad = dag.copy()
    f = find(bad, node=m, chunk=1, op="fetch")
    bad.deps[f] = (find(bad, node=m, chunk=1, op="deliver"),)
    assert any("deadlock" in e for e in verify(bad).errors)
    bad = dag.copy()
    r = find(bad, node=m, chunk=1, op="recv")
    bad.deps[r] = ()  # the copy-receive may now overwrite the buffer before it was sent
    assert any(e.startswith("race") for e in verify(bad).errors)


def test_rejects_bad_structure(base):
    plan, dag = base
    bad = dag.copy()
    bad.deps[5] = (0,) if bad.node[0] != bad.node[5] else (len(bad) - 1,)
    assert any("another node or chunk" in e for e in verify(bad).errors)
    bad = dag.copy()
    s = find(bad, op="send")
    bad.peers[s] = (bad.node[s],)
    assert any("distinct other nodes" in e for e in verify(bad).errors)
    bad = dag.copy()
    d = find(bad, op="deliver")
    bad.add(bad.node[d], bad.chunk[d], "deliver", deps=[d])
    assert any("2 times" in e for e in verify(bad).errors)


# ---------------------------------------------------------------------------
# balance


def test_lpt_respects_capacities():
    w = np.ones(300)
    out = lpt_assign(w, np.array([1.0, 2.0, 3.0]))
    counts = np.bincount(out, minlength=3)
    np.testing.assert_array_equal(counts, [50, 100, 150])
    out = lpt_assign(np.array([5.0, 4, 3, 3, 3]), np.ones(2))
    assert sorted(np.bincount(out, weights=[5.0, 4, 3, 3, 3])) == [8.0, 10.0]


def test_gms_proportional_to_cardinality():
    labels = np.array([0] * 2 + [1] * 4 + [2] * 6)  # unequal groups
    plan = make_plan(labels, size=12 * 64, chunk=1)  # 768 chunks
    per_group = np.bincount(plan.gm_group(), minlength=3)
    np.testing.assert_array_equal(per_group, [128, 256, 384])
    b = balance(plan)
    assert b["load"] <= 1.05 and b["gm_groups"] <= 1.05 and b["lm_nodes"] <= 1.05
    # every node: GM of C/N chunks, LM load C*S/C... equal loads
    assert np.ptp(np.bincount(plan.gm, minlength=12)) == 0


def test_bandwidth_capacity_balance_on_datacenter():
    probe = simulate_datacenter(racks=4, hosts_per_rack=4, bandwidth=True, seed=3)
    plan = plan_schedule(probe, size=16 * 32 * 1024, chunk=1024)  # 32 chunks per node
    assert plan.capacity == "bandwidth"
    assert balance(plan, probe.bandwidth)["load"] <= 1.05
    # fallback groups recover the racks of this datacenter exactly
    racks = [t[-1] for t in probe.truth.labels]
    for g in range(plan.k):
        assert len({racks[i] for i in np.flatnonzero(plan.labels == g)}) == 1
    assert plan.k == 4


def test_quicktune_rule_follows_outbound_bandwidth():
    # group 1's hosts have twice the outbound bandwidth of group 0's
    n = 8
    labels = np.array([0] * 4 + [1] * 4)
    bw = np.full((n, n), 10.0)
    bw[4:, :4] = bw[:4, 4:] = 5.0
    bw[4:, :4] *= 1.0
    bw[6, :4] = bw[:4, 6] = 15.0
    bw[7, :4] = bw[:4, 7] = 15.0
    lat = np.full((n, n), 30.0)
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, np.nan)
    probe = from_matrix(lat, [f"h{i}" for i in range(n)], bandwidth=bw)
    plan = plan_schedule(probe, labels, size=1000, chunk=1, capacity="bandwidth")
    # outbound: group 0 = 4 hosts * (2*5+2*15) = 160, group 1 = 2*20 + 2*60 = 160 -> equal GM shares
    assert abs(int((plan.gm_group() == 0).sum()) - 500) <= 1
    # inside group 1 hosts 6, 7 have more bandwidth than 4, 5 and get more LM load
    loads = node_loads(plan)
    assert loads[6] > loads[4] and loads[7] > loads[5]


# ---------------------------------------------------------------------------
# file format and inputs


def test_schedule_file_roundtrip(tmp_path, base):
    plan, dag = base
    s = Schedule.from_plan(plan)
    for form in ("dag", "compact"):
        path = tmp_path / f"s_{form}.json"
        s.save(path, form)
        doc = json.loads(path.read_text())
        assert doc["format"] == "plink-schedule" and doc["version"] == 1 and doc["form"] == form
        back = load_schedule(path)
        np.testing.assert_array_equal(back.plan.lm, plan.lm)
        d2 = back.dag
        assert (d2.node, d2.op, d2.peers, d2.reduce, d2.deps) == (dag.node, dag.op, dag.peers, dag.reduce, dag.deps)
    assert len((tmp_path / "s_compact.json").read_text()) < len((tmp_path / "s_dag.json").read_text()) / 3


def test_schedule_file_errors(tmp_path, base):
    plan, _ = base
    doc = Schedule.from_plan(plan).to_dict("compact")
    with pytest.raises(ScheduleError, match="newer"):
        from_dict({**doc, "version": 9})
    with pytest.raises(ScheduleError, match="not a plink schedule"):
        from_dict({"format": "plink-probe"})
    not_lm = next(i for i in range(plan.n) if i not in set(plan.lm[0].tolist()))
    bad = {**doc, "gm": [not_lm] + doc["gm"][1:]}
    with pytest.raises(ScheduleError, match="global master"):
        from_dict(bad)
    p = tmp_path / "x.json"
    p.write_text("{")
    with pytest.raises(ScheduleError, match="invalid JSON"):
        load_schedule(p)


def test_bad_chunks():
    with pytest.raises(PlinkError, match="chunk size must be > 0"):
        chunk_buffer(100, 0)
    with pytest.raises(PlinkError, match="larger than the buffer"):
        chunk_buffer(100, 101)
    np.testing.assert_array_equal(chunk_buffer(10, 4), [[0, 4], [4, 4], [8, 2]])
    assert len(chunk_buffer(2**20, 1)) == 2**20  # the most chunks a schedule takes
    with pytest.raises(PlinkError) as e:
        chunk_buffer(2**20 + 1, 1)
    assert str(e.value) == "1048577 chunks of 1 B in a 1048577 B buffer: at most 1048576 (take a larger chunk)"
    with pytest.raises(PlinkError, match="^2097152 chunks of 2 B in a 4194303 B buffer"):
        chunk_buffer(2**22 - 1, 2)  # the last chunk counts though short
    from plink.data.simulate import simulate_datacenter
    from plink.schedule.plan import plan_schedule

    eight = simulate_datacenter(racks=2, hosts_per_rack=4, seed=0)
    with pytest.raises(PlinkError) as e:  # within the chunk limit, beyond chunks x hosts
        plan_schedule(eight, None, size=2**19 + 1, chunk=1)
    assert str(e.value) == ("524289 chunks x 8 hosts is more than a schedule takes (4194304 chunk-hosts, "
                            "about 0.8 GB to plan): take a larger chunk")
    assert plan_schedule(eight, None, size=2**19, chunk=1).n_chunks == 2**19  # at the limit


# ---------------------------------------------------------------------------
# baselines and the time model


def test_baseline_bytes_match_table41():
    labels = np.repeat(np.arange(4), 4)  # C = 4 racks of 4
    pc = pair_cost(uniform_probe(16))
    plan = make_plan(labels, size=16 * 64, chunk=64)
    res = compare(plan, pc)
    t41 = table41(labels, plan.size)
    s = plan.size
    assert res["ps"].bytes_cross == t41["ps"]["bytes_cross"] == 2 * 4 * (4 - 1) * s
    assert res["ring"].bytes_total == 2 * 15 * s and res["ring"].rounds == 30
    assert res["ring"].bytes_cross == t41["ring"]["bytes_cross"]
    assert res["2lha"].bytes_cross == 2 * 3 * s and res["2lha"].rounds == 4
    # uniform links: times follow the formulas (lat 50 us, 10 Gbit/s -> 8e-4 us/B)
    assert res["ring"].time_us == pytest.approx(30 * (50 + s / 16 * 8e-4))
    assert res["ps"].time_us == pytest.approx(2 * (50 + 15 * s / 16 * 8e-4))


def test_2lha_beats_baselines_on_oversubscribed_racks():
    probe = simulate_datacenter(racks=4, hosts_per_rack=4, bandwidth=True, oversubscription=4, seed=2)
    plan = plan_schedule(probe, size=16 * 1024 * 1024, chunk=64 * 1024)
    res = compare(plan, pair_cost(probe))
    assert res["2lha"].time_us < res["ps"].time_us < res["ring"].time_us


def test_one_host_is_an_error():
    with pytest.raises(PlinkError, match="at least 2 hosts"):
        plan_schedule(uniform_probe(1), size=100, chunk=10)


def test_fallback_groups_sqrt():
    probe = simulate_datacenter(racks=3, hosts_per_rack=3, seed=0)
    labels = fallback_groups(probe)
    assert labels.max() + 1 == 3
    assert fallback_groups(uniform_probe(1) if False else uniform_probe(2), k=1).tolist() == [0, 0]


def test_plan_validation():
    with pytest.raises(PlinkError, match="not a member"):
        Plan(["a", "b"], [0, 1], [[0, 4]], [[1, 0]], [1], 4)
    lm, gm = assign_masters(np.array([0, 1]), np.array([4.0]), np.array([1.0, 1.0]), np.ones(2))
    Plan(["a", "b"], [0, 1], [[0, 4]], lm, gm, 4)


def test_rejects_send_before_fetch(base):
    plan, dag = base
    m = member_of_non_gm_group(plan)
    bad = dag.copy()
    f = find(bad, node=m, chunk=0, op="fetch")
    s = find(bad, node=m, chunk=0, op="send")
    r = find(bad, node=m, chunk=0, op="recv")
    bad.deps[s] = ()  # sends an empty buffer first ...
    bad.deps[f] = (r,)  # ... and fetches after the global sum arrived
    d = find(bad, node=m, chunk=0, op="deliver")
    bad.deps[d] = (f,)
    errs = verify(bad).errors
    assert any("without the contributions of nodes [%d]" % m in e for e in errs)


def _two_node_dag(recv_reduce):
    """Nodes 0 and 1 fetch their chunk, send it to each other, receive the other's and deliver."""
    dag = Dag(["a", "b"], np.array([0, 1]), np.array([[0, 4]]))
    for me, peer in ((0, 1), (1, 0)):
        f = dag.add(me, 0, "fetch")
        s = dag.add(me, 0, "send", [peer], deps=[f])
        r = dag.add(me, 0, "recv", [peer], reduce=recv_reduce, deps=[s])
        dag.add(me, 0, "deliver", deps=[r])
    return dag


def test_swap_with_sum_is_an_all_reduce():
    rep = verify(_two_node_dag("sum"))
    assert rep.ok, rep.errors
    assert rep.n_messages == 2 and rep.bytes_cross == 8


def test_rejects_swap_with_copy():
    # a copy-receive OVERWRITES the buffer: each node ends with the other's value only
    rep = verify(_two_node_dag("copy"))
    assert not rep.ok
    assert any("node 0 delivers chunk 0 without the contributions of nodes [0]" in e for e in rep.errors)
    assert any("node 1 delivers chunk 0 without the contributions of nodes [1]" in e for e in rep.errors)


def test_rejects_second_fetch():
    dag = _two_node_dag("sum")
    d = find(dag, node=0, chunk=0, op="deliver")
    dag.add(0, 0, "fetch", deps=[d])  # fetching again after the sum would add node 0 twice
    rep = verify(dag)
    assert any("node 0 fetches chunk 0 twice" in e for e in rep.errors)


def _one_action(n=3, chunks=2, **kw):
    """A DAG of 3 nodes and 2 chunks holding a single action (plus what ``kw`` says)."""
    dag = Dag(["a", "b", "c"][:n], np.zeros(n, dtype=int), np.array([[0, 4], [4, 4]][:chunks]))
    dag.add(**kw)
    return dag


@pytest.mark.parametrize("kw, message", [
    (dict(node=3, chunk=0, op="fetch"), "action 0 (fetch at node 3, chunk 0): node or chunk out of range"),
    (dict(node=-1, chunk=0, op="fetch"), "action 0 (fetch at node -1, chunk 0): node or chunk out of range"),
    (dict(node=0, chunk=2, op="fetch"), "action 0 (fetch at node 0, chunk 2): node or chunk out of range"),
    (dict(node=0, chunk=-1, op="fetch"), "action 0 (fetch at node 0, chunk -1): node or chunk out of range"),
    (dict(node=0, chunk=0, op="send"), "action 0 (send at node 0, chunk 0): no peers"),
    (dict(node=0, chunk=0, op="send", peers=[3]), "action 0 (send at node 0, chunk 0): peers must be distinct other nodes"),
    (dict(node=0, chunk=0, op="send", peers=[-1]), "action 0 (send at node 0, chunk 0): peers must be distinct other nodes"),
    (dict(node=0, chunk=0, op="send", peers=[1, 1]), "action 0 (send at node 0, chunk 0): peers must be distinct other nodes"),
    (dict(node=1, chunk=1, op="recv", peers=[1], reduce="sum"),
     "action 0 (recv at node 1, chunk 1): peers must be distinct other nodes"),
    (dict(node=0, chunk=0, op="deliver", peers=[1]), "action 0 (deliver at node 0, chunk 0): deliver takes no peers"),
    (dict(node=0, chunk=0, op="recv", peers=[1]), "action 0 (recv at node 0, chunk 0): reduce must be 'sum' or 'copy'"),
    (dict(node=0, chunk=0, op="recv", peers=[1, 2], reduce="copy"),
     "action 0 (recv at node 0, chunk 0): reduce 'copy' needs exactly one peer"),
    (dict(node=0, chunk=0, op="fetch", reduce="sum"), "action 0 (fetch at node 0, chunk 0): only recv has a reduce mode"),
    (dict(node=0, chunk=0, op="fetch", deps=[0]), "action 0 (fetch at node 0, chunk 0): dependency 0 is not another action"),
    (dict(node=0, chunk=0, op="fetch", deps=[1]), "action 0 (fetch at node 0, chunk 0): dependency 1 is not another action"),
    (dict(node=0, chunk=0, op="fetch", deps=[-1]), "action 0 (fetch at node 0, chunk 0): dependency -1 is not another action"),
])
def test_structure_rules_one_by_one(kw, message):
    rep = verify(_one_action(**kw))
    assert rep.ok is False and rep.n_actions == 1
    assert rep.errors == [message]


def test_structure_rules_at_the_edges_are_fine():
    # the last node, the last chunk and the last peer are all in range
    dag = Dag(["a", "b", "c"], np.zeros(3, dtype=int), np.array([[0, 4], [4, 4]]))
    f = dag.add(2, 1, "fetch")
    dag.add(2, 1, "send", [1, 0], deps=[f])
    from plink.schedule.verify import _structure_errors

    assert _structure_errors(dag, 20) == []


def test_structure_errors_stop_at_the_limit():
    dag = Dag(["a", "b"], np.zeros(2, dtype=int), np.array([[0, 4]]))
    for _ in range(5):
        dag.add(0, 0, "send")  # no peers: one error each
    assert len(verify(dag, max_errors=3).errors) == 3
    assert len(verify(dag, max_errors=5).errors) == 5
    dep = Dag(["a", "b"], np.zeros(2, dtype=int), np.array([[0, 4], [4, 4]]))
    x = dep.add(0, 1, "fetch")
    dep.add(0, 0, "deliver", deps=[x])
    assert verify(dep).errors == ["action 1 (deliver at node 0, chunk 0): dependency 0 is on another node or chunk"]


@pytest.mark.parametrize("labels, rounds_2lha, ring_cross, ps_cross", [
    ([0, 0, 0, 0], 2, 0.0, 0.0),                      # one group: no cross-group traffic, 2 rounds
    ([0, 0], 2, 0.0, 0.0),
    ([0, 1, 2, 3], 2, 2 * 4 * 3 / 4, 2 * 4 * 3 / 4),  # every host its own group
    ([0, 0, 1, 1], 4, 2 * 2 * 3 / 4, 2 * 2 * 2 * 2 / 4),
    ([0, 0, 0, 1], 4, 2 * 2 * 3 / 4, 2 * (3 * 1 + 1 * 3) / 4),
    ([0], 0, 0.0, 0.0),                               # a single host: nothing to do
])
def test_table41_edges(labels, rounds_2lha, ring_cross, ps_cross):
    s = 100.0
    t = table41(np.array(labels), s)
    n, k = len(labels), len(set(labels))
    assert t["2lha"] == {"rounds": rounds_2lha, "bytes_total": 2 * (n - 1) * s, "bytes_cross": 2 * (k - 1) * s}
    assert t["ring"] == {"rounds": 2 * (n - 1), "bytes_total": 2 * (n - 1) * s, "bytes_cross": pytest.approx(ring_cross * s)}
    assert t["ps"]["bytes_cross"] == pytest.approx(ps_cross * s)
    assert t["ps"]["rounds"] == (2 if n > 1 else 0) and t["ps"]["bytes_total"] == 2 * (n - 1) * s


def test_schedule_file_keeps_every_field(tmp_path, base):
    plan, _ = base
    s = Schedule.from_plan(plan, meta={"note": "x"}, autotune={"rounds": 2})
    for form in ("dag", "compact"):
        path = tmp_path / f"k_{form}.json"
        s.save(path, form)
        back = load_schedule(path)
        assert back.hosts == s.hosts and back.size == s.size and back.chunk_bytes == s.chunk_bytes
        np.testing.assert_array_equal(back.labels, s.labels)
        np.testing.assert_array_equal(back.chunks, s.chunks)
        assert back.meta == {"note": "x"} and back.autotune == {"rounds": 2}
        assert back.plan.capacity == plan.capacity
        np.testing.assert_array_equal(back.plan.gm, plan.gm)
    doc = s.to_dict("dag")
    assert from_dict({k: v for k, v in doc.items() if k != "capacity"}).plan.capacity == "cardinality"
    no_plan = {k: v for k, v in doc.items() if k not in ("lm", "gm", "rules", "capacity")}
    back = from_dict(no_plan)
    assert back.plan is None and back.dag is not None and back.chunk_bytes == s.chunk_bytes
    del no_plan["chunk"]
    assert from_dict(no_plan).chunk_bytes == int(s.chunks[0, 1])  # defaults to the first chunk's length


@pytest.mark.parametrize("change, message", [
    (lambda d: {**d, "version": 0}, "x.json: schedule version 0 is not one this plink reads (1..1)"),
    (lambda d: {**d, "version": True}, "x.json: schedule version True is not a whole number (this plink reads 1..1)"),
    (lambda d: {**d, "version": "1"}, "x.json: schedule version '1' is not a whole number (this plink reads 1..1)"),
    (lambda d: {k: v for k, v in d.items() if k != "version"},
     'x.json: no "version" field (a plink schedule file has "format": \'plink-schedule\' and "version": 1)'),
    (lambda d: {**d, "form": "tree"}, "x.json: 'form' must be 'dag' or 'compact'"),
    (lambda d: {**d, "hosts": "a"}, "x.json: 'hosts' must be a list"),
    (lambda d: {**d, "hosts": []}, "x.json: 'hosts' must be a non-empty list of distinct names"),
    (lambda d: {**d, "hosts": ["a"] * len(d["hosts"])}, "x.json: 'hosts' must be a non-empty list of distinct names"),
    (lambda d: {**d, "hosts": [1] + d["hosts"][1:]}, "x.json: 'hosts' must be a non-empty list of distinct names"),
    (lambda d: {**d, "groups": d["groups"][1:]}, "x.json: 8 group labels for 9 hosts"),
    (lambda d: {k: v for k, v in d.items() if k != "size"}, "x.json: invalid groups/chunks/size: 'size'"),
    (lambda d: {**d, "rules": "2lha-v0"}, "x.json: unknown rules '2lha-v0' (this plink knows 2lha-v1)"),
    (lambda d: {k: v for k, v in d.items() if k != "gm"}, "x.json: missing 'gm'"),
    (lambda d: {**d, "lm": "x"}, "x.json: lm must be whole numbers, got 'x'"),
])
def test_schedule_file_error_messages(base, change, message):
    plan, _ = base
    doc = Schedule.from_plan(plan).to_dict("compact")
    with pytest.raises(ScheduleError) as e:
        from_dict(change(doc), "x.json")
    assert str(e.value).startswith(message), str(e.value)


@pytest.mark.parametrize("row, message", [
    ([0, 0, "fetch", [], None], "x.json: action 0 is malformed (not enough values"),
    ([0, 0, "jump", [], None, []], "x.json: action 0 is malformed (op 'jump' / reduce None)"),
    ([0, 0, "recv", [1], "max", []], "x.json: action 0 is malformed (op 'recv' / reduce 'max')"),
    ([0, 0, "fetch", None, None, []], "x.json: action 0 is malformed ("),
])
def test_schedule_file_bad_actions(row, message):
    doc = {"format": "plink-schedule", "version": 1, "form": "dag", "hosts": ["a", "b"], "groups": [0, 0],
           "chunks": [[0, 4]], "size": 4, "actions": [row]}
    with pytest.raises(ScheduleError) as e:
        from_dict(doc, "x.json")
    assert str(e.value).startswith(message), str(e.value)
    doc["actions"] = "x"
    with pytest.raises(ScheduleError, match="x.json: 'actions' must be a list"):
        from_dict(doc, "x.json")


def _three_to_zero(second_reduce):
    """Nodes 1 and 2 send their chunk to node 0, which receives both with no order between the receives."""
    dag = Dag(["a", "b", "c"], np.zeros(3, dtype=int), np.array([[0, 4]]))
    a = dag.add(0, 0, "fetch")
    b = dag.add(0, 0, "recv", [1], reduce="sum", deps=[a])
    c = dag.add(0, 0, "recv", [2], reduce=second_reduce, deps=[a])
    dag.add(0, 0, "deliver", deps=[b, c])
    for p in (1, 2):
        f = dag.add(p, 0, "fetch")
        dag.add(p, 0, "send", [0], deps=[f])
    return dag


def test_unordered_sum_receives_are_not_a_race():
    assert not any(e.startswith("race") for e in verify(_three_to_zero("sum")).errors)


def test_unordered_copy_and_sum_receives_race():
    errs = verify(_three_to_zero("copy")).errors
    assert "race: actions 1 (recv) and 2 (recv) of node 0, chunk 0 touch the merge buffer without an order" in errs


def test_unordered_send_and_receive_race():
    # node 0 sends its buffer to 1 while a receive from 2 may already be writing into it
    dag = Dag(["a", "b", "c"], np.zeros(3, dtype=int), np.array([[0, 4]]))
    a = dag.add(0, 0, "fetch")
    s = dag.add(0, 0, "send", [1], deps=[a])
    r = dag.add(0, 0, "recv", [2], reduce="sum", deps=[a])
    g = dag.add(1, 0, "fetch")
    dag.add(1, 0, "recv", [0], reduce="sum", deps=[g])
    h = dag.add(2, 0, "fetch")
    dag.add(2, 0, "send", [0], deps=[h])
    errs = verify(dag).errors  # (the race check runs once the DAG has no deadlock)
    assert f"race: actions {s} (send) and {r} (recv) of node 0, chunk 0 touch the merge buffer without an order" in errs


def test_race_found_past_an_ordered_pair():
    # actions in topological order A, B, C: C is ordered after A but not after B
    dag = Dag(["a", "b", "c"], np.zeros(3, dtype=int), np.array([[0, 4]]))
    a = dag.add(0, 0, "fetch")
    dag.add(0, 0, "recv", [1], reduce="copy", deps=[a])
    dag.add(0, 0, "recv", [2], reduce="sum", deps=[a])
    for p in (1, 2):
        f = dag.add(p, 0, "fetch")
        dag.add(p, 0, "send", [0], deps=[f])
    races = [e for e in verify(dag).errors if e.startswith("race")]
    assert races == ["race: actions 1 (recv) and 2 (recv) of node 0, chunk 0 touch the merge buffer without an order"]


def test_message_matching_errors_name_the_right_nodes():
    dag = Dag(["a", "b", "c"], np.zeros(3, dtype=int), np.array([[0, 4], [4, 4]]))
    f = dag.add(0, 1, "fetch")
    dag.add(0, 1, "send", [2], deps=[f])            # action 1: nobody receives it
    g = dag.add(2, 0, "fetch")
    dag.add(2, 0, "recv", [1], reduce="sum", deps=[g])  # action 3: nobody sends it
    errs = verify(dag).errors
    assert "SendTo without a matching ReceiveFrom: node 0 -> node 2, chunk 1 (action 1)" in errs
    assert "ReceiveFrom without a matching SendTo: node 2 <- node 1, chunk 0 (action 3)" in errs
    dup = Dag(["a", "b", "c"], np.zeros(3, dtype=int), np.array([[0, 4], [4, 4]]))
    f = dup.add(0, 1, "fetch")
    dup.add(0, 1, "send", [2], deps=[f])
    dup.add(0, 1, "send", [2], deps=[f])
    dup.add(2, 1, "recv", [0], reduce="sum")
    dup.add(2, 1, "recv", [0], reduce="sum")
    errs = verify(dup).errors
    assert "node 0 sends chunk 1 to node 2 twice (actions 1, 2)" in errs
    assert "node 2 receives chunk 1 from node 0 twice (actions 3, 4)" in errs


def test_semantic_errors_stop_at_the_limit():
    dag = Dag([f"h{i}" for i in range(8)], np.zeros(8, dtype=int), np.array([[0, 4]]))
    for p in range(1, 8):
        dag.add(0, 0, "send", [p])  # 7 sends nobody receives
    assert len(verify(dag, max_errors=3).errors) == 3
    assert len(verify(dag, max_errors=4).errors) == 4


def test_delivery_counts_and_missing_lists():
    n = 8
    dag = Dag([f"h{i}" for i in range(n)], np.zeros(n, dtype=int), np.array([[0, 4]]))
    f = dag.add(0, 0, "fetch")
    dag.add(0, 0, "deliver", deps=[f])  # node 0 delivers only its own contribution
    errs = verify(dag).errors
    assert "node 0 delivers chunk 0 without the contributions of nodes [1, 2, 3, 4, 5]" in errs
    assert "node 1 delivers chunk 0 0 times (must be exactly once)" in errs
    assert sum("0 times" in e for e in errs) == n - 1


def test_deadlock_message_counts_the_stuck_actions():
    dag = Dag(["a", "b"], np.zeros(2, dtype=int), np.array([[0, 4]]))
    f = dag.add(0, 0, "fetch")
    r = dag.add(0, 0, "recv", [1], reduce="sum", deps=[f])
    dag.add(0, 0, "deliver", deps=[r])
    g = dag.add(1, 0, "fetch")
    r1 = dag.add(1, 0, "recv", [0], reduce="sum", deps=[g])
    dag.add(1, 0, "send", [0], deps=[r1])  # 1 sends only after receiving, 0 never sends: 4 actions stuck
    errs = verify(dag).errors
    assert ("deadlock: 4 actions can never run, e.g. 1 (recv at node 0, chunk 0), "
            "2 (deliver at node 0, chunk 0), 4 (recv at node 1, chunk 0)") in errs, errs


def test_report_fields(base):
    _, dag = base
    rep = verify(dag)
    assert rep.ok and rep.n_actions == len(dag)
    assert len(rep.levels) == len(dag) and max(rep.levels) == rep.rounds
    fetches = [a for a in range(len(dag)) if dag.op[a] == "fetch"]
    assert all(rep.levels[a] == 0 for a in fetches)


def test_double_counting_names_the_nodes_counted_twice():
    # node 1 gets node 0's partial sum twice: once directly and once inside node 2's
    dag = Dag(["a", "b", "c"], np.zeros(3, dtype=int), np.array([[0, 4]]))
    f0 = dag.add(0, 0, "fetch")
    dag.add(0, 0, "send", [1, 2], deps=[f0])
    f2 = dag.add(2, 0, "fetch")
    r2 = dag.add(2, 0, "recv", [0], reduce="sum", deps=[f2])
    dag.add(2, 0, "send", [1], deps=[r2])
    f1 = dag.add(1, 0, "fetch")
    dag.add(1, 0, "recv", [0, 2], reduce="sum", deps=[f1])
    errs = verify(dag).errors
    assert "double counting: node 1 adds chunk 0 from node 2 with contributions of nodes [0] already in its buffer" in errs


def test_double_counting_names_at_most_five_nodes():
    # node 0 adds node 1's sum of nodes 1..7 twice: directly, and inside node 8's sum
    n = 9
    dag = Dag([f"h{i}" for i in range(n)], np.zeros(n, dtype=int), np.array([[0, 4]]))
    f1 = dag.add(1, 0, "fetch")
    r1 = dag.add(1, 0, "recv", list(range(2, 8)), reduce="sum", deps=[f1])
    dag.add(1, 0, "send", [0, 8], deps=[r1])
    for p in range(2, 8):
        f = dag.add(p, 0, "fetch")
        dag.add(p, 0, "send", [1], deps=[f])
    f8 = dag.add(8, 0, "fetch")
    r8 = dag.add(8, 0, "recv", [1], reduce="sum", deps=[f8])
    dag.add(8, 0, "send", [0], deps=[r8])
    f0 = dag.add(0, 0, "fetch")
    dag.add(0, 0, "recv", [1, 8], reduce="sum", deps=[f0])
    errs = [e for e in verify(dag).errors if e.startswith("double")]
    assert errs == ["double counting: node 0 adds chunk 0 from node 8 with contributions of nodes "
                    "[1, 2, 3, 4, 5] already in its buffer"]


def test_errors_are_capped_at_twenty_by_default():
    dag = Dag([f"h{i}" for i in range(30)], np.zeros(30, dtype=int), np.array([[0, 4]]))
    for p in range(1, 30):
        dag.add(0, 0, "send", [p])  # 29 sends nobody receives
    assert len(verify(dag).errors) == 20


def test_structure_errors_go_on_past_an_out_of_range_action():
    dag = _one_action(node=3, chunk=0, op="fetch")
    dag.add(0, 0, "send")
    assert verify(dag).errors == ["action 0 (fetch at node 3, chunk 0): node or chunk out of range",
                                  "action 1 (send at node 0, chunk 0): no peers"]


def test_race_behind_two_unordered_sends():
    # node 0: fetch -> {send to 2, send to 3}; a recv waits for both sends, the deliver only for the
    # second: the deliver may read the buffer while the recv writes it (checked past the unordered
    # send/deliver pair, which is fine on its own)
    dag = Dag(["a", "b", "c", "d"], np.zeros(4, dtype=int), np.array([[0, 4]]))
    f1 = dag.add(1, 0, "fetch")
    dag.add(1, 0, "send", [0], deps=[f1])
    f0 = dag.add(0, 0, "fetch")
    s2 = dag.add(0, 0, "send", [2], deps=[f0])
    s3 = dag.add(0, 0, "send", [3], deps=[f0])
    r = dag.add(0, 0, "recv", [1], reduce="sum", deps=[s2, s3])
    d = dag.add(0, 0, "deliver", deps=[s3])
    races = [e for e in verify(dag).errors if e.startswith("race")]
    assert races == [f"race: actions {r} (recv) and {d} (deliver) of node 0, chunk 0 touch the merge buffer "
                     "without an order"]


def test_race_behind_two_unordered_sum_receives():
    # node 0 sums from 1 and 2 in any order (fine), sends once both are in, and sums from 3 after
    # the receive from 2 only: that receive may write while the send reads
    dag = Dag(["a", "b", "c", "d"], np.zeros(4, dtype=int), np.array([[0, 4]]))
    for p in (1, 2, 3):
        f = dag.add(p, 0, "fetch")
        dag.add(p, 0, "send", [0], deps=[f])
    f0 = dag.add(0, 0, "fetch")
    r1 = dag.add(0, 0, "recv", [1], reduce="sum", deps=[f0])
    r2 = dag.add(0, 0, "recv", [2], reduce="sum", deps=[f0])
    s = dag.add(0, 0, "send", [1], deps=[r1, r2])
    r3 = dag.add(0, 0, "recv", [3], reduce="sum", deps=[r2])
    races = [e for e in verify(dag).errors if e.startswith("race")]
    assert races == [f"race: actions {s} (send) and {r3} (recv) of node 0, chunk 0 touch the merge buffer "
                     "without an order"]


def test_check_raises_the_first_error_and_counts_the_rest():
    from plink.schedule.verify import check

    dag = Dag(["a", "b", "c"], np.zeros(3, dtype=int), np.array([[0, 4]]))
    dag.add(0, 0, "send")
    dag.add(1, 0, "send")
    with pytest.raises(ScheduleError) as e:
        check(dag)
    assert str(e.value) == "invalid schedule: action 0 (send at node 0, chunk 0): no peers (and 1 more)"
    dag.op[1] = "fetch"
    with pytest.raises(ScheduleError) as e:
        check(dag)
    assert str(e.value) == "invalid schedule: action 0 (send at node 0, chunk 0): no peers"
    rep = check(_two_node_dag("sum"))
    assert rep.ok and rep.levels == [0, 0, 1, 1, 0, 0, 1, 1]


def test_finite_json_replaces_inf_and_nan_everywhere():
    from plink.schedule.verify import finite_json

    doc = {"a": [1.5, float("inf"), (np.float64("nan"), np.int64(3))], "b": {"c": -float("inf")}, "d": "x"}
    out = finite_json(doc)
    assert out == {"a": [1.5, None, [None, 3]], "b": {"c": None}, "d": "x"}
    assert type(out["a"][2][1]) is int
    json.dumps(out, allow_nan=False)


# ---------------------------------------------------------------------------
# summarize: what `plink schedule` / `plink verify` print


def _summary_case(bw=10.0, capacity="cardinality", size=8):
    labels = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    probe = uniform_probe(9, bw=bw)
    plan = plan_schedule(probe, np.array(labels), size=size, chunk=4, capacity=capacity)
    return Schedule.from_plan(plan), probe


def test_summarize_verifies_up_to_the_limit_then_prices_the_plan():
    from plink.schedule.verify import summarize

    sched, _ = _summary_case()
    n, c = 9, 2
    est = int(4.3 * n * c)  # about 4.3 C N actions: at the limit it verifies
    at = summarize(sched, verify_limit=est)
    assert at["verified"] is True and at["errors"] == [] and at["actions"] == len(expand(sched.plan))
    assert "note" not in at
    over = summarize(Schedule.from_plan(sched.plan), verify_limit=est - 1)
    assert over["verified"] is None and over["errors"] == [] and "actions" not in over
    assert over["note"] == "not verified: about 77 actions (> 76); run 'plink verify' (about 56.4 KiB of memory)"
    for key in ("rounds", "bytes_total", "bytes_cross_group", "table41", "balance"):
        assert over[key] == at[key], key  # the plan's traffic, priced without the DAG, is the DAG's
    assert (over["hosts"], over["groups"], over["size"], over["chunks"], over["chunk"]) == (9, 3, 8, 2, 4)
    sched.dag  # once the DAG is built it is verified whatever its size
    assert summarize(sched, verify_limit=1)["verified"] is True


def test_summarize_of_a_wrong_schedule_prices_nothing():
    from plink.schedule.verify import summarize

    sched, _ = _summary_case()
    dag = sched.dag.copy()
    dag.reduce[find(dag, op="recv", reduce="copy")] = "sum"
    bad = Schedule(sched.hosts, sched.labels, sched.chunks, sched.size, sched.chunk_bytes, None, dag)
    out = summarize(bad, uniform_probe(9))
    assert out["verified"] is False and out["errors"][0].startswith("double counting")
    assert not {"rounds", "table41", "predicted", "model", "balance"} & set(out)  # no plan: no balance


def test_summarize_balance_needs_what_the_plan_was_balanced_for():
    from plink.schedule.plan import balance
    from plink.schedule.verify import summarize

    sched, probe = _summary_case(size=4 * 27)  # 27 chunks: every ratio is finite
    assert summarize(sched)["balance"] == balance(sched.plan)  # cardinality: no probe needed
    assert all(1 <= v < 3 for v in balance(sched.plan).values())
    bsched, probe = _summary_case(capacity="bandwidth", size=4 * 27)
    assert "balance" not in summarize(bsched)
    assert summarize(bsched, probe)["balance"] == balance(bsched.plan, probe.bandwidth)


def test_summarize_prices_with_the_measured_or_the_assumed_bandwidth():
    from plink.schedule.verify import summarize

    sched, probe = _summary_case(bw=2.5)
    measured = summarize(sched, probe)
    assert measured["model"] == "shared links: host NICs and group uplinks"
    assert "assumed_bandwidth_gbps" not in measured
    no_bw = from_matrix(probe.latency, probe.names)
    assumed = summarize(sched, no_bw, assumed_gbps=2.5)
    assert assumed["model"] == "shared links: host NICs assumed 2.5 Gbit/s and group uplinks"
    assert assumed["assumed_bandwidth_gbps"] == 2.5
    # NICs assumed at 2.5 Gbit/s price exactly like NICs measured at 2.5 Gbit/s
    assert assumed["predicted"] == measured["predicted"]
    assert summarize(sched, no_bw)["model"] == "shared links: host NICs assumed 10 Gbit/s and group uplinks"
    assert summarize(sched, no_bw)["predicted"] != assumed["predicted"]
    # no uplink measured: the notes say what the model assumed for them
    assert any("no group uplink measured: assumed the oversubscribed case" in n for n in measured["notes"])
    with pytest.raises(ScheduleError) as e:
        summarize(sched, from_matrix(probe.latency, probe.names[::-1]))
    assert str(e.value) == ("the probe file's hosts differ from the schedule's: the same hosts in another order "
                            "(the schedule's node i is the probe's host i)")
    # a probe with pair bandwidths over other hosts: the same error, not numpy's broadcast error (an
    # "internal error" from plink verify)
    fewer = ProbeData(hosts=probe.hosts[:-1], latency=probe.latency[:-1, :-1], bandwidth=probe.bandwidth[:-1, :-1])
    with pytest.raises(ScheduleError) as e:
        summarize(sched, fewer)
    assert str(e.value) == (f"the probe file's hosts differ from the schedule's: 1 of the schedule's not in the "
                            f"probe ({probe.names[-1]!r})")


def test_summarize_prices_the_ring_as_plink_order_does():
    """plink probe --bandwidth measures the pairs of a round at once, so a pair across racks gets its
    share of a loaded uplink. The time model priced every pair at that rate and no uplink, so it priced
    the flat ring 1.56x what plink order's shared-link model gives (and the Gloo ring measured) on a
    16-host cluster, and a user weighing 2LHA against plink's ring read opposite advice. It now prices
    every round on plink order's shared links, so the two agree on the same ring."""
    from plink.pricing import Groups, network
    from plink.schedule.timemodel import pair_cost as timemodel_pair_cost, predict_time, ring_traffic
    from plink.schedule.verify import summarize
    from plink.solvers.contention import SharedCostModel

    probe = simulate_datacenter(racks=3, hosts_per_rack=4, bandwidth=True, host_gbps=10, seed=2)
    probe.meta["bandwidth"] = {"tool": "auto", "seconds": 1.0, "streams": 1}  # as plink probe --bandwidth writes
    plan = plan_schedule(probe, size=16 * 2**20)
    sched = Schedule.from_plan(plan)
    out = summarize(sched, probe)
    ring = SharedCostModel("ring", network(probe, Groups(np.asarray(plan.labels), "x")), plan.size, 2)
    order_price = ring(np.argsort(plan.labels, kind="stable")) * 1e6
    # the same bandwidth term; the latency chains differ by at most 2% here
    assert out["predicted"]["ring"]["time_us"] == pytest.approx(order_price, rel=0.02)
    pairs = predict_time("ring", ring_traffic(plan.labels, plan.size), timemodel_pair_cost(probe), plan.labels)
    assert pairs.time_us > 1.5 * order_price  # what the summary said before
    assert "note_rounds" not in out and "ring_shared_link_us" not in out  # no second figure to reconcile


def test_unmeasured_note_says_what_the_shared_network_fills_in():
    from plink.data.inputs import MATRIX_BANDWIDTH
    from plink.schedule.timemodel import shared_network, unmeasured_note

    lat = np.array([[0, 5, np.nan, 9], [5, 0, 8, 9], [np.nan, 8, 0, 4], [9, 9, 4, 0]])
    bw = np.array([[np.nan, 4, 1, 1], [4, np.nan, 1, 1], [1, 1, np.nan, 4], [1, 1, 4, np.nan]])
    labels = np.array([0, 0, 1, 1])
    probe = from_matrix(lat, list("abcd"), bandwidth=bw)
    assert unmeasured_note(probe) == "predicted times price 2 unmeasured latency entries at the largest measured " \
        "between their groups"
    net = shared_network(probe, labels)
    assert net.latency[0, 2] == pytest.approx(9e-6 / 2)  # the largest between groups 0 and 1, one way
    alone = bw.copy()
    alone[3, :] = alone[:, 3] = np.nan
    probe = from_matrix(np.nan_to_num(lat, nan=9.0), list("abcd"), bandwidth=alone)
    assert unmeasured_note(probe) == "predicted times price 1 host without a measured bandwidth at the median host NIC"
    net = shared_network(probe, labels)
    assert net.nic_send[3] == pytest.approx(np.median(net.nic_send[:3]))
    probe.meta["bandwidth_source"] = MATRIX_BANDWIDTH  # a matrix measured pair by pair: entries, not hosts
    assert unmeasured_note(probe) == "predicted times price 6 unmeasured bandwidth entries at the smallest " \
        "measured between their groups"
    assert unmeasured_note(from_matrix(np.nan_to_num(lat, nan=9.0), list("abcd"), bandwidth=bw)) is None
    # a host whose fast (in-group) pairs are unmeasured gets a slow NIC: said (it was priced silently)
    some = bw.copy()
    some[0, 1] = some[1, 0] = np.nan
    probe = from_matrix(np.nan_to_num(lat, nan=9.0), list("abcd"), bandwidth=some)
    assert unmeasured_note(probe) == ("predicted times price host NICs as each host's fastest measured pair, with "
                                      "2 of 12 bandwidth entries unmeasured (under half the median of 2.5 Gbit/s, "
                                      "perhaps for pairs unmeasured: a at 1 Gbit/s, b at 1 Gbit/s)")
    assert shared_network(probe, labels).nic_send[0] == pytest.approx(1e9 / 8)  # 1 Gbit/s, not 4


def test_shared_round_time_by_hand():
    """A round on shared links: its largest one-way latency plus its busiest link, a pair's messages
    of the round one flow; a path cap (a pair measured alone) bounds a flow on its own."""
    from plink.schedule.timemodel import Traffic, shared_round_time
    from plink.solvers.contention import Network

    lat = np.array([[0, 5, 7, 7], [5, 0, 7, 7], [7, 7, 0, 5], [7, 7, 5, 0]], dtype=float) * 1e-6  # one way, s
    groups = np.array([0, 0, 1, 1])
    nic = np.full(4, 1000.0)  # bytes/s
    net = Network(lat, nic, nic, groups, np.array([500.0, 500.0]), np.array([500.0, 500.0]))
    # 0 and 1 both send 300 B across (one uplink out: 600 B at 500 B/s); 2 sends 100 + 100 B to 3 (in a group)
    t = Traffic(np.array([0, 1, 2, 2]), np.array([2, 3, 3, 3]), np.array([300.0, 300.0, 100.0, 100.0]))
    assert shared_round_time(t, net) == pytest.approx(7 + 600 / 500 * 1e6)
    # host 3's NIC in: 300 + 200 B at 1000 B/s = 0.5 s < the uplink's 1.2 s; without the cross traffic it binds
    inside = Traffic(np.array([2, 2]), np.array([3, 3]), np.array([100.0, 100.0]))
    assert shared_round_time(inside, net) == pytest.approx(5 + 200 / 1000 * 1e6)
    capped = Network(lat, nic, nic, groups, np.array([500.0, 500.0]), np.array([500.0, 500.0]),
                     path=np.full((4, 4), 100.0))
    assert shared_round_time(inside, capped) == pytest.approx(5 + 200 / 100 * 1e6)  # one flow of 200 B
    assert shared_round_time(Traffic(np.array([], int), np.array([], int), np.array([])), net) == 0.0


def test_flat_ring_latency_is_plink_orders_chain_not_the_slowest_edge_every_step():
    """On wide-area latencies the flat ring was charged its slowest edge at each of its 2(N-1) steps:
    PlanetLab 490 at 251.6 s against plink order's 23.4 s for the same ring, so 2LHA read 135x. The
    ring baseline on shared links is now plink order's own price of that ring."""
    from plink.pricing import Groups, network
    from plink.schedule.timemodel import predict_all, predict_time, ring_traffic, shared_network
    from plink.solvers.contention import SharedCostModel

    rng = np.random.default_rng(4)
    pts = rng.random((12, 2)) * 100e3  # hosts over a continent: RTT (us) from distance
    lat = np.hypot(*(pts[:, None, :] - pts[None, :, :]).transpose(2, 0, 1)) + 100
    probe = from_matrix(lat, [f"h{i}" for i in range(12)])
    labels = np.arange(12) % 3
    net = shared_network(probe, labels)
    ring = predict_all([], net, labels, 2**20)["ring_contiguous"]
    from plink.solvers.groupsearch import contiguous_orders

    blocks = contiguous_orders(labels)  # the racks in each of their 3! orders: plink order's rack-contiguous row
    order = SharedCostModel("ring", network(probe, Groups(labels, "x")), 2**20, 2).batch(blocks).min()
    assert ring.time_us == pytest.approx(order * 1e6)
    assert ring.rounds == 22 and ring.bytes_total == pytest.approx(22 * 2**20)
    steps = predict_time("ring", ring_traffic(labels, 2**20), net, labels).time_us  # the slowest edge every step
    assert steps > 1.5 * ring.time_us


def test_flat_ring_baseline_is_the_ring_plink_order_would_choose():
    """The flat ring baseline was the ring rack by rack over the racks priced, never searched: on
    PlanetLab 490 23.4 s where plink order's ring is 6.0 s, so 2LHA read 12.6x faster than a ring
    the user would not run (3.2x against plink order's). It is now plink order's search on the same
    links (deterministic), the rack-contiguous ring reported beside it."""
    from plink.schedule.timemodel import (RING_SEARCH_ITERS, contiguous_ring, predict_all, ring_order,
                                          shared_network)
    from plink.solvers.contention import SharedCostModel
    from plink.solvers.groupsearch import contiguous_orders, minimise_shared

    rng = np.random.default_rng(4)
    pts = rng.random((24, 2)) * 100e3  # hosts over a continent, in groups that do not follow geography
    lat = np.hypot(*(pts[:, None, :] - pts[None, :, :]).transpose(2, 0, 1)) + 100
    probe = from_matrix(lat, [f"h{i}" for i in range(24)])
    labels = np.arange(24) % 3
    net = shared_network(probe, labels)
    preds = predict_all([], net, labels, 2**20)
    model = SharedCostModel("ring", net, 2**20, 2)
    contiguous = model.batch(contiguous_orders(net.groups, lat=net.latency)).min()  # (3 racks: all 6 orders)
    assert preds["ring_contiguous"].time_us == pytest.approx(contiguous * 1e6)
    assert preds["ring"].time_us < 0.7 * preds["ring_contiguous"].time_us  # the search finds a far better ring
    order, seconds = ring_order(net, 2**20)
    assert sorted(order.tolist()) == list(range(24)) and model(order) == pytest.approx(seconds)
    assert preds["ring"].time_us == pytest.approx(seconds * 1e6)
    start, start_price = contiguous_ring(net, 2**20)
    assert start_price == pytest.approx(contiguous) and model(start) == pytest.approx(start_price)
    same = minimise_shared(model, init=start, time_limit=3600.0, max_iter=RING_SEARCH_ITERS,
                           seed=0)  # plink order's search, same budget
    assert seconds == pytest.approx(same.cost)
    assert ring_order(net, 2**20)[1] == seconds  # deterministic
    assert preds["ring"].rounds == 46 and preds["ring"].bytes_total == pytest.approx(46 * 2**20)
    # the CLI says which ring it is and gives the rack-contiguous one
    plan = plan_schedule(probe, labels, size=2**20, chunk=2**16)
    from plink.schedule.verify import summarize

    out = summarize(Schedule.from_plan(plan, 2**16), probe)
    assert out["predicted"]["ring"]["time_us"] == pytest.approx(seconds * 1e6)
    assert out["predicted"]["ring_contiguous"]["time_us"] == pytest.approx(contiguous * 1e6)


def test_shared_network_prices_the_measured_uplinks_whatever_the_schedules_groups():
    """A schedule over groups that were not the measured racks was priced on those groups' links: measured
    uplinks dropped, traffic inside a mixed group free, so a bad grouping read faster than the racks and
    the sharded PS (which does not depend on groups) ranged 0.88-3.74 s on one probe."""
    from types import SimpleNamespace

    from plink.schedule.timemodel import predict_all, shared_network

    n = 8
    lat = np.full((n, n), 50.0)
    np.fill_diagonal(lat, 0)
    bw = np.full((n, n), 1.0)
    np.fill_diagonal(bw, np.nan)
    probe = from_matrix(lat, [f"h{i}" for i in range(n)], bandwidth=bw)
    probe.uplinks = [SimpleNamespace(hosts=(0, 1, 2, 3), up_bps=2.5e7, down_bps=2.5e7),
                     SimpleNamespace(hosts=(4, 5, 6, 7), up_bps=2.5e7, down_bps=2.5e7)]
    racks = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    mixed = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    for labels in (racks, mixed, np.zeros(n, int)):
        net = shared_network(probe, labels)
        np.testing.assert_array_equal(net.groups, racks)  # the measured racks, not the schedule's groups
        assert net.up.tolist() == [2.5e7, 2.5e7] and "uplinks" not in net.assumed
    ps = {predict_all([], shared_network(probe, g), g, 2**20)["ps"].time_us for g in (racks, mixed)}
    assert len(ps) == 1
    # the flat ring runs rack by rack over the racks priced, whatever the schedule's groups (a ring in the
    # mixed groups' order crossed the uplinks at every hop and made 2LHA read 1.7x faster than it)
    rings = {predict_all([], shared_network(probe, g), g, 2**20)["ring"].time_us for g in (racks, mixed)}
    assert len(rings) == 1
    from plink.schedule.timemodel import network_groups

    # uplinks measured over part of the hosts: theirs where measured, the schedule's groups elsewhere
    probe.uplinks = probe.uplinks[:1]
    np.testing.assert_array_equal(network_groups(probe, mixed), [0, 0, 0, 0, 1, 2, 1, 2])
    net = shared_network(probe, mixed)
    assert net.up[0] == 2.5e7 and "uplinks" in net.assumed  # the measured rack priced, the others assumed
    with pytest.raises(InputError, match="8 integers"):
        shared_network(probe, np.zeros(7, int))
    bare = from_matrix(lat, probe.names)  # no uplinks measured: the schedule's groups, uplinks assumed
    np.testing.assert_array_equal(shared_network(bare, mixed * 3).groups, mixed)  # (labels need not be 0..k-1)
    assert "uplinks" in shared_network(bare, mixed).assumed


def test_pipelined_runs_the_waves_as_the_executor_does():
    """Wave w does its round d in step w + d (plink.schedule.executor): W + R - 1 steps, every message
    once, in the step of its chunk's wave; one wave gives the rounds back."""
    from plink.schedule.timemodel import pipelined, predict_all

    labels = np.array([0, 0, 1, 1])
    plan = make_plan(labels, size=8 * 1000, chunk=1000)  # 8 chunks
    rounds = plan_traffic(plan)
    assert all(t.chunk is not None for t in rounds)
    assert pipelined(rounds, plan.n_chunks, 1) == rounds
    steps = pipelined(rounds, plan.n_chunks, 4)
    assert len(steps) == 4 + len(rounds) - 1
    key = lambda ts: sorted((int(a), int(b), float(c), int(h)) for t in ts
                            for a, b, c, h in zip(t.src, t.dst, t.nbytes, t.chunk))
    assert key(steps) == key(rounds)  # every message once
    for d, t in enumerate(rounds):
        for c in np.unique(t.chunk):
            step = d + c * 4 // plan.n_chunks
            assert c in steps[step].chunk
    assert len(pipelined(rounds, plan.n_chunks, 100)) == 8 + len(rounds) - 1  # no more waves than chunks
    with pytest.raises(OptionError):
        pipelined(rounds, plan.n_chunks, 0)
    # a chunk count that is not the plan's dropped messages silently (19.7 of 503 MB priced)
    with pytest.raises(InputError, match="not one of the 3 chunks"):
        pipelined(rounds, 3, 2)
    with pytest.raises(OptionError, match="waves must be a whole number >= 1"):
        predict_all(rounds, pair_cost(uniform_probe(4)), labels, 8000.0, waves=0, n_chunks=8)


def test_summarize_prices_2lha_in_the_executors_waves():
    from plink.schedule.executor import DEFAULT_WAVES
    from plink.schedule.timemodel import pipelined, predict_time, shared_network
    from plink.schedule.verify import summarize

    probe = simulate_datacenter(racks=2, hosts_per_rack=4, bandwidth=True, host_gbps=10, seed=3)
    plan = plan_schedule(probe, size=4 * 2**20)
    sched = Schedule.from_plan(plan)
    out = summarize(sched, probe)
    net = shared_network(probe, plan.labels)
    rounds = plan_traffic(plan)
    waves = predict_time("2lha", pipelined(rounds, plan.n_chunks, DEFAULT_WAVES), net, plan.labels)
    back_to_back = predict_time("2lha", rounds, net, plan.labels)
    assert out["waves"] == DEFAULT_WAVES
    assert out["predicted"]["2lha"]["time_us"] == pytest.approx(waves.time_us)
    assert waves.time_us < back_to_back.time_us  # one wave's local rounds overlap another's global ones
    assert out["predicted"]["2lha"]["rounds"] == 4  # the schedule's rounds, not the pipeline's steps
    assert summarize(sched, probe, waves=1)["predicted"]["2lha"]["time_us"] == pytest.approx(back_to_back.time_us)


# ---------------------------------------------------------------------------
# the schedule file: defaults, optional keys and layout


def _doc(base, form="compact", drop=(), **over):
    plan, _ = base
    doc = Schedule.from_plan(plan).to_dict(form)
    doc = {k: v for k, v in doc.items() if k not in drop}
    doc.update(over)
    return doc


def _schedule_err(doc, path="x.json"):
    with pytest.raises(ScheduleError) as e:
        from_dict(doc, path)
    return str(e.value)


def test_master_tables_are_read_whenever_one_is_there(base):
    assert _schedule_err(_doc(base, "dag", drop=("lm",))) == "x.json: missing 'lm'"
    assert _schedule_err(_doc(base, "dag", drop=("gm",))) == "x.json: missing 'gm'"
    assert _schedule_err(_doc(base, "compact", drop=("lm", "gm"))) == "x.json: missing 'lm'"
    assert from_dict(_doc(base, "compact", drop=("rules",))).plan is not None  # rules default to 2lha-v1
    assert _schedule_err(_doc(base, lm="x")) == "x.json: lm must be whole numbers, got 'x'"


@pytest.mark.parametrize("key, value, message", [
    ("groups", 3, "x.json: 'groups' must be a list"),
    ("chunks", "x", "x.json: 'chunks' must be a list"),
    ("meta", [1], "x.json: 'meta' must be an object"),
    ("autotune", 5, "x.json: 'autotune' must be an object"),
])
def test_schedule_file_field_types(base, key, value, message):
    assert _schedule_err(_doc(base, **{key: value})) == message


def test_schedule_file_default_path_and_file_path(base, tmp_path):
    with pytest.raises(ScheduleError) as e:
        from_dict({"format": "x"})
    assert str(e.value).startswith("<schedule>: ")
    p = tmp_path / "s.json"
    p.write_text(json.dumps(_doc(base, form="compact") | {"form": "tree"}))
    with pytest.raises(ScheduleError) as e:
        load_schedule(p)
    assert str(e.value) == f"{p}: 'form' must be 'dag' or 'compact'"


def test_numbers_written_as_floats_read_as_integers(base):
    # another JSON writer may put 65536.0 for 65536: the same schedule
    plan, _ = base
    doc = _doc(base)
    as_float = {**doc, **{k: json.loads(json.dumps(np.asarray(doc[k], dtype=float).tolist()))
                          for k in ("groups", "chunks", "lm", "gm")}}
    back = from_dict(as_float)
    for arr in (back.labels, back.chunks, back.plan.lm, back.plan.gm):
        assert arr.dtype == np.int64
    np.testing.assert_array_equal(back.plan.lm, plan.lm)
    assert verify(back.dag).ok


def test_nominal_chunk_and_capacity_survive_a_round_trip(tmp_path):
    plan = make_plan([0, 0, 0, 1, 1, 1], size=6, chunk=4, capacity="bandwidth")  # chunks of 4 and 2
    assert Schedule.from_plan(plan).chunk_bytes == 4
    s = Schedule.from_plan(plan, chunk_bytes=3)
    assert s.chunk_bytes == 3
    s.save(tmp_path / "s.json")  # the default form is the DAG
    text = (tmp_path / "s.json").read_text()
    back = load_schedule(tmp_path / "s.json")
    assert back.chunk_bytes == 3 and back.plan.capacity == "bandwidth" and back._dag is not None
    doc = json.loads(text)
    assert doc["form"] == "dag" and doc["rules"] == "2lha-v1" and doc["action_fields"] == [
        "node", "chunk", "op", "peers", "reduce", "deps"]
    assert s.to_dict()["form"] == "dag" and json.loads(s.dumps())["form"] == "dag"
    # one action, one master row and one chunk per line, without spaces
    assert '\n  [0,0,"fetch",[],null,[]],\n' in text
    assert '\n "chunks": [\n  [0,4],\n  [4,2]\n ]' in text
    assert f'\n "lm": [\n  {json.dumps(plan.lm[0].tolist(), separators=(",", ":"))},\n' in text


def test_a_hand_made_dag_has_no_rules_and_no_compact_form(base):
    _, dag = base
    s = Schedule(list(dag.hosts), dag.labels, dag.chunks, 8, 4, None, dag)
    doc = s.to_dict("dag")
    assert "rules" not in doc and "lm" not in doc and len(doc["actions"]) == len(dag)
    with pytest.raises(ScheduleError) as e:
        s.to_dict("compact")
    assert str(e.value) == "a schedule without a master assignment has no compact form"
    with pytest.raises(OptionError, match="^form must be 'dag' or 'compact', got 'tree'$"):
        s.to_dict("tree")
    s.meta = {"x": float("nan")}
    with pytest.raises(ValueError):  # never writes a file that is not JSON
        s.dumps()


def test_an_empty_dag_file_reads():
    doc = {"format": "plink-schedule", "version": 1, "form": "dag", "hosts": ["a"], "groups": [0],
           "chunks": [], "size": 0, "actions": []}
    s = from_dict(doc)
    assert s.chunk_bytes == 0 and len(s.dag) == 0 and s.plan is None


# ---------------------------------------------------------------------------
# the time model, by hand


def test_round_time_by_hand():
    from plink.schedule.timemodel import Traffic, round_time
    from plink.solvers.costmodels import PairCost

    lat = np.array([[0, 5, 7], [5, 0, 3], [7, 3, 0]], dtype=float)
    bw = np.array([[np.nan, 1, 2], [1, np.nan, 4], [2, 4, np.nan]])  # Gbit/s: 8e-3 / bw us per byte
    pc = PairCost.from_matrices(lat, bw)
    # node 0 sends 1000 B to 1 and 2000 B to 2; node 2 sends 500 B to 1
    t = Traffic(np.array([0, 0, 2]), np.array([1, 2, 1]), np.array([1000.0, 2000.0, 500.0]))
    send0 = 1000 * 8e-3 / 1 + 2000 * 8e-3 / 2   # 16 us: node 0's NIC out
    recv1 = 1000 * 8e-3 / 1 + 500 * 8e-3 / 4    # 9 us: node 1's NIC in
    assert round_time(t, pc) == pytest.approx(7 + max(send0, recv1))
    one = Traffic(np.array([1]), np.array([2]), np.array([4000.0]))
    assert round_time(one, pc) == pytest.approx(3 + 4000 * 8e-3 / 4)
    assert round_time(Traffic(np.array([], int), np.array([], int), np.array([])), pc) == 0.0
    np.testing.assert_array_equal(t.aggregated(3), [[0, 1000, 2000], [0, 0, 0], [0, 500, 0]])


def test_pair_cost_fills_missing_pairs_with_the_worst_measured():
    from plink.schedule.timemodel import pair_cost

    lat = np.array([[0, 5, np.nan], [5, 0, 3], [np.nan, 3, 0]])
    bw = np.array([[np.nan, 0.5, 0.8], [0.5, np.nan, np.nan], [0.8, np.nan, np.nan]])
    pc = pair_cost(from_matrix(lat, ["a", "b", "c"], bandwidth=bw))
    assert pc.latency[0, 2] == pc.latency[2, 0] == 5  # the largest measured latency
    assert pc.latency[1, 2] == 3 and pc.latency[0, 0] == 0  # measured pairs and the diagonal stay
    assert pc.inv_bw[1, 2] == pytest.approx(8e-3 / 0.5)  # the smallest measured bandwidth
    assert pc.inv_bw[0, 2] == pytest.approx(8e-3 / 0.8)  # measured pairs stay
    none = pair_cost(from_matrix(np.full((2, 2), np.nan), ["a", "b"], bandwidth=np.full((2, 2), np.nan)))
    assert none.latency[0, 1] == 1.0 and none.inv_bw[0, 1] == pytest.approx(8e-3)  # nothing measured: 1 us, 1 Gbit/s
    lat_only = pair_cost(from_matrix(lat, ["a", "b", "c"]))
    assert not lat_only.inv_bw.any()  # no bandwidth and none assumed: latency only
    slow = pair_cost(from_matrix(lat, ["a", "b", "c"]), assumed_gbps=0.5)
    assert slow.inv_bw[0, 1] == pytest.approx(8e-3 / 0.5) and slow.inv_bw[0, 0] == 0


@pytest.mark.parametrize("gbps", [0, -1, float("inf"), float("nan")])
def test_assumed_bandwidth_must_be_positive(gbps):
    from plink.schedule.timemodel import pair_cost

    with pytest.raises(PlinkError) as e:
        pair_cost(from_matrix(np.array([[0, 1], [1, 0]]), ["a", "b"]), assumed_gbps=gbps)
    assert str(e.value) == f"--assume-bandwidth (assumed_gbps) must be a number > 0 Gbit/s, got {gbps}"


def test_baseline_traffic_shapes():
    from plink.schedule.timemodel import ps_traffic, ring_traffic

    labels = np.array([i % 3 for i in range(40)])
    (ring,) = ring_traffic(labels, 80.0)
    order = np.argsort(labels, kind="stable")  # group by group, hosts in index order within a group
    np.testing.assert_array_equal(ring.src, order)
    np.testing.assert_array_equal(ring.dst, np.roll(order, -1))  # to the successor
    assert ring.repeat == 78 and ring.nbytes.tolist() == [2.0] * 40
    (two,) = ring_traffic(np.array([0, 1]), 8.0)
    assert two.src.tolist() == [0, 1] and two.dst.tolist() == [1, 0] and two.repeat == 2
    assert ring_traffic(np.array([0]), 8.0) == [] and ps_traffic(1, 8.0) == []
    push, pull = ps_traffic(2, 8.0)
    assert (push.src.tolist(), push.dst.tolist(), pull.src.tolist(), pull.dst.tolist()) == ([0, 1], [1, 0], [1, 0], [0, 1])
    assert push.nbytes.tolist() == [4.0, 4.0]


def test_predictions_are_named_and_keep_their_rounds():
    from plink.schedule.timemodel import Traffic, predict_all

    probe = uniform_probe(4, lat=10.0, bw=1.0)
    pc = pair_cost(probe)
    labels = np.array([0, 0, 1, 1])
    one = [Traffic(np.array([0]), np.array([2]), np.array([1000.0]))]
    preds = predict_all(one, pc, labels, 1000.0)
    assert [p.name for p in preds.values()] == list(preds) == ["2lha", "ring", "ps"]
    p = preds["2lha"]
    assert p.round_us == [pytest.approx(10 + 8.0)] and p.time_us == pytest.approx(18.0)
    assert p.to_dict() == {"name": "2lha", "time_us": p.time_us, "rounds": 1, "bytes_total": 1000.0,
                           "bytes_cross_group": 1000.0}
    plan = make_plan(labels, size=1000, chunk=1000)
    assert compare(plan, pc, one)["2lha"].rounds == 1  # the traffic given is priced, not the plan's
    assert compare(plan, pc)["2lha"].rounds == 4


def test_plan_traffic_of_one_host_is_empty():
    plan = Plan(["a"], [0], [[0, 4]], [[0]], [0], 4)
    assert plan_traffic(plan) == []
    assert verify(expand(plan)).traffic == []


def test_round_prices_refuse_messages_they_cannot_price():
    """shared_round_time / round_time took a host index past N (src * N + dst read as another pair: a
    price for traffic to a host that does not exist), negative bytes (a cheaper round) and NaN bytes
    (a NaN time) without a word."""
    from plink.schedule.timemodel import Traffic, pair_cost, round_time, shared_network, shared_round_time

    probe = simulate_datacenter(racks=2, hosts_per_rack=2, seed=0)
    net, pc = shared_network(probe, np.array([0, 0, 1, 1])), pair_cost(probe)
    bad = {"in 0..3, got 7": Traffic(np.array([0]), np.array([7]), np.array([10.0])),
           "in 0..3, got -1": Traffic(np.array([-1]), np.array([1]), np.array([10.0])),
           "finite and >= 0": Traffic(np.array([0]), np.array([1]), np.array([-10.0])),
           "finite and >= 0 ": Traffic(np.array([0]), np.array([1]), np.array([np.nan])),
           "one src, dst and byte count": Traffic(np.array([0, 1]), np.array([1]), np.array([1.0])),
           "integers": Traffic(np.array([0.0]), np.array([1.0]), np.array([1.0]))}
    for msg, t in bad.items():
        for price, cost in ((shared_round_time, net), (round_time, pc)):
            with pytest.raises(InputError, match=msg.strip()):
                price(t, cost)
    ok = Traffic(np.array([0, 2]), np.array([3, 1]), np.array([10.0, 0.0]))
    assert shared_round_time(ok, net) > 0 and round_time(ok, pc) > 0


# ---------------------------------------------------------------------------
# plan_schedule's and fallback_groups' arguments


@pytest.fixture(scope="module")
def eight():
    return simulate_datacenter(racks=2, hosts_per_rack=4, seed=1)


@pytest.mark.parametrize("labels", [
    [0.2] * 4 + [0.7] * 4,  # (cut to ints: one group)
    np.array([0.2] * 4 + [0.7] * 4),
    [-1] * 4 + [0] * 4,  # (numpy's 'must have no negative elements')
    [0] * 4 + [2] * 4,  # (a skipped group number: an IndexError)
    list("aaaabbbb"),  # (rack names: 'invalid literal for int()')
    np.array(list("aaaabbbb")),
    [(1, 2)] * 4 + [7] * 4,  # (labels that do not compare: in order of first appearance)
])
def test_plan_labels_are_categories(eight, labels):
    plan = plan_schedule(eight, labels, size=1 << 20)
    assert plan.k == 2 and plan.labels.tolist() == [0] * 4 + [1] * 4
    assert plan.lm.shape == (plan.n_chunks, 2)


def test_plan_labels_are_numbered_in_sorted_order(eight):
    assert plan_schedule(eight, list("bbbbaaaa"), size=1 << 20).labels.tolist() == [1] * 4 + [0] * 4
    assert plan_schedule(eight, [5] * 4 + [-3] * 4, size=1 << 20).labels.tolist() == [1] * 4 + [0] * 4
    ints = [1, 0, 2, 1, 0, 2, 1, 0]  # (labels 0..k-1 keep their numbers, and their plan)
    plan = plan_schedule(eight, ints, size=1 << 20)
    assert plan.labels.tolist() == ints
    assert plan_schedule(eight, np.array(ints, dtype=np.int32), size=1 << 20).lm.tolist() == plan.lm.tolist()


@pytest.mark.parametrize("labels, message", [
    ([None] + [0] * 7, "host 'vm000' has no group (label None): give every host a group label"),
    ([0] * 7 + [float("nan")], "host 'vm007' has no group (label nan): give every host a group label"),
    (np.array([0.0] * 7 + [np.nan]), "host 'vm007' has no group (label nan): give every host a group label"),
    ([0] * 4 + [1] * 3, "7 group labels for 8 hosts"),
    ([0, 1], "2 group labels for 8 hosts"),
    (np.zeros((2, 4), dtype=int), "group labels must be one label per host (1-D), got an array of shape (2, 4)"),
    ("aaaabbbb", "group labels must be a sequence of one label per host, got str"),
    ([[0]] * 8, "host 'vm000' has group label [0], which is not a label (a number or a name)"),
    (["r1"] * 4 + [7] * 4, "labels mix numbers and strings (7 and 'r1'): give one kind, group numbers or names"),
    ([1, "1"] * 4, "labels mix numbers and strings (1 and '1'): give one kind, group numbers or names"),
])
def test_plan_refuses_labels_that_are_not_one_group_per_host(eight, labels, message):
    from plink.errors import InputError

    with pytest.raises(InputError) as e:
        plan_schedule(eight, labels, size=1 << 20)
    assert str(e.value) == message


def test_plan_holds_its_own_labels(eight):
    from plink.schedule.plan import validate_plan

    lab = np.array([0] * 4 + [1] * 4)
    plan = plan_schedule(eight, lab, size=1 << 20)
    assert not np.shares_memory(plan.labels, lab)
    lab[:] = 0
    validate_plan(plan)
    assert plan.labels.tolist() == [0] * 4 + [1] * 4
    lm, gm = assign_masters(np.array([0, 1]), np.array([4.0]), np.array([1.0, 1.0]), np.ones(2))
    tables = [np.array([0, 1]), np.array([[0, 4]]), lm, gm]
    built = Plan(["a", "b"], *tables, 4)
    assert not any(np.shares_memory(a, b) for a, b in zip((built.labels, built.chunks, built.lm, built.gm), tables))


@pytest.mark.parametrize("kw, message", [
    ({"size": 1e6 + 0.5}, "buffer size must be a whole number of bytes, got 1000000.5"),
    ({"size": 1.5}, "buffer size must be a whole number of bytes, got 1.5"),  # (was: give --chunk 1.5B or less)
    ({"size": 1 << 20, "chunk": 1000.5}, "chunk size must be a whole number of bytes, got 1000.5"),
    ({"size": float("nan")}, "buffer size must be a whole number of bytes, got nan"),
    ({"size": True}, "buffer size must be a whole number of bytes, got True"),
    ({"size": "1MB"}, "buffer size must be a whole number of bytes, got '1MB' (the library takes a number of "
                      "bytes, e.g. 1 << 20; plink.units.parse_size reads a size with a unit, as the plink command "
                      "does)"),
    ({"size": 1 << 20, "chunk": "64KiB"}, "chunk size must be a whole number of bytes, got '64KiB' (the library "
                                          "takes a number of bytes, e.g. 1 << 20; plink.units.parse_size reads a "
                                          "size with a unit, as the plink command does)"),
])
def test_plan_sizes_are_whole_bytes(eight, kw, message):
    from plink.errors import OptionError

    with pytest.raises(OptionError) as e:
        plan_schedule(eight, **kw)
    assert str(e.value) == message


def test_plan_takes_whole_float_sizes(eight):
    plan = plan_schedule(eight, size=1e6, chunk=1000.0)
    assert plan.size == 1000000 and type(plan.size) is int and plan.n_chunks == 1000
    assert plan_schedule(eight, size=np.int32(1 << 20), chunk=np.float32(65536)).n_chunks == 16


@pytest.mark.parametrize("kw, message", [
    ({"k": -2}, "number of groups k must be a whole number >= 1, got -2"),  # (4 groups, no error)
    ({"k": 0}, "number of groups k must be a whole number >= 1, got 0"),  # (ZeroDivisionError)
    ({"k": 2.5}, "number of groups k must be a whole number >= 1, got 2.5"),
    ({"k": True}, "number of groups k must be a whole number >= 1, got True"),
    ({"elasticity": 0}, "elasticity must be a finite number >= 1 (group sizes N/(E k) .. E N/k), got 0"),
    ({"elasticity": 0.5}, "elasticity must be a finite number >= 1 (group sizes N/(E k) .. E N/k), got 0.5"),
    ({"elasticity": float("inf")}, "elasticity must be a finite number >= 1 (group sizes N/(E k) .. E N/k), got inf"),
])
def test_fallback_groups_refuses_bad_k_and_elasticity(eight, kw, message):
    from plink.errors import OptionError

    with pytest.raises(OptionError) as e:
        fallback_groups(eight, **kw)
    assert str(e.value) == message


def test_fallback_groups_takes_a_whole_float_k(eight):
    assert fallback_groups(eight, k=2.0).tolist() == fallback_groups(eight, k=2).tolist()


@pytest.mark.parametrize("capacity", ["foo", 1])
def test_plan_refuses_an_unknown_capacity(eight, capacity):
    from plink.errors import OptionError

    with pytest.raises(OptionError) as e:
        plan_schedule(eight, size=1 << 20, capacity=capacity)
    assert str(e.value) == f"unknown capacity mode {capacity!r} (choose from cardinality, bandwidth)"

    from plink.schedule.plan import capacities

    with pytest.raises(OptionError, match="^unknown capacity mode 'foo' "):
        capacities(np.array([0, 1]), np.ones((2, 2)), "foo")


def test_library_errors_of_the_schedule_are_plink_errors(eight):
    """Schedule.to_dict('tree') raised ValueError('tree'), summarize/compare/pipelined with waves=0 a bare
    ValueError, waves='x' or None a TypeError ('<' not supported), waves=1.5 was taken (reported as 1.5
    waves, run as 1), Schedule.from_plan(plan, 'x') an int() ValueError, assumed_gbps='x' and
    finetune(beta='x') TypeErrors: each is now an OptionError (one line in the plink command)."""
    from plink.schedule.autotune import finetune, model_stats
    from plink.schedule.timemodel import pipelined, shared_network
    from plink.schedule.verify import summarize

    plan = plan_schedule(eight, size=1 << 20, chunk=1 << 16)
    sched = Schedule.from_plan(plan)
    net = shared_network(eight, plan.labels)
    for waves in (0, -1, 1.5, "x", None):
        for call in (lambda: summarize(sched, eight, waves=waves), lambda: compare(plan, net, waves=waves),
                     lambda: pipelined(plan_traffic(plan), plan.n_chunks, waves)):
            with pytest.raises(OptionError) as e:
                call()
            assert str(e.value) == f"waves must be a whole number >= 1, got {waves!r}"
    assert summarize(sched, eight, waves=2.0)["waves"] == 2  # (a whole float is a count)
    for form in ("tree", None):
        for call in (sched.to_dict, sched.dumps):
            with pytest.raises(OptionError, match=f"^form must be 'dag' or 'compact', got {form!r}$"):
                call(form)
    for chunk in ("x", 1.5):
        with pytest.raises(OptionError, match=f"^chunk size must be a whole number of bytes, got {chunk!r}"):
            Schedule.from_plan(plan, chunk)
    with pytest.raises(OptionError, match=r"^--assume-bandwidth \(assumed_gbps\) must be a number > 0 Gbit/s, got 'x'$"):
        summarize(sched, eight, assumed_gbps="x")
    stats = model_stats(plan, pair_cost(eight))
    for kw, msg in (({"beta": "x"}, "beta must be a weight in [0, 1e+06], got 'x'"),
                    ({"epsilon": "x"}, "epsilon must be >= 1, got 'x'"),
                    ({"gamma": True}, "gamma must be a weight in [0, 1e+06], got True")):
        with pytest.raises(OptionError) as e:
            finetune(plan, stats, **kw)
        assert str(e.value) == msg


def test_a_hand_built_plan_refuses_tables_that_are_not_whole_numbers(eight, tmp_path):
    """Plan(labels=[..., 1.5]) cut 1.5 to 1 silently (an int64 cast), as it cut a master 0.5 to host 0
    and a NaN label to -2**63; a string or None gave int()'s or numpy's error. One-line InputErrors,
    naming the table; a schedule file with such a table says so with its path."""
    from plink.errors import InputError

    plan = plan_schedule(eight, size=1 << 20, chunk=1 << 18)
    good = dict(labels=plan.labels, chunks=plan.chunks, lm=plan.lm, gm=plan.gm)

    def build(**kw):
        t = {**good, **kw}
        return Plan(plan.hosts, t["labels"], t["chunks"], t["lm"], t["gm"], plan.size)

    for kw, msg in ((dict(labels=plan.labels + 0.5), "labels must be whole numbers, got 0.5"),
                    (dict(labels=[*plan.labels[:7].tolist(), 1.5]), "labels must be whole numbers, got 1.5"),
                    (dict(labels=[*plan.labels[:7].tolist(), float("nan")]), "labels must be whole numbers, got nan"),
                    (dict(labels=["a"] * 8), "labels must be whole numbers, got 'a'"),
                    (dict(labels=None), "labels must be whole numbers, got None"),
                    (dict(labels=3), "labels must be an array of whole numbers, got 3"),  # (len(): a TypeError)
                    (dict(labels=[0] * 7 + ["x"]), "labels must be whole numbers, got 'x'"),  # (numpy: '0', 'x')
                    (dict(lm=plan.lm + 0.5), "lm must be whole numbers, got 0.5"),
                    (dict(gm=plan.gm + 0.25), "gm must be whole numbers, got 0.25"),
                    (dict(chunks=plan.chunks * 1.0 + [0, 0.5]), "chunks must be whole numbers, got 262144.5"),
                    (dict(labels=[[0, 0, 0], [1]]), "labels must be an array of whole numbers, got a ragged list")):
        with pytest.raises(InputError) as e:
            build(**kw)
        assert str(e.value) == msg
    same = build(labels=plan.labels.astype(float), lm=plan.lm.tolist(), gm=plan.gm.astype(object))
    assert same.labels.tolist() == plan.labels.tolist() and same.lm.tolist() == plan.lm.tolist()  # (whole: taken)
    doc = Schedule.from_plan(plan).to_dict("compact")
    doc["lm"][0][0] += 0.5
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ScheduleError) as e:
        load_schedule(path)
    assert str(e.value) == f"{path}: lm must be whole numbers, got {doc['lm'][0][0]!r}"
