"""`plink probe --uplinks` on a real emulated cluster with oversubscribed, unequal racks.

Racks of 3, 2 and 3 hosts; host links 200 Mbit/s, each rack's shared uplink 100 Mbit/s.
One flow alone gets a host link's rate, but a rack whose hosts all cross at once shares
its uplink: the phase must report ~100 Mbit/s per rack and direction, not 2-3 x 200.
(`--bandwidth` runs the uplink phase after the pair tests and takes the groups from the latency
or the pair bandwidths, whichever separates better.)
Skipped without root / ip netns / sshd.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from plink.data.probefile import load
from plink.probes.netns import NetnsCluster, unavailable_reason

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.netns


@pytest.fixture(scope="module")
def cluster():
    reason = unavailable_reason(sshd=True)
    if reason:
        pytest.skip(reason)
    with NetnsCluster(hosts_per_rack=[3, 2, 3], prefix="pf", subnet="10.201", host_mbit=200, uplink_mbit=100,
                      extra_hops=4, clean_shell=True) as c:
        yield c


def test_probe_uplinks_sees_the_shared_rack_uplink(cluster, tmp_path):
    # hosts handed out in an interleaved order, as a cloud would
    order = [0, 3, 5, 1, 6, 4, 2, 7]
    hostlist = tmp_path / "hosts.txt"
    hostlist.write_text("".join(f"{cluster.hosts[i].name}\n" for i in order))
    out = tmp_path / "probe.json"
    p = subprocess.run([sys.executable, "-m", "plink", "probe", str(hostlist), "--bandwidth", "--bw-seconds", "1",
                        "--count", "30", "--ssh-config", cluster.ssh_config, "--known-hosts", cluster.known_hosts,
                        "-o", str(out)], capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert "uplink of 3 hosts" in p.stderr
    probe = load(out)
    assert probe.bandwidth is not None   # --bandwidth: pair tests, then the uplinks (on by default)
    racks = {frozenset(probe.index(h.name) for h in cluster.hosts if h.rack == r) for r in range(3)}
    # (on a miss: the groups' source and the latencies they came from, to tell noise from a rule)
    assert {frozenset(u.hosts) for u in probe.uplinks} == racks, (
        probe.meta["uplinks"], [[round(float(v), 1) for v in row] for row in probe.structure_latency])
    for u in probe.uplinks:
        for rate in (u.up_bps, u.down_bps):
            assert 0.6 * 100e6 / 8 < rate < 1.1 * 100e6 / 8, (u, rate * 8e-6)
        assert len(u.extra["passes_up_bps"]) == len(u.extra["passes_down_bps"]) == 3   # --uplink-passes 3
    assert probe.meta["uplinks"]["n_groups"] == 3
