import json
import os

import numpy as np
import pytest

from plink.errors import ProbeFileError
from plink.data.fileio import atomic_write_text
from plink.data.probefile import Host, ProbeData, Truth, Uplink, from_dict, from_matrix, load, read_host_names


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
        (dict(version="1"), "invalid version"),
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
        ('{"format": "plink-probe"}', "invalid version"),
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
    assert read_host_names(hosts) == ["x", "y", "z"]


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
