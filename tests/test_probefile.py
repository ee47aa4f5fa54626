import json
import os

import numpy as np
import pytest

from plink.errors import ProbeFileError
from plink.data.fileio import atomic_write_text
from plink.data.probefile import Host, ProbeData, Truth, Uplink, from_dict, from_matrix, load


def doc(n=3, **over):
    lat = [[0 if i == j else 10.0 * (1 + i + j) for j in range(n)] for i in range(n)]
    d = {
        "format": "plink-probe",
        "version": 1,
        "hosts": [{"name": f"h{i}", "address": f"10.0.0.{i + 1}"} for i in range(n)],
        "latency_us": lat,
        "meta": {"method": "test"},
    }
    d.update(over)
    return d


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_round_trip(tmp_path):
    lat = np.array([[0, 5, np.nan], [6, 0, 7], [np.nan, 7, 0]], dtype=float)
    bw = np.array([[np.nan, 10, 20], [12, np.nan, 5], [20, 5, np.nan]])
    truth = Truth(("rack",), (("r0",), ("r0",), ("r1",)))
    pd = ProbeData([Host("a", "10.0.0.1", "root@a"), Host("b"), Host("c")], lat, bandwidth=bw,
                   latency_median=lat * 1.1, meta={"method": "x"}, truth=truth)
    path = tmp_path / "p.json"
    pd.save(path)
    back = load(path)
    assert back.names == ["a", "b", "c"]
    assert back.hosts[0] == Host("a", "10.0.0.1", "root@a")
    np.testing.assert_allclose(back.latency, pd.latency, equal_nan=True)
    np.testing.assert_allclose(back.bandwidth, pd.bandwidth, equal_nan=True)
    assert back.truth == truth
    assert back.n_missing_pairs() == 1
    # one matrix row per line: a 3-host file has its rows on separate lines
    text = path.read_text()
    assert '\n  [0.0, 6.0, null],\n' in text


def test_symmetrise_max_latency_min_bandwidth_and_one_sided_pairs():
    lat = np.array([[0, 5, np.nan], [9, 0, 4], [3, np.nan, 0]])
    bw = np.array([[np.nan, 10, 1], [20, np.nan, 5], [2, 5, np.nan]])
    pd = ProbeData([Host("a"), Host("b"), Host("c")], lat, bandwidth=bw)
    assert pd.latency[0, 1] == pd.latency[1, 0] == 9  # max of both directions
    assert pd.latency[0, 2] == pd.latency[2, 0] == 3  # only one direction measured: kept
    assert pd.latency[1, 2] == pd.latency[2, 1] == 4
    assert pd.bandwidth[0, 1] == pd.bandwidth[1, 0] == 10  # min of both directions
    assert pd.n_missing_pairs() == 0


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(format="other"), "not a plink probe file"),
        (dict(version=2), "newer than this plink reads"),
        (dict(version="1"), "version '1' is not a whole number"),
        (dict(version=0), "invalid probe file version"),
        (dict(hosts=[]), "non-empty list"),
        (dict(hosts=[{"name": "h0"}, {"name": "h0"}, {"name": "h2"}]), "duplicate host 'h0'"),
        (dict(hosts=[{"address": "x"}, {"name": "h1"}, {"name": "h2"}]), "string 'name'"),
        (dict(hosts=[{"name": ""}, {"name": "h1"}, {"name": "h2"}]), "empty"),
        (dict(latency_us=[[0, 1], [1, 0]]), "must be 3x3"),
        (dict(latency_us=[[0, 1, 2], [1, 0], [2, 1, 0]]), "must be 3x3"),
        (dict(latency_us=[[0, -1, 2], [1, 0, 1], [2, 1, 0]]), "negative"),
        (dict(latency_us=[[0, "x", 2], [1, 0, 1], [2, 1, 0]]), "not a number"),
        (dict(latency_us=[[0, True, 2], [1, 0, 1], [2, 1, 0]]), "not a number"),
        (dict(latency_us="nope"), "list of rows"),
        (dict(bandwidth_gbps=[[None, 0, 1], [1, None, 1], [1, 1, None]]), "must be > 0"),
        (dict(meta=[1]), "'meta' must be an object"),
        (dict(truth={"levels": ["rack"], "labels": [["a"], ["b"]]}), "truth has 2 labels"),
        (dict(truth={"levels": ["rack"]}), "'levels' and 'labels'"),
        (dict(uplinks={"hosts": [0]}), "'uplinks' must be a list"),
        (dict(uplinks=[{"up_bps": 1, "down_bps": 1}]), r"uplinks\[0\] must be an object with a 'hosts' list"),
        (dict(uplinks=[{"hosts": [0], "up_bps": "1", "down_bps": 1}]), r"uplinks\[0\].up_bps is '1', not a number"),
        (dict(uplinks=[{"hosts": [0, 3], "up_bps": 1, "down_bps": 1}]), "names host 3, but there are 3 hosts"),
        (dict(uplinks=[{"hosts": [0, 0], "up_bps": 1, "down_bps": 1}]), "lists a host twice"),
        (dict(uplinks=[{"hosts": [], "up_bps": 1, "down_bps": 1}]), "has no hosts"),
        (dict(uplinks=[{"hosts": [1], "up_bps": 1, "down_bps": 0}]), r"down_bps is 0: must be a positive"),
        (dict(uplinks=[{"hosts": [0, 1], "up_bps": 1, "down_bps": 1}, {"hosts": [1, 0], "up_bps": 2, "down_bps": 2}]),
         "repeats the group"),
    ],
)
def test_validation_messages(change, message):
    with pytest.raises(ProbeFileError, match=message):
        from_dict(doc(**change), "p.json")


