"""plink.distributed: launcher variables, plans, and real multi-process Gloo runs on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import plink.distributed as pd  # noqa: E402  (imported before the harness forks)
import plink.distributed.__main__ as pd_main  # noqa: E402
import plink.distributed.probe as pd_probe  # noqa: E402
from plink import order_hosts  # noqa: E402
from plink.data.probefile import Host, ProbeData  # noqa: E402
from plink.distributed.launcher import launcher_env, slurm_tasks_on_node  # noqa: E402
from plink.errors import PlinkError  # noqa: E402

from plink.distributed.local import run_ranks  # noqa: E402


# ---------------------------------------------------------------------------
# launcher environments


def test_torchrun_env():
    e = launcher_env({"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
                      "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29400", "TORCHELASTIC_RUN_ID": "x"})
    assert (e.launcher, e.rank, e.world_size, e.local_rank, e.local_world_size) == ("torchrun", 5, 8, 1, 4)
    assert e.init_method == "tcp://10.0.0.1:29400"


def test_pytorchjob_env_without_local_rank():
    # a Kubernetes PyTorchJob pod without torchrun: RANK, WORLD_SIZE, MASTER_* only
    e = launcher_env({"RANK": "2", "WORLD_SIZE": "4", "MASTER_ADDR": "job-master-0", "MASTER_PORT": "23456"})
    assert (e.rank, e.local_rank, e.master_addr, e.master_port) == (2, 0, "job-master-0", 23456)


def test_slurm_env_expands_nodelist():
    e = launcher_env({"SLURM_PROCID": "9", "SLURM_NTASKS": "12", "SLURM_LOCALID": "1", "SLURM_NODEID": "2",
                      "SLURM_TASKS_PER_NODE": "4(x2),4", "SLURM_STEP_NODELIST": "gpu[07-09],cpu1"})
    assert (e.launcher, e.rank, e.world_size, e.local_rank, e.local_world_size) == ("slurm", 9, 12, 1, 4)
    assert e.master_addr == "gpu07" and e.master_port == 29500
    # MASTER_ADDR exported by the batch script wins
    e = launcher_env({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_NODELIST": "n[1-2]",
                      "MASTER_ADDR": "n2", "MASTER_PORT": "1234"})
    assert (e.master_addr, e.master_port) == ("n2", 1234)


def test_slurm_tasks_per_node():
    assert [slurm_tasks_on_node("4(x2),3", k) for k in range(3)] == [4, 4, 3]
    with pytest.raises(PlinkError, match="lists 3 nodes"):
        slurm_tasks_on_node("4(x2),3", 3)
    with pytest.raises(PlinkError, match="not like"):
        slurm_tasks_on_node("four", 0)


def test_openmpi_env_and_missing_master():
    e = launcher_env({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "16", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
                      "OMPI_COMM_WORLD_LOCAL_SIZE": "1"})
    assert (e.launcher, e.rank, e.world_size, e.local_rank, e.local_world_size) == ("openmpi", 3, 16, 0, 1)
    with pytest.raises(PlinkError, match="-x MASTER_ADDR"):
        e.init_method


def test_mpich_env():
    e = launcher_env({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2",
                      "MASTER_ADDR": "::1"})
    assert (e.launcher, e.rank, e.local_rank) == ("mpich", 1, 1)
    assert e.init_method == "tcp://[::1]:29500"


@pytest.mark.parametrize("env, match", [
    ({}, "no launcher environment"),
    ({"RANK": "4", "WORLD_SIZE": "4"}, "not below the world size"),
    ({"RANK": "x", "WORLD_SIZE": "4"}, "not an integer"),
    ({"RANK": "0", "WORLD_SIZE": "4", "MASTER_PORT": "70000"}, "not a TCP port"),
    ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "2",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, "local rank 2"),
])
def test_bad_env(env, match):
    with pytest.raises(PlinkError, match=match):
        launcher_env(env)


# ---------------------------------------------------------------------------
# plans and mapping (pure)


def _ident(host, addr, lr):
    return {"host": host, "address": addr, "local_rank": lr}


def test_plan_groups_ranks_by_node_leader_is_local_rank_0():
    idents = {0: _ident("b", "10.0.0.2", 1), 1: _ident("a", "10.0.0.1", 0), 2: _ident("b", "10.0.0.2", 0),
              3: _ident("a", "10.0.0.1", 1)}
    plan = pd.make_plan(idents)
    assert plan.entries == [[2, 0], [1, 3]] and plan.names == ["b", "a"] and plan.leaders == [2, 1]
    per = pd.make_plan(idents, per_rank=True)
    assert per.entries == [[0], [1], [2], [3]] and per.names == ["b/1", "a/0", "b/0", "a/1"]


def test_local_address_routes_never_the_hosts_file_loopback(monkeypatch):
    """The address peers reach this rank at: the route to MASTER_ADDR; without one the default
    route's source, then a non-loopback address of the machine; never 127.0.1.1 (Debian's
    /etc/hosts entry for the host's own name, unreachable from other hosts)."""
    routes = {"10.9.0.1": "10.9.0.7", "192.0.2.1": "172.16.0.5"}
    monkeypatch.setattr(pd_probe, "_route_source", lambda addr, port: routes.get(addr))
    monkeypatch.setattr(socket, "gethostbyname", lambda name: "127.0.1.1")
    import plink.launch.noderank as nr

    monkeypatch.setattr(nr, "local_addresses", lambda: ["192.168.5.5"])
    assert pd_probe.local_address("10.9.0.1") == "10.9.0.7"
    assert pd_probe.local_address(None) == "172.16.0.5"
    assert pd_probe.local_address("10.99.0.1") == "172.16.0.5"  # no route to it: the default route's
    del routes["192.0.2.1"]  # no default route: the machine's own address
    assert pd_probe.local_address(None) == "192.168.5.5"
    monkeypatch.setattr(nr, "local_addresses", lambda: [])
    assert pd_probe.local_address(None) == "127.0.0.1"
    routes["127.0.0.1"] = "127.0.0.1"  # a one-host job rendezvousing on loopback stays there
    assert pd_probe.local_address("127.0.0.1") == "127.0.0.1"
    # torchrun's rendezvous sets MASTER_ADDR to rank 0's host name, which Debian's /etc/hosts maps to 127.0.1.1
    # on that host: the master node was recorded at 127.0.0.1 (and plink emit handed that to every node)
    routes["vm"] = "127.0.0.1"
    routes["192.0.2.1"] = "172.16.0.5"
    assert pd_probe.local_address("vm") == "172.16.0.5"
    routes["localhost"] = "127.0.0.1"
    assert pd_probe.local_address("localhost") == "127.0.0.1"


