"""The remote agent on the loopback (no SSH): protocol, token checks, exit paths."""

import hashlib
import hmac
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
from plink.errors import PlinkError
from plink.probes import agent as agent_mod
from plink.probes.methods import summarize
from plink.probes.probe import probe_hosts
from plink.probes.session import AgentError, AgentSession, ProcessPipe, agent_argv, agent_source, local_pipe, start_local_agents


@pytest.fixture
def pair():
    token = secrets.token_hex(32)
    a = AgentSession(local_pipe(), "a")
    b = AgentSession(local_pipe(), "b")
    a.hello(token, 60, bind="127.0.0.2", hid=0)
    b.hello(token, 60, bind="127.0.0.3", hid=1)
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


def _pkt(key: bytes, kind=1, sender=5, rnd=0, seq=1):
    body = struct.pack("!4sBHIQ", b"PLK2", kind, sender, rnd, seq) + b"\0" * 20
    return body + hmac.new(key, body, hashlib.sha256).digest()[:16]


def test_forged_and_replayed_packets_get_no_answer(pair):
    a, _, token = pair
    key = bytes.fromhex(token)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.9", 0))
    s.settimeout(0.5)
    dst = ("127.0.0.2", a.info["udp_port"])
    good = _pkt(key, rnd=7, seq=3)
    forged = [_pkt(secrets.token_bytes(32)), b"hello", _pkt(key, kind=2),  # wrong key, junk, a pong
              good[:-1] + bytes([good[-1] ^ 1]),  # a flipped bit in the tag
              good[:20] + bytes([good[20] ^ 1]) + good[21:]]  # a flipped bit in the body
    for bad in forged:
        s.sendto(bad, dst)
        with pytest.raises(socket.timeout):
            s.recvfrom(100)
    s.sendto(good, dst)
    data, _ = s.recvfrom(100)
    assert struct.unpack("!4sBHIQ", data[:19])[1:] == (2, 5, 7, 3)  # a pong to sender 5, round 7, seq 3
    body = data[:-16]
    assert hmac.compare_digest(data[-16:], hmac.new(key, body, hashlib.sha256).digest()[:16])
    for replay in (good, _pkt(key, rnd=8, seq=3)):  # the same packet, or the same seq in another round
        s.sendto(replay, dst)
        with pytest.raises(socket.timeout):
            s.recvfrom(100)
    s.sendto(_pkt(key, seq=2), dst)  # older but unseen, inside the window: answered once
    assert s.recvfrom(100)
    s.sendto(_pkt(key, seq=2), dst)
    with pytest.raises(socket.timeout):
        s.recvfrom(100)
    s.close()


def test_replay_window():
    w = agent_mod.ReplayWindow(size=8)
    assert w.fresh(1, 10) and not w.fresh(1, 10)
    assert w.fresh(1, 5) and not w.fresh(1, 5)
    assert not w.fresh(1, 2)  # older than the window
    assert w.fresh(2, 10)  # another sender
    assert w.fresh(1, 30) and w.fresh(1, 29) and not w.fresh(1, 22)


def test_tcp_throughput_and_challenge(pair):
    a, b, token = pair
    port = b.call("tcp_listen", streams=2, seconds=0.3)["port"]
    # strangers are not counted: no answer to the challenge, a wrong answer, a replayed old answer
    for answer in (b"", b"x" * 16, hmac.new(bytes.fromhex(token), b"tcp" + b"\0" * 16, hashlib.sha256).digest()[:16]):
        with socket.create_connection(("127.0.0.3", port)) as intruder:
            assert len(intruder.recv(16)) == 16  # the nonce
            intruder.sendall(answer + b"x" * 100_000)
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


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed")
def test_iperf3_server_takes_another_port_when_its_free_port_was_taken(monkeypatch):
    """The agent picks a free port, then starts iperf3 on it: something else may bind it between."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    picks = [taken.getsockname()[1]]
    real = agent_mod.free_port
    monkeypatch.setattr(agent_mod, "free_port", lambda: picks.pop() if picks else real())
    monkeypatch.setitem(agent_mod._state, "addr", "127.0.0.1")
    monkeypatch.setitem(agent_mod._state, "children", [])
    try:
        port = agent_mod.op_iperf3_server({})["port"]
        assert port != taken.getsockname()[1] and agent_mod.listening_tcp(port, agent_mod._state["iperf3"].pid)
        assert not agent_mod.listening_tcp(taken.getsockname()[1], agent_mod._state["iperf3"].pid)
    finally:
        agent_mod.op_iperf3_stop({})
        taken.close()
    assert agent_mod._state["children"] == []  # the failed iperf3 and the served one are both gone


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


def test_host_id_beyond_16_bits_is_refused_not_wrapped():
    """The probe packets carry the sender's host id in 16 bits: id 65536 would answer as host 0."""
    s = AgentSession(local_pipe(), "x")
    try:
        with pytest.raises(ValueError, match="at most 65536 hosts"):
            s.hello(secrets.token_hex(32), 60, bind="127.0.0.4", hid=65536)
        with pytest.raises(AgentError, match="at most 65536 hosts"):  # the agent checks too
            s.call("hello", key=secrets.token_hex(32), deadline=60, hid=65536, bind="127.0.0.4")
        assert s.hello(secrets.token_hex(32), 60, bind="127.0.0.4", hid=65535)["addr"] == "127.0.0.4"
    finally:
        s.close()


