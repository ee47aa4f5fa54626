"""plink schedule / plink verify on the command line."""

import json

import numpy as np

import pytest

from plink.cli import main
from plink.data.simulate import simulate_datacenter


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture()
def dc(tmp_path):
    path = tmp_path / "dc.json"
    simulate_datacenter(racks=3, hosts_per_rack=3, bandwidth=True, seed=1).save(path)
    return path


def test_verify_against_a_probe_of_other_hosts_with_bandwidths(tmp_path, dc, capsys):
    """A probe with pair bandwidths over other hosts met the plan's matrices before the host check:
    "internal error: ValueError: operands could not be broadcast together"."""
    out = tmp_path / "s.json"
    assert run(["schedule", str(dc), "--size", "1MiB", "-o", str(out)], capsys)[0] == 0
    other = tmp_path / "b6.json"
    simulate_datacenter(racks=2, hosts_per_rack=3, bandwidth=True, seed=0).save(other)
    code, stdout, err = run(["verify", str(out), str(other)], capsys)
    assert code == 1 and err.strip() == ("plink: error: the probe file's hosts differ from the schedule's: 3 of "
                                         "the schedule's not in the probe ('vm006', 'vm007', 'vm008')")


def test_schedule_and_verify(tmp_path, dc, capsys):
    out = tmp_path / "s.json"
    code, stdout, err = run(["schedule", str(dc), "--size", "1MiB", "-o", str(out), "--json"], capsys)
    assert code == 0, err
    s = json.loads(stdout)
    assert s["verified"] is True and s["rounds"] == 4 and s["chunks"] == 16 and s["groups"] == 3
    assert s["bytes_cross_group"] == 2 * 2 * 1024**2
    assert s["predicted"]["2lha"]["time_us"] < s["predicted"]["ps"]["time_us"]
    code, stdout, err = run(["verify", str(out), str(dc)], capsys)
    assert code == 0 and "verified" in stdout and "flat ring" in stdout  # the report is verify's output
    # which ring the baseline is, and the rack-contiguous one beside it
    contiguous = s["predicted"]["ring_contiguous"]["time_us"]
    assert s["predicted"]["ring"]["time_us"] <= contiguous
    assert ("note: flat ring: the ring plink order's search finds on these links; the ring rack by rack over "
            "the racks priced: ") in " ".join(stdout.split())

    compact = tmp_path / "c.json"
    code, _, err = run(["schedule", str(dc), "--size", "1MiB", "--chunk", "256KiB", "--compact",
                        "-o", str(compact)], capsys)
    assert code == 0 and "4 chunks" in err
    assert json.loads(compact.read_text())["form"] == "compact"
    code, stdout, _ = run(["verify", str(compact), "--json"], capsys)
    assert code == 0 and json.loads(stdout)["verified"] is True


def test_verify_rejects_a_broken_file(tmp_path, dc, capsys):
    out = tmp_path / "s.json"
    run(["schedule", str(dc), "--size", "128KiB", "-o", str(out)], capsys)
    doc = json.loads(out.read_text())
    # drop the first SendTo
    first = next(i for i, a in enumerate(doc["actions"]) if a[2] == "send")
    doc["actions"][first][2] = "fetch"
    doc["actions"][first][3] = []
    out.write_text(json.dumps(doc))
    code, _, err = run(["verify", str(out)], capsys)
    assert code == 1
    assert "invalid schedule" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args,msg", [
    (["--chunk", "0"], "chunk size must be > 0"),
    (["--size", "0"], "buffer size must be > 0"),
    (["--size", "1KiB"], "larger than the buffer (1024 B): give --chunk 1024B or less"),
])
def test_bad_input(tmp_path, dc, capsys, args, msg):
    """Sizes out of range are usage errors (exit 2), as every option's range is."""
    argv = ["schedule", str(dc), "--size", "1MiB", "-o", str(tmp_path / "x.json")]
    argv[3:4] = [argv[3]]
    code, _, err = run(argv + args, capsys)
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


