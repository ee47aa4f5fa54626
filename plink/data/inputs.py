"""One loader for every matrix a user has: latency or bandwidth, any unit, with host names.

Every command that reads a matrix (``plink order``, ``group``, ``show``, ``schedule``,
``verify``, ``watch --probe-file``) goes through :func:`load_input`, so a file is read the
same way everywhere:

* ``kind="latency"`` (lower is closer) in ``us``/``ms``/``s``/``ns``, or ``kind="bandwidth"``
  (higher is closer) in ``Gbit/s``, ``Mbit/s``, ``GB/s``, ``MB/s`` (and ``Gbps``, ``MBps``,
  ...).  A bandwidth matrix becomes a distance by taking the inverse, as ProbeEmbed does
  (dissertation §4.2.1): the distance of a pair is the time to move one byte, ``1/bw`` in
  microseconds, so the cost model's ``lat + S/bw`` over-counts by one byte per hop.  A latency
  and a bandwidth matrix can be given together (``bandwidth=``).
* Host names come from the file (a header row or a name column), from a host list in any
  format :mod:`plink.data.hostlist` reads, or from one column of a CSV table
  (``hosts.csv`` or ``hosts.csv:region``; Skyplane's ``hosts.csv`` works as is).
* A value on the diagonal (a self-RTT, a loopback bandwidth) is ignored with a note;
  off-diagonal zeros of a latency matrix are read as missing (a zero RTT between two hosts
  is below the probe's resolution) with a note; asymmetric pairs are symmetrised (max of
  the latencies, min of the bandwidths, §5.2.2) and counted in a note.
* A matrix that looks like the other kind gets a warning naming ``--kind``: triangle-
  inequality violations are counted on the matrix and on its inverse (a sample of
  triples); a distance violates it far less than an inverted distance does.

Errors quote values in the unit the user gave.  Cost: O(N^2) to read and check, plus a
fixed sample of 20,000 triples for the kind check.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from plink.data.fileio import text_lines
from plink.data.probefile import count_asymmetric, default_host_names
from plink.errors import OptionError, ProbeFileError, UnitError

#: ``ProbeData.meta["bandwidth_source"]`` of a bandwidth matrix read from a file (``--kind bandwidth``,
#: ``--bandwidth-matrix``): each pair's path measured on its own, which the shared model then uses as
#: the limit of that pair's flows (``plink.pricing.network``). ``plink probe`` measures the pairs of a
#: round at the same time, so its pair bandwidths include the uplinks' sharing and are not used so.
MATRIX_BANDWIDTH = "matrix"

#: Latency units, as a factor to microseconds.
LATENCY_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6, "ns": 1e-3}
#: Bandwidth units, as a factor to Gbit/s (bits: lower-case b or 'bit'; bytes: upper-case B).
BANDWIDTH_UNITS = {
    "Gbit/s": 1.0, "Mbit/s": 1e-3, "Kbit/s": 1e-6, "bit/s": 1e-9,
    "GB/s": 8.0, "MB/s": 8e-3, "KB/s": 8e-6, "B/s": 8e-9,
    "GiB/s": 8 * 2**30 / 1e9, "MiB/s": 8 * 2**20 / 1e9,  # binary prefixes: 7.4% and 4.9% more than GB/s, MB/s
    "KiB/s": 8 * 2**10 / 1e9,
}
_BANDWIDTH_ALIASES = {
    "gbps": "Gbit/s", "Gbps": "Gbit/s", "gbit/s": "Gbit/s", "Gb/s": "Gbit/s", "Mb/s": "Mbit/s", "Kb/s": "Kbit/s",
    "mbps": "Mbit/s", "Mbps": "Mbit/s",
    "mbit/s": "Mbit/s", "kbps": "Kbit/s", "Kbps": "Kbit/s", "bps": "bit/s",
    "GBps": "GB/s", "MBps": "MB/s", "KBps": "KB/s", "Bps": "B/s",
    # the SI prefix kilo is a lower-case k (and plink prints kbit/s)
    "kbit/s": "Kbit/s", "kb/s": "Kbit/s", "kB/s": "KB/s", "kBps": "KB/s",
}
#: other spellings of the latency units (the micro sign and the Greek mu, upper case, "msec")
_LATENCY_ALIASES = {"\u00b5s": "us", "\u03bcs": "us", "US": "us", "MS": "ms", "NS": "ns", "S": "s",
                    "usec": "us", "msec": "ms", "nsec": "ns", "sec": "s"}
#: spellings taken in --unit but not looked for in file names (``bytes_per_second.csv`` names no unit)
_WORD_ALIASES = {
    **{w + e: u for w, u in (("second", "s"), ("millisecond", "ms"), ("microsecond", "us"), ("nanosecond", "ns"))
       for e in ("", "s")},
    "secs": "s", "msecs": "ms", "usecs": "us", "nsecs": "ns",
    **{u[:-2] + "/sec": u for u in BANDWIDTH_UNITS},  # MB/sec (ARCHER's source), Gbit/sec, ...
    "Gb/sec": "Gbit/s", "Mb/sec": "Mbit/s", "Kb/sec": "Kbit/s",
}
UNITS = (tuple(LATENCY_UNITS) + tuple(BANDWIDTH_UNITS) + tuple(_BANDWIDTH_ALIASES) + tuple(_LATENCY_ALIASES)
         + tuple(_WORD_ALIASES))
KINDS = ("latency", "bandwidth")

#: Largest matrix side read (a 20000 x 20000 float64 matrix is 3.2 GB).
MAX_HOSTS = 20000
#: Largest accepted latency (one day) and bandwidth (1 Pbit/s): beyond that a value is a unit mix-up.
MAX_LATENCY_US = 86400e6
#: a median RTT above this (10 s) is warned about as a likely unit mix-up (PlanetLab's slowest pairs are ~0.5 s)
PLAUSIBLE_RTT_US = 10e6
#: a median RTT below this (1 us) too: no network is that fast (RDMA within a rack takes ~2 us)
FASTEST_RTT_US = 1.0
MAX_BANDWIDTH_GBPS = 1e6
#: Smallest accepted bandwidth (1 bit/s): below that a value is a unit mix-up (and its inverse, the
#: distance, overflows: 1e-305 Gbit/s priced orders at 'inf s' and crashed the exact solver)
MIN_BANDWIDTH_GBPS = 1e-9
#: a median bandwidth above this (1.6 Tbit/s, twice the fastest NICs of 2026) or below the next
#: (1 Mbit/s) is warned about as a likely unit mix-up (Mbit/s read as Gbit/s, or the other way)
PLAUSIBLE_BANDWIDTH_GBPS = (1e-3, 1600.0)


def bandwidth_out_of_range(gbps, where=None) -> tuple[tuple[int, ...], str] | None:
    """The first bandwidth (Gbit/s) outside 1 bit/s .. 1 Pbit/s and why, or None.

    ``gbps`` is a scalar or an array (NaN is skipped, as missing); ``where`` an optional mask
    of the entries to check.  Returns ``(index, "less than 1 bit/s" | "more than 1 Pbit/s")``,
    the index ``()`` for a scalar.  One check for plain matrices, probe files' pair bandwidths
    and their uplinks: outside that range a value is a unit mix-up, and its inverse (the
    distance the solvers use) overflows.  O(size).
    """
    a = np.asarray(gbps, dtype=float)
    with np.errstate(invalid="ignore"):
        low, high = a < MIN_BANDWIDTH_GBPS, a > MAX_BANDWIDTH_GBPS
    if where is not None:
        low, high = low & where, high & where
    for bad, words in ((low, "less than 1 bit/s"), (high, "more than 1 Pbit/s")):
        if bad.any():
            return tuple(int(k) for k in np.argwhere(bad)[0]), words
    return None
def check_latency_at_most_a_day(m: np.ndarray, unit: str, names: Sequence[str], source: str, hint: str) -> None:
    """Raise :class:`ProbeFileError` at the first latency of ``m`` (in ``unit``; NaN skipped) above one
    day (``MAX_LATENCY_US``): a unit mix-up, quoted in the user's unit, with ``hint`` naming what to
    check.  One rule for the matrix files (:func:`prepare_matrix`) and the matrices handed to
    :func:`plink.data.probefile.from_matrix`.  O(N^2)."""
    with np.errstate(invalid="ignore"):
        bad = np.asarray(m) > MAX_LATENCY_US / LATENCY_UNITS[unit]
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ProbeFileError(f"{source}: latency at row {i}, column {j} ({names[i]} -> {names[j]}) is "
                             f"{_fmt(m[i, j], unit)}, more than one day: wrong {hint}?")


#: Names in the host column of a CSV table, in order of preference.
_NAME_COLUMNS = ("name", "host", "hostname", "node", "address", "region", "ip")


def _norm_unit(unit: str | None, kind: str, flag: str = "--unit (unit)") -> str:
    """``unit`` of a ``kind`` matrix as plink spells it (its default when None); :class:`UnitError` for
    another kind's unit or none, naming ``--kind`` only where ``flag``, the option that gave the unit,
    is the main matrix's ``--unit``."""
    if kind not in KINDS:
        raise UnitError(f"unknown matrix kind {kind!r} (use latency or bandwidth)")
    if unit is None:
        return "us" if kind == "latency" else "Gbit/s"
    unit = _WORD_ALIASES.get(unit, unit)
    unit = _BANDWIDTH_ALIASES.get(unit, _LATENCY_ALIASES.get(unit, unit))
    if kind == "latency" and unit not in LATENCY_UNITS:
        hint = " (a bandwidth unit: pass --kind (kind) bandwidth)" if unit in BANDWIDTH_UNITS else ""
        raise UnitError(f"{unit!r} is not a latency unit (use {', '.join(LATENCY_UNITS)}){hint}")
    if kind == "bandwidth" and unit not in BANDWIDTH_UNITS:
        main = flag == "--unit (unit)"  # (--kind is no fix for the unit of --bandwidth-matrix)
        hint = " (a latency unit: pass --kind (kind) latency)" if unit in LATENCY_UNITS and main else ""
        raise UnitError(f"{unit!r} is not a bandwidth unit (use {', '.join(BANDWIDTH_UNITS)}){hint}")
    return unit


