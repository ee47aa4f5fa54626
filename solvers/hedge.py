"""Choosing among near-equal orders by how they fare under the groupings the data cannot rule out.

A rank order is searched under one grouping of the hosts, but when the groups come from
latencies alone, a rack of 2 and its neighbour can read as one group (proof case D seed 25:
plink's recursive-doubling order, cheap only if the 7 hosts were one rack, measured 1.28x the
best). :func:`hedged_pick` takes candidate orders (e.g. the search's under the found grouping and
under each grouping with one found group split in two, :func:`plink.structure.probegroups.splits_in_two`)
priced under every grouping, and keeps, of those priced within ``tolerance`` of the cheapest under
the found grouping (the model's resolution: it does not tell them apart), the one with the least
worst *regret*: its price under a grouping over the cheapest candidate's under that grouping,
maximised over the groupings; the search's own order (candidate 0) stays unless the pick's worst
regret is lower by more than ``tolerance`` too.

Screened on the saved proof probes (``benchmarks/robust_groupings.py``, 250 searches of 50 runs,
judged by the fluid price with the runs' bandwidth probes and true racks): better than the found
grouping's order by more than 2% in 10, never worse by more than 0.2%, geometric mean 0.998
(searches of ``--max-iter 1000``; time-limited, the found grouping's search given half the time as
``plink order`` does, 11 better and 2 worse of 120, geometric mean 0.992; with equal shares alike).
Measured with real collectives: README, "Hedging over the plausible groupings".
Without the tolerance (least worst regret over every candidate) it was as often worse as better.

Complexity: O(G * C) for G groupings and C candidates, given their prices.
"""

from __future__ import annotations

import numpy as np

from .resolution import RESOLUTION

__all__ = ["hedged_pick", "regrets"]


def regrets(prices) -> np.ndarray:
    """Each candidate's worst regret: ``prices[g, c]`` (candidate ``c`` priced under grouping
    ``g``, > 0) over the cheapest candidate's price under ``g``, maximised over ``g``."""
    p = _check(prices)
    return (p / p.min(axis=1, keepdims=True)).max(axis=0)


def hedged_pick(prices, tolerance: float = RESOLUTION, allowed=None) -> int:
    """The index of the candidate with the least worst regret (:func:`regrets`) among those priced
    within ``tolerance`` of the cheapest under grouping 0 (row 0 of ``prices``: the grouping
    found in the data) and, when ``allowed`` (a boolean per candidate) is given, allowed.
    Candidate 0 (list the search's own order first) is kept when it is among them and the pick's
    worst regret is not lower by more than ``tolerance`` too; other ties go to the lower index.
    ``prices[g, c]``:
    candidate ``c``'s price under grouping ``g``, finite and > 0."""
    p = _check(prices)
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    ok = np.ones(p.shape[1], dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    if ok.shape != (p.shape[1],) or not ok.any():
        raise ValueError("allowed must be a boolean per candidate, at least one True")
    near = np.flatnonzero(ok & (p[0] <= p[0][ok].min() * (1 + tolerance)))
    worst = regrets(p)
    k = int(near[np.argmin(worst[near])])
    if near[0] == 0 and not worst[k] * (1 + tolerance) < worst[0]:
        return 0  # (a worst regret lower by less than the resolution is no reason to move)
    return k


def _check(prices) -> np.ndarray:
    p = np.asarray(prices, dtype=float)
    if p.ndim != 2 or p.size == 0:
        raise ValueError(f"prices must be a non-empty groupings x candidates matrix, got shape {p.shape}")
    if not (np.isfinite(p).all() and (p > 0).all()):
        raise ValueError("prices must be finite and > 0")
    return p
