"""Simulated annealing over rank permutations (dissertation §5.2.3, first stage).

Neighbour moves, as in the dissertation: swap two random ranks, reverse a
random segment (2-opt), and permute a random short sub-array.  For the ring
model with a symmetric cost matrix the segment reversal is costed in O(1)
(only the two boundary hops change); other models are re-evaluated in full
(O(N) or O(N log N) numpy work per move).

Temperature: calibrated from the mean cost increase of random moves at the
start, then cooled geometrically by wall-clock time to 1e-4 of that by the
time limit, so a longer limit means slower cooling, not an early stop.
With ``max_iter`` the temperature follows the iteration count instead of
the clock, so a run is bit-for-bit reproducible for a seed (as long as the
time limit is not reached first); with a time limit alone the number of
moves depends on machine speed.

Reference: S. Kirkpatrick, C. D. Gelatt, M. P. Vecchi, "Optimization by
Simulated Annealing", Science 220(4598), 1983.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class AnnealResult:
    perm: np.ndarray
    cost: float
    iterations: int
    accepted: int
    elapsed: float


def nearest_neighbour_ring(matrix: np.ndarray, start: int = 0) -> np.ndarray:
    """Greedy nearest-neighbour tour over ``matrix`` starting at ``start``. O(N^2)."""
    n = matrix.shape[0]
    visited = np.zeros(n, dtype=bool)
    tour = np.empty(n, dtype=int)
    cur = start
    for k in range(n):
        tour[k] = cur
        visited[cur] = True
        if k == n - 1:
            break
        row = np.where(visited, np.inf, matrix[cur])
        cur = int(np.argmin(row))
    return tour


def _calibrate(cost_fn, perm, cost, rng, propose, samples=64) -> float:
    ups = []
    for _ in range(samples):
        cand = propose(perm, rng)
        d = cost_fn(cand) - cost
        if d > 0:
            ups.append(d)
    if not ups:
        return max(abs(cost), 1.0) * 1e-3
    return float(np.mean(ups)) / math.log(2.0)  # ~50% acceptance of an average uphill move


def _propose(perm: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = len(perm)
    cand = perm.copy()
    kind = rng.integers(3)
    i, j = sorted(rng.choice(n, size=2, replace=False))
    if kind == 0:
        cand[i], cand[j] = cand[j], cand[i]
    elif kind == 1:
        cand[i : j + 1] = cand[i : j + 1][::-1]
    else:
        length = int(min(n - i, rng.integers(2, 6)))
        seg = cand[i : i + length].copy()
        rng.shuffle(seg)
        cand[i : i + length] = seg
    return cand


def anneal(
    cost_fn: Callable[[np.ndarray], float],
    n: int,
    *,
    init: np.ndarray | None = None,
    time_limit: float = 5.0,
    max_iter: int | None = None,
    seed: int = 0,
    ring_matrix: np.ndarray | None = None,
) -> AnnealResult:
    """Minimise ``cost_fn`` over permutations of ``range(n)``.

    ``ring_matrix``: when the model is a ring over this (symmetric) matrix,
    moves are costed incrementally.  Stops at ``time_limit`` seconds or
    ``max_iter`` moves, whichever comes first.
    """
    if time_limit <= 0:
        raise ValueError(f"time limit must be > 0 seconds, got {time_limit}")
    rng = np.random.default_rng(seed)
    perm = np.arange(n) if init is None else np.array(init, dtype=int)
    start = time.perf_counter()
    cost = float(cost_fn(perm))
    if n <= 3:
        return AnnealResult(perm, cost, 0, 0, time.perf_counter() - start)
    if ring_matrix is not None and np.allclose(ring_matrix, ring_matrix.T):
        return _anneal_ring(ring_matrix, perm, cost, rng, time_limit, max_iter, start)
    best, best_cost = perm.copy(), cost
    t0 = _calibrate(cost_fn, perm, cost, rng, _propose)
    t_end = t0 * 1e-4
    temp = t0
    it = acc = 0
    while True:
        if it % 64 == 0:
            frac = (time.perf_counter() - start) / time_limit
            if frac >= 1.0:
                break
            if max_iter is not None:  # cool by iterations: reproducible for a seed
                frac = it / max_iter
            temp = t0 * (t_end / t0) ** frac
        if max_iter is not None and it >= max_iter:
            break
        it += 1
        cand = _propose(perm, rng)
        c = float(cost_fn(cand))
        d = c - cost
        if d <= 0 or rng.random() < math.exp(-d / temp):
            perm, cost = cand, c
            acc += 1
            if cost < best_cost:
                best, best_cost = perm.copy(), cost
    return AnnealResult(best, best_cost, it, acc, time.perf_counter() - start)


def _anneal_ring(m, perm, cost, rng, time_limit, max_iter, start) -> AnnealResult:
    """2-opt annealing for a symmetric ring: O(1) delta per move."""
    n = len(perm)
    tour = [int(x) for x in perm]
    mat = m.tolist()
    best, best_cost = list(tour), cost
    # calibrate
    ups = []
    for _ in range(128):
        i, j = sorted(rng.choice(n, size=2, replace=False).tolist())
        if i == 0 and j == n - 1:
            continue
        a, b, c, d = tour[i - 1], tour[i], tour[j], tour[(j + 1) % n]
        delta = mat[a][c] + mat[b][d] - mat[a][b] - mat[c][d]
        if delta > 0:
            ups.append(delta)
    t0 = (float(np.mean(ups)) / math.log(2.0)) if ups else max(cost, 1.0) * 1e-3
    t_end = t0 * 1e-4
    temp = t0
    it = acc = 0
    batch = 4096 if max_iter is None else 256
    while True:
        frac = (time.perf_counter() - start) / time_limit
        if frac >= 1.0 or (max_iter is not None and it >= max_iter):
            break
        if max_iter is not None:  # cool by iterations: reproducible for a seed
            frac = it / max_iter
        temp = t0 * (t_end / t0) ** frac
        ii = rng.integers(0, n, size=batch).tolist()
        jj = rng.integers(0, n, size=batch).tolist()
        us = rng.random(batch).tolist()
        for k in range(batch):
            if max_iter is not None and it >= max_iter:
                break
            it += 1
            i, j = ii[k], jj[k]
            if i == j:
                continue
            if i > j:
                i, j = j, i
            if i == 0 and j == n - 1:
                continue
            a, b, c, d = tour[i - 1], tour[i], tour[j], tour[(j + 1) % n]
            delta = mat[a][c] + mat[b][d] - mat[a][b] - mat[c][d]
            if delta <= 0 or us[k] < math.exp(-delta / temp):
                tour[i : j + 1] = tour[i : j + 1][::-1]
                cost += delta
                acc += 1
                if cost < best_cost - 1e-12:
                    best_cost = cost
                    best = list(tour)
    best_arr = np.array(best, dtype=int)
    # recompute exactly (incremental sums drift in floating point)
    exact = float(m[best_arr, np.roll(best_arr, 1)].sum())
    return AnnealResult(best_arr, exact, it, acc, time.perf_counter() - start)
