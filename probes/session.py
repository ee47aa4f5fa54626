"""The controller's end of an agent: stream the agent source, send requests, read replies.

An :class:`AgentSession` talks to one running :mod:`probes.agent` over a
byte pipe -- a paramiko channel (:class:`ChannelPipe`, see
:mod:`probes.ssh`) or a local subprocess (:class:`ProcessPipe`, used for
loopback tests and for probing the local host).  The agent is started with a
fixed command line (``python3 -u -c BOOT N``, only the interpreter path
and the integer ``N`` vary and both are shell-quoted); its source follows on
stdin.  The session ends (agent exits) when the pipe is closed.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import shlex
import subprocess
import time
from pathlib import Path

PREFIX = b"PLK1 "
BOOT = 'import sys;exec(compile(sys.stdin.buffer.read(int(sys.argv[1])),"<plink-agent>","exec"))'


class AgentLost(Exception):
    """The agent's pipe closed or it stopped answering (the host died)."""


class AgentError(Exception):
    """The agent answered with an error for one request."""


def agent_source() -> bytes:
    """The agent's source code, as sent to hosts."""
    return (Path(__file__).with_name("agent.py")).read_bytes()


def agent_command(python: str = "python3") -> tuple[str, bytes]:
    """The remote shell command that starts the agent, and the stdin preamble.

    Every variable part is ``shlex.quote``-d; the source goes on stdin.
    """
    src = agent_source()
    cmd = f"exec {shlex.quote(python)} -u -c {shlex.quote(BOOT)} {len(src)}"
    return cmd, src


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

    src = agent_source()
    pipe = ProcessPipe([python or sys.executable, "-u", "-c", BOOT, str(len(src))], env=env)
    pipe.write(src)
    return pipe


class AgentSession:
    """Requests/replies with one agent (see :mod:`probes.agent` for the ops).

    ``send`` queues a request and returns its id; ``wait`` reads replies
    until that id arrives (replies come in request order).  Any pipe failure
    or a reply timeout raises :class:`AgentLost` and marks the session dead.
    """

    def __init__(self, pipe, name: str = "?"):
        self.pipe = pipe
        self.name = name
        self._ids = itertools.count(1)
        self._buf = b""
        self._replies: dict[int, dict] = {}
        self.dead: str | None = None
        self.info: dict = {}

    def send(self, op: str, **kw) -> int:
        if self.dead:
            raise AgentLost(self.dead)
        rid = next(self._ids)
        line = json.dumps({"id": rid, "op": op, **kw}, separators=(",", ":")).encode() + b"\n"
        try:
            self.pipe.write(line)
        except AgentLost as exc:
            self._lose(str(exc))
        except Exception as exc:  # paramiko/socket errors
            self._lose(f"agent pipe failed: {exc}")
        return rid

    def _lose(self, why: str):
        tail = ""
        try:
            tail = self.pipe.stderr_tail()
        except Exception:
            pass
        self.dead = why + (f" (stderr: {tail[-300:]})" if tail else "")
        raise AgentLost(self.dead)

    def wait(self, rid: int, timeout: float) -> dict:
        """The reply to request ``rid``; raises AgentError if it failed."""
        end = time.monotonic() + timeout
        while rid not in self._replies:
            if self.dead:
                raise AgentLost(self.dead)
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line, self._buf = self._buf[:nl], self._buf[nl + 1:]
                if line.startswith(PREFIX):
                    try:
                        msg = json.loads(line[len(PREFIX):])
                    except ValueError:
                        continue
                    self._replies[msg.get("id")] = msg
                continue  # anything else: stray output of shell dotfiles
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
            self._buf += chunk
        msg = self._replies.pop(rid)
        if not msg.get("ok"):
            raise AgentError(msg.get("error", "unknown agent error"))
        return msg

    def call(self, op: str, timeout: float = 30.0, **kw) -> dict:
        return self.wait(self.send(op, **kw), timeout)

    def hello(self, token: str, deadline: float, bind: str | None = None, timeout: float = 30.0) -> dict:
        kw = {"token": token, "deadline": deadline}
        if bind:
            kw["bind"] = bind
        self.info = self.call("hello", timeout=timeout, **kw)
        return self.info

    def close(self) -> None:
        """Ask the agent to exit and close the pipe (the agent also exits on EOF)."""
        if not self.dead:
            try:
                self.call("exit", timeout=5)
            except (AgentLost, AgentError):
                pass
        try:
            self.pipe.close()
        except Exception:
            pass
        self.dead = self.dead or "closed"


def start_local_agents(entries, token: str, deadline: float, on_done=None, python: str | None = None):
    """Start one local agent per entry, bound to the entry's name as address
    (e.g. ``127.0.0.2``): a probe of the loopback without SSH, for tests.
    Same contract as :func:`probes.ssh.start_agents`."""
    sessions, failures = {}, {}
    for i, e in enumerate(entries):
        s = AgentSession(local_pipe(python), e.name)
        try:
            s.hello(token, deadline, bind=e.name)
            sessions[i] = s
            err = None
        except (AgentLost, AgentError) as exc:
            s.close()
            failures[i] = err = f"{e.name}: {exc}"
        if on_done is not None:
            on_done(i, err)
    return sessions, failures
