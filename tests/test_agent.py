"""The remote agent on the loopback (no SSH): protocol, token checks, exit paths."""

import math
import os
import secrets
import shutil
import socket
import struct
import sys
import time

import numpy as np
import pytest

from plink.data.probefile import load
from plink.probes import agent as agent_mod
from plink.probes.methods import summarize
from plink.probes.probe import probe_hosts
from plink.probes.session import BOOT, AgentError, AgentSession, ProcessPipe, agent_source, local_pipe, start_local_agents


@pytest.fixture
def pair():
    token = secrets.token_hex(16)
    a = AgentSession(local_pipe(), "a")
    b = AgentSession(local_pipe(), "b")
    a.hello(token, 60, bind="127.0.0.2")
    b.hello(token, 60, bind="127.0.0.3")
    yield a, b, token
    a.close()
    b.close()


def test_agent_is_stdlib_only():
    import ast

    tree = ast.parse(agent_source())
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mods.add(node.module.split(".")[0])
    optional = {"icmplib"}  # imported inside try/except only
    assert mods - optional <= set(sys.stdlib_module_names)


def test_udp_ping_both_ways(pair):
    a, b, _ = pair
    ra = a.send("udp_ping", addr="127.0.0.3", port=b.info["udp_port"], count=30, interval=0.002, round=4)
    rb = b.send("udp_ping", addr="127.0.0.2", port=a.info["udp_port"], count=30, interval=0.002, round=4)
    for s, rid in ((a, ra), (b, rb)):
        r = s.wait(rid, 10)
        st = summarize(r["rtts_us"], r["sent"])
        assert st.loss == 0 and st.samples == 30
        assert 0 < st.p10 <= st.median <= st.p90 < 100_000


def _pkt(token: bytes, kind=1, rnd=0, seq=0):
    return struct.pack("!4s16sBII", b"PLK1", token, kind, rnd, seq)


def test_responder_ignores_packets_without_the_token(pair):
    a, _, token = pair
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.9", 0))
    s.settimeout(0.5)
    dst = ("127.0.0.2", a.info["udp_port"])
    for bad in (_pkt(secrets.token_bytes(16)), b"hello", _pkt(bytes.fromhex(token), kind=2)):
        s.sendto(bad, dst)
        with pytest.raises(socket.timeout):
            s.recvfrom(100)
    s.sendto(_pkt(bytes.fromhex(token), rnd=7, seq=3), dst)
    data, _ = s.recvfrom(100)
    assert struct.unpack("!4s16sBII", data[:29])[2:] == (2, 7, 3)
    s.close()


def test_tcp_throughput_and_token_check(pair):
    a, b, _ = pair
    port = b.call("tcp_listen", streams=2, seconds=0.3)["port"]
    # a stranger without the token is not counted
    with socket.create_connection(("127.0.0.3", port)) as intruder:
        intruder.sendall(b"x" * 100_000)
    sent = a.call("tcp_send", addr="127.0.0.3", port=port, streams=2, seconds=0.3)["bytes_sent"]
    res = b.call("tcp_result", timeout=10)
    assert res["streams"] == 2 and res["bytes"] == sent > 0
    assert 0 < res["seconds"] < 5


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed")
def test_iperf3_pair(pair):
    a, b, _ = pair
    port = b.call("iperf3_server")["port"]
    r = a.call("iperf3_client", addr="127.0.0.3", port=port, seconds=1, streams=2, timeout=40)
    assert r["bits_per_second"] > 1e6
    b.call("iperf3_stop")


@pytest.mark.skipif(shutil.which("fping") is None, reason="fping not installed")
def test_fping_op(pair):
    a, _, _ = pair
    r = a.call("fping", addr="127.0.0.3", count=5, interval=0.01)
    assert len(r["rtts_us"]) == 5 and all(x > 0 for x in r["rtts_us"])


