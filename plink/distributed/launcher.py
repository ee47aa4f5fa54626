"""Who am I in this job: rank, world size, local rank and rendezvous, from the launcher's environment.

Every launcher exports the same facts under its own names; :func:`launcher_env`
reads them (first match wins, in this order):

============  ==========================  ======================  =============================  ====================
launcher      rank                        world size              local rank / local size        rendezvous
============  ==========================  ======================  =============================  ====================
torchrun      ``RANK``                    ``WORLD_SIZE``          ``LOCAL_RANK``,                ``MASTER_ADDR``,
(and k8s                                                          ``LOCAL_WORLD_SIZE``           ``MASTER_PORT``
PyTorchJob)
Open MPI      ``OMPI_COMM_WORLD_RANK``    ``OMPI_COMM_WORLD_SIZE``  ``OMPI_COMM_WORLD_LOCAL_RANK``,  ``MASTER_ADDR``
                                                                  ``OMPI_COMM_WORLD_LOCAL_SIZE``   (``mpirun -x``)
Slurm srun    ``SLURM_PROCID``            ``SLURM_NTASKS``        ``SLURM_LOCALID``,             first host of
                                                                  ``SLURM_TASKS_PER_NODE``       ``SLURM_STEP_NODELIST``
MPICH/Hydra   ``PMI_RANK``                ``PMI_SIZE``            ``MPI_LOCALRANKID``,           ``MASTER_ADDR``
                                                                  ``MPI_LOCALNRANKS``
============  ==========================  ======================  =============================  ====================

``MASTER_ADDR`` / ``MASTER_PORT`` in the environment always win (so
``mpirun -x MASTER_ADDR=node0`` and a Slurm batch script that exports them
work); under Slurm without them rank 0's host is the first host of the step's
node list (expanded with plink's Slurm host-list reader) and the port is
29500.  Open MPI and MPICH do not export rank 0's address: pass it with
``-x MASTER_ADDR=...`` (Open MPI) or ``-genv MASTER_ADDR ...`` (MPICH).

Pure functions over a mapping (``os.environ`` by default); O(1).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Mapping

from plink.errors import PlinkError

DEFAULT_PORT = 29500


@dataclass(frozen=True)
class LaunchEnv:
    """This process's place in the job, as its launcher described it."""

    launcher: str  #: "torchrun", "openmpi", "slurm", "mpich" or "explicit"
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int | None
    master_addr: str | None
    master_port: int

    @property
    def init_method(self) -> str:
        """``tcp://MASTER_ADDR:MASTER_PORT`` (IPv6 addresses bracketed)."""
        if not self.master_addr:
            raise PlinkError(_no_master(self.launcher))
        host = f"[{self.master_addr}]" if ":" in self.master_addr else self.master_addr
        return f"tcp://{host}:{self.master_port}"


def _no_master(launcher: str) -> str:
    hint = {
        "openmpi": "Open MPI does not export rank 0's address: add -x MASTER_ADDR=<first host> to mpirun",
        "mpich": "MPICH does not export rank 0's address: add -genv MASTER_ADDR <first host> to mpiexec",
    }.get(launcher, "set MASTER_ADDR to rank 0's host")
    return f"no rendezvous address: {hint}"


def _int(env: Mapping[str, str], key: str, lo: int = 0) -> int:
    raw = env.get(key, "")
    try:
        value = int(raw.strip())
    except ValueError:
        raise PlinkError(f"{key}={raw!r} is not an integer") from None
    if value < lo:
        raise PlinkError(f"{key}={value} must be >= {lo}")
    return value


def _opt_int(env: Mapping[str, str], key: str, lo: int = 0) -> int | None:
    return _int(env, key, lo) if env.get(key, "").strip() else None


def slurm_tasks_on_node(tasks_per_node: str, node_id: int) -> int:
    """Tasks on node ``node_id`` from ``SLURM_TASKS_PER_NODE`` (``"4(x2),3"`` -> 4, 4, 3)."""
    counts: list[int] = []
    for part in tasks_per_node.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            raise PlinkError(f"SLURM_TASKS_PER_NODE={tasks_per_node!r} is not like '4(x2),3'")
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    if not 0 <= node_id < len(counts):
        raise PlinkError(f"SLURM_NODEID={node_id} but SLURM_TASKS_PER_NODE={tasks_per_node!r} lists {len(counts)} nodes")
    return counts[node_id]


def slurm_first_host(nodelist: str) -> str:
    """The first host of a Slurm node list (``"gpu[03-04,07],cpu1"`` -> ``gpu03``)."""
    from plink.data.hostlist import parse_hostlist

    entries = parse_hostlist(nodelist, source="SLURM_STEP_NODELIST", fmt="slurm")
    if not entries:
        raise PlinkError(f"empty Slurm node list {nodelist!r}")
    return entries[0].name


def launcher_env(env: Mapping[str, str] | None = None) -> LaunchEnv:
    """Read the launcher's variables (see the module docstring); PlinkError when none is found."""
    env = os.environ if env is None else env
    port = _opt_int(env, "MASTER_PORT", 1)
    port = DEFAULT_PORT if port is None else port
    if port > 65535:
        raise PlinkError(f"MASTER_PORT={port} is not a TCP port")
    master = env.get("MASTER_ADDR") or None
    if "RANK" in env and "WORLD_SIZE" in env:
        launcher = "torchrun"
        rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE", 1)
        local = _opt_int(env, "LOCAL_RANK")
        local_size = _opt_int(env, "LOCAL_WORLD_SIZE", 1)
        local = local or 0  # a PyTorchJob pod without torchrun: one process per pod
    elif "OMPI_COMM_WORLD_RANK" in env:
        launcher = "openmpi"
        rank, world = _int(env, "OMPI_COMM_WORLD_RANK"), _int(env, "OMPI_COMM_WORLD_SIZE", 1)
        local = _opt_int(env, "OMPI_COMM_WORLD_LOCAL_RANK") or 0
        local_size = _opt_int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1)
    elif "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        launcher = "slurm"
        rank, world = _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS", 1)
        local = _opt_int(env, "SLURM_LOCALID") or 0
        local_size = None
        if env.get("SLURM_TASKS_PER_NODE") and env.get("SLURM_NODEID"):
            local_size = slurm_tasks_on_node(env["SLURM_TASKS_PER_NODE"], _int(env, "SLURM_NODEID"))
        if master is None:
            nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
            if nodelist:
                master = slurm_first_host(nodelist)
    elif "PMI_RANK" in env and "PMI_SIZE" in env:
        launcher = "mpich"
        rank, world = _int(env, "PMI_RANK"), _int(env, "PMI_SIZE", 1)
        local = _opt_int(env, "MPI_LOCALRANKID") or 0
        local_size = _opt_int(env, "MPI_LOCALNRANKS", 1)
    else:
        raise PlinkError(
            "no launcher environment found: start this under torchrun, srun, mpirun or a PyTorchJob "
            "(expected RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/SIZE)"
        )
    if rank >= world:
        raise PlinkError(f"{launcher}: rank {rank} is not below the world size {world}")
    if local_size is not None and local >= local_size:
        raise PlinkError(f"{launcher}: local rank {local} is not below the local world size {local_size}")
    return LaunchEnv(launcher, rank, world, local, local_size, master, port)
