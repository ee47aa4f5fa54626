"""The probe file: the one data model every plink stage reads and writes.

A probe file is versioned JSON::

    {
      "format": "plink-probe",
      "version": 1,
      "hosts": [{"name": "h00", "address": "10.0.0.1", "ssh": "root@h00"}, ...],
      "latency_us": [[0, 12.5, null, ...], ...],        # p10 RTT, the value used
      "latency_median_us": [[...]],                    # optional
      "latency_p90_us": [[...]],                       # optional
      "bandwidth_gbps": [[...]],                       # optional
      "latency_best_us": [[...]],                      # optional: see below
      "uplinks": [{"hosts": [0, 5, 9], "up_bps": 4.4e7, "down_bps": 4.3e7}, ...],  # optional
      "meta": {"method": "udp", "samples": 200, "created": "...", "tool_version": "..."},
      "truth": {"levels": ["dc", "rack"], "labels": [["dc0", "r3"], ...]}   # optional
    }

Row ``i``, column ``j`` is the measurement from host ``i`` to host ``j``;
``null`` marks a pair that was not measured.  Missing pairs stay missing:
no stage invents a value for them.

``uplinks`` (optional, ``plink probe --uplinks``) is what a group of hosts gets
when all of them send across the group's boundary at the same time: the
shared uplink capacity out of (``up_bps``) and into (``down_bps``) the group,
in **bytes per second**, measured with both directions loaded at once;
``hosts`` are indices into ``hosts``.  Extra keys of an uplink (``flows``,
``seconds``, per-flow rates) are kept as they are.

On load, asymmetric pairs are symmetrised as in the dissertation (§5.2.2):
``lat[i, j] = lat[j, i] = max(lat[i, j], lat[j, i])`` (the slower direction
bounds a collective), and bandwidth with ``min`` for the same reason.  When
only one direction was measured, that one is used.  The *better* direction of
each pair of an asymmetric matrix is kept too, as ``latency_best_us``
(``ProbeData.latency_best``: ``min`` of the two latencies, or the inverse of
the larger bandwidth), because structure inference reads it: load and
congestion only ever add delay, so the better direction shows the topology
(on ARCHER's MPI bandwidth the worse one hides the sockets of every node).
Costs keep using ``latency_us``.

Plain matrices are read too: CSV/TSV (an optional header row of host names,
an optional first column of names; empty, ``nan``, ``NA`` or ``null`` cells
are missing) and ``.npy`` files, with host names from a host list or
generated as ``h0 .. h{N-1}``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from plink import __version__
from plink.errors import InputError, PlinkError, ProbeFileError, UnmeasuredHostError
from plink.data.fileio import atomic_write_text, read_json, read_text, text_lines

FORMAT = "plink-probe"
VERSION = 1

#: Units accepted for plain matrices, as a factor to microseconds.
LATENCY_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6, "ns": 1e-3}

_MATRIX_KEYS = ("latency_us", "latency_median_us", "latency_p90_us", "bandwidth_gbps", "latency_best_us")


@dataclass(frozen=True)
class Host:
    """One host: a unique ``name``, and how to reach it."""

    name: str
    address: str | None = None
    ssh: str | None = None

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name}
        if self.address is not None:
            d["address"] = self.address
        if self.ssh is not None:
            d["ssh"] = self.ssh
        return d


@dataclass(frozen=True)
class Truth:
    """Ground-truth location of each host, outermost level first.

    ``labels[i]`` is host ``i``'s location tuple, e.g. ``("dc0", "row2",
    "rack5")``; two hosts are closer the longer the common prefix of their
    tuples.  Only simulated or hand-labelled data has it.
    """

    levels: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]

    def to_dict(self) -> dict:
        return {"levels": list(self.levels), "labels": [list(t) for t in self.labels]}

    def level_labels(self, depth: int | None = None) -> list[tuple[str, ...]]:
        """Prefixes of every host's tuple of length ``depth`` (default: all)."""
        depth = len(self.levels) if depth is None else depth
        return [t[:depth] for t in self.labels]


@dataclass(frozen=True)
class Uplink:
    """A group's shared uplink: ``up_bps`` / ``down_bps`` bytes/s out of / into the group
    when all its hosts send across the boundary at once.  ``hosts`` are host indices."""

    hosts: tuple[int, ...]
    up_bps: float
    down_bps: float
    extra: dict = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        return {"hosts": list(self.hosts), "up_bps": round(float(self.up_bps), 1),
                "down_bps": round(float(self.down_bps), 1), **self.extra}


def _parse_uplinks(raw: Any, path: str) -> list[Uplink] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ProbeFileError(f"{path}: 'uplinks' must be a list of objects")
    out = []
    for k, u in enumerate(raw):
        if not isinstance(u, dict) or not isinstance(u.get("hosts"), list):
            raise ProbeFileError(f"{path}: uplinks[{k}] must be an object with a 'hosts' list")
        for key in ("up_bps", "down_bps"):
            v = u.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ProbeFileError(f"{path}: uplinks[{k}].{key} is {v!r}, not a number")
        if not all(isinstance(h, int) and not isinstance(h, bool) for h in u["hosts"]):
            raise ProbeFileError(f"{path}: uplinks[{k}].hosts must be host indices (integers)")
        for key in ("passes_up_bps", "passes_down_bps"):  # the uplink test's passes (plink probe keeps them)
            v = u.get(key)
            if v is not None and not (isinstance(v, list) and v and all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
                    for x in v)):
                raise ProbeFileError(f"{path}: uplinks[{k}].{key} must be a list of positive numbers (bytes/s)")
        extra = {key: v for key, v in u.items() if key not in ("hosts", "up_bps", "down_bps")}
        out.append(Uplink(tuple(u["hosts"]), float(u["up_bps"]), float(u["down_bps"]), extra))
    return out


