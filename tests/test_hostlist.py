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


# ---------------------------------------------------------------------------
# every message, exactly, and the boundaries (found by mutation testing, README "Development")

LONG = "x" * 30


@pytest.mark.parametrize("text, fmt, message", [
    ("u@", "auto", "empty host name: 'u@'"),
    ("[zz::1]", "auto", "invalid IPv6 address 'zz::1': '[zz::1]'"),
    ("a..b", "auto", "invalid host name 'a..b'"),
    ("[::1]x", "auto", "unexpected 'x' after ']' in '[::1]x'"),
    ("[::1]:", "auto", "unexpected ':' after ']' in '[::1]:'"),
    ("[::1", "auto", "unclosed '[' in '[::1'"),
    ("[::1]:2]", "auto", "port or slot count '2]' is not a number: '[::1]:2]'"),
    ("host:", "auto", "missing number after ':' in 'host:'"),
    ("node1-2]", "auto", "invalid host name 'node1-2]'"),
    ("u@node]", "auto", "invalid host name 'node]': 'u@node]'"),
    ("]n[1-2]", "auto", "unbalanced ']' in ']n[1-2]'"),
    ("n[1-2]]", "auto", "unbalanced ']' in 'n[1-2]]'"),
    ("n[1[2]]", "auto", "nested '[' in 'n[1[2]]'"),
    ("n[[1]],m", "auto", "nested '[' in 'n[[1]]': 'n[[1]],m'"),
    ("n[1-2", "auto", "unclosed '[' in 'n[1-2'"),
    ("n[" + LONG + "]", "auto", f"bad range {LONG[:20]!r} in {'n[' + LONG + ']'!r} (want N or N-M)"),
    ("n" * 50 + "[" + LONG + "]", "auto",
     f"bad range {LONG[:20]!r} in {('n' * 50 + '[' + LONG)[:60]!r} (want N or N-M): "
     f"{('n' * 50 + '[' + LONG)[:60] + '... (82 characters)'!r}"),
    ("node[3-1]", "auto", "range '3-1' in 'node[3-1]' runs backwards"),
    ("h slots=4=5", "auto", "slots '4=5' is not a number: 'h slots=4=5'"),
    ("h slots", "auto", "unexpected 'slots' (want 'host slots=N'): 'h slots'"),
    ("h slots=" + "1" * 25, "auto", f"slots {'1' * 20!r} is not a number: {'h slots=' + '1' * 25!r}"),
    ("h slots=1234567890", "auto", "slots '1234567890' is not a number: 'h slots=1234567890'"),
    ("h slots=123456789", "auto", "slots 123456789 is out of range 1..1000000: 'h slots=123456789'"),
    ("h slots=1000001", "auto", "slots 1000001 is out of range 1..1000000: 'h slots=1000001'"),
    ("h slots=0", "auto", "slots 0 is out of range 1..1000000: 'h slots=0'"),
    ("h max_slots=x", "auto", "max_slots 'x' is not a number: 'h max_slots=x'"),
    ("h max_slots=1000001", "auto", "max_slots 1000001 is out of range 1..1000000: 'h max_slots=1000001'"),
    ("h foo=1", "auto", "unknown attribute 'foo' (know slots=, max_slots=): 'h foo=1'"),
    ("h slots=2", "slurm", "'slots=2' is OpenMPI hostfile syntax, not slurm format: 'h slots=2'"),
    ("a,,b", "auto", "empty name in 'a,,b'"),
    ("n[1-2]:22", "auto", "'n1:22': ':' is not allowed in a node list: 'n[1-2]:22'"),
    ("a@b@h", "auto", "invalid user name 'a@b': 'a@b@h'"),
    ("b$d@h", "auto", "invalid user name 'b$d': 'b$d@h'"),
    ("u@h", "openmpi", "'user@' is not allowed in openmpi format: 'u@h'"),
    ("u@h", "mpich", "'user@' is not allowed in mpich format: 'u@h'"),
    ("h:2", "openmpi", "':' after the host is not OpenMPI syntax (use 'host slots=N'): 'h:2'"),
    ("h:x", "auto", "port or slot count 'x' is not a number: 'h:x'"),
    ("h:65536", "auto", "port or slot count 65536 is out of range 1..65535: 'h:65536'"),
    ("h:x", "plain", "port 'x' is not a number: 'h:x'"),
    ("h:65536", "plain", "port 65536 is out of range 1..65535: 'h:65536'"),
    ("h:x", "mpich", "slot count 'x' is not a number: 'h:x'"),
    ("h:1000001", "mpich", "slot count 1000001 is out of range 1..1000000: 'h:1000001'"),
    ("h:4 slots=2", "auto", "both 'host:N' and 'slots=' given: 'h:4 slots=2'"),
])
def test_line_errors_exactly(text, fmt, message):
    with pytest.raises(PlinkError) as info:
        parse_hostlist("ok\n" + text + "\n", source="h.txt", fmt=fmt if fmt != "slurm" else "slurm")
    assert str(info.value) == "h.txt:2: " + message


