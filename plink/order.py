"""Find a rank order that minimises a collective's cost: ``order_hosts``.

The pipeline is: probe data -> groups (``--groups``, the probe file's
measured uplinks, or ``infer_hierarchy``) -> a cost model (``shared``: the
collective's steps with NICs and group uplinks shared, in seconds, the
default; ``pairsum``: the dissertation's §5.2.1 sum of pair costs, in µs)
with missing pairs priced at the worst plausible value -> solver -> a report
(priced, for the shared model's recursive doubling, Rabenseifner, BCube and
tree up to 64 ranks, by the fluid model of ``solvers.fluid`` over the same
network: the search's per-rank clocks are its fast surrogate, and the order
returned is the annealed one or a starting order the fluid prices lower,
``solvers.groupsearch.by_price``)
of what the order buys against the input order, the median of random orders
(what a cloud hands out) and the rack-contiguous order (groups in index
order: the best simple alternative).  Every figure of the report is also
priced with missing pairs at their best plausible value, and given as a range
(``plink.pricing``).  When the shared model assumed capacities nobody measured
(no bandwidth probe: NICs and rack uplinks), the report also gives plink's
speedups by the measured latencies alone (``OrderResult.measured_only``), so that
an assumption never stands behind a speedup unannounced.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from dataclasses import asdict, dataclass, field
from collections.abc import Sequence
from typing import Any

import numpy as np

from plink.data.fileio import finite_json
from plink.solvers.contention import SHARED_ALGORITHMS, SharedCostModel, schedule, shared_lower_bound
from plink.solvers.fluid import FLUID_EXHAUSTIVE_MAX, FluidCostModel, fluid_lower_bound, pricing_model
from plink.solvers.costmodels import ALGORITHMS, CostModel, check_algorithm
from plink.solvers.groupsearch import contiguous_orders, exact_count, exhaustive_shared, minimise_shared
from plink.solvers.hedge import hedged_pick, regrets
from plink.solvers.resolution import RESOLUTION, resolution_for, resolved
from plink.solvers.solve import SolveResult, minimise

from plink.errors import InputError, OptionError, PlinkError, ProbeFileError
from plink.data.probefile import ProbeData, measured_pairs
from plink.pricing import NO_LATENCY_NOTE, Groups, find_groups, network, pair_cost  # noqa: F401  (pair_cost: public since 0.1)
from plink.structure.probegroups import inverse, joins_of_two, splits_in_two

DEFAULT_SIZE = 25 * 1024**2  #: bytes; PyTorch DDP's default gradient bucket (25 MiB)
DEFAULT_TIME_LIMIT = 5.0  #: seconds of search
MODELS = ("shared", "pairsum")
#: a lower bound is reported only when the order is at most this far above it (else it says nothing)
INFORMATIVE_GAP = 1.0


@dataclass
class OrderResult:
    """A rank order and what it buys, as predicted by the cost model (``unit``: s or us).

    ``cost_*`` price missing pairs at their worst plausible value (what the
    search used); ``ranges[name] = [low, high]`` price them at the best and
    the worst plausible value (equal when every pair was measured).
    """

    algo: str
    size: int
    base: int
    hosts: list[str]  #: host names, rank 0 first
    order: list[int]  #: indices into the probe file's hosts, rank 0 first
    cost_input: float
    cost_random_median: float
    cost_plink: float
    n_random: int
    model: str  #: the data used: "latency", "latency+bandwidth", or for a bandwidth matrix read alone "bandwidth"
    #: ("inverse bandwidth" with --no-bandwidth)
    missing_pairs: int
    proven_optimal: bool | None = None
    lower_bound: float | None = None  #: only when informative (see INFORMATIVE_GAP), valid for any missing values
    solver: dict[str, Any] = field(default_factory=dict)
    elapsed: float = 0.0
    cost_model: str = "shared"  #: "shared" or "pairsum"
    unit: str = "s"
    cost_contiguous: float | None = None  #: rack-contiguous order (the best of ``n_contiguous`` orders of the groups)
    n_contiguous: int = 1  #: orders of the groups tried for the rack-contiguous order
    contiguous_order: list[int] = field(default_factory=list)  #: ... the one priced (indices, rank 0 first)
    ranges: dict[str, list[float]] = field(default_factory=dict)
    pairs_used: int = 0  #: distinct host pairs the chosen order communicates over
    pairs_used_unmeasured: int = 0  #: ... of which were never measured
    steps: int = 0  #: communication steps of the algorithm (repeats counted)
    steps_unmeasured: int = 0  #: ... with at least one flow over an unmeasured pair
    groups: dict[str, Any] = field(default_factory=dict)
    #: the group of each host (probe file index) the order was searched under: the switches of a
    #: topology.conf (not in ``to_dict``)
    group_labels: list[int] = field(default_factory=list, repr=False)
    notes: list[str] = field(default_factory=list)
    #: the notes (of ``notes``) that say what the shared model assumed rather than measured (host NICs
    #: without a bandwidth, group uplinks nobody measured): ``plink watch`` prints them with its costs
    #: (not in ``to_dict``: they are in ``notes``)
    assumption_notes: list[str] = field(default_factory=list, repr=False)
    #: when the shared model assumed the capacities (no bandwidth measured): ``{"basis": "the
    #: measured latencies alone", "speedups": {name: plink's speedup over that order by them}}``
    measured_only: dict[str, Any] = field(default_factory=dict)
    #: plink's speedups at the other ends of the capacities the shared model assumed (empty when it
    #: assumed none): ``{scenario: {name: speedup}}``; ``"uplinks non-blocking"`` when group uplinks
    #: were assumed (priced as if they carried every NIC of the group), ``"latencies alone"`` when
    #: the NICs were (``measured_only``'s speedups: NICs and uplinks never the bottleneck)
    capacity_scenarios: dict[str, dict[str, float]] = field(default_factory=dict)
    #: every order costs the same (BCube with base N, a ring of 3 hosts): every speedup is 1x
    every_order_same: bool = False

    @property
    def speedup_vs_input(self) -> float:
        return _ratio(self.cost_input, self.cost_plink)

    @property
    def speedup_vs_random(self) -> float:
        return _ratio(self.cost_random_median, self.cost_plink)

    @property
    def speedup_vs_contiguous(self) -> float | None:
        return None if self.cost_contiguous is None else _ratio(self.cost_contiguous, self.cost_plink)

    def speedup_range(self, name: str) -> tuple[float, float]:
        """``(low, high)`` speedup of plink's order over order ``name`` for any plausible missing values.

        Costs grow with every pair's value, so the true ratio lies between
        ``other(best) / plink(worst)`` and ``other(worst) / plink(best)``; exactly 1 when the
        other order is plink's own (the input order or the rack-contiguous one).
        """
        if name not in self.ranges or name == "plink":
            raise ValueError(f"no order named {name!r} (choose from {', '.join(k for k in self.ranges if k != 'plink')})")
        if self.same_cost(name):  # one order (or every order one ring): 1x whatever the missing values
            return 1.0, 1.0
        lo_o, hi_o = self.ranges[name]
        lo_p, hi_p = self.ranges["plink"]
        return _ratio(lo_o, hi_p), _ratio(hi_o, lo_p)

    def same_cost(self, name: str) -> bool:
        """Whether order ``name`` costs what plink's does by construction, whatever is unmeasured: it is
        plink's order itself (the input order or the rack-contiguous one), or ``every_order_same``."""
        if getattr(self, "every_order_same", False):
            return True
        mine = getattr(self, "order", None)  # (None: a result built field by field, without its orders)
        same = None if mine is None else {"input": list(range(len(mine))),
                                          "contiguous": getattr(self, "contiguous_order", None)}.get(name)
        return same is not None and list(same) == list(mine)

    def speedup_span(self, name: str) -> tuple[float, float]:
        """``(low, high)`` speedup of plink's order over order ``name`` over everything not measured:
        ``speedup_range`` (missing pairs) and the ``capacity_scenarios`` (assumed capacities).

        What a report should lead with: without measured uplinks the model's own figure is the
        oversubscribed end of the range (e.g. 14.84x over random orders on the 64 EC2 p4d hosts at
        the default 25 MiB, which non-blocking uplinks make 1.03x: ``plink order
        rdma_read_us_64.csv --unit us --json``, ``speedup_spans``).  Exactly ``(1.0, 1.0)`` where the
        order costs what plink's does by construction (``same_cost``), whatever the scenarios' prices
        of the two differ by in their last digits."""
        if self.same_cost(name):
            return 1.0, 1.0
        vals = [*self.speedup_range(name), *(s[name] for s in self.capacity_scenarios.values())]
        return min(vals), max(vals)

    def resolved(self, name: str) -> bool:
        """Whether the model tells plink's order and order ``name`` apart: their predicted costs
        differ by more than its resolution (``plink.solvers.resolution``) for every plausible
        value of the missing pairs. When not, the speedup is no prediction (``resolution.UNRESOLVED``)."""
        lo, hi = self.speedup_range(name)
        r = self.resolution
        return (lo > 1 and resolved(lo, 1.0, r)) or (hi < 1 and resolved(hi, 1.0, r))

    def span_resolved(self, name: str) -> bool:
        """Whether any figure of ``speedup_span(name)`` is a prediction of a difference: the model's
        own (``resolved``) or one of the ``capacity_scenarios`` beyond the resolution from 1x."""
        r = self.resolution
        return self.resolved(name) or any(resolved(sc[name], 1.0, r) for sc in self.capacity_scenarios.values())

    @property
    def resolution(self) -> float:
        """The resolution of the cost model used (``plink.solvers.resolution.RESOLUTIONS``)."""
        return resolution_for(self.cost_model)

    def to_dict(self) -> dict:
        d = asdict(self)
        del d["group_labels"], d["assumption_notes"]
        d["speedup_vs_input"] = self.speedup_vs_input
        d["speedup_vs_random"] = self.speedup_vs_random
        d["speedup_vs_contiguous"] = self.speedup_vs_contiguous
        d["speedup_ranges"] = {k: list(self.speedup_range(k)) for k in self.ranges if k != "plink"}
        d["speedup_spans"] = {k: list(self.speedup_span(k)) for k in self.ranges if k != "plink"}
        d["resolution"] = self.resolution
        d["speedup_resolved"] = {k: self.resolved(k) for k in self.ranges if k != "plink"}
        d["speedup_span_resolved"] = {k: self.span_resolved(k) for k in self.ranges if k != "plink"}
        return finite_json(d)  # an order priced 0 (nothing on its pairs) has an infinite speedup