@dataclass
class ProbeData:
    """Hosts plus their pairwise measurements (see the module docstring).

    Matrices are ``(N, N)`` float arrays with ``NaN`` for missing pairs,
    already symmetrised.  ``latency`` is in microseconds, ``bandwidth`` in
    Gbit/s.  ``latency_best``: given, or taken from ``latency`` when that is
    asymmetric, then symmetrised with ``min`` (None for symmetric input).
    """

    hosts: list[Host]
    latency: np.ndarray
    latency_median: np.ndarray | None = None
    latency_p90: np.ndarray | None = None
    bandwidth: np.ndarray | None = None
    meta: dict = field(default_factory=dict)
    truth: Truth | None = None
    #: shared uplink capacity per group of hosts (bytes/s), see the module docstring
    uplinks: list[Uplink] | None = None
    #: per pair the *better* direction of an asymmetric input matrix (min latency), see the module docstring
    latency_best: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.latency = np.asarray(self.latency, dtype=float)
        for name in ("latency_median", "latency_p90", "bandwidth", "latency_best"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, np.asarray(value, dtype=float))
        validate(self)
        if self.latency_best is None and count_asymmetric(self.latency):
            self.latency_best = self.latency.copy()
        self.latency = symmetrise(self.latency, np.fmax)
        if self.latency_median is not None:
            self.latency_median = symmetrise(self.latency_median, np.fmax)
        if self.latency_p90 is not None:
            self.latency_p90 = symmetrise(self.latency_p90, np.fmax)
        if self.bandwidth is not None:
            self.bandwidth = symmetrise(self.bandwidth, np.fmin)
            np.fill_diagonal(self.bandwidth, np.nan)
        np.fill_diagonal(self.latency, 0.0)
        if self.latency_best is not None:
            self.latency_best = symmetrise(self.latency_best, np.fmin)
            np.fill_diagonal(self.latency_best, 0.0)

    # -- views -----------------------------------------------------------
    @property
    def inverse_bandwidth(self) -> bool:
        """Whether ``latency`` is the inverse of a bandwidth matrix read alone (``--kind bandwidth``:
        microseconds per byte, a distance, not a time)."""
        return self.meta.get("kind") == "bandwidth"

    @property
    def structure_latency(self) -> np.ndarray:
        """The matrix structure inference reads: ``latency_best`` where the input was asymmetric
        (load only adds delay), else ``latency``."""
        return self.latency if self.latency_best is None else self.latency_best

    @property
    def n(self) -> int:
        return len(self.hosts)

    @property
    def names(self) -> list[str]:
        return [h.name for h in self.hosts]

    def missing_mask(self) -> np.ndarray:
        """Boolean ``(N, N)`` mask of unmeasured off-diagonal latency pairs."""
        mask = np.isnan(self.latency)
        np.fill_diagonal(mask, False)
        return mask

    def n_missing_pairs(self) -> int:
        """Number of unordered host pairs without a latency value."""
        return int(np.triu(self.missing_mask(), 1).sum())

    def coverage(self) -> float:
        """Fraction of unordered pairs measured (1.0 for N < 2)."""
        pairs = self.n * (self.n - 1) // 2
        return 1.0 if pairs == 0 else 1.0 - self.n_missing_pairs() / pairs

    def index(self, name: str) -> int:
        """Position of the host called ``name``."""
        for i, h in enumerate(self.hosts):
            if h.name == name:
                return i
        raise ProbeFileError(f"host {name!r} is not in the probe file")

    def subset(self, indices: Sequence[int]) -> "ProbeData":
        """A new ProbeData with hosts ``indices`` (in that order)."""
        idx = np.asarray(indices, dtype=int)
        ix = np.ix_(idx, idx)

        def pick(m: np.ndarray | None) -> np.ndarray | None:
            return None if m is None else m[ix]

        truth = None
        if self.truth is not None:
            truth = Truth(self.truth.levels, tuple(self.truth.labels[i] for i in idx))
        uplinks = None
        if self.uplinks is not None:
            # a group's uplink is still shared by the group's hosts that are kept
            where = {int(old): new for new, old in enumerate(idx)}
            uplinks = [Uplink(tuple(where[h] for h in u.hosts if h in where), u.up_bps, u.down_bps, dict(u.extra))
                       for u in self.uplinks]
            uplinks = [u for u in uplinks if u.hosts]
        return ProbeData(
            hosts=[self.hosts[i] for i in idx],
            latency=self.latency[ix],
            latency_median=pick(self.latency_median),
            latency_p90=pick(self.latency_p90),
            bandwidth=pick(self.bandwidth),
            meta=dict(self.meta),
            truth=truth,
            uplinks=uplinks,
            latency_best=pick(self.latency_best),
        )

    # -- serialisation ---------------------------------------------------
    def to_dict(self) -> dict:
        doc: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "hosts": [h.to_dict() for h in self.hosts],
            "latency_us": _matrix_to_list(self.latency, 3),
        }
        if self.latency_median is not None:
            doc["latency_median_us"] = _matrix_to_list(self.latency_median, 3)
        if self.latency_p90 is not None:
            doc["latency_p90_us"] = _matrix_to_list(self.latency_p90, 3)
        if self.bandwidth is not None:
            doc["bandwidth_gbps"] = _matrix_to_list(self.bandwidth, 4)
        if self.latency_best is not None:
            doc["latency_best_us"] = _matrix_to_list(self.latency_best, 3)
        if self.uplinks is not None:
            doc["uplinks"] = [u.to_dict() for u in self.uplinks]
        doc["meta"] = self.meta
        if self.truth is not None:
            doc["truth"] = self.truth.to_dict()
        return doc

    def dumps(self) -> str:
        return dumps(self.to_dict())

    def save(self, path: str | os.PathLike) -> None:
        """Write the probe file atomically."""
        atomic_write_text(path, self.dumps())


