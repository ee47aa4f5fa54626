"""The 2LHA aggregation plan: chunks, local masters and global masters.

2-level hierarchical aggregation (dissertation §4.1.2) splits the buffer into
chunks; for every chunk each group has one *local master* (LM) that sums
the chunk inside the group, and one of the LMs is the chunk's *global
master* (GM) that sums the group partials and sends the result back
(§4.2.2).  This module decides *who* is master of *what*; the actions that
move the bytes are derived from the plan by :mod:`plink.schedule.dag`.

Balance (§4.2.2): every group receives a number of GMs proportional to its
*capacity* and, inside a group, every node a number of LMs proportional to
its capacity.  Capacities are

* ``"cardinality"``: a group's capacity is its number of members, a node's
  is 1 (the paper's default rule);
* ``"bandwidth"`` (Quicktune's rule, §4.2.3): a group's capacity is its
  aggregate outbound bandwidth ``sum_{m in g} sum_{n not in g} BW(m, n)``,
  a node's is its aggregate bandwidth ``sum_n BW(i, n)``.

Why GMs proportional to cardinality balance the *nodes*: a node's load in
Quicktune's model is ``sum_c S(c) (LM(i,c) |G(i)| + GM(i,c) |G|)``.  A node
of a group of size ``n_g`` is LM of about ``C / n_g`` chunks (LM load about
``C S`` whatever ``n_g``) and, with ``C n_g / N`` GMs in its group, GM of
about ``C / N`` chunks: every node gets the same load.

The set-partition step is **greedy LPT on uniform (related) machines**:
items (chunks, weight = their bytes times their role's multiplier) are
taken heaviest first and each is given to the bin that minimises
``(load + w) / capacity`` (ties: lowest index).  LPT is chosen over
Karmarkar–Karp because the bins have *unequal* target shares (capacities),
which LPT handles directly while KK's differencing is defined for equal
shares; with the 64 KiB equal-sized chunks of §4.2.2 LPT reaches the
integer optimum (bin loads differ by at most one chunk of weight
``w / capacity``).  Bounds: Graham, "Bounds on multiprocessing timing
anomalies", SIAM J. Appl. Math. 17 (1969) (4/3 for identical machines);
Gonzalez, Ibarra & Sahni, "Bounds for LPT schedules on uniform
processors", SIAM J. Comput. 6 (1977) (< 2 for uniform machines).
Complexity: ``O(C log C + C k)`` for the GMs and ``O(C n_g)`` per group for
the LMs (``O(C log n_g)`` with a heap when the capacities are equal).

Groups come from a groups file (``plink group``); without one,
:func:`default_groups` takes the structure inference of
:mod:`plink.structure.hierarchy` when present, else :func:`fallback_groups`
clusters the latency matrix (average-linkage
agglomerative clustering, ``round(sqrt(N))`` groups — §4.2.1's choice of
``k = sqrt(n)``).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plink.errors import InputError, OptionError, PlinkError
from plink.data.groupfile import group_codes
from plink.data.inputs import is_number, is_whole_number
from plink.data.probefile import ProbeData, check_every_host_measured

DEFAULT_CHUNK = 64 * 1024  #: bytes; AggEngine's chunk size (§4.2.2)
CAPACITY_MODES = ("cardinality", "bandwidth")


@dataclass
class Plan:
    """Master assignment of a 2LHA schedule.

    ``lm[c, g]`` is the host index of chunk ``c``'s local master in group
    ``g``; ``gm[c]`` is the host index of chunk ``c``'s global master, which
    is always one of that chunk's LMs (``lm[c, labels[gm[c]]] == gm[c]``).
    ``chunks[c] = (offset, length)`` in bytes.
    """

    hosts: list[str]
    labels: np.ndarray
    chunks: np.ndarray
    lm: np.ndarray
    gm: np.ndarray
    size: int
    capacity: str = "cardinality"
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # copies: a plan holds its own tables (one sharing the caller's labels changed when they did)
        self.labels = _whole_table("labels", self.labels)
        self.chunks = _whole_table("chunks", self.chunks).reshape(-1, 2)
        self.lm = _whole_table("lm", self.lm).reshape(len(self.chunks), -1)
        self.gm = _whole_table("gm", self.gm)
        validate_plan(self)

    @property
    def n(self) -> int:
        return len(self.hosts)

    @property
    def k(self) -> int:
        return int(self.labels.max()) + 1

    @property
    def n_chunks(self) -> int:
        return len(self.chunks)

    def members(self) -> list[np.ndarray]:
        return [np.flatnonzero(self.labels == g) for g in range(self.k)]

    def gm_group(self) -> np.ndarray:
        return self.labels[self.gm]

    def copy(self) -> "Plan":
        return Plan(list(self.hosts), self.labels.copy(), self.chunks.copy(), self.lm.copy(), self.gm.copy(),
                    self.size, self.capacity, dict(self.meta))


def _whole_table(what: str, value) -> np.ndarray:
    """A copy of ``value`` as an int64 array, or :class:`InputError` unless every entry is a whole number
    (the cast cut 1.5 to 1 and NaN to -2**63, silently; a string or None was numpy's or int()'s error)."""
    try:
        a = np.array(value)
    except ValueError:  # (a ragged list)
        raise InputError(f"{what} must be an array of whole numbers, got a ragged list") from None
    if a.ndim == 0:  # (one number is no table: len() of it was a TypeError)
        raise InputError(f"{what} must be {'an array of ' if is_whole_number(value) else ''}whole numbers, "
                         f"got {value!r}")
    try:
        if a.dtype.kind in "iub":
            return a.astype(np.int64)
        if a.dtype.kind == "f":
            bad = a[~(np.isfinite(a) & (a == np.round(a)) & (np.abs(a) < 2.0**63))].tolist()
        else:  # (objects, strings: one by one, as given: numpy reads [0, 'x'] as the strings '0', 'x')
            bad = [x for x in np.array(value, dtype=object).reshape(-1).tolist() if not is_whole_number(x)]
        if not bad:
            return a.astype(np.int64)
    except OverflowError:
        raise InputError(f"{what} must be whole numbers of 64 bits, got a larger one") from None
    raise InputError(f"{what} must be whole numbers, got {bad[0]!r}")


def validate_plan(p: Plan) -> None:
    """Raise :class:`PlinkError` unless ``p`` is a consistent 2LHA plan."""
    n = len(p.hosts)
    if n < 1 or p.labels.shape != (n,):
        raise PlinkError(f"schedule: {len(p.labels)} group labels for {n} hosts")
    k = int(p.labels.max()) + 1
    if p.labels.min() < 0 or len(np.unique(p.labels)) != k:
        raise PlinkError("schedule: group labels must be 0..k-1 with every group non-empty")
    c = len(p.chunks)
    if c == 0:
        raise PlinkError("schedule: no chunks")
    off, ln = p.chunks[:, 0], p.chunks[:, 1]
    if ln.min() <= 0 or off[0] != 0 or np.any(off[1:] != off[:-1] + ln[:-1]) or off[-1] + ln[-1] != p.size:
        raise PlinkError("schedule: chunks must tile the buffer [0, size) in order")
    if p.lm.shape != (c, k) or p.gm.shape != (c,):
        raise PlinkError(f"schedule: master tables must be ({c}, {k}) and ({c},)")
    if p.lm.size and (p.lm.min() < 0 or p.lm.max() >= n):
        raise PlinkError("schedule: a local master is not a host index")
    if np.any(p.labels[p.lm] != np.arange(k)[None, :]):
        raise PlinkError("schedule: a local master is not a member of its group")
    if p.gm.min() < 0 or p.gm.max() >= n or np.any(p.lm[np.arange(c), p.labels[p.gm]] != p.gm):
        raise PlinkError("schedule: a global master is not its chunk's local master")
    if p.capacity not in CAPACITY_MODES:
        raise PlinkError(f"schedule: unknown capacity mode {p.capacity!r}")


# ---------------------------------------------------------------------------
# inputs


MAX_CHUNKS = 1 << 20  #: a schedule's chunks
#: hosts x chunks of a schedule: planning and checking it take ~190 bytes each (0.8 GB here)
MAX_CHUNK_HOSTS = 1 << 22


def _whole_bytes(what: str, value) -> int:
    """``value`` as an int number of bytes, or :class:`OptionError` unless it is a whole number (an int,
    or a whole float: ``1e6``; not ``1.5``, NaN, a bool or a string)."""
    if getattr(value, "ndim", None) == 0:  # (a 0-d array: one number)
        value = value[()]
    if is_whole_number(value):
        return int(value)
    hint = ""
    if isinstance(value, (str, bytes)):
        hint = (" (the library takes a number of bytes, e.g. 1 << 20; plink.units.parse_size reads a size "
                "with a unit, as the plink command does)")
    raise OptionError(f"{what} must be a whole number of bytes, got {value!r}{hint}")


def chunk_buffer(size: int, chunk: int = DEFAULT_CHUNK) -> np.ndarray:
    """``(C, 2)`` array of ``(offset, length)`` tiling ``[0, size)``; the last chunk may be short.
    ``size`` and ``chunk`` are whole numbers of bytes (whole floats, ``1e6``, are taken)."""
    size, chunk = _whole_bytes("buffer size", size), _whole_bytes("chunk size", chunk)
    if size <= 0:
        raise OptionError(f"buffer size must be > 0 bytes, got {size}")
    if chunk <= 0:
        raise OptionError(f"chunk size must be > 0 bytes, got {chunk}")
    if chunk > size:
        raise OptionError(f"chunk size {chunk} B is larger than the buffer ({size} B): give --chunk {size}B or less")
    count = -(-size // chunk)
    if count > MAX_CHUNKS:
        raise PlinkError(f"{count} chunks of {chunk} B in a {size} B buffer: at most {MAX_CHUNKS} (take a larger chunk)")
    off = np.arange(0, size, chunk, dtype=np.int64)
    ln = np.minimum(chunk, size - off)
    return np.stack([off, ln], axis=1)


def fallback_groups(probe: ProbeData, k: int | None = None, elasticity: float = 2.0) -> np.ndarray:
    """Group labels from the latency matrix alone (used without ``--groups``).

    Average-linkage agglomerative clustering (UPGMA, scipy) of the latency
    matrix, cut into ``k = round(sqrt(N))`` groups (§4.2.1: the GM traffic
    ``O(n/k + k)`` is minimal at ``k = sqrt(n)``), then bounded to sizes
    ``floor(N/(E k)) .. ceil(E N/k)`` (``E = elasticity``; at least 2 hosts):
    a group above the bound is split in two by average linkage of its own
    submatrix, and a group below it is dissolved, each of its hosts joining the
    group of least mean latency to it that has room.  On wide-area data plain
    average linkage makes a few huge groups and many singletons (PlanetLab 490:
    groups of 209 down to 1 host); the bounds keep 2LHA's premise of groups of
    about ``sqrt(N)``.  Missing pairs are priced as the worst measured pair.
    Labels are renumbered in order of first appearance.  ``k`` (default
    ``round(sqrt(N))``, at most ``N``) is a whole number >= 1, ``elasticity`` a
    finite number >= 1 (:class:`OptionError` otherwise).  Complexity
    ``O(N^2 log N)``.  ``plink group`` (ProbeEmbed) is the better grouping;
    this is the documented fallback.
    """
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    if k is not None:
        if not (is_whole_number(k) and k >= 1):
            raise OptionError(f"number of groups k must be a whole number >= 1, got {k!r}")
        k = int(k)
    if not (is_number(elasticity) and math.isfinite(elasticity) and elasticity >= 1):
        raise OptionError(f"elasticity must be a finite number >= 1 (group sizes N/(E k) .. E N/k), "
                          f"got {elasticity!r}")
    n = probe.n
    if k is None:
        k = max(1, int(round(math.sqrt(n))))
    k = min(k, n)
    if n == 1 or k == 1:
        return np.zeros(n, dtype=np.int64)
    lat = probe.latency.copy()
    finite = lat[np.isfinite(lat)]
    worst = float(finite.max()) if finite.size else 1.0
    lat[~np.isfinite(lat)] = worst
    lat = (lat + lat.T) / 2.0
    np.fill_diagonal(lat, 0.0)

    def split(idx: np.ndarray, parts: int) -> np.ndarray:
        if len(idx) <= parts:
            return np.arange(len(idx))
        sub = lat[np.ix_(idx, idx)]
        z = linkage(squareform(sub, checks=False), method="average")
        return fcluster(z, t=parts, criterion="maxclust") - 1

    raw = split(np.arange(n), k)
    lo = max(2, math.floor(n / (elasticity * k)))
    hi = max(lo, math.ceil(elasticity * n / k))
    groups = [np.flatnonzero(raw == g) for g in np.unique(raw)]
    # split oversized groups (by linkage of their own submatrix) until all fit
    out: list[np.ndarray] = []
    while groups:
        g = groups.pop()
        if len(g) <= hi:
            out.append(g)
            continue
        lab = split(g, 2)
        parts = [g[lab == v] for v in np.unique(lab)]
        if len(parts) < 2 or min(len(p) for p in parts) == 0:  # degenerate linkage: halve
            parts = [g[: len(g) // 2], g[len(g) // 2:]]
        groups.extend(parts)
    # dissolve undersized groups, smallest first; hosts join the nearest group with room
    while True:
        out.sort(key=len)
        if len(out) <= 1 or len(out[0]) >= lo:
            break
        small = out.pop(0)
        for h in small:
            sizes = np.array([len(g) for g in out])
            dist = np.array([lat[h, g].mean() for g in out])
            dist[sizes >= hi] = np.inf
            if np.all(np.isinf(dist)):
                dist = np.array([lat[h, g].mean() for g in out])
            t = int(np.argmin(dist))
            out[t] = np.append(out[t], h)
    labels = np.empty(n, dtype=np.int64)
    for g, mem in enumerate(out):
        labels[mem] = g
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)
    remap = {int(labels[first[o]]): g for g, o in enumerate(order)}
    return np.array([remap[int(r)] for r in labels], dtype=np.int64)


#: the words :func:`default_groups` names the hosts it put with their nearest host by (``plink schedule``
#: then repeats its message as a note)
LONE_JOINED = "host(s) it left alone"


def default_groups(probe: ProbeData) -> tuple[np.ndarray, str]:
    """Groups of ``plink schedule`` without ``--groups``, and where they came from.

    The structure inference of :mod:`plink.structure.hierarchy` (``infer_hierarchy``, its
    finest level) when it is installed and finds 2 groups or more, a host it left alone in a
    group of its own put in the group of the host it has the smallest latency to (the
    inference leaves a host alone when it is near no rack; the schedule aggregates it with
    its nearest hosts all the same; the message names such hosts); otherwise (no such module,
    no structure found, or a single group left) :func:`fallback_groups`.  Groups given with
    ``--groups`` are taken as they are.
    """
    try:
        from plink.structure.hierarchy import infer_hierarchy
    except ImportError:
        infer_hierarchy = None
    if infer_hierarchy is not None and probe.n >= 4:
        check_every_host_measured(probe)  # names the host, as plink group does (and hierarchy by index could not)
        lat = probe.structure_latency
        lab = np.asarray(infer_hierarchy(lat, zeros="measured").labels, dtype=np.int64)
        lone = np.flatnonzero(np.bincount(lab)[lab] == 1)
        joined = ""
        if lone.size and lab.max() >= 1:
            try:
                from plink.structure.hierarchy import attach_lone_hosts
            except ImportError:
                pass
            else:
                lab, near = attach_lone_hosts(lat, lab)
                lab = np.asarray(lab, dtype=np.int64)
                names = ", ".join(f"{probe.names[i]} -> {probe.names[near[i]]}" for i in lone[:5])
                more = f" and {lone.size - 5} more" if lone.size > 5 else ""
                joined = (f"; {lone.size} {LONE_JOINED} (near no rack) put in the group of their "
                          f"nearest host: {names}{more}")
        sizes = np.bincount(lab)
        if len(sizes) >= 2 and sizes.min() >= 2:
            return lab, f"structure inference (infer_hierarchy): {len(sizes)} groups{joined}"
    labels = fallback_groups(probe)
    return labels, (f"fallback: average-linkage clustering of latency into round(sqrt({probe.n})) groups, "
                    "sizes bounded to N/(2k)..2N/k")


def _bandwidth(probe: ProbeData) -> np.ndarray | None:
    if probe.bandwidth is None:
        return None
    bw = np.nan_to_num(np.asarray(probe.bandwidth, dtype=float), nan=0.0)
    np.fill_diagonal(bw, 0.0)
    return bw


def capacities(labels: np.ndarray, bandwidth: np.ndarray | None, mode: str, names: list[str] | None = None,
               way_out: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Group and node capacities for :func:`plan_schedule` (see module docstring); ``names`` name the
    host without a measured bandwidth in the error, ``way_out`` ends it."""
    labels = np.asarray(labels)
    k = int(labels.max()) + 1
    if mode == "cardinality" or bandwidth is None:
        return np.bincount(labels, minlength=k).astype(float), np.ones(len(labels))
    if mode != "bandwidth":
        raise OptionError(f"unknown capacity mode {mode!r} (choose from {', '.join(CAPACITY_MODES)})")
    other = labels[:, None] != labels[None, :]
    out = (bandwidth * other).sum(axis=1)
    group_cap = np.bincount(labels, weights=out, minlength=k)
    node_cap = bandwidth.sum(axis=1)
    if k > 1 and np.any(group_cap <= 0):
        raise PlinkError(f"bandwidth capacities: a group has no measured outbound bandwidth{way_out}")
    if np.any(node_cap <= 0):
        i = int(np.flatnonzero(node_cap <= 0)[0])
        who = f" (host {names[i]})" if names is not None else ""
        raise PlinkError(f"bandwidth capacities: a host has no measured bandwidth{who}{way_out}")
    return group_cap, node_cap


