"""SSH transport: host-key policies, ssh config, ProxyJump, quoting, retries.

The policy tests run against real sshd's in a two-host network-namespace
cluster (skipped, with the reason, without root / ip netns / sshd).
"""

import shlex
import socket
import subprocess
import threading
import time
from pathlib import Path

import paramiko
import pytest

from plink.errors import PlinkError
from plink.data.hostlist import HostEntry
from plink.probes import ssh as ssh_mod
from plink.probes.netns import NetnsCluster, unavailable_reason
from plink.probes.session import BOOT, agent_command, agent_source
from plink.probes.ssh import SSHError, SSHOptions, connect, resolve, start_agent


def test_agent_command_quotes_everything():
    evil = "python3; touch /tmp/pwned #"
    cmd, payload = agent_command(evil)
    argv = shlex.split(cmd)
    code_len, src_len = int(argv[-2]), int(argv[-1])
    assert argv == ["exec", evil, "-S", "-u", "-c", BOOT, str(code_len), str(src_len)]
    assert code_len + src_len == len(payload) and payload[code_len:] == agent_source()


def test_config_resolution(tmp_path):
    cfg = tmp_path / "config"
    cfg.write_text(
        "Host web*\n  HostName 192.0.2.%h\n  User alice\n  Port 2200\n  IdentityFile ~/k1\n"
        "  UserKnownHostsFile /tmp/kh1 /tmp/kh2\n  ProxyJump bastion\n  ConnectTimeout 3\n"
        "Host *\n  User bob\n"
    )
    opts = SSHOptions(ssh_config=str(cfg))
    config = ssh_mod._load_config(str(cfg))
    t = resolve(HostEntry("web1"), config, opts)
    assert (t.hostname, t.user, t.port, t.proxy_jump, t.connect_timeout) == ("192.0.2.web1", "alice", 2200, "bastion", 3.0)
    assert t.identity_files == [str(Path("~/k1").expanduser())] and not t.identities_only
    system = ["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"]  # read after the user's, as OpenSSH
    assert t.known_hosts == ["/tmp/kh1", "/tmp/kh2", *system]
    # host-list fields win over the config; --known-hosts wins over UserKnownHostsFile
    t = resolve(HostEntry("web2", user="root", port=22), config, SSHOptions(ssh_config=str(cfg), known_hosts=str(cfg)))
    assert (t.user, t.port, t.known_hosts) == ("root", 22, [str(cfg), *system])
    assert resolve(HostEntry("db"), config, opts).user == "bob"
    assert resolve(HostEntry("db"), config, opts).known_hosts == [str(Path("~/.ssh/known_hosts").expanduser()), *system]
    cfg.write_text("Host *\n  GlobalKnownHostsFile /tmp/g1 /tmp/kh0\n  UserKnownHostsFile /tmp/kh0\n")
    assert resolve(HostEntry("x"), ssh_mod._load_config(str(cfg)), opts).known_hosts == ["/tmp/kh0", "/tmp/g1"]


def test_options_validation(tmp_path):
    with pytest.raises(PlinkError, match="concurrency"):
        SSHOptions(concurrency=17)
    with pytest.raises(PlinkError, match="does not exist"):
        SSHOptions(ssh_config=str(tmp_path / "nope"))
    with pytest.raises(PlinkError, match="does not exist"):
        SSHOptions(known_hosts=str(tmp_path / "nope"))


def test_retries_with_backoff_then_one_line_error(monkeypatch):
    calls = []

    def fail(*a, **k):
        calls.append(time.monotonic())
        raise OSError("connection refused")

    monkeypatch.setattr(ssh_mod, "_connect_once", fail)
    opts = SSHOptions(retries=2, backoff=0.05)
    t = resolve(HostEntry("h"), paramiko.SSHConfig(), opts)
    with pytest.raises(SSHError, match="connection refused") as info:
        connect(t, opts, paramiko.SSHConfig())
    assert "\n" not in str(info.value)
    assert len(calls) == 3
    gaps = [b - a for a, b in zip(calls, calls[1:])]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1  # exponential


def test_auth_failures_are_not_retried(monkeypatch):
    calls = []

    def fail(*a, **k):
        calls.append(1)
        raise paramiko.AuthenticationException("denied")

    monkeypatch.setattr(ssh_mod, "_connect_once", fail)
    opts = SSHOptions(retries=3, backoff=0.01)
    with pytest.raises(SSHError, match="authentication failed"):
        connect(resolve(HostEntry("h"), paramiko.SSHConfig(), opts), opts, paramiko.SSHConfig())
    assert len(calls) == 1