def test_parse_fping():
    text = "10.0.0.2 : 0.051 - 0.043\n10.0.0.3 : - - -\n"
    assert agent_mod.parse_fping(text, "10.0.0.2") == [51.0, 43.0]
    assert agent_mod.parse_fping(text, "10.0.0.3") == []
    with pytest.raises(RuntimeError):
        agent_mod.parse_fping("", "10.0.0.4")


@pytest.mark.skipif(os.geteuid() != 0, reason="raw ICMP needs root")
def test_icmp_op(pair):
    a, _, _ = pair
    if not a.info["icmplib"]:
        pytest.skip("icmplib not importable")
    r = a.call("icmp", addr="127.0.0.3", count=3, interval=0.01)
    assert len(r["rtts_us"]) == 3


def test_errors_are_replies_not_crashes(pair):
    a, _, _ = pair
    with pytest.raises(AgentError, match="unknown op"):
        a.call("rm_rf")
    with pytest.raises(AgentError, match="no tcp_listen"):
        a.call("tcp_result")
    assert a.call("extend", deadline=60)["ok"]


def test_hello_required_first():
    s = AgentSession(local_pipe(), "x")
    with pytest.raises(AgentError, match="hello first"):
        s.call("udp_ping", addr="127.0.0.1", port=1, count=1, interval=0.01, round=0)
    s.close()


def _udp_bound(port: int) -> bool:
    want = f":{port:04X}"
    with open("/proc/net/udp") as fh:
        return any(line.split()[1].endswith(want) for line in list(fh)[1:])


def test_agent_exits_on_eof_and_frees_its_port():
    s = AgentSession(local_pipe(), "x")
    info = s.hello(secrets.token_hex(16), 60, bind="127.0.0.4")
    assert _udp_bound(info["udp_port"])
    proc = s.pipe.proc
    proc.stdin.close()  # the SSH channel closing looks like this to the agent
    proc.wait(timeout=5)
    assert not _udp_bound(info["udp_port"])


def test_agent_exits_when_its_deadline_passes():
    s = AgentSession(local_pipe(), "x")
    s.hello(secrets.token_hex(16), 0.5, bind="127.0.0.5")
    t = time.monotonic()
    s.pipe.proc.wait(timeout=10)  # stdin still open
    assert time.monotonic() - t < 5
    assert s.pipe.proc.returncode == 3


def test_stray_shell_output_is_skipped():
    src = agent_source()
    argv = ["sh", "-c", 'echo "Welcome to the machine"; echo "{\\"id\\": 1}"; exec "$0" -u -c "$1" "$2"',
            sys.executable, BOOT, str(len(src))]
    pipe = ProcessPipe(argv)
    pipe.write(src)
    s = AgentSession(pipe, "x")
    info = s.hello(secrets.token_hex(16), 60, bind="127.0.0.6")
    assert info["addr"] == "127.0.0.6"
    s.close()


def test_probe_over_loopback_odd_n_checkpoint_and_resume(tmp_path):
    hosts = [f"127.0.0.{i}" for i in range(2, 7)]
    out = tmp_path / "probe.json"
    seen_rounds = []
    p = probe_hosts(hosts, count=5, interval=0.002, connect=start_local_agents, checkpoint=out,
                    after_round=lambda r, pairs: seen_rounds.append((r, pairs, load(out).n_missing_pairs())))
    assert p.meta["complete"] and p.n_missing_pairs() == 0
    assert len(p.meta["schedule"]) == 5 == p.meta["rounds"]  # odd N: N rounds with a bye
    # checkpoint after every round: missing pairs shrink by the round's pairs
    assert [m for _, _, m in seen_rounds] == [10 - 2 * (k + 1) for k in range(5)]
    off = ~np.eye(5, dtype=bool)
    assert np.isfinite(p.latency_median[off]).all() and np.isfinite(p.latency_p90[off]).all()
    assert (p.latency_p90[off] >= p.latency_median[off] - 1e-9).all()
    assert (p.latency_median[off] >= p.latency[off] - 1e-9).all()
    assert p.meta["loss"][0][1] == 0.0
    # resume of a complete file measures nothing
    calls = []
    q = probe_hosts(hosts, count=5, interval=0.002, checkpoint=out, resume=True,
                    connect=lambda *a: calls.append(a) or ({}, {}))
    assert calls == [] and q.meta["complete"]
    np.testing.assert_allclose(q.latency, p.latency, atol=1e-3)


