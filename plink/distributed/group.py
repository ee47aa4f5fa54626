"""A process group whose collectives follow a locality-aware rank order.

:func:`locality_group` is what a training script calls after
``init_process_group``: probe the job (:func:`~plink.distributed.probe.probe_group`)
or read a probe file, solve on rank 0 with plink's solvers
(:func:`plink.order_hosts`, the same as ``plink order``), send the order to
every rank through the rendezvous store, and build
``torch.distributed.new_group(order, sort_ranks=False)``: group rank ``i`` is
global rank ``order[i]``, so Gloo's ring (and NCCL's, which follows the rank
order inside a communicator) runs along the order.  Ranks of one node stay
contiguous, in local-rank order.

:func:`order_from_file` maps an order made before launch (``plink order``'s
JSON, a plain host list or a torchrun map) onto this job's ranks by host name
or address.
"""

from __future__ import annotations

import json
import logging
import time

from plink.data.probefile import Host
from plink.errors import OptionError, PlinkError

log = logging.getLogger("plink.distributed")

#: below this many entries every order of the algorithm costs the same
MIN_ENTRIES = {"ring": 4}
_calls = 0


def match_hosts(hosts: list[Host], names: list[str], addresses: list[str]) -> list[int | None]:
    """For each of ``hosts``, the index of the job entry with that name (else that address), or None.

    O(N) with dictionaries.  Two hosts mapping to one entry is an error (the
    file names a node twice).
    """
    by_name = {nm: i for i, nm in enumerate(names)}
    by_short = {}
    for i, nm in enumerate(names):
        by_short.setdefault(nm.split(".", 1)[0], i)
    by_addr = {a: i for i, a in enumerate(addresses)}
    out: list[int | None] = []
    seen: dict[int, str] = {}
    for h in hosts:
        i = by_name.get(h.name)
        if i is None and h.address is not None:
            i = by_addr.get(h.address)
        if i is None:
            i = by_addr.get(h.name, by_short.get(h.name.split(".", 1)[0]))
        if i is not None:
            if i in seen:
                per_rank = "/" in h.name and "/" not in names[i]  # 'vm/0': an entry of probe --per-rank
                raise PlinkError(f"hosts {seen[i]!r} and {h.name!r} are both this job's node {names[i]!r}"
                                 + (" (an order of ranks, from probe --per-rank: pass --per-rank, per_rank=True)"
                                    if per_rank else ""))
            seen[i] = h.name
        out.append(i)
    return out


def ranks_in_order(entry_order: list[int], entries: list[list[int]]) -> list[int]:
    """Global ranks along ``entry_order`` (then the entries it leaves out, in rank order); each entry's ranks
    stay together. ``entry_order`` holds indices into ``entries``, each at most once, and each rank
    is in one entry once (else :class:`~plink.errors.InputError`: a rank came out twice). O(ranks^2)
    at worst, on a duplicate."""
    import numbers

    from plink.errors import InputError

    for i in entry_order:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < len(entries):
            raise InputError(f"entry {i!r} is not an index of the {len(entries)} entries (0..{len(entries) - 1})")
    if len(set(entry_order)) != len(entry_order):
        raise InputError(f"entry {next(i for i in entry_order if list(entry_order).count(i) > 1)} appears twice in "
                         "the order")
    ranks = [r for e in entries for r in e]
    bad = next((r for r in ranks if isinstance(r, bool) or not isinstance(r, numbers.Integral) or r < 0), None)
    if bad is not None:
        raise InputError(f"entries must hold global ranks (whole numbers >= 0), got {bad!r}")
    if len(set(ranks)) != len(ranks):
        raise InputError(f"rank {next(r for r in ranks if ranks.count(r) > 1)} is in two entries (or twice in one)")
    seen = set(entry_order)
    full = list(entry_order) + [i for i in range(len(entries)) if i not in seen]
    return [r for i in full for r in entries[i]]


def _dist():
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise PlinkError("torch.distributed is not initialised: call init_process_group first")
    return dist