def test_missing_latency_key():
    d = doc()
    del d["latency_us"]
    with pytest.raises(ProbeFileError, match="missing 'latency_us'"):
        from_dict(d)
    d["latency_us"] = None  # read as "not square (shape )" before
    with pytest.raises(ProbeFileError, match=r"^p\.json: 'latency_us' is null: it must be the matrix"):
        from_dict(d, "p.json")


@pytest.mark.parametrize("literal, message", [("NaN", "use null"), ("Infinity", "infinite")])
def test_json_nan_and_infinity_rejected(tmp_path, literal, message):
    text = json.dumps(doc()).replace("20.0", literal, 1)
    with pytest.raises(ProbeFileError, match=message):
        load(write(tmp_path, "p.json", text))


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "invalid JSON"),
        ("{", "invalid JSON at line 1"),
        ("[1, 2]", "top level is not a JSON object"),
        ('{"format": "plink-probe"}', 'no "version" field'),
    ],
)
def test_malformed_json_files(tmp_path, content, message):
    with pytest.raises(ProbeFileError, match=message):
        load(write(tmp_path, "p.json", content))


def test_unreadable_inputs(tmp_path):
    with pytest.raises(ProbeFileError, match="no such file"):
        load(tmp_path / "absent.json")
    (tmp_path / "d.json").mkdir()
    with pytest.raises(ProbeFileError, match="is a directory"):
        load(tmp_path / "d.json")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(ProbeFileError, match="holds NUL bytes: not a text file"):
        load(tmp_path / "bin.csv")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x01")
    with pytest.raises(ProbeFileError, match="not a UTF-8 text file"):
        load(tmp_path / "bin.csv")
    with pytest.raises(ProbeFileError, match="unknown file type"):
        load(write(tmp_path, "p.xlsx", "x"))
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    with pytest.raises(ProbeFileError, match="not a valid .npy"):
        load(tmp_path / "bad.npy")


def test_csv_variants(tmp_path):
    plain = write(tmp_path, "m.csv", "0,1.5,\n1.5,0,2\n,2,0\n")
    pd = load(plain, unit="ms")
    assert pd.names == ["h0", "h1", "h2"]
    assert pd.latency[0, 1] == 1500.0
    assert pd.n_missing_pairs() == 1
    header = write(tmp_path, "h.csv", "a,b\n0,3\n3,0\n")
    assert load(header).names == ["a", "b"]
    both = write(tmp_path, "hb.tsv", "\ta\tb\na\t0\t3\nb\t3\t0\n")
    assert load(both).names == ["a", "b"]
    rows = write(tmp_path, "r.csv", "a,0,3\nb,3,0\n")
    assert load(rows).names == ["a", "b"]
    hosts = write(tmp_path, "hosts.txt", "# comment\nx slots=4\n\ny\nz\n")
    assert load(plain, hosts_file=hosts).names == ["x", "y", "z"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("0,1\n1,0,2\n", "not square"),
        ("0,abc\n1,0\n", "'abc' is not a number"),
        ("# only a comment\n", "empty matrix"),
        ("a,b\n", "no matrix rows"),
        ("0,-1\n1,0\n", "negative"),
    ],
)
def test_bad_csv(tmp_path, content, message):
    with pytest.raises(ProbeFileError, match=message):
        load(write(tmp_path, "m.csv", content))


def test_csv_hosts_file_mismatch(tmp_path):
    m = write(tmp_path, "m.csv", "0,1\n1,0\n")
    hosts = write(tmp_path, "hosts.txt", "a\nb\nc\n")
    with pytest.raises(ProbeFileError, match="3 host names for a 2x2"):
        load(m, hosts_file=hosts)


def test_npy(tmp_path):
    m = np.array([[0, 1.0], [2.0, 0]])
    np.save(tmp_path / "m.npy", m)
    pd = load(tmp_path / "m.npy")
    assert pd.latency[0, 1] == 2.0
    np.save(tmp_path / "s.npy", np.array(["a", "b"]))
    with pytest.raises(ProbeFileError, match="must be numeric"):
        load(tmp_path / "s.npy")
    np.save(tmp_path / "r.npy", np.zeros((2, 3)))
    with pytest.raises(ProbeFileError, match="not square"):
        load(tmp_path / "r.npy")


def test_from_matrix_units():
    pd = from_matrix(np.array([[0, 0.001], [0.001, 0]]), unit="s")
    assert pd.latency[0, 1] == pytest.approx(1000.0)
    with pytest.raises(ProbeFileError, match="unknown latency unit"):
        from_matrix(np.zeros((2, 2)), unit="min")


def test_subset_keeps_truth_and_order():
    truth = Truth(("rack",), (("r0",), ("r1",), ("r2",)))
    lat = np.array([[0, 1, 2], [1, 0, 3], [2, 3, 0]], dtype=float)
    pd = ProbeData([Host("a"), Host("b"), Host("c")], lat, truth=truth)
    sub = pd.subset([2, 0])
    assert sub.names == ["c", "a"]
    assert sub.latency[0, 1] == 2
    assert sub.truth.labels == (("r2",), ("r0",))


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_text("old")

    def boom(*a, **k):
        raise OSError("disk full")

    from plink.errors import PlinkError

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(PlinkError, match="cannot write .*disk full"):  # one line, not a traceback
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temp file left behind


