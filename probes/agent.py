"""plink's remote agent: streamed over SSH, run by ``python3``, stdlib only.

This file is sent to each host (nothing is installed) and started with
``python3 -S -u -c BOOT C N`` where ``BOOT`` reads the next ``C`` bytes of
stdin (this file compiled by the controller: bytecode magic + ``marshal``
data, run when the host's Python has the same magic) and the ``N`` after them
(this source, compiled on the host otherwise); the rest of stdin is the
command stream (:func:`probes.session.agent_payload`).  It must
therefore stay one self-contained source file importing only the standard
library (``icmplib`` and the ``fping`` / ``iperf3`` programs are used only
when the host has them) and run on Python >= 3.6.

Protocol: one JSON object per line.  Requests ``{"id": k, "op": ...}`` on
stdin; every reply is one line ``PLK1 {"id": k, "ok": true, ...}`` on
stdout (the prefix lets the controller skip stray output of shell dotfiles).

Operations: ``hello`` (set the per-run key, the host id, a hard deadline and
the heartbeat timeout, start the UDP echo responder on the host's address,
report tools), ``udp_ping`` (one pair, one direction), ``udp_sched`` (a whole
self-timed schedule: slot ``k`` starts ``start + k x slot`` seconds after the
request arrived; results stream back as ``{"id": k, "part": [...]}`` lines,
so the controller needs no round trip per round), ``fping``, ``icmp``,
``tcp_listen`` / ``tcp_send`` / ``tcp_result`` (built-in TCP throughput),
``iperf3_server`` / ``iperf3_client`` / ``iperf3_stop``, ``extend`` (move the
deadline), ``hb`` (heartbeat, answered at once by the stdin reader thread
with ``PLK1 {"hb":1}``), ``exit``.

Safety: every UDP packet carries an HMAC-SHA256 tag (truncated to 16 bytes,
stdlib ``hmac``) under the random per-run key, over its kind, sender id,
round and a per-sender 64-bit sequence number; the responder answers a ping
only if the tag is right and the sequence number was not seen before (a
sliding replay window of 4096 per sender, as IPsec/DTLS do), so a forged or
replayed packet gets no answer.  The TCP test is a challenge/response: the
receiver sends a fresh 16-byte nonce, the sender must answer
``HMAC(key, "tcp" + nonce)``.  Sockets bind to the host's own address only.
The agent exits -- closing every socket and killing any child -- when stdin
reaches EOF (the SSH channel closed), on ``exit``, when its hard deadline
passes, or when nothing (not even a heartbeat) came from the controller for
``hb_timeout`` seconds (a partition, a suspended or killed controller).
"""

import _signal
import _socket
import hmac
import os
import select
import struct
import sys
import threading
import time

# Start-up cost: one agent starts on every host, so what it imports is paid N
# times (on real VMs in parallel, on an emulated cluster on the same cores).
# The latency path imports only what it needs, and the C modules behind
# ``socket``, ``signal`` and ``json`` where the pure-Python wrapper would pull
# in ``enum``/``re``; ``subprocess``, ``socket`` (TCP) and ``json`` (iperf3)
# are imported by the ops that need them.  Measured with ``python3 -S``:
# 39 ms of CPU for the old imports, 23 ms for these
# (``benchmarks/agent_start.py``).


def _json_codec():
    """``(loads, dumps)`` over the C accelerator ``_json`` (no ``re``, ``enum``
    import); the ``json`` module where there is none (PyPy).  Compact
    separators, ASCII output, NaN allowed: what ``json.dumps(obj,
    separators=(",", ":"))`` writes."""
    try:
        import _json

        class Ctx(object):
            strict = True
            object_hook = None
            object_pairs_hook = None
            parse_float = float
            parse_int = int
            parse_constant = float  # NaN, Infinity
            memo = {}

        scan = _json.make_scanner(Ctx())

        def default(o):
            raise TypeError("%s is not JSON serializable" % type(o).__name__)

        enc = _json.make_encoder(None, default, _json.encode_basestring_ascii, None, ":", ",", False, False, True)

        def loads(text):
            if isinstance(text, bytes):
                text = text.decode("utf-8")
            text = text.strip()
            try:
                obj, end = scan(text, 0)
            except StopIteration:
                raise ValueError("not JSON")
            if end != len(text):
                raise ValueError("extra data after JSON")
            return obj

        def dumps(obj):
            return "".join(enc(obj, 0))

        return loads, dumps
    except (ImportError, AttributeError, TypeError):
        import json

        return json.loads, lambda obj: json.dumps(obj, separators=(",", ":"))


