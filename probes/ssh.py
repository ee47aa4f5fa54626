"""SSH transport (paramiko): config, host-key policy, connections, agent channels.

* ``~/.ssh/config`` (or ``ssh_config=``) is honoured for ``HostName``,
  ``User``, ``Port``, ``IdentityFile``, ``IdentitiesOnly``, ``ProxyJump``
  (chains too), ``UserKnownHostsFile`` and ``ConnectTimeout``.  ``StrictHostKeyChecking``
  is deliberately *not* honoured: key checking is never weakened by a config
  file.
* Authentication: ssh-agent, the ``IdentityFile`` keys, then the default key
  files; never a password prompt.
* Host keys are verified against ``known_hosts`` (``known_hosts=`` or the
  config's ``UserKnownHostsFile``, else ``~/.ssh/known_hosts``; then the
  config's ``GlobalKnownHostsFile``, else ``/etc/ssh/ssh_known_hosts`` and
  ``ssh_known_hosts2``), with OpenSSH's host patterns (``node*``, ``!bad``) and
  ``@revoked`` keys (in any of the files).  An unknown host is refused by default;
  ``accept_new=True`` behaves like OpenSSH's ``StrictHostKeyChecking
  accept-new``: the key of a host not yet listed is stored (in the first
  known_hosts file), a *changed* key is still refused.
* Connections are made at most ``concurrency`` (<= 16) at a time, each with a
  connect timeout, retried with exponential backoff on network errors (not on
  authentication or host-key errors, which cannot fix themselves).
* Remote commands are fixed strings whose variable parts are
  ``shlex.quote``-d (:func:`probes.session.agent_command`); host names and
  options never reach a shell unquoted.
"""

from __future__ import annotations

import logging
import os
import queue
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from plink.errors import OptionError, PlinkError
from plink.data.hostlist import HostEntry

from .session import AgentError, AgentLost, AgentSession, agent_command

MAX_CONCURRENCY = 16

# paramiko logs transport failures ("Socket exception: ...") at ERROR; with no
# handler configured they would reach stderr raw.  plink reports every failure
# itself, in one line per host.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


class SSHError(Exception):
    """A host could not be reached; the message says why, in one line."""


@dataclass
class SSHOptions:
    """How to reach hosts (the CLI's SSH options)."""

    ssh_config: str | None = None
    known_hosts: str | None = None
    accept_new_host_keys: bool = False
    connect_timeout: float = 10.0
    command_timeout: float = 30.0
    retries: int = 2
    backoff: float = 0.5
    concurrency: int = 16
    python: str = "python3"
    #: ``(host, known_hosts file)`` of every key ``accept_new_host_keys`` stored, in order (filled while
    #: connecting; :func:`added_keys_note` says it in one line, as OpenSSH's "Permanently added")
    added_host_keys: list = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self):
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise OptionError(f"--concurrency must be 1..{MAX_CONCURRENCY}, got {self.concurrency}")
        if self.connect_timeout <= 0 or self.command_timeout <= 0:
            raise PlinkError("timeouts must be positive")
        if self.ssh_config and not Path(self.ssh_config).expanduser().is_file():
            raise PlinkError(f"ssh config {self.ssh_config} does not exist")
        if self.known_hosts and not self.accept_new_host_keys and not Path(self.known_hosts).expanduser().is_file():
            raise PlinkError(f"known_hosts file {self.known_hosts} does not exist")


@dataclass
class Target:
    """One host, resolved through the ssh config."""

    entry: HostEntry
    hostname: str
    user: str
    port: int
    identity_files: list[str] = field(default_factory=list)
    proxy_jump: str | None = None
    known_hosts: list[str] = field(default_factory=list)
    connect_timeout: float | None = None
    identities_only: bool = False

    @property
    def label(self) -> str:
        return self.entry.ssh_target


def _load_config(path: str | None):
    import paramiko

    if path is None:
        default = Path("~/.ssh/config").expanduser()
        if not default.is_file():
            return paramiko.SSHConfig()
        path = str(default)
    try:
        return paramiko.SSHConfig.from_path(str(Path(path).expanduser()))
    except Exception as exc:  # malformed config
        raise PlinkError(f"cannot read ssh config {path}: {exc}") from None