def _udp_bound(port: int) -> bool:
    want = f":{port:04X}"
    with open("/proc/net/udp") as fh:
        return any(line.split()[1].endswith(want) for line in list(fh)[1:])


def test_agent_exits_on_eof_and_frees_its_port():
    s = AgentSession(local_pipe(), "x")
    info = s.hello(secrets.token_hex(32), 60, bind="127.0.0.4")
    assert _udp_bound(info["udp_port"])
    proc = s.pipe.proc
    proc.stdin.close()  # the SSH channel closing looks like this to the agent
    proc.wait(timeout=5)
    assert not _udp_bound(info["udp_port"])


def test_agent_exits_when_the_controller_goes_silent():
    """A partition or a suspended controller: stdin stays open but nothing comes."""
    s = AgentSession(local_pipe(), "x")
    info = s.hello(secrets.token_hex(32), 600, bind="127.0.0.7", hb_timeout=1.5)
    for _ in range(4):  # heartbeats keep it alive (and are answered)
        time.sleep(0.5)
        s.heartbeat()
    t = time.monotonic()
    assert s.pipe.proc.poll() is None
    s.pipe.proc.wait(timeout=10)
    assert 1.0 < time.monotonic() - t < 5 and s.pipe.proc.returncode == 4
    assert not _udp_bound(info["udp_port"])
    assert b'{"hb":1}' in s.pipe.proc.stdout.read()


def test_agent_exits_when_its_deadline_passes():
    s = AgentSession(local_pipe(), "x")
    s.hello(secrets.token_hex(32), 0.5, bind="127.0.0.5")
    t = time.monotonic()
    s.pipe.proc.wait(timeout=10)  # stdin still open
    assert time.monotonic() - t < 5
    assert s.pipe.proc.returncode == 3


def test_stray_shell_output_is_skipped():
    boot, payload = agent_argv(sys.executable)
    argv = ["sh", "-c", 'echo "Welcome to the machine"; echo "{\\"id\\": 1}"; exec "$@"', "sh", *boot]
    pipe = ProcessPipe(argv)
    pipe.write(payload)
    s = AgentSession(pipe, "x")
    info = s.hello(secrets.token_hex(32), 60, bind="127.0.0.6")
    assert info["addr"] == "127.0.0.6"
    s.close()


def test_agent_does_not_count_its_own_stall_as_silence():
    """An agent that was not scheduled (SIGSTOP standing in for an overloaded
    host) longer than its heartbeat timeout does not exit on resume for want
    of heartbeats it could not have read; silence after that still ends it."""
    import signal

    s = AgentSession(local_pipe(), "x")
    s.hello(secrets.token_hex(32), 600, bind="127.0.0.7", hb_timeout=1.5)
    s.pipe.proc.send_signal(signal.SIGSTOP)
    time.sleep(3.0)  # twice the timeout, nothing sent
    s.pipe.proc.send_signal(signal.SIGCONT)
    time.sleep(0.8)
    assert s.pipe.proc.poll() is None
    s.heartbeat()
    t = time.monotonic()
    s.pipe.proc.wait(timeout=10)
    assert 1.0 < time.monotonic() - t < 5 and s.pipe.proc.returncode == 4
    s.close()


def test_probe_over_loopback_odd_n_and_resume(tmp_path):
    hosts = [f"127.0.0.{i}" for i in range(2, 7)]
    out = tmp_path / "probe.json"
    seen = []
    p = probe_hosts(hosts, count=6, passes=2, interval=0.002, connect=start_local_agents, checkpoint=out,
                    after_round=lambda k, pairs: seen.append((k, len(pairs))))
    assert p.meta["complete"] and p.n_missing_pairs() == 0
    assert p.meta["rounds"] == 5 and seen == [(0, 10)]  # odd N: N rounds with a bye
    assert [(e["passes"], e["rounds"], e["count"]) for e in p.meta["schedule"]] == [(2, 10, 3)]  # 2 passes
    assert not (tmp_path / "probe.json.journal").exists()  # removed once the file is written
    assert {"connect", "measure", "close", "write"} <= p.meta["phases_s"].keys()
    assert p.meta["phases_s"]["connect"] + p.meta["phases_s"]["measure"] <= p.meta["elapsed_s"] + 0.5
    off = ~np.eye(5, dtype=bool)
    assert np.isfinite(p.latency_median[off]).all() and np.isfinite(p.latency_p90[off]).all()
    assert (p.latency_p90[off] >= p.latency_median[off] - 1e-9).all()
    assert (p.latency_median[off] >= p.latency[off] - 1e-9).all()
    assert p.meta["loss"][0][1] == 0.0 and p.meta["samples_received"][0][1] == 6
    lo, hi = np.array(p.meta["latency_p10_ci_us"]["low"], float), np.array(p.meta["latency_p10_ci_us"]["high"], float)
    raw = load(out)
    assert (lo[off] <= hi[off]).all() and len(p.meta["host_overhead_us"]) == 5
    assert all(0 <= c <= 1 for row in p.meta["confidence"] for c in row if c is not None)
    # resume of a complete file measures nothing
    calls = []
    q = probe_hosts(hosts, count=5, interval=0.002, checkpoint=out, resume=True,
                    connect=lambda *a: calls.append(a) or ({}, {}))
    assert calls == [] and q.meta["complete"] and q.meta["samples"] == 6
    np.testing.assert_allclose(q.latency, raw.latency, atol=1e-3)


