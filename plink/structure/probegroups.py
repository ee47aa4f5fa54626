"""The groups of a probe's hosts from both its matrices: latency and inverse pair bandwidth.

One rule, used by ``plink order``'s pricing (:func:`plink.pricing.find_groups`) and by
``plink probe``'s uplink test (:func:`plink.probes.uplinks.infer_groups`), so that the groups
whose uplinks the probe measures are the groups the cost model later prices (when they were
not, a test over a rack and one host of another was priced as a link of its own:
``benchmarks/results/2026-11-28-A-seed9``, README "Proof against real collectives").

Each matrix is grouped by :func:`plink.structure.hierarchy.infer_hierarchy` (its finest
level). The inverse bandwidth is a distance because ``plink probe`` measures the pairs of a
round at the same time, so cross-rack pairs share uplinks and measure slower (§4.2.1 of the
dissertation).

The two matrices err in opposite directions, and the groups are built on that
(:func:`split_by_far_pairs`). Latency only grows with load, so two hosts measured near are
near; a busy host can make its rack-mates look far. A pair bandwidth only drops because
something is shared, so a pair measured slow is apart; a cross-rack pair alone on its uplinks
measures the full rate and looks near. In every shipped probe of the netns cluster
(``benchmarks/results/**/[A-E].json``, 35 with both matrices; ``benchmarks/probe_groups.py``) in-rack pairs read within 1.07x of
the median in-rack inverse bandwidth, cross-rack pairs 1.25x or more but for the 5-23% of them
alone on their uplinks, which read 1.00x. So the groups are the latency's, each split where the
bandwidth's grouping splits it *and* the pairs between the parts are far
(:data:`FAR_RATIO`); the bandwidth grouping's merges, and its splits between pairs measured at
the in-group rate, are not taken. Then each group of 4 or more hosts whose halves by the bandwidth
(average linkage) have pairs between them that read 1.25x slower than the pairs inside the groups
and than their hosts carry is cut (:func:`split_far_halves`): the bandwidth's own grouping folds a rack
of 2 into a neighbour, so where the latency too found one group for both (small clusters on a busy
machine) they stayed merged (17 of the 56 ``--bandwidth`` probes of
``benchmarks/results/2026-12-03-small-clusters-bw``, none after). Last, where a group still
holds a pair read far slower than both its hosts carry (nothing inside a rack is shared), the
hosts of its latency group are dealt again into the fewest groups with no such pair inside
(:func:`split_slow_pairs`, with checks that keep a rack a noisy pair slowed whole): the
bandwidth's own grouping deals a rack of 2 to two other racks where the latency sees no racks
(``benchmarks/results/2026-12-03-gloo-3-3-2-bw`` p1) and keeps four racks of 2 as one group
(2 of the 56). The latency's own splits are
kept even where the bandwidth does not make them: a rack split in two prices only some of its
flows as crossing an uplink, racks merged into one group price the flows between them as free.

Before this rule, where the groupings crossed (neither refines the other), the one with the
higher silhouette on its own matrix won, and that chose the inverse bandwidth's grouping on
``benchmarks/results/2026-11-29-D-seed13``: the rack of 2's hosts dealt to two other racks, the
probe's uplink test run on those wrong groups, and the ``--bandwidth`` order for the tree 1.22x
the best measured. The sum of silhouettes on both matrices chose right there, by 0.943 to 0.921,
but takes the dealt grouping on a synthetic probe like it with noisier latency
(``tests/test_probegroups.py``). There, and in seed 14, the bandwidth split the rack of 2 with
its own pair at 1.00x the in-group rate. A host with no measured pair in a
matrix gets a group of its own there (it cannot be placed; pricing its flows as crossing
uplinks is the conservative case); only the matrices that place the most hosts are used.

Asymmetric matrices are read as a probe file is (``plink.data.probefile``): for latency the
faster direction of each pair (load only adds delay), for bandwidth the slower one.

Complexity: that of ``infer_hierarchy`` on each matrix, plus O(N^2).
"""

from __future__ import annotations

import numpy as np

from plink.structure.metrics import separation