def _ratio(a: float, b: float) -> float:
    if b <= 0:
        return 1.0 if a <= 0 else float("inf")
    return a / b


def group_labels(probe: ProbeData | Sequence[str], path: str, groups=None, where: str = "the probe file") -> np.ndarray:
    """Group label per host of ``probe`` (or of a list of host names, e.g. an order file's) from a
    groups file (matched by host name; the file may name more hosts, e.g. a rack map of the whole
    site: see ``Groups.aligned_to``); ``groups``: the file already read, else it is read from
    ``path``; ``where``: what the hosts are, for the error when the file lacks some.  O(N)."""
    from plink.data.groupfile import load_groups
    from plink.data.inputs import hosts_not_in

    names = list(probe.names) if isinstance(probe, ProbeData) else list(probe)
    if groups is None:
        groups = load_groups(path)
    missing = hosts_not_in(names, groups.hosts)  # (case ignored, as Groups.aligned_to does)
    if missing:
        raise PlinkError(f"groups file {path} lacks {len(missing)} host(s) of {where}, e.g. {missing[0]!r}")
    try:
        return groups.aligned_to(names, extra_ok=True, where=where)
    except ProbeFileError as exc:
        raise ProbeFileError(f"{path}: {exc}") from None


def random_orders(n: int, n_random: int, seed: int) -> np.ndarray:
    """``(n_random, n)`` uniformly random orders (seeded); every one of the ``n!`` orders, once each
    in lexicographic order, when there are no more than ``n_random`` of them (2-5 hosts at the
    default 500: their median is then exact, not a sample's)."""
    if math.factorial(n) <= n_random:
        return np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(n) for _ in range(n_random)], dtype=np.int64).reshape(n_random, n)


def _prices(model, perms: np.ndarray) -> np.ndarray:
    if hasattr(model, "batch"):
        return model.batch(perms)
    return np.array([model(p) for p in perms])


def random_median(model, n_random: int, seed: int) -> float:
    """Median cost of ``n_random`` uniformly random orders (seeded)."""
    return float(np.median(_prices(model, random_orders(model.n, n_random, seed))))


def pairs_used(algo: str, order, base: int = 2) -> set[tuple[int, int]]:
    """Unordered host pairs that ``algo`` over rank order ``order`` sends data (or waits) over."""
    p = np.asarray(order)
    out: set[tuple[int, int]] = set()
    for s in schedule(algo, len(p), 1.0, base):
        for a, b in zip(p[s.src].tolist(), p[s.dst].tolist()):
            out.add((min(a, b), max(a, b)))
    return out


def steps_touching(algo: str, order, missing: np.ndarray, base: int = 2) -> tuple[int, int]:
    """``(steps with a flow over an unmeasured pair, all steps)`` of ``algo`` over ``order`` (repeats counted)."""
    p = np.asarray(order)
    hit = total = 0
    for s in schedule(algo, len(p), 1.0, base):
        total += s.repeat
        if missing[p[s.src], p[s.dst]].any():
            hit += s.repeat
    return hit, total


def _build(cost_model: str, algo: str, probe: ProbeData, groups, fill: str, size: int, base: int,
           use_bandwidth: bool, nic_gbps):
    if cost_model == "pairsum":
        pc, _ = pair_cost(probe, use_bandwidth, groups.labels, fill)
        with_bw = bool(np.any(pc.inv_bw))
        notes = [] if with_bw else [
            f"'predicted' is the pair-sum model's sum of the {'inverse bandwidths' if probe.inverse_bandwidth else 'latencies'} "
            "of the messages' pairs alone: without a bandwidth it prices no bytes (--size is not used), so it is no "
            "time for the collective (the default model prices the bytes on assumed NICs)"]
        if with_bw and probe.inverse_bandwidth:  # as the default model says of it (pricing.network)
            notes.append(NO_LATENCY_NOTE)
        return CostModel(algo, pc, size, base), _data_used(probe, with_bw), notes
    net = network(probe, groups, fill=fill, use_bandwidth=use_bandwidth, nic_gbps=nic_gbps)
    # no bytes, no capacity: what was assumed about them does not matter to these costs
    notes = list(net.notes) if size > 0 else [n for n in net.notes if n not in net.assumption_notes]
    return SharedCostModel(algo, net, size, base), _data_used(probe, "nic" not in net.assumed), notes


