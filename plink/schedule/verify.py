"""Prove a schedule correct by symbolic execution; ``summarize`` adds its predicted time.

:func:`verify` executes an action DAG (:mod:`plink.schedule.dag`) symbolically: the
value of every merge buffer is the *set of contributors* it holds (a bitset
over nodes).  Every ``recv sum`` checks that what it adds is disjoint from
what the buffer already holds, so a value never counts a node twice; every
``deliver`` checks that the buffer holds exactly all N nodes.  Together:
every node delivers exactly the global sum of every chunk — nothing
missing, nothing double counted.  Also checked: structure (ids, peers,
reduce modes, deps only inside one node and chunk), that every SendTo has
exactly one matching ReceiveFrom and vice versa, that execution in
dependency order (Kahn's algorithm, messages as extra edges) runs every
action (no deadlock), that each (node, chunk) fetches and delivers exactly
once, and that no two conflicting actions on one merge buffer are unordered
(reads — send, deliver — may run together, so may ``recv sum``s; anything
else must be ordered by the DAG).  Complexity ``O(A + M N / w)`` for ``A``
actions and ``M`` messages (``w``-bit words of the bitsets).

The *round* of a message is the number of message hops that causally precede
it plus one (member -> LM is round 1, LM -> GM round 2, GM -> LM round 3,
LM -> member round 4: Table 4.1's 4 rounds for 2LHA).

The time model (rounds priced on the network's shared links: host NICs and group uplinks) is
:mod:`plink.schedule.timemodel`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plink.data.fileio import finite_json
from plink.data.inputs import host_key, hosts_not_in
from plink.schedule.dag import Dag, ScheduleError
from plink.schedule.executor import DEFAULT_WAVES
from plink.schedule.timemodel import (ASSUMED_GBPS, Traffic, cross_bytes, unmeasured_note, plan_traffic,
                                      predict_all, shared_network, table41)
from plink.units import format_size

READS = ("send", "deliver")


@dataclass
class VerifyReport:
    ok: bool
    errors: list[str]
    n_actions: int
    n_messages: int = 0
    rounds: int = 0
    bytes_total: int = 0
    bytes_cross: int = 0
    traffic: list[Traffic] = field(default_factory=list)
    #: per action: the number of message hops that precede it (a send's messages travel in round level+1)
    levels: list[int] = field(default_factory=list)


def _structure_errors(dag: Dag, limit: int) -> list[str]:
    errs: list[str] = []
    n, c, m = dag.n, len(dag.chunks), len(dag)
    for a in range(m):
        if len(errs) >= limit:
            break
        node, ch, op, peers, red = dag.node[a], dag.chunk[a], dag.op[a], dag.peers[a], dag.reduce[a]
        where = f"action {a} ({op} at node {node}, chunk {ch})"
        if not (0 <= node < n and 0 <= ch < c):
            errs.append(f"{where}: node or chunk out of range")
            continue
        if op in ("send", "recv"):
            if not peers:
                errs.append(f"{where}: no peers")
            if len(set(peers)) != len(peers) or node in peers or any(not 0 <= p < n for p in peers):
                errs.append(f"{where}: peers must be distinct other nodes")
        elif peers:
            errs.append(f"{where}: {op} takes no peers")
        if op == "recv":
            if red not in ("sum", "copy"):
                errs.append(f"{where}: reduce must be 'sum' or 'copy'")
            elif red == "copy" and len(peers) != 1:
                errs.append(f"{where}: reduce 'copy' needs exactly one peer")
        elif red is not None:
            errs.append(f"{where}: only recv has a reduce mode")
        for d in dag.deps[a]:
            if not 0 <= d < m or d == a:
                errs.append(f"{where}: dependency {d} is not another action")
            elif dag.node[d] != node or dag.chunk[d] != ch:
                errs.append(f"{where}: dependency {d} is on another node or chunk")
    return errs


def verify(dag: Dag, max_errors: int = 20) -> VerifyReport:
    """Execute ``dag`` symbolically and report every violated rule (module docstring)."""
    n, nchunks, m = dag.n, len(dag.chunks), len(dag)
    errs = _structure_errors(dag, max_errors)
    if errs:
        return VerifyReport(False, errs, m)

    def err(msg: str) -> None:
        if len(errs) < max_errors:
            errs.append(msg)

    recvs = _match_messages(dag, err)
    run = _execute(dag, recvs, err)
    if len(run.order) < m:
        stuck = [a for a in range(m) if run.indeg[a] > 0]
        desc = ", ".join(f"{a} ({dag.op[a]} at node {dag.node[a]}, chunk {dag.chunk[a]})" for a in stuck[:3])
        err(f"deadlock: {len(stuck)} actions can never run, e.g. {desc}")
    else:
        for node in range(n):
            for ch in range(nchunks):
                got = run.delivered.get(node * nchunks + ch, 0)
                if got != 1:
                    err(f"node {node} delivers chunk {ch} {got} times (must be exactly once)")
        _race_check(dag, run.order, err)

    report = VerifyReport(not errs, errs, m, n_messages=len(run.msg_src), levels=run.level)
    if run.msg_src:
        _add_traffic(report, dag, run)
    return report


def _match_messages(dag: Dag, err) -> dict[tuple[int, int, int], int]:
    """Every send has exactly one matching receive and back (keys ``(from, to, chunk)``); the receives."""
    sends: dict[tuple[int, int, int], int] = {}
    recvs: dict[tuple[int, int, int], int] = {}
    for a in range(len(dag)):
        op = dag.op[a]
        if op == "send":
            for p in dag.peers[a]:
                key = (dag.node[a], p, dag.chunk[a])
                if key in sends:
                    err(f"node {key[0]} sends chunk {key[2]} to node {p} twice (actions {sends[key]}, {a})")
                sends[key] = a
        elif op == "recv":
            for p in dag.peers[a]:
                key = (p, dag.node[a], dag.chunk[a])
                if key in recvs:
                    err(f"node {key[1]} receives chunk {key[2]} from node {p} twice (actions {recvs[key]}, {a})")
                recvs[key] = a
    for key, a in sends.items():
        if key not in recvs:
            err(f"SendTo without a matching ReceiveFrom: node {key[0]} -> node {key[1]}, chunk {key[2]} (action {a})")
    for key, a in recvs.items():
        if key not in sends:
            err(f"ReceiveFrom without a matching SendTo: node {key[1]} <- node {key[0]}, chunk {key[2]} (action {a})")
    return recvs


@dataclass
class _Execution:
    """What running a DAG symbolically left: the actions in the order they ran, each action's
    round, the dependencies still unmet (a deadlock), deliveries per (node, chunk) key, and
    every message (source, destination, bytes, round, chunk)."""

    order: list[int]
    level: list[int]
    indeg: list[int]
    delivered: dict[int, int]
    msg_src: list[int] = field(default_factory=list)
    msg_dst: list[int] = field(default_factory=list)
    msg_len: list[int] = field(default_factory=list)
    msg_round: list[int] = field(default_factory=list)
    msg_chunk: list[int] = field(default_factory=list)


def _execute(dag: Dag, recvs: dict[tuple[int, int, int], int], err) -> _Execution:
    """Run ``dag`` on contribution bitmasks (bit ``i``: node ``i``'s value), in dependency order;
    a receive waits for its dependencies and its peers' sends.  Reports double counting, fetches
    twice and deliveries without every contribution through ``err``."""
    n, nchunks, m = dag.n, len(dag.chunks), len(dag)
    indeg = [len(d) for d in dag.deps]
    children: list[list[int]] = [[] for _ in range(m)]
    for a, ds in enumerate(dag.deps):
        for d in ds:
            children[d].append(a)
        if dag.op[a] == "recv":
            indeg[a] += len(dag.peers[a])
    full = (1 << n) - 1
    buf: dict[int, int] = {}
    fetched: set[int] = set()
    run = _Execution(order=[], level=[0] * m, indeg=indeg, delivered={})
    msg: dict[tuple[int, int, int], tuple[int, int]] = {}
    lengths = [int(x) for x in np.asarray(dag.chunks)[:, 1]]
    ready = deque(a for a in range(m) if indeg[a] == 0)
    while ready:
        a = ready.popleft()
        run.order.append(a)
        node, ch, op = dag.node[a], dag.chunk[a], dag.op[a]
        key = node * nchunks + ch
        lvl = max((run.level[d] for d in dag.deps[a]), default=0)
        cur = buf.get(key, 0)
        if op == "fetch":
            # A node's own bit for a chunk is set only here, so before its first fetch no message can
            # carry it into this buffer: fetching twice is the only way to count it twice at a fetch.
            if key in fetched:
                err(f"node {node} fetches chunk {ch} twice")
            fetched.add(key)
            buf[key] = cur | (1 << node)
        elif op == "send":
            for p in dag.peers[a]:
                msg[(node, p, ch)] = (cur, lvl + 1)
                run.msg_src.append(node)
                run.msg_dst.append(p)
                run.msg_len.append(lengths[ch])
                run.msg_round.append(lvl + 1)
                run.msg_chunk.append(ch)
                r = recvs.get((node, p, ch))
                if r is not None:
                    indeg[r] -= 1
                    if indeg[r] == 0:
                        ready.append(r)
        elif op == "recv":
            vals = [msg[(p, node, ch)] for p in dag.peers[a]]
            lvl = max(lvl, max(v[1] for v in vals))
            if dag.reduce[a] == "copy":
                cur = vals[0][0]
            else:
                for p, (bits, _) in zip(dag.peers[a], vals):
                    both = cur & bits
                    if both:
                        twice = [i for i in range(n) if both >> i & 1][:5]
                        err(f"double counting: node {node} adds chunk {ch} from node {p} with contributions "
                            f"of nodes {twice} already in its buffer")
                    cur |= bits
            buf[key] = cur
        else:  # deliver
            run.delivered[key] = run.delivered.get(key, 0) + 1
            if cur != full:
                missing = [i for i in range(n) if not cur >> i & 1][:5]
                err(f"node {node} delivers chunk {ch} without the contributions of nodes {missing}")
        run.level[a] = lvl
        for b in children[a]:
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    return run


def _add_traffic(report: VerifyReport, dag: Dag, run: _Execution) -> None:
    """The report's rounds, bytes (all, and across groups) and per-round traffic, from the messages."""
    src = np.array(run.msg_src, dtype=np.int64)
    dst = np.array(run.msg_dst, dtype=np.int64)
    ln = np.array(run.msg_len, dtype=np.int64)
    rnd = np.array(run.msg_round, dtype=np.int64)
    chunk = np.array(run.msg_chunk, dtype=np.int64)
    labels = np.asarray(dag.labels)
    report.rounds = int(rnd.max())
    report.bytes_total = int(ln.sum())
    report.bytes_cross = int(ln[labels[src] != labels[dst]].sum())
    report.traffic = [Traffic(src[rnd == r], dst[rnd == r], ln[rnd == r].astype(float), chunk=chunk[rnd == r])
                      for r in range(1, report.rounds + 1)]


def _race_check(dag: Dag, order: list[int], err) -> None:
    """Conflicting actions on one merge buffer must be ordered by the DAG."""
    nchunks = len(dag.chunks)
    groups: dict[int, list[int]] = {}
    for a in order:  # topological order
        groups.setdefault(dag.node[a] * nchunks + dag.chunk[a], []).append(a)
    for acts in groups.values():
        pos = {a: i for i, a in enumerate(acts)}
        anc = [0] * len(acts)
        for i, a in enumerate(acts):
            for d in dag.deps[a]:
                j = pos[d]
                anc[i] |= anc[j] | (1 << j)
        for i in range(len(acts)):
            for j in range(i):
                if anc[i] >> j & 1:
                    continue
                a, b = acts[i], acts[j]
                oa, ob = dag.op[a], dag.op[b]
                if oa in READS and ob in READS:
                    continue
                if oa == ob == "recv" and dag.reduce[a] == dag.reduce[b] == "sum":
                    continue
                err(f"race: actions {b} ({ob}) and {a} ({oa}) of node {dag.node[a]}, chunk {dag.chunk[a]} "
                    "touch the merge buffer without an order")
                return


def check(dag: Dag) -> VerifyReport:
    """:func:`verify`, raising :class:`ScheduleError` with the first problem if the schedule is wrong."""
    rep = verify(dag)
    if not rep.ok:
        more = f" (and {len(rep.errors) - 1} more)" if len(rep.errors) > 1 else ""
        raise ScheduleError(f"invalid schedule: {rep.errors[0]}{more}")
    return rep


#: above this many actions ``summarize`` prices the plan's traffic without building the DAG
VERIFY_LIMIT = 2_000_000

#: memory the DAG and its symbolic execution take per action, bytes (measured: 862 MB of resident memory
#: for ``plink verify`` of 1,163,264 actions, 16 hosts and 1 GiB in 64 KiB chunks, 2026-12-02)
BYTES_PER_ACTION = 750
#: actions per host and chunk of a 2LHA DAG, about (fetch, sends, receives, deliver)
ACTIONS_PER_HOST_CHUNK = 4.3


def _available_memory() -> int | None:
    """Bytes of memory the kernel says are available (``MemAvailable``), or None where it does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(sched) -> None:
    """Refuse, with a clear :class:`ScheduleError`, to verify a schedule whose DAG would not fit in the
    memory available (it ended in a MemoryError after minutes: 16 GiB in 64 KiB chunks on 16 hosts
    needs about 12 GiB). Actions estimated as ``ACTIONS_PER_HOST_CHUNK N C`` when the DAG is not built yet."""
    n_actions = (len(sched._dag) if sched._dag is not None
                 else int(ACTIONS_PER_HOST_CHUNK * len(sched.hosts) * len(sched.chunks)))
    need, free = n_actions * BYTES_PER_ACTION, _available_memory()
    if free is not None and need > free:
        raise ScheduleError(f"verifying about {n_actions} actions needs about {format_size(need)} of memory, "
                            f"{format_size(free)} is available: verify the schedule of a smaller --size over "
                            "the same groups (every chunk follows the same rules)")


def _same_partition(a, b) -> bool:
    """Whether two label arrays group the hosts alike (whatever the labels' names)."""
    a, b = np.asarray(a), np.asarray(b)
    pairs = np.unique(np.stack([a, b]), axis=1).shape[1]
    return pairs == np.unique(a).size == np.unique(b).size


def _hosts_differ(probe_hosts: list[str], sched_hosts: list[str]) -> str:
    """The error for a probe over other hosts than a schedule's: which hosts, or that only the order differs."""
    def few(names):
        shown = ", ".join(repr(n) for n in names[:3])
        return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    msg = "the probe file's hosts differ from the schedule's"
    extra, lacking = hosts_not_in(probe_hosts, sched_hosts), hosts_not_in(sched_hosts, probe_hosts)
    if not extra and not lacking:
        return msg + ": the same hosts in another order (the schedule's node i is the probe's host i)"
    parts = ([f"{len(lacking)} of the schedule's not in the probe ({few(lacking)})"] if lacking else []) + (
        [f"{len(extra)} in the probe only ({few(extra)})"] if extra else [])
    return f"{msg}: " + "; ".join(parts)


def summarize(sched, probe=None, verify_limit: int = VERIFY_LIMIT,
              assumed_gbps: float = ASSUMED_GBPS, waves: int = DEFAULT_WAVES) -> dict[str, Any]:
    """Everything ``plink schedule`` / ``plink verify`` print, as a dict.

    Verifies the DAG when it has at most ``verify_limit`` actions (about
    ``4 C N``), else prices ``plan_traffic`` and says it was not verified.
    With ``probe`` (same hosts, same order), adds the predicted times of
    2LHA, flat ring and sharded PS on the probe's shared links
    (:func:`plink.schedule.timemodel.shared_network`: host NICs, the groups'
    uplinks; 2LHA's rounds in ``waves`` as the executor runs them,
    :func:`plink.schedule.timemodel.pipelined`) and the master balance, with ``notes`` on what the network
    assumed; without a bandwidth matrix the host NICs are ``assumed_gbps``
    and ``model`` says so.  Every number is finite (an undefined ratio is ``None``).
    """
    from plink.schedule.plan import balance

    # before the probe's matrices meet the plan's (names differing only in case are one host, as everywhere)
    if probe is not None and list(map(host_key, probe.names)) != list(map(host_key, sched.hosts)):
        raise ScheduleError(_hosts_differ(probe.names, list(sched.hosts)))
    if probe is not None:
        from plink.data.probefile import check_every_host_measured

        check_every_host_measured(probe)  # a time predicted from nothing measured is no prediction
    n, nchunks = len(sched.hosts), len(sched.chunks)
    labels = np.asarray(sched.labels)
    out: dict[str, Any] = {"hosts": n, "groups": int(labels.max()) + 1, "size": int(sched.size),
                           "chunks": nchunks, "chunk": int(sched.chunk_bytes)}
    traffic = None
    est = int(ACTIONS_PER_HOST_CHUNK * n * nchunks)
    if sched._dag is not None or est <= verify_limit:
        rep = verify(sched.dag)
        out["verified"] = rep.ok
        out["errors"] = rep.errors
        out["actions"] = rep.n_actions
        if rep.ok:
            traffic = rep.traffic
    else:
        out["verified"] = None
        out["errors"] = []
        out["note"] = (f"not verified: about {est} actions (> {verify_limit}); run 'plink verify' (about "
                       f"{format_size(est * BYTES_PER_ACTION)} of memory)")
        traffic = plan_traffic(sched.plan)
    if traffic is not None:
        out["rounds"] = len(traffic)
        out["bytes_total"] = float(sum(t.nbytes.sum() for t in traffic))
        out["bytes_cross_group"] = cross_bytes(traffic, labels)
        out["table41"] = table41(labels, sched.size)
    if sched.plan is not None:
        bw = probe.bandwidth if probe is not None else None
        if sched.plan.capacity == "cardinality" or bw is not None:
            out["balance"] = balance(sched.plan, bw)
    if probe is None and traffic is not None:
        out["notes"] = ["no probe file: no predicted times (plink verify SCHEDULE PROBEFILE)"]
    if probe is not None and traffic is not None:
        net = shared_network(probe, labels, assumed_gbps)
        preds = predict_all(traffic, net, labels, sched.size, waves, nchunks)
        out["waves"] = min(waves, nchunks)
        out["predicted"] = {k: v.to_dict() for k, v in preds.items()}
        note = unmeasured_note(probe)  # what the network filled in: said, not priced silently
        if note:
            out["note_unmeasured"] = note
        out["notes"] = list(net.notes)
        if "nic" not in net.assumed and assumed_gbps != ASSUMED_GBPS:  # (it was ignored without a word)
            out["notes"].append(f"--assume-bandwidth {assumed_gbps:g} ignored: the host NICs come from the "
                                "probe's measured bandwidth")
        out["model"] = "shared links: host NICs" + (
            f" assumed {assumed_gbps:g} Gbit/s" if "nic" in net.assumed else "") + (
            " and group uplinks" if net.n_groups > 1 or net.outer else "")
        if not _same_partition(net.groups, labels):  # the racks priced are not the schedule's groups
            over = cross_bytes(traffic, net.groups)
            out["bytes_over_uplinks"] = over
            from plink.pricing import uplink_labels

            up = uplink_labels(probe)
            tested = int(up.max()) + 1 if up is not None and (up >= 0).any() else 0
            which = (f"the {tested} racks whose uplinks the probe measured" if up is not None and (up >= 0).all() else
                     f"{net.n_groups} groups: {tested} rack(s) whose uplinks the probe measured, and the schedule's "
                     "groups for the hosts it did not test")
            out["notes"].append(
                f"priced on {which}, not on the schedule's {int(labels.max()) + 1} groups: 2LHA sends "
                f"{format_size(over)} over their uplinks ({format_size(out['bytes_cross_group'])} across the "
                "schedule's groups)")
        if "nic" in net.assumed:
            out["assumed_bandwidth_gbps"] = float(assumed_gbps)
    return finite_json(out)