def lpt_assign(weights: np.ndarray, capacity: np.ndarray, load: np.ndarray | None = None) -> np.ndarray:
    """Greedy LPT on uniform machines: bin index for every item.

    Items are taken in order of decreasing weight (stable); each goes to the
    bin minimising ``(load + w) / capacity``, ties to the lowest index.
    ``load`` (optional) is the bins' starting load and is updated in place.
    Complexity ``O(m log m + m b)``, ``O(m log b)`` when all capacities are
    equal (heap).  Graham (1969); Gonzalez, Ibarra & Sahni (1977).
    """
    w = np.asarray(weights, dtype=float)
    cap = np.asarray(capacity, dtype=float)
    if load is None:
        load = np.zeros(len(cap))
    out = np.empty(len(w), dtype=np.int64)
    order = np.argsort(-w, kind="stable")
    if np.all(cap == cap[0]):
        heap = [(float(load[b]), b) for b in range(len(cap))]
        heapq.heapify(heap)
        for i in order:
            ld, b = heapq.heappop(heap)
            out[i] = b
            load[b] = ld + w[i]
            heapq.heappush(heap, (float(load[b]), b))
        return out
    for i in order:
        b = int(np.argmin((load + w[i]) / cap))
        out[i] = b
        load[b] += w[i]
    return out


