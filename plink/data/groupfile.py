"""The groups file: a partition of the hosts into locality groups.

Versioned JSON written by ``plink group`` and read by ``plink schedule``,
``plink order`` warm starts and the Slurm topology emitter::

    {
      "format": "plink-groups", "version": 1,
      "hosts": ["vm000", "vm001", ...],           # every host exactly once
      "labels": [2, 0, ...],                      # group index per host, 0..k-1
      "groups": [["vm001", ...], ...],            # the same as members (checked); a file written by hand
                                                  #   may give "groups" alone ("hosts" then optional)
      "coordinates": [[x, y], ...],               # optional: ProbeEmbed coordinates
      "heights": [h, ...],                        # optional: ProbeEmbed heights (us)
      "levels": [[...], [...]],                   # optional: label lists fine to coarse (levels[0] = labels)
      "confidence": [c, ...],                     # optional: per host in [0, 1] (silhouette-based)
      "metrics": {...},                           # optional: PAIA, AMI, ...
      "params": {...}                             # optional: how the groups were made
    }
"""

from __future__ import annotations

import json
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from plink.errors import InputError, ProbeFileError
from plink.data.fileio import atomic_write_text, check_envelope, read_json
from plink.data.inputs import host_key, host_positions, hosts_not_in

FORMAT = "plink-groups"
VERSION = 1


#: the ``metrics`` that :meth:`Groups.restricted_to` keeps for part of the hosts (host lists: filtered)
_PER_HOST_METRICS = ("low_confidence_hosts", "alone_hosts", "split_by_bandwidth", "bandwidth_used")


def group_codes(labels, names: Sequence[str], *, first_seen: bool = False) -> np.ndarray:
    """Each host's group as ``0 .. k-1``, from ``labels``: one label per host of ``names`` of any
    hashable values (group numbers, rack names, floats), taken as categories, as
    :func:`plink.order_hosts` takes them.

    Groups are numbered in sorted order of their labels, as ``np.unique`` numbers them (labels
    ``0 .. k-1`` keep their numbers; ``[-1, 0]`` become ``[0, 1]``, ``[0, 2]`` become ``[0, 1]``); labels
    that do not compare with each other (a number and a tuple), and every label with ``first_seen`` (a
    launcher file's switches in rank order), in order of first appearance.  :class:`InputError` for
    labels that are not one per host (a wrong length, a 2-D array, a string), a None or NaN label (a
    host without a group), an unhashable one, or numbers beside strings (``[1, "1", 2]``: two groups
    by value, almost surely one group meant).  ``O(N log N)``.
    """
    n = len(names)
    if getattr(labels, "ndim", 1) != 1:
        raise InputError(f"group labels must be one label per host (1-D), got an array of shape "
                         f"{np.shape(labels)}")
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
        raise InputError(f"group labels must be a sequence of one label per host, got {type(labels).__name__}")
    if len(labels) != n:
        raise InputError(f"{len(labels)} group labels for {n} hosts")
    if not first_seen and isinstance(labels, np.ndarray) and labels.dtype.kind in "iuf":  # (numpy's own unique)
        bad = np.flatnonzero(~np.isfinite(labels)) if labels.dtype.kind == "f" else []
        if len(bad):
            i = int(bad[0])
            raise InputError(f"host {names[i]!r} has no group (label {labels[i].item()!r}): give every host a "
                             "group label")
        return np.unique(labels, return_inverse=True)[1].reshape(n).astype(np.int64)
    values = list(labels)
    seen: dict = {}
    kinds: dict = {}  # the first number and the first string: one of each is a mistake ([1, "1"] are two groups)
    for name, g in zip(names, values):
        if g is None or (isinstance(g, numbers.Real) and not math.isfinite(g)):
            raise InputError(f"host {name!r} has no group (label {g!r}): give every host a group label")
        kind = ("number" if isinstance(g, numbers.Number) else "string" if isinstance(g, str)
                else "bytes" if isinstance(g, bytes) else None)  # (b"a" and "a" are two groups too)
        if kind is not None:
            kinds.setdefault(kind, g.item() if isinstance(g, np.generic) else g)
            if len(kinds) == 2:
                plural = {"number": "numbers", "string": "strings", "bytes": "bytes"}
                (k1, v1), (k2, v2) = sorted(kinds.items(), key=lambda kv: list(plural).index(kv[0]))
                raise InputError(f"labels mix {plural[k1]} and {plural[k2]} ({v1!r} and {v2!r}): give one kind, "
                                 "group numbers or names")
        try:
            seen.setdefault(g, len(seen))
        except TypeError:  # (unhashable: a list, an array)
            raise InputError(f"host {name!r} has group label {g!r}, which is not a label (a number or a "
                             "name)") from None
    order = list(seen)
    if not first_seen:
        try:
            order = sorted(seen)
        except TypeError:  # (labels that do not compare: in order of first appearance)
            pass
    code = {g: c for c, g in enumerate(order)}
    return np.array([code[g] for g in values], dtype=np.int64)