def bandwidth_to_distance_us(bw_gbps: np.ndarray) -> np.ndarray:
    """Inverse bandwidth as a distance (§4.2.1): microseconds to move one byte, ``8e-3 / Gbit/s``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 8e-3 / bw_gbps


@dataclass
class Loaded:
    """What :func:`load_input` read: the probe data and the notes for the user."""

    probe: ProbeData  # noqa: F821 (plink.data.probefile.ProbeData)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------
# host names


def check_host_name(name: str, what: str = "host name") -> str:
    """Refuse names that could break a launcher file: whitespace, control characters,
    lone surrogates, empty names.  Returns ``name``."""
    if not isinstance(name, str) or not name:
        raise ProbeFileError(f"{what} {name!r} is empty or not a string")
    for ch in name:
        if ch.isspace() or not ch.isprintable() or 0xD800 <= ord(ch) <= 0xDFFF:
            raise ProbeFileError(f"{what} {name!r} holds whitespace or a control character")
    return name


def is_number(v) -> bool:
    """Whether ``v`` is a real number: Python's or numpy's of any width (``np.float32(1.5)``), not a
    bool (``True`` is no rate, size or count).  What the library's numeric parameters are checked with."""
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def is_whole_number(v) -> bool:
    """Whether ``v`` is a whole number (:func:`is_number`; a whole float such as ``1e6`` or ``2.0`` too,
    not ``2.5``, NaN or infinity)."""
    return is_number(v) and (isinstance(v, numbers.Integral) or (math.isfinite(v) and float(v).is_integer()))


