"""Pictures for ``plink plot``: the matrix before/after reordering, hosts by group.

matplotlib is optional (``pip install 'plink-locality[plot]'``), imported
lazily with the Agg backend; every PNG is written atomically.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import PlinkError


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlinkError("pictures need matplotlib: pip install 'plink-locality[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | os.PathLike) -> None:
    """Render to a temporary file next to ``path``, then rename over it."""
    target = Path(path)
    if not target.parent.is_dir():
        raise PlinkError(f"cannot write {target}: directory {target.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, format=(target.suffix.lstrip(".") or "png").lower(), dpi=100, bbox_inches="tight")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except (OSError, ValueError) as exc:
        raise PlinkError(f"cannot write {target}: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def mds_layout(latency: np.ndarray, dims: int = 2, seed: int = 0) -> np.ndarray:
    """Coordinates whose distances approximate ``latency`` (metric MDS, SMACOF).

    Missing pairs (NaN) are priced as the largest measured latency.  A stand-in
    for ProbeEmbed coordinates when a groups file carries none: a picture, not
    a model.  O(N^2) per SMACOF iteration.
    """
    from sklearn.manifold import MDS

    d = np.array(latency, dtype=float)
    n = d.shape[0]
    if n < 3:
        return np.c_[np.arange(n, dtype=float), np.zeros(n)][:, :dims]
    off = ~np.eye(n, dtype=bool)
    known = d[off & ~np.isnan(d)]
    d[np.isnan(d)] = known.max() if known.size else 0.0
    d = np.maximum(d, d.T)
    np.fill_diagonal(d, 0.0)
    import warnings

    with warnings.catch_warnings():  # scikit-learn 1.8+ renames MDS parameters; the old ones still work
        warnings.simplefilter("ignore", FutureWarning)
        mds = MDS(n_components=dims, dissimilarity="precomputed", n_init=1, random_state=seed)
        return mds.fit_transform(d)


def heatmaps_before_after(probe, order: Sequence[int], path, *, labels: Sequence[int] | None = None,
                          title: str = "") -> None:
    """Two heatmaps of the RTT matrix: hosts as probed, and in the rank ``order``.

    ``order[r]`` is the host index of rank ``r``; ``labels`` (a group per
    host) draws the group boundaries where groups are contiguous.  O(N^2).
    """
    plt = _pyplot()
    n = probe.n
    order = np.asarray(order, dtype=int)
    lat = np.ma.masked_invalid(probe.latency)
    finite = probe.latency[np.isfinite(probe.latency)]
    vmax = float(np.percentile(finite, 99)) if finite.size else 1.0
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), constrained_layout=True)
    panels = [("as probed (host file order)", np.arange(n), "host"), ("plink rank order", order, "rank")]
    for ax, (name, perm, axis) in zip(axes, panels):
        im = ax.imshow(lat[np.ix_(perm, perm)], cmap="viridis", interpolation="nearest", vmin=0, vmax=vmax)
        if labels is not None:
            lab = np.asarray(labels)[perm]
            cuts = np.flatnonzero(lab[1:] != lab[:-1]) + 0.5
            if len(cuts) <= len(set(lab.tolist())):  # only where each group is one block
                for c in cuts:
                    ax.axhline(c, color="white", lw=0.7)
                    ax.axvline(c, color="white", lw=0.7)
        ax.set_title(name)
        ax.set_xlabel(axis)
        ax.set_ylabel(axis)
    fig.colorbar(im, ax=axes, shrink=0.85, label="RTT (µs)")
    fig.suptitle(title or f"{n} hosts: pairwise RTT before and after reordering")
    _save(fig, path)
    plt.close(fig)


def embedding_by_group(coordinates: np.ndarray, labels: Sequence[int] | None, path, *, group_name: str = "group",
                       title: str = "") -> None:
    """The first two coordinates of every host, one colour per group."""
    plt = _pyplot()
    x = np.asarray(coordinates, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0:
        raise PlinkError("no coordinates to draw")
    if x.shape[1] == 1:
        x = np.c_[x, np.zeros(len(x))]
    lab = np.zeros(len(x), dtype=int) if labels is None else np.asarray(labels, dtype=int)
    fig, ax = plt.subplots(figsize=(5.5, 5))
    sc = ax.scatter(x[:, 0], x[:, 1], c=lab, cmap="tab10" if lab.max() < 10 else "tab20", s=28,
                    edgecolors="black", linewidths=0.3)
    k = int(lab.max()) + 1
    if 1 < k <= 20:
        handles, _ = sc.legend_elements()
        ax.legend(handles, [f"{group_name} {g}" for g in range(k)], fontsize=7, loc="best", frameon=False)
    ax.set_xlabel("coordinate 1 (µs)")
    ax.set_ylabel("coordinate 2 (µs)")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title(title or f"{len(x)} hosts in {k} groups")
    _save(fig, path)
    plt.close(fig)
