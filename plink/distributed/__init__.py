"""Locality from inside the job: probe and reorder over ``torch.distributed``, no SSH.

For clusters where ``plink probe`` cannot log in to the nodes (Kubernetes pods,
locked-down Slurm): the job measures itself.

In a training script, after ``init_process_group``::

    import plink.distributed as pd
    group, order = pd.locality_group(algo="ring", time_limit=2)   # probe, solve on rank 0, broadcast
    model = DDP(model, process_group=group)

As a command under any launcher (torchrun, srun, mpirun, a PyTorchJob)::

    python -m plink.distributed probe -o probe.json     # then: plink order probe.json

* :func:`probe_group` - pairwise RTT (and bandwidth) between the job's nodes
  in O(N) rounds of disjoint pairs, gathered to every rank as
  :class:`~plink.data.probefile.ProbeData` (:mod:`plink.distributed.probe`);
  by default timed with plink's UDP echo agent (:mod:`plink.distributed.echo`);
* :func:`locality_group` - the reordered process group
  (:mod:`plink.distributed.group`);
* :func:`order_from_file` - map an order made before launch onto the ranks;
* :func:`compare_groups` - the job's all-reduce timed on two groups (what an
  order buys, measured; ``locality_group(verify=True)`` keeps the new group only
  if it measures faster) (:mod:`plink.distributed.compare`);
* :func:`launcher_env` / :func:`init_from_env` - rank, world size and
  rendezvous from torchrun, Slurm, Open MPI or MPICH variables
  (:mod:`plink.distributed.launcher`).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

from plink.distributed.compare import Comparison, compare_groups
from plink.distributed.group import locality_group, match_hosts, order_from_file, ranks_in_order
from plink.distributed.launcher import LaunchEnv, launcher_env
from plink.distributed.probe import make_plan, probe_group
from plink.errors import PlinkError

__all__ = ["probe_group", "locality_group", "order_from_file", "compare_groups", "Comparison", "launcher_env", "LaunchEnv", "init_from_env",
           "make_plan", "match_hosts", "ranks_in_order"]


def init_from_env(backend: str = "auto", timeout: float = 300.0) -> LaunchEnv:
    """Initialise the default process group from the launcher's variables (no-op if already done).

    ``backend="auto"``: NCCL when this rank sees a GPU, else Gloo (every rank
    must agree: a job mixing GPU and CPU-only ranks needs ``backend="gloo"``).
    Under torchrun the rendezvous is ``env://`` (the agent's store), elsewhere
    ``tcp://MASTER_ADDR:MASTER_PORT`` with rank 0 hosting the store.
    """
    import torch
    import torch.distributed as dist

    from plink.distributed.probe import check_backend, check_timeout

    timeout = check_timeout(timeout)
    backend = check_backend(backend)
    env = launcher_env()
    if dist.is_initialized():
        return env
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(env.local_rank % max(1, torch.cuda.device_count()))
    init = "env://" if env.launcher == "torchrun" else env.init_method
    t0 = time.monotonic()
    try:
        _interruptible(lambda: dist.init_process_group(backend, init_method=init, rank=env.rank,
                                                       world_size=env.world_size, timeout=timedelta(seconds=timeout)))
    except (RuntimeError, ValueError) as exc:
        who = env.launcher
        if who == "torchrun" and "TORCHELASTIC_RUN_ID" not in os.environ:  # RANK/WORLD_SIZE set by hand, a PyTorchJob
            who = "RANK/WORLD_SIZE"
        raise PlinkError(f"{who}: cannot join the process group at {init} as rank {env.rank} of "
                         f"{env.world_size} after {time.monotonic() - t0:.0f} s (timeout {timeout:g} s; are all "
                         f"{env.world_size} ranks started?): "
                         f"{' '.join(str(exc).split())[:200]}") from None
    return env


def _interruptible(call):
    """Run ``call()`` in a daemon thread while this one waits in short joins: the rendezvous blocks in
    torch's C++ (the store's connect and wait), where a Ctrl-C or SIGTERM was not acted on until it
    timed out, minutes later. Its exception is raised here; a signal's is raised here at once (the
    thread, still waiting, ends with the process)."""
    import threading

    out: dict = {}

    def run():
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            out["error"] = exc

    t = threading.Thread(target=run, name="plink-rendezvous", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.1)
    if "error" in out:
        raise out["error"]
    return out.get("value")