def _share(store, key: str, make, timeout: float, what: str):
    """Rank 0 computes ``make()`` (JSON-able) and publishes it; every rank returns it.

    An exception on rank 0 is published too, so the others raise the same
    message instead of waiting for the timeout.
    """
    from plink.distributed.probe import _wait

    dist = _dist()
    if dist.get_rank() == 0:
        try:
            value = make()
        except Exception as exc:
            store.set(key, json.dumps({"error": f"{type(exc).__name__}: {exc}", "type": type(exc).__name__}))
            raise
        store.set(key, json.dumps({"value": value}))
        return value
    doc = json.loads(_wait(store, key, timeout, what))
    if "error" in doc:
        # the same plink error class on every rank (an OptionError is a ValueError on rank 0: on the others too)
        import plink.errors as errors

        cls = getattr(errors, str(doc.get("type")), None)
        cls = cls if isinstance(cls, type) and issubclass(cls, PlinkError) else PlinkError
        raise cls(f"rank 0 failed: {doc['error']}")
    return doc["value"]


def order_from_file(path, *, per_rank: bool = False, timeout: float = 60.0) -> list[int]:
    """This job's global ranks in the order of an order file (every rank gets the same list).

    ``path`` is read on rank 0 (``plink order --format json`` output, a plain
    host list or a torchrun map); hosts are matched to this job's nodes by
    name, then address; nodes the file does not name go last, in rank
    order (logged).  Collective.
    """
    from plink.data.orderfile import read_order_hosts
    from plink.distributed.probe import _store, identify

    global _calls
    dist = _dist()
    _calls += 1
    store = _store(dist, _calls, "order-file")
    plan, _ = identify(store, per_rank, timeout)

    def make():
        hosts = read_order_hosts(path)
        idx = match_hosts(hosts, plan.names, plan.addresses)
        order = [i for i in idx if i is not None]
        unknown = [h.name for h, i in zip(hosts, idx) if i is None]
        if not order:
            raise PlinkError(f"{path}: none of its {len(hosts)} hosts is a node of this job ({', '.join(plan.names[:4])} ...)")
        if unknown:
            log.warning("plink.distributed: %s: %d hosts are not in this job (ignored): %s", path, len(unknown),
                        ", ".join(unknown[:8]))
        left = [plan.names[i] for i in range(len(plan.entries)) if i not in set(order)]
        if left:
            log.warning("plink.distributed: %s does not name %d of this job's nodes; they go last: %s", path,
                        len(left), ", ".join(left[:8]))
        return ranks_in_order(order, plan.entries)

    return _share(store, "order", make, timeout, "the order from rank 0")


