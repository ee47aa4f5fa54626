"""Host lists: the hosts to probe or to launch on, in the formats people have.

One reader for every format, chosen per line (``fmt="auto"``, the default)
or forced for the whole file:

``plain``    ``[user@]host[:port]`` -- one SSH target per line.
``openmpi``  ``host slots=N [max_slots=M]`` (OpenMPI hostfile).
``mpich``    ``host:N`` (MPICH machinefile; ``N`` is the slot count).
``slurm``    compressed node lists such as ``node[01-16,20]`` or
             ``rack[1-2]-gpu[1-4]``, several per line separated by commas
             (what ``scontrol show hostnames`` expands).

Everywhere: ``#`` starts a comment, blank lines are ignored, IPv6 addresses
are written in brackets when a port or slot count follows (``[fe80::1]:2222``,
``user@[::1]``), and a bare IPv6 address (``::1``) is accepted alone.

**The ``host:N`` rule.**  ``host:N`` is an MPICH slot count in ``mpich``
format and an SSH port in ``plain`` format.  In ``auto`` format it is an SSH
port when the entry has a ``user@`` part or a bracketed IPv6 host (MPICH has
neither), or when ``N`` is 22 or at least 1024 (no one means 22 or 1024+
slots, everyone means SSH ports by them); otherwise (``node7:8``) it is an
MPICH slot count.  Pass ``fmt="plain"`` / ``fmt="mpich"`` (CLI:
``--hosts-format``) to force one meaning.

Duplicate hosts (same name and port) and malformed lines raise
:class:`~plink.errors.PlinkError` naming the file and line number.
"""

from __future__ import annotations

import itertools
import os
import re
import unicodedata
from dataclasses import dataclass

from plink.data.fileio import read_text, text_lines
from plink.errors import OptionError, PlinkError

FORMATS = ("auto", "plain", "openmpi", "mpich", "slurm")

#: Hostnames (RFC 1123 labels, plus ``_`` which some clouds use) and IPv4.
_NAME_RE = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$")
_IPV6_RE = re.compile(r"^[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?$")
_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_SLURM_RANGE_RE = re.compile(r"^([0-9]{1,9})(?:-([0-9]{1,9}))?$")
#: Default cap on the hosts one host list may expand to (``max_hosts``, CLI ``--max-hosts``).
MAX_HOSTS = 4096


@dataclass(frozen=True)
class HostEntry:
    """One host of a host list.

    ``name`` is the host as written (a DNS name, an ``~/.ssh/config`` alias,
    an IPv4 address or an IPv6 address without brackets); ``user``, ``port``
    and ``slots`` are ``None`` when the line does not give them.
    """

    name: str
    user: str | None = None
    port: int | None = None
    slots: int | None = None

    @property
    def is_ipv6(self) -> bool:
        return ":" in self.name

    @property
    def host_part(self) -> str:
        """``name``, in brackets when it is an IPv6 address."""
        return f"[{self.name}]" if self.is_ipv6 else self.name

    @property
    def ssh_target(self) -> str:
        """``[user@]host[:port]`` (what ``plain`` format writes)."""
        s = self.host_part
        if self.user:
            s = f"{self.user}@{s}"
        if self.port is not None:
            s = f"{s}:{self.port}"
        return s

    def to_line(self, fmt: str = "plain") -> str:
        """This entry as one line of a host list in format ``fmt``.

        ``plain`` keeps user and port (slots need another format);
        ``openmpi`` writes ``host slots=N``; ``mpich`` writes ``host:N``.
        Reading the line back with the same ``fmt`` gives the entry back
        (minus the fields that format cannot hold).
        """
        if fmt == "plain":
            return self.ssh_target
        if fmt == "openmpi":
            return self.host_part + (f" slots={self.slots}" if self.slots is not None else "")
        if fmt == "mpich":
            return self.host_part + (f":{self.slots}" if self.slots is not None else "")
        raise OptionError(f"unknown host list format {fmt!r} (use plain, openmpi or mpich)")