def test_passes_rotate_the_rounds():
    from plink.probes.rounds import check_rounds, pack_rounds, round_robin

    full = [p for r in round_robin(8) for p in r]
    first, second = pack_rounds(full, 8), pack_rounds(full, 8, shift=1)
    check_rounds(8, first)
    check_rounds(8, second)
    when = {p: k for k, r in enumerate(first) for p in r}
    later = {p: k + len(first) for k, r in enumerate(second) for p in r}
    assert min(later[p] - when[p] for p in full) >= len(first) // 2  # a pair's two passes are far apart
    sub = full[::3]
    packed = pack_rounds(sub, 8)
    assert sorted(p for r in packed for p in r) == sorted(sub)
    assert all(len({h for p in r for h in p}) == 2 * len(r) for r in packed)


def test_adaptive_sampling_stops_when_stable(tmp_path, monkeypatch):
    import functools

    import plink.probes.probe as probe_mod
    from plink.probes.sampling import is_stable

    hosts = [f"127.0.0.{i}" for i in range(20, 24)]
    # no absolute floor either (kernel-stamped loopback RTTs can be stable within 2 us)
    monkeypatch.setattr(probe_mod, "is_stable", functools.partial(is_stable, abs_tol=0.0))
    p = probe_hosts(hosts, count=10, passes=2, max_count=40, tol=1e-9, interval=0.001, connect=start_local_agents)
    # an impossible tolerance: every pair is re-probed up to the budget, and no further;
    # the adaptive passes double what a pair has: 10, +10, +20
    got = np.array(p.meta["samples_received"])
    assert got[~np.eye(4, dtype=bool)].max() <= 40
    assert [(e["passes"], e["pairs"]) for e in p.meta["schedule"]] == [(2, 6), (2, 6), (4, 6)]
    q = probe_hosts(hosts, count=10, passes=2, max_count=40, tol=1e6, interval=0.001, connect=start_local_agents)
    assert len(q.meta["schedule"]) == 1  # everything stable after the two base passes


_CRASH = """
import sys, time
from plink.probes.probe import probe_hosts
from plink.probes.session import start_local_agents
probe_hosts(sys.argv[2:], count=40, interval=0.005, connect=start_local_agents, checkpoint=sys.argv[1])
"""


def test_killed_controller_journal_and_resume(tmp_path):
    import signal
    import subprocess

    from plink.probes.journal import journal_path, read_journal

    hosts = [f"127.0.0.{i}" for i in range(30, 36)]
    out = tmp_path / "probe.json"
    jp = journal_path(out)
    proc = subprocess.Popen([sys.executable, "-c", _CRASH, str(out), *hosts])
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if jp.exists() and jp.read_text().count('["l"') >= 8:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)  # no cleanup code runs
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()  # the file is written at the end only; the journal has the measurements
    lat, _, _ = read_journal(jp, hosts, "udp")
    assert 8 <= len(lat) < 30
    done = probe_hosts(hosts, count=40, interval=0.005, connect=start_local_agents, checkpoint=out, resume=True)
    assert done.meta["complete"] and not jp.exists()
    # the directions measured before the kill were kept, not re-measured
    got = np.array(done.meta["samples_received"])
    for (s, d), (sent, rtts) in lat.items():
        assert got[s, d] >= len(rtts)
    assert done.meta["schedule"][0]["pairs"] < 15