def locality_group(algo: str = "ring", *, probe_file=None, order_file=None, time_limit: float = 2.0,
                   size: int = 25 * 2**20, seed: int = 0, per_rank: bool = False, timeout: float = 60.0,
                   backend: str | None = None, probe_options: dict | None = None, verify: bool = False,
                   verify_repeats: int = 5):
    """``(group, order)``: a process group whose rank order follows the network, and that order.

    Collective: every rank of the default group calls it and gets the same
    ``order`` (global ranks, group rank ``i`` = ``order[i]``).  Steps: probe
    the job with :func:`~plink.distributed.probe.probe_group` (``probe_options``
    are passed on), or read ``probe_file`` on rank 0, or take ``order_file``
    as is (:func:`order_from_file`); solve on rank 0 with
    :func:`plink.order_hosts` (``algo``, ``size`` bytes, ``time_limit``
    seconds, ``seed``); build ``new_group(order, sort_ranks=False)``.

    With fewer nodes than an order can matter for (< 4 for a ring, where
    every ring is the same up to rotation and direction; < 2 otherwise)
    nothing is probed and the default group is returned with
    ``order = list(range(world))``, logged at INFO level.
    With ``verify``, the new group is kept only if the job's own all-reduce
    (``size`` bytes) *measures* faster on it than on the default group:
    :func:`~plink.distributed.compare.compare_groups`, median of
    ``verify_repeats`` alternating runs each, the slowest rank's time.  Else the
    default group is returned with ``order = list(range(world))``.  Either way
    the measurement is logged (WARNING, rank 0), and every rank takes the same
    decision.  A model predicts the network's part of the time; this measures
    the whole (copies, reductions, the library, the load), so a reordered
    group that measures slower than the launcher's order is not used.  A
    median of a few runs is noisy: where the two orders are about as fast,
    either may be kept (the logged line says in how many rounds plink's won).
    An order that is the launcher's own (``list(range(world))``) is not timed against
    itself: the default group is returned. Every argument is checked before anything
    collective (:class:`~plink.errors.OptionError`, a ``ValueError``), and an error on rank 0
    (a file it cannot read, a bad probe) is raised on every rank with the same class.
    Time: the probe's (see :mod:`plink.distributed.probe`) plus ``time_limit``
    plus one ``new_group``, plus ``2 (verify_repeats + 1)`` all-reduces of
    ``size`` with ``verify`` (:func:`~plink.distributed.compare.compare_groups`).
    """
    from plink.distributed.probe import _store, identify, probe_group

    from plink.distributed.probe import check_backend, check_timeout, probe_group
    from plink.order import _check_number, check_options
    from plink.units import parse_size

    global _calls
    # every argument is checked before anything collective (a bad algo was found after the whole probe, and
    # with fewer than 4 nodes not at all)
    if isinstance(size, str):
        size = parse_size(size)
    check_options(algo, time_limit=time_limit, size=size)
    _check_number("seed", seed, True)
    if not 0 <= seed < 2**32:
        raise OptionError(f"seed must be 0 .. 2**32 - 1, got {seed}")
    timeout = check_timeout(timeout)
    if backend is not None:
        check_backend(backend, allow_auto=False)
    if verify:
        _check_number("verify_repeats", verify_repeats, True)
        if verify_repeats < 1:
            raise OptionError(f"verify_repeats must be >= 1, got {verify_repeats}")
        if size < 4:  # (found after the probe and the solve, by compare_groups)
            raise OptionError(f"size must be at least 4 bytes (one float32) to verify, got {size}")
    if probe_options:  # a misspelt key was found only after the rendezvous (and not at all on 1-3 nodes)
        import inspect

        known = set(inspect.signature(probe_group).parameters) - {"per_rank", "timeout"}
        unknown = sorted(set(probe_options) - known)
        if unknown:
            raise OptionError(f"probe_options: unknown key {unknown[0]!r} (choose from {', '.join(sorted(known))})")
    if order_file is not None and probe_file is not None:
        raise OptionError("give probe_file or order_file, not both")
    dist = _dist()
    world = dist.get_world_size()
    if order_file is not None:
        order = order_from_file(order_file, per_rank=per_rank, timeout=timeout)
        return _checked(dist, _new_group(dist, order, timeout, backend), order, verify, size, verify_repeats)
    _calls += 1
    store = _store(dist, _calls, "locality")
    plan, _ = identify(store, per_rank, timeout)
    n = len(plan.entries)
    if n < MIN_ENTRIES.get(algo, 2):
        if probe_file is not None:  # read on rank 0 all the same: a missing file is an error on every rank

            def readable():
                from plink import load

                load(probe_file)
                return True

            _share(store, "probe-file", readable, timeout, "the probe file check from rank 0")
        if dist.get_rank() == 0:  # WARNING: shown without any logging set-up
            log.warning("plink.distributed: %d %s: every %s order is the same here; keeping the default group",
                        n, ("rank" if per_rank else "node") + ("" if n == 1 else "s"), algo)
        return dist.group.WORLD, list(range(world))
    probe = None
    if probe_file is None:
        probe = probe_group(per_rank=per_rank, timeout=timeout, **(probe_options or {}))

    def make():
        from plink import load, order_hosts

        data = probe if probe is not None else load(probe_file)
        idx = match_hosts(data.hosts, plan.names, plan.addresses)
        keep = [k for k, i in enumerate(idx) if i is not None]
        if len(keep) < 2:
            raise PlinkError(f"{probe_file}: names {len(keep)} of this job's nodes; need at least 2")
        sub = data.subset(keep)
        t0 = time.perf_counter()
        res = order_hosts(sub, algo, size=size, time_limit=time_limit, seed=seed)
        order = ranks_in_order([idx[keep[k]] for k in res.order], plan.entries)
        lo, hi = res.speedup_span("input")  # a span where capacities were assumed (plink order's report)
        faster = f"{hi:.2f}x" if abs(hi - lo) <= 5e-3 * hi else f"{lo:.2f}-{hi:.2f}x (over capacities not measured)"
        log.warning("plink.distributed: %s order over %d %s in %.1f s, model %s faster than the rank order: %s",
                    algo, sub.n, "ranks" if per_rank else "nodes", time.perf_counter() - t0, faster,
                    " ".join(res.hosts[:16]) + (" ..." if sub.n > 16 else ""))
        hint = no_racks_hint(res.groups, sub.n, sub.bandwidth is not None, "ranks" if per_rank else "nodes")
        if hint:
            log.warning("plink.distributed: %s", hint)
        return order

    order = _share(store, "order", make, timeout + time_limit + 30.0, "the order from rank 0")
    return _checked(dist, _new_group(dist, order, timeout, backend), order, verify, size, verify_repeats)