def _data_used(probe: ProbeData, with_bandwidth: bool) -> str:
    """``OrderResult.model``: what the costs rest on (a bandwidth matrix read alone: its "latency" is
    the inverse bandwidth)."""
    if probe.inverse_bandwidth:
        return "bandwidth" if with_bandwidth else "inverse bandwidth"
    return "latency+bandwidth" if with_bandwidth else "latency"


def order_hosts(
    probe: ProbeData,
    algo: str = "ring",
    *,
    size: int = DEFAULT_SIZE,
    time_limit: float = DEFAULT_TIME_LIMIT,
    seed: int = 0,
    base: int = 2,
    n_random: int = 500,
    use_bandwidth: bool = True,
    max_iter: int | None = None,
    jobs: int = 1,
    smt_time: float = 0.0,
    labels=None,
    model: str = "shared",
    nic_gbps: float | None = None,
    keep_on_interrupt: bool = False,
    hedge: bool = True,
    on_searched=None,
) -> OrderResult:
    """Search for a rank order of ``probe``'s hosts minimising ``algo``'s cost.

    ``algo`` is one of ``ring``, ``hd`` (Rabenseifner halving-doubling),
    ``rd`` (recursive doubling), ``dbt`` (double binary tree), ``bcube``
    (with ``base``) or, with the shared model only, ``bintree`` (Open MPI's
    binary-tree reduce + broadcast); ``size`` is the all-reduce size in bytes.  ``labels``
    (one group label per host, e.g. from ``plink group``: numbers or names, taken as categories,
    ``plink.data.groupfile.group_codes``) overrides the groups found in the data; a NaN or None
    label, a 2-D array or a wrong length is an :class:`InputError`.

    ``use_bandwidth`` (default True): use the probe's pair bandwidths and measured group uplinks,
    when it has them, to find the groups and to price the orders (host NICs at each host's best
    measured bandwidth); False prices by the latencies alone, as ``plink order --no-bandwidth``
    does (NICs then assumed ``nic_gbps``, uplinks assumed as if never measured).

    ``model="shared"`` (default) prices the collective's steps with host NICs
    and group uplinks shared by concurrent flows, in seconds
    (``solvers.contention``); without a bandwidth matrix NICs are assumed
    ``nic_gbps`` (10 Gbit/s) and, unless the probe measured them, uplinks
    carry what one NIC does.  Solved exactly for small N (every order,
    ``solvers.groupsearch``), else from group-contiguous starts refined by
    annealing for ``time_limit`` seconds (``max_iter`` iterations if given).

    ``model="pairsum"``: the dissertation's sum of pair costs (µs), solved as
    before by ``solvers.solve.minimise`` (Held-Karp / exhaustive for small N,
    local search or annealing in ``jobs`` processes, optional Z3 for
    ``smt_time`` seconds).

    ``hedge`` (shared model, groups inferred from latencies alone): the latencies cannot tell a
    rack from two, so the search is also run under each grouping with one found group of 4 or more
    hosts split in two (``plink.structure.probegroups.splits_in_two``; at most
    ``HEDGE_MAX_SPLITS``, the largest groups'; the search under the groups found gets
    ``HEDGE_MAIN_SHARE`` of ``time_limit`` and these share the rest, or every search runs
    ``max_iter`` iterations), and of the orders priced within the
    model's resolution (2%) of the best, the one whose worst price over those groupings is the
    least above that grouping's best is returned (``solvers.hedge.hedged_pick``; ``solver["hedge"]``).
    With the groups inferred from a probe's latencies *and* pair bandwidths the hedge is over the
    groupings with two groups joined whose every pair between reads as fast as a rack's
    (``plink.structure.probegroups.joins_of_two``: the latencies can cut a rack in two).

    Never returns an order priced above the input order or the rack-contiguous one, and returns the
    rack-contiguous one where its own is priced the same (within ``SAME_PRICE``) and sends no fewer
    bytes over the group uplinks (shared model).
    ``keep_on_interrupt``: Ctrl-C during the search returns the best order so far (shared
    model), or the best of the search's warm starts (pairsum: its progress is lost), with
    ``solver["interrupted"]`` set (what ``plink order`` does); otherwise it propagates.
    ``on_searched``: called (no arguments) once the searches are over and the order is chosen, before
    the report is priced (``plink order`` then holds back a Ctrl-C until the order is written).

    ``n_random``: how many uniformly random orders (what a cloud hands out) are priced for the
    report's median (``cost_random_median``, the ``"random_median"`` range); where the hosts have no
    more than ``n_random`` orders (2-5 hosts at the default 500) every order is priced once, so the
    median is exact (``OrderResult.n_random`` is then the number of orders, ``N!``).

    ``seed`` (0 .. 2**32 - 1) seeds every random choice: the group inference, the sample of random
    orders, the orders of the groups tried for the rack-contiguous order and the searches.  It makes
    the result repeatable only where the search is bounded by work, not by the clock: an exhaustive
    search (small N), or ``max_iter`` with the shared model (its annealing then stops after
    ``max_iter`` priced orders, not at ``time_limit``).  With a time limit alone a larger search
    is time-limited, so one seed can give another order on another run or machine (how far the
    annealing got in ``time_limit`` seconds depends on the machine and its load).  The pair-sum
    model's search stops at ``max_iter`` or ``time_limit``, whichever comes first, and its Z3 stage
    runs ``smt_time`` seconds: it repeats only where ``max_iter`` comes first and ``smt_time`` is 0.

    Returns an :class:`OrderResult`: the order (``hosts``, ``order``: indices into ``probe``'s hosts,
    rank 0 first); its predicted cost and that of the input order, the median of the random orders
    and the rack-contiguous order (``cost_plink``, ``cost_input``, ``cost_random_median``,
    ``cost_contiguous``, in ``unit``: s for the shared model, µs for the pair sum), with unmeasured
    pairs at their worst plausible value, and at both ends in ``ranges``; plink's speedups over
    them (``speedup_vs_input`` ..., ``speedup_range`` over unmeasured pairs, ``speedup_span`` also
    over the assumed capacities, ``resolved`` whether the model tells the two orders apart);
    whether the order is ``proven_optimal`` and a ``lower_bound``; the ``groups`` searched under;
    the search's ``solver`` details; and ``notes`` saying what the costs rest on.  ``to_dict()``
    gives it as JSON (what ``plink order --json`` prints).
    """
    start = time.perf_counter()
    labels = _check_args(probe, algo, model=model, time_limit=time_limit, smt_time=smt_time, size=size,
                         n_random=n_random, jobs=jobs, max_iter=max_iter, nic_gbps=nic_gbps, labels=labels, base=base,
                         seed=seed)
    size, seed = int(size), int(seed)  # (whole floats, 1e6, are taken)
    n = probe.n
    groups = find_groups(probe, labels, seed, use_bandwidth)
    n_missing = probe.n_missing_pairs()
    cm, cm_low, kind, notes = _models(model, algo, probe, groups, n_missing, size, base, use_bandwidth, nic_gbps)
    identity = np.arange(n)
    rand = random_orders(n, n_random, seed)
    # what the report prices with: the fluid model where it applies (searched on the clocks: fast)
    price, price_low = _pricing(model, cm, cm_low)
    # the best simple alternative: the racks as blocks, in the best order of the groups tried (in the
    # groups' numbering alone, a butterfly over unequal racks could price them slower, and plink's gain with it)
    blocks = contiguous_orders(groups.labels, seed=seed, lat=probe.latency)
    contiguous = blocks[int(np.argmin(_prices(price, blocks)))]
    # BCube with base N: one step, every host with every other; a ring of 3 hosts: its one ring, whatever the
    # order (every pair a hop; the ranges over unmeasured pairs read ~0.64-1.57x for one ring): no order is better
    order_free = (algo == "bcube" and base == n) or (algo == "ring" and n == 3)  # (up to 2 hosts: "trivial")
    splits, hedge_kind = (_hedge_groupings(probe, groups, model, labels, use_bandwidth) if hedge and not order_free
                          else ([], ""))
    main_time, split_time = _hedge_times(time_limit, len(splits))
    if order_free:  # (the search ran its whole time limit and said "proven optimal: no")
        res, lb_model = SolveResult(identity, float(price(identity)), True, None, "none: every order costs the same",
                                    {}), None
        notes.append(f"BCube with base {base} = {n} hosts is one step in which every host exchanges with every "
                     "other: every order costs the same, so the input order is kept" if algo == "bcube" else
                     f"a ring of {n} hosts is the same ring in every order: every order costs the same, so the "
                     "input order is kept")
    else:
        res, lb_model = _search(model, cm, identity, notes, labels=labels, time_limit=main_time, seed=seed,
                                jobs=jobs, smt_time=smt_time, max_iter=max_iter, keep_on_interrupt=keep_on_interrupt,
                                price=price)
    try:
        res = res if order_free else _exact_for_price(res, cm, price)
    except KeyboardInterrupt:  # Ctrl-C while the search's optimum is proven for the price: the search's order
        if not keep_on_interrupt:
            raise
        res = SolveResult(res.perm, res.cost, False, None, res.method, {**res.info, "interrupted": True})
    best, best_cost = res.perm, float(price(res.perm))
    # with measured pair bandwidths the model prices each flow at its link's rate and the latencies are a small
    # share (1e-4 on 8-host netns probes): it hardly tells orders apart by them (on assumed NICs they count more)
    bw_priced = use_bandwidth and probe.bandwidth is not None and not probe.inverse_bandwidth
    # ... so among the orders it prices alike the pair latencies choose (the dissertation's pair-sum model,
    # §5.2.1): with no racks in the model, of every order (a netns walk: plink kept the input order, 7 of 8
    # ring hops across racks the latencies showed, 3.0x slower than the racks in a row); with groups, of those
    # sending no more bytes over group uplinks, on up to NEAREST_HOPS_MAX_N hosts (a group the latencies
    # merged, a rack of 2 with a rack of 3, kept its hosts in index order: 6 of 8 hops across racks, 1.85 s
    # against 0.62 s)
    nearest = (model == "shared" and not order_free and algo in ALGORITHMS and bw_priced and n >= 4
               and (groups.k < 2 or n <= NEAREST_HOPS_MAX_N))
    cost_input = float(price(identity))
    cost_contiguous = float(price(contiguous))
    if best_cost > cost_input:  # never hand back something worse than what the user has
        best, best_cost = identity, cost_input
    if best_cost > cost_contiguous:  # ... nor than the best simple alternative (where price and search differ)
        best, best_cost = contiguous, cost_contiguous
        notes.append("the search's order was priced above the rack-contiguous one: plink's order is the latter")
    elif nearest and groups.k < 2:
        pass  # one group: its "rack-contiguous" order is the input order; the nearest hops below, from the search's
    elif (model == "shared" and not order_free and not np.array_equal(best, contiguous)
          and best_cost >= cost_contiguous * (1.0 - SAME_PRICE)
          and cm.uplink_bytes(contiguous) <= cm.uplink_bytes(best) + 1e-9):
        # no gain over the racks as blocks but the float's last digits (dbt on proof case F: 3e-6): the simple
        # order, which keeps every rack whole (the search's split one for nothing)
        best, best_cost = contiguous, cost_contiguous
        notes.append("plink's order is the rack-contiguous one: the search's order was priced the same and sent no "
                     "fewer bytes over group uplinks")
    elif best is res.perm and res.info.get("tie_break"):
        notes.extend(_tie_break_note(res.info["tie_break"], float(res.cost)))
    if nearest:
        searched, before = best_cost, best
        best, best_cost = _nearest_hops(probe, algo, groups, size, base, best, best_cost, price, notes,
                                        time_limit=main_time, seed=seed, max_iter=max_iter,
                                        keep_on_interrupt=keep_on_interrupt,
                                        uplink_bytes=cm.uplink_bytes if groups.k >= 2 else None)
        if best is not before:  # (the note on the rack-contiguous order no longer holds)
            notes[:] = [x for x in notes if not x.startswith("plink's order is the rack-contiguous one")]
        if best_cost > searched:  # (within SAME_PRICE of it: no longer the proven optimum of the price)
            res = SolveResult(res.perm, res.cost, False, None, res.method, res.info)
    if splits and not res.info.get("interrupted"):
        try:
            hedged = _hedged(splits, best, [identity, contiguous], price, algo=algo, probe=probe, groups=groups,
                             kind=hedge_kind, size=size, base=base, use_bandwidth=use_bandwidth, nic_gbps=nic_gbps,
                             time_limit=split_time, seed=seed, max_iter=max_iter, keep_on_interrupt=keep_on_interrupt)
        except KeyboardInterrupt:  # after the hedge's searches, while it priced their orders: the search's order
            if not keep_on_interrupt:
                raise
            hedged = {"order": None, "note": "", "info": {"groupings": len(splits), "interrupted": True}}
        res.info["hedge"] = hedged["info"]
        if hedged["info"].get("interrupted"):  # Ctrl-C in the hedge's searches: the search's order, and said
            res.info["interrupted"] = True
        if hedged["order"] is not None:
            best, best_cost = hedged["order"], hedged["cost"]
            # a proven optimum stays proven for an order priced the same but for the float sums' last digits
            # (2-3-4 p0's ring: 4e-8 s apart, the proof lost, "yes" turned "no" for the same price)
            if not (res.proven_optimal and best_cost <= float(price(res.perm)) * (1.0 + PROVEN_SLACK)):
                res = SolveResult(res.perm, res.cost, False, None, res.method, res.info)
            notes.append(hedged["note"])
    if on_searched is not None:
        on_searched()
    ranges = _ranges(price, price_low, identity, contiguous, best, rand)
    measured_only = _measured_only(model, cm, np.stack([identity, contiguous, best]), rand)
    scenarios = _capacity_scenarios(model, algo, probe, groups, size, base, use_bandwidth, nic_gbps, price,
                                    np.stack([identity, contiguous, best]), rand, measured_only)
    if order_free:  # every order costs the same: 1x exactly (the prices of other orders differ in their last digits)
        if measured_only:
            measured_only = {**measured_only, "speedups": dict.fromkeys(measured_only["speedups"], 1.0)}
        scenarios = {sc: dict.fromkeys(speedups, 1.0) for sc, speedups in scenarios.items()}
    notes += _slower_if_notes(scenarios)
    proven, lb = _lower_bound(model, res, price, price_low, lb_model, best_cost, n_missing, n)
    if order_free:  # optimal whatever the unmeasured pairs hold
        proven = True
    elif res.proven_optimal and n_missing:
        notes.append("optimal for the model with unmeasured pairs at their worst plausible value only")
    lonely = _never_measured(probe)
    if lonely:  # (plink group refuses such a host; an order still has to place it)
        names = ", ".join(lonely[:5]) + (f" and {len(lonely) - 5} more" if len(lonely) > 5 else "")
        notes.append(f"{len(lonely)} host(s) without a single measured pair ({names}): each ordered as a group "
                     "of its own, its pairs priced as unmeasured (the ranges); probe again or leave it out")
    n_used, unmeasured, steps_hit, steps_all = _unmeasured_use(probe, algo, best, base)
    return OrderResult(
        algo=algo,
        size=size,
        base=base,
        hosts=[probe.hosts[i].name for i in best],
        order=[int(i) for i in best],
        cost_input=cost_input,
        cost_random_median=ranges["random_median"][1],  # (the worst-case model is the model)
        cost_plink=best_cost,
        n_random=len(rand),
        model=kind,
        missing_pairs=n_missing,
        proven_optimal=proven,
        lower_bound=lb,
        solver={"name": res.method, **res.info, "priced_by": getattr(price, "kind", model)},
        elapsed=time.perf_counter() - start,
        cost_model=model,
        unit="s" if model == "shared" else "us",
        cost_contiguous=ranges["contiguous"][1],
        n_contiguous=len(blocks),
        contiguous_order=[int(i) for i in contiguous],
        ranges=ranges,
        pairs_used=n_used,
        pairs_used_unmeasured=unmeasured,
        steps=steps_all,
        steps_unmeasured=steps_hit,
        groups={"k": groups.k, "source": groups.source, "confidence": groups.confidence,
                "weak": weak_groups(groups.confidence, groups.k)},
        group_labels=[int(g) for g in groups.labels],
        notes=notes,
        assumption_notes=[n for n in notes if n in getattr(getattr(cm, "net", None), "assumption_notes", ())],
        measured_only=measured_only,
        capacity_scenarios=scenarios,
        every_order_same=order_free,
    )