# ---------------------------------------------------------------------------
# validation and symmetrisation


def symmetrise(m: np.ndarray, combine=np.fmax) -> np.ndarray:
    """Combine ``m[i, j]`` and ``m[j, i]`` with ``combine`` (NaN-aware).

    ``np.fmax`` / ``np.fmin`` ignore a NaN side, so a pair measured in one
    direction only keeps that measurement; a pair missing both ways stays NaN.
    """
    return combine(m, m.T)


def _where(data: ProbeData, i: int, j: int) -> str:
    return f"({data.hosts[i].name} -> {data.hosts[j].name})"


def validate(data: ProbeData) -> None:
    """Raise :class:`ProbeFileError` naming the first problem found."""
    n = len(data.hosts)
    if n == 0:
        raise ProbeFileError("probe data has no hosts")
    from plink.data.inputs import bandwidth_out_of_range, case_note, check_host_name, first_duplicate

    for h in data.hosts:
        check_host_name(h.name)
        for what in ("address", "ssh"):
            value = getattr(h, what)
            if value is not None:
                check_host_name(value, f"host {h.name!r}: {what}")
    names = [h.name for h in data.hosts]
    dup = first_duplicate(names)
    if dup is not None:
        note = case_note(names, *dup)
        raise ProbeFileError(f"duplicate host {names[dup[1]]!r}" + (f" ({note})" if note else ""))
    for label, m in (
        ("latency", data.latency),
        ("latency_median", data.latency_median),
        ("latency_p90", data.latency_p90),
        ("bandwidth", data.bandwidth),
        ("latency_best", data.latency_best),
    ):
        if m is None:
            continue
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ProbeFileError(f"{label} matrix is not square (shape {'x'.join(map(str, m.shape))})")
        if m.shape[0] != n:
            raise ProbeFileError(f"{label} matrix is {m.shape[0]}x{m.shape[1]} but there are {n} hosts")
        bad = np.isinf(m)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ProbeFileError(f"{label} value at row {i}, column {j} {_where(data, i, j)} is infinite")
        off = ~np.eye(n, dtype=bool)
        if label == "bandwidth":
            bad = off & (m <= 0)
            if bad.any():
                i, j = np.argwhere(bad)[0]
                raise ProbeFileError(
                    f"bandwidth at row {i}, column {j} {_where(data, i, j)} is {m[i, j]:g}: must be > 0 (use null for missing)"
                )
            out_of_range = bandwidth_out_of_range(m, where=off)
            if out_of_range:
                (i, j), words = out_of_range
                raise ProbeFileError(f"bandwidth at row {i}, column {j} {_where(data, i, j)} is {m[i, j]:.6g} Gbit/s, "
                                     f"{words}: not a network's (use null for missing)")
            continue
        bad = m < 0
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ProbeFileError(f"{label} value at row {i}, column {j} {_where(data, i, j)} is negative "
                                 f"({m[i, j]:g} us)")
        diag = np.diagonal(m)
        bad_diag = ~np.isnan(diag) & (diag != 0)
        if bad_diag.any():
            i = int(np.argmax(bad_diag))
            raise ProbeFileError(
                f"{label} diagonal at host {i} ({data.hosts[i].name}) is {diag[i]:g}: a host's distance to itself must be 0 or null"
            )
    if data.latency_best is not None:  # (its shape was checked above)
        lat = data.latency
        worse = np.fmax(lat, lat.T)  # what the pair's latency becomes
        bad = data.latency_best > worse + 1e-3  # files keep 3 decimals: each value within 0.0005
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ProbeFileError(f"latency_best at row {i}, column {j} {_where(data, i, j)} is {data.latency_best[i, j]:g}: "
                                 f"more than that pair's latency ({worse[i, j]:g}); it must be the faster direction")
    seen_groups: set[tuple[int, ...]] = set()
    for k, u in enumerate(data.uplinks or ()):
        if not u.hosts:
            raise ProbeFileError(f"uplinks[{k}] has no hosts")
        bad = [h for h in u.hosts if not 0 <= h < n]
        if bad:
            raise ProbeFileError(f"uplinks[{k}] names host {bad[0]}, but there are {n} hosts (indices 0..{n - 1})")
        if len(set(u.hosts)) != len(u.hosts):
            raise ProbeFileError(f"uplinks[{k}] lists a host twice")
        key = tuple(sorted(u.hosts))
        if key in seen_groups:
            raise ProbeFileError(f"uplinks[{k}] repeats the group of an earlier uplink")
        seen_groups.add(key)
        for name in ("up_bps", "down_bps"):
            v = getattr(u, name)
            if not math.isfinite(v) or v <= 0:
                raise ProbeFileError(f"uplinks[{k}].{name} is {v:g}: must be a positive number of bytes/s")
            out_of_range = bandwidth_out_of_range(v * 8e-9)  # (as pair bandwidths: 5e-320 crashed)
            if out_of_range:
                raise ProbeFileError(f"uplinks[{k}].{name} is {v:g} bytes/s: {out_of_range[1]}, not a network's")
    if data.truth is not None and len(data.truth.labels) != n:
        raise ProbeFileError(f"truth has {len(data.truth.labels)} labels but there are {n} hosts")


