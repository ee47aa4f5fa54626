"""The shared-uplink probe phase: groups, flow plans, measurement over a fake transport."""

import numpy as np
import pytest

from plink.data.probefile import Uplink
from plink.probes import uplinks
from plink.probes.uplinks import measure_uplinks, plan_flows


def racks_latency(sizes, inside=5.0, across=14.0, seed=0):
    rng = np.random.default_rng(seed)
    rack = np.repeat(np.arange(len(sizes)), sizes)
    lat = np.where(rack[:, None] == rack[None, :], inside, across) + rng.uniform(0, 1, (len(rack),) * 2)
    np.fill_diagonal(lat, 0)
    return lat, rack


@pytest.mark.parametrize("sizes", [[4, 4, 4, 4], [5, 3, 4, 4], [6, 2, 5, 3]])
def test_uplink_groups_are_unequal_racks(sizes):
    lat, rack = racks_latency(sizes)
    perm = np.random.default_rng(1).permutation(len(rack))   # hosts handed out in random order
    groups, _ = uplinks.infer_groups(lat[np.ix_(perm, perm)])
    labels = np.empty(len(rack), dtype=int)
    for k, g in enumerate(groups):
        labels[g] = k
    truth = rack[perm]
    # same partition: labels and truth determine each other
    assert len(set(zip(labels, truth))) == len(sizes) == len(set(labels))


def test_no_structure_gives_one_group():
    rng = np.random.default_rng(0)
    lat = 10 + rng.uniform(0, 1, (12, 12))
    np.fill_diagonal(lat, 0)
    assert uplinks.infer_groups(lat)[0] == [list(range(12))]