@dataclass
class Groups:
    """Hosts and their group labels (``labels[i]`` is host ``i``'s group)."""

    hosts: list[str]
    labels: np.ndarray
    coordinates: np.ndarray | None = None
    heights: np.ndarray | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    levels: list[np.ndarray] | None = None
    confidence: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.labels = np.asarray(self.labels, dtype=int)
        if self.levels is not None:
            self.levels = [np.asarray(lv, dtype=int) for lv in self.levels]
            if not self.levels or any(lv.shape != self.labels.shape or lv.min() < 0 for lv in self.levels):
                raise ProbeFileError("groups: every level must have one label >= 0 per host")
            if not np.array_equal(self.levels[0], self.labels):
                raise ProbeFileError("groups: levels[0] must equal labels")
        if self.confidence is not None:
            self.confidence = np.asarray(self.confidence, dtype=float)
            if self.confidence.shape != self.labels.shape or not np.all((self.confidence >= 0)
                                                                       & (self.confidence <= 1)):
                raise ProbeFileError("groups: confidence must be one number in [0, 1] per host")
        from plink.data.inputs import case_note, first_duplicate

        twice = first_duplicate(self.hosts)  # (case ignored: one host to a resolver and to aligned_to)
        if twice is not None:
            i, j = twice
            note = case_note(self.hosts, i, j)
            raise ProbeFileError(f"groups: host {self.hosts[j]!r} appears twice" + (f" ({note})" if note else ""))
        if self.labels.shape != (len(self.hosts),):
            raise ProbeFileError(f"groups: {len(self.labels)} labels for {len(self.hosts)} hosts")
        if len(self.hosts) == 0:
            raise ProbeFileError("groups: no hosts")
        if self.labels.min() < 0:
            raise ProbeFileError("groups: labels must be >= 0")
        used = np.unique(self.labels)
        if not np.array_equal(used, np.arange(len(used))):
            raise ProbeFileError("groups: labels must be 0..k-1 with every group non-empty")

    @property
    def k(self) -> int:
        return int(self.labels.max()) + 1

    def members(self) -> list[list[int]]:
        """Host indices of each group."""
        return [np.flatnonzero(self.labels == g).tolist() for g in range(self.k)]

    def sizes(self) -> list[int]:
        return np.bincount(self.labels, minlength=self.k).tolist()

    def aligned_to(self, names: Sequence[str], extra_ok: bool = False, where: str = "the probe file") -> np.ndarray:
        """Labels in the order of ``names`` (must be the same set of hosts; case ignored where a name
        differs only in case, as one host to a resolver and to every reader of plink's).

        With ``extra_ok`` the groups may name more hosts (a rack map of the whole site for a
        probe of some of it): those are dropped and the labels renumbered ``0..k-1`` in their
        order, so a group with no host in ``names`` leaves no gap. ``where``: what ``names`` come
        from, for the error."""
        from plink.data.probefile import default_host_names

        names = list(names)
        if extra_ok and len(self.hosts) != len(names) and list(self.hosts) == default_host_names(len(self.hosts)) \
                and names == default_host_names(len(names)):
            raise ProbeFileError(f"the groups and the hosts are both named by row number ({self.hosts[0]}.. and "
                                 f"{names[0]}..) but are {len(self.hosts)} and {len(names)} hosts: they are not "
                                 "the same hosts; name the matrices' hosts with --hosts FILE")
        pos = {h: i for i, h in enumerate(self.hosts)}
        # names differing only in case are one host (the readers refuse two such names in one list)
        folded = host_positions(self.hosts)
        for n in names:
            if n not in pos and host_key(n) in folded:
                pos[n] = folded[host_key(n)]
        missing = [n for n in names if n not in pos]
        extra = set() if extra_ok else set(hosts_not_in(self.hosts, names))
        if missing or extra:
            what = f"missing {missing[:3]}" if missing else f"unknown {sorted(extra)[:3]}"
            raise ProbeFileError(f"groups do not cover the same hosts as {where} ({what})")
        labels = np.array([self.labels[pos[n]] for n in names], dtype=int)
        return np.unique(labels, return_inverse=True)[1].reshape(-1).astype(int) if extra_ok else labels

    def restricted_to(self, names: Sequence[str], where: str = "the probe file") -> "Groups":
        """These groups over the hosts ``names`` only (named as there, in that order; case ignored as in
        :meth:`aligned_to` with ``extra_ok``): a rack map of the whole site for a probe of part of it.
        Labels and levels are renumbered ``0..k-1``; per-host data and host lists in ``metrics`` keep
        the hosts in ``names``; of ``metrics``, where hosts are left out, only what holds per host
        (the whole site's AMI or silhouette is no figure of part of it).  O(N)."""
        names = list(names)
        labels = self.aligned_to(names, extra_ok=True, where=where)
        pos = host_positions(self.hosts)
        idx = np.array([pos[host_key(n)] for n in names], dtype=int)

        def per_host(a):
            return None if a is None or len(a) != len(self.hosts) else np.asarray(a)[idx]

        def renumber(lv):
            return np.unique(np.asarray(lv)[idx], return_inverse=True)[1].reshape(-1).astype(int)

        kept = host_positions(names)
        metrics = dict(self.metrics)
        if len(names) < len(self.hosts):  # figures of the whole site (AMI, silhouettes) are not these hosts'
            metrics = {k: ([h for h in v if isinstance(h, str) and host_key(h) in kept] if isinstance(v, list) else v)
                       for k, v in self.metrics.items() if k in _PER_HOST_METRICS}
        return Groups(hosts=names, labels=labels, coordinates=per_host(self.coordinates),
                      heights=per_host(self.heights), metrics=metrics, params=dict(self.params),
                      levels=None if self.levels is None else [renumber(lv) for lv in self.levels],
                      confidence=per_host(self.confidence))

    def to_dict(self) -> dict:
        doc: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "hosts": list(self.hosts),
            "labels": self.labels.tolist(),
            "groups": [[self.hosts[i] for i in m] for m in self.members()],
        }
        if self.coordinates is not None:
            doc["coordinates"] = np.round(np.asarray(self.coordinates, dtype=float), 6).tolist()
        if self.heights is not None:
            doc["heights"] = np.round(np.asarray(self.heights, dtype=float), 6).tolist()
        if self.levels is not None:
            doc["levels"] = [np.asarray(lv).tolist() for lv in self.levels]
        if self.confidence is not None:
            doc["confidence"] = np.round(np.asarray(self.confidence, dtype=float), 4).tolist()
        if self.metrics:
            doc["metrics"] = self.metrics
        if self.params:
            doc["params"] = self.params
        return doc

    def save(self, path: str | os.PathLike) -> None:
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")