# ---------------------------------------------------------------------------
# JSON encoding (one matrix row per line: readable and diff-able)


def _matrix_to_list(m: np.ndarray, digits: int) -> list[list[float | None]]:
    """Rows of ``m`` with ``digits`` decimals, or more where a value needs them for 4 significant digits
    (10 kbit/s is 1e-5 Gbit/s, and 10 Gbit/s as an inverse bandwidth 8e-4 us per byte: both were
    written as 0, which plink watch's history then refused or read as a change)."""
    out = []
    for row in m:
        out.append([None if math.isnan(v) else round(float(v), digits if v == 0 or abs(v) >= 1
                                                     else max(digits, 3 - math.floor(math.log10(abs(v)))))
                    for v in row])
    return out


def dumps(doc: dict) -> str:
    """Serialise a probe document: scalars indented, one matrix row per line."""
    parts = []
    for key, value in doc.items():
        if key in _MATRIX_KEYS and value is not None:
            rows = ",\n  ".join(json.dumps(r, allow_nan=False) for r in value)
            parts.append(f' {json.dumps(key)}: [\n  {rows}\n ]')
        else:
            body = json.dumps(value, indent=1, allow_nan=False).replace("\n", "\n ")
            parts.append(f" {json.dumps(key)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def count_asymmetric(m: np.ndarray, rtol: float = 1e-9) -> int:
    """Unordered pairs measured both ways whose two directions differ (relative ``rtol``)."""
    both = ~np.isnan(m) & ~np.isnan(m.T)
    with np.errstate(invalid="ignore"):
        differ = np.abs(m - m.T) > rtol * np.fmax(np.abs(m), np.abs(m.T))
    return int(np.triu(both & differ, 1).sum())


_MAX_VALUE = {"latency_us": 86400e6, "latency_median_us": 86400e6, "latency_p90_us": 86400e6,
              "bandwidth_gbps": 1e6, "latency_best_us": 86400e6}


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:20] + "..." + f" ({len(text)} characters)"


def _parse_matrix(doc: dict, key: str, n: int, path: str) -> np.ndarray | None:
    raw = doc.get(key)
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(r, list) for r in raw):
        raise ProbeFileError(f"{path}: {key} must be a list of rows")
    if len(raw) != n or any(len(r) != n for r in raw):
        lens = sorted({len(r) for r in raw})
        raise ProbeFileError(
            f"{path}: {key} must be {n}x{n} (one row and column per host), got {len(raw)} rows of length {lens}"
        )
    m = np.full((n, n), np.nan)
    for i, row in enumerate(raw):
        for j, v in enumerate(row):
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ProbeFileError(f"{path}: {key}[{i}][{j}] is {v!r}, not a number or null")
            if isinstance(v, float) and math.isnan(v):
                raise ProbeFileError(f"{path}: {key}[{i}][{j}] is NaN: use null for a missing pair")
            try:
                fv = float(v)
            except OverflowError:
                fv = math.inf
            if not math.isfinite(fv):
                raise ProbeFileError(f"{path}: {key}[{i}][{j}] is infinite (or too large to be a number)")
            if abs(fv) > _MAX_VALUE[key]:
                raise ProbeFileError(f"{path}: {key}[{i}][{j}] is {_short(v)}: not a plausible "
                                     f"{'bandwidth in Gbit/s' if key == 'bandwidth_gbps' else 'latency in us'}")
            m[i, j] = fv
    return m