def test_long_lines_are_cut_in_messages():
    line = "h slots=" + "9" * 100
    with pytest.raises(PlinkError) as info:
        parse_hostlist(line, source="h.txt")
    assert str(info.value) == f"h.txt:1: slots {'9' * 20!r} is not a number: {line[:60] + ' (108 characters)'!r}".replace(
        line[:60] + " (", line[:60] + "... (")


@pytest.mark.parametrize("text, cap, message", [  # the line is added unless the message quotes it whole
    ("n[1-5]", 4, "'n[1-5]' takes the host list over 4 hosts (raise the cap with --max-hosts)"),
    ("n[1-2,3-4,5]", 4, "'n[1-2,3-4,5]' takes the host list over 4 hosts (raise the cap with --max-hosts)"),
    ("a[1-2]b[1-3]", 5, "'a[1-2]b[1-3]' takes the host list over 5 hosts (raise the cap with --max-hosts)"),
    ("a,b,c[1-3]", 4, "'c[1-3]' takes the host list over 4 hosts (raise the cap with --max-hosts): 'a,b,c[1-3]'"),
    ("a,b,c,d,e", 4, "more than 4 hosts (raise the cap with --max-hosts): 'a,b,c,d,e'"),
])
def test_the_cap_exactly(text, cap, message):
    with pytest.raises(PlinkError) as info:
        parse_hostlist(text, source="h.txt", max_hosts=cap)
    assert str(info.value) == f"h.txt:1: {message}"


@pytest.mark.parametrize("text, cap", [("n[1-4]", 4), ("a[1-2]b[1-2]", 4), ("a,b,c,d", 4), ("a,b,c[1-2]", 4)])
def test_the_cap_is_inclusive(text, cap):
    assert len(parse_hostlist(text, max_hosts=cap)) == cap


def test_cap_over_several_lines_and_as_text():
    with pytest.raises(PlinkError) as info:
        parse_hostlist("a\nb\nc\n", source="h.txt", max_hosts="2")
    assert str(info.value) == "h.txt:3: more than 2 hosts (raise the cap with --max-hosts)"


def test_accepted_edges():
    assert parse_hostlist("h max-slots=4 slots=2")[0].slots == 2
    assert parse_hostlist("h max_slots=1")[0] == HostEntry("h")
    assert parse_hostlist("h slots=1000000")[0].slots == 1000000
    assert names(parse_hostlist("a,b")) == ["a", "b"]
    assert names(parse_hostlist("[::1],b")) == ["::1", "b"]
    assert parse_hostlist("n[1-2] slots=2") == [HostEntry("n1", slots=2), HostEntry("n2", slots=2)]
    assert parse_hostlist("h:1")[0] == HostEntry("h", slots=1)
    assert parse_hostlist("h:65535")[0] == HostEntry("h", port=65535)
    assert parse_hostlist("h:1000000", fmt="mpich")[0].slots == 1000000
    assert parse_hostlist("h # one # two\n") == [HostEntry("h")]
    assert names(parse_hostlist("n[8-10]")) == ["n8", "n9", "n10"]


def test_defaults_and_writer_messages():
    e = HostEntry("::1", user="u", port=2222, slots=3)
    assert e.to_line() == "u@[::1]:2222"
    assert format_hostlist([e, HostEntry("h")]) == "u@[::1]:2222\nh\n"
    with pytest.raises(PlinkError) as info:
        e.to_line("yaml")
    assert str(info.value) == "unknown host list format 'yaml' (use plain, openmpi or mpich)"
    with pytest.raises(PlinkError) as info:
        parse_hostlist("h", fmt="yaml")
    assert str(info.value) == "unknown host list format 'yaml' (use one of auto, plain, openmpi, mpich, slurm)"
    with pytest.raises(PlinkError) as info:
        parse_hostlist("# nothing\n")
    assert str(info.value) == "<hosts>: no hosts in host list"


