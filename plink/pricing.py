"""From probe data to priced cost models: missing pairs, groups, NIC and uplink capacities.

Two models price a rank order (``plink order --model``):

* ``shared`` (default, ``solvers.contention``): seconds of the collective's
  real steps, with host NICs and group (rack) uplinks shared by all flows
  of a step.
* ``pairsum`` (``solvers.costmodels``): the dissertation's §5.2.1 sum of
  independent pair costs, in µs.

**Missing pairs are never priced as if measured.**  ``fill_missing`` gives
every unmeasured pair the lowest (``low``), the median (``mid``) or the
highest (``high``) value measured between the same two groups (all measured
pairs when that block has none).  Orders are searched with ``high`` (the
solver avoids links nobody measured, as before); reports price every order
with ``low`` and ``high`` and give the range, since every model here is
monotone in each pair's latency.

**Groups** come from ``--groups`` (labels), else from
``plink.structure.hierarchy.infer_hierarchy`` (falling back to the host sets
of the probe file's measured uplinks, ``ProbeData.uplinks`` with ``up_bps`` /
``down_bps``, when it finds one group) over
the latency matrix and the inverse bandwidth matrix (the probe measures the pairs
of a round concurrently, so cross-rack pairs share uplinks and measure slower: on
the emulated 16-host cluster under load latency did not separate the racks and
bandwidth did): the latency's groups, each split where the inverse bandwidth's grouping
splits it and the pairs between the parts measured far
(:func:`plink.structure.probegroups.split_by_far_pairs`).

**Capacities.**  NIC: with a bandwidth matrix, a host's fastest measured
pair (isolated pairs do show what a NIC carries); without one, ``nic_gbps``
(assumed, reported).  Paths: a bandwidth matrix read from a file
(``--kind bandwidth``, ``--bandwidth-matrix``; each pair measured on its
own) also limits each pair's flows (``Network.path``); ``plink probe``'s
pairs are measured a round at a time, sharing uplinks, so they are not.  Uplinks: measured ones from the probe file (an uplink
whose host set is several whole groups, e.g. measured for two racks together,
becomes an outer level of links over those hosts; one that holds part of a
group and hosts of another is not priced, its rate being no one link's; one over
part of a group whose other hosts no test holds, i.e. hosts lost before the test, is
that group's uplink measured with fewer senders: its rate is the capacity when
they saturated it (under :data:`SATURATED` of their NICs' sum), else a floor
for it; the group uplinks' capacities,
both directions, that differ by less than the uplink test's own noise across its
passes are priced as one, :mod:`plink.structure.capacities`); otherwise
the conservative oversubscribed case, an uplink carries what one host NIC
does (``contention.conservative_uplinks``) - isolated pairs never set an
uplink, since one flow alone cannot see oversubscription.  ``Network.assumed`` lists
what was assumed (``nic``, ``uplinks``).

Complexity: O(N^2) plus the hierarchy inference.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from plink.data.inputs import MATRIX_BANDWIDTH
from plink.data.probefile import ProbeData
from plink.errors import InputError, OptionError
from plink.solvers.contention import Network, conservative_uplinks
from plink.solvers.costmodels import PairCost
from plink.structure.capacities import capacity_classes

FILLS = ("low", "mid", "high")
DEFAULT_NIC_GBPS = 10.0  #: assumed host NIC when no bandwidth was probed


def fill_missing(matrix: np.ndarray, labels: np.ndarray | None, how: str, missing: np.ndarray | None = None
                 ) -> np.ndarray:
    """``matrix`` with unmeasured off-diagonal pairs set per group block (see module docstring). O(N^2)."""
    if how not in FILLS:
        raise ValueError(f"fill must be one of {FILLS}, got {how!r}")
    m = np.array(matrix, dtype=float)
    n = m.shape[0]
    off = ~np.eye(n, dtype=bool)
    miss = (np.isnan(m) & off) if missing is None else (missing & off)
    if not miss.any():
        return m
    known = m[off & ~miss]
    if known.size == 0:
        raise InputError("no pair of hosts was measured: nothing to order by")
    pick = {"low": np.min, "mid": np.median, "high": np.max}[how]
    glob = float(pick(known))
    if labels is None:
        m[miss] = glob
        return m
    lab = np.asarray(labels)
    ia, ib = np.nonzero(miss)
    cache: dict[tuple[int, int], float] = {}
    for a, b in zip(ia.tolist(), ib.tolist()):
        key = (min(lab[a], lab[b]), max(lab[a], lab[b]))
        if key not in cache:
            block = off & ~miss & (((lab[:, None] == key[0]) & (lab[None, :] == key[1]))
                                   | ((lab[:, None] == key[1]) & (lab[None, :] == key[0])))
            vals = m[block]
            cache[key] = float(pick(vals)) if vals.size else glob
        m[a, b] = cache[key]
    return m


def fill_bandwidth(bw: np.ndarray, labels, fill: str) -> np.ndarray:
    """``bw`` with unmeasured off-diagonal pairs filled as ``fill_missing`` does for latency, ``fill``
    naming the latency end: bandwidth is better when higher, so the worst plausible (``high``
    latency) is the lowest bandwidth. O(N^2)."""
    inverse = {"low": "high", "mid": "mid", "high": "low"}[fill]
    return fill_missing(bw, labels, inverse, np.isnan(bw) & ~np.eye(len(bw), dtype=bool))


def pair_cost(probe: ProbeData, use_bandwidth: bool = True, labels=None, fill: str = "high") -> tuple[PairCost, int]:
    """The dissertation's pair-cost model of ``probe`` with missing pairs filled (``fill_missing``).

    Returns the model and the number of unmeasured pairs.
    """
    missing = probe.missing_mask()
    n_missing = int(np.triu(missing, 1).sum())
    lat = fill_missing(probe.latency, labels, fill, missing)
    bw = None
    if use_bandwidth and probe.bandwidth is not None:
        off = ~np.eye(probe.n, dtype=bool)
        if np.isfinite(probe.bandwidth[off]).any():
            bw = fill_bandwidth(probe.bandwidth, labels, fill)
    return PairCost.from_matrices(lat, bw), n_missing


@dataclass
class Groups:
    """Group label per host and where it came from."""

    labels: np.ndarray
    source: str  #: "groups file", "probe uplinks", "inferred from latency|bandwidth|inverse bandwidth" or "too few hosts to find racks"
    confidence: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def k(self) -> int:
        return int(self.labels.max()) + 1 if len(self.labels) else 0


def _relabel(labels) -> np.ndarray:
    _, inv = np.unique(np.asarray(labels), return_inverse=True)
    return inv.astype(np.int64)


def uplink_labels(probe: ProbeData) -> np.ndarray | None:
    """Label per host from the probe's measured uplinks (disjoint host sets), -1 for hosts in none."""
    uplinks = getattr(probe, "uplinks", None)
    if not uplinks:
        return None
    lab = np.full(probe.n, -1, dtype=np.int64)
    for g, u in enumerate(uplinks):
        hosts = [int(h) for h in u.hosts]
        if any(h < 0 or h >= probe.n or lab[h] >= 0 for h in hosts):
            return None  # overlapping or out of range: not a partition
        lab[hosts] = g
    return lab