def test_local_address_real_route():
    assert pd_probe.local_address("127.0.0.1") == "127.0.0.1"
    assert pd_probe.local_address(None) != "127.0.1.1"


def test_plan_names_clash_use_address():
    idents = {0: _ident("vm", "10.0.0.1", 0), 1: _ident("vm", "10.0.0.2", 0)}
    assert pd.make_plan(idents).names == ["vm@10.0.0.1", "vm@10.0.0.2"]


def test_match_hosts_by_name_then_address():
    hosts = [Host("x", "10.0.0.2"), Host("a.example.com"), Host("nowhere"), Host("10.0.0.3")]
    assert pd.match_hosts(hosts, ["a", "b", "c"], ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) == [1, 0, None, 2]
    with pytest.raises(PlinkError, match="both this job's node"):
        pd.match_hosts([Host("a"), Host("y", "10.0.0.1")], ["a"], ["10.0.0.1"])


def test_ranks_in_order_keeps_nodes_together_and_appends_the_rest():
    assert pd.ranks_in_order([2, 0], [[0, 1], [2, 3], [4, 5]]) == [4, 5, 0, 1, 2, 3]


# ---------------------------------------------------------------------------
# real process groups (forked processes, Gloo on 127.0.0.1)


def _probe(rank, kwargs, hosts=None):
    if hosts:
        socket.gethostname = lambda: hosts[rank]
    t = time.monotonic()
    data = pd.probe_group(**kwargs)
    return data.to_dict(), time.monotonic() - t, _children()


def _children() -> list[int]:
    """This process's child processes (the udp method's agents must be gone)."""
    pids = []
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
            pids += [int(x) for x in f.read().split()]
    return pids


@pytest.mark.parametrize("method", ["udp", "tensor"])
def test_probe_group_per_rank_four_processes(method):
    res = run_ranks(4, _probe, {"samples": 5, "interval": 0.001, "per_rank": True, "timeout": 20, "method": method})
    assert sorted(res) == [0, 1, 2, 3] and all(s == "ok" for s, _ in res.values()), res
    docs = [res[r][1][0] for r in range(4)]
    assert all(d["latency_us"] == docs[0]["latency_us"] for d in docs)  # every rank got the same data
    lat = np.array(docs[0]["latency_us"], dtype=float)
    off = ~np.eye(4, dtype=bool)
    assert np.all(lat[off] > 0) and np.all(np.diag(lat) == 0)
    meta = docs[0]["meta"]
    assert meta["ranks"] == [[0], [1], [2], [3]] and meta["rounds"] == 3 and meta["failed"] == {}
    assert meta["method"] == "torch.distributed" and meta["launcher"] == "torchrun"
    assert meta["latency_method"] == method
    assert all(res[r][1][2] == [] for r in range(4))  # no agent left running
    assert [h["address"] for h in docs[0]["hosts"]] == ["127.0.0.1"] * 4
    if method == "udp":  # each direction timed by its sender: the slower one in latency_us, the faster in _best
        assert meta["rtt_note"].startswith("latency_us is the p10 RTT of the pair's UDP echo")
        best = docs[0].get("latency_best_us")
        if best is not None:
            assert np.all(np.array(best, dtype=float)[off] <= lat[off])
        assert meta["pair_errors"] == {}
    assert meta["rounds_bound_s"] == pytest.approx(3 * 5 * 0.001)


def test_probe_group_one_entry_per_node_bandwidth():
    hosts = ["nodeA", "nodeA", "nodeB", "nodeB"]
    res = run_ranks(4, _probe, {"samples": 3, "interval": 0.0, "bandwidth": True, "bw_seconds": 0.05,
                                "bw_size": 65536, "timeout": 20}, hosts)
    assert all(s == "ok" for s, _ in res.values()), res
    doc = res[1][1][0]
    assert [h["name"] for h in doc["hosts"]] == ["nodeA", "nodeB"]
    assert doc["meta"]["ranks"] == [[0, 1], [2, 3]] and doc["meta"]["rounds"] == 1
    bw = np.array(doc["bandwidth_gbps"], dtype=float)
    assert bw[0, 1] > 0 and bw[1, 0] > 0


def test_probe_group_passes_world_transport():
    res = run_ranks(4, _probe, {"samples": 6, "interval": 0.0, "passes": 3, "per_rank": True, "transport": "world",
                                "timeout": 20})
    assert all(s == "ok" for s, _ in res.values()), res
    doc = res[0][1][0]
    assert doc["meta"]["passes"] == 3 and doc["meta"]["transport"] == "world"
    assert not np.isnan(np.array(doc["latency_us"], dtype=float)).any()


@pytest.mark.parametrize("method, passes", [("tensor", 1), ("udp", 2)])
def test_probe_group_passes_odd_world_pair_transport(method, passes):
    # 3 ranks: a bye every round; with tensors more passes would need the same number of sub-groups on every
    # rank, so an odd count falls back to 1 pass (logged); the UDP echo needs no sub-groups and keeps them.
    # Either way every pair is measured
    res = run_ranks(3, _probe, {"samples": 4, "interval": 0.0, "passes": 2, "per_rank": True, "timeout": 20,
                                "method": method})
    assert all(s == "ok" for s, _ in res.values()), res
    assert not np.isnan(np.array(res[0][1][0]["latency_us"], dtype=float)).any()
    assert res[0][1][0]["meta"]["passes"] == passes


