"""Exact minimisation of the cost models for small N: certified optima.

``held_karp``: the Bellman-Held-Karp dynamic programme for the ring (a
directed Hamiltonian cycle, so asymmetric costs are fine).  Host 0 is fixed
at rank 0 (rotations of a ring cost the same); the table ``dp[S, j]`` = the
cheapest path from host 0 through the host set ``S`` ending at ``j`` is
filled layer by layer (|S| = 1, 2, ...), vectorised over all sets of a
layer with numpy.  O(2^N N^2) time, O(2^N N) memory; N = 16 takes 0.06 s
(``benchmarks/solvers.py --only exact``), N = 20 needs ~80 MB.

``exhaustive``: every permutation, evaluated in vectorised batches, with
symmetry breaking where the model has it: a model whose rank structure is
invariant under a transitive group of rank relabellings (ring rotations;
``hd`` for N a power of two under ``r -> r XOR m``; ``bcube`` under
digit-wise shifts) only needs the orders with host 0 at rank 0, i.e.
(N-1)! instead of N! evaluations.  O(N! log N) numpy work; N = 8
(5,040-40,320 orders) takes <= 0.1 s and N = 9 (362,880) ~0.7 s
(``benchmarks/solvers.py --only exact``).

References: R. Bellman, "Dynamic programming treatment of the travelling
salesman problem", J. ACM 9(1), 1962; M. Held, R. M. Karp, "A dynamic
programming approach to sequencing problems", J. SIAM 10(1), 1962.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .costmodels import CostModel

#: largest N solved exactly by default (Held-Karp for ring, exhaustive otherwise)
HELD_KARP_MAX_N = 16
#: Held-Karp's table needs ``2^(N-1) N`` floats: above this N it refuses (N = 22 is ~350 MB)
HELD_KARP_MEMORY_MAX_N = 22
EXHAUSTIVE_MAX_EVALS = 400_000


def held_karp(matrix: np.ndarray) -> tuple[np.ndarray, float]:
    """Optimal ring ``(perm, cost)`` over ``matrix`` (``cost = sum_r m[perm[r], perm[r-1]]``).

    O(2^N N^2) time and O(2^N N) memory; raises ``ValueError`` above
    :data:`HELD_KARP_MEMORY_MAX_N` (22).
    """
    m = np.asarray(matrix, dtype=float)
    n = m.shape[0]
    if n <= 1:
        return np.arange(n), 0.0
    if n > HELD_KARP_MEMORY_MAX_N:
        raise ValueError(f"Held-Karp needs 2^N memory: N = {n} is too large (max {HELD_KARP_MEMORY_MAX_N})")
    if n == 2:
        return np.arange(2), float(m[0, 1] + m[1, 0])
    k = n - 1  # hosts 1..n-1 are bits 0..k-1
    full = 1 << k
    # w[i, j] = cost of the hop host(i) -> host(j) in the forward path direction.
    # The model sums c[perm[r], perm[r-1]]: the hop from rank r-1 to rank r costs m[to, from].
    fwd = m.T  # fwd[a, b] = m[b, a] = cost of going a -> b
    dp = np.full((full, k), np.inf)
    parent = np.full((full, k), -1, dtype=np.int8)  # k <= 21
    bits = 1 << np.arange(k)
    dp[bits, np.arange(k)] = fwd[0, 1:]
    masks = np.arange(full)
    popcount = _popcount(masks)
    inner = fwd[1:, 1:]
    for size in range(2, k + 1):
        layer = masks[popcount == size]
        for j in range(k):
            sel = layer[(layer >> j) & 1 == 1]
            prev = sel ^ (1 << j)
            cand = dp[prev] + inner[:, j][None, :]  # (len, k): via last host i
            best = np.argmin(cand, axis=1)
            dp[sel, j] = cand[np.arange(len(sel)), best]
            parent[sel, j] = best
    last = dp[full - 1] + fwd[1:, 0]
    j = int(np.argmin(last))
    cost = float(last[j])
    # walk back
    path = []
    mask = full - 1
    for _ in range(k):  # one step per host 1..n-1 (bounded: a wrong mask cannot loop forever)
        path.append(j + 1)
        pj = int(parent[mask, j])
        mask ^= 1 << j
        j = pj
    path.append(0)
    perm = np.array(path[::-1], dtype=int)
    return perm, cost


def _popcount(x: np.ndarray) -> np.ndarray:
    c = np.zeros(x.shape, dtype=np.int8)
    y = x.copy()
    while np.any(y):
        c += (y & 1).astype(np.int8)
        y >>= 1
    return c


def _has_transitive_symmetry(model: CostModel) -> bool:
    n = model.n
    if model.algo == "ring":
        return True
    if model.algo in ("hd", "rd"):
        return n >= 1 and (n & (n - 1)) == 0
    if model.algo == "bcube":
        return True
    return False


def batch_costs(model: CostModel, perms: np.ndarray) -> np.ndarray:
    """Costs of many orders at once (:meth:`CostModel.batch`): ``perms`` is ``(M, N)``; returns ``(M,)``."""
    return model.batch(perms)


def exhaustive(model: CostModel, max_evals: int = EXHAUSTIVE_MAX_EVALS, batch: int = 40320) -> tuple[np.ndarray, float, int]:
    """Optimal ``(perm, cost, evaluated)`` by enumerating every order (with symmetry breaking).

    Raises ``ValueError`` when more than ``max_evals`` orders would be needed.
    """
    n = model.n
    if n <= 1:
        return np.arange(n), float(model(np.arange(n))), 1
    fix0 = _has_transitive_symmetry(model)
    count = math.factorial(n - 1) if fix0 else math.factorial(n)
    if count > max_evals:
        raise ValueError(f"exhaustive search over {count} orders exceeds the limit of {max_evals}")
    best_cost, best_perm = math.inf, None
    if fix0:
        gen = ((0,) + p for p in itertools.permutations(range(1, n)))
    else:
        gen = itertools.permutations(range(n))
    evaluated = 0
    while True:
        chunk = list(itertools.islice(gen, batch))
        if not chunk:
            break
        arr = np.array(chunk, dtype=np.int64)
        costs = batch_costs(model, arr)
        evaluated += len(arr)
        i = int(np.argmin(costs))
        if costs[i] < best_cost:
            best_cost, best_perm = float(costs[i]), arr[i].copy()
    # report the model's own evaluation of the winner (same formula, no batching rounding)
    return best_perm, float(model(best_perm)), evaluated


def exact_feasible(model: CostModel, max_evals: int = EXHAUSTIVE_MAX_EVALS, hk_max_n: int = HELD_KARP_MAX_N) -> bool:
    """Whether :func:`solve_exact` handles ``model`` within the default limits."""
    n = model.n
    if model.algo == "ring":
        return n <= hk_max_n
    count = math.factorial(n - 1) if _has_transitive_symmetry(model) else math.factorial(n)
    return count <= max_evals


def solve_exact(model: CostModel, max_evals: int = EXHAUSTIVE_MAX_EVALS) -> tuple[np.ndarray, float, str]:
    """Certified optimum ``(perm, cost, method)`` for small ``model.n``."""
    if model.algo == "ring":
        perm, _ = held_karp(model.ring_matrix)
        return perm, float(model(perm)), "held-karp"
    perm, cost, _ = exhaustive(model, max_evals)
    return perm, cost, "exhaustive"


