"""How well a distance matrix or a grouping reflects the true topology.

* :func:`paia`: Physical Affinity Inference Accuracy, dissertation §6.2.5.
* :func:`ami`: adjusted mutual information of a grouping against true racks
  (scikit-learn's ``adjusted_mutual_info_score``).
* :func:`relative_error`: median relative error of a fitted matrix.
* :func:`separation`, :func:`host_separation`: silhouette of a grouping on a distance matrix,
  overall and per host;
  :func:`refines`: whether one grouping refines another.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from plink.errors import InputError


def common_prefix_lengths(labels: Sequence[Sequence[str]]) -> np.ndarray:
    """``L[a, c]`` = length of the longest common prefix of the location tuples of ``a`` and ``c``.

    O(N² * levels) time, O(N²) memory (int8).
    """
    labels = [tuple(t) for t in labels]
    n = len(labels)
    depth = len(labels[0]) if n else 0
    if any(len(t) != depth for t in labels):
        raise InputError("every location tuple must have the same number of levels")
    lcp = np.zeros((n, n), dtype=np.int8)
    alive = np.ones((n, n), dtype=bool)
    for lev in range(depth):
        # integer code of each host's prefix of length lev+1
        _, code = np.unique(np.array(["\x1f".join(t[: lev + 1]) for t in labels], dtype=object), return_inverse=True)
        alive &= code[:, None] == code[None, :]
        lcp += alive
    return lcp


def paia(distances: np.ndarray, labels: Sequence[Sequence[str]], *, return_counts: bool = False,
         chunk: int = 256):
    """Physical Affinity Inference Accuracy of ``distances`` against true locations (§6.2.5).

    For an observer ``c`` and two other hosts ``a != b`` the triplet is
    *comparable* when the longest common prefixes of their location tuples
    with ``c``'s differ (a longer prefix means closer: fewer hops).  The
    affinity score ``A(a, b, c)`` is 1 when the measured order agrees strictly
    with the true one (``M(a,c) < M(b,c)`` and ``T(a,c) < T(b,c)``, or both
    ``>``), else 0; ties in ``M`` score 0.  PAIA is the sum of ``A`` over all
    comparable triplets divided by their number; ``{a, b}`` is unordered, so
    each triplet counts once (the paper's 81.3K triplets for 64 VMs).

    A triplet whose ``M(a, c)`` or ``M(b, c)`` is missing (NaN) is not
    defined and is left out of both sums; compare two matrices on the same
    triplets by giving them the same NaNs.

    Vectorised: per observer, sort the row of ``M`` and count with suffix
    sums per prefix level: O(N² log N) time, O(chunk * N * levels) memory.
    Returns the fraction (``nan`` when no triplet is comparable), or
    ``(agree, comparable)`` with ``return_counts=True``.
    """
    M = np.array(distances, dtype=float)
    n = M.shape[0]
    if M.shape != (n, n):
        raise InputError(f"distance matrix must be square, got shape {M.shape}")
    if len(labels) != n:
        raise InputError(f"{len(labels)} location tuples for {n} hosts")
    if any(isinstance(t, (str, bytes)) or not hasattr(t, "__len__") for t in labels):
        raise InputError("labels must be location tuples, one per host, outermost first (e.g. ('dc0', 'row1', "
                         "'rack3')); for flat group labels use ami(true, found)")
    L = common_prefix_lengths(labels).astype(np.int64)
    nlev = int(L.max()) + 1 if n else 1
    excluded = np.isnan(M)
    np.fill_diagonal(excluded, True)
    L[excluded] = -1
    M = np.where(excluded, np.inf, M)
    agree = 0
    comparable = 0
    for s in range(0, n, chunk):
        rows = slice(s, min(n, s + chunk))
        Mr, Lr = M[rows], L[rows]
        order = np.argsort(Mr, axis=1, kind="stable")
        ms = np.take_along_axis(Mr, order, axis=1)
        ls = np.take_along_axis(Lr, order, axis=1)
        r, w = ms.shape
        # end[p] = one past the last position holding the value ms[p] (tie groups)
        pos = np.broadcast_to(np.arange(w), (r, w))
        is_last = np.ones((r, w), dtype=bool)
        is_last[:, :-1] = ms[:, 1:] != ms[:, :-1]
        cand = np.where(is_last, pos + 1, w)
        end = np.minimum.accumulate(cand[:, ::-1], axis=1)[:, ::-1]
        onehot = ls[:, :, None] == np.arange(nlev)[None, None, :]  # (r, w, nlev)
        # suffix[q, l] = hosts of level l at sorted positions >= q
        suffix = np.zeros((r, w + 1, nlev), dtype=np.int64)
        suffix[:, :w] = np.cumsum(onehot[:, ::-1], axis=1)[:, ::-1]
        greater = np.take_along_axis(suffix, end[:, :, None], axis=1)  # (r, w, nlev): M_b > M_a by level
        # lower[l] = sum over levels < l (b strictly farther in truth than a of level l)
        lower_cum = np.cumsum(greater, axis=2) - greater
        valid = ls >= 0
        lvl = np.where(valid, ls, 0)
        contrib = np.take_along_axis(lower_cum, lvl[:, :, None], axis=2)[:, :, 0]
        agree += int(contrib[valid].sum())
        counts = onehot.sum(axis=1)  # (r, nlev)
        tot = counts.sum(axis=1)
        comparable += int(((tot**2 - (counts**2).sum(axis=1)) // 2).sum())
    if return_counts:
        return agree, comparable
    return agree / comparable if comparable else float("nan")


def ami(true_labels: Sequence, pred_labels: Sequence) -> float:
    """Adjusted mutual information (scikit-learn, arithmetic normalisation) of two labelings."""
    from sklearn.metrics import adjusted_mutual_info_score

    t = [str(x) if not isinstance(x, (tuple, list)) else "\x1f".join(map(str, x)) for x in true_labels]
    p = list(np.asarray(pred_labels).tolist())
    if len(t) != len(p):
        raise InputError(f"{len(t)} true labels for {len(p)} predicted")
    return float(adjusted_mutual_info_score(t, p))


def relative_error(fitted: np.ndarray, measured: np.ndarray) -> float:
    """Median of ``|fitted - measured| / measured`` over measured off-diagonal pairs with a positive value."""
    f = np.asarray(fitted, dtype=float)
    m = np.asarray(measured, dtype=float)
    iu = np.triu_indices(m.shape[0], 1)
    fv, mv = f[iu], m[iu]
    ok = ~np.isnan(mv) & (mv > 0)
    if not ok.any():
        return float("nan")
    return float(np.median(np.abs(fv[ok] - mv[ok]) / mv[ok]))


def _filled(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` symmetrised (the larger direction), missing pairs at the median, zero diagonal."""
    d = np.fmax(matrix, np.asarray(matrix).T).astype(float)
    n = len(d)
    off = ~np.eye(n, dtype=bool)
    d[~np.isfinite(d)] = float(np.median(d[off & np.isfinite(d)]))
    np.fill_diagonal(d, 0.0)
    return d


def separation(matrix: np.ndarray, labels: np.ndarray) -> float:
    """Silhouette of ``labels`` on the symmetrised ``matrix`` (missing pairs at the median); 0 for one group.

    Scores a grouping on a matrix it may not have been inferred from, so it does not depend on
    how the inference scores itself (the confidence of a probe's groups,
    :mod:`plink.structure.probegroups`).  O(N^2).
    """
    from sklearn.metrics import silhouette_score

    k = len(np.unique(labels))
    n = len(labels)
    if k < 2 or k >= n:
        return 0.0
    return float(silhouette_score(_filled(matrix), labels, metric="precomputed"))


def host_separation(matrix: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each host's silhouette under ``labels`` on ``matrix``, prepared as :func:`separation` does
    (scikit-learn's ``silhouette_samples``; 0 for a host alone in its group); all ones for one
    group (nothing to tell the hosts apart from, as ``plink group`` reports it). O(N^2)."""
    from sklearn.metrics import silhouette_samples

    labels = np.asarray(labels)
    k, n = len(np.unique(labels)), len(labels)
    if k < 2 or k >= n:
        return np.ones(n)
    return silhouette_samples(_filled(matrix), labels, metric="precomputed")


def refines(fine: np.ndarray, coarse: np.ndarray) -> bool:
    """Whether every group of ``fine`` lies inside one group of ``coarse`` (equal groupings too). O(N)."""
    fine, coarse = np.asarray(fine), np.asarray(coarse)
    pairs = np.unique(np.stack([fine, coarse]), axis=1)  # the distinct (fine, coarse) label pairs
    return len(np.unique(pairs[0])) == pairs.shape[1]


def rack_auc(cross: np.ndarray, within: np.ndarray) -> float:
    """P(a cross-rack value > an in-rack value), ties counting half: the Mann-Whitney U over
    ``len(cross) * len(within)`` (scikit-learn's ``roc_auc_score``); NaN values are dropped,
    NaN when either side is empty.  1.0: the racks are perfectly separated; 0.5: no
    information.  O(M log M) for M values."""
    from sklearn.metrics import roc_auc_score

    c, w = np.asarray(cross, dtype=float).ravel(), np.asarray(within, dtype=float).ravel()
    c, w = c[~np.isnan(c)], w[~np.isnan(w)]
    if not len(c) or not len(w):
        return float("nan")
    return float(roc_auc_score(np.r_[np.ones(len(c)), np.zeros(len(w))], np.r_[c, w]))
