"""The controller's end of an agent: stream the agent source, send requests, read replies.

An :class:`AgentSession` talks to one running :mod:`probes.agent` over a
byte pipe -- a paramiko channel (:class:`ChannelPipe`, see
:mod:`probes.ssh`) or a local subprocess (:class:`ProcessPipe`, used for
loopback tests and for probing the local host).  The agent is started with a
fixed command line (``python3 -S -u -c BOOT C N``, only the interpreter
path and the integers vary and all are shell-quoted); its code follows on
stdin (:func:`agent_payload`).  The session ends (agent exits) when the pipe is closed.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import select
import selectors
import shlex
import subprocess
import threading
import time
from pathlib import Path

PREFIX = b"PLK1 "
# Read C bytes (the agent compiled by the controller: 4 bytes of bytecode magic
# + marshal data) and N bytes (its source) from stdin; run the compiled code
# when the host's Python has the same bytecode magic (same minor version), else
# compile the source there.  Compiling the agent costs ~12 ms of CPU per host
# (measured, benchmarks/agent_start.py), unmarshalling it ~1 ms.
BOOT = ('import sys,marshal;r=sys.stdin.buffer.read;a=sys.argv;c=r(int(a[1]));s=r(int(a[2]));'
        'm=getattr(sys.modules.get("_frozen_importlib_external"),"MAGIC_NUMBER",None);'
        'exec(marshal.loads(c[4:]) if m and c[:4]==m else compile(s,"<plink-agent>","exec"))')
# -S: no site-packages at start (the agent is stdlib-only; a host's .pth files
# would run at every start); the ``icmp`` op adds them when it needs icmplib.
PY_FLAGS = ("-S", "-u")


class AgentLost(Exception):
    """The agent's pipe closed or it stopped answering (the host died)."""


class AgentError(Exception):
    """The agent answered with an error for one request."""


def agent_source() -> bytes:
    """The agent's source code, as sent to hosts."""
    return (Path(__file__).with_name("agent.py")).read_bytes()


@functools.lru_cache(maxsize=1)
def agent_payload() -> tuple[list[str], bytes]:
    """``(BOOT's arguments, stdin preamble)``: the agent compiled here (this
    interpreter's bytecode magic + ``marshal`` data) followed by its source,
    which a host whose Python has another magic compiles instead.  The same
    code either way; computed once per process."""
    import marshal
    from importlib.util import MAGIC_NUMBER

    src = agent_source()
    code = MAGIC_NUMBER + marshal.dumps(compile(src, "<plink-agent>", "exec"))
    return [str(len(code)), str(len(src))], code + src


def agent_argv(python: str = "python3") -> tuple[list[str], bytes]:
    """The agent's argv (``python -S -u -c BOOT C N``) and its stdin preamble."""
    args, payload = agent_payload()
    return [python, *PY_FLAGS, "-c", BOOT, *args], payload


def agent_command(python: str = "python3") -> tuple[str, bytes]:
    """The remote shell command that starts the agent, and the stdin preamble.

    Every variable part is ``shlex.quote``-d; the code goes on stdin.
    """
    argv, payload = agent_argv(python)
    return "exec " + " ".join(shlex.quote(a) for a in argv), payload


class ProcessPipe:
    """A local subprocess as an agent pipe (loopback tests, local host)."""

    def __init__(self, argv: list[str], env: dict | None = None):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )
        self._stderr = b""

    def write(self, data: bytes) -> None:
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise AgentLost(f"agent pipe closed: {exc}") from None

    def read(self, timeout: float) -> bytes:
        """Up to 64 KiB of stdout; b'' at EOF; raises TimeoutError."""
        fds = [self.proc.stdout, self.proc.stderr]
        end = time.monotonic() + timeout
        while True:
            r, _, _ = select.select(fds, [], [], max(0.0, end - time.monotonic()))
            if not r:
                raise TimeoutError
            if self.proc.stderr in r:
                chunk = os.read(self.proc.stderr.fileno(), 65536)
                if chunk:
                    self._stderr = (self._stderr + chunk)[-4096:]
                else:
                    fds = [self.proc.stdout]
            if self.proc.stdout in r:
                return os.read(self.proc.stdout.fileno(), 65536)

    def fileno(self) -> int:
        return self.proc.stdout.fileno()

    def read_now(self) -> bytes:
        """What is ready on stdout without blocking (b'' at EOF)."""
        return self.read(0.0)

    def stderr_tail(self) -> str:
        return self._stderr.decode("utf-8", "replace").strip()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()


