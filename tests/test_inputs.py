"""One input loader for every command: kinds, units, host names, real-file quirks."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

from plink.cli import main
from plink.data.hostlist import parse_hostlist
from plink.data.inputs import load_input, read_host_names
from plink.errors import OptionError, PlinkError, ProbeFileError

DATA = Path(__file__).parent / "data"


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def blocks(nodes=4, per=4, inside=1200.0, across=190.0, seed=0):
    """A bandwidth matrix (MB/s) like ARCHER's: ranks on one node are fast, diagonal 0."""
    rng = np.random.default_rng(seed)
    node = np.repeat(np.arange(nodes), per)
    rng.shuffle(node)
    same = node[:, None] == node[None, :]
    m = np.where(same, inside, across) * rng.uniform(0.9, 1.1, (len(node), len(node)))
    np.fill_diagonal(m, 0)
    return m, node


# ---------------------------------------------------------------------------
# real files


def test_seattle_raw_file_is_accepted_with_notes_in_seconds():
    loaded = load_input(DATA / "seattle24_rtt_s.csv", unit="s")
    notes = " ".join(loaded.notes)
    assert "ignored the diagonal of 3 host(s)" in notes
    assert "0.01 s" in notes  # the self-RTT shown in the user's unit, not as 10000 us
    assert "off-diagonal zero value(s) as not measured" in notes
    assert "symmetrised" in notes
    p = loaded.probe
    assert p.n == 24 and np.all(np.diagonal(p.latency) == 0)
    assert p.n_missing_pairs() >= 1
    assert np.nanmedian(p.latency) > 1e4  # seconds became microseconds


def test_skyplane_hosts_csv_names_the_hosts():
    loaded = load_input(DATA / "skyplane20_rtt_ms.csv", unit="ms", hosts=DATA / "skyplane20_hosts.csv")
    assert loaded.probe.names[0] == "aws:af-south-1"
    with pytest.raises(ProbeFileError, match="duplicate host name 'aws'"):
        read_host_names(f"{DATA / 'skyplane20_hosts.csv'}:cloud")
    assert read_host_names(f"{DATA / 'skyplane20_hosts.csv'}:index")[:2] == ["0", "1"]
    with pytest.raises(ProbeFileError, match="no column 'zone'"):
        read_host_names(f"{DATA / 'skyplane20_hosts.csv'}:zone")


def test_skyplane_throughput_as_bandwidth():
    loaded = load_input(DATA / "skyplane16_throughput_gbps.csv", kind="bandwidth",
                        hosts=DATA / "skyplane16_throughput_hosts.csv")
    p = loaded.probe
    assert p.bandwidth is not None and p.meta["kind"] == "bandwidth"
    off = ~np.eye(p.n, dtype=bool)
    # distance = inverse bandwidth (us per byte): 8e-3 / Gbit/s
    assert np.allclose(p.latency[off], 8e-3 / p.bandwidth[off])