#: below this silhouette the groups are weak (Kaufman and Rousseeuw's "no substantial structure"): the report
#: says so and points at plink group
WEAK_SILHOUETTE = 0.25


def weak_groups(confidence: float | None, k: int) -> bool | None:
    """Whether ``k`` groups of silhouette ``confidence`` are weak (under ``WEAK_SILHOUETTE``); None when
    there is nothing to judge (one group, groups from the uplinks: no silhouette)."""
    if confidence is None or k < 2 or not math.isfinite(confidence):
        return None
    return bool(confidence < WEAK_SILHOUETTE)


#: orders priced within this fraction of each other are priced the same (the fluid's float noise, not a gain)
SAME_PRICE = 1e-4

#: an order priced within this share of a proven optimum's price is proven optimal too (the float
#: sums of one price over two orders differ in their last digits)
PROVEN_SLACK = 1e-6

MAX_SECONDS = 7 * 86400.0  #: the longest search asked for: a week (a larger number is a typo, and inf never ends)


def _check_number(what: str, value, integer: bool, optional: bool = False) -> None:
    """OptionError unless ``value`` is a number (``integer``: a whole one, a float too if it is whole,
    ``1e6``); None only where ``optional`` (not given)."""
    if value is None and optional:
        return
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if ok and integer and isinstance(value, (float, np.floating)):
        ok = bool(np.isfinite(value)) and float(value).is_integer()
    if not ok:
        raise OptionError(f"{what} must be {'a whole number' if integer else 'a number'}, got {value!r}")