def format_hostlist(entries, fmt: str = "plain") -> str:
    """Render ``entries`` as a host list text in ``fmt`` (one per line)."""
    return "".join(e.to_line(fmt) + "\n" for e in entries)


# ---------------------------------------------------------------------------
# parsing


class _LineError(Exception):
    pass


class _OverCap(_LineError):
    """More hosts than the cap: ``parse_hostlist`` adds how to raise it (``cap_hint``)."""


#: how the ``plink probe`` and ``plink watch`` commands raise the cap of a host list
RAISE_CAP = "raise the cap with --max-hosts"


def _check_name(name: str) -> str:
    if not name:
        raise _LineError("empty host name")
    if ":" in name:
        if not _IPV6_RE.match(name):
            raise _LineError(f"invalid IPv6 address {name!r}")
        return name
    if not _NAME_RE.match(name) or ".." in name:
        raise _LineError(f"invalid host name {name!r}")
    return name


def host_name_problem(name: str) -> str | None:
    """Why ``name`` is not a host name or an IP address this reader (and a launcher) takes, or None.

    What a host list, hostfile or ``plink order`` plain file can hold: a name such as
    ``aws:sa-east-1`` or ``node[1-3]`` would read back as other hosts (a port, a Slurm range), and
    one made of digits (and dots or a hex prefix) that is no IPv4 address written in full, such as
    ``100`` or ``10.1``, is one to resolvers (``inet_aton``: 0.0.0.100, 10.0.0.1); one of digits and
    dots that is no address at all (``999.1.1.1``) is refused too."""
    import socket

    name = str(name)
    try:
        _check_name(name)
    except _LineError as exc:
        return str(exc)
    if "." in name or name[:1].isdigit():
        import ipaddress

        try:
            ipaddress.IPv4Address(name)
        except ValueError:
            try:
                packed = socket.inet_aton(name)
            except OSError:
                pass
            else:
                return f"host name {name!r} is the IPv4 address {socket.inet_ntoa(packed)} to resolvers"
            if all(part.isascii() and part.isdigit() for part in name.split(".")):
                # 999.1.1.1, 1.2.3.4.5: digits and dots only, no IPv4 address and no host name either
                return f"host name {name!r} is no IPv4 address (each of 4 parts 0..255) and no host name"
    if ":" in name:  # (the pattern takes any hex digits and colons: c:2 is no address)
        import ipaddress

        try:
            ipaddress.IPv6Address(name.partition("%")[0])
        except ValueError:
            return f"invalid IPv6 address {name!r}"
    return None


def check_entry_names(entries, source: str) -> None:
    """Raise :class:`PlinkError` naming the first entry whose name :func:`host_name_problem` refuses
    (``127.1``, ``999.1.1.1``): the probe would measure it and the launcher files refuse it after, so
    it is refused before the probe. O(N)."""
    for e in entries:
        problem = host_name_problem(e.name)
        if problem is not None:
            raise PlinkError(f"{source}: {problem}: write the host's full IPv4 address or its name")


def _int(text: str, what: str, lo: int, hi: int) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise _LineError(f"{what} {text[:20]!r} is not a number")
    value = int(text)
    if not lo <= value <= hi:
        raise _LineError(f"{what} {value} is out of range {lo}..{hi}")
    return value


def _split_host_port(token: str) -> tuple[str, str | None, bool]:
    """``host``, the text after ``:`` (or None), and whether it was bracketed."""
    if token.startswith("["):
        end = token.find("]")
        if end < 0:
            raise _LineError(f"unclosed '[' in {token!r}")
        host, rest = token[1:end], token[end + 1:]
        if rest == "":
            return host, None, True
        if not rest.startswith(":") or len(rest) == 1:
            raise _LineError(f"unexpected {rest!r} after ']' in {token!r}")
        return host, rest[1:], True
    if token.count(":") > 1:  # a bare IPv6 address
        return token, None, False
    if ":" in token:
        host, num = token.split(":", 1)
        if not num:
            raise _LineError(f"missing number after ':' in {token!r}")
        return host, num, False
    return token, None, False


