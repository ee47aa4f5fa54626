"""Optional pictures (``pip install '.[plot]'`` from a checkout, or matplotlib): matplotlib is imported lazily, Agg backend."""

from __future__ import annotations

import os

from typing import Sequence

import numpy as np

from plink.errors import PlinkError


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlinkError("plotting needs matplotlib: pip install matplotlib (or the checkout's extra: pip install '.[plot]')") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | os.PathLike) -> None:
    """Render to memory, then write with :func:`plink.data.fileio.write_bytes` (atomic for
    regular files; devices, FIFOs and ``-`` written through; symlinks kept)."""
    import io

    from plink.data.fileio import write_bytes

    path = os.fspath(path)
    fmt = os.path.splitext(path)[1].lstrip(".").lower() or "png"
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=fmt, dpi=120, bbox_inches="tight")
    except ValueError as exc:
        raise PlinkError(f"cannot write plot {path}: {exc}") from None
    write_bytes(path, buf.getvalue())


def _what(probe) -> str:
    """What the latency matrix holds, in the unit :func:`_shown` draws it in: RTT (µs, ms or s, as the
    text reports scale it), or the inverse of a bandwidth matrix read with --kind bandwidth."""
    unit = _scale(probe)[1]
    return f"1 / bandwidth ({unit})" if probe.inverse_bandwidth else f"RTT ({unit})"


def _scale(probe) -> tuple[float, str]:
    """``(factor, unit)`` that puts the latencies (stored in µs) in the unit of their median:
    ms from 1 ms, s from 1 s (a WAN matrix read with --unit ms is drawn in ms, not in 300000 µs)."""
    if probe.inverse_bandwidth:
        return 1.0, "µs per byte"
    finite = probe.latency[np.isfinite(probe.latency) & (probe.latency > 0)]
    med = float(np.median(finite)) if finite.size else 0.0
    if med >= 1e6:
        return 1e-6, "s"
    if med >= 1e3:
        return 1e-3, "ms"
    return 1.0, "µs"


def _shown(probe) -> np.ndarray:
    """The latency matrix in the unit of :func:`_scale`, its diagonal NaN: a host with itself is no
    measurement, and drawn as 0 it looked like the fastest pair (and pulled the colour scale to 0)."""
    m = probe.latency * _scale(probe)[0]
    np.fill_diagonal(m, np.nan)
    return m


def _grey_diagonal(ax, n: int) -> None:
    """Draw the diagonal (left NaN by :func:`_shown`) light grey, apart from missing pairs (white)."""
    from matplotlib.colors import ListedColormap

    diag = np.ma.masked_where(~np.eye(n, dtype=bool), np.ones((n, n)))
    ax.imshow(diag, cmap=ListedColormap(["0.85"]), interpolation="nearest", vmin=0, vmax=2)


def _colorbar(fig, im, ax, finite: np.ndarray, label: str, **kw) -> None:
    """The colour bar of a heatmap, or, with no pair measured, a line saying so: a bar over
    nothing showed a scale of 0..1 in the matrix's unit."""
    if finite.size:
        fig.colorbar(im, ax=ax, label=label, **kw)
        return
    for a in np.atleast_1d(ax):
        a.text(0.5, 0.5, "no pair measured", transform=a.transAxes, ha="center", va="center", color="0.3")


MAX_NAMED = 40  #: up to this many hosts, the axes carry their names
MAX_CUTS = 40  #: a level's group boundaries are drawn on a heatmap only up to this many groups


def _cuts(ordered: np.ndarray) -> np.ndarray:
    """Where the group changes along ``ordered`` (labels in display order), as line positions; none
    when there are more than ``MAX_CUTS`` groups: at PlanetLab's 163 the lines covered the matrix
    and read as the missing pairs, which are white too."""
    cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 0.5
    return cuts if len(np.unique(ordered)) <= MAX_CUTS else cuts[:0]


def _name_ticks(ax, names: Sequence[str], *, x: bool = True, y: bool = True) -> bool:
    """Host names as the tick labels of ``ax`` (in the order drawn) when there are at most
    ``MAX_NAMED``; whether they were put there."""
    if len(names) > MAX_NAMED:
        return False
    size = 7 if len(names) <= 20 else 5
    ticks = np.arange(len(names))
    if x:
        ax.set_xticks(ticks)
        ax.set_xticklabels(names, rotation=90, fontsize=size)
    if y:
        ax.set_yticks(ticks)
        ax.set_yticklabels(names, fontsize=size)
    return True


