"""Probe methods: what runs between the two agents of a pair, and the statistics.

Latency (``--method``), each direction measured by the host sending:

``udp``    the agent's own UDP echo (default, needs only python3): ``count``
           packets ``interval`` apart carrying the per-run token, round id and
           sequence number; RTT from the sender's monotonic clock.
``fping``  ``fping -C count -p interval`` run on the host (needs fping there).
``icmp``   ICMP echo with ``icmplib`` inside the agent (needs icmplib for the
           host's python3 and raw/ping-socket permission).

Bandwidth (``--bandwidth``): TCP for ``seconds`` with ``streams`` parallel
streams, one direction after the other; ``iperf3 -J`` when both hosts have
iperf3 (tool ``auto``; iperf3 runs whole seconds, so ``seconds`` is rounded
up for it), else the agent's built-in sender/receiver (receiver-
side bytes over first-to-last-byte time).  All pairs of a round run at the
same time, so pairs sharing a link (a rack uplink) share its bandwidth.

Statistics per direction: p10 of the RTT samples is the value used (robust
to scheduling noise, §5.2.2), with the median, the p90 and the loss fraction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .session import AgentError, AgentLost, AgentSession

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
                    timeout: float) -> tuple[str, dict]:
    """The agent op and arguments with which a host probes ``dst``."""
    if method == "udp":
        return "udp_ping", dict(addr=dst_info["addr"], port=dst_info["udp_port"], count=count,
                                interval=interval, round=round_id, timeout=timeout)
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


def latency_budget(count: int, interval: float, timeout: float) -> float:
    """Seconds after which a latency op's reply is overdue."""
    return count * interval + timeout + 15.0


def run_latency(pairs, sessions: dict[int, AgentSession], method: str, round_id: int, count: int,
                interval: float, timeout: float, lost: dict[int, str]):
    """Probe all ``pairs`` of one round at once, both directions.

    Returns ``{(src, dst): LatencyStats | str}`` (a string is an error) and
    adds hosts whose agent vanished to ``lost``.
    """
    pending = []
    for a, b in pairs:
        for src, dst in ((a, b), (b, a)):
            op, kw = latency_request(method, sessions[dst].info, round_id, count, interval, timeout)
            pending.append((src, dst, _send(sessions, src, op, kw, lost)))
    out = {}
    budget = latency_budget(count, interval, timeout)
    for src, dst, rid in pending:
        out[(src, dst)] = _wait(sessions, src, rid, budget, lost, lambda r: summarize(r["rtts_us"], r["sent"]))
    return out


def _send(sessions, host, op, kw, lost):
    if host in lost:
        return None
    try:
        return sessions[host].send(op, **kw)
    except AgentLost as exc:
        lost[host] = str(exc)
        return None


def _wait(sessions, host, rid, budget, lost, convert):
    if rid is None or host in lost:
        return f"host {sessions[host].name} lost"
    try:
        return convert(sessions[host].wait(rid, budget))
    except AgentLost as exc:
        lost[host] = str(exc)
        return f"host {sessions[host].name} lost"
    except AgentError as exc:
        return f"{sessions[host].name}: {exc}"
    except (KeyError, TypeError, ValueError) as exc:
        return f"{sessions[host].name}: bad reply ({exc})"


def choose_bw_tool(tool: str, info_a: dict, info_b: dict) -> str:
    if tool == "auto":
        return "iperf3" if info_a.get("iperf3") and info_b.get("iperf3") else "agent"
    return tool


def run_bandwidth(pairs, sessions: dict[int, AgentSession], tool: str, seconds: float, streams: int,
                  lost: dict[int, str]):
    """TCP throughput for all ``pairs`` of a round, a->b for all pairs at
    once, then b->a.  Returns ``{(src, dst): Gbit/s | str}`` and the tool
    used per pair."""
    out: dict = {}
    tools = {}
    budget = math.ceil(seconds) + 30.0
    for flip in (False, True):
        dirs = [((b, a) if flip else (a, b)) for a, b in pairs]
        live = []
        # 1. receivers listen
        reqs = []
        for src, dst in dirs:
            t = choose_bw_tool(tool, sessions[src].info, sessions[dst].info)
            tools[(min(src, dst), max(src, dst))] = t
            op, kw = ("iperf3_server", {}) if t == "iperf3" else ("tcp_listen", {"streams": streams, "seconds": seconds})
            reqs.append((src, dst, t, _send(sessions, dst, op, kw, lost)))
        for src, dst, t, rid in reqs:
            r = _wait(sessions, dst, rid, 30.0, lost, lambda r: r["port"])
            if isinstance(r, str):
                out[(src, dst)] = r
            else:
                live.append((src, dst, t, r))
        # 2. senders send
        sends = []
        for src, dst, t, port in live:
            kw = {"addr": sessions[dst].info["addr"], "port": port, "seconds": seconds, "streams": streams}
            sends.append((src, dst, t, _send(sessions, src, "iperf3_client" if t == "iperf3" else "tcp_send", kw, lost)))
        sent = {}
        for src, dst, t, rid in sends:
            if t == "iperf3":
                r = _wait(sessions, src, rid, budget, lost, lambda r: r["bits_per_second"] / 1e9)
            else:
                r = _wait(sessions, src, rid, budget, lost, lambda r: r["bytes_sent"])
            sent[(src, dst)] = r
        # 3. receivers report / stop
        fins = []
        for src, dst, t, _ in live:
            op = "iperf3_stop" if t == "iperf3" else "tcp_result"
            fins.append((src, dst, t, _send(sessions, dst, op, {"timeout": 10.0}, lost)))
        for src, dst, t, rid in fins:
            if t == "iperf3":
                r = _wait(sessions, dst, rid, 30.0, lost, lambda r: None)
                res = sent[(src, dst)]
            else:
                r = _wait(sessions, dst, rid, 30.0, lost, _agent_gbps)
                res = sent[(src, dst)] if isinstance(sent[(src, dst)], str) else r
            if isinstance(r, str) and not isinstance(res, str):
                res = r
            if not isinstance(res, str) and not (res > 0):
                res = f"no data from {sessions[src].name} to {sessions[dst].name}"
            out[(src, dst)] = res
    return out, tools


def _agent_gbps(r: dict) -> float:
    if r["bytes"] <= 0 or r["seconds"] <= 0:
        raise ValueError("receiver got no data")
    return r["bytes"] * 8 / r["seconds"] / 1e9