__all__ = ["DEAL_MAX_HOSTS", "FAR_RATIO", "SPLIT_MIN_SIZE", "cut_with_bandwidth", "infer_probe_groups", "inverse",
           "joins_of_two", "placed_hosts", "slowness", "split_by_bandwidth", "split_by_far_pairs", "split_far_halves",
           "split_slow_pairs", "splits_in_two"]

#: Two parts of a latency group stay apart only when the median inverse bandwidth of the pairs
#: between them is at least this many times the in-group level (the median over the pairs both
#: groupings put together). In-rack pairs of the shipped netns probes read at most 1.07x, pairs
#: sharing an uplink 1.25x and more; the 1.25 is the looseness hierarchy.py merges under
#: (``MERGE_LOOSER``).
FAR_RATIO = 1.25

#: :func:`splits_in_two` splits groups of at least this many hosts: a rack of 2 beside a rack of
#: 2 or more is the smallest merge latencies cannot rule out (``benchmarks/robust_groupings.py``).
SPLIT_MIN_SIZE = 4

#: :func:`split_slow_pairs` deals the hosts of a group again only up to this many hosts (its
#: search for the fewest groups is exponential in the worst case; it also stops after
#: ``_DEAL_BUDGET`` nodes).
DEAL_MAX_HOSTS = 48
_DEAL_BUDGET = 200_000


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
        lab[seen] = infer_hierarchy(m[np.ix_(seen, seen)], random_state=seed, zeros="measured").labels
    k = int(lab[seen].max()) + 1 if seen.any() else 0
    lab[~seen] = k + np.arange(int((~seen).sum()))
    _, lab = np.unique(lab, return_inverse=True)
    return lab.astype(np.int64)


def inverse(bandwidth: np.ndarray) -> np.ndarray:
    """The inverse of a pair bandwidth matrix, the slower direction of each pair (as a probe file
    is read); NaN where not measured or not positive. O(N^2)."""
    bw = np.asarray(bandwidth, dtype=float)
    bw = np.fmin(bw, bw.T)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bw > 0, 1.0 / bw, np.nan)


def infer_probe_groups(latency: np.ndarray, bandwidth: np.ndarray | None = None, *, seed: int = 0,
                       latency_name: str = "latency") -> tuple[np.ndarray, float, str]:
    """``(labels, silhouette, source)``: the groups of the hosts of a latency matrix (µs, may be
    asymmetric, NaN = not measured) and, when given, a pair bandwidth matrix (any unit, same
    layout), as the module docstring says. ``source`` is ``"inferred from <latency_name>"``,
    ``"inferred from <latency_name>, split by bandwidth"`` or ``"inferred from bandwidth"`` (the
    groups are the bandwidth's own); ``latency_name`` names what the first matrix is (e.g.
    ``"inverse bandwidth"`` for a bandwidth matrix read alone). The silhouette is that of the
    groups on the matrix they are named after."""
    lat = np.asarray(latency, dtype=float)
    n = lat.shape[0]
    lat = np.fmin(lat, lat.T)  # the faster direction (NaN only where neither was measured)
    found = [(lat, f"inferred from {latency_name}")]
    if bandwidth is not None:
        inv = inverse(bandwidth)
        if np.isfinite(inv[~np.eye(n, dtype=bool)]).sum() >= n:
            found.append((inv, "inferred from bandwidth"))
    seen = [placed_hosts(m) for m, _ in found]
    most = max(int(s.sum()) for s in seen)  # a matrix not measured yet places nobody
    cands = [(_group(m, s, seed), m, source) for (m, source), s in zip(found, seen) if s.sum() == most]
    lab, m, source = cands[0]
    if len(cands) == 2:
        blab, inv, bsource = cands[1]
        split = split_slow_pairs(lab, split_far_halves(split_by_far_pairs(lab, blab, inv), inv), inv)
        if split.max() > lab.max():  # it only ever splits: more groups = a different partition
            own = split.max() == blab.max() and np.array_equal(split, _canonical(blab))
            lab, m, source = split, (inv if own else m), (bsource if own else f"{source}, split by bandwidth")
    return lab, separation(m, lab), source


