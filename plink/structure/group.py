"""Balanced locality groups for two-level hierarchical aggregation (dissertation §4.2.1).

* :class:`BalancedGrouper`: constrained k-means (k-means++ initialisation,
  minimum and maximum group sizes from the *balance elasticity*), several
  clusterings, the one with the least diversity in group sizes kept, then the
  lowest inertia.
* :class:`BalancedRandom`: the paper's baseline: ``k`` groups of (almost)
  equal size, uniformly at random.
* :func:`group_hosts`: probe data -> ProbeEmbed -> BalancedGrouper ->
  :class:`~plink.data.groupfile.Groups` with metrics; what ``plink group`` runs.

Number of groups: ``k = round(sqrt(N))`` by default: a group master sends and
receives ``O(N/k + k)`` bytes-on-wire (eq. 4.2), minimised at ``k = sqrt(N)``.

References
----------
[Arthur & Vassilvitskii 2007] D. Arthur, S. Vassilvitskii. "k-means++: The Advantages of Careful
Seeding". ACM-SIAM Symposium on Discrete Algorithms (SODA) 2007.

[Bradley, Bennett & Demiriz 2000] P. S. Bradley, K. P. Bennett, A. Demiriz. "Constrained K-Means
Clustering". Microsoft Research technical report MSR-TR-2000-65, 2000.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Mapping, Set
from typing import Any

import numpy as np

from plink.structure.embed import MIN_HOSTS, _check_random_state, _is_complex, _is_number
from plink.errors import InputError, OptionError, PlinkError
from plink.structure.params import Params

ELASTICITY_RANGE = (1.0, 2.0)


def default_groups(n: int) -> int:
    """``round(sqrt(n))``, at least 1: the minimiser of ``n/k + k`` (eq. 4.2)."""
    return max(1, int(round(math.sqrt(n))))


def size_bounds(n: int, k: int, elasticity: float = 1.0) -> tuple[int, int]:
    """Smallest and largest group size allowed for ``n`` hosts in ``k`` groups.

    ``min_size = max(1, floor(n / (e * k)))`` and ``max_size = ceil(e * n / k)``
    for balance elasticity ``e`` in ``[1, 2]``:

    * ``e = 1``: ``floor(n/k) <= size <= ceil(n/k)``, perfectly balanced;
    * ``e = 2``: ``size >= floor(n / 2k)``, which for ``k = sqrt(n)`` is
      ``floor(sqrt(n) / 2)`` (the paper's "each group has at least sqrt(N)/2
      nodes"), and ``size <= ceil(2n / k)``;
    * in between both bounds move linearly in ``1/e`` and ``e`` respectively.

    Always feasible: ``k * min_size <= n <= k * max_size``.
    """
    _check_k_e(n, k, elasticity)
    lo = max(1, math.floor(n / (elasticity * k) + 1e-9))
    hi = min(n, math.ceil(elasticity * n / k - 1e-9))
    return lo, hi


def _check_k_e(n: int, k: int, elasticity: float) -> None:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise OptionError(f"number of groups must be a positive integer, got {k!r}")
    if k > n:
        raise OptionError(f"{k} groups for {n} hosts: the number of groups must be at most the number of hosts")
    if not _is_number(elasticity) or not (
        ELASTICITY_RANGE[0] <= float(elasticity) <= ELASTICITY_RANGE[1]
    ):
        raise OptionError(f"balance elasticity must be between 1.0 and 2.0, got {elasticity!r}")


def _validate_points(X) -> np.ndarray:
    if _is_complex(X):  # (as HierarchicalGrouper refuses a complex matrix)
        raise InputError("coordinates must be real numbers, got complex ones")
    try:
        x = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"expected an (N, D) array of coordinates, got {type(X).__name__}") from None
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] == 0:
        raise InputError(f"expected an (N, D) array of coordinates, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise InputError("coordinates must be finite")
    return x


def constrained_assignment(cost: np.ndarray, min_size: int, max_size: int, *, full_below: int = 20000) -> np.ndarray:
    """Exact minimum-cost assignment of N items to k groups with ``min_size <= size <= max_size``.

    Solves the transportation LP
    ``min sum c_ig x_ig  s.t.  sum_g x_ig = 1,  min <= sum_i x_ig <= max,  x >= 0``
    with scipy's HiGHS dual simplex.  Its constraint matrix is the incidence
    matrix of the bipartite graph items x groups, which is totally unimodular,
    so with integral right-hand sides every vertex of the polytope is integral
    and the simplex (which ends on a vertex) returns a 0/1 assignment: the LP
    *is* the integer problem, no branch and bound needed.  HiGHS is the LP
    solver scipy ships and maintains, so this adds no dependency.

    Large problems (``N*k > full_below``) use column generation, still exact:
    solve with each item's 8 cheapest groups (and each group's cheapest items),
    price every left-out variable with the LP duals, add those with negative
    reduced cost, repeat until none (LP optimality certificate); a restricted
    problem that is infeasible falls back to the full LP.

    Complexity: one or a few LPs with O(N * min(k, 8)) variables; the full LP
    has N*k.  Returns the group index of each item.
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    cost = np.asarray(cost, dtype=float)
    n, k = cost.shape
    if not (k * min_size <= n <= k * max_size):
        raise OptionError(f"no assignment of {n} hosts to {k} groups of {min_size}..{max_size} hosts exists")
    # shift per row (does not change the argmin) for numerical range
    cost = cost - cost.min(axis=1, keepdims=True)

    def solve(rows: np.ndarray, cols: np.ndarray):
        m = rows.size
        c = cost[rows, cols]
        var = np.arange(m)
        a_eq = sp.csr_matrix((np.ones(m), (rows, var)), shape=(n, m))
        a_g = sp.csr_matrix((np.ones(m), (cols, var)), shape=(k, m))
        a_ub = sp.vstack([a_g, -a_g]).tocsr()
        b_ub = np.r_[np.full(k, float(max_size)), np.full(k, -float(min_size))]
        return linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.ones(n), bounds=(0, None), method="highs-ds")

    if n * k <= full_below:
        rows, cols = np.divmod(np.arange(n * k), k)
        res = solve(rows, cols)
    else:
        r = min(k, 8)
        cand = np.zeros((n, k), dtype=bool)
        near = np.argpartition(cost, r - 1, axis=1)[:, :r]
        cand[np.arange(n)[:, None], near] = True
        per_group = min(n, 2 * max_size)
        near_items = np.argpartition(cost, per_group - 1, axis=0)[:per_group, :]
        cand[near_items, np.arange(k)[None, :]] = True
        while True:
            rows, cols = np.nonzero(cand)
            res = solve(rows, cols)
            if res.status != 0:
                rows, cols = np.divmod(np.arange(n * k), k)
                res = solve(rows, cols)
                break
            u = res.eqlin.marginals
            y = res.ineqlin.marginals
            price = y[:k] - y[k:]
            reduced = cost - u[:, None] - price[None, :]
            add = (~cand) & (reduced < -1e-9)
            if not add.any():
                break
            cand |= add
    if res.status != 0:  # pragma: no cover - feasible by construction
        raise PlinkError(f"balanced assignment failed: {res.message}")
    x = res.x
    labels = np.full(n, -1)
    chosen = x > 0.5
    labels[rows[chosen]] = cols[chosen]
    if (labels < 0).any() or np.abs(x - np.round(x)).max() > 1e-6:  # pragma: no cover - TU guarantees this
        raise PlinkError("balanced assignment: the LP returned a fractional solution")
    return labels


