"""Launcher files: exact formats, rank placement, bad input, node-rank, CLI."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from plink.launch import emitters as em
from plink.errors import InputError, OptionError, PlinkError
from plink.data.groupfile import Groups
from plink.launch.noderank import Identity, node_rank
from plink.data.orderfile import read_order, read_order_hosts
from plink.data.probefile import Host

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HOSTS = [Host("b7", "10.0.0.7"), Host("a1", "10.0.0.1"), Host("c3")]


def body(text):
    """The file without its comment lines."""
    return [ln for ln in text.splitlines() if not ln.startswith("#")]


def ranks_per_line(text):
    """Host of each rank, for one-line-per-rank formats."""
    return [ln.split("#", 1)[0].strip() for ln in body(text)]


# -- golden formats -----------------------------------------------------------


def test_openmpi_one_line_per_rank_with_slots():
    text = em.openmpi_hostfile(HOSTS, slots=2)
    assert body(text) == ["b7", "b7", "a1", "a1", "c3", "c3"]
    assert "mpirun --hostfile THIS_FILE --map-by seq -np 6 ./app" in text


def test_rankfile_golden():
    assert body(em.openmpi_rankfile(HOSTS, slots=2)) == [
        "rank 0=b7 slot=0", "rank 1=b7 slot=1", "rank 2=a1 slot=0",
        "rank 3=a1 slot=1", "rank 4=c3 slot=0", "rank 5=c3 slot=1",
    ]


def test_mpich_golden():
    text = em.mpich_machinefile(HOSTS, slots=4)
    assert body(text) == ["b7:4", "a1:4", "c3:4"]
    assert "mpiexec -f THIS_FILE -n 12 ./app" in text


def test_headers_name_what_breaks_the_order():
    # measured on the netns cluster (tests/test_launchers_netns.py): Hydra's -ppn deals ranks
    # round-robin, srun -w places tasks in name order, DeepSpeed's other launchers are not pdsh
    assert "No -ppn" in em.mpich_machinefile(HOSTS)
    assert "srun -w" in em.slurm_hostfile(HOSTS) and "does not keep this order" in em.slurm_hostfile(HOSTS)
    assert "default pdsh launcher" in em.deepspeed_hostfile(HOSTS)
    for text in (em.mpich_machinefile(HOSTS), em.slurm_hostfile(HOSTS), em.deepspeed_hostfile(HOSTS)):
        assert len(body(text)) == 3  # the notes are comments the launchers skip


def test_slurm_hostfile_one_task_per_line():
    text = em.slurm_hostfile(HOSTS, slots=2)
    assert body(text) == ["b7", "b7", "a1", "a1", "c3", "c3"]
    assert "SLURM_HOSTFILE=THIS_FILE srun --distribution=arbitrary -n 6" in text


def test_deepspeed_and_horovod_golden():
    assert body(em.deepspeed_hostfile(HOSTS, slots=8)) == ["b7 slots=8", "a1 slots=8", "c3 slots=8"]
    assert em.horovod_hosts(HOSTS, slots=2) == "b7:2,a1:2,c3:2\n"


def test_torchrun_map_and_master():
    text = em.torchrun_map(HOSTS, slots=4, order_file="order.json")
    assert [ln.split()[0] for ln in body(text)] == ["b7", "a1", "c3"]
    assert "# node-rank 1, address=10.0.0.1" in text
    assert "--nnodes=3 --nproc-per-node=4" in text
    assert "--master-addr=10.0.0.7" in text  # rank 0's address when known
    assert '--node-rank="$(plink node-rank order.json)"' in text
    assert em.master_address([Host("x"), Host("y")]) == "x"
    with pytest.raises(PlinkError, match="same --nproc-per-node"):
        em.torchrun_map(HOSTS, slots=[1, 2, 1])


def test_per_host_slots_keep_ranks_contiguous():
    text = em.openmpi_hostfile(HOSTS, slots=[1, 3, 2])
    assert body(text) == ["b7", "a1", "a1", "a1", "c3", "c3"]
    assert body(em.mpich_machinefile(HOSTS, slots=[1, 3, 2])) == ["b7:1", "a1:3", "c3:2"]


@pytest.mark.parametrize("slots", [0, -1, 1.5, [1, 0, 1]])
def test_bad_slots(slots):
    with pytest.raises(PlinkError, match="slots"):
        em.openmpi_hostfile(HOSTS, slots=slots)


def test_bad_host_names():
    with pytest.raises(PlinkError, match="appears twice"):
        em.mpich_machinefile(["a", "b", "a"])
    with pytest.raises(PlinkError, match="cannot be written"):
        em.slurm_hostfile(["a b"])
    with pytest.raises(PlinkError, match="no hosts"):
        em.openmpi_hostfile([])


@pytest.mark.parametrize("names,expected", [
    (["node01", "node02", "node03", "node05"], "node[01-03,05]"),
    (["n1", "n2", "n10"], "n[1-2,10]"),
    (["gpu7"], "gpu7"),
    (["login", "n3", "n2"], "login,n[2-3]"),
    (["r0h0", "r0h1", "r1h0"], "r0h[0-1],r1h0"),
    (["gpu7", "n2", "n1"], "gpu7,n[1-2]"),  # a one-name group before another
])
def test_compress_hostlist(names, expected):
    assert em.compress_hostlist(names) == expected


def test_slurm_topology_switch_per_group():
    names = ["vm3", "vm1", "vm0", "vm2"]
    text = em.slurm_topology(names, [1, 0, 1, 0])
    assert body(text) == [
        "SwitchName=plink-s0 Nodes=vm[0,3]",
        "SwitchName=plink-s1 Nodes=vm[1-2]",
        "SwitchName=plink-root Switches=plink-s[0-1]",
    ]
    assert body(em.slurm_topology(["a", "b"], [0, 0])) == ["SwitchName=plink-s0 Nodes=a,b"]
    with pytest.raises(PlinkError, match="labels"):
        em.slurm_topology(names, [0, 1])


@pytest.mark.parametrize("algo,want,absent", [
    ("ring", "export NCCL_ALGO=Ring", None),
    ("dbt", "export NCCL_ALGO=Tree", "OMPI_MCA"),
    ("hd", "OMPI_MCA_coll_tuned_allreduce_algorithm=6", "export NCCL_ALGO"),
    ("bcube", "NCCL has no BCube", "export NCCL_ALGO"),
])
def test_env_hints_match_algorithm(algo, want, absent):
    text = em.env_hints(HOSTS, algo)
    assert want in text
    assert "export MASTER_ADDR=10.0.0.7" in text
    if absent:
        assert absent not in text
    # sourcing it is valid shell
    proc = subprocess.run(["sh", "-n"], input=text, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


def test_emit_dispatch_and_errors():
    assert em.emit("plain", HOSTS) == "b7\na1\nc3\n"
    assert body(em.emit("slurm-topology", HOSTS, labels=[0, 0, 1]))[0].startswith("SwitchName=plink-s0 Nodes=")
    with pytest.raises(OptionError, match="needs the groups: pass labels"):
        em.emit("slurm-topology", HOSTS)
    with pytest.raises(PlinkError, match="unknown format"):
        em.emit("yaml", HOSTS)


# -- node-rank ----------------------------------------------------------------


def test_node_rank_by_name_fqdn_short_and_address():
    hosts = [Host("vm0.dc.example", "10.1.0.5"), Host("vm1"), Host("10.1.0.9")]
    assert node_rank(hosts, identity=Identity(("vm0.dc.example",), ())) == 0
    assert node_rank(hosts, identity=Identity(("vm0",), ())) == 0  # short name
    assert node_rank(hosts, identity=Identity(("vm1.dc.example",), ())) == 1  # our FQDN, listed short
    assert node_rank(hosts, identity=Identity(("other",), ("10.1.0.5",))) == 0  # JSON address
    assert node_rank(hosts, identity=Identity(("other",), ("10.1.0.9",))) == 2  # listed by address
    resolve = {"vm1": ["10.1.0.6"]}.get
    assert node_rank(hosts, identity=Identity(("x",), ("10.1.0.6",)), resolve=lambda n: resolve(n) or []) == 1
    assert node_rank(hosts, "10.1.0.9") == 2
    assert node_rank(hosts, "vm1") == 1


def test_node_rank_errors_name_what_was_tried():
    hosts = [Host("a"), Host("b")]
    with pytest.raises(PlinkError, match=r"this node \(zz, 10.9.9.9\) is not in the order.*--host"):
        node_rank(hosts, identity=Identity(("zz",), ("10.9.9.9",)), resolve=lambda n: [])
    twice = [Host("a", "10.0.0.1"), Host("b", "10.0.0.2")]
    with pytest.raises(PlinkError, match="several hosts"):
        node_rank(twice, identity=Identity(("zz",), ("10.0.0.1", "10.0.0.2")))


def test_read_order_hosts_keeps_addresses(tmp_path):
    doc = {"format": "plink-order", "version": 1, "hosts": [
        {"rank": 1, "name": "b", "address": "10.0.0.2"}, {"rank": 0, "name": "a"}]}
    p = tmp_path / "o.json"
    p.write_text(json.dumps(doc))
    assert read_order_hosts(p) == [Host("a"), Host("b", "10.0.0.2")]
    t = tmp_path / "map.txt"
    t.write_text(em.torchrun_map(HOSTS))
    assert read_order(t) == ["b7", "a1", "c3"]  # the torchrun map is an order file too
    assert read_order_hosts(t) == HOSTS  # with the addresses noted in its comments


@pytest.mark.parametrize("ranks, msg", [([0, 0, 2], "rank 0 appears twice"), ([0, 1, 7], "rank 2 is missing"),
                                        ([1, 2, 3], "rank 0 is missing"), ([0, 1, 1.0], "a whole number"),
                                        ([0, 1, True], "a whole number"), ([0, 1, "2"], "a whole number")])
def test_read_order_hosts_refuses_broken_ranks(tmp_path, ranks, msg):
    """Two hosts at one rank, or a gap, were renumbered without a word."""
    doc = {"format": "plink-order", "version": 1,
           "hosts": [{"rank": r, "name": n} for r, n in zip(ranks, ["a", "b", "c"])]}
    p = tmp_path / "o.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(PlinkError, match=msg):
        read_order_hosts(p)


# -- CLI ------------------------------------------------------------------------


def run(*args):
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "plink", *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    from plink.data.simulate import simulate_datacenter

    d = tmp_path_factory.mktemp("emit")
    probe = simulate_datacenter(racks=2, hosts_per_rack=3, seed=5)
    path = d / "dc.json"
    probe.save(path)
    return path, probe


def test_cli_openmpi_matches_json_order(dc, tmp_path):
    path, probe = dc
    out, js = tmp_path / "hosts.ompi", tmp_path / "order.json"
    for fmt, target in (("json", js), ("openmpi", out)):
        proc = run("order", str(path), "--time-limit", "0.2", "--seed", "1", "--format", fmt, "--slots",
                   "1" if fmt == "json" else "2", "-o", str(target))
        assert proc.returncode == 0, proc.stderr
    order = read_order(js)
    assert ranks_per_line(out.read_text()) == [h for h in order for _ in range(2)]


def test_cli_slurm_topology_from_groups(dc, tmp_path):
    path, probe = dc
    racks = [lab[-1] for lab in probe.truth.labels]
    labels = [sorted(set(racks)).index(r) for r in racks]
    g = tmp_path / "groups.json"
    Groups(hosts=probe.names, labels=np.array(labels)).save(g)
    proc = run("order", str(path), "--time-limit", "0.2", "--format", "slurm-topology", "--groups", str(g))
    assert proc.returncode == 0, proc.stderr
    switches = [ln for ln in proc.stdout.splitlines() if ln.startswith("SwitchName=plink-s")]
    assert len(switches) == 2
    for ln in switches:  # each leaf switch holds exactly one rack
        members = em_expand(ln.split("Nodes=")[1])
        assert len({racks[probe.index(m)] for m in members}) == 1
    # without --groups (it was refused: 'needs the groups'): the groups the order is searched under, said in a note
    proc = run("order", str(path), "--time-limit", "0.2", "--format", "slurm-topology")
    assert proc.returncode == 0, proc.stderr
    assert "note: the switches of the topology are the 2 groups the order was searched under (inferred from" \
        in " ".join(proc.stderr.split())
    inferred = [ln for ln in proc.stdout.splitlines() if ln.startswith("SwitchName=plink-s")]
    members = sorted(sorted(em_expand(ln.split("Nodes=")[1])) for ln in inferred)
    assert members == sorted(sorted(em_expand(ln.split("Nodes=")[1])) for ln in switches)  # (switch names may differ)
    out = tmp_path / "topo.conf"
    proc = run("order", str(path), "--time-limit", "0.2", "--format", "slurm-topology", "-o", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    notes = json.loads(proc.stdout)["notes"]  # the note was on stderr only, not in --json
    assert any(n.startswith(f"the switches of {out} are the 2 groups the order was searched under") for n in notes)


def em_expand(expr):
    out = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", expr):
        prefix, ranges = m.group(1), m.group(2)
        if not ranges:
            out.append(prefix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            w = len(lo) if lo.startswith("0") else 0
            for x in range(int(lo), int(hi or lo) + 1):
                out.append(f"{prefix}{x:0{w}d}")
    return out


def test_cli_bad_input_one_line(dc, tmp_path):
    path, probe = dc
    Groups(hosts=probe.names, labels=np.zeros(probe.n, dtype=int)).save(tmp_path / "groups.json")
    for args, code, frag in [
        (("--slots", "0"), 2, "--slots"),
        (("--format", "json", "--slots", "2"), 2, "--slots"),
        (("--slots", "2"), 2, "--slots"),  # plain
        (("--format", "slurm-topology", "--groups", "{groups}", "--slots", "2"), 2, "--slots"),  # was ignored
    ]:
        args = tuple(a.replace("{groups}", str(tmp_path / "groups.json")) for a in args)
        proc = run("order", str(path), "--time-limit", "0.1", *args)
        assert proc.returncode == code, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and frag in proc.stderr, proc.stderr
    other = tmp_path / "g.json"
    Groups(hosts=["x", "y"], labels=np.array([0, 1])).save(other)
    proc = run("order", str(path), "--format", "slurm-topology", "--groups", str(other))
    assert proc.returncode == 1 and "lacks 6 host(s) of the probe file" in proc.stderr, proc.stderr


def test_cli_node_rank(tmp_path):
    p = tmp_path / "order.json"
    p.write_text(json.dumps({"format": "plink-order", "version": 1, "hosts": [
        {"rank": 0, "name": "n0", "address": "10.9.0.1"}, {"rank": 1, "name": "n1", "address": "10.9.0.2"}]}))
    proc = run("node-rank", str(p), "--host", "n1")
    assert (proc.returncode, proc.stdout) == (0, "1\n"), proc.stderr
    proc = run("node-rank", str(p), "--host", "10.9.0.1")
    assert (proc.returncode, proc.stdout) == (0, "0\n"), proc.stderr
    proc = run("node-rank", str(p), "--master")
    assert proc.stdout == "10.9.0.1\n"
    stdin = subprocess.run([sys.executable, "-m", "plink", "node-rank", "-", "--host", "n1"], input=p.read_text(),
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert (stdin.returncode, stdin.stdout) == (0, "1\n"), stdin.stderr  # - reads stdin ("-: no such file")
    proc = run("node-rank", str(p), "--host", "")  # a usage error (it exited 1)
    assert proc.returncode == 2 and "--host is empty" in proc.stderr
    proc = run("node-rank", str(p), "--host", "vm\x01RED")  # was echoed raw in 'this node (...) is not in'
    assert proc.returncode == 2 and "--host 'vm\\x01RED' is not a host name" in proc.stderr and "\x01" not in proc.stderr
    proc = run("node-rank", str(p), "--host", "vm\udcff")  # the byte 0xff ($'vm\xff'): was said 'vm\udcff'
    assert proc.returncode == 2 and "--host 'vm\\xff' is not a host name" in proc.stderr and "udc" not in proc.stderr
    assert "bytes that are not UTF-8" in proc.stderr  # (it said 'blanks or control characters')
    proc = run("node-rank", str(p))  # this machine is not n0/n1
    assert proc.returncode == 1 and "is not in" in proc.stderr and len(proc.stderr.splitlines()) == 1


# -- round trips through the host-list reader (plink.data.hostlist) ---------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

_label = st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]", fullmatch=True)
_names = st.lists(_label, min_size=1, max_size=12, unique=True)


def _hostlist():
    return pytest.importorskip("plink.data.hostlist", reason="plink.data.hostlist (the host-list reader) is not here yet")


@settings(max_examples=40, deadline=None)
@given(names=_names, slots=st.integers(1, 16))
def test_round_trip_through_hostlist_reader(names, slots):
    hl = _hostlist()
    # one host per line (slots=1): plain, Open MPI --map-by seq, SLURM_HOSTFILE, torchrun map
    for fmt in ("plain", "openmpi", "slurm", "torchrun"):
        got = hl.parse_hostlist(em.emit(fmt, names), fmt="auto")
        assert [e.name for e in got] == names, fmt
    # formats that carry the slot count
    for fmt, reader_fmt in (("mpich", "mpich"), ("deepspeed", "openmpi"), ("deepspeed", "auto")):
        got = hl.parse_hostlist(em.emit(fmt, names, slots=slots), fmt=reader_fmt)
        assert [(e.name, e.slots) for e in got] == [(n, slots) for n in names], fmt
    # horovod's -H value is MPICH host:N entries separated by commas
    got = hl.parse_hostlist(em.emit("horovod", names, slots=slots).replace(",", "\n"), fmt="mpich")
    assert [(e.name, e.slots) for e in got] == [(n, slots) for n in names]
    # one line per rank: the reader sees each host `slots` times in a row
    lines = body(em.emit("openmpi", names, slots=slots))
    assert [lines[i] for i in range(0, len(lines), slots)] == names
    assert lines == [n for n in names for _ in range(slots)]


@settings(max_examples=40, deadline=None)
@given(names=_names, k=st.integers(1, 4), data=st.data())
def test_topology_round_trips_through_slurm_node_lists(names, k, data):
    hl = _hostlist()
    labels = data.draw(st.lists(st.integers(0, k - 1), min_size=len(names), max_size=len(names)))
    text = em.slurm_topology(names, labels)
    switches = {}
    for line in body(text):
        fields = dict(f.split("=", 1) for f in line.split())
        if "Nodes" in fields:
            switches[fields["SwitchName"]] = [e.name for e in hl.parse_hostlist(fields["Nodes"], fmt="slurm")]
    got = sorted(sorted(v) for v in switches.values())
    want = sorted(sorted(n for n, g in zip(names, labels) if g == lab) for lab in set(labels))
    assert got == want


def test_mpich_slot_counts_that_look_like_ports():
    hl = _hostlist()
    # 'host:22' would read as an SSH port in auto mode: read MPICH files as mpich
    got = hl.parse_hostlist(em.emit("mpich", ["a", "b"], slots=22), fmt="mpich")
    assert [e.slots for e in got] == [22, 22]


def test_cli_emit_from_order_file(dc, tmp_path):
    path, probe = dc
    js = tmp_path / "order.json"
    assert run("order", str(path), "--time-limit", "0.2", "--algo", "dbt", "--format", "json", "-o", str(js)).returncode == 0
    order = read_order(js)
    proc = run("emit", str(js), "--format", "mpich", "--slots", "4")
    assert proc.returncode == 0 and body(proc.stdout) == [f"{h}:4" for h in order], proc.stderr
    env = run("emit", str(js), "--format", "env")
    assert "NCCL_ALGO=Tree" in env.stdout and "note" not in env.stderr  # the order file's algorithm
    env = run("emit", str(js), "--format", "env", "--algo", "ring")  # another: said, not silent
    assert "NCCL_ALGO=Ring" in env.stdout and "searched for dbt" in env.stderr
    plain = tmp_path / "ranks.txt"  # a plain host list does not say its collective: a ring, said
    plain.write_text("\n".join(order) + "\n")
    env = run("emit", str(plain), "--format", "env")
    assert "NCCL_ALGO=Ring" in env.stdout and "does not say which collective" in env.stderr
    assert "note" not in run("emit", str(plain), "--format", "env", "--algo", "hd").stderr
    out = tmp_path / "nodes.torchrun"
    assert run("emit", str(js), "--format", "torchrun", "-o", str(out)).returncode == 0
    assert f'plink node-rank {out}' in out.read_text() and read_order(out) == order
    racks = [lab[-1] for lab in probe.truth.labels]
    good = tmp_path / "groups.json"
    Groups(hosts=probe.names, labels=np.array([sorted(set(racks)).index(r) for r in racks])).save(good)
    assert run("emit", str(js), "--format", "slurm-topology", "--groups", str(good)).returncode == 0
    other = tmp_path / "other.json"
    Groups(hosts=probe.names[:-1] + ["stranger"], labels=np.zeros(probe.n, dtype=int)).save(other)
    proc = run("emit", str(js), "--format", "slurm-topology", "--groups", str(other))
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
    # worded as plink order's, schedule's and show's (it said "... are from different host lists: groups do not
    # cover the same hosts as the order (missing [...])"); emit reads no probe file
    assert f"groups file {other} lacks 1 host(s) of the order {js}, e.g. '{probe.names[-1]}'" in proc.stderr
    assert "probe file" not in proc.stderr
    # a rack map naming more hosts than the job (two strangers in racks of their own) is fine
    site = tmp_path / "site.json"
    Groups(hosts=["stranger1"] + probe.names + ["stranger2"],
           labels=np.array([0] + [1 + sorted(set(racks)).index(r) for r in racks] + [1 + len(set(racks))])).save(site)
    proc = run("emit", str(js), "--format", "slurm-topology", "--groups", str(site))
    assert proc.returncode == 0, proc.stderr
    want = run("emit", str(js), "--format", "slurm-topology", "--groups", str(good)).stdout
    assert proc.stdout.replace(str(site), str(good)) == want and "stranger" not in proc.stdout
    assert "names 2 host(s) not in the order ('stranger1', 'stranger2'): left out" in proc.stderr
    proc = run("emit", str(js), "--format", "openmpi", "--groups", str(good))  # ignored before
    assert proc.returncode == 2 and "--groups is for --format slurm-topology" in proc.stderr
    proc = run("emit", str(js), "--format", "slurm-topology")  # exit 1 before: a missing option is a usage error
    assert proc.returncode == 2 and "--format slurm-topology needs --groups" in proc.stderr
    proc = run("emit", str(js), "--format", "openmpi", "--algo", "hd")
    assert proc.returncode == 2 and "--algo is for --format env" in proc.stderr
    proc = run("emit", str(js), "--format", "openmpi", "--slots", "-1")
    assert proc.returncode == 2 and "--slots" in proc.stderr


def test_node_rank_finds_this_machine():
    import socket

    from plink.launch.noderank import local_identity

    ident = local_identity()
    me = socket.gethostname()
    if me.startswith("localhost"):
        pytest.skip("this machine has no host name")
    assert node_rank([Host("elsewhere-1"), Host(me), Host("elsewhere-2")], resolve=lambda n: []) == 1
    if ident.addresses:  # listed by one of its addresses instead
        assert node_rank([Host("elsewhere-1"), Host("n1", ident.addresses[0])], identity=Identity((), ident.addresses)) == 1


def test_plain_order_lines_with_words_that_are_not_attributes_are_refused(tmp_path):
    from plink.data.orderfile import read_order
    from plink.errors import ProbeFileError

    ok = tmp_path / "ok.txt"
    ok.write_text("vm1 slots=2 max_slots=4\nvm2  # address=10.0.0.2\n")
    assert read_order(ok) == ["vm1", "vm2"]
    bad = tmp_path / "sp.txt"
    bad.write_text("vm1\nvm 2\n")
    with pytest.raises(ProbeFileError, match=r"sp.txt:2: 'vm 2' is not one host name"):
        read_order(bad)
    matrix = tmp_path / "m.csv"  # a matrix given where an order file goes (plink emit m.csv)
    matrix.write_text(",a,b\na,0,1\nb,1,0\n")
    with pytest.raises(ProbeFileError, match=r"m.csv:1: ',a,b' has commas: an order file has one host name per "
                                             r"line \(a matrix\? 'plink order .*m.csv -o order.json' makes"):
        read_order(matrix)
    garbage = tmp_path / "bad.json"
    garbage.write_text("garbage{\n")
    with pytest.raises(ProbeFileError, match="not a JSON order file"):
        read_order(garbage)


# -- exact files: every line a user reads or a launcher parses -----------------------
# Three hosts in rank order (b7 and a1 with addresses, c3 without), 2 processes each. The headers are
# the commands a user copies and the notes on what breaks the order; the env file is sourced as-is.

GOLDEN = {
    "openmpi": """\
