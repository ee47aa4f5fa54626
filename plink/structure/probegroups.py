"""The groups of a probe's hosts from both its matrices: latency and inverse pair bandwidth.

One rule, used by ``plink order``'s pricing (:func:`plink.pricing.find_groups`) and by
``plink probe``'s uplink test (:func:`plink.probes.uplinks.infer_groups`), so that the groups
whose uplinks the probe measures are the groups the cost model later prices (when they were
not, a test over a rack and one host of another was priced as a link of its own:
``benchmarks/results/2026-11-28-A-seed9``, README "Proof against real collectives").

Each matrix is grouped by :func:`plink.structure.hierarchy.infer_hierarchy` (its finest
level). The inverse bandwidth is a distance because ``plink probe`` measures the pairs of a
round at the same time, so cross-rack pairs share uplinks and measure slower (§4.2.1 of the
dissertation). Of the groupings of the matrices that see the most hosts:
where one refines the other, the finer; else the one with the higher sum of silhouettes on
both matrices (:func:`plink.structure.metrics.choose_grouping`). A host with no measured pair in a
matrix gets a group of its own there (it cannot be placed; pricing its flows as crossing
uplinks is the conservative case).

Asymmetric matrices are read as a probe file is (``plink.data.probefile``): for latency the
faster direction of each pair (load only adds delay), for bandwidth the slower one.

Complexity: that of ``infer_hierarchy`` on each matrix, plus O(N^2) silhouettes.
"""

from __future__ import annotations

import numpy as np

from plink.structure.metrics import choose_grouping, separation

__all__ = ["infer_probe_groups", "placed_hosts"]


def placed_hosts(matrix: np.ndarray) -> np.ndarray:
    """Boolean mask of the hosts with at least one measured (finite) pair, either direction, in
    ``matrix`` (the diagonal ignored). O(N^2)."""
    m = np.asarray(matrix, dtype=float)
    off = ~np.eye(len(m), dtype=bool)
    return ((np.isfinite(m) | np.isfinite(m.T)) & off).any(axis=1)


def _group(matrix: np.ndarray, seen: np.ndarray, seed: int) -> np.ndarray:
    """Finest-level labels of ``matrix``; each host not in ``seen`` a group of its own."""
    from plink.structure.hierarchy import infer_hierarchy

    m = np.array(matrix, dtype=float)
    np.fill_diagonal(m, np.nan)
    lab = np.zeros(len(m), dtype=np.int64)
    if seen.sum() >= 3:
        lab[seen] = infer_hierarchy(m[np.ix_(seen, seen)], random_state=seed).labels
    k = int(lab[seen].max()) + 1 if seen.any() else 0
    lab[~seen] = k + np.arange(int((~seen).sum()))
    _, lab = np.unique(lab, return_inverse=True)
    return lab.astype(np.int64)


def infer_probe_groups(latency: np.ndarray, bandwidth: np.ndarray | None = None, *, seed: int = 0,
                       latency_name: str = "latency") -> tuple[np.ndarray, float, str]:
    """``(labels, silhouette, source)``: the groups of the hosts of a latency matrix (µs, may be
    asymmetric, NaN = not measured) and, when given, a pair bandwidth matrix (any unit, same
    layout), chosen as the module docstring says. ``source`` is ``"inferred from <latency_name>"``
    or ``"inferred from bandwidth"``; ``latency_name`` names what the first matrix is (e.g.
    ``"inverse bandwidth"`` for a bandwidth matrix read alone)."""
    lat = np.asarray(latency, dtype=float)
    n = lat.shape[0]
    lat = np.fmin(lat, lat.T)  # the faster direction (NaN only where neither was measured)
    found = [(lat, f"inferred from {latency_name}")]
    if bandwidth is not None:
        bw = np.asarray(bandwidth, dtype=float)
        bw = np.fmin(bw, bw.T)  # the slower direction, as a probe file is read
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(bw > 0, 1.0 / bw, np.nan)
        if np.isfinite(inv[~np.eye(n, dtype=bool)]).sum() >= n:
            found.append((inv, "inferred from bandwidth"))
    seen = [placed_hosts(m) for m, _ in found]
    most = max(int(s.sum()) for s in seen)  # a matrix not measured yet places nobody
    cands = [(_group(m, s, seed), m, source) for (m, source), s in zip(found, seen) if s.sum() == most]
    i = choose_grouping([(lab, m) for lab, m, _ in cands])
    lab, m, source = cands[i]
    return lab, separation(m, lab), source