class BalancedGrouper(Params):
    """Constrained k-means with k-means++ initialisation and balance elasticity.

    Parameters
    ----------
    n_groups : int or None
        ``k``; default ``round(sqrt(N))`` (eq. 4.2).
    elasticity : float in [1.0, 2.0], default 1.0
        Balance elasticity; see :func:`size_bounds` for the exact size limits.
    n_init : int or "auto", default "auto"
        Clusterings generated (each from its own k-means++ seed); "auto" is 8 up to
        1024 points and 3 above (each Lloyd step solves an LP).
    max_iter : int, default 50
        Lloyd iterations per clustering.
    tol : float, default 1e-4
        Stop a clustering when its inertia falls by less than this fraction in an iteration
        (or the assignment stops changing).
    random_state : int, numpy Generator or None

    Each clustering starts from k-means++ seeds [Arthur & Vassilvitskii 2007],
    polished by at most 10 unconstrained Lloyd steps (scikit-learn, cheap), then
    alternates the exact constrained assignment (:func:`constrained_assignment`)
    with moving centres to their group means [Bradley, Bennett & Demiriz 2000]
    until the assignment stops changing or the inertia falls by less than ``tol``.
    Among the ``n_init`` clusterings the one with the smallest standard
    deviation of group sizes wins, then the lowest inertia, then the earliest
    seed: deterministic for an int ``random_state``.

    Attributes: ``labels_``, ``cluster_centers_``, ``inertia_`` (sum of squared
    distances to the centre), ``sizes_``, ``min_size_``, ``max_size_``,
    ``n_iter_`` (of the chosen clustering), ``n_groups_``.
    """

    def __init__(self, n_groups: int | None = None, *, elasticity: float = 1.0, n_init: int | str = "auto",
                 max_iter: int = 50, tol: float = 1e-4, random_state=None) -> None:
        self.n_groups = n_groups
        self.tol = tol
        self.elasticity = elasticity
        self.n_init = n_init
        self.max_iter = max_iter
        self.random_state = random_state

    def get_params(self, deep: bool = True) -> dict:
        """The parameters of ``__init__`` by name, as set (``deep`` is scikit-learn's; there are no
        sub-estimators)."""
        return {k: getattr(self, k) for k in ("n_groups", "elasticity", "n_init", "max_iter", "tol", "random_state")}

    def fit(self, X, y=None) -> "BalancedGrouper":
        """Group the rows of ``X`` (N points, e.g. ``ProbeEmbed().fit_transform(probe)``)."""
        from sklearn.cluster import KMeans, kmeans_plusplus

        x = _validate_points(X)
        n = x.shape[0]
        k = default_groups(n) if self.n_groups is None else self.n_groups
        lo, hi = size_bounds(n, k, self.elasticity)
        n_init = (8 if n <= 1024 else 3) if self.n_init == "auto" else self.n_init
        for name, v in (("n_init", n_init), ("max_iter", self.max_iter)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise OptionError(f"{name} must be a positive integer, got {v!r}")
        if not _is_number(self.tol) or not 0 <= self.tol < 1:
            raise OptionError(f"tol must be a number in [0, 1), got {self.tol!r}")
        rng = _check_random_state(self.random_state)
        seeds = rng.integers(0, 2**31 - 1, size=n_init)
        best = None
        for run, seed in enumerate(seeds):
            # k-means++ seeds, polished by a few unconstrained Lloyd steps (cheap, in C), then
            # constrained Lloyd: exact balanced assignment <-> centres to group means
            centers, _ = kmeans_plusplus(x, k, random_state=int(seed))
            centers = KMeans(k, init=centers, n_init=1, max_iter=10, random_state=int(seed)).fit(x).cluster_centers_
            labels = None
            prev = math.inf
            it = 0
            for it in range(1, self.max_iter + 1):
                cost = ((x[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
                new = constrained_assignment(cost, lo, hi)
                inertia = float(cost[np.arange(n), new].sum())
                centers = np.stack([x[new == g].mean(axis=0) for g in range(k)])
                same = labels is not None and np.array_equal(new, labels)
                labels = new
                if same or inertia >= prev * (1 - self.tol):
                    break
                prev = inertia
            inertia = float(((x - centers[labels]) ** 2).sum())
            sizes = np.bincount(labels, minlength=k)
            key = (round(float(sizes.std()), 9), inertia, run)
            if best is None or key < best[0]:
                best = (key, labels, centers, it, sizes)
        _, labels, centers, it, sizes = best
        self.labels_, order = _canonical(labels, with_order=True)
        self.cluster_centers_ = centers[order]
        self.inertia_ = float(((x - self.cluster_centers_[self.labels_]) ** 2).sum())
        self.sizes_ = np.bincount(self.labels_, minlength=k)
        self.min_size_, self.max_size_ = lo, hi
        self.n_iter_ = it
        self.n_groups_ = k
        self.n_features_in_ = x.shape[1]
        return self

    def fit_predict(self, X, y=None) -> np.ndarray:
        """Fit to ``X`` (as :meth:`fit`) and return ``labels_``: the group of each row, ``0 .. k-1``
        numbered in order of each group's first row."""
        return self.fit(X).labels_


def _canonical(labels: np.ndarray, with_order: bool = False):
    """Relabel so groups are numbered in order of their first host (0, 1, ...).

    With ``with_order`` also return ``order``: new group ``g`` was old group ``order[g]``.
    """
    labels = np.asarray(labels)
    _, first = np.unique(labels, return_index=True)
    order = labels[np.sort(first)]
    remap = np.empty(labels.max() + 1, dtype=int)
    remap[order] = np.arange(order.size)
    return (remap[labels], order) if with_order else remap[labels]


def _n_hosts(X) -> int:
    """N for :class:`BalancedRandom`: a ProbeData's hosts, the rows of a matrix or of coordinates, or
    ``X`` itself if it is an int; :class:`InputError` for anything else."""
    from plink.data.probefile import ProbeData

    if isinstance(X, ProbeData):
        return X.n
    if isinstance(X, numbers.Integral) and not isinstance(X, bool):
        return int(X)
    if isinstance(X, (str, bytes, Mapping, Set)) or not hasattr(X, "__len__") or getattr(X, "ndim", 1) == 0:
        raise InputError(f"expected a ProbeData, an (N, N) matrix, (N, D) coordinates or a number of hosts, "
                         f"got {type(X).__name__}")
    return len(X)


class BalancedRandom(Params):
    """The paper's baseline: ``k`` groups of ``floor/ceil(N/k)`` hosts, uniformly at random.

    Ignores the distances; ``fit`` only needs N: ``X`` is a
    :class:`~plink.data.probefile.ProbeData`, an (N, N) matrix or (N, D) coordinates
    (N rows), or N itself as an int.  Attributes: ``labels_``, ``sizes_``, ``n_groups_``.
    """

    def __init__(self, n_groups: int | None = None, *, random_state=None) -> None:
        self.n_groups = n_groups
        self.random_state = random_state

    def get_params(self, deep: bool = True) -> dict:
        """The parameters of ``__init__`` by name, as set."""
        return {"n_groups": self.n_groups, "random_state": self.random_state}

    def fit(self, X, y=None) -> "BalancedRandom":
        """Deal the N hosts of ``X`` (see the class docstring) into ``k`` groups at random."""
        n = _n_hosts(X)
        if n < 1:
            raise InputError("no hosts to group")
        k = default_groups(n) if self.n_groups is None else self.n_groups
        _check_k_e(n, k, 1.0)
        rng = _check_random_state(self.random_state)
        labels = np.empty(n, dtype=int)
        labels[rng.permutation(n)] = np.arange(n) % k
        self.labels_ = _canonical(labels)
        self.sizes_ = np.bincount(self.labels_, minlength=k)
        self.n_groups_ = k
        return self

    def fit_predict(self, X, y=None) -> np.ndarray:
        """Fit to ``X`` and return ``labels_``, the group of each host (``0 .. k-1``)."""
        return self.fit(X).labels_


def group_hosts(
    probe,
    *,
    n_groups: int | None = None,
    elasticity: float = 1.0,
    alpha: float = 1.0,
    dims: int = 10,
    heights: bool = True,
    seed: int = 0,
    n_init: int | str = "auto",
    embed_kw: dict[str, Any] | None = None,
):
    """Embed ``probe`` with :class:`~plink.structure.embed.ProbeEmbed` and group the coordinates.

    ``alpha`` defaults to 1 here (ProbeEmbed's own default is the paper's 2):
    alpha = 2 compacts the longer distances, which in a few dimensions pulls
    the racks of a row onto each other; on simulated datacenters grouping by
    racks was measured better with alpha = 1 (benchmarks/embed_group.py, README).
    ``dims`` defaults to 10 for the same reason: a few dimensions cannot hold
    many racks apart (N = 4096, 64 racks in 8 rows, moderate noise: AMI 0.818
    with 6 dimensions, 0.979 with 10), while ProbeEmbed's default of 3
    denoises the PAIA case best.

    Returns a :class:`~plink.data.groupfile.Groups` with coordinates, heights (µs),
    fit quality, timings and, when the probe has ground truth, PAIA of the raw
    and embedded matrices (on the same triplets) and the AMI of the groups
    against the true racks (the innermost truth level).
    """
    from plink.structure.embed import ProbeEmbed
    from plink.data.groupfile import Groups
    from plink.structure.metrics import ami, paia

    n = probe.n
    if n < MIN_HOSTS:
        raise InputError(f"{n} host(s): grouping needs at least {MIN_HOSTS}")
    k = default_groups(n) if n_groups is None else n_groups
    _check_k_e(n, k, elasticity)
    t0 = time.perf_counter()
    emb = ProbeEmbed(dims, alpha=alpha, heights=heights, random_state=seed, **(embed_kw or {})).fit(probe)
    t1 = time.perf_counter()
    grp = BalancedGrouper(k, elasticity=elasticity, n_init=n_init, random_state=seed).fit(emb.coordinates_)
    t2 = time.perf_counter()
    metrics: dict[str, Any] = {
        "groups": int(k),
        "sizes": grp.sizes_.tolist(),
        "min_size": int(grp.min_size_),
        "max_size": int(grp.max_size_),
        "inertia": round(grp.inertia_, 6),
        "embed_loss": round(emb.loss_, 6),
        "stress": round(emb.stress_, 6),
        "median_rel_error": round(emb.median_rel_error_, 6),
        "embed_iterations": emb.n_iter_,
        "coverage": round(probe.coverage(), 6),
        "embed_seconds": round(t1 - t0, 3),
        "group_seconds": round(t2 - t1, 3),
    }
    if probe.truth is not None:
        labels = probe.truth.labels
        embedded = emb.distances_.copy()
        embedded[np.isnan(probe.latency)] = np.nan  # same triplets as the raw matrix
        for key, m in (("paia_raw", probe.latency), ("paia_embedded", embedded)):
            v = paia(m, labels)  # NaN when no triplet is comparable (one rack): null in the file
            metrics[key] = round(v, 6) if np.isfinite(v) else None
        metrics["ami"] = round(ami(labels, grp.labels_), 6)
        metrics["truth_level"] = probe.truth.levels[-1] if probe.truth.levels else None
    params = {
        "method": "balanced", "groups": int(k), "elasticity": float(elasticity), "alpha": float(alpha), "dims": int(dims),
        "heights": bool(heights), "seed": int(seed), "n_init": n_init, "scale_us": round(emb.scale_, 6),
    }
    return Groups(
        hosts=probe.names,
        labels=grp.labels_,
        coordinates=emb.coordinates_,
        heights=emb.heights_,
        metrics=metrics,
        params=params,
    )