def test_probe_group_bad_parameters():
    res = run_ranks(2, _probe, {"samples": 2, "passes": 3})
    assert all(s == "error" and "passes must be 1..samples" in v for s, v in res.values()), res
    res = run_ranks(2, _probe, {"method": "icmp"})
    assert all(s == "error" and "unknown method 'icmp'" in v for s, v in res.values()), res


def test_udp_schedule_slots_are_pass_major_and_meet_every_partner():
    from plink.distributed.echo import udp_schedule
    from plink.probes.rounds import round_robin

    rounds = round_robin(5)  # odd: a bye each round
    for mine in range(5):
        sched = udp_schedule(rounds, mine, [3, 2])
        slots = [k for k, _, _ in sched]
        assert slots == sorted(slots) and len(set(slots)) == len(slots)
        assert sorted(p for k, p, _ in sched if k < len(rounds)) == [p for p in range(5) if p != mine]
        assert [c for k, _, c in sched] == [3] * 4 + [2] * 4
        for k, p, _ in sched:  # the partner has the same slot with us
            assert (k, mine) in {(k2, p2) for k2, p2, _ in udp_schedule(rounds, p, [3, 2])}
    assert udp_schedule(rounds, 0, [4, 0]) == udp_schedule(rounds, 0, [4])


class _DictStore:
    """The part of a torch store the probe uses, in one process (threads)."""

    def __init__(self):
        self.data, self.cv = {}, threading.Condition()

    def set(self, key, value):
        with self.cv:
            self.data[key] = value.encode() if isinstance(value, str) else bytes(value)
            self.cv.notify_all()

    def check(self, keys):
        with self.cv:
            return all(k in self.data for k in keys)

    def get(self, key):
        with self.cv:
            return self.data[key]

    def wait(self, keys, timeout):
        with self.cv:
            if not self.cv.wait_for(lambda: all(k in self.data for k in keys), timeout.total_seconds()):
                raise RuntimeError("timeout")


def _agree(store, n, timeout=10.0, skip=()):
    from plink.distributed.echo import agree_key

    out = {}

    def one(i):
        try:
            out[i] = agree_key(store, i, n, i == 0, timeout, pd_probe._wait, pd_probe._poll)
        except PlinkError as exc:
            out[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n) if i not in skip]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_udp_key_is_agreed_and_never_in_the_store():
    store = _DictStore()
    keys = _agree(store, 5)
    assert len(set(keys.values())) == 1 and len(keys[0]) == 64  # 32 bytes, hex
    key = keys[0]
    assert sorted(k for k in store.data if k.startswith("udp/key/")) == [f"udp/key/{i}" for i in range(1, 5)]
    for value in store.data.values():  # what a reader of the store sees: public values and masked keys
        assert key not in value.decode() and bytes.fromhex(key) not in value
    assert _agree(_DictStore(), 5)[0] != key  # a new key every probe