def test_groups_must_cover_hosts(tmp_path, dc, capsys):
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"format": "plink-groups", "version": 1, "hosts": ["vm000", "vm001"], "labels": [0, 1]}))
    code, _, err = run(["schedule", str(dc), "--groups", str(g), "--size", "1MiB", "-o", str(tmp_path / "x")],
                       capsys)
    assert code == 1 and "lacks 7 host(s) of the probe file" in err


def test_groups_file_is_used(tmp_path, dc, capsys):
    from plink.data.groupfile import Groups
    from plink.data.probefile import load

    names = load(dc).names
    Groups(names, [i % 2 for i in range(len(names))]).save(tmp_path / "g.json")
    code, stdout, _ = run(["schedule", str(dc), "--groups", str(tmp_path / "g.json"), "--size", "1MiB",
                           "-o", str(tmp_path / "s.json"), "--json"], capsys)
    assert code == 0 and json.loads(stdout)["groups"] == 2


def test_groups_file_may_name_more_hosts(tmp_path, dc, capsys):
    """A rack map of the whole site: hosts the probe lacks (and a group of only those) are
    dropped; the schedule is the one of the same groups without them."""
    from plink.data.groupfile import Groups
    from plink.data.probefile import load

    names = load(dc).names
    Groups(names, [i % 2 for i in range(len(names))]).save(tmp_path / "g.json")
    Groups(["elsewhere"] + names + ["far"], [1] + [2 * (i % 2) for i in range(len(names))] + [1]).save(tmp_path / "site.json")
    got = {}
    for g in ("g", "site"):
        code, stdout, err = run(["schedule", str(dc), "--groups", str(tmp_path / f"{g}.json"), "--size", "1MiB",
                                 "-o", str(tmp_path / f"s-{g}.json"), "--json"], capsys)
        assert code == 0, err
        assert ("names 2 host(s) not in the probe ('elsewhere', 'far'): left out of the groups" in err) == (g == "site")
        got[g] = json.loads(stdout)
    assert got["site"]["groups"] == 2 and got["site"]["predicted"] == got["g"]["predicted"]
    assert json.loads((tmp_path / "s-site.json").read_text()) == json.loads((tmp_path / "s-g.json").read_text())


def test_large_schedules_are_written_compact(tmp_path, dc, capsys, monkeypatch):
    import plink.schedule.verify

    monkeypatch.setattr(plink.schedule.verify, "VERIFY_LIMIT", 100)
    out = tmp_path / "s.json"
    code, stdout, _ = run(["schedule", str(dc), "--size", "1MiB", "-o", str(out), "--json"], capsys)
    assert code == 0
    assert json.loads(stdout)["form"] == "compact" == json.loads(out.read_text())["form"]


