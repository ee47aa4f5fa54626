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

On the proof cluster of ``benchmarks/collectives_netns.py`` (README, "Where this
stands") Open MPI's measured speedups were 46-70% of the shared model's prediction
for its ring, 70-83% for Rabenseifner, 85-101% for recursive doubling, 90-107% for
the tree (Gloo's 102-108%), because copies and reductions (the same in every order) take
part of the time: the prediction is of the network's part, this is
of the whole.  A median of a few runs is noisy too: ``wins`` (rounds in which
the candidate was the faster) shows how consistent a difference is: on shared
machines two identical orders can measure several percent apart.

Cost: ``2 x (repeats + warmup)`` all-reduces of ``size`` bytes (``size`` is
rounded down to whole float32s), as many barriers, and one all-reduce of
``2 x repeats`` float64 at the end.  With NCCL and ``warmup=0`` the first run
on a new group includes creating its communicator.  Collective: every rank of
the default group calls it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from plink.errors import OptionError, PlinkError
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
        """Baseline median / candidate median (> 1: the candidate is faster; inf for a zero candidate)."""
        c = self.candidate_seconds
        return self.baseline_seconds / c if c > 0 else float("inf")

    @property
    def candidate_faster(self) -> bool:
        """Whether the candidate's median is below the baseline's (a tie is not faster)."""
        return self.candidate_seconds < self.baseline_seconds

    @property
    def wins(self) -> int:
        """Rounds (paired runs) in which the candidate took less time than the baseline."""
        return sum(c < b for b, c in zip(self.baseline, self.candidate))

    def to_dict(self) -> dict:
        return {"size_bytes": self.size, "baseline_seconds": list(self.baseline),
                "candidate_seconds": list(self.candidate), "baseline_median": self.baseline_seconds,
                "candidate_median": self.candidate_seconds, "speedup": self.speedup, "candidate_wins": self.wins}

    def summary(self, baseline: str = "default order", candidate: str = "plink's order") -> str:
        """One line: both medians, the ratio, and in how many rounds the candidate was the faster."""
        b, c = self.baseline_seconds, self.candidate_seconds
        if c == b:
            ratio = "a tie"
        elif c < b:
            ratio = f"{b / c:.2f}x faster" if c > 0 else "faster"
        else:
            ratio = f"{c / b:.2f}x slower" if b > 0 else "slower"
        return (f"all_reduce of {format_size(self.size)}, median of {len(self.candidate)} (slowest rank): {baseline} "
                f"{b:.4g} s, {candidate} {c:.4g} s ({ratio}; faster in {self.wins} of {len(self.candidate)} rounds)")


def compare_groups(candidate, baseline=None, *, size: int = 25 * 2**20, repeats: int = 5,
                   warmup: int = 1) -> Comparison:
    """Time ``all_reduce`` of ``size`` bytes (float32; an int, or a text such as ``"25MiB"``) on
    ``candidate`` and ``baseline`` (default: the default group), alternating; every rank returns the
    same :class:`Comparison` (module docstring).

    Both groups must hold every rank of the job (a reordered group does).  The
    tensor is on the current CUDA device when a group's backend is NCCL.
    """
    import torch

    from plink.distributed.group import _dist

    from plink.order import _check_number
    from plink.units import parse_size

    if isinstance(size, str):  # "25MiB", as the CLI's --size (int('1MiB') failed with a bare ValueError)
        size = parse_size(size)
    for what, value in (("size", size), ("repeats", repeats), ("warmup", warmup)):
        _check_number(what, value, True)
    dist = _dist()
    if baseline is None:
        baseline = dist.group.WORLD
    if int(repeats) < 1:
        raise OptionError(f"repeats must be >= 1, got {repeats}")
    if int(warmup) < 0:
        raise OptionError(f"warmup must be >= 0, got {warmup}")
    if int(size) < 4:
        raise OptionError(f"size must be at least 4 bytes (one float32), got {size}")
    world = dist.get_world_size()
    for g, what in ((candidate, "candidate"), (baseline, "baseline")):
        k = dist.get_world_size(g)  # -1 on a rank outside g
        if k != world:
            raise PlinkError(f"the {what} group " + (f"has {k} ranks, the job {world}" if k > 0 else
                             f"does not hold rank {dist.get_rank()}") + ": compare groups of every rank")
    cuda = "nccl" in {str(dist.get_backend(g)).lower() for g in (candidate, baseline, None)}
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    x = torch.ones(int(size) // 4, dtype=torch.float32, device=device)

    def run(group) -> float:
        x.fill_(1.0)  # summed in place: keep the values finite however many runs
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