def test_interrupted_probe_writes_the_file_and_closes_agents(tmp_path):
    hosts = [f"127.0.0.{i}" for i in range(10, 14)]
    out = tmp_path / "probe.json"
    started = []

    def connect(entries, key, deadline, on_done):
        sessions, failures = start_local_agents(entries, key, deadline, on_done)
        started.extend(sessions.values())
        return sessions, failures

    def boom(r, pairs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        probe_hosts(hosts, count=3, interval=0.002, bandwidth=True, bw_seconds=0.1, connect=connect,
                    checkpoint=out, after_round=boom)
    part = load(out)
    assert part.n_missing_pairs() == 0 and np.isfinite(part.bandwidth).sum() == 0  # latency pass done
    for s in started:  # every agent was told to exit
        assert s.pipe.proc.wait(timeout=5) == 0
    done = probe_hosts(hosts, count=3, interval=0.002, bandwidth=True, bw_seconds=0.1, connect=start_local_agents,
                       checkpoint=out, resume=True)
    assert done.meta["complete"] and done.meta["rounds_done"] == [0, 1, 2]
    np.testing.assert_array_equal(done.latency, part.latency)  # only bandwidth was measured
    assert [e.get("pass") for e in done.meta["schedule"]] == [None] * 3


def test_resume_refuses_another_host_list(tmp_path):
    from plink.errors import PlinkError

    out = tmp_path / "probe.json"
    probe_hosts(["127.0.0.2", "127.0.0.3"], count=2, interval=0.002, connect=start_local_agents, checkpoint=out)
    with pytest.raises(PlinkError, match="hosts differ"):
        probe_hosts(["127.0.0.2", "127.0.0.4"], count=2, connect=start_local_agents, checkpoint=out, resume=True)
    with pytest.raises(PlinkError, match="--method udp"):
        probe_hosts(["127.0.0.2", "127.0.0.3"], method="fping", connect=start_local_agents, checkpoint=out, resume=True)


def test_resume_measures_exactly_what_is_missing_and_meta_stays_true(tmp_path):
    hosts = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    out = tmp_path / "probe.json"
    first = probe_hosts(hosts, count=8, interval=0.002, connect=start_local_agents, checkpoint=out)
    assert first.bandwidth is None
    # --resume --bandwidth on a complete latency-only file: bandwidth only
    bw = probe_hosts(hosts, count=8, interval=0.002, bandwidth=True, bw_seconds=0.1, connect=start_local_agents,
                     checkpoint=out, resume=True)
    assert bw.meta["complete"] and np.isfinite(bw.bandwidth[~np.eye(3, dtype=bool)]).all()
    assert all("pass" not in e for e in bw.meta["schedule"])
    np.testing.assert_array_equal(bw.latency, load(out).latency)
    np.testing.assert_allclose(bw.latency, first.latency, atol=1e-3)
    assert bw.meta["samples"] == 8
    # --resume --count 3 on a complete count-8 file: nothing measured, samples still 8
    again = probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out, resume=True)
    assert again.meta["samples"] == 8 and again.bandwidth is not None
    # a latency-only resume keeps the measured bandwidth
    np.testing.assert_allclose(again.bandwidth, bw.bandwidth, rtol=1e-4)


def test_uplink_phase_groups_on_the_latency_measured_in_the_same_probe(monkeypatch):
    # the uplink phase runs before the matrices are finished: it must see this probe's latency
    from plink.probes import uplinks

    seen = []
    real = uplinks.infer_groups
    monkeypatch.setattr(uplinks, "infer_groups", lambda lat, **kw: seen.append(np.array(lat)) or real(lat, **kw))
    hosts = [f"127.0.0.{i}" for i in range(30, 34)]
    p = probe_hosts(hosts, count=4, interval=0.002, bandwidth=True, bw_seconds=0.1, uplinks=True,
                    connect=start_local_agents)
    up = p.meta["uplinks"]
    assert "groups" in up and "no complete matrix" not in up["groups"], up
    assert np.isfinite(p.latency[~np.eye(4, dtype=bool)]).all()
    assert len(seen) == 1 and np.isfinite(seen[0][~np.eye(4, dtype=bool)]).all()


def test_ipv6_loopback():
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    token = secrets.token_hex(32)
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


class _LateSocket:
    """A reflector socket whose owner wakes up ``delay`` s after each packet arrived
    (a busy host): the datagram and its kernel timestamp are unchanged."""

    def __init__(self, sock, delay):
        self._sock, self._delay = sock, delay

    def recvmsg(self, *a):
        got = self._sock.recvmsg(*a)
        time.sleep(self._delay)
        return got

    def __getattr__(self, name):
        return getattr(self._sock, name)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_TIMESTAMPNS is Linux's")
def test_kernel_stamps_take_a_late_reflector_out_of_the_rtt(monkeypatch):
    import threading

    monkeypatch.setitem(agent_mod._state, "key", secrets.token_bytes(32))
    monkeypatch.setitem(agent_mod._state, "addr", "127.0.0.1")
    monkeypatch.setitem(agent_mod._state, "sockets", [])
    monkeypatch.setitem(agent_mod._state, "stop", threading.Event())
    raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    raw.bind(("127.0.0.1", 0))
    raw.settimeout(0.05)
    port = raw.getsockname()[1]
    resp = agent_mod.Responder(_LateSocket(raw, 0.02), agent_mod._state["key"])
    monkeypatch.setitem(agent_mod._state, "responder", resp)
    t = resp.thread
    try:
        plan = [(0, 7, "127.0.0.1", port)]
        res = {}
        for stamps in (True, False):
            out = agent_mod.run_plan(plan, agent_mod.now(), 0.0, 5, 0.03, 1.0, 64, stamps=stamps)
            assert out[0][0] == 7 and out[0][1] == 5 and len(out[0][2]) == 5
            res[stamps] = np.median(out[0][2])
        # the reflector's 20 ms wake-up is in the user-space RTT and out of the stamped one
        # (stamped: the schedule's own loop answered, late, with the responder thread parked)
        assert res[False] >= 20000.0
        assert res[True] < 5000.0
    finally:
        agent_mod._state["stop"].set()
        resp.unpark()
        raw.close()
        t.join(2)


