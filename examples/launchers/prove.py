"""Every launcher file ``plink emit`` writes, run by the real launcher on the netns cluster.

Run as root (network namespaces, sshd)::

    python examples/launchers/prove.py                  # 2 racks x 3 hosts, 2 slots per host
    python examples/launchers/prove.py --only mpich,slurm --json proofs.json

What it does:

1. builds the emulated datacenter of ``plink.probes.netns.NetnsCluster`` (sshd in every host
   namespace; a free namespace prefix and /16 picked per run unless ``--prefix``/``--subnet``);
2. probes it over SSH (``plink probe --method fping``), orders it (``plink order --format json``)
   and groups it (``plink group``), exactly with the CLI;
3. for two orders - plink's, and a seeded *scrambled* one that is neither sorted by name nor
   rack-contiguous, so a launcher that sorts or packs hosts its own way is caught - writes each
   launcher's file with ``plink emit ORDER --format F --slots S`` and starts a tiny job (every
   rank prints its rank and ``hostname``) with the README's copy-paste line;
4. checks rank -> host for every rank against the order (host ``i`` holds ranks
   ``i*S .. i*S+S-1``), prints a table and tears everything down (also after an error).

Launchers (each is skipped with a reason when it is not installed):

``openmpi``, ``rankfile``  ``mpirun.openmpi --hostfile F --map-by seq`` / ``--rankfile F``
``mpich``     ``mpiexec.hydra -f F -n R`` (MPICH's Hydra, ssh launcher)
``slurm``     a Slurm cluster inside the namespaces (munged; slurmctld on the first host,
              slurmd on every host; ``ProctrackType=proctrack/linuxproc``,
              ``TaskPlugin=task/none``), ``SLURM_HOSTFILE=F srun --distribution=arbitrary -n R``
``slurm-topology``  ``topology.conf`` from ``plink emit --format slurm-topology`` loaded by
              slurmctld: ``scontrol show topology`` must list plink's switches, and with one
              node busy an allocation of one group's size must land under one leaf switch
              (the same allocation without the topology is run as the control)
``torchrun``  ``torchrun --node-rank "$(plink node-rank MAP)"`` on every host, over ssh
``deepspeed`` ``deepspeed --hostfile F`` (its default pdsh runner, ssh into the hosts)
``horovod``   ``horovodrun -np R -H "$(plink emit ORDER --format horovod)"`` (Gloo controller)
``env``       the ``env`` file sourced, Open MPI's ``ompi_info`` reading back the algorithm it
              sets (NCCL's variables cannot be checked here: no GPUs, no NCCL)

Only reaching the namespaces differs from a real cluster: ``ssh`` on ``PATH`` is a two-line
wrapper adding ``-F <cluster ssh_config>``, Hydra gets ``-localhost <root-side address>``
(this machine's name resolves to 127.0.0.1), Open MPI ``--mca oob_tcp_if_include`` the
cluster subnet.  None of these touch placement.  Measured: see the README's launcher table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from plink.data.orderfile import read_order_hosts  # noqa: E402

PREFIX = SUBNET = None  # a free prefix and /16 picked per run (plink.probes.netns)
LAUNCHERS = ("openmpi", "rankfile", "mpich", "slurm", "slurm-topology", "torchrun", "deepspeed", "horovod", "env")
#: every rank prints this line; the launcher's rank variable is the first one that is set
REPORT = r'''#!/bin/sh
r="${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-${HOROVOD_RANK:-$RANK}}}}"
echo "plink-rank $r $(hostname)"
'''
RANK_LINE = re.compile(r"plink-rank (\d+) (\S+)")


@dataclass
class Proof:
    """One launcher run: what plink's order says and where the ranks ran."""

    launcher: str
    order: str
    command: str
    expected: list = field(default_factory=list)
    got: list = field(default_factory=list)
    ok: bool = False
    seconds: float = 0.0
    note: str = ""

    @property
    def status(self) -> str:
        if self.note.startswith("skipped"):
            return "skipped"
        return "ok" if self.ok else "FAIL"


class LauncherError(RuntimeError):
    pass


class EnvironmentUnfit(LauncherError):
    """The launcher is installed but this machine cannot run it (e.g. slurmd without cgroups)."""


# ---------------------------------------------------------------------------
# plumbing


def which(name: str) -> str | None:
    return shutil.which(name)