@pytest.mark.parametrize("exc, said, tries", [
    (socket.gaierror(-2, "Name or service not known"), "cannot resolve h (Name or service not known)", 2),
    (paramiko.ssh_exception.NoValidConnectionsError({("10.9.9.9", 22): OSError(113, "No route to host")}),
     "cannot connect: 10.9.9.9 port 22: No route to host", 2),
    (socket.timeout("timed out"), "no answer from h port 22 (timed out)", 2),
    (OSError(101, "Network is unreachable"), "cannot connect: h port 22: Network is unreachable", 2),
    (FileNotFoundError(2, "No such file or directory", "/home/u/.ssh/nokey"),
     "identity file /home/u/.ssh/nokey not found (IdentityFile in the ssh config)", 1),
])
def test_network_failures_are_said_in_the_users_terms(monkeypatch, exc, said, tries):
    """The outside-in check read 'gaierror: [Errno -2] ...' and 'NoValidConnectionsError: [Errno None]
    Unable to connect to port 22' (the cause, no route to host, lost); a missing identity file was
    retried for every host."""
    calls = []

    def fail(*a, **k):
        calls.append(1)
        raise exc

    monkeypatch.setattr(ssh_mod, "_connect_once", fail)
    opts = SSHOptions(retries=1, backoff=0.01)
    with pytest.raises(SSHError) as info:
        connect(resolve(HostEntry("h"), paramiko.SSHConfig(), opts), opts, paramiko.SSHConfig())
    assert str(info.value).endswith(said) and len(calls) == tries


# ---------------------------------------------------------------------------
# against real sshd


@pytest.fixture(scope="module")
def cluster():
    reason = unavailable_reason(sshd=True)
    if reason:
        pytest.skip(reason)
    with NetnsCluster(racks=1, hosts_per_rack=2, extra_hops=0,
                      host_mbit=0, uplink_mbit=0) as c:
        yield c




def _opts(cluster, **kw):
    return SSHOptions(ssh_config=cluster.ssh_config, retries=0, connect_timeout=5, **kw)


def _entry(cluster, i=0):
    return HostEntry(cluster.hosts[i].name)


def _run(client, command):
    _, out, _ = client.exec_command(command, timeout=10)
    return out.read().decode().strip()


@pytest.mark.netns
def test_known_host_connects_and_runs_the_agent(cluster):
    opts = _opts(cluster)
    s = start_agent(resolve(_entry(cluster), ssh_mod._load_config(cluster.ssh_config), opts), opts)
    info = s.hello("ab" * 16, 30)
    assert info["addr"] == cluster.hosts[0].address and info["hostname"] == cluster.hosts[0].name
    s.close()