def from_dict(doc: Any, path: str = "<probe>", notes: list[str] | None = None) -> ProbeData:
    """Build :class:`ProbeData` from a parsed probe document, validating it.

    A value on a matrix's diagonal is dropped and asymmetric pairs are symmetrised; with
    ``notes`` (a list) both are reported there, one line each.
    """
    if not isinstance(doc, dict):
        raise ProbeFileError(f"{path}: not a plink probe file (top level is not a JSON object)")
    fmt = doc.get("format")
    if "format" not in doc:
        raise ProbeFileError(f"{path}: not a plink probe file (no \"format\" field; a probe file has "
                             f"\"format\": \"{FORMAT}\")")
    if fmt != FORMAT:
        raise ProbeFileError(f"{path}: not a plink probe file (format is {fmt!r}, expected {FORMAT!r})")
    version = doc.get("version")
    if "version" not in doc:
        raise ProbeFileError(f"{path}: no \"version\" field (a plink probe file has \"format\": {FORMAT!r} and "
                             f"\"version\": {VERSION})")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ProbeFileError(f"{path}: probe file version {version!r} is not a whole number (this plink reads 1..{VERSION})")
    if version > VERSION:
        raise ProbeFileError(
            f"{path}: probe file version {version} is newer than this plink reads ({VERSION}); upgrade plink"
        )
    if version < 1:
        raise ProbeFileError(f"{path}: invalid probe file version {version}")
    raw_hosts = doc.get("hosts")
    if not isinstance(raw_hosts, list) or not raw_hosts:
        raise ProbeFileError(f"{path}: 'hosts' must be a non-empty list")
    hosts = []
    for k, h in enumerate(raw_hosts):
        if isinstance(h, str):
            h = {"name": h}
        if not isinstance(h, dict) or not isinstance(h.get("name"), str):
            raise ProbeFileError(f"{path}: hosts[{k}] must be an object with a string 'name'")
        for opt in ("address", "ssh"):
            if h.get(opt) is not None and not isinstance(h[opt], str):
                raise ProbeFileError(f"{path}: hosts[{k}].{opt} must be a string")
        hosts.append(Host(h["name"], h.get("address"), h.get("ssh")))
    n = len(hosts)
    if doc.get("latency_us") is None:
        raise ProbeFileError(f"{path}: missing 'latency_us' matrix" if "latency_us" not in doc else
                             f"{path}: 'latency_us' is null: it must be the matrix (a list of rows)")
    mats = {k: _parse_matrix(doc, k, n, path) for k in _MATRIX_KEYS}
    for key, m in mats.items():
        if m is None:
            continue
        diag = np.diagonal(m)
        k_diag = int(np.sum(~np.isnan(diag) & (diag != 0)))
        if k_diag and notes is not None:
            notes.append(f"{path}: ignored the diagonal of {k_diag} host(s) in {key} (a host's distance to itself)")
        np.fill_diagonal(m, 0.0)  # (ProbeData then makes the bandwidth diagonal NaN)
        if key != "bandwidth_gbps":  # no two hosts are 0 us apart: a 0 is an unmeasured pair (as in a CSV)
            zero = (m == 0) & ~np.eye(n, dtype=bool)
            if zero.any():
                m[zero] = np.nan
                if notes is not None:
                    notes.append(f"{path}: read {int(np.triu(zero | zero.T, 1).sum())} pair(s) of 0 in {key} "
                                 "as not measured")
        if notes is not None and key in ("latency_us", "bandwidth_gbps"):
            asym = count_asymmetric(m)
            if asym:
                rule = "the smaller bandwidth" if key == "bandwidth_gbps" else "the larger latency"
                notes.append(f"{path}: symmetrised {asym} asymmetric pair(s) in {key} (kept {rule})")
    meta = doc.get("meta") or {}
    if not isinstance(meta, dict):
        raise ProbeFileError(f"{path}: 'meta' must be an object")
    truth = None
    if doc.get("truth") is not None:
        t = doc["truth"]
        try:
            if not isinstance(t["levels"], list) or not isinstance(t["labels"], list) \
                    or not all(isinstance(lab, list) for lab in t["labels"]):
                raise TypeError
            levels = tuple(str(x) for x in t["levels"])
            labels = tuple(tuple(str(x) for x in lab) for lab in t["labels"])
        except (TypeError, KeyError) as exc:
            raise ProbeFileError(f"{path}: 'truth' must have 'levels' and 'labels' lists") from exc
        if any(len(lab) != len(levels) for lab in labels):
            raise ProbeFileError(f"{path}: every truth label must have {len(levels)} levels")
        truth = Truth(levels, labels)
    uplinks = _parse_uplinks(doc.get("uplinks"), path)
    try:
        return ProbeData(
            hosts=hosts,
            latency=mats["latency_us"],
            latency_median=mats["latency_median_us"],
            latency_p90=mats["latency_p90_us"],
            bandwidth=mats["bandwidth_gbps"],
            latency_best=mats["latency_best_us"],
            meta=meta,
            truth=truth,
            uplinks=uplinks,
        )
    except ProbeFileError as exc:
        raise ProbeFileError(f"{path}: {exc}") from None


# ---------------------------------------------------------------------------
# reading


def _read_text(path: str | os.PathLike) -> str:
    return read_text(path, ProbeFileError)


def load_json(path: str | os.PathLike, notes: list[str] | None = None) -> ProbeData:
    """Read a plink probe file (JSON); diagonal and asymmetry notes go to ``notes``."""
    return from_dict(read_json(path, ProbeFileError), str(path), notes=notes)


#: cells of a CSV matrix that mark a missing pair, in any case ("nan" parses as a float NaN anyway)
_MISSING = ("", "na", "null", "none", "-")


def _parse_cell(cell: str, where: str) -> float:
    s = cell.strip()
    if s.lower() in _MISSING:
        return math.nan
    try:
        return float(s)
    except ValueError:
        raise ProbeFileError(f"{where}: {_short(s)} is not a number") from None


def _is_value(s: str) -> bool:
    """A cell holding an actual number (not empty, not a missing marker)."""
    try:
        float(s)
        return True
    except ValueError:
        return False


def _is_number(s: str) -> bool:
    """A cell holding a number or a missing marker (not a host name)."""
    return _is_value(s) or s.strip().lower() in _MISSING


_MAX_ROWS = 20001


_DECIMAL_COMMA = re.compile(r"^\s*[-+]?\d+,\d+(?:[eE][-+]?\d+)?\s*$")  #: 1,5 (a number in many locales)