def test_atomic_write_into_missing_directory(tmp_path):
    from plink.errors import PlinkError

    with pytest.raises(PlinkError, match="does not exist"):
        atomic_write_text(tmp_path / "nope" / "x.json", "x")


def test_json_diagonal_is_ignored_with_a_note(tmp_path):
    from plink.data.inputs import load_input

    doc = {"format": "plink-probe", "version": 1, "hosts": ["a", "b", "c"],
           "latency_us": [[5, 1, 2], [1, 0, 1], [2, 3, 0]]}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    loaded = load_input(tmp_path / "p.json")
    assert loaded.probe.latency[0, 0] == 0 and loaded.probe.latency[1, 2] == 3
    assert any("ignored the diagonal of 1 host(s)" in n for n in loaded.notes)
    assert any("symmetrised 1 asymmetric pair(s)" in n for n in loaded.notes)


def test_uplinks_round_trip_and_subset(tmp_path):
    d = doc(4, uplinks=[{"hosts": [0, 2], "up_bps": 4.4e7, "down_bps": 4.3e7, "flows": 2},
                        {"hosts": [1, 3], "up_bps": 4.0e7, "down_bps": 3.9e7}])
    pd = from_dict(d, "p.json")
    assert pd.uplinks[0] == Uplink((0, 2), 4.4e7, 4.3e7) and pd.uplinks[0].extra == {"flows": 2}
    path = tmp_path / "p.json"
    pd.save(path)
    back = load(path)
    assert back.uplinks == pd.uplinks and back.uplinks[0].extra == {"flows": 2}
    assert json.loads(path.read_text())["uplinks"][1] == {"hosts": [1, 3], "up_bps": 4.0e7, "down_bps": 3.9e7}
    # a subset keeps each group's kept hosts, renumbered; a group with none left goes
    sub = pd.subset([2, 0, 3])
    assert [u.hosts for u in sub.uplinks] == [(1, 0), (2,)]
    assert pd.subset([0, 2]).uplinks == [Uplink((0, 1), 4.4e7, 4.3e7)]
    assert from_dict(doc(3)).uplinks is None


# ---------------------------------------------------------------------------
# exact messages, boundaries and units (each pins a rule a user relies on)


def _err(fn, *a, **k) -> str:
    with pytest.raises(ProbeFileError) as e:
        fn(*a, **k)
    return str(e.value)


@pytest.mark.parametrize("change, message", [
    (dict(latency_us=[1, 2, 3]), "p.json: latency_us must be a list of rows"),
    (dict(latency_us=[[0, 1], [1, 0]]), "p.json: latency_us must be 3x3 (one row and column per host), "
                                        "got 2 rows of length [2]"),
    (dict(latency_us=[[0, 1, 2], [1, 0], [2, 1, 0, 4]]), "p.json: latency_us must be 3x3 (one row and column "
                                                         "per host), got 3 rows of length [2, 3, 4]"),
    (dict(latency_us=[[0, 10**400, 2], [1, 0, 1], [2, 1, 0]]),
     "p.json: latency_us[0][1] is infinite (or too large to be a number)"),
    (dict(latency_us=[[0, 1, 2], [1, 0, 86400e6 + 1], [2, 1, 0]]),
     "p.json: latency_us[1][2] is 86400000001.0: not a plausible latency in us"),
    (dict(latency_median_us=[[0, 1, 2], [1, 0, 1], [9e10, 1, 0]]),
     "p.json: latency_median_us[2][0] is 90000000000.0: not a plausible latency in us"),
    (dict(bandwidth_gbps=[[None, 1, 2], [1, None, 1e6 + 1], [2, 1, None]]),
     "p.json: bandwidth_gbps[1][2] is 1000001.0: not a plausible bandwidth in Gbit/s"),
    (dict(hosts=[{"name": "h0", "address": 5}, "h1", "h2"]), "p.json: hosts[0].address must be a string"),
    (dict(hosts=["h0", {"name": "h1", "ssh": ["root@h1"]}, "h2"]), "p.json: hosts[1].ssh must be a string"),
    (dict(uplinks=[{"hosts": [0, True], "up_bps": 1, "down_bps": 1}]),
     "p.json: uplinks[0].hosts must be host indices (integers)"),
    (dict(uplinks=[{"hosts": [0, 3], "up_bps": 1, "down_bps": 1}]),
     "p.json: uplinks[0] names host 3, but there are 3 hosts (indices 0..2)"),
    (dict(uplinks=5), "p.json: 'uplinks' must be a list of objects"),
    (dict(uplinks=[{"hosts": [0, 1], "up_bps": 1, "down_bps": 1, "passes_up_bps": [1, 0]}]),
     "p.json: uplinks[0].passes_up_bps must be a list of positive numbers (bytes/s)"),
    (dict(uplinks=[{"hosts": [0, 1], "up_bps": 1, "down_bps": 1, "passes_down_bps": "fast"}]),
     "p.json: uplinks[0].passes_down_bps must be a list of positive numbers (bytes/s)"),
    (dict(truth={"levels": "rack", "labels": [["a"], ["b"], ["c"]]}),
     "p.json: 'truth' must have 'levels' and 'labels' lists"),
    (dict(truth={"levels": ["rack"], "labels": ["r0", "r1", "r2"]}),
     "p.json: 'truth' must have 'levels' and 'labels' lists"),
    (dict(truth={"levels": ["dc", "rack"], "labels": [["a", "x"], ["a", "y"], ["b"]]}),
     "p.json: every truth label must have 2 levels"),
])
def test_probe_file_messages_exactly(change, message):
    assert _err(from_dict, doc(**change), "p.json") == message