@pytest.mark.netns
def test_unknown_host_key_is_refused_by_default(cluster, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    opts = _opts(cluster, known_hosts=str(kh))
    t = resolve(_entry(cluster), ssh_mod._load_config(cluster.ssh_config), opts)
    with pytest.raises(SSHError, match="not in known_hosts.*--accept-new-host-keys"):
        connect(t, opts)
    assert kh.read_text() == ""


@pytest.mark.netns
def test_revoked_host_key_is_refused_even_with_accept_new_and_a_ca_line_is_no_obstacle(cluster, tmp_path):
    """A known_hosts with a @cert-authority line made every host unreachable ('Incorrect padding')."""
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    ca = " ".join(Path(str(other) + ".pub").read_text().split()[:2])
    kh = tmp_path / "known_hosts"
    kh.write_text(f"@cert-authority *.example.com {ca}\n" + Path(cluster.known_hosts).read_text())
    config = ssh_mod._load_config(cluster.ssh_config)
    opts = _opts(cluster, known_hosts=str(kh))
    client = connect(resolve(_entry(cluster), config, opts), opts, config)
    assert _run(client, "hostname") == cluster.hosts[0].name
    client.close()
    mine = next(ln for ln in Path(cluster.known_hosts).read_text().splitlines()
                if ln.split()[0].split(",")[0] == cluster.hosts[0].address)
    for listed in (False, True):  # revoked whether or not the host's own line lists the key too
        kh.write_text(f"@revoked * {' '.join(mine.split()[1:3])}\n" + (mine + "\n" if listed else ""))
        for accept in (False, True):
            opts = _opts(cluster, known_hosts=str(kh), accept_new_host_keys=accept)
            with pytest.raises(SSHError, match="marked @revoked"):
                connect(resolve(_entry(cluster), config, opts), opts, config)
    # revoked, with another key of the host listed
    kh.write_text(f"@revoked * {' '.join(mine.split()[1:3])}\n{cluster.hosts[0].address} {ca}\n")
    opts = _opts(cluster, known_hosts=str(kh))
    with pytest.raises(SSHError, match="marked @revoked"):
        connect(resolve(_entry(cluster), config, opts), opts, config)


@pytest.mark.netns
def test_accept_new_stores_the_key_then_verifies_it(cluster, tmp_path):
    kh = tmp_path / "sub" / "known_hosts"  # created on first use
    opts = _opts(cluster, known_hosts=str(kh), accept_new_host_keys=True)
    config = ssh_mod._load_config(cluster.ssh_config)
    for i in (0, 1):
        client = connect(resolve(_entry(cluster, i), config, opts), opts, config)
        assert _run(client, "hostname") == cluster.hosts[i].name
        client.close()
    stored = kh.read_text().splitlines()
    truth = Path(cluster.known_hosts).read_text().splitlines()
    assert sorted(stored) == sorted(truth)
    # the stored keys are now enforced without the opt-in
    strict = _opts(cluster, known_hosts=str(kh))
    connect(resolve(_entry(cluster), config, strict), strict, config).close()


@pytest.mark.netns
def test_changed_host_key_is_refused_even_with_accept_new(cluster, tmp_path):
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kh = tmp_path / "known_hosts"
    kh.write_text(f"{cluster.hosts[0].address} {' '.join(Path(str(other) + '.pub').read_text().split()[:2])}\n")
    before = kh.read_text()
    config = ssh_mod._load_config(cluster.ssh_config)
    for accept in (False, True):
        opts = _opts(cluster, known_hosts=str(kh), accept_new_host_keys=accept)
        with pytest.raises(SSHError, match="HOST KEY CHANGED"):
            connect(resolve(_entry(cluster), config, opts), opts, config)
    assert kh.read_text() == before


@pytest.mark.netns
def test_proxyjump(cluster, tmp_path):
    h0, h1 = cluster.hosts
    cfg = tmp_path / "config"
    cfg.write_text(Path(cluster.ssh_config).read_text() + f"Host via-jump\n  HostName {h1.address}\n  User root\n"
                   f"  IdentityFile {cluster.key_path}\n  UserKnownHostsFile {cluster.known_hosts}\n"
                   f"  ProxyJump {h0.name}\n")
    opts = SSHOptions(ssh_config=str(cfg), retries=0, connect_timeout=5)
    config = ssh_mod._load_config(str(cfg))
    client = connect(resolve(HostEntry("via-jump"), config, opts), opts, config)
    # h1 sees the connection coming from h0, not from the controller
    assert _run(client, "echo $SSH_CONNECTION").split()[0] == h0.address
    client.close()


@pytest.mark.netns
def test_missing_python_is_a_clear_failure(cluster):
    opts = _opts(cluster, python="/nonexistent/python3")
    sessions, failures = ssh_mod.start_agents([_entry(cluster)], opts, "cd" * 16, 30)
    assert sessions == {} and "agent did not start" in failures[0] and "/nonexistent/python3" in failures[0]


@pytest.mark.netns
def test_fping_and_icmp_between_two_hosts(cluster):
    import shutil
    import sys

    # the controller's interpreter exists inside the namespaces too (same file system)
    opts = _opts(cluster, python=sys.executable)
    sessions, failures = ssh_mod.start_agents([_entry(cluster, 0), _entry(cluster, 1)], opts, "ef" * 16, 30)
    assert failures == {}
    a, b = sessions[0], sessions[1]
    try:
        if shutil.which("fping"):
            r = a.call("fping", addr=b.info["addr"], count=3, interval=0.01)
            assert len(r["rtts_us"]) == 3
        if a.info["icmplib"]:
            r = a.call("icmp", addr=b.info["addr"], count=3, interval=0.01)
            assert len(r["rtts_us"]) == 3
    finally:
        a.close()
        b.close()


def test_connections_are_bounded_by_concurrency(monkeypatch):
    active, peak, lock = [0], [0], threading.Lock()

    class FakeSession:
        info = {}

        def hello_request(self, *a, **k):
            return 1

        def pump(self):
            pass

        def hello_reply(self, rid):
            return {}

        def close(self):
            pass

    def fake_start(target, options, config=None):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        if target.entry.name == "h3":
            raise SSHError("h3: refused")
        return FakeSession()

    monkeypatch.setattr(ssh_mod, "start_agent", fake_start)
    entries = [HostEntry(f"h{i}") for i in range(12)]
    sessions, failures = ssh_mod.start_agents(entries, SSHOptions(concurrency=3), "00" * 16, 30)
    assert peak[0] == 3
    assert sorted(sessions) == [i for i in range(12) if i != 3] and failures == {3: "h3: refused"}


def test_an_interrupt_does_not_wait_for_a_connect_in_flight(monkeypatch):
    """Ctrl-C (or SIGTERM) while a host does not answer: start_agents raised only after that host's
    connect gave up (8-19 s with its retries, measured); now at once. Sessions started before are
    closed, and so is one whose connect ends after the interrupt (no agent left running)."""
    import _thread

    release = threading.Event()
    made = []

    class FakeSession:
        info = {}

        def __init__(self):
            self.closed = False
            made.append(self)

        def hello_request(self, *a, **k):
            return 1

        def pump(self):
            pass

        def hello_reply(self, rid):
            return {"addr": "x"}

        def close(self):
            self.closed = True

    def fake_start(target, options, config=None):
        if target.entry.name == "slow":
            release.wait(30)  # a connect that hangs until after the interrupt
        return FakeSession()

    monkeypatch.setattr(ssh_mod, "start_agent", fake_start)
    entries = [HostEntry("h0"), HostEntry("slow"), HostEntry("h2")]
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        ssh_mod.start_agents(entries, SSHOptions(concurrency=3), "00" * 16, 30)
    assert time.monotonic() - t0 < 2.0
    assert len(made) == 2 and all(m.closed for m in made)
    release.set()  # the hung connect ends now: its session is closed by its own worker
    deadline = time.monotonic() + 5
    while len(made) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert len(made) == 3 and all(m.closed for m in made)


def test_hello_does_not_hold_a_connection_slot(monkeypatch):
    """The hello answer is collected outside the connection workers: a silent
    agent fails after command_timeout and an erroring one at once, without
    delaying the hosts connected after them; a fast one counts as started."""
    from plink.probes.session import AgentError

    t0 = time.monotonic()
    connected_at = {}

    class FakeSession:
        info = {}

        def __init__(self, name):
            self.name, self.closed = name, False

        def hello_request(self, *a, **k):
            return 7

        def pump(self):
            pass

        def hello_reply(self, rid):
            assert rid == 7
            if self.name == "h0":
                return None  # never answers
            if self.name == "h1":
                raise AgentError("hello first")
            return {"addr": self.name}

        def close(self):
            self.closed = True

    made = {}

    def fake_start(target, options, config=None):
        connected_at[target.entry.name] = time.monotonic() - t0
        made[target.entry.name] = FakeSession(target.entry.name)
        return made[target.entry.name]

    monkeypatch.setattr(ssh_mod, "start_agent", fake_start)
    entries = [HostEntry(f"h{i}") for i in range(6)]
    done = []
    sessions, failures = ssh_mod.start_agents(entries, SSHOptions(concurrency=1, command_timeout=3.0), "00" * 16, 30,
                                              on_done=lambda i, err: done.append(i))
    assert sorted(sessions) == [2, 3, 4, 5]
    assert "no reply from agent within" in failures[0] and "hello first" in failures[1]
    assert made["h0"].closed and made["h1"].closed and not made["h5"].closed
    assert max(connected_at.values()) < 2.0  # one slot, yet nobody waited 3 s for h0's silent agent
    assert sorted(done) == list(range(6)) and done[-1] == 0


def test_known_hosts_cache_matches_paramiko(tmp_path):
    """Parsed once, but a connection sees exactly what paramiko's own load
    would give for its host name: plain and hashed entries, [host]:port,
    nothing for unknown hosts, and a rewritten file is read again."""
    keys = [paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path, f"k{i}"))) for i in range(3)]
    kh = tmp_path / "known_hosts"
    hashed = paramiko.HostKeys.hash_host("10.0.0.2")
    kh.write_text(
        f"10.0.0.1,web1 {keys[0].get_name()} {keys[0].get_base64()}\n"
        f"{hashed} {keys[1].get_name()} {keys[1].get_base64()}\n"
        f"[10.0.0.3]:2222 {keys[2].get_name()} {keys[2].get_base64()}\n"
    )
    cache = ssh_mod._KnownHosts()

    def seen(name):
        c = paramiko.SSHClient()
        cache.fill(c, [str(kh), str(tmp_path / "missing")], [name])
        return {k: v.get_base64() for k, v in (c.get_host_keys().lookup(name) or {}).items()}

    ref = paramiko.HostKeys(str(kh))
    for name in ("10.0.0.1", "web1", "10.0.0.2", "[10.0.0.3]:2222", "10.0.0.3", "10.0.0.9"):
        want = {k: v.get_base64() for k, v in (ref.lookup(name) or {}).items()}
        assert seen(name) == want, name
    assert seen("10.0.0.2") == {keys[1].get_name(): keys[1].get_base64()}
    time.sleep(0.01)
    kh.write_text(f"10.0.0.9 {keys[2].get_name()} {keys[2].get_base64()}\n")
    assert seen("10.0.0.9") == {keys[2].get_name(): keys[2].get_base64()} and seen("10.0.0.1") == {}
    # line by line as OpenSSH: a line paramiko cannot take (its load raised for the whole file: every host
    # was unreachable) is skipped, so is a CA's line (@cert-authority); a @revoked key is returned
    kh.write_text("10.0.0.1 ssh-ed25519 !!!notbase64\n"
                  f"10.0.0.1 ssh-ed25519 {keys[0].get_base64()[:-13]}\n"  # truncated
                  f"@cert-authority *.example.com {keys[1].get_name()} {keys[1].get_base64()}\n"
                  "@nonsense 10.0.0.1 ssh-ed25519 AAAA\n"
                  f"10.0.0.1\t{keys[0].get_name()}  {keys[0].get_base64()} a comment\n"
                  f"@revoked\t*  {keys[2].get_name()} {keys[2].get_base64()}\n"  # blanks of any kind, as OpenSSH
                  f"10.0.0.4 {keys[2].get_name()} {keys[2].get_base64()}\n")
    time.sleep(0.01)
    assert seen("10.0.0.1") == {keys[0].get_name(): keys[0].get_base64()}
    assert seen("10.0.0.4") == {}  # listed and revoked: revoked
    assert cache.fill(paramiko.SSHClient(), [str(kh)], ["10.0.0.4"]) == {keys[2].asbytes()}
    entries, revoked = ssh_mod.read_known_hosts(str(kh))
    assert [e.hostnames for e in entries] == [["10.0.0.1"], ["10.0.0.4"]] and revoked == {keys[2].asbytes()}


