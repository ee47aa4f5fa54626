"""`plink probe` command line: help, usage errors, bad host lists (no cluster needed)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def plink(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "plink", *args], capture_output=True, text=True, env=env,
                          timeout=60, cwd=ROOT)


def test_help_documents_exit_3_and_an_example():
    r = plink("probe", "--help")
    assert r.returncode == 0
    assert "3 incomplete matrix" in " ".join(r.stdout.split())
    assert "plink probe hosts.txt -o probe.json" in r.stdout
    assert "--accept-new-host-keys" in r.stdout


@pytest.mark.parametrize("args, code, fragment", [
    (["probe", "hosts.txt", "--json"], 2, "needs -o"),
    (["probe", "hosts.txt", "--resume"], 2, "--resume"),
    (["probe", "hosts.txt", "--concurrency", "64"], 2, "concurrency"),
    (["probe", "hosts.txt", "--method", "tcp"], 2, "method"),
])
def test_usage_errors(args, code, fragment):
    r = plink(*args)
    assert r.returncode == code and fragment in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_bad_host_lists_are_one_line_errors(tmp_path):
    missing = plink("probe", str(tmp_path / "nope.txt"))
    assert missing.returncode == 1 and "host list" in missing.stderr and "no such file" in missing.stderr
    bad = tmp_path / "hosts.txt"
    bad.write_text("vm1\nvm2\nvm1\n")
    r = plink("probe", str(bad), "-o", str(tmp_path / "p.json"))
    assert r.returncode == 1
    assert r.stderr.strip() == f"plink: error: {bad}:3: duplicate host vm1 (first on line 1)"
    one = tmp_path / "one.txt"
    one.write_text("vm1\n")
    r = plink("probe", str(one))
    assert r.returncode == 1 and "at least 2 hosts" in r.stderr
    assert not (tmp_path / "p.json").exists()


def test_the_progress_bar_has_a_stage_for_bandwidth_and_uplinks():
    """The bandwidth rounds kept the latency pass's bar (its total of 1: "round 5/9 ... 4/1") and the
    uplink test showed nothing; each stage has its bar and its own total now."""
    from plink.cli.probe import _ProbeProgress
    from plink.probes.probe import ProgressEvent

    with _ProbeProgress(True) as bar:
        for ev in [("connect", 0, 4, ""), ("connect", 4, 4, ""), ("round", 0, 1, "pass 1: 6 pairs, 1 x 3 rounds"),
                   ("round", 0, 3, "bandwidth round 1/3"), ("round", 2, 3, "bandwidth round 3/3"),
                   ("uplinks", 0, 1, "shared uplinks"), ("uplinks", 0, 6, "shared uplinks: 2 groups x 3 passes"),
                   ("uplinks", 4, 6, "shared uplinks: 2 groups x 3 passes")]:
            bar(ProgressEvent(*ev, 0.0))
            if ev[0] == "uplinks" and ev[1] == 4:  # the uplink test moves test by test (it sat at 0 of 1)
                assert (bar.progress.tasks[-1].completed, bar.progress.tasks[-1].total) == (4, 6)
        tasks = [(t.description, t.completed, t.total) for t in bar.progress.tasks]
    assert tasks == [("connecting", 4, 4), ("probing pass 1: 6 pairs, 1 x 3 rounds", 1, 1),
                     ("probing bandwidth round 3/3", 3, 3), ("probing shared uplinks: 2 groups x 3 passes", 4, 6)]


@pytest.mark.parametrize("args, fragment", [
    (["--tol", "-1"], "--tol must be a fraction"), (["--tol", "nan"], "--tol must be a fraction"),
    (["--tol", "inf"], "--tol must be a fraction"), (["--tol", "0"], "--tol must be a fraction"),
    (["--python", ""], "Invalid value for '--python'"), (["--python", "py\x01"], "Invalid value for '--python'"),
])
def test_tol_and_python_are_checked_before_connecting(tmp_path, args, fragment):
    """--tol -1 / nan and --python '' went on to connect (every other probe option was a usage error)."""
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("a.invalid\nb.invalid\n")  # (never resolved: the check comes first)
    r = plink("probe", str(hosts), "-o", str(tmp_path / "p.json"), *args)
    assert r.returncode == 2 and fragment in r.stderr and "cannot resolve" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name, why", [("127.1", "is the IPv4 address 127.0.0.1 to resolvers"),
                                       ("999.1.1.1", "is no IPv4 address")])
def test_a_host_list_name_a_launcher_file_refuses_is_refused_before_probing(tmp_path, name, why):
    """plink probe connected to 127.1 (and tried to resolve 999.1.1.1); plink order and emit then refuse the
    probe's names for a launcher file, after the whole probe; plink watch left its state directory behind."""
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"node1.invalid\n{name}\n")
    r = plink("probe", str(hosts), "-o", str(tmp_path / "p.json"))
    assert r.returncode == 1 and f"host name '{name}' {why}" in r.stderr and "cannot" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = plink("watch", str(tmp_path / "st"), "--hosts", str(hosts))
    assert r.returncode == 1 and f"host name '{name}'" in r.stderr and not (tmp_path / "st").exists()


