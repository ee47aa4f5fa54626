"""How finely a cost model's predictions order rank orders: its resolution.

A model prices every order to many digits, but two orders priced 0.3% apart
are not 0.3% apart on a real network: what separates them is probe noise in
the model's small terms (the latency of a bandwidth-bound collective) and
load at the moment of measuring. Measured against real collectives
(``benchmarks/collectives_netns.py --analyse-only`` prints the table), the
order of two orders priced less than 0.5% apart came out as predicted in
44-49% of the pairs, 0.5-2% apart in 56-66%, 2-5% in 69-74%, 5-10% in
81-83%, 10% or more in 96-97% (two runs of 3 clusters x 5 collectives x
19-20 orders; the 2% was read off the first run, the second agrees).

``RESOLUTION`` is that 2%: ``tie_classes`` groups costs the model does not
tell apart, ``ranks`` ranks with those ties (what a Spearman correlation
against measured times should use), and ``resolved`` says whether one
predicted speedup is a prediction at all.

Pure functions over plain numbers. Complexity: O(M log M) for M costs.
"""

from __future__ import annotations

import numpy as np

RESOLUTION = 0.02  #: relative difference in predicted cost below which two orders are not told apart


def _check(resolution: float) -> float:
    r = float(resolution)
    if not 0 <= r < 1:
        raise ValueError(f"resolution must be in [0, 1), got {resolution}")
    return r


def tie_classes(costs, resolution: float = RESOLUTION) -> list[list[int]]:
    """Indices of ``costs`` in classes the model does not tell apart, cheapest class first.

    Sorted by cost, a class starts at its cheapest member and takes every
    following cost within ``resolution`` (relative) of that member, so no
    class is wider than the resolution (a chain of small steps does not
    merge distant costs). Indices inside a class are in cost order (stable).
    """
    r = _check(resolution)
    c = np.asarray(costs, dtype=float)
    if c.ndim != 1 or not np.all(np.isfinite(c)):
        raise ValueError("costs must be a 1-D array of finite numbers")
    classes: list[list[int]] = []
    start = None
    for i in np.argsort(c, kind="stable"):
        i = int(i)
        if start is not None and c[i] <= start + r * abs(start):
            classes[-1].append(i)
        else:
            classes.append([i])
            start = c[i]
    return classes


def ranks(costs, resolution: float = RESOLUTION) -> np.ndarray:
    """Rank of every cost (1 = cheapest), orders of one ``tie_classes`` class sharing their mean rank."""
    out = np.empty(len(np.asarray(costs)), dtype=float)
    pos = 1
    for cls in tie_classes(costs, resolution):
        out[cls] = pos + (len(cls) - 1) / 2
        pos += len(cls)
    return out


def resolved(cost_a: float, cost_b: float, resolution: float = RESOLUTION) -> bool:
    """Whether the model tells ``cost_a`` and ``cost_b`` apart: they differ by more than
    ``resolution`` of the smaller one."""
    r = _check(resolution)
    lo, hi = sorted((float(cost_a), float(cost_b)))
    return hi > lo + r * abs(lo)