def _keygen(tmp_path, name):
    path = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path


def test_write_ready_is_false_when_the_connection_socket_is_full():
    """A host whose sshd does not read fills the TCP socket; a heartbeat
    written then would wait for that host, so write_ready says no."""
    import socket as socket_mod
    from types import SimpleNamespace

    a, b = socket_mod.socketpair()
    try:
        a.setblocking(False)
        pipe = object.__new__(ssh_mod.ChannelPipe)
        pipe.chan = SimpleNamespace(send_ready=lambda: True)
        pipe.client = SimpleNamespace(get_transport=lambda: SimpleNamespace(sock=a))
        assert pipe.write_ready()
        try:
            while True:
                a.send(b"x" * 65536)
        except BlockingIOError:
            pass
        assert not pipe.write_ready()
        b.setblocking(False)
        try:
            while True:
                b.recv(1 << 20)
        except BlockingIOError:
            pass
        assert pipe.write_ready()
        pipe.chan = SimpleNamespace(send_ready=lambda: False)  # the channel's window is shut
        assert not pipe.write_ready()
        pipe.chan = SimpleNamespace(send_ready=lambda: True)
        pipe.client = SimpleNamespace(get_transport=lambda: SimpleNamespace(sock=object()))  # via a jump host
        assert pipe.write_ready()
    finally:
        a.close()
        b.close()