def test_schedule_json_and_stdout_schedule_are_refused(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "p.json"
    simulate_datacenter(racks=2, hosts_per_rack=3, seed=1).save(path)
    r = subprocess.run([sys.executable, "-m", "plink", "schedule", str(path), "--size", "1MiB", "-o", "-", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "both write to stdout" in r.stderr and r.stdout == ""


def test_a_host_without_measured_pairs_is_named_as_group_names_it(tmp_path, capsys):
    """schedule and group give the same message for a host that was never measured: the file and the host."""
    n = 6
    rows = [["" if (i == 4 or j == 4) and i != j else ("0" if i == j else "10") for j in range(n)] for i in range(n)]
    csv = tmp_path / "m.csv"
    csv.write_text("".join(",".join(r) + "\n" for r in rows))
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("".join(f"h{i:02d}\n" for i in range(n)))
    errs = []
    for argv in (["schedule", str(csv), "--hosts", str(hosts), "--unit", "us", "--size", "1MiB",
                  "-o", str(tmp_path / "s.json")],
                 ["group", str(csv), "--hosts", str(hosts), "--unit", "us"]):
        code, _, err = run(argv, capsys)
        lines = [ln for ln in err.strip().splitlines() if not ln.startswith("plink: note")]
        assert code == 1 and len(lines) == 1, err
        errs.append(lines[0])
    assert errs[0] == errs[1] == f"plink: error: {csv}: host h04 has 0 measured pairs: probe it again or leave it out"


def test_schedule_and_verify_refuse_a_matrix_with_nothing_measured(tmp_path, capsys):
    """A 3-host matrix of NaN (nothing measured) was planned and its time predicted ("ring 1.122 ms",
    exit 0), and plink verify priced a schedule against it; 4 hosts or more were refused already."""
    nan = tmp_path / "nan_us.csv"
    nan.write_text("a,b,c\nnan,nan,nan\nnan,nan,nan\nnan,nan,nan\n")
    code, _, err = run(["schedule", str(nan), "--size", "1MiB", "-o", str(tmp_path / "s.json")], capsys)
    assert code == 1 and err.strip().splitlines()[-1] == (f"plink: error: {nan}: host a has 0 measured pairs: "
                                                           "probe it again or leave it out"), err
    assert not (tmp_path / "s.json").exists()
    ok = tmp_path / "ok_us.csv"
    ok.write_text("a,b,c\n0,5,9\n5,0,7\n9,7,0\n")
    assert run(["schedule", str(ok), "--size", "1MiB", "-o", str(tmp_path / "s.json")], capsys)[0] == 0
    code, out, err = run(["verify", str(tmp_path / "s.json"), str(nan)], capsys)
    assert code == 1 and out == "" and err.strip().splitlines()[-1] == (
        f"plink: error: {nan}: host a has 0 measured pairs: probe it again or leave it out"), err
    assert run(["verify", str(tmp_path / "s.json"), str(ok)], capsys)[0] == 0


def test_a_host_without_bandwidth_is_named_with_the_way_out(tmp_path, capsys):
    """'bandwidth capacities: a host has no measured bandwidth' named neither the host nor --capacity."""
    import numpy as np

    p = simulate_datacenter(racks=2, hosts_per_rack=3, bandwidth=True, seed=1)
    p.bandwidth[2, :] = p.bandwidth[:, 2] = np.nan
    f = tmp_path / "nb.json"
    p.save(f)
    code, _, err = run(["schedule", str(f), "--size", "1MiB", "-o", str(tmp_path / "s.json")], capsys)
    assert code == 1 and f"(host {p.names[2]}): probe its bandwidth again, or plan by group sizes with " \
                          "--capacity cardinality" in err, err
    assert run(["schedule", str(f), "--size", "1MiB", "-o", str(tmp_path / "s.json"), "--capacity", "cardinality"],
               capsys)[0] == 0


def test_unmeasured_pairs_priced_conservatively_are_said(tmp_path, capsys):
    """With --capacity cardinality (and in plink verify) a host without bandwidth was priced at the smallest
    measured bandwidth without a word (2.8 ms against 1.4 ms for the complete probe). Priced on shared
    links, such a host's NIC is the median host's, and the note says so."""
    import numpy as np

    p = simulate_datacenter(racks=2, hosts_per_rack=3, bandwidth=True, seed=1)
    p.bandwidth[2, :] = p.bandwidth[:, 2] = np.nan
    f = tmp_path / "nb.json"
    p.save(f)
    s = tmp_path / "s.json"
    code, out, err = run(["schedule", str(f), "--size", "1MiB", "-o", str(s), "--capacity", "cardinality", "--json"],
                         capsys)
    assert code == 0 and json.loads(out)["note_unmeasured"] == ("predicted times price 1 host without a measured "
                                                                "bandwidth at the median host NIC"), err
    code, out, _ = run(["verify", str(s), str(f)], capsys)
    assert code == 0 and "note: predicted times price 1 host without a measured bandwidth" in " ".join(out.split())
    full = tmp_path / "full.json"
    simulate_datacenter(racks=2, hosts_per_rack=3, bandwidth=True, seed=1).save(full)
    code, out, _ = run(["verify", str(s), str(full), "--json"], capsys)
    assert code == 0 and "note_unmeasured" not in json.loads(out)


def test_a_bandwidth_matrix_schedule_says_no_latency_was_measured(tmp_path, capsys):
    import numpy as np

    bw = np.array([[0, 10, 1, 1], [10, 0, 1, 1], [1, 1, 0, 10], [1, 1, 10, 0]], dtype=float)
    path = tmp_path / "bw.csv"
    path.write_text("a,b,c,d\n" + "\n".join(",".join(f"{v:g}" for v in row) for row in bw) + "\n")
    code, out, err = run(["schedule", str(path), "--kind", "bandwidth", "--unit", "Gbit/s", "--size", "1MiB",
                          "-o", str(tmp_path / "s.json"), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    from plink.pricing import NO_LATENCY_NOTE

    assert NO_LATENCY_NOTE in doc["notes"]


def test_verify_refuses_a_schedule_too_big_for_the_memory_free(tmp_path, capsys, monkeypatch):
    """plink verify of 16 GiB in 64 KiB chunks (the schedule's note said to run it) ran out of memory after
    minutes: 'plink: internal error: MemoryError'. It now says what it would need, before it starts."""
    import plink.schedule.verify as verify_mod

    dc = tmp_path / "dc.json"
    simulate_datacenter(racks=2, hosts_per_rack=2, seed=1).save(dc)
    s = tmp_path / "s.json"
    code, _, err = run(["schedule", str(dc), "--size", "1MiB", "-o", str(s)], capsys)
    assert code == 0, err
    monkeypatch.setattr(verify_mod, "_available_memory", lambda: 1000)
    code, out, err = run(["verify", str(s), str(dc)], capsys)
    assert code == 1 and out == ""
    assert err.startswith("plink: error: verifying about 304 actions needs about 222.7 KiB of memory, "
                          "1000 B is available: verify the schedule of a smaller --size"), err
    monkeypatch.setattr(verify_mod, "_available_memory", lambda: None)  # not known: verify as before
    assert run(["verify", str(s), str(dc)], capsys)[0] == 0


def test_running_out_of_memory_is_a_clear_error(tmp_path, capsys, monkeypatch):
    import plink.schedule.verify as verify_mod

    dc = tmp_path / "dc.json"
    simulate_datacenter(racks=2, hosts_per_rack=2, seed=1).save(dc)
    s = tmp_path / "s.json"
    assert run(["schedule", str(dc), "--size", "1MiB", "-o", str(s)], capsys)[0] == 0

    def no_memory(*a, **k):
        raise MemoryError()

    monkeypatch.setattr(verify_mod, "summarize", no_memory)
    code, _, err = run(["verify", str(s), str(dc)], capsys)
    assert code == 1 and err == "plink: error: out of memory (the input needs more than this machine has free)\n"


def test_verify_without_a_probe_says_where_the_times_come_from(tmp_path, dc, capsys):
    """Without PROBEFILE every predicted time read '-' with no word why (and '1 chunks')."""
    s = tmp_path / "s.json"
    assert run(["schedule", str(dc), "--size", "64KiB", "-o", str(s)], capsys)[0] == 0
    code, out, _ = run(["verify", str(s)], capsys)
    assert code == 0 and "note: no probe file: no predicted times (plink verify SCHEDULE PROBEFILE)" in out
    assert "; 1 chunk of 64 KiB over 64 KiB" in out
    code, out, _ = run(["verify", str(s), "--json"], capsys)  # --json too (only the text said it)
    assert code == 0 and json.loads(out)["notes"] == ["no probe file: no predicted times (plink verify SCHEDULE "
                                                      "PROBEFILE)"]
    code, out, _ = run(["verify", str(s), str(dc)], capsys)
    assert code == 0 and "no probe file" not in out
    # a bandwidth matrix sets the NICs: --assume-bandwidth is ignored, and now said so
    code, out, _ = run(["verify", str(s), str(dc), "--assume-bandwidth", "1", "--json"], capsys)
    assert code == 0 and any(n.startswith("--assume-bandwidth 1 ignored") for n in json.loads(out)["notes"])


def test_a_schedule_over_other_groups_than_the_measured_racks_says_what_crosses_them(tmp_path, capsys):
    """Priced on the probe's measured racks, a schedule over other groups showed the cross-group bytes of
    its own groups (96 MiB for a shuffled rack map, where 349 MiB crossed the racks), with no word."""
    import numpy as np

    from plink.data.groupfile import Groups
    from plink.data.probefile import Uplink

    p = simulate_datacenter(racks=2, hosts_per_rack=4, bandwidth=True, seed=1)
    racks = np.array([lab[-1] for lab in p.truth.labels])
    racks = np.unique(racks, return_inverse=True)[1]
    p.uplinks = [Uplink(tuple(np.flatnonzero(racks == g).tolist()), 1e9, 1e9) for g in (0, 1)]
    f = tmp_path / "p.json"
    p.save(f)
    mixed = tmp_path / "mixed.json"
    Groups(hosts=p.names, labels=np.arange(8) % 2).save(mixed)
    same = tmp_path / "racks.json"
    Groups(hosts=p.names, labels=racks).save(same)
    code, out, err = run(["schedule", str(f), "--groups", str(mixed), "--size", "1MiB", "-o",
                          str(tmp_path / "s.json"), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["bytes_over_uplinks"] > doc["bytes_cross_group"]
    assert any(n.startswith("priced on the 2 racks whose uplinks the probe measured, not on the schedule's 2 groups")
               for n in doc["notes"]), doc["notes"]
    code, out, err = run(["schedule", str(f), "--groups", str(same), "--size", "1MiB", "-o",
                          str(tmp_path / "s2.json"), "--json"], capsys)
    assert code == 0 and "bytes_over_uplinks" not in json.loads(out), err
    one = tmp_path / "one.json"
    Groups(hosts=p.names, labels=np.zeros(8, int)).save(one)
    code, out, err = run(["schedule", str(f), "--groups", str(one), "--size", "1MiB", "-o",
                          str(tmp_path / "s3.json"), "--json"], capsys)
    # one schedule group, but the measured uplinks are priced: the model says so (it said 'host NICs')
    assert code == 0 and json.loads(out)["model"] == "shared links: host NICs and group uplinks", err


def test_a_size_that_does_not_round_is_shown_exactly(tmp_path, dc, capsys):
    code, out, err = run(["schedule", str(dc), "--size", "65537", "-o", str(tmp_path / "s.json")], capsys)
    assert code == 0 and "2 chunks of 64 KiB over 64 KiB (65537 B)" in " ".join((out + err).split()), err


def test_the_rack_by_rack_ring_is_noted_only_where_it_is_another_ring(tmp_path, dc, capsys):
    """With one group the 'ring rack by rack over the racks priced' note repeated the flat ring's figure."""
    from plink.data.groupfile import Groups
    from plink.data.probefile import load_json

    probe = load_json(dc)
    one = tmp_path / "one.json"
    Groups(list(probe.names), np.zeros(probe.n, dtype=int)).save(one)
    code, stdout, err = run(["schedule", str(dc), "--size", "1MiB", "--groups", str(one), "-o",
                             str(tmp_path / "s.json")], capsys)
    assert code == 0, err
    text = " ".join((stdout + err).split())
    assert "flat ring" in text and "the ring rack by rack" not in text
