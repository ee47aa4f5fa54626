"""The emulated cluster itself: topology, shaping, teardown, and clusters that
never collide (free subnet and prefix per run, no route taken over)."""

import os
import subprocess

import pytest

from plink.probes import netns
from plink.probes.netns import NetnsCluster, cleanup_stale, unavailable_reason

pytestmark = pytest.mark.netns


@pytest.fixture(autouse=True)
def need_netns():
    reason = unavailable_reason(sshd=False)
    if reason:
        pytest.skip(reason)


def namespaces(prefix):
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix)]


def routes(subnet):
    out = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"{subnet}." in line]


def ping(address, ns=None):
    argv = ["fping", "-q", "-c", "1", "-t", "2000", address]
    if ns:
        argv = ["ip", "netns", "exec", ns, *argv]
    return subprocess.run(argv, capture_output=True).returncode == 0


@pytest.fixture
def free_subnet():
    """A subnet no one uses, locked for the test (as a cluster would)."""
    for subnet in netns.AUTO_SUBNETS[::-1]:
        fd = netns._try_lock(f"subnet-{subnet}")
        if fd is None:
            continue
        if netns.subnet_conflicts(subnet):
            os.close(fd)
            continue
        yield subnet
        os.close(fd)
        return
    pytest.skip("no free subnet")