def test_known_hosts_patterns_revocations_in_any_file_and_the_stores_last_line(tmp_path):
    """Found outside-in against OpenSSH 9.2: a '10.214.1.*' line was not matched (so a changed key went
    through --accept-new-host-keys as a new host, and a right key was 'unknown'); an @revoked key in a
    second known_hosts file was ignored; a new key was glued onto a last line without its newline."""
    keys = [paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path, f"k{i}"))) for i in range(3)]
    line = [f"{k.get_name()} {k.get_base64()}" for k in keys]
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text(f"10.0.1.* {line[0]}\n!10.0.2.5,10.0.2.? {line[1]}\n10.0.3.* {line[1]}\n10.0.3.1 {line[2]}\n"
                 f"10.0.4.7 {line[0]}\nNode* {line[2]}\n")
    b.write_text(f"@revoked * {line[0]}\n")
    cache = ssh_mod._KnownHosts()

    def seen(name, paths=(a,)):
        c = paramiko.SSHClient()
        cache.fill(c, [str(p) for p in paths], [name])
        return [v.get_base64() for v in (c.get_host_keys().lookup(name) or {}).values()]

    assert seen("10.0.1.200") == [keys[0].get_base64()] and seen("10.0.2.4") == [keys[1].get_base64()]
    assert seen("10.0.2.5") == [] and seen("10.0.2.45") == [] and seen("node7") == [keys[2].get_base64()]
    assert seen("10.0.3.1") == [keys[2].get_base64()]  # an exact line beats a pattern's key of the same type
    assert seen("10.0.4.7") == [keys[0].get_base64()] and seen("10.0.4.7", (a, b)) == []  # revoked in b
    assert seen("10.0.1.9", (b, a)) == []
    # accept-new appends on a line of its own
    store = tmp_path / "store"
    store.write_text(f"@cert-authority *.example.com {line[1]}")  # no newline at the end
    ssh_mod._make_policy(True, str(store)).missing_host_key(paramiko.SSHClient(), "10.9.9.9", keys[2])
    assert store.read_text().splitlines() == [f"@cert-authority *.example.com {line[1]}", f"10.9.9.9 {line[2]}"]