def test_udp_key_exchange_with_a_bad_value_fails_that_node_only(monkeypatch):
    import plink.distributed.echo as echo

    store = _DictStore()
    real = echo.dh_keypair

    def bad_for_entry_2():  # entry 2 (the thread named "bad") publishes 1, a value outside the group
        x, pub = real()
        return (x, "1") if threading.current_thread().name == "bad" else (x, pub)

    monkeypatch.setattr(echo, "dh_keypair", bad_for_entry_2)
    out = {}

    def one(i):
        try:
            out[i] = echo.agree_key(store, i, 4, i == 0, 10.0, pd_probe._wait, pd_probe._poll)
        except PlinkError as exc:
            out[i] = exc

    threads = [threading.Thread(target=one, args=(i,), name="bad" if i == 2 else f"t{i}") for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out[0] == out[1] == out[3] and isinstance(out[0], str)
    # rank 0 refused "1" and said so at once (not after the node's own wait of 10 s)
    assert isinstance(out[2], echo.KeyRefused) and "refused its key exchange value" in str(out[2])
    store.set("udp/key/1", "zz")  # a malformed masked key: a clear error, not a traceback
    with pytest.raises(echo.KeyRefused, match="key exchange"):
        echo.agree_key(store, 1, 4, False, 10.0, pd_probe._wait, pd_probe._poll)
    late = _agree(_DictStore(), 3, timeout=0.5, skip={2})  # entry 2 never comes: rank 0 goes on without it
    assert isinstance(late[0], str) and late[0] == late[1]


def _probe_dies(rank, mode, method):
    if rank == 3 and mode == "exit-mid-schedule":  # udp: after the agent started and its port was published
        def dying_wait(self, *a, **k):
            os._exit(1)

        pd_probe.echo.Fleet.wait = dying_wait
    elif rank == 3:
        owner, name = (pd_probe, "ping_pong") if method == "tensor" else (pd_probe.echo, "udp_latency")
        real = getattr(owner, name)

        def dying(*a, **k):
            if mode == "exit":
                os._exit(1)
            time.sleep(600)  # a stalled node
            return real(*a, **k)

        setattr(owner, name, dying)
    t = time.monotonic()
    data = pd.probe_group(samples=3, interval=0.001, per_rank=True, timeout=4, method=method)
    return data.to_dict(), time.monotonic() - t


@pytest.mark.parametrize("method, mode", [("udp", "exit"), ("udp", "stall"), ("udp", "exit-mid-schedule"),
                                          ("tensor", "exit"), ("tensor", "stall")])
def test_failed_rank_is_reported_not_hung_on(mode, method):
    t = time.monotonic()
    res = run_ranks(4, _probe_dies, mode, method, timeout=60, barrier=False, expect={0, 1, 2})
    assert time.monotonic() - t < 45
    assert 3 not in res or res[3][0] == "error"
    for r in (0, 1, 2):
        assert res[r][0] == "ok", res[r]
    doc, took = res[0][1]
    assert took < 6 * 4  # a few timeouts (4 s) at most, never the process group's 60 s
    failed = doc["meta"]["failed"]
    assert list(failed) == [doc["hosts"][3]["name"]], failed
    lat = np.array(doc["latency_us"], dtype=float)
    assert np.isnan(lat[3, :3]).all() and not np.isnan(lat[:3, :3]).any()
    # a pair with the failed node is put down to it (it said "no UDP echo ...: is UDP between the nodes blocked?")
    dead = doc["hosts"][3]["name"]
    for pair, why in doc["meta"]["pair_errors"].items():
        if dead in pair.split(" - "):
            assert why == f"{dead} failed ({failed[dead]})", (pair, why)


def _probe_udp_trouble(rank, trouble):
    """Rank 3's echo is unreachable (it publishes a port nobody listens on), its agent cannot start, or
    rank 0 refuses its key exchange value."""
    if rank == 3 and trouble == "no-echo":
        real = pd_probe.echo.AgentSession.hello

        def hello(self, *a, **k):
            info = real(self, *a, **k)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:  # a port that was free a moment ago
                s.bind(("127.0.0.1", 0))
                return {**info, "udp_port": s.getsockname()[1]}

        pd_probe.echo.AgentSession.hello = hello
    elif rank == 3 and trouble == "no-key":
        real_pair = pd_probe.echo.dh_keypair
        pd_probe.echo.dh_keypair = lambda: (real_pair()[0], "1")  # a value outside the group: refused
    elif rank == 3:
        def no_agent(*a, **k):
            raise OSError("cannot fork")

        pd_probe.echo.local_pipe = no_agent
    t = time.monotonic()
    data = pd.probe_group(samples=4, interval=0.001, per_rank=True, timeout=5)
    return data.to_dict(), time.monotonic() - t, _children()


@pytest.mark.parametrize("trouble, reason", [("no-echo", "no UDP echo from"),
                                             ("no-agent", "cannot start the UDP echo agent on"),
                                             ("no-key", "no probe key on")])
def test_udp_trouble_is_a_pair_error_with_the_reason_not_a_hang(trouble, reason):
    res = run_ranks(4, _probe_udp_trouble, trouble, timeout=60)
    assert all(s == "ok" for s, _ in res.values()), res  # nobody raises, nobody hangs
    doc, took, children = res[0][1]
    assert took < 3 * 5 and all(res[r][1][2] == [] for r in range(4))
    errors = doc["meta"]["pair_errors"]
    name3 = doc["hosts"][3]["name"]
    assert errors and all(name3 in pair and reason in why for pair, why in errors.items()), errors
    assert doc["meta"]["failed"] == {}
    lat = np.array(doc["latency_us"], dtype=float)
    assert not np.isnan(lat[:3, :3]).any()
    if trouble == "no-echo":  # rank 3 still timed its own direction of every pair
        assert not np.isnan(lat).any()
    else:
        assert np.isnan(lat[3, :3]).all()


def _locality(rank, kwargs, hosts):
    socket.gethostname = lambda: hosts[rank]
    import torch.distributed as dist

    group, order = pd.locality_group(**kwargs)
    x = torch.ones(4)
    dist.all_reduce(x, group=group)
    group_ranks = [dist.get_group_rank(group, g) for g in order] if group is not dist.group.WORLD else None
    return order, group_ranks, float(x[0])


def _two_rack_probe(names):
    lat = np.array([[0, 100, 10, 100], [100, 0, 100, 10], [10, 100, 0, 100], [100, 10, 100, 0]], float)
    return ProbeData(hosts=[Host(n) for n in names], latency=lat)


def test_locality_group_from_probe_file(tmp_path):
    hosts = ["n0", "n1", "n2", "n3"]
    # the file lists the hosts in another order than the ranks; by its matrix (file rows 0 and 2 are 10 us apart,
    # 1 and 3) the racks are {n2, n3} and {n0, n1} (the test said {n0, n2} and {n1, n3}, the ranks' view,
    # which the orders it got happened to keep whole too)
    probe = _two_rack_probe(["n2", "n0", "n3", "n1"])
    probe.latency[:] = probe.latency  # (symmetric already)
    path = tmp_path / "probe.json"
    probe.save(path)
    want = order_hosts(probe, "ring", time_limit=0.5, seed=0)
    want_ranks = [hosts.index(probe.hosts[i].name) for i in want.order]
    res = run_ranks(4, _locality, {"probe_file": str(path), "time_limit": 0.5}, hosts)
    assert all(s == "ok" for s, _ in res.values()), res
    orders = [res[r][1][0] for r in range(4)]
    assert all(o == want_ranks for o in orders)
    ring = [hosts[r] for r in want_ranks]
    racks = [0 if h in ("n2", "n3") else 1 for h in ring]
    assert sum(racks[i] != racks[i - 1] for i in range(4)) == 2  # racks contiguous
    assert res[0][1][1] == [0, 1, 2, 3]  # group rank i is global rank order[i]
    assert all(res[r][1][2] == 4.0 for r in range(4))


def test_locality_group_probes_when_no_file():
    hosts = ["n0", "n1", "n2", "n3"]
    res = run_ranks(4, _locality, {"time_limit": 0.3, "probe_options": {"samples": 3, "interval": 0.0},
                                   "timeout": 20}, hosts)
    assert all(s == "ok" for s, _ in res.values()), res
    orders = [res[r][1][0] for r in range(4)]
    assert all(o == orders[0] for o in orders) and sorted(orders[0]) == [0, 1, 2, 3]


def test_locality_group_small_world_is_a_noop():
    res = run_ranks(3, _locality, {"time_limit": 0.3}, ["a", "b", "c"])
    assert all(s == "ok" for s, _ in res.values()), res
    assert all(res[r][1][0] == [0, 1, 2] and res[r][1][1] is None for r in range(3))


def _from_file(rank, path, hosts):
    socket.gethostname = lambda: hosts[rank]
    return pd.order_from_file(path)


def test_order_from_file(tmp_path):
    path = tmp_path / "order.txt"
    path.write_text("# plink order\nn3\nn1\nelsewhere\nn0\n")
    res = run_ranks(4, _from_file, str(path), ["n0", "n1", "n2", "n3"])
    assert all(s == "ok" and v == [3, 1, 0, 2] for s, v in res.values()), res


def _cli(rank, argv):
    try:
        pd_main.main(argv)
    except SystemExit as exc:
        return exc.code
    return None


def test_cli_probe_writes_the_probe_file(tmp_path):
    out = tmp_path / "probe.json"
    res = run_ranks(4, _cli, ["probe", "-o", str(out), "--per-rank", "--samples", "3", "--interval", "0"],
                    barrier=False)
    assert all(s == "ok" and v == 0 for s, v in res.values()), res
    from plink import load

    data = load(out)
    assert data.n == 4 and data.n_missing_pairs() == 0 and data.meta["per_rank"] is True


def test_cli_without_launcher_is_a_one_line_error(monkeypatch, capsys):
    for k in list(os.environ):
        if k in ("RANK", "WORLD_SIZE") or k.startswith(("SLURM_", "OMPI_", "PMI_")):
            monkeypatch.delenv(k)
    with pytest.raises(SystemExit) as exc:
        pd_main.main(["probe", "-o", "x.json"])
    assert exc.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no launcher environment" in err[0]


def test_probe_group_needs_a_process_group():
    with pytest.raises(PlinkError, match="not initialised"):
        pd.probe_group()


# ---------------------------------------------------------------------------
# measuring what an order buys: compare_groups, locality_group(verify=True), `compare`


def test_comparison_medians_speedup_and_summary():
    from plink.distributed.compare import Comparison

    c = Comparison(4 << 20, (2.0, 3.0, 2.5), (1.0, 0.9, 5.0))
    assert c.baseline_seconds == 2.5 and c.candidate_seconds == 1.0
    assert c.speedup == 2.5 and c.candidate_faster and c.wins == 2
    assert c.summary() == ("all_reduce of 4 MiB, median of 3 (slowest rank): default order 2.5 s, "
                           "plink's order 1 s (2.50x faster; faster in 2 of 3 rounds)")
    slow = Comparison(4096, (1.0,), (1.25,))
    assert not slow.candidate_faster and slow.summary().endswith("(1.25x slower; faster in 0 of 1 rounds)")
    tie = Comparison(4096, (1.0,), (1.0,))
    assert not tie.candidate_faster and "(a tie;" in tie.summary()  # a tie keeps the launcher's order
    assert "slower" in Comparison(4, (0.0,), (1.0,)).summary() and "faster" in Comparison(4, (1.0,), (0.0,)).summary()
    d = c.to_dict()
    assert d["speedup"] == 2.5 and d["baseline_seconds"] == [2.0, 3.0, 2.5] and d["candidate_wins"] == 2


def _compare(rank, kwargs):
    import torch.distributed as dist

    group = dist.new_group(ranks=list(range(dist.get_world_size()))[::-1], sort_ranks=False)
    return pd.compare_groups(group, **kwargs).to_dict()


def test_compare_groups_every_rank_gets_the_same_measurement():
    res = run_ranks(4, _compare, {"size": 4096, "repeats": 3})
    assert all(s == "ok" for s, _ in res.values()), res
    docs = [res[r][1] for r in range(4)]
    assert all(d == docs[0] for d in docs)  # the slowest rank's times, shared: one decision everywhere
    assert len(docs[0]["baseline_seconds"]) == 3 and len(docs[0]["candidate_seconds"]) == 3
    assert all(0 < t < 30 for t in docs[0]["baseline_seconds"] + docs[0]["candidate_seconds"])
    assert docs[0]["size_bytes"] == 4096


def _flaky(rank, path, message):
    with open(path, "a") as f:
        f.write(f"{rank}\n")
    if rank == 1 and open(path).read().count("1\n") == 1:
        raise RuntimeError(message)
    return rank


@pytest.mark.parametrize("message, retries, attempts", [
    ("Gloo connectFullMesh failed with ... Connection closed by peer", 1, 2),
    ("Gloo connectFullMesh failed with ... Connection closed by peer", 0, 1),
    ("ValueError: a bug of fn", 1, 1)])
def test_run_ranks_starts_again_after_gloos_transient_error_only(tmp_path, message, retries, attempts):
    """Gloo's loopback connect failure (once in ~50 CI runs) restarts the ranks; any other error does not."""
    path = tmp_path / "calls"
    res = run_ranks(2, _flaky, str(path), message, retries=retries)
    assert path.read_text().count("1\n") == attempts
    if attempts == 2:
        assert res == {0: ("ok", 0), 1: ("ok", 1)}
    else:
        assert res[1][0] == "error" and message in res[1][1]


def test_compare_groups_bad_parameters():
    res = run_ranks(2, _compare, {"size": 4096, "repeats": 0})
    assert all(s == "error" and "repeats must be >= 1" in v for s, v in res.values()), res


def _verified(rank, hosts, path, candidate_seconds):
    socket.gethostname = lambda: hosts[rank]
    import plink.distributed.compare as cmp_mod
    from plink.distributed.compare import Comparison

    calls = []

    def fake(group, **kw):  # the measurement itself is tested above; here, the decision
        calls.append(kw)
        return Comparison(kw["size"], (1.0, 1.0, 1.0), (candidate_seconds,) * 3)

    cmp_mod.compare_groups = fake
    import torch.distributed as dist

    group, order = pd.locality_group(probe_file=path, time_limit=0.3, verify=True, size=8192, verify_repeats=3)
    x = torch.ones(2)
    dist.all_reduce(x, group=group)
    return order, group is dist.group.WORLD, calls, float(x[0])


@pytest.mark.parametrize("candidate_seconds, keeps", [(0.5, True), (1.0, False), (1.5, False)])
def test_locality_group_verify_keeps_the_new_group_only_if_it_measures_faster(tmp_path, candidate_seconds, keeps):
    hosts = ["n0", "n1", "n2", "n3"]
    path = tmp_path / "probe.json"
    _two_rack_probe(hosts).save(path)  # racks {n0, n2} and {n1, n3}: the rank order crosses them 4 times
    res = run_ranks(4, _verified, hosts, str(path), candidate_seconds)
    assert all(s == "ok" for s, _ in res.values()), res
    orders = {tuple(res[r][1][0]) for r in range(4)}
    assert len(orders) == 1  # one decision on every rank
    order = list(orders.pop())
    if keeps:
        assert order != [0, 1, 2, 3] and sorted(order) == [0, 1, 2, 3]
        assert not any(res[r][1][1] for r in range(4))
    else:
        assert order == [0, 1, 2, 3] and all(res[r][1][1] for r in range(4))
    assert all(res[r][1][2] == [{"size": 8192, "repeats": 3}] and res[r][1][3] == 4.0 for r in range(4))


def _cli_named(rank, argv, hosts):
    import contextlib
    import io

    socket.gethostname = lambda: hosts[rank]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = _cli(rank, argv)
    return code, out.getvalue()


def test_cli_compare_times_both_orders(tmp_path):
    path = tmp_path / "order.txt"
    path.write_text("n3\nn1\nn0\nn2\n")
    hosts = ["n0", "n1", "n2", "n3"]
    res = run_ranks(4, _cli_named, ["compare", str(path), "--size", "16KiB", "--repeats", "2", "--json"], hosts,
                    barrier=False)
    assert all(s == "ok" and v[0] == 0 for s, v in res.values()), res
    doc = json.loads(res[0][1][1])
    assert doc["order"] == [3, 1, 0, 2] and doc["size_bytes"] == 16384 and doc["same_as_launcher"] is False
    assert 0 <= doc["candidate_wins"] <= 2
    assert len(doc["baseline_seconds"]) == 2 and doc["speedup"] > 0
    assert all(res[r][1][1] == "" for r in (1, 2, 3))  # rank 0 prints


@pytest.mark.parametrize("argv, msg", [(["compare", "order.txt", "--size", "2"], "one float32"),
                                       (["compare", "order.txt", "--size", "banana"], "invalid size"),
                                       (["probe", "--bw-size", "banana"], "invalid size")])
def test_cli_bad_size_is_a_usage_error(tmp_path, capsys, monkeypatch, argv, msg):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "order.txt").write_text("n0\n")
    with pytest.raises(SystemExit) as exc:
        pd_main.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]