def test_more_passes_give_more_round_orders():
    from plink.probes.rounds import pack_rounds, round_robin

    full = [p for r in round_robin(16) for p in r]
    orders = [pack_rounds(full, 16, shift=s) for s in range(4)]
    firsts = [tuple(o[0]) for o in orders]
    assert len(set(firsts)) == 4  # four passes, four different round orders


def test_heartbeat_never_waits_for_one_agent():
    import threading

    class Pipe:
        def __init__(self, ready):
            self.ready, self.lines = ready, []

        def write_ready(self):
            return self.ready

        def write(self, data):
            self.lines.append(data)

    stalled = AgentSession(Pipe(False), "stalled")   # its channel cannot take data now
    stalled.heartbeat()
    assert stalled.pipe.lines == [] and not stalled.dead
    busy = AgentSession(Pipe(True), "busy")          # another write to it is in progress
    busy._wlock.acquire()
    t = threading.Thread(target=busy.heartbeat)
    t.start()
    t.join(2)
    assert not t.is_alive() and busy.pipe.lines == []
    busy._wlock.release()
    busy.heartbeat()
    assert busy.pipe.lines == [b'{"op":"hb"}\n']
    busy.send("exit")                                # requests still wait their turn and go out
    assert len(busy.pipe.lines) == 2


def test_agent_runs_from_compiled_code_and_from_source():
    """The code is sent compiled (marshal) for a host whose Python has the
    controller's bytecode magic, and compiled from the source on the host
    otherwise; both give the same agent."""
    import importlib.util

    boot, payload = agent_argv(sys.executable)
    assert payload[:4] == importlib.util.MAGIC_NUMBER
    other = b"\0\0\0\0" + payload[4:]  # another Python's magic: the source path
    for data in (payload, other):
        pipe = ProcessPipe(boot)
        pipe.write(data)
        s = AgentSession(pipe, "x")
        info = s.hello(secrets.token_hex(32), 60, bind="127.0.0.8")
        assert info["addr"] == "127.0.0.8" and info["udp_port"] > 0
        s.close()


def test_agent_json_codec_matches_json():
    import json

    loads, dumps = agent_mod.json_loads, agent_mod.json_dumps
    objs = [{"id": 3, "op": "udp_sched", "plan": [[0, 0, "10.0.0.1", 5000, 10]], "start": 0.05, "ok": True,
             "x": None, "s": "caf\u00e9 \"q\"\n"}, [1.5, -2, 1e-7, float("nan")], {"hb": 1}]
    for o in objs:
        assert dumps(o) == json.dumps(o, separators=(",", ":"))
        back = loads(dumps(o))
        assert json.dumps(back) == json.dumps(json.loads(json.dumps(o)))
    assert loads(b' {"a": [1, 2]} \n') == {"a": [1, 2]}
    for bad in ("", "{", '{"a": 1} x', "nope"):
        with pytest.raises(ValueError):
            loads(bad)
    with pytest.raises(TypeError):
        dumps({"a": object()})


def test_agent_tool_lookup_matches_stdlib():
    import importlib.util

    assert agent_mod.which("sh") == shutil.which("sh")
    assert agent_mod.which("no-such-program-plink") is None
    # the agent runs without site (-S); it still finds what site would add
    s = AgentSession(local_pipe(), "x")
    info = s.hello(secrets.token_hex(32), 60, bind="127.0.0.9")
    s.close()
    assert info["icmplib"] == (importlib.util.find_spec("icmplib") is not None)
    assert agent_mod.has_module("json") and not agent_mod.has_module("no_such_module_plink")


def test_running_schedule_answers_pings_once_and_only_authentic_ones(pair):
    """While a schedule runs, its loop answers the agent's pings (the
    responder thread is parked): still one pong per fresh authentic ping,
    none to a forged or replayed one, and at most ``NAP_MAX`` late."""
    a, b, token = pair
    key = bytes.fromhex(token)
    slot = 0.5
    rid = a.send("udp_sched", plan=[[0, 0, "127.0.0.3", b.info["udp_port"], 40]], start=0.0, slot=slot, count=40,
                 interval=0.025, timeout=1.0)
    time.sleep(0.2)  # a's loop is running its slot now
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.10", 0))
    s.settimeout(0.3)
    dst = ("127.0.0.2", a.info["udp_port"])
    good = _pkt(key, rnd=9, seq=11)
    t = time.monotonic()
    s.sendto(good, dst)
    data, _ = s.recvfrom(100)
    assert time.monotonic() - t < 0.2
    assert struct.unpack("!4sBHIQ", data[:19])[1:] == (2, 5, 9, 11)
    for bad in (good, _pkt(secrets.token_bytes(32), seq=12)):  # a replay, a wrong key
        s.sendto(bad, dst)
        with pytest.raises(socket.timeout):
            s.recvfrom(100)
    s.close()
    res = a.wait(rid, 10)
    assert res["ok"] and len(a.parts[rid][0][2]) == 40  # its own pings were all answered too
    b_s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # after the schedule the thread answers again
    b_s.bind(("127.0.0.10", 0))
    b_s.settimeout(0.5)
    b_s.sendto(_pkt(key, rnd=9, seq=13), dst)
    assert b_s.recvfrom(100)
    b_s.close()


