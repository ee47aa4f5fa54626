"""This node's rank in an order file: ``plink node-rank``.

Every node of a torchrun static rendezvous runs the same command line::

    torchrun --node-rank "$(plink node-rank order.json)" --master-addr ... train.py

and needs its own position in the order.  A node is matched by, in turn:

1. its name: the host name, the FQDN, or the short host name (or ``--host``);
2. an address: the order file's ``address`` of a host (JSON order files),
   or the host name resolved through the system resolver, equal to one of
   this machine's IP addresses.

A node that matches no entry, or several, is an error naming what was tried.
Matching is O(N) plus one resolver call per unmatched plain host name.
"""

from __future__ import annotations

import ipaddress
import socket
import subprocess
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from plink.errors import OptionError, PlinkError
from plink.data.probefile import Host


@dataclass(frozen=True)
class Identity:
    """What this machine is called and where it can be reached."""

    names: tuple[str, ...]
    addresses: tuple[str, ...]


def _norm_addr(a: str) -> str:
    try:
        return str(ipaddress.ip_address(a.split("%", 1)[0]))
    except ValueError:
        return a


def local_addresses() -> list[str]:
    """IP addresses of this machine (this network namespace), loopback excluded."""
    addrs: list[str] = []
    try:
        out = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            parts = line.split()
            for fam in ("inet", "inet6"):
                if fam in parts:
                    addrs.append(parts[parts.index(fam) + 1].split("/", 1)[0])
    except (OSError, subprocess.SubprocessError):
        pass
    if not addrs:  # no iproute2: ask the resolver about our own name
        try:
            for info in socket.getaddrinfo(socket.gethostname(), None):
                addrs.append(str(info[4][0]))
        except OSError:
            pass
    out_addrs = []
    for a in addrs:
        a = _norm_addr(a)
        try:
            if ipaddress.ip_address(a).is_loopback:
                continue
        except ValueError:
            continue
        if a not in out_addrs:
            out_addrs.append(a)
    return out_addrs


def local_identity() -> Identity:
    """This machine's names (hostname, FQDN, short name) and IP addresses."""
    names: list[str] = []
    hn = socket.gethostname()
    for n in (hn, socket.getfqdn(), hn.split(".", 1)[0]):
        if n and n not in names and not n.startswith("localhost"):
            names.append(n)
    return Identity(tuple(names), tuple(local_addresses()))


def _resolve(name: str) -> set[str]:
    try:
        return {_norm_addr(str(i[4][0])) for i in socket.getaddrinfo(name, None)}
    except (OSError, UnicodeError):
        return set()


def node_rank(
    hosts: Sequence[Host],
    host: str | None = None,
    *,
    identity: Identity | None = None,
    resolve: Callable[[str], Iterable[str]] = _resolve,
    source: str = "the order",
) -> int:
    """Position of this node (or of ``host``) in ``hosts`` (rank order).

    ``host`` may be a name or an IP address; without it the local
    :class:`Identity` is used.  Raises :class:`PlinkError` when no entry or
    more than one entry matches.
    """
    if host is not None:
        host = host.strip()
        if not host:
            raise OptionError("--host is empty")
        if any(0xDC80 <= ord(c) <= 0xDCFF for c in host):  # bytes that are not UTF-8 ($'vm\xff')
            raise OptionError(f"--host {host!r} is not a host name: it holds bytes that are not UTF-8")
        if not host.isprintable() or any(c.isspace() for c in host):  # (it was echoed raw into the error)
            raise OptionError(f"--host {host!r} is not a host name: it holds blanks or control characters")
        try:
            ident = Identity((), (_norm_addr(str(ipaddress.ip_address(host))),))
        except ValueError:
            ident = Identity((host,), ())
    else:
        ident = identity if identity is not None else local_identity()
    names = {n.lower() for n in ident.names}
    names |= {n.split(".", 1)[0] for n in names if not _is_ip(n)}
    addrs = {_norm_addr(a) for a in ident.addresses}

    # 1. by name (exact, then short name)
    hits = [r for r, h in enumerate(hosts) if h.name.lower() in names]
    if not hits:
        hits = [r for r, h in enumerate(hosts) if not _is_ip(h.name) and h.name.lower().split(".", 1)[0] in names]
    # 2. by address: recorded address, a name that is an address, or a resolved name
    if not hits and addrs:
        for r, h in enumerate(hosts):
            known = {_norm_addr(h.address)} if h.address else set()
            if _is_ip(h.name):
                known.add(_norm_addr(h.name))
            if known & addrs:
                hits.append(r)
        if not hits:
            for r, h in enumerate(hosts):
                if not _is_ip(h.name) and {_norm_addr(a) for a in resolve(h.name)} & addrs:
                    hits.append(r)
    if len(hits) == 1:
        return hits[0]
    tried = ", ".join(list(ident.names) + list(ident.addresses)) or "nothing"
    if not hits:
        listed = ", ".join(h.name for h in hosts[:5]) + (", ..." if len(hosts) > 5 else "")
        raise PlinkError(
            f"this node ({tried}) is not in {source} (hosts: {listed}); pass --host NAME as it appears there"
        )
    which = ", ".join(f"{hosts[r].name} (rank {r})" for r in hits[:4])
    raise PlinkError(f"this node ({tried}) matches several hosts in {source}: {which}; pass --host NAME")


def _is_ip(s: str) -> bool:
    try:
        ipaddress.ip_address(s.split("%", 1)[0])
        return True
    except ValueError:
        return False
