"""The emulated cluster itself: topology, shaping, teardown (root + ip netns)."""

import subprocess

import pytest

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


def test_topology_routes_and_teardown_on_exception(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with NetnsCluster(racks=2, hosts_per_rack=2, prefix="pk", subnet="10.231", extra_hops=2, sshd=False,
                          host_mbit=0, uplink_mbit=0, workdir=tmp_path) as c:
            assert [h.name for h in c.hosts] == ["pkr0h0", "pkr0h1", "pkr1h0", "pkr1h1"]
            assert [c.rack_of(h.name) for h in c.hosts] == [0, 0, 1, 1]
            assert (tmp_path / "hosts.txt").read_text().split() == [h.name for h in c.hosts]
            # every host reaches every other one, and the root namespace reaches them
            a, b = c.hosts[0], c.hosts[3]
            r = c.exec(a.name, ["fping", "-q", "-c", "1", "-t", "2000", b.address], capture_output=True)
            assert r.returncode == 0
            assert subprocess.run(["fping", "-q", "-c", "1", "-t", "2000", b.address], capture_output=True).returncode == 0
            # cross-rack traffic goes through the router chain: 2 hops per side + tor + spine
            tr = c.exec(a.name, ["ip", "route", "get", b.address], capture_output=True, text=True).stdout
            assert "via 10.231.1.1" in tr
            # no default route anywhere: nothing leaves the testbed
            assert "default" not in c.exec(a.name, ["ip", "route"], capture_output=True, text=True).stdout
            assert len(namespaces("pk")) == 1 + 2 * (1 + 2) + 4
            raise RuntimeError("boom")
    assert namespaces("pkr") == [] and namespaces("pkspine") == []
    assert subprocess.run(["ip", "link", "show", "pk-up0"], capture_output=True).returncode != 0


def test_cleanup_stale_removes_leftovers_of_a_killed_run():
    subprocess.run(["ip", "netns", "add", "pkr7h7"], check=True)
    subprocess.run(["ip", "netns", "add", "pktor7"], check=True)
    try:
        removed = cleanup_stale("pk")
        assert {"pkr7h7", "pktor7"} <= set(removed)
        assert namespaces("pkr7") == [] and namespaces("pktor7") == []
    finally:
        for ns in ("pkr7h7", "pktor7"):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_htb_shapes_host_links():
    with NetnsCluster(racks=1, hosts_per_rack=2, prefix="pk", subnet="10.231", extra_hops=0, sshd=False,
                      host_mbit=100, uplink_mbit=50) as c:
        q = c.exec(c.hosts[0].name, ["tc", "class", "show", "dev", "eth0"], capture_output=True, text=True).stdout
        assert "rate 100Mbit" in q
        up = subprocess.run(["tc", "-n", "pktor0", "class", "show", "dev", "ul"], capture_output=True, text=True).stdout
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