def find_groups(probe: ProbeData, labels=None, seed: int = 0, use_bandwidth: bool = True) -> Groups:
    """Groups of ``probe``'s hosts: given ``labels``, else inferred, else the measured uplinks' host sets.

    Inferred from the latency matrix and, when the probe has one, from the
    inverse bandwidth matrix: the latency's groups, each split where the
    bandwidth's grouping splits it and the pairs between the parts measured far
    (:func:`plink.structure.probegroups.split_by_far_pairs`; the bandwidth's
    merges are not taken).  ``Groups.confidence`` is the silhouette of the
    groups on the latency matrix (on the inverse bandwidth when the groups are
    exactly the bandwidth's); for given ``labels``, the higher of the two.  When
    inference finds no structure (one group) and the probe measured uplinks
    covering every host, their host sets are the groups (not with ``use_bandwidth=False``,
    ``plink order --no-bandwidth``, which sets the measured uplinks aside).
    Measured uplinks that are not groups become an outer level of
    ``network``.
    """
    if labels is not None:
        lab = _relabel(labels)
        return Groups(lab, "groups file", _given_silhouette(probe, lab, use_bandwidth))
    up = uplink_labels(probe) if use_bandwidth else None  # (use_bandwidth=False: the uplinks set aside too)
    found = _infer(probe, seed, use_bandwidth) if probe.n >= 3 else None
    if (found is None or found.k < 2) and up is not None and (up >= 0).all():
        return Groups(_relabel(up), "probe uplinks")
    return found if found is not None else Groups(np.zeros(probe.n, dtype=np.int64), "too few hosts to find racks")


