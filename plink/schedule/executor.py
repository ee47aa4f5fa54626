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
3. waits for the round's receives (all receives are posted up front, tagged with
   their round; sends are waited for at the end).

A message's round is the same on both ends (the sender's level + 1), so
every receive is matched in the same round and nothing deadlocks; chunks
never wait on each other, so the chunks are cut into ``waves`` that run as a
software pipeline (wave ``w`` does its round ``d`` in step ``w + d``): the
local phase of one wave overlaps the global phase of another (§4.1.2).
The compiled program is cached per (schedule, rank).

The tensor must be contiguous with ``tensor.numel() * element_size ==
schedule size``, and every chunk boundary a multiple of the element size.
Pass ``stats={}`` to receive per-link ``bytes``/``seconds`` (round wall
time) rows in the :mod:`plink.schedule.autotune` stats format for links this rank
sent on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from plink.errors import InputError, PlinkError

if TYPE_CHECKING:
    import torch

_CACHE: dict[tuple[int, int, bool, int], "_Compiled"] = {}  #: (id(dag), rank, fast, waves) -> compiled program
WRITES = ("fetch", "recv")


@dataclass
class Round:
    actions: list[int]  #: generic actions run before the round's transfers (level d - 1), in dependency order
    sends: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  #: peer -> [(chunk, send action)]
    recvs: dict[int, list[int]] = field(default_factory=dict)  #: peer -> chunks arriving this round
    fast_send: set[int] = field(default_factory=set)  #: peers whose message is one gather after the level
    eager: set[int] = field(default_factory=set)  #: peers whose message is applied in one op on arrival


@dataclass
class Program:
    rank: int
    rounds: list[Round]
    final: list[int]  #: actions after the last round
    root_fetch: set[int] = field(default_factory=set)  #: chunks whose fetch comes first (buffer starts as input)
    deliver_at_end: bool = False  #: every deliver is a sink: copy the whole merge buffer out at the end
    skip: set[int] = field(default_factory=set)  #: actions done by the fast paths
    eager_reduce: dict[tuple[int, int], str] = field(default_factory=dict)  #: (round, peer) -> sum / copy


def compile_program(dag, rank: int, levels: list[int] | None = None, fast: bool = True) -> Program:
    """Per-rank rounds of a verified DAG (module docstring).  ``O(A log A)``.

    Fast paths (each taken only when it provably gives the generic result):
    a fetch without deps is the first action on its buffer, so the buffer
    starts as the input; a message whose receives have all their
    dependencies at earlier levels is added (or copied) in one indexed op
    on arrival; a message whose sends are not followed by a write at the
    same level is gathered in one op; if every deliver is a sink the merge
    buffer is copied out once at the end.  ``fast=False`` runs every
    action one by one (the reference the fast paths are tested against).
    """
    from plink.schedule.verify import check

    if levels is None:
        levels = check(dag).levels
    m = len(dag)
    children: dict[int, list[int]] = {}
    for a in range(m):
        for d in dag.deps[a]:
            children.setdefault(d, []).append(a)
    mine = [a for a in range(m) if dag.node[a] == rank]
    depth: dict[int, int] = {}
    for a in mine:  # longest dependency path inside the (node, chunk) chain
        stack = [a]
        while stack:
            x = stack[-1]
            todo = [d for d in dag.deps[x] if d not in depth]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            depth[x] = 1 + max((depth[d] for d in dag.deps[x]), default=0)
    mine.sort(key=lambda a: (levels[a], depth[a], dag.chunk[a], a))
    rounds_n = max((levels[a] + 1 for a in range(m) if dag.op[a] == "send"), default=0)
    rounds = [Round([]) for _ in range(rounds_n)]
    prog = Program(rank, rounds, [])
    chain: dict[int, list[int]] = {}
    for a in mine:
        chain.setdefault(dag.chunk[a], []).append(a)
    for a in mine:
        op = dag.op[a]
        if fast and op == "fetch" and not dag.deps[a]:
            prog.root_fetch.add(dag.chunk[a])
        if op == "send":
            for p in dag.peers[a]:
                rounds[levels[a]].sends.setdefault(p, []).append((dag.chunk[a], a))
    for a in range(m):
        if dag.op[a] == "send" and rank in dag.peers[a]:
            rounds[levels[a]].recvs.setdefault(dag.node[a], []).append(dag.chunk[a])
    consumer: dict[tuple[int, int], int] = {}
    for a in mine:
        if dag.op[a] == "recv":
            for p in dag.peers[a]:
                consumer[(p, dag.chunk[a])] = a
    for d0, r in enumerate(rounds):
        for p in r.sends:
            r.sends[p].sort()
            if not fast:
                continue
            # a send is "last" at its level when no write on its buffer follows it at the same level
            if all(not any(dag.op[b] in WRITES and levels[b] == levels[a] and depth[b] > depth[a]
                           for b in chain[c]) for c, a in r.sends[p]):
                r.fast_send.add(p)
        for p in r.recvs:
            r.recvs[p].sort()
            if not fast:
                continue
            cons = [consumer[(p, c)] for c in r.recvs[p]]
            modes = {dag.reduce[a] for a in cons}
            if len(modes) == 1 and all(max((levels[d] for d in dag.deps[a]), default=-1) < d0 + 1 for a in cons):
                r.eager.add(p)
                prog.eager_reduce[(d0 + 1, p)] = modes.pop()
    # recv actions fully served by eager messages are skipped
    eager_pairs = {(p, c) for d0, r in enumerate(rounds) for p in r.eager for c in r.recvs[p]}
    for a in mine:
        op = dag.op[a]
        if op == "recv" and all((p, dag.chunk[a]) in eager_pairs for p in dag.peers[a]):
            prog.skip.add(a)
        elif fast and op == "fetch" and not dag.deps[a]:
            prog.skip.add(a)
        elif op == "send":
            if all(p in rounds[levels[a]].fast_send for p in dag.peers[a]):
                prog.skip.add(a)
    delivers = [a for a in mine if dag.op[a] == "deliver"]
    if fast and all(a not in children for a in delivers):
        prog.deliver_at_end = True
        prog.skip.update(delivers)
    for a in mine:
        if a in prog.skip:
            continue
        (rounds[levels[a]].actions if levels[a] < rounds_n else prog.final).append(a)
    return prog