def load_groups(path: str | os.PathLike) -> Groups:
    """Read and validate a groups file."""
    doc = read_json(path, ProbeFileError)
    check_envelope(doc, path, FORMAT, VERSION, "groups", ProbeFileError, version_name="groups file")
    hosts, labels, members = doc.get("hosts"), doc.get("labels"), doc.get("groups")
    if members is not None and not (isinstance(members, list) and all(
            isinstance(m, list) and m and all(isinstance(h, str) for h in m) for m in members)):
        raise ProbeFileError(f"{path}: 'groups' must be a list of non-empty lists of host names")
    if members is not None and labels is None:  # written by hand: the groups' members are the labels
        if hosts is None:
            hosts = [h for m in members for h in m]
        where = {h: g for g, m in enumerate(members) for h in m}
        missing = [h for h in hosts if h not in where] if isinstance(hosts, list) else []
        if missing:
            raise ProbeFileError(f"{path}: host {missing[0]!r} is in no group of 'groups'")
        labels = [where.get(h, -1) for h in hosts] if isinstance(hosts, list) else None
    if hosts is None:
        raise ProbeFileError(f"{path}: 'labels' needs 'hosts', the host names in the same order (or give "
                             "'groups', a list of each group's names)")
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise ProbeFileError(f"{path}: 'hosts' must be a list of names")
    if not isinstance(labels, list) or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < len(hosts) + 1
                                               for x in labels):
        raise ProbeFileError(f"{path}: 'labels' must be a list of group numbers 0..k-1")
    if members is not None and "labels" in doc:  # both given (plink group writes both): they must agree
        from collections import Counter

        listed = Counter(h for m in members for h in m)
        twice = [h for h, c in listed.items() if c > 1]
        if twice:
            raise ProbeFileError(f"{path}: host {twice[0]!r} is in two groups of 'groups'")
        if set(listed) != set(hosts):
            odd = sorted(set(listed) ^ set(hosts))[0]
            raise ProbeFileError(f"{path}: 'groups' and 'hosts' name different hosts ({odd!r} is in one only)")
        by_labels = sorted(sorted(h for h, x in zip(hosts, labels) if x == g) for g in set(labels))
        if by_labels != sorted(sorted(m) for m in members):
            raise ProbeFileError(f"{path}: 'groups' and 'labels' disagree on who is with whom (an edit of one of "
                                 "them? keep the one you meant and delete the other)")
    levels = doc.get("levels")
    if levels is not None and not (isinstance(levels, list) and levels and all(
            isinstance(lv, list) and len(lv) == len(hosts)
            and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= len(hosts) for x in lv) for lv in levels)):
        raise ProbeFileError(f"{path}: 'levels' must be lists of group numbers, one per host (the first equal to 'labels')")
    for key in ("confidence", "heights"):
        v = doc.get(key)
        if v is not None and not (isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                               for x in v)):
            raise ProbeFileError(f"{path}: '{key}' must be a list of numbers, one per host")
    for key in ("metrics", "params"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise ProbeFileError(f"{path}: '{key}' must be an object")
    try:
        return Groups(
            hosts=hosts,
            labels=np.array(labels, dtype=int),
            coordinates=None if doc.get("coordinates") is None else np.array(doc["coordinates"], dtype=float),
            heights=None if doc.get("heights") is None else np.array(doc["heights"], dtype=float),
            metrics=doc.get("metrics") or {},
            params=doc.get("params") or {},
            levels=None if doc.get("levels") is None else [np.array(lv, dtype=int) for lv in doc["levels"]],
            confidence=None if doc.get("confidence") is None else np.array(doc["confidence"], dtype=float),
        )
    except ProbeFileError as exc:
        raise ProbeFileError(f"{path}: {exc}") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProbeFileError(f"{path}: {str(exc)[:120]}") from None