def resolve(entry: HostEntry, config, options: SSHOptions) -> Target:
    """Apply the ssh config to a host-list entry (entry fields win)."""
    cfg = config.lookup(entry.name)
    hostname = cfg.get("hostname", entry.name)
    user = entry.user or cfg.get("user") or _local_user()
    try:
        port = entry.port or int(cfg.get("port", 22))
    except ValueError:
        raise PlinkError(f"ssh config: bad Port for {entry.name}") from None
    ids = [str(Path(p).expanduser()) for p in cfg.get("identityfile", [])]
    jump = cfg.get("proxyjump")
    if jump and jump.lower() == "none":
        jump = None
    if options.known_hosts:
        kh = [str(Path(options.known_hosts).expanduser())]
    elif cfg.get("userknownhostsfile"):
        kh = [str(Path(p).expanduser()) for p in cfg["userknownhostsfile"].split()]
    else:
        kh = [str(Path("~/.ssh/known_hosts").expanduser())]
    # then the system's files, as OpenSSH reads them (an admin's @revoked there counts); a new key is
    # stored in the first file, the user's
    glob = (cfg["globalknownhostsfile"].split() if cfg.get("globalknownhostsfile")
            else ["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"])
    kh += [str(Path(p).expanduser()) for p in glob if str(Path(p).expanduser()) not in kh]
    timeout = None
    if cfg.get("connecttimeout"):
        try:
            timeout = float(cfg["connecttimeout"])
        except ValueError:
            pass
    only = str(cfg.get("identitiesonly", "no")).lower() == "yes" and bool(ids)
    return Target(entry, hostname, user, port, ids, jump, kh, timeout, only)


def _local_user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:
        return "root"


# ---------------------------------------------------------------------------
# host keys


_known_hosts_lock = threading.Lock()


def _make_policy(accept_new: bool, store: str | None, revoked: frozenset | set = frozenset(),
                 added: list | None = None, label: str | None = None):
    """The missing-host-key policy; a key stored under ``accept_new`` is appended to ``added`` as
    ``(label or the host name, store)``."""
    import paramiko

    class AcceptNewPolicy(paramiko.MissingHostKeyPolicy):
        """OpenSSH ``accept-new``: store keys of unknown hosts (changed keys
        are refused by paramiko before a policy is asked, revoked ones here)."""

        def missing_host_key(self, client, hostname, key):
            if key.asbytes() in revoked:
                raise _RevokedHostKey(hostname, key)
            if store is None:
                raise paramiko.SSHException(f"no known_hosts file to store the key of {hostname}")
            with _known_hosts_lock:
                path = Path(store)
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                existing = paramiko.HostKeys()
                if path.exists():
                    for entry in read_known_hosts(str(path))[0]:
                        for name in entry.hostnames:
                            existing.add(name, entry.key.get_name(), entry.key)
                old = existing.lookup(hostname)
                if old is not None and len(old):
                    # known under another key (type): that is a change, not a new host
                    known = old.get(key.get_name()) or next(iter(old.values()))
                    raise paramiko.BadHostKeyException(hostname, key, known)
                line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
                with open(path, "a+b") as fh:  # (a last line without its newline keeps its own line)
                    fh.seek(0, os.SEEK_END)
                    if fh.tell():
                        fh.seek(-1, os.SEEK_END)
                        if fh.read(1) != b"\n":
                            line = "\n" + line
                    fh.write(line.encode())
                    fh.flush()
                    os.fsync(fh.fileno())
                if added is not None:
                    added.append((label or hostname, store))
            client.get_host_keys().add(hostname, key.get_name(), key)

    class RejectUnknown(paramiko.MissingHostKeyPolicy):
        def missing_host_key(self, client, hostname, key):
            raise (_RevokedHostKey if key.asbytes() in revoked else _UnknownHostKey)(hostname, key)

    return AcceptNewPolicy() if accept_new else RejectUnknown()