def plot_heatmap(probe, order: np.ndarray, path, *, labels: np.ndarray | None = None, title: str = "") -> None:
    """The latency matrix with rows and columns in ``order``; lines between groups when ``labels`` is given."""
    plt = _pyplot()
    m = _shown(probe)[np.ix_(order, order)]
    fig, ax = plt.subplots(figsize=(7, 6))
    masked = np.ma.masked_invalid(m)
    im = ax.imshow(masked, cmap="viridis", interpolation="nearest")
    _grey_diagonal(ax, probe.n)
    _colorbar(fig, im, ax, m[np.isfinite(m)], _what(probe))
    if labels is not None:
        for c in _cuts(labels[order]):
            ax.axhline(c, color="white", lw=0.6)
            ax.axvline(c, color="white", lw=0.6)
    named = _name_ticks(ax, [probe.names[i] for i in order])
    ax.set_xlabel("host" if named else "host (display order)")
    ax.set_ylabel("host" if named else "host (display order)")
    ax.set_title(title or f"{probe.n} hosts; white: missing pairs; grey: each host with itself")
    _save(fig, path)
    plt.close(fig)


def group_projection(coordinates: np.ndarray) -> tuple[np.ndarray, str, str]:
    """``(xy, x label, y label)``: the embedding coordinates as two columns to draw. Up to two
    dimensions as they are (one padded with zeros); more projected on their first two principal
    axes (:class:`sklearn.decomposition.PCA`), each axis labelled with the share of the variance it
    shows, so groups apart in any direction stay apart on the plot. O(N d^2)."""
    x = np.asarray(coordinates, dtype=float)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"coordinates must be an (N, d) array with d >= 1, got shape {x.shape}")
    if x.shape[1] == 1:
        return np.c_[x, np.zeros(len(x))], "coordinate 1", ""
    if x.shape[1] == 2 or len(x) < 3:
        return x[:, :2], "coordinate 1", "coordinate 2"
    from sklearn.decomposition import PCA

    pca = PCA(n_components=2, svd_solver="full").fit(x)
    share = pca.explained_variance_ratio_ if np.isfinite(pca.explained_variance_ratio_).all() else np.zeros(2)
    d = x.shape[1]
    return (pca.transform(x), f"principal axis 1 of {d} coordinates ({share[0]:.0%} of the spread)",
            f"principal axis 2 ({share[1]:.0%})")


def plot_groups(coordinates: np.ndarray, labels: np.ndarray, path, *, title: str = "") -> None:
    """The embedding coordinates (:func:`group_projection`: more than two on their first two
    principal axes), one colour per group."""
    plt = _pyplot()
    xy, xlabel, ylabel = group_projection(coordinates)
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.scatter(xy[:, 0], xy[:, 1], c=labels, cmap="tab20", s=14)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    k = int(labels.max()) + 1
    ax.set_title(title or f"{len(xy)} hosts in {k} group{'s' * (k != 1)}")
    ax.set_aspect("equal", adjustable="datalim")
    _save(fig, path)
    plt.close(fig)


def plot_heatmaps_before_after(probe, order: Sequence[int], path, *, labels: Sequence[int] | None = None,
                          title: str = "") -> None:
    """Two heatmaps of the RTT matrix: hosts as probed, and in the rank ``order``.

    ``order[r]`` is the host index of rank ``r``; ``labels`` (a group per
    host) draws the group boundaries where groups are contiguous.  O(N^2).
    """
    plt = _pyplot()
    n = probe.n
    order = np.asarray(order, dtype=int)
    shown = _shown(probe)
    lat = np.ma.masked_invalid(shown)
    finite = shown[np.isfinite(shown)]
    # the colour scale from the fastest pair (not 0: no pair is that fast) to the 99th percentile
    vmin = float(finite.min()) if finite.size else 0.0
    vmax = float(np.percentile(finite, 99)) if finite.size else 1.0
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), constrained_layout=True)
    panels = [("as probed (host file order)", np.arange(n), "host"), ("plink rank order", order, "rank")]
    for ax, (name, perm, axis) in zip(axes, panels):
        im = ax.imshow(lat[np.ix_(perm, perm)], cmap="viridis", interpolation="nearest", vmin=vmin, vmax=vmax)
        _grey_diagonal(ax, n)
        if labels is not None:
            lab = np.asarray(labels)[perm]
            cuts = _cuts(lab)
            if len(cuts) <= len(set(lab.tolist())):  # only where each group is one block
                for c in cuts:
                    ax.axhline(c, color="white", lw=0.7)
                    ax.axvline(c, color="white", lw=0.7)
        ax.set_title(name)
        if _name_ticks(ax, [probe.names[i] for i in perm]):
            axis = "host" if axis == "host" else "host, rank 0 first"
        ax.set_xlabel(axis)
        ax.set_ylabel(axis)
    _colorbar(fig, im, axes, finite, f"{_what(probe)[:-1]}; top 1% clipped)", shrink=0.85)
    fig.suptitle(title or f"{n} hosts: pairwise {_what(probe).split(' (')[0]} before and after reordering")
    _save(fig, path)
    plt.close(fig)