def _given_silhouette(probe: ProbeData, labels: np.ndarray, use_bandwidth: bool) -> float | None:
    """How clearly the probe shows groups it was given (a groups file): their silhouette on the
    latency matrix or, when the probe has pair bandwidths, on the inverse bandwidths, whichever is
    higher (racks may show in one only); None for one group or fewer than 3 hosts. O(N^2)."""
    from plink.structure.metrics import separation
    from plink.structure.probegroups import inverse

    if probe.n < 3 or int(labels.max()) < 1:
        return None
    lat = np.asarray(probe.structure_latency, dtype=float)
    best = separation(np.fmin(lat, lat.T), labels)
    if use_bandwidth and probe.bandwidth is not None and not probe.inverse_bandwidth:
        inv = inverse(probe.bandwidth)
        if np.isfinite(inv[~np.eye(probe.n, dtype=bool)]).any():
            best = max(best, separation(inv, labels))
    return best


def _infer(probe: ProbeData, seed: int, use_bandwidth: bool) -> Groups:
    from plink.structure.probegroups import infer_probe_groups

    # the probe runs the pairs of a round at the same time, so cross-rack pairs share uplinks and
    # measure slower: 1/bandwidth is a distance (§4.2.1), often clearer than latency on busy hosts.
    # A bandwidth-only matrix is already the distance grouped (``structure_latency``): splitting
    # its groups by the same matrix again would cut them (``plink group`` does not either)
    bw = probe.bandwidth if use_bandwidth and not probe.inverse_bandwidth else None
    labels, conf, source = infer_probe_groups(
        probe.structure_latency, bw, seed=seed,
        latency_name="inverse bandwidth" if probe.inverse_bandwidth else "latency")
    return Groups(labels, source, conf)


def _passes(u, key: str) -> list[float]:
    """An uplink's passes in one direction (its one figure when the probe kept no passes); a
    probe file's are checked when it is read (``plink.data.probefile``)."""
    return [float(v) for v in getattr(u, "extra", {}).get(f"passes_{key}") or [getattr(u, key)]]


def _pool_uplinks(priced: list, up: np.ndarray, down: np.ndarray) -> str | None:
    """Price the measured group uplinks (both directions, one kind of link) that differ by less
    than the test's own noise as one capacity (:mod:`plink.structure.capacities`); ``up`` /
    ``down`` are updated in place.  The note to show, or None when nothing was pooled."""
    samples = [_passes(u, "up_bps") for _, u in priced] + [_passes(u, "down_bps") for _, u in priced]
    if len(samples) < 2 or not all(v > 0 and np.isfinite(v) for s in samples for v in s):
        return None
    cc = capacity_classes(samples)
    if not cc.pooled:
        return None
    m = len(priced)
    for j, (g, _) in enumerate(priced):
        up[g], down[g] = cc.values[j], cc.values[m + j]
    return (f"{len(samples)} measured uplink capacities (up and down) priced as {len(cc.classes)} "
            f"({', '.join(f'{cc.values[c[0]] * 8e-6:.0f}' for c in cc.classes)} Mbit/s): the ones within "
            f"{np.expm1(cc.width) * 100:.1f}% of each other differ by less than the test's noise "
            f"(+-{np.expm1(cc.sigma) * 100:.1f}% per pass)")


#: an uplink test over part of a group (hosts lost before it) measured the group's capacity when
#: its senders got less than this share of their NICs' sum: they filled the link (the netns
#: cluster's oversubscribed racks give 0.24, a link that carries every NIC about 0.9)
SATURATED = 0.8

UPLINK_ASSUMPTIONS = ("oversubscribed", "non-blocking")  #: what an unmeasured group uplink is assumed to carry


#: how the notes of :func:`network` begin when ``use_bandwidth=False`` set a probe's bandwidths and uplinks aside
SET_ASIDE = "the probe's bandwidths and uplinks set aside"