def test_largest_plausible_values_are_accepted():
    d = doc(latency_us=[[0, 86400e6, 2], [1, 0, 1], [2, 1, 0]],
            bandwidth_gbps=[[None, 1e6, 2], [1e6, None, 1], [2, 1, None]])
    pd = from_dict(d)
    assert pd.latency[0, 1] == 86400e6 and pd.bandwidth[0, 1] == 1e6


def test_messages_name_the_default_path():
    assert _err(from_dict, {"format": "x"}).startswith("<probe>: not a plink probe file")


def test_a_json_without_format_says_what_a_probe_file_has():
    """Some other JSON document (no "format" field) is named as such, not as "format is None"."""
    msg = _err(from_dict, {"a": 1})
    assert msg == '<probe>: not a plink probe file (no "format" field; a probe file has "format": "plink-probe")'


def test_load_json_names_the_file(tmp_path):
    from plink.data.probefile import load_json

    p = write(tmp_path, "p.json", json.dumps(doc(meta=[1])))
    assert _err(load_json, p) == f"{p}: 'meta' must be an object"


def test_every_matrix_and_the_meta_survive_reading():
    lat = [[0, 10, 20], [10, 0, 30], [20, 30, 0]]
    d = doc(latency_median_us=[[0, 11, 21], [15, 0, 31], [21, 31, 0]],
            latency_p90_us=[[0, 12, 22], [12, 0, 32], [29, 32, 0]], latency_us=lat,
            bandwidth_gbps=[[None, 5, 6], [5, None, 7], [6, 7, None]], meta={"method": "udp", "samples": 7})
    pd = from_dict(d)
    np.testing.assert_array_equal(pd.latency_median, [[0, 15, 21], [15, 0, 31], [21, 31, 0]])  # max of both ways
    np.testing.assert_array_equal(pd.latency_p90, [[0, 12, 29], [12, 0, 32], [29, 32, 0]])
    assert pd.bandwidth[1, 2] == 7 and np.isnan(pd.bandwidth[1, 1])
    assert pd.meta == {"method": "udp", "samples": 7}


def test_notes_say_what_was_dropped_and_symmetrised():
    notes: list[str] = []
    d = doc(latency_us=[[7, 10, 20], [12, 0, 30], [20, 30, 0]],
            bandwidth_gbps=[[3, 5, 6], [4, None, 7], [6, 7, None]])
    pd = from_dict(d, "p.json", notes=notes)
    assert notes == [
        "p.json: ignored the diagonal of 1 host(s) in latency_us (a host's distance to itself)",
        "p.json: symmetrised 1 asymmetric pair(s) in latency_us (kept the larger latency)",
        "p.json: ignored the diagonal of 1 host(s) in bandwidth_gbps (a host's distance to itself)",
        "p.json: symmetrised 1 asymmetric pair(s) in bandwidth_gbps (kept the smaller bandwidth)",
    ]
    assert pd.latency[0, 0] == 0 and pd.latency[0, 1] == 12 and pd.bandwidth[0, 1] == 4
    assert np.isnan(pd.bandwidth[0, 0])
    clean: list[str] = []
    from_dict(doc(), "p.json", notes=clean)
    assert clean == []
    assert from_dict(d).latency[0, 0] == 0  # without a notes list the diagonal is still dropped


@pytest.mark.parametrize("marker", ["", "-", "NA", "na", "Null", "NONE", "none", "NaN"])
def test_upper_triangle_with_missing_markers(tmp_path, marker):
    # only the upper triangle measured: the first column holds nothing but missing markers
    m = f"{marker},1,2\n{marker},{marker},3\n{marker},{marker},{marker}\n"
    pd = load(write(tmp_path, "m.csv", m))
    assert pd.names == ["h0", "h1", "h2"]
    np.testing.assert_array_equal(pd.latency, [[0, 1, 2], [1, 0, 3], [2, 3, 0]])


@pytest.mark.parametrize("content, names, missing", [
    ("0 1.5\n1.5 0\n", ["h0", "h1"], 0),                   # whitespace-separated
    ("0, 1.5\n1.5, 0\n", ["h0", "h1"], 0),                 # comma and space
    ("  # measured by hand\n0,1\n1,0\n", ["h0", "h1"], 0),  # an indented comment
    ("a,0,\nb,,0\n", ["a", "b"], 1),                        # a name column, the one pair missing
    ("host,a\na,0\n", ["a"], 0),                            # one host, corner + header + name column
])
def test_csv_layouts(tmp_path, content, names, missing):
    pd = load(write(tmp_path, "m.csv", content))
    assert pd.names == names and pd.n_missing_pairs() == missing
    if len(names) == 2 and not missing:
        assert pd.latency[0, 1] == pd.latency[1, 0] > 0


