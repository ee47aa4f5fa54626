"""plink's remote agent: streamed over SSH as text, run by ``python3``, stdlib only.

This file is sent verbatim to each host (nothing is installed) and started
with ``python3 -u -c BOOT N`` where ``BOOT`` reads the next ``N`` bytes of
stdin and executes them; the rest of stdin is the command stream.  It must
therefore stay one self-contained source file importing only the standard
library (``icmplib`` and the ``fping`` / ``iperf3`` programs are used only
when the host has them) and run on Python >= 3.6.

Protocol: one JSON object per line.  Requests ``{"id": k, "op": ...}`` on
stdin; every reply is one line ``PLK1 {"id": k, "ok": true, ...}`` on
stdout (the prefix lets the controller skip stray output of shell dotfiles).

Operations: ``hello`` (set the per-run token and a deadline, start the UDP
echo responder on the host's address, report tools), ``udp_ping``, ``fping``,
``icmp``, ``tcp_listen`` / ``tcp_send`` / ``tcp_result`` (built-in TCP
throughput), ``iperf3_server`` / ``iperf3_client`` / ``iperf3_stop``,
``extend`` (move the deadline), ``exit``.

Safety: UDP and TCP peers must present the random per-run token (16 bytes)
or are ignored; sockets bind to the host's own address only; the agent
exits -- closing every socket and killing any child -- when stdin reaches
EOF (the SSH channel closed), on ``exit``, or when its deadline passes.
"""

import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

MAGIC = b"PLK1"
PING, PONG = 1, 2
HDR = struct.Struct("!4s16sBII")  # magic, token, kind, round, seq
PREFIX = "PLK1 "

_state = {
    "token": None,
    "addr": None,
    "deadline": None,
    "children": [],
    "sockets": [],
    "tcp": None,
    "stop": threading.Event(),
}
_out_lock = threading.Lock()


def now():
    return time.perf_counter()


def reply(obj):
    line = PREFIX + json.dumps(obj, separators=(",", ":")) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def cleanup():
    _state["stop"].set()
    for proc in _state["children"]:
        try:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
        except Exception:
            pass
    for s in _state["sockets"]:
        try:
            s.close()
        except Exception:
            pass


def die(code=0):
    cleanup()
    try:
        sys.stdout.flush()
    except Exception:
        pass
    os._exit(code)


def watchdog():
    while not _state["stop"].wait(0.5):
        deadline = _state["deadline"]
        if deadline is not None and time.time() > deadline:
            sys.stderr.write("plink-agent: deadline passed, exiting\n")
            die(3)


def own_address():
    """The address the controller reached us at (sshd's SSH_CONNECTION)."""
    conn = os.environ.get("SSH_CONNECTION", "").split()
    if len(conn) >= 3:
        return conn[2]
    return "127.0.0.1"


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def sockaddr(addr, port):
    if ":" in addr:
        return (addr, port, 0, 0)
    return (addr, port)


# ---------------------------------------------------------------------------
# UDP echo responder and sender


def responder(sock, token):
    while not _state["stop"].is_set():
        try:
            data, peer = sock.recvfrom(2048)
        except socket.timeout:
            continue
        except OSError:
            return
        if len(data) < HDR.size:
            continue
        magic, tok, kind, rnd, seq = HDR.unpack_from(data)
        if magic != MAGIC or tok != token or kind != PING:
            continue  # not ours: ignore
        try:
            sock.sendto(HDR.pack(MAGIC, token, PONG, rnd, seq) + data[HDR.size:], peer)
        except OSError:
            pass


def op_hello(req):
    token = bytes.fromhex(req["token"])
    if len(token) != 16:
        raise ValueError("token must be 16 bytes")
    _state["token"] = token
    _state["deadline"] = time.time() + float(req.get("deadline", 600))
    addr = req.get("bind") or own_address()
    _state["addr"] = addr
    sock = socket.socket(family(addr), socket.SOCK_DGRAM)
    _state["sockets"].append(sock)
    sock.bind(sockaddr(addr, 0))
    sock.settimeout(0.2)
    threading.Thread(target=responder, args=(sock, token), daemon=True).start()
    icmp = False
    try:
        import icmplib  # noqa: F401

        icmp = True
    except Exception:
        pass
    return {
        "addr": addr,
        "udp_port": sock.getsockname()[1],
        "hostname": socket.gethostname(),
        "python": "%d.%d.%d" % sys.version_info[:3],
        "pid": os.getpid(),
        "fping": shutil.which("fping"),
        "iperf3": shutil.which("iperf3"),
        "icmplib": icmp,
    }


