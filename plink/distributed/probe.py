"""The in-job probe: pairwise latency (and bandwidth) between the nodes of a running job.

Runs inside an initialised ``torch.distributed`` job (any launcher, see
:mod:`plink.distributed.launcher`); no SSH.  Every rank calls
:func:`probe_group`; it returns the same :class:`~plink.data.probefile.ProbeData`
on every rank.

Steps (``store`` is the job's rendezvous store, with a key prefix per call):

1. **Identities.**  Every rank publishes its host name, address (the
   source address of its route to ``MASTER_ADDR``, i.e. the interface Gloo
   uses) and local rank.  Rank 0 groups ranks into *entries*: one per node
   (same host name and address; the node's lowest local rank measures) or,
   with ``per_rank=True``, one per rank, and publishes the plan.
2. **Rounds.**  The entries meet in the 1-factorisation of
   :func:`plink.probes.rounds.round_robin` (N-1 rounds of disjoint pairs for
   even N, N rounds with a bye for odd N, the same schedule as ``plink
   probe``): all pairs of a round measure at once, ``samples`` pings per
   pair, one every ``interval`` seconds, keeping the p10 / median / p90 RTT.
   ``method="udp"`` (default): every measuring rank runs plink's probe agent
   as a local process, an authenticated UDP echo whose RTTs are timed by
   the kernel's receive stamps minus the reflector's turnaround, each
   direction by its sender (:mod:`plink.distributed.echo`).
   ``method="tensor"``: ping-pongs of a 1-element tensor over the job's
   backend (after 3 untimed ones), timed by the lower entry; this includes
   two wake-ups of each process and the library's work per sample (~400 us
   on a 2-core machine, measured in
   ``benchmarks/injob_netns.py``), which can hide the racks on busy hosts.
   With ``bandwidth=True`` each direction then streams ``bw_size``-byte
   tensors for ``bw_seconds`` (concurrent pairs of a round share rack
   uplinks, as with ``plink probe``).
3. **Gather.**  Every measuring rank puts its row in the store; rank 0
   builds the probe file document and publishes it; every rank reads it.

Transport of the tensors (``transport``; ``method="tensor"`` and bandwidth):
``"pair"`` (default) creates a 2-rank Gloo sub-group per pair and round
(``new_group(..., use_local_synchronization=True)``, ~10-30 ms each on this
machine) so a timeout or a dead peer breaks only that pair's sub-group; ``"world"`` uses ``send``/``recv`` on the default group
(no set-up cost, but Gloo closes the whole group after an op times out, so
one hung node ends the probe for everyone).

**Failures are reported, not hung on.**  Every wait has a deadline
(``timeout`` seconds): a pair whose peer dies or stalls is recorded with the
reason, the peer is marked dead in the store so later partners skip it (with
``udp``, one wait of ``timeout`` for every node's echo port covers all), its
pairs stay ``null`` in the probe file, and ``meta["failed"]`` names it.  If
rank 0 dies, every other rank raises :class:`~plink.errors.PlinkError` within
``timeout``.

Time: ``rounds x samples x interval`` (+ ``rounds x 2 x bw_seconds`` with
bandwidth) plus rendezvous and the per-round sub-group set-up; O(N) rounds,
O(N^2) pairs, O(N) store operations at rank 0 per phase.

NCCL: with a NCCL default group (every rank has a GPU) the pair sub-groups
use NCCL and CUDA tensors (``backend="auto"``).  Not verified: the machine
this was written on has no GPU; everything measured here used Gloo over TCP.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import time
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from plink.data.probefile import Host, ProbeData, from_dict, new_meta
from plink.distributed import echo
from plink.errors import OptionError, PlinkError
from plink.probes.rounds import round_robin

log = logging.getLogger("plink.distributed")

TRANSPORTS = ("pair", "world")
METHODS = ("udp", "tensor")
#: the longest wait for another rank a caller may ask for (a week; torch takes it as a timedelta of whole ms)
MAX_TIMEOUT = 7 * 86400.0


def check_timeout(timeout, what: str = "timeout") -> float:
    """``timeout`` as seconds in ``(0, MAX_TIMEOUT]``, else :class:`OptionError` (inf and 1e15 overflowed
    torch's timedelta with a bare OverflowError)."""
    try:
        t = float(timeout)
    except (TypeError, ValueError):
        raise OptionError(f"{what} must be a number of seconds, got {timeout!r}") from None
    if not 0 < t <= MAX_TIMEOUT:
        raise OptionError(f"{what} must be in (0, {MAX_TIMEOUT:g}] s, got {timeout}")
    return t


def check_backend(backend, allow_auto: bool = True) -> str:
    """A process-group backend torch knows (``auto`` when allowed); NCCL needs a GPU here. Raises
    :class:`OptionError` (a typo was blamed on a node; NCCL on a CPU box raised torch's AttributeError)."""
    import torch
    import torch.distributed as dist

    known = [str(b).lower() for b in getattr(dist.Backend, "backend_list", ["gloo", "nccl", "mpi", "ucc"])
             if str(b).lower() != "undefined"]
    name = str(backend).lower()
    if not (name in known or (allow_auto and name == "auto")):
        raise OptionError(f"unknown backend {backend!r} (choose from {', '.join((['auto'] if allow_auto else []) + known)})")
    if name == "nccl" and not torch.cuda.is_available():
        raise OptionError("backend 'nccl' needs a GPU and this process sees none: use 'gloo' (or 'auto')")
    return name


WARMUP = 3
_calls = 0  # probe_group calls in this process: every rank calls in the same sequence


# ---------------------------------------------------------------------------
# identities and the plan


def _route_source(addr: str, port: int) -> str | None:
    """The local address the kernel would send from to ``addr`` (a connected UDP socket: no
    packet is sent), or None without a route."""
    try:
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        with socket.socket(fam, socket.SOCK_DGRAM) as s:
            s.connect((addr, port))
            return s.getsockname()[0]
    except OSError:
        return None


def _is_loopback(addr: str) -> bool:
    try:
        return ipaddress.ip_address(addr.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def local_address(master_addr: str | None, port: int = 29500) -> str:
    """The address other hosts reach this one at: the source address on the route to
    ``master_addr`` (no packet is sent). Without ``master_addr`` or a route to it: the source of
    the default route, else this machine's first non-loopback address, else ``127.0.0.1``. Not
    the host name's address: Debian's ``/etc/hosts`` maps it to ``127.0.1.1``, which no other
    host can reach. (A loopback ``master_addr`` written as an address, ``127.0.0.1`` or ``::1``, or
    ``localhost``, gives a loopback address: a one-host job. A host *name* that leads to loopback
    here is this host's own name under Debian's ``/etc/hosts``, as torchrun's rendezvous sets it
    on the master node: the other hosts reach it elsewhere, so it is passed over.)
    """
    if master_addr:
        got = _route_source(master_addr, port)
        from plink.launch.noderank import _is_ip

        literal = master_addr.lower() == "localhost" or _is_ip(master_addr)
        if got and (literal or not _is_loopback(got)):
            return got
    got = _route_source("192.0.2.1", port)  # TEST-NET-1 (RFC 5737): only the default route leads there
    if got and not _is_loopback(got):
        return got
    from plink.launch.noderank import local_addresses

    addrs = local_addresses()
    return addrs[0] if addrs else "127.0.0.1"


@dataclass
class Plan:
    """Who measures: ``entries[i]`` is a list of global ranks (leader first)."""

    names: list[str]
    addresses: list[str]
    entries: list[list[int]]
    missing_ranks: list[int] = field(default_factory=list)

    @property
    def leaders(self) -> list[int]:
        return [e[0] for e in self.entries]

    def to_json(self) -> str:
        return json.dumps({"names": self.names, "addresses": self.addresses, "entries": self.entries,
                           "missing_ranks": self.missing_ranks})

    @classmethod
    def from_json(cls, text: str | bytes) -> "Plan":
        d = json.loads(text)
        return cls(d["names"], d["addresses"], d["entries"], d.get("missing_ranks", []))


def make_plan(idents: dict[int, dict], per_rank: bool = False) -> Plan:
    """Group ranks into entries (pure; O(R log R) for R ranks).

    ``idents[rank] = {"host": ..., "address": ..., "local_rank": ...}``.  Node
    mode: one entry per (host, address), ranks by local rank then rank, named
    by host name (``host@address`` when two nodes share a host name).  Per-rank
    mode: one entry per rank named ``host/local_rank`` (``host/rRANK`` on clashes).
    Entries are ordered by their lowest rank.
    """
    ranks = sorted(idents)
    if per_rank:
        groups = [[r] for r in ranks]
    else:
        by_node: dict[tuple[str, str], list[int]] = {}
        for r in ranks:
            by_node.setdefault((idents[r]["host"], idents[r]["address"]), []).append(r)
        groups = [sorted(g, key=lambda r: (idents[r].get("local_rank") or 0, r)) for g in by_node.values()]
        groups.sort(key=min)
    hosts = [idents[g[0]]["host"] for g in groups]
    addrs = [idents[g[0]]["address"] for g in groups]
    if per_rank:
        names = [f"{idents[g[0]]['host']}/{idents[g[0]].get('local_rank', g[0])}" for g in groups]
        if len(set(names)) < len(names):
            names = [f"{idents[g[0]]['host']}/r{g[0]}" for g in groups]
    else:
        names = list(hosts)
        if len(set(names)) < len(names):
            names = [f"{h}@{a}" for h, a in zip(hosts, addrs)]
    return Plan(names, addrs, groups)


# ---------------------------------------------------------------------------
# one pair


class _PairLink:
    """send/recv between two ranks, over a 2-rank sub-group or the default group."""

    def __init__(self, dist, me: int, peer: int, transport: str, backend: str, timeout: float):
        self.dist, self.me, self.peer = dist, me, peer
        self.group = None
        self.timeout = timedelta(seconds=timeout)
        if transport == "pair":
            lo, hi = sorted((me, peer))
            self.group = dist.new_group([lo, hi], timeout=self.timeout, backend=backend,
                                        use_local_synchronization=True)
            self.kw_dst = {"group": self.group, "group_dst": 0 if peer == lo else 1}
            self.kw_src = {"group": self.group, "group_src": 0 if peer == lo else 1}
        else:
            self.kw_dst = {"dst": peer}
            self.kw_src = {"src": peer}

    def send(self, t) -> None:
        self.dist.isend(t, **self.kw_dst).wait(self.timeout)

    def recv(self, t) -> None:
        self.dist.irecv(t, **self.kw_src).wait(self.timeout)

    def close(self) -> None:
        if self.group is not None:
            try:
                self.dist.destroy_process_group(self.group)
            except Exception:  # noqa: BLE001 - a broken sub-group cannot always be destroyed cleanly
                pass
            self.group = None


def _sync(device) -> None:
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


def ping_pong(link: _PairLink, initiator: bool, samples: int, interval: float, device) -> list[float] | None:
    """``samples`` timed round trips of a 1-element tensor, paced ``interval`` apart (initiator's view, s)."""
    import torch

    x = torch.zeros(1, device=device)
    if not initiator:
        for _ in range(WARMUP + samples):
            link.recv(x)
            link.send(x)
        return None
    for _ in range(WARMUP):
        link.send(x)
        link.recv(x)
    _sync(device)
    rtts = []
    t0 = time.perf_counter()
    for k in range(samples):
        wait = t0 + k * interval - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        t = time.perf_counter()
        link.send(x)
        link.recv(x)
        _sync(device)
        rtts.append(time.perf_counter() - t)
    return rtts


def stream(link: _PairLink, sender: bool, seconds: float, size: int, device) -> float | None:
    """One direction of a bandwidth test: the sender streams ``size``-byte tensors for ``seconds``; Gbit/s."""
    import torch

    x = torch.ones(max(1, size // 4), dtype=torch.float32, device=device)
    ack = torch.zeros(1, device=device)
    if not sender:
        while True:
            link.recv(x)
            if float(x[0]) == 0.0:
                break
        link.send(ack)
        return None
    count = 0
    t0 = time.perf_counter()
    while True:
        more = (time.perf_counter() - t0) < seconds
        x[0] = 1.0 if more else 0.0
        link.send(x)
        count += 1
        if not more:
            break
    link.recv(ack)
    _sync(device)
    elapsed = time.perf_counter() - t0
    return count * x.numel() * 4 * 8 / elapsed / 1e9


# ---------------------------------------------------------------------------
# the whole probe


def identify(store, per_rank: bool, timeout: float):
    """Publish this rank's identity; rank 0 makes the :class:`Plan` and publishes it.  Returns (plan, LaunchEnv or None)."""
    import torch.distributed as dist

    from plink.distributed.launcher import launcher_env

    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        env = launcher_env()
    except PlinkError:
        env = None
    ident = {"host": socket.gethostname(), "address": local_address(env.master_addr if env else None),
             "local_rank": env.local_rank if env is not None else None}
    store.set(f"id/{rank}", json.dumps(ident))
    if rank == 0:
        got = _poll(store, {f"id/{r}": r for r in range(world)}, time.monotonic() + timeout)
        plan = make_plan({r: json.loads(v) for r, v in got.items()}, per_rank)
        plan.missing_ranks = sorted(set(range(world)) - set(got))
        store.set("plan", plan.to_json())
    else:
        plan = Plan.from_json(_wait(store, "plan", timeout, "the job plan from rank 0"))
    return plan, env


def _store(dist, seq: int, what: str = "probe"):
    try:
        base = dist.distributed_c10d._get_default_store()
    except Exception as exc:  # noqa: BLE001 - private API; say what is needed
        raise PlinkError(f"cannot reach the job's rendezvous store ({exc}); initialise with init_process_group") from None
    return dist.PrefixStore(f"plink/{what}/{seq}/", base)


def _wait(store, key: str, timeout: float, what: str) -> bytes:
    try:
        store.wait([key], timedelta(seconds=timeout))
        return store.get(key)
    except Exception as exc:  # noqa: BLE001 - store errors are RuntimeError / DistStoreError
        raise PlinkError(f"{what} not available within {timeout:g} s ({' '.join(str(exc).split())[:160]})") from None


def _poll(store, keys: dict[str, object], deadline: float, dead_of=None) -> dict[object, bytes]:
    """Collect ``keys`` (key -> tag) until all are there or ``deadline``; skip tags ``dead_of`` reports."""
    got: dict[object, bytes] = {}
    pending = dict(keys)
    while pending and time.monotonic() < deadline:
        for key, tag in list(pending.items()):
            if store.check([key]):
                got[tag] = store.get(key)
                del pending[key]
            elif dead_of is not None and dead_of(tag):
                del pending[key]
        if pending:
            time.sleep(0.02)
    return got


def probe_group(*, samples: int = 50, interval: float = 0.01, per_rank: bool = False, bandwidth: bool = False,
                bw_seconds: float = 1.0, bw_size: int = 4 * 2**20, timeout: float = 60.0, transport: str = "pair",
                backend: str = "auto", passes: int = 1, method: str = "udp") -> ProbeData:
    """Probe the job's nodes (or ranks) and return the probe data on every rank.

    Every rank of the default process group must call it (collectively).
    See the module docstring for the method, the failure handling and the
    time it takes.  Raises :class:`PlinkError` on bad parameters, when the
    process group is not initialised, or when rank 0 cannot be reached.
    """
    import torch
    import torch.distributed as dist

    global _calls
    if samples < 1:
        raise OptionError(f"samples must be >= 1, got {samples}")
    if not 1 <= passes <= samples:
        raise OptionError(f"passes must be 1..samples ({samples}), got {passes}")
    if not interval >= 0:
        raise OptionError(f"interval must be >= 0 s, got {interval}")
    timeout = check_timeout(timeout)
    if bandwidth and not (bw_seconds > 0 and bw_size >= 4):
        raise OptionError("bandwidth needs bw_seconds > 0 and bw_size >= 4 bytes")
    if method not in METHODS:
        raise OptionError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    if transport not in TRANSPORTS:
        raise OptionError(f"unknown transport {transport!r} (choose from {', '.join(TRANSPORTS)})")
    backend = check_backend(backend)
    if not dist.is_available() or not dist.is_initialized():
        raise PlinkError("torch.distributed is not initialised: call init_process_group first "
                         "(or run 'python -m plink.distributed probe' under a launcher)")
    _calls += 1
    t_start = time.monotonic()
    store = _store(dist, _calls)
    rank, world = dist.get_rank(), dist.get_world_size()
    default_backend = dist.get_backend()
    if backend == "auto":
        backend = "nccl" if default_backend == "nccl" else "gloo"
    device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
    plan, env = identify(store, per_rank, timeout)
    t_plan = time.monotonic()
    n = len(plan.entries)
    rounds = round_robin(n)
    if passes > 1 and transport == "pair" and n % 2 and method == "tensor":
        # sub-groups are kept across passes; with byes (odd n) the processes would hold different numbers of
        # groups, and torch names a local-sync group after that number, so peers would not meet
        if rank == 0:
            log.warning("plink.distributed: %d entries (odd): --passes %d needs an even count with transport "
                        "'pair'; probing in 1 pass", n, passes)
        passes = 1
    mine = next((i for i, e in enumerate(plan.entries) if e[0] == rank), None)

    # 2. the rounds (leaders only), ``passes`` times over the schedule
    row: dict[str, dict] = {}
    if mine is not None:
        if method == "udp":
            row = echo.udp_latency(store, plan, rounds, mine, per_pass=samples_per_pass(samples, passes),
                                   interval=interval, timeout=timeout, wait=_wait, poll=_poll)
        if method == "tensor" or bandwidth:
            streams = _measure(dist, store, plan, rounds, mine, rank, samples=samples, interval=interval,
                               passes=passes if method == "tensor" else 1, bandwidth=bandwidth,
                               bw_seconds=bw_seconds, bw_size=bw_size, transport=transport, backend=backend,
                               timeout=timeout, device=device, latency=method == "tensor")
            if method == "tensor":
                row = streams
            else:
                for peer, res in streams.items():
                    if "error" in res:
                        row.setdefault(peer, {}).setdefault("bw_error", res["error"])
                    else:
                        row.setdefault(peer, {}).update({k: v for k, v in res.items() if k.startswith("bw_")})
        store.set(f"row/{mine}", json.dumps({"row": row, "rounds_s": time.monotonic() - t_plan}))

    # 3. gather at rank 0, publish to everyone
    if rank == 0:
        rows_raw = _poll(store, {f"row/{i}": i for i in range(n)}, time.monotonic() + timeout,
                         dead_of=lambda i: store.check([f"dead/{i}"]))
        t_rounds = time.monotonic()
        doc = _document(plan, {i: json.loads(v) for i, v in rows_raw.items()}, store, samples=samples,
                        interval=interval, bandwidth=bandwidth, bw_seconds=bw_seconds, bw_size=bw_size,
                        transport=transport, backend=backend, per_rank=per_rank, env=env, n_rounds=len(rounds),
                        passes=passes, method=method,
                        rendezvous_s=t_plan - t_start, rounds_s=t_rounds - t_plan)
        text = json.dumps(doc, allow_nan=False)
        store.set("result", text)
        alive = world - len(plan.missing_ranks) - sum(1 for i in doc["meta"]["failed"] if i is not None)
        deadline = time.monotonic() + timeout
        while store.add("done", 0) < alive - 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    else:
        # rank 0 may legitimately take the rounds, a timeout per peer that fails on it, and the gather's
        # timeout (udp: one more, the key exchange's wait for a node that never sends its value)
        bound = len(rounds) * (samples * interval + 2 * bw_seconds * bandwidth)
        text = _wait(store, "result", 2 * bound + (4 if method == "udp" else 3) * timeout + 0.5 * len(rounds) * passes,
                     "the probe result from rank 0")
        store.add("done", 1)
    data = from_dict(json.loads(text), "<in-job probe>")
    if rank == 0:
        data.meta["total_s"] = round(time.monotonic() - t_start, 3)
    return data


def samples_per_pass(samples: int, passes: int) -> list[int]:
    """``samples`` split over ``passes`` passes, the first ones taking the remainder (pure, O(passes))."""
    return [samples // passes + (1 if k < samples % passes else 0) for k in range(passes)]


def _measure(dist, store, plan: Plan, rounds, mine: int, rank: int, *, samples, interval, passes, bandwidth,
             bw_seconds, bw_size, transport, backend, timeout, device, latency: bool = True) -> dict[str, dict]:
    """This leader's pairs: ``{str(other entry): result or {"error": reason}}``; tensor ping-pongs
    (``latency``) and/or the bandwidth streams."""
    row: dict[str, dict] = {}
    links: dict[int, _PairLink] = {}
    rtts: dict[int, list[float]] = {}
    per_pass = samples_per_pass(samples, passes)
    dead_key = lambda i: f"dead/{i}"  # noqa: E731
    try:
        for ps in range(passes):
            if per_pass[ps] == 0 and not (bandwidth and ps == 0):
                continue
            for r, pairs in enumerate(rounds):
                pair = next(((a, b) for a, b in pairs if mine in (a, b)), None)
                if pair is None:
                    continue
                a, b = pair
                other = b if mine == a else a
                if "error" in row.get(str(other), {}):
                    continue
                if store.check([dead_key(other)]):
                    row[str(other)] = {"error": "peer failed earlier: " + store.get(dead_key(other)).decode()[:200]}
                    continue
                try:
                    link = links.get(other)
                    if link is None:
                        link = links[other] = _PairLink(dist, rank, plan.entries[other][0], transport, backend, timeout)
                    res = row.setdefault(str(other), {"round": r})
                    got = ping_pong(link, mine == a, per_pass[ps], interval, device) if latency else None
                    if got is not None:
                        rtts.setdefault(other, []).extend(got)
                    if bandwidth and ps == 0:
                        for key, sender in (("bw_out", mine == a), ("bw_in", mine == b)):
                            value = stream(link, sender, bw_seconds, bw_size, device)
                            if value is not None:
                                res[key] = value
                except Exception as exc:  # noqa: BLE001 - any transport error is this pair's failure
                    reason = f"{plan.names[other]} (rank {plan.entries[other][0]}): {' '.join(str(exc).split())[:200]}"
                    row[str(other)] = {"error": reason, "round": r}
                    rtts.pop(other, None)
                    store.set(dead_key(other), reason)
                    log.warning("plink.distributed: pair %s-%s failed in round %d: %s",
                                plan.names[mine], plan.names[other], r, reason)
                    link = links.pop(other, None)
                    if link is not None:
                        link.close()
                    continue
                if ps == passes - 1:
                    links.pop(other).close()
    finally:
        for link in links.values():
            link.close()
    for other, values in rtts.items():
        us = np.asarray(values) * 1e6
        row[str(other)].update(p10=float(np.percentile(us, 10)), median=float(np.median(us)),
                               p90=float(np.percentile(us, 90)), samples=len(us))
    return row


def _document(plan: Plan, rows: dict[int, dict], store, *, samples, interval, bandwidth, bw_seconds, bw_size,
              transport, backend, per_rank, env, n_rounds, rendezvous_s, rounds_s, passes=1, method="udp") -> dict:
    """The probe file document from the measuring ranks' rows (rank 0)."""
    n = len(plan.entries)
    nan = np.full((n, n), np.nan)
    lat, med, p90 = nan.copy(), nan.copy(), nan.copy()
    bw = nan.copy() if bandwidth else None
    failed: dict[str, str] = {}
    pair_errors: dict[str, str] = {}  # "a - b": why that pair (or one direction of it) has no value
    for i in range(n):
        if i not in rows:
            reason = store.get(f"dead/{i}").decode() if store.check([f"dead/{i}"]) else "sent no results in time"
            failed[plan.names[i]] = reason
            continue
        for j_str, res in rows[i]["row"].items():
            j = int(j_str)
            for what in ("error", "bw_error"):
                if what in res:
                    pair_errors.setdefault(f"{plan.names[i]} - {plan.names[j]}", res[what])
            if "p10" in res:
                for m, key in ((lat, "p10"), (med, "median"), (p90, "p90")):
                    m[i, j] = res[key]  # udp: each direction by its sender
                    if method == "tensor":  # the initiator's RTT is the pair's RTT: both cells
                        m[j, i] = res[key]
            if bw is not None:
                if res.get("bw_out"):
                    bw[i, j] = res["bw_out"]
                if res.get("bw_in"):
                    bw[j, i] = res["bw_in"]
    for i in range(n):
        for m in (lat, med, p90):
            m[i, i] = 0.0
    if bw is not None:
        np.fill_diagonal(bw, np.nan)
    for r in plan.missing_ranks:
        failed[f"rank {r}"] = "did not report its identity in time"
    for pair in list(pair_errors):  # a pair with a failed node failed with it (not "is UDP blocked?")
        gone = next((x for x in pair.split(" - ") if x in failed), None)
        if gone is not None:
            pair_errors[pair] = f"{gone} failed ({failed[gone]})"
    rounds_bound = n_rounds * (samples * interval + (2 * bw_seconds if bandwidth else 0.0))
    meta = new_meta(
        "torch.distributed", samples=samples, interval_s=interval, passes=passes, transport=transport, backend=backend,
        per_rank=per_rank, launcher=env.launcher if env is not None else None,
        ranks=plan.entries, rounds=n_rounds, rounds_bound_s=round(rounds_bound, 3),
        rendezvous_s=round(rendezvous_s, 3), rounds_s=round(rounds_s, 3),
        failed=failed, pair_errors=pair_errors, latency_method=method,
        rtt_note=("latency_us is the p10 RTT of the pair's UDP echo (kernel arrival stamps, the reflector's "
                  "turnaround subtracted), each direction timed by its sender: the slower direction here, "
                  "the faster in latency_best_us" if method == "udp" else
                  "latency_us is the p10 RTT of the pair's tensor ping-pong, timed by the lower entry"),
    )
    if bandwidth:
        meta.update(bw_seconds=bw_seconds, bw_size=bw_size)
    doc = ProbeData(hosts=[Host(nm, addr) for nm, addr in zip(plan.names, plan.addresses)], latency=lat,
                    latency_median=med, latency_p90=p90, bandwidth=bw, meta=meta).to_dict()
    return doc
