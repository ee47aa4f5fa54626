"""Infer the group hierarchy (racks) from a latency matrix: ``infer_hierarchy``.

Minimal placeholder (branch ``costmodel``) until the structure work lands and
replaces this file: average-linkage clustering (scipy) of the symmetrised
matrix, one level, the number of groups chosen at the largest relative gap
between consecutive merge heights.  O(N^2) memory, O(N^2 log N) time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Hierarchy:
    """Groups found: ``labels`` (finest level, ints ``0..k-1``), ``levels`` (finest first)."""

    labels: np.ndarray
    levels: list = field(default_factory=list)
    confidence: float = 0.0
    scores: dict = field(default_factory=dict)


def infer_hierarchy(latency: np.ndarray, *, max_levels: int = 3, random_state=None) -> Hierarchy:
    """Groups of hosts from ``latency`` (``N x N``, ``np.nan`` where missing)."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    d = np.array(latency, dtype=float)
    n = d.shape[0]
    if n < 3:
        labels = np.zeros(n, dtype=int)
        return Hierarchy(labels, [labels], 0.0, {"k": 1})
    d = np.fmax(d, d.T)
    off = ~np.eye(n, dtype=bool)
    known = d[off & np.isfinite(d)]
    fill = float(np.median(known)) if known.size else 1.0
    d[~np.isfinite(d)] = fill
    np.fill_diagonal(d, 0.0)
    z = linkage(squareform(d, checks=False), method="average")
    h = np.maximum(z[:, 2], 1e-12)
    ratio = h[1:] / h[:-1]  # gap between merge i and i+1: cut there leaves n - 1 - i groups
    i = int(np.argmax(ratio))
    k = n - 1 - i
    if ratio[i] < 1.5:
        k = 1
    labels = fcluster(z, t=k, criterion="maxclust") - 1 if k > 1 else np.zeros(n, dtype=int)
    _, labels = np.unique(labels, return_inverse=True)
    labels = labels.astype(int)
    return Hierarchy(labels, [labels], float(min(1.0, (ratio[i] - 1) / 2)), {"k": int(labels.max()) + 1,
                                                                              "gap_ratio": float(ratio[i])})