def test_agent_keeps_hearing_heartbeats_while_its_output_is_stuck():
    """Nobody drains the agent's stdout (a starved sshd or controller): its
    main thread blocks writing replies, but the stdin reader neither waits
    to answer heartbeats nor stops hearing them, so the agent does not take
    the stuck output for the controller's silence."""
    s = AgentSession(local_pipe(), "x")
    s.hello(secrets.token_hex(32), 600, bind="127.0.0.11", hb_timeout=1.5)
    lines = b"".join(b'{"id":%d,"op":"extend","deadline":600}\n' % (100 + i) for i in range(6000))
    s.pipe.write(lines)  # ~150 KB of answers: more than the pipe holds, and we do not read
    t = time.monotonic()
    while time.monotonic() - t < 3.5:  # twice the timeout, heartbeats only
        s.pipe.write(b'{"op":"hb"}\n')
        time.sleep(0.3)
        assert s.pipe.proc.poll() is None, s.pipe.stderr_tail()
    got = b""
    while b'"id":6099,' not in got:  # drain: every request was answered after all
        got += s.pipe.read(5.0)
    assert s.pipe.proc.poll() is None
    s.close()


def test_site_prefixes_follow_a_virtual_environment(tmp_path, monkeypatch):
    """Under ``-S`` the agent predicts site's prefixes itself: a venv's folder, plus the
    base only when the venv includes the system site-packages; none outside a venv."""
    import site

    (tmp_path / "bin").mkdir()
    monkeypatch.setattr(agent_mod.sys, "executable", str(tmp_path / "bin" / "python3"))
    assert agent_mod._site_prefixes(site) is None
    cfg = tmp_path / "pyvenv.cfg"
    cfg.write_text("home = /usr/bin\ninclude-system-site-packages = false\n")
    assert agent_mod._site_prefixes(site) == [str(tmp_path)]
    cfg.write_text("home = /usr/bin\nInclude-System-Site-Packages = True\n")
    assert agent_mod._site_prefixes(site) == [str(tmp_path)] + list(site.PREFIXES)
    cfg.unlink()
    (tmp_path / "bin" / "pyvenv.cfg").write_text("include-system-site-packages=false\n")
    assert agent_mod._site_prefixes(site) == [str(tmp_path)]


def test_resume_without_bandwidth_of_a_bandwidth_probe_is_refused(tmp_path):
    """A bandwidth probe stopped after its latency pass, resumed without --bandwidth, was called complete
    with no bandwidth measured (and ``plink order`` priced the holes); it is refused, saying why."""
    from plink.errors import PlinkError

    hosts = [f"127.0.0.{i}" for i in range(20, 24)]
    out = tmp_path / "probe.json"

    def stop(r, pairs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        probe_hosts(hosts, count=3, interval=0.002, bandwidth=True, bw_seconds=0.1, connect=start_local_agents,
                    checkpoint=out, after_round=stop)
    assert not load(out).meta["complete"]
    with pytest.raises(PlinkError, match=r"without --bandwidth: it was probed with it and 6 of 6 pairs have no "
                                         r"bandwidth yet"):
        probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out, resume=True)


def test_a_fresh_probe_refuses_to_drop_an_interrupted_probes_journal(tmp_path):
    """A plain rerun over a killed probe's -o deleted its journal without a word."""
    hosts = [f"127.0.0.{i}" for i in range(40, 44)]
    out = tmp_path / "probe.json"
    journal = tmp_path / "probe.json.journal"

    def stop(r, pairs):  # a kill -9 after the first round: its journal, no probe file
        kept.append(journal.read_bytes())
        raise KeyboardInterrupt

    kept = []
    with pytest.raises(KeyboardInterrupt):
        probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out, after_round=stop)
    out.unlink()
    journal.write_bytes(kept[0])
    kept = journal.read_bytes()
    assert kept.count(b"\n") > 1
    with pytest.raises(PlinkError, match=r"probe.json.journal holds what an interrupted probe measured: --resume"):
        probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out)
    assert journal.read_bytes() == kept and not out.exists()
    done = probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out, resume=True)
    assert done.meta["complete"] and not journal.exists()
    lines = kept.decode().splitlines()
    assert lines[1].startswith('["a"')
    journal.write_text(lines[0] + "\n" + lines[1] + "\n")  # a header and an address hold nothing: replaced
    assert probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out).meta["complete"]
    journal.write_text("my notes\n")  # someone else's file at the journal's name is not deleted
    with pytest.raises(PlinkError, match=r"probe.json.journal is not a plink probe journal"):
        probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out)
    assert journal.read_text() == "my notes\n"