def op_udp_ping(req):
    token = _state["token"]
    addr, port = req["addr"], int(req["port"])
    count, interval = int(req["count"]), float(req["interval"])
    rnd, timeout = int(req["round"]), float(req.get("timeout", 1.0))
    size = max(HDR.size, int(req.get("size", 64)))
    pad = b"\0" * (size - HDR.size)
    sock = socket.socket(family(addr), socket.SOCK_DGRAM)
    _state["sockets"].append(sock)
    try:
        sock.bind(sockaddr(_state["addr"], 0))
        sock.setblocking(False)
        target = sockaddr(addr, port)
        sent = {}
        rtts = {}
        t0 = now()
        seq = 0
        end = None
        while True:
            t = now()
            if seq < count and t >= t0 + seq * interval:
                sent[seq] = now()
                try:
                    sock.sendto(HDR.pack(MAGIC, token, PING, rnd, seq) + pad, target)
                except OSError:
                    pass
                seq += 1
                if seq == count:
                    end = now() + timeout
                continue
            if seq == count and (len(rtts) == count or now() >= end):
                break
            wake = t0 + seq * interval if seq < count else end
            wait = max(0.0, wake - now())
            r, _, _ = select.select([sock], [], [], wait)
            if not r:
                continue
            while True:
                try:
                    data, peer = sock.recvfrom(2048)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break
                tr = now()
                if len(data) < HDR.size:
                    continue
                magic, tok, kind, r_id, s = HDR.unpack_from(data)
                if magic != MAGIC or tok != token or kind != PONG or r_id != rnd:
                    continue
                if s in sent and s not in rtts:
                    rtts[s] = (tr - sent[s]) * 1e6
    finally:
        sock.close()
        _state["sockets"].remove(sock)
    return {"rtts_us": [round(rtts[s], 2) for s in sorted(rtts)], "sent": count}


# ---------------------------------------------------------------------------
# fping and icmplib


def op_fping(req):
    exe = shutil.which("fping")
    if not exe:
        raise RuntimeError("fping is not installed on this host")
    addr, count = req["addr"], int(req["count"])
    period = max(1, int(round(float(req["interval"]) * 1000)))
    argv = [exe, "-C", str(count), "-p", str(period), "-q", "-t", str(int(float(req.get("timeout", 1.0)) * 1000))]
    if _state["addr"]:
        argv += ["-S", _state["addr"]]
    argv += ["--", addr]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    _state["children"].append(proc)
    try:
        out, err = proc.communicate(timeout=count * period / 1000.0 + 30)
    finally:
        _state["children"].remove(proc)
    return {"rtts_us": parse_fping(err.decode("utf-8", "replace"), addr), "sent": count}


def parse_fping(text, addr):
    """Samples (us) for ``addr`` from ``fping -C`` output (``-`` = lost)."""
    for line in text.splitlines():
        if " : " not in line:
            continue
        target, _, rest = line.partition(" : ")
        if target.strip() != addr:
            continue
        out = []
        for tok in rest.split():
            if tok == "-":
                continue
            try:
                out.append(round(float(tok) * 1000.0, 2))
            except ValueError:
                pass
        return out
    raise RuntimeError("fping printed no result for %s: %s" % (addr, text.strip()[:200]))


def op_icmp(req):
    try:
        import icmplib
    except Exception:
        raise RuntimeError("icmplib is not installed for this host's python3")
    addr, count = req["addr"], int(req["count"])
    kw = dict(count=count, interval=float(req["interval"]), timeout=float(req.get("timeout", 1.0)),
              privileged=(os.geteuid() == 0))
    if _state["addr"]:
        kw["source"] = _state["addr"]
    try:
        host = icmplib.ping(addr, **kw)
    except Exception as exc:  # SocketPermissionError and friends
        raise RuntimeError("icmp not permitted: %s" % (exc,))
    return {"rtts_us": [round(r * 1000.0, 2) for r in host.rtts], "sent": count}