def added_keys_note(added, shown: int = 3) -> str | None:
    """One line for the keys ``--accept-new-host-keys`` stored (``SSHOptions.added_host_keys``), or
    None when it stored none: "added the host keys of 8 hosts (a, b, c and 5 more) to ~/.ssh/known_hosts"."""
    hosts = list(dict.fromkeys(h for h, _ in added))
    if not hosts:
        return None
    files = list(dict.fromkeys(_home_short(f) for _, f in added))
    names = ", ".join(hosts[:shown]) + (f" and {len(hosts) - shown} more" if len(hosts) > shown else "")
    what = "the host key of 1 host" if len(hosts) == 1 else f"the host keys of {len(hosts)} hosts"
    return f"added {what} ({names}) to {', '.join(files)}"


def _home_short(path: str) -> str:
    """``path`` with the home directory as ``~`` (as OpenSSH names ~/.ssh/known_hosts)."""
    home = str(Path("~").expanduser())
    return "~" + path[len(home):] if home not in ("", "/", "~") and path.startswith(home + os.sep) else path


def _host_pattern(patterns: list[str]):
    """A test of a host name against a known_hosts line's comma-separated OpenSSH patterns (``*``, ``?``;
    a ``!pattern`` that matches rules the line out), case-insensitive as OpenSSH's ``match_hostname``."""
    import re

    pos, neg = [], []
    for p in patterns:
        (neg if p.startswith("!") else pos).append(
            re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in p.lstrip("!").lower())))

    def match(name: str) -> bool:
        name = name.lower()
        return not any(r.fullmatch(name) for r in neg) and any(r.fullmatch(name) for r in pos)

    return match


def read_known_hosts(path: str) -> tuple[list, set]:
    """``(entries, revoked)`` of an OpenSSH known_hosts file: paramiko ``HostKeyEntry`` objects for its
    plain lines, and the keys (``PKey.asbytes()``) of its ``@revoked`` lines. O(lines).

    Read line by line as OpenSSH does, so that one line paramiko cannot take does not lose the whole
    file (``paramiko.HostKeys.load`` raises on the first): a malformed or truncated key, a key type
    paramiko does not know, and ``@cert-authority`` lines (host certificates, which plink cannot check:
    such a host is unknown unless its own key is listed) are skipped.  A ``@revoked`` key is refused
    for every host, whatever names its line gives.
    """
    from paramiko.hostkeys import HostKeyEntry

    entries, revoked = [], set()
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, 1):
            line = " ".join(raw.split())  # (fields apart by any run of blanks, as OpenSSH reads them)
            if not line or line.startswith("#"):
                continue
            marker = None
            if line.startswith("@"):
                marker, _, line = line.partition(" ")
                if marker not in ("@revoked", "@cert-authority"):
                    continue  # OpenSSH refuses the line too
            try:
                entry = HostKeyEntry.from_line(line, lineno)
            except Exception:  # paramiko's InvalidHostKey, or a key that does not decode
                entry = None
            if entry is None or entry.key is None or marker == "@cert-authority":
                continue
            if marker == "@revoked":
                revoked.add(entry.key.asbytes())
            else:
                entries.append(entry)
    return entries, revoked


class _RevokedHostKey(Exception):
    def __init__(self, hostname, key):
        super().__init__(hostname)
        self.hostname = hostname
        self.key = key


class _UnknownHostKey(Exception):
    def __init__(self, hostname, key):
        super().__init__(hostname)
        self.hostname = hostname
        self.key = key


