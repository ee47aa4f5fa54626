"""SMT stage (dissertation §5.2.3, second stage): improve an order or prove it optimal with Z3.

Encoding.  The rank permutation is a one-hot boolean matrix ``x[r][h]``
("rank r is played by host h", exactly one per row and per column).  Every
cost term of the model gets a non-negative integer variable bounded from
below by implications ``x[r][h] and x[q][g] -> y >= C[h][g]``:

* ``ring``: one variable per hop, the objective is their sum;
* ``hd`` / ``bcube``: one variable per round, ``>=`` every exchange of the
  round (the round's maximum), the objective is their sum;
* ``dbt``: one variable per tree node, ``>= C[node, child] + y[child]``
  for both children (the subtree cost), the objective is the maximum of
  the two roots.

A satisfying assignment can set every variable to exactly the maximum it is
bounded by, so "objective <= K - 1" is satisfiable iff some order has an
integer cost <= K - 1.  The paper flattens ``c`` into an SMT array; the
one-hot form is an equivalent, sound encoding that Z3's SAT core handles
better.

Integer scaling and soundness.  Pair costs are scaled by ``s`` and rounded
*up*: ``C = ceil(s c)``.  Then for every order ``s cost <= icost < s cost +
m``, where ``m`` is the number of rounded terms on any path of the
objective (N for ring, the number of rounds for hd/bcube, the tree depth
for dbt).  With ``K = ceil(s best)``:

* sat  -> the model's order has ``s cost <= icost <= K - 1 < s best``: a
  strictly better order (checked again in floating point);
* unsat -> every order has ``cost > best - m/s``: ``best`` is optimal up to
  the tolerance ``m / s``, and ``best - m/s`` is a valid lower bound.

If ``s c`` is integral for every pair (integer costs, e.g. TSPLIB, or
costs on a coarse grid such as whole nanoseconds; "integral" allows float
noise ``dev <= 1e-6``) the costs are rounded to nearest instead and the
tolerance is ``2 m dev / s``, i.e. 0 for truly integral costs: unsat then
proves optimality exactly.  Otherwise ``s`` is chosen so that the largest
scaled pair cost is about ``10^7``.

Symmetry breaking: host 0 is fixed at rank 0 when the model's rank
structure is invariant under a transitive relabelling group (ring
rotations, hd with N a power of two, BCube).

Complexity: O(N^3) clauses for ring and dbt, O(N^3 log N) for hd / BCube;
solving is exponential in the worst case.  Practical up to N ~ 8-12; for
larger N the stage times out and says so.

Reference: L. de Moura, N. Bjørner, "Z3: An Efficient SMT Solver", TACAS
2008; Liang Luo, PhD dissertation, University of Washington, 2020, §5.2.3.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .costmodels import CostModel, dbt_levels

_TARGET_SCALE = 1e7


@dataclass
class SmtResult:
    perm: np.ndarray
    cost: float
    status: str  #: "proven" (unsat), "timeout" (unknown), "improved-then-timeout"
    improved: int  #: number of strictly better orders found
    lower_bound: float | None  #: valid when status == "proven"
    tolerance: float  #: optimal up to this (0: exact)
    scale: float
    elapsed: float

    @property
    def proven(self) -> bool:
        return self.status == "proven"


def _tables(model: CostModel) -> list[tuple[str, np.ndarray]]:
    """The float cost tables the encoding uses."""
    pc = model.pc
    if model.algo == "ring":
        return [("ring", model.ring_matrix)]
    if model.algo == "dbt":
        return [("dbt", pc.matrix(model.size / 2))]
    out = []
    for _a, _b, frac in model._rounds:
        c = pc.matrix(model.size * frac)
        out.append(("round", np.maximum(c, c.T)))
    return out


def choose_scale(tables: list[np.ndarray]) -> tuple[float, bool]:
    """``(s, exact)``: the smallest power of ten making every table integral, else ~1e7/max."""
    vmax = max(float(np.max(np.abs(t))) for t in tables) if tables else 1.0
    vmax = max(vmax, 1e-300)
    s = 1.0
    while s * vmax <= 1e9:
        if all(np.all(np.abs(t * s - np.round(t * s)) <= 1e-6) for t in tables):
            return s, True
        s *= 10.0
    return 10.0 ** math.floor(math.log10(_TARGET_SCALE / vmax)), False


def _int_table(t: np.ndarray, s: float, exact: bool) -> list[list[int]]:
    v = t * s
    iv = np.round(v) if exact else np.ceil(v)  # rounding up keeps "unsat" sound
    return iv.astype(np.int64).tolist()


def _transitive(model: CostModel) -> bool:
    n = model.n
    return model.algo in ("ring", "bcube") or (model.algo in ("hd", "rd") and n & (n - 1) == 0)


class _TooBig(Exception):
    """Building the encoding did not fit in half the time limit."""


def smt_improve(model: CostModel, perm, time_limit: float, seed: int = 0) -> SmtResult:
    """Improve ``perm`` or prove it optimal within ``time_limit`` seconds (see module docstring)."""
    import z3

    if not (time_limit > 0):
        raise ValueError(f"SMT time limit must be > 0 seconds, got {time_limit}")
    start = time.perf_counter()
    n = model.n
    best = np.asarray(perm, dtype=int)
    best_cost = float(model(best))
    named = _tables(model)
    s, exact = choose_scale([t for _, t in named])
    if model.algo == "ring":
        m_terms = n
    elif model.algo == "dbt":
        m_terms = len(dbt_levels(n)) if n > 1 else 0
    else:
        m_terms = len(model._rounds)
    if exact:
        # integral up to float noise `dev` per term: both the terms and s*best are off by <= m*dev
        dev = max(float(np.max(np.abs(t * s - np.round(t * s)))) for _, t in named)
        tol = 2.0 * m_terms * dev / s
    else:
        tol = m_terms / s
    if n <= 1:
        return SmtResult(best, best_cost, "proven", 0, best_cost, 0.0, s, time.perf_counter() - start)

    solver = z3.Solver()
    solver.set("random_seed", int(seed) % (2**31))
    x = [[z3.Bool(f"x_{r}_{h}") for h in range(n)] for r in range(n)]
    for r in range(n):
        solver.add(z3.PbEq([(x[r][h], 1) for h in range(n)], 1))
    for h in range(n):
        solver.add(z3.PbEq([(x[r][h], 1) for r in range(n)], 1))
    if _transitive(model):
        solver.add(x[0][0])

    build_deadline = start + 0.5 * time_limit

    def lower(y, q, r, table, extra=None):
        """y >= table[host(q)][host(r)] (+ extra) for every host pair."""
        if time.perf_counter() > build_deadline:
            raise _TooBig
        for h in range(n):
            row = table[h]
            for g in range(n):
                if g == h:
                    continue
                rhs = row[g] if extra is None else row[g] + extra
                solver.add(z3.Or(z3.Not(x[q][h]), z3.Not(x[r][g]), y >= rhs))

    try:
        if model.algo == "ring":
            tab = _int_table(named[0][1], s, exact)
            ys = [z3.Int(f"hop_{r}") for r in range(n)]
            for r in range(n):
                solver.add(ys[r] >= 0)
                lower(ys[r], r, (r - 1) % n, tab)  # hop cost c[perm[r], perm[r-1]]
            objective = [z3.Sum(ys)]
        elif model.algo in ("hd", "rd", "bcube"):
            ys = []
            for k, (a, b, _frac) in enumerate(model._rounds):
                tab = _int_table(named[k][1], s, exact)
                y = z3.Int(f"round_{k}")
                solver.add(y >= 0)
                for ra, rb in zip(a.tolist(), b.tolist()):
                    lower(y, ra, rb, tab)
                ys.append(y)
            objective = [z3.Sum(ys)]
        else:
            tab = _int_table(named[0][1], s, exact)
            roots = []
            for tree in (0, 1):
                ys = [z3.Int(f"t{tree}_{v}") for v in range(n)]
                for v in range(n):
                    solver.add(ys[v] >= 0)
                rank = (lambda v: v) if tree == 0 else (lambda v: (v - 1) % n)
                for par, ch in dbt_levels(n):
                    for p, c in zip(par.tolist(), ch.tolist()):
                        lower(ys[p], rank(p), rank(c), tab, extra=ys[c])
                roots.append(ys[(n - 1) // 2])
            objective = roots
    except _TooBig:  # the encoding alone would exceed half the time limit
        return SmtResult(best, best_cost, "timeout", 0, None, tol, s, time.perf_counter() - start)
    improved = 0
    status = "timeout"
    while True:
        remaining = time_limit - (time.perf_counter() - start)
        if remaining <= 0.01:
            break
        # exact: integral costs, K = s*best; otherwise K = ceil(s*best) >= s*best
        k_bound = int(round(best_cost * s)) if exact else math.ceil(best_cost * s)
        for obj in objective:
            solver.add(obj <= k_bound - 1)
        solver.set("timeout", max(1, int(remaining * 1000)))
        res = solver.check()
        if res == z3.sat:
            mdl = solver.model()
            cand = np.array(
                [next(h for h in range(n) if z3.is_true(mdl.eval(x[r][h], model_completion=True))) for r in range(n)]
            )
            c = float(model(cand))
            if c < best_cost:
                best, best_cost = cand, c
                improved += 1
            else:  # float re-evaluation disagrees only within rounding: stop, stay sound
                break
            continue
        if res == z3.unsat:
            status = "proven"
        break
    if status != "proven" and improved:
        status = "improved-then-timeout"
    # a relative 1e-12 covers the float rounding of s*best itself
    lb = (best_cost - tol - 1e-12 * abs(best_cost)) if status == "proven" else None
    return SmtResult(best, best_cost, status, improved, lb, tol, s, time.perf_counter() - start)
