"""The order file: a rank order, as plain text or versioned JSON.

Plain: one host name per line, rank 0 first (``#`` comments allowed).

JSON::

    {
      "format": "plink-order", "version": 1,
      "algo": "ring", "size_bytes": 26214400,
      "hosts": [{"rank": 0, "name": "vm017", "address": "...", "ssh": "..."}, ...],
      "report": {... OrderResult.to_dict() ...}
    }

Launcher-specific files (hostfiles, rankfiles, torchrun maps) are written by
the emitters from the same data.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from plink.data.fileio import text_lines
from plink.errors import ProbeFileError
from plink.order import OrderResult
from plink.data.probefile import Host, ProbeData

FORMAT = "plink-order"
#: a plain order file may note a host's address in its line's comment (the torchrun map does)
_ADDRESS_NOTE = re.compile(r"\baddress=([0-9A-Fa-f.:%]+)")
VERSION = 1


def order_document(result: OrderResult, probe: ProbeData) -> dict:
    hosts = []
    for rank, i in enumerate(result.order):
        h = probe.hosts[i]
        entry = {"rank": rank, **h.to_dict()}
        hosts.append(entry)
    return {
        "format": FORMAT,
        "version": VERSION,
        "algo": result.algo,
        "size_bytes": result.size,
        "hosts": hosts,
        "report": result.to_dict(),
    }


def render_plain(result: OrderResult) -> str:
    from plink.launch.emitters import check_launcher_names

    check_launcher_names(result.hosts, "a plain order file")
    return "".join(f"{name}\n" for name in result.hosts)


def render(result: OrderResult, probe: ProbeData, fmt: str = "plain") -> str:
    if fmt == "plain":
        return render_plain(result)
    if fmt == "json":
        return json.dumps(order_document(result, probe), indent=1, allow_nan=False) + "\n"
    raise ProbeFileError(f"unknown order format {fmt!r} (choose plain or json)")


def read_order(path: str | os.PathLike) -> list[str]:
    """Host names in rank order from a plain or JSON order file."""
    return [h.name for h in read_order_hosts(path)]


def read_order_text(path: str | os.PathLike) -> str:
    """The text of the order file ``path`` (a byte-order mark is no part of the first name), or a
    one-line :class:`ProbeFileError`."""
    from plink.data.fileio import read_text

    if Path(path).is_dir():
        raise ProbeFileError(f"{path}: is a directory, not an order file")
    return read_text(path, ProbeFileError)


def _mpich_slots(word: str) -> int | None:
    """The slot count of an MPICH / Intel MPI machinefile line's ``node7:8`` (one colon: no IPv6 address,
    whose last group may be digits), else None."""
    name, colon, count = word.partition(":")
    return int(count) if colon and name and ":" not in count and count.isascii() and count.isdigit() else None


def host_slot_fields(line: str) -> list[str] | None:
    """The ``host:N`` entries of a line that holds only such entries apart by commas (MPICH's ``node7:8``,
    Horovod's ``-H a:2,b:2``, also typed with a space after a comma or a comma at the end), else None."""
    line = line.strip().rstrip(",")
    fields = [f.strip() for f in line.split(",")] if line else []
    return fields if fields and all(_mpich_slots(f) is not None for f in fields) else None


def read_order_hosts(path: str | os.PathLike, text: str | None = None) -> list[Host]:
    """Hosts in rank order from a plain or JSON order file.

    A JSON file keeps each host's ``address`` and ``ssh``; a plain file
    (one host per line; launcher files with ``host slots=N`` lines work too)
    gives names, and an address where the line's comment notes
    ``address=IP`` (as the torchrun map does).  ``text``: the file's text
    when already read (e.g. from stdin), ``path`` then only names it.
    """
    p = Path(path)
    text = (read_order_text(path) if text is None else text).removeprefix("\ufeff")
    hosts: list[Host] = []
    if p.suffix.lower() == ".json" and not text.lstrip().startswith("{"):
        raise ProbeFileError(f"{path}: not a JSON order file (it does not start with '{{')")
    if text.lstrip().startswith("{"):
        from plink.data.fileio import loads_json

        doc = loads_json(text, str(path), ProbeFileError)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ProbeFileError(f"{path}: not a plink order file")
        if not isinstance(doc.get("version"), int) or doc["version"] > VERSION:
            raise ProbeFileError(f"{path}: unsupported order file version {doc.get('version')!r}")
        try:
            ranks = [h["rank"] for h in doc["hosts"]]
            if not all(type(r) is int for r in ranks):
                raise TypeError
            if sorted(ranks) != list(range(len(ranks))):
                twice = sorted({r for r in ranks if ranks.count(r) > 1})
                raise ProbeFileError(f"{path}: the ranks must be 0..{len(ranks) - 1}, each once "
                                     + (f"(rank {twice[0]} appears twice)" if twice else
                                        f"(rank {min(set(range(len(ranks))) - set(ranks))} is missing)"))
            entries = sorted(doc["hosts"], key=lambda h: h["rank"])
            for h in entries:
                addr, ssh = h.get("address"), h.get("ssh")
                if not isinstance(h["name"], str):
                    raise TypeError
                hosts.append(Host(h["name"], None if addr is None else str(addr), None if ssh is None else str(ssh)))
        except (KeyError, TypeError, AttributeError):
            raise ProbeFileError(f"{path}: every host needs a 'rank' (a whole number) and a 'name'") from None
    else:
        for lineno, raw in enumerate(text_lines(text), 1):
            line, _, comment = raw.partition("#")
            line = line.strip()
            if line:
                words = line.split()
                kind = ("an Open MPI rankfile" if re.match(r"rank\s+\d+\s*=", line) else
                        "an environment file" if re.match(r"export\s+\w+=", line) else None)
                if kind is not None:  # (a one-host file read 'rank' or 'export' as the host)
                    raise ProbeFileError(f"{path}:{lineno}: {line[:40]!r} is a line of {kind}, not an order file "
                                         "(give the order file 'plink order' wrote, or a torchrun map)")
                fields = host_slot_fields(line)
                if fields is not None and len(fields) > 1:
                    # Horovod's -H host:N,host:N,... (plink emit --format horovod): the hosts in rank order
                    hosts.extend(Host(f.partition(":")[0]) for f in fields)
                    continue
                if "," in words[0]:  # no host name holds a comma: a CSV (a matrix, or hosts on one line)
                    raise ProbeFileError(f"{path}:{lineno}: {line[:40]!r}{'...' if len(line) > 40 else ''} has commas: an order file has one "
                                         f"host name per line (a matrix? 'plink order {path} -o order.json' "
                                         "makes the order file)")
                if any("=" not in w for w in words[1:]):  # only launcher attributes may follow the name
                    raise ProbeFileError(f"{path}:{lineno}: {line[:80]!r} is not one host name (after the name "
                                         "only key=value launcher attributes such as slots=2 may follow)")
                m = _ADDRESS_NOTE.search(comment)
                name = words[0]
                if len(words) == 1 and _mpich_slots(name) is not None:  # MPICH's host:N
                    name = name.partition(":")[0]
                hosts.append(Host(name, m.group(1) if m else None))
    from plink.data.inputs import check_host_name

    from plink.data.hostlist import host_name_problem

    for h in hosts:  # names and addresses go into launcher files: one token each
        check_host_name(h.name, f"{path}: host name")
        for what in ("address", "ssh"):
            if getattr(h, what) is not None:
                check_host_name(getattr(h, what), f"{path}: host {h.name!r}: {what}")
        if h.address is not None and host_name_problem(h.address) is not None:  # (MASTER_ADDR, the map's notes)
            raise ProbeFileError(f"{path}: host {h.name!r}: address {h.address!r} is not an IP address or a host name")
    names = [h.name for h in hosts]
    if not names:
        raise ProbeFileError(f"{path}: no hosts in order file")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ProbeFileError(f"{path}: host {dup!r} appears twice: an order file names each host once (is this "
                             "a launcher file with a line per process? give the order file 'plink order' wrote, "
                             "or a torchrun map)")
    return hosts