def check_options(algo: str, *, model: str = "shared", time_limit: float = DEFAULT_TIME_LIMIT,
                  smt_time: float = 0.0, size: int = DEFAULT_SIZE, n_random: int = 500, jobs: int = 1,
                  max_iter: int | None = None, nic_gbps: float | None = None, base: int = 2) -> None:
    """Raise :class:`PlinkError` for the first option of :func:`order_hosts` that no probe could be
    searched with (what ``plink order`` checks before it reads the matrix). O(1)."""
    if model not in MODELS:
        raise OptionError(f"unknown cost model {model!r} (choose from {', '.join(MODELS)})")
    for what, value, integer, optional in (
            ("time limit", time_limit, False, False), ("--smt-time (smt_time)", smt_time, False, False),
            ("size", size, True, False), ("n_random", n_random, True, False), ("--jobs (jobs)", jobs, True, False),
            ("max_iter", max_iter, True, True), ("--nic-gbps (nic_gbps)", nic_gbps, False, True)):
        _check_number(what, value, integer, optional)
    known = SHARED_ALGORITHMS if model == "shared" else ALGORITHMS
    if algo not in known:
        extra = " (bintree: --model shared only)" if algo in SHARED_ALGORITHMS else ""
        raise OptionError(f"unknown algorithm {algo!r} for the {model} model (choose from {', '.join(known)}){extra}")
    if not (0 < time_limit <= MAX_SECONDS):
        raise OptionError(f"time limit must be > 0 and at most {MAX_SECONDS:g} seconds (a week), got {time_limit}")
    if not (0 <= smt_time <= MAX_SECONDS):
        raise OptionError(f"--smt-time (smt_time) must be >= 0 and at most {MAX_SECONDS:g} seconds (a week), got {smt_time}")
    if size < 0:
        raise OptionError(f"size must be >= 0 bytes, got {size}")
    if n_random < 1:
        raise OptionError("n_random must be >= 1")
    if jobs < 0:
        raise OptionError(f"--jobs (jobs) must be >= 0 (0: all cores), got {jobs}")
    if max_iter is not None and max_iter < 0:
        raise OptionError(f"max_iter must be >= 0, got {max_iter}")
    if nic_gbps is not None and not (nic_gbps > 0):
        raise OptionError(f"--nic-gbps (nic_gbps) must be > 0, got {nic_gbps}")
    if algo == "bcube" and not (isinstance(base, (int, np.integer)) and base >= 2):
        raise OptionError(f"BCube base must be an integer >= 2, got {base!r}")