def _bad_verify(rank, path):
    return pd.locality_group(probe_file=path, verify=True, verify_repeats=0)


def test_locality_group_bad_verify_repeats_fails_before_probing(tmp_path):
    path = tmp_path / "probe.json"
    _two_rack_probe(["n0", "n1", "n2", "n3"]).save(path)
    res = run_ranks(2, _bad_verify, str(path))
    assert all(s == "error" and "verify_repeats must be >= 1, got 0" in v for s, v in res.values()), res


def test_no_racks_hint_only_when_latency_alone_found_one_group():
    from plink.distributed.group import no_racks_hint

    hint = no_racks_hint({"k": 1, "source": "inferred from latency"}, 16, False)
    assert "16 nodes show no racks" in hint and "probe_options={'bandwidth': True}" in hint
    assert no_racks_hint({"k": 4}, 16, False) is None  # racks found
    assert no_racks_hint({"k": 1}, 16, True) is None  # bandwidth probed already
    assert no_racks_hint({"k": 1}, 7, False) is None  # too few nodes for racks to matter
    assert no_racks_hint({}, 16, False) is None


def test_cli_probe_output_directory_is_checked_before_the_job(tmp_path, capsys, monkeypatch):
    """-o into a missing directory failed only after the whole probe (the second outside-in check)."""
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")  # a rendezvous that would wait for a rank that never comes
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    with pytest.raises(SystemExit) as exc:
        pd_main.main(["probe", "-o", str(tmp_path / "no" / "p.json"), "--timeout", "5"])
    assert exc.value.code == 2
    assert "directory " + str(tmp_path / "no") + " does not exist" in capsys.readouterr().err