def plink_cli(*args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> str:
    """``plink ARGS`` (this checkout) in ``cwd``; its stdout."""
    e = dict(env or os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "plink", *args], cwd=cwd, env=e, capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode not in (0,):
        raise LauncherError(f"plink {' '.join(args)} failed (exit {p.returncode}): {p.stderr.strip()[-500:]}")
    return p.stdout


def ranks_from_output(text: str, n: int) -> list[str]:
    """Host of each rank from the ``plink-rank R HOST`` lines (launcher prefixes allowed)."""
    seen: dict[int, str] = {}
    for m in RANK_LINE.finditer(text):
        r, host = int(m.group(1)), m.group(2)
        if r in seen:
            raise LauncherError(f"rank {r} reported twice ({seen[r]}, {host})")
        seen[r] = host
    if sorted(seen) != list(range(n)):
        raise LauncherError(f"ranks reported: {sorted(seen)}, expected 0..{n - 1}; output: {text.strip()[-600:]}")
    return [seen[r] for r in range(n)]


def expected_ranks(order_file: Path, slots: int) -> list[str]:
    return [h.name for h in read_order_hosts(order_file) for _ in range(slots)]


class Bench:
    """The cluster plus what every launcher run needs (ssh wrapper, report script, env)."""

    def __init__(self, c, workdir: Path, python: str = sys.executable):
        self.c, self.dir, self.python = c, Path(workdir), python
        self.bin = self.dir / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        ssh = self.bin / "ssh"
        ssh.write_text(f'#!/bin/sh\nexec /usr/bin/ssh -F {shlex.quote(c.ssh_config)} "$@"\n')
        ssh.chmod(0o755)
        self.report = self.dir / "report.sh"
        self.report.write_text(REPORT)
        self.report.chmod(0o755)
        self.root_address = f"{c.subnet}.250.1"  # the root namespace's end of the cluster uplink
        self.net = f"{c.subnet}.0.0/16"

    def env(self, **more) -> dict:
        env = dict(os.environ, PATH=f"{self.bin}:{os.environ.get('PATH', '')}", PYTHONPATH=str(ROOT),
                   OMP_NUM_THREADS="1")
        for k in ("MASTER_ADDR", "MASTER_PORT", "RANK", "SLURM_HOSTFILE", "OMPI_COMM_WORLD_RANK"):
            env.pop(k, None)
        env.update(more)
        return env

    def run(self, argv, *, env: dict | None = None, timeout: float = 180, shell: bool = False) -> str:
        p = subprocess.run(argv, cwd=self.dir, env=env or self.env(), capture_output=True, text=True,
                           timeout=timeout, shell=shell, start_new_session=True)
        if p.returncode != 0:
            cmd = argv if isinstance(argv, str) else " ".join(shlex.quote(a) for a in argv)
            raise LauncherError(f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-800:]}\ncommand: {cmd}")
        return p.stdout + "\n" + p.stderr

    def emit(self, order_file: Path, fmt: str, out: str, *more: str) -> Path:
        plink_cli("emit", str(order_file), "--format", fmt, *more, "-o", out, cwd=self.dir)
        return self.dir / out


def _proof(launcher: str, order_name: str, command: str, expected: list[str], fn) -> Proof:
    t = time.monotonic()
    p = Proof(launcher, order_name, command, expected)
    try:
        p.got = fn()
        p.ok = p.got == expected
        if not p.ok:
            bad = [f"rank {r}: {g} (file: {w})" for r, (g, w) in enumerate(zip(p.got, expected)) if g != w]
            p.note = "; ".join(bad[:4]) + (" ..." if len(bad) > 4 else "")
    except (LauncherError, subprocess.TimeoutExpired) as exc:
        p.note = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    p.seconds = round(time.monotonic() - t, 1)
    return p


# ---------------------------------------------------------------------------
# MPI


def prove_openmpi(b: Bench, order_file: Path, slots: int, name: str, tag: str = "") -> Proof:
    """``mpirun --hostfile F --map-by seq -np R`` from ``plink emit --format openmpi``."""
    hosts = b.emit(order_file, "openmpi", f"hosts{tag}.ompi", "--slots", str(slots))
    n = len(expected_ranks(order_file, slots))
    cmd = (f"mpirun.openmpi --allow-run-as-root --hostfile {hosts.name} --map-by seq -np {n} "
           f"--mca oob_tcp_if_include {b.net} --mca btl_tcp_if_include {b.net} ./report.sh")
    return _proof("openmpi", name, cmd, expected_ranks(order_file, slots),
                  lambda: ranks_from_output(b.run(shlex.split(cmd)), n))