class _KnownHosts:
    """known_hosts files parsed once, looked up per host in O(1).

    paramiko's ``HostKeys.load`` parses every line (a key object each) and
    its ``lookup`` scans every entry, so loading the file for each of N
    connections costs O(N^2) (measured: 51 ms per connection with 256 hosts
    listed, 15 s of controller CPU to connect 256 hosts).  Here each file is
    parsed once per (path, size, mtime) and a connection gets only the
    entries that name its host (plain names from a dict; hashed entries, if
    any, are checked as paramiko does), so the check is the same: an unknown
    host goes to the missing-key policy and a changed key is refused.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._files: dict[str, tuple] = {}

    def _parsed(self, path: str):
        st = os.stat(path)
        stamp = (st.st_size, st.st_mtime_ns)
        with self._lock:
            hit = self._files.get(path)
            if hit is not None and hit[0] == stamp:
                return hit[1:]
        entries, revoked = read_known_hosts(path)
        plain: dict[str, list] = {}
        hashed, patterns = [], []
        for e in entries:
            if any(c in name for name in e.hostnames for c in "*?!"):  # OpenSSH patterns (node*, !bad, 10.0.0.?)
                patterns.append((_host_pattern(e.hostnames), e.key))
                continue
            for name in e.hostnames:
                if name.startswith("|1|"):
                    hashed.append((name, e.key))
                else:
                    plain.setdefault(name.lower(), []).append(e.key)
        with self._lock:
            self._files[path] = (stamp, plain, hashed, patterns, revoked)
        return plain, hashed, patterns, revoked

    def fill(self, client, paths, names) -> set:
        """Add to ``client``'s host keys the keys ``paths`` list for one of ``names`` (exact names, hashed
        names and OpenSSH patterns; of two keys of one type, an exact name's is kept), leaving out every
        key any of ``paths`` revokes; return those revoked keys (``PKey.asbytes()``)."""
        from paramiko.hostkeys import HostKeys

        parsed = []
        for path in paths:
            if not os.path.isfile(path):
                continue
            try:
                parsed.append(self._parsed(path))
            except OSError as exc:
                raise SSHError(f"cannot read known_hosts {path}: {exc.strerror or exc}") from None
        revoked = set().union(*(p[3] for p in parsed))  # revoked in any file: revoked (as OpenSSH)
        hk = client.get_host_keys()
        for name in names:
            found = []  # weakest first: HostKeys.add keeps the last key of a type
            for plain, hashed, patterns, _ in parsed:
                found += [key for match, key in patterns if match(name)]
            for plain, hashed, patterns, _ in parsed:
                found += [key for entry, key in hashed if HostKeys.hash_host(name, entry) == entry]
            for plain, hashed, patterns, _ in parsed:
                found += plain.get(name.lower(), [])
            for key in found:
                if key.asbytes() not in revoked:
                    hk.add(name, key.get_name(), key)
        return revoked


_known_hosts_cache = _KnownHosts()


# ---------------------------------------------------------------------------
# connections


def _connect_once(target: Target, options: SSHOptions, config, depth: int = 0):
    import paramiko

    if depth > 5:
        raise SSHError("ProxyJump chain longer than 5 hops")
    sock = None
    jump_client = None
    timeout = target.connect_timeout or options.connect_timeout
    if target.proxy_jump:
        hops = [h.strip() for h in target.proxy_jump.split(",") if h.strip()]
        # ProxyJump a,b: reach b through a, then the target through b.
        spec = hops[-1]
        rest = ",".join(hops[:-1]) or None
        from plink.data.hostlist import parse_hostlist

        try:
            jentry = parse_hostlist(spec, source="ProxyJump", fmt="plain")[0]
        except PlinkError as exc:
            raise SSHError(f"bad ProxyJump {spec!r}: {exc}") from None
        jtarget = resolve(jentry, config, options)
        jtarget.proxy_jump = rest
        jump_client = _connect_once(jtarget, options, config, depth + 1)
        try:
            sock = jump_client.get_transport().open_channel(
                "direct-tcpip", (target.hostname, target.port), ("127.0.0.1", 0), timeout=timeout,
            )
        except Exception as exc:
            jump_client.close()
            raise SSHError(f"jump host {spec} cannot reach {target.hostname}:{target.port}: {exc}") from None

    client = paramiko.SSHClient()
    # the names paramiko looks the server's key up under (SSHClient.connect)
    names = [target.hostname if target.port == 22 else f"[{target.hostname}]:{target.port}"]
    revoked = _known_hosts_cache.fill(client, target.known_hosts, names)
    store = target.known_hosts[0] if target.known_hosts else None
    client.set_missing_host_key_policy(_make_policy(options.accept_new_host_keys, store, revoked,
                                                    options.added_host_keys, target.label))
    try:
        client.connect(
            target.hostname, port=target.port, username=target.user,
            key_filename=target.identity_files or None, allow_agent=not target.identities_only,
            look_for_keys=not target.identities_only,
            timeout=timeout, banner_timeout=timeout, auth_timeout=timeout, sock=sock,
        )
    except BaseException as exc:
        client.close()
        if jump_client is not None:
            jump_client.close()
        if isinstance(exc, paramiko.BadHostKeyException) and exc.key.asbytes() in revoked:
            raise _RevokedHostKey(exc.hostname, exc.key) from None  # another key is listed: still revoked
        raise
    if jump_client is not None:
        client._plink_jump = jump_client  # keep it alive; closed with the client
    return client


def _network_reason(exc: BaseException, target: Target) -> str:
    """One line for a failed connection, in the user's terms (the host name that did not resolve, the
    address and port that refused or did not answer, and why) instead of a Python exception's name."""
    import paramiko

    if isinstance(exc, socket.gaierror):
        return f"cannot resolve {target.hostname} ({exc.strerror or exc})"
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        why = "; ".join(f"{addr[0]} port {addr[1]}: {e.strerror or e}" for addr, e in exc.errors.items())
        return f"cannot connect: {why}"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"no answer from {target.hostname} port {target.port} (timed out)"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot connect: {target.hostname} port {target.port}: {exc.strerror}"
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