def _expand_slurm(token: str, budget: int, cap: int) -> list[str]:
    """Expand ``a[01-03,7]b[1-2]`` into the cartesian product of names.

    The number of names is computed from the ranges first; more than ``budget`` is an
    error before any name is built (``cap``: the whole list's cap, for the message).
    """
    parts: list[list[str] | tuple[str, list[tuple[int, int, int]]]] = []
    pos = 0
    total = 1
    while pos < len(token):
        lb = token.find("[", pos)
        if lb < 0:
            if "]" in token[pos:]:
                raise _LineError(f"unbalanced ']' in {token!r}")
            parts.append([token[pos:]])
            break
        if token.find("]", pos, lb) >= 0:
            raise _LineError(f"unbalanced ']' in {token!r}")
        parts.append([token[pos:lb]])
        rb = token.find("]", lb)
        if rb < 0:
            raise _LineError(f"unclosed '[' in {token!r}")
        body = token[lb + 1:rb]
        if "[" in body:
            raise _LineError(f"nested '[' in {token!r}")
        ranges: list[tuple[int, int, int]] = []
        count = 0
        for item in body.split(","):
            m = _SLURM_RANGE_RE.match(item.strip())
            if not m:
                raise _LineError(f"bad range {item[:20]!r} in {token[:60]!r} (want N or N-M)")
            lo_s, hi_s = m.group(1), m.group(2)
            lo = int(lo_s)
            hi = int(hi_s) if hi_s is not None else lo
            if hi < lo:
                raise _LineError(f"range {item!r} in {token!r} runs backwards")
            # zero-padded to the first number's width (n[08-10]); a no-op without leading zeros
            ranges.append((lo, hi, len(lo_s)))
            count += hi - lo + 1
            if count > budget:
                raise _OverCap(f"{token[:60]!r} takes the host list over {cap} hosts")
        total *= count
        if total > budget:
            raise _OverCap(f"{token[:60]!r} takes the host list over {cap} hosts")
        parts.append([str(v).zfill(w) for lo, hi, w in ranges for v in range(lo, hi + 1)])
        pos = rb + 1
    return ["".join(combo) for combo in itertools.product(*parts)]