def prove_rankfile(b: Bench, order_file: Path, slots: int, name: str, tag: str = "") -> Proof:
    """``mpirun --rankfile F -np R`` from ``plink emit --format rankfile``."""
    ranks = b.emit(order_file, "rankfile", f"ranks{tag}.ompi", "--slots", str(slots))
    n = len(expected_ranks(order_file, slots))
    cmd = (f"mpirun.openmpi --allow-run-as-root --rankfile {ranks.name} -np {n} "
           f"--mca oob_tcp_if_include {b.net} --mca btl_tcp_if_include {b.net} ./report.sh")
    return _proof("rankfile", name, cmd, expected_ranks(order_file, slots),
                  lambda: ranks_from_output(b.run(shlex.split(cmd)), n))


def prove_mpich(b: Bench, order_file: Path, slots: int, name: str, tag: str = "") -> Proof:
    """MPICH's Hydra: ``mpiexec.hydra -f F -n R`` from ``plink emit --format mpich``."""
    hosts = b.emit(order_file, "mpich", f"hosts{tag}.mpich", "--slots", str(slots))
    n = len(expected_ranks(order_file, slots))
    cmd = f"mpiexec.hydra -f {hosts.name} -n {n} -localhost {b.root_address} ./report.sh"
    return _proof("mpich", name, cmd, expected_ranks(order_file, slots),
                  lambda: ranks_from_output(b.run(shlex.split(cmd)), n))


# ---------------------------------------------------------------------------
# Slurm


