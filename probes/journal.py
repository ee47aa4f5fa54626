"""The probe's append-only journal: every finished measurement, one line each.

While a probe runs, ``plink probe -o FILE`` appends what it measured to
``FILE.journal`` (JSON lines) instead of rewriting the whole matrix after
every round (which cost O(N^2) per round: 0.31 s per write, 3.7 MB, at 256
hosts).  The probe file itself is written once at the end and the journal is
then removed; after a crash the journal keeps every measured pair and
``--resume`` replays it.  Appending is O(pairs of the round) per round.

Lines::

    {"journal": "plink-probe", "version": 1, "hosts": [...], "method": "udp"}   # header
    ["l", src, dst, sent, [rtt_us, ...]]      # latency samples src -> dst
    ["b", src, dst, gbit_per_s]               # bandwidth src -> dst
    ["a", host, "address"]                    # a host's address

A torn last line (killed mid-write) is ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from plink.errors import ProbeFileError

HEADER = "plink-probe"


def journal_path(checkpoint: str | os.PathLike) -> Path:
    return Path(str(checkpoint) + ".journal")


def journal_holds(path: str | os.PathLike) -> str:
    """What the file at a journal's ``path`` holds: ``"nothing"`` (empty, or a plink journal's header
    and host addresses alone), ``"measurements"`` (a latency or bandwidth line, torn ones too) or
    ``"other"`` (no plink journal: someone else's file, or one that cannot be read). O(size)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
            if not first.strip():
                return "nothing" if not fh.read(1) else "other"
            try:
                head = json.loads(first)
            except ValueError:
                return "other"
            if not (isinstance(head, dict) and head.get("journal") == HEADER):
                return "other"
            return "measurements" if any(line.startswith((b'["l"', b'["b"')) for line in fh) else "nothing"
    except OSError:
        return "other"


class Journal:
    """Append-side of a journal (buffered; ``flush`` pushes it to the OS,
    which keeps it across a killed controller)."""

    def __init__(self, path: str | os.PathLike, names: list[str], method: str):
        self.path = Path(path)
        new = not self.path.exists() or self.path.stat().st_size == 0
        self.fh = open(self.path, "a", encoding="utf-8")
        if new:
            self._line({"journal": HEADER, "version": 1, "hosts": names, "method": method})
            self.flush()

    def _line(self, obj) -> None:
        self.fh.write(json.dumps(obj, separators=(",", ":")) + "\n")

    def latency(self, src: int, dst: int, sent: int, rtts) -> None:
        self._line(["l", src, dst, sent, list(rtts)])

    def bandwidth(self, src: int, dst: int, gbps: float) -> None:
        self._line(["b", src, dst, round(float(gbps), 6)])

    def address(self, host: int, addr: str) -> None:
        self._line(["a", host, addr])

    def flush(self) -> None:
        if not self.fh.closed:
            self.fh.flush()

    def close(self, remove: bool = False) -> None:
        try:
            self.fh.close()
        finally:
            if remove:
                try:
                    self.path.unlink()
                except FileNotFoundError:
                    pass


def read_journal(path: str | os.PathLike, names: list[str], method: str):
    """Replay a journal: ``(latency, bandwidth, addresses)`` with
    ``latency[(src, dst)] = (sent, [rtts])`` summed over its lines,
    ``bandwidth[(src, dst)] = gbps`` (last wins) and ``addresses[i]``.
    Raises :class:`ProbeFileError` if it belongs to another host list or
    method.  O(lines)."""
    lat: dict = {}
    bw: dict = {}
    addrs: dict = {}
    path = Path(path)
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    if not lines or not lines[0].strip():
        return lat, bw, addrs
    try:
        head = json.loads(lines[0])
    except ValueError:
        raise ProbeFileError(f"{path}: not a plink probe journal") from None
    if not isinstance(head, dict) or head.get("journal") != HEADER:
        raise ProbeFileError(f"{path}: not a plink probe journal")
    if head.get("hosts") != names:
        raise ProbeFileError(f"cannot resume from {path}: its hosts differ from the host list")
    if head.get("method") not in (None, method):
        raise ProbeFileError(f"cannot resume from {path}: it was probed with --method {head.get('method')}")
    n = len(names)
    for line in lines[1:]:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            kind = row[0]
            if kind == "l":
                _, s, d, sent, rtts = row
                if 0 <= s < n and 0 <= d < n:
                    old = lat.get((s, d), (0, []))
                    lat[(s, d)] = (old[0] + int(sent), old[1] + [float(x) for x in rtts])
            elif kind == "b":
                _, s, d, g = row
                if 0 <= s < n and 0 <= d < n:
                    bw[(s, d)] = float(g)
            elif kind == "a":
                addrs[int(row[1])] = str(row[2])
        except (ValueError, TypeError, IndexError):
            continue  # a torn last line
    return lat, bw, addrs
