"""The whole minimisation pipeline for one cost model: ``minimise``.

1. Trivial sizes: N <= 2 (every order costs the same for every model) and
   ring N = 3 (every ring visits the same three hops) are optimal as given.
2. Small N: exact search (``solvers.exact``: Held-Karp for ring up to N =
   16, vectorised exhaustive search with symmetry breaking otherwise, up to
   ~400k orders), a certified optimum.
3. Otherwise: warm starts (input order, nearest neighbour, greedy edge,
   optional grouping), then the stochastic search from the cheapest start,
   in ``jobs`` processes with seeds ``seed, seed+1, ...`` sharing one
   deadline; the cheapest result wins (ties: lowest seed).  Ring with a
   symmetric matrix uses iterated 2-opt + Or-opt local search
   (``solvers.ringsearch``, compiled when numba is installed; it stops
   early after ``max(5000, 50 N)`` perturbations in a row without a better
   tour, ``max(50000, 500 N)`` compiled; the kernel's compile or cache
   load before the search is not charged to ``time_limit``), everything else
   simulated annealing (``solvers.anneal``).
4. Optional SMT stage (``smt_time`` > 0, ``solvers.smt``): a strictly better
   order, or a proof of optimality (up to the documented integer scaling).
5. A lower bound (``solvers.bounds``) when optimality was not proven.

The result is never costlier than the input order.  Deterministic for a
seed when ``max_iter`` is given (the iteration count then bounds each job).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .anneal import anneal, warm_starts
from .bounds import lower_bound
from .costmodels import CostModel
from .exact import exact_feasible, solve_exact
from .ringsearch import iterated_local_search, kernel, warm_kernel

#: an order whose cost is within this fraction of the lower bound is optimal: the bound is shaved by
#: a relative 1e-9 for the floats' rounding (``bounds.lower_bound``), so a bound that meets the cost
#: reads a few 1e-9 under it (TSPLIB's berlin52: 7542 against 7541.99999, which the report called
#: "not proven, at most 0.0% above optimal"); no order is cheaper by more than this fraction
BOUND_MEETS = 1e-8


@dataclass
class SolveResult:
    perm: np.ndarray
    cost: float
    proven_optimal: bool
    lower_bound: float | None
    method: str
    info: dict[str, Any] = field(default_factory=dict)


_JOB: dict[str, Any] = {}


def _search_job(job: int) -> tuple[float, list[int], dict]:
    """One search run; reads its inputs from ``_JOB`` (inherited through fork)."""
    model: CostModel = _JOB["model"]
    seed = _JOB["seed"] + job
    init = _JOB["init"]
    deadline = _JOB["deadline"]
    max_iter = _JOB["max_iter"]
    remaining = max(1e-3, deadline - time.perf_counter())
    if _JOB["ring_ils"]:
        r = iterated_local_search(
            model.ring_matrix, init, time_limit=remaining, max_kicks=max_iter, seed=seed,
            neighbours=_JOB.get("neighbours"), deadline=deadline,
            stall=stall_kicks(model.n, kernel() is not None),
        )
        return float(model(r.tour)), r.tour.tolist(), {"kicks": r.kicks, "improvements": r.improvements}
    r = anneal(model, init=init, time_limit=remaining, max_iter=max_iter, seed=seed, deadline=deadline)
    return float(r.cost), r.perm.tolist(), {"iterations": r.iterations, "accepted": r.accepted}


def stall_kicks(n: int, compiled: bool = False) -> int:
    """Ring search stops early after this many perturbations without a better tour.

    The compiled kernel runs ~15-20x more kicks per second than the
    pure-Python search, so it gets 10x more before it gives up.
    """
    return max(50000, 500 * n) if compiled else max(5000, 50 * n)


def resolve_jobs(jobs: int) -> int:
    """``jobs`` <= 0 means all cores; more than the cores is capped at them (each job is a process
    searching until the time limit: more would only share the cores, and ``jobs=100000`` would
    fork that many)."""
    cores = max(1, os.cpu_count() or 1)
    if jobs is None or jobs <= 0:
        return cores
    return min(int(jobs), cores)


def interrupted_result(starts, costs, start: float, extra: dict) -> SolveResult:
    """The best of the starting orders ``[(name, perm)]`` (priced ``costs``), as the result of a
    search that Ctrl-C stopped (``start``: its ``time.perf_counter()`` at the beginning)."""
    k = int(np.argmin(costs))
    info = {"start": starts[k][0], "start_cost": float(costs[k]), **extra, "interrupted": True,
            "seconds": round(time.perf_counter() - start, 3)}
    return SolveResult(np.array(starts[k][1], dtype=int), float(costs[k]), False, None, "warm start", info)


def minimise(
    model: CostModel,
    *,
    init=None,
    labels=None,
    time_limit: float = 5.0,
    seed: int = 0,
    jobs: int = 1,
    smt_time: float = 0.0,
    max_iter: int | None = None,
    exact: bool = True,
    keep_on_interrupt: bool = False,
) -> SolveResult:
    """Minimise ``model`` over rank orders (see module docstring).

    ``keep_on_interrupt``: a ``KeyboardInterrupt`` (Ctrl-C) during the search (stochastic or
    exact) returns the best of the warm starts (rack-contiguous and the other heuristics; the
    search's own progress is lost), with ``info["interrupted"]`` set and ``method``
    ``"warm start"``; otherwise it propagates."""
    if not (time_limit > 0):
        raise ValueError(f"time limit must be > 0 seconds, got {time_limit}")
    if smt_time < 0:
        raise ValueError(f"SMT time must be >= 0 seconds, got {smt_time}")
    start = time.perf_counter()
    n = model.n
    init = np.arange(n) if init is None else np.asarray(init, dtype=int)
    if sorted(init.tolist()) != list(range(n)):
        raise ValueError("the initial order is not a permutation of the hosts")
    cost_init = float(model(init))
    if n <= 2 or (n == 3 and model.algo == "ring"):
        note = "every order costs the same for N <= 2" if n <= 2 else "every ring over 3 hosts visits the same hops"
        return SolveResult(init, cost_init, True, cost_init, "trivial", {"note": note})
    if exact and exact_feasible(model):
        try:
            perm, cost, how = solve_exact(model)
        except KeyboardInterrupt:
            if not keep_on_interrupt:
                raise
            starts = warm_starts(model, labels=labels, init=init)
            costs = [float(model(p)) for _, p in starts]
            return interrupted_result(starts, costs, start, {"search": "exact"})
        if cost > cost_init * (1 + 1e-9) + 1e-12:
            raise RuntimeError(f"exact search ({how}) returned a costlier order than the input "
                               f"({cost!r} > {cost_init!r}): a bug, please report it")
        if cost >= cost_init:  # a float tie: keep the user's order
            perm, cost = init, cost_init
        return SolveResult(perm, cost, True, cost, how, {"seconds": round(time.perf_counter() - start, 3)})

    # --- stochastic search ---------------------------------------------------
    starts = warm_starts(model, labels=labels, init=init)
    costs = [float(model(p)) for _, p in starts]
    k = int(np.argmin(costs))
    start_name, start_perm = starts[k]
    ring_ils = model.algo == "ring" and np.allclose(model.ring_matrix, model.ring_matrix.T)
    lb_budget = min(2.0, 0.1 * time_limit)
    # compile / load the ring kernel once, before forking; not charged to the time limit
    compile_s = warm_kernel() if ring_ils else 0.0
    deadline = start + compile_s + time_limit - lb_budget
    jobs = resolve_jobs(jobs)
    _JOB.clear()
    _JOB.update(model=model, seed=seed, init=start_perm, deadline=deadline, max_iter=max_iter, ring_ils=ring_ils)
    if ring_ils:
        from .ringsearch import neighbour_lists

        # compiled: 12 partners (better tours on pr1002 / rat783 for the same time)
        _JOB["neighbours"] = neighbour_lists(model.ring_matrix, 12 if kernel() is not None else 8)
    if jobs > 1 and "fork" not in mp.get_all_start_methods():
        jobs = 1  # the jobs read their inputs from this process's memory (fork only)
    try:
        if jobs == 1:
            results = [_search_job(0)]
        else:
            ctx = mp.get_context("fork")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as ex:
                results = list(ex.map(_search_job, range(jobs)))
    except KeyboardInterrupt:
        if not keep_on_interrupt:
            raise
        return interrupted_result(starts, costs, start, {"jobs": jobs})
    finally:
        _JOB.clear()
    best_job = min(range(len(results)), key=lambda j: (results[j][0], j))
    cost, perm, stats = results[best_job]
    perm = np.array(perm, dtype=int)
    if cost > costs[k]:
        perm, cost = start_perm, costs[k]
    info: dict[str, Any] = {
        "start": start_name,
        "start_cost": costs[k],
        "jobs": jobs,
        "best_job": best_job,
        **({"compile_seconds": round(compile_s, 3)} if compile_s > 0.05 else {}),
        **stats,
    }
    method = "ils" if ring_ils else "anneal"
    proven = False
    lb = None
    # --- SMT stage -------------------------------------------------------------
    if smt_time > 0:
        from .smt import smt_improve

        r = smt_improve(model, perm, smt_time, seed=seed)
        info["smt"] = {
            "status": r.status, "improved": r.improved, "tolerance": r.tolerance,
            "scale": r.scale, "seconds": round(r.elapsed, 3),
        }
        if r.cost < cost:
            perm, cost = r.perm, r.cost
        if r.proven:
            proven = True
            lb = r.lower_bound
            method += "+smt"
    if lb is None:
        lb = lower_bound(model, upper=cost, time_budget=max(0.05, lb_budget))
        # (relative only: a floor of 1e-300 exceeded every cost of a subnormal matrix, so any bound "met" it)
        if lb is not None and cost - lb <= BOUND_MEETS * abs(cost):
            proven = True  # the bound meets the order's cost (within float rounding): optimal
            info["proven_by"] = "lower bound"
    info["seconds"] = round(time.perf_counter() - start, 3)
    return SolveResult(perm, cost, proven, lb, method, info)