def test_accept_new_records_the_keys_it_stores_and_says_them_in_one_line(tmp_path, monkeypatch):
    """--accept-new-host-keys added keys without a word, where OpenSSH says "Permanently added ..."
    (outside-in check): the policy records each key it stores, and one line names them."""
    keys = [paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path, f"k{i}"))) for i in range(2)]
    store = tmp_path / "kh"
    added: list = []
    ssh_mod._make_policy(True, str(store), frozenset(), added, "node1").missing_host_key(
        paramiko.SSHClient(), "10.0.0.1", keys[0])
    ssh_mod._make_policy(True, str(store), frozenset(), added).missing_host_key(
        paramiko.SSHClient(), "[10.0.0.2]:2222", keys[1])
    assert added == [("node1", str(store)), ("[10.0.0.2]:2222", str(store))]
    assert len(store.read_text().splitlines()) == 2
    with pytest.raises(paramiko.BadHostKeyException):  # a known host under another key: nothing recorded
        ssh_mod._make_policy(True, str(store), frozenset(), added, "again").missing_host_key(
            paramiko.SSHClient(), "10.0.0.1", keys[1])
    with pytest.raises(ssh_mod._UnknownHostKey):  # refused without accept-new: nothing recorded
        ssh_mod._make_policy(False, str(store), frozenset(), added, "n3").missing_host_key(
            paramiko.SSHClient(), "10.0.0.3", keys[0])
    assert len(added) == 2
    note = ssh_mod.added_keys_note
    assert note([]) is None
    assert note([("a", "/k")]) == "added the host key of 1 host (a) to /k"
    many = [(f"h{i}", str(tmp_path / "kh")) for i in range(8)]
    assert note(many) == f"added the host keys of 8 hosts (h0, h1, h2 and 5 more) to {tmp_path / 'kh'}"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert note([("a", str(tmp_path / ".ssh" / "known_hosts")), ("b", "/etc/kh"), ("a", "/etc/kh")]) == \
        "added the host keys of 2 hosts (a, b) to ~/.ssh/known_hosts, /etc/kh"
    assert SSHOptions().added_host_keys == [] and SSHOptions() == SSHOptions(added_host_keys=[("x", "y")])