def _check_args(probe: ProbeData, algo: str, *, model, time_limit, smt_time, size, n_random, jobs, max_iter,
                nic_gbps, labels, base, seed=0) -> np.ndarray | None:
    """Raise :class:`PlinkError` for the first argument of :func:`order_hosts` that cannot be searched with
    (a ``TypeError`` for a probe that is no :class:`ProbeData`); return ``labels`` as group numbers
    ``0 .. k-1`` (``plink.data.groupfile.group_codes``: an :class:`InputError` for a NaN or None label, a
    2-D array, ...), None when not given."""
    if not isinstance(probe, ProbeData):
        raise TypeError(f"order_hosts takes a ProbeData (plink.load(path), plink.from_matrix(matrix, names)), "
                        f"got {type(probe).__name__}")
    check_options(algo, model=model, time_limit=time_limit, smt_time=smt_time, size=size, n_random=n_random,
                  jobs=jobs, max_iter=max_iter, nic_gbps=nic_gbps, base=base)
    _check_number("seed", seed, True)
    if not 0 <= seed < 2**32:
        raise OptionError(f"seed must be 0 .. 2**32 - 1, got {seed}")
    n = probe.n
    if n < 1:
        raise InputError("the probe file has no hosts")
    if size == 0 and probe.inverse_bandwidth:  # (priced 0.08 us and '1.92x' from the inverse bandwidths)
        raise OptionError("size 0 (--size 0) on a bandwidth matrix read alone: it holds no latency and no bytes "
                          "move, so there is nothing to price; give the all-reduce's --size, or the RTT matrix as "
                          "the input and this one as --bandwidth-matrix")
    if labels is not None:
        from plink.data.groupfile import group_codes

        labels = group_codes(labels, probe.names)
    try:
        if algo in ALGORITHMS:
            check_algorithm(algo, n, base)
    except ValueError as exc:  # a --base that does not fit N is a bad option value (exit 2): --base 1 was already
        raise (OptionError if algo == "bcube" else InputError)(str(exc)) from None
    off = ~np.eye(n, dtype=bool)
    if n > 1 and not np.isfinite(probe.latency[off]).any():
        if probe.bandwidth is not None and np.isfinite(probe.bandwidth[off]).any():
            raise InputError("no latency was measured, only pair bandwidths: nothing to order by (probe the latencies "
                             "again, or save the bandwidths as a CSV matrix and read it with --kind bandwidth)")
        raise InputError("no pair of hosts was measured: nothing to order by")
    return labels


def _never_measured(probe: ProbeData) -> list[str]:
    """Names of the hosts of ``probe`` (3 or more hosts) without a single measured latency pair. O(N^2)."""
    if probe.n < 3:
        return []
    return [probe.names[i] for i in np.flatnonzero(~measured_pairs(probe).any(axis=1))]


#: what the shared model's seconds leave out, measured per collective on the netns cluster (README, "Proof
#: against real collectives"; there too: less still where a latency-only probe merged two racks, Gloo 17%, or
#: priced rack uplinks that carried two host links as oversubscribed, Gloo 49%)
MEASURED_PART = {"ring": "Gloo's ring from 5% less to 8% more than predicted, Open MPI's ring 30-59% less",
                 "rd": "Open MPI's recursive doubling 0-15% less than predicted",
                 "hd": "Open MPI's Rabenseifner 17-34% less than predicted",
                 "bintree": "Open MPI's binary-tree reduce + broadcast from 10% less to 3% more than predicted"}


def network_part(algo: str) -> str:
    """The note on what 'predicted' leaves out, with what was measured for ``algo`` (when it was)."""
    measured = MEASURED_PART.get(algo)
    return ("'predicted' is the network's part of the collective: the library's own work (copies, reductions) "
            "is the same for every order and not in it, so the whole collective usually speeds up less"
            + (f" (on the netns cluster {measured}: README, 'Proof against real collectives')" if measured
               else " (this collective was not measured; README, 'Proof against real collectives')"))


def _models(model: str, algo: str, probe: ProbeData, groups, n_missing: int, size: int, base: int,
            use_bandwidth: bool, nic_gbps):
    """``(cost model, best-case cost model, data kind, notes)``: missing pairs at their worst / best plausible value.

    The best-case model is the worst-case one when every pair was measured.
    """
    cm, kind, notes = _build(model, algo, probe, groups, "high", size, base, use_bandwidth, nic_gbps)
    if model == "shared" and groups.k < 2 and probe.n > 2:
        notes.append("no racks found in the data (one group): the model sees no shared uplinks; "
                     "if you know them, give them with --groups FILE (a groups file: plink group -o FILE, "
                     "with --groups K there if you know K)")
    if model == "shared":
        notes.append(network_part(algo))
    cm_low = _build(model, algo, probe, groups, "low", size, base, use_bandwidth, nic_gbps)[0] if n_missing else cm
    return cm, cm_low, kind, notes


def _tie_break_note(tb: dict, cost: float) -> list[str]:
    """The report's note when the search's tie-break (``solvers.groupsearch.fewer_uplink_bytes``)
    took an order with fewer bytes over group uplinks than the cheapest one it found."""
    before, after = tb["uplink_bytes_before"], tb["uplink_bytes"]
    if not after < before:
        return []
    return [f"of the orders priced within {tb['tolerance']:.0%} of the best found (the model does not tell them "
            f"apart), this one sends the fewest bytes over group uplinks: {after / 2**20:.4g} MiB instead of "
            f"{before / 2**20:.4g} MiB, priced {(cost / tb['cost_before'] - 1) * 100:+.1f}%"]


#: the tie-break by the sum of hop latencies among orders priced alike runs with groups found on clusters
#: up to this many hosts (the pair-sum order is then exact and takes milliseconds); with no group found, always
NEAREST_HOPS_MAX_N = 15


def _nearest_hops(probe: ProbeData, algo: str, groups, size: int, base: int, best: np.ndarray, best_cost: float,
                  price, notes: list[str], *, time_limit, seed, max_iter, keep_on_interrupt: bool,
                  uplink_bytes=None):
    """``(order, its price)``: of ``best`` and the pair-sum model's best order on the latencies alone
    (:class:`~plink.solvers.costmodels.CostModel` over ``pair_cost(probe, use_bandwidth=False)``), the one
    with the lower sum of pair latencies among those ``price`` prices within :data:`SAME_PRICE` of the
    lower (``uplink_bytes``: and sending no more bytes over group uplinks than ``best``); a note when that
    changed the order."""
    pc, _ = pair_cost(probe, False, groups.labels, "high")
    hops = CostModel(algo, pc, size, base)
    alt = minimise(hops, init=best, labels=None, time_limit=max(0.2, min(2.0, time_limit / 4)), seed=seed, jobs=1,
                   smt_time=0.0, max_iter=max_iter, keep_on_interrupt=keep_on_interrupt).perm
    alt_cost = float(price(alt))
    if not (alt_cost <= best_cost * (1.0 + SAME_PRICE) and float(hops(alt)) < float(hops(best)) * (1.0 - SAME_PRICE)):
        return best, best_cost
    if uplink_bytes is not None and float(uplink_bytes(alt)) > float(uplink_bytes(best)) + 1e-9:
        return best, best_cost
    if uplink_bytes is None:
        notes.append("no racks found, so the model priced every order alike (to 0.01%): of those, plink's has the "
                     f"lowest sum of pair latencies ({float(hops(alt)):.4g} us against {float(hops(best)):.4g} for "
                     "the search's; the dissertation's pair-sum model)")
    else:
        notes.append("of the orders priced alike (to 0.01%) that send no more bytes over group uplinks, plink's has "
                     f"the lowest sum of pair latencies ({float(hops(alt)):.4g} us against {float(hops(best)):.4g}; "
                     "the model sees nothing inside a group, the latencies may: the dissertation's pair-sum model)")
    return alt, alt_cost