# plink rank order for Open MPI: one line per rank (3 hosts, 6 ranks).
# The sequential mapper puts rank r on the host of line r:
#   mpirun --hostfile THIS_FILE --map-by seq -np 6 ./app
b7
b7
a1
a1
c3
c3
""",
    "rankfile": """\
# plink rank order for Open MPI (3 hosts, 6 ranks); slot=k pins local rank k to logical CPU k:
#   mpirun --rankfile THIS_FILE -np 6 ./app
rank 0=b7 slot=0
rank 1=b7 slot=1
rank 2=a1 slot=0
rank 3=a1 slot=1
rank 4=c3 slot=0
rank 5=c3 slot=1
""",
    "mpich": """\
# plink rank order for MPICH / Intel MPI (3 hosts, 6 ranks); lines are filled in order:
#   mpiexec -f THIS_FILE -n 6 ./app              # MPICH
#   mpirun -machinefile THIS_FILE -n 6 ./app     # Intel MPI
# No -ppn: it overrides the :N counts and deals ranks round-robin over the hosts.
b7:2
a1:2
c3:2
""",
    "slurm": """\
# plink rank order for Slurm (3 nodes, 6 tasks): task r runs on the node of line r.
#   SLURM_HOSTFILE=THIS_FILE srun --distribution=arbitrary -n 6 ./app
# A node list (srun -w / --nodelist) does not keep this order: Slurm places tasks in its own node order.
b7
b7
a1
a1
c3
c3
""",
    "torchrun": """\