@pytest.mark.parametrize("content, message", [
    ("# nothing\n", "{p}: empty matrix file"),
    ("0,abc\n1,0\n", "{p}: row 0 column 1: 'abc' is not a number"),
    ("0 1\n", "{p}: matrix is not square: row 0 has 2 values, expected 1"),
    ("x,a,b\nb,0,1\nc,1,0\n", "{p}: row 1 is named 'c', which names no column"),
    ("a,b,c\n0,1\n1,0\n", "{p}: 3 host names for a 2x2 matrix"),
    ("0,1,2,\n1,0,3\n2,3,0\n",
     "{p}: matrix is not square: row 0 has 4 values, expected 3 (a separator at the end of the line?)"),
    ("0,\"" + "1" * 140000 + "\"\n1,0\n", "{p}: not a readable CSV matrix: field larger than field limit (131072)"),
])
def test_csv_messages_exactly(tmp_path, content, message):
    from plink.data.probefile import read_matrix_csv

    p = write(tmp_path, "m.csv", content)
    assert _err(read_matrix_csv, p) == message.format(p=p)


def test_csv_with_a_separator_ending_every_line(tmp_path):
    """Some exporters end every line with the separator: an empty last cell in every row is no column."""
    from plink.data.probefile import read_matrix_csv

    m, names = read_matrix_csv(write(tmp_path, "t.csv", "0,1,2,\n1,0,3,\n2,3,0,\n"))
    assert names is None and m.tolist() == [[0, 1, 2], [1, 0, 3], [2, 3, 0]]
    m, names = read_matrix_csv(write(tmp_path, "n.csv", ",a,b,\na,0,1,\nb,1,0,\n"))
    assert names == ["a", "b"] and m.tolist() == [[0, 1], [1, 0]]
    m, names = read_matrix_csv(write(tmp_path, "s.tsv", "0\t4\t\n4\t0\t\n"))
    assert m.tolist() == [[0, 4], [4, 0]]


def test_csv_with_running_index_labels(tmp_path):
    """pandas' DataFrame.to_csv writes the index over the columns and down the rows; R's write.csv
    quoted numbers down the rows under an empty corner. Both are labels: read as data, pandas'
    index was a seventh host whose 'latencies' were 0..5."""
    from plink.data.probefile import read_matrix_csv

    want = [[0, 20, 30], [20, 0, 29], [30, 29, 0]]
    pandas = ",0,1,2\n0,0.0,20,30\n1,20,0.0,29\n2,30,29,0.0\n"
    m, names = read_matrix_csv(write(tmp_path, "p.csv", pandas))
    assert names is None and m.tolist() == want
    r = '"","V1","V2","V3"\n"1",0,20,30\n"2",20,0,29\n"3",30,29,0\n'
    m, names = read_matrix_csv(write(tmp_path, "r.csv", r))
    assert names == ["V1", "V2", "V3"] and m.tolist() == want
    # a first row and column that only look like an index are data when the corner is not empty
    m, names = read_matrix_csv(write(tmp_path, "d.csv", "0,1,2\n1,0,3\n2,3,0\n"))
    assert names is None and m.tolist() == [[0, 1, 2], [1, 0, 3], [2, 3, 0]]
    m, names = read_matrix_csv(write(tmp_path, "n.csv", ",1,2\n1,,3\n2,3,\n"))  # a diagonal left empty
    assert names is None and m.shape == (3, 3) and m[0, 1] == 1 and m[1, 2] == 3
    # R's write.csv of a dist (1..n, quoted), pandas with its own index (101..103): labels, with a note
    for text in ('"","1","2","3"\n"1",0,1.5,3\n"2",1.5,0,2.5\n"3",3,2.5,0\n',
                 ",101,102,103\n101,0,1.5,3\n102,1.5,0,2.5\n103,3,2.5,0\n"):
        notes = []
        m, names = read_matrix_csv(write(tmp_path, "l.csv", text), notes)
        assert m.tolist() == [[0, 1.5, 3], [1.5, 0, 2.5], [3, 2.5, 0]] and names is None
        assert len(notes) == 1 and "read as labels" in notes[0]
    # pandas: a named index over default column numbers, and an index named "host" over text columns
    m, names = read_matrix_csv(write(tmp_path, "ni.csv", ",0,1,2\na,0,1.5,3\nb,1.5,0,2.5\nc,3,2.5,0\n"))
    assert names == ["a", "b", "c"] and m.tolist() == [[0, 1.5, 3], [1.5, 0, 2.5], [3, 2.5, 0]]
    m, names = read_matrix_csv(write(tmp_path, "hi.csv", "host,a,b,c\n0,0,1.5,3\n1,1.5,0,2.5\n2,3,2.5,0\n"))
    assert names == ["a", "b", "c"] and m.tolist() == [[0, 1.5, 3], [1.5, 0, 2.5], [3, 2.5, 0]]
    # a header of names over a matrix whose first column happens to run 0, 1, 2 is a header alone
    m, names = read_matrix_csv(write(tmp_path, "ha.csv", "a,b,c\n0,1,2\n1,0,3\n2,3,0\n"))
    assert names == ["a", "b", "c"] and m.tolist() == [[0, 1, 2], [1, 0, 3], [2, 3, 0]]