def test_cli_probe_to_stdout_with_json_is_refused():
    """-o - and --json printed the probe file and then the summary on stdout: not one JSON document."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
               MASTER_PORT="29737")
    r = subprocess.run([sys.executable, "-m", "plink.distributed", "probe", "-o", "-", "--json"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 2 and r.stdout == "" and "would both write to stdout" in r.stderr


# ---------------------------------------------------------------------------
# outside-in check of 2026-12-02 (helper 34)


def test_ranks_in_order_refuses_a_repeated_or_foreign_entry():
    """ranks_in_order([0, 0], ...) gave rank 0 twice, [-1] counted from the end, [5] raised IndexError."""
    from plink.distributed.group import ranks_in_order
    from plink.errors import InputError

    for bad, msg in (([0, 0], "entry 0 appears twice"), ([-1], "entry -1 is not an index"),
                     ([5], "entry 5 is not an index"), ([True], "entry True is not an index")):
        with pytest.raises(InputError, match=msg):
            ranks_in_order(bad, [[0], [1]])
    for entries, msg in (([[0, 1], [1, 2]], "rank 1 is in two entries"), ([[0], [0]], "rank 0 is in two entries"),
                         ([[0], ["x"]], "got 'x'"), ([[0], [-2]], "got -2")):
        with pytest.raises(InputError, match=msg):
            ranks_in_order([1, 0], entries)
    assert ranks_in_order([np.int64(1)], [[0], [1, 2]]) == [1, 2, 0]


def _locality_error(rank, kwargs, hosts):
    socket.gethostname = lambda: hosts[rank]
    try:
        pd.locality_group(**kwargs)
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__, isinstance(exc, ValueError), str(exc)
    return None


@pytest.mark.parametrize("kwargs, cls, msg", [
    ({"algo": "bogus"}, "OptionError", "unknown algorithm 'bogus'"),
    ({"time_limit": 0}, "OptionError", "time limit must be > 0"),
    ({"timeout": float("inf")}, "OptionError", "timeout must be in (0, 604800] s"),
    ({"probe_file": "a", "order_file": "b"}, "OptionError", "give probe_file or order_file, not both"),
    ({"order_file": "/nonexistent/order.txt"}, "ProbeFileError", "no such file"),
    ({"verify": True, "size": 2}, "OptionError", "size must be at least 4 bytes"),
    ({"verify": True, "verify_repeats": "x"}, "OptionError", "verify_repeats must be a whole number"),
    ({"seed": -1}, "OptionError", "seed must be 0 .. 2**32 - 1"),
    ({"probe_options": {"sampels": 3}}, "OptionError", "probe_options: unknown key 'sampels'"),
    ({"probe_file": "/nonexistent/probe.json"}, "ProbeFileError", "no such file"),  # (3 nodes: it was not read)
])
def test_locality_group_errors_are_the_same_class_on_every_rank_and_come_first(kwargs, cls, msg):
    """A bad algo on 1-3 nodes was not refused at all (the default group came back), on more only after the
    probe; and rank 0 raised OptionError (a ValueError) where the others raised a plain PlinkError."""
    res = run_ranks(3, _locality_error, kwargs, ["a", "b", "c"])
    assert all(s == "ok" for s, _ in res.values()), res
    for r in range(3):
        name, is_value_error, text = res[r][1]
        assert name == cls and is_value_error and msg in text, res[r]


def _probe_error(rank, kwargs):
    try:
        pd.probe_group(**kwargs)
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__, isinstance(exc, ValueError), str(exc)
    return None


@pytest.mark.parametrize("kwargs, msg", [({"method": "bogus"}, "unknown method 'bogus'"),
                                         ({"transport": "bogus"}, "unknown transport 'bogus'"),
                                         ({"backend": "bogus", "method": "tensor"}, "unknown backend 'bogus'"),
                                         ({"backend": "nccl"}, "backend 'nccl' needs a GPU"),
                                         ({"timeout": 1e15}, "timeout must be in")])
def test_probe_group_bad_values_are_option_errors(kwargs, msg):
    """method/transport typos were plain PlinkErrors; a backend typo was blamed on a node (meta.failed), NCCL
    on a CPU box raised torch's AttributeError, timeout=1e15 an OverflowError."""
    if kwargs.get("backend") == "nccl" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    res = run_ranks(2, _probe_error, kwargs)
    assert all(s == "ok" and v[0] == "OptionError" and v[1] and msg in v[2] for s, v in res.values()), res