def host_key(name: str) -> str:
    """The key every spelling of one host shares: names differing only in case are one host to a
    resolver, to the host-list reader and to every launcher file, so every file plink reads is
    matched on this key."""
    return name.lower()


def host_positions(names: Sequence[str]) -> dict[str, int]:
    """``host_key(name) -> index`` over ``names`` (the readers refuse two spellings of one host in a
    list, :func:`first_duplicate`).  O(N)."""
    return {host_key(h): i for i, h in enumerate(names)}


def hosts_not_in(names: Sequence[str], others: Sequence[str]) -> list[str]:
    """The names of ``names`` that are no host of ``others`` (case ignored), in their order.  O(N + M)."""
    keys = {host_key(h) for h in others}
    return [h for h in names if host_key(h) not in keys]


def first_duplicate(names: Sequence[str]) -> tuple[int, int] | None:
    """``(i, j)``, ``i < j``: the first name of ``names`` that repeats an earlier one (``j``) and that
    one (``i``), case ignored: names differing only in case are one host to a resolver, to the
    host-list reader and to every launcher file.  None when every name is its own host.  O(N)."""
    seen: dict[str, int] = {}
    for j, n in enumerate(names):
        i = seen.setdefault(host_key(n), j)
        if i != j:
            return i, j
    return None


def case_note(names: Sequence[str], i: int, j: int) -> str:
    """What to add when the duplicate ``names[j]`` of ``names[i]`` differs from it in case ("" when not)."""
    return f"as {names[i]!r}: names differing only in case are one host" if names[i] != names[j] else ""


def _split_spec(spec: str | os.PathLike) -> tuple[str, str | None]:
    """``(path, column)`` of a ``--hosts`` spec: a path, or ``path:COLUMN`` (a path that exists wins)."""
    spec = str(spec)
    if not os.path.exists(spec) and ":" in spec:
        path, _, column = spec.rpartition(":")
        return path, column
    return spec, None


def host_names_file(spec: str | os.PathLike) -> str:
    """The file a ``--hosts`` spec (``path`` or ``path:COLUMN``) reads."""
    return _split_spec(spec)[0]