def test_an_empty_last_column_is_a_host_never_measured(tmp_path):
    """Every line ending in an empty cell is a trailing separator only when the lines are one cell
    longer than the matrix is wide (or the first line is a header): a square matrix whose last
    column is empty is a host with no measured pair."""
    from plink.data.probefile import read_matrix_csv

    m, _ = read_matrix_csv(write(tmp_path, "e.csv", "0,1,2,\n1,0,3,\n2,3,0,\n,,,\n"))
    assert m.shape == (4, 4) and np.isnan(m[:, 3]).all()
    m, names = read_matrix_csv(write(tmp_path, "h.csv", "a,b,c,\n0,1,2,\n1,0,3,\n2,3,0,\n"))
    assert names == ["a", "b", "c"] and m.shape == (3, 3)
    # a TSV whose last line is separators only, and a name column beside an empty last column
    m, _ = read_matrix_csv(write(tmp_path, "e.tsv", "0\t1.5\t3\t\n1.5\t0\t2.5\t\n3\t2.5\t0\t\n\t\t\t\n"))
    assert m.shape == (4, 4) and np.isnan(m[3, :3]).all()
    m, names = read_matrix_csv(write(tmp_path, "c.csv", "a,0,1.5,3,\nb,1.5,0,2.5,\nc,3,2.5,0,\nd,,,,\n"))
    assert names == ["a", "b", "c", "d"] and m.shape == (4, 4) and np.isnan(m[:3, 3]).all()
    m, names = read_matrix_csv(write(tmp_path, "t.csv", "a,0,1,2,\nb,1,0,3,\nc,2,3,0,\n"))  # a trailing separator
    assert names == ["a", "b", "c"] and m.shape == (3, 3)


def test_semicolon_matrices_with_decimal_commas(tmp_path):
    """Spreadsheets in locales with a decimal comma export ';'-separated files with 1,5 for 1.5."""
    from plink.data.probefile import read_matrix_csv

    want = [[0, 1.5, 3], [1.5, 0, 2.5], [3, 2.5, 0]]
    m, names = read_matrix_csv(write(tmp_path, "s.csv", "0;1,5;3,0\n1,5;0;2,5\n3,0;2,5;0\n"))
    assert m.tolist() == want and names is None
    m, names = read_matrix_csv(write(tmp_path, "h.csv", ";a;b;c\na;0;1,5;3\nb;1,5;0;2,5\nc;3;2,5;0\n"))
    assert m.tolist() == want and names == ["a", "b", "c"]
    m, _ = read_matrix_csv(write(tmp_path, "c.csv", "0,1.5,3\n1.5,0,2.5\n3,2.5,0\n"))  # commas still separate
    assert m.tolist() == want


def test_csv_row_limit(tmp_path):
    from plink.data.probefile import read_matrix_csv

    at = write(tmp_path, "at.csv", "0\n" * 20001)  # 20001 lines may be 20000 hosts and a header
    assert "not square" in _err(read_matrix_csv, at)
    over = write(tmp_path, "over.csv", "0\n" * 20002)
    assert _err(read_matrix_csv, over) == f"{over}: 20002 rows: more than 20001 hosts"


def test_load_passes_unit_kind_and_bandwidth_on(tmp_path):
    p = tmp_path / "p.json"
    from_dict(doc()).save(p)
    assert load(p, unit="us").latency[0, 1] == 20  # a probe file is in us: saying so is fine
    upper = tmp_path / "P.JSON"
    upper.write_text(p.read_text())
    assert load(upper, unit="us").n == 3
    from plink.errors import OptionError

    for options in (dict(unit="ms"), dict(unit="us", kind="bandwidth")):  # options that do not apply: usage errors
        with pytest.raises(OptionError, match=r"--kind \(kind\) and --unit \(unit\) describe plain matrices"):
            load(p, **options)
    bw = write(tmp_path, "bw.csv", "0,5,6\n5,0,7\n6,7,0\n")
    assert load(p, bandwidth=bw).bandwidth[0, 2] == 6
    as_bw = load(bw, kind="bandwidth")
    assert as_bw.bandwidth[0, 2] == 6 and as_bw.latency[0, 1] > as_bw.latency[0, 2]  # the slower pair is farther


def test_from_matrix_checks_and_keeps():
    assert _err(from_matrix, np.zeros(3)) == "latency matrix is not square (shape 3)"
    assert _err(from_matrix, np.zeros((2, 3))) == "latency matrix is not square (shape 2x3)"
    assert _err(from_matrix, np.zeros((2, 2)), ["a", "b", "c"]) == "3 host names for a 2x2 matrix"
    assert _err(from_matrix, np.zeros((2, 2)), unit="min") == "unknown latency unit 'min' (choose from us, ms, s, ns)"
    bw = np.array([[np.nan, 3.0], [3.0, np.nan]])
    meta = {"method": "x"}
    pd = from_matrix(np.array([[5, 1], [1, 5]]), unit="ms", bandwidth=bw, meta=meta)
    assert pd.latency.tolist() == [[0, 1000], [1000, 0]]  # the diagonal is ignored
    assert pd.bandwidth[0, 1] == 3.0 and pd.meta == meta and pd.meta is not meta
    assert from_matrix(np.zeros((1, 1))).names == ["h0"]  # one host is fine