json_loads, json_dumps = _json_codec()

MAGIC = b"PLK2"
PING, PONG = 1, 2
HDR = struct.Struct("!4sBHIQ")  # magic, kind, sender id, round, seq
MAC_LEN = 16
REPLAY_WINDOW = 4096
PREFIX = "PLK1 "

_state = {
    "key": None,
    "hid": 0,
    "seq": 0,
    "heard": None,
    "hb_timeout": 30.0,
    "addr": None,
    "deadline": None,
    "children": [],
    "sockets": [],
    "tcp": None,
    "responder": None,
    "stop": threading.Event(),
}
_out_lock = threading.Lock()


def now():
    return time.perf_counter()


def out_ready():
    """True when stdout can take a line now (its pipe to sshd is not full)."""
    try:
        return bool(select.select([], [sys.stdout], [], 0)[1])
    except (OSError, ValueError):
        return True


def reply(obj, block=True):
    """Write one reply line; with ``block=False`` only if that cannot wait
    (another writer busy, or stdout full because nobody drains it -- a
    starved sshd or controller): returns whether it was written.  The stdin
    reader answers heartbeats this way, so it never stops reading (and
    hearing the controller) while the output is stuck."""
    line = PREFIX + json_dumps(obj) + "\n"
    if not _out_lock.acquire(block):
        return False
    try:
        if not block and not out_ready():
            return False
        sys.stdout.write(line)
        sys.stdout.flush()
        return True
    finally:
        _out_lock.release()


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
    last = time.monotonic()
    while not _state["stop"].wait(0.5):
        t = time.monotonic()
        if t - last > 2.0:  # this process was not scheduled (an overloaded host): not the controller's silence
            _state["heard"] += t - last - 0.5
        last = t
        deadline = _state["deadline"]
        if deadline is not None and time.time() > deadline:
            sys.stderr.write("plink-agent: deadline passed, exiting\n")
            die(3)
        if time.monotonic() - _state["heard"] > _state["hb_timeout"]:
            sys.stderr.write("plink-agent: no word from the controller for %.0f s, exiting\n" % _state["hb_timeout"])
            die(4)


# ---------------------------------------------------------------------------
# packet authentication


def mac(key, data):
    return hmac.new(key, data, "sha256").digest()[:MAC_LEN]


def seal(kind, rnd, seq, pad=b"", hid=None):
    body = HDR.pack(MAGIC, kind, _state["hid"] if hid is None else hid, rnd, seq) + pad
    return body + mac(_state["key"], body)


# Kernel receive timestamps (Linux SO_TIMESTAMPNS, CLOCK_REALTIME): the sender
# stamps a ping just before sendto and takes the pong's kernel arrival time;
# the reflector writes its own turnaround (kernel arrival of the ping to just
# before the pong is sealed) into the first 8 bytes of the echoed pad, and the
# sender subtracts it, as TWAMP reflectors do (RFC 5357 4.2.1).  What is left is
# the network path plus two sendto calls and one HMAC: neither side's
# scheduling delay (a busy host's Python waking up late) enters the RTT.
SO_TIMESTAMPNS = 35 if sys.platform.startswith("linux") else None
TURN = struct.Struct("!q")  # reflector turnaround in ns, -1 = unknown


