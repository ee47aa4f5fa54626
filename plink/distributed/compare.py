"""Measure, inside the job, what a rank order buys: the real all-reduce on two groups.

A cost model predicts a speedup; the job's own collective is what the user
pays for.  :func:`compare_groups` times ``torch.distributed.all_reduce`` of
``size`` bytes on a candidate group (e.g. :func:`~plink.distributed.locality_group`'s)
and on a baseline (the default group: the order the launcher gave), so the
speedup a user reads is one that was measured, with the job's library,
backend, hosts and load.

Method: one warm-up on each group, then ``repeats`` rounds, each timing the
baseline then the candidate (in every other round the candidate first), so
load that comes and goes on the hosts falls on both.  A run's time is the
slowest rank's (all ranks wait at a barrier before each run; the per-rank
times are combined with one ``all_reduce(MAX)`` at the end), so every rank
gets the same numbers and takes the same decision.  The medians are compared.

On the proof cluster of ``benchmarks/collectives_netns.py`` the measured
speedups of Open MPI's all-reduce were 14-31% below the shared model's
predictions, because copies and reductions (the same in every order) take part
of the time: the prediction is of the network's part, this is of the whole.

Cost: ``2 x (repeats + 1)`` all-reduces of ``size`` bytes plus as many
barriers.  Collective: every rank of the default group calls it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from plink.errors import PlinkError
from plink.units import format_size


@dataclass(frozen=True)
class Comparison:
    """Measured all-reduce times (seconds, the slowest rank's, one per run) on two groups."""

    size: int
    baseline: tuple[float, ...]
    candidate: tuple[float, ...]

    @property
    def baseline_seconds(self) -> float:
        """Median of the baseline's runs."""
        return statistics.median(self.baseline)

    @property
    def candidate_seconds(self) -> float:
        """Median of the candidate's runs."""
        return statistics.median(self.candidate)

    @property
    def speedup(self) -> float:
        """Baseline median / candidate median (> 1: the candidate is faster)."""
        return self.baseline_seconds / self.candidate_seconds

    @property
    def candidate_faster(self) -> bool:
        """Whether the candidate's median is below the baseline's."""
        return self.candidate_seconds < self.baseline_seconds

    def to_dict(self) -> dict:
        return {"size_bytes": self.size, "baseline_seconds": list(self.baseline),
                "candidate_seconds": list(self.candidate), "baseline_median": self.baseline_seconds,
                "candidate_median": self.candidate_seconds, "speedup": self.speedup}

    def summary(self, baseline: str = "default order", candidate: str = "plink's order") -> str:
        """One line: both medians and the ratio."""
        return (f"all_reduce of {format_size(self.size)}, median of {len(self.candidate)} (slowest rank): {baseline} "
                f"{self.baseline_seconds:.4g} s, {candidate} {self.candidate_seconds:.4g} s "
                f"({f'{self.speedup:.2f}x faster' if self.speedup >= 1 else f'{1 / self.speedup:.2f}x slower'})")


def compare_groups(candidate, baseline=None, *, size: int = 25 * 2**20, repeats: int = 5,
                   warmup: int = 1) -> Comparison:
    """Time ``all_reduce`` of ``size`` bytes (float32) on ``candidate`` and ``baseline`` (default: the
    default group), alternating; every rank returns the same :class:`Comparison` (module docstring).

    Both groups must hold every rank of the job (a reordered group does).  The
    tensor is on the current CUDA device when a group's backend is NCCL.
    """
    import torch

    from plink.distributed.group import _dist

    dist = _dist()
    if baseline is None:
        baseline = dist.group.WORLD
    if int(repeats) < 1 or int(warmup) < 0:
        raise PlinkError(f"repeats must be >= 1 and warmup >= 0, got {repeats} and {warmup}")
    if int(size) < 4:
        raise PlinkError(f"size must be at least 4 bytes (one float32), got {size}")
    world = dist.get_world_size()
    for g, what in ((candidate, "candidate"), (baseline, "baseline")):
        if dist.get_world_size(g) != world:
            raise PlinkError(f"the {what} group has {dist.get_world_size(g)} ranks, the job {world}: "
                             "compare groups of every rank")
    cuda = "nccl" in {str(dist.get_backend(g)).lower() for g in (candidate, baseline, None)}
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    x = torch.ones(int(size) // 4, dtype=torch.float32, device=device)

    def run(group) -> float:
        dist.barrier()
        if cuda:
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        dist.all_reduce(x, group=group)
        if cuda:
            torch.cuda.synchronize(device)
        return time.perf_counter() - t0

    for _ in range(int(warmup)):
        run(baseline)
        run(candidate)
    times = []  # (baseline, candidate) per round, this rank's
    for k in range(int(repeats)):
        if k % 2:
            c = run(candidate)
            b = run(baseline)
        else:
            b = run(baseline)
            c = run(candidate)
        times.append((b, c))
    t = torch.tensor(times, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    t = t.cpu().tolist()
    return Comparison(int(size) // 4 * 4, tuple(r[0] for r in t), tuple(r[1] for r in t))
