"""An emulated datacenter on one Linux machine: network namespaces, bridges, htb, sshd.

Used by the probing tests, the examples and other helpers' integration
tests.  Needs root, ``ip`` (iproute2 with netns), ``tc`` and, for
``sshd=True``, Debian's ``openssh-server`` and ``ssh-keygen``;
:func:`unavailable_reason` says what is missing (tests skip with it).

Topology (``R`` racks of ``H`` hosts, or unequal racks with ``hosts_per_rack=[5, 3, 4, 4]``;
subnet ``S`` = e.g. ``"10.131"``)::

    root ns --veth-- spine --rt(k)..rt(1)-- tor(r) [bridge br0] --veth-- host
                     (router chain of extra_hops per rack)

* host ``r, h`` is namespace ``{prefix}r{r}h{h}`` with address
  ``S.{r+1}.{h+11}/24`` on ``eth0`` and its own UTS namespace for sshd, so
  ``hostname`` prints its name;
* each rack's ``tor`` namespace bridges its hosts (``S.{r+1}.1`` is the
  rack gateway) and reaches the spine through ``extra_hops`` router
  namespaces (each adds ~0.25 us per packet and direction: cross-rack RTT
  is visibly larger than in-rack RTT without netem, which this kernel lacks);
* the root namespace reaches ``S.0.0/16`` through one veth into the spine;
  no namespace has a default route, nothing leaves the testbed;
* shaping with ``htb`` (there is no netem/fq here): every host link at
  ``host_mbit`` in both directions, every rack uplink (tor <-> first router)
  at ``uplink_mbit`` (one rate, or one per rack; 0: not shaped) in both directions, shared by the rack's hosts, so
  concurrent cross-rack flows share it (oversubscription).  Packets shorter
  than 128 bytes (TCP ACKs, probes) get a small priority class, without which
  traffic in both directions over one uplink collapses in one direction.

Busy hosts (``busy={"pkr0h1": 0.5}`` or ``{index: duty}``): a tenant's bounded
busy loop runs in the host's namespace (``nice`` 0, pinned to one core with
``taskset`` when ``busy_cpu`` is given, busy ``duty`` of every ``busy_period``
seconds, exiting after ``busy_seconds``), so agents, echo replies and
collective workers on that host compete for the CPU as on a shared VM.  The
emulation shares one machine's cores: a busy loop slows every namespace
somewhat, the busy host's processes most when pinned to the same core.

Several clusters on one machine: without ``subnet``/``prefix`` a cluster
picks a free ``/16`` among ``10.100``-``10.199`` (in a random order; free =
no route or address of the root namespace inside it, and no other plink
cluster holding it) and the name prefix ``p{second octet}`` (``p131``).  A
cluster holds an ``flock`` on ``/run/plink-netns/subnet-S.lock`` and
``prefix-P.lock`` while it exists, so two clusters never share a subnet or a
prefix, and a left-over of a killed run (lock free) is recognised as stale.
The root namespace's route to ``S.0.0/16`` is added with ``ip route add``:
if any route inside the subnet exists already the build fails with a clear
error instead of taking it over, and only the veth this cluster made is
deleted on exit.

Measured on the development machine (2 cores): building 2 racks x 4 hosts
with sshd takes a few seconds; see ``examples/probe-netns.py``.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import random
import sys
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"

#: the tenant's busy loop: busy ``duty`` of every ``period`` s until ``deadline`` s have passed
_BUSY_LOOP = (
    "import sys, time\n"
    "duty, period, seconds = map(float, sys.argv[1:4])\n"
    "end = time.monotonic() + seconds\n"
    "while time.monotonic() < end:\n"
    "    t = time.monotonic()\n"
    "    while time.monotonic() - t < duty * period:\n"
    "        pass\n"
    "    time.sleep(max(0.0, (1.0 - duty) * period))\n"
)


def wait_all(procs: Sequence[subprocess.Popen], names: Sequence[str], timeout: float, what: str,
             who: str | None = None, tail: int = 400) -> list[str]:
    """Wait for ``procs`` (one per host, ``names``), all within ``timeout`` s; their stdouts.

    When the time runs out every process is killed and RuntimeError says
    ``"<who> did not finish within <timeout> s"`` (``who`` defaults to
    ``what``); processes that exited non-zero raise ``"<what> failed: <host>:
    exit <code>: <last tail chars of stderr> | ..."``."""
    end = time.monotonic() + timeout
    outs, errors = [], []
    for name, p in zip(names, procs):
        try:
            out, err = p.communicate(timeout=max(1.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise RuntimeError(f"{who or what} did not finish within {timeout:.0f} s") from None
        if p.returncode != 0:
            errors.append(f"{name}: exit {p.returncode}: {err.strip()[-tail:]}")
        outs.append(out)
    if errors:
        raise RuntimeError(f"{what} failed: " + " | ".join(errors))
    return outs


def unavailable_reason(sshd: bool = True) -> str | None:
    """Why a NetnsCluster cannot be built here, or None when it can."""
    if os.name != "posix" or not hasattr(os, "geteuid"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"{tool} (iproute2) is not installed"
    if sshd:
        if not os.path.exists(SSHD):
            return f"{SSHD} (openssh-server) is not installed"
        if shutil.which("ssh-keygen") is None:
            return "ssh-keygen (openssh-client) is not installed"
        if shutil.which("unshare") is None:
            return "unshare (util-linux) is not installed"
    probe = f"plinkcheck{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot create network namespaces: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {r.stderr.strip()}")
    return r


def _ns_list() -> list[str]:
    r = _run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _kill_ns_pids(ns: str) -> None:
    r = _run(["ip", "netns", "pids", ns], check=False)
    for tok in r.stdout.split():
        try:
            os.kill(int(tok), signal.SIGKILL)
        except (ValueError, ProcessLookupError, PermissionError):
            pass


def cleanup_stale(prefix: str) -> list[str]:
    """Remove namespaces (and their processes) and the root veth left by a
    killed run with this ``prefix``.  Returns the namespaces removed.

    Refuses (``RuntimeError``) while a live cluster holds the prefix's lock:
    its namespaces are not stale."""
    lock = _try_lock(f"prefix-{prefix}")
    if lock is None:
        raise RuntimeError(f"netns prefix {prefix!r} is in use by a running cluster; not removing its namespaces")
    try:
        return _cleanup_stale_locked(prefix)
    finally:
        os.close(lock)


def _cleanup_stale_locked(prefix: str) -> list[str]:
    removed = []
    for ns in _ns_list():
        if _is_ours(ns, prefix):
            _kill_ns_pids(ns)
            _run(["ip", "netns", "del", ns], check=False)
            removed.append(ns)
    _run(["ip", "link", "del", f"{prefix}-up0"], check=False)
    return removed


_OUR_NS = re.compile(r"(r\d+h\d+|tor\d+|rt\d+x\d+|spine)")


def _is_ours(ns: str, prefix: str) -> bool:
    """``ns`` is one of the names a cluster with ``prefix`` makes (exactly:
    prefix ``pk`` does not claim ``pkrr0h0`` of prefix ``pkr``)."""
    return ns.startswith(prefix) and _OUR_NS.fullmatch(ns[len(prefix):]) is not None


# -- reserving a subnet and a prefix ------------------------------------------

LOCK_DIR = "/run/plink-netns"
AUTO_SUBNETS = [f"10.{b}" for b in range(100, 200)]


def _try_lock(name: str) -> int | None:
    """A non-blocking exclusive flock on ``LOCK_DIR/name.lock``: the fd, or
    None when another process holds it.  Released when the fd is closed
    (also when the process dies)."""
    os.makedirs(LOCK_DIR, mode=0o755, exist_ok=True)
    fd = os.open(os.path.join(LOCK_DIR, f"{name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _lock_holder(name: str) -> str:
    try:
        with open(os.path.join(LOCK_DIR, f"{name}.lock")) as f:
            pid = f.read().strip()
        return f" (pid {pid})" if pid else ""
    except OSError:
        return ""


def subnet_conflicts(subnet: str) -> list[str]:
    """Routes (any table) and addresses of the root namespace that lie inside
    or cover ``subnet.0.0/16`` more specifically than a /8 (so a default
    route or a 10.0.0.0/8 does not count).  Empty when the subnet is free."""
    net = ipaddress.ip_network(f"{subnet}.0.0/16")
    found = []
    routes = _run(["ip", "-4", "route", "show", "table", "all"], check=False).stdout.splitlines()
    for line in routes:
        tok = line.split()
        if not tok:
            continue
        dst = tok[1] if tok[0] in ("local", "broadcast", "unicast", "blackhole", "unreachable", "prohibit") \
            and len(tok) > 1 else tok[0]
        if dst == "default":
            continue
        try:
            other = ipaddress.ip_network(dst, strict=False)
        except ValueError:
            continue
        if other.prefixlen > 8 and other.overlaps(net):
            found.append(f"route {line.strip()}")
    addrs = _run(["ip", "-4", "-o", "addr", "show"], check=False).stdout.splitlines()
    for line in addrs:
        tok = line.split()
        if "inet" in tok:
            addr = tok[tok.index("inet") + 1]
            if ipaddress.ip_interface(addr).ip in net:
                found.append(f"address {addr} on {tok[1]}")
    return found


def _check_subnet(subnet: str) -> str:
    parts = subnet.split(".")
    if len(parts) != 2 or not all(p.isdigit() and 0 <= int(p) <= 255 for p in parts):
        raise ValueError(f"subnet must be the first two octets of a /16, like '10.131', not {subnet!r}")
    return subnet


@dataclass(frozen=True)
class NetnsHost:
    name: str
    address: str
    netns: str
    rack: int
    index: int


class NetnsCluster:
    """Context manager building the emulated cluster (see module docstring).

    After ``__enter__``: ``hosts`` (``.name``, ``.address``, ``.netns``),
    ``ssh_config``, ``known_hosts``, ``key_path``, ``hostfile`` (paths),
    ``exec``, ``kill_host``, ``revive_host``, ``listening``, ``rack_of``.
    Everything is torn down on exit, also after an exception.

    ``clean_shell=True`` hides root's shell dotfiles from SSH sessions (a
    private mount namespace per sshd), so a login behaves like a fresh VM
    rather than this machine's root (whose ``.bashrc`` may start pyenv and
    cost ~0.3 s of CPU per session on shared cores).

    ``subnet`` (first two octets of a /16) and ``prefix`` (namespace names):
    None (the default) picks free ones for this run (module docstring); given
    ones must be free too, else ``__enter__`` raises ``RuntimeError`` naming
    the route, address or cluster that holds them.  After ``__enter__``
    ``subnet`` and ``prefix`` are the ones in use.
    """

    def __init__(self, racks: int | None = None, hosts_per_rack: int | Sequence[int] = 4, prefix: str | None = None,
                 subnet: str | None = None,
                 host_mbit: float = 400, uplink_mbit: float | Sequence[float] = 400, extra_hops: int = 4,
                 sshd: bool = True,
                 workdir: str | os.PathLike | None = None, clean_shell: bool = False,
                 busy: Mapping[str | int, float] | Sequence[str | int] | None = None, busy_period: float = 0.02,
                 busy_seconds: float = 3600.0, busy_cpu: int | Sequence[int] | None = None,
                 queue_packets: int | None = None):
        if queue_packets is not None and not 1 <= int(queue_packets) <= 100_000:
            raise ValueError("queue_packets must be 1..100000 (None: the device's txqueuelen)")
        #: packets each shaped class may queue (``pfifo limit``); None: the kernel's default, the
        #: device's ``txqueuelen`` (1000 on a veth: ~34 ms at 350 Mbit/s)
        self.queue_packets = None if queue_packets is None else int(queue_packets)
        if isinstance(hosts_per_rack, Sequence) and not isinstance(hosts_per_rack, str):
            sizes = [int(k) for k in hosts_per_rack]
            if racks is not None and racks != len(sizes):
                raise ValueError(f"racks={racks} but hosts_per_rack lists {len(sizes)} racks")
            racks = len(sizes)
        else:
            racks = 2 if racks is None else racks
            sizes = [int(hosts_per_rack)] * racks
        if not 1 <= racks <= 99 or not all(1 <= k <= 200 for k in sizes):
            raise ValueError("racks must be 1..99 and hosts_per_rack 1..200")
        if subnet is not None:
            _check_subnet(subnet)
        if prefix is not None and (not prefix.isalnum() or len(prefix) > 6):
            raise ValueError("prefix must be 1..6 letters/digits")
        self.racks, self.hosts_per_rack = racks, hosts_per_rack
        #: hosts in each rack (a list even when ``hosts_per_rack`` is one number)
        self.rack_sizes = sizes
        self._prefix_arg, self._subnet_arg = prefix, subnet
        self.prefix, self.subnet = prefix, subnet
        self._locks: list[int] = []
        self._uplink_made = False
        rates = list(uplink_mbit) if isinstance(uplink_mbit, Sequence) else [uplink_mbit] * racks
        if len(rates) != racks or not all(float(r) >= 0 for r in rates):
            raise ValueError(f"uplink_mbit must be one rate or one per rack ({racks}), each >= 0 (0: not shaped)")
        self.host_mbit, self.uplink_mbit = host_mbit, uplink_mbit
        #: each rack's uplink rate, Mbit/s
        self.uplink_rates = [float(r) for r in rates]
        self.extra_hops, self.sshd = extra_hops, sshd
        self.clean_shell = clean_shell
        if busy is None:
            busy = {}
        elif not isinstance(busy, Mapping):
            busy = {h: 0.5 for h in busy}
        for h, duty in busy.items():
            if not 0.0 < float(duty) <= 1.0:
                raise ValueError(f"busy duty of {h!r} must be in (0, 1], not {duty!r}")
        if busy_period <= 0 or busy_seconds <= 0:
            raise ValueError("busy_period and busy_seconds must be > 0")
        self.busy = dict(busy)
        self.busy_period, self.busy_seconds, self.busy_cpu = busy_period, busy_seconds, busy_cpu
        self._workdir_arg = workdir
        self.workdir: Path | None = None
        self._own_workdir = False
        self.hosts: list[NetnsHost] = []
        self._namespaces: list[str] = []
        self._sshd: dict[str, subprocess.Popen] = {}
        self._busy: dict[str, subprocess.Popen] = {}
        self.ssh_config = self.known_hosts = self.key_path = self.hostfile = None

    # -- names ------------------------------------------------------------
    def _ns(self, kind: str) -> str:
        return f"{self.prefix}{kind}"

    def host(self, name: str) -> NetnsHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def rack_of(self, name: str) -> int:
        return self.host(name).rack

    # -- build ------------------------------------------------------------
    def __enter__(self) -> "NetnsCluster":
        reason = unavailable_reason(self.sshd)
        if reason:
            raise RuntimeError(reason)
        try:
            self._reserve()
        except BaseException:
            self._release()
            raise
        if self._workdir_arg is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"plink-{self.prefix}-"))
            self._own_workdir = True
        else:
            self.workdir = Path(self._workdir_arg)
            self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._build()
            self.hostfile = str(self.workdir / "hosts.txt")
            Path(self.hostfile).write_text("".join(f"{h.name}\n" for h in self.hosts))
            if self.sshd:
                self._start_sshd()
            self.busy = {(self.hosts[h].name if isinstance(h, int) else self.host(h).name): float(d)
                         for h, d in self.busy.items()}
            for k, (name, duty) in enumerate(list(self.busy.items())):
                cpus = self.busy_cpu
                cpu = cpus[k % len(cpus)] if isinstance(cpus, Sequence) else cpus
                self.start_busy(name, duty, cpu=cpu)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _reserve(self) -> None:
        """Lock a free subnet and prefix (given or picked); clean stale
        namespaces of the prefix (a killed run of the same prefix)."""
        if self._subnet_arg is not None:
            candidates = [self._subnet_arg]
        else:
            candidates = random.Random().sample(AUTO_SUBNETS, len(AUTO_SUBNETS))
        why = []
        for subnet in candidates:
            fd = _try_lock(f"subnet-{subnet}")
            if fd is None:
                why.append(f"{subnet}: used by another plink cluster{_lock_holder(f'subnet-{subnet}')}")
                continue
            conflicts = subnet_conflicts(subnet)
            if conflicts:
                os.close(fd)
                why.append(f"{subnet}.0.0/16: in use here ({'; '.join(conflicts[:3])})")
                continue
            prefix = self._prefix_arg if self._prefix_arg is not None else f"p{subnet.split('.')[1]}"
            pfd = _try_lock(f"prefix-{prefix}")
            if pfd is None:
                os.close(fd)
                why.append(f"prefix {prefix!r}: used by another plink cluster{_lock_holder(f'prefix-{prefix}')}")
                if self._prefix_arg is not None:
                    break
                continue
            self._locks = [fd, pfd]
            self.subnet, self.prefix = subnet, prefix
            _cleanup_stale_locked(prefix)
            return
        raise RuntimeError("no free subnet for the netns cluster: " + ("; ".join(why[:5]) or "none to try")
                           + ("" if len(why) <= 5 else f"; ... ({len(why)} tried)"))

    def _release(self) -> None:
        for fd in self._locks:
            try:
                os.close(fd)
            except OSError:
                pass
        self._locks = []

    def _add_ns(self, ns: str) -> None:
        _run(["ip", "netns", "add", ns])
        self._namespaces.append(ns)
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])

    def _ip(self, ns: str, *args: str) -> None:
        _run(["ip", "-n", ns, *args])

    def _veth(self, ns_a: str, dev_a: str, ns_b: str, dev_b: str) -> None:
        _run(["ip", "link", "add", dev_a, "netns", ns_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b])
        self._ip(ns_a, "link", "set", dev_a, "up")
        self._ip(ns_b, "link", "set", dev_b, "up")

    def _shape(self, ns: str, dev: str, mbit: float) -> None:
        """htb at ``mbit`` with a priority class for packets < 128 bytes."""
        if not mbit or mbit <= 0:
            return
        small = max(1.0, min(mbit * 0.05, 20.0))
        tc = ["tc", "-n", ns]
        _run(tc + ["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "20"])
        _run(tc + ["class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                   "rate", f"{mbit}mbit", "ceil", f"{mbit}mbit"])
        _run(tc + ["class", "add", "dev", dev, "parent", "1:1", "classid", "1:10", "htb",
                   "rate", f"{small}mbit", "ceil", f"{mbit}mbit", "prio", "0"])
        _run(tc + ["class", "add", "dev", dev, "parent", "1:1", "classid", "1:20", "htb",
                   "rate", f"{max(1.0, mbit - small)}mbit", "ceil", f"{mbit}mbit", "prio", "1"])
        # IPv4 total length < 128 bytes -> the small-packet class
        _run(tc + ["filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                   "match", "u16", "0x0000", "0xff80", "at", "2", "flowid", "1:10"])
        if self.queue_packets is not None:  # a shallower (or deeper) queue than the default pfifo
            for leaf in ("10", "20"):
                _run(tc + ["qdisc", "add", "dev", dev, "parent", f"1:{leaf}", "handle", f"{leaf}:", "pfifo",
                           "limit", str(self.queue_packets)])

    def _build(self) -> None:
        s = self.subnet
        spine = self._ns("spine")
        self._add_ns(spine)
        _run(["ip", "netns", "exec", spine, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
        # root <-> spine
        up = f"{self.prefix}-up0"
        _run(["ip", "link", "add", up, "type", "veth", "peer", "name", "up0", "netns", spine])
        self._uplink_made = True
        _run(["ip", "addr", "add", f"{s}.250.1/30", "dev", up])
        _run(["ip", "link", "set", up, "up"])
        self._ip(spine, "addr", "add", f"{s}.250.2/30", "dev", "up0")
        self._ip(spine, "link", "set", "up0", "up")
        # `add`, never `replace`: an existing route belongs to someone else
        r = _run(["ip", "route", "add", f"{s}.0.0/16", "via", f"{s}.250.2", "dev", up], check=False)
        if r.returncode != 0:
            raise RuntimeError(f"cannot add the route to {s}.0.0/16 ({r.stderr.strip()}): another network or "
                               "cluster uses this subnet; not touching its route (pick another subnet)")

        for r in range(self.racks):
            tor = self._ns(f"tor{r}")
            self._add_ns(tor)
            _run(["ip", "netns", "exec", tor, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
            self._ip(tor, "link", "add", "br0", "type", "bridge")
            self._ip(tor, "addr", "add", f"{s}.{r + 1}.1/24", "dev", "br0")
            self._ip(tor, "link", "set", "br0", "up")
            # chain: tor - rt1 - ... - rtK - spine; link k joins hop k and k+1
            chain = [tor] + [self._ns(f"rt{r}x{k}") for k in range(1, self.extra_hops + 1)] + [spine]
            for ns in chain[1:-1]:
                self._add_ns(ns)
                _run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
            for k in range(len(chain) - 1):
                a, b = chain[k], chain[k + 1]
                dev_a, dev_b = "ul", f"dl{r}" if b == spine else "dl"
                self._veth(a, dev_a, b, dev_b)
                base = 4 * k
                self._ip(a, "addr", "add", f"{s}.{100 + r}.{base + 1}/30", "dev", dev_a)
                self._ip(b, "addr", "add", f"{s}.{100 + r}.{base + 2}/30", "dev", dev_b)
                # upward: everything in the /16 via the next hop (no default route)
                self._ip(a, "route", "add", f"{s}.0.0/16", "via", f"{s}.{100 + r}.{base + 2}")
                # downward: this rack's hosts via the previous hop
                self._ip(b, "route", "add", f"{s}.{r + 1}.0/24", "via", f"{s}.{100 + r}.{base + 1}")
                if k == 0:  # the rack uplink, shared by the rack's hosts
                    self._shape(a, dev_a, self.uplink_rates[r])
                    self._shape(b, dev_b, self.uplink_rates[r])
            for h in range(self.rack_sizes[r]):
                name = f"{self.prefix}r{r}h{h}"
                self._add_ns(name)
                port = f"p{h}"
                self._veth(name, "eth0", tor, port)
                self._ip(tor, "link", "set", port, "master", "br0")
                addr = f"{s}.{r + 1}.{h + 11}"
                self._ip(name, "addr", "add", f"{addr}/24", "dev", "eth0")
                self._ip(name, "route", "add", f"{s}.0.0/16", "via", f"{s}.{r + 1}.1")
                self._shape(name, "eth0", self.host_mbit)
                self._shape(tor, port, self.host_mbit)
                self.hosts.append(NetnsHost(name, addr, name, r, len(self.hosts)))

    # -- sshd ---------------------------------------------------------------
    def _start_sshd(self) -> None:
        wd = self.workdir
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privsep dir
        self.key_path = str(wd / "id_ed25519")
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"plink-{self.prefix}", "-f", self.key_path])
        auth = wd / "authorized_keys"
        auth.write_text(Path(self.key_path + ".pub").read_text())
        os.chmod(auth, 0o600)
        kh_lines, cfg_lines = [], []
        for h in self.hosts:
            hd = wd / h.name
            hd.mkdir(exist_ok=True)
            hostkey = hd / "ssh_host_ed25519_key"
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", h.name, "-f", str(hostkey)])
            kh_lines.append(f"{h.address} {' '.join(Path(str(hostkey) + '.pub').read_text().split()[:2])}\n")
            conf = hd / "sshd_config"
            conf.write_text(
                f"ListenAddress {h.address}\nPort 22\nHostKey {hostkey}\nPidFile {hd / 'sshd.pid'}\n"
                f"AuthorizedKeysFile {auth}\nPermitRootLogin prohibit-password\nPubkeyAuthentication yes\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                "UseDNS no\nPrintMotd no\nPrintLastLog no\nMaxStartups 64:30:128\nMaxSessions 32\n"
                "AllowTcpForwarding yes\nX11Forwarding no\n"
            )
            cfg_lines.append(
                f"Host {h.name}\n  HostName {h.address}\n  User root\n  Port 22\n  IdentityFile {self.key_path}\n"
                f"  IdentitiesOnly yes\n  UserKnownHostsFile {wd / 'known_hosts'}\n  StrictHostKeyChecking yes\n\n"
            )
        self.known_hosts = str(wd / "known_hosts")
        Path(self.known_hosts).write_text("".join(kh_lines))
        self.ssh_config = str(wd / "ssh_config")
        Path(self.ssh_config).write_text("".join(cfg_lines))
        for h in self.hosts:
            self._spawn_sshd(h)
        self._wait_sshd(self.hosts)

    def _spawn_sshd(self, h: NetnsHost) -> None:
        conf = self.workdir / h.name / "sshd_config"
        log = open(self.workdir / h.name / "sshd.log", "ab")
        script = 'hostname "$0" && exec "$@"'
        unshare = ["unshare", "--uts"]
        if self.clean_shell:
            # a fresh VM's shell: hide the controller's dotfiles (pyenv etc.) from
            # SSH sessions, in a private mount namespace of this sshd only
            unshare.append("--mount")
            script = ('for f in "$HOME/.bashrc" "$HOME/.profile" "$HOME/.bash_profile"; do '
                      '[ -e "$f" ] && mount --bind /dev/null "$f"; done; ' + script)
        argv = ["ip", "netns", "exec", h.netns, *unshare, "--", "sh", "-c",
                script, h.name, SSHD, "-D", "-e", "-f", str(conf)]
        self._sshd[h.name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                              start_new_session=True)
        log.close()

    def _wait_sshd(self, hosts, timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        pending = list(hosts)
        while pending:
            h = pending[0]
            try:
                with socket.create_connection((h.address, 22), timeout=1.0) as sock:
                    sock.settimeout(1.0)
                    if sock.recv(4).startswith(b"SSH-"):
                        pending.pop(0)
                        continue
            except OSError:
                pass
            proc = self._sshd.get(h.name)
            if proc is not None and proc.poll() is not None:
                log = (self.workdir / h.name / "sshd.log").read_text(errors="replace")[-500:]
                raise RuntimeError(f"sshd on {h.name} exited: {log}")
            if time.monotonic() > end:
                raise RuntimeError(f"sshd on {h.name} did not come up within {timeout:.0f} s")
            time.sleep(0.05)

    # -- operations -----------------------------------------------------------
    def exec(self, host_name: str, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        """Run ``argv`` inside the host's network namespace (subprocess.run)."""
        return subprocess.run(["ip", "netns", "exec", self.host(host_name).netns, *argv], **kwargs)

    def kill_host(self, name: str, link_delay: float = 0.3) -> None:
        """Simulate the host dying: kill its sshd and every process in its
        namespace (SSH sessions, agents), then take its link down.  The link
        goes down ``link_delay`` s after the kill so the closing TCP
        connections reach their peers (like a crashed OS, not a power cut)."""
        h = self.host(name)
        proc = self._sshd.pop(name, None)
        if proc is not None:
            proc.kill()
            proc.wait()
        _kill_ns_pids(h.netns)
        time.sleep(link_delay)
        _kill_ns_pids(h.netns)
        self._ip(h.netns, "link", "set", "eth0", "down")

    def revive_host(self, name: str) -> None:
        """Bring a killed host back (link up, sshd restarted, same keys)."""
        h = self.host(name)
        self._ip(h.netns, "link", "set", "eth0", "up")
        # inside this cluster's own host namespace (the link going down dropped the route)
        self._ip(h.netns, "route", "replace", f"{self.subnet}.0.0/16", "via", f"{self.subnet}.{h.rack + 1}.1")
        if self.sshd:
            self._spawn_sshd(h)
            self._wait_sshd([h])

    def start_busy(self, host_name: str, duty: float = 0.5, cpu: int | None = None) -> None:
        """Start a tenant's busy loop in the host's namespace (see module docstring).

        ``duty`` in (0, 1]: fraction of every ``busy_period`` spent spinning;
        ``cpu``: pin it to this core (``taskset``).  Stopped by
        :meth:`stop_busy`, by ``busy_seconds`` passing, or on close."""
        if not 0.0 < duty <= 1.0:
            raise ValueError(f"busy duty must be in (0, 1], not {duty!r}")
        self.stop_busy(host_name)
        h = self.host(host_name)
        pin = ["taskset", "-c", str(cpu)] if cpu is not None and shutil.which("taskset") else []
        argv = ["ip", "netns", "exec", h.netns, *pin, sys.executable, "-c", _BUSY_LOOP,
                str(duty), str(self.busy_period), str(self.busy_seconds)]
        self._busy[host_name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL, start_new_session=True)
        self.busy[host_name] = duty
        # ``ip netns exec`` enters the namespace after Popen returns: wait until it has, so
        # the tenant's load is running (and visible in :meth:`processes`) when this returns
        proc = self._busy[host_name]
        deadline = time.monotonic() + 10.0
        while proc.poll() is None and proc.pid not in self.processes(host_name):
            if time.monotonic() > deadline:
                self.stop_busy(host_name)
                raise RuntimeError(f"busy loop of {host_name} did not enter its namespace within 10 s")
            time.sleep(0.01)

    def stop_busy(self, host_name: str) -> None:
        """Stop the host's busy loop, if any."""
        proc = self._busy.pop(host_name, None)
        if proc is not None:
            proc.kill()
            proc.wait()

    def busy_hosts(self) -> dict[str, float]:
        """Host name -> duty of the busy loops running now."""
        return {name: self.busy.get(name, 0.0) for name, p in self._busy.items() if p.poll() is None}

    def listening(self, host_name: str) -> list[str]:
        """Listening TCP/UDP sockets in the host's namespace (``ss -ltnupH``)."""
        r = self.exec(host_name, ["ss", "-ltnupH"], capture_output=True, text=True, check=True)
        return [line for line in r.stdout.splitlines() if line.strip()]

    def processes(self, host_name: str) -> list[int]:
        """PIDs of processes in the host's network namespace."""
        r = _run(["ip", "netns", "pids", self.host(host_name).netns], check=False)
        return [int(t) for t in r.stdout.split()]

    def leftovers(self) -> dict[str, tuple[list[str], list[str]]]:
        """What runs on the hosts besides their sshd: ``{host: (listening sockets, process
        names)}`` for the hosts that have any (empty: nothing of a probe left behind)."""
        out = {}
        for h in self.hosts:
            socks = [s for s in self.listening(h.name) if '"sshd"' not in s]
            procs = []
            for pid in self.processes(h.name):
                try:
                    comm = Path(f"/proc/{pid}/comm").read_text().strip()
                except OSError:
                    continue
                if comm != "sshd":
                    procs.append(comm)
            if socks or procs:
                out[h.name] = (socks, procs)
        return out

    def close(self) -> None:
        for name in list(self._busy):
            self.stop_busy(name)
        for proc in self._sshd.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.kill()
                proc.wait(timeout=5)
            except Exception:
                pass
        self._sshd.clear()
        for ns in reversed(self._namespaces):
            _kill_ns_pids(ns)
            _run(["ip", "netns", "del", ns], check=False)
        self._namespaces.clear()
        if self._uplink_made:  # only the veth (and with it the route) this cluster made
            _run(["ip", "link", "del", f"{self.prefix}-up0"], check=False)
            self._uplink_made = False
        self._release()
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self._own_workdir = False
