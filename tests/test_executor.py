"""The schedule executor equals torch.distributed.all_reduce (Gloo, local processes)."""

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

from plink.distributed.local import run_ranks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORLD = 4
SHAPES = [[0, 0, 1, 1], [0, 0, 0, 1], [0, 1, 2, 3], [0, 0, 0, 0]]


def make_schedule(labels, size, chunk):
    from plink.schedule.dag import Schedule
    from plink.data.probefile import from_matrix
    from plink.schedule.plan import plan_schedule

    n = len(labels)
    lat = np.full((n, n), 30.0)
    np.fill_diagonal(lat, 0.0)
    probe = from_matrix(lat, [f"r{i}" for i in range(n)])
    return Schedule.from_plan(plan_schedule(probe, np.array(labels), size=size, chunk=chunk))


def worker(rank):
    from plink.errors import PlinkError
    from plink.schedule.executor import all_reduce

    results = []
    for t, labels in enumerate(SHAPES):
        gen = torch.Generator().manual_seed(1000 * t + rank)
        rows = 250 if t % 2 == 0 else 256  # 3000 B: a short last chunk; 3072 B: equal chunks (aliased rows)
        x = torch.randint(-1000, 1000, (rows, 3), generator=gen).to(torch.float32)
        ref = x.clone()
        dist.all_reduce(ref)
        sched = make_schedule(labels, x.numel() * 4, 256)  # 12 chunks
        slow = x.clone()
        all_reduce(slow, sched, fast=False, waves=1)  # every action one by one: the reference
        one = x.clone()
        all_reduce(one, sched, waves=1)  # fast paths, no pipelining
        stats = {}
        out = all_reduce(x, sched, stats=stats)
        assert out is x
        results.append(bool(torch.equal(x, ref)) and bool(torch.equal(slow, ref)) and bool(torch.equal(one, ref)))
        results.append(all(row["src"] == f"r{rank}" and row["bytes"] > 0 for row in stats["links"]))
    # int64 and a second call (cached program)
    y = torch.arange(10, dtype=torch.int64) * (rank + 1)
    all_reduce(y, make_schedule(SHAPES[0], 80, 16))
    all_reduce(y, make_schedule(SHAPES[0], 80, 16))
    results.append(bool(torch.equal(y, torch.arange(10) * 40)))
    # a tensor that does not fit the schedule is a clear error
    try:
        all_reduce(torch.zeros(3), make_schedule(SHAPES[0], 16, 4))
        results.append(False)
    except PlinkError as exc:
        results.append("bytes" in str(exc))
    return [int(r) for r in results]


def test_executor_equals_gloo_all_reduce():
    res = run_ranks(WORLD, worker, timeout=300)  # forked: the children inherit the imported torch
    assert sorted(res) == list(range(WORLD)) and all(s == "ok" for s, _ in res.values()), res
    for r in range(WORLD):
        assert res[r][1] == [1] * (2 * len(SHAPES) + 2), (r, res[r][1])


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=9), st.integers(1, 6), st.integers(1, 4))
def test_program_rounds_match_verifier(raw, nchunks, waves):
    from plink.schedule.executor import _split_waves, compile_program
    from plink.schedule.verify import verify

    labels = np.unique(raw, return_inverse=True)[1]  # groups 0..k-1, all non-empty
    n = len(labels)
    sched = make_schedule(labels.tolist(), 8 * nchunks, 8)
    rep = verify(sched.dag)
    progs = [compile_program(sched.dag, r) for r in range(n)]
    assert {len(p.rounds) for p in progs} == {rep.rounds}
    # every message sent in round d (of wave w) is expected by its receiver in round d (of wave w)
    for fast in (True, False):
        progs = [compile_program(sched.dag, r, fast=fast) for r in range(n)]
        split = [_split_waves(p, sched.dag, min(waves, nchunks)) for p in progs]
        for w in range(min(waves, nchunks)):
            for d in range(rep.rounds):
                sent = sorted((r, q, c) for r in range(n) for q, items in split[r][w][d].sends.items()
                              for c, _ in items)
                got = sorted((q, r, c) for r in range(n) for q, cs in split[r][w][d].recvs.items() for c in cs)
                assert sent == got
        # every action is run exactly once or done by a fast path
        for r, p in enumerate(progs):
            ran = [a for rnd in p.rounds for a in rnd.actions] + p.final
            assert len(ran) == len(set(ran))
            mine = {a for a in range(len(sched.dag)) if sched.dag.node[a] == r}
            assert set(ran) | p.skip == mine and not (set(ran) & p.skip)


@pytest.mark.netns
@pytest.mark.slow
def test_executor_on_netns_cluster():
    """2 racks x 2 hosts of the emulated cluster (probes/netns.py; a free subnet and prefix)."""
    from concurrent.futures import ThreadPoolExecutor

    netns = pytest.importorskip("plink.probes.netns")
    reason = netns.unavailable_reason(sshd=False)
    if reason:
        pytest.skip(reason)
    worker = os.path.join(ROOT, "tests", "netns_executor_worker.py")
    with netns.NetnsCluster(racks=2, hosts_per_rack=2, host_mbit=400,
                            uplink_mbit=200, sshd=False) as cl:
        hosts = sorted(cl.hosts, key=lambda h: (h.rack, h.index))
        labels = ",".join(str(h.rack) for h in hosts)
        env = dict(os.environ, GLOO_SOCKET_IFNAME="eth0", PYTHONPATH=ROOT)
        port = 29500 + os.getpid() % 1000

        def launch(rank):
            argv = [sys.executable, worker, str(rank), str(len(hosts)), hosts[0].address, str(port), labels]
            return cl.exec(hosts[rank].name, argv, capture_output=True, text=True, env=env, timeout=120)

        with ThreadPoolExecutor(len(hosts)) as pool:
            results = list(pool.map(launch, range(len(hosts))))
    for r in results:
        assert r.returncode == 0, r.stderr[-500:]
        assert r.stdout.strip().splitlines()[-1] == "OK"