def _search(model: str, cm, identity: np.ndarray, notes: list[str], *, labels, time_limit, seed, jobs, smt_time,
            max_iter, keep_on_interrupt: bool = False, price=None):
    """``(solver result, the pairsum solver's lower bound or None)``: the model's solver, started from
    ``identity`` (the shared model's: its annealed order, or a starting order ``price`` prices lower)."""
    if model == "pairsum":
        cores = max(1, os.cpu_count() or 1)
        if jobs > cores:
            notes.append(f"--jobs {jobs} is more than this machine's {cores} cores: {cores} jobs ran")
        res = minimise(cm, init=identity, labels=labels, time_limit=time_limit, seed=seed, jobs=jobs,
                       smt_time=smt_time, max_iter=max_iter, keep_on_interrupt=keep_on_interrupt)
        return res, (res.lower_bound if not res.proven_optimal else None)
    if smt_time > 0:
        notes.append("--smt-time applies to --model pairsum only: ignored")
    if jobs != 1:
        notes.append("--jobs applies to --model pairsum only (the shared model's search runs in one process): ignored")
    return minimise_shared(cm, init=identity, time_limit=time_limit, seed=seed, max_iter=max_iter,
                           keep_on_interrupt=keep_on_interrupt, price=price), None


#: with the hedge on, the share of ``time_limit`` the search under the groups found gets (the
#: split groupings' searches share the rest); None: every search the same share.  On the proof
#: probes half and equal shares measured alike (``benchmarks/robust_groupings.py --time-limit 3
#: --main-share equal``); with many groups equal shares starve it (PlanetLab's ring, 5 s: priced
#: 1.06x the search given all of the time; README, "Hedging over the plausible groupings").
HEDGE_MAIN_SHARE: float | None = 0.5


def _hedge_times(time_limit: float, k: int) -> tuple[float, float]:
    """``(seconds for the search under the groups found, seconds for each of the k split groupings' searches)``."""
    if not k:
        return time_limit, 0.0
    if HEDGE_MAIN_SHARE is None:
        return time_limit / (1 + k), time_limit / (1 + k)
    return time_limit * HEDGE_MAIN_SHARE, time_limit * (1 - HEDGE_MAIN_SHARE) / k


#: the hedge searches under at most this many split groupings: those of the largest groups (a
#: merge of two racks is larger than either), so its cost stays that of a few searches however many
#: groups there are (PlanetLab's 490 hosts in 155 groups, ``--time-limit 5``: 31.6 s without the
#: cap, 10.5 s with it; README, "Hedging over the plausible groupings")
HEDGE_MAX_SPLITS = 5


def _hedge_groupings(probe: ProbeData, groups, model: str, labels, use_bandwidth: bool
                     ) -> tuple[list[np.ndarray], str]:
    """``(groupings, kind)``: the groupings ``order_hosts`` hedges over besides ``groups``, for the
    shared model with the groups inferred (none given). From latencies alone (no bandwidth matrix
    used): ``splits_in_two``, kind ``"split"``; with a probe's pair bandwidths: two groups joined
    where every pair between them reads as fast as a rack's (``joins_of_two``: a rack the latency
    cut in two), kind ``"join"``; at most ``HEDGE_MAX_SPLITS``, the largest groups' first; else none."""
    if model != "shared" or labels is not None:
        return [], ""
    if use_bandwidth and probe.bandwidth is not None:
        if probe.inverse_bandwidth or not groups.source.startswith("inferred from") or groups.k < 2:
            return [], ""
        return joins_of_two(groups.labels, inverse(probe.bandwidth), max_joins=HEDGE_MAX_SPLITS), "join"
    if groups.source != "inferred from latency":
        return [], ""
    return splits_in_two(probe.structure_latency, groups.labels, max_splits=HEDGE_MAX_SPLITS), "split"


def _hedged(splits: list[np.ndarray], best: np.ndarray, simple: list[np.ndarray], price, *, algo: str,
            probe: ProbeData, groups, kind: str = "split", size: int, base: int, use_bandwidth: bool, nic_gbps,
            time_limit: float, seed: int, max_iter, keep_on_interrupt: bool) -> dict[str, Any]:
    """The hedge of ``order_hosts``: the search under each grouping of ``splits``, then
    ``hedged_pick`` over the candidates (``best`` first, the searches' orders, ``simple``: the
    input and rack-contiguous orders) priced under ``groups`` (by ``price``) and under each
    split, among those priced no higher than the simple orders.  ``{"order": the pick, or None
    when it is ``best``; "cost": its price (with an order); "info": for ``solver["hedge"]``;
    "note": the report's note}``."""
    t0 = time.perf_counter()
    prices_by = [price]
    cands = [best]
    try:
        for lab in splits:
            g = Groups(lab, "split of a latency group (hedge)" if kind == "split" else "two groups joined (hedge)")
            cm_g = _build("shared", algo, probe, g, "high", size, base, use_bandwidth, nic_gbps)[0]
            price_g = pricing_model(cm_g)
            r = _exact_for_price(minimise_shared(cm_g, init=np.arange(probe.n), time_limit=time_limit, seed=seed,
                                                 max_iter=max_iter, price=price_g), cm_g, price_g)
            prices_by.append(price_g)
            cands.append(np.asarray(r.perm))
    except KeyboardInterrupt:  # Ctrl-C: the found grouping's order, as without the hedge
        if not keep_on_interrupt:
            raise
        return {"order": None, "note": "", "info": {"groupings": len(splits), "interrupted": True}}
    cands += simple
    prices = np.array([[float(p(o)) for o in cands] for p in prices_by])
    allowed = prices[0] <= prices[0][-len(simple):].min()  # (never above the input or rack-contiguous order)
    k = hedged_pick(prices, allowed=allowed)
    worst = regrets(prices)
    info = {"groupings": len(splits), "candidates": len(cands), "regret_found": round(float(worst[0]), 4),
            "regret": round(float(worst[k]), 4), "changed": bool(not np.array_equal(cands[k], best)),
            "seconds": round(time.perf_counter() - t0, 3)}
    if not info["changed"]:
        return {"order": None, "note": "", "info": info}
    info["picked"] = ["search", *(f"search under {kind} {i + 1}" for i in range(len(splits))), "input",
                      "rack-contiguous"][k]
    why = ("one latency group split in two (latencies alone cannot tell a rack from two)" if kind == "split" else
           "two groups joined (every pair between them reads as fast as a rack's: the bandwidths cannot tell "
           "them from one rack)")
    # the grouping the search's order fares worst under, and the hosts it joins or splits
    j = int(np.argmax(prices[1:, 0] / prices[1:].min(axis=1)))
    lab, found = np.asarray(splits[j]), np.asarray(groups.labels)
    outer, inner = (lab, found) if kind == "join" else (found, lab)
    hosts = next(np.flatnonzero(outer == g) for g in np.unique(outer) if len(np.unique(inner[outer == g])) > 1)
    named = ", ".join(probe.names[i] for i in hosts[:8]) + (f", ... (+{len(hosts) - 8})" if len(hosts) > 8 else "")
    note = (f"hedged over {len(splits)} grouping(s) with {why}: this order ({info['picked']}) is priced "
            f"{(prices[0][k] / prices[0][0] - 1) * 100:+.1f}% against the search's under the groups found, and at "
            f"worst {(worst[k] - 1) * 100:.1f}% above the best under a grouping, against "
            f"{(worst[0] - 1) * 100:.1f}% (--no-hedge: the search's order; its worst: {kind} {j + 1}, "
            f"{'hosts ' + named + ' as one group' if kind == 'join' else 'the group of ' + named + ' in two'})")
    return {"order": np.asarray(cands[k]), "cost": float(prices[0][k]), "note": note, "info": info}