# ---------------------------------------------------------------------------
# planning


def plan_schedule(
    probe: ProbeData,
    labels: np.ndarray | None = None,
    *,
    size: int,
    chunk: int = DEFAULT_CHUNK,
    capacity: str | None = None,
) -> Plan:
    """Chunk the buffer and choose every chunk's LMs and GM (see module docstring).

    ``labels[i]`` is host ``i``'s group (``None``: :func:`default_groups`): any hashable
    values, taken as categories and numbered ``0 .. k-1`` in sorted order (:func:`group_codes`);
    these numbers are the plan's ``labels``, and group ``g``'s local masters are ``lm[:, g]``.
    ``size`` and ``chunk`` are whole numbers of bytes (``1e6`` is taken; ``1.5`` and ``'1MB'``
    are not: :func:`plink.units.parse_size` reads a size with a unit).
    ``capacity`` is ``"cardinality"`` or ``"bandwidth"``; default
    ``"bandwidth"`` when the probe has a bandwidth matrix (Quicktune's rule),
    else ``"cardinality"``.
    """
    if capacity is not None and not (isinstance(capacity, str) and capacity in CAPACITY_MODES):
        raise OptionError(f"unknown capacity mode {capacity!r} (choose from {', '.join(CAPACITY_MODES)})")
    if probe.n < 2:
        raise PlinkError(f"an all-reduce schedule needs at least 2 hosts, the probe file has {probe.n}")
    check_every_host_measured(probe)  # (a 3-host matrix with nothing measured was planned and timed)
    chunks = chunk_buffer(size, chunk)
    if probe.n * len(chunks) > MAX_CHUNK_HOSTS:
        raise PlinkError(f"{len(chunks)} chunks x {probe.n} hosts is more than a schedule takes "
                         f"({MAX_CHUNK_HOSTS} chunk-hosts, about 0.8 GB to plan): take a larger chunk")
    source = "groups file"
    if labels is None:
        labels, source = default_groups(probe)
    labels = group_codes(labels, list(probe.names))
    bw = _bandwidth(probe)
    if capacity is None:
        capacity = "bandwidth" if bw is not None else "cardinality"
    if capacity == "bandwidth" and bw is None:
        raise PlinkError("capacity 'bandwidth' needs a probe file with a bandwidth matrix")
    group_cap, node_cap = capacities(labels, bw, capacity, probe.names, ": probe its bandwidth again, or plan by "
                                     "group sizes with --capacity cardinality")
    lm, gm = assign_masters(labels, chunks[:, 1], group_cap, node_cap)
    plan = Plan([h.name for h in probe.hosts], labels, chunks, lm, gm, int(size), capacity,
                meta={"groups": source, "partition": "greedy LPT on uniform machines"})
    return plan


