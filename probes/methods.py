"""Probe methods: what runs between the two agents of a pair, and the statistics.

Latency (``--method``), each direction measured by the host sending:

``udp``    the agent's own UDP echo (default, needs only python3): ``count``
           packets ``interval`` apart carrying the per-run token, round id and
           sequence number; RTT from the sender's monotonic clock.
``fping``  ``fping -C count -p interval`` run on the host (needs fping there).
``icmp``   ICMP echo with ``icmplib`` inside the agent (needs icmplib for the
           host's python3 and raw/ping-socket permission).

Bandwidth (``--bandwidth``): TCP for ``seconds`` with ``streams`` parallel
streams, one direction after the other; by default (``auto``, ``agent``) the
agent's built-in sender/receiver (receiver-side bytes over first-to-last-byte
time), authenticated by an HMAC challenge; ``iperf3 -J`` only when asked for
(``--bw-tool iperf3``: its server accepts any client while it runs, and it
runs whole seconds, so ``seconds`` is rounded up for it).  All pairs of a round run at the
same time, so pairs sharing a link (a rack uplink) share its bandwidth.

Statistics per direction: p10 of the RTT samples is the value used (robust
to scheduling noise, §5.2.2), with the median, the p90 and the loss fraction.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .session import AgentError, AgentLost

LATENCY_METHODS = ("udp", "fping", "icmp")
BW_TOOLS = ("auto", "agent", "iperf3")


@dataclass(frozen=True)
class LatencyStats:
    p10: float
    median: float
    p90: float
    loss: float
    samples: int


def summarize(rtts_us, sent: int) -> LatencyStats:
    """p10 / median / p90 (us) and loss of one direction's samples.

    NaN statistics when nothing came back.  O(k log k) for k samples.
    """
    x = np.asarray([r for r in rtts_us if r is not None and np.isfinite(r) and r >= 0], dtype=float)
    loss = 1.0 - len(x) / sent if sent else 1.0
    if len(x) == 0:
        return LatencyStats(float("nan"), float("nan"), float("nan"), max(0.0, loss), 0)
    p10, med, p90 = np.percentile(x, [10, 50, 90])
    return LatencyStats(float(p10), float(med), float(p90), max(0.0, loss), len(x))


def latency_request(method: str, dst_info: dict, round_id: int, count: int, interval: float,
                    timeout: float, stamps: bool = True) -> tuple[str, dict]:
    """The agent op and arguments with which a host probes ``dst`` (``stamps``:
    udp echo timed by kernel receive timestamps minus the reflector's turnaround)."""
    if method == "udp":
        return "udp_ping", dict(addr=dst_info["addr"], port=dst_info["udp_port"], count=count,
                                interval=interval, round=round_id, timeout=timeout, stamps=stamps)
    if method == "fping":
        return "fping", dict(addr=dst_info["addr"], count=count, interval=interval, timeout=timeout)
    if method == "icmp":
        return "icmp", dict(addr=dst_info["addr"], count=count, interval=interval, timeout=timeout)
    raise ValueError(f"unknown latency method {method!r}")


def method_unavailable(method: str, info: dict) -> str | None:
    """Why ``method`` cannot run on a host whose agent said ``info``."""
    if method == "fping" and not info.get("fping"):
        return "fping is not installed"
    if method == "icmp" and not info.get("icmplib"):
        return "icmplib is not installed for its python3"
    return None


SELF_PINGS = 10  # pings of the self-ping slot (the last slot, so it may be shorter)


def slot_seconds(count: int, interval: float) -> float:
    """One slot of a self-timed schedule: the pings plus a small guard for
    the agents' start skew (2 ms + 1%)."""
    return count * interval * 1.01 + 0.002


PARTS_PER_S = 200  # the controller's budget of result messages per second (run_scheduled)


def run_scheduled(fleet, rounds, count: int, interval: float, timeout: float, reply_timeout: float,
                  on_rows, flush=None, self_ping: bool = False, size: int = 64, stamps: bool = True,
                  on_slot=None) -> dict:
    """One pass of ``udp`` latency over ``rounds`` (lists of disjoint pairs),
    both directions of every pair, run by the agents on their own clocks.

    Each live agent gets one ``udp_sched`` request with its slots: in slot
    ``k`` it pings its partner of ``rounds[k]`` (``count`` pings,
    ``interval`` apart, from ``start + k x slot``); with ``self_ping`` a last,
    shorter slot (``SELF_PINGS`` pings) where every agent pings itself (its
    echo overhead).  Results stream
    back as they finish and go to ``on_rows(src, dst, sent, rtts)``.  One
    deadline for everything (the schedule's length + ``timeout`` +
    ``reply_timeout``), and agents silent for ``reply_timeout`` are dropped
    by the fleet at once.  ``stamps``: kernel receive timestamps minus the
    reflector's turnaround (see ``probes/agent.py``).  ``on_slot(done, total)``,
    when given, is told the slots whose results have begun to come back (the
    latest slot any result is from, + 1), as that grows: a pass's progress.
    Controller work O(N) per round.
    """
    slot = slot_seconds(count, interval)
    live = set(fleet.live())
    plans: dict[int, list] = {k: [] for k in live}
    dst_of: dict[tuple[int, int], int] = {}
    info = {k: fleet.sessions[k].info for k in live}
    for k, pairs in enumerate(rounds):
        for a, b in pairs:
            for src, dst in ((a, b), (b, a)):
                if src in live and dst in info:
                    plans[src].append([k, k, info[dst]["addr"], info[dst]["udp_port"]])
                    dst_of[(src, k)] = dst
    n_slots = len(rounds)
    if self_ping:
        for k in live:
            plans[k].append([n_slots, n_slots, info[k]["addr"], info[k]["udp_port"], min(count, SELF_PINGS)])
            dst_of[(k, n_slots)] = k
        n_slots += 1
    t_start = time.monotonic() + 0.05 + 0.002 * len(live)
    # results stream back at most ~PARTS_PER_S messages a second in all: with
    # hundreds of agents, every message wakes one SSH transport thread of the
    # controller, and their bursts starve its heartbeat thread of the GIL
    flush_every = max(0.25, len(live) / PARTS_PER_S)
    reqs = []
    for k in sorted(live):
        if not plans[k]:
            continue
        try:
            rid = fleet.sessions[k].send("udp_sched", plan=plans[k], start=round(t_start - time.monotonic(), 6),
                                         slot=slot, count=count, interval=interval, timeout=timeout, size=size,
                                         stamps=stamps, flush_every=flush_every)
            reqs.append((k, rid))
        except AgentLost as exc:
            fleet.lose(k, str(exc))
    last = [time.monotonic()]
    reached = {"slots": 0, "told": 0}

    def on_part(k, rid, rows):
        for tag, sent, rtts in rows:
            dst = dst_of.get((k, int(tag)))
            if dst is not None:
                on_rows(k, dst, int(sent), rtts)
                reached["slots"] = max(reached["slots"], int(tag) + 1)
        if on_slot is not None and reached["slots"] > reached["told"]:
            reached["told"] = reached["slots"]
            on_slot(reached["slots"], n_slots)
        if flush is not None and time.monotonic() - last[0] > 1.0:
            flush()
            last[0] = time.monotonic()

    res = fleet.wait(reqs, t_start + n_slots * slot + timeout + reply_timeout, on_part=on_part)
    errors = [f"{fleet.sessions[k].name}: {v}" for (k, _), v in res.items() if isinstance(v, AgentError)]
    return {"errors": errors, "slot_s": round(slot, 6)}


def run_latency(pairs, fleet, method: str, round_id: int, count: int, interval: float, timeout: float,
                reply_timeout: float = 10.0, stamps: bool = True):
    """Probe all ``pairs`` of one round at once, both directions (fping,
    icmp, or udp one round at a time), with one deadline for all.

    Returns ``{(src, dst): (sent, rtts) | str}`` (a string is an error);
    hosts whose agent vanished end up in ``fleet.lost``.
    """
    reqs, dirs = [], {}
    for a, b in pairs:
        for src, dst in ((a, b), (b, a)):
            if src in fleet.lost or dst in fleet.lost:
                continue
            op, kw = latency_request(method, fleet.sessions[dst].info, round_id, count, interval, timeout, stamps)
            try:
                rid = fleet.sessions[src].send(op, **kw)
            except AgentLost as exc:
                fleet.lose(src, str(exc))
                continue
            reqs.append((src, rid))
            dirs[(src, rid)] = dst
    res = fleet.wait(reqs, time.monotonic() + count * interval + timeout + reply_timeout)
    out = {}
    for (src, rid), v in res.items():
        dst = dirs[(src, rid)]
        name = fleet.sessions[src].name
        if isinstance(v, AgentLost):
            out[(src, dst)] = f"host {name} lost"
        elif isinstance(v, AgentError):
            out[(src, dst)] = f"{name}: {v}"
        else:
            try:
                out[(src, dst)] = (int(v["sent"]), [float(x) for x in v["rtts_us"]])
            except (KeyError, TypeError, ValueError) as exc:
                out[(src, dst)] = f"{name}: bad reply ({exc})"
    return out


def choose_bw_tool(tool: str, info_a: dict, info_b: dict) -> str:
    """``auto`` is the agent's own authenticated TCP test; iperf3 (whose
    server takes any client) only when asked for."""
    if tool == "auto":
        return "agent"
    return tool


def _stage(fleet, reqs, deadline):
    """Send ``reqs`` (``[(host, op, kw, tag)]``) and wait for all at once:
    ``{tag: reply | str}``."""
    sent, tags = [], {}
    out = {}
    for host, op, kw, tag in reqs:
        if host in fleet.lost:
            out[tag] = f"host {fleet.sessions[host].name} lost"
            continue
        try:
            rid = fleet.sessions[host].send(op, **kw)
        except AgentLost as exc:
            fleet.lose(host, str(exc))
            out[tag] = f"host {fleet.sessions[host].name} lost"
            continue
        sent.append((host, rid))
        tags[(host, rid)] = tag
    for (host, rid), v in fleet.wait(sent, deadline).items():
        name = fleet.sessions[host].name
        if isinstance(v, AgentLost):
            out[tags[(host, rid)]] = f"host {name} lost"
        elif isinstance(v, AgentError):
            out[tags[(host, rid)]] = f"{name}: {v}"
        else:
            out[tags[(host, rid)]] = v
    return out


def run_bandwidth(pairs, fleet, tool: str, seconds: float, streams: int, reply_timeout: float = 10.0):
    """TCP throughput for all ``pairs`` of a round, a->b for all pairs at
    once, then b->a; every stage has one deadline for all hosts.  Returns
    ``{(src, dst): Gbit/s | str}`` and the tool used per pair."""
    out: dict = {}
    tools = {}
    for flip in (False, True):
        dirs = [((b, a) if flip else (a, b)) for a, b in pairs]
        dirs = [(s, d) for s, d in dirs if s not in fleet.lost and d not in fleet.lost]
        ss = fleet.sessions
        for src, dst in dirs:
            tools[(min(src, dst), max(src, dst))] = choose_bw_tool(tool, ss[src].info, ss[dst].info)
        t_of = {d: tools[(min(d), max(d))] for d in dirs}
        # 1. receivers listen
        ports = _stage(fleet, [(dst, "iperf3_server", {}, (src, dst)) if t_of[(src, dst)] == "iperf3" else
                               (dst, "tcp_listen", {"streams": streams, "seconds": seconds,
                                                    "timeout": reply_timeout}, (src, dst))
                               for src, dst in dirs], time.monotonic() + reply_timeout)
        live = []
        for d in dirs:
            r = ports.get(d)
            if isinstance(r, str) or r is None:
                out[d] = r or "no port"
            else:
                live.append((d, r["port"]))
        # 2. senders send
        sends = _stage(fleet, [(src, "iperf3_client" if t_of[(src, dst)] == "iperf3" else "tcp_send",
                                {"addr": ss[dst].info["addr"], "port": port, "seconds": seconds,
                                 "streams": streams, "timeout": reply_timeout}, (src, dst))
                               for (src, dst), port in live],
                       time.monotonic() + math.ceil(seconds) + reply_timeout)
        # 3. receivers report / stop
        fins = _stage(fleet, [(dst, "iperf3_stop" if t_of[(src, dst)] == "iperf3" else "tcp_result",
                               {"timeout": reply_timeout}, (src, dst)) for (src, dst), _ in live],
                      time.monotonic() + 2 * reply_timeout)
        for (src, dst), _ in live:
            d = (src, dst)
            snd, fin = sends.get(d), fins.get(d)
            if isinstance(snd, str):
                res = snd
            elif t_of[d] == "iperf3":
                res = fin if isinstance(fin, str) else snd["bits_per_second"] / 1e9
            elif isinstance(fin, str) or fin is None:
                res = fin or "no result"
            else:
                try:
                    res = _agent_gbps(fin)
                except ValueError as exc:
                    res = str(exc)
            if not isinstance(res, str) and not (res > 0):
                res = f"no data from {ss[src].name} to {ss[dst].name}"
            out[d] = res
    return out, tools


def _agent_gbps(r: dict) -> float:
    if r["bytes"] <= 0 or r["seconds"] <= 0:
        raise ValueError("receiver got no data")
    return r["bytes"] * 8 / r["seconds"] / 1e9
