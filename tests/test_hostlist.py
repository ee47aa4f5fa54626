import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plink.errors import PlinkError
from plink.data.hostlist import HostEntry, format_hostlist, parse_hostlist, read_hostlist


def names(entries):
    return [e.name for e in entries]


def test_plain_with_users_ports_comments_and_blank_lines():
    text = """
    # my cluster
    vm1
    ubuntu@vm2            # trailing comment
    vm3:2222
    root@10.0.0.4:22

    [fe80::1%eth0]:2200
    admin@[2001:db8::7]
    ::1
    """
    e = parse_hostlist(text)
    assert e == [
        HostEntry("vm1"),
        HostEntry("vm2", user="ubuntu"),
        HostEntry("vm3", port=2222),
        HostEntry("10.0.0.4", user="root", port=22),
        HostEntry("fe80::1%eth0", port=2200),
        HostEntry("2001:db8::7", user="admin"),
        HostEntry("::1"),
    ]


def test_openmpi_hostfile():
    e = parse_hostlist("node1 slots=4\nnode2 slots=8 max_slots=8\nnode3\n[::1] slots=2\n")
    assert [(x.name, x.slots) for x in e] == [("node1", 4), ("node2", 8), ("node3", None), ("::1", 2)]


def test_mpich_machinefile_and_the_colon_rule():
    # auto: small numbers are slot counts, 22 and >= 1024 are ports, user@ / [v6] force a port
    e = parse_hostlist("n1:8\nn2:22\nn3:2222\nroot@n4:8\n[::2]:8\n")
    assert [(x.name, x.slots, x.port) for x in e] == [
        ("n1", 8, None), ("n2", None, 22), ("n3", None, 2222), ("n4", None, 8), ("::2", None, 8),
    ]
    # forced formats
    assert parse_hostlist("n1:22\n", fmt="mpich")[0].slots == 22
    assert parse_hostlist("n1:8\n", fmt="plain")[0].port == 8


def test_slurm_compressed_lists():
    e = parse_hostlist("node[01-03,10]\ngpu[8-9]x,cpu7\nr[1-2]-n[1-2]\n")
    assert names(e) == ["node01", "node02", "node03", "node10", "gpu8x", "gpu9x", "cpu7",
                        "r1-n1", "r1-n2", "r2-n1", "r2-n2"]
    assert names(parse_hostlist("n[8-11]", fmt="slurm")) == ["n8", "n9", "n10", "n11"]
    assert names(parse_hostlist("n[008-010]")) == ["n008", "n009", "n010"]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("a\nb\na\n", ":3: duplicate host a (first on line 1)"),
        ("node[1-3]\nnode2\n", ":2: duplicate host node2"),
        ("a\nb c\n", ":2:"),
        ("a\nhost:\n", ":2: missing number"),
        ("a\nhost:0\n", ":2:"),
        ("a\n\nhost:99999\n", ":3:"),
        ("node[3-1]\n", ":1: range"),
        ("node[1-2\n", ":1: unclosed"),
        ("node1-2]\n", ":1:"),
        ("node[a-b]\n", ":1: bad range"),
        ("ho$t\n", ":1: invalid host name"),
        ("bad user@h\n", ":1:"),
        ("h slots=x\n", ":1: slots"),
        ("h foo=1\n", ":1: unknown attribute"),
        ("[::1\n", ":1: unclosed"),
        ("user@h:8\n", None),  # valid: a port
    ],
)
def test_malformed_lines_name_the_line(text, fragment):
    if fragment is None:
        parse_hostlist(text)
        return
    with pytest.raises(PlinkError) as info:
        parse_hostlist(text, source="hosts.txt")
    assert "hosts.txt" + fragment in str(info.value) or fragment in str(info.value)
    assert str(info.value).startswith("hosts.txt:")
    assert "\n" not in str(info.value)


def test_format_specific_rejections():
    with pytest.raises(PlinkError, match="OpenMPI"):
        parse_hostlist("h slots=2\n", fmt="mpich")
    with pytest.raises(PlinkError, match="user@"):
        parse_hostlist("u@h:2\n", fmt="mpich")
    with pytest.raises(PlinkError, match="unknown host list format"):
        parse_hostlist("h\n", fmt="yaml")


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(PlinkError, match="no hosts"):
        parse_hostlist("# nothing\n\n")
    with pytest.raises(PlinkError, match=r"^host list .*nope.txt: no such file$"):
        read_hostlist(tmp_path / "nope.txt")
    with pytest.raises(PlinkError, match=r"^host list .*: is a directory, not a file$"):
        read_hostlist(tmp_path)
    p = tmp_path / "h.txt"
    p.write_text("a\nb slots=2\n")
    assert read_hostlist(p) == [HostEntry("a"), HostEntry("b", slots=2)]


_host = st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]", fullmatch=True)
_entry = st.builds(
    HostEntry,
    name=st.one_of(_host, st.sampled_from(["10.0.0.1", "::1", "fe80::2", "2001:db8::9"])),
    user=st.one_of(st.none(), st.sampled_from(["root", "ubuntu", "ec2-user"])),
    port=st.one_of(st.none(), st.integers(1, 65535)),
    slots=st.one_of(st.none(), st.integers(1, 128)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_entry, min_size=1, max_size=8, unique_by=lambda e: e.name))
def test_round_trip_through_every_writer(entries):
    plain = parse_hostlist(format_hostlist(entries, "plain"), fmt="plain")
    assert plain == [HostEntry(e.name, e.user, e.port) for e in entries]
    for fmt in ("openmpi", "mpich"):
        back = parse_hostlist(format_hostlist(entries, fmt), fmt=fmt)
        assert back == [HostEntry(e.name, slots=e.slots) for e in entries]
    # auto reads OpenMPI output unambiguously
    assert parse_hostlist(format_hostlist(entries, "openmpi")) == [HostEntry(e.name, slots=e.slots) for e in entries]


def test_colon_rule_boundary_is_1024():
    # the README: in auto mode N >= 1024 is an SSH port, smaller N (but 22) a slot count
    e = parse_hostlist("a:1023\nb:1024\nc:1025\nd:21\ne:23\n")
    assert [(x.name, x.slots, x.port) for x in e] == [
        ("a", 1023, None), ("b", None, 1024), ("c", None, 1025), ("d", 21, None), ("e", 23, None),
    ]


@pytest.mark.parametrize("text", ["Node1\nnode1\n", "node1\nNODE1\n", "n[1-2]\nN2\n"])
def test_duplicates_ignore_case(text):
    # host names are case-insensitive (DNS): two spellings are the same machine
    with pytest.raises(PlinkError, match="duplicate host"):
        parse_hostlist(text)