def test_cap_messages_cut_long_tokens():
    long = "n" * 70 + "[1-9]"
    with pytest.raises(PlinkError) as info:
        parse_hostlist(long, source="h.txt", max_hosts=4)
    assert str(info.value).startswith(f"h.txt:1: {long[:60]!r} takes the host list over 4 hosts")
    long2 = "n" * 70 + "[1-3]x[1-3]"
    with pytest.raises(PlinkError) as info:
        parse_hostlist(long2, source="h.txt", max_hosts=8)
    assert str(info.value).startswith(f"h.txt:1: {long2[:60]!r} takes the host list over 8 hosts")


def test_read_hostlist_passes_its_options(tmp_path):
    p = tmp_path / "h.txt"
    p.write_text("a:8\nb:8\n")
    assert read_hostlist(p, fmt="plain") == [HostEntry("a", port=8), HostEntry("b", port=8)]
    assert read_hostlist(p) == [HostEntry("a", slots=8), HostEntry("b", slots=8)]
    with pytest.raises(PlinkError) as info:
        read_hostlist(p, max_hosts=1)
    assert str(info.value) == f"{p}:2: more than 1 hosts (raise the cap with --max-hosts)"


def test_per_line_budget_duplicates_with_ports_and_the_80_character_cut():
    with pytest.raises(PlinkError) as info:
        parse_hostlist("a\nb\nc[1-3]\n", source="h.txt", max_hosts=4)
    assert str(info.value) == "h.txt:3: 'c[1-3]' takes the host list over 4 hosts (raise the cap with --max-hosts)"
    with pytest.raises(PlinkError) as info:
        parse_hostlist("h:2222\nH:2222\n", source="h.txt")
    assert str(info.value) == "h.txt:2: duplicate host H:2222 (first on line 1)"
    for width, shown in ((80, None), (81, "... (81 characters)")):
        line = "h slots=x" + " " * (width - 10) + "y"  # the bad attribute first, the line `width` long
        assert len(line) == width
        with pytest.raises(PlinkError) as info:
            parse_hostlist(line, source="h.txt")
        want = line if shown is None else line[:60] + shown
        assert str(info.value) == f"h.txt:1: slots 'x' is not a number: {want!r}"


def test_probe_refuses_hosts_that_differ_only_by_port_and_says_why():
    from plink.probes.probe import _as_entries

    with pytest.raises(PlinkError) as info:
        _as_entries(["127.0.0.1:2222", "127.0.0.1:2223"])
    msg = str(info.value)
    assert "duplicate host name '127.0.0.1'" in msg and "127.0.0.1:2222, 127.0.0.1:2223" in msg
    assert "Host alias" in msg and "\n" not in msg
    assert [e.port for e in _as_entries(["a:2222", "b:2222"])] == [2222, 2222]


@pytest.mark.parametrize("sep", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_a_control_character_inside_a_line_is_not_a_line_break(tmp_path, sep):
    """str.splitlines breaks at these: 'a<FF>b' read as two hosts, and every later line number was off."""
    from plink.data.orderfile import read_order_hosts

    f = tmp_path / "hosts.txt"
    f.write_text(f"n1\nn2{sep}n3\nn4\n", encoding="utf-8")
    with pytest.raises(PlinkError, match=r"hosts.txt:2: control character .* in the line"):
        read_hostlist(str(f))
    with pytest.raises(PlinkError, match=r"hosts.txt:2: "):
        read_order_hosts(f)
    f.write_text("n1\r\nn2\r\n")  # Windows line ends, and old Mac ones
    assert [e.name for e in read_hostlist(str(f))] == ["n1", "n2"]
    f.write_text("n1\rn2\r")
    assert [e.name for e in read_hostlist(str(f))] == [h.name for h in read_order_hosts(f)] == ["n1", "n2"]


def test_text_lines_splits_at_line_feeds_only():
    from plink.data.fileio import text_lines

    assert text_lines("a\nb\r\nc") == ["a", "b", "c"] and text_lines("a\n\nb\n") == ["a", "", "b"]
    assert text_lines("a\x0cb\u2028c\n") == ["a\x0cb\u2028c"] and text_lines("") == [] and text_lines("x\ry\r") == ["x", "y"]
