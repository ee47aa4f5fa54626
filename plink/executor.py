"""Execute a 2LHA schedule with torch.distributed point-to-point operations.

:func:`all_reduce` is a drop-in hierarchical all-reduce: every rank calls
``all_reduce(tensor, schedule)`` and afterwards holds the element-wise sum
of everyone's ``tensor`` (in place), computed by the schedule's action DAG
with ``isend``/``irecv`` (Gloo on CPU, any backend with point-to-point).
Schedule node ``i`` is rank ``i`` of ``group`` (default: the world), so
write the schedule with the hosts in rank order.

How the DAG runs.  The schedule is verified once (:func:`plink.verify.verify`,
which also gives every action its *level*: the number of message hops
before it) and compiled, per rank, into rounds.  In round ``d`` a rank

1. runs its actions of level ``d - 1`` in dependency order — Fetch copies
   the input chunk into the merge buffer, ReceiveFrom adds (``sum``) or
   copies (``copy``) the messages that arrived for it, Deliver writes the
   merge buffer to the output, SendTo snapshots the merge buffer;
2. posts one ``isend`` per peer with all chunks it sends that peer in this
   round (concatenated in chunk order: coalescing, like AggEngine's one
   stream per pair) and one matching ``irecv`` per peer it hears from;
3. waits for them.

A message's round is the same on both ends (the sender's level + 1), so
every receive is matched in the same round and nothing deadlocks; chunks
never wait on each other, only the round barrier of each rank orders them.
The compiled program is cached per (schedule, rank).

The tensor must be contiguous with ``tensor.numel() * element_size ==
schedule size``, and every chunk boundary a multiple of the element size.
Pass ``stats={}`` to receive per-link ``bytes``/``seconds`` (round wall
time) rows in the :mod:`plink.autotune` stats format for links this rank
sent on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .errors import PlinkError

_CACHE: dict[tuple[int, int], "Program"] = {}


@dataclass
class Round:
    actions: list[int]  #: actions run before the round's transfers (level d - 1), in dependency order
    sends: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  #: peer -> [(chunk, send action)]
    recvs: dict[int, list[int]] = field(default_factory=dict)  #: peer -> chunks arriving this round


@dataclass
class Program:
    rank: int
    rounds: list[Round]
    final: list[int]  #: actions after the last round


def compile_program(dag, rank: int, levels: list[int] | None = None) -> Program:
    """Per-rank rounds of a verified DAG (module docstring).  ``O(A log A)``."""
    from .verify import check

    if levels is None:
        levels = check(dag).levels
    mine = [a for a in range(len(dag)) if dag.node[a] == rank]
    # dependency order inside a level: sort by (level, topological position)
    topo = _topo_positions(dag, mine)
    mine.sort(key=lambda a: (levels[a], topo[a]))
    depth = max((levels[a] + 1 for a in range(len(dag)) if dag.op[a] == "send"), default=0)
    rounds = [Round([]) for _ in range(depth)]
    final: list[int] = []
    for a in mine:
        lv = levels[a]
        (rounds[lv].actions if lv < depth else final).append(a)
        if dag.op[a] == "send":
            for p in dag.peers[a]:
                rounds[lv].sends.setdefault(p, []).append((dag.chunk[a], a))
    for a in range(len(dag)):
        if dag.op[a] == "send" and rank in dag.peers[a]:
            rounds[levels[a]].recvs.setdefault(dag.node[a], []).append(dag.chunk[a])
    for r in rounds:
        for p in r.sends:
            r.sends[p].sort()
        for p in r.recvs:
            r.recvs[p].sort()
    return Program(rank, rounds, final)


def _topo_positions(dag, actions: list[int]) -> dict[int, int]:
    pos: dict[int, int] = {}
    state: dict[int, int] = {}
    for a in actions:
        stack = [(a, False)]
        while stack:
            x, done = stack.pop()
            if done:
                if x not in pos:
                    pos[x] = len(pos)
                continue
            if x in pos or state.get(x):
                continue
            state[x] = 1
            stack.append((x, True))
            stack.extend((d, False) for d in dag.deps[x] if d not in pos)
    return pos


def _element_bounds(chunks: np.ndarray, size: int, tensor) -> list[slice]:
    item = tensor.element_size()
    if tensor.numel() * item != size:
        raise PlinkError(f"tensor has {tensor.numel() * item} bytes but the schedule is for {size} bytes")
    if np.any(chunks % item):
        raise PlinkError(f"schedule chunk boundaries are not multiples of the element size ({item} B)")
    el = chunks // item
    return [slice(int(o), int(o + n)) for o, n in el]


def all_reduce(tensor, schedule, group=None, stats: dict | None = None):
    """Sum ``tensor`` over all ranks in place by executing ``schedule``; returns ``tensor``.

    ``schedule`` is a :class:`plink.dag.Schedule` (or a :class:`plink.dag.Dag`).
    """
    import torch
    import torch.distributed as dist

    dag = schedule.dag if hasattr(schedule, "dag") and not hasattr(schedule, "node") else schedule
    size = int(np.asarray(dag.chunks)[:, 1].sum())
    world = dist.get_world_size(group)
    rank = dist.get_rank(group)
    if world != dag.n:
        raise PlinkError(f"the schedule has {dag.n} nodes but the process group has {world} ranks")
    if not tensor.is_contiguous():
        raise PlinkError("all_reduce needs a contiguous tensor")
    key = (id(dag), rank)
    prog = _CACHE.get(key)
    if prog is None or getattr(prog, "_dag", None) is not dag:
        prog = compile_program(dag, rank)
        prog._dag = dag  # type: ignore[attr-defined]
        _CACHE[key] = prog
    flat = tensor.view(-1)
    bounds = _element_bounds(np.asarray(dag.chunks), size, tensor)
    orig = flat.clone()
    buf = torch.empty_like(flat)
    pending: dict[tuple[int, int], "torch.Tensor"] = {}

    def peer_rank(p: int) -> int:
        return p if group is None else dist.get_global_rank(group, p)

    def run(actions: list[int]) -> dict[int, "torch.Tensor"]:
        snaps: dict[int, torch.Tensor] = {}
        for a in actions:
            op, c = dag.op[a], dag.chunk[a]
            sl = bounds[c]
            if op == "fetch":
                buf[sl] = orig[sl]
            elif op == "recv":
                if dag.reduce[a] == "copy":
                    buf[sl] = pending.pop((dag.peers[a][0], c))
                else:
                    for p in dag.peers[a]:
                        buf[sl] += pending.pop((p, c))
            elif op == "deliver":
                flat[sl] = buf[sl]
            else:  # send: snapshot now; the merge buffer may change later in this level
                snaps[a] = buf[sl].clone()
        return snaps

    links: dict[int, list[float]] = {}
    for d, rnd in enumerate(prog.rounds, start=1):
        snaps = run(rnd.actions)
        t0 = time.perf_counter()
        works = []
        incoming = []
        for p, chunks in rnd.recvs.items():
            total = sum(bounds[c].stop - bounds[c].start for c in chunks)
            t = torch.empty(total, dtype=flat.dtype)
            works.append(dist.irecv(t, src=peer_rank(p), group=group, tag=d))
            incoming.append((p, chunks, t))
        for p, items in rnd.sends.items():
            out = torch.cat([snaps[a] for _, a in items]) if len(items) > 1 else snaps[items[0][1]]
            works.append(dist.isend(out, dst=peer_rank(p), group=group, tag=d))
            if stats is not None:
                links.setdefault(p, [0.0, 0.0])[0] += out.numel() * out.element_size()
        for w in works:
            w.wait()
        dt = time.perf_counter() - t0
        if stats is not None:
            for p in rnd.sends:
                links[p][1] += dt
        for p, chunks, t in incoming:
            o = 0
            for c in chunks:
                n = bounds[c].stop - bounds[c].start
                pending[(p, c)] = t[o:o + n]
                o += n
    run(prog.final)
    if pending:
        raise PlinkError(f"internal error: {len(pending)} received chunks were never used")
    if stats is not None:
        names = list(getattr(schedule, "hosts", dag.hosts))
        stats.setdefault("links", []).extend(
            {"src": names[rank], "dst": names[p], "bytes": int(b), "seconds": s} for p, (b, s) in sorted(links.items())
        )
    return tensor