def test_interrupted_probe_keeps_rounds_and_closes_agents(tmp_path):
    hosts = [f"127.0.0.{i}" for i in range(10, 14)]
    out = tmp_path / "probe.json"
    started = []

    def connect(entries, token, deadline, on_done):
        sessions, failures = start_local_agents(entries, token, deadline, on_done)
        started.extend(sessions.values())
        return sessions, failures

    def boom(r, pairs):
        if r == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        probe_hosts(hosts, count=3, interval=0.002, connect=connect, checkpoint=out, after_round=boom)
    part = load(out)
    assert part.meta["rounds_done"] == [0, 1] and part.n_missing_pairs() == 2  # 4 hosts: 3 rounds of 2
    for s in started:  # every agent was told to exit
        assert s.pipe.proc.wait(timeout=5) == 0
    done = probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out, resume=True)
    assert done.meta["complete"] and done.meta["rounds_done"] == [0, 1, 2]
    known = ~np.isnan(part.latency)
    np.testing.assert_array_equal(done.latency[known], part.latency[known])


def test_resume_refuses_another_host_list(tmp_path):
    from plink.errors import PlinkError

    out = tmp_path / "probe.json"
    probe_hosts(["127.0.0.2", "127.0.0.3"], count=2, interval=0.002, connect=start_local_agents, checkpoint=out)
    with pytest.raises(PlinkError, match="hosts differ"):
        probe_hosts(["127.0.0.2", "127.0.0.4"], count=2, connect=start_local_agents, checkpoint=out, resume=True)
    with pytest.raises(PlinkError, match="--method udp"):
        probe_hosts(["127.0.0.2", "127.0.0.3"], method="fping", connect=start_local_agents, checkpoint=out, resume=True)


def test_latency_only_resume_keeps_measured_bandwidth(tmp_path):
    hosts = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    out = tmp_path / "probe.json"

    def stop_after_first(r, pairs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        probe_hosts(hosts, count=3, interval=0.002, bandwidth=True, bw_seconds=0.2, bw_tool="agent",
                    connect=start_local_agents, checkpoint=out, after_round=stop_after_first)
    part = load(out)
    assert np.isfinite(part.bandwidth).sum() == 2  # one pair, both directions
    done = probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out, resume=True)
    assert done.meta["complete"]
    np.testing.assert_array_equal(np.isfinite(done.bandwidth), np.isfinite(part.bandwidth))


def test_ipv6_loopback():
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    token = secrets.token_hex(16)
    a, b = AgentSession(local_pipe(), "a"), AgentSession(local_pipe(), "b")
    try:
        a.hello(token, 60, bind="::1")
        b.hello(token, 60, bind="::1")
        r = a.call("udp_ping", addr="::1", port=b.info["udp_port"], count=5, interval=0.002, round=0)
        assert len(r["rtts_us"]) == 5
        port = b.call("tcp_listen", streams=1, seconds=0.2)["port"]
        a.call("tcp_send", addr="::1", port=port, streams=1, seconds=0.2)
        assert b.call("tcp_result")["bytes"] > 0
    finally:
        a.close()
        b.close()


def test_summarize_statistics():
    st = summarize([float(x) for x in range(1, 101)], 125)
    assert st.p10 == pytest.approx(10.9) and st.median == pytest.approx(50.5) and st.p90 == pytest.approx(90.1)
    assert st.loss == pytest.approx(0.2) and st.samples == 100
    none = summarize([], 10)
    assert math.isnan(none.p10) and none.loss == 1.0 and none.samples == 0
