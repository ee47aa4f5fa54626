"""How finely a cost model's predictions order rank orders: its resolution.

A model prices every order to many digits, but two orders priced 0.3% apart
are not 0.3% apart on a real network: what separates them is probe noise in
the model's small terms (the latency of a bandwidth-bound collective) and
load at the moment of measuring. Measured against real collectives
(``benchmarks/collectives_netns.py --analyse-only`` prints the table), with
plink's shared-link model (the default, as priced since 2026-11-29: the
butterflies and the tree as a fluid) the order of two orders priced less
than 0.5% apart came out as predicted in 45-49% of the pairs, 0.5-2% apart in
56-69%, 2-5% in 60-81%, 5-10% in 79-85%, 10% or more in 98% (three runs
of 3 clusters x 5 collectives x 14-20 orders on the emulated cluster; pairs
share orders, so they are not independent; README, "How far to trust a
prediction"). 2% was read off the first run with the model of its day
(a judgement: below it the model is right little more often than a coin,
and a 2-5% gap is still reversed about a quarter of the time); the two runs
measured after agree. The dissertation's pair sum (``pairsum``) resolves far
less: 26-56% at every gap under 10%, 70-73% above, so its resolution is 10%.
On other networks these figures are an assumption.

``RESOLUTION`` is the shared model's 2% (``RESOLUTIONS`` per model):
``tie_classes`` groups costs the model does not tell apart, ``ranks`` ranks
with those ties (what a Spearman correlation against measured times should
use), and ``resolved`` says whether one predicted speedup is a prediction at
all.

Pure functions over plain numbers. Complexity: O(M log M) for M costs.
"""

from __future__ import annotations

import numpy as np

RESOLUTION = 0.02  #: the shared model's: relative gap in predicted cost below which two orders are not told apart
RESOLUTIONS = {"shared": RESOLUTION, "pairsum": 0.10}  #: per cost model (see the module docstring)
#: why a gap under the resolution is no prediction, for messages to users
UNRESOLVED = "orders priced that close measured in the predicted order little more often than by chance"


def resolution_for(model: str) -> float:
    """The resolution of cost model ``model`` (``"shared"`` or ``"pairsum"``)."""
    try:
        return RESOLUTIONS[model]
    except KeyError:
        raise ValueError(f"unknown cost model {model!r} (choose from {', '.join(RESOLUTIONS)})") from None


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