@pytest.mark.parametrize("kw, message", [
    (dict(latency=np.zeros(3)), "latency matrix is not square (shape 3)"),
    (dict(latency=np.zeros((3, 2))), "latency matrix is not square (shape 3x2)"),
    (dict(bandwidth=np.ones((2, 2))), "bandwidth matrix is 2x2 but there are 3 hosts"),
    (dict(latency=[[0, 1, np.inf], [1, 0, 1], [1, 1, 0]]), "latency value at row 0, column 2 (a -> c) is infinite"),
    (dict(latency_median=[[0, 1, 1], [1, 0, 1], [1, -2, 0]]),
     "latency_median value at row 2, column 1 (c -> b) is negative (-2 us)"),
    (dict(latency_p90=[[0, 1, 1], [1, 0, 1], [-1, 1, 0]]), "latency_p90 value at row 2, column 0 (c -> a) is negative (-1 us)"),
    (dict(latency=[[0, 1, 1], [1, 5, 1], [1, 1, 0]]),
     "latency diagonal at host 1 (b) is 5: a host's distance to itself must be 0 or null"),
    (dict(hosts=[Host("a", address="no such host!"), Host("b"), Host("c")]), "host 'a': address"),
    (dict(hosts=[Host("a"), Host("b", ssh="x\ny"), Host("c")]), "host 'b': ssh"),
    (dict(hosts=[], latency=np.zeros((0, 0))), "probe data has no hosts"),
])
def test_probe_data_validation_exactly(kw, message):
    args = dict(hosts=[Host("a"), Host("b"), Host("c")], latency=np.ones((3, 3)) - np.eye(3))
    args.update(kw)
    text = _err(ProbeData, **args)
    assert text == message if not message.startswith("host ") else text.startswith(message), text


def test_probe_data_accepts_lists_nan_diagonals_and_one_host():
    ints = [[0, 1, 2], [1, 0, 3], [2, 3, 0]]
    pd = ProbeData([Host("a"), Host("b"), Host("c")], ints, latency_median=ints, latency_p90=ints,
                   bandwidth=[[0, 5, 6], [5, 0, 7], [6, 7, 0]])
    for m in (pd.latency, pd.latency_median, pd.latency_p90, pd.bandwidth):
        assert isinstance(m, np.ndarray) and m.dtype == float
    assert np.isnan(np.diagonal(pd.bandwidth)).all()
    nan_diag = ProbeData([Host("a"), Host("b")], [[np.nan, 1], [1, np.nan]])
    assert nan_diag.latency.tolist() == [[0, 1], [1, 0]]
    assert ProbeData([Host("a")], [[0]]).n == 1


def test_the_better_direction_of_an_asymmetric_matrix_is_kept():
    lat = np.array([[0, 10, 50], [40, 0, 5], [20, 7, 0]], dtype=float)
    lat[0, 2] = np.nan  # one direction only: that one is used by both
    p = ProbeData(hosts=[Host(f"h{i}") for i in range(3)], latency=lat)
    assert p.latency.tolist() == [[0, 40, 20], [40, 0, 7], [20, 7, 0]]  # costs: the worse direction
    assert p.latency_best.tolist() == [[0, 10, 20], [10, 0, 5], [20, 5, 0]]  # structure: the better one
    assert lat[1, 0] == 40 and np.isnan(lat[0, 2])  # the caller's matrix is untouched
    doc = p.to_dict()
    assert doc["latency_best_us"] == [[0, 10, 20], [10, 0, 5], [20, 5, 0]]
    back = from_dict(json.loads(json.dumps(doc)))
    assert back.latency_best.tolist() == p.latency_best.tolist() and back.latency.tolist() == p.latency.tolist()
    assert p.subset([2, 1]).latency_best.tolist() == [[0, 5], [5, 0]]
    sym = ProbeData(hosts=[Host("a"), Host("b")], latency=np.array([[0, 3.0], [3.0, 0]]))
    assert sym.latency_best is None and "latency_best_us" not in sym.to_dict()
    with pytest.raises(ProbeFileError) as e:
        ProbeData(hosts=[Host("a"), Host("b")], latency=np.zeros((2, 2)), latency_best=np.zeros((3, 3)))
    assert str(e.value) == "latency_best matrix is 3x3 but there are 2 hosts"


def test_the_better_direction_is_checked_like_the_others():
    hosts = [Host("a"), Host("b")]
    bw = np.array([[np.nan, 1.0], [1.0, np.nan]])
    for best, msg in (([[0, -1.0], [-1.0, 0]], "latency_best value at row 0, column 1 (a -> b) is negative (-1 us)"),
                      ([[5.0, 1], [1, 0]], "latency_best diagonal at host 0 (a) is 5: a host's distance to itself must be 0 or null")):
        with pytest.raises(ProbeFileError) as e:
            ProbeData(hosts=hosts, latency=np.zeros((2, 2)), bandwidth=bw, latency_best=np.array(best))
        assert str(e.value) == msg


def test_csv_rows_separators_and_byte_order_mark():
    from plink.data.probefile import csv_rows

    def cells(text):
        return csv_rows(text, "f.csv", "matrix")[1]

    assert cells("\ufeffa,b\n1,2\n") == [["a", "b"], ["1", "2"]]  # Excel's "CSV UTF-8"
    assert cells("a;b\n1;2\n") == [["a", "b"], ["1", "2"]]  # a ';' locale
    assert cells("a;b,c\n1;2,3\n") == [["a;b", "c"], ["1;2", "3"]]  # with a comma, commas separate
    assert cells("a\tb;c\n") == [["a", "b;c"]]  # tabs first
    assert cells("x\n1,2\n") == [["x"], ["1", "2"]]  # nothing on the first line to go by: commas
    assert cells('"a;b",c\n') == [["a;b", "c"]]  # quoted as Excel quotes