def test_a_probe_that_reaches_no_host_leaves_the_output_file_as_it_was(tmp_path):
    """A bad key, ssh config or known_hosts fails every host: such a probe replaced a good file with
    an all-null matrix. It measures nothing, so it writes nothing."""
    from plink.probes.probe import measured_anything

    hosts = [f"127.0.0.{i}" for i in range(30, 33)]
    out = tmp_path / "probe.json"
    good = probe_hosts(hosts, count=3, interval=0.002, connect=start_local_agents, checkpoint=out)
    assert measured_anything(good)
    before = out.read_bytes()
    refused = probe_hosts(hosts, count=3, interval=0.002, checkpoint=out,
                          connect=lambda entries, key, deadline, on_done: ({}, {k: "refused" for k in range(len(entries))}))
    assert not measured_anything(refused) and len(refused.meta["unreachable"]) == 3
    assert out.read_bytes() == before and not (tmp_path / "probe.json.journal").exists()


def test_the_summary_counts_missing_bandwidth_and_a_stop_says_what_was_kept(tmp_path):
    """`plink probe --bandwidth` whose bandwidth pairs are missing (a host died in the bandwidth rounds)
    printed "36/36 pairs" and exited 0; the summary counts the probe's own missing pairs (latency, or
    bandwidth when it was asked for) and says how many bandwidths it has. After Ctrl-C or SIGTERM the
    CLI says what the file kept."""
    from plink.cli.probe import _kept, _probe_summary, _stat

    hosts = [f"127.0.0.{i}" for i in range(40, 44)]
    out = tmp_path / "probe.json"

    def stop(r, pairs):
        raise KeyboardInterrupt

    before = _stat(out)
    with pytest.raises(KeyboardInterrupt):
        probe_hosts(hosts, count=3, interval=0.002, bandwidth=True, bw_seconds=0.1, connect=start_local_agents,
                    checkpoint=out, after_round=stop)
    part = load(out)
    s = _probe_summary(part, str(out))
    assert s["missing_pairs"] == 6 and s["missing_latency_pairs"] == 0 and s["missing_bandwidth_pairs"] == 6
    assert s["exit_code"] == 3
    assert _kept(str(out), before, "SIGTERM") == (f"stopped by SIGTERM: 0 of 6 pairs measured (latency of 6, bandwidth of 0), kept in {out} "
                                                  f"(rerun with -o {out} --resume)")
    assert _kept(str(out), _stat(out), "Ctrl-C") == (f"stopped by Ctrl-C before any pair was measured: {out} "
                                                     "left as it was")
    # the hint repeats what to measure (a resume without --bandwidth of this file is refused), and a
    # run that was to test the uplinks says the test is not done (a resume of a complete file without
    # the options called it complete)
    # (the hint itself, the whole command as the user gave it: test_probe_cli.py)
    hint = f"rerun with: plink probe hosts.txt -o {out} --resume --bandwidth --bw-seconds 0.1"
    assert _kept(str(out), before, "SIGTERM", hint, True) == (
        f"stopped by SIGTERM: 0 of 6 pairs measured (latency of 6, bandwidth of 0), the shared-uplink test not "
        f"done, kept in {out} ({hint})")


def test_resume_with_a_host_left_out_keeps_the_other_pairs(tmp_path):
    """A host that died or never answered: `plink group` says "leave it out", and the way is the host
    list without it and --resume (which refused any other host list): its pairs go, the others' are
    kept and nothing is measured again. A host the file does not have is still refused."""
    from plink.errors import PlinkError

    hosts = [f"127.0.0.{i}" for i in range(50, 54)]
    out = tmp_path / "probe.json"

    def all_but_the_last(entries, key, deadline, on_done):
        sessions, failures = start_local_agents(entries[:-1], key, deadline, on_done)
        return sessions, {**failures, len(entries) - 1: "connection refused"}

    first = probe_hosts(hosts, count=3, interval=0.002, connect=all_but_the_last, checkpoint=out)
    assert not first.meta["complete"] and first.n_missing_pairs() == 3
    calls = []
    left = probe_hosts(hosts[2::-1], count=3, interval=0.002, checkpoint=out, resume=True,
                       connect=lambda *a: calls.append(a) or ({}, {}))
    assert calls == [] and left.meta["complete"] and left.meta["left_out"] == [hosts[3]]
    assert left.names == hosts[2::-1] and load(out).names == hosts[2::-1]
    np.testing.assert_allclose(left.latency, first.latency[np.ix_([2, 1, 0], [2, 1, 0])], atol=1e-3)
    with pytest.raises(PlinkError, match=r"127\.0\.0\.60 is not in it"):
        probe_hosts(hosts[:2] + ["127.0.0.60"], count=3, connect=start_local_agents, checkpoint=out, resume=True)


