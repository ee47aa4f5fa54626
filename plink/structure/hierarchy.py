"""Structure inference: racks (and rows above them) from a latency matrix, K chosen from the data.

:func:`infer_hierarchy` turns an N x N latency matrix (any unit, NaN where
unmeasured, possibly asymmetric) into a :class:`Hierarchy`: group labels at
one or more levels (fine to coarse), a confidence per host and the scores
that chose the number of groups.  :class:`HierarchicalGrouper` is the
scikit-learn-style estimator over it (``n_groups="auto"`` or a fixed K).

The pipeline (each step a pure function over numpy arrays):

1. :func:`symmetrise_min`: ``min(d_ij, d_ji)`` (NaN-aware): queueing and
   tenant load only ever *add* delay, so the smaller direction is the
   better estimate of the path.
2. :func:`remove_host_overheads`: latencies are ``d_ij = h_i + h_j + t_ij``
   with a per-host overhead ``h`` (the ProbeEmbed "height", dissertation
   §4.2.1; on busy hosts it dominates).  ``h_i`` is estimated from host
   ``i``'s nearest neighbours and subtracted.
3. :func:`profile_distances`: hosts in one rack see every other host alike,
   so two hosts are compared by their whole *row profiles*, the mean over all
   hosts ``k`` of ``|f(x_ik) - f(x_jk)|``, with two choices of ``f``: "log"
   (``log x``; keeps the differences between far levels such as rows) and
   "near" (closeness ``exp(-(log x_ik - log near_i) / tau)``: far entries are
   squashed together, so the few columns where two hosts' racks differ
   dominate, which separates many small racks).  Averaging over N entries
   cancels per-pair noise; the log bounds multiplicative outliers; missing
   pairs are imputed (row median, then the block median of a first grouping).
   :func:`denoise_profile` then takes out each host's own noise level (noisy
   hosts otherwise look far from everyone).
4. Average linkage (UPGMA, scipy) on each; candidate cuts (K = 2..10 and the
   cuts after the largest relative gaps in merge height), groups under
   :data:`MIN_GROUP` hosts folded into their nearest group (in a split of 6 to
   :data:`PAIRS_MAX` - 1 hosts at the top level or inside a group of :data:`SMALL_GROUP`
   or more, the cut with groups of 2 is tried too, and wins when it is significant and
   has the better silhouette; its pairs are significant when more hosts sit in tight
   pairs, :data:`PAIR_TIGHT` times closer to each other than to anyone else, than in
   every one of :data:`PAIR_NULLS` shuffled copies, see :func:`_split_one`; there the cut as
   the tree leaves it, a host without a rack-mate alone, competes too, see :func:`_best_cut`;
   inside a smaller group found already, only pairs that are all tight and
   :data:`EFFECT_PAIRS_SMALL` times farther apart on the latencies as measured, and apart by
   :data:`PAIRS_SMALL_APART` of the group's distance to the rest of its parent),
   hosts moved to the group they are closest to on average; the cut with the best mean
   silhouette [Rousseeuw 1987] (the coarsest within :data:`PARSIMONY` of it)
   is *significant* when its silhouette is at least :data:`SILHOUETTE_MIN`,
   beats by :data:`NULL_MARGIN` the best silhouette of the same procedure on
   copies of the matrix with its pairs shuffled (a permutation null: same
   values, no structure; only cuts :data:`EFFECT_MIN` apart count, as no
   split takes others), and the pairs it separates are :data:`EFFECT_MIN`
   times farther (median) than those it keeps together.  Of the two metrics'
   significant cuts the one beating its null by most wins; none: K = 1.
   Inside a group of fewer than :data:`SMALL_GROUP` hosts found already (a rack, or
   a few), a cut needs both metrics to find it significant (:data:`SMALL_BOTH`).
   A whole cluster of fewer than :data:`SMALL_GROUP` hosts none of whose cuts is
   significant so gets one more, calibrated test (:func:`small_cluster_cut`): the
   best silhouette of its four tries (two metrics, groups of :data:`MIN_GROUP` or
   of 2) against the best of the four on each of :data:`SMALL_NULLS` shuffled
   copies, taken at a permutation p-value of :data:`SMALL_ALPHA` at most.
5. Recursion: each group found is split again the same way, on profiles over
   its own members (finer levels, e.g. racks inside rows) until no
   significant split remains or ``max_levels`` is reached; when the first
   split is already the finest, rows above it are looked for among the
   groups' mean distances.  ``labels`` is the finest level.
6. :func:`split_loose_groups`: a group whose median pair is not 1.15x
   (:data:`EFFECT_MIN`) closer than the rest of its parent is no group but
   several small racks the parent's split left together; when the parent's
   other groups are 1.6x tighter than that, it is cut again on the scale
   between the two (a group alone in its parent: when it is 1.6x looser than
   the groups of the other parents); so is a group of at least a typical
   group's size whose median pair is nearer the rest of its parent than its
   parent's racks (on a log scale), into parts whose every pair between them
   is a quarter of the way from the racks to the rest (two racks of 2 left in
   one group); a cut that finds one rack and leaves 2 hosts or more cuts a
   group of 1.25x a typical group's size into that rack and the hosts left.
   A host that joins no part follows its nearest host there when that
   latency is under the cut, or when, the host's own overhead
   (:func:`excess_latency`) taken off, its median latency to that part is
   under the cut and every other part's over it (:data:`LONE_SHIFT`: a busy
   host); otherwise it stays alone
   (:data:`LONE_STAY`: its rack-mate pairs unmeasured or spoilt).
7. :func:`merge_split_groups`: two groups of one parent that one group of
   their hosts would not have been split into (judged on the lower quartiles
   of the pairs, :data:`MERGE_QUANTILE`; or whose pairs between them are no
   farther than the parent's racks, when together they have fewer hosts than
   a typical group of it), and that together are a tight group of the
   parent, merge (the best silhouette can cut a rack in two when a few of its
   pairs are inflated); then :func:`join_lone_hosts`: a
   host a split left alone joins the group of its nearest host when that
   host is nearer the parent's racks' scale than the rest of the parent.
8. :func:`move_to_nearest`: a host whose nearest member of another group of
   its parent is :data:`NEAREST_MOVE` times closer than its nearest
   rack-mate moves there (profiles average over all N columns, in which
   racks of 2-4 hosts differ in only a few); when a host moved, step 6 runs
   once more, over every group (a host moved into a group can leave it as
   loose as the rest of its parent, and moves change the parent's scale).

Complexity: O(N^3) time for the profile distances (scipy ``cdist`` of N rows
of length N), repeated for the two metrics and the permutation nulls (10
per split of <= 32 hosts, 4 up to 128, 2 above), so O(N^3) with a constant
of about 6-10 at the top level; O(N^2) memory; each candidate silhouette
O(N^2).  Measured on a quiet 2-core machine: N = 192 in 2.6 s, N = 344 in
2.7 s (``benchmarks/structure.py --large``; several times that when the cores are shared).  Deterministic for a given
``random_state`` (it seeds the permutation nulls; None means 0).

Measured against the classical baselines given the true K in
``benchmarks/structure.py`` (see README, ``plink group``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plink.data.probefile import check_every_host_measured
from plink.errors import InputError, OptionError, PlinkError
from plink.structure.params import Params

#: a split is significant when its mean silhouette on the profile distances is at least this
SILHOUETTE_MIN = 0.25
#: ... and beats the best silhouette on shuffled (structureless) copies of the matrix by this much
NULL_MARGIN = 0.15
#: smallest group a significant split may create (smaller ones are folded into the nearest group)
MIN_GROUP = 3
#: ... and the pairs it separates are at least this many times farther (median) than the pairs it keeps together.
#: A ratio, so a latency common to every pair dilutes it: the in-job probe's Gloo ping-pongs pay ~330 us of
#: user-space wake-ups on every pair, and 4 racks that its RTTs separate (AUC 0.90-0.99) measured 1.19-1.23
#: (benchmarks/injob_netns.py --steps torchrun --keep DIR, 3 runs on 2026-11-25; one is
#: tests/data/injob_netns_4x4_probe.json). 1.25 (until then) found no racks there; 1.15 finds them in 2 of
#: the 3 runs (the third, AUC 0.90, is no better than its permutation null either), with the same AMI on
#: every case of benchmarks/structure.py --large, seeds 0-2, and no split of structureless matrices with
#: such an offset (tests/test_hierarchy.py::test_no_split_of_structureless_matrices)
EFFECT_MIN = 1.15
#: ... 1.6 in groups of fewer than SMALL_GROUP hosts, where the best of many possible splits of noise can
#: look that far apart (selection bias; measured on simulated racks of 5-9 hosts)
EFFECT_MIN_SMALL = 1.6
SMALL_GROUP = 16
#: in a split of fewer hosts than this (at the top, or inside a group of SMALL_GROUP or more), the cut
#: with groups of 2 is tried too
PAIRS_MAX = 128
#: inside a group of fewer than SMALL_GROUP hosts found already, a cut with groups of 2 is taken only when
#: every one of its 2-host groups is a tight pair and the pairs it separates are this many times farther
#: (median) than those it keeps together: a region pair 19 ms apart and 169-201 ms from the 4 regions it
#: was folded into (cloud_interregion_skyplane), not a rack of 5 split 2 + 3 by noise (2.0x as measured)
EFFECT_PAIRS_SMALL = 3.0
#: ... and only when the parts are at least this fraction as far apart (median) as the group is from the
#: rest of the group it was split from: a ratio is no test on a matrix whose nearest values are noise around
#: 0 (the log of the bandwidth ratio, log(max bw / bw), inside a rack of 4: tight pairs 10x apart, but 0.05-0.09
#: of the distance to the other racks); on Skyplane's RTTs the Gulf's pair is 0.25 of it, Japan's and Korea's 8
#: regions cut with Osaka's pair apart 0.18, South Africa's pair 5.4
PAIRS_SMALL_APART = 0.125
#: a loose group whose cut finds one rack (one part of 2 hosts or more) is cut into it and the hosts it
#: left when the group has at least this many times the hosts of a typical group of its parent (the median):
#: racks of 2-4 left together, not a rack of 5-9 with two noisy hosts (split_loose_groups' one_part)
ONE_PART_SIZE = 1.25
#: a *tight pair*: two hosts this many times closer to each other than either is to any other host
#: (a 2-host rack; noise rarely makes so tight a pair)
PAIR_TIGHT = 1.6
#: shuffled copies the count of hosts in tight pairs is compared with (:func:`tight_pair_hosts`)
PAIR_NULLS = 50
#: among the significant cuts the coarsest whose silhouette is within this of the best wins (finer levels come
#: from splitting each group again)
PARSIMONY = 0.0
#: cuts K = 2..SMALL_K are always evaluated, larger K only after the largest gaps in merge height
SMALL_K = 10
N_GAP_CANDIDATES = 12
#: the two profile distances (see :func:`profile_distances`)
METRICS = ("log", "near")
#: last step: a host moves to another group of its parent (a rack of the same row) when its nearest member
#: there is this many times closer, on the symmetric latencies as measured, than its nearest rack-mate
#: (noise only adds delay, so a host's smallest latency to a group is the best estimate of its distance to
#: it). Chosen on benchmarks/structure.py --large (margins of 1.3-2.0 change a few of sim-9's racks of 2-4
#: hosts; 1.2 and 1.0 lower cases: docs/structure.md). See move_to_nearest
NEAREST_MOVE = 1.5
#: before that: two groups of one parent merge when their split would not pass the test for splitting a small
#: group and together they would be a significant group of the parent (:func:`merge_split_groups`), unless the
#: merged group is more than this many times looser (median pair, as measured) than the median of the parent's
#: other groups: without it the merge joined neighbouring groups of wide-area matrices (when it came in,
#: PlanetLab's 138 groups became 123, the median RTT within a group 1.17 -> 2.61 ms). docs/structure.md,
#: "A rack cut in two is merged", has the cases and figures
MERGE_LOOSER = 1.25
#: the merge's first condition (would their split pass inside one small group?) compares the pairs between
#: the two groups with those inside them at this quantile (the lower quartile), not at their medians: noise
#: and outliers only add delay, so the low end of the pairs estimates the path. With medians, one noisy host
#: (every pair of it 2-5x) or a few outliers among the pairs between the parts kept a rack cut in two apart
#: (a rack of 7 cut 4 + 3, one part holding a noisy host: 1.98x apart on medians, 1.22x on lower quartiles;
#: docs/structure.md, "A rack cut in two is merged")
MERGE_QUANTILE = 0.25
#: in a lump of small racks cut again (:func:`split_loose_groups`), a host whose every measured latency
#: there is over the cut (its rack-mate pair unmeasured or spoilt) stays alone rather than join the
#: nearest part, a rack it is not in (False: every such host joins, as until 2026-11-29)
LONE_STAY = True
#: ... except a host whose latencies, lowered by its own overhead (:func:`excess_latency`: how much slower it
#: is than the other hosts to the same targets), are under the cut to its nearest host's part (their median)
#: and over it to every other part: a busy host adds its delay to every pair of its own
#: (benchmarks/probe_groups.py --simulate, busy seeds 40 and 41: every pair of 3 hosts 63-98 us, over a cut
#: of ~50 us, their rack-mates 23-29 us nearer than anyone else). Its first forms also attached hosts whose
#: rack-mate pair is unmeasured (the overhead taken as the nearest latency minus a rack's scale: seeds 28's
#: and 107's sim-9 in benchmarks/structure.py --large) and noisy hosts near one host of a part (the nearest
#: latency instead of the part's median: seeds 53's sim-9 and 117's sim-4); an overhead not under the host's
#: nearest latency is a host far from everyone (PlanetLab's h137, 37-38 ms from every host), not a busy one.
#: False: each stays alone
LONE_SHIFT = True
#: inside a group of fewer than SMALL_GROUP hosts found already, a split is taken only when both profile
#: distances (METRICS) find one significant (split_group; the pairs far apart of EFFECT_PAIRS_SMALL
#: excepted). One alone cut a rack of 6-7 hosts, a few of whose pairs noise inflated, in two: seed 113's
#: and 117's sim-4 ("log" only) and seed 52's sim-1 ("near" only) in benchmarks/structure.py --large, three
#: of its four baseline-margin misses. False: either metric suffices, as until 2026-11-29. What it
#: changed: docs/structure.md, "A small group is cut only when both distances agree"
SMALL_BOTH = True
#: three rules for a whole cluster of fewer than SMALL_GROUP hosts (a user trying plink on a few VMs), where
#: the tests above, made for datacentres of 60-344 hosts, missed racks that average linkage given K found
#: (benchmarks/structure_netns.py: netns probes of 2-4 racks of 2-4 hosts; docs/structure.md, "Small
#: clusters"). Each acts only there: on larger matrices they changed simulated cases (below), and every case
#: of benchmarks/structure.py, racks_of_two.py and the real sets is as before.
#:
#: the silhouette a shuffled copy scores when no cut of it is admissible (none has groups of MIN_GROUP with
#: the effect EFFECT_MIN): in the permutation null's median at the top of a small cluster. Most shuffles of
#: 6 hosts have no cut of 3 + 3 at all, and the median over the few that had one (0.49) vetoed two racks of 3
#: (silhouette 0.62, 2.1x apart). None: such shuffles left out, as until 2026-12-03 (and as for every larger
#: matrix: applied there, with 2-4 shuffles per split, it lowered seeds 6, 15, 18 and 21 of
#: benchmarks/structure.py --large, seed 21's sim-4 to 0.944)
NULL_NO_CUT = -1.0
#: two groups of a small cluster are merged (merge_split_groups) only when the pairs between them are under
#: this many times those inside (lower quartiles), not under EFFECT_MIN_SMALL: two racks of 3 were 1.55x
#: apart and merged; the racks cut in two that the merge is for were 1.07x and 1.22x. None: EFFECT_MIN_SMALL
MERGE_APART = 1.4
#: at the top of a small cluster a pair is tight when each host is PAIR_TIGHT times closer to its partner
#: than to every other host but its one nearest (when it has 4 others or more): a rack of 2 whose host had
#: one host of another rack 1.58x farther (one low measurement) was no pair, and the cut with it was refused
PAIR_SKIP = 1
#: a fourth rule for a whole small cluster, a test of its own when every test above refused its cuts
#: (:func:`small_cluster_cut`): the best silhouette of the four tries (METRICS x groups of MIN_GROUP or 2) is
#: compared with the best of the four on each of SMALL_NULLS shuffled copies, and taken when at most this share
#: of them (p-value, (1 + as good) / (1 + SMALL_NULLS)) is as good. One test for the four tries, so its false
#: splits of structureless matrices are about SMALL_ALPHA wherever the pairs' noise is exchangeable. The
#: effect bar of a small group (EFFECT_MIN_SMALL 1.6) guards against the best of many cuts of noise looking
#: far apart; a permutation test measures that selection directly, so only EFFECT_MIN is kept. With the
#: default udp probe the racks of 6-9 hosts were 1.3-1.6x apart (udp's ~10 us of software on every pair
#: dilutes the ratio) and plink found one group where average linkage found the racks (docs/structure.md,
#: "Small clusters")
SMALL_ALPHA = 0.01
#: shuffled copies of that test (it stops as soon as its p-value can no longer reach SMALL_ALPHA: at 0.01 of
#: 200, when two copies are as good, a few copies into most matrices without racks)
SMALL_NULLS = 200


@dataclass
class Hierarchy:
    """What :func:`infer_hierarchy` found.

    ``labels``: finest significant level (e.g. racks), ints ``0..k-1`` shape ``(N,)``;
    ``levels``: label arrays fine to coarse (``levels[0] is labels``; K = 1 gives
    ``[zeros]``); ``confidence``: per host in [0, 1] (its silhouette at the finest
    level, clipped at 0; 1 for every host when K = 1); ``scores``: what chose K
    (per split the candidate K and their silhouettes), JSON-serialisable.
    """

    labels: np.ndarray
    levels: list[np.ndarray]
    confidence: np.ndarray
    scores: dict = field(default_factory=dict)

    @property
    def n_groups(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 0

    def level_sizes(self) -> list[list[int]]:
        """Group sizes per level, fine to coarse."""
        return [np.bincount(lv).tolist() for lv in self.levels]


# --------------------------------------------------------------------------- input


def check_positive_int(value, what: str) -> None:
    """Raise :class:`~plink.errors.OptionError` ("``what`` must be a positive integer") unless
    ``value`` is an integer >= 1 (a bool is not)."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise OptionError(f"{what} must be a positive integer, got {value!r}")