# ---------------------------------------------------------------------------
# built-in TCP throughput


class TcpReceiver(object):
    def __init__(self, streams, timeout):
        addr = _state["addr"]
        self.sock = socket.socket(family(addr), socket.SOCK_STREAM)
        _state["sockets"].append(self.sock)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(sockaddr(addr, 0))
        self.sock.listen(streams + 4)
        self.sock.settimeout(0.02)
        self.port = self.sock.getsockname()[1]
        self.streams = streams
        self.timeout = timeout
        self.lock = threading.Lock()
        self.bytes = 0
        self.first = None
        self.last = None
        self.accepted = 0
        self.workers = []
        self.thread = threading.Thread(target=self.accept_loop, daemon=True)
        self.thread.start()

    def accept_loop(self):
        end = time.time() + self.timeout
        while self.accepted < self.streams and time.time() < end and not _state["stop"].is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            t = threading.Thread(target=self.reader, args=(conn,), daemon=True)
            self.workers.append(t)
            t.start()
        self.close_listener()

    def close_listener(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def reader(self, conn):
        conn.settimeout(self.timeout)
        try:
            head = b""
            while len(head) < 16:
                chunk = conn.recv(16 - len(head))
                if not chunk:
                    return
                head += chunk
            if head != _state["token"]:
                return  # not ours
            with self.lock:
                self.accepted += 1
            buf = bytearray(1 << 18)
            view = memoryview(buf)
            total = 0
            first = None
            while True:
                n = conn.recv_into(view)
                if not n:
                    break
                t = now()
                if first is None:
                    first = t
                total += n
            last = now()
            with self.lock:
                self.bytes += total
                if first is not None:
                    self.first = first if self.first is None else min(self.first, first)
                    self.last = last if self.last is None else max(self.last, last)
        except OSError:
            pass
        finally:
            conn.close()

    def result(self, wait):
        self.thread.join(wait)
        end = time.time() + wait
        for t in self.workers:
            t.join(max(0.0, end - time.time()))
        self.close_listener()
        span = (self.last - self.first) if self.first is not None and self.last is not None else 0.0
        return {"bytes": self.bytes, "seconds": span, "streams": self.accepted}


def op_tcp_listen(req):
    if _state["tcp"] is not None:
        _state["tcp"].close_listener()
    streams = int(req.get("streams", 1))
    _state["tcp"] = TcpReceiver(streams, float(req.get("seconds", 5)) + float(req.get("timeout", 10)))
    return {"port": _state["tcp"].port}


def op_tcp_send(req):
    addr, port = req["addr"], int(req["port"])
    streams, seconds = int(req.get("streams", 1)), float(req["seconds"])
    token = _state["token"]
    socks = []
    for _ in range(streams):
        s = socket.socket(family(addr), socket.SOCK_STREAM)
        _state["sockets"].append(s)
        s.settimeout(float(req.get("timeout", 10)))
        s.bind(sockaddr(_state["addr"], 0))
        s.connect(sockaddr(addr, port))
        s.sendall(token)
        socks.append(s)
    sent = [0] * streams
    payload = os.urandom(1 << 16) * 4
    end = now() + seconds

    def pump(i):
        s = socks[i]
        try:
            while now() < end:
                s.sendall(payload)
                sent[i] += len(payload)
            s.shutdown(socket.SHUT_WR)
            s.recv(1)  # wait until the receiver has read everything and closed
        except OSError:
            pass

    threads = [threading.Thread(target=pump, args=(i,), daemon=True) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in socks:
        s.close()
        _state["sockets"].remove(s)
    return {"bytes_sent": sum(sent)}


def op_tcp_result(req):
    rx = _state["tcp"]
    if rx is None:
        raise RuntimeError("no tcp_listen before tcp_result")
    _state["tcp"] = None
    return rx.result(float(req.get("timeout", 10)))


# ---------------------------------------------------------------------------
# iperf3


def listening_tcp(port):
    want = "%04X" % port
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as fh:
                next(fh)
                for line in fh:
                    f = line.split()
                    if f[1].rsplit(":", 1)[1] == want and f[3] == "0A":
                        return True
        except (OSError, StopIteration):
            pass
    return False


def free_port():
    s = socket.socket(family(_state["addr"]), socket.SOCK_STREAM)
    try:
        s.bind(sockaddr(_state["addr"], 0))
        return s.getsockname()[1]
    finally:
        s.close()


def op_iperf3_server(req):
    exe = shutil.which("iperf3")
    if not exe:
        raise RuntimeError("iperf3 is not installed on this host")
    op_iperf3_stop({})
    port = free_port()
    argv = [exe, "-s", "-1", "-B", _state["addr"], "-p", str(port)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    _state["children"].append(proc)
    _state["iperf3"] = proc
    end = now() + 5.0
    while now() < end:
        if listening_tcp(port):
            return {"port": port}
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    err = proc.stderr.read().decode("utf-8", "replace") if proc.poll() is not None else ""
    op_iperf3_stop({})
    raise RuntimeError("iperf3 server did not start: %s" % err.strip()[:200])


def op_iperf3_client(req):
    exe = shutil.which("iperf3")
    if not exe:
        raise RuntimeError("iperf3 is not installed on this host")
    seconds = max(1, int(-(-float(req["seconds"]) // 1)))  # iperf3 -t takes whole seconds
    argv = [exe, "-c", req["addr"], "-p", str(int(req["port"])), "-B", _state["addr"], "-J",
            "-t", str(seconds), "-P", str(int(req.get("streams", 1)))]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    _state["children"].append(proc)
    try:
        out, err = proc.communicate(timeout=seconds + 30)
    finally:
        _state["children"].remove(proc)
    try:
        doc = json.loads(out.decode("utf-8", "replace"))
    except ValueError:
        raise RuntimeError("iperf3 printed no JSON: %s" % err.decode("utf-8", "replace").strip()[:200])
    if doc.get("error"):
        raise RuntimeError("iperf3: %s" % doc["error"])
    summ = doc.get("end", {}).get("sum_received") or doc.get("end", {}).get("sum", {})
    return {"bits_per_second": float(summ.get("bits_per_second", 0.0)), "seconds": float(summ.get("seconds", 0.0))}


def op_iperf3_stop(req):
    proc = _state.pop("iperf3", None)
    if proc is not None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc in _state["children"]:
            _state["children"].remove(proc)
    return {}


# ---------------------------------------------------------------------------


def op_extend(req):
    _state["deadline"] = time.time() + float(req["deadline"])
    return {}


OPS = {
    "hello": op_hello,
    "udp_ping": op_udp_ping,
    "fping": op_fping,
    "icmp": op_icmp,
    "tcp_listen": op_tcp_listen,
    "tcp_send": op_tcp_send,
    "tcp_result": op_tcp_result,
    "iperf3_server": op_iperf3_server,
    "iperf3_client": op_iperf3_client,
    "iperf3_stop": op_iperf3_stop,
    "extend": op_extend,
}


def main():
    try:
        sys.setswitchinterval(0.0005)
    except Exception:
        pass
    signal.signal(signal.SIGTERM, lambda *a: die(0))
    signal.signal(signal.SIGHUP, lambda *a: die(0))
    _state["deadline"] = time.time() + 120  # until hello sets the real one
    threading.Thread(target=watchdog, daemon=True).start()
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            die(0)  # SSH channel closed
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line.decode("utf-8"))
            rid = req.get("id")
        except ValueError:
            reply({"id": None, "ok": False, "error": "bad request line"})
            continue
        op = req.get("op")
        if op == "exit":
            reply({"id": rid, "ok": True})
            die(0)
        if op != "hello" and _state["token"] is None:
            reply({"id": rid, "ok": False, "error": "hello first"})
            continue
        fn = OPS.get(op)
        if fn is None:
            reply({"id": rid, "ok": False, "error": "unknown op %r" % (op,)})
            continue
        try:
            res = fn(req)
            res["id"], res["ok"] = rid, True
        except Exception as exc:
            res = {"id": rid, "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
        reply(res)


if __name__ == "__main__":
    main()