def test_a_resume_keeps_what_the_file_measured(tmp_path, monkeypatch):
    """A resume rewrote the file without its uplink test, its faster directions (latency_best_us) and
    its per-pair confidence, intervals and per-host overheads; and with uplinks asked for it tested them
    again over the hosts of the missing pairs only, writing a part of a rack over the whole rack's
    figures. It keeps all of them for the pairs it does not measure, and the file's uplink test."""
    import json

    import plink.probes.uplinks as uplinks_mod
    from plink.data.probefile import Uplink

    hosts = [f"127.0.0.{i}" for i in range(60, 64)]
    out = tmp_path / "probe.json"
    first = probe_hosts(hosts, count=4, interval=0.002, connect=start_local_agents, checkpoint=out)
    doc = json.loads(out.read_text())
    n = len(hosts)
    doc["latency_us"][0][1] = doc["latency_us"][1][0] = None  # one pair to measure again
    doc["latency_us"][2][3], doc["latency_us"][3][2] = 7.0, 9.0  # asymmetric: its faster direction is 7
    doc["latency_best_us"] = [[None if i == j else 7.0 if {i, j} == {2, 3} else doc["latency_us"][i][j]
                               for j in range(n)] for i in range(n)]
    doc["uplinks"] = [Uplink((0, 1), 4.0e7, 4.1e7).to_dict(), Uplink((2, 3), 4.2e7, 4.3e7).to_dict()]
    out.write_text(json.dumps(doc))
    before = load(out)

    def no_test(*a, **k):
        raise AssertionError("the uplink test ran again on a resume")

    monkeypatch.setattr(uplinks_mod, "measure_uplinks", no_test)
    done = probe_hosts(hosts, count=4, interval=0.002, connect=start_local_agents, checkpoint=out, resume=True,
                       uplinks=True)
    again = load(out)
    assert done.meta["complete"] and np.isfinite(again.latency[0, 1])
    assert [(u.hosts, u.up_bps) for u in again.uplinks] == [((0, 1), 4.0e7), ((2, 3), 4.2e7)]
    assert again.meta["uplinks"]["kept"] == "from the resumed file"
    assert again.latency_best[2, 3] == pytest.approx(7.0) and again.latency[2, 3] == pytest.approx(9.0)
    kept = ~np.eye(n, dtype=bool)
    kept[0, 1] = kept[1, 0] = False
    for key in ("confidence", "samples_received"):
        a, b = np.array(again.meta[key], dtype=float), np.array(before.meta[key], dtype=float)
        np.testing.assert_allclose(a[kept], b[kept])
    assert again.meta["samples_received"][0][1] == 4  # measured again
    # hosts 2 and 3 were not connected again: their overheads are the file's
    assert again.meta["host_overhead_us"][2:] == first.meta["host_overhead_us"][2:]
    assert None not in again.meta["host_overhead_us"]


def test_a_complete_resume_runs_an_uplink_test_the_file_lacks(monkeypatch):
    """A file probed without the uplink test, resumed with it asked for: nothing else is missing, and
    the resume said "nothing to measure"; it measures the uplinks now, over every host, and re-measures
    no pair. A file that has them is left as it is (test above)."""
    import tempfile
    from pathlib import Path

    from plink.probes import uplinks

    groups = []
    real = uplinks.infer_groups
    monkeypatch.setattr(uplinks, "infer_groups", lambda lat, **kw: groups.append(len(lat)) or real(lat, **kw))
    hosts = [f"127.0.0.{i}" for i in range(70, 74)]
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "probe.json"
        first = probe_hosts(hosts, count=4, interval=0.002, bandwidth=True, bw_seconds=0.1, connect=start_local_agents,
                            checkpoint=out)
        assert first.meta["complete"] and "uplinks" not in first.meta and groups == []
        again = probe_hosts(hosts, count=4, interval=0.002, bandwidth=True, bw_seconds=0.1, uplinks=True,
                            connect=start_local_agents, checkpoint=out, resume=True)
    assert groups == [4] and "groups" in again.meta["uplinks"]  # the uplink phase ran, over all 4 hosts
    assert again.meta["schedule"] == []  # no pair measured again
    np.testing.assert_allclose(again.latency, first.latency, atol=1e-3)  # (as written to the file: rounded)


def test_the_uplink_test_groups_every_host_measured_and_leaves_out_the_lost(monkeypatch):
    """A host lost before the uplink test: its groups were inferred over the survivors alone, so a
    rack left with one host joined another rack's test (the outside-in check: "uplink of 4 hosts
    (r1h0, r1h1, r1h2, r2h0)"), which then measured no link plink order prices. The groups are those
    of every host measured; the lost host only leaves its own group's test."""
    from plink.probes import session, uplinks

    seen = {}
    lost = set()
    real_live = session.Fleet.live
    monkeypatch.setattr(session.Fleet, "live", lambda self: [i for i in real_live(self) if i not in lost])
    monkeypatch.setattr(uplinks, "infer_groups",
                        lambda lat, **kw: seen.setdefault("n", len(lat)) and ([[0, 1, 2], [3, 4, 5]], "test"))
    monkeypatch.setattr(uplinks, "measure_uplinks", lambda stage, addresses, groups, *a, **k: seen.setdefault(
        "groups", groups) and [])
    hosts = [f"127.0.0.{i}" for i in range(80, 86)]

    def lose_the_last(r, pairs):
        lost.add(5)

    p = probe_hosts(hosts, count=3, interval=0.002, uplinks=True, connect=start_local_agents, after_round=lose_the_last)
    assert seen == {"n": 6, "groups": [[0, 1, 2], [3, 4]]} and p.meta["uplinks"]["n_groups"] == 2