def local_pipe(python: str | None = None, env: dict | None = None) -> ProcessPipe:
    """Start the agent as a local subprocess (no SSH) and stream its source."""
    import sys

    argv, payload = agent_argv(python or sys.executable)
    pipe = ProcessPipe(argv, env=env)
    pipe.write(payload)
    return pipe


class AgentSession:
    """Requests/replies with one agent (see :mod:`probes.agent` for the ops).

    ``send`` queues a request and returns its id; ``wait`` reads replies
    until that id arrives.  Streamed results of a request (``part`` lines)
    are collected in ``parts[id]``.  Any pipe failure or a reply timeout
    raises :class:`AgentLost` and marks the session dead.  ``heard`` is the
    monotonic time of the last line from the agent (heartbeat answers
    included).  Writes are locked, so a heartbeat thread may share it.
    """

    def __init__(self, pipe, name: str = "?"):
        self.pipe = pipe
        self.name = name
        self._ids = itertools.count(1)
        self._buf = b""
        self._replies: dict[int, dict] = {}
        self.parts: dict[int, list] = {}
        self.dead: str | None = None
        self.info: dict = {}
        self.heard = time.monotonic()
        self._wlock = threading.Lock()
        self.timing: dict = {}  # monotonic marks of the setup (probes.ssh.start_agents)

    def fileno(self) -> int:
        return self.pipe.fileno()

    def send(self, op: str, **kw) -> int:
        if self.dead:
            raise AgentLost(self.dead)
        rid = next(self._ids)
        line = json.dumps({"id": rid, "op": op, **kw}, separators=(",", ":")).encode() + b"\n"
        self._write(line)
        return rid

    def heartbeat(self) -> None:
        """Tell the agent we are alive (it answers ``{"hb":1}``).

        Never waits: when another write to this agent is in progress or its
        channel cannot take data now (an agent that is not reading), this beat
        is skipped, so one stalled agent cannot delay every other agent's
        heartbeat (measured: a 9 s heartbeat pass at 128 hosts)."""
        if self.dead:
            return
        ready = getattr(self.pipe, "write_ready", None)
        if ready is not None and not ready():
            return
        self._write(b'{"op":"hb"}\n', block=False)

    def _write(self, line: bytes, block: bool = True) -> None:
        if not self._wlock.acquire(blocking=block):
            return
        try:
            self.pipe.write(line)
        except AgentLost as exc:
            self._lose(str(exc))
        except Exception as exc:  # paramiko/socket errors
            self._lose(f"agent pipe failed: {exc}")
        finally:
            self._wlock.release()

    def _lose(self, why: str):
        tail = ""
        try:
            tail = self.pipe.stderr_tail()
        except Exception:
            pass
        self.dead = why + (f" (stderr: {tail[-300:]})" if tail else "")
        raise AgentLost(self.dead)

    def _parse(self) -> None:
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                return
            line, self._buf = self._buf[:nl], self._buf[nl + 1:]
            if not line.startswith(PREFIX):
                continue  # stray output of shell dotfiles
            try:
                msg = json.loads(line[len(PREFIX):])
            except ValueError:
                continue
            if "part" in msg:
                self.parts.setdefault(msg.get("id"), []).extend(msg["part"])
            elif "id" in msg:
                self._replies[msg.get("id")] = msg

    def feed(self, chunk: bytes) -> None:
        """Take bytes read from the pipe (see :class:`Fleet`)."""
        if not chunk:
            try:
                self._lose("agent exited (connection closed)")
            except AgentLost:
                return
        self.heard = time.monotonic()
        self._buf += chunk
        self._parse()

    def pump(self) -> None:
        """Read what is ready without blocking; AgentLost at EOF."""
        if self.dead:
            raise AgentLost(self.dead)
        try:
            chunk = self.pipe.read_now()
        except TimeoutError:
            return
        except AgentLost as exc:
            self._lose(str(exc))
        except Exception as exc:
            self._lose(f"agent pipe failed: {exc}")
        self.feed(chunk)
        if self.dead:
            raise AgentLost(self.dead)

    def reply(self, rid: int) -> dict | None:
        """The reply to ``rid`` if it has arrived (AgentError if it failed)."""
        if rid not in self._replies:
            return None
        msg = self._replies.pop(rid)
        if not msg.get("ok"):
            raise AgentError(msg.get("error", "unknown agent error"))
        return msg

    def wait(self, rid: int, timeout: float) -> dict:
        """The reply to request ``rid``; raises AgentError if it failed."""
        end = time.monotonic() + timeout
        while rid not in self._replies:
            if self.dead:
                raise AgentLost(self.dead)
            left = end - time.monotonic()
            if left <= 0:
                self._lose(f"no reply from agent within {timeout:.0f} s")
            try:
                chunk = self.pipe.read(left)
            except TimeoutError:
                continue
            except AgentLost as exc:
                self._lose(str(exc))
            except Exception as exc:
                self._lose(f"agent pipe failed: {exc}")
            if not chunk:
                self._lose("agent exited (connection closed)")
            self.heard = time.monotonic()
            self._buf += chunk
            self._parse()
        return self.reply(rid)

    def call(self, op: str, timeout: float = 30.0, **kw) -> dict:
        return self.wait(self.send(op, **kw), timeout)

    def hello_request(self, key: str, deadline: float, bind: str | None = None, hid: int = 0,
                      hb_timeout: float = 20.0) -> int:
        """Send the hello (per-run key, host id, deadline, heartbeat timeout)
        without waiting: its request id, for :meth:`hello_reply`."""
        if not 0 <= hid <= 0xFFFF:  # the probe packets carry it in 16 bits
            raise ValueError(f"host id {hid} out of range: a probe takes at most 65536 hosts")
        kw = {"key": key, "deadline": deadline, "hid": hid, "hb_timeout": hb_timeout}
        if bind:
            kw["bind"] = bind
        return self.send("hello", **kw)

    def hello_reply(self, rid: int) -> dict | None:
        """The agent's hello answer once it arrived (also kept as ``info``), else None."""
        msg = self.reply(rid)
        if msg is not None:
            self.info = msg
        return msg

    def hello(self, key: str, deadline: float, bind: str | None = None, timeout: float = 30.0,
              hid: int = 0, hb_timeout: float = 20.0) -> dict:
        self.info = self.wait(self.hello_request(key, deadline, bind, hid, hb_timeout), timeout)
        return self.info

    def close(self) -> None:
        """Ask the agent to exit and close the pipe (the agent also exits on EOF)."""
        if not self.dead:
            try:
                self.send("exit")
            except (AgentLost, AgentError):
                pass
        try:
            self.pipe.close()
        except Exception:
            pass
        self.dead = self.dead or "closed"