def read_host_names(spec: str | os.PathLike, max_hosts: int | None = None, cap_hint: str | None = None) -> list[str]:
    """Host names from a host list (any :mod:`~plink.data.hostlist` format) or a CSV column.

    ``spec`` is a path, or ``path:COLUMN`` for one column of a CSV/TSV table.  A ``.csv`` /
    ``.tsv`` file with a header row uses the column named ``COLUMN``, else the first of
    name, host, hostname, node, address, region, ip; a one-column CSV without a header is
    a list of names.  ``max_hosts``, ``cap_hint``: as :func:`~plink.data.hostlist.parse_hostlist` takes them.
    """
    from plink.data.fileio import read_text

    path, column = _split_spec(spec)
    suffix = Path(path).suffix.lower()
    chosen = None  # the column picked by its name, said where its names are refused
    if column is not None or suffix in (".csv", ".tsv"):
        text = read_text(path, ProbeFileError)
        names, chosen = _csv_column(text, path, column)
    else:
        from plink.data.hostlist import RAISE_CAP, parse_hostlist
        from plink.errors import PlinkError

        text = read_text(path, ProbeFileError)
        try:
            entries = parse_hostlist(text, source=path, max_hosts=max_hosts, cap_hint=cap_hint or RAISE_CAP)
        except PlinkError as exc:
            raise ProbeFileError(str(exc)) from None
        names = [e.name for e in entries]
    for n in names:
        try:
            check_host_name(n, f"{path}: host name")
        except ProbeFileError as exc:
            raise ProbeFileError(f"{exc}{_chosen_note(path, chosen)}") from None
    dup = first_duplicate(names)
    if dup is not None:
        i, j = dup
        note = case_note(names, i, j)
        raise ProbeFileError(f"{path}: duplicate host name {names[j]!r} (entries {i + 1} and {j + 1}"
                             + (f", {note})" if note else ")") + _chosen_note(path, chosen))
    if not names:
        raise ProbeFileError(f"{path}: no host names")
    return names


def _chosen_note(path: str, chosen: str | None) -> str:
    return (f" (the names were read from its column {chosen!r}, chosen by its name; give {path}:COLUMN for "
            "another)") if chosen else ""


def _csv_column(text: str, path: str, column: str | None) -> tuple[list[str], str | None]:
    """The names of a CSV table's column ``column`` (a name or an index), and the column's name when
    plink chose it (by :data:`_NAME_COLUMNS`), else None."""
    from plink.data.probefile import csv_rows

    if not any(ln.strip() and not ln.lstrip().startswith("#") for ln in text_lines(text)):
        raise ProbeFileError(f"{path}: no host names")
    lines, rows = csv_rows(text, path, "table")
    header = [c.strip() for c in rows[0]]
    lower = [h.lower() for h in header]
    if column is not None:
        if column in header:
            col = header.index(column)
        elif column.isdigit() and int(column) < len(header):
            return [r[int(column)].strip() if len(r) > int(column) else "" for r in rows], None
        else:
            raise ProbeFileError(f"{path}: no column {column!r} (columns: {', '.join(header)})")
    elif len(header) == 1:
        body = rows[1:] if lower[0] in _NAME_COLUMNS else rows
        return [r[0].strip() if r else "" for r in body], None
    else:
        col = next((lower.index(c) for c in _NAME_COLUMNS if c in lower), None)
        if col is None:
            raise ProbeFileError(f"{path}: which column holds the host names? Name it: {path}:COLUMN "
                                 f"(columns: {', '.join(header)})")
    out = []
    for k, r in enumerate(rows[1:], 2):
        if len(r) <= col:
            raise ProbeFileError(f"{path}:{k}: row has no column {header[col]!r}")
        out.append(r[col].strip())
    return out, (header[col] if column is None else None)


# ---------------------------------------------------------------------------
# matrices


#: the endings of a plain text matrix (a name without one, /dev/stdin or a pipe's /dev/fd/63, too)
_TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".mat", "")


def _read_raw(path: Path, notes: list[str] | None = None,
              text: str | None = None) -> tuple[np.ndarray, list[str] | None]:
    from plink.data.probefile import read_matrix_csv

    suffix = path.suffix.lower()
    if text is not None:
        return read_matrix_csv(path, notes, text=text)
    if suffix == ".npy" or _is_npy(path):
        return _read_npy(path), None
    if suffix in _TEXT_SUFFIXES:
        return read_matrix_csv(path, notes)
    raise ProbeFileError(f"{path}: unknown file type {suffix!r} (expected .json, .csv, .tsv, .txt or .npy)")


def _is_npy(path: Path) -> bool:
    """A regular file that starts as a .npy matrix does (whatever its name); read without consuming
    anything a pipe would lose."""
    try:
        if not path.is_file():
            return False
        with open(path, "rb") as fh:
            return fh.read(6) == b"\x93NUMPY"
    except OSError:
        return False


