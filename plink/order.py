"""Find a rank order that minimises a collective's cost model: ``order_hosts``.

The pipeline is: probe data -> pair costs (missing pairs priced as the worst
measured pair, never as a guessed measurement) -> warm start -> solver ->
report of what the order buys against the input order and against the
median of random orders (what a cloud hands out).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from plink.solvers.costmodels import ALGORITHMS, CostModel, PairCost, check_algorithm
from plink.solvers.solve import minimise

from plink.errors import PlinkError
from plink.data.probefile import ProbeData

DEFAULT_SIZE = 25 * 1024**2  #: bytes; PyTorch DDP's default gradient bucket (25 MiB)
DEFAULT_TIME_LIMIT = 5.0  #: seconds of search


@dataclass
class OrderResult:
    """A rank order and what it buys, as predicted by the cost model (µs)."""

    algo: str
    size: int
    base: int
    hosts: list[str]  #: host names, rank 0 first
    order: list[int]  #: indices into the probe file's hosts, rank 0 first
    cost_input: float
    cost_random_median: float
    cost_plink: float
    n_random: int
    model: str  #: "latency" or "latency+bandwidth"
    missing_pairs: int
    proven_optimal: bool | None = None
    lower_bound: float | None = None
    solver: dict[str, Any] = field(default_factory=dict)
    elapsed: float = 0.0

    @property
    def speedup_vs_input(self) -> float:
        return _ratio(self.cost_input, self.cost_plink)

    @property
    def speedup_vs_random(self) -> float:
        return _ratio(self.cost_random_median, self.cost_plink)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["speedup_vs_input"] = self.speedup_vs_input
        d["speedup_vs_random"] = self.speedup_vs_random
        return d


def _ratio(a: float, b: float) -> float:
    if b <= 0:
        return 1.0 if a <= 0 else float("inf")
    return a / b


def pair_cost(probe: ProbeData, use_bandwidth: bool = True) -> tuple[PairCost, int]:
    """Build the pair-cost model from probe data.

    A pair that was not measured is priced as the worst measured pair (the
    largest latency, the smallest bandwidth), so a solver avoids relying on
    links nobody measured.  Returns the model and the number of such pairs.
    """
    lat = probe.latency.copy()
    missing = probe.missing_mask()
    n_missing = int(np.triu(missing, 1).sum())
    off = ~np.eye(probe.n, dtype=bool)
    measured = lat[off & ~missing]
    if probe.n > 1 and measured.size == 0:
        raise PlinkError("no pair of hosts was measured: nothing to order by")
    if n_missing:
        lat[missing] = measured.max()
    bw = None
    if use_bandwidth and probe.bandwidth is not None:
        bw = probe.bandwidth.copy()
        bw_missing = np.isnan(bw) & off
        known = bw[off & ~bw_missing]
        if known.size == 0:
            bw = None
        elif bw_missing.any():
            bw[bw_missing] = known.min()
    return PairCost.from_matrices(lat, bw), n_missing


def group_labels(probe: ProbeData, path: str) -> np.ndarray:
    """Group label per host of ``probe`` from a groups file (matched by host name)."""
    from plink.data.groupfile import load_groups

    groups = load_groups(path)
    index = {h: i for i, h in enumerate(groups.hosts)}
    missing = [h for h in probe.names if h not in index]
    if missing:
        raise PlinkError(f"groups file {path} lacks {len(missing)} host(s) of the probe file, e.g. {missing[0]!r}")
    return np.array([int(groups.labels[index[h]]) for h in probe.names], dtype=int)


def random_median(model: CostModel, n_random: int, seed: int) -> float:
    """Median cost of ``n_random`` uniformly random orders (seeded)."""
    rng = np.random.default_rng(seed)
    costs = [model(rng.permutation(model.n)) for _ in range(n_random)]
    return float(np.median(costs))


def order_hosts(
    probe: ProbeData,
    algo: str = "ring",
    *,
    size: int = DEFAULT_SIZE,
    time_limit: float = DEFAULT_TIME_LIMIT,
    seed: int = 0,
    base: int = 2,
    n_random: int = 500,
    use_bandwidth: bool = True,
    max_iter: int | None = None,
    jobs: int = 1,
    smt_time: float = 0.0,
    labels=None,
) -> OrderResult:
    """Search for a rank order of ``probe``'s hosts minimising ``algo``'s cost.

    ``algo`` is one of ``ring``, ``hd`` (halving-doubling), ``dbt`` (double
    binary tree) or ``bcube`` (with ``base``); ``size`` is the all-reduce
    size in bytes (it matters only when bandwidth was probed).  Small
    clusters are solved exactly (certified optimum: Held-Karp for ring up to
    16 hosts, exhaustive search otherwise); larger ones are searched for
    ``time_limit`` seconds (or ``max_iter`` moves per job) in ``jobs``
    processes (0: all cores) from the cheapest of the input order, a
    nearest-neighbour ring, a greedy-edge ring and, given ``labels`` (one
    group label per host, e.g. from ``plink group``), the grouping.  With
    ``smt_time`` > 0 Z3 then tries for that many seconds to find a better
    order or prove the order optimal.  Never returns an order costlier than
    the input order.  See ``solvers.solve.minimise``.
    """
    start = time.perf_counter()
    if algo not in ALGORITHMS:
        raise PlinkError(f"unknown algorithm {algo!r} (choose from {', '.join(ALGORITHMS)})")
    if not (time_limit > 0):
        raise PlinkError(f"time limit must be > 0 seconds, got {time_limit}")
    if not (smt_time >= 0):
        raise PlinkError(f"--smt-time must be >= 0 seconds, got {smt_time}")
    if size < 0:
        raise PlinkError(f"size must be >= 0 bytes, got {size}")
    if n_random < 1:
        raise PlinkError("n_random must be >= 1")
    if jobs < 0:
        raise PlinkError(f"--jobs must be >= 0 (0: all cores), got {jobs}")
    if max_iter is not None and max_iter < 0:
        raise PlinkError(f"max_iter must be >= 0, got {max_iter}")
    n = probe.n
    if n < 1:
        raise PlinkError("the probe file has no hosts")
    if labels is not None and len(labels) != n:
        raise PlinkError(f"got {len(labels)} group labels for {n} hosts")
    try:
        check_algorithm(algo, n, base)
    except ValueError as exc:
        raise PlinkError(str(exc)) from None
    pc, n_missing = pair_cost(probe, use_bandwidth)
    model = CostModel(algo, pc, size, base)
    identity = np.arange(n)
    cost_input = model(identity)
    cost_random = random_median(model, n_random, seed)
    kind = "latency+bandwidth" if np.any(pc.inv_bw) else "latency"
    res = minimise(
        model, init=identity, labels=labels, time_limit=time_limit, seed=seed, jobs=jobs,
        smt_time=smt_time, max_iter=max_iter,
    )
    best, best_cost = res.perm, res.cost
    if best_cost > cost_input:  # never hand back something worse than what the user has
        best, best_cost = identity, cost_input
    return OrderResult(
        algo=algo,
        size=size,
        base=base,
        hosts=[probe.hosts[i].name for i in best],
        order=[int(i) for i in best],
        cost_input=cost_input,
        cost_random_median=cost_random,
        cost_plink=best_cost,
        n_random=n_random,
        model=kind,
        missing_pairs=n_missing,
        proven_optimal=bool(res.proven_optimal),
        lower_bound=res.lower_bound,
        solver={"name": res.method, **res.info},
        elapsed=time.perf_counter() - start,
    )