def test_plan_flows_each_host_sends_and_receives_at_most_once():
    groups = [[0, 1, 2, 3, 4], [5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    for g in range(4):
        up, down = plan_flows(groups, g)
        inside = set(groups[g])
        assert len(up) == len(down) == len(groups[g])
        assert all(s in inside and d not in inside for s, d in up)
        assert all(s not in inside and d in inside for s, d in down)
        flows = up + down
        assert len({s for s, _ in flows}) == len(flows) and len({d for _, d in flows}) == len(flows)
        # the far ends spread over all the other groups
        far = {next(k for k, gr in enumerate(groups) if d in gr) for _, d in up}
        assert far == set(range(4)) - {g}
    # a group bigger than the rest of the cluster: as many flows as there are outside hosts
    up, down = plan_flows([[0, 1, 2, 3, 4, 5], [6, 7]], 0)
    assert len(up) == len(down) == 2
    assert plan_flows([[0, 1, 2]], 0) == ([], [])


class FakeAgents:
    """A stage whose flows share a per-group uplink capacity (bytes/s), like an oversubscribed rack."""

    def __init__(self, group_of, uplink_bps, nic_bps):
        self.group_of, self.uplink, self.nic = group_of, uplink_bps, nic_bps
        self.calls, self.pending = [], {}

    def __call__(self, requests, timeout):
        out = {}
        ops = {op for _, op, _, _ in requests}
        assert len(ops) == 1
        op = ops.pop()
        self.calls.append((op, len(requests)))
        if op == "tcp_listen":
            return {tag: {"port": 5000 + host} for host, _, _, tag in requests}
        if op == "tcp_send":
            flows = [tag for _, _, _, tag in requests]
            up = {}
            for s, d in flows:
                if self.group_of[s] != self.group_of[d]:
                    up.setdefault(("up", self.group_of[s]), []).append((s, d))
                    up.setdefault(("down", self.group_of[d]), []).append((s, d))
            for s, d in flows:
                share = min([self.nic] + [self.uplink / len(v) for v in up.values() if (s, d) in v])
                self.pending[(s, d)] = share
                out[(s, d)] = {"bytes_sent": 1}
            return out
        return {tag: {"bytes": self.pending[tag] * 2.0, "seconds": 2.0, "streams": 1} for _, _, _, tag in requests}


def test_measure_uplinks_sees_the_shared_capacity_not_the_nic():
    groups = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    group_of = {h: g for g, hs in enumerate(groups) for h in hs}
    fake = FakeAgents(group_of, uplink_bps=50e6, nic_bps=45e6)
    errors = []
    got = measure_uplinks(fake, [f"10.0.0.{i}" for i in range(12)], groups, seconds=2.0, errors=errors)
    assert errors == []
    assert [u.hosts for u in got] == [tuple(g) for g in groups]
    for u in got:
        assert isinstance(u, Uplink)
        assert u.up_bps == pytest.approx(50e6) and u.down_bps == pytest.approx(50e6)   # not 4 x 45e6
        assert u.extra["flows"] == 4
    assert [op for op, _ in fake.calls[:3]] == ["tcp_listen", "tcp_send", "tcp_result"]
    assert fake.calls[1][1] == 8   # up and down flows at the same time


def test_passes_are_interleaved_kept_and_their_median_priced():
    """Each group is tested ``passes`` times, pass by pass over the groups (a burst of load hits one
    pass of several groups, not every pass of one); the probe file keeps every pass."""
    groups = [[0, 1], [2, 3], [4, 5]]
    group_of = {h: g for g, hs in enumerate(groups) for h in hs}
    fake = FakeAgents(group_of, uplink_bps=50e6, nic_bps=45e6)
    tested, scale = [], iter([1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.02, 0.98, 1.0])

    def stage(requests, timeout):
        out = fake(requests, timeout)
        if requests[0][1] == "tcp_send":
            tested.append(group_of[requests[0][3][0]])
        if requests[0][1] == "tcp_result":
            k = next(scale)
            out = {tag: {**v, "bytes": v["bytes"] * k} for tag, v in out.items()}
        return out

    ticks = []  # the progress: 0 before the first test, then one per test (it sat at 0 of 1 until the end)
    got = measure_uplinks(stage, [f"10.0.0.{i}" for i in range(6)], groups, passes=3,
                          on_test=lambda k, total: ticks.append((k, total)))
    assert tested == [0, 1, 2] * 3
    assert ticks == [(k, 9) for k in range(10)]
    assert got[0].extra["passes_up_bps"] == [50e6, 25e6, 51e6] and got[0].up_bps == 50e6  # the median
    assert got[1].extra["passes_down_bps"] == [50e6, 50e6, 49e6] and got[1].down_bps == 50e6
    one = measure_uplinks(FakeAgents(group_of, 50e6, 45e6), ["a"] * 6, groups, passes=1)
    assert "passes_up_bps" not in one[0].extra
    with pytest.raises(ValueError, match="passes"):
        measure_uplinks(stage, ["a"] * 6, groups, passes=0)


def test_failed_flows_are_reported_and_a_dead_group_left_out():
    groups = [[0, 1], [2, 3]]

    def stage(requests, timeout):
        return {tag: ("host 2: lost" if op == "tcp_listen" else {}) for _, op, _, tag in requests}

    errors = []
    assert measure_uplinks(stage, ["a"] * 4, groups, errors=errors) == []
    assert errors and all("lost" in e for e in errors)


def test_infer_groups_small_and_method():
    assert uplinks.infer_groups(np.zeros((3, 3)))[0] == [[0, 1, 2]]
    lat, rack = racks_latency([4, 4, 4])
    groups, method = uplinks.infer_groups(lat)
    assert sorted(map(sorted, groups)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert method


def test_groups_from_bandwidth_when_latency_is_noise():
    rng = np.random.default_rng(3)
    rack = np.repeat(np.arange(3), 4)
    lat = 100 + rng.uniform(0, 60, (12, 12))      # busy hosts: latency says nothing
    np.fill_diagonal(lat, 0)
    bw = np.where(rack[:, None] == rack[None, :], 0.33, 0.12) * rng.uniform(0.9, 1.1, (12, 12))
    np.fill_diagonal(bw, np.nan)
    groups, method = uplinks.infer_groups(lat, bandwidth=bw)
    assert sorted(map(sorted, groups)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert "bandwidth" in method


def test_groups_from_latency_when_bandwidth_is_noise():
    rng = np.random.default_rng(4)
    lat, rack = racks_latency([4, 3, 3])
    bw = 0.2 * rng.uniform(0.5, 1.0, (10, 10))      # pair bandwidths that say nothing about the racks
    np.fill_diagonal(bw, np.nan)
    groups, method = uplinks.infer_groups(lat, bandwidth=bw)
    assert sorted(map(sorted, groups)) == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert "latency" in method and "bandwidth" not in method


def test_groups_from_bandwidth_when_latency_is_not_measured_yet():
    lat, rack = racks_latency([4, 4, 4])
    bw = np.where(rack[:, None] == rack[None, :], 0.33, 0.12)
    np.fill_diagonal(bw, np.nan)
    groups, method = uplinks.infer_groups(np.full((12, 12), np.nan), bandwidth=bw)
    assert sorted(map(sorted, groups)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] and "bandwidth" in method
    assert uplinks.infer_groups(np.full((12, 12), np.nan))[0] == [list(range(12))]


def test_uplink_groups_are_the_groups_plink_order_prices():
    """The probe measures the uplinks of the groups the cost model will price: the same rule on the
    same matrices (``plink.structure.probegroups``). Busy hosts (latency says nothing) and a bandwidth
    matrix whose cross-rack pairs were slow in one direction only (the direction that shared an uplink
    in its round): a probe file keeps each pair's slower direction, and so must the uplink test's
    grouping. Grouping on the faster direction (as the uplink test did until 2026-11-28) saw no racks
    here, so it would have measured none of the uplinks ``plink order`` prices."""
    from plink.data.probefile import Host, ProbeData
    from plink.pricing import find_groups

    rng = np.random.default_rng(5)
    rack = np.repeat(np.arange(3), 4)
    lat = 100 + rng.uniform(0, 60, (12, 12))
    np.fill_diagonal(lat, 0)
    same = rack[:, None] == rack[None, :]
    slow = np.triu(~same, 1)  # a -> b of a cross-rack pair shared an uplink, b -> a did not
    bw = np.where(slow, 0.1, 0.33) * rng.uniform(0.95, 1.05, (12, 12))
    np.fill_diagonal(bw, np.nan)
    groups, method = uplinks.infer_groups(lat, bandwidth=bw)
    assert sorted(map(sorted, groups)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] and "bandwidth" in method
    probe = ProbeData([Host(f"h{i}") for i in range(12)], lat, bandwidth=bw)
    labels = find_groups(probe).labels
    assert sorted(map(sorted, groups)) == sorted(np.flatnonzero(labels == k).tolist() for k in np.unique(labels))


def test_uplink_passes_out_of_range_is_refused_before_any_connection(tmp_path):
    import os
    import subprocess
    import sys

    from plink.errors import OptionError
    from plink.probes.probe import probe_hosts

    with pytest.raises(OptionError, match=r"--uplink-passes must be 1\.\.20"):
        probe_hosts(["a", "b"], uplinks=True, uplink_passes=0, connect=lambda *a: pytest.fail("connected"))
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("a\nb\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-m", "plink", "probe", str(hosts), "--uplink-passes", "21"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=root), timeout=60)
    assert p.returncode == 2 and "--uplink-passes" in p.stderr and "Traceback" not in p.stderr