def test_the_better_direction_cannot_be_slower_than_the_pair():
    hosts = [Host("a"), Host("b")]
    lat = np.array([[0, 20.0], [10.0, 0]])
    ok = ProbeData(hosts=hosts, latency=lat, latency_best=np.array([[0, 10.0004], [10.0, 0]]))
    assert ok.latency_best[0, 1] == 10.0
    edge = ProbeData(hosts=hosts, latency=lat, latency_best=np.array([[0, 20.001], [10.0, 0]]))  # rounding: 3 decimals
    assert edge.latency_best[0, 1] == 10.0
    with pytest.raises(ProbeFileError, match="is 20.0011: more than that pair's latency"):
        ProbeData(hosts=hosts, latency=lat, latency_best=np.array([[0, 20.0011], [10.0, 0]]))
    with pytest.raises(ProbeFileError) as e:
        ProbeData(hosts=hosts, latency=lat, latency_best=np.array([[0, 1e6], [10.0, 0]]))
    assert str(e.value) == ("latency_best at row 0, column 1 (a -> b) is 1e+06: more than that pair's latency (20); "
                            "it must be the faster direction")
    assert ProbeData(hosts=hosts, latency=lat, latency_best=np.array([[0, 20.0], [np.nan, 0]])).latency_best[1, 0] == 20.0


def test_a_header_of_numeric_names_is_pointed_at(tmp_path):
    """A header of host IDs (100,101,...) reads as a row of numbers: 'not square' said nothing more."""
    f = write(tmp_path, "num.csv", "100,101,102\n0,1,2\n1,0,2\n2,2,0\n")
    with pytest.raises(ProbeFileError, match=r"row 0 has 3 values, expected 4 \(every row has one value less .*--hosts"):
        load(f)
    with pytest.raises(ProbeFileError, match=r"row 1 has 2 values, expected 3$"):  # a short row is no header
        load(write(tmp_path, "short.csv", "0,1,2\n1,0\n2,2,0\n"))


def test_from_matrix_of_ragged_rows_or_text_is_a_plink_error():
    """A ragged list raised numpy's bare 'setting an array element with a sequence.' (README: every check
    raises PlinkError, a ValueError too)."""
    from plink.data.probefile import from_matrix
    from plink.errors import PlinkError

    for bad in (np.array([[0, 1], [1]], dtype=object), [["a", "b"], ["c", "d"]]):
        with pytest.raises(PlinkError, match="latency matrix is not a square array of numbers"):
            from_matrix(bad)


def test_from_matrix_refuses_what_load_refuses_in_one_line():
    """from_matrix took latencies of more than a day (load refuses them: a unit mix-up), a bandwidth of
    text gave numpy's 'could not convert string to float', and meta=[1] a TypeError (outside-in check)."""
    from plink.errors import InputError

    lat = np.array([[0, 2e6], [2e6, 0]])
    assert _err(from_matrix, lat, ["a", "b"], unit="s") == (
        "latency matrix: latency at row 0, column 1 (a -> b) is 2e+06 s, more than one day: wrong unit?")
    assert from_matrix(lat, ["a", "b"], unit="us").latency[0, 1] == 2e6  # 2 s is a latency
    assert from_matrix([[1e12, 1], [1, 0]]).latency[0, 0] == 0  # the diagonal is ignored, as before
    assert from_matrix(np.full((2, 2), 86400.0), unit="s").latency[0, 1] == 86400e6  # a day is the limit
    for bw in ([["a", "b"], ["c", "d"]], "fast", np.array([[0, 1], [1]], dtype=object)):
        msg = _err(from_matrix, lat, bandwidth=bw)
        assert msg.startswith("bandwidth matrix is not a square array of numbers (") and "\n" not in msg
    for meta in ([1], "x", [("a", 1)]):
        with pytest.raises(InputError, match=r"meta must be a mapping \(a dict\), got (list|str)$"):
            from_matrix(lat, meta=meta)
    assert from_matrix(lat, meta={"method": "x"}).meta == {"method": "x"}


def test_an_uplink_s_flows_are_a_finite_count_or_not_recorded():
    """A probe file's uplink with "flows": Infinity (json reads it) made plink show an internal error
    (int(inf): OverflowError); it is now not recorded, as a flows of 0 or a string is. A numpy count
    (a probe built in Python) is taken as an int is."""
    from plink.data.summary import summarize, uplink_flows

    def up(flows):
        return Uplink((0, 1), 1e9, 1e9, {"flows": flows})

    assert [uplink_flows(up(v)) for v in (4, 4.0, np.int64(4), 1)] == [4, 4, 4, 1]
    assert [uplink_flows(up(v)) for v in (float("inf"), float("nan"), 0, True, "4", None)] == [None] * 6
    probe = from_matrix(np.array([[0.0, 1, 5], [1, 0, 5], [5, 5, 0]]), ["a", "b", "c"])
    probe.uplinks = [up(float("inf"))]
    assert summarize(probe)["uplinks"][0]["flows"] is None