class SlurmCluster:
    """munged + slurmctld (first host) + slurmd (every host) inside the cluster's namespaces.

    Each slurmd runs in its host's network namespace (``nsenter --net``: unlike ``ip netns
    exec`` it keeps ``/sys/fs/cgroup`` visible, which slurmd 22.05 insists on finding even
    with ``proctrack/linuxproc``) and its own UTS namespace, so ``gethostname()`` is the node
    name.  Configs, state, logs and the munge key live in ``workdir``.  Clients (``srun``,
    ``scontrol``) run in the root namespace with ``SLURM_CONF`` from :meth:`env`.
    """

    def __init__(self, c, workdir: Path, cpus: int = 2):
        self.c, self.dir, self.cpus = c, Path(workdir), cpus
        self.ctld_host = c.hosts[0]
        self.procs: list[subprocess.Popen] = []
        self.ctld: subprocess.Popen | None = None
        self.munged: subprocess.Popen | None = None

    @staticmethod
    def unavailable_reason() -> str | None:
        for tool in ("slurmctld", "slurmd", "srun", "scontrol", "munged", "mungekey", "nsenter"):
            if not which(tool):
                return f"{tool} is not installed (Debian: slurmd slurmctld slurm-client munge)"
        return None

    def env(self, **more) -> dict:
        env = dict(os.environ, SLURM_CONF=str(self.dir / "slurm.conf"))
        env.pop("SLURM_HOSTFILE", None)
        env.update(more)
        return env

    def _conf(self, topology: str) -> str:
        d = self.dir
        nodes = "".join(f"NodeName={h.name} NodeAddr={h.address} CPUs={self.cpus} State=UNKNOWN\n" for h in self.c.hosts)
        return (
            f"ClusterName={self.c.prefix}\nSlurmctldHost={self.ctld_host.name}({self.ctld_host.address})\n"
            "SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\n"
            f"AuthInfo=socket={d / 'munge.sock'}\nStateSaveLocation={d / 'ctld'}\n"
            f"SlurmdSpoolDir={d / 'spool' / '%n'}\nSlurmctldPidFile={d / 'slurmctld.pid'}\n"
            f"SlurmdPidFile={d / 'slurmd-%n.pid'}\nSlurmctldLogFile={d / 'slurmctld.log'}\n"
            f"SlurmdLogFile={d / 'slurmd-%n.log'}\nSlurmctldPort=6817\nSlurmdPort=6818\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSlurmdParameters=config_overrides\n"
            "MpiDefault=none\nReturnToService=2\nSchedulerType=sched/backfill\n"
            f"TopologyPlugin={topology}\nSlurmctldDebug=info\nSlurmdDebug=info\n"
            + nodes + "PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
        )

    def __enter__(self) -> "SlurmCluster":
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self, topology: str = "topology/none") -> None:
        d = self.dir
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)
        (d / "ctld").mkdir(exist_ok=True)
        (d / "spool").mkdir(exist_ok=True)
        key = d / "munge.key"
        subprocess.run(["mungekey", "-c", "-f", "-k", str(key)], check=True, capture_output=True)
        os.chmod(key, 0o400)
        self.munged = subprocess.Popen(
            ["munged", "-F", "--force", f"--socket={d / 'munge.sock'}", f"--key-file={key}",
             f"--log-file={d / 'munged.log'}", f"--pid-file={d / 'munged.pid'}", f"--seed-file={d / 'munged.seed'}"],
            stdout=subprocess.DEVNULL, stderr=open(d / "munged.out", "ab"), start_new_session=True)
        _wait(lambda: (d / "munge.sock").exists(), 10, "munged did not create its socket")
        (d / "slurm.conf").write_text(self._conf(topology))
        self._start_ctld()
        for h in self.c.hosts:
            argv = ["nsenter", f"--net=/run/netns/{h.netns}", "unshare", "--uts", "--", "sh", "-c",
                    'hostname "$0" && exec slurmd -D', h.name]
            self.procs.append(subprocess.Popen(argv, env=self.env(), stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=open(d / f"slurmd-{h.name}.out", "ab"),
                                               start_new_session=True))
        try:
            self.wait_idle()
        except LauncherError:
            for f in sorted(d.glob("slurmd-*.out")):
                text = f.read_text(errors="replace")
                if "Unable to initialize cgroup plugin" in text or "cgroup" in text and "initialization failed" in text:
                    last = [ln for ln in text.splitlines() if "error" in ln][-3:]
                    raise EnvironmentUnfit(f"slurmd cannot start on this machine: {' / '.join(last)}") from None
            raise

    def _start_ctld(self) -> None:
        h = self.ctld_host
        argv = ["ip", "netns", "exec", h.netns, "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec slurmctld -D -c -i', h.name]
        self.ctld = subprocess.Popen(argv, env=self.env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(self.dir / "slurmctld.out", "ab"), start_new_session=True)
        _wait(lambda: self.scontrol("ping", check=False).find("is UP") >= 0, 30,
              f"slurmctld did not come up (see {self.dir / 'slurmctld.log'})")

    def restart_ctld(self, topology: str) -> None:
        """Restart slurmctld with another ``TopologyPlugin`` (state cleared; slurmd stay)."""
        self.scontrol("shutdown", "slurmctld", check=False)
        try:
            self.ctld.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.ctld.pid, signal.SIGKILL)
            self.ctld.wait()
        (self.dir / "slurm.conf").write_text(self._conf(topology))
        self._start_ctld()
        self.wait_idle()

    def scontrol(self, *args: str, check: bool = True) -> str:
        p = subprocess.run(["scontrol", *args], env=self.env(), capture_output=True, text=True, timeout=30)
        if check and p.returncode != 0:
            raise LauncherError(f"scontrol {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def node_states(self) -> dict[str, str]:
        p = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], env=self.env(), capture_output=True, text=True,
                           timeout=30)
        return dict(line.split() for line in p.stdout.splitlines() if line.strip())

    def wait_idle(self, timeout: float = 60) -> None:
        names = {h.name for h in self.c.hosts}

        def idle():
            st = self.node_states()
            return set(st) == names and all(s == "idle" for s in st.values())

        _wait(idle, timeout, lambda: f"Slurm nodes not idle: {self.node_states()} (logs in {self.dir})")

    def hostnames(self, hostlist: str) -> list[str]:
        return self.scontrol("show", "hostnames", hostlist).split()

    def topology(self) -> dict[str, list[str]]:
        """Leaf switches as slurmctld loaded them (``scontrol show topology``): name -> nodes."""
        out = {}
        for line in self.scontrol("show", "topology").splitlines():
            m = re.search(r"SwitchName=(\S+) Level=0 .*Nodes=(\S+)", line)
            if m:
                out[m.group(1)] = self.hostnames(m.group(2))
        return out

    def close(self) -> None:
        for p in [*self.procs, self.ctld, self.munged]:
            if p is None:
                continue
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(timeout=5)
            except Exception:
                pass
        self.procs.clear()
        self.ctld = self.munged = None


def _wait(cond, timeout: float, what) -> None:
    end = time.monotonic() + timeout
    while True:
        try:
            if cond():
                return
        except (OSError, subprocess.SubprocessError):
            pass
        if time.monotonic() > end:
            raise LauncherError(what() if callable(what) else what)
        time.sleep(0.3)