def csv_rows(text: str, path, what: str, empty_cells: bool = False) -> tuple[list[str], list[list[str]]]:
    """The non-blank, non-comment lines of a CSV/TSV ``text`` and their cells (tab-separated when
    every line has a tab, semicolon-separated when it has semicolons and no comma, as
    spreadsheets write CSV in many locales); ProbeFileError naming ``path`` and ``what`` when
    there is nothing. ``empty_cells`` (matrices): a line of separators only (``\t\t\t``: a matrix
    row never measured) is a row of empty cells, not a blank line, and in a semicolon-separated
    file numbers may have decimal commas (``0;1,5;3,0``, as spreadsheets in those locales write)."""
    text = text.removeprefix("\ufeff")  # the byte-order mark of Excel's "CSV UTF-8"

    def kept(ln: str) -> bool:
        body = ln.strip(" \r\n") if empty_cells else ln.strip()
        return bool(body) and not ln.lstrip().startswith("#")

    lines = [ln for ln in text_lines(text) if kept(ln)]
    if not lines:
        raise ProbeFileError(f"{path}: empty {what} file")
    first = lines[0]
    decimal_comma = empty_cells and "\t" not in first and ";" in first and all(
        "," not in c or _DECIMAL_COMMA.match(c) for c in first.split(";"))
    # a tab in the first line only (a header's name holding one) does not make the file tab-separated
    tabbed = "\t" in first and all("\t" in ln for ln in lines[1:])
    sep = "\t" if tabbed else ";" if ";" in first and ("," not in first or decimal_comma) else ","
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines)), dialect="excel", delimiter=sep))
    except csv.Error as exc:
        raise ProbeFileError(f"{path}: not a readable CSV {what}: {exc}") from None
    if empty_cells and sep == ";":
        rows = [[c.replace(",", ".") if _DECIMAL_COMMA.match(c) else c for c in r] for r in rows]
    return lines, rows


def _name_column(rows: list[list[str]]) -> bool:
    """Whether every row starts with a host name (text, not a number or a missing marker)."""
    return all(r and not _is_number(r[0]) for r in rows)


def _running_index(cells) -> int | None:
    """The first of ``cells`` when they are the whole numbers s, s+1, ..., s+n-1 in order (labels), else None."""
    try:
        v = [int(str(c).strip()) for c in cells]
    except ValueError:
        return None
    return v[0] if len(v) > 1 and v == list(range(v[0], v[0] + len(v))) else None


def _index_labels(rows: list[list[str]]) -> tuple[int, int] | None:
    """``(first, last)`` label when the first row and the first column are the same running numbers
    under an empty corner, as pandas' ``DataFrame.to_csv`` (0..n-1, or the frame's own index) and
    R's ``write.csv`` of a ``dist`` (1..n) write them; read as data they were a phantom host whose
    latencies were the labels. A matrix whose diagonal is left empty and whose first host's values
    happen to be such numbers reads the same: 2 labels count only from 0, and the caller says what
    it read (a note)."""
    if len(rows) < 3 or rows[0][0].strip() or any(len(r) != len(rows[0]) for r in rows):
        return None
    first = _running_index(rows[0][1:])
    if first is None or _running_index(r[0] for r in rows[1:]) != first or (len(rows) == 3 and first != 0):
        return None
    return first, first + len(rows) - 2


def _separator_ends_every_line(rows: list[list[str]]) -> bool:
    """Whether every line ends with an empty cell that is no column: the first line is a header (a
    name is never empty), or the lines are one cell longer than a square matrix needs (with its
    name column, where every row starts with a name). A matrix whose last host was never measured
    (an empty last column, lines as long as the matrix is wide) is not."""
    if len(rows[0]) < 3 or not all(len(r) > 1 and not r[-1].strip() for r in rows):
        return False
    inner = rows[0][1:-1]
    if all(c.strip() and not _is_number(c) for c in inner):
        return True  # a header
    return len(rows[0]) == len(rows) + _name_column(rows) + 1