def connect(target: Target, options: SSHOptions, config=None):
    """An authenticated ``paramiko.SSHClient`` to ``target``.

    Retries network failures ``options.retries`` times with exponential
    backoff; raises :class:`SSHError` with a one-line reason.
    """
    import paramiko

    config = config if config is not None else _load_config(options.ssh_config)
    where = f"{target.label} ({target.user}@{target.hostname}:{target.port})"
    attempt = 0
    while True:
        try:
            return _connect_once(target, options, config)
        except _RevokedHostKey as exc:
            raise SSHError(f"{where}: host key ({exc.key.get_name()}) is marked @revoked in known_hosts "
                           f"({', '.join(target.known_hosts)}), refusing to connect") from None
        except _UnknownHostKey as exc:
            kh = ", ".join(target.known_hosts)
            raise SSHError(
                f"{where}: host key ({exc.key.get_name()}) is not in known_hosts ({kh}); "
                "verify it and add it, or pass --accept-new-host-keys to trust it on first use"
            ) from None
        except paramiko.BadHostKeyException as exc:
            raise SSHError(
                f"{where}: HOST KEY CHANGED ({exc.key.get_name()}), refusing to connect "
                "(a man-in-the-middle or a reinstalled host; fix known_hosts if you trust it)"
            ) from None
        except paramiko.AuthenticationException as exc:
            raise SSHError(f"{where}: authentication failed ({exc})") from None
        except SSHError as exc:
            err = f"{where}: {exc}"
            retryable = "jump host" in str(exc)
        except FileNotFoundError as exc:  # an IdentityFile / --identity that is not there: no retry helps
            raise SSHError(f"{where}: identity file {exc.filename or exc} not found (IdentityFile in the ssh "
                           "config)") from None
        except (OSError, socket.timeout, paramiko.SSHException, EOFError) as exc:
            err = f"{where}: {_network_reason(exc, target)}"
            retryable = True
        if not retryable or attempt >= options.retries:
            raise SSHError(err)
        time.sleep(options.backoff * (2 ** attempt))
        attempt += 1