def assign_masters(labels: np.ndarray, lengths: np.ndarray, group_cap: np.ndarray,
                   node_cap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lm, gm)`` tables: GM groups by LPT over group capacities, then LMs per group by LPT.

    In group ``g`` a chunk weighs ``len * (|g| + k [g is its GM group])``
    (Quicktune's per-node load); heavier GM chunks are placed first, so GM
    counts per node are balanced as well as the total load.  With at least
    ``k`` chunks every group gets at least one GM (one chunk seeds each group
    before LPT places the others).
    """
    labels = np.asarray(labels, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=float)
    k = int(labels.max()) + 1
    c = len(lengths)
    if k == 1:
        gm_group = np.zeros(c, dtype=np.int64)
    elif c >= k:
        # every group holds at least one GM (a group without one would carry no global
        # work); the k largest chunks seed one group each, LPT places the rest
        order = np.argsort(-lengths, kind="stable")
        gm_group = np.empty(c, dtype=np.int64)
        gm_group[order[:k]] = np.arange(k)
        load = np.bincount(np.arange(k), weights=lengths[order[:k]], minlength=k).astype(float)
        gm_group[order[k:]] = lpt_assign(lengths[order[k:]], group_cap, load)
    else:
        gm_group = lpt_assign(lengths, group_cap)
    lm = np.empty((c, k), dtype=np.int64)
    for g in range(k):
        mem = np.flatnonzero(labels == g)
        w = lengths * (len(mem) + k * (gm_group == g))
        lm[:, g] = mem[lpt_assign(w, node_cap[mem])]
    gm = lm[np.arange(c), gm_group]
    return lm, gm


# ---------------------------------------------------------------------------
# balance


def node_loads(plan: Plan) -> np.ndarray:
    """Quicktune's per-node master load ``sum_c S(c) (LM(i,c) |G(i)| + GM(i,c) |G|)`` in bytes."""
    ln = plan.chunks[:, 1].astype(float)
    sizes = np.bincount(plan.labels, minlength=plan.k)
    load = np.zeros(plan.n)
    for g in range(plan.k):
        np.add.at(load, plan.lm[:, g], ln * sizes[g])
    np.add.at(load, plan.gm, ln * plan.k)
    return load


def _ratio(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return 1.0
    lo, hi = float(x.min()), float(x.max())
    if hi == 0:
        return 1.0
    return math.inf if lo == 0 else hi / lo


def balance(plan: Plan, bandwidth: np.ndarray | None = None) -> dict[str, float]:
    """max/min ratios of the master assignment (1.0 is perfect).

    ``load``: per-node Quicktune load / node capacity over all nodes;
    ``gm_groups``: GM bytes per group / group capacity;
    ``lm_nodes``: worst over groups of LM bytes per node / node capacity;
    ``gm_nodes``: GM bytes per node (over nodes of groups that hold GMs).
    Capacities are the plan's own (``plan.capacity``; ``bandwidth`` is the
    probe's matrix when that is ``"bandwidth"``).
    """
    bw = None
    if plan.capacity == "bandwidth":
        if bandwidth is None:
            raise PlinkError("balance of a bandwidth plan needs the bandwidth matrix")
        bw = np.nan_to_num(np.asarray(bandwidth, dtype=float), nan=0.0)
        np.fill_diagonal(bw, 0.0)
    group_cap, node_cap = capacities(plan.labels, bw, plan.capacity)
    ln = plan.chunks[:, 1].astype(float)
    out = {"load": _ratio(node_loads(plan) / node_cap)}
    gm_bytes_g = np.bincount(plan.gm_group(), weights=ln, minlength=plan.k)
    out["gm_groups"] = _ratio(gm_bytes_g / group_cap) if plan.k > 1 else 1.0
    worst = 1.0
    for g, mem in enumerate(plan.members()):
        lmb = np.bincount(plan.lm[:, g], weights=ln, minlength=plan.n)[mem]
        worst = max(worst, _ratio(lmb / node_cap[mem]))
    out["lm_nodes"] = worst
    gmb = np.bincount(plan.gm, weights=ln, minlength=plan.n)
    holders = np.isin(plan.labels, np.unique(plan.gm_group()))
    out["gm_nodes"] = _ratio(gmb[holders] / node_cap[holders])
    return out