def read_matrix_csv(path: str | os.PathLike, notes: list[str] | None = None,
                    text: str | None = None) -> tuple[np.ndarray, list[str] | None]:
    """Read a CSV/TSV matrix; return it and the host names found in it, if any. What was read in a
    way a user may not expect (labels) goes to ``notes``. ``text``: the file's text when already
    read (standard input, a pipe), ``path`` then only names it."""
    if text is None:
        text = _read_text(path)
    lines, rows = csv_rows(text, path, "matrix", empty_cells=True)
    if len(lines) > _MAX_ROWS:
        raise ProbeFileError(f"{path}: {len(lines)} rows: more than {_MAX_ROWS} hosts")
    if len(rows[0]) == 1 and " " in lines[0].strip():
        rows = [ln.split() for ln in lines]
    if all(len(r) == 1 for r in rows) and not any(_is_number(r[0]) for r in rows):
        # one name per line (user@host:port, slots=...): the host list plink probe reads, given for a matrix
        raise ProbeFileError(f"{path}: one name per line and no number: a host list, not a matrix "
                             f"('plink probe {path} -o probe.json' measures the matrix this command reads)")
    if len(rows) > 1 and not any(_is_number(c) for r in rows for c in r):  # (it said "row names do not match the column names")
        raise ProbeFileError(f"{path}: no number in it: not a matrix (one row of numbers per host, "
                             "NaN or empty where a pair was not measured)")
    if _separator_ends_every_line(rows):
        rows = [r[:-1] for r in rows]  # (some exporters write one): no column
    names: list[str] | None = None
    labels = _index_labels(rows)
    if labels:  # pandas' to_csv, R's write.csv: the running index over the columns and down the rows
        rows = [r[1:] for r in rows[1:]]
        if notes is not None:
            notes.append(f"{path}: the first row and column hold the same running numbers {labels[0]}..{labels[1]} "
                         "under an empty corner: read as labels (as pandas and R write them), not as a host")
    # A header row holds names: no cell after the (possibly empty) corner is a number.
    elif not any(_is_value(c) for c in rows[0][1:]) and not _is_value(rows[0][0]):
        header = [c.strip() for c in rows[0]]
        rows = rows[1:]
        # A header may have an empty (or label) corner cell over a name column.
        if rows and len(header) == len(rows[0]) and not _is_number(rows[0][0]):
            header = header[1:]
        elif (rows and len(header) == len(rows[0]) == len(rows) + 1
              and _running_index(r[0] for r in rows) is not None):
            # a corner (empty as R's write.csv writes it, or the index's name: pandas' "host") over
            # the rows' running numbers: labels, not names
            header = header[1:]
            rows = [r[1:] for r in rows]
        names = header
    elif (not rows[0][0].strip() and _running_index(rows[0][1:]) is not None and len(rows[0]) == len(rows)
          and _name_column(rows[1:])):
        rows = rows[1:]  # pandas' default column numbers over a named index: the names are the rows' (below)
    # A name column: the first cell of every row is text.
    if rows and _name_column(rows):
        col = [r[0].strip() for r in rows]
        rows = [r[1:] for r in rows]
        if names is None:
            names = col
        elif col != names:
            if len(col) != len(names):  # (it said only that the names differ)
                raise ProbeFileError(f"{path}: {len(names)} column names but {len(col)} named "
                                     f"row{'s' * (len(col) != 1)}: a matrix has a row per host")
            twice = next((c for i, c in enumerate(col) if c in col[:i]), None)
            if twice is not None:  # (it blamed row 0's order, which is read by name below)
                raise ProbeFileError(f"{path}: row name {twice!r} appears twice: a matrix has one row per host")
            stray = next((i for i, c in enumerate(col) if c not in names), None)
            if stray is not None:
                raise ProbeFileError(f"{path}: row {stray} is named {col[stray]!r}, which names no column")
            # the same hosts, the rows in another order (a matrix sorted by row, say): read by name
            where = next(i for i, (a, b) in enumerate(zip(col, names)) if a != b)
            by_name = dict(zip(col, rows))
            rows = [by_name[name] for name in names]
            if notes is not None:
                notes.append(f"{path}: the rows name the hosts in another order than the columns (row "
                             f"{where} is {col[where]!r}, column {where} {names[where]!r}): each row is "
                             "read as the row of the host it names")
    n = len(rows)
    if n == 0:
        raise ProbeFileError(f"{path}: no matrix rows")
    for i, r in enumerate(rows):
        if len(r) != n:
            why = " (a separator at the end of the line?)" if len(r) == n + 1 and not r[-1].strip() else ""
            if not why and names is None and n == len(rows[0]) + 1 and all(len(x) == n - 1 for x in rows):
                why = (" (every row has one value less than there are rows: is the first row a header of "
                       "numeric host names? Give the names in a file with --hosts and leave the header out)")
            raise ProbeFileError(f"{path}: matrix is not square: row {i} has {len(r)} values, expected {n}{why}")
    m = np.array([[_parse_cell(c, f"{path}: row {i} column {j}") for j, c in enumerate(r)] for i, r in enumerate(rows)])
    if names is not None and len(names) != n:
        raise ProbeFileError(f"{path}: {len(names)} host names for a {n}x{n} matrix")
    return m, names


def default_host_names(n: int) -> list[str]:
    """The names plink gives ``n`` hosts of a matrix without names: ``h0..h9``, ``h00..h99``, ... (the
    width of ``n - 1``, so that they sort in index order)."""
    width = len(str(max(n - 1, 0)))
    return [f"h{i:0{width}d}" for i in range(n)]