# plink node ranks for torchrun static rendezvous (3 nodes x 2 processes each).
# On every node (node rank = line number below, from 0):
#   torchrun --nnodes=3 --nproc-per-node=2 --node-rank="$(plink node-rank order.json)" \\
#       --master-addr=10.0.0.7 --master-port=29500 train.py
b7  # node-rank 0, address=10.0.0.7
a1  # node-rank 1, address=10.0.0.1
c3  # node-rank 2
""",
    "deepspeed": """\
# plink rank order for DeepSpeed (3 nodes, 6 ranks); nodes are ranked in file order:
#   deepspeed --hostfile THIS_FILE train.py --deepspeed_config ds.json
# With the default pdsh launcher; --launcher openmpi/mpich/slurm hand the hosts to that launcher
# (use plink's openmpi, mpich or slurm file with it directly).
b7 slots=2
a1 slots=2
c3 slots=2
""",
    "horovod": "b7:2,a1:2,c3:2\n",
}


@pytest.mark.parametrize("fmt", sorted(GOLDEN))
def test_launcher_file_exact(fmt):
    assert em.emit(fmt, HOSTS, slots=2) == GOLDEN[fmt]


def test_slurm_topology_file_exact():
    assert em.emit("slurm-topology", HOSTS, labels=[1, 0, 1]) == """\