def _checked(dist, group, order: list[int], verify: bool, size: int, repeats: int):
    """``(group, order)``, or the default group when ``verify`` and the all-reduce is not faster on ``group``."""
    if not verify:
        return group, order
    if list(order) == list(range(dist.get_world_size())):  # nothing to compare: plink's order is the launcher's
        if dist.get_rank() == 0:
            log.warning("plink.distributed: plink's order is the launcher's: keeping the default group")
        try:
            dist.destroy_process_group(group)
        except Exception as exc:  # noqa: BLE001
            log.debug("plink.distributed: could not destroy the unused group: %s", exc)
        return dist.group.WORLD, list(order)
    from plink.distributed.compare import compare_groups

    cmp = compare_groups(group, size=size, repeats=repeats)
    keep = cmp.candidate_faster
    if dist.get_rank() == 0:
        log.warning("plink.distributed: measured %s: %s", cmp.summary(),
                    "using plink's order" if keep else "keeping the default group")
    if keep:
        return group, order
    try:  # every rank falls back together: free the unused group's communicator
        dist.destroy_process_group(group)
    except Exception as exc:  # noqa: BLE001 - a group left alive costs memory, not correctness
        log.debug("plink.distributed: could not destroy the unused group: %s", exc)
    return dist.group.WORLD, list(range(dist.get_world_size()))


#: from this many entries on, finding no groups in the latencies alone earns a hint to probe bandwidth
HINT_MIN_ENTRIES = 8


def no_racks_hint(groups: dict, n: int, has_bandwidth: bool, what: str = "nodes") -> str | None:
    """The advice logged when the latencies of ``n`` entries showed one group and no bandwidth was probed.

    Latencies can hide racks that a bandwidth probe (pairs of a round sharing
    the uplinks) shows, above all the tensor ping-pongs (``method="tensor"``),
    which pay the processes' wake-ups on every pair: on the netns cluster 3 of
    8 latency-only runs with them gave a rack-contiguous ring, 3 of 3 with
    bandwidth (README, "Inside the job").  O(1).
    """
    if has_bandwidth or n < HINT_MIN_ENTRIES or int(groups.get("k", 0)) != 1:
        return None
    return (f"the latencies of the {n} {what} show no racks; if they are racks apart, probe bandwidth too: "
            "locality_group(..., probe_options={'bandwidth': True})")


def _new_group(dist, order: list[int], timeout: float, backend: str | None):
    if sorted(order) != list(range(dist.get_world_size())):
        raise PlinkError(f"order {order[:8]}... is not a permutation of the {dist.get_world_size()} ranks")
    # the group's own timeout stays the default group's (what the training's collectives expect)
    return dist.new_group(ranks=order, sort_ranks=False, backend=backend)
