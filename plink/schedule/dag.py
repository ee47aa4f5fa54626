"""A 2LHA schedule as an explicit action DAG, and its file format.

AggEngine's schedule (§4.2.2) is a set of chunk-action pairs forming a DAG.
Every action belongs to one node and one chunk and is one of

``fetch``    put this node's own contribution of the chunk into the merge buffer;
``send``     SendTo(peers): send the merge buffer's current content to every peer
             (non-blocking);
``recv``     ReceiveFrom(peers): block until the chunk arrived from every peer;
             ``reduce="sum"`` adds each into the merge buffer, ``reduce="copy"``
             (exactly one peer) replaces the buffer with it;
``deliver``  write the merge buffer back to the framework's buffer.

``deps`` are explicit edges to actions of the **same node and chunk**: a
chunk never waits on another chunk, so there is no false dependency between
the local phase of one chunk and the global phase of another, and the GM's
global ReceiveFrom does not wait for its local one.  Messages are matched by
``(src, dst, chunk)``: version 1 sends a chunk over each directed pair at
most once.  The rules a valid schedule obeys are checked by
:func:`plink.verify.verify`.

The rules that turn a :class:`~plink.schedule.plan.Plan` into actions
(``rules: "2lha-v1"``), for chunk ``c`` with GM ``x`` and, in node ``i``'s
group ``g``, LM ``l = lm[c, g]``::

    member (i != l):    fetch -> send[l] -> recv[l] copy -> deliver
    LM (l == i != x):   fetch -> recv[members] sum -> send[x] -> recv[x] copy -> {send[members], deliver}
    GM (i == x):        fetch -> {recv[members] sum, recv[other LMs] sum} -> {send[other LMs + members], deliver}

(empty peer lists are left out), i.e. the four steps of §4.1.2:
member -> LM, LM -> GM, GM -> LMs (and the GM's own members), LM -> members.

File format (JSON, ``"format": "plink-schedule", "version": 1``)::

    {
     "format": "plink-schedule", "version": 1,
     "form": "dag" | "compact",
     "rules": "2lha-v1",
     "hosts": ["vm000", ...],                 # node i = hosts[i] (= rank i for the executor)
     "groups": [0, 2, 1, ...],                # group label per host
     "size": 26214400,                         # buffer bytes
     "chunk": 65536,                           # nominal chunk bytes
     "chunks": [[0, 65536], [65536, 65536], ...],   # (offset, length) bytes
     "lm": [[5, 17, ...], ...],               # per chunk: LM host index per group
     "gm": [17, ...],                          # per chunk: GM host index
     "capacity": "bandwidth" | "cardinality",
     "action_fields": ["node", "chunk", "op", "peers", "reduce", "deps"],
     "actions": [[0, 0, "fetch", [], null, []], ...],   # form "dag" only; id = position
     "meta": {...}, "autotune": {...}
    }

The compact form stores only the plan (``lm``/``gm``) and is expanded by
the rules on load — ``O(C k)`` numbers instead of ``O(C N)`` actions, for
large N.  A file of form ``dag`` may hold any DAG (not only 2LHA); its
``lm``/``gm`` are then optional and only needed by ``plink retune``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plink.errors import OptionError, PlinkError
from plink.data.fileio import atomic_write_text, check_envelope, read_json
from plink.schedule.plan import Plan, _whole_bytes

FORMAT = "plink-schedule"
VERSION = 1
RULES = "2lha-v1"
OPS = ("fetch", "send", "recv", "deliver")
ACTION_FIELDS = ["node", "chunk", "op", "peers", "reduce", "deps"]


class ScheduleError(PlinkError):
    """A schedule file that cannot be read, or a schedule that is invalid."""


@dataclass
class Dag:
    """Actions in columns; action ``a`` is ``(node[a], chunk[a], op[a], peers[a], reduce[a], deps[a])``."""

    hosts: list[str]
    labels: np.ndarray
    chunks: np.ndarray
    node: list[int] = field(default_factory=list)
    chunk: list[int] = field(default_factory=list)
    op: list[str] = field(default_factory=list)
    peers: list[tuple[int, ...]] = field(default_factory=list)
    reduce: list[str | None] = field(default_factory=list)
    deps: list[tuple[int, ...]] = field(default_factory=list)

    def add(self, node: int, chunk: int, op: str, peers=(), reduce=None, deps=()) -> int:
        self.node.append(int(node))
        self.chunk.append(int(chunk))
        self.op.append(op)
        self.peers.append(tuple(int(p) for p in peers))
        self.reduce.append(reduce)
        self.deps.append(tuple(int(d) for d in deps))
        return len(self.node) - 1

    def __len__(self) -> int:
        return len(self.node)

    @property
    def n(self) -> int:
        return len(self.hosts)

    def copy(self) -> "Dag":
        return Dag(list(self.hosts), self.labels.copy(), self.chunks.copy(), list(self.node), list(self.chunk),
                   list(self.op), list(self.peers), list(self.reduce), list(self.deps))


def expand(plan: Plan) -> Dag:
    """The action DAG of a plan by the ``2lha-v1`` rules (module docstring). ``O(C N)``."""
    dag = Dag(list(plan.hosts), plan.labels.copy(), plan.chunks.copy())
    members = [m.tolist() for m in plan.members()]
    for c in range(plan.n_chunks):
        x = int(plan.gm[c])
        gx = int(plan.labels[x])
        lms = [int(v) for v in plan.lm[c]]
        others = [lms[g] for g in range(plan.k) if g != gx]
        for g, mem in enumerate(members):
            lead = lms[g]
            rest = [m for m in mem if m != lead]
            for i in mem:
                if i != lead:
                    f = dag.add(i, c, "fetch")
                    s = dag.add(i, c, "send", [lead], deps=[f])
                    r = dag.add(i, c, "recv", [lead], "copy", [s])
                    dag.add(i, c, "deliver", deps=[r])
                elif i != x:
                    f = dag.add(i, c, "fetch")
                    last = dag.add(i, c, "recv", rest, "sum", [f]) if rest else f
                    s = dag.add(i, c, "send", [x], deps=[last])
                    r = dag.add(i, c, "recv", [x], "copy", [s])
                    if rest:
                        dag.add(i, c, "send", rest, deps=[r])
                    dag.add(i, c, "deliver", deps=[r])
                else:
                    f = dag.add(i, c, "fetch")
                    sums = []
                    if rest:
                        sums.append(dag.add(i, c, "recv", rest, "sum", [f]))
                    if others:
                        sums.append(dag.add(i, c, "recv", others, "sum", [f]))
                    after = sums or [f]
                    if others or rest:
                        dag.add(i, c, "send", others + rest, deps=after)
                    dag.add(i, c, "deliver", deps=after)
    return dag


# ---------------------------------------------------------------------------
# the schedule file


@dataclass
class Schedule:
    """What a schedule file holds: a plan (may be ``None`` for a hand-made DAG) and/or a DAG."""

    hosts: list[str]
    labels: np.ndarray
    chunks: np.ndarray
    size: int
    chunk_bytes: int
    plan: Plan | None = None
    _dag: Dag | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    autotune: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_plan(cls, plan: Plan, chunk_bytes: int | None = None, meta=None, autotune=None) -> "Schedule":
        cb = int(plan.chunks[0, 1]) if chunk_bytes is None else _whole_bytes("chunk size", chunk_bytes)
        return cls(list(plan.hosts), plan.labels.copy(), plan.chunks.copy(), plan.size, cb, plan, None,
                   dict(meta or plan.meta), dict(autotune or {}))

    @property
    def dag(self) -> Dag:
        if self._dag is None:
            if self.plan is None:
                raise ScheduleError("schedule has neither actions nor a master assignment")
            self._dag = expand(self.plan)
        return self._dag

    def to_dict(self, form: str = "dag") -> dict:
        if form not in ("dag", "compact"):
            raise OptionError(f"form must be 'dag' or 'compact', got {form!r}")
        doc: dict[str, Any] = {"format": FORMAT, "version": VERSION, "form": form}
        if self.plan is not None:
            doc["rules"] = RULES
        doc.update({
            "hosts": list(self.hosts),
            "groups": np.asarray(self.labels).tolist(),
            "size": int(self.size),
            "chunk": int(self.chunk_bytes),
            "chunks": np.asarray(self.chunks).tolist(),
        })
        if self.plan is not None:
            doc["lm"] = self.plan.lm.tolist()
            doc["gm"] = self.plan.gm.tolist()
            doc["capacity"] = self.plan.capacity
        elif form == "compact":
            raise ScheduleError("a schedule without a master assignment has no compact form")
        if form == "dag":
            d = self.dag
            doc["action_fields"] = ACTION_FIELDS
            doc["actions"] = [
                [d.node[a], d.chunk[a], d.op[a], list(d.peers[a]), d.reduce[a], list(d.deps[a])] for a in range(len(d))
            ]
        if self.meta:
            doc["meta"] = self.meta
        if self.autotune:
            doc["autotune"] = self.autotune
        return doc

    def dumps(self, form: str = "dag") -> str:
        doc = self.to_dict(form)
        lines = []
        for key, value in doc.items():
            if key in ("actions", "lm", "chunks") and value:
                inner = ",\n  ".join(json.dumps(v, separators=(",", ":")) for v in value)
                lines.append(f" {json.dumps(key)}: [\n  {inner}\n ]")
            else:
                lines.append(f" {json.dumps(key)}: {json.dumps(value, allow_nan=False)}")
        return "{\n" + ",\n".join(lines) + "\n}\n"

    def save(self, path: str | os.PathLike, form: str = "dag") -> None:
        """Write atomically (temp file + rename)."""
        atomic_write_text(path, self.dumps(form))


def _int_list(doc: dict, key: str, path: str) -> list:
    v = doc.get(key)
    if not isinstance(v, list):
        raise ScheduleError(f"{path}: '{key}' must be a list")
    return v


def from_dict(doc: Any, path: str = "<schedule>") -> Schedule:
    """Validate the envelope of a schedule document and build a :class:`Schedule`."""
    check_envelope(doc, path, FORMAT, VERSION, "schedule", ScheduleError)
    form = doc.get("form")
    if form not in ("dag", "compact"):
        raise ScheduleError(f"{path}: 'form' must be 'dag' or 'compact'")
    hosts = _int_list(doc, "hosts", path)
    if not all(isinstance(h, str) for h in hosts) or len(set(hosts)) != len(hosts) or not hosts:
        raise ScheduleError(f"{path}: 'hosts' must be a non-empty list of distinct names")
    try:
        labels = np.array(_int_list(doc, "groups", path), dtype=np.int64)
        chunks = np.array(_int_list(doc, "chunks", path), dtype=np.int64).reshape(-1, 2)
        size = int(doc["size"])
        chunk_bytes = int(doc.get("chunk", chunks[0, 1] if len(chunks) else 0))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ScheduleError(f"{path}: invalid groups/chunks/size: {str(exc)[:100]}") from None
    if labels.shape != (len(hosts),):
        raise ScheduleError(f"{path}: {len(labels)} group labels for {len(hosts)} hosts")
    plan = None
    if "lm" in doc or "gm" in doc or form == "compact":
        if doc.get("rules", RULES) != RULES:
            raise ScheduleError(f"{path}: unknown rules {doc.get('rules')!r} (this plink knows {RULES})")
        try:
            plan = Plan(hosts, labels, chunks, doc["lm"], doc["gm"], size,  # (Plan makes them int64 arrays)
                        doc.get("capacity", "cardinality"))
        except KeyError as exc:
            raise ScheduleError(f"{path}: missing {exc.args[0]!r}") from None
        except PlinkError as exc:
            raise ScheduleError(f"{path}: {exc}") from None
        except (TypeError, ValueError, OverflowError) as exc:
            raise ScheduleError(f"{path}: invalid master tables: {str(exc)[:100]}") from None
    dag = None
    if form == "dag":
        dag = Dag(list(hosts), labels, chunks)
        acts = _int_list(doc, "actions", path)
        for a, row in enumerate(acts):
            try:
                node, chunk, op, peers, red, deps = row
                if op not in OPS or red not in (None, "sum", "copy"):
                    raise ValueError(f"op {op!r} / reduce {red!r}")
                dag.add(int(node), int(chunk), op, [int(p) for p in peers], red, [int(d) for d in deps])
            except (TypeError, ValueError, OverflowError) as exc:
                raise ScheduleError(f"{path}: action {a} is malformed ({str(exc)[:100]})") from None
    for key in ("meta", "autotune"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise ScheduleError(f"{path}: '{key}' must be an object")
    sched = Schedule(list(hosts), labels, chunks, size, chunk_bytes, plan, dag,
                     doc.get("meta") or {}, doc.get("autotune") or {})
    return sched


def load_schedule(path: str | os.PathLike) -> Schedule:
    """Read a schedule file (either form)."""
    return from_dict(read_json(path, ScheduleError), str(path))


__all__ = ["Dag", "Schedule", "ScheduleError", "expand", "from_dict", "load_schedule"]