def prove_slurm(b: Bench, s: SlurmCluster, order_file: Path, slots: int, name: str, tag: str = "") -> Proof:
    """``SLURM_HOSTFILE=F srun --distribution=arbitrary -n R`` from ``plink emit --format slurm``."""
    hosts = b.emit(order_file, "slurm", f"hosts{tag}.slurm", "--slots", str(slots))
    n = len(expected_ranks(order_file, slots))
    cmd = f"SLURM_HOSTFILE={hosts.name} srun --distribution=arbitrary -n {n} ./report.sh"
    return _proof("slurm", name, cmd, expected_ranks(order_file, slots),
                  lambda: ranks_from_output(b.run(cmd, shell=True, env=s.env(**_path(b))), n))


def _path(b: Bench) -> dict:
    return {"PATH": b.env()["PATH"]}


def srun_nodes(s: SlurmCluster, b: Bench, nodes: int) -> list[str]:
    """The nodes Slurm picks for ``srun -N nodes`` (one ``hostname`` per node)."""
    out = b.run(["srun", "-N", str(nodes), "hostname"], env=s.env(**_path(b)), timeout=120)
    return sorted({ln.strip() for ln in out.splitlines() if ln.strip() and not ln.startswith("srun:")})


def allocation_test(s: SlurmCluster, b: Bench, groups: list[list[str]]) -> dict:
    """With the first node (by name) busy, where does a job of one group's size land?

    Busy: ``srun --exclusive -w NODE sleep``; then ``srun -N k hostname`` with ``k`` the size
    of a group that does not contain the busy node.  Returns the busy node, ``k``, the nodes
    and the groups they fall in.
    """
    busy = sorted(h.name for h in s.c.hosts)[0]
    k = min(len(g) for g in groups if busy not in g)
    blocker = subprocess.Popen(["srun", "--exclusive", "-N", "1", "-w", busy, "sleep", "120"], env=s.env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait(lambda: s.node_states().get(busy) == "allocated", 30, f"{busy} did not become allocated")
        nodes = srun_nodes(s, b, k)
    finally:
        os.killpg(blocker.pid, signal.SIGKILL)
        blocker.wait()
        subprocess.run(["scancel", "--user", "root"], env=s.env(), capture_output=True, timeout=30)
    hit = sorted({gi for gi, g in enumerate(groups) for h in nodes if h in g})
    return {"busy": busy, "size": k, "nodes": nodes, "groups_hit": hit}


def prove_slurm_topology(b: Bench, s: SlurmCluster, order_file: Path, groups_file: Path, name: str) -> tuple[Proof, dict]:
    """``topology.conf`` from plink loaded by slurmctld; an allocation lands under one switch.

    ``s`` must run with ``topology/none`` on entry (the control allocation); it is restarted
    with ``topology/tree`` and plink's ``topology.conf``.
    """
    t = time.monotonic()
    topo = b.emit(order_file, "slurm-topology", "topology.conf", "--groups", str(groups_file))
    # the switches plink wrote: leaf switch -> nodes, through Slurm's own hostlist expansion
    written = {}
    for line in topo.read_text().splitlines():
        m = re.match(r"SwitchName=(\S+) Nodes=(\S+)", line)
        if m:
            written[m.group(1)] = sorted(s.hostnames(m.group(2)))
    groups = list(written.values())
    cmd = ("plink emit ORDER --format slurm-topology --groups groups.json -o topology.conf; "
           "TopologyPlugin=topology/tree; scontrol show topology; srun -N K hostname")
    p = Proof("slurm-topology", name, cmd, expected=[f"{k}={','.join(v)}" for k, v in written.items()])
    extra = {}
    try:
        extra["control"] = allocation_test(s, b, groups)        # topology/none
        shutil.copy(topo, s.dir / "topology.conf")
        s.restart_ctld("topology/tree")
        loaded = {k: sorted(v) for k, v in s.topology().items()}
        p.got = [f"{k}={','.join(v)}" for k, v in loaded.items()]
        extra["tree"] = allocation_test(s, b, groups)
        one_switch = len(extra["tree"]["groups_hit"]) == 1
        p.ok = loaded == written and one_switch
        p.note = (f"{extra['tree']['size']} nodes with {extra['tree']['busy']} busy: tree -> "
                  f"{','.join(extra['tree']['nodes'])} ({len(extra['tree']['groups_hit'])} switch); "
                  f"without topology -> {','.join(extra['control']['nodes'])} "
                  f"({len(extra['control']['groups_hit'])} switches)")
        if loaded != written:
            p.note = f"slurmctld loaded {loaded}, plink wrote {written}; " + p.note
    except (LauncherError, subprocess.TimeoutExpired) as exc:
        p.note = str(exc).splitlines()[0][:300]
    p.seconds = round(time.monotonic() - t, 1)
    return p, extra


# ---------------------------------------------------------------------------
# torchrun, DeepSpeed, Horovod


def prove_torchrun(b: Bench, order_file: Path, slots: int, name: str, tag: str = "", port: int = 0) -> Proof:
    """On every host over ssh: ``torchrun --node-rank "$(plink node-rank MAP)" ...`` (static rendezvous)."""
    tmap = b.emit(order_file, "torchrun", f"nodes{tag}.torchrun")
    port = port or 29400 + 10 * len(list(b.dir.glob("nodes*.torchrun")))
    hosts = read_order_hosts(order_file)
    py, m = shlex.quote(b.python), shlex.quote(str(tmap))
    node = (f"cd {shlex.quote(str(b.dir))} && PYTHONPATH={shlex.quote(str(ROOT))} OMP_NUM_THREADS=1 "
            f"TMPDIR={shlex.quote(str(b.dir))} {py} -m torch.distributed.run --nnodes {len(hosts)} --nproc-per-node {slots} "
            f'--node-rank "$({py} -m plink node-rank {m})" --master-addr "$({py} -m plink node-rank {m} --master)" '
            f"--master-port {port} --no-python ./report.sh")
    cmd = (f'torchrun --nnodes {len(hosts)} --nproc-per-node {slots} --node-rank "$(plink node-rank {tmap.name})" '
           f'--master-addr "$(plink node-rank {tmap.name} --master)" --master-port {port} --no-python ./report.sh'
           "   # on every host, over ssh")

    def run():
        procs = [subprocess.Popen([str(b.bin / "ssh"), h.name, node], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, start_new_session=True) for h in b.c.hosts]
        from plink.probes.netns import wait_all

        try:
            outs = wait_all(procs, [h.name for h in b.c.hosts], 240, "torchrun", tail=300)
        except RuntimeError as exc:
            raise LauncherError(str(exc)) from None
        return ranks_from_output("".join(outs), len(hosts) * slots)

    return _proof("torchrun", name, cmd, expected_ranks(order_file, slots), run)


def deepspeed_command() -> str | None:
    return which("deepspeed")


def prove_deepspeed(b: Bench, order_file: Path, slots: int, name: str, tag: str = "") -> Proof:
    """``deepspeed --hostfile F`` (pdsh runner) from ``plink emit --format deepspeed``."""
    hostfile = b.emit(order_file, "deepspeed", f"hostfile{tag}.ds", "--slots", str(slots))
    cmd = f"deepspeed --hostfile {hostfile.name} --no_python --no_local_rank ./report.sh"
    n = len(expected_ranks(order_file, slots))
    # deepspeed execs ``ds_ssh``/``pdsh`` and imports torch on every host: a few seconds per host
    return _proof("deepspeed", name, cmd, expected_ranks(order_file, slots),
                  lambda: ranks_from_output(b.run(shlex.split(cmd), timeout=300), n))


def prove_horovod(b: Bench, order_file: Path, slots: int, name: str, tag: str = "") -> Proof:
    """``horovodrun -np R -H "$(plink emit ORDER --format horovod)"`` (Gloo, ssh into the hosts)."""
    h = plink_cli("emit", str(order_file), "--format", "horovod", "--slots", str(slots), cwd=b.dir).strip()
    n = len(expected_ranks(order_file, slots))
    cmd = (f'horovodrun --gloo -np {n} -H "$(plink emit {order_file.name} --format horovod --slots {slots})" '
           f"--network-interface eth0 ./report.sh")
    argv = ["horovodrun", "--gloo", "-np", str(n), "-H", h, "--network-interface", "eth0", str(b.report)]
    return _proof("horovod", name, cmd, expected_ranks(order_file, slots),
                  lambda: ranks_from_output(b.run(argv, timeout=300), n))


def prove_env(b: Bench, order_file: Path, name: str) -> list[Proof]:
    """``. plink.env`` then ``ompi_info``: does Open MPI read the algorithm plink set?"""
    out = []
    want = {"ring": "ring", "hd": "rabenseifner"}
    for algo, value in want.items():
        env_file = b.emit(order_file, "env", f"plink-{algo}.env", "--algo", algo)
        cmd = f". ./{env_file.name} && ompi_info --param coll tuned --level 9 --parsable"

        def run(cmd=cmd):
            text = b.run(cmd, shell=True)
            m = re.search(r"coll_tuned_allreduce_algorithm:value:(\S+)", text)
            src = re.search(r"coll_tuned_allreduce_algorithm:source:(\S+)", text)
            return [f"{m.group(1) if m else '?'} (from {src.group(1) if src else '?'})"]

        out.append(_proof("env", f"{name} --algo {algo}", cmd, [f"{value} (from environment)"], run))
    return out


# ---------------------------------------------------------------------------
# orders


def scrambled_order(c, path: Path, seed: int = 0) -> Path:
    """A seeded order that is neither sorted by name nor rack-contiguous, as a plain order file.

    A launcher that sorts hosts, or packs them its own way, cannot pass with it.  The
    ``# address=`` notes let ``plink node-rank --master`` give rank 0's address.
    """
    names = [h.name for h in c.hosts]
    rack = {h.name: h.rack for h in c.hosts}
    addr = {h.name: h.address for h in c.hosts}
    rng = np.random.default_rng(seed)
    for _ in range(10000):
        perm = [names[i] for i in rng.permutation(len(names))]
        switches = sum(rack[perm[i]] != rack[perm[i - 1]] for i in range(1, len(perm)))
        if perm not in (sorted(perm), sorted(perm, reverse=True)) and switches >= min(3, len(perm) - 1, c.racks + 1):
            break
    Path(path).write_text("".join(f"{n}  # address={addr[n]}\n" for n in perm))
    return Path(path)


def plink_order(b: Bench, count: int = 20) -> tuple[Path, Path]:
    """plink's own order and groups of the cluster: ``plink probe``, ``plink order``, ``plink group``."""
    c = b.c
    plink_cli("probe", c.hostfile, "--method", "fping", "--count", str(count), "--ssh-config", c.ssh_config,
              "--known-hosts", c.known_hosts, "-o", "probe.json", cwd=b.dir)
    plink_cli("order", "probe.json", "--format", "json", "--time-limit", "1", "-o", "order.json", cwd=b.dir)
    plink_cli("group", "probe.json", "--groups", str(c.racks), "-o", "groups.json", cwd=b.dir)
    return b.dir / "order.json", b.dir / "groups.json"


def make_orders(b: Bench, seed: int = 0, count: int = 20) -> tuple[dict[str, Path], Path]:
    """plink's order (probe -> order -> group, the CLI) and a seeded scrambled one; the groups file."""
    order, groups = plink_order(b, count)
    return {"plink": order, "scrambled": scrambled_order(b.c, b.dir / "scrambled.txt", seed)}, groups


# ---------------------------------------------------------------------------
# the whole proof


def unavailable(launcher: str) -> str | None:
    """Why ``launcher`` cannot be proven here (None when it can)."""
    need = {"openmpi": ["mpirun.openmpi"], "rankfile": ["mpirun.openmpi"], "mpich": ["mpiexec.hydra"],
            "deepspeed": ["deepspeed", "pdsh"], "horovod": ["horovodrun"], "env": ["ompi_info"]}
    if launcher in ("slurm", "slurm-topology"):
        return SlurmCluster.unavailable_reason()
    if launcher == "torchrun":
        try:
            import torch.distributed.run  # noqa: F401
        except ImportError:
            return "torch is not installed"
        return None
    for tool in need.get(launcher, []):
        if not which(tool):
            return f"{tool} is not installed"
    return None


def prove_all(racks: int = 2, hosts_per_rack: int = 3, slots: int = 2, only=LAUNCHERS, seed: int = 0,
              prefix: str | None = PREFIX, subnet: str | None = SUBNET, log=print) -> tuple[list[Proof], dict]:
    from plink.probes.netns import NetnsCluster

    proofs: list[Proof] = []
    extra: dict = {}
    t0 = time.monotonic()
    with NetnsCluster(racks=racks, hosts_per_rack=hosts_per_rack, prefix=prefix, subnet=subnet, sshd=True) as c, \
            tempfile.TemporaryDirectory(prefix="plink-prove-") as tmp:
        b = Bench(c, Path(tmp))
        log(f"cluster: {racks} racks x {hosts_per_rack} hosts up in {time.monotonic() - t0:.1f} s "
            f"(prefix {c.prefix}, subnet {c.subnet}.0.0/16)")
        orders, groups = make_orders(b, seed)
        for name, f in orders.items():
            log(f"{name} order: {' '.join(h.name for h in read_order_hosts(f))}")
        for launcher in only:
            why = unavailable(launcher)
            if why:
                proofs.append(Proof(launcher, "-", "", note=f"skipped: {why}"))
                log(f"{launcher}: skipped ({why})")
                continue
            if launcher in ("slurm", "slurm-topology"):
                if any(p.launcher.startswith("slurm") for p in proofs):
                    continue
                with SlurmCluster(c, b.dir / "slurm", cpus=slots) as s:
                    if "slurm" in only:
                        for k, (name, f) in enumerate(orders.items()):
                            proofs.append(prove_slurm(b, s, f, slots, name, tag=f"-{k}"))
                            log(_line(proofs[-1]))
                    if "slurm-topology" in only:
                        p, extra["slurm-topology"] = prove_slurm_topology(b, s, orders["plink"], groups, "plink")
                        proofs.append(p)
                        log(_line(p))
                continue
            if launcher == "env":
                for p in prove_env(b, orders["plink"], "plink"):
                    proofs.append(p)
                    log(_line(p))
                continue
            fn = {"openmpi": prove_openmpi, "rankfile": prove_rankfile, "mpich": prove_mpich,
                  "torchrun": prove_torchrun, "deepspeed": prove_deepspeed, "horovod": prove_horovod}[launcher]
            for k, (name, f) in enumerate(orders.items()):
                proofs.append(fn(b, f, slots, name, tag=f"-{k}"))
                log(_line(proofs[-1]))
    extra["elapsed"] = round(time.monotonic() - t0, 1)
    return proofs, extra


def _line(p: Proof) -> str:
    return f"{p.launcher} ({p.order}): {p.status} in {p.seconds:.1f} s {p.note}".rstrip()


def render(proofs: list[Proof], slots: int) -> str:
    lines = [f"{'launcher':<15} {'order':<16} {'ranks':>5} {'result':<7} {'s':>5}  command",
             "-" * 100]
    for p in proofs:
        ranks = len(p.expected) if p.launcher not in ("slurm-topology", "env") and p.expected else "-"
        lines.append(f"{p.launcher:<15} {p.order:<16} {ranks!s:>5} {p.status:<7} {p.seconds:>5.1f}  {p.command}")
        if p.status == "ok" and p.launcher not in ("slurm-topology", "env"):
            lines.append(f"{'':<15} rank -> host: " + " ".join(f"{r}:{h}" for r, h in enumerate(p.got)))
        if p.note:
            lines.append(f"{'':<15} {p.note}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--racks", type=int, default=2)
    ap.add_argument("--hosts-per-rack", type=int, default=3)
    ap.add_argument("--slots", type=int, default=2, help="processes per host")
    ap.add_argument("--only", default=",".join(LAUNCHERS), help=f"comma-separated subset of {','.join(LAUNCHERS)}")
    ap.add_argument("--seed", type=int, default=0, help="seed of the scrambled order")
    ap.add_argument("--prefix", default=PREFIX, help="namespace prefix (default: a free one)")
    ap.add_argument("--subnet", default=SUBNET, help="first two octets of the cluster's /16 (default: a free one)")
    ap.add_argument("--json", help="also write the proofs here")
    args = ap.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    bad = [x for x in only if x not in LAUNCHERS]
    if bad:
        print(f"unknown launcher {bad[0]!r} (choose from {', '.join(LAUNCHERS)})", file=sys.stderr)
        return 2
    from plink.probes.netns import unavailable_reason

    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"cannot build the emulated cluster: {reason}", file=sys.stderr)
        return 1
    proofs, extra = prove_all(args.racks, args.hosts_per_rack, args.slots, only, args.seed, args.prefix,
                              args.subnet, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(render(proofs, args.slots))
    if args.json:
        Path(args.json).write_text(json.dumps({"proofs": [asdict(p) | {"status": p.status} for p in proofs],
                                               **extra}, indent=1) + "\n")
    return 1 if any(p.status == "FAIL" for p in proofs) else 0


if __name__ == "__main__":
    sys.exit(main())