class ChannelPipe:
    """A paramiko exec channel as an agent pipe (see probes.session)."""

    def __init__(self, client, command: str):
        self.client = client
        self.chan = client.get_transport().open_session()
        self.chan.exec_command(command)
        self._stderr = b""

    def write(self, data: bytes) -> None:
        try:
            self.chan.settimeout(10.0)  # a stalled peer (full window) is a lost agent, not a hang
            self.chan.sendall(data)
        except (OSError, EOFError) as exc:
            raise AgentLost(f"ssh channel closed: {type(exc).__name__}: {exc}".rstrip(": ")) from None

    def fileno(self) -> int:
        return self.chan.fileno()

    def write_ready(self) -> bool:
        """True when a small write would not block: the channel's window can
        take data and the connection's TCP socket has room (a host whose sshd
        is not reading -- starved, suspended -- fills it, and paramiko's
        write then waits for that one host)."""
        try:
            if not self.chan.send_ready():
                return False
            sock = self.client.get_transport().sock
            if not isinstance(sock, socket.socket):  # through a jump host: a channel, no TCP socket of ours
                return True
            return bool(select.select([], [sock], [], 0)[1])
        except Exception:
            return True  # let the write itself report the failure

    def read_now(self) -> bytes:
        """What is ready, without blocking; b'' at EOF; TimeoutError if nothing."""
        while self.chan.recv_stderr_ready():
            self._stderr = (self._stderr + self.chan.recv_stderr(65536))[-4096:]
        if self.chan.recv_ready():
            return self.chan.recv(65536)
        if self.chan.closed or self.chan.eof_received or self.chan.exit_status_ready():
            return b""
        raise TimeoutError

    def read(self, timeout: float) -> bytes:
        end = time.monotonic() + timeout
        while True:
            while self.chan.recv_stderr_ready():
                self._stderr = (self._stderr + self.chan.recv_stderr(65536))[-4096:]
            if self.chan.recv_ready():
                return self.chan.recv(65536)
            if self.chan.closed or self.chan.eof_received or self.chan.exit_status_ready():
                if not self.chan.recv_ready():
                    return b""
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.chan.settimeout(min(left, 0.05))
            try:
                data = self.chan.recv(65536)
            except socket.timeout:
                continue
            return data

    def stderr_tail(self) -> str:
        try:
            while self.chan.recv_stderr_ready():
                self._stderr = (self._stderr + self.chan.recv_stderr(65536))[-4096:]
        except Exception:
            pass
        return self._stderr.decode("utf-8", "replace").strip()

    def close(self) -> None:
        try:
            self.chan.shutdown_write()
        except Exception:
            pass
        try:
            self.chan.close()
        finally:
            jump = getattr(self.client, "_plink_jump", None)
            self.client.close()
            if jump is not None:
                jump.close()


TRANSPORT_POLL_S = 2.0


def _calm(client) -> None:
    """Let the client's transport thread wake every ``TRANSPORT_POLL_S`` s
    instead of paramiko's 0.1 s: it only polls to notice a local close
    (which :meth:`ChannelPipe.close` does by closing the packetizer and
    socket anyway).  With hundreds of hosts the 0.1 s polls of as many
    threads fight for the GIL (measured: 15 s of controller CPU to connect
    256 hosts, and heartbeats delayed past the agents' timeout)."""
    for c in (client, getattr(client, "_plink_jump", None)):
        try:
            c.get_transport().sock.settimeout(TRANSPORT_POLL_S)
        except Exception:
            pass


def start_agent(target: Target, options: SSHOptions, config=None) -> AgentSession:
    """Connect to ``target`` and start the agent there (no hello yet)."""
    client = connect(target, options, config)
    t_ssh = time.monotonic()
    _calm(client)
    cmd, src = agent_command(options.python)
    try:
        pipe = ChannelPipe(client, cmd)
        pipe.write(src)
    except Exception as exc:
        client.close()
        raise SSHError(f"{target.label}: cannot start the agent: {exc}") from None
    s = AgentSession(pipe, target.entry.name)
    s.timing["ssh"] = t_ssh
    return s