def _main(capsys, *args) -> tuple[int, str, str]:
    """``plink ARGS`` in this process: (exit code, stdout, stderr)."""
    from plink.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _unreached(entries, **kw):
    """A probe that reached none of ``entries`` (a host key nobody knows, a wrong --ssh-config)."""
    import numpy as np

    from plink.data.probefile import Host, ProbeData

    n = len(entries)
    lat = np.full((n, n), np.nan)
    np.fill_diagonal(lat, 0.0)
    why = {e.name: f"{e.name}: host key (ssh-ed25519) is not in known_hosts (kh)" for e in entries}
    return ProbeData(hosts=[Host(e.name) for e in entries], latency=lat,
                     meta={"complete": False, "unreachable": why, "method": "udp"})


def test_nothing_measured_says_left_as_it_was_only_of_a_file_that_exists(tmp_path, capsys, monkeypatch):
    """With an unknown host key and no output file yet the error ended '...; unk.json left as it was',
    of a file that never existed (outside-in check)."""
    import plink.probes.probe as probe_mod

    monkeypatch.setattr(probe_mod, "probe_hosts", lambda entries, **kw: _unreached(entries))
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("node1\nnode2\n")
    out = tmp_path / "unk.json"
    code, _, err = _main(capsys, "probe", str(hosts), "-o", str(out))
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert err.rstrip().endswith("; nothing written") and "left as it was" not in err and not out.exists()
    out.write_text("an earlier probe\n")
    code, _, err = _main(capsys, "probe", str(hosts), "-o", str(out))
    assert code == 1 and err.rstrip().endswith(f"; {out} left as it was") and out.read_text() == "an earlier probe\n"


def test_a_stop_before_any_pair_says_left_as_it_was_only_of_a_file_that_exists(tmp_path):
    from plink.cli.probe import _kept, _stat

    out = tmp_path / "p.json"
    assert _kept(str(out), _stat(out), "Ctrl-C") == "stopped by Ctrl-C before any pair was measured: nothing written"
    out.write_text("an earlier probe\n")
    assert _kept(str(out), _stat(out), "SIGTERM") == (f"stopped by SIGTERM before any pair was measured: {out} "
                                                      "left as it was")


def test_accept_new_host_keys_says_in_one_line_which_keys_it_added(tmp_path, capsys, monkeypatch):
    """--accept-new-host-keys stored keys silently (OpenSSH prints "Permanently added ..."): one note line
    names the hosts and the known_hosts file; -q keeps quiet, and a run that then fails says it before its
    one error line (outside-in check)."""
    import numpy as np

    import plink.probes.probe as probe_mod
    from plink.data.probefile import Host, ProbeData

    kh = tmp_path / "known_hosts"
    seen = []

    def complete(entries, ssh=None, **kw):
        seen.append(ssh.accept_new_host_keys)
        ssh.added_host_keys.extend((e.name, str(kh)) for e in entries)
        n = len(entries)
        lat = np.full((n, n), 50.0)
        np.fill_diagonal(lat, 0.0)
        return ProbeData(hosts=[Host(e.name) for e in entries], latency=lat,
                         meta={"complete": True, "method": "udp", "elapsed_s": 1.0, "schedule": []})

    monkeypatch.setattr(probe_mod, "probe_hosts", complete)
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("".join(f"node{i}\n" for i in range(8)))
    out = tmp_path / "p.json"
    code, _, err = _main(capsys, "probe", str(hosts), "-o", str(out), "--known-hosts", str(kh),
                         "--accept-new-host-keys")
    notes = [ln for ln in err.splitlines() if "host key" in ln]
    assert code == 0 and seen == [True], err
    assert notes == [f"plink probe: added the host keys of 8 hosts (node0, node1, node2 and 5 more) to {kh}"], err
    code, _, err = _main(capsys, "probe", str(hosts), "-o", str(out), "--known-hosts", str(kh),
                         "--accept-new-host-keys", "-q")
    assert code == 0 and err == "", err

    def refused_later(entries, ssh=None, **kw):
        ssh.added_host_keys.append((entries[0].name, str(kh)))
        return _unreached(entries)

    monkeypatch.setattr(probe_mod, "probe_hosts", refused_later)
    code, _, err = _main(capsys, "probe", str(hosts), "-o", str(tmp_path / "q.json"), "--known-hosts", str(kh),
                         "--accept-new-host-keys")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 2, err
    assert lines[0] == f"plink probe: added the host key of 1 host (node0) to {kh}"
    assert lines[1].startswith("plink: error: nothing measured")