def plot_hierarchy(probe, groups, path, *, title: str = "") -> None:
    """The inferred hierarchy beside the latency heatmap ordered by it.

    Left: one bar per level (finest on the right, next to the matrix): a colour
    per finest group, light and dark grey in turn for the groups of coarser
    levels; and the hosts' confidence (dark = sure); right: the matrix with
    hosts sorted by coarsest level, then finer ones, white lines between the
    finest groups and red lines between groups of the level above (a level's lines only up to
    ``MAX_CUTS`` groups; its bar on the left shows any number).  O(N^2).
    """
    plt = _pyplot()
    from plink.data.inputs import host_key, host_positions

    pos = host_positions(groups.hosts)  # (case ignored, as Groups.aligned_to matches)
    idx = np.array([pos[host_key(h)] for h in probe.names])
    levels = [np.asarray(lv)[idx] for lv in (groups.levels or [groups.labels])]
    conf = None if groups.confidence is None else np.asarray(groups.confidence)[idx]
    order = np.lexsort(tuple(levels))
    # coarse .. fine, left to right: the finest groups in tab20's colours, every coarser level in two
    # alternating greys (its groups are contiguous in this order), so no rack shares its row's colour
    cols = [lv[order] % 20 if k == len(levels) - 1 else 20 + lv[order] % 2 for k, lv in enumerate(reversed(levels))]
    ncol = len(cols) + (conf is not None)
    fig = plt.figure(figsize=(8.5, 6.5))
    gs = fig.add_gridspec(1, 2, width_ratios=[0.06 * ncol + 0.02, 1.0], wspace=0.03)
    ax0 = fig.add_subplot(gs[0])
    ax1 = fig.add_subplot(gs[1])
    bars = np.stack(cols, axis=1).astype(float)
    from matplotlib.colors import ListedColormap

    palette = ListedColormap(list(plt.get_cmap("tab20").colors) + ["#d9d9d9", "#8c8c8c"])
    ax0.imshow(bars, aspect="auto", cmap=palette, vmin=-0.5, vmax=21.5, interpolation="nearest",
               extent=(0, len(cols), probe.n - 0.5, -0.5))
    names = [f"L{len(levels) - i}" for i in range(len(levels))]
    if conf is not None:
        ax0.imshow(conf[order][:, None], aspect="auto", cmap="Greys", vmin=0, vmax=1, interpolation="nearest",
                   extent=(len(cols), len(cols) + 1, probe.n - 0.5, -0.5))
        names.append("conf")
    ax0.set_xlim(0, ncol)
    ax0.set_xticks(np.arange(ncol) + 0.5)
    ax0.set_xticklabels(names, fontsize=7)
    ax0.set_ylabel("host (hierarchy order)")
    ordered = [probe.names[i] for i in order]
    if _name_ticks(ax0, ordered, x=False):
        ax0.set_ylabel("")
    if conf is not None:
        ax0.set_xlabel("conf:\nwhite 0\nblack 1", fontsize=6)
    shown = _shown(probe)
    m = np.ma.masked_invalid(shown[np.ix_(order, order)])
    finite = shown[np.isfinite(shown)]
    hi = float(np.percentile(finite, 98)) if finite.size else None  # outliers would flatten the colour scale
    im = ax1.imshow(m, cmap="viridis", interpolation="nearest", vmax=hi)
    _grey_diagonal(ax1, probe.n)
    ax1.set_yticks([])
    _colorbar(fig, im, ax1, finite, f"{_what(probe)[:-1]}; top 2% clipped)", fraction=0.046)
    for lev, colour, lw in ((0, "white", 0.5), (1, "red", 1.0)):
        if lev < len(levels):
            for c in _cuts(levels[lev][order]):
                ax1.axhline(c, color=colour, lw=lw)
                ax1.axvline(c, color=colour, lw=lw)
    counts = " / ".join(str(int(lv.max()) + 1) for lv in levels)
    counts = f"{counts} groups (fine / coarse)" if len(levels) > 1 else f"{counts} group{'s' * (counts != '1')}"
    ax1.set_title(title or f"{probe.n} hosts, {counts}; white: missing pairs; grey: each host with itself",
                  fontsize=9)
    ax1.set_xlabel("" if _name_ticks(ax1, ordered, y=False) else "host (hierarchy order)")
    _save(fig, path)
    plt.close(fig)