class Fleet:
    """All agents of a probe: one heartbeat thread and one poll loop.

    ``wait(requests, deadline)`` waits for the replies to many requests at
    once (an epoll over every agent's pipe), so k agents that stop answering
    cost one deadline together, not k.  ``silent`` agents -- nothing heard
    for ``silence`` s, heartbeat answers included -- are declared lost.
    The heartbeat thread pings every agent each ``hb_interval`` s; an agent
    that hears nothing for its ``hb_timeout`` exits on its own.
    """

    SCAN_S = 0.25  # how often poll() looks for silent agents

    def __init__(self, sessions: dict, hb_interval: float = 4.0, silence: float = 10.0):
        self.sessions = sessions
        self.silence = silence
        self.lost: dict = {}
        self._sel = selectors.DefaultSelector()
        for k, s in sessions.items():
            self._register(k, s)
        self._last_poll = time.monotonic()
        self._last_scan = 0.0
        self._touched: set = set(sessions)  # sessions read or lost since the last wait() look
        now = time.monotonic()
        for s in sessions.values():  # connected long ago: their heartbeat answers are still unread
            s.heard = max(s.heard, now)
        self._stop = threading.Event()
        self.beat_max_s = 0.0  # the longest heartbeat pass over all agents (s)
        self._hb = threading.Thread(target=self._beat, args=(hb_interval,), daemon=True)
        self._hb.start()

    def _register(self, k, s) -> None:
        try:
            self._sel.register(s.fileno(), selectors.EVENT_READ, k)
        except (OSError, ValueError, KeyError) as exc:
            self.lose(k, f"cannot poll the agent's pipe: {exc}")

    def _beat(self, every: float) -> None:
        while not self._stop.wait(every):
            t = time.monotonic()
            for k, s in list(self.sessions.items()):
                if k in self.lost or s.dead:
                    continue
                try:
                    s.heartbeat()
                except Exception:
                    pass  # seen as silence by the poll loop
            self.beat_max_s = max(self.beat_max_s, time.monotonic() - t)

    def live(self) -> list:
        return [k for k in self.sessions if k not in self.lost]

    def lose(self, k, why: str) -> None:
        if k in self.lost:
            return
        self.lost[k] = why
        self._touched.add(k)
        s = self.sessions[k]
        s.dead = s.dead or why
        try:
            self._sel.unregister(s.fileno())
        except Exception:
            pass

    def poll(self, timeout: float) -> None:
        """Read every agent with data (at most ``timeout`` s), then declare
        agents silent for longer than ``silence`` lost.

        O(agents with data) per call; the O(N) silence scan runs at most
        every ``SCAN_S`` s, so the controller's work per second of probing
        grows linearly in N (not with N x the rate of arriving messages)."""
        try:
            ready = self._sel.select(max(0.0, timeout)) if self._sel.get_map() else []
        except OSError:
            ready = []
        for key, _ in ready:
            k = key.data
            if k in self.lost:
                continue
            self._touched.add(k)
            try:
                self.sessions[k].pump()
            except AgentLost as exc:
                self.lose(k, str(exc))
        t = time.monotonic()
        stalled = t - self._last_poll - max(0.0, timeout)
        if stalled > 1.0:  # we were not scheduled (an overloaded controller): not the agents' silence
            for k in self.live():
                self.sessions[k].heard += stalled
        self._last_poll = t
        if t - self._last_scan < self.SCAN_S:
            return
        self._last_scan = t
        for k in self.live():
            s = self.sessions[k]
            if s.dead:
                self.lose(k, s.dead)
            elif t - s.heard > self.silence:
                self._touched.add(k)
                try:  # a last look: data may sit in the transport's buffer
                    s.pump()
                except AgentLost:
                    pass
                if s.dead:
                    self.lose(k, s.dead)
                elif t - s.heard > self.silence:
                    self.lose(k, f"{s.name}: no answer (not even to heartbeats) for {t - s.heard:.0f} s")

    def wait(self, requests, deadline: float, on_part=None) -> dict:
        """Replies to ``requests`` (``[(k, rid), ...]``) until the monotonic
        ``deadline``: ``{(k, rid): reply dict | AgentError | AgentLost}``.
        ``on_part(k, rid, rows)`` gets streamed parts as they arrive.
        Each look checks only the agents read or lost since the last one."""
        out: dict = {}
        left: dict = {}
        for k, rid in requests:
            left.setdefault(k, []).append(rid)
        look = set(left)
        while True:
            for k in look:
                rids = left.get(k)
                if not rids:
                    continue
                s = self.sessions[k]
                keep = []
                for rid in rids:
                    if on_part is not None and s.parts.get(rid):
                        rows, s.parts[rid] = s.parts[rid], []
                        on_part(k, rid, rows)
                    if k in self.lost:
                        out[(k, rid)] = AgentLost(self.lost[k])
                        continue
                    try:
                        msg = s.reply(rid)
                    except AgentError as exc:
                        out[(k, rid)] = exc
                        continue
                    if msg is None:
                        keep.append(rid)
                    else:
                        out[(k, rid)] = msg
                if keep:
                    left[k] = keep
                else:
                    del left[k]
            if not left:
                return out
            now = time.monotonic()
            if now >= deadline:
                for k, rids in left.items():
                    why = f"{self.sessions[k].name}: no reply within the deadline"
                    self.lose(k, why)
                    for rid in rids:
                        out[(k, rid)] = AgentLost(why)
                return out
            self._touched.clear()
            self.poll(min(0.5, deadline - now))
            look = self._touched & left.keys()

    def close(self) -> None:
        self._stop.set()
        for s in self.sessions.values():
            s.close()
        try:
            self._sel.close()
        except Exception:
            pass


def start_local_agents(entries, key: str, deadline: float, on_done=None, python: str | None = None,
                       hb_timeout: float = 20.0):
    """Start one local agent per entry, bound to the entry's name as address
    (e.g. ``127.0.0.2``): a probe of the loopback without SSH, for tests.
    Same contract as :func:`probes.ssh.start_agents`."""
    sessions, failures = {}, {}
    for i, e in enumerate(entries):
        s = AgentSession(local_pipe(python), e.name)
        try:
            s.hello(key, deadline, bind=e.name, hid=i, hb_timeout=hb_timeout)
            sessions[i] = s
            err = None
        except (AgentLost, AgentError) as exc:
            s.close()
            failures[i] = err = f"{e.name}: {exc}"
        if on_done is not None:
            on_done(i, err)
    return sessions, failures