def test_show_bandwidth_matrix_reports_bandwidth_not_inverse_as_latency(capsys):
    code, out, err = run(["show", str(DATA / "skyplane16_throughput_gbps.csv"), "--kind", "bandwidth",
                          "--hosts", str(DATA / "skyplane16_throughput_hosts.csv"), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["latency_us"] is None and doc["bandwidth_gbps"]["max"] > 1.0
    assert not any(k.startswith("median_latency") for k in doc)
    if doc.get("groups", 1) > 1:  # groups are sets of hosts with fast links between them
        assert doc["median_bandwidth_within_groups_gbps"] > doc["median_bandwidth_between_groups_gbps"]
    code, out, err = run(["show", str(DATA / "skyplane16_throughput_gbps.csv"), "--kind", "bandwidth",
                          "--hosts", str(DATA / "skyplane16_throughput_hosts.csv")], capsys)
    assert code == 0 and "latency (RTT)" not in out and "RTT" not in out


def test_show_prints_latencies_in_a_readable_unit(capsys):
    """A matrix in ms reads as ms (the JSON keeps µs)."""
    code, out, err = run(["show", str(DATA / "planetlab24_rtt_ms.csv"), "--unit", "ms"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if "latency (RTT)" in ln)
    row = " ".join(lines[at:at + 2])  # (the figures run over two lines of the cell)
    assert " ms" in row and "p50" in row
    between = next(ln for ln in out.splitlines() if "median RTT between groups" in ln)
    assert between.rstrip().endswith(" ms")
    code, out, err = run(["show", str(DATA / "planetlab24_rtt_ms.csv"), "--unit", "ms", "--json"], capsys)
    assert json.loads(out)["latency_us"]["p50"] > 1000  # µs in the JSON


def test_planetlab_slice_orders(tmp_path, capsys):
    code, out, err = run(["order", str(DATA / "planetlab24_rtt_ms.csv"), "--unit", "ms", "--time-limit", "0.5",
                          "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["cost_plink"] <= doc["cost_random_median"]


# ---------------------------------------------------------------------------
# kinds


def test_bandwidth_kind_gives_a_ring_that_stays_on_nodes(tmp_path, capsys):
    m, node = blocks()
    path = tmp_path / "bw.csv"
    np.savetxt(path, m, delimiter=",", fmt="%.1f")
    code, out, err = run(["order", str(path), "--kind", "bandwidth", "--unit", "MB/s", "--json"], capsys)
    assert code == 0, err
    order = [int(h["name"][1:]) if isinstance(h, dict) else int(h[1:]) for h in json.loads(out)["hosts"]]
    crossings = sum(node[order[i]] != node[order[(i + 1) % len(order)]] for i in range(len(order)))
    assert crossings == 4  # the minimum for 4 nodes (exact search at N = 16)
    # read as latency (the default) the same file crosses nodes on every hop, and is warned about
    code, out, err = run(["order", str(path), "--json"], capsys)
    order = [int(h["name"][1:]) if isinstance(h, dict) else int(h[1:]) for h in json.loads(out)["hosts"]]
    crossings = sum(node[order[i]] != node[order[(i + 1) % len(order)]] for i in range(len(order)))
    assert crossings == 16
    assert "pass --kind bandwidth" in err


def test_wrong_kind_warnings():
    m, _ = blocks(nodes=6, per=6)
    from plink.data.inputs import kind_warning

    assert "--kind bandwidth" in kind_warning(m, "latency", "x")
    assert kind_warning(m, "bandwidth", "x") is None
    lat = 1.0 / np.where(m > 0, m, np.inf)
    assert kind_warning(lat, "latency", "x") is None
    assert "--kind latency" in kind_warning(lat, "bandwidth", "x")
    # a latency matrix given as --bandwidth-matrix: --kind does not apply to that one
    fix = kind_warning(lat, "bandwidth", "x", "give it as the main matrix, not as --bandwidth-matrix,")
    assert "--kind" not in fix and "give it as the main matrix, not as --bandwidth-matrix, if lower" in fix
    diag = np.array(lat)
    np.fill_diagonal(diag, 10.0)  # self-bandwidth is the row maximum
    assert "diagonal is the largest value" in kind_warning(diag, "latency", "x")


@pytest.mark.parametrize("unit, gbit", [("GiB/s", 8.589934592), ("MiB/s", 0.008388608), ("GB/s", 8.0),
                                         ("MB/s", 0.008)])
def test_binary_bandwidth_units_keep_their_size(tmp_path, unit, gbit):
    """GiB/s is 2**30 bytes a second, 7.4% more than GB/s (it was read as GB/s until 2026-11-28)."""
    (tmp_path / "bw.csv").write_text("0,2,1\n2,0,1\n1,1,0\n")
    p = load_input(tmp_path / "bw.csv", kind="bandwidth", unit=unit).probe
    assert p.bandwidth[0, 1] == pytest.approx(2 * gbit, rel=1e-12)


def test_latency_and_bandwidth_together(tmp_path):
    m, _ = blocks()
    lat = np.where(m > 0, 1e5 / np.where(m > 0, m, 1), 0)
    (tmp_path / "lat.csv").write_text("\n".join(",".join(f"{v:.3f}" for v in r) for r in lat))
    (tmp_path / "bw.csv").write_text("\n".join(",".join(f"{v:.1f}" for v in r) for r in m))
    p = load_input(tmp_path / "lat.csv", bandwidth=tmp_path / "bw.csv", bandwidth_unit="MBps").probe
    off = ~np.eye(p.n, dtype=bool)
    r = np.round(m, 1)
    assert np.allclose(p.bandwidth[off], np.fmin(r, r.T)[off] * 8e-3)
    with pytest.raises(ProbeFileError, match="not a latency unit"):
        load_input(tmp_path / "lat.csv", unit="MB/s")
    with pytest.raises(ProbeFileError, match="is a bandwidth matrix already|the main matrix is bandwidth"):
        load_input(tmp_path / "bw.csv", kind="bandwidth", bandwidth=tmp_path / "bw.csv")


def test_errors_quote_the_users_unit(tmp_path):
    (tmp_path / "m.csv").write_text("0,5,-3\n5,0,1\n-3,1,0\n")
    with pytest.raises(ProbeFileError, match=r"negative \(-3 ms\)"):
        load_input(tmp_path / "m.csv", unit="ms")
    (tmp_path / "big.csv").write_text("0,1e308,1\n1e308,0,1\n1,1,0\n")
    with pytest.raises(ProbeFileError, match=r"more than one day: wrong --unit \(unit\) or --kind \(kind\)"):
        load_input(tmp_path / "big.csv", unit="s")


def test_asymmetric_pairs_are_counted(tmp_path):
    (tmp_path / "m.csv").write_text("0,5,7\n6,0,1\n7,1,0\n")
    loaded = load_input(tmp_path / "m.csv")
    assert any("symmetrised 1 asymmetric pair(s)" in n for n in loaded.notes)
    assert loaded.probe.latency[0, 1] == 6


# ---------------------------------------------------------------------------
# names that could break a launcher file


@pytest.mark.parametrize("name", ["a\nb", "a b", "tab\there", "\x1b[31m", "\ud800", ""])
def test_names_with_whitespace_or_control_characters_are_refused(tmp_path, name):
    doc = {"format": "plink-probe", "version": 1, "hosts": [{"name": name}, {"name": "b"}, {"name": "c"}],
           "latency_us": [[0, 1, 2], [1, 0, 1], [2, 1, 0]]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ProbeFileError):
        load_input(path)
    doc["hosts"][0] = {"name": "a", "address": f"10.0.0.1{name or ' '}"}
    path.write_text(json.dumps(doc))
    with pytest.raises(ProbeFileError, match="address"):
        load_input(path)


def test_newline_in_a_name_never_reaches_a_hostfile(tmp_path, capsys):
    doc = {"format": "plink-probe", "version": 1,
           "hosts": [{"name": "a"}, {"name": "b\nevil"}, {"name": "c"}],
           "latency_us": [[0, 1, 2], [1, 0, 1], [2, 1, 0]]}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    out = tmp_path / "hosts.ompi"
    code, _, err = run(["order", str(tmp_path / "p.json"), "--format", "openmpi", "-o", str(out)], capsys)
    assert code == 1 and "whitespace or a control character" in err and not out.exists()


def test_names_differing_only_in_case_are_one_host_in_every_reader(tmp_path):
    """A resolver, the host-list reader and every launcher file take ``X`` and ``x`` for one host;
    the matrix and probe readers took them for two, so ``plink group`` grouped them apart and only
    writing a launcher file failed, without naming the input. Each reader refuses them, naming it."""
    m = tmp_path / "m.csv"
    m.write_text("X,x,n2\n0,1,2\n1,0,1\n2,1,0\n")
    with pytest.raises(ProbeFileError, match=r"m\.csv: duplicate host name 'x' \(as 'X': names differing only in case"):
        load_input(m)
    doc = {"format": "plink-probe", "version": 1, "hosts": [{"name": "vm0"}, {"name": "VM0"}, {"name": "c"}],
           "latency_us": [[0, 1, 2], [1, 0, 1], [2, 1, 0]]}
    p = tmp_path / "p.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ProbeFileError, match=r"p\.json: duplicate host 'VM0' \(as 'vm0'"):
        load_input(p)
    m.write_text("0,1,2\n1,0,1\n2,1,0\n")
    (tmp_path / "h.txt").write_text("a\nb\nA\n")
    with pytest.raises(ProbeFileError, match="duplicate host"):
        load_input(m, hosts=str(tmp_path / "h.txt"))


def test_a_host_list_given_for_a_matrix_is_named_as_one(tmp_path):
    """`plink order hosts.txt` (the host list instead of the probe file, an easy first mistake) read
    "row names do not match the column names"."""
    m = tmp_path / "hosts.txt"
    m.write_text("# the cluster\nroot@10.0.0.1\nroot@10.0.0.2:2222\nnode3 slots=4\n")
    with pytest.raises(ProbeFileError, match=r"hosts\.txt: one name per line and no number: a host list, not a matrix"):
        load_input(m)


def test_a_tab_in_a_csv_header_name_is_named_not_taken_for_a_separator(tmp_path):
    """A comma-separated file whose header holds a name with a tab in it used to be read as
    tab-separated (a tab in the first line) and failed with "row names do not match the column
    names"; a file is tab-separated when every line has a tab, so the name is what is refused.
    A real TSV still reads."""
    m = tmp_path / "m.csv"
    m.write_text("a\tb,c,d\n0,1,2\n1,0,1\n2,1,0\n")
    with pytest.raises(ProbeFileError, match=r"host name 'a\\tb' holds whitespace or a control character"):
        load_input(m)
    m.write_text("a\tc\td\n0\t1\t2\n1\t0\t1\n2\t1\t0\n")
    assert load_input(m).probe.names == ["a", "c", "d"]


# ---------------------------------------------------------------------------
# host-list expansion cap


def test_slurm_expansion_is_capped_before_memory_is_spent():
    t0 = time.perf_counter()
    with pytest.raises(PlinkError, match="over 4096 hosts|more than 4096 hosts"):
        parse_hostlist("node[0-99999999]\n")
    with pytest.raises(PlinkError, match="over 4096 hosts|more than 4096 hosts"):
        parse_hostlist("\n".join(f"r{i}-n[0-9999]" for i in range(30)))
    with pytest.raises(PlinkError, match="over 4096 hosts|more than 4096 hosts"):
        parse_hostlist("a[0-999]b[0-999]\n")
    assert time.perf_counter() - t0 < 1.0
    assert len(parse_hostlist("node[0-29999]\n", max_hosts=30000)) == 30000
    with pytest.raises(PlinkError, match="not a number"):
        parse_hostlist("host:\u00b2\n")


# ---------------------------------------------------------------------------
# plink schedule on real data


def test_schedule_planetlab_slice_is_finite_and_every_group_has_a_gm(tmp_path, capsys):
    out = tmp_path / "s.json"
    code, text, err = run(["schedule", str(DATA / "planetlab24_rtt_ms.csv"), "--unit", "ms", "--size", "4MiB",
                           "-o", str(out), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-finite {c} in the JSON"))
    assert doc["model"] == "shared links: host NICs assumed 10 Gbit/s and group uplinks"
    assert doc["balance"]["gm_groups"] is not None and math.isfinite(doc["balance"]["gm_groups"])
    sched = json.loads(out.read_text())
    labels = np.array(sched["groups"])
    sizes = np.bincount(labels)
    # groups come from infer_hierarchy (unequal: the PlanetLab slice's regions), each of >= 2 hosts
    assert sizes.min() >= 2 and sizes.sum() == 24
    gm_groups = {int(labels[g]) for g in sched["gm"]}
    assert gm_groups == set(range(len(sizes)))


def test_fallback_groups_are_bounded_on_wide_area_data():
    from plink.schedule.plan import fallback_groups

    p = load_input(DATA / "planetlab24_rtt_ms.csv", unit="ms").probe
    sizes = np.bincount(fallback_groups(p))
    k = round(math.sqrt(24))
    assert len(sizes) >= 2 and sizes.min() >= max(2, math.floor(24 / (2 * k))) and sizes.max() <= math.ceil(2 * 24 / k)


def test_watch_reads_a_plain_matrix_with_the_same_options(tmp_path, capsys):
    code, _out, err = run(["watch", str(tmp_path / "state"), "--probe-file", str(DATA / "skyplane20_rtt_ms.csv"),
                          "--unit", "ms", "--hosts", str(DATA / "skyplane20_hosts.csv"), "--time-limit", "0.2",
                          "--json"], capsys)
    assert code == 4, err  # the first run writes an order
    names = [h["name"] for h in json.loads((tmp_path / "state" / "order.json").read_text())["hosts"]]
    assert sorted(names) == sorted(read_host_names(DATA / "skyplane20_hosts.csv"))


def test_schedule_uses_structure_inference_when_installed(monkeypatch):
    import sys
    import types

    from plink.schedule.plan import default_groups

    p = load_input(DATA / "planetlab24_rtt_ms.csv", unit="ms").probe
    fake = types.ModuleType("plink.structure.hierarchy")
    found = {"labels": np.arange(24) % 3}
    fake.infer_hierarchy = lambda lat, **kw: types.SimpleNamespace(labels=found["labels"])
    monkeypatch.setitem(sys.modules, "plink.structure.hierarchy", fake)
    labels, source = default_groups(p)
    assert source.startswith("structure inference") and np.array_equal(labels, np.arange(24) % 3)
    found["labels"] = np.zeros(24, dtype=int)  # no structure found: bounded average linkage
    labels, source = default_groups(p)
    assert source.startswith("fallback") and labels.max() >= 1
    found["labels"] = np.r_[np.zeros(23, dtype=int), 1]  # a singleton group, nothing to join it with: fallback
    assert default_groups(p)[1].startswith("fallback")


def test_schedule_puts_a_host_alone_in_its_group_with_its_nearest_host(monkeypatch, tmp_path):
    import sys
    import types

    from plink.schedule.plan import default_groups
    from plink.structure.hierarchy import attach_lone_hosts

    p = load_input(DATA / "planetlab24_rtt_ms.csv", unit="ms").probe
    fake = types.ModuleType("plink.structure.hierarchy")
    given = np.r_[np.arange(23) % 3, 3]  # host 23 alone in group 3
    fake.infer_hierarchy = lambda lat, **kw: types.SimpleNamespace(labels=given)
    fake.attach_lone_hosts = attach_lone_hosts
    monkeypatch.setitem(sys.modules, "plink.structure.hierarchy", fake)
    labels, source = default_groups(p)
    lat = np.fmin(p.structure_latency, p.structure_latency.T)
    np.fill_diagonal(lat, np.inf)
    nearest = int(np.nanargmin(lat[23]))
    assert f"1 host(s) it left alone (near no rack) put in the group of their nearest host: " \
           f"{p.names[23]} -> {p.names[nearest]}" in source
    assert labels.max() == 2 and np.bincount(labels).min() >= 2 and labels[23] == labels[nearest]
    assert [len(set(labels[given == g])) for g in range(3)] == [1, 1, 1]  # the other groups as found
    # the CLI repeats that message as a note on stderr (with --json it is the summary's groups_source)
    from click.testing import CliRunner

    from plink.cli import cli

    args = ["schedule", str(DATA / "planetlab24_rtt_ms.csv"), "--unit", "ms", "--size", "1MiB",
            "-o", str(tmp_path / "s.json")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert f"note: groups from {source}" in res.stderr
    res = CliRunner().invoke(cli, args + ["--json"])
    assert res.exit_code == 0 and "note: groups from" not in res.stderr
    assert json.loads(res.stdout)["groups_source"] == source


def test_an_implausible_median_rtt_is_warned_about_as_a_unit_mixup(tmp_path):
    m = np.array([[0, 150, 90], [150, 0, 120], [90, 120, 0]], dtype=float)  # milliseconds
    path = tmp_path / "rtt.csv"
    np.savetxt(path, m, delimiter=",")
    as_seconds = load_input(path, unit="s")
    assert any("median RTT is 120 s" in w and "check --unit" in w for w in as_seconds.warnings)
    assert not any("check --unit" in w for w in load_input(path, unit="ms").warnings)
    as_us = load_input(path, unit="us")  # 120 us: plausible
    assert not any("check --unit" in w for w in as_us.warnings)
    np.savetxt(path, m / 1000, delimiter=",")  # seconds read as the default microseconds
    fast = load_input(path)
    assert [w for w in fast.warnings if "check --unit" in w] == [
        f"{path}: the median RTT is 0.12 us with --unit us: no network is that fast; check --unit (ms, us or s?)"]


def test_an_implausible_median_bandwidth_is_warned_about_as_a_unit_mixup(tmp_path):
    bw = np.array([[0, 10000, 25000], [10000, 0, 10000], [25000, 10000, 0]], dtype=float)  # Mbit/s
    path = tmp_path / "bw.csv"
    np.savetxt(path, bw, delimiter=",")
    as_gbit = load_input(path, kind="bandwidth")  # read as the default Gbit/s: 10 Tbit/s
    assert [w for w in as_gbit.warnings if "check the unit" in w] == [
        f"{path}: the median bandwidth is 1e+04 Gbit/s with --unit Gbit/s: no NIC is that fast; "
        "check the unit (Mbit/s read as Gbit/s?)"]
    assert not any("check the unit" in w for w in load_input(path, kind="bandwidth", unit="Mbit/s").warnings)
    lat = tmp_path / "lat.csv"
    np.savetxt(lat, np.array([[0, 50, 60], [50, 0, 70], [60, 70, 0]], dtype=float), delimiter=",")
    beside = load_input(lat, bandwidth=str(path))  # --bandwidth-matrix: its own flag is named
    assert any("with --bandwidth-unit Gbit/s: no NIC is that fast" in w for w in beside.warnings)
    np.savetxt(path, bw / 1e6, delimiter=",")  # Gbit/s read as Mbit/s: 10 kbit/s
    slow = load_input(path, kind="bandwidth", unit="Mbit/s")
    assert any("10 kbit/s with --unit Mbit/s: check the unit" in w for w in slow.warnings)


def test_zero_latency_in_a_probe_file_is_an_unmeasured_pair(tmp_path):
    doc = {"format": "plink-probe", "version": 1, "hosts": ["a", "b", "c"],
           "latency_us": [[0, 0, 20], [0, 0, 30], [20, 30, 0]]}
    from plink.data.probefile import FORMAT

    doc["format"] = FORMAT
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    loaded = load_input(path)
    assert math.isnan(loaded.probe.latency[0, 1]) and loaded.probe.latency[0, 2] == 20
    assert any("read 1 pair(s) of 0 in latency_us as not measured" in n for n in loaded.notes)


def test_asymmetric_bandwidth_keeps_the_better_direction_for_structure(tmp_path):
    bw = np.array([[0, 8000, 1000], [2000, 0, 4000], [1000, 4000, 0]], dtype=float)  # Mbit/s
    path = tmp_path / "bw.csv"
    np.savetxt(path, bw, delimiter=",", fmt="%.1f")
    loaded = load_input(path, kind="bandwidth", unit="Mbit/s")
    p = loaded.probe
    assert p.bandwidth[0, 1] == 2.0  # Gbit/s: costs take the slower direction
    assert p.latency[0, 1] == pytest.approx(8e-3 / 2.0)
    assert p.latency_best[0, 1] == pytest.approx(8e-3 / 8.0)  # structure: the faster one
    assert p.latency_best[1, 2] == pytest.approx(8e-3 / 4.0) and p.latency_best[0, 0] == 0
    assert any("symmetrised 1 asymmetric pair(s)" in n for n in loaded.notes)
    sym = tmp_path / "sym.csv"
    np.savetxt(sym, np.fmin(bw, bw.T), delimiter=",", fmt="%.1f")
    assert load_input(sym, kind="bandwidth", unit="Mbit/s").probe.latency_best is None


def test_excel_csv_and_unit_spellings(tmp_path):
    m = np.array([[0, 0.5, 0.25], [0.5, 0, 0.75], [0.25, 0.75, 0]])
    path = tmp_path / "rtt.csv"
    text = "\n".join(",".join(f"{x:g}" for x in row) for row in m) + "\n"
    path.write_text("\ufeff" + text, encoding="utf-8")  # Excel's "CSV UTF-8" starts with a BOM
    want = load_input(path, unit="ms").probe.latency
    assert want[0, 1] == 500.0
    for unit in ("\u00b5s", "\u03bcs", "US", "usec"):
        assert load_input(path, unit=unit).probe.latency[0, 1] == 0.5
    for unit in ("MS", "msec", "millisecond", "milliseconds", "msecs"):
        assert np.array_equal(load_input(path, unit=unit).probe.latency, want)
    for unit in ("seconds", "second", "secs"):  # (were refused, where sec was read)
        assert load_input(path, unit=unit).probe.latency[0, 1] == 500e3
    for unit in ("microseconds", "nanoseconds"):
        assert load_input(path, unit=unit).probe.latency[0, 1] == pytest.approx(0.5 * (1 if unit[0] == "m" else 1e-3))
    for unit, gbps in (("MB/sec", 4e-3), ("Gbit/sec", 0.5), ("Mb/sec", 5e-4), ("GiB/sec", 0.5 * 8 * 2**30 / 1e9)):
        assert load_input(path, unit=unit, kind="bandwidth").probe.bandwidth[0, 1] == pytest.approx(gbps)
    from plink.data.inputs import _name_unit

    assert _name_unit("bytes_per_second.csv") is None  # the words are no unit in a file's name
    with pytest.raises(Exception, match=r"'ms' is not a bandwidth unit .*pass --kind \(kind\) latency"):
        load_input(path, unit="MS", kind="bandwidth")


def test_semicolon_separated_csv(tmp_path):
    path = tmp_path / "rtt.csv"
    path.write_text(";a;b;c\na;0;0.5;0.25\nb;0.5;0;0.75\nc;0.25;0.75;0\n")  # a spreadsheet in a ';' locale
    p = load_input(path, unit="ms").probe
    assert p.names == ["a", "b", "c"] and p.latency[1, 2] == 750.0
    tsv = tmp_path / "rtt.tsv"
    tsv.write_text("0\t1;5\n1;5\t0\n")  # tabs first: a ';' inside a cell stays a cell's text
    with pytest.raises(Exception, match="not a number"):
        load_input(tsv)


@pytest.mark.parametrize("name, args, said", [
    ("bandwidth_MBps_4.csv", dict(kind="bandwidth"), "the file name says MBps, but it was read with the default unit, "
                                                     "Gbit/s; pass --unit MB/s"),
    ("bandwidth_MBps_4.csv", dict(kind="bandwidth", unit="Gbit/s"), "read with --unit Gbit/s; pass --unit MB/s"),
    ("rtt_ms_frame.csv", dict(), "the file name says ms, but it was read with the default unit, us; pass --unit ms"),
    ("tput_Gbps.csv", dict(), "the file name says Gbps, a bandwidth unit, but it was read as a latency matrix; "
                              "pass --kind bandwidth --unit Gbit/s"),
])
def test_a_unit_in_the_file_name_that_disagrees_is_warned_about(tmp_path, name, args, said):
    """The ARCHER matrix (MB/s) read as Gbit/s has plausible values; only its name can tell."""
    f = tmp_path / name
    f.write_text("0,300,400,500\n300,0,450,350\n400,450,0,380\n500,350,380,0\n")
    loaded = load_input(f, **args)
    assert any(said in w for w in loaded.warnings), loaded.warnings


@pytest.mark.parametrize("name, args", [("bandwidth_MBps_4.csv", dict(kind="bandwidth", unit="MBps")),
                                        ("rtt_ms.csv", dict(unit="ms")), ("us_east_rtt_ms.csv", dict()),
                                        ("plain.csv", dict()), ("status.csv", dict())])
def test_no_unit_warning_when_the_name_agrees_or_says_nothing_clear(tmp_path, name, args):
    f = tmp_path / name
    f.write_text("0,300,400,500\n300,0,450,350\n400,450,0,380\n500,350,380,0\n")
    assert not [w for w in load_input(f, **args).warnings if "file name" in w]


def test_group_names_the_hosts_it_left_alone(tmp_path, capsys):
    """plink group prints the hosts alone in a finest group (near no rack) and lists them in --json as
    alone_hosts; none without such a host (2 rows of 10 racks of 2-4 hosts, sim-9 of seed 128 of
    benchmarks/structure.py --large: vm015's one rack-mate pair unmeasured)."""
    from plink.data.simulate import simulate_datacenter

    p = simulate_datacenter(racks=10, rows=2, hosts_per_rack=(2, 4), outlier_scale=1.0, jitter=0.160,
                            tenant_us=0.594, noisy_hosts=0.090, outlier_frac=0.028, asymmetry=0.046,
                            missing_frac=0.02, seed=2094435896)
    p.save(tmp_path / "p.json")
    code, out, err = run(["group", str(tmp_path / "p.json"), "--json"], capsys)
    assert code == 0 and json.loads(out)["metrics"]["alone_hosts"] == ["vm015"]
    code, out, err = run(["group", str(tmp_path / "p.json"), "-o", str(tmp_path / "g.json")], capsys)
    assert code == 0 and "alone (a group of their own, near no rack; plink schedule puts each with its " \
                          "nearest host): vm015" in " ".join(err.split())
    clean = simulate_datacenter(racks=3, hosts_per_rack=4, seed=1)
    clean.save(tmp_path / "c.json")
    code, out, err = run(["group", str(tmp_path / "c.json"), "--json"], capsys)
    assert code == 0 and json.loads(out)["metrics"]["alone_hosts"] == [] and "alone (" not in err


def test_a_byte_order_mark_is_no_part_of_the_first_name(tmp_path):
    """A file saved with a UTF-8 byte-order mark (Windows editors) was refused: its first host name
    read as holding "whitespace or a control character", a JSON file as invalid."""
    from plink.data.orderfile import read_order_hosts
    from plink.data.probefile import load
    from plink.data.simulate import simulate_datacenter

    bom = "\ufeff"
    (tmp_path / "hosts.txt").write_text(bom + "a1\na2\nb1\n", encoding="utf-8")
    assert read_host_names(str(tmp_path / "hosts.txt")) == ["a1", "a2", "b1"]
    assert [h.name for h in read_order_hosts(tmp_path / "hosts.txt")] == ["a1", "a2", "b1"]
    (tmp_path / "m.csv").write_text(bom + "a,b,c\n0,10,20\n10,0,30\n20,30,0\n", encoding="utf-8")
    assert load_input(str(tmp_path / "m.csv")).probe.names == ["a", "b", "c"]
    p = tmp_path / "p.json"
    simulate_datacenter(2, 2, seed=0).save(p)
    (tmp_path / "bom.json").write_text(bom + p.read_text(), encoding="utf-8")
    assert load(tmp_path / "bom.json").names == load(p).names


def test_a_matrix_header_name_with_a_line_separator_is_refused_not_split(tmp_path):
    """U+2028 in a CSV header split the header in two (str.splitlines): a misleading shape error."""
    f = tmp_path / "m.csv"
    f.write_text("h1\u2028x,h2\n0,1\n1,0\n", encoding="utf-8")
    with pytest.raises(ProbeFileError, match=r"host name 'h1\\u2028x' holds whitespace or a control character"):
        load_input(f)


def test_bad_values_handed_to_the_library_are_value_errors(tmp_path):
    """As in scikit-learn and numpy, a bad value or bad data is a ValueError (and a PlinkError):
    code that wraps plink's calls in ``except ValueError`` catches plink's checks."""
    import plink
    from plink.errors import InputError, OptionError
    from plink.structure.embed import ProbeEmbed
    from plink.structure.group import BalancedGrouper
    from plink.structure.hierarchy import HierarchicalGrouper
    from plink.units import parse_size

    probe = plink.simulate_datacenter(racks=2, hosts_per_rack=3, seed=0)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "plink-probe"}')
    cases = [
        (lambda: parse_size("banana"), OptionError),
        (lambda: plink.order_hosts(probe, seed=-1), OptionError),
        (lambda: plink.order_hosts(probe, labels=[0, 1]), InputError),
        (lambda: ProbeEmbed(n_restarts=0).fit(probe), OptionError),
        (lambda: ProbeEmbed().fit(np.ones((3, 4))), InputError),
        (lambda: BalancedGrouper(tol=2).fit_predict(np.zeros((6, 2))), OptionError),
        (lambda: BalancedGrouper().fit_predict(np.full((6, 2), np.inf)), InputError),
        (lambda: HierarchicalGrouper(n_groups=-1).fit(probe), OptionError),
        (lambda: HierarchicalGrouper().fit(-np.ones((4, 4))), InputError),
        (lambda: HierarchicalGrouper().set_params(nope=1), OptionError),
        (lambda: plink.load(bad), ProbeFileError),
    ]
    for call, cls in cases:
        with pytest.raises(ValueError) as exc:
            call()
        assert isinstance(exc.value, cls) and isinstance(exc.value, PlinkError), (cls, exc.value)


def test_show_gives_percentiles_of_every_direction_as_measured(tmp_path, capsys):
    """An asymmetric matrix is priced by each pair's slower direction; `plink show` gave the percentiles
    of that one alone, labelled RTT (Seattle: median 0.40 s where the file's is 0.21 s). Both directions
    now count, as in the file; the bandwidth of an asymmetric bandwidth matrix too."""
    rng = np.random.default_rng(3)
    m = rng.uniform(10, 1000, (12, 12))
    np.fill_diagonal(m, 0)
    path = tmp_path / "rtt_us.csv"
    np.savetxt(path, m, delimiter=",")
    code, out, _ = run(["show", str(path), "--no-structure", "--json"], capsys)
    assert code == 0
    off = m[~np.eye(12, dtype=bool)]
    got = json.loads(out)["latency_us"]
    assert got["p50"] == pytest.approx(np.percentile(off, 50), abs=1e-3)
    assert got["min"] == pytest.approx(off.min(), abs=1e-3) and got["max"] == pytest.approx(off.max(), abs=1e-3)
    bw = tmp_path / "bw_Gbps.csv"
    np.savetxt(bw, m / 100, delimiter=",")
    code, out, _ = run(["show", str(bw), "--kind", "bandwidth", "--no-structure", "--json"], capsys)
    assert code == 0
    got = json.loads(out)["bandwidth_gbps"]
    assert got["p50"] == pytest.approx(np.percentile(off / 100, 50), rel=1e-3)
    assert got["max"] == pytest.approx(off.max() / 100, rel=1e-3)


def test_a_matrix_without_names_says_what_it_calls_its_hosts_and_its_default_unit(tmp_path, capsys):
    """A matrix without host names got h00..hNN by row and a unit of us without a word: a launcher file
    of made-up names, and a groups file of one matrix applied to another of another size by row number."""
    def latency(nodes, per):
        bw = blocks(nodes=nodes, per=per)[0]
        with np.errstate(divide="ignore"):
            lat = np.where(bw > 0, 1e5 / bw, 0.0)
        return lat

    a = tmp_path / "lat.csv"
    np.savetxt(a, latency(3, 5), delimiter=",")
    code, _, err = run(["group", str(a), "-o", str(tmp_path / "g.json")], capsys)
    text = " ".join(err.split())
    assert code == 0
    assert f"{a}: the matrix names no hosts: they are called h00..h14 by row" in text
    assert f"{a}: read in us, the default unit" in text
    code, _, err = run(["group", str(a), "--unit", "ms", "-o", str(tmp_path / "g2.json")], capsys)
    assert "default unit" not in err
    b = tmp_path / "other.csv"
    np.savetxt(b, latency(2, 6), delimiter=",")  # 12 hosts: h00..h11, all of them in g.json
    code, _, err = run(["order", str(b), "--groups", str(tmp_path / "g.json"), "-o", str(tmp_path / "o.txt")], capsys)
    assert code == 1 and "both named by row number" in err and "--hosts" in err
    assert not (tmp_path / "o.txt").exists()


def test_a_csv_column_chosen_by_its_name_is_named_when_its_names_are_refused(tmp_path):
    """ARCHER's labels_192.csv (rank,node,socket_guess) as --hosts: plink took the 'node' column by its
    name and said only "duplicate host name '0'"."""
    table = tmp_path / "labels.csv"
    table.write_text("rank,node,socket\n0,0,0\n1,0,1\n2,1,0\n")
    with pytest.raises(ProbeFileError, match=r"duplicate host name '0' .*read from its column 'node', chosen by its "
                                             r"name; give .*labels.csv:COLUMN for another"):
        read_host_names(table)
    assert read_host_names(f"{table}:rank") == ["0", "1", "2"]


def test_a_probe_file_is_known_by_its_text_and_dash_reads_stdin(tmp_path, monkeypatch):
    """`plink order <(cat probe.json)` and `plink order /dev/stdin < probe.json` read the JSON as a CSV
    ("row names do not match the column names"), and `-` was "no such file" (plink emit reads it)."""
    import io
    import os
    import subprocess
    import sys

    from plink.data.simulate import simulate_datacenter

    src = tmp_path / "dc.json"
    simulate_datacenter(racks=2, hosts_per_rack=3, seed=4).save(src)
    probe = load_input(src).probe  # as the file holds it (rounded)
    nameless = tmp_path / "dc"  # no ending: read as text, and its text is a probe file
    nameless.write_bytes(src.read_bytes())
    got = load_input(nameless).probe
    assert got.names == probe.names and np.allclose(got.latency, probe.latency, equal_nan=True)
    with pytest.raises(OptionError, match=r"--kind \(kind\) and --unit \(unit\) describe plain matrices"):
        load_input(nameless, unit="ms")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(src.read_bytes())))
    got = load_input("-").probe
    assert got.names == probe.names and np.allclose(got.latency, probe.latency, equal_nan=True)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a,b,c\n0,1,2\n1,0,3\n2,3,0\n")))
    loaded = load_input("-", unit="ms")
    assert loaded.probe.names == ["a", "b", "c"] and loaded.probe.latency[0, 2] == 2000.0
    # through a real pipe, as the shell gives it
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    for argv, stdin in ((["/dev/stdin"], src.read_bytes()), (["-"], src.read_bytes())):
        proc = subprocess.run([sys.executable, "-m", "plink", "order", *argv, "--time-limit", "0.2", "--json"],
                              input=stdin, capture_output=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert sorted(json.loads(proc.stdout)["hosts"]) == sorted(probe.names)


def test_a_csv_without_a_number_says_so(tmp_path):
    """A CSV of names only (a,b,c / x,y,z / q,r,s) was refused as 'row names do not match the column names'."""
    f = tmp_path / "words.csv"
    f.write_text("a,b,c\nx,y,z\nq,r,s\n")
    with pytest.raises(ProbeFileError, match="words.csv: no number in it: not a matrix"):
        load_input(f)


def test_dash_for_a_second_input_says_stdin_is_taken(tmp_path):
    """`plink order - --hosts -`, `--groups -`, verify's schedule as `-`: '-: no such file'."""
    from plink.data.fileio import read_text

    with pytest.raises(PlinkError, match="standard input is read only as the matrix"):
        read_text("-")
    with pytest.raises(PlinkError, match="standard input is read only as the matrix"):
        read_host_names("-")


def test_a_npy_matrix_is_known_by_its_first_bytes(tmp_path, monkeypatch):
    """A .npy matrix without its ending (or on a pipe) was refused as 'holds NUL bytes: not a text file'."""
    import io
    import sys

    m = np.array([[0, 5, 9], [5, 0, 7], [9, 7, 0]], float)
    np.save(tmp_path / "m.npy", m)
    nameless = tmp_path / "m_copy"
    nameless.write_bytes((tmp_path / "m.npy").read_bytes())
    assert np.allclose(load_input(nameless).probe.latency, m)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((tmp_path / "m.npy").read_bytes())))
    with pytest.raises(ProbeFileError, match=r"<stdin>: a \.npy matrix \(NumPy's binary format\): plink reads one "
                                             r"from a file"):
        load_input("-")


def test_names_that_do_not_match_say_where(tmp_path):
    """`,a,b / a,,` (a row missing) and rows in another order both said 'row names do not match the column names'."""
    short = tmp_path / "short.csv"
    short.write_text(",a,b\na,,\n")
    with pytest.raises(ProbeFileError, match="2 column names but 1 named row: a matrix has a row per host"):
        load_input(short)
    other = tmp_path / "other.csv"
    other.write_text(",a,b\nb,0,1\nc,1,0\n")
    with pytest.raises(ProbeFileError, match=r"row 1 is named 'c', which names no column"):
        load_input(other)


def test_rows_in_another_order_are_read_by_name(tmp_path):
    """Rows naming the same hosts as the columns, in another order (a matrix sorted by row name,
    rows appended as hosts came), were refused ('row names do not match the column names'): each
    row is now the row of the host it names, with a note."""
    from plink.data.probefile import read_matrix_csv

    swapped = tmp_path / "swapped.csv"
    swapped.write_text(",a,b,c\nc,7,8,0\na,0,1,2\nb,3,0,5\n")
    notes = []
    m, names = read_matrix_csv(swapped, notes)
    assert names == ["a", "b", "c"]
    assert m.tolist() == [[0, 1, 2], [3, 0, 5], [7, 8, 0]]
    assert len(notes) == 1 and "another order than the columns (row 0 is 'c', column 0 'a')" in notes[0]
    loaded = load_input(swapped)  # the note reaches the user
    assert loaded.probe.names == ["a", "b", "c"] and loaded.probe.latency[2, 0] > loaded.probe.latency[0, 1]
    assert any("another order than the columns" in n for n in loaded.notes + loaded.warnings)
    twice = tmp_path / "twice.csv"  # a host named twice is no order: still refused
    twice.write_text(",a,b\nb,0,1\nb,1,0\n")
    with pytest.raises(ProbeFileError, match="row name 'b' appears twice: a matrix has one row per host"):
        load_input(twice)  # (it blamed row 0, whose order is no longer wrong)


def test_kilo_bandwidth_units_and_small_bandwidths_are_kept(tmp_path):
    """kbit/s (what plink itself prints), kB/s and KiB/s were refused as units; a matrix of 10 Kbit/s read
    'min 0 kbit/s' in plink show and 0.0 in its --json (rounded to 4 decimals of a Gbit/s), and the
    unit warning suggested 'Gbit/s read as Mbit/s?' for a Kbit/s file."""
    from plink.data.inputs import BANDWIDTH_UNITS
    from plink.data.summary import summarize

    path = tmp_path / "bw.csv"
    np.savetxt(path, np.where(np.eye(4, dtype=bool), 0.0, 10.0), delimiter=",")
    for unit, gbps in (("kbit/s", 1e-5), ("kb/s", 1e-5), ("kB/s", 8e-5), ("KiB/s", 8 * 10 * 1024 / 1e9)):
        got = load_input(path, kind="bandwidth", unit=unit)
        assert np.nanmax(got.probe.bandwidth) == pytest.approx(gbps), unit
    assert BANDWIDTH_UNITS["KiB/s"] == pytest.approx(8.192e-6)
    loaded = load_input(path, kind="bandwidth", unit="Kbit/s")
    assert summarize(loaded.probe)["bandwidth_gbps"]["min"] == pytest.approx(1e-5)
    # the medians within and between groups too (they were still rounded to 4 decimals: 0.0)
    from plink.data.groupfile import Groups

    slow = np.where(np.eye(4, dtype=bool), 0.0, np.array([[0, 10, 5, 5], [10, 0, 5, 5], [5, 5, 0, 10], [5, 5, 10, 0]]))
    np.savetxt(path, slow, delimiter=",")
    loaded = load_input(path, kind="bandwidth", unit="Kbit/s")
    s = summarize(loaded.probe, Groups(hosts=loaded.probe.names, labels=np.array([0, 0, 1, 1])))
    assert s["median_bandwidth_within_groups_gbps"] == pytest.approx(1e-5)
    assert s["median_bandwidth_between_groups_gbps"] == pytest.approx(5e-6)
    warned = [w for w in loaded.warnings if "check the unit" in w]
    assert len(warned) == 1 and warned[0].endswith("check the unit (Gbit/s read as Kbit/s?)")


def test_bandwidths_below_one_bit_per_second_are_refused(tmp_path):
    """1e-305 Gbit/s was read: its inverse overflowed, orders were priced 'inf s', the exact solver
    crashed ('negative shift count') and plink schedule wrote its file and then failed; 5e-320 read as
    'is infinite'. A floor of 1 bit/s, as the ceiling of 1 Pbit/s (outside-in check)."""
    from plink.data.probefile import from_dict

    path = tmp_path / "bw.csv"
    for value, unit in ((1e-305, "Gbit/s"), (5e-320, "Gbit/s"), (0.5, "bit/s"), (5e-7, "Mbit/s")):
        np.savetxt(path, np.where(np.eye(5, dtype=bool), 0.0, value), delimiter=",")
        with pytest.raises(ProbeFileError, match=r"bandwidth at row 0, column 1 \(h0 -> h1\) is .* less than 1 bit/s"):
            load_input(path, kind="bandwidth", unit=unit)
    np.savetxt(path, np.where(np.eye(5, dtype=bool), 0.0, 1.0), delimiter=",")
    assert np.nanmin(load_input(path, kind="bandwidth", unit="bit/s").probe.bandwidth) == pytest.approx(1e-9)
    doc = {"format": "plink-probe", "version": 1, "hosts": ["a", "b"], "latency_us": [[0, 10], [10, 0]],
           "bandwidth_gbps": [[None, 1e-12], [1e-12, None]]}
    with pytest.raises(ProbeFileError, match="is 1e-12 Gbit/s, less than 1 bit/s"):
        from_dict(doc)


def test_the_bandwidth_range_is_one_check_worded_for_the_option_that_set_the_unit(tmp_path):
    """The range was written three times: a probe file's pair bandwidths had a floor but no ceiling,
    a value just under the floor printed as '1e-09' (the floor itself), and a --bandwidth-matrix out of
    range blamed '--unit or --kind', which do not apply to it (outside-in check)."""
    from plink.data.inputs import bandwidth_out_of_range
    from plink.data.probefile import from_dict, validate

    assert bandwidth_out_of_range(1e-9) is None and bandwidth_out_of_range(1e6) is None
    assert bandwidth_out_of_range(9.999e-10) == ((), "less than 1 bit/s")
    assert bandwidth_out_of_range(np.array([[np.nan, 2e6], [1.0, np.nan]])) == ((0, 1), "more than 1 Pbit/s")
    assert bandwidth_out_of_range(np.array([0.0, 1.0]), where=np.array([False, True])) is None

    data = from_dict({"format": "plink-probe", "version": 1, "hosts": ["a", "b"], "latency_us": [[0, 10], [10, 0]]})
    data.bandwidth = np.array([[np.nan, 5e6], [5e6, np.nan]])  # (probe data built in code, not read from a file)
    with pytest.raises(ProbeFileError, match="is 5e[+]06 Gbit/s, more than 1 Pbit/s"):
        validate(data)
    lat, bw = tmp_path / "lat.csv", tmp_path / "bw.csv"
    np.savetxt(lat, np.where(np.eye(3, dtype=bool), 0.0, 50.0), delimiter=",")
    np.savetxt(bw, np.where(np.eye(3, dtype=bool), 0.0, 9.999e-10), delimiter=",")
    with pytest.raises(ProbeFileError, match=r"is 9\.999e-10 Gbit/s, less than 1 bit/s: wrong --bandwidth-unit \(bandwidth_unit\)[?]$"):
        load_input(lat, kind="latency", unit="us", bandwidth=bw)


@pytest.mark.parametrize("up, msg", [(5e-320, "less than 1 bit/s"), (0.1, "less than 1 bit/s"),
                                     (1e300, "more than 1 Pbit/s")])
def test_uplinks_beyond_any_network_are_refused(up, msg):
    """An uplink of 5e-320 B/s crashed plink order and schedule ('internal error: ValueError'); 0.1 B/s was
    priced 1310720000 s; 1e300 B/s was taken (outside-in check)."""
    from plink.data.probefile import from_dict

    doc = {"format": "plink-probe", "version": 1, "hosts": ["a", "b", "c", "d"],
           "latency_us": [[0, 10, 90, 90], [10, 0, 90, 90], [90, 90, 0, 10], [90, 90, 10, 0]],
           "uplinks": [{"hosts": [0, 1], "up_bps": up, "down_bps": 1e8}, {"hosts": [2, 3], "up_bps": 1e8, "down_bps": 1e8}]}
    with pytest.raises(ProbeFileError, match=rf"uplinks\[0\]\.up_bps is .* bytes/s: {msg}"):
        from_dict(doc)
    doc["uplinks"][0]["up_bps"] = 1e8
    assert from_dict(doc).uplinks[0].up_bps == 1e8


def test_a_unit_per_second_in_a_file_name_is_one_word(tmp_path):
    """'tput_Mbit_s.csv' read with --kind bandwidth warned 'the file name says s, a latency unit', even with
    --unit Gbit/s given for 'bw_Gbit_s.csv' (outside-in check)."""
    from plink.data.inputs import _name_unit

    assert _name_unit("tput_Mbit_s.csv") == ("bandwidth", "Mbit/s", "Mbit_s")
    assert _name_unit("x_KiB_s.csv") == ("bandwidth", "KiB/s", "KiB_s")
    assert _name_unit("rtt_s_frame001.csv") == ("latency", "s", "s")  # (seconds alone still)
    path = tmp_path / "bw_Gbit_s.csv"
    np.savetxt(path, np.where(np.eye(4, dtype=bool), 0.0, 10.0), delimiter=",")
    got = load_input(path, kind="bandwidth", unit="Gbit/s")
    assert not any("file name says" in w for w in got.warnings), got.warnings
    got = load_input(path, kind="bandwidth", unit="Mbit/s")
    assert any("the file name says Gbit_s, but it was read with --unit Mbit/s" in w for w in got.warnings), got.warnings


def test_one_rule_for_which_names_are_one_host():
    """Every reader matches hosts by ``host_key`` (case ignored): the helpers behind groups, orders,
    schedules, stats and pictures."""
    from plink.data.inputs import host_key, host_positions, hosts_not_in

    assert host_key("VM027") == host_key("vm027") != host_key("vm028")
    assert host_positions(["a", "VM027"])["vm027"] == 1
    assert hosts_not_in(["vm1", "VM2", "x"], ["VM1", "vm2"]) == ["x"]
    assert hosts_not_in([], ["a"]) == [] and hosts_not_in(["b", "a"], []) == ["b", "a"]


def test_unit_errors_of_the_library_name_its_parameters(tmp_path):
    """plink.load(unit=...) errors named the command's flags alone ('pass --kind bandwidth', 'wrong --unit
    or --kind?'); they name the parameters beside them, as '--jobs (jobs)' does. A wrong --bandwidth-unit
    said 'pass --kind latency', which is no fix for the bandwidth matrix's unit."""
    import plink

    m = tmp_path / "m.csv"
    m.write_text("0,2e6\n2e6,0\n")
    for kw, msg in ((dict(unit="Gbit/s"), r"\(a bandwidth unit: pass --kind \(kind\) bandwidth\)$"),
                    (dict(unit="ms", kind="bandwidth"), r"\(a latency unit: pass --kind \(kind\) latency\)$"),
                    (dict(unit="s"), r"more than one day: wrong --unit \(unit\) or --kind \(kind\)\?$")):
        with pytest.raises(ProbeFileError, match=msg):
            plink.load(m, **kw)
    small = tmp_path / "small.csv"
    small.write_text("0,20\n20,0\n")
    with pytest.raises(ProbeFileError, match=r"--bandwidth-matrix \(bandwidth\) adds bandwidth"):
        plink.load(small, kind="bandwidth", bandwidth=small)
    src = tmp_path / "dc.json"
    plink.simulate_datacenter(racks=2, hosts_per_rack=2, seed=0).save(src)
    with pytest.raises(OptionError, match=r"--kind \(kind\) and --unit \(unit\) describe plain matrices"):
        plink.load(src, unit="ms")
    with pytest.raises(ProbeFileError, match=r"'ms' is not a bandwidth unit \(use [^)]*\)$"):
        load_input(small, bandwidth=small, bandwidth_unit="ms")


def test_load_errors_name_load_s_own_parameters(tmp_path):
    """plink.load(probe.json, hosts_file=...) said '--hosts names the hosts of a plain matrix' (no
    parameter), a bandwidth matrix out of range said 'wrong --bandwidth-unit (bandwidth_unit)?' and a
    host list over the cap 'raise the cap with --max-hosts': load has neither, nor do plink order, group,
    show or schedule. Each now names what its caller can change; load_input's own messages name its own."""
    import plink

    src = tmp_path / "dc.json"
    plink.simulate_datacenter(racks=2, hosts_per_rack=2, seed=0).save(src)
    names = tmp_path / "hosts.txt"
    names.write_text("a\nb\nc\nd\n")
    with pytest.raises(OptionError) as exc:
        plink.load(src, hosts_file=names)
    assert str(exc.value) == f"{src}: --hosts (hosts_file) names the hosts of a plain matrix; a probe file names its own"
    with pytest.raises(OptionError, match=r": --hosts \(hosts\) names the hosts"):
        load_input(src, hosts=names)
    m, bw = tmp_path / "m.csv", tmp_path / "bw.csv"
    m.write_text("0,20\n20,0\n")
    bw.write_text("0,5e9\n5e9,0\n")  # (5e9 Gbit/s: bits per second read as Gbit/s)
    with pytest.raises(ProbeFileError) as exc:
        plink.load(m, bandwidth=bw)
    assert str(exc.value).endswith(": wrong unit (load reads the bandwidth matrix in Gbit/s; "
                                   "plink.data.inputs.load_input takes its bandwidth_unit)?")
    with pytest.raises(ProbeFileError, match=r": wrong --bandwidth-unit \(bandwidth_unit\)\?$"):
        load_input(m, bandwidth=bw)
    big = tmp_path / "big.txt"
    big.write_text("h[0-30000]\n")
    for call in (lambda: plink.load(m, hosts_file=big), lambda: load_input(m, hosts=big)):
        with pytest.raises(ProbeFileError) as exc:
            call()
        assert str(exc.value) == f"{big}:1: 'h[0-30000]' takes the host list over 20000 hosts (more than a matrix takes)"