def _verified_identity(rank, hosts, path):
    socket.gethostname = lambda: hosts[rank]
    import plink.distributed.compare as cmp_mod

    calls = []
    cmp_mod.compare_groups = lambda group, **kw: calls.append(kw)  # must not be called
    import torch.distributed as dist

    group, order = pd.locality_group(order_file=path, verify=True, size=8192, verify_repeats=2)
    return order, group is dist.group.WORLD, calls


def test_verify_of_the_launchers_own_order_keeps_the_default_group(tmp_path):
    """verify=True timed the launcher's order against itself and could call it '1.33x faster' (noise)."""
    path = tmp_path / "order.txt"
    path.write_text("n0\nn1\nn2\nn3\n")
    res = run_ranks(4, _verified_identity, ["n0", "n1", "n2", "n3"], str(path))
    assert all(s == "ok" and v == ([0, 1, 2, 3], True, []) for s, v in res.values()), res


def _compare_str_size(rank):
    import torch.distributed as dist

    return pd.compare_groups(dist.group.WORLD, size="16KiB", repeats=1).size


def test_compare_groups_takes_a_size_text():
    """compare_groups(g, size='1MiB') raised "invalid literal for int() with base 10: '1MiB'"."""
    res = run_ranks(2, _compare_str_size)
    assert all(s == "ok" and v == 16384 for s, v in res.values()), res


@pytest.mark.parametrize("argv, code, msg", [
    (["probe", "--timeout", "inf"], 2, "Invalid value for '--timeout'"),
    (["compare", "x.json", "--timeout", "1e15"], 2, "Invalid value for '--timeout'"),
    (["probe", "--samples", "0"], 2, "see 'python -m plink.distributed probe --help'"),
])
def test_cli_errors_are_one_line_with_one_prefix(argv, code, msg, capsys):
    """--timeout inf gave an OverflowError traceback; usage errors said 'python -m plink.distributed: error:',
    the others 'plink.distributed: error:'."""
    with pytest.raises(SystemExit) as exc:
        pd_main.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == code and len(err) == 1 and err[0].startswith("plink.distributed: error: ") and msg in err[0]