def _element_bounds(chunks: np.ndarray, size: int, tensor) -> list[slice]:
    item = tensor.element_size()
    if tensor.numel() * item != size:
        raise InputError(f"tensor has {tensor.numel() * item} bytes but the schedule is for {size} bytes")
    if np.any(chunks % item):
        raise InputError(f"schedule chunk boundaries are not multiples of the element size ({item} B)")
    el = chunks // item
    return [slice(int(o), int(o + n)) for o, n in el]


def _split_waves(prog: Program, dag, waves: int) -> list[list[Round]]:
    """The program's rounds restricted to each wave of chunks (chunk ``c`` is in wave ``c * W // C``)."""
    nch = len(dag.chunks)
    wave = [c * waves // nch for c in range(nch)]
    out = []
    for w in range(waves):
        rounds = []
        for r in prog.rounds:
            rr = Round([a for a in r.actions if wave[dag.chunk[a]] == w])
            for p, items in r.sends.items():
                mine = [(c, a) for c, a in items if wave[c] == w]
                if mine:
                    rr.sends[p] = mine
            for p, chunks in r.recvs.items():
                mine = [c for c in chunks if wave[c] == w]
                if mine:
                    rr.recvs[p] = mine
            rr.fast_send = {p for p in r.fast_send if p in rr.sends}
            rr.eager = {p for p in r.eager if p in rr.recvs}
            rounds.append(rr)
        out.append(rounds)
    return out


DEFAULT_WAVES = 4


def all_reduce(tensor, schedule, group=None, stats: dict | None = None, fast: bool = True,
               waves: int = DEFAULT_WAVES):
    """Sum ``tensor`` over all ranks in place by executing ``schedule``; returns ``tensor``.

    ``schedule`` is a :class:`plink.schedule.dag.Schedule` (or a :class:`plink.schedule.dag.Dag`).
    Merge buffers are the rows of a ``(C, E)`` matrix (``E`` = the longest
    chunk in elements, shorter chunks zero-padded), so a message of several
    chunks is one row gather/scatter; the padding of a short last chunk
    travels with it.  The chunks are split into ``waves`` groups that run
    as a software pipeline (wave ``w`` does round ``d`` in step ``w + d``):
    chunks never depend on each other, so the rounds of different waves
    overlap.
    """
    import torch.distributed as dist

    dag = schedule.dag if hasattr(schedule, "dag") and not hasattr(schedule, "node") else schedule
    size = int(np.asarray(dag.chunks)[:, 1].sum())
    world = dist.get_world_size(group)
    rank = dist.get_rank(group)
    if world != dag.n:
        raise InputError(f"the schedule has {dag.n} nodes but the process group has {world} ranks")
    if not tensor.is_contiguous():
        raise PlinkError("all_reduce needs a contiguous tensor")
    if waves < 1:
        raise PlinkError(f"waves must be >= 1, got {waves}")
    bounds = _element_bounds(np.asarray(dag.chunks), size, tensor)
    call = _Call(dag, _program(dag, rank, fast, min(waves, len(bounds))), group, tensor, bounds)
    call.post_receives()
    call.pipeline(timed=stats is not None)
    call.finish()
    if stats is not None:
        names = list(getattr(schedule, "hosts", dag.hosts))
        stats.setdefault("links", []).extend(
            {"src": names[rank], "dst": names[p], "bytes": int(b), "seconds": s}
            for p, (b, s) in sorted(call.links.items())
        )
    return tensor


@dataclass
class _Compiled:
    """A rank's program for one schedule, ready to run: its rounds split into waves, the index
    tensors of its gathered sends and eager receives, and the buffers its calls reuse."""

    dag: object  #: the schedule's DAG (the cache key holds its id; this keeps the id from being reused)
    program: Program
    waves: list[list[Round]]
    idx: dict = field(default_factory=dict)  #: ("s" | "r", wave, round, peer) -> chunk indices
    bufs: dict = field(default_factory=dict)  #: merge and receive buffers, reused by the next call


def _program(dag, rank: int, fast: bool, waves: int) -> _Compiled:
    """The compiled program of ``rank`` split into ``waves``, with its index tensors (cached per schedule)."""
    import torch

    key = (id(dag), rank, fast, waves)
    comp = _CACHE.get(key)
    if comp is None or comp.dag is not dag:
        prog = compile_program(dag, rank, fast=fast)
        comp = _Compiled(dag, prog, _split_waves(prog, dag, waves))
        for w, rounds in enumerate(comp.waves):
            for d, r in enumerate(rounds, start=1):
                for p in r.fast_send:
                    comp.idx[("s", w, d, p)] = torch.tensor([c for c, _ in r.sends[p]], dtype=torch.long)
                for p in r.eager:
                    comp.idx[("r", w, d, p)] = torch.tensor(r.recvs[p], dtype=torch.long)
        if len(_CACHE) >= 16:  # a few schedules at a time; forget the oldest
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = comp
    return comp


class _Call:
    """One rank's part of one :func:`all_reduce` call: its buffers, the messages in flight and link stats."""

    def __init__(self, dag, comp: _Compiled, group, tensor, bounds: list[slice]):
        """Set up the ``(C, E)`` merge buffer (see :func:`all_reduce`), holding the chunks whose fetch comes first."""
        import torch

        prog = comp.program
        self.dag, self.prog, self.group, self.bounds = dag, prog, group, bounds
        self.idx = comp.idx
        self.wave_rounds: list[list[Round]] = comp.waves
        self.nrounds = len(prog.rounds)
        flat = self.flat = tensor.view(-1)
        nch = len(bounds)
        width = self.width = max(b.stop - b.start for b in bounds)
        self.regular = all(b.start == c * width for c, b in enumerate(bounds))
        # merge and receive buffers are kept with the compiled program and reused by the next call
        # (fresh large tensors cost page faults on every call)
        bufs = self.bufs = comp.bufs
        if bufs.get("dtype") != flat.dtype:
            bufs.clear()
            bufs["dtype"] = flat.dtype
        nonroot = [c for c in range(nch) if c not in prog.root_fetch]
        # equal chunks, every fetch first and every deliver a sink: the merge buffers *are* the
        # tensor's rows (no copy in, no copy out)
        self.alias = self.regular and not nonroot and prog.deliver_at_end and nch * width == flat.numel()
        if self.alias:
            buf = flat.view(nch, width)
        else:
            if "buf" not in bufs:
                bufs["buf"] = torch.zeros(nch, width, dtype=flat.dtype)
            buf = bufs["buf"]
            if not self.regular or bounds[-1].stop - bounds[-1].start < width:
                buf.zero_()
            if self.regular:
                buf.view(-1)[: flat.numel()].copy_(flat)
                for c in nonroot:
                    buf[c] = 0
            else:
                for c in prog.root_fetch:
                    buf[c, : bounds[c].stop - bounds[c].start] = flat[bounds[c]]
        self.buf = buf
        self.orig = flat.clone() if nonroot else flat
        self.pending: dict[tuple[int, int], "torch.Tensor"] = {}  #: (peer, chunk) -> received, not yet used
        self.posted: dict[tuple[int, int], list] = {}  #: (wave, round) -> [(peer, chunks, tensor, work)]
        self.send_works: list = []
        self.links: dict[int, list[float]] = {}  #: peer -> [bytes sent, seconds of the rounds that sent]

    def peer_rank(self, p: int) -> int:
        """The global rank of ``p``, a rank of the group."""
        import torch.distributed as dist

        return p if self.group is None else dist.get_global_rank(self.group, p)

    def tag(self, w: int, d: int) -> int:
        """The message tag of wave ``w``, round ``d``."""
        return w * (self.nrounds + 1) + d

    def scratch(self, name, n: int):
        """An ``(n, width)`` buffer kept with the program under ``name``."""
        import torch

        t = self.bufs.get(name)
        if t is None:
            t = self.bufs[name] = torch.empty(n, self.width, dtype=self.flat.dtype)
        return t

    def run(self, actions: list[int]) -> dict[int, torch.Tensor]:
        """Run generic actions in order; returns the snapshots of the send actions among them."""
        dag, buf, bounds, pending = self.dag, self.buf, self.bounds, self.pending
        snaps: dict[int, torch.Tensor] = {}
        for a in actions:
            op, c = dag.op[a], dag.chunk[a]
            if op == "fetch":
                buf[c, : bounds[c].stop - bounds[c].start] += self.orig[bounds[c]]
            elif op == "recv":
                if dag.reduce[a] == "copy":
                    buf[c] = pending.pop((dag.peers[a][0], c))
                else:
                    for p in dag.peers[a]:
                        got = pending.pop((p, c), None)
                        if got is not None:  # None: already added by the eager path
                            buf[c] += got
            elif op == "deliver":
                self.flat[bounds[c]] = buf[c, : bounds[c].stop - bounds[c].start]
            else:  # send: snapshot now; the merge buffer may change later in this level
                snaps[a] = buf[c].clone()
        return snaps

    def post_receives(self) -> None:
        """Post every receive of the call up front (tag = wave and round), so no sender waits for a receiver."""
        import torch.distributed as dist

        for w, rounds in enumerate(self.wave_rounds):
            for d, rnd in enumerate(rounds, start=1):
                self.posted[(w, d)] = [
                    (p, chunks, t, dist.irecv(t, src=self.peer_rank(p), group=self.group, tag=self.tag(w, d)))
                    for p, chunks in rnd.recvs.items()
                    for t in [self.scratch(("recv", w, d, p), len(chunks))]
                ]

    def pipeline(self, timed: bool) -> None:
        """Run the waves' rounds as a software pipeline; ``timed``: add each step's wall time to its links."""
        nrounds, wave_rounds = self.nrounds, self.wave_rounds
        for step in range(1, nrounds + len(wave_rounds)):
            active = [(w, step - w) for w in range(len(wave_rounds)) if 1 <= step - w <= nrounds]
            t0 = time.perf_counter()
            for w, d in active:
                self.start_round(w, d, timed)
            for w, d in active:
                self.end_round(w, d)
            if timed:
                dt = time.perf_counter() - t0
                for p in {p for w, d in active for p in wave_rounds[w][d - 1].sends}:
                    self.links[p][1] += dt

    def start_round(self, w: int, d: int, timed: bool) -> None:
        """Run round ``d`` of wave ``w``'s actions and post its sends (waited for in :meth:`finish`)."""
        import torch
        import torch.distributed as dist

        rnd = self.wave_rounds[w][d - 1]
        buf = self.buf
        snaps = self.run(rnd.actions)
        for p, items in rnd.sends.items():
            if p in rnd.fast_send:
                sel = self.idx[("s", w, d, p)]
                out = self.scratch(("send", w, d, p), len(sel))
                torch.index_select(buf, 0, sel, out=out)
            else:
                out = torch.stack([snaps[a] if a in snaps else buf[c].clone() for c, a in items])
            self.send_works.append(dist.isend(out, dst=self.peer_rank(p), group=self.group, tag=self.tag(w, d)))
            if timed:
                self.links.setdefault(p, [0.0, 0.0])[0] += out.numel() * out.element_size()

    def end_round(self, w: int, d: int) -> None:
        """Wait for round ``d`` of wave ``w``'s receives: apply eager messages, keep the others pending."""
        rnd = self.wave_rounds[w][d - 1]
        for p, chunks, t, work in self.posted[(w, d)]:
            work.wait()
            if p in rnd.eager:
                if self.prog.eager_reduce[(d, p)] == "sum":
                    self.buf.index_add_(0, self.idx[("r", w, d, p)], t)
                else:
                    self.buf.index_copy_(0, self.idx[("r", w, d, p)], t)
                continue
            for i, c in enumerate(chunks):
                self.pending[(p, c)] = t[i]

    def finish(self) -> None:
        """Run the actions after the last round, wait for the sends and copy the merge buffers out."""
        prog, flat, buf = self.prog, self.flat, self.buf
        self.run(prog.final)
        for work in self.send_works:
            work.wait()
        if prog.deliver_at_end and not self.alias:
            if self.regular:
                flat.copy_(buf.view(-1)[: flat.numel()])
            else:
                for c in range(len(self.bounds)):
                    flat[self.bounds[c]] = buf[c, : self.bounds[c].stop - self.bounds[c].start]
        if self.pending:
            raise PlinkError(f"internal error: {len(self.pending)} received chunks were never used")
