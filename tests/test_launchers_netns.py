"""Every launcher file plink emits, run by the real launcher on the emulated cluster.

MPICH's Hydra, Slurm (``SLURM_HOSTFILE`` and ``topology.conf`` in a Slurm cluster inside the
namespaces), DeepSpeed's pdsh runner, Horovod and the ``env`` file (Open MPI's reading of it)
start a job from ``plink emit``'s file; every rank reports its host, and rank ``r`` must be on
the host the order gives (host ``i`` holds ranks ``2i, 2i+1``).  The order is seeded and
scrambled (not sorted by name, not rack-contiguous), so a launcher that sorts or packs the
hosts its own way fails.  Open MPI (``--map-by seq``, rankfile) and torchrun are proven in
``tests/test_launch_netns.py``.  The helpers are ``examples/launchers/prove.py``'s.

Needs root, network namespaces and sshd (skipped otherwise); each launcher's test skips with
a reason when it is not installed.  4 hosts in 2 racks.
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "launchers"))

pytestmark = [pytest.mark.netns, pytest.mark.slow]


def _skip_reason():
    try:
        from plink.probes.netns import unavailable_reason
    except ImportError as exc:
        return f"the netns cluster is not available: {exc}"
    return unavailable_reason(sshd=True)


REASON = _skip_reason()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

import prove  # noqa: E402  (examples/launchers/prove.py)
from plink.data.groupfile import Groups  # noqa: E402

SLOTS = 2


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    from plink.probes.netns import NetnsCluster

    with NetnsCluster(racks=2, hosts_per_rack=2, sshd=True) as c:
        b = prove.Bench(c, tmp_path_factory.mktemp("launchers"))
        b.order = prove.scrambled_order(c, b.dir / "scrambled.txt", seed=1)
        names = [h.name for h in c.hosts]
        Groups(names, [h.rack for h in c.hosts]).save(b.dir / "groups.json")
        yield b


def need(launcher):
    why = prove.unavailable(launcher)
    if why:
        pytest.skip(why)


def test_scrambled_order_is_a_hard_case(bench):
    order = [h.name for h in prove.read_order_hosts(bench.order)]
    assert sorted(order) == sorted(h.name for h in bench.c.hosts)
    assert order != sorted(order)
    rack = {h.name: h.rack for h in bench.c.hosts}
    assert sum(rack[a] != rack[b] for a, b in zip(order, order[1:])) >= 2


def test_mpich_hydra_machinefile(bench):
    need("mpich")
    p = prove.prove_mpich(bench, bench.order, SLOTS, "scrambled")
    assert p.ok, p.note
    assert p.got == prove.expected_ranks(bench.order, SLOTS)
    # -ppn overrides the file's host:N counts: hosts keep the file order, but round-robin,
    # so a host's ranks are no longer contiguous (the README and the file's header say so)
    out = bench.run(["mpiexec.hydra", "-f", "hosts.mpich", "-n", "8", "-ppn", "1", "-localhost",
                     bench.root_address, str(bench.report)])
    hosts = [h.name for h in prove.read_order_hosts(bench.order)]
    assert prove.ranks_from_output(out, 8) == hosts + hosts


@pytest.fixture(scope="module")
def slurm(bench):
    why = prove.unavailable("slurm")
    if why:
        pytest.skip(why)
    try:
        s = prove.SlurmCluster(bench.c, bench.dir / "slurm", cpus=SLOTS).__enter__()
    except prove.EnvironmentUnfit as exc:  # installed, but e.g. no cgroup filesystem for slurmd
        pytest.skip(str(exc))
    try:
        yield s
    finally:
        s.close()


def test_slurm_hostfile(bench, slurm):
    p = prove.prove_slurm(bench, slurm, bench.order, SLOTS, "scrambled")
    assert p.ok, p.note
    # a node list is a set: srun -w places the tasks in its own (name) order, not the list's
    order = [h.name for h in prove.read_order_hosts(bench.order)]
    out = bench.run(["srun", "-n", "4", "-N", "4", "-w", ",".join(order), str(bench.report)],
                    env=slurm.env(PATH=bench.env()["PATH"]))
    assert prove.ranks_from_output(out, 4) == sorted(order) != order


def test_slurm_topology(bench, slurm):
    p, extra = prove.prove_slurm_topology(bench, slurm, bench.order, bench.dir / "groups.json", "racks")
    racks = [[h.name for h in bench.c.hosts if h.rack == r] for r in range(2)]
    # scontrol show topology lists exactly the leaf switches plink wrote
    assert sorted(p.got) == sorted(p.expected) and len(p.got) == 2, (p.got, p.expected)
    assert sorted(sorted(v.split("=")[1].split(",")) for v in p.got) == sorted(sorted(r) for r in racks)
    # with one node busy, a job of one group's size lands under one switch; without the
    # topology the same job spans both (the check can fail)
    free_rack = next(r for r in racks if extra["tree"]["busy"] not in r)
    assert extra["tree"]["nodes"] == sorted(free_rack) and len(extra["tree"]["groups_hit"]) == 1, extra
    assert len(extra["control"]["groups_hit"]) == 2, extra
    assert p.ok, p.note


def test_deepspeed_pdsh_hostfile(bench):
    need("deepspeed")
    p = prove.prove_deepspeed(bench, bench.order, SLOTS, "scrambled")
    assert p.ok, p.note


def test_horovodrun_hosts(bench):
    need("horovod")
    p = prove.prove_horovod(bench, bench.order, SLOTS, "scrambled")
    assert p.ok, p.note


def test_env_file_sets_open_mpi_algorithm(bench):
    need("env")
    proofs = prove.prove_env(bench, bench.order, "scrambled")
    assert [p.got for p in proofs] == [["ring (from environment)"], ["rabenseifner (from environment)"]]
    assert all(p.ok for p in proofs)


def test_ranks_from_output_rejects_missing_and_duplicate_ranks():
    with pytest.raises(prove.LauncherError):
        prove.ranks_from_output("plink-rank 0 a\nplink-rank 2 b\n", 3)
    with pytest.raises(prove.LauncherError):
        prove.ranks_from_output("plink-rank 0 a\nplink-rank 0 b\n", 1)
    assert prove.ranks_from_output("h: plink-rank 1 b\nplink-rank 0 a\n", 2) == ["a", "b"]