def _read_npy(path: Path) -> np.ndarray:
    """A numeric 2-D .npy matrix; the header's shape is checked before any data is read."""
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version in ((2, 0), (3, 0)):
                shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            else:
                raise ValueError(f"unsupported .npy version {version}")
    except FileNotFoundError:
        raise ProbeFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ProbeFileError(f"{path}: is a directory, not a file") from None
    except Exception as exc:  # noqa: BLE001 (numpy raises many kinds on a malformed header)
        raise ProbeFileError(f"{path}: not a valid .npy matrix: {' '.join(str(exc).split())[:200]}") from None
    if dtype.kind not in "fiu":
        raise ProbeFileError(f"{path}: .npy matrix must be numeric, not {dtype}")
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ProbeFileError(f"{path}: .npy matrix is not square (shape {shape})")
    if shape[0] > MAX_HOSTS:
        raise ProbeFileError(f"{path}: {shape[0]} x {shape[1]} matrix is larger than {MAX_HOSTS} hosts")
    try:
        m = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ProbeFileError(f"{path}: not a valid .npy matrix: {' '.join(str(exc).split())[:200]}") from None
    return np.array(m, dtype=float)


def _fmt(value: float, unit: str) -> str:
    return f"{value:.6g} {unit}"


def prepare_matrix(raw: np.ndarray, names: Sequence[str], *, kind: str, unit: str, source: str,
                   notes: list[str], hint: str = "--unit (unit) or --kind (kind)") -> np.ndarray:
    """Check a raw matrix in the user's ``unit`` and return it in plink's unit (µs or Gbit/s).

    Diagonal values are dropped with a note, off-diagonal zeros of a latency matrix become
    missing with a note; negative, infinite or absurd values are errors quoting the value in
    ``unit`` and naming the options that may be wrong (``hint``).  Not yet symmetrised.
    """
    m = np.array(raw, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ProbeFileError(f"{source}: matrix is not square (shape {'x'.join(map(str, m.shape))})")
    n = m.shape[0]
    if n > MAX_HOSTS:
        raise ProbeFileError(f"{source}: {n} x {n} matrix is larger than {MAX_HOSTS} hosts")

    def where(i, j):
        return f"row {i}, column {j} ({names[i]} -> {names[j]})"

    diag = np.diagonal(m).copy()
    set_diag = ~np.isnan(diag) & (diag != 0)
    if set_diag.any():
        k = int(set_diag.sum())
        i = int(np.argmax(set_diag))
        notes.append(f"{source}: ignored the diagonal of {k} host(s) (self-{'RTT' if kind == 'latency' else 'bandwidth'}, "
                     f"e.g. {names[i]}: {_fmt(diag[i], unit)})")
    np.fill_diagonal(m, np.nan)
    bad = np.isinf(m)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ProbeFileError(f"{source}: value at {where(i, j)} is infinite (or beyond a float's 1.8e308)")
    bad = m < 0
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ProbeFileError(f"{source}: {kind} at {where(i, j)} is negative ({_fmt(m[i, j], unit)})")
    if kind == "latency":
        factor = LATENCY_UNITS[unit]
        check_latency_at_most_a_day(m, unit, names, source, hint)
    else:
        factor = BANDWIDTH_UNITS[unit]
        with np.errstate(over="ignore", under="ignore"):
            out_of_range = bandwidth_out_of_range(m * factor, where=m > 0)  # (zeros are missing, below)
        if out_of_range:
            (i, j), words = out_of_range
            raise ProbeFileError(f"{source}: bandwidth at {where(i, j)} is {_fmt(m[i, j], unit)}, {words}: "
                                 f"wrong {hint}?")
    zeros = m == 0
    if zeros.any():
        k = int(zeros.sum())
        if kind == "latency":
            notes.append(f"{source}: read {k} off-diagonal zero value(s) as not measured (a zero {kind} between two "
                         "hosts is below the measurement's resolution; the other direction is used where measured)")
        else:
            notes.append(f"{source}: read {k} zero-bandwidth value(s) as not measured")
        m[zeros] = np.nan
    with np.errstate(over="ignore"):
        m = m * factor
    return m


def triangle_violations(d: np.ndarray, samples: int = 20000, seed: int = 0) -> float:
    """Fraction of sampled measured triples with ``d_ij > d_ik + d_kj`` (1 % slack)."""
    n = d.shape[0]
    if n < 3:
        return 0.0
    rng = np.random.default_rng(seed)
    i, j, k = (rng.integers(0, n, samples) for _ in range(3))
    ok = (i != j) & (j != k) & (i != k)
    i, j, k = i[ok], j[ok], k[ok]
    a, b, c = d[i, j], d[i, k], d[k, j]
    meas = ~(np.isnan(a) | np.isnan(b) | np.isnan(c))
    if meas.sum() < 100:
        return 0.0
    return float(np.mean(a[meas] > 1.01 * (b[meas] + c[meas])))


def kind_warning(m: np.ndarray, kind: str, source: str, fix: str | None = None) -> str | None:
    """A warning when the matrix looks like the other kind (see the module docstring); ``fix``: what
    to do about it, where ``--kind`` is not the way (the default names ``--kind``)."""
    n = m.shape[0]
    if n < 4:
        return None
    other = "bandwidth" if kind == "latency" else "latency"
    m = np.asarray(m, dtype=float)
    diag = np.diagonal(m)
    off = m.copy()
    np.fill_diagonal(off, np.nan)
    if kind == "latency":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rowmax = np.nanmax(off, axis=1)
        big = int(np.sum(~np.isnan(diag) & (diag > 0) & (diag >= rowmax)))
        if big > n / 2:
            return (f"{source}: the diagonal is the largest value in {big} of {n} rows, as in a bandwidth matrix: "
                    f"if higher means closer, {fix or 'pass --kind bandwidth'}")
    pos = np.where(off > 0, off, np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv = 1.0 / pos
    # the matrix read as a distance the way --kind says, and the other way
    v_this = triangle_violations(pos if kind == "latency" else inv)
    v_other = triangle_violations(inv if kind == "latency" else pos)
    if v_this > 0.05 and v_other < 0.75 * v_this:
        return (f"{source}: looks like a {other} matrix, not {kind} ({v_this:.0%} of sampled triples break the triangle "
                f"inequality when read as {kind}, {v_other:.0%} as {other}): {fix or f'pass --kind {other}'} if "
                f"{'higher' if other == 'bandwidth' else 'lower'} means closer")
    return None


def load_input(
    path: str | os.PathLike,
    *,
    hosts: str | os.PathLike | None = None,
    unit: str | None = None,
    kind: str = "latency",
    bandwidth: str | os.PathLike | None = None,
    bandwidth_unit: str | None = None,
    max_hosts: int | None = None,
    _say: Mapping[str, str] | None = None,
) -> Loaded:
    """Read a probe file (.json) or a plain matrix (.csv/.tsv/.txt/.npy) as :class:`ProbeData`.

    ``kind``/``unit`` describe the plain matrix at ``path``; ``bandwidth`` adds a bandwidth
    matrix (a plain matrix in ``bandwidth_unit``, default Gbit/s, same hosts in the same
    order) to a latency one; ``hosts`` names the hosts (see :func:`read_host_names`).
    Returns the data and the notes/warnings to show the user.  ``_say``: how the errors name
    ``hosts`` and ``bandwidth_unit`` for a caller that calls them otherwise (``_SAY``'s keys).
    """
    say = {**_SAY, **(_say or {})}
    from plink.data.fileio import STDIN_NAME, loads_json, read_stdin, read_text
    from plink.data.probefile import Host, ProbeData, from_dict

    p = Path(path)
    out = Loaded(probe=None)
    text = None  # the text, when it had to be read to tell JSON from CSV
    if os.fspath(path) == "-":  # standard input, as plink emit reads it
        path, p = STDIN_NAME, Path(STDIN_NAME)
        text = read_stdin(ProbeFileError)
    elif p.suffix.lower() in _TEXT_SUFFIXES and not _is_npy(p):
        text = read_text(p, ProbeFileError)
    is_json = p.suffix.lower() == ".json" or (text is not None and text.lstrip().startswith("{"))
    if is_json:  # a probe file: by its name, or by its text (/dev/stdin, <(cat probe.json), probe.out)
        if kind != "latency" or unit is not None:
            # options that do not apply to the input: a usage error (exit 2), as click's own are
            raise OptionError(f"{path}: --kind (kind) and --unit (unit) describe plain matrices; a plink probe "
                              "file is in us and Gbit/s already")
        if hosts is not None:
            raise OptionError(f"{path}: {say['hosts']} names the hosts of a plain matrix; a probe file names its own")
        doc = loads_json(text if text is not None else read_text(p, ProbeFileError), str(path), ProbeFileError)
        probe = from_dict(doc, str(path), notes=out.notes)
        if bandwidth is not None:
            bw = _load_bandwidth(bandwidth, bandwidth_unit, probe.names, out, say["bandwidth_unit"])
            probe = ProbeData(hosts=probe.hosts, latency=probe.latency, latency_median=probe.latency_median,
                              latency_p90=probe.latency_p90, bandwidth=bw,
                              meta={**probe.meta, "bandwidth_source": MATRIX_BANDWIDTH}, truth=probe.truth,
                              latency_best=probe.latency_best, uplinks=probe.uplinks)
        out.probe = probe
        return out
    given = unit is not None
    unit = _norm_unit(unit, kind)
    _warn_name_unit(str(path), kind, unit, given, out)
    raw, names = _read_raw(p, out.notes, text=text)
    n = raw.shape[0]
    if hosts is not None:
        # (no --max-hosts raises the cap here: a matrix takes at most MAX_HOSTS hosts)
        listed = read_host_names(hosts, max_hosts=MAX_HOSTS if max_hosts is None else max_hosts,
                                 cap_hint="more than a matrix takes" if max_hosts is None else "max_hosts")
        if names is not None and listed != names:
            raise ProbeFileError(f"{hosts}: host names differ from those in {path}")
        if len(listed) != n:
            raise ProbeFileError(f"{hosts}: {len(listed)} host names for a {n}x{n} matrix ({path})")
        names = listed
    if names is None:
        names = default_host_names(n)
        out.notes.append(f"{path}: the matrix names no hosts: they are called {names[0]}..{names[-1]} by row "
                         "(--hosts FILE names them; a launcher file needs real names)")
    for nm in names:
        check_host_name(nm, f"{path}: host name")
    dup = first_duplicate(names)
    if dup is not None:
        note = case_note(names, *dup)
        raise ProbeFileError(f"{path}: duplicate host name {names[dup[1]]!r}" + (f" ({note})" if note else ""))
    warn = kind_warning(np.array(raw, dtype=float), kind, str(path)) if raw.ndim == 2 and raw.shape[0] == raw.shape[1] else None
    if warn:
        out.warnings.append(warn)
    m = prepare_matrix(raw, names, kind=kind, unit=unit, source=str(path), notes=out.notes)
    if kind == "bandwidth":
        _warn_bandwidth_units(m, str(path), unit, out)
    if kind == "latency":
        off = m[~np.eye(n, dtype=bool)]
        off = off[np.isfinite(off)]
        if off.size and np.median(off) > PLAUSIBLE_RTT_US:
            out.warnings.append(f"{path}: the median RTT is {np.median(off) / 1e6:.3g} s with --unit {unit}: "
                                "no network takes that long; check --unit (ms, us or s?)")
        elif off.size and 0 < np.median(off) < FASTEST_RTT_US:
            out.warnings.append(f"{path}: the median RTT is {np.median(off):.3g} us with --unit {unit}: "
                                "no network is that fast; check --unit (ms, us or s?)")
    asym = count_asymmetric(m)
    if asym:
        rule = "the larger latency" if kind == "latency" else "the smaller bandwidth"
        out.notes.append(f"{path}: symmetrised {asym} asymmetric pair(s) (kept {rule} of the two directions for "
                         "costs; structure inference reads the faster one)")
    meta = {"method": "matrix", "source": p.name, "kind": kind, "unit": unit}
    if kind == "bandwidth" or bandwidth is not None:
        meta["bandwidth_source"] = MATRIX_BANDWIDTH
    bw = best = None
    if kind == "bandwidth":
        bw = m
        lat = bandwidth_to_distance_us(np.fmin(m, m.T))
        if asym:  # the better direction, for structure inference (ProbeData keeps the min of the two)
            best = bandwidth_to_distance_us(m)
            np.fill_diagonal(best, 0.0)
        meta["distance"] = "inverse bandwidth: microseconds per byte (8e-3 / Gbit/s)"
        if bandwidth is not None:
            raise ProbeFileError("--bandwidth-matrix (bandwidth) adds bandwidth to a latency matrix; the main matrix "
                                 "is bandwidth already")
    else:
        lat = m
        if bandwidth is not None:
            bw = _load_bandwidth(bandwidth, bandwidth_unit, names, out, say["bandwidth_unit"])
    np.fill_diagonal(lat, 0.0)
    try:
        out.probe = ProbeData(hosts=[Host(nm) for nm in names], latency=lat, bandwidth=bw, meta=meta,
                              latency_best=best)
    except ProbeFileError as exc:
        raise ProbeFileError(f"{path}: {exc}") from None
    return out


#: how :func:`load_input`'s errors name its parameters (``_say`` overrides them)
_SAY = {"hosts": "--hosts (hosts)", "bandwidth_unit": "--bandwidth-unit (bandwidth_unit)"}


def _load_bandwidth(path, unit, names, out: Loaded, unit_hint: str = _SAY["bandwidth_unit"]) -> np.ndarray:
    """The ``--bandwidth-matrix`` beside a latency matrix (its notes and warnings go to ``out``);
    ``unit_hint``: what its out-of-range error blames (``wrong {unit_hint}?``)."""
    notes = out.notes
    given = unit is not None
    unit = _norm_unit(unit, "bandwidth", "--bandwidth-unit (bandwidth_unit)")
    _warn_name_unit(str(path), "bandwidth", unit, given, out, "--bandwidth-unit")
    raw, file_names = _read_raw(Path(path), notes)
    if raw.shape[0] != len(names):
        raise ProbeFileError(f"{path}: a {raw.shape[0]} x {raw.shape[0]} bandwidth matrix for {len(names)} hosts")
    if file_names is not None and file_names != list(names):
        raise ProbeFileError(f"{path}: the bandwidth matrix names other hosts (or another order) than the latency matrix")
    warn = kind_warning(raw, "bandwidth", str(path), "give it as the main matrix, not as --bandwidth-matrix,")
    if warn:
        out.warnings.append(warn)
    m = prepare_matrix(raw, names, kind="bandwidth", unit=unit, source=str(path), notes=notes, hint=unit_hint)
    _warn_bandwidth_units(m, str(path), unit, out, "--bandwidth-unit")
    asym = count_asymmetric(m)
    if asym:
        notes.append(f"{path}: symmetrised {asym} asymmetric pair(s) (kept the smaller bandwidth of the two directions)")
    return m


def _name_unit(path: str) -> tuple[str, str, str] | None:
    """``(kind, unit, token)`` when the file's name holds exactly one unit as a word of its own
    (``rtt_ms_median18.csv``, ``mpi_send_bandwidth_MBps_192.csv``, ``rtt_s_frame001.csv``), else None."""
    found = set()
    # 'tput_Mbit_s.csv': a unit per second written with '_' for '/' is one word ('s' alone read as seconds)
    stem = re.sub(r"(?<![A-Za-z])([GMKk]?i?(?:bit|B))_s(?![A-Za-z])", r"\1/s", Path(path).stem)
    for tok in re.split(r"[^A-Za-z\u00b5\u03bc/]+", stem):
        if tok in LATENCY_UNITS or tok in _LATENCY_ALIASES:
            found.add(("latency", _LATENCY_ALIASES.get(tok, tok), tok))
        elif tok in BANDWIDTH_UNITS and tok not in ("bps",):
            found.add(("bandwidth", tok, tok.replace("/", "_")))
        elif tok in _BANDWIDTH_ALIASES and tok not in ("bps",):
            found.add(("bandwidth", _BANDWIDTH_ALIASES[tok], tok))
    units = {(k, u) for k, u, _ in found}
    return next(iter(found)) if len(units) == 1 else None


def _warn_name_unit(path: str, kind: str, unit: str, given: bool, out: Loaded, flag: str = "--unit") -> None:
    """A warning in ``out`` when the file's name says another unit (or kind) than it was read with:
    the ARCHER matrix ``..._MBps_192.csv`` read with the default Gbit/s is plausible by its values
    (a few hundred "Gbit/s"), so only its name can tell."""
    said = _name_unit(path)
    if said is None and not given:
        out.notes.append(f"{path}: read in {unit}, the default unit (nothing in the file's name says one; "
                         f"pass {flag} if it holds another)")
    if said is None or (said[0], said[1]) == (kind, unit):
        return
    how = f"{flag} {unit}" if given else f"the default unit, {unit}"
    if said[0] != kind:
        out.warnings.append(f"{path}: the file name says {said[2]}, a {said[0]} unit, but it was read as a {kind} "
                            f"matrix; pass --kind {said[0]} {flag} {said[1]} if that is what it holds")
    else:
        out.warnings.append(f"{path}: the file name says {said[2]}, but it was read with {how}; "
                            f"pass {flag} {said[1]} if that is what it holds")


def _warn_bandwidth_units(m: np.ndarray, path: str, unit: str, out: Loaded, flag: str = "--unit") -> None:
    """A warning in ``out`` when the median bandwidth of ``m`` (Gbit/s) is implausible for ``unit``."""
    off = m[~np.eye(len(m), dtype=bool)]
    off = off[np.isfinite(off) & (off > 0)]
    if not off.size:
        return
    med = float(np.median(off))
    lo, hi = PLAUSIBLE_BANDWIDTH_GBPS
    raw = med / BANDWIDTH_UNITS.get(unit, 1.0)  # the median as the file holds it
    fits = [u for u in ("Gbit/s", "Mbit/s", "Kbit/s") if u != unit and lo <= raw * BANDWIDTH_UNITS[u] <= hi]
    guess = f" ({fits[0]} read as {unit}?)" if fits else ""
    if med > hi:
        out.warnings.append(f"{path}: the median bandwidth is {med:.3g} Gbit/s with {flag} {unit}: no NIC is that "
                            f"fast; check the unit{guess}")
    elif med < lo:
        out.warnings.append(f"{path}: the median bandwidth is {med * 1e6:.3g} kbit/s with {flag} {unit}: check the "
                            f"unit{guess}")