def test_topology_routes_and_teardown_on_exception(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with NetnsCluster(racks=2, hosts_per_rack=2, extra_hops=2, sshd=False,
                          host_mbit=0, uplink_mbit=0, workdir=tmp_path) as c:
            pre, s = c.prefix, c.subnet
            assert [h.name for h in c.hosts] == [f"{pre}r0h0", f"{pre}r0h1", f"{pre}r1h0", f"{pre}r1h1"]
            assert [c.rack_of(h.name) for h in c.hosts] == [0, 0, 1, 1]
            assert (tmp_path / "hosts.txt").read_text().split() == [h.name for h in c.hosts]
            # every host reaches every other one, and the root namespace reaches them
            a, b = c.hosts[0], c.hosts[3]
            assert ping(b.address, a.netns) and ping(b.address)
            # cross-rack traffic goes through the router chain: 2 hops per side + tor + spine
            tr = c.exec(a.name, ["ip", "route", "get", b.address], capture_output=True, text=True).stdout
            assert f"via {s}.1.1" in tr
            # no default route anywhere: nothing leaves the testbed
            assert "default" not in c.exec(a.name, ["ip", "route"], capture_output=True, text=True).stdout
            assert len([ns for ns in namespaces(pre) if netns._is_ours(ns, pre)]) == 1 + 2 * (1 + 2) + 4
            assert any(r.startswith(f"{s}.0.0/16 via {s}.250.2") for r in routes(s))
            raise RuntimeError("boom")
    assert [ns for ns in namespaces(pre) if netns._is_ours(ns, pre)] == []
    assert subprocess.run(["ip", "link", "show", f"{pre}-up0"], capture_output=True).returncode != 0
    assert routes(s) == []


def test_two_clusters_at_once_get_their_own_subnet_and_prefix():
    with NetnsCluster(racks=1, hosts_per_rack=2, extra_hops=0, sshd=False, host_mbit=0, uplink_mbit=0) as a, \
            NetnsCluster(racks=1, hosts_per_rack=2, extra_hops=0, sshd=False, host_mbit=0, uplink_mbit=0) as b:
        assert a.subnet != b.subnet and a.prefix != b.prefix
        assert {h.address for h in a.hosts}.isdisjoint(h.address for h in b.hosts)
        # both reachable from the root namespace at the same time
        assert all(ping(h.address) for h in a.hosts + b.hosts)
        # the same subnet or prefix again is refused, naming the holder; a keeps working
        with pytest.raises(RuntimeError, match="used by another plink cluster"):
            NetnsCluster(racks=1, hosts_per_rack=1, subnet=a.subnet, sshd=False).__enter__()
        with pytest.raises(RuntimeError, match="used by another plink cluster"):
            NetnsCluster(racks=1, hosts_per_rack=1, prefix=b.prefix, sshd=False).__enter__()
        with pytest.raises(RuntimeError, match="in use by a running cluster"):
            cleanup_stale(a.prefix)
        assert all(ping(h.address) for h in a.hosts + b.hosts)
        sa, sb = a.subnet, b.subnet
    assert routes(sa) == [] and routes(sb) == []


def test_a_route_that_is_not_ours_is_refused_and_left_alone(free_subnet, monkeypatch):
    """Someone else's 10.x.0.0/16 (here on a veth pair): the cluster refuses the
    subnet up front, and even when the up-front check misses it (a race),
    `ip route add` fails clearly instead of taking the route over."""
    s, dev = free_subnet, f"pd{os.getpid() % 100000}"
    subprocess.run(["ip", "link", "add", dev, "type", "veth", "peer", "name", dev + "b"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", f"{s}.0.1/16", "dev", dev], check=True)
        subprocess.run(["ip", "link", "set", dev + "b", "up"], check=True)
        subprocess.run(["ip", "link", "set", dev, "up"], check=True)
        before = routes(s)
        assert any(r.startswith(f"{s}.0.0/16 dev {dev}") for r in before)
        # the fixture holds the subnet's lock; let the cluster take it instead
        monkeypatch.setattr(netns, "_try_lock", _lock_except_subnet(s))
        with pytest.raises(RuntimeError, match=rf"{s}\.0\.0/16: in use here \(.*{dev}"):
            NetnsCluster(racks=1, hosts_per_rack=1, subnet=s, sshd=False, host_mbit=0, uplink_mbit=0).__enter__()
        monkeypatch.setattr(netns, "subnet_conflicts", lambda subnet: [])
        with pytest.raises(RuntimeError, match=rf"cannot add the route to {s}\.0\.0/16 .*not touching its route"):
            NetnsCluster(racks=1, hosts_per_rack=1, subnet=s, sshd=False, host_mbit=0, uplink_mbit=0).__enter__()
        assert routes(s) == before  # untouched, still on the veth
        assert subprocess.run(["ip", "link", "show", dev], capture_output=True).returncode == 0
    finally:
        subprocess.run(["ip", "link", "del", dev], capture_output=True)


def _lock_except_subnet(subnet):
    real = netns._try_lock

    def lock(name):
        if name == f"subnet-{subnet}":
            return os.open("/dev/null", os.O_RDONLY)  # held by the test fixture already
        return real(name)
    return lock


def test_cleanup_stale_removes_leftovers_of_a_killed_run_and_only_those():
    pre = f"pz{os.getpid()}"
    mine = [f"{pre}r7h7", f"{pre}tor7"]
    other = [f"{pre}rr7h7", f"{pre}x"]  # prefix {pre}r's host, and not a cluster name at all
    for ns in mine + other:
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        removed = cleanup_stale(pre)
        assert sorted(removed) == sorted(mine)
        assert sorted(namespaces(pre)) == sorted(other)
    finally:
        for ns in mine + other:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_htb_shapes_host_links():
    with NetnsCluster(racks=1, hosts_per_rack=2, extra_hops=0, sshd=False, host_mbit=100, uplink_mbit=50) as c:
        q = c.exec(c.hosts[0].name, ["tc", "class", "show", "dev", "eth0"], capture_output=True, text=True).stdout
        assert "rate 100Mbit" in q
        up = subprocess.run(["tc", "-n", f"{c.prefix}tor0", "class", "show", "dev", "ul"], capture_output=True,
                            text=True).stdout
        assert "rate 50Mbit" in up


def test_unequal_racks_and_busy_hosts(tmp_path):
    with NetnsCluster(hosts_per_rack=[3, 1, 2], prefix="pf", subnet="10.201", extra_hops=1, sshd=False,
                      host_mbit=0, uplink_mbit=0, workdir=tmp_path, busy={"pfr0h1": 0.5, 5: 0.3},
                      busy_seconds=60) as c:
        assert c.racks == 3 and c.rack_sizes == [3, 1, 2]
        assert [h.name for h in c.hosts] == ["pfr0h0", "pfr0h1", "pfr0h2", "pfr1h0", "pfr2h0", "pfr2h1"]
        assert [h.rack for h in c.hosts] == [0, 0, 0, 1, 2, 2]
        assert c.busy_hosts() == {"pfr0h1": 0.5, "pfr2h1": 0.3}
        # the tenant's loop lives in the host's namespace, not elsewhere
        assert c.processes("pfr0h1") and not c.processes("pfr0h0")
        r = c.exec("pfr2h1", ["fping", "-q", "-c", "1", "-t", "2000", c.host("pfr1h0").address], capture_output=True)
        assert r.returncode == 0
        c.stop_busy("pfr0h1")
        assert c.busy_hosts() == {"pfr2h1": 0.3} and not c.processes("pfr0h1")
    assert namespaces("pfr") == []


def test_unequal_racks_argument_errors():
    with pytest.raises(ValueError, match="lists 2 racks"):
        NetnsCluster(racks=3, hosts_per_rack=[2, 2])
    with pytest.raises(ValueError, match="busy duty"):
        NetnsCluster(busy={0: 1.5})
    with pytest.raises(ValueError, match=r"one per rack \(2\)"):
        NetnsCluster(racks=2, uplink_mbit=[100, 200, 300])
    with pytest.raises(ValueError, match="each >= 0"):
        NetnsCluster(hosts_per_rack=[2, 3], uplink_mbit=[100, -1])
    assert NetnsCluster(racks=2, uplink_mbit=0).uplink_rates == [0.0, 0.0]  # not shaped
    assert NetnsCluster(hosts_per_rack=[2, 3], uplink_mbit=[100, 150]).uplink_rates == [100.0, 150.0]
    assert NetnsCluster(racks=3, uplink_mbit=200).uplink_rates == [200.0] * 3
    for bad in (0, -5, 200_000):
        with pytest.raises(ValueError, match="queue_packets"):
            NetnsCluster(queue_packets=bad)
    assert NetnsCluster().queue_packets is None and NetnsCluster(queue_packets="64").queue_packets == 64


@pytest.mark.parametrize("case", ["ok", "fails", "hangs"])
def test_wait_all_collects_outputs_names_failures_and_kills_on_timeout(case):
    import subprocess
    import sys

    from plink.probes.netns import wait_all

    code = {"ok": "print('hi')", "fails": "import sys; sys.stderr.write('boom'); sys.exit(3)",
            "hangs": "import time; time.sleep(60)"}[case]
    procs = [subprocess.Popen([sys.executable, "-c", c], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in ("print('first')", code)]
    if case == "ok":
        assert wait_all(procs, ["a", "b"], 30, "job") == ["first\n", "hi\n"]
    elif case == "fails":
        with pytest.raises(RuntimeError, match=r"^job failed: b: exit 3: boom$"):
            wait_all(procs, ["a", "b"], 30, "job")
    else:
        with pytest.raises(RuntimeError, match="^the jobs did not finish within 1 s$"):
            wait_all(procs, ["a", "b"], 1, "job", who="the jobs")
        assert procs[1].wait(5) != 0  # killed
