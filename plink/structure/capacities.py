"""Which measured link capacities are one capacity: classes within the measurement's own noise.

``plink probe --bandwidth`` tests every group uplink in ``passes`` interleaved
passes (:func:`plink.probes.uplinks.measure_uplinks`) and keeps the median.
Links built alike still measure a little apart (the 4 equal uplinks of the
emulated case A: 40.7-42.1 MB/s in one run), and a cost model that takes
those figures literally prices orders of one pattern apart by the same 2-3%
(which rack's uplink an order loads twice) while the real collective runs
them in the same time.  So capacities that differ by less than the test's
noise are priced as one: the test's repeatability is what says whether two
figures are two capacities.

The rule, chosen before it was measured against a real collective:

1. noise: on the log scale, each link's passes differ by measurement noise
   only, so ``sigma`` = median |x_p - x_q| over every pair of passes of one
   link, over every link, / (0.6745 sqrt 2) (the median absolute difference of
   two normal draws; a median, so one pass hit by a burst of load does not
   widen it), with ``sum(r_i - 1)`` degrees of freedom;
2. a link's estimate is the median of its ``r`` passes, with standard error
   ``sigma / sqrt(r)`` (``r`` the median number of passes; the median is
   treated as the mean, an approximation);
3. a range test (as Tukey's): a set of L estimates is one capacity when its
   range is within the 95% point of the studentized range for L means
   (``scipy.stats.studentized_range``) times that standard error; otherwise
   it is split at its widest gap and each side is tested again.  For two links
   this is the usual two-sided test of a difference at 95%;
4. every link of a class is priced at the median of all its members' passes.

With one pass per link (probe files written before passes were kept) there is
no noise estimate, and every link keeps its own figure.

Pure functions over plain numbers.  Complexity: O(L r^2 + L^2) for L links of r passes (plus one
``studentized_range`` quantile per class size, cached).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

_MAD_DIFF = 0.6744897501960817 * np.sqrt(2.0)  #: median |a - b| of two N(0, 1) draws


@dataclass(frozen=True)
class CapacityClasses:
    """Measured capacities grouped into the ones the test tells apart.

    ``values[i]`` is link ``i``'s priced capacity (its class's pooled median),
    ``classes`` the link indices of each class (smallest capacity first),
    ``sigma`` the test's noise on the log scale (None: not estimable),
    ``width`` the widest class's range (log scale, 0 when nothing was pooled)."""

    values: np.ndarray
    classes: tuple[tuple[int, ...], ...]
    sigma: float | None
    width: float

    @property
    def pooled(self) -> bool:
        """Whether any two links share a capacity."""
        return any(len(c) > 1 for c in self.classes)


def _check(samples) -> list[np.ndarray]:
    out = []
    for i, s in enumerate(samples):
        a = np.asarray(s, dtype=float).ravel()
        if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"link {i}: passes must be positive finite numbers, got {list(a)}")
        out.append(a)
    return out


def measurement_noise(samples: Sequence[Sequence[float]]) -> float | None:
    """The test's noise ``sigma`` on the log scale, from every link's repeated passes
    (step 1 of the module docstring); None when no link has two passes."""
    return _noise(_check(samples))


def _noise(links: list[np.ndarray]) -> float | None:
    """:func:`measurement_noise` of passes already checked by :func:`_check`."""
    diffs = []
    for a in links:
        x = np.log(a)
        i, j = np.triu_indices(x.size, 1)
        diffs.append(np.abs(x[i] - x[j]))
    d = np.concatenate(diffs) if diffs else np.empty(0)
    if d.size == 0:
        return None
    return float(np.median(d) / _MAD_DIFF)


@lru_cache(maxsize=256)
def _q95(n: int, df: int) -> float:
    """95% point of the studentized range of ``n`` means, ``df`` degrees of freedom."""
    from scipy.stats import studentized_range

    return float(studentized_range.ppf(0.95, n, max(int(df), 1)))


def capacity_classes(samples: Sequence[Sequence[float]], level_q=None) -> CapacityClasses:
    """Pool the capacities of links measured within the test's noise (module docstring).

    ``samples[i]``: the passes of link ``i`` (e.g. bytes/s; any positive unit).
    ``level_q(L, df)`` replaces the 95% studentized-range point (for tests)."""
    links = _check(samples)
    est = np.array([float(np.median(a)) for a in links])
    sigma = _noise(links)
    order = [int(i) for i in np.argsort(est, kind="stable")]
    if sigma is None or len(links) < 2:
        return CapacityClasses(est, tuple((i,) for i in order), sigma, 0.0)
    q = _q95 if level_q is None else level_q
    df = int(sum(a.size - 1 for a in links))
    se = sigma / np.sqrt(float(np.median([a.size for a in links])))
    logs = np.log(est)
    classes: list[list[int]] = []
    todo = [order]
    while todo:
        part = todo.pop()
        x = logs[part]
        if len(part) == 1 or x[-1] - x[0] <= q(len(part), df) * se:
            classes.append(part)
            continue
        cut = int(np.argmax(np.diff(x))) + 1  # the widest gap
        todo += [part[cut:], part[:cut]]
    classes.sort(key=lambda c: est[c[0]])
    values = est.copy()
    for c in classes:
        values[c] = float(np.median(np.concatenate([links[i] for i in c])))
    width = max(float(logs[c[-1]] - logs[c[0]]) for c in classes)
    return CapacityClasses(values, tuple(tuple(c) for c in classes), sigma, width)