def enable_stamps(sock):
    """Ask the kernel for receive timestamps on ``sock``; False where it cannot."""
    if SO_TIMESTAMPNS is None:
        return False
    try:
        sock.setsockopt(_socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        return True
    except (OSError, AttributeError):
        return False


def recv_stamped(sock, stamped, flags=0):
    """``(data, peer, kernel arrival in ns or None)`` of one datagram."""
    if not stamped:
        data, peer = sock.recvfrom(2048, flags)
        return data, peer, None
    data, anc, _flags, peer = sock.recvmsg(2048, 64, flags)
    for level, kind, cdata in anc:
        if level == _socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            if len(cdata) >= 16:
                sec, nsec = struct.unpack_from("@qq", cdata)
            elif len(cdata) >= 8:
                sec, nsec = struct.unpack_from("@ll", cdata)
            else:
                break
            return data, peer, sec * 1000000000 + nsec
    return data, peer, None


def open_packet(data, key):
    """``(kind, sender id, round, seq)`` of an authentic packet, else None."""
    if len(data) < HDR.size + MAC_LEN:
        return None
    body, tag = data[:-MAC_LEN], data[-MAC_LEN:]
    if body[:4] != MAGIC or not hmac.compare_digest(mac(key, body), tag):
        return None
    return HDR.unpack_from(body)[1:]


class ReplayWindow(object):
    """Per-sender sliding window of seen sequence numbers (RFC 4303 3.4.3)."""

    def __init__(self, size=REPLAY_WINDOW):
        self.size = size
        self.top = {}
        self.bits = {}

    def fresh(self, sender, seq):
        top = self.top.get(sender)
        if top is None or seq > top:
            shift = self.size if top is None else seq - top
            self.bits[sender] = ((self.bits.get(sender, 0) << shift) | 1) & ((1 << self.size) - 1)
            self.top[sender] = seq
            return True
        off = top - seq
        if off >= self.size or (self.bits[sender] >> off) & 1:
            return False
        self.bits[sender] |= 1 << off
        return True


def next_seq():
    _state["seq"] += 1
    return _state["seq"]


def own_address():
    """The address the controller reached us at (sshd's SSH_CONNECTION)."""
    conn = os.environ.get("SSH_CONNECTION", "").split()
    if len(conn) >= 3:
        return conn[2]
    return "127.0.0.1"


def family(addr):
    return _socket.AF_INET6 if ":" in addr else _socket.AF_INET


def sockaddr(addr, port):
    if ":" in addr:
        return (addr, port, 0, 0)
    return (addr, port)


# ---------------------------------------------------------------------------
# UDP echo responder and sender


class Responder(object):
    """The UDP echo: answers authentic, fresh pings on the agent's socket.

    Its thread answers at once while the agent is not probing.  While a
    schedule runs (:func:`run_plan`) the thread is *parked* and the schedule's
    loop answers the pings it finds at each of its own wake-ups: a thread
    wake-up costs 50-110 us of CPU on a VM (measured,
    ``benchmarks/agent_packet_cpu.py``), far more than a ping's work, and one
    wake-up per sent ping instead of three is what lets hundreds of agents
    share few cores.  The later answer does not change the RTT: the reflector's
    turnaround, from the kernel's arrival stamp of the ping to the sealing of
    the pong, is written into the pong and subtracted (see ``TURN``).
    Complexity O(1) per packet."""

    def __init__(self, sock, key):
        self.sock, self.key = sock, key
        self.window = ReplayWindow()
        self.stamped = enable_stamps(sock)
        self._park_r, self._park_w = os.pipe()
        self._parked = threading.Event()
        self._resume = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def answer(self, data, peer, arrived):
        head = open_packet(data, self.key)
        if head is None or head[0] != PING or not self.window.fresh(head[1], head[3]):
            return  # forged, replayed or not ours: no answer
        _, sender, rnd, seq = head
        pad = data[HDR.size:-MAC_LEN]
        if len(pad) >= TURN.size:
            turn = -1 if arrived is None else max(0, time.time_ns() - arrived)
            pad = TURN.pack(turn) + pad[TURN.size:]
        try:
            self.sock.sendto(seal(PONG, rnd, seq, pad, hid=sender), peer)
        except OSError:
            pass

    def drain(self):
        """Answer every ping waiting on the socket, without blocking."""
        while True:
            try:
                data, peer, arrived = recv_stamped(self.sock, self.stamped, _socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            self.answer(data, peer, arrived)

    def run(self):
        while not _state["stop"].is_set():
            try:
                ready, _, _ = select.select([self.sock, self._park_r], [], [])
            except (OSError, ValueError):
                return
            if self._park_r in ready:
                os.read(self._park_r, 64)
                self._parked.set()
                self._resume.wait()
                self._resume.clear()
                continue
            self.drain()

    def park(self):
        """Stop the thread answering: True once it waits (then :meth:`drain`
        is the caller's), False if the thread is gone."""
        os.write(self._park_w, b"p")
        while not self._parked.wait(0.5):
            if not self.thread.is_alive():
                return False
        self._parked.clear()
        return True

    def unpark(self):
        self._resume.set()


def op_hello(req):
    key = bytes.fromhex(req["key"])
    if len(key) < 16:
        raise ValueError("key must be at least 16 bytes")
    _state["key"] = key
    hid = int(req.get("hid", 0))
    if not 0 <= hid <= 0xFFFF:  # the packet header's sender id is 16 bits: no two hosts may share one
        raise ValueError(f"host id {hid} out of range: a probe takes at most 65536 hosts")
    _state["hid"] = hid
    _state["deadline"] = time.time() + float(req.get("deadline", 600))
    _state["hb_timeout"] = float(req.get("hb_timeout", 30.0))
    addr = req.get("bind") or own_address()
    _state["addr"] = addr
    sock = _socket.socket(family(addr), _socket.SOCK_DGRAM)
    _state["sockets"].append(sock)
    sock.bind(sockaddr(addr, 0))
    _state["responder"] = Responder(sock, key)
    return {
        "addr": addr,
        "udp_port": sock.getsockname()[1],
        "hostname": _socket.gethostname(),
        "python": "%d.%d.%d" % sys.version_info[:3],
        "pid": os.getpid(),
        "fping": which("fping"),
        "iperf3": which("iperf3"),
        "icmplib": has_module("icmplib"),
    }


def which(name):
    """The path of program ``name`` on ``$PATH``, else None (``shutil.which``
    without importing ``shutil``, whose imports cost ~4 ms at every start)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(d or os.curdir, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def site_packages():
    """Put site-packages on ``sys.path`` (the agent runs as ``python3 -S``, so
    a host's ``.pth`` files cost nothing unless an op needs a third-party
    module); idempotent."""
    if "site" not in sys.modules or not getattr(sys.modules["site"], "_plink_done", False):
        import site

        site.main()
        site._plink_done = True


def has_module(name):
    """Whether ``import name`` would work after :func:`site_packages`, without
    importing it or running ``.pth`` files: searched on ``sys.path`` plus the
    site directories (user site included unless disabled)."""
    try:
        import site
        from importlib.machinery import PathFinder

        paths = list(sys.path)
        if "site" in sys.modules and getattr(site, "_plink_done", False):
            return PathFinder.find_spec(name, paths) is not None
        paths += site.getsitepackages(_site_prefixes(site))
        if not sys.flags.no_user_site:
            paths.append(site.getusersitepackages())
        return PathFinder.find_spec(name, paths) is not None
    except Exception:
        return False


def _site_prefixes(site):
    """The prefixes whose site-packages ``site.main()`` would add.  Under ``-S``
    a virtual environment is not yet applied (``sys.prefix`` is still the base
    installation): as ``site.venv`` does, a ``pyvenv.cfg`` beside the
    executable or one folder up makes the environment's folder the prefix, and
    the base's only with ``include-system-site-packages = true``."""
    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    prefix = os.path.dirname(exe_dir)
    for cfg in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(prefix, "pyvenv.cfg")):
        if os.path.isfile(cfg):
            system = False
            with open(cfg, encoding="utf-8") as f:
                for line in f:
                    key, sep, value = line.partition("=")
                    if sep and key.strip().lower() == "include-system-site-packages":
                        system = value.strip().lower() == "true"
            return [prefix] + (list(site.PREFIXES) if system else [])
    return None


NAP_MAX = 0.02  # the longest a running schedule leaves pings unanswered (s)


def run_plan(plan, t0, slot, count, interval, timeout, size, emit=None, flush_every=0.25, stamps=True):
    """Ping the peers of ``plan`` (``[(k, round, addr, port[, count]), ...]``):
    slot ``k`` sends ``count`` (or the entry's own count) authenticated pings ``interval`` apart starting at
    ``t0 + k * slot`` (perf_counter time), on one socket for the whole plan.
    A slot is finished when all its pongs are in or ``timeout`` after its last
    ping (pongs of earlier slots are still taken while later slots run).
    Finished slots go to ``emit([[round, sent, [rtt_us, ...]], ...])`` every
    ``flush_every`` s (an ``emit`` returning False keeps them for the next
    time); returns those not emitted.  O(len(plan) x count).
    With ``stamps`` (and a kernel that gives them) an RTT is the pong's kernel
    arrival minus the send time minus the reflector's turnaround (see
    ``SO_TIMESTAMPNS`` above); without, user-space send to user-space receive.

    With kernel stamps on both sockets the loop wakes only when a ping is due
    (or a slot ends, at least every ``NAP_MAX`` s) and then takes every pong
    and answers every ping that arrived meanwhile (the :class:`Responder`
    is parked): one wake-up per sent ping; arrival times come from the
    kernel, so reading late changes no RTT.  Without stamps it wakes for
    every pong, as a user-space timer needs."""
    key = _state["key"]
    size = max(HDR.size + MAC_LEN, int(size))
    pad = b"\0" * (size - HDR.size - MAC_LEN)
    addr0 = _state["addr"]
    sock = _socket.socket(family(addr0), _socket.SOCK_DGRAM)
    _state["sockets"].append(sock)
    plan = sorted(plan)
    rtts = [dict() for _ in plan]
    sent = {}  # seq -> (plan index, send time)
    done_at = [None] * len(plan)
    wants = [count] * len(plan)
    out, finished = [], [False] * len(plan)
    resp = _state["responder"]
    parked = False
    try:
        sock.bind(sockaddr(addr0, 0))
        sock.setblocking(False)
        stamped = bool(stamps) and enable_stamps(sock)
        lazy = stamped and resp is not None and resp.stamped and resp.park()
        parked = lazy
        targets = [sockaddr(p[2], int(p[3])) for p in plan]
        nxt, j = 0, 0  # next (slot, ping) to send
        open_slots = []
        last_flush = now()

        def take_pongs():
            """Read every datagram waiting; an authentic pong of an open slot gives its RTT."""
            while True:
                try:
                    data, peer, arrived = recv_stamped(sock, stamped)
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    return
                tr = time.time_ns() if arrived is None else arrived
                head = open_packet(data, key)
                if head is None or head[0] != PONG or head[1] != _state["hid"]:
                    continue
                hit = sent.get(head[3])
                if hit is None or finished[hit[0]] or plan[hit[0]][1] != head[2]:
                    continue
                rtt = tr - hit[1]
                if stamps and len(data) >= HDR.size + TURN.size + MAC_LEN:
                    turn = TURN.unpack_from(data, HDR.size)[0]
                    if 0 <= turn < rtt:
                        rtt -= turn
                if head[3] not in rtts[hit[0]] and rtt >= 0:
                    rtts[hit[0]][head[3]] = rtt / 1e3

        while True:
            if lazy:
                resp.drain()  # answer the pings that came (our own self-pings too) ...
                take_pongs()  # ... then take the pongs, before slots are closed
            t = now()
            # send what is due
            while nxt < len(plan) and t >= t0 + plan[nxt][0] * slot + j * interval:
                want = plan[nxt][4] if len(plan[nxt]) > 4 else count
                seq = next_seq()
                packet = seal(PING, int(plan[nxt][1]), seq, pad)
                sent[seq] = (nxt, time.time_ns())
                try:
                    sock.sendto(packet, targets[nxt])
                except OSError:
                    pass
                j += 1
                if j >= want:
                    wants[nxt] = want
                    done_at[nxt] = now() + timeout
                    open_slots.append(nxt)
                    nxt, j = nxt + 1, 0
                t = now()
                if lazy and nxt == len(plan):  # the last ping: a self-ping's answer is already here
                    resp.drain()
                    take_pongs()
            # close finished slots
            still = []
            for i in open_slots:
                if len(rtts[i]) >= wants[i] or t >= done_at[i]:
                    finished[i] = True
                    r = rtts[i]
                    out.append([plan[i][1], wants[i], [round(r[q], 2) for q in sorted(r)]])
                else:
                    still.append(i)
            open_slots = still
            if emit is not None and out and (t - last_flush >= flush_every or (nxt == len(plan) and not open_slots)):
                if emit(out) is not False:  # False: not sent now (output full), kept for later
                    out = []
                last_flush = t
            if nxt == len(plan) and not open_slots:
                break
            wake = [done_at[i] for i in open_slots]
            if nxt < len(plan):
                wake.append(t0 + plan[nxt][0] * slot + j * interval)
            wait = max(0.0, min(wake) - now())
            if emit is not None and out:
                wait = min(wait, flush_every)
            if lazy:
                time.sleep(min(wait, NAP_MAX))
                continue  # pongs and pings are taken at the top
            r, _, _ = select.select([sock], [], [], wait)
            if not r:
                continue
            take_pongs()
    finally:
        if parked:
            resp.drain()
            resp.unpark()
        sock.close()
        _state["sockets"].remove(sock)
    return out


def op_udp_ping(req):
    plan = [(0, int(req["round"]), req["addr"], int(req["port"]))]
    res = run_plan(plan, now(), 0.0, int(req["count"]), float(req["interval"]), float(req.get("timeout", 1.0)),
                   int(req.get("size", 64)), stamps=bool(req.get("stamps", True)))
    return {"rtts_us": res[0][2], "sent": res[0][1]}


def op_udp_sched(req):
    """A whole self-timed schedule; results stream back as ``part`` lines."""
    rid = req.get("id")
    t0 = now() + float(req.get("start", 0.0))
    plan = [(int(e[0]), int(e[1]), e[2], int(e[3])) + tuple(int(x) for x in e[4:5]) for e in req["plan"]]

    def emit(rows):  # while probing: never wait for a full stdout (the pings would wait)
        return reply({"id": rid, "part": rows}, block=False)

    rest = run_plan(plan, t0, float(req["slot"]), int(req["count"]), float(req["interval"]),
                    float(req.get("timeout", 1.0)), int(req.get("size", 64)), emit=emit,
                    stamps=bool(req.get("stamps", True)), flush_every=float(req.get("flush_every", 0.25)))
    if rest:
        reply({"id": rid, "part": rest})
    return {"slots": len(plan)}


# ---------------------------------------------------------------------------
# fping and icmplib


def op_fping(req):
    import subprocess

    exe = which("fping")
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
    site_packages()
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


def recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


class TcpReceiver(object):
    def __init__(self, streams, timeout):
        import socket

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
            except _socket.timeout:
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
            nonce = os.urandom(16)
            conn.sendall(nonce)
            head = recv_exact(conn, MAC_LEN)
            if head is None or not hmac.compare_digest(head, mac(_state["key"], b"tcp" + nonce)):
                return  # not ours: no data is counted
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
    import socket

    addr, port = req["addr"], int(req["port"])
    streams, seconds = int(req.get("streams", 1)), float(req["seconds"])
    socks = []
    for _ in range(streams):
        s = socket.socket(family(addr), socket.SOCK_STREAM)
        _state["sockets"].append(s)
        s.settimeout(float(req.get("timeout", 10)))
        s.bind(sockaddr(_state["addr"], 0))
        s.connect(sockaddr(addr, port))
        nonce = recv_exact(s, 16)
        if nonce is None:
            raise RuntimeError("the receiver closed the connection before its challenge")
        s.sendall(mac(_state["key"], b"tcp" + nonce))
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


def _socket_inodes(pid):
    """Inodes of the sockets process ``pid`` holds open."""
    out = set()
    base = "/proc/%d/fd" % pid
    try:
        names = os.listdir(base)
    except OSError:
        return out
    for fd in names:
        try:
            link = os.readlink(os.path.join(base, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            out.add(link[8:-1])
    return out


def listening_tcp(port, pid):
    """Whether process ``pid`` holds a TCP socket listening on ``port`` (another program listening
    on a port iperf3 failed to bind must not count as iperf3's)."""
    want = "%04X" % port
    mine = _socket_inodes(pid)
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as fh:
                next(fh)
                for line in fh:
                    f = line.split()
                    if f[1].rsplit(":", 1)[1] == want and f[3] == "0A" and f[9] in mine:
                        return True
        except (OSError, StopIteration, IndexError):
            pass
    return False


def free_port():
    s = _socket.socket(family(_state["addr"]), _socket.SOCK_STREAM)
    try:
        s.bind(sockaddr(_state["addr"], 0))
        return s.getsockname()[1]
    finally:
        s.close()


def op_iperf3_server(req):
    import subprocess

    exe = which("iperf3")
    if not exe:
        raise RuntimeError("iperf3 is not installed on this host")
    err = ""
    for _attempt in range(3):  # a port free a moment ago can be taken before iperf3 binds it
        op_iperf3_stop({})
        port = free_port()
        argv = [exe, "-s", "-1", "-B", _state["addr"], "-p", str(port)]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        _state["children"].append(proc)
        _state["iperf3"] = proc
        end = now() + 5.0
        while now() < end:
            if listening_tcp(port, proc.pid):
                return {"port": port}
            if proc.poll() is not None:
                break
            time.sleep(0.01)
        err = proc.stderr.read().decode("utf-8", "replace") if proc.poll() is not None else ""
        op_iperf3_stop({})
        if "in use" not in err:
            break
    raise RuntimeError("iperf3 server did not start: %s" % err.strip()[:200])


def op_iperf3_client(req):
    import json
    import subprocess

    exe = which("iperf3")
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
    "udp_sched": op_udp_sched,
}


def reader(queue):
    """Read stdin: answer heartbeats at once, queue the other requests."""
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            die(0)  # SSH channel closed
        _state["heard"] = time.monotonic()
        line = line.strip()
        if not line:
            continue
        if line.startswith(b'{"op":"hb"'):
            reply({"hb": 1}, block=False)
            continue
        queue.append(line)
        _state["wake"].set()


def main():
    try:
        sys.setswitchinterval(0.0005)
    except Exception:
        pass
    _signal.signal(_signal.SIGTERM, lambda *a: die(0))
    _signal.signal(_signal.SIGHUP, lambda *a: die(0))
    _state["deadline"] = time.time() + 120  # until hello sets the real one
    _state["heard"] = time.monotonic()
    _state["wake"] = threading.Event()
    queue = []
    threading.Thread(target=watchdog, daemon=True).start()
    threading.Thread(target=reader, args=(queue,), daemon=True).start()
    while True:
        if not queue:
            _state["wake"].wait(1.0)
            _state["wake"].clear()
            continue
        line = queue.pop(0)
        try:
            req = json_loads(line.decode("utf-8"))
            rid = req.get("id")
        except ValueError:
            reply({"id": None, "ok": False, "error": "bad request line"})
            continue
        op = req.get("op")
        if op == "exit":
            reply({"id": rid, "ok": True})
            die(0)
        if op != "hello" and _state["key"] is None:
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