def _float_matrix(values, what: str) -> np.ndarray:
    """``values`` as a float array (a copy); :class:`ProbeFileError` for ragged rows, text or complex
    numbers, where numpy's bare message said little."""
    try:
        return np.array(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ProbeFileError(f"{what} matrix is not a square array of numbers ({exc})") from None


def from_matrix(
    latency: np.ndarray,
    names: Sequence[str] | None = None,
    *,
    unit: str = "us",
    bandwidth: np.ndarray | None = None,
    meta: dict | None = None,
) -> ProbeData:
    """Wrap a plain latency matrix (in ``unit``) as :class:`ProbeData`.

    Missing pairs are ``NaN``.  The diagonal is ignored (read as 0): a self-distance is
    not a distance between two hosts (:func:`plink.data.inputs.load_input` also says so).
    An off-diagonal 0 is read as unmeasured, with a ``UserWarning``, as the file readers read it.
    A latency above one day is refused, as :func:`load` refuses it (a unit mix-up).
    ``bandwidth``: pair bandwidths in Gbit/s, NaN where not measured; ``meta``: a mapping, copied.
    """
    from plink.data.inputs import check_latency_at_most_a_day

    if unit not in LATENCY_UNITS:
        raise ProbeFileError(f"unknown latency unit {unit!r} (choose from {', '.join(LATENCY_UNITS)})")
    if meta is not None and not isinstance(meta, Mapping):
        raise InputError(f"meta must be a mapping (a dict), got {type(meta).__name__}")
    m = _float_matrix(latency, "latency")
    if bandwidth is not None:
        bandwidth = _float_matrix(bandwidth, "bandwidth")
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ProbeFileError(f"latency matrix is not square (shape {'x'.join(map(str, m.shape))})")
    n = m.shape[0]
    if names is None:
        names = default_host_names(n)
    names = list(names)
    if len(names) != n:
        raise ProbeFileError(f"{len(names)} host names for a {n}x{n} matrix")
    np.fill_diagonal(m, 0.0)
    check_latency_at_most_a_day(m, unit, names, "latency matrix", "unit")
    m *= LATENCY_UNITS[unit]
    zero = (m == 0) & ~np.eye(n, dtype=bool)
    if zero.any():
        import warnings

        warnings.warn(f"read {int(zero.sum())} off-diagonal zero latency value(s) as not measured (no two hosts are "
                      "0 apart: as plink's file readers read them; give NaN for unmeasured pairs)", UserWarning,
                      stacklevel=2)
        m[zero] = np.nan
    return ProbeData(
        hosts=[Host(name) for name in names],
        latency=m,
        bandwidth=bandwidth,
        meta=dict(meta or {}),
    )


def load(
    path: str | os.PathLike,
    *,
    hosts_file: str | os.PathLike | None = None,
    unit: str | None = None,
    kind: str = "latency",
    bandwidth: str | os.PathLike | None = None,
) -> ProbeData:
    """Read a probe file (``.json``) or a plain matrix (``.csv``/``.tsv``/``.txt``/``.npy``).

    ``hosts_file`` names the hosts of a plain matrix; ``unit`` and ``kind`` describe it
    (latency in ``us``/``ms``/``s``/``ns``, or bandwidth); JSON probe files are always in
    microseconds.  ``bandwidth``: the path of a plain bandwidth matrix in Gbit/s (``plink order
    --bandwidth-matrix``) over the same hosts in the same order, added to a latency matrix or a
    probe file (whose own pair bandwidths it replaces) as ``ProbeData.bandwidth``, each pair's the
    smaller of its two directions; each pair measured on its own, so the shared model takes it as
    the limit of that pair's flows.  Not with ``kind="bandwidth"`` (the main matrix is bandwidth
    already); for another unit, :func:`plink.data.inputs.load_input` (``bandwidth_unit``).  See
    :func:`plink.data.inputs.load_input`, which also returns the notes (ignored diagonal,
    symmetrised pairs) and warnings (a unit that looks wrong) that this drops.  Its errors name
    this function's parameters (``hosts_file``; no ``bandwidth_unit`` here).
    """
    from plink.data.inputs import load_input

    if Path(path).suffix.lower() == ".json" and unit in (None, "us") and kind == "latency":
        unit = None
    return load_input(path, hosts=hosts_file, unit=unit, kind=kind, bandwidth=bandwidth, _say=_LOAD_SAYS).probe


#: how :func:`load`'s errors name what ``load_input``'s call ``hosts`` and ``bandwidth_unit``
_LOAD_SAYS = {"hosts": "--hosts (hosts_file)",
              "bandwidth_unit": "unit (load reads the bandwidth matrix in Gbit/s; plink.data.inputs.load_input "
                                "takes its bandwidth_unit)"}


def new_meta(method: str, **extra: Any) -> dict:
    """Metadata for a probe file written now by this plink version."""
    meta = {
        "method": method,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "tool_version": __version__,
    }
    meta.update(extra)
    return meta


def measured_pairs(probe, bandwidth: bool = False) -> np.ndarray:
    """``(N, N)`` mask of the host pairs of ``probe`` with a latency (``bandwidth``: a bandwidth, none
    when the probe has no bandwidth matrix) measured in either direction (diagonal False). O(N^2)."""
    lat = probe.latency if not bandwidth else probe.bandwidth
    if lat is None:
        return np.zeros((probe.n, probe.n), dtype=bool)
    measured = np.isfinite(lat) | np.isfinite(lat.T)
    np.fill_diagonal(measured, False)
    return measured


def check_every_host_measured(probe) -> np.ndarray:
    """Raise :class:`~plink.errors.UnmeasuredHostError` naming the first host of ``probe`` without a
    measured pair (structure inference cannot place it); else return the measured-pair mask
    (diagonal False)."""
    measured = measured_pairs(probe)
    lonely = np.flatnonzero(~measured.any(axis=1))
    if probe.n == 1:
        raise UnmeasuredHostError(f"one host ({probe.names[0]}): no pair to measure; groups need 2 hosts or more")
    with_bw = measured_pairs(probe, bandwidth=True)
    if lonely.size == probe.n and with_bw.any():  # (every host: say so, not of the first host alone)
        raise UnmeasuredHostError("no latency was measured, only pair bandwidths: structure inference needs the "
                                  "latencies (probe them again)")
    if lonely.size:
        how = (" (take it out of the host list and rerun plink probe with --resume: the other pairs are kept)"
               if probe.meta.get("schedule") is not None else "")  # a file plink probe wrote
        what = "latency pairs" if with_bw[lonely[0]].any() else "pairs"
        raise UnmeasuredHostError(f"host {probe.names[lonely[0]]} has 0 measured {what}: probe it again or leave it out{how}")
    return measured