#: what a zero between two hosts is read as, by the files' readers and the library alike
ZERO_IS_UNMEASURED = ("no two hosts are 0 apart: a 0 is below the measurement's resolution or an unmeasured pair "
                      "written as 0, as plink's file readers read it; give NaN for unmeasured pairs")


def _check_random_state(random_state) -> None:
    """OptionError unless ``random_state`` is None, an int >= 0 or a numpy Generator (what seeds the nulls)."""
    from plink.structure.embed import _check_random_state as check

    check(random_state)  # (its own errors)


def check_latency(latency, zeros: str = "unmeasured") -> np.ndarray:
    """A float copy of ``latency`` (N x N, finite or NaN, >= 0; the diagonal ignored), or PlinkError.
    ``zeros="unmeasured"``: an off-diagonal 0 is read as unmeasured, with a warning, as plink's file
    readers read it; ``"measured"``: a distance of 0 (plink's own matrices, built in code)."""
    if zeros not in ("unmeasured", "measured"):
        raise OptionError(f"zeros must be 'unmeasured' or 'measured', got {zeros!r}")
    try:
        kind = np.asarray(latency).dtype.kind
        d = None if kind == "c" else np.array(latency, dtype=float)
    except (TypeError, ValueError):  # (text, or rows of different lengths)
        raise InputError(f"latency must be an N x N numeric matrix, got {type(latency).__name__}") from None
    if d is None:  # (numpy would drop the imaginary parts with a warning)
        raise InputError("latency must be real numbers, got a complex matrix")
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] == 0:
        raise InputError(f"latency must be a square N x N matrix, got shape {d.shape}")
    n = d.shape[0]
    np.fill_diagonal(d, np.nan)
    if np.isinf(d).any():
        raise InputError("latency contains infinite values (use NaN for unmeasured pairs)")
    if (d < 0).any():
        i, j = np.argwhere(d < 0)[0]
        raise InputError(f"latency must be >= 0, got {d[i, j]:g} for hosts {i} and {j}")
    zero = d == 0  # (the diagonal is NaN)
    if zeros == "unmeasured" and zero.any():
        warnings.warn(f"read {int(zero.sum())} off-diagonal zero(s) as not measured: {ZERO_IS_UNMEASURED}",
                      UserWarning, stacklevel=3)
        d[zero] = np.nan
    if n >= 2:
        measured = np.isfinite(d) | np.isfinite(d.T)
        none = np.flatnonzero(~measured.any(axis=1))
        if none.size:
            raise InputError(f"host {none[0]} has no measured pair ({none.size} host(s) without any)")
    return d


def symmetrise_min(d: np.ndarray) -> np.ndarray:
    """``min(d_ij, d_ji)``, using the measured direction where only one is (NaN if neither). O(N^2)."""
    s = np.fmin(d, d.T)
    np.fill_diagonal(s, np.nan)
    return s


def _near(x: np.ndarray, m: int) -> np.ndarray:
    """Mean of the ``m`` smallest finite values of each row (NaN ignored). O(N^2)."""
    filled = np.where(np.isfinite(x), x, np.inf)
    m = max(1, min(m, x.shape[1] - 1))
    part = np.partition(filled, m - 1, axis=1)[:, :m]
    part = np.where(np.isfinite(part), part, np.nan)
    with warnings.catch_warnings():  # a row without a finite value: NaN, replaced below
        warnings.simplefilter("ignore", RuntimeWarning)
        out = np.nanmean(part, axis=1) if np.isfinite(part).any() else np.zeros(x.shape[0])
    return np.where(np.isfinite(out), out, np.nanmedian(out) if np.isfinite(out).any() else 0.0)


def n_near(n: int) -> int:
    """How many nearest neighbours estimate a host's overhead: 2 (N < 24), 3 above."""
    return 2 if n < 24 else 3


def remove_host_overheads(s: np.ndarray, m: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Subtract per-host overheads from a symmetric matrix: ``x_ij = s_ij - h_i - h_j``.

    ``h_i = near_i - median(near)`` where ``near_i`` is the mean of host ``i``'s
    ``m`` smallest entries: in ``s_ij = h_i + h_j + t_ij`` a host's nearest
    neighbours are at the smallest true distance, so its ``near`` differs from
    the others' by its own overhead (plus the mean of its neighbours', which
    averages out).  The result is floored at 5% of the median nearest-neighbour
    distance (a distance stays positive; the floor sits below the finest level,
    so two datacentres 100x apart keep their racks' distances: a floor at 5% of
    the median distance, the median then being between the datacentres, made
    every distance inside one datacentre equal).  Returns ``(x, h)``.  O(N^2).
    """
    n = s.shape[0]
    near = _near(s, n_near(n) if m is None else m)
    h = near - np.median(near) if n > 2 else np.zeros(n)
    x = s - h[:, None] - h[None, :]
    pos = np.where(np.isfinite(x) & (x > 0), x, np.nan)
    if np.isfinite(pos).any():
        scale = float(np.nanmedian(_near(pos, n_near(n) if m is None else m)))
    else:
        scale = 1.0
    floor = 0.05 * scale if scale > 0 else 1e-12
    x = np.where(np.isfinite(x), np.maximum(x, floor), np.nan)
    return x, h


def profile_distances(x: np.ndarray, labels: np.ndarray | None = None, metric: str = "log") -> np.ndarray:
    """Mean absolute difference of the log row profiles of every pair of hosts.

    ``metric="log"``: ``P_ij = mean_k |log x_ik - log x_jk|`` over all ``k``.
    ``metric="near"``: the same on closeness ``exp(-(log x_ik - log near_i) / tau)``
    (1 at the host's nearest level, ``exp(-3)`` at its median distance): far
    entries, the bulk of a row, are squashed together, so the few columns
    where two hosts' racks differ dominate; it separates many small racks
    (e.g. 24 racks in one row) that "log" dilutes, while "log" keeps the
    differences between far levels (rows).  The diagonal entry
    ``x_ii`` is taken as the host's nearest-neighbour level (a host sees itself
    like a rack-mate), a missing ``x_ik`` as the median of its row or, given
    ``labels`` of a first grouping, the median of the block ``(g_i, g_k)``.
    Scale-free (the log of a ratio).  O(N^3) time (scipy ``cdist``,
    cityblock), O(N^2) memory.
    """
    from scipy.spatial.distance import cdist

    n = x.shape[0]
    med = np.nanmedian(x)
    lg = np.log(x / med)
    near = np.log(_near(x, n_near(n)) / med)
    miss = ~np.isfinite(lg)
    np.fill_diagonal(miss, False)
    if miss.any():
        if labels is not None:
            k = labels.max() + 1
            block = np.full((k, k), np.nan)
            for a in range(k):
                ra = lg[labels == a]
                for b in range(k):
                    v = ra[:, labels == b]
                    v = v[np.isfinite(v)]
                    if v.size:
                        block[a, b] = np.median(v)
            fill = block[labels[:, None], labels[None, :]]
        else:
            fill = np.broadcast_to(np.nanmedian(lg, axis=1)[:, None], lg.shape)
        rowmed = np.broadcast_to(np.nanmedian(lg, axis=1)[:, None], lg.shape)
        fill = np.where(np.isfinite(fill), fill, rowmed)
        lg = np.where(miss, fill, lg)
    lg[np.arange(n), np.arange(n)] = near
    lg = np.where(np.isfinite(lg), lg, 0.0)
    if metric == "near":
        # closeness: 1 at the host's nearest level, ~exp(-3) at its typical (median) distance
        rel = lg - near[:, None]
        tau = max(float(np.median(np.median(rel, axis=1))) / 3.0, 1e-6)
        v = np.exp(-np.maximum(rel, 0.0) / tau)
        p = cdist(v, v, metric="cityblock") / n
    elif metric == "log":
        p = cdist(lg, lg, metric="cityblock") / n
    else:
        raise OptionError(f"unknown profile metric {metric!r} (one of {', '.join(METRICS)})")
    np.fill_diagonal(p, 0.0)
    return p


def denoise_profile(p: np.ndarray) -> np.ndarray:
    """Remove each host's own noise level from profile distances: ``P_ij - (a_i + a_j) / 2``.

    ``a_i`` is host ``i``'s nearest-neighbour profile distance minus the median
    of those: a host with noisy measurements is far from everyone by the same
    amount, which says nothing about where it sits.  Floored at 0.  O(N^2).
    """
    n = p.shape[0]
    q = p.copy()
    np.fill_diagonal(q, np.nan)
    a = _near(q, n_near(n))
    a = a - np.median(a)
    out = p - (a[:, None] + a[None, :]) / 2.0
    out = np.maximum(out, 0.0)
    np.fill_diagonal(out, 0.0)
    return out


# --------------------------------------------------------------------------- splitting


def _silhouette(p: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per-host silhouette [Rousseeuw 1987] on distances ``p``; 0 for singletons (as scikit-learn). O(N^2 + N k)."""
    n = len(labels)
    if labels.max() == 0 or labels.max() + 1 >= n:
        return np.zeros(n)
    m = _mean_to_groups(p, labels)
    own = np.bincount(labels)[labels] > 1
    a = m[np.arange(n), labels]
    m[np.arange(n), labels] = np.inf
    b = m.min(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        sil = (b - a) / np.maximum(a, b)
    return np.where(own & np.isfinite(sil), sil, 0.0)


def _relabel(labels: np.ndarray) -> np.ndarray:
    """Labels 0..k-1 numbered in order of first appearance."""
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inv.ravel()]