# plink groups as a Slurm switch tree (3 nodes, 2 leaf switches).
# Put it next to slurm.conf and set TopologyPlugin=topology/tree; it steers node selection
# (jobs packed under few switches), not rank order: use the slurm format for that.
SwitchName=plink-s0 Nodes=b7,c3
SwitchName=plink-s1 Nodes=a1
SwitchName=plink-root Switches=plink-s[0-1]
"""


ENV_HEAD = """\
# plink: environment for {algo} all-reduce in the plink rank order (3 hosts, 6 ranks).
# Source it before the launcher:  . THIS_FILE
# NCCL numbers nodes in the order their first rank appears: its inter-node ring follows
# that node order and its trees are built over it; the GPU order inside a node is NCCL's own.
"""
GLOO = "# Gloo (torch.distributed on CPU) runs a ring in rank order: this order is for it too.\n"


def _gloo(algo):
    return (f"# Gloo (torch.distributed on CPU) runs a ring in rank order whatever is set here; this order was made "
            f"for {algo}, so for Gloo make a ring order (plink order --algo ring).\n")
OMPI = """\
# Open MPI (coll/tuned):
export OMPI_MCA_coll_tuned_use_dynamic_rules=1
export OMPI_MCA_coll_tuned_allreduce_algorithm={}
"""
MASTER = """\
# rank 0 (torchrun / torch.distributed rendezvous):
export MASTER_ADDR=10.0.0.7
"""


def _no_nccl(name, mpi=True):
    return f"# NCCL has no {name} all-reduce (NCCL_ALGO left unset)" + (
        "; Open MPI does (below).\n" if mpi else
        "; nor have Open MPI's coll/tuned or Gloo under torch.distributed: no variable here runs it.\n")


# Open MPI's coll/tuned numbers (ompi_info --all): allreduce 2 = nonoverlapping (reduce + bcast),
# 3 = recursive doubling, 4 = ring, 6 = rabenseifner; reduce 4 = binary; bcast 5 = binary tree.
ENV_GOLDEN = {
    "ring": "export NCCL_ALGO=Ring\n" + GLOO + OMPI.format("4  # ring"),
    "dbt": "export NCCL_ALGO=Tree   # NCCL's double binary tree over the node order\n" + _gloo("dbt"),
    "hd": _no_nccl("halving-doubling") + _gloo("hd")
    + OMPI.format("6  # rabenseifner: recursive-halving reduce-scatter + doubling all-gather"),
    "rd": _no_nccl("recursive-doubling") + _gloo("rd") + OMPI.format("3  # recursive doubling"),
    "bintree": _no_nccl("binary-tree") + _gloo("bintree")
    + OMPI.format("2  # reduce (binary tree) + broadcast (binary tree)")
    + "export OMPI_MCA_coll_tuned_reduce_algorithm=4\nexport OMPI_MCA_coll_tuned_bcast_algorithm=5\n"
    + "# (their segment sizes left at 0, whole messages level by level: as plink priced the order)\n",
    "bcube": _no_nccl("BCube", mpi=False) + _gloo("bcube"),
}


@pytest.mark.parametrize("algo", sorted(ENV_GOLDEN))
def test_env_file_exact(algo):
    assert em.emit("env", HOSTS, slots=2, algo=algo) == ENV_HEAD.format(algo=algo) + ENV_GOLDEN[algo] + MASTER


@pytest.mark.parametrize("fmt", sorted(em.EMITTERS) + ["torchrun", "env"])
def test_default_is_one_process_per_host(fmt):
    fn = {"torchrun": em.torchrun_map, "env": em.env_hints}.get(fmt) or em.EMITTERS[fmt]
    one = em.emit(fmt, HOSTS, slots=1)
    assert fn(HOSTS) == em.emit(fmt, HOSTS) == one
    assert one != em.emit(fmt, HOSTS, slots=2)
    if fmt in ("openmpi", "slurm"):
        assert body(one) == ["b7", "a1", "c3"]


def test_defaults_of_torchrun_and_env():
    # torchrun's header names the JSON order file, the env file is for a ring
    assert '--node-rank="$(plink node-rank order.json)"' in em.torchrun_map(HOSTS)
    assert em.env_hints(HOSTS) == em.emit("env", HOSTS) == em.env_hints(HOSTS, "ring")
    # the order file's name reaches the header, quoted for the shell
    text = em.emit("torchrun", HOSTS, order_file="my map.txt")
    assert '--node-rank="$(plink node-rank \'my map.txt\')"' in text


def test_torchrun_pads_names_and_master_by_name():
    text = em.torchrun_map([Host("n1"), Host("node-long", "10.0.0.2")], order_file="o.json")
    assert body(text) == ["n1         # node-rank 0", "node-long  # node-rank 1, address=10.0.0.2"]
    assert "--master-addr=n1 " in text  # rank 0 has no address: its name


def _error(fn, *args, **kw):
    with pytest.raises(PlinkError) as exc:
        fn(*args, **kw)
    return str(exc.value)


def test_error_messages_exact():
    assert _error(em.openmpi_hostfile, []) == "no hosts to write"
    assert _error(em.mpich_machinefile, ["a", "b", "c", "b"]) == "host 'b' appears twice in the order"
    # names that are not host names or addresses: they would read back as other hosts (a port or
    # slot count, a Slurm range) or not at all (the outside-in review's node[1-3], c:2 and a;b)
    for bad in ("", "a b", "a\tb", "a#1", "a,1", "node[1-3]", "c:2", "a;b", "aws:sa-east-1", "-a", "a..b", "nœud"):
        assert _error(em.emit, "openmpi", ["ok", bad]) == (
            f"host name {bad!r} cannot be written to a launcher file: it is not a host name or an IP address, "
            "and would read back as other hosts or not at all (a JSON order file, 'plink order --format json', "
            "keeps any name; for a launcher file the hosts need host names or IP addresses (a matrix's "
            "--hosts FILE can list them))")
    assert _error(em.emit, "mpich", ["vm000", "VM000"]) == (
        "host 'VM000' appears twice in the order (as 'vm000': names differing only in case are one host)")
    for good in ("node-01", "n_1.example.org", "10.0.0.1", "fe80::1", "2001:db8::5%eth0"):
        em.emit("openmpi", ["ok", good])
    assert _error(em.openmpi_hostfile, HOSTS, slots=[1, 2]) == "2 slot counts for 3 hosts"
    assert _error(em.openmpi_hostfile, HOSTS, slots=[1, 2, -3]) == "slots must be >= 1 (processes per host), got -3"
    # a string is not a list of counts, even when it has one digit per host
    assert _error(em.openmpi_hostfile, ["a"], slots="2") == "slots must be a whole number, got '2'"
    assert _error(em.openmpi_hostfile, HOSTS, slots="121") == "slots must be a whole number, got '121'"
    assert _error(em.openmpi_hostfile, HOSTS, slots=True) == "slots must be a whole number, got True"
    assert _error(em.openmpi_hostfile, HOSTS, slots=[1, 4097, 1]) == "slots must be <= 4096 (processes per host), got 4097"
    assert _error(em.horovod_hosts, HOSTS, slots=10**20) == "slots must be <= 4096 (processes per host), got 100000000000000000000"
    assert em.horovod_hosts(["a"], slots=4096) == "a:4096\n"
    assert _error(em.torchrun_map, HOSTS, slots=[2, 2, 1]) == (
        "torchrun runs the same --nproc-per-node on every node: give one slot count")
    assert _error(em.emit, "slurm-topology", HOSTS) == (
        "the slurm-topology format needs the groups: pass labels, one group per host (e.g. a groups file's, "
        "from plink group)")
    assert _error(em.emit, "plain", HOSTS, slots=2) == (
        "a plain order file has one line per host: slots apply to launcher formats")
    assert _error(em.emit, "yaml", HOSTS) == ("unknown format 'yaml' (choose from plain, openmpi, rankfile, "
                                              "mpich, slurm, slurm-topology, torchrun, deepspeed, horovod, env)")
    # an order file's algorithm that plink does not know gets no hints for another one
    assert _error(em.emit, "env", HOSTS, algo="allgather") == (
        "unknown algorithm 'allgather' (choose from ring, hd, rd, dbt, bcube, bintree)")
    assert _error(em.slurm_topology, HOSTS, [0, 1]) == "2 group labels for 3 hosts"


def test_compress_hostlist_leaves_bracketed_names_alone():
    # folding 'x[1', 'x[2' would write 'x[[1-2]'
    assert em.compress_hostlist(["x[2", "x[1"]) == "x[2,x[1"
    assert em.compress_hostlist(["n007", "n8", "n009", "n010"]) == "n[007,009-010],n8"


@pytest.mark.parametrize("fmt", ["mpich", "horovod"])
def test_host_slots_formats_refuse_ipv6(fmt):
    """fe80::1:4 read back as the address fe80::1:4 without slots (the second outside-in check)."""
    with pytest.raises(PlinkError, match=f"the {fmt} format writes host:slots, which the IPv6 address 'fe80::1'"):
        em.emit(fmt, ["fe80::1", "10.0.0.1"], slots=4)
    assert em.emit(fmt, ["n1", "10.0.0.1"], slots=4)  # IPv4 and names are fine
    assert "fe80::1" in em.emit("openmpi", ["fe80::1", "10.0.0.1"], slots=4)


def test_emit_reads_its_own_horovod_list_as_the_order(tmp_path):
    """plink emit refused plink's own horovod -H file (one line host:N,host:N,...) with a guess that it
    was a matrix; it is the hosts in rank order, its slots noted as a hostfile's are."""
    from plink.data.orderfile import read_order_hosts

    f = tmp_path / "hosts.horovod"
    f.write_text(em.emit("horovod", ["b7", "a1", "c3"], slots=2))
    assert [h.name for h in read_order_hosts(f)] == ["b7", "a1", "c3"]
    proc = run("emit", str(f), "--format", "plain")
    assert (proc.returncode, proc.stdout) == (0, "b7\na1\nc3\n"), proc.stderr
    proc = run("emit", str(f), "--format", "openmpi")  # a launcher file: its slots come from --slots, said
    assert proc.returncode == 0 and "says slots=2" in proc.stderr, proc.stderr
    by_hand = tmp_path / "by-hand.txt"  # a space after a comma, a comma at the end: as typed for -H
    by_hand.write_text("b7:2, a1:4, c3:2,\n")
    assert [h.name for h in read_order_hosts(by_hand)] == ["b7", "a1", "c3"]
    proc = run("emit", str(by_hand), "--format", "openmpi")
    assert proc.returncode == 0 and "says slots=2..4" in proc.stderr, proc.stderr
    matrix = tmp_path / "m.csv"  # a CSV is still no order
    matrix.write_text("0,1\n1,0\n")
    with pytest.raises(PlinkError, match="has commas"):
        read_order_hosts(matrix)


