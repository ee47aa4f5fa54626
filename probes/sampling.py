"""How many samples a pair needs, and how sure its value is.

Latency samples of one direction are RTTs in microseconds; the value plink
uses is their 10th percentile (p10, robust to scheduling noise, §5.2.2 of
the dissertation).  On busy hosts a fixed, small sample count taken in one
burst can miss every quiet moment of a pair; this module decides from the
data when a pair's p10 is known well enough:

* :func:`p10_interval` -- a distribution-free confidence interval of the
  p10 from order statistics (the binomial method, e.g. Conover, *Practical
  Nonparametric Statistics*, 3rd ed., §3.2): the interval
  ``[x_(l), x_(u)]`` with ``P(l <= B < u) >= level`` for
  ``B ~ Binomial(n, 0.1)``.
* :func:`is_stable` -- the interval is narrower than ``tol`` of the p10
  (relative) or ``abs_tol`` microseconds.
* :func:`confidence` -- ``1 - half-width / p10`` clipped to [0, 1]: 1 for a
  tightly known value, 0 when the interval is as wide as the value.
* :func:`host_overhead` -- each host's own userspace echo cost from its
  self-ping (the agent pinging its own responder through the kernel's
  loopback path: no network, both ends on that host), the per-host term
  ``h_i`` of ``d_ij = h_i + h_j + x_ij``.

All functions are pure numpy; O(k log k) for k samples.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.stats import binom

Q = 0.10


def p10_interval(samples, level: float = 0.9) -> tuple[float, float, float]:
    """``(p10, low, high)`` of ``samples`` (NaNs when empty).

    ``low``/``high`` are order statistics bracketing the true 10th percentile
    with probability >= ``level`` (two-sided, binomial); with too few samples
    for that they are the sample minimum and ... the largest order statistic
    that still qualifies (``high`` may then be the maximum).  O(k log k).
    """
    x = sorted(v for v in samples if v == v and v not in (math.inf, -math.inf))
    k = len(x)
    if k == 0:
        return math.nan, math.nan, math.nan
    lo, hi = _order_indices(k, level)
    return quantile_sorted(x, 0.10), float(x[lo]), float(x[hi])


def quantile_sorted(x, q: float) -> float:
    """The ``q`` quantile of sorted ``x`` with linear interpolation (numpy's
    default), without numpy's per-call overhead (it matters for 65k
    directions at 256 hosts).  O(1)."""
    pos = q * (len(x) - 1)
    f = int(pos)
    if f + 1 >= len(x):
        return float(x[-1])
    return float(x[f] + (x[f + 1] - x[f]) * (pos - f))


@lru_cache(maxsize=4096)
def _order_indices(k: int, level: float) -> tuple[int, int]:
    """0-based order statistics bracketing the 10th percentile of ``k``
    samples with probability >= ``level`` (B ~ Binomial(k, 0.1))."""
    a = (1.0 - level) / 2.0
    lo = int(binom.ppf(a, k, Q))  # P(B <= lo) >= a
    hi = int(binom.ppf(1.0 - a, k, Q)) + 1
    return min(max(lo - 1, 0), k - 1), min(max(hi, 0), k - 1)


def half_width(samples, level: float = 0.9) -> float:
    p, lo, hi = p10_interval(samples, level)
    return (hi - lo) / 2.0 if np.isfinite(p) else math.inf


def is_stable(samples, tol: float = 0.1, abs_tol: float = 2.0, level: float = 0.9) -> bool:
    """True when the p10's confidence interval half-width is at most
    ``max(tol x p10, abs_tol)`` (relative 10% or 2 us by default)."""
    p, lo, hi = p10_interval(samples, level)
    if not np.isfinite(p):
        return False
    return (hi - lo) / 2.0 <= max(tol * p, abs_tol)


def confidence(samples, level: float = 0.9) -> float:
    """``1 - half-width / p10`` in [0, 1] (0 without samples)."""
    p, lo, hi = p10_interval(samples, level)
    if not np.isfinite(p) or p <= 0:
        return 0.0
    return float(min(1.0, max(0.0, 1.0 - (hi - lo) / 2.0 / p)))


def host_overhead(self_rtts: dict[int, list], n: int) -> np.ndarray:
    """Per-host echo overhead ``h_i`` (us): the p10 of host ``i``'s self-ping
    RTTs (sender and responder both on host ``i``, so it is the host's
    userspace cost of one probe exchange plus its loopback path).  NaN
    where a host has no self samples.  O(total samples)."""
    out = np.full(n, np.nan)
    for i, r in self_rtts.items():
        x = np.asarray(r, dtype=float)
        x = x[np.isfinite(x)]
        if len(x):
            out[i] = float(np.percentile(x, 10))
    return out


def pair_confidence(probe) -> np.ndarray | None:
    """The per-pair confidence of a probe file (``meta["confidence"]``,
    written by ``plink probe`` since the adaptive sampling), symmetrised with
    the smaller of the two directions; NaN for unmeasured pairs, 1 on the
    diagonal.  ``None`` for files without it (older files, simulated or
    plain matrices): the reader stays backward compatible.  O(N^2)."""
    raw = probe.meta.get("confidence") if isinstance(probe.meta, dict) else None
    if not isinstance(raw, list) or len(raw) != probe.n:
        return None
    try:
        c = np.array([[np.nan if v is None else float(v) for v in row] for row in raw], dtype=float)
    except (TypeError, ValueError):
        return None
    if c.shape != (probe.n, probe.n):
        return None
    out = np.fmin(c, c.T)
    np.fill_diagonal(out, 1.0)
    return out