def _mean_to_groups(p: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``M[i, g]`` = mean distance from host i to the other members of group g. O(N^2 + N k)."""
    k = labels.max() + 1
    onehot = np.zeros((len(labels), k))
    onehot[np.arange(len(labels)), labels] = 1.0
    sums = p @ onehot
    counts = onehot.sum(axis=0)[None, :] - onehot  # exclude the host itself from its own group
    with np.errstate(invalid="ignore", divide="ignore"):
        m = sums / counts
    return np.where(counts > 0, m, np.inf)


def fold_small(p: np.ndarray, labels: np.ndarray, min_size: int = MIN_GROUP) -> np.ndarray:
    """Move members of groups smaller than ``min_size`` to the nearest (mean distance) larger group."""
    labels = labels.copy()
    sizes = np.bincount(labels)
    big = sizes >= min_size
    if big.all() or not big.any():
        return labels
    m = _mean_to_groups(p, labels)
    m[:, ~big] = np.inf
    small = ~big[labels]
    labels[small] = np.argmin(m[small], axis=1)
    return _relabel(labels)


def refine(p: np.ndarray, labels: np.ndarray, max_iter: int = 10, keep_k: bool = False) -> np.ndarray:
    """Move each host to the group it is closest to on average, until nothing moves.

    A batch "average-distance k-medians" step after the greedy linkage, which
    fixes hosts an early merge put in the wrong group.  With ``keep_k`` a
    step that would empty a group is not taken.  O(max_iter * N^2).
    """
    labels = labels.copy()
    for _ in range(max_iter):
        if labels.max() == 0:
            break
        new = np.argmin(_mean_to_groups(p, labels), axis=1)
        if np.array_equal(new, labels):
            break
        if keep_k and np.unique(new).size < labels.max() + 1:
            break
        labels = _relabel(new)
    return labels


def candidate_ks(heights: np.ndarray, n: int, min_group: int = MIN_GROUP) -> list[int]:
    """K = 2..SMALL_K and the K after the largest relative gaps in the merge heights (K <= n / min_group);
    with ``min_group`` 2, n // 2 too."""
    kmax = n // min_group
    ks = set(range(2, min(SMALL_K, kmax) + 1))
    if n > 2:
        h = np.maximum(heights, 1e-12)
        # cutting between merge m-1 and m (0-based, ascending) leaves n - m clusters
        ratio = h[1:] / h[:-1]
        cut_k = n - np.arange(1, n - 1)
        ok = (cut_k >= 2) & (cut_k <= kmax)
        idx = np.flatnonzero(ok)
        best = idx[np.argsort(-ratio[idx], kind="stable")[:N_GAP_CANDIDATES]]
        ks.update(int(cut_k[i]) for i in best)
    if min_group < MIN_GROUP:  # groups of 2: all racks of 2 (a row of 32 racks of 2 has no gap among the 12 largest)
        ks.add(n // 2)
    return sorted(k for k in ks if 2 <= k <= kmax)


def best_split(p: np.ndarray, *, n_groups: int | None = None, min_group: int = MIN_GROUP
               ) -> tuple[np.ndarray, dict]:
    """Split hosts with profile distances ``p`` (n x n) into groups; K from the data unless ``n_groups``.

    Returns ``(labels, scores)``; all zeros when no candidate's mean silhouette
    reaches :data:`SILHOUETTE_MIN`.  O(N^2 * candidates).
    """
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    n = p.shape[0]
    if n_groups is not None:
        if n_groups == 1:
            return np.zeros(n, dtype=int), {"k": 1, "fixed": True}
        z = linkage(squareform(p, checks=False), method="average")
        labels = _relabel(fcluster(z, n_groups, criterion="maxclust") - 1)
        if labels.max() + 1 == n_groups:
            labels = refine(p, labels, keep_k=True)
        return labels, {"k": int(labels.max() + 1), "fixed": True}
    s, lab, cands = _best_cut(p, min_group)
    scores = {"candidates": {str(k): v for k, v in cands.items()},
              "best_silhouette": round(float(s), 6) if np.isfinite(s) else None, "threshold": SILHOUETTE_MIN}
    if lab is None or s < SILHOUETTE_MIN:
        scores["k"] = 1
        return np.zeros(n, dtype=int), scores
    scores["k"] = int(lab.max() + 1)
    return lab, scores


def _best_cut(p: np.ndarray, min_group: int = MIN_GROUP, admissible=None) -> tuple[float, np.ndarray | None, dict]:
    """The candidate cut of the average-linkage tree with the best mean silhouette: ``(s, labels, {K: s})``.

    ``admissible``: if given, a function of a cut's labels; cuts for which it is false are not
    candidates (the permutation null counts only cuts whose effect the real split would need).

    Each candidate K's cut has its groups smaller than ``min_group`` folded into the nearest
    group, then is refined (:func:`refine`). With ``min_group < MIN_GROUP`` (groups of 2) the
    cut as the tree leaves it competes too, a host alone where the tree left it alone (the
    silhouette counts it as 0): with racks of 2, folding a host whose one rack-mate
    measurement was spoilt by noise into another pair broke that pair too (24 racks of 2:
    20 groups found instead of 24; ``benchmarks/racks_of_two.py``).
    """
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    n = p.shape[0]
    if n < 2 * min_group:
        return -np.inf, None, {}
    z = linkage(squareform(p, checks=False), method="average")
    cands: dict[int, float | None] = {}
    labs: dict[int, np.ndarray] = {}
    best = (-np.inf, None)
    seen: dict[bytes, float] = {}
    for k in candidate_ks(z[:, 2], n, min_group):
        cut = _relabel(fcluster(z, k, criterion="maxclust") - 1)
        lab = fold_small(p, refine(p, fold_small(p, cut, min_group)), min_group)
        # groups of 2: the cut as the tree leaves it too, a host without a rack-mate alone
        tried = [v for v in ([lab, cut] if min_group < MIN_GROUP else [lab])
                 if v.max() > 0 and (admissible is None or admissible(v))]
        if not tried:
            cands[k] = None  # every group folded away
            continue
        s, lab = max(((_cached_silhouette(p, v, seen), v) for v in tried), key=lambda t: t[0])
        cands[k] = round(s, 6)
        labs[k] = lab
        if s > best[0] + 1e-9:
            best = (s, lab)
    if best[1] is not None:  # the coarsest cut nearly as good as the best
        for k in sorted(labs):
            if cands[k] is not None and cands[k] >= best[0] - PARSIMONY:
                return cands[k], labs[k], cands
    return best[0], best[1], cands


def _cached_silhouette(p: np.ndarray, labels: np.ndarray, seen: dict[bytes, float]) -> float:
    """Mean silhouette of ``labels`` on ``p``, remembered in ``seen`` by the labels' bytes."""
    key = labels.tobytes()
    if key not in seen:
        seen[key] = float(np.mean(_silhouette(p, labels)))
    return seen[key]


def effect_size(x: np.ndarray, labels: np.ndarray) -> float:
    """Median of ``x`` over pairs in different groups / median over pairs in the same group. O(N^2)."""
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(len(labels), dtype=bool)
    w = x[same & off]
    b = x[~same]
    w, b = w[np.isfinite(w)], b[np.isfinite(b)]
    if not w.size or not b.size:
        return float("nan")
    return float(np.median(b) / max(np.median(w), 1e-300))


def permuted(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A structureless copy of symmetric ``x``: its off-diagonal pairs (NaN included) shuffled. O(N^2)."""
    n = x.shape[0]
    iu = np.triu_indices(n, 1)
    v = x[iu].copy()
    rng.shuffle(v)
    out = np.full_like(x, np.nan)
    out[iu] = v
    out.T[iu] = v
    return out


def split_group(x: np.ndarray, rng: np.random.Generator, n_null: int | None = None, pairs: str | bool = False,
                raw: np.ndarray | None = None, outside: float | None = None) -> tuple[np.ndarray, dict, np.ndarray]:
    """Split the hosts of prepared matrix ``x`` into groups if a significant split exists.

    Tries both profile distances (:data:`METRICS`); of the significant splits
    (:func:`_split_one`) the one whose silhouette beats its permutation null by
    the most wins; none at the top of a cluster of 6 to :data:`SMALL_GROUP` - 1 hosts: the
    calibrated test of :func:`small_cluster_cut` (its verdict in ``scores["small_cluster"]``).
    With ``pairs="small"`` (a group of fewer than :data:`SMALL_GROUP`
    hosts found already) both must find a significant split (:data:`SMALL_BOTH`; a cut
    into pairs far apart excepted).  ``pairs``: whether groups of 2 are tried too, ``"top"`` (or True)
    for the top level, ``"inner"`` inside a group found already (see :func:`_split_one`).
    Returns ``(labels, scores, p)`` with ``p`` the distances of the chosen metric.
    O(n_null * n^3).
    """
    tried = []
    for metric in METRICS:
        p = _distances(x, metric=metric)
        lab, sc = _split_one(x, p, metric, rng, n_null, pairs, raw=raw, outside=outside)
        sc["metric"] = metric
        tried.append((lab, sc, p))
    ok = [t for t in tried if t[0].max() > 0]
    one_only = (SMALL_BOTH and pairs == "small" and 0 < len(ok) < len(tried)
                and not any("pairs" in t[1] for t in ok))
    small = None  # a whole small cluster none of whose cuts the tests above take: a test of its own
    if not ok and pairs in ("top", True) and 2 * MIN_GROUP <= x.shape[0] < SMALL_GROUP:
        small = small_cluster_cut(x, rng, raw=raw)
        if small is not None and small[0].max() > 0:
            lab, sc, p = small
            return lab, {**sc, "metrics": {t[1]["metric"]: t[1] for t in tried}}, p
    if not ok or one_only:
        p = tried[-1][2]
        out = {"k": 1, "metrics": {t[1]["metric"]: t[1] for t in tried}}
        if small is not None:
            out["small_cluster"] = small[1]["small_cluster"]
        if one_only:
            out["reason"] = (f"inside a small group only {ok[0][1]['metric']!r} found a split; "
                             "both profile distances must")
        return np.zeros(x.shape[0], dtype=int), out, p
    lab, sc, p = max(ok, key=lambda t: t[1]["best_silhouette"] - t[1]["null_silhouette"])
    return lab, {"k": int(lab.max() + 1), "metric": sc["metric"], "metrics": {t[1]["metric"]: t[1] for t in tried}}, p


def _child_rng(rng: np.random.Generator) -> np.random.Generator:
    """A generator seeded from a child of ``rng``'s seed sequence (``rng``'s own draws untouched)."""
    seq = getattr(rng.bit_generator, "seed_seq", None)
    return np.random.default_rng(seq.spawn(1)[0] if seq is not None else 0)


def _four_tries(x: np.ndarray, reimpute: bool = True):
    """Each try's best cut of ``x`` (:func:`_best_cut`), ``(silhouette, labels, distances, metric)``, for
    both profile distances of :data:`METRICS` and smallest groups of :data:`MIN_GROUP` or 2; a
    generator (a metric's distances computed once, for both sizes, and only when reached)."""
    for metric in METRICS:
        p = _distances(x, reimpute=reimpute, metric=metric)
        for mg in (MIN_GROUP, 2):
            s, lab, _ = _best_cut(p, mg)
            yield s, lab, p, metric


def small_cluster_cut(x: np.ndarray, rng: np.random.Generator, alpha: float | None = None,
                      n_null: int | None = None, raw: np.ndarray | None = None
                      ) -> tuple[np.ndarray, dict, np.ndarray] | None:
    """The best cut of a whole small cluster (prepared matrix ``x``, 6 to :data:`SMALL_GROUP` - 1
    hosts) if a permutation test finds it significant.

    The four tries (both profile distances of :data:`METRICS`, smallest groups of
    :data:`MIN_GROUP` or 2, :func:`_best_cut`) each give their best cut; the one with the
    highest mean silhouette ``s`` is taken when ``s`` is at least :data:`SILHOUETTE_MIN`, its
    effect at least :data:`EFFECT_MIN` (:func:`effect_size`), and its p-value is at most
    ``alpha``: ``(1 + as good) / (1 + n_null)``, "as good" counting the ``n_null`` copies with
    the pairs shuffled (:func:`permuted`) whose best cut, of the same four tries, has a
    silhouette of ``s`` or more (at 0.01 of 200: one copy as good at most).  ``raw``: the
    symmetric latencies ``x`` was made from (:func:`remove_host_overheads`); the copies shuffle
    them and have their overheads removed the same way (removing overheads leaves the pairs of a
    row dependent, and shuffling ``x`` itself split 5% of matrices of independent noise); None:
    ``x`` is shuffled.  The p-value follows Phipson & Smyth 2010 ("Permutation p-values should
    never be zero"); one test for the four tries (the max statistic).  ``alpha``, ``n_null``: None for :data:`SMALL_ALPHA`,
    :data:`SMALL_NULLS`.  The copies stop as soon as too many are as good, so a matrix without
    racks costs a few of them.  Draws from a child of ``rng``'s seed.  Returns ``(labels,
    scores, distances of the chosen metric)``, the labels all 0 when the test refuses the cut
    (``scores["small_cluster"]`` says why, for the user), or None when there is nothing to test:
    fewer than 6 hosts, no cut with the silhouette and effect, or ``n_null`` too few copies for
    a p-value of ``alpha`` (``(1 + 0) / (1 + n_null) > alpha``).  O(n_null N^3) at most.
    """
    alpha = SMALL_ALPHA if alpha is None else alpha
    n_null = SMALL_NULLS if n_null is None else n_null
    n = x.shape[0]
    if n < 2 * MIN_GROUP:  # 4 or 5 hosts: 6-10 pairs, too few to shuffle (TINY_GAP decides there)
        return None
    tries = [(float(s), lab, p, metric) for s, lab, p, metric in _four_tries(x)
             if lab is not None and np.isfinite(s)]
    if not tries:
        return None
    s, lab, p, metric = max(tries, key=lambda t: t[0])  # (of equal: "log" first, groups of MIN_GROUP first)
    effect = effect_size(x, lab)
    allowed = int(np.floor(alpha * (n_null + 1) + 1e-9)) - 1  # copies as good as s that still give p <= alpha
    if s < SILHOUETTE_MIN or not effect >= EFFECT_MIN or allowed < 0:
        return None
    sub = _child_rng(rng)
    as_good = drawn = 0
    k = int(lab.max() + 1)
    cut = " + ".join(map(str, sorted(np.bincount(lab).tolist(), reverse=True)))
    scores = {"k": k, "metric": metric, "best_silhouette": round(s, 6), "effect": round(float(effect), 6)}
    for _ in range(n_null):
        xp = permuted(x, sub) if raw is None else remove_host_overheads(permuted(raw, sub))[0]
        drawn += 1
        if any(t[0] >= s - 1e-12 for t in _four_tries(xp, reimpute=False)):
            as_good += 1
            if as_good > allowed:
                scores.update(k=1, small_cluster=(
                    f"its best cut ({k} groups: {cut}, silhouette {s:.2f}, {effect:.2f}x apart) is matched by "
                    f"{as_good} of the first {drawn} copies with the pairs shuffled (p > {alpha:g}): {n} hosts are "
                    f"too few to tell these groups from noise; if you know there are {k} racks, --groups {k} "
                    "asks for them"))
                return np.zeros(n, dtype=int), scores, p
    pval = (1 + as_good) / (1 + n_null)
    scores["small_cluster"] = (f"{k} groups ({cut}, silhouette {s:.2f}, {effect:.2f}x apart): {as_good} of {n_null} "
                               f"copies with the pairs shuffled as good (p = {pval:.3f} <= {alpha:g}; SMALL_ALPHA)")
    return lab, scores, p


def _split_one(x: np.ndarray, p: np.ndarray, metric: str, rng: np.random.Generator, n_null: int | None = None,
               pairs: str | bool = False, raw: np.ndarray | None = None, outside: float | None = None
               ) -> tuple[np.ndarray, dict]:
    """The best cut (:func:`_best_cut`) of distances ``p`` if it is significant, else all zeros.

    Significant: its mean silhouette is at least :data:`SILHOUETTE_MIN`, exceeds
    by :data:`NULL_MARGIN` the best silhouette found the same way on ``n_null``
    copies of ``x`` with its pairs shuffled (same values, no structure; of their cuts
    only those :data:`EFFECT_MIN` apart), and the
    pairs it separates are :data:`EFFECT_MIN` times farther than those it keeps
    together (:func:`effect_size`).  With ``pairs`` (a split of 6-127 hosts) the cut
    allowing groups of 2 is tried too, and wins when it is significant and has the better
    silhouette; its pairs are significant when the silhouette beats its null and at least
    2/3 of the cut's pairs are tight (and 2 or more inside a group, ``pairs="inner"``: a lone
    tight pair there was noise in a rack of 5), or when more hosts sit in tight pairs than
    in every one of :data:`PAIR_NULLS` shuffled copies (:func:`tight_pair_hosts`). A cut whose
    pairs are all tight (2 or more) needs the effect of larger splits (:data:`EFFECT_MIN`) in a
    split under :data:`SMALL_GROUP` hosts too: the tightness is a stronger test, per pair.
    ``pairs="small"`` (a group of 4 to SMALL_GROUP - 1 hosts found already): the cut with groups
    of 2 wins when it has the better silhouette (at least :data:`SILHOUETTE_MIN`), every one of its
    2-host groups is a tight pair and its effect is :data:`EFFECT_PAIRS_SMALL`, both on ``raw``
    (the latencies before the overheads were removed) when given, and its parts are at least
    :data:`PAIRS_SMALL_APART` times ``outside`` apart (median; ``outside``: the median distance from
    the group's hosts to the rest of the group it was split from); no permutation null (a few
    hosts have too few pairs to shuffle).
    """
    n = x.shape[0]
    lab, scores = _significant_cut(x, p, metric, rng, n_null, MIN_GROUP, top=pairs in ("top", True))
    if pairs == "small" and n >= 2 * 2:
        # a small group found already: a pair split off only when it is far apart (EFFECT_PAIRS_SMALL)
        # (no host left alone: a lone host here is one whose rack-mates' measurements noise spoilt)
        s2, lab2, _ = _best_cut(p, 2, admissible=lambda v: np.bincount(v).min() >= 2)
        if (lab2 is not None and s2 >= SILHOUETTE_MIN and (np.bincount(lab2) == 2).any()
                and (lab.max() == 0 or s2 > scores["best_silhouette"])):
            # tightness and effect on the latencies as measured (raw): removing the overheads read two
            # hosts of a rack of 5 with high overheads as 5.8 us apart against 20 to their rack-mates
            # (31.5 against 35-37 measured), 4.2x
            r = x if raw is None else raw
            n_pairs, n_tight = _pair_counts(r, lab2)
            effect = effect_size(r, lab2)
            same = lab2[:, None] == lab2[None, :]
            apart = r[~same]
            apart = float(np.median(apart[np.isfinite(apart)])) if np.isfinite(apart).any() else 0.0
            far = outside is None or apart >= PAIRS_SMALL_APART * outside
            if n_tight == n_pairs and effect >= EFFECT_PAIRS_SMALL and far:
                return lab2, {"k": int(lab2.max() + 1), "best_silhouette": round(float(s2), 6),
                              "null_silhouette": 0.0, "effect": round(float(effect), 6),
                              "pairs_tight": f"{n_tight}/{n_pairs}",
                              "pairs": f"groups of 2 kept: every pair tight, {effect:.1f}x apart "
                                       f"(>= {EFFECT_PAIRS_SMALL:g}x in a group of {n})"}
        return lab, scores
    if pairs and 2 * MIN_GROUP <= n < PAIRS_MAX:
        lab2, scores2 = _significant_cut(x, p, metric, rng, n_null, 2, inner=pairs == "inner", top=pairs in ("top", True))
        sizes = np.bincount(lab2)
        if lab2.max() > 0 and (sizes == 2).any() and (
                lab.max() == 0 or scores2["best_silhouette"] > scores["best_silhouette"]):
            scores2["pairs"] = f"groups of 2 kept: {scores2['pairs_tight']} pairs >= {PAIR_TIGHT}x closer than to anyone else"
            return lab2, scores2
    return lab, scores


def _tight_partners(x: np.ndarray, skip: int = 0) -> np.ndarray:
    """Each host's partner in a *tight pair* of symmetric ``x``, -1 for none: two hosts each other's
    nearest neighbour, :data:`PAIR_TIGHT` times closer to each other than either is to any other
    host (missing pairs ignored; a pair never measured, or with nothing else measured from either
    host, is not tight); ``skip``: than to any other host but its ``skip`` nearest others, when it
    has 4 others or more (:data:`PAIR_SKIP`). O(N^2)."""
    n = x.shape[0]
    if n < 3:
        return np.full(n, -1)
    f = np.where(np.isfinite(x), x, np.inf)
    np.fill_diagonal(f, np.inf)
    skip = skip if n >= 6 else 0
    two = np.partition(f, 1 + skip, axis=1)[:, [0, 1 + skip]]
    nn = np.argmin(f, axis=1)
    own = np.isfinite(two[:, 0]) & (two[:, 0] * PAIR_TIGHT <= two[:, 1])
    ok = own & own[nn] & (nn[nn] == np.arange(n)) & (np.isfinite(two[:, 1]) | np.isfinite(two[nn, 1]))
    return np.where(ok, nn, -1)


def tight_pair_hosts(x: np.ndarray, skip: int = 0) -> int:
    """How many hosts of symmetric ``x`` sit in a tight pair (:func:`_tight_partners`). O(N^2)."""
    return int(np.sum(_tight_partners(x, skip) >= 0))


def _pair_counts(x: np.ndarray, labels: np.ndarray, skip: int = 0) -> tuple[int, int]:
    """``(2-host groups of labels, those that are a tight pair of x)`` (:func:`_tight_partners`). O(N^2)."""
    pairs = np.flatnonzero(np.bincount(labels) == 2)
    partner = _tight_partners(x, skip)
    tight = 0
    for g in pairs:
        a, b = np.flatnonzero(labels == g)
        tight += bool(partner[a] == b)
    return len(pairs), tight


def _pairs_beat_null(x: np.ndarray, rng: np.random.Generator, n_null: int = PAIR_NULLS, skip: int = 0
                     ) -> tuple[int, int]:
    """``(tight pair hosts in x, the most in n_null shuffled copies of x)``: 24 racks of 2 put all 48
    hosts in tight pairs; shuffled, the same values leave a few (a host needs exactly one small value,
    and so does its partner). Draws from a child of ``rng``'s seed, not from ``rng``. O(n_null N^2)."""
    c = tight_pair_hosts(x, skip)
    sub = _child_rng(rng)
    return c, max((tight_pair_hosts(permuted(x, sub), skip) for _ in range(n_null)), default=0)


def _significant_cut(x, p, metric, rng, n_null, min_group, inner=False, top=False):
    """:func:`_split_one` for one smallest group size (``inner``: groups of 2 inside a group)."""
    n = x.shape[0]
    if n < 2 * min_group:
        return np.zeros(n, dtype=int), {"k": 1, "reason": f"{n} hosts: too few to split",
                                        "best_silhouette": None, "null_silhouette": None}
    tiny = top and n < SMALL_GROUP  # the whole of a small cluster (NULL_NO_CUT, PAIR_SKIP)
    skip = PAIR_SKIP if tiny else 0
    s, lab, cands = _best_cut(p, min_group)
    if n_null is None:
        n_null = 10 if n <= 32 else (4 if n <= 128 else 2)
    need = EFFECT_MIN if n >= SMALL_GROUP else EFFECT_MIN_SMALL
    # the null counts only cuts the split could accept (EFFECT_MIN, the least any split needs): on
    # shuffled copies the "near" profiles of the hosts with the flattest rows cluster (K = 2,
    # silhouette 0.09-0.57 over copies of one matrix, effect 1.00), which no split would take,
    # and which vetoed 24 racks of 5-9 (silhouette 0.55, effect 2.4) in benchmarks/structure.py
    # --large seeds 6-8
    null = []
    if lab is not None and s >= SILHOUETTE_MIN:
        for _ in range(n_null):
            xp = permuted(x, rng)
            null.append(_best_cut(_distances(xp, reimpute=False, metric=metric), min_group,
                                  admissible=lambda v, xp=xp: effect_size(xp, v) >= EFFECT_MIN)[0])
    if tiny and NULL_NO_CUT is not None:
        null = [v if np.isfinite(v) else NULL_NO_CUT for v in null]
    finite = [v for v in null if np.isfinite(v)]
    null_s = float(np.median(finite)) if finite else 0.0  # median: one lucky shuffle must not veto a split
    scores = {"candidates": {str(k): v for k, v in cands.items()},
              "best_silhouette": round(float(s), 6) if np.isfinite(s) else None,
              "null_silhouette": round(float(null_s), 6), "threshold": SILHOUETTE_MIN, "null_margin": NULL_MARGIN}
    effect = effect_size(x, lab) if lab is not None else float("nan")
    scores["effect"] = round(float(effect), 6) if np.isfinite(effect) else None
    beats_null = s >= null_s + NULL_MARGIN
    if min_group < MIN_GROUP and lab is not None and s >= SILHOUETTE_MIN:
        # groups of 2: either 2/3 of the pairs are tight (2+ inside a group; one true pair spoilt by
        # noise must not sink the cut) and the silhouette beats its null, or the pairs
        # themselves beat theirs: more hosts in tight pairs than in every shuffled copy, and more in
        # the cut's own tight pairs too (shuffled, the same values make mutual nearest neighbours
        # whose silhouette is high too: 0.64 against 0.71 for 24 true racks of 2; and with per-host
        # noise many true pairs are not 1.6x closer once the hosts' overheads are removed)
        n_pairs, n_tight = _pair_counts(x, lab, skip)
        scores["pairs_tight"] = f"{n_tight}/{n_pairs}"
        beats_null = beats_null and n_tight >= max(2 if inner else 1, -(-2 * n_pairs // 3))
        if beats_null and n_tight == n_pairs >= 2:
            # every pair tight (each 1.6x closer than to anyone else, a test per pair): the split's
            # overall ratio need not be 1.6x too (racks of 2 on the netns cluster: 1.39x once the
            # overheads are removed, which read a host's one rack-mate as a low overhead; 1.92x raw)
            need = EFFECT_MIN
        if not beats_null and n_tight:
            c, c_null = _pairs_beat_null(x, rng, skip=skip)
            scores["tight_pair_hosts"], scores["null_tight_pair_hosts"] = c, c_null
            beats_null = c > c_null and 2 * n_tight > c_null
    if lab is None or s < SILHOUETTE_MIN or not beats_null or not effect >= need:
        scores["k"] = 1
        return np.zeros(n, dtype=int), scores
    scores["k"] = int(lab.max() + 1)
    return lab, scores


# --------------------------------------------------------------------------- the whole pipeline


def _distances(x: np.ndarray, reimpute: bool = True, metric: str = "near") -> np.ndarray:
    """Denoised profile distances of the hosts of ``x`` (profiles over these hosts only)."""
    p = profile_distances(x, metric=metric)
    if reimpute and np.isnan(x).sum() > x.shape[0]:  # missing pairs: impute again from a first grouping
        first, _ = best_split(denoise_profile(p))  # (unvalidated first grouping, only to impute)
        if first.max() > 0:
            p = profile_distances(x, first, metric=metric)
    return denoise_profile(p)


def _levels_from_tree(paths: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Label arrays fine to coarse from each host's path of split indices (root first)."""
    depth = max(len(t) for t in paths)
    levels = []
    for lev in range(depth, 0, -1):
        keys = [t[:lev] for t in paths]
        _, inv = np.unique(np.array([",".join(map(str, k)) for k in keys]), return_inverse=True)
        levels.append(_relabel(inv.ravel()))
    out: list[np.ndarray] = []
    for lv in levels:  # keep a coarser level only if it at least halves the number of groups
        if not out or 2 * (lv.max() + 1) <= out[-1].max() + 1:
            out.append(lv)
    if out and out[-1].max() == 0 and len(out) > 1:
        out.pop()
    return out or [np.zeros(len(paths), dtype=int)]


def hierarchy_from_matrix(x: np.ndarray, *, max_levels: int = 3, n_groups: int | None = None,
                          p: np.ndarray | None = None, random_state=None, raw: np.ndarray | None = None) -> Hierarchy:
    """:func:`infer_hierarchy` on a prepared matrix ``x`` (symmetric, overheads removed, NaN = missing).

    Each group found is split again on profile distances over its own members
    only (racks of a row differ only in the columns of that row; the other
    rows would add noise).  A host's confidence is its silhouette in the split
    that made its finest group.  ``p``: the top-level distances if already
    computed.  ``raw``: the symmetric matrix before the overheads were removed (pairs split off a small
    group are judged on it, see :data:`EFFECT_PAIRS_SMALL`; None: on ``x``).
    """
    n = x.shape[0]
    if n_groups is not None:
        if p is None:
            p = _distances(x)
        lab, sc = best_split(p, n_groups=n_groups)
        conf = np.clip(_silhouette(p, lab), 0.0, 1.0) if lab.max() > 0 else np.ones(n)
        levels = [lab]
        if lab.max() > 1 and max_levels > 1:  # coarser levels above the fixed K: split the group means
            levels += _coarser(p, lab, max_levels - 1, lat=x)
        return Hierarchy(lab, levels, conf, {"k": int(lab.max() + 1), "fixed": True, "levels": len(levels)})
    rng = np.random.default_rng(random_state if random_state is not None else 0)
    paths: list[tuple[int, ...]] = [() for _ in range(n)]
    conf = np.ones(n)
    splits = []
    stack = [(np.arange(n), (), None, None)]
    mids = []  # (hosts, path, their split's labels, a level between) of splits of a group into 6+
    while stack:
        idx, path, sub_p, parent = stack.pop()
        if len(path) >= max_levels or len(idx) < 4:
            continue
        # groups of 2: at the top, and inside a group of SMALL_GROUP hosts or more (a row of racks of 2);
        # in a smaller group found already (a rack of 6) a tight-looking pair is mostly noise, so there
        # only pairs far apart ("small", see _split_one)
        pairs = "top" if not path else ("inner" if len(idx) >= SMALL_GROUP else "small")
        outside = None  # how far this group's hosts are from the rest of its parent (measured latencies)
        if pairs == "small" and parent is not None:
            rest = np.setdiff1d(parent, idx)
            r = (x if raw is None else raw)[np.ix_(idx, rest)]
            r = r[np.isfinite(r)]
            outside = float(np.median(r)) if r.size else None
        lab, sc, sub_p = split_group(x[np.ix_(idx, idx)], rng, pairs=pairs,
                                     raw=None if raw is None else raw[np.ix_(idx, idx)], outside=outside)
        splits.append({"path": list(path), "hosts": int(len(idx)), **sc})
        if lab.max() == 0:
            continue
        conf[idx] = np.clip(_silhouette(sub_p, lab), 0.0, 1.0)
        # a level between this group and its parts (the rows of a datacentre), kept below only if the
        # parts are not split again: it must not take the depth their own split would use
        if path and lab.max() + 1 >= 2 * MIN_GROUP and len(path) + 2 <= max_levels:
            xs = x[np.ix_(idx, idx)]  # (the split's own distances when it chose the "log" metric)
            logp = sub_p if sc.get("metric") == "log" else _distances(xs, metric="log")
            found = [lv for lv in _coarser(logp, lab, 1, lat=xs)
                     if 2 * (lv.max() + 1) <= lab.max() + 1]
            if found:
                mids.append((idx, path, lab, found[0]))
        for g in range(lab.max() + 1):
            sub = idx[lab == g]
            for i in sub:
                paths[i] = path + (g,)
            stack.append((sub, path + (g,), None, idx))
    for idx, path, lab, mid in mids:
        if all(len(paths[i]) == len(path) + 1 for i in idx):  # its parts were not split again
            for i, m, g in zip(idx, mid, lab):  # (mid: one label per host, like lab)
                paths[i] = path + (int(m), int(g))
    levels = _levels_from_tree(paths)
    if len(levels) < max_levels and levels[-1].max() + 1 >= 2 * MIN_GROUP:
        # the first split was already the finest: look for rows above it among the groups' mean distances
        levels += [lv for lv in _coarser(_distances(x, metric="log"), levels[-1], max_levels - len(levels), lat=x)
                   if 2 * (lv.max() + 1) <= levels[-1].max() + 1]
    labels = levels[0]
    moved = joined = np.zeros(0, dtype=int)
    merges: list = []
    loose: list = []
    if labels.max() > 0:
        parent = levels[1] if len(levels) > 1 else None
        measured = x if raw is None else raw
        cut, loose = split_loose_groups(measured, labels, parent)
        merged, merges = merge_split_groups(measured, cut, parent, looser=MERGE_LOOSER, quantile=MERGE_QUANTILE,
                                            apart=MERGE_APART if n < SMALL_GROUP else None)  # (a small cluster)
        merged, joined = join_lone_hosts(measured, merged, parent)
        polished, moved = move_to_nearest(measured, merged, parent, margin=NEAREST_MOVE)
        if moved.size:  # a group a host moved into can be as loose as the rest of its parent now: cut again
            polished, loose_after = split_loose_groups(measured, polished, parent)
            loose = loose + loose_after
        changed = np.r_[moved, joined, [i for m in merges for part in m for i in part],
                        [i for hosts, _ in loose for i in hosts]].astype(int)
        if changed.size:  # a changed host's (and its group-mates') confidence: the silhouette in its parent
            levels[0] = labels = _relabel(polished)
            par = np.zeros(n, dtype=int) if parent is None else parent
            for q in np.unique(par[changed]):
                idx = np.flatnonzero(par == q)
                sub = _relabel(labels[idx])
                if sub.max() > 0:
                    conf[idx] = np.clip(_silhouette(_distances(x[np.ix_(idx, idx)]), sub), 0.0, 1.0)
    if labels.max() == 0:
        conf = np.ones(n)
    scores = {"k": int(labels.max() + 1), "levels": len(levels), "splits": splits, "threshold": SILHOUETTE_MIN,
              "split_loose": loose, "merged": merges, "joined_lone": [int(i) for i in joined],
              "moved_to_nearest": [int(i) for i in moved]}
    return Hierarchy(labels, levels, conf, scores)


def move_to_nearest(raw: np.ndarray, labels: np.ndarray, parent: np.ndarray | None = None,
                    margin: float = NEAREST_MOVE) -> tuple[np.ndarray, np.ndarray]:
    """Move hosts whose nearest member of another group is ``margin`` times closer than their nearest group-mate.

    ``raw``: symmetric latencies (NaN = missing); ``labels``: the finest groups;
    ``parent``: the next level up (None: one parent), moves stay inside it so
    coarser levels keep holding.  Noise and other tenants only *add* delay, so
    the smallest latency from a host to a group is the best estimate of how far
    the group is; profile distances, which average over every host, hardly see
    the 1-3 columns in which racks of 2-4 hosts of one row differ, and put a host
    whose rack-mate pairs noise inflated in a neighbouring rack.

    One pass, every move judged on ``labels`` as given, the largest ratio first, and
    moves never chain: a host stays when the host that draws it (its nearest in the
    other group) would move too, or when a host has been drawn to it (moving hosts in
    turn until nothing moved sent hosts of an inter-region matrix after one another
    into groups none of whose members was near them).  A host may leave a group of 2
    unless its group-mate would move too or draws a host; the host it leaves alone then
    joins the group of its own nearest host, following the chain when that host was left alone
    too (:func:`_attach_lone`; two such hosts each other's nearest form a group of 2).
    Why, and what each rule changed: docs/structure.md, "A host nearer another rack
    moves there".  A host without a measured group-mate stays.  Returns
    ``(labels, moved)``, the labels renumbered when a group emptied.  O(N^2).
    """
    lab = labels.copy()
    n = len(lab)
    k = int(lab.max()) + 1 if n else 0
    par = np.zeros(n, dtype=int) if parent is None else parent
    sizes = np.bincount(lab, minlength=k)
    wants = []  # (ratio, host, group, the member of that group nearest the host)
    for i in range(n):
        own = lab[i]
        if sizes[own] < 2:
            continue
        ok = np.isfinite(raw[i]) & (par == par[i])
        ok[i] = False
        near = np.full(k, np.inf)  # the smallest latency from host i to each group of its parent
        np.minimum.at(near, lab[ok], raw[i, ok])
        cur, arg = near[own], int(np.argmin(near))
        if arg != own and np.isfinite(cur) and near[arg] * margin < cur:
            mem = np.flatnonzero(ok & (lab == arg))
            ratio = cur / near[arg] if near[arg] > 0 else np.inf  # (a distance of 0 in a probe built in code)
            wants.append((ratio, i, arg, int(mem[np.argmin(raw[i, mem])])))
    movers = {i for _, i, _, _ in wants}
    drew: set[int] = set()  # hosts a moved host was drawn to
    moved = []
    left = []  # hosts a moved host left alone in a group of 2
    for _, i, g, j in sorted(wants, key=lambda w: (-w[0], w[1])):
        if j in movers or i in drew or sizes[lab[i]] < 2:
            continue
        if sizes[lab[i]] == 2:  # out of a group of 2 only when its mate neither moves nor draws a host
            mate = int(next(h for h in np.flatnonzero(lab == lab[i]) if h != i))
            if mate in movers or mate in drew:
                continue
            left.append(mate)
        sizes[lab[i]] -= 1
        sizes[g] += 1
        lab[i] = g
        drew.add(j)
        moved.append(i)
    alone = [h for h in left if (lab == lab[h]).sum() == 1]  # (a host drawn to it since: not alone)
    if alone:  # each to the group of its nearest host in its parent, following chains (_attach_lone)
        lab = _attach_lone(np.where(par[:, None] == par[None, :], raw, np.nan), lab, only=alone)
        moved += alone
    elif (np.bincount(lab, minlength=k) == 0).any():  # a group of 2 emptied: labels 0..k'-1 again
        lab = _relabel(lab)
    return lab, np.array(sorted(moved), dtype=int)


def join_lone_hosts(raw: np.ndarray, labels: np.ndarray, parent: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Put a host alone in its group into the group of its nearest host when that host is at a rack's distance.

    ``raw``: symmetric latencies (NaN = missing); ``labels``: the finest groups; ``parent``:
    the next level up (None: one parent).  Host ``i`` alone in its group, its nearest host
    ``j`` of its parent at ``d`` (the smallest latency: noise only adds delay): ``i`` joins
    ``j``'s group when ``d < sqrt(r * o)``, nearer the parent's groups' scale ``r`` (the median
    of their median pairs) than the distance ``o`` from ``i`` to the rest of its parent (the
    median of its latencies there), on a log scale.  A host far from every other (a noisy
    one, or a region alone) stays alone.  Every lone host is judged on ``labels`` as given
    (one joins a group of 2 hosts or more, never another lone host).  Run after the merge,
    before :func:`move_to_nearest`.  A host whose only rack-mate pair is unmeasured joins
    the nearest rack when it passes that test, which the data cannot tell from its own.  The
    cases behind the rule:
    docs/structure.md, "A host left alone joins its nearest host".  Returns
    ``(labels, joined)``.  O(N^2).
    """
    lab = labels.copy()
    n = len(lab)
    par = np.zeros(n, dtype=int) if parent is None else np.asarray(parent)
    sizes = np.bincount(lab)
    lone = [int(i) for i in np.flatnonzero(sizes[lab] == 1)]
    if not lone:
        return lab, np.zeros(0, dtype=int)
    # each group's median pair (NaN for a group of 1: no pair)
    u = np.array([_finite_median(_inside_pairs(raw, np.flatnonzero(lab == g))) for g in range(len(sizes))])
    nearest = {}  # lone host -> the host whose group it joins
    for i in lone:
        ok = np.isfinite(raw[i]) & (par == par[i])
        ok[i] = False
        r = u[np.unique(lab[par == par[i]])]
        r = r[np.isfinite(r)]
        if not ok.any() or not r.size:
            continue
        j = int(np.flatnonzero(ok)[np.argmin(raw[i, ok])])
        if sizes[lab[j]] >= 2 and raw[i, j] < np.sqrt(float(np.median(r)) * _finite_median(raw[i, ok])):
            nearest[i] = j
    for i, j in nearest.items():  # (judged on the groups as given: a lone host joins a group of 2 or more)
        lab[i] = lab[j]
    return (_relabel(lab) if nearest else lab), np.array(list(nearest), dtype=int)


def _finite_median(v: np.ndarray) -> float:
    """Median of the finite values of ``v`` (NaN if none)."""
    return _finite_quantile(v, 0.5)


def _finite_quantile(v: np.ndarray, q: float) -> float:
    """The ``q`` quantile of the finite values of ``v`` (NaN if none)."""
    v = v[np.isfinite(v)]
    return float(np.quantile(v, q)) if v.size else float("nan")


def _inside_pairs(raw: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The finite latencies of ``raw`` between two hosts of ``idx`` (each pair once)."""
    v = raw[np.ix_(idx, idx)][np.triu_indices(len(idx), 1)]
    return v[np.isfinite(v)]


def _median_linkage(d: np.ndarray, below: float) -> np.ndarray:
    """Agglomerate the hosts of symmetric ``d`` (NaN = missing) while the two nearest clusters are
    closer than ``below``, the distance of two clusters being the median of the finite pairs between
    them (robust to the few inflated pairs that sway an average; scipy's ``method="median"`` is WPGMC,
    a centroid method, not this).  Returns labels.  O(n^2) medians, O(n^3) bookkeeping."""
    n = d.shape[0]
    clusters = {i: [i] for i in range(n)}
    between: dict[tuple[int, int], float] = {}

    def dist(a, b):  # no measured pair: never joined
        m = _finite_median(d[np.ix_(clusters[a], clusters[b])].ravel())
        return m if np.isfinite(m) else np.inf

    for a in range(n):
        for b in range(a + 1, n):
            between[a, b] = dist(a, b)
    while between:
        (a, b), near = min(between.items(), key=lambda kv: (kv[1], kv[0]))
        if not near < below:
            break
        clusters[a] += clusters.pop(b)
        between = {key: v for key, v in between.items() if a not in key and b not in key}
        for c in clusters:
            if c != a:
                between[min(a, c), max(a, c)] = dist(min(a, c), max(a, c))
    lab = np.zeros(n, dtype=int)
    for g, members in enumerate(clusters.values()):
        lab[members] = g
    return lab


def attach_lone_hosts(latency, labels) -> tuple[np.ndarray, dict[int, int]]:
    """``labels`` with every host alone in its group put in the group of the host it has the
    smallest latency to (``min(d_ij, d_ji)``; two lone hosts each other's nearest form a group of
    2), for what needs a partner for every host (``plink schedule``'s aggregation), and that
    nearest host of each lone host (one with no measured latency left out).  O(N^2)."""
    d = symmetrise_min(np.asarray(latency, dtype=float))
    lab = np.asarray(labels, dtype=int)
    f = np.where(np.isfinite(d), d, np.inf)
    np.fill_diagonal(f, np.inf)  # (a host is not its own nearest, whatever its diagonal holds)
    nearest = {int(i): int(np.argmin(f[i])) for i in np.flatnonzero(np.bincount(lab)[lab] == 1)
               if np.isfinite(f[i]).any()}
    return _attach_lone(d, lab), nearest


def excess_latency(s: np.ndarray) -> np.ndarray:
    """Each host's overhead: the median over targets ``k`` of how much its latency to ``k``
    exceeds the median latency of all hosts to ``k``.

    ``s``: symmetric latencies (NaN = missing).  A busy host adds its delay to every pair
    of its own, so it is slower than the others to every target; a host is not made to
    look busy by its rack-mate pair being unmeasured or spoilt (unlike a host's nearest
    latencies, :func:`remove_host_overheads`), as most targets are in racks of neither.
    NaN for a host with no measured latency.  O(N^2).
    """
    x = np.array(s, dtype=float)
    n = x.shape[0]
    if n < 3:
        return np.zeros(n)
    np.fill_diagonal(x, np.nan)
    return _nanmedian_rows(x - _nanmedian_rows(x.T)[None, :])


def _nanmedian_rows(a: np.ndarray) -> np.ndarray:
    """The median of the non-NaN values of each row of ``a``; NaN, without a warning, for a row with none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(a, axis=1)


def _attach_lone(d: np.ndarray, sub: np.ndarray, only=None, below: float | None = None,
                 overhead: np.ndarray | None = None) -> np.ndarray:
    """Labels ``sub`` of the hosts of symmetric ``d`` with every host alone in its part attached.

    Each lone host links to the host it has the smallest latency to (noise only adds
    delay); following the links, a host reaches either a part of 2 hosts or more, which it
    joins, or two lone hosts each other's nearest, which start a part of their own with
    the hosts that reach them (rack-mates whose pairs noise spoilt).  A host with no
    measured latency joins the largest part.  ``only``: attach just these of the lone
    hosts (None: all; the others stay alone, and a chain that reaches one ends there as at
    a part).  ``below``: of those, just the ones with a measured latency under it, and two
    lone hosts each other's nearest; the others are near no one (:data:`LONE_STAY`).
    ``overhead`` (with ``below``; per host of ``d``, see :func:`excess_latency`): also a
    host whose latencies, lowered by its overhead, are under ``below`` to its nearest
    host's part (their median) and over it to every other part, its overhead under its
    nearest latency (:data:`LONE_SHIFT`).
    Independent of the hosts' order; O(n^2).
    """
    sub = sub.copy()
    sizes = np.bincount(sub)
    lone = np.flatnonzero(sizes[sub] == 1)
    f = np.where(np.isfinite(d), d, np.inf)
    np.fill_diagonal(f, np.inf)
    if below is not None and lone.size:
        near, arg = f[lone].min(axis=1), np.argmin(f[lone], axis=1)
        mutual = (sizes[sub[arg]] == 1) & (np.argmin(f[arg], axis=1) == lone) & np.isfinite(near)
        keep = (near < below) | mutual
        if overhead is not None and LONE_SHIFT:
            # with the host's own overhead taken off: its median latency to its nearest host's part under
            # the cut, and every latency to the other parts over it
            oh = np.maximum(np.nan_to_num(np.asarray(overhead, dtype=float)[lone], nan=0.0), 0.0)
            same = sub[None, :] == sub[arg][:, None]
            other = np.where(same, np.inf, f[lone]).min(axis=1)
            to_part = _nanmedian_rows(np.where(same & np.isfinite(f[lone]), f[lone], np.nan))
            # (an overhead as large as the host's nearest latency is no overhead: a host far from everyone)
            keep |= (oh < near) & (to_part - oh < below) & (other - oh >= below)
        lone = lone[keep]
    if only is not None:
        lone = np.intersect1d(lone, np.asarray(only, dtype=int))
    if not lone.size:
        return sub
    nearest = {int(i): int(np.argmin(f[i])) for i in lone if np.isfinite(f[i]).any()}
    largest = int(np.argmax(sizes))
    nxt = int(sub.max()) + 1
    root: dict[int, int] = {}
    for i in map(int, lone):
        path, j = [], i
        while j in nearest and j not in root and j not in path:
            path.append(j)
            j = nearest[j]
        if j in root:
            label = root[j]
        elif j in path:  # a cycle of lone hosts (each other's nearest): a part of its own
            label, nxt = nxt, nxt + 1
        elif sizes[sub[j]] >= 2 or path:  # reached a host of a part (or a lone host not to attach)
            label = int(sub[j])
        else:  # no measured latency
            label = largest
        for h in path or [i]:
            root[h] = label
    for h, label in root.items():
        sub[h] = label
    return _relabel(sub)


def split_loose_groups(raw: np.ndarray, labels: np.ndarray, parent: np.ndarray | None = None, *,
                       loose: float = EFFECT_MIN, tight: float = EFFECT_MIN_SMALL, min_size: int = 4,
                       row_scale: bool = True, one_part: bool = True, apart: float = 0.25
                       ) -> tuple[np.ndarray, list[tuple[list[int], list[int]]]]:
    """Split the groups that are no group: as loose inside as they are far from the rest of their parent.

    ``raw``: symmetric latencies (NaN = missing); ``labels``: the finest groups;
    ``parent``: the next level up (None: one parent).  Names: ``u`` a group's median
    pair; ``o`` the median from its hosts to the rest of its parent; ``r`` the median of
    the median pairs of the parent's other groups of 2 hosts or more (none: those of the
    other parents), the scale of a rack there.

    1. *A loose group*: ``min_size`` hosts or more and ``u`` not ``loose`` times closer
       than ``o`` (:data:`EFFECT_MIN`, what any split needs): several small racks a
       split of the parent left together (the best cut of a row of racks of 2-4 hosts
       folds the racks it cannot tell apart into one remainder).  When the parent's
       other groups are groups (``o >= tight * r``, :data:`EFFECT_MIN_SMALL`), it is cut
       at ``sqrt(r * o)``, halfway from a rack to the distance between racks on a log
       scale: hosts are joined (:func:`_median_linkage`) while the median pair between
       them is under that level.
    2. *A group alone in its parent* (a row whose own split was not significant) has no
       rest: it is cut the same way, ``o`` being its own ``u``, when ``u >= tight * r``
       with ``r`` from the other parents.
    3. *On the row's scale* (``row_scale``; False: such groups stay whole): a group that
       passes the test of any split is cut the same way when ``u >= sqrt(r * o)`` (two
       racks of 2 in one group: two tight pairs and four at the row's distance) and it
       has at least the hosts of a typical group of its parent (their median), but only
       when every pair between two of its parts is ``r * (o / r) ** apart`` or more:
       noise only adds delay, so the halves of one noisy rack keep a pair at the rack's
       scale between them, while two racks' nearest pair is at the row's base distance.

    A cut is kept when it finds 2 parts of 2 hosts or more; a host that joins no one
    goes to the part it has the smallest latency to when that latency is under the cut,
    and two such hosts each other's nearest form a part; any other stays alone
    (:data:`LONE_STAY`; ``plink schedule`` puts it with its nearest host).  With
    ``one_part``, a cut that finds one part of 2 hosts or more and leaves
    2 hosts or more cuts the group into that part and the hosts left, when the group has
    :data:`ONE_PART_SIZE` times the hosts of a typical group of its parent, the hosts
    left have a median pair under ``o`` and every pair between the two parts passes the
    bar of step 3.  The cases behind each rule and what each changed on the benchmarks:
    docs/structure.md, "A group as loose as its row is cut again" and after.

    Returns ``(labels, splits)``, each split as the group's hosts and their new labels
    inside it.
    O(N^2) for the medians, and O(n^2) medians for each group of n hosts cut.
    """
    lab = labels.copy()
    n = len(lab)
    par = np.zeros(n, dtype=int) if parent is None else np.asarray(parent)
    k = int(lab.max()) + 1 if n else 0
    members = [np.flatnonzero(lab == g) for g in range(k)]

    u = np.array([_finite_median(_inside_pairs(raw, m)) for m in members])
    gpar = par[[m[0] for m in members]] if k else np.zeros(0, dtype=int)
    splits: list[tuple[list[int], list[int]]] = []
    nxt = k
    excess = None
    for g in range(k):
        m = members[g]
        if len(m) < min_size or not np.isfinite(u[g]):
            continue
        grouped = [h for h in range(k) if h != g and len(members[h]) >= 2 and np.isfinite(u[h])]
        siblings = [h for h in grouped if gpar[h] == gpar[g]]
        others = siblings or [h for h in grouped if gpar[h] != gpar[g]]  # none: the groups of the other parents
        if not others:
            continue
        r = float(np.median(u[others]))
        typical = float(np.median([len(members[h]) for h in others]))  # hosts in a group of the parent
        rest = np.flatnonzero((par == gpar[g]) & (lab != g))
        if rest.size:
            o = _finite_median(raw[np.ix_(m, rest)].ravel())
            on_scale = not o < loose * u[g]  # a group by the test of any split
        else:  # alone in its parent (a row the split left whole): no rest to compare with
            o, on_scale = float(u[g]), False
        cut_at = float(np.sqrt(r * o))  # halfway from a rack of the parent to the rest, on a log scale
        # a group by the test of any split is cut only when its median pair is nearer the distance between
        # racks than a rack's, and not when it has fewer hosts than a typical group of the parent (among
        # racks of 5-9, a rack with noisy pairs); its parts must then be apart (below)
        if on_scale and not (row_scale and u[g] >= cut_at and len(m) >= typical):
            continue
        if not tight * r <= o:
            continue
        d = raw[np.ix_(m, m)]
        sub = _median_linkage(d, cut_at)
        sizes = np.bincount(sub)
        parts = int((sizes >= 2).sum())
        if parts >= 2:
            if excess is None:
                excess = excess_latency(raw)
            sub = _attach_lone(d, sub, below=cut_at if LONE_STAY else None, overhead=excess[m])
        elif parts == 1 and one_part and len(m) - sizes.max() >= 2 and len(m) >= ONE_PART_SIZE * typical:
            sub = (sub != int(np.argmax(sizes))).astype(int)  # the one part, and the hosts it left together
            if not _finite_median(_inside_pairs(d, np.flatnonzero(sub == 1))) < o:
                continue  # (the hosts left are as far apart as the parent's racks: no rack)
        else:
            continue
        if on_scale or parts == 1:  # (noise only adds delay: halves of one rack have a pair at the rack's scale)
            between = d[sub[:, None] != sub[None, :]]
            if not _finite_quantile(between, 0.0) >= r * (o / r) ** apart:
                continue
        splits.append(([int(i) for i in m], [int(v) for v in sub]))
        for q in range(1, sub.max() + 1):
            lab[m[sub == q]] = nxt
            nxt += 1
    return (_relabel(lab) if splits else lab), splits


def merge_split_groups(raw: np.ndarray, labels: np.ndarray, parent: np.ndarray | None = None, *,
                       looser: float = MERGE_LOOSER, effect: float = EFFECT_MIN_SMALL, apart: float | None = None,
                       max_size: int = SMALL_GROUP, quantile: float = MERGE_QUANTILE, scale: bool = True
                       ) -> tuple[np.ndarray, list[tuple[list[int], list[int]]]]:
    """Merge two groups of one parent whose split would not pass the test for splitting a small group.

    ``raw``: symmetric latencies (NaN = missing); ``labels``: the finest groups;
    ``parent``: the next level up (None: one parent).  Groups ``A`` and ``B`` of
    one parent, 2 hosts or more each and fewer than ``max_size`` together, merge
    when, on the latencies as measured (``w_q`` and ``b_q``: the ``quantile``, by default
    the lower quartile, :data:`MERGE_QUANTILE`, of the pairs inside ``A`` and ``B`` and
    of those between them; medians ``w`` of the pairs inside ``A`` and ``B``, ``o`` from
    them to the rest of the parent, ``u`` over all pairs of ``A + B``):

    - the split between them would not be significant inside one group of their size:
      ``b_q < effect * w_q`` (:data:`EFFECT_MIN_SMALL`, what a split of a small group needs; ``apart``
      instead when given: :data:`MERGE_APART` in a cluster of fewer than :data:`SMALL_GROUP` hosts;
      or ``b_q <= w_q``, for latencies rounded to 0; on lower quartiles because noise only
      adds delay, so one noisy host in a part no longer makes the parts look apart);
      or (``scale``) the pairs between them are no farther than the parent's racks, ``b_q``
      at most ``looser`` times ``r``, the median of the parent's other groups' ``u``, and
      together they have fewer hosts than a typical group of the parent (the median of the
      other groups' sizes): the two halves of a rack, one of them unusually tight, whose
      split the test above judges against that tight half;
    - ``A + B`` would be a significant group of its parent: ``o >= effect * u``;
    - and no looser than the parent's other groups: ``u`` at most ``looser`` times the
      median of their own ``u``.

    (and ``o > w``; a parent without another group merges nothing).  Seed 17's sim-4
    in ``benchmarks/structure.py --large``, a rack of 6 whose three inflated pairs made
    the best silhouette cut it 3 + 3: ``b_q`` is 1.07 ``w_q`` (33.4 us against 31.3;
    medians 44.0 and 32.5), ``o`` 2.4 ``u`` (79.5 against 33.6).  Two racks of a row
    of racks of 2-4 hosts are often only 1.2x apart, but then the rest of the row is
    about as far (``o`` near the pairs between them), so the two are no significant
    group (the second condition).  On PlanetLab's RTTs nearby groups would merge into
    groups looser than the others of their parent (the last condition).  The pair with
    the smallest ``b_q / w_q`` merges first, then the conditions are judged again (a
    group cut in three merges whole).  The cases behind each condition and what each
    changed: docs/structure.md, "A rack cut in two is merged".
    Returns ``(labels, merges)``, each merge as the two host lists.  O(K N^2) per pass
    for K groups, one pass per merge and one more.
    """
    if not 0.0 <= quantile <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {quantile}")
    lab = labels.copy()
    n = len(lab)
    par = np.zeros(n, dtype=int) if parent is None else np.asarray(parent)
    split_need = effect if apart is None else apart  # the first condition's ratio
    merges: list[tuple[list[int], list[int]]] = []
    while True:
        k = int(lab.max()) + 1
        members = [np.flatnonzero(lab == g) for g in range(k)]
        own = [_inside_pairs(raw, m) for m in members]
        u_own = np.array([_finite_median(v) for v in own])
        gpar = par[[m[0] for m in members]]  # each group's parent
        best = None
        for a in range(k):
            for b in range(a + 1, k):
                ma, mb = members[a], members[b]
                if min(len(ma), len(mb)) < 2 or len(ma) + len(mb) >= max_size or gpar[a] != gpar[b]:
                    continue
                inside = np.r_[own[a], own[b]]
                w, wq = _finite_median(inside), _finite_quantile(inside, quantile)
                bq = _finite_quantile(raw[np.ix_(ma, mb)].ravel(), quantile)
                far = not (bq <= wq or bq < split_need * wq)  # their split would pass inside one small group
                if not w > 0 or (far and not scale):
                    continue
                siblings = np.flatnonzero(gpar == gpar[a])
                siblings = siblings[(siblings != a) & (siblings != b)]
                if not siblings.size:
                    continue
                idx = np.r_[ma, mb]
                rest = np.concatenate([members[g] for g in siblings])
                o = _finite_median(raw[np.ix_(idx, rest)].ravel())
                others = u_own[siblings]
                others = others[np.isfinite(others)]
                if not others.size:
                    continue
                r = float(np.median(others))  # the parent's racks' scale
                # (scale) the halves of one rack: the pairs between them no farther than the parent's racks,
                # and together fewer hosts than a typical group of the parent
                if far and not (bq <= looser * r and len(idx) < np.median([len(members[g]) for g in siblings])):
                    continue
                u = _finite_median(_inside_pairs(raw, idx))
                if not (o > w and o >= effect * u and u <= looser * r):
                    continue
                ratio = bq / wq if wq > 0 else 0.0
                if best is None or ratio < best[0]:
                    best = (ratio, a, b)
        if best is None:
            return lab, merges
        _, a, b = best
        merges.append(([int(i) for i in members[a]], [int(i) for i in members[b]]))
        lab = _relabel(np.where(lab == b, a, lab))


def _block_medians(lat: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``(k, k)`` median of the finite ``lat`` between the hosts of every two groups (NaN if none)."""
    k = labels.max() + 1
    members = [np.flatnonzero(labels == a) for a in range(k)]
    g = np.full((k, k), np.nan)
    for a in range(k):
        for b in range(a + 1, k):
            v = lat[np.ix_(members[a], members[b])]
            v = v[np.isfinite(v)]
            if v.size:
                g[a, b] = g[b, a] = np.median(v)
    return g


def _coarser(p: np.ndarray, labels: np.ndarray, max_levels: int, lat: np.ndarray | None = None) -> list[np.ndarray]:
    """Significant groupings of fixed groups ``labels`` (coarser levels), by splitting their mean
    distances ``p``; with ``lat`` (the prepared latencies) a grouping counts only if the latencies
    bear it out (:func:`effect_size` of the groups' block medians at least :data:`EFFECT_MIN`):
    profile distances grow with the groups' sizes, so on one flat row the racks of one size
    looked like a row."""
    out = []
    cur = labels
    for _ in range(max_levels):
        k = cur.max() + 1
        if k < 4:
            break
        onehot = np.zeros((len(cur), k))
        onehot[np.arange(len(cur)), cur] = 1.0
        cnt = onehot.sum(0)
        g = onehot.T @ p @ onehot / np.outer(cnt, cnt)
        np.fill_diagonal(g, 0.0)
        glab, _ = best_split(g, min_group=2)
        gl = None if lat is None else _block_medians(lat, cur)
        if glab.max() == 0 or (gl is not None and not effect_size(gl, glab) >= EFFECT_MIN):
            break
        # the coarsest good cut comes first (datacentres); a level between it and the groups
        # (the rows of each datacentre) is looked for inside each of its parts
        mid = glab.copy()
        if len(out) + 2 <= max_levels:
            nxt = 0
            for c in range(glab.max() + 1):
                sub = np.flatnonzero(glab == c)
                sl = best_split(g[np.ix_(sub, sub)], min_group=2)[0] if len(sub) >= 4 else np.zeros(len(sub), int)
                if gl is not None and sl.max() > 0 and not effect_size(gl[np.ix_(sub, sub)], sl) >= EFFECT_MIN:
                    sl = np.zeros(len(sub), int)
                mid[sub] = nxt + sl
                nxt += sl.max() + 1
            if glab.max() + 1 < nxt and 2 * nxt <= k:
                out.append(_relabel(mid[cur]))
        cur = _relabel(glab[cur])
        out.append(cur)
    return out[:max_levels]


def infer_hierarchy(latency: np.ndarray, *, max_levels: int = 3, random_state=None,
                    zeros: str = "unmeasured") -> Hierarchy:
    """Infer groups at one or more levels from ``latency``, the number of groups chosen from the data.

    ``latency``: N x N (any unit, any scale), NaN where unmeasured, diagonal
    ignored, possibly asymmetric; an off-diagonal 0 is read as unmeasured, with a
    warning, as plink's file readers read it (``zeros="measured"``: as a distance of 0).
    ``max_levels``: at most this many nested levels (1 = racks only).  Returns a :class:`Hierarchy`; K = 1 (all zeros,
    confidence 1) when no split is significant or N < 4.  Raises
    :class:`~plink.errors.PlinkError` on a non-square, negative or infinite
    matrix or a host without any measured pair.

    O(N^3) time (profile distances, two metrics, permutation nulls), O(N^2)
    memory; deterministic for a given ``random_state`` (seeds the nulls; None = 0).
    See the module docstring for the method.
    """
    check_positive_int(max_levels, "--levels (max_levels)")
    _check_random_state(random_state)
    d = check_latency(latency, zeros)
    n = d.shape[0]
    if n < 4:
        z = np.zeros(n, dtype=int)
        return Hierarchy(z, [z], np.ones(n), {"k": 1, "levels": 1, "reason": f"{n} hosts: too few to split"})
    s = symmetrise_min(d)
    if n < 2 * MIN_GROUP:
        tiny = _tiny_split(s)
        if tiny is not None:
            return tiny
    return hierarchy_from_matrix(remove_host_overheads(s)[0], raw=s, max_levels=max_levels,
                                 random_state=random_state)


#: 4 or 5 hosts are too few for the split tests (groups of MIN_GROUP, permutation nulls): two groups
#: of 2 or more are taken when every pair between them is at least this many times every pair inside
#: (a 2-rack x 2-host netns probe read 27 against 65 us and was one group)
TINY_GAP = 1.5


def _tiny_split(s: np.ndarray) -> Hierarchy | None:
    """4 or 5 hosts (symmetric latencies ``s``, NaN = not measured): the average-linkage cut into
    2 groups of 2 or more when every measured pair between them is at least :data:`TINY_GAP` times
    every measured pair inside them (each group with one measured pair at least), else None."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    from plink.structure.metrics import host_separation

    n = s.shape[0]
    m = np.array(s, dtype=float)
    fill = np.nanmax(m[np.isfinite(m)]) if np.isfinite(m).any() else 1.0
    m = np.where(np.isfinite(m), m, fill)
    np.fill_diagonal(m, 0.0)
    lab = fcluster(linkage(squareform(m, checks=False), method="average"), 2, criterion="maxclust") - 1
    if lab.max() != 1 or np.bincount(lab).min() < 2:
        return None
    off = ~np.eye(n, dtype=bool)
    same = (lab[:, None] == lab[None, :]) & off & np.isfinite(s)
    cross = (lab[:, None] != lab[None, :]) & np.isfinite(s)
    if not cross.any() or any(not (same & (lab[:, None] == g)).any() for g in (0, 1)):
        return None
    if not s[cross].min() >= TINY_GAP * s[same].max():
        return None
    lab = np.unique(lab, return_inverse=True)[1].astype(int)
    conf = np.clip(host_separation(m, lab), 0.0, 1.0)
    return Hierarchy(lab, [lab], conf, {"k": 2, "levels": 1,
                                        "reason": f"{n} hosts: every pair between the groups {TINY_GAP:g}x or more "
                                                  "every pair inside (TINY_GAP)"})


def _as_matrix(X) -> np.ndarray:
    """A matrix as given, or the one a probe gives structure inference (``ProbeData.structure_latency``)."""
    lat = getattr(X, "structure_latency", None)
    return lat if lat is not None else X


class HierarchicalGrouper(Params):
    """Group hosts by :func:`infer_hierarchy` (scikit-learn style).

    Parameters
    ----------
    n_groups : "auto" or int, default "auto"
        "auto": K from the data (may be 1); an int: exactly that many groups at
        the finest level (average linkage on the profile distances, refined).
    max_levels : int, default 3
    random_state : int, Generator or None; seeds the permutation nulls (None = 0: deterministic).

    ``fit(X)`` takes a :class:`~plink.data.probefile.ProbeData` (its
    ``latency``) or an N x N matrix (NaN where unmeasured; an off-diagonal 0 is read as
    unmeasured too, with a warning, as plink's file readers read it).  Attributes: ``labels_``, ``hierarchy_``,
    ``levels_``, ``confidence_``, ``n_groups_``, ``distances_`` (the profile
    distances used).  O(N^3) time, O(N^2) memory.
    """

    def __init__(self, n_groups: int | str = "auto", *, max_levels: int = 3, random_state=None) -> None:
        self.n_groups = n_groups
        self.max_levels = max_levels
        self.random_state = random_state

    def get_params(self, deep: bool = True) -> dict:
        return {"n_groups": self.n_groups, "max_levels": self.max_levels, "random_state": self.random_state}

    def fit(self, X, y=None) -> "HierarchicalGrouper":
        k = self.n_groups
        if k != "auto" and (not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1):
            raise OptionError(f"n_groups must be 'auto' or a positive integer, got {k!r}")
        check_positive_int(self.max_levels, "--levels (max_levels)")
        _check_random_state(self.random_state)
        # a raw matrix is read as plink's file readers read one (a 0 between two hosts: unmeasured, with a
        # warning); a probe's matrix as it is (its readers, and plink.from_matrix, have done so already)
        raw = getattr(X, "structure_latency", None) is None
        d = check_latency(_as_matrix(X), "unmeasured" if raw else "measured")
        n = d.shape[0]
        if k != "auto" and k > n:
            raise OptionError(f"{k} groups for {n} hosts: the number of groups must be at most the number of hosts")
        if n < 2 * MIN_GROUP and k == "auto":
            h = infer_hierarchy(d, max_levels=self.max_levels)
            self.distances_ = None
        else:
            s = symmetrise_min(d)
            x = remove_host_overheads(s)[0]
            self.distances_ = _distances(x)
            h = hierarchy_from_matrix(x, raw=s, max_levels=self.max_levels, p=self.distances_,
                                      random_state=self.random_state,
                                      n_groups=None if k == "auto" else int(k))
        self.hierarchy_ = h
        self.labels_ = h.labels
        self.levels_ = h.levels
        self.confidence_ = h.confidence
        self.n_groups_ = h.n_groups
        return self

    def fit_predict(self, X, y=None) -> np.ndarray:
        return self.fit(X).labels_


__all__ = ["Hierarchy", "HierarchicalGrouper", "infer_hierarchy", "infer_groups", "hierarchy_from_matrix",
           "profile_distances", "remove_host_overheads", "excess_latency", "symmetrise_min", "denoise_profile",
           "best_split", "check_latency", "SILHOUETTE_MIN"]


LOW_CONFIDENCE = 0.25  #: hosts below this confidence are named in reports


def _both_separations(probe, bandwidth, labels: np.ndarray) -> np.ndarray:
    """Each host's confidence in ``labels`` when the pair bandwidths made the groups: the larger of
    its separation (silhouette, clipped to [0, 1]) on the latencies (the faster direction of each
    pair) and on the inverse bandwidths. O(N^2)."""
    from plink.structure.metrics import host_separation
    from plink.structure.probegroups import inverse

    lat = np.asarray(_as_matrix(probe), dtype=float)
    return np.clip(np.fmax(host_separation(np.fmin(lat, lat.T), labels),
                           host_separation(inverse(bandwidth), labels)), 0.0, 1.0)


def infer_groups(probe, *, n_groups: int | None = None, max_levels: int = 3, seed: int = 0):
    """``plink group``'s default: :class:`HierarchicalGrouper` on a probe -> :class:`~plink.data.groupfile.Groups`.

    ``n_groups``: None = K from the data, an int fixes K at the finest level.
    With K from the data and a probe that has pair bandwidths (``plink probe
    --bandwidth``), the finest level is split where the bandwidths measured
    parts of a group far apart (:func:`plink.structure.probegroups.split_by_bandwidth`),
    so the groups are the ones ``plink order`` prices; ``metrics["split_by_bandwidth"]``
    counts the groups that added.  With K given and pair bandwidths, those groups are made K by
    :func:`plink.structure.probegroups.cut_with_bandwidth` (``metrics["bandwidth_used"]`` when
    that differs from the latencies' cut into K; coarser levels it does not nest in are dropped,
    and the confidence is each host's silhouette on whichever matrix separates it better).  The result carries ``levels`` and ``confidence``; its metrics hold the
    group sizes per level, the mean / min confidence, the low-confidence hosts
    (below :data:`LOW_CONFIDENCE`), the hosts alone in a finest group (``alone_hosts``), the scores that chose K
    (``one_group_why``: why a cluster of 6-15 hosts is one group when the test of :func:`small_cluster_cut`
    refused its cut), the run time and,
    when the probe has ground truth, the AMI of the finest level against the
    true racks (and of each coarser level against the truth level above).
    O(N^3) time, O(N^2) memory.
    """
    import time

    from plink.data.groupfile import Groups
    from plink.structure.metrics import ami

    if n_groups is not None:
        check_positive_int(n_groups, "number of groups")
    measured = check_every_host_measured(probe)
    n = probe.n
    if n >= 2 and measured.sum() < 0.5 * n * (n - 1):
        how = ("probe again with 'plink probe --resume'" if getattr(probe, "meta", {}).get("schedule") is not None
               else "measure more of the pairs")  # (--resume: a file plink probe wrote)
        raise InputError(f"the matrix is mostly missing ({measured.sum() / (n * (n - 1)):.0%} of pairs measured); "
                         f"structure inference needs at least half: {how}")
    t0 = time.perf_counter()
    est = HierarchicalGrouper("auto" if n_groups is None else int(n_groups), max_levels=max_levels,
                              random_state=seed).fit(probe)
    h = est.hierarchy_
    levels = list(h.levels)
    split = 0
    bandwidth_used = False
    bw = getattr(probe, "bandwidth", None)
    confidence = h.confidence
    with_bw = bw is not None and not getattr(probe, "inverse_bandwidth", False)
    if n_groups is None and with_bw:
        # the groups plink order prices: the latency's, split where the bandwidth measured parts far
        from plink.structure.probegroups import split_by_bandwidth

        finest = split_by_bandwidth(h.labels, bw, seed=seed)
        split = int(finest.max() - h.labels.max())
        levels[0] = finest
        if split:  # groups the latency did not give: how sure, from both matrices (as with --groups K)
            confidence = _both_separations(probe, bw, finest)
    elif with_bw:
        # K given: the groups K from the data gives (split by the bandwidths), made K by the latencies'
        # cut into K without joining parts the bandwidths measured far apart while others are left
        from plink.structure.metrics import refines
        from plink.structure.probegroups import cut_with_bandwidth, split_by_bandwidth

        auto = HierarchicalGrouper("auto", max_levels=max_levels, random_state=seed).fit(probe).hierarchy_
        finest = cut_with_bandwidth(split_by_bandwidth(auto.labels, bw, seed=seed), h.labels,
                                    _as_matrix(probe), bw, int(n_groups))
        if not np.array_equal(finest, h.labels):
            # the coarser levels kept are those the new finest level still nests in
            levels = [finest] + [lv for lv in levels[1:] if refines(finest, lv) and lv.max() < finest.max()]
            confidence = _both_separations(probe, bw, finest)
            bandwidth_used = True
    labels = levels[0]
    seconds = time.perf_counter() - t0
    names = probe.names
    low = np.flatnonzero(confidence < LOW_CONFIDENCE)
    alone = np.flatnonzero(np.bincount(labels)[labels] == 1) if labels.max() > 0 else np.zeros(0, dtype=int)
    metrics: dict[str, Any] = {
        "groups": int(labels.max() + 1),
        "sizes": np.bincount(labels).tolist(),
        "levels": [{"groups": int(lv.max() + 1), "sizes": np.bincount(lv).tolist()} for lv in levels],
        "confidence_mean": round(float(confidence.mean()), 4),
        "confidence_min": round(float(confidence.min()), 4),
        "low_confidence_hosts": [names[i] for i in low[np.argsort(confidence[low])]],
        "alone_hosts": [names[i] for i in alone],  # a finest group of their own: near no rack
        "coverage": round(probe.coverage(), 6),
        "group_seconds": round(seconds, 3),
        "scores": h.scores,
    }
    top = (h.scores.get("splits") or [{}])[0]
    if labels.max() == 0 and top.get("k") == 1 and top.get("small_cluster"):
        metrics["one_group_why"] = top["small_cluster"]  # (a small cluster's cut the permutation test refused)
    if split:
        metrics["split_by_bandwidth"] = split
    elif bandwidth_used:
        metrics["bandwidth_used"] = True  # K given: the groups differ from the latencies' cut into K (said)
    if probe.truth is not None and probe.truth.levels:
        truth = probe.truth.labels
        metrics["ami"] = round(ami([t[-1] for t in truth], labels), 6)
        metrics["truth_level"] = probe.truth.levels[-1]
        # each level against the true level nearest it in number of groups (by their ratio; the finer on
        # a tie): pairing them by position scored a level that found the racks against the clusters
        depth = len(probe.truth.levels)
        counts = [len({t[d] for t in truth}) for d in range(depth)]
        against = [min(range(depth), key=lambda d: (abs(np.log(counts[d] / max(int(np.max(lv)) + 1, 1))), -d))
                   for lv in levels]
        metrics["ami_levels"] = [round(ami([t[d] for t in truth], lv), 6) for d, lv in zip(against, levels)]
        metrics["ami_levels_against"] = [probe.truth.levels[d] for d in against]
    params = {"method": "hierarchy", "groups": None if n_groups is None else int(n_groups),
              "max_levels": int(max_levels), "seed": int(seed)}
    return Groups(hosts=names, labels=labels, metrics=metrics, params=params, levels=levels,
                  confidence=confidence)
