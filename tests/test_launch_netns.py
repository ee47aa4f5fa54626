"""Real launchers on the emulated cluster: ranks land where plink's files say.

``plink watch`` (probe over SSH with fping, order) -> ``plink emit`` torchrun
map and Open MPI hostfile -> ``torchrun --node-rank "$(plink node-rank MAP)"``
on every host (a Gloo all-reduce; the same workers then run a
racks-interleaved order, ranks from its map), and ``mpirun --map-by seq`` from
the hostfile, and with --slots 2 from a hostfile and a rankfile.  Needs root,
network namespaces, sshd and Open MPI; skipped otherwise.  6 hosts; 54 s of
CPU (69 s wall on the shared 2-core development machine at load average 7).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "netns-cluster"))

pytestmark = [pytest.mark.netns, pytest.mark.slow]


def _skip_reason():
    try:
        from plink.probes.netns import unavailable_reason
        import plink.probes.probe  # noqa: F401
    except ImportError as exc:
        return f"the netns cluster is not available: {exc}"
    reason = unavailable_reason(sshd=True)
    if reason:
        return reason
    if shutil.which("mpirun") is None:
        return "mpirun (Open MPI) is not installed"
    try:
        import torch.distributed  # noqa: F401
    except ImportError:
        return "torch is not installed"
    return None


REASON = _skip_reason()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

import launch  # noqa: E402  (examples/netns-cluster/launch.py)
from plink.data.orderfile import read_order_hosts  # noqa: E402


def plink(*args, cwd, code=0):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "plink", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)
    assert proc.returncode == code, proc.stderr
    return proc


def test_ranks_land_where_the_files_say(tmp_path):
    with launch.cluster(racks=2, hosts_per_rack=3) as c:
        # probe + order as cron would: plink watch over SSH into the namespaces
        proc = plink("watch", "state", "--hosts", c.hostfile, "--method", "fping", "--count", "20",
                     "--ssh-config", c.ssh_config, "--known-hosts", c.known_hosts, "--time-limit", "1",
                     "--json", cwd=tmp_path, code=4)
        status = json.loads(proc.stdout)
        assert status["status"] == "initial" and status["hosts"] == 6
        shutil.copy(tmp_path / "state" / "order.json", tmp_path / "order.json")
        from plink.data.probefile import load_json
        from plink.pricing import find_groups

        probe = load_json(tmp_path / "state" / "history" / status["run"] / "probe.json")
        # nothing went wrong; the notes are only what the shared model assumed (no --bandwidth), as plink order's:
        # the uplink note only when the probe showed racks (fping on a loaded machine may not: CI saw one group)
        racks = find_groups(probe).k > 1
        assert status["notes"] == ["no bandwidth measured: host NICs assumed 10 Gbit/s (set --nic-gbps)"] + (
            ["no group uplink measured: assumed the oversubscribed case, an uplink carries what one host NIC does"]
            if racks else []), status["notes"]
        assert probe.n_missing_pairs() == 0
        assert [h.address for h in probe.hosts] == [h.address for h in c.hosts]
        plink("emit", "order.json", "--format", "torchrun", "-o", "nodes.torchrun", cwd=tmp_path)
        plink("emit", "order.json", "--format", "openmpi", "-o", "hosts.ompi", cwd=tmp_path)
        order = [h.name for h in read_order_hosts(tmp_path / "order.json")]
        assert [h.name for h in read_order_hosts(tmp_path / "nodes.torchrun")] == order
        assert [ln for ln in (tmp_path / "hosts.ompi").read_text().splitlines() if not ln.startswith("#")] == order

        # plink node-rank inside a host's namespace finds it by its IP address
        h = c.hosts[5]
        r = c.exec(h.name, [sys.executable, "-m", "plink", "node-rank", str(tmp_path / "nodes.torchrun")],
                   capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
        assert (r.returncode, r.stdout.strip()) == (0, str(order.index(h.name))), r.stderr

        # a second, deliberately bad order: racks interleaved (every ring hop crosses racks)
        by_rack = [[x.name for x in c.hosts if x.rack == k] for k in range(2)]
        worst = [n for pair in zip(*by_rack) for n in pair]
        launch.atomic_write_text(tmp_path / "worst.torchrun", launch.emitters.emit(
            "torchrun", [probe.hosts[probe.index(n)] for n in worst]))

        # real torchrun on every host, as the map's header says: --node-rank "$(plink node-rank MAP)"
        size = 4 * 2**20
        # then the same workers run the interleaved order, ranks from its map
        tr = launch.run_torchrun(c, tmp_path / "nodes.torchrun", size=size, repeats=1, warmup=1, timeout=150,
                                 more=[tmp_path / "worst.torchrun"])
        assert launch.check_placement(tr, tmp_path / "nodes.torchrun", 0) == []
        assert launch.check_placement(tr, tmp_path / "worst.torchrun", 1) == []
        assert all(r["correct"] for r in tr) and len(tr) == 12
        # the rack-contiguous plink order beats the interleaved one on a real all-reduce
        rack = {x.name: x.rack for x in c.hosts}
        crossings = sum(rack[order[i]] != rack[order[i - 1]] for i in range(len(order)))
        assert crossings < 6
        t_plink, t_worst = launch.measured_seconds(tr, 0), launch.measured_seconds(tr, 1)
        assert t_plink < t_worst, (t_plink, t_worst)

        # mpirun --map-by seq from the emitted hostfile: rank r on line r (by hostname and address)
        res = launch.run_mpirun(c, tmp_path / "hosts.ompi", tmp_path / "order.json", size=0, timeout=150,
                                placement_only=True)
        assert launch.check_placement(res, tmp_path / "order.json", 0, by_hostname=True) == []
        assert sorted(r["host"] for r in res) == sorted(order)

        # --slots 2: the two ranks of a host are contiguous, with --map-by seq and with a rankfile
        plink("emit", "order.json", "--format", "openmpi", "--slots", "2", "-o", "hosts2.ompi", cwd=tmp_path)
        plink("emit", "order.json", "--format", "rankfile", "--slots", "2", "-o", "ranks2", cwd=tmp_path)
        want = [h for h in order for _ in range(2)]
        assert launch.mpirun_placement(c, ["--hostfile", str(tmp_path / "hosts2.ompi"), "--map-by", "seq"], 12) == want
        assert launch.mpirun_placement(c, ["--rankfile", str(tmp_path / "ranks2")], 12) == want