def _pricing(model: str, cm, cm_low):
    """``(price, best-case price)``: the models the report prices with (``solvers.fluid.pricing_model``:
    the fluid model for the shared model's clocked algorithms up to ``FLUID_MAX_RANKS`` ranks, which
    ranked measured orders better than the search's clocks; else the search's own model)."""
    if model != "shared":
        return cm, cm_low
    price = pricing_model(cm)
    return price, (price if cm_low is cm else pricing_model(cm_low))


def _exact_for_price(res, cm, price):
    """The search's result, proven for ``price``: an exhaustive search of the search model proves
    nothing about another model, so the same exhaustive search is run on ``price`` where it has
    at most ``FLUID_EXHAUSTIVE_MAX`` orders (a few seconds), else the result is no longer proven."""
    if price is cm or not res.proven_optimal or res.method == "trivial":
        return res
    if exact_count(price) > FLUID_EXHAUSTIVE_MAX:
        return SolveResult(res.perm, res.cost, False, None, res.method,
                           {**res.info, "proven_for": "the search model (clocks), not the price"})
    perm, cost = exhaustive_shared(price)  # (every order is priced: none beats it, the input included)
    return SolveResult(perm, float(cost), True, float(cost), res.method, {**res.info, "priced_orders": exact_count(price)})


def _ranges(cm, cm_low, identity: np.ndarray, contiguous: np.ndarray, best: np.ndarray,
            rand: np.ndarray) -> dict[str, list[float]]:
    """``{name: [best-case cost, worst-case cost]}`` of the input, random median, contiguous and plink orders."""
    def both(perms):
        hi = _prices(cm, perms)
        lo = _prices(cm_low, perms) if cm_low is not cm else hi
        return lo, hi

    lo, hi = both(np.stack([identity, contiguous, best]))
    rlo, rhi = both(rand)
    return {"input": [float(lo[0]), float(hi[0])], "random_median": [float(np.median(rlo)), float(np.median(rhi))],
            "contiguous": [float(lo[1]), float(hi[1])], "plink": [float(lo[2]), float(hi[2])]}


def _measured_only(model: str, cm, orders: np.ndarray, rand: np.ndarray) -> dict[str, Any]:
    """Plink's speedups by the measured latencies alone, when no bandwidth was measured and the
    shared model's NICs and uplinks were therefore assumed; ``{}`` otherwise (and for the pair
    sum, which assumes no capacities).  ``orders``: input, contiguous and plink's order.

    What the order buys if the assumed capacities are wrong (a network that is not the
    bottleneck).  Not given when bandwidth was measured: the shared model does not use the
    pair bandwidths as limits of their flows, so its measured part would leave them out."""
    if model != "shared" or "nic" not in cm.net.assumed:
        return {}
    return {"basis": "the measured latencies alone",
            "speedups": _speedups(SharedCostModel(cm.algo, cm.net, 0.0, cm.base), orders, rand)}


def _speedups(cm, orders: np.ndarray, rand: np.ndarray) -> dict[str, float]:
    """Plink's speedups (``orders[2]``) over the input (``orders[0]``), the random median and the
    contiguous order (``orders[1]``) priced by ``cm``."""
    c = _prices(cm, orders)
    median = float(np.median(_prices(cm, rand)))
    return {"input": _ratio(float(c[0]), float(c[2])), "random_median": _ratio(median, float(c[2])),
            "contiguous": _ratio(float(c[1]), float(c[2]))}


def _capacity_scenarios(model: str, algo: str, probe: ProbeData, groups, size: int, base: int,
                        use_bandwidth: bool, nic_gbps, cm, orders: np.ndarray, rand: np.ndarray,
                        measured_only: dict) -> dict[str, dict[str, float]]:
    """``OrderResult.capacity_scenarios``: plink's speedups with the assumed capacities at their other
    end.  The model searched with unmeasured group uplinks oversubscribed (one NIC's worth), which is
    right on the emulated cluster of the proof but makes any order that crosses racks often look many
    times slower on a network whose uplinks do not bind; priced with them non-blocking, the same
    orders differ only by latency and the NICs' shares.  With the NICs assumed too, the measured
    latencies alone (``measured_only``) are the end where no capacity binds. O(cost of pricing
    ``len(rand) + 3`` orders)."""
    if model != "shared" or not cm.net.assumed:
        return {}
    out = {}
    if "uplinks" in cm.net.assumed:
        net = network(probe, groups, fill="high", use_bandwidth=use_bandwidth, nic_gbps=nic_gbps,
                      uplinks="non-blocking")
        out["uplinks non-blocking"] = _speedups(type(cm)(algo, net, size, base), orders, rand)
    if measured_only:
        out["latencies alone"] = dict(measured_only["speedups"])
    return out


#: how :func:`_slower_if_notes` names each capacity scenario
_SCENARIO_NAMES = {"uplinks non-blocking": "with rack uplinks that never bind",
                   "latencies alone": "by the measured latencies alone"}


def _slower_if_notes(scenarios: dict[str, dict[str, float]]) -> list[str]:
    """A note when, at the other end of the assumed capacities, plink's order is priced slower than
    the input or the rack-contiguous order beyond the model's resolution: the order pays only if
    the capacities are what the search assumed (a span of 0.79-1.14x read as a gain). O(1)."""
    rows = {"input": "the input order", "contiguous": "the rack-contiguous order"}
    out = []
    for name, speedups in scenarios.items():
        slower = [(rows[k], speedups[k]) for k in rows if k in speedups and speedups[k] * (1 + RESOLUTION) < 1]
        if slower:
            worst = min(v for _, v in slower)
            out.append(f"{_SCENARIO_NAMES.get(name, name)}, plink's order is priced slower than "
                       f"{' and '.join(r for r, _ in slower)} ({worst:.2f}x): it pays only if the rack uplinks bind "
                       "as the search assumed ('plink probe --bandwidth' measures them); otherwise keep that order")
    return out


def _lower_bound(model: str, res, cm, cm_low, lb_model, best_cost: float, n_missing: int,
                 n: int) -> tuple[bool, float | None]:
    """``(proven optimal, lower bound or None)``: a bound on the best-case model (so valid for any plausible
    missing values), kept only when informative (``INFORMATIVE_GAP``)."""
    proven = bool(res.proven_optimal) and n_missing == 0
    lb = best_cost if proven else None
    if not proven and n > 2:
        if model == "shared":
            lb = fluid_lower_bound(cm_low) if isinstance(cm_low, FluidCostModel) else shared_lower_bound(cm_low)
        elif cm_low is cm:
            lb = lb_model
        else:
            from plink.solvers.bounds import lower_bound

            lb = lower_bound(cm_low, upper=None, time_budget=0.2)
        if lb is not None and not (lb > 0 and best_cost / lb - 1 <= INFORMATIVE_GAP):
            lb = None
    return proven, lb


def _unmeasured_use(probe: ProbeData, algo: str, best, base: int) -> tuple[int, int, int, int]:
    """``(pairs used, of which unmeasured, steps over an unmeasured pair, all steps)`` of ``algo`` over ``best``."""
    n = probe.n
    used = pairs_used(algo, best, base) if n > 1 else set()
    miss = probe.missing_mask()
    unmeasured = sum(1 for a, b in used if miss[a, b])
    steps_hit, steps_all = steps_touching(algo, best, miss, base) if n > 1 else (0, 0)
    return len(used), unmeasured, steps_hit, steps_all