def test_the_resume_hint_is_a_command_that_runs_as_printed(tmp_path, capsys, monkeypatch):
    """The hints read '(rerun with -o us.json --resume)' and '(rerun with -o int.json --resume --bandwidth
    --bw-seconds 1)': run as printed, `plink probe -o us.json --resume` is "Missing argument 'HOSTS'", and
    the --ssh-config the probe needed was left out (outside-in check). The hint is the whole command, each
    word quoted for the shell."""
    import shlex

    import numpy as np

    import plink.probes.probe as probe_mod
    from plink.data.probefile import Host, ProbeData

    calls = []

    def one_unreachable(entries, checkpoint=None, ssh=None, **kw):
        calls.append(dict(kw, checkpoint=checkpoint, ssh_config=ssh.ssh_config))
        n = len(entries)
        lat = np.full((n, n), 50.0)
        lat[-1, :] = lat[:, -1] = np.nan
        np.fill_diagonal(lat, 0.0)
        p = ProbeData(hosts=[Host(e.name) for e in entries], latency=lat,
                      meta={"complete": False, "unreachable": {entries[-1].name: "timed out"}, "method": "udp",
                            "elapsed_s": 1.0, "schedule": []})
        p.save(checkpoint)
        return p

    monkeypatch.setattr(probe_mod, "probe_hosts", one_unreachable)
    d = tmp_path / "a dir"
    d.mkdir()
    hosts, cfg, out = d / "hosts.txt", d / "ssh config", d / "us.json"
    hosts.write_text("node1\nnode2\nnode3\n")
    cfg.write_text("Host *\n  User me\n")
    code, _, err = _main(capsys, "probe", str(hosts), "-o", str(out), "--ssh-config", str(cfg), "--bandwidth",
                         "--bw-seconds", "1", "--count", "5", "-q")
    assert code == 3, err
    hint = err.strip().splitlines()[-1].split("(rerun with: ", 1)[1].rsplit("), exit 3", 1)[0]
    argv = shlex.split(hint)
    assert argv == ["plink", "probe", str(hosts), "-o", str(out), "--resume", "--count", "5", "--bandwidth",
                    "--bw-seconds", "1", "--ssh-config", str(cfg)], hint
    code, _, err = _main(capsys, *argv[1:])  # as printed: it runs, and resumes with what the probe had
    assert code == 3 and calls[-1]["resume"] is True and calls[-1]["ssh_config"] == str(cfg), err
    assert calls[-1]["bandwidth"] is True and calls[-1]["bw_seconds"] == 1.0 and calls[-1]["count"] == 5

    def interrupted(entries, checkpoint=None, **kw):
        (tmp_path / "int.json.journal").write_text("")
        raise KeyboardInterrupt

    monkeypatch.setattr(probe_mod, "probe_hosts", interrupted)
    code, _, err = _main(capsys, "probe", str(hosts), "-o", str(tmp_path / "int.json"), "--uplinks", "--no-uplinks",
                         "--timeout", "2.5")
    assert code == 130 and err.rstrip().endswith(
        f"(rerun with: plink probe {shlex.quote(str(hosts))} -o {tmp_path / 'int.json'} --resume --no-uplinks "
        "--timeout 2.5)"), err