def test_cli_without_a_command_prints_its_help(capsys):
    """It printed the whole help squashed into one 'error:' line."""
    with pytest.raises(SystemExit) as exc:
        pd_main.main([])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Commands:" in err and "\n  probe" in err and "error" not in err


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_cli_interrupted_ranks_are_one_line_exit_130(sig):
    """Ranks started by hand (srun, PyTorchJob) and interrupted mid-probe printed a 46-line double traceback
    (KeyboardInterrupt, then click's Abort), exit 1; then SIGTERM said 'interrupted', exit 130 (not 143)."""
    import signal
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = dict(os.environ, PYTHONPATH=root, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK="0",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, "-m", "plink.distributed", "probe", "--per-rank", "--samples",
                                       "20000", "--interval", "0.01", "--timeout", "60"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))

    def agents(pid):  # the udp method's agent: a child process, once the probe runs
        try:
            return [t for t in os.listdir(f"/proc/{pid}/task")
                    if open(f"/proc/{pid}/task/{t}/children").read().split()]
        except OSError:
            return []

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not all(agents(p.pid) for p in procs):
        time.sleep(0.2)
    time.sleep(1.0)
    for p in procs:
        p.send_signal(getattr(signal, sig))
    errs = []
    for p in procs:
        try:
            errs.append(p.communicate(timeout=60)[1])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("a rank did not stop on Ctrl-C")
    for p, err in zip(procs, errs):
        lines = [ln for ln in err.strip().splitlines() if ln.startswith("plink.distributed")]
        want = (143, "plink.distributed: terminated (SIGTERM)") if sig == "SIGTERM" else (130, "plink.distributed: interrupted")
        assert (p.returncode, lines[-1]) == want, err
        assert "Traceback" not in err and err.strip() == lines[-1], err  # (click printed an empty line first)


def test_cli_rank_waiting_to_join_stops_at_once_on_ctrl_c(stop_with):
    """A rank waiting for the others to join (torch's C++ store connect) took 60-130 s to act on a Ctrl-C."""
    import signal
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens: rank 0 never comes
    env = dict(os.environ, PYTHONPATH=root, RANK="1", WORLD_SIZE="2", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port))
    proc = subprocess.Popen([sys.executable, "-m", "plink.distributed", "probe", "--timeout", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    def torch_loaded():
        try:
            return "libtorch_cpu" in open(f"/proc/{proc.pid}/maps").read()
        except OSError:
            return False

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not torch_loaded():
        time.sleep(0.1)
    time.sleep(3.0)  # torch is loaded: the rank is (or is about to be) in the rendezvous, whose connect waits 60 s
    t = time.monotonic()
    err = stop_with(proc, signal.SIGINT, 30, "the rank did not stop on Ctrl-C while joining")
    assert time.monotonic() - t < 10
    assert proc.returncode == 130 and err.strip() == "plink.distributed: interrupted", err


def test_cli_json_to_a_closed_stdout_is_an_error():
    """`python -m plink.distributed probe --json >&-` exited 0 with the summary lost."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=root, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port))
    r = subprocess.run([sys.executable, "-m", "plink.distributed", "probe", "--json", "--samples", "2"],
                       stderr=subprocess.PIPE, text=True, env=env, preexec_fn=lambda: os.close(1), timeout=120)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == (
        "plink.distributed: error: cannot write the output: standard output is closed"), r.stderr


def test_cli_rank_that_loses_rank_0_says_so_in_one_line():
    """Rank 0 killed mid-probe: the other ranks printed ~45 lines of C++ frames and a traceback
    (DistNetworkError from the store), exit 1; the docs promise one PlinkError line."""
    import signal
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "TORCH_CPP_LOG_LEVEL"}
    procs = [subprocess.Popen([sys.executable, "-m", "plink.distributed", "probe", "--per-rank", "--samples", "2000",
                               "--interval", "0.01", "--timeout", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=dict(env, PYTHONPATH=root, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK="0",
                                                  MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)))
             for r in range(2)]

    def probing(pid):  # the udp agent, a child process, runs once the rounds have begun
        try:
            return any(open(f"/proc/{pid}/task/{t}/children").read().split() for t in os.listdir(f"/proc/{pid}/task"))
        except OSError:
            return False

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not all(probing(p.pid) for p in procs):
        time.sleep(0.2)
    time.sleep(1.0)
    procs[0].send_signal(signal.SIGKILL)
    procs[0].communicate()
    try:
        _, err = procs[1].communicate(timeout=90)
    except subprocess.TimeoutExpired:
        procs[1].kill()
        pytest.fail("rank 1 did not stop after rank 0 died")
    assert procs[1].returncode == 1, err
    assert err.strip().splitlines() == [err.strip()] and err.startswith("plink.distributed: error: lost the job's other "
                                                                        "ranks ("), err


def test_a_rank_started_by_hand_that_cannot_join_is_not_called_torchrun():
    """RANK/WORLD_SIZE set by hand (a PyTorchJob without torchrun) failed with 'torchrun: cannot join ...'."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens there: rank 0 never came
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHELASTIC_")}
    env.update(PYTHONPATH=root, RANK="1", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    code = ("import plink.distributed as pd\n"
            "try:\n    pd.init_from_env('gloo', timeout=2)\nexcept Exception as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout
    assert out.startswith("RANK/WORLD_SIZE: cannot join the process group at env:// as rank 1 of 2 after "), out
    assert " s (timeout 2 s; are all 2 ranks started?): " in out, out


def _cli_with_a_failed_node(rank, argv):
    real = pd.probe_group

    def probe_group(**kw):  # every pair measured (from the other side), but a node reported failed
        data = real(**kw)
        data.meta["failed"] = {data.names[-1]: "sent no results in time"}
        return data

    pd.probe_group = probe_group
    return _cli(rank, argv)


def test_cli_probe_with_a_failed_node_exits_3(tmp_path):
    """A rank killed mid-probe: rank 0 named it failed, then said '0 pairs missing' and exited 0."""
    out = tmp_path / "probe.json"
    res = run_ranks(3, _cli_with_a_failed_node, ["probe", "-o", str(out), "--per-rank", "--samples", "2",
                                                 "--interval", "0"], barrier=False)
    assert res[0] == ("ok", 3), res
