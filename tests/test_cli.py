"""The CLI end to end, in a subprocess: exit codes and one-line errors."""

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="120")
    return subprocess.run(
        [sys.executable, "-m", "plink", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def assert_one_line_error(proc, code, fragment):
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    # notes about how the input was read ("read in us, the default unit") may come first: they explain it
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("plink: note: ")]
    assert len(lines) == 1, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    d = tmp_path_factory.mktemp("dc")
    path = d / "dc.json"
    proc = run("simulate", "--racks", "4", "--hosts-per-rack", "4", "--seed", "3", "-o", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


def test_simulate_then_order(dc, tmp_path):
    out = tmp_path / "hosts.txt"
    proc = run("order", str(dc), "--algo", "ring", "--time-limit", "0.5", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    hosts = out.read_text().split()
    assert sorted(hosts) == sorted(h["name"] for h in json.loads(dc.read_text())["hosts"])
    assert "plink order" in proc.stderr and "median of 500 random" in proc.stderr
    # a latency-only probe: the speedups rest on assumed NICs and uplinks, so the report gives
    # them as a span from non-blocking uplinks / the latencies alone to the oversubscribed model
    text = " ".join(proc.stderr.split())
    assert "'plink speedup' spans capacities that were not measured" in text
    assert "with rack uplinks that never bind" in text and "by the measured latencies alone" in text
    # the title is printed on its own, not wrapped to the table's width (which split "4 | group(s)")
    assert re.search(r"latency; 4 group\(s\)", proc.stderr)
    row = next(line for line in proc.stderr.splitlines() if "median of 500 random" in line)
    lo, hi = (float(v) for v in row.split()[-1].lstrip("~").rstrip("x").split("-"))
    assert 1 <= lo < hi


def test_order_json_report_and_json_file(dc, tmp_path):
    out = tmp_path / "order.json"
    proc = run("order", str(dc), "--algo", "hd", "--time-limit", "0.3", "--json", "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["algo"] == "hd"
    assert report["cost_plink"] <= report["cost_input"]
    assert report["speedup_vs_random"] >= 1.0
    doc = json.loads(out.read_text())
    assert doc["format"] == "plink-order"
    assert [h["rank"] for h in doc["hosts"]] == list(range(16))


def test_order_to_stdout_when_no_output(dc):
    proc = run("order", str(dc), "--time-limit", "0.2")
    assert proc.returncode == 0
    assert len(proc.stdout.split()) == 16


def test_simulate_to_stdout_is_a_probe_file():
    proc = run("simulate", "--racks", "2", "--hosts-per-rack", "2")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["format"] == "plink-probe"


def test_help_shows_examples():
    proc = run("order", "--help")
    assert proc.returncode == 0 and "plink order dc.json --algo ring" in proc.stdout
    proc = run("--help")
    assert "plink simulate" in proc.stdout


@pytest.mark.parametrize(
    "args, code, fragment",
    [
        (["order"], 2, "Missing argument"),
        (["order", "{dc}", "--algo", "star"], 2, "'star' is not one of"),
        (["order", "{dc}", "--time-limit", "abc"], 2, "not a valid float"),
        (["frobnicate"], 2, "No such command"),
        (["order", "{dc}", "--time-limit", "0"], 2, "time limit must be > 0 and at most 604800 seconds (a week), got 0.0"),
        (["order", "{dc}", "--time-limit", "inf"], 2, "time limit must be > 0 and at most 604800 seconds (a week), got inf"),
        (["order", "{dc}", "--time-limit", "1e308"], 2, "time limit must be > 0 and at most 604800 seconds (a week), got 1e+308"),
        # a value out of range is a usage error (2) whether click or plink checks it (it was 1)
        (["order", "{dc}", "--time-limit", "nan"], 2, "time limit must be > 0 and at most 604800 seconds (a week), got nan"),
        (["order", "{dc}", "--jobs", "-3"], 2, "--jobs (jobs) must be >= 0 (0: all cores), got -3"),
        (["order", "{dc}", "--smt-time", "604801"], 2, "--smt-time (smt_time) must be >= 0 and at most 604800 seconds (a week), got 604801.0"),
        (["order", "{dc}", "--slots", "5000", "--format", "openmpi"], 2, "must be 1..4096 (processes per host), got 5000"),
        (["watch", "{tmp}/st", "--probe-file", "{dc}", "--slots", "5000"], 2, "5000 is not in the range 1<=x<=4096"),
        (["order", "{dc}", "--size", "12 parsecs"], 2, "invalid size"),
        # a plain number of bytes is whole: 1.5 was read as 2 bytes
        (["order", "{dc}", "--size", "1.5"], 2, "invalid size '1.5': a number of bytes must be whole"),
        (["order", "{dc}", "--algo", "bcube", "--base", "3"], 2, "power of 3"),  # a --base that does not fit N (was 1)
        (["order", "{dc}", "--algo", "bcube", "--base", "1"], 2, "BCube base must be an integer >= 2, got 1"),
        (["group", "{dc}", "--groups", "0"], 2, "--groups must be a positive integer, got 0"),
        (["order", "{tmp}/absent.json"], 1, "no such file"),
        (["order", "{tmp}/garbage.json"], 1, "invalid JSON"),
        (["order", "{tmp}/wrong.json"], 1, "not a plink probe file"),
        (["order", "{tmp}/m.csv"], 1, "not square"),
        (["order", "{tmp}"], 2, "is a directory"),
        (["simulate", "--racks", "0"], 2, "racks must be a positive integer"),
        (["simulate", "--racks", "1", "--hosts-per-rack", "1"], 2, "a datacenter needs at least 2 hosts"),  # was 1
        (["simulate", "--missing", "1.5"], 2, "--missing (missing_frac) must be between 0 and 1, got 1.5"),
        # NaN capacities were written and failed as 'internal error' (not JSON compliant)
        (["simulate", "--oversubscription", "nan", "--bandwidth"], 2, "oversubscription must be between 1 and 1000, got nan"),
        (["simulate", "--oversubscription", "1e308", "--bandwidth"], 2, "oversubscription must be between 1 and 1000"),
        (["simulate", "--host-gbps", "nan", "--bandwidth"], 2, "host-gbps must be a finite number > 0, got nan"),
        (["simulate", "--height-us", "1e300", "-o", "{tmp}/h.json"], 1, "above what plink reads (one day)"),
        (["simulate", "--seed", "-1"], 2, "-1 is not in the range 0<=x<=4294967295"),
        (["group", "{dc}", "--seed", "-1"], 2, "-1 is not in the range 0<=x<=4294967295"),
        # an option of the other method was ignored without a word
        (["group", "{dc}", "--elasticity", "1.5"], 2, "--elasticity applies to --method balanced (this is --method hierarchy)"),
        (["group", "{dc}", "--method", "balanced", "--levels", "2"], 2, "--levels applies to --method hierarchy"),
        (["simulate", "-o", "{tmp}/no/such/dir.json"], 2, "no/such/dir.json: directory "),
        (["order", "{dc}", "-o", "{tmp}/no/x.txt"], 2, "no/x.txt: directory "),
        # both would write to stdout: one of them would be lost
        (["order", "{dc}", "--json", "-o", "-"], 2, "--json prints the report (its 'hosts' are the order) on stdout, "
                                                    "so -o cannot write there too"),
        (["simulate", "--json"], 2, "--json prints a summary on stdout, so the probe file needs -o"),
        (["simulate", "--json", "-o", "-"], 2, "the probe file needs -o"),
    ],
)
def test_bad_input_is_one_line(dc, tmp_path, args, code, fragment):
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "wrong.json").write_text('{"format": "something-else"}')
    (tmp_path / "m.csv").write_text("0,1,2\n1,0\n")
    args = [a.format(dc=dc, tmp=tmp_path) for a in args]
    assert_one_line_error(run(*args), code, fragment)


def test_debug_shows_traceback(tmp_path):
    proc = run("--debug", "order", str(tmp_path / "absent.json"))
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr


def test_version():
    proc = run("--version")
    assert proc.returncode == 0 and "plink" in proc.stdout


def test_debug_flag_after_the_subcommand_is_the_global_flag(tmp_path):
    import subprocess
    import sys

    env = dict(__import__("os").environ)
    r = subprocess.run([sys.executable, "-m", "plink", "order", str(tmp_path / "missing.json"), "--debug"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0
    assert "No such option" not in r.stderr and "NoSuchOption" not in r.stderr
    assert "missing.json" in r.stderr  # the real error, with its traceback (--debug)


def test_bare_plink_prints_its_help_not_an_error_line():
    p = run()
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("Usage: plink [OPTIONS] COMMAND [ARGS]...\n") and "error:" not in p.stderr
    assert "  order " in p.stderr and "  probe " in p.stderr  # the commands are listed


def test_order_json_without_output_is_the_report_with_the_order(dc):
    proc = run("order", str(dc), "--time-limit", "0.2", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # stdout is one JSON document, the order in it
    assert sorted(report["hosts"]) == sorted(h["name"] for h in json.loads(dc.read_text())["hosts"])


def test_missing_dependency_is_a_one_line_error(dc, tmp_path):
    """A dependency missing from the environment (here scipy, hidden by a
    meta-path hook) is named in one line, not reported as a plink bug."""
    hook = tmp_path / "sitecustomize.py"
    hook.write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'scipy' or name.startswith('scipy.'):\n"
        "            raise ModuleNotFoundError(\"No module named 'scipy'\", name='scipy')\n"
        "sys.meta_path.insert(0, _Hide())\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    proc = subprocess.run([sys.executable, "-m", "plink", "group", str(dc)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert_one_line_error(proc, 1, "the Python package 'scipy' is missing from this environment")
    assert "internal error" not in proc.stderr


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_ctrl_c_during_the_search_keeps_the_best_order_so_far(tmp_path, sig):
    """Ctrl-C (SIGINT) during a long search: the order found so far is written, the report says
    it was interrupted, exit 130. SIGTERM (Slurm, Kubernetes, timeout) the same, exit 143: it wrote
    nothing."""
    import signal
    import time

    code, said = (130, "interrupted") if sig == "SIGINT" else (143, "terminated (SIGTERM)")

    dc = tmp_path / "dc.json"
    assert run("simulate", "--racks", "6", "--hosts-per-rack", "8", "--seed", "2", "-o", str(dc)).returncode == 0
    out = tmp_path / "hosts.txt"
    env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS="120")
    for wait in (8, 20, 45):  # imports, groups, starts, then the annealing: on a loaded machine, later
        # SIGINT at its default in the child: a test run started in the background of a
        # non-interactive shell (`pytest &`, nohup) ignores SIGINT, and a child inherits that
        proc = subprocess.Popen([sys.executable, "-m", "plink", "order", str(dc), "--time-limit", "600",
                                 "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(wait)
        with open(f"/proc/{proc.pid}/status") as status:  # what the child does with SIGINT, for the message below
            ignored = [ln for ln in status if ln.startswith(("SigIgn", "SigCgt"))]
        proc.send_signal(getattr(signal, sig))
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"plink order ran on 120 s after SIGINT (sent after {wait} s; {' '.join(ignored).split()}); "
                        f"stderr: {err[-1500:]}")
        if err.strip() not in ("plink: interrupted", "plink: aborted", "plink: terminated (SIGTERM)"):
            break  # (those: stopped before the search began)
    assert proc.returncode == code, err
    assert f"plink: {said} after" in err and "the order is the best found so far" in err
    assert "Traceback" not in err
    hosts = out.read_text().split()
    assert sorted(hosts) == sorted(h["name"] for h in json.loads(dc.read_text())["hosts"])


def test_ctrl_c_while_python_loads_plink_is_one_line_exit_130(monkeypatch, capsys):
    """Loading the CLI takes seconds (tens on a starved machine): a Ctrl-C then printed a traceback
    from inside numpy's imports. The entry point loads the CLI inside a guard."""
    import builtins

    from plink import _entry

    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "plink.cli":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as exc:
        _entry.main()
    assert exc.value.code == 130
    assert capsys.readouterr().err == "plink: interrupted\n"


def test_import_plink_loads_nothing_heavy():
    """``import plink`` loads the public names on first use only (so the guard above covers numpy)."""
    code = ("import sys, plink; heavy = [m for m in ('numpy', 'scipy', 'click') if m in sys.modules]; "
            "from plink import order_hosts, ProbeData; print(heavy, order_hosts.__module__, ProbeData.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.stdout.split() == ["[]", "plink.order", "plink.data.probefile"], out.stderr


@pytest.mark.parametrize("text, nbytes", [("4096", 4096), ("0", 0), ("1e3", 1000), ("1.5KiB", 1536),
                                          ("1.1MiB", 1153434), ("25MB", 25_000_000), (" 2 GiB ", 2 * 1024**3)])
def test_parse_size_units_round_and_plain_bytes_are_whole(text, nbytes):
    from plink.units import parse_size

    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text", ["1.5", "0.4", "2.5b", "-1", "nan", "inf", "1e400", "99999999999999999999GiB", "2PiB"])
def test_parse_size_refuses(text):
    from plink.errors import PlinkError
    from plink.units import parse_size

    with pytest.raises(PlinkError, match="invalid size"):
        parse_size(text)


def test_a_full_stdout_is_a_one_line_error(tmp_path):
    """stdout on a full device (/dev/full): one line, exit 1, not 'internal error' (nor a second
    message from the interpreter's last flush)."""
    import os
    import subprocess
    import sys

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "plink", "simulate", "--racks", "2", "--hosts-per-rack", "3",
                            "-o", "-"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 1
    assert p.stderr.strip().splitlines() == ["plink: error: cannot write the output: No space left on device"]


def test_an_input_file_is_never_the_output(tmp_path, capsys):
    """-o (or --plot) naming a file the command reads, also through a symlink: a usage error before
    any work, the input untouched (plink group dc.json -o dc.json replaced the probe file)."""
    import os

    from plink.cli import main
    from plink.data.simulate import simulate_datacenter

    dc = tmp_path / "dc.json"
    simulate_datacenter(racks=2, hosts_per_rack=3, seed=1).save(dc)
    before = dc.read_bytes()
    os.symlink(dc, tmp_path / "link.json")
    order = tmp_path / "order.json"
    with pytest.raises(SystemExit):
        main(["order", str(dc), "--format", "json", "-o", str(order), "--time-limit", "0.2"])
    capsys.readouterr()
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("a\nb\n")
    for argv, flag, what in [(["group", str(dc), "-o", str(dc)], "-o", "PROBEFILE"),
                             (["group", str(dc), "--plot", str(tmp_path / "link.json")], "--plot", "PROBEFILE"),
                             (["order", str(dc), "-o", str(tmp_path / "link.json")], "-o", "PROBEFILE"),
                             (["schedule", str(dc), "--size", "1MiB", "-o", str(dc)], "-o", "PROBEFILE"),
                             (["show", str(dc), "--plot", str(dc)], "--plot", "PROBEFILE"),
                             (["emit", str(order), "--format", "openmpi", "-o", str(order)], "-o", "ORDERFILE"),
                             (["probe", str(hosts), "-o", str(hosts)], "-o", "HOSTS")]:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2, (argv, err)
        assert f"is the file {what} reads" in err and flag in err and len(err.strip().splitlines()) == 1, err
    assert dc.read_bytes() == before and hosts.read_text() == "a\nb\n"


@pytest.mark.parametrize("cmd", ["group", "show"])
def test_a_picture_on_stdout_is_refused(tmp_path, capsys, cmd):
    from plink.cli import main
    from plink.data.simulate import simulate_datacenter

    dc = tmp_path / "dc.json"
    simulate_datacenter(racks=2, hosts_per_rack=3, seed=1).save(dc)
    for target in ("-", "/dev/stdout"):
        with pytest.raises(SystemExit) as exc:
            main([cmd, str(dc), "--plot", target])
        out, err = capsys.readouterr()
        assert exc.value.code == 2 and "the picture needs a file" in err and out == ""


def test_order_refuses_names_its_file_cannot_hold_before_searching(tmp_path, capsys):
    import json
    import time

    from plink.cli import main
    from plink.data.simulate import simulate_datacenter

    p = simulate_datacenter(racks=2, hosts_per_rack=3, seed=2)
    doc = p.to_dict()
    doc["hosts"][0]["name"] = "node[1-3]"
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc))
    t = time.monotonic()
    with pytest.raises(SystemExit) as exc:
        main(["order", str(f), "-o", str(tmp_path / "o.txt"), "--time-limit", "30"])
    err = capsys.readouterr().err
    assert exc.value.code == 1 and time.monotonic() - t < 10  # before the 30 s search
    assert "host name 'node[1-3]' cannot be written to a plain order file" in err
    assert not (tmp_path / "o.txt").exists()
    with pytest.raises(SystemExit) as exc:
        main(["order", str(f), "--format", "json", "-o", str(tmp_path / "o.json"), "--time-limit", "0.2"])
    assert exc.value.code == 0 and "node[1-3]" in (tmp_path / "o.json").read_text()


def test_hosts_and_bandwidth_matrix_files_are_inputs_too(tmp_path, capsys):
    """The second outside-in check: -o over --hosts or --bandwidth-matrix, -o and --plot on one
    file, a probe's journal over its host list, and watch --hosts inside STATE_DIR."""
    import json

    import numpy as np

    from plink.cli import main
    from plink.data.simulate import simulate_datacenter

    p = simulate_datacenter(racks=2, hosts_per_rack=3, seed=1)
    p.save(tmp_path / "p.json")
    m, n = tmp_path / "m.csv", tmp_path / "n.txt"
    np.savetxt(m, p.latency, delimiter=",")
    n.write_text("".join(f"{h}\n" for h in p.names))
    keep = {f: f.read_bytes() for f in (m, n)}
    journal = tmp_path / "o.json.journal"
    journal.write_text("a.invalid\nb.invalid\n")
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "hosts.txt").write_text(n.read_text())
    cases = [(["order", str(m), "--hosts", str(n), "-o", str(n)], "-o {n} is the file --hosts reads"),
             (["group", str(m), "--hosts", f"{n}", "-o", str(n)], "is the file --hosts reads"),
             (["order", str(tmp_path / "p.json"), "--bandwidth-matrix", str(m), "-o", str(m)],
              "is the file --bandwidth-matrix reads"),
             (["group", str(tmp_path / "p.json"), "-o", str(tmp_path / "x.png"), "--plot", str(tmp_path / "x.png")],
              "-o and --plot name the same file"),
             (["probe", str(journal), "-o", str(tmp_path / "o.json")], "-o's journal"),
             (["watch", str(tmp_path / "st"), "--probe-file", str(m), "--hosts", str(tmp_path / "st" / "hosts.txt")],
              "is one of"),
             (["watch", str(tmp_path / "w"), "--probe-file", str(tmp_path / "p.json"), "--emit",
               f"plain:{tmp_path / 'a.txt'}", "--emit", f"openmpi:{tmp_path / 'a.txt'}"], "name the same file")]
    for argv, msg in cases:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and msg.format(n=n) in err, (argv, err)
    assert {f: f.read_bytes() for f in (m, n)} == keep and journal.exists()
    assert not (tmp_path / "w").exists() or not (tmp_path / "w" / "state.json").exists()
    json.loads((tmp_path / "p.json").read_text())


def test_order_to_a_json_name_writes_the_json_order_file_that_emit_reads(dc, tmp_path):
    # -o order.json without --format: the JSON order file (a plain list under a .json name was written,
    # then refused by plink emit / node-rank as "not a JSON order file")
    out = tmp_path / "order.json"
    proc = run("order", str(dc), "--time-limit", "0.2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["format"] == "plink-order"
    emitted = run("emit", str(out), "--format", "openmpi")
    assert emitted.returncode == 0, emitted.stderr
    assert len([ln for ln in emitted.stdout.splitlines() if ln and not ln.startswith("#")]) == 16
    plain = tmp_path / "order.txt"
    assert run("order", str(dc), "--time-limit", "0.2", "-o", str(plain)).returncode == 0
    assert len(plain.read_text().split()) == 16  # any other name: the plain order file, as before


def test_order_names_a_host_never_measured_which_group_refuses(tmp_path):
    m = tmp_path / "m.csv"
    rows = [[0, 1, 9, 9, 9], [1, 0, 9, 9, 9], [9, 9, 0, 1, 9], [9, 9, 1, 0, 9], [9, 9, 9, 9, 0]]
    rows = [["" if (i == 2 or j == 2) and i != j else str(v) for j, v in enumerate(r)] for i, r in enumerate(rows)]
    m.write_text("\n".join(",".join(r) for r in rows) + "\n")
    assert_one_line_error(run("group", str(m)), 1, f"{m}: host h2 has 0 measured pairs")
    proc = run("order", str(m), "--time-limit", "0.2")  # an order still places it, and says so
    assert proc.returncode == 0, proc.stderr
    assert "1 host(s) without a single measured pair (h2)" in " ".join(proc.stderr.split())


def test_a_probe_with_bandwidths_but_no_latency_says_so(tmp_path):
    sim = tmp_path / "s.json"
    assert run("simulate", "--racks", "2", "--hosts-per-rack", "3", "--seed", "1", "--bandwidth", "-o", str(sim)).returncode == 0
    d = json.loads(sim.read_text())
    d["latency_us"] = [[None] * len(r) for r in d["latency_us"]]
    p = tmp_path / "bw_only.json"
    p.write_text(json.dumps(d))
    shown = run("show", str(p))
    assert shown.returncode == 0, shown.stderr
    assert re.search(r"pairs with a bandwidth +│ +15 of 15", shown.stdout), shown.stdout
    assert json.loads(run("show", str(p), "--json").stdout)["bandwidth_pairs"] == 15
    assert_one_line_error(run("group", str(p)), 1, f"{p}: no latency was measured, only pair bandwidths")
    assert_one_line_error(run("order", str(p), "--algo", "ring"), 1, "no latency was measured, only pair bandwidths")
    d["latency_us"][0][1] = d["latency_us"][1][0] = 50.0  # one latency: the hosts without any are named
    p.write_text(json.dumps(d))
    assert_one_line_error(run("group", str(p)), 1, f"{p}: host vm002 has 0 measured latency pairs")
    # a probe with both: one line, as before
    assert "pairs with a bandwidth" not in run("show", str(sim)).stdout


def test_an_unknown_unit_is_told_the_units_not_every_spelling(tmp_path):
    m = tmp_path / "m.csv"
    m.write_text("0,1,2\n1,0,2\n2,2,0\n")
    proc = run("group", str(m), "--unit", "furlongs")
    assert_one_line_error(proc, 2, "'furlongs' is not a unit plink reads: us, ms, s, ns (latency) or Gbit/s")
    assert "'MS'" not in proc.stderr and "GiB/s" in proc.stderr
    assert_one_line_error(run("order", str(m), "--bandwidth-matrix", str(m), "--bandwidth-unit", "x"), 2,
                          "'x' is not a unit plink reads")


def test_group_of_one_host_says_so(tmp_path):
    """A 1 x 1 matrix: no pair, so no structure; said as such, not as a host to probe again."""
    m = tmp_path / "one.csv"
    m.write_text("5\n")
    proc = run("group", str(m))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == f"plink: error: {m}: one host (h0): no pair to measure; groups need 2 hosts or more"


def test_every_error_has_one_prefix(dc):
    """Usage errors (click's) and input errors (plink's) both start 'plink: error:', so one grep finds
    them; a usage error then points at its own command's --help."""
    usage = run("order", str(dc), "--algo", "foo")
    assert_one_line_error(usage, 2, "Invalid value for '--algo'")
    assert usage.stderr.startswith("plink: error: ") and usage.stderr.rstrip().endswith("(see 'plink order --help')")
    bad = run("group", str(dc) + ".missing")
    assert bad.returncode == 1 and bad.stderr.startswith("plink: error: ")


def test_order_of_a_bandwidth_matrix_says_bandwidth_not_latency(tmp_path):
    m = tmp_path / "bw.csv"
    rows = [[100 if i == j else (25 if i // 3 == j // 3 else 5) for j in range(6)] for i in range(6)]
    m.write_text("\n".join(",".join(str(v) for v in r) for r in rows) + "\n")
    proc = run("order", str(m), "--kind", "bandwidth", "--unit", "Gbit/s", "--time-limit", "0.2", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["model"] == "bandwidth", report["model"]  # no latency was given
    proc = run("order", str(m), "--kind", "bandwidth", "--unit", "Gbit/s", "--time-limit", "0.2", "-o",
               str(tmp_path / "o.txt"))
    text = " ".join(proc.stderr.split())
    assert "inferred from inverse bandwidth" in text and "inferred from latency" not in text


def test_bad_group_counts_are_refused_before_the_matrix_is_read(tmp_path):
    m = tmp_path / "asym.csv"  # reading it prints a note (symmetrised pairs): the error must come alone
    m.write_text("0,1,9,9\n2,0,9,9\n9,9,0,1\n9,9,1,0\n")
    assert "symmetrised" in run("group", str(m)).stderr
    assert_one_line_error(run("group", str(m), "--groups", "0"), 2, "--groups must be a positive integer")
    assert_one_line_error(run("group", str(m), "--levels", "0"), 2, "--levels must be a positive integer")


def test_bad_order_options_are_refused_before_the_matrix_is_read(tmp_path):
    m = tmp_path / "asym.csv"  # reading it prints a note (symmetrised pairs): the error must come alone
    m.write_text("0,1,9,9\n2,0,9,9\n9,9,0,1\n9,9,1,0\n")
    assert "symmetrised" in run("order", str(m), "--time-limit", "0.2").stderr
    assert_one_line_error(run("order", str(m), "--time-limit", "-1"), 2, "time limit must be > 0")
    assert_one_line_error(run("order", str(m), "--nic-gbps", "0"), 2, "--nic-gbps (nic_gbps) must be > 0")
    assert_one_line_error(run("order", str(m), "--jobs", "-2"), 2, "--jobs (jobs) must be >= 0")


def test_no_span_note_where_no_row_is_a_span(dc, tmp_path):
    """--size 0 prices latency alone: no capacity matters, every row is one figure, and the note
    that explains the span's ends is not printed."""
    proc = run("order", str(dc), "--size", "0", "--time-limit", "0.3", "-o", str(tmp_path / "h.txt"))
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stderr.splitlines() if line.lstrip().startswith(("input order", "median of"))]
    assert len(rows) == 2 and all("-" not in row.split()[-1] for row in rows)
    text = " ".join(proc.stderr.split())
    assert "spans capacities" not in text
    assert "NICs assumed" not in text and "oversubscribed case" not in text  # no bytes: capacities do not matter


def test_a_missing_option_file_is_named_by_its_option(dc, tmp_path):
    """`--groups 0` said '0: no such file'; the option that reads it is named now."""
    for argv in (["order", str(dc), "--groups", "0"], ["show", str(dc), "--groups", "0"],
                 ["schedule", str(dc), "--size", "1MiB", "--groups", "0", "-o", str(tmp_path / "s.json")]):
        assert_one_line_error(run(*argv), 1, "plink: error: --groups 0: no such file")
    assert_one_line_error(run("show", str(dc), "--plot", str(tmp_path / "p.png"), "--order", "absent.txt"), 1,
                          "plink: error: --order absent.txt: no such file")


def test_a_unit_of_the_other_kind_is_a_usage_error(tmp_path):
    """--kind bandwidth --unit ms is an option that does not fit: exit 2 like any bad option value."""
    m = tmp_path / "m.csv"
    m.write_text("0,1,2\n1,0,1\n2,1,0\n")
    assert_one_line_error(run("group", str(m), "--kind", "bandwidth", "--unit", "ms"), 2,
                          "'ms' is not a bandwidth unit")
    assert_one_line_error(run("order", str(m), "--unit", "Gbit/s"), 2, "'Gbit/s' is not a latency unit")



def test_matrix_options_given_a_probe_file_are_usage_errors(dc):
    """--unit/--kind/--hosts given with a probe file exited 1 without pointing at --help, where the same
    misuse on a CSV exits 2: options that do not apply are usage errors."""
    plain_only = "--kind (kind) and --unit (unit) describe plain matrices"
    for argv, fragment in ((("order", str(dc), "--unit", "ms"), plain_only),
                           (("group", str(dc), "--kind", "bandwidth"), plain_only),
                           (("order", str(dc), "--hosts", str(dc)), "--hosts (hosts) names the hosts of a plain matrix")):
        proc = run(*argv)
        assert_one_line_error(proc, 2, fragment)
        assert f"(see 'plink {argv[0]} --help')" in proc.stderr


def test_an_empty_output_path_is_a_usage_error(dc):
    """``-o ''`` (an unset shell variable) wrote the order to stdout without a word; every path option
    refuses it, and says what writes to stdout where one can."""
    assert_one_line_error(run("order", str(dc), "-o", ""), 2, "'-o' / '--output': empty path (- is stdout)")
    assert_one_line_error(run("group", str(dc), "--plot", ""), 2, "'--plot': empty path")


def test_an_order_proven_on_the_clocks_only_is_not_called_proven_for_its_price(tmp_path):
    """9 hosts, hd: the search is exhaustive on the per-rank clocks, but the fluid price has too many
    orders to search again, so the result is not proven for the price shown. The line read "proven
    optimal: no (solver: exhaustive, ...)", which contradicts itself; it says what was proven."""
    probe = tmp_path / "s9.json"
    assert run("simulate", "--racks", "3", "--hosts-per-rack", "3", "--seed", "1", "-o", str(probe)).returncode == 0
    proc = run("order", str(probe), "--algo", "hd", "-o", str(tmp_path / "o.txt"))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stderr.split())
    assert "proven optimal: no: proven for the search's model (the per-rank clocks), not for this price" in text


def test_show_names_the_measured_uplinks_and_how_pair_bandwidths_were_taken(tmp_path):
    """A --bandwidth probe's pair bandwidths are taken half the pairs at a time, so the same path reads
    57-383 Mbit/s by what its round shared (the outside-in check); `plink show` printed them bare and
    left out the uplink test, the figures the price uses for the racks. Case A seed 31's probe."""
    doc = json.loads(open(os.path.join(ROOT, "benchmarks/results/2026-11-30-A-seed31/A.json")).read())
    probe = tmp_path / "bw.json"
    probe.write_text(json.dumps(doc["probes"]["bandwidth"]))
    proc = run("show", str(probe), "--no-structure")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert text.count("hosts (") == 4 and "all crossing at once" in text
    assert "note: pair bandwidths were measured in rounds of N/2 pairs at once (every host in one)" in text
    summary = json.loads(run("show", str(probe), "--no-structure", "--json").stdout)
    assert summary["bandwidth_concurrent"] and len(summary["uplinks"]) == 4
    assert all(200 < u["up_mbit"] < 400 for u in summary["uplinks"])


def test_an_uplink_test_of_a_group_larger_than_the_rest_says_how_many_hosts_crossed(tmp_path):
    """A group of 5 hosts of 8 (a rack of 2 merged into a rack of 3) is tested with 3 flows per direction,
    as many as the other hosts can take: plink probe and plink show said "all of them crossing at once"
    (the outside-in netns walk); they say 3 of its 5 now, and all where the file records no flows."""
    from plink.data.summary import crossing

    assert crossing(5, 3) == "3 of its 5 hosts crossing at once"
    assert crossing(4, 4) == crossing(4, None) == "all crossing at once"
    doc = json.loads(open(os.path.join(ROOT, "benchmarks/results/2026-11-30-A-seed31/A.json")).read())
    bw = doc["probes"]["bandwidth"]
    first = bw["uplinks"][0]
    first["hosts"] = first["hosts"] + bw["uplinks"][1]["hosts"][:1]
    first["flows"] = 3
    bw["uplinks"] = [first]
    probe = tmp_path / "bw.json"
    probe.write_text(json.dumps(bw))
    text = " ".join(" ".join(run("show", str(probe), "--no-structure").stdout.split()).replace("│", " ").split())
    assert "3 of its 5 hosts crossing at once" in text and "all crossing" not in text, text
    assert json.loads(run("show", str(probe), "--no-structure", "--json").stdout)["uplinks"][0]["flows"] == 3


def test_show_says_when_an_uplink_test_ran_on_other_groups_than_those_shown():
    """The Gloo walk's p1 (benchmarks/results/2026-12-03-gloo-3-3-2-bw): plink probe ran its uplink
    tests on two groups of 4 (a rack of 2 dealt to the racks of 3), whose 684 / 764 Mbit/s `plink show`
    printed beside the 3 racks it finds now, with no word that plink order does not price them. On p0,
    whose tests ran on the racks, no note."""
    gloo = os.path.join(ROOT, "benchmarks/results/2026-12-03-gloo-3-3-2-bw")
    text = " ".join(run("show", os.path.join(gloo, "p1.json")).stdout.split())
    assert ("note: 2 of the 2 uplink tests ran on hosts that are not one of the groups shown (the probe's groups "
            "when it ran): plink order does not price them as one group's uplink (its report says how it uses "
            "them)") in text, text
    summary = json.loads(run("show", os.path.join(gloo, "p1.json"), "--json").stdout)
    assert [u["a_group_shown"] for u in summary["uplinks"]] == [False, False] and summary["groups"] == 3
    p0 = run("show", os.path.join(gloo, "p0.json"))
    assert "not one of the groups shown" not in p0.stdout + p0.stderr
    assert all(u["a_group_shown"] for u in json.loads(run("show", os.path.join(gloo, "p0.json"), "--json").stdout)["uplinks"])


def test_show_prints_pair_and_uplink_bandwidths_in_one_scale(tmp_path):
    """`plink show` printed the pair bandwidths as bare Gbit/s ('min 0.0569') beside the uplinks in
    Mbit/s: each figure now carries its unit, scaled as the latencies are (350 Mbit/s, 25 Gbit/s)."""
    from plink.units import format_bandwidth

    assert [format_bandwidth(v) for v in (0.35, 25, 1, 0.0005)] == ["350 Mbit/s", "25 Gbit/s", "1 Gbit/s",
                                                                   "500 kbit/s"]
    doc = json.loads(open(os.path.join(ROOT, "benchmarks/results/2026-11-30-A-seed31/A.json")).read())
    probe = tmp_path / "bw.json"
    probe.write_text(json.dumps(doc["probes"]["bandwidth"]))
    text = " ".join(run("show", str(probe), "--no-structure").stdout.split())
    pair = re.search(r"pair bandwidth (.*?) uplink", text).group(1)
    assert re.fullmatch(r"(\w+\s+[\d.]+\s+Mbit/s\s*)+", pair.replace("│", "").strip()), pair
    cells = " ".join(text.replace("│", " ").split())  # (a cell's lines are apart by the column's bar)
    assert re.search(r"up [\d.]+ Mbit/s / down [\d.]+ Mbit/s, all crossing at once", cells), text


def test_a_pair_sum_of_latencies_names_no_message_size(dc, tmp_path):
    """The pair sum of latencies alone prices no bytes, so its report's title names no size (it said
    "25 MiB", which changed nothing); the shared model's does."""
    pairsum = run("order", str(dc), "--model", "pairsum", "--time-limit", "0.2", "-o", str(tmp_path / "a.txt"))
    shared = run("order", str(dc), "--time-limit", "0.2", "-o", str(tmp_path / "b.txt"))
    assert pairsum.returncode == shared.returncode == 0, pairsum.stderr + shared.stderr
    assert "hosts, pair-sum model (§5.2.1), latency;" in " ".join(pairsum.stderr.split())
    assert "hosts, 25 MiB, shared-link model" in " ".join(shared.stderr.split())


def test_usage_errors_plink_checks_itself_point_at_help_too(dc):
    """The README's exit codes: a usage error ends by pointing at its command's --help. Click's did;
    the ones plink checks itself (a value out of range) did not."""
    proc = run("group", str(dc), "--groups", "0")
    assert_one_line_error(proc, 2, "--groups must be a positive integer, got 0 (see 'plink group --help')")
    assert_one_line_error(run("order", str(dc), "--time-limit", "nan"), 2, "(see 'plink order --help')")


def test_show_json_has_what_its_text_shows_of_the_structure(dc, tmp_path):
    """`plink show --json` left out the members, the low-confidence and lone hosts and the AMI its
    text prints (and `plink group --json` has)."""
    doc = json.loads(run("show", str(dc), "--json").stdout)
    groups = tmp_path / "g.json"
    assert run("group", str(dc), "-o", str(groups)).returncode == 0
    g = json.loads(groups.read_text())
    assert sorted(map(sorted, doc["members"])) == sorted(
        sorted(h for h, lab in zip(g["hosts"], g["labels"]) if lab == k) for k in set(g["labels"]))
    assert doc["ami"] == g["metrics"]["ami"] and doc["ami_levels_against"] == g["metrics"]["ami_levels_against"]
    assert doc["low_confidence_hosts"] == g["metrics"]["low_confidence_hosts"]
    with_file = json.loads(run("show", str(dc), "--groups", str(groups), "--json").stdout)
    assert with_file["members"] == doc["members"]


@pytest.mark.parametrize("where", ["make_context", "invoke"])
def test_ctrl_c_and_sigterm_while_click_parses_or_a_command_runs_are_one_line(monkeypatch, capsys, where):
    """A Ctrl-C while click parsed the command line reached plink as click's Abort and printed
    "plink: aborted"; click's main also printed an empty line first, and turned SIGTERM's Terminated
    (a KeyboardInterrupt) into the same Abort: "plink: interrupted", exit 130, for a SIGTERM."""
    from plink import cli as cli_mod
    from plink.errors import Terminated

    for exc_type, code, said in ((KeyboardInterrupt, 130, "plink: interrupted\n"),
                                 (Terminated, 143, "plink: terminated (SIGTERM)\n")):
        def stop(*a, **kw):
            raise exc_type()

        monkeypatch.setattr(cli_mod.cli, where, stop)
        monkeypatch.setattr(Terminated, "received", exc_type is Terminated)
        with pytest.raises(SystemExit) as exc:
            cli_mod.main(["show", "x.json"])
        assert exc.value.code == code and capsys.readouterr().err == said


def test_small_wordings_and_spellings(tmp_path):
    """--unit Gb/s and --size 10TiB were refused; --rack-us inf was told 'must be > 0'; a mostly missing
    CSV was told to 'probe again with --resume', an option of plink probe's."""
    from plink.units import parse_size

    assert parse_size("10TiB") == 10 * 2**40 and parse_size("2TB") == 2 * 10**12
    m = tmp_path / "bw.csv"
    m.write_text("a,b,c\n0,8,8\n8,0,8\n8,8,0\n")
    assert run("show", str(m), "--kind", "bandwidth", "--unit", "Gb/s", "--json").returncode == 0
    assert_one_line_error(run("simulate", "--rack-us", "inf"), 2, "per-level latencies must be finite numbers > 0")
    sparse = tmp_path / "sparse.csv"
    rows = [["" for _ in range(8)] for _ in range(8)]
    for i in range(8):
        rows[i][i] = "0"
        rows[i][(i + 1) % 8] = rows[(i + 1) % 8][i] = "5"
    sparse.write_text("\n".join(",".join(r) for r in rows) + "\n")
    r = run("group", str(sparse))
    assert r.returncode == 1 and "structure inference needs at least half: measure more of the pairs" in r.stderr
    assert "--resume" not in r.stderr


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_after_the_search_is_held_until_the_order_is_written(tmp_path, monkeypatch, capsys, sig):
    """A Ctrl-C or SIGTERM after the search, while the report was priced (about 2 s at 512 hosts), lost the
    finished order: nothing written, exit 130."""
    import signal

    import plink.order as order_mod
    from plink.cli import main

    real = order_mod.order_hosts

    def signalled_once_searched(*a, on_searched=None, **kw):
        def searched():
            before.append((signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)))
            on_searched()
            os.kill(os.getpid(), getattr(signal, sig))  # as if the user pressed Ctrl-C now

        return real(*a, on_searched=searched, **kw)

    monkeypatch.setattr(order_mod, "order_hosts", signalled_once_searched)  # (the command imports it when run)
    dc = tmp_path / "dc.json"
    assert run("simulate", "--racks", "3", "--hosts-per-rack", "4", "--seed", "1", "-o", str(dc)).returncode == 0
    out = tmp_path / "o.txt"
    before = []
    with pytest.raises(SystemExit) as exc:
        main(["order", str(dc), "--time-limit", "0.3", "-o", str(out)])
    said = "terminated (SIGTERM)" if sig == "SIGTERM" else "interrupted"
    assert exc.value.code == (143 if sig == "SIGTERM" else 130)
    assert f"plink: {said} after the search: the order is complete" in capsys.readouterr().err
    assert len(out.read_text().split()) == 12
    assert [(signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))] == before  # handlers restored


def test_an_algorithm_the_model_has_not_is_a_usage_error(tmp_path):
    """--model pairsum --algo bintree exited 1 without pointing at --help (README: a usage error is 2)."""
    dc = tmp_path / "dc.json"
    assert run("simulate", "--racks", "2", "--hosts-per-rack", "3", "-o", str(dc)).returncode == 0
    assert_one_line_error(run("order", str(dc), "--model", "pairsum", "--algo", "bintree"), 2,
                          "unknown algorithm 'bintree' for the pairsum model")


def test_a_picture_to_dev_null_is_thrown_away_even_with_stdout_there(tmp_path):
    """`plink show F --plot /dev/null > /dev/null` was refused as 'on stdout it would mix with the text'."""
    dc = tmp_path / "dc.json"
    assert run("simulate", "--racks", "2", "--hosts-per-rack", "3", "-o", str(dc)).returncode == 0
    with open(os.devnull, "w") as null:
        proc = subprocess.run([sys.executable, "-m", "plink", "show", str(dc), "--plot", os.devnull], stdout=null,
                              stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert_one_line_error(run("show", str(dc), "--plot", "-"), 2, "the picture needs a file")  # a pipe: refused


def test_balanced_random_takes_set_params_as_the_other_estimators():
    from plink.errors import PlinkError
    from plink.structure.group import BalancedRandom

    est = BalancedRandom().set_params(n_groups=3, random_state=1)
    assert est.get_params() == {"n_groups": 3, "random_state": 1}
    with pytest.raises(PlinkError, match="BalancedRandom has no parameter 'k'"):
        est.set_params(k=2)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_order_to_a_fifo_without_a_reader_stops_on_a_signal(tmp_path, sig, stop_with):
    """`plink order -o FIFO` with nobody reading it held Ctrl-C and SIGTERM back until the order was written,
    that is for good: only SIGKILL ended it. The FIFO stays a FIFO."""
    import signal
    import stat
    import time

    dc = tmp_path / "dc.json"
    assert run("simulate", "--racks", "2", "--hosts-per-rack", "3", "--seed", "1", "-o", str(dc)).returncode == 0
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "plink", "order", str(dc), "--time-limit", "0.2", "-o", str(fifo)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    # wait until it blocks in open() of the FIFO: its search is long over after 0.2 s + loading
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{proc.pid}/syscall") as fh:
                blocked = fh.read().split()[0] in ("2", "257")  # open, openat (x86-64)
        except (OSError, IndexError):
            blocked = False
        if blocked or proc.poll() is not None:
            break
        time.sleep(0.1)
    time.sleep(0.3)
    err = stop_with(proc, getattr(signal, sig), 20,
                    "plink order did not stop on the signal while waiting for the FIFO's reader")
    assert proc.returncode == (143 if sig == "SIGTERM" else 130), err
    assert err.strip().splitlines()[-1] == ("plink: terminated (SIGTERM)" if sig == "SIGTERM" else "plink: interrupted")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("argv", [["simulate", "--racks", "2", "--hosts-per-rack", "2"],
                                  ["order", "DC", "--time-limit", "0.2"], ["group", "DC"]])
def test_a_closed_stdout_is_an_error_not_a_lost_output(tmp_path, argv):
    """`plink order m.json >&-` exited 0 and the order went nowhere (Python sets sys.stdout to None and
    click then drops what is echoed); /dev/full gave an error already."""
    dc = tmp_path / "dc.json"
    assert run("simulate", "--racks", "2", "--hosts-per-rack", "3", "--seed", "1", "-o", str(dc)).returncode == 0
    argv = [str(dc) if a == "DC" else a for a in argv]
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-m", "plink", *argv], stderr=subprocess.PIPE, text=True, env=env,
                          preexec_fn=lambda: os.close(1), timeout=120)
    assert_one_line_error(proc, 1, "plink: error: cannot write the output: standard output is closed")
    # with -o FILE nothing goes to stdout: a closed stdout does not matter
    out = tmp_path / "o.txt"
    proc = subprocess.run([sys.executable, "-m", "plink", "order", str(dc), "--time-limit", "0.2", "-o", str(out)],
                          stderr=subprocess.PIPE, text=True, env=env, preexec_fn=lambda: os.close(1), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert len(out.read_text().split()) == 6


def test_order_report_says_how_clear_its_groups_are(dc):
    """The report named the groups ('2 group(s) (inferred from inverse bandwidth)') with nothing on how
    clear they were: a bandwidth matrix whose racks barely show gave a ring by 2 weak groups, silently."""
    from plink.cli.order import _silhouette
    from plink.order import WEAK_SILHOUETTE

    assert _silhouette({"k": 4, "source": "x", "confidence": 0.434}) == ", silhouette 0.43"
    assert _silhouette({"k": 2, "confidence": 0.2488}) == ", silhouette 0.24: weak, see 'plink group'"  # said 0.25
    assert _silhouette({"k": 2, "source": "x", "confidence": WEAK_SILHOUETTE - 0.01}).endswith(": weak, see 'plink group'")
    assert _silhouette({"k": 1, "confidence": 0.9}) == _silhouette({"k": 3, "confidence": None}) == ""
    # given groups: how clearly the probe shows them (a rack map may be right and not show in it)
    assert _silhouette({"k": 2, "source": "groups file", "confidence": 0.1}) == (
        ", silhouette on the probe 0.10: weak, the probe hardly shows them; compare 'plink group'")
    assert _silhouette({"k": 2, "source": "groups file", "confidence": 0.7}) == ", silhouette on the probe 0.70"
    assert _silhouette({"k": 2, "source": "x", "confidence": -0.0534}).startswith(", silhouette -0.05:")  # not -0.06
    proc = run("order", str(dc), "--time-limit", "0.2", "-o", os.devnull)
    assert proc.returncode == 0 and "silhouette" in " ".join(proc.stderr.split()), proc.stderr
    groups = json.loads(run("order", str(dc), "--time-limit", "0.2", "--json").stdout)["groups"]
    assert groups["weak"] is (groups["confidence"] < WEAK_SILHOUETTE)  # --json says it too


def test_show_keeps_each_figure_on_one_line(dc):
    """In an 80-column terminal plink show wrapped 'p90 22.74 us' between 'p90' and its number."""
    from plink.cli.structure import _figures

    figs = ["min 55.2 Mbit/s", "p10 183 Mbit/s", "p50 283.8 Mbit/s", "p90 286.9 Mbit/s", "max 287.3 Mbit/s"]
    lines = _figures(figs).splitlines()
    assert [f for ln in lines for f in ln.split("  ")] == figs and all(len(ln) <= 40 for ln in lines)
    for columns in ("80", "60", "50"):  # (at 60 and 50 columns it still split them, packed to 40 characters)
        env = dict(os.environ, PYTHONPATH=ROOT, COLUMNS=columns)
        proc = subprocess.run([sys.executable, "-m", "plink", "show", str(dc)], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout + proc.stderr
        for key in ("min", "p10", "p50", "p90", "max"):  # each label with its number and unit on its line
            assert re.search(rf"\b{key} [\d.]+ (us|ms)\b", out), (columns, out)


def test_bandwidth_options_that_do_nothing_are_usage_errors(dc, tmp_path):
    """--bandwidth-unit without --bandwidth-matrix was ignored, and --bandwidth-matrix with --no-bandwidth was
    read, then set aside, both without a word (exit 0)."""
    bw = tmp_path / "bw.csv"
    bw.write_text("\n".join(",".join("" if i == j else "10" for j in range(16)) for i in range(16)) + "\n")
    assert_one_line_error(run("order", str(dc), "--bandwidth-unit", "MB/s"), 2,
                          "--bandwidth-unit is the unit of --bandwidth-matrix, which is not given")
    assert_one_line_error(run("show", str(dc), "--bandwidth-unit", "MB/s"), 2, "--bandwidth-unit is the unit")
    assert_one_line_error(run("order", str(dc), "--bandwidth-matrix", str(bw), "--no-bandwidth"), 2,
                          "--bandwidth-matrix and --no-bandwidth exclude each other")


def test_show_of_one_host_says_so(tmp_path):
    """plink show of a one-host matrix printed '1 hosts' and 'measured pairs 0 of 0 (100.0%)'."""
    m = tmp_path / "one.csv"
    m.write_text("0\n")
    proc = run("show", str(m), "--unit", "us")
    assert proc.returncode == 0, proc.stderr
    assert "1 host\n" in proc.stdout and "1 hosts" not in proc.stdout
    assert "none (one host: no pairs)" in proc.stdout and "0 of 0" not in proc.stdout