def test_env_master_addr_without_an_address_says_so():
    """A plain list has names only: MASTER_ADDR is the first name, which may be an ssh-config alias
    no other host resolves; the file says so, and not when the probe recorded an address."""
    text = em.env_hints([Host("gpu-a"), Host("gpu-b")], "ring")
    assert "export MASTER_ADDR=gpu-a" in text and "SSH config alias" in text
    assert "SSH config alias" not in em.env_hints(HOSTS, "ring")
    assert subprocess.run(["sh", "-n"], input=text, text=True, capture_output=True).returncode == 0


def test_env_says_what_the_order_was_made_for(tmp_path):
    """`plink emit ring-order.json --format env --algo hd` said "this order was made for hd": the
    Gloo line named --algo, not the order file's algorithm."""
    order = tmp_path / "order.json"
    order.write_text(json.dumps({"format": "plink-order", "version": 1, "algo": "ring",
                                 "hosts": [{"rank": r, "name": n} for r, n in enumerate(["a", "b", "c"])]}))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run([sys.executable, "-m", "plink", "emit", str(order), "--format", "env", "--algo", "hd"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert GLOO in run.stdout and "made for hd" not in run.stdout
    assert "searched for ring" in run.stderr
    # a plain list says nothing of what it was made for
    assert "for Gloo use an order made for a ring" in em.env_hints(HOSTS, "hd", made_for=None)
    assert _gloo("dbt") in em.env_hints(HOSTS, "ring", made_for="dbt")


def test_cli_emit_reads_the_order_from_stdin(tmp_path):
    """`plink order ... -o - | plink emit - --format F` composes through a pipe ("-: no such file" before)."""
    order = json.dumps({"format": "plink-order", "version": 1, "algo": "hd",
                        "hosts": [{"rank": r, "name": n} for r, n in enumerate(["c", "a", "b"])]})
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run([sys.executable, "-m", "plink", "emit", "-", "--format", "openmpi"], input=order,
                         capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert [ln for ln in run.stdout.splitlines() if not ln.startswith("#")] == ["c", "a", "b"]
    run = subprocess.run([sys.executable, "-m", "plink", "emit", "-", "--format", "env"], input=order,
                         capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0 and "allreduce_algorithm=6" in run.stdout  # the algorithm read from stdin too
    # read as a file is: /dev/zero on stdin filled memory ('internal error: MemoryError'); not UTF-8 was exit 2
    with open("/dev/zero", "rb") as zero:
        run = subprocess.run([sys.executable, "-m", "plink", "emit", "-", "--format", "plain"], stdin=zero,
                             capture_output=True, text=True, env=env, timeout=60)
    assert (run.returncode, run.stderr) == (1, "plink: error: <stdin>: holds NUL bytes: not a text file\n")
    run = subprocess.run([sys.executable, "-m", "plink", "node-rank", "-"], input=b"\xff\xfe", capture_output=True,
                         env=env, timeout=60)
    assert (run.returncode, run.stderr) == (1, b"plink: error: <stdin>: not a UTF-8 text file\n")


def test_emit_notes_slots_an_order_file_gives_that_it_does_not_carry_over(tmp_path):
    """A launcher hostfile as the order: its slots=N went without a word, every host got --slots."""
    f = tmp_path / "hosts.ompi"
    f.write_text("a1 slots=4\nb2 slots=4  # rack 2\n")
    r = run("emit", str(f), "--format", "deepspeed")
    assert r.returncode == 0 and "a1 slots=1" in r.stdout
    assert r.stderr.strip() == (f"plink: note: {f} says slots=4; this file gives every host --slots 1 "
                                "(plink emit takes the processes per host from --slots alone)")
    r = run("emit", str(f), "--format", "openmpi", "--slots", "4")
    assert r.returncode == 0 and r.stderr == "" and r.stdout.count("a1\n") == 4
    f.write_text("a1 slots=4\nb2 slots=2\n")
    assert "says slots=2..4;" in run("emit", str(f), "--format", "mpich", "--slots", "4").stderr
    assert run("emit", str(f), "--format", "plain").stderr == ""  # a plain order file has no slots


def test_names_resolvers_read_as_ipv4_addresses_and_bad_addresses_are_refused(tmp_path):
    """Numeric names ('0', '100', host IDs from a CSV column) went into launcher files, where resolvers
    read them as 0.0.0.0 and 0.0.0.100; an order.json address such as 'x;touch${IFS}y' became MASTER_ADDR."""
    from plink.data.orderfile import read_order_hosts

    for name, addr in (("100", "0.0.0.100"), ("10.1", "10.0.0.1"), ("0x7f", "0.0.0.127"), ("192.168.001.1", "192.168.1.1")):
        with pytest.raises(PlinkError, match=rf"'{name}' cannot be written to a launcher file: it is the IPv4 address {addr} to resolvers"):
            em.emit("openmpi", [name, "b"])
    assert "1.2.3.4\nnode1\n" in em.emit("plain", ["1.2.3.4", "node1"])
    for name in ("999.1.1.1", "1.2.3.4.5", "256.0.0.1"):  # digits and dots, no address: went in as they were
        with pytest.raises(PlinkError, match=rf"'{name}' cannot be written to a launcher file: it is not a host name"):
            em.emit("openmpi", [name, "b"])
    nums = tmp_path / "num.json"  # what plink order --format json keeps; plink emit names the file and a way out
    nums.write_text(json.dumps({"format": "plink-order", "version": 1,
                                "hosts": [{"rank": 0, "name": "100"}, {"rank": 1, "name": "101"}]}))
    r = run("emit", str(nums), "--format", "openmpi")
    assert r.returncode == 1 and r.stderr.startswith(f"plink: error: {nums}: host name '100' cannot be written")
    assert "give the hosts names that are not numbers, such as node100" in r.stderr
    f = tmp_path / "order.json"
    for addr in ("x;touch${IFS}y", "$(id)", "`id`", "10.1", "999.1.1.1"):
        f.write_text(json.dumps({"format": "plink-order", "version": 1,
                                 "hosts": [{"rank": 0, "name": "a", "address": addr}, {"rank": 1, "name": "b"}]}))
        with pytest.raises(PlinkError, match=r"host 'a': address .* is not an IP address or a host name"):
            read_order_hosts(f)
        r = run("emit", str(f), "--format", "env")
        assert r.returncode == 1 and "is not an IP address or a host name" in r.stderr and r.stdout == ""


def test_an_mpich_machinefile_reads_back_as_an_order(tmp_path):
    """plink's own mpich file (host:N) was refused as an order ('a1:4' is not a host name), where slots=N
    lines were taken with a note; an IPv6 address keeps its last group."""
    from plink.data.orderfile import read_order_hosts

    f = tmp_path / "hosts.mpich"
    f.write_text(em.emit("mpich", ["b7", "a1", "c3"], slots=4))
    assert [h.name for h in read_order_hosts(f)] == ["b7", "a1", "c3"]
    r = run("emit", str(f), "--format", "openmpi", "--slots", "4")
    assert r.returncode == 0 and r.stderr == "" and [ln for ln in r.stdout.splitlines() if ln[:1] != "#"] == \
        ["b7"] * 4 + ["a1"] * 4 + ["c3"] * 4
    assert "says slots=4;" in run("emit", str(f), "--format", "openmpi").stderr
    g = tmp_path / "v6.txt"
    g.write_text("fe80::1:4\n10.0.0.1:4\n")
    assert [h.name for h in read_order_hosts(g)] == ["fe80::1:4", "10.0.0.1"]


_SAID = {"openmpi": "(is this a launcher file with a line per process? give the order file",
         "rankfile": "is a line of an Open MPI rankfile, not an order file (give the order",
         "env": "is a line of an environment file, not an order file (give the order"}


@pytest.mark.parametrize("fmt, hosts", [("openmpi", ["a", "b", "c"]), ("rankfile", ["a", "b", "c"]),
                                        ("env", ["a", "b", "c"]), ("rankfile", ["a"]), ("env", ["a"])])
def test_node_rank_given_a_launcher_file_says_what_it_reads(tmp_path, fmt, hosts):
    """node-rank of a launcher file said only "host 'rank' appears twice" (rankfile) or 'export' (env); of a
    one-host rankfile, --master printed 'rank'."""
    said = _SAID[fmt]
    f = tmp_path / f"l.{fmt}"
    f.write_text(em.emit(fmt, hosts, slots=2, order_file="order.txt"))
    r = run("node-rank", str(f), "--master")
    assert r.returncode == 1 and said in r.stderr and r.stdout == "", (r.stdout, r.stderr)


# -- the library API: bad values are one-line ValueErrors of plink's classes ------------------------


@pytest.mark.parametrize("slots, got", [
    ([2.5, 2.5], "2.5"),  # a list was cut to a:2, b:2 where slots=2.5 was refused
    (None, "None"),  # a bare TypeError from int()
    (float("nan"), "nan"),  # a bare 'cannot convert float NaN to integer'
    (float("inf"), "inf"),
    (["x", "y"], "'x'"),  # a bare 'invalid literal'
    (["2", "2"], "'2'"),  # a string is not a count in a list either (nor alone)
    ([True, 1], "True"),
])
def test_emit_refuses_slots_that_are_not_whole_numbers(slots, got):
    with pytest.raises(OptionError) as exc:
        em.emit("mpich", ["a", "b"], slots=slots)
    assert str(exc.value) == f"slots must be a whole number, got {got}"
    assert isinstance(exc.value, ValueError)


def test_emit_takes_whole_numbers_of_any_type_as_slots():
    assert body(em.emit("mpich", ["a", "b"], slots=[2.0, np.int8(3)])) == ["a:2", "b:3"]
    assert body(em.emit("mpich", ["a", "b"], slots=np.float32(4))) == ["a:4", "b:4"]
    assert body(em.emit("mpich", ["a", "b"], slots=np.array(2))) == ["a:2", "b:2"]
    assert body(em.emit("mpich", ["a", "b"], slots=np.array([1, 2]))) == ["a:1", "b:2"]
    with pytest.raises(OptionError, match="^2 slot counts for 3 hosts$"):
        em.emit("mpich", ["a", "b", "c"], slots=[1, 1])


def test_slurm_topology_takes_any_hashable_labels_as_groups():
    # plink.order_hosts takes string labels (categories): so does the topology ('invalid literal for int()')
    by_name = body(em.emit("slurm-topology", ["a", "b", "c"], labels=["rack2", "rack1", "rack2"]))
    by_number = body(em.emit("slurm-topology", ["a", "b", "c"], labels=[5, 0, 5]))
    assert by_name == by_number == ["SwitchName=plink-s0 Nodes=a,c", "SwitchName=plink-s1 Nodes=b",
                                    "SwitchName=plink-root Switches=plink-s[0-1]"]
    assert body(em.emit("slurm-topology", ["a", "b"], labels=np.array(["x", "y"]))) == [
        "SwitchName=plink-s0 Nodes=a", "SwitchName=plink-s1 Nodes=b", "SwitchName=plink-root Switches=plink-s[0-1]"]
    assert body(em.emit("slurm-topology", ["a", "b"], labels=np.array([1.0, 1.0]))) == ["SwitchName=plink-s0 Nodes=a,b"]


@pytest.mark.parametrize("labels, msg", [
    (["x", None], "host 'b' has no group (label None): give every host a group label"),
    ([1.0, float("nan")], "host 'b' has no group (label nan): give every host a group label"),
    (np.array([0.0, np.nan]), "host 'b' has no group (label np.float64(nan)): give every host a group label"),
    (["x"], "1 group labels for 2 hosts"),
    ("xy", "group labels must be a sequence of one label per host, got str"),
    ([[0], [1]], "host 'a' has group label [0], which is not a label (a number or a name)"),
    ([1, "1"], "labels mix numbers and strings (1 and '1'): give one kind, group numbers or names"),
])
def test_slurm_topology_refuses_labels_that_are_not_groups(labels, msg):
    with pytest.raises(InputError) as exc:
        em.emit("slurm-topology", ["a", "b"], labels=labels)
    assert str(exc.value) == msg


def test_emit_option_errors_are_value_errors():
    for call in (lambda: em.emit("yaml", ["a"]), lambda: em.emit("env", ["a"], algo="allgather"),
                 lambda: em.emit("slurm-topology", ["a"]), lambda: em.env_hints(["a"], "tree")):
        with pytest.raises(OptionError):
            call()


def test_emit_lists_only_the_formats_it_writes():
    # 'json' was listed as a choice by the very error that refused it
    with pytest.raises(OptionError) as exc:
        em.emit("yaml", ["a"])
    assert "json" not in str(exc.value) and "plain" in str(exc.value)
    with pytest.raises(OptionError, match=r"^emit\(\) does not write the json order file: .*orderfile\.render"):
        em.emit("json", ["a", "b"])
    for fmt in em.EMIT_FORMATS:  # every format it lists, it writes
        kw = {"labels": [0, 0]} if fmt == "slurm-topology" else {}
        assert em.emit(fmt, ["a", "b"], **kw)


@pytest.mark.parametrize("fmt", ["plain", "openmpi", "slurm", "torchrun", "env", "slurm-topology"])
def test_emit_refuses_hosts_that_are_not_a_sequence_of_names(fmt):
    """emit(fmt, "node1") wrote one host per letter ('n', 'o', 'd', 'e', '1'), silently; None or a number
    gave a bare TypeError ('object of type 'NoneType' has no len()')."""
    for hosts, kind in (("node1", "str"), (b"ab", "bytes"), (None, "NoneType"), (5, "int"),
                        ({"b", "a"}, "set"), ({"a": 0, "b": 1}, "dict")):  # (no order: written in hash order)
        with pytest.raises(InputError) as exc:
            em.emit(fmt, hosts, labels=[0])
        assert str(exc.value) == f"hosts must be a sequence of host names, got {kind}"
    assert em.emit("plain", iter(["a", "b"])) == "a\nb\n"  # (any iterable of names, as the launcher formats take)