def start_agents(entries: list[HostEntry], options: SSHOptions, key: str, deadline: float,
                 on_done=None, hb_timeout: float = 20.0, hb_interval: float = 4.0
                 ) -> tuple[dict[int, AgentSession], dict[int, str]]:
    """Start an agent on every host, ``options.concurrency`` SSH connections at a time.

    Returns ``(sessions, failures)`` keyed by host index; a failure is a
    one-line reason.  The hello (key, host id = index, deadline, heartbeat
    timeout) is done here so a host whose python3 is missing counts as
    failed.  A connection's worker only connects, authenticates and starts
    the agent; the hello is sent at once and its answer collected by this
    thread, so the agent's interpreter start (~0.5 s on loaded hosts) does
    not hold a connection slot.  Agents already started get heartbeats while
    the others connect.  Complexity: O(N) connections, N / concurrency deep.
    """
    config = _load_config(options.ssh_config)
    targets = [resolve(e, config, options) for e in entries]
    sessions: dict[int, AgentSession] = {}
    failures: dict[int, str] = {}
    waiting: dict[int, tuple] = {}  # i -> (session, hello id, sent at)
    stop = threading.Event()

    def beat():
        """Heartbeat the agents already started, every ``hb_interval`` s until ``stop``."""
        while not stop.wait(hb_interval):
            for s in list(sessions.values()):
                try:
                    s.heartbeat()
                except Exception:
                    pass

    def one(i: int):
        """A worker: start host ``i``'s agent and send its hello; returns ``(i, session, hello id, error)``."""
        t0 = time.monotonic()
        try:
            s = start_agent(targets[i], options, config)
        except SSHError as exc:
            return i, None, None, str(exc)
        t1 = time.monotonic()
        try:
            rid = s.hello_request(key, deadline, hid=i, hb_timeout=hb_timeout)
        except Exception as exc:
            s.close()
            return i, None, None, f"{targets[i].label}: agent did not start: {exc}"
        timing = getattr(s, "timing", None)
        if isinstance(timing, dict):
            timing.update(begin=t0, started=t1)
            timing.setdefault("ssh", t1)
        return i, s, rid, None

    def finish(i: int, s, err: str | None) -> None:
        """Host ``i`` is done: a session, or a failure ``err``; tell ``on_done``."""
        if s is not None:
            sessions[i] = s
        else:
            failures[i] = err
        if on_done is not None:
            on_done(i, err)

    def collect() -> None:
        """Take the hello answers that arrived; fail agents that did not answer in time."""
        t = time.monotonic()
        for i, (s, rid, sent) in list(waiting.items()):
            err = None
            try:
                s.pump()
                info = s.hello_reply(rid)
            except (AgentLost, AgentError) as exc:
                info, err = None, str(exc)
            if info is None and err is None and t - sent > options.command_timeout:
                err = f"no reply from agent within {options.command_timeout:.0f} s"
            if info is None and err is None:
                continue
            del waiting[i]
            if err is not None:
                s.close()
                finish(i, None, f"{targets[i].label}: agent did not start: {err}")
            else:
                timing = getattr(s, "timing", None)
                if isinstance(timing, dict):
                    timing["hello"] = time.monotonic()
                finish(i, s, None)

    # the connections run in daemon threads: on Ctrl-C or SIGTERM the caller goes at once instead of
    # waiting for connects in flight to an unreachable host (its timeout, retries and backoff: 8-19 s
    # measured with a thread pool, which joins its workers); a worker whose session comes after that
    # closes it itself (``gone``, under ``handover``), so no agent is left running
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for i in range(len(entries)):
        todo.put(i)
    results: queue.SimpleQueue = queue.SimpleQueue()
    handover, gone = threading.Lock(), threading.Event()

    def worker() -> None:
        while not gone.is_set():
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            try:
                r = one(i)
            except Exception as exc:  # (one() returns its errors; anything else is a failure of host i)
                r = (i, None, None, f"{targets[i].label}: {type(exc).__name__}: {exc}")
            with handover:
                if not gone.is_set():
                    results.put(r)
                    continue
            if r[1] is not None:
                r[1].close()
            return

    beater = threading.Thread(target=beat, daemon=True)
    beater.start()
    for k in range(min(options.concurrency, max(1, len(entries)))):
        threading.Thread(target=worker, daemon=True, name=f"plink-connect-{k}").start()
    outstanding = len(entries)
    try:
        while outstanding or waiting:
            if outstanding:
                try:
                    got = [results.get(timeout=0.02 if waiting else 0.5)]
                except queue.Empty:
                    got = []
                while True:  # and whatever else is there
                    try:
                        got.append(results.get_nowait())
                    except queue.Empty:
                        break
                for i, s, rid, err in got:
                    outstanding -= 1
                    if s is None:
                        finish(i, None, err)
                    else:
                        waiting[i] = (s, rid, time.monotonic())
            else:
                time.sleep(0.02)
            collect()
    except BaseException:
        with handover:
            gone.set()
        late = []
        while True:
            try:
                late.append(results.get_nowait()[1])
            except queue.Empty:
                break
        for s in list(sessions.values()) + [w[0] for w in waiting.values()] + [s for s in late if s is not None]:
            s.close()
        raise
    finally:
        stop.set()
        gone.set()
    return sessions, failures