def _split_top_commas(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [t.strip() for t in out]


def _is_slurm_token(token: str) -> bool:
    """Brackets after the start of a name are a Slurm range (``node[1-4]``);
    a leading bracket is an IPv6 address (``[::1]:22``, ``user@[::1]``)."""
    host = token.rpartition("@")[2]
    return not host.startswith("[") and "[" in host


def _parse_line(line: str, fmt: str, budget: int, cap: int) -> list[HostEntry]:
    words = line.split()
    first, attrs = words[0], words[1:]

    slots: int | None = None
    for attr in attrs:
        key, eq, value = attr.partition("=")
        key = key.replace("-", "_")
        if not eq:
            raise _LineError(f"unexpected {attr!r} (want 'host slots=N')")
        if fmt not in ("auto", "openmpi"):
            raise _LineError(f"{attr!r} is OpenMPI hostfile syntax, not {fmt} format")
        if key == "slots":
            slots = _int(value, "slots", 1, 1_000_000)
        elif key == "max_slots":
            _int(value, "max_slots", 1, 1_000_000)
        else:
            raise _LineError(f"unknown attribute {key!r} (know slots=, max_slots=)")

    if fmt == "slurm" or (fmt == "auto" and ("," in first or _is_slurm_token(first))):
        names: list[str] = []
        for token in _split_top_commas(first):
            if not token:
                raise _LineError(f"empty name in {first!r}")
            expanded = _expand_slurm(token, budget - len(names), cap) if "[" in token and not token.startswith("[") else [token]
            for n in expanded:
                host, num, bracketed = _split_host_port(n)
                if num is not None:
                    raise _LineError(f"{n!r}: ':' is not allowed in a node list")
                names.append(_check_name(host))
                if len(names) > budget:
                    raise _OverCap(f"more than {cap} hosts")
        return [HostEntry(n, slots=slots) for n in names]

    user = None
    token = first
    if "@" in token:
        user, _, token = token.rpartition("@")
        if not _USER_RE.match(user):
            raise _LineError(f"invalid user name {user!r}")
        if fmt in ("mpich", "openmpi"):
            raise _LineError(f"'user@' is not allowed in {fmt} format")
    host, num, bracketed = _split_host_port(token)
    host = _check_name(host)
    port = None
    if num is not None:
        if fmt == "openmpi":
            raise _LineError("':' after the host is not OpenMPI syntax (use 'host slots=N')")
        if fmt == "mpich":
            as_port = False
        elif fmt == "plain":
            as_port = True
        else:
            value = _int(num, "port or slot count", 1, 65535)
            as_port = user is not None or bracketed or value == 22 or value >= 1024
        if as_port:
            port = _int(num, "port", 1, 65535)
        else:
            if slots is not None:
                raise _LineError("both 'host:N' and 'slots=' given")
            slots = _int(num, "slot count", 1, 1_000_000)
    return [HostEntry(host, user=user, port=port, slots=slots)]


def parse_hostlist(text: str, source: str = "<hosts>", fmt: str = "auto",
                   max_hosts: int | None = None, cap_hint: str = RAISE_CAP) -> list[HostEntry]:
    """Parse a host list (see the module docstring for formats and rules).

    At most ``max_hosts`` hosts (default :data:`MAX_HOSTS`); Slurm ranges are counted
    before they are expanded, so a short line cannot allocate millions of names.  ``cap_hint``: what
    the error for more hosts says in brackets (how the caller's user raises the cap, or why not).

    Returns the entries in file order; raises :class:`PlinkError` naming
    ``source`` and the line for malformed lines, duplicate hosts and an empty
    list.  O(total expanded hosts).
    """
    if fmt not in FORMATS:
        raise OptionError(f"unknown host list format {fmt!r} (use one of {', '.join(FORMATS)})")
    cap = MAX_HOSTS if max_hosts is None else int(max_hosts)
    entries: list[HostEntry] = []
    seen: dict[tuple[str, int | None], int] = {}
    for lineno, raw in enumerate(text_lines(text), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            odd = next((c for c in line if c != "\t" and (unicodedata.category(c) in ("Cc", "Zl", "Zp"))), None)
            if odd is not None:  # (split at whitespace, a form feed read as two names: 'unexpected ...')
                raise _LineError(f"control character {odd!r} in the line: a host list has one entry per line")
            parsed = _parse_line(line, fmt, cap - len(entries), cap)
        except _LineError as exc:
            shown = raw.strip()
            shown = shown if len(shown) <= 80 else shown[:60] + f"... ({len(shown)} characters)"
            msg = f"{source}:{lineno}: {exc}" + (f" ({cap_hint})" if isinstance(exc, _OverCap) else "")
            # then the line, unless the message quotes all of it already
            raise PlinkError(msg if repr(shown) in msg else f"{msg}: {shown!r}") from None
        if len(entries) + len(parsed) > cap:
            raise PlinkError(f"{source}:{lineno}: more than {cap} hosts ({cap_hint})")
        for e in parsed:
            key = (e.name.lower(), e.port)
            if key in seen:
                raise PlinkError(
                    f"{source}:{lineno}: duplicate host {e.host_part}"
                    + (f":{e.port}" if e.port is not None else "")
                    + f" (first on line {seen[key]})"
                )
            seen[key] = lineno
            entries.append(e)
    if not entries:
        raise PlinkError(f"{source}: no hosts in host list")
    return entries


def read_hostlist(path: str | os.PathLike, fmt: str = "auto", max_hosts: int | None = None) -> list[HostEntry]:
    """Read and parse the host list file at ``path``."""
    text = read_text(path, what="host list")
    return parse_hostlist(text, source=str(path), fmt=fmt, max_hosts=max_hosts)