#: the note of :func:`network` on a bandwidth matrix read alone (``--kind bandwidth``)
NO_LATENCY_NOTE = ("no latency measured (a bandwidth matrix read alone): 'predicted' is the bytes' time, "
                   "without any latency (give the RTT matrix as the input and this one as --bandwidth-matrix)")


def network(probe: ProbeData, groups: Groups, *, fill: str = "high", use_bandwidth: bool = True,
            nic_gbps: float | None = None, uplinks: str = "oversubscribed", pool_uplinks: bool = True) -> Network:
    """The shared-link network of ``probe`` (see module docstring); latency one-way = RTT / 2.
    Its ``assumed`` says which capacities were assumed, not measured.

    ``uplinks``: what a group uplink nobody measured carries: ``"oversubscribed"`` (default, what
    orders are searched under) one host NIC, ``"non-blocking"`` every NIC of the group at once (the
    uplink never binds: the other end of what it could be, for reports).  ``pool_uplinks=False``
    prices every measured group uplink at its own figure, also where capacities differ by less
    than the test's noise (for comparison; :mod:`plink.structure.capacities`)."""
    if uplinks not in UPLINK_ASSUMPTIONS:
        raise ValueError(f"uplinks must be one of {UPLINK_ASSUMPTIONS}, got {uplinks!r}")
    n = probe.n
    lab = groups.labels
    lat_us = fill_missing(probe.latency, lab, fill, probe.missing_mask())
    lat = lat_us * 1e-6 / 2.0
    notes: list[str] = []
    assumption_notes: list[str] = []  # the notes on assumed capacities (moot when no bytes move)
    if probe.inverse_bandwidth:  # its "latency" is microseconds per byte: next to nothing as a time
        notes.append(NO_LATENCY_NOTE)
    bw = probe.bandwidth if use_bandwidth else None
    # use_bandwidth=False (--no-bandwidth): latency only, so the measured uplinks are set aside too (their
    # 569 Mbit/s against assumed 10 Gbit/s NICs priced the order by the uplinks alone)
    probe_uplinks = (getattr(probe, "uplinks", None) or []) if use_bandwidth else []
    set_aside = not use_bandwidth and (probe.bandwidth is not None or bool(getattr(probe, "uplinks", None)))
    nic = None
    if bw is not None:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a host with no measured bandwidth: NaN, filled below
            best = np.nanmax(np.where(np.eye(n, dtype=bool), np.nan, bw), axis=1) if n > 1 else np.full(n, np.nan)
        if np.isfinite(best).any():
            best = np.where(np.isfinite(best), best, np.nanmedian(best))
            nic = best * 1e9 / 8
            if nic_gbps is not None:
                notes.append("--nic-gbps ignored: NIC capacities come from the measured bandwidth")
    path = None
    if bw is not None and nic is not None and probe.meta.get("bandwidth_source") == MATRIX_BANDWIDTH:
        # each pair measured on its own (a file's matrix): the most one flow gets on that path
        filled = fill_bandwidth(bw, lab, fill)
        path = np.fmin(filled, filled.T) * 1e9 / 8
        notes.append("each pair's bandwidth from the matrix limits that pair's flows (measured alone)")
    bw_assumed = nic is None
    if nic is None:
        gbps = DEFAULT_NIC_GBPS if nic_gbps is None else float(nic_gbps)
        if not gbps > 0:
            raise OptionError(f"--nic-gbps (nic_gbps) must be > 0, got {nic_gbps}")
        nic = np.full(n, gbps * 1e9 / 8)
        notes.append((f"{SET_ASIDE} (latency only, --no-bandwidth)" if set_aside
                      else "no bandwidth measured") + f": host NICs assumed {gbps:g} Gbit/s"
                     + (" (set --nic-gbps)" if nic_gbps is None else ""))
        assumption_notes.append(notes[-1])
    k = int(lab.max()) + 1 if n else 0
    if uplinks == "oversubscribed":
        up = conservative_uplinks(nic, lab)
    else:
        up = np.bincount(lab, weights=nic, minlength=k).astype(float)
    down = up.copy()
    measured = np.zeros(k, dtype=bool)
    other = []  # measured uplinks whose host set is several whole groups: an outer level
    cut = []  # ... that hold part of a group: no link of these groups (measured over other groups)
    priced = []  # (group, uplink) of the measured group uplinks
    partial, floors = [], []  # tests over part of a group (hosts lost before them): saturated, or a floor
    tested = {int(h) for u in probe_uplinks for h in u.hosts}
    for u in probe_uplinks:
        hosts = sorted(int(h) for h in u.hosts)
        match = [g for g in range(k) if sorted(np.flatnonzero(lab == g).tolist()) == hosts]
        if match:
            up[match[0]], down[match[0]] = float(u.up_bps), float(u.down_bps)
            measured[match[0]] = True
            priced.append((match[0], u))
        elif hosts and np.flatnonzero(np.isin(lab, lab[hosts])).tolist() == hosts:
            other.append(u)
        elif hosts and len(set(lab[hosts].tolist())) == 1 and not tested & (
                set(np.flatnonzero(lab == lab[hosts[0]]).tolist()) - set(hosts)):
            g = int(lab[hosts[0]])
            if max(float(u.up_bps), float(u.down_bps)) < SATURATED * float(nic[hosts].sum()):
                up[g], down[g] = float(u.up_bps), float(u.down_bps)
                measured[g] = True
                priced.append((g, u))
                partial.append(u)
            else:  # the link carried all they sent: it holds at least that
                up[g], down[g] = max(up[g], float(u.up_bps)), max(down[g], float(u.down_bps))
                floors.append(u)
        else:
            cut.append(u)
    if partial:
        notes.append(f"{len(partial)} measured uplink(s) over part of a group (hosts lost before the test) priced as "
                     "the group's: its hosts filled it")
    if floors:
        notes.append(f"{len(floors)} measured uplink(s) over part of a group (hosts lost before the test) did not "
                     "fill it: the group's uplink priced at no less than the rate measured, else as assumed below")
    note = _pool_uplinks(priced, up, down) if pool_uplinks else None
    if note:
        notes.append(note)
    if cut:
        # e.g. a rack and one host of another: its test's flows left through two racks' uplinks, so
        # its rate is no one link's capacity (priced as one, it made an outer level cutting a rack)
        notes.append(f"{len(cut)} measured uplink(s) not priced: each holds part of a group, so it is no "
                     "link of these groups (measured over other groups; probe again, or give --groups "
                     "that make each one a group)")
    kept, overlapping, seen = [], [], set()
    for u in other:  # an outer level is one link per host set: sets that share hosts cannot all be one
        hs = {int(h) for h in u.hosts}
        if hs & seen:
            overlapping.append(u)
        else:
            kept.append(u)
        seen |= hs
    other = kept
    if overlapping:
        notes.append(f"{len(overlapping)} measured uplink(s) share hosts with another measured uplink that is not "
                     "one group: not priced (price them with --groups that make each one a group)")
    outer = ()
    if other:
        olab = np.full(n, -1, dtype=np.int64)
        cap_up, cap_down = [], []
        for j, u in enumerate(other):
            olab[[int(h) for h in u.hosts]] = j
            cap_up.append(float(u.up_bps))
            cap_down.append(float(u.down_bps))
        rest = np.flatnonzero(olab < 0)  # hosts under no such uplink: a link of their own that never binds
        olab[rest] = len(other) + np.arange(len(rest))
        cap_up += [np.inf] * len(rest)
        cap_down += [np.inf] * len(rest)
        outer = ((olab, np.array(cap_up), np.array(cap_down)),)
        notes.append(f"{len(other)} measured uplink(s) span several groups: priced as an outer level of links")
    assumed = []
    if bw_assumed:
        assumed.append("nic")
    if k > 1 and not measured.all():
        assumed.append("uplinks")
        # (set aside, none is used; else the count is of the uplinks not measured: it said "2 of 5 group
        # uplinks measured" of 3 measured)
        what = ("no group uplink " + ("used" if set_aside else "measured") if not measured.any()
                else f"{int((~measured).sum())} of {k} group uplinks not measured")
        notes.append(f"{what}: assumed the oversubscribed case, an uplink carries what one host NIC does"
                     if uplinks == "oversubscribed" else
                     f"{what}: assumed non-blocking, an uplink carries every host NIC of its group")
        assumption_notes.append(notes[-1])
    return Network(lat, nic, nic.copy(), lab, up, down, tuple(notes), outer, tuple(assumed), path,
                   tuple(assumption_notes))