def split_by_bandwidth(labels: np.ndarray, bandwidth: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """``labels`` (a latency grouping of every host) split by :func:`split_by_far_pairs` against
    the grouping of the inverse of ``bandwidth`` (pair bandwidths, any unit; NaN = not measured),
    then by :func:`split_far_halves` and :func:`split_slow_pairs`;
    ``labels`` unchanged when the bandwidths do not place every host. What ``plink group`` does
    to its finest level so that it shows the groups ``plink order`` prices. O(that of
    ``infer_hierarchy`` on the bandwidths)."""
    labels = np.asarray(labels)
    inv = inverse(bandwidth)
    seen = placed_hosts(inv)
    if not seen.all():
        return labels
    split = split_slow_pairs(labels, split_far_halves(split_by_far_pairs(labels, _group(inv, seen, seed), inv), inv),
                             inv)
    return split if split.max() > labels.max() else labels


def cut_with_bandwidth(split: np.ndarray, cut: np.ndarray, latency: np.ndarray, bandwidth: np.ndarray,
                       k: int, far: float = FAR_RATIO) -> np.ndarray:
    """``k`` groups from both matrices: what ``plink group --groups K`` gives on a probe with pair
    bandwidths.  ``split`` is the grouping found with K from the data and split by the bandwidths
    (:func:`split_by_bandwidth`), ``cut`` the latencies cut into ``k`` groups.

    With ``split`` of ``k`` groups, ``split``.  With fewer, it is refined by ``cut`` (their
    intersection) so that ``k`` can be reached; with more, it is taken as it is.  The parts are
    then merged, two at a time, down to ``k`` groups: first those the bandwidths do not measure
    far apart (the median inverse bandwidth between them under ``far`` times the median within
    ``split``'s groups), among them those ``cut`` puts together (the largest share of the pairs
    between them), then the nearest by mean ``latency`` (µs, the faster direction of each pair;
    pairs not measured are no evidence).  So the result is the latencies' cut wherever the
    bandwidths do not object, and a rack only the bandwidths tell apart is not joined to another
    to make up ``k`` while two parts of one rack remain.
    Labels renumbered 0.. in order of first appearance.  O(P N^2) for P parts.
    """
    split, cut = np.asarray(split), np.asarray(cut)
    if int(split.max()) + 1 == k:
        return _canonical(split)
    n = len(split)
    parts = split
    if int(split.max()) + 1 < k:
        _, parts = np.unique(np.stack([split, cut]), axis=1, return_inverse=True)
        parts = np.asarray(parts).ravel()
    lat = np.asarray(latency, dtype=float)
    lat = np.fmin(lat, lat.T)
    inv = inverse(bandwidth)
    off = ~np.eye(n, dtype=bool)
    together = (split[:, None] == split[None, :]) & off & np.isfinite(inv)
    level = float(np.median(inv[together])) if together.any() else np.nan
    groups = [np.flatnonzero(parts == g) for g in np.unique(parts)]

    def between(m: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        v = m[np.ix_(a, b)]
        return v[np.isfinite(v)]

    while len(groups) > k:
        best = None
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                bw = between(inv, groups[i], groups[j])
                apart = bool(len(bw)) and np.isfinite(level) and float(np.median(bw)) >= far * level
                lt = between(lat, groups[i], groups[j])
                joined = float(np.mean(cut[groups[i]][:, None] == cut[groups[j]][None, :]))
                key = (apart, -joined, float(lt.mean()) if len(lt) else np.inf, i, j)
                if best is None or key < best:
                    best = key
        i, j = best[-2:]
        groups[i] = np.sort(np.concatenate([groups[i], groups[j]]))
        del groups[j]
    out = np.empty(n, dtype=np.int64)
    for g, members in enumerate(groups):
        out[members] = g
    return _canonical(out)


def _canonical(labels: np.ndarray) -> np.ndarray:
    """``labels`` renumbered 0.. in order of first appearance."""
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inv].astype(np.int64)


def split_by_far_pairs(labels: np.ndarray, other: np.ndarray, inverse_bandwidth: np.ndarray,
                       far: float = FAR_RATIO) -> np.ndarray:
    """``labels`` (the latency's groups) with each group split where ``other`` (the inverse
    bandwidth's groups) splits it and the bandwidth says the parts are apart: parts of a group
    are joined again (union-find) when the median of ``inverse_bandwidth`` over the measured pairs
    between them is under ``far`` times the in-group level, the median over the pairs that both
    groupings put together (or, when there are none, that ``labels`` puts together).  Pairs not
    measured (NaN) are no evidence; parts with none between them stay together.  Labels
    renumbered 0.. in order of first appearance.  O(N^2)."""
    lab, oth = np.asarray(labels), np.asarray(other)
    m = np.asarray(inverse_bandwidth, dtype=float)
    n = len(lab)
    off = ~np.eye(n, dtype=bool)
    together = (lab[:, None] == lab[None, :]) & off
    both = together & (oth[:, None] == oth[None, :])
    ref = m[both & np.isfinite(m)]
    if not len(ref):
        ref = m[together & np.isfinite(m)]
    if not len(ref):
        return _canonical(lab)
    level = float(np.median(ref))
    _, meet = np.unique(np.stack([lab, oth]), axis=1, return_inverse=True)
    meet = np.asarray(meet).ravel()
    parent = list(range(int(meet.max()) + 1))

    def root(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for g in np.unique(lab):
        idx = np.flatnonzero(lab == g)
        parts = np.unique(meet[idx])
        for i, a in enumerate(parts):
            for b in parts[i + 1:]:
                between = m[np.ix_(idx[meet[idx] == a], idx[meet[idx] == b])]
                between = between[np.isfinite(between)]
                if not len(between) or float(np.median(between)) < far * level:
                    parent[root(int(a))] = root(int(b))
    return _canonical(np.array([root(int(k)) for k in meet]))


def split_far_halves(labels: np.ndarray, inverse_bandwidth: np.ndarray, far: float = FAR_RATIO,
                     min_size: int = SPLIT_MIN_SIZE) -> np.ndarray:
    """``labels`` with each group of ``min_size`` (at least 4) or more hosts cut in two by average
    linkage of ``inverse_bandwidth`` over its hosts (a pair measured in neither direction at the
    group's median) when both halves have 2 hosts or more and the measured pairs between them read
    ``far`` times slower (medians) both than the pairs that the grouping with that group cut keeps
    together and than their own hosts carry (each pair's inverse bandwidth over the slower of its two
    hosts' fastest pairs: a pair bandwidth only drops below what both NICs carry when something is
    shared); repeated until no group is cut.  Labels renumbered 0.. in order of first appearance.
    The first test keeps pair bandwidths that are noise from cutting (their halves' fastest pairs
    are far above the median pair), the second a host with a slower NIC (its every pair reads slow).

    Why: the inverse bandwidth's own grouping (:func:`plink.structure.hierarchy.infer_hierarchy`:
    groups of 3 or more, unless its pairs are tight) folds a rack of 2 into a neighbour, and where
    the latency found one group for both, the racks stayed merged although most pairs between them
    read at half the in-rack rate: 17 of the 56 ``--bandwidth`` probes of small netns clusters in
    ``benchmarks/results/2026-12-03-small-clusters-bw`` (racks 3+3+2: the rack of 2 with a rack
    of 3 in 8 of 12; 2+2+2: two racks of 2 as one in 7 of 8; 2+3+3: 2 of 6), none after it
    (``tests/test_probegroups.py``).  Not cut: two racks of 3 merged when a third of their pairs
    read the full rate (alone on the uplinks in their round) and average linkage does not find the
    racks as the halves; racks of 2 all in one group (2+2+2+2 in 2 of 6), whose halves hold as many
    cross-rack pairs as the pairs between them.
    O(K g^2 log g) per pass for groups of up to g hosts, at most K passes."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    lab = _canonical(np.asarray(labels))
    m = np.asarray(inverse_bandwidth, dtype=float)
    m = np.fmin(m, m.T)
    n = len(lab)
    off = ~np.eye(n, dtype=bool) & np.isfinite(m)
    if not off.any():
        return lab
    slow = slowness(m)
    cut = True
    while cut:
        cut = False
        for g in range(int(lab.max()) + 1):
            idx = np.flatnonzero(lab == g)
            if len(idx) < max(min_size, 4):
                continue
            sub = m[np.ix_(idx, idx)]
            inside = sub[~np.eye(len(idx), dtype=bool) & np.isfinite(sub)]
            if not len(inside):
                continue
            sub = np.where(np.isfinite(sub), sub, float(np.median(inside)))
            np.fill_diagonal(sub, 0.0)
            half = fcluster(linkage(squareform(sub, checks=False), method="average"), 2, criterion="maxclust")
            a, b = idx[half == 1], idx[half == 2]
            if len(a) < 2 or len(b) < 2:
                continue
            new = lab.copy()
            new[b] = lab.max() + 1
            level = m[(new[:, None] == new[None, :]) & off]  # the pairs the cut grouping keeps together
            between = m[np.ix_(a, b)]
            slower = slow[np.ix_(a, b)]
            ok = np.isfinite(between)
            if ok.any() and len(level) and float(np.median(between[ok])) >= far * float(np.median(level)) \
                    and float(np.median(slower[ok])) >= far:
                lab, cut = _canonical(new), True
                break
    return lab


def slowness(inverse_bandwidth: np.ndarray) -> np.ndarray:
    """Each pair's inverse bandwidth over the slower of its two hosts' fastest pairs (an asymmetric
    matrix is read by the smaller of a pair's two entries; :func:`inverse` gives each pair its
    slower direction already): 1 where a pair reads what both NICs carry, 2 where it reads half of it. A pair
    bandwidth only drops below what both NICs carry when something is shared, and a host with a
    slower NIC reads every pair slow but 1 here. NaN where not measured. O(N^2)."""
    m = np.asarray(inverse_bandwidth, dtype=float)
    m = np.fmin(m, m.T)
    off = ~np.eye(len(m), dtype=bool) & np.isfinite(m)
    fastest = np.min(np.where(off, m, np.inf), axis=1)  # inf: a host with no measured pair
    with np.errstate(invalid="ignore"):
        return np.where(off, m / np.fmax(fastest[:, None], fastest[None, :]), np.nan)


def _fewest_groups(apart: np.ndarray, keep: np.ndarray, budget: int) -> np.ndarray | None:
    """Labels 0.. of the fewest groups no ``apart`` pair shares (a minimum colouring of the graph
    ``apart``), ties broken by the most ``keep`` pairs kept together; None when the
    branch-and-bound search visits more than ``budget`` nodes. Hosts are placed in order of most
    ``apart`` pairs first, each into a group already open or one new group (so no colouring is
    met twice up to renaming); groups are bit masks. Exponential in the worst case, bounded by
    ``budget`` (200,000 nodes take 0.1-0.2 s here)."""
    n = len(apart)
    order = [int(v) for v in np.argsort(-np.asarray(apart).sum(axis=1), kind="stable")]
    bits = [sum(1 << int(u) for u in np.flatnonzero(row)) for row in np.asarray(apart, dtype=bool)]
    near = [sum(1 << int(u) for u in np.flatnonzero(row)) for row in np.asarray(keep, dtype=bool)]
    groups: list[int] = []  # one bit mask of hosts per open group
    best: dict = {"groups": n + 1, "kept": -1, "masks": None}
    visited = 0

    def place(pos: int, kept: int) -> None:
        nonlocal visited
        visited += 1
        if visited > budget:
            raise _OverBudget
        if pos == n:
            if len(groups) < best["groups"] or kept > best["kept"]:
                best.update(groups=len(groups), kept=kept, masks=list(groups))
            return
        v = order[pos]
        for c in range(len(groups)):
            if not bits[v] & groups[c]:
                groups[c] |= 1 << v
                place(pos + 1, kept + (near[v] & groups[c]).bit_count())
                groups[c] &= ~(1 << v)
        if len(groups) + 1 <= best["groups"]:
            groups.append(1 << v)
            place(pos + 1, kept)
            groups.pop()

    try:
        place(0, 0)
    except _OverBudget:
        return None
    out = np.empty(n, dtype=np.int64)
    for c, mask in enumerate(best["masks"]):
        out[[v for v in range(n) if mask >> v & 1]] = c
    return out


class _OverBudget(Exception):
    pass


def split_slow_pairs(parent: np.ndarray, labels: np.ndarray, inverse_bandwidth: np.ndarray,
                     far: float = FAR_RATIO, max_hosts: int = DEAL_MAX_HOSTS) -> np.ndarray:
    """``labels`` (a refinement of ``parent``: the latency's groups split by the bandwidth) with
    the hosts of a ``parent`` group dealt again when one of its groups in ``labels`` holds a *slow
    pair*, one reading ``far`` times slower than what both its hosts carry (:func:`slowness`):
    nothing inside a rack is shared, so such a pair is two racks in one group. The hosts are dealt
    into the fewest groups that hold no slow pair (ties: the most pairs of ``labels`` kept
    together), and that is taken only when it has at least as many groups there as ``labels``,
    each of 2 hosts or more, and every two of them are told apart by their pairs: at least 2
    measured pairs between them slow, and more than half of those measured. Those checks keep a
    rack whole when noise slows one or two of its pairs: with 3% or 6% of all pairs read at
    0.40-0.75x their rate, it made none of 60 drawn clusters per scenario worse (``python
    benchmarks/probe_groups.py --simulate 60 --noisy-pairs 0.03``; ``tests/test_probegroups.py``).
    They do not catch every such case: where two racks each hold a noisy pair and a host of each
    pair reads the other at the full rate (alone on its uplinks), those two hosts become a group
    of their own, the case the rule is for read the other way round (``python
    benchmarks/probe_groups.py --simulate 100 --noisy-in-rack 2 --small``: 3 of 100 flat-latency
    clusters made worse, none better; without the noise, ``--small``: one better in each scenario,
    none worse). No in-rack pair of the real probes reads near slow: at most 1.02x what both
    hosts carry in the 59 small ones (``benchmarks/small_clusters_bw.py``), 1.07x the in-rack
    median in the 52 of the proof runs (``benchmarks/probe_groups.py``).
    A ``parent`` group over ``max_hosts`` hosts, or whose
    search runs over its budget (each such group's own: 0.1-0.2 s here), is left as it is. Labels renumbered 0.. in order of first
    appearance.

    Why: where the latency finds no racks (a small cluster on a busy machine), the groups are the
    inverse bandwidth's own, and a cross-rack pair alone on its uplinks in its round reads the
    full rate: average linkage then deals a rack of 2 to two other racks, each group holding one
    slow pair (``benchmarks/results/2026-12-03-gloo-3-3-2-bw`` p1: {r0h0, r0h1, r0h2, r2h0} and
    {r1h0, r1h1, r1h2, r2h1}); four racks of 2 stay one group the same way (2 of 6
    ``benchmarks/results/2026-12-03-small-clusters-bw`` 2+2+2+2 probes). The fewest groups
    without a slow pair are the racks in all three. Exponential in the worst case (a minimum
    colouring), bounded by a budget of visited nodes; O(N^2) to check."""
    parent, lab = np.asarray(parent), _canonical(np.asarray(labels))
    slow = slowness(inverse_bandwidth)
    apart = np.isfinite(slow) & (slow >= far)
    out, nxt = lab.copy(), int(lab.max()) + 1
    for g in np.unique(parent):
        idx = np.flatnonzero(parent == g)
        sub = lab[idx]
        same = sub[:, None] == sub[None, :]
        if len(idx) > max_hosts or not (apart[np.ix_(idx, idx)] & same).any():
            continue
        dealt = _fewest_groups(apart[np.ix_(idx, idx)], same, _DEAL_BUDGET)
        if dealt is None or dealt.max() + 1 < len(np.unique(sub)) or np.bincount(dealt).min() < 2:
            continue
        told_apart = True
        for a in range(int(dealt.max()) + 1):
            for b in range(a + 1, int(dealt.max()) + 1):
                v = slow[np.ix_(idx[dealt == a], idx[dealt == b])]
                v = v[np.isfinite(v)]
                if 2 * int((v >= far).sum()) <= len(v) or int((v >= far).sum()) < 2:  # (none measured: not told)
                    told_apart = False
        if told_apart:
            out[idx] = nxt + dealt
            nxt += int(dealt.max()) + 1
    return _canonical(out)


def joins_of_two(labels: np.ndarray, inverse_bandwidth: np.ndarray, far: float = FAR_RATIO,
                 max_joins: int | None = None) -> list[np.ndarray]:
    """The groupings that pair bandwidths cannot rule out beside ``labels``: ``labels`` with two
    groups joined, one grouping for each two groups whose measured pairs between them (at least 2)
    all read under ``far`` times what both their hosts carry (:func:`slowness`), i.e. as fast as
    pairs inside a rack. With ``max_joins``: only the joins into the largest groups, at most that
    many. Labels renumbered 0.. in order of first appearance.

    Why: the latency can cut a rack in two (a rack of 4 into two pairs: 2 of the 56 ``--bandwidth``
    probes of ``benchmarks/results/2026-12-03-small-clusters-bw``), and the groups keep the
    latency's cuts (a wrong join prices the flows between two racks as free). Two racks whose
    uplinks carry every flow between them read alike, so these are groupings to hedge over
    (``plink order``'s hedge, :func:`plink.solvers.hedge.hedged_pick`), not groups.
    O(N^2 + K^2)."""
    lab = _canonical(np.asarray(labels))
    slow = slowness(inverse_bandwidth)
    k = int(lab.max()) + 1
    found = []
    for a in range(k):
        for b in range(a + 1, k):
            v = slow[np.ix_(lab == a, lab == b)]
            v = v[np.isfinite(v)]
            if len(v) >= 2 and bool((v < far).all()):
                found.append((-int(np.sum((lab == a) | (lab == b))), a, b))
    if max_joins is not None:
        found = sorted(found)[:max_joins]
        found.sort(key=lambda t: (t[1], t[2]))
    return [_canonical(np.where(lab == b, a, lab)) for _, a, b in found]


def splits_in_two(latency: np.ndarray, labels: np.ndarray, min_size: int = SPLIT_MIN_SIZE,
                  max_splits: int | None = None) -> list[np.ndarray]:
    """The groupings that latencies alone cannot rule out beside ``labels``: one per group of
    ``min_size`` or more hosts, ``labels`` with that group split in two by average linkage of
    ``latency`` (µs, may be asymmetric, NaN = not measured) over its hosts: the faster direction
    of each pair, a pair measured in neither at the group's median (a group with no pair measured
    inside is not split).  The new part gets label
    ``labels.max() + 1``.  With ``max_splits``: only the largest groups' splits, at most that
    many (groups of one size in label order), still returned in label order.

    Why: a rack of 2 and its neighbour can read as one group by latency, and no statistic of the
    latencies told the two true splits from the 147 spurious ones of the shipped proof probes
    (README, "Hedging over the plausible groupings"); ``plink order`` prices its candidate orders under each
    of these groupings (:func:`plink.solvers.hedge.hedged_pick`).  O(sum of g^2 log g) over the
    groups' sizes g.
    """
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    from plink.structure.hierarchy import symmetrise_min

    lat = np.asarray(latency, dtype=float)
    labels = np.asarray(labels)
    groups, sizes = np.unique(labels, return_counts=True)
    visit = range(len(groups)) if max_splits is None else np.argsort(-sizes, kind="stable")
    out = {}
    for i in visit:
        if max_splits is not None and len(out) >= max_splits:
            break
        m = np.flatnonzero(labels == groups[i])
        if len(m) < max(min_size, 2):
            continue
        s = symmetrise_min(lat[np.ix_(m, m)])
        if not np.isfinite(s).any():  # (no pair measured inside: nothing to split by)
            continue
        s = np.where(np.isfinite(s), s, np.nanmedian(s))
        np.fill_diagonal(s, 0.0)
        cut = fcluster(linkage(squareform(s, checks=False), method="average"), 2, criterion="maxclust")
        if cut.max() < 2:  # (every pair at one distance: no split to hedge against)
            continue
        lab = labels.copy()
        lab[m[cut == 2]] = labels.max() + 1
        out[int(i)] = lab
    return [out[i] for i in sorted(out)]
