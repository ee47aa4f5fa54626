"""The one writer (plink/data/fileio.py): atomic for regular files, written
through for devices, FIFOs and ``-``, symlinks kept, clear errors otherwise;
and the commands' ``-o`` going through it."""

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from plink.data.fileio import replaces_atomically, write_bytes, write_text
from plink.errors import PlinkError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def chardev(tmp_path):
    """A character device to write to: a private copy of /dev/null (mknod, as
    root) so a broken writer cannot damage the machine's; /dev/null otherwise
    (where a non-root writer could not replace it anyway)."""
    if os.geteuid() == 0:
        dev = tmp_path / "null"
        try:
            os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            return dev
        except OSError:
            pass
    return Path("/dev/null")


def _fifo_reader(path, out):
    with open(path, "rb") as fh:
        out.append(fh.read())


def test_new_and_regular_files_are_replaced_atomically_keeping_the_mode(tmp_path):
    p = tmp_path / "out.txt"
    assert replaces_atomically(p)
    write_text(p, "one\n")
    assert p.read_text() == "one\n"
    os.chmod(p, 0o640)
    ino = p.stat().st_ino
    write_text(p, "two\n")
    assert p.read_text() == "two\n"
    assert p.stat().st_ino != ino  # a new file renamed over the old one
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert [q.name for q in tmp_path.iterdir()] == ["out.txt"]  # no temp file left


def test_character_device_is_written_through_not_replaced(chardev):
    before = os.stat(chardev)
    assert not replaces_atomically(chardev)
    write_text(chardev, "discarded\n")
    after = os.stat(chardev)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino


def test_fifo_is_written_through_to_its_reader(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=_fifo_reader, args=(fifo, got))
    reader.start()
    write_text(fifo, "hello through the pipe\n")
    reader.join(10)
    assert got == [b"hello through the pipe\n"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["pipe"]


def test_symlink_is_kept_and_its_target_replaced_atomically(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "order.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    chain = tmp_path / "chain.txt"
    chain.symlink_to(link)
    ino = target.stat().st_ino
    write_text(chain, "new\n")
    assert chain.is_symlink() and link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n" and target.stat().st_ino != ino
    assert sorted(q.name for q in (tmp_path / "real").iterdir()) == ["order.txt"]


def test_dangling_symlink_gets_its_target_created(tmp_path):
    link = tmp_path / "link.txt"
    link.symlink_to("made-later.txt")  # relative, dangling
    write_text(link, "x\n")
    assert link.is_symlink() and os.readlink(link) == "made-later.txt"
    assert (tmp_path / "made-later.txt").read_text() == "x\n"


def test_hard_links_stay_together(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("old\n")
    os.link(a, b)
    write_text(a, "new\n")
    assert b.read_text() == "new\n" and a.stat().st_ino == b.stat().st_ino


def test_dash_is_stdout(capsysbinary):
    write_bytes("-", b"to stdout\n")
    assert capsysbinary.readouterr().out == b"to stdout\n"
    assert not replaces_atomically("-")


@pytest.mark.parametrize("make, message", [
    (lambda d: d, "is a directory"),
    (lambda d: d / "missing" / "x.json", "does not exist"),
])
def test_bad_outputs_are_one_line_errors(tmp_path, make, message):
    with pytest.raises(PlinkError, match=message):
        write_text(make(tmp_path), "x")


def test_symlink_loop_is_a_clear_error(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(PlinkError, match="symbolic links"):
        write_text(a, "x")


@pytest.mark.skipif(not os.path.exists("/proc/version"), reason="needs Linux /proc")
def test_a_directory_that_takes_no_new_files_is_named():
    """/proc/version exists, but /proc takes no new file (the temporary file of the atomic write)."""
    before = Path("/proc/version").read_text()
    with pytest.raises(PlinkError) as e:
        write_text("/proc/version", "x")
    assert str(e.value).startswith("cannot write /proc/version: cannot create a file in /proc (")
    assert Path("/proc/version").read_text() == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may create files in any directory")
def test_writable_file_in_a_read_only_directory_is_written_in_place(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    p = d / "f.txt"
    p.write_text("old\n")
    os.chmod(d, 0o555)
    try:
        write_text(p, "new\n")
        assert p.read_text() == "new\n"
    finally:
        os.chmod(d, 0o755)


# ---------------------------------------------------------------------------
# the commands


def plink(*args, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "plink", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def test_order_output_to_a_character_device_a_fifo_and_a_symlink(tmp_path, chardev):
    probe = str(ROOT / "examples" / "dc64.json")
    order = ["order", probe, "--algo", "ring", "--time-limit", "0.2", "--jobs", "1", "-o"]
    # character device
    r = plink(*order, str(chardev))
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.stat(chardev).st_mode)
    # FIFO, read by a thread while the command writes
    fifo = tmp_path / "order.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=_fifo_reader, args=(fifo, got))
    reader.start()
    r = plink(*order, str(fifo))
    reader.join(30)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and len(got[0].decode().split()) == 64
    # symlink to a file elsewhere: the link stays, the target gets the order
    (tmp_path / "shared").mkdir()
    target = tmp_path / "shared" / "hosts.txt"
    target.write_text("old\n")
    link = tmp_path / "hosts.txt"
    link.symlink_to(target)
    r = plink(*order, str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and len(target.read_text().split()) == 64
    # a directory: one line, exit 2 (usage)
    r = plink(*order, str(tmp_path))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "directory" in r.stderr


def test_simulate_writes_through_dash_and_fifo(tmp_path):
    r = plink("simulate", "--racks", "2", "--hosts-per-rack", "2", "-o", "-")
    assert r.returncode == 0 and '"format"' in r.stdout and not (ROOT / "-").exists()
    fifo = tmp_path / "probe.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=_fifo_reader, args=(fifo, got))
    reader.start()
    r = plink("simulate", "--racks", "2", "--hosts-per-rack", "2", "-o", str(fifo))
    reader.join(30)
    assert r.returncode == 0, r.stderr
    assert b'"format"' in got[0] and stat.S_ISFIFO(fifo.lstat().st_mode)


def test_plot_to_a_symlink_keeps_the_link(tmp_path):
    pytest.importorskip("matplotlib")
    import numpy as np

    from plink.plots import plot_groups

    target = tmp_path / "real.png"
    link = tmp_path / "groups.png"
    link.symlink_to(target)
    plot_groups(np.random.default_rng(0).normal(size=(8, 2)), np.array([0, 0, 0, 0, 1, 1, 1, 1]), link)
    assert link.is_symlink() and target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(q.name for q in tmp_path.iterdir()) == ["groups.png", "real.png"]


def test_missing_directory_is_one_check_for_every_output(tmp_path):
    """The directory a write lands in, also through a dangling symlink: checked the same way by
    -o (before the work), watch --emit and the write itself."""
    from plink.data.fileio import missing_directory

    assert missing_directory("-") is None
    assert missing_directory(tmp_path / "x.txt") is None
    assert missing_directory(tmp_path / "no" / "x.txt") == str(tmp_path / "no")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone" / "target.txt")
    assert missing_directory(link) == str(tmp_path / "gone")
    r = plink("order", str(ROOT / "examples" / "dc64.json"), "--time-limit", "600", "-o", str(link))
    assert r.returncode == 2, r.stderr  # a usage error at once, not after a 10-minute search
    assert f"directory {tmp_path / 'gone'} does not exist" in r.stderr
    with pytest.raises(PlinkError, match=f"cannot write {link}: directory {tmp_path / 'gone'} does not exist"):
        write_text(link, "x")
    assert link.is_symlink() and not (tmp_path / "gone").exists()
    # a path through a missing directory, as the kernel walks it: sub/.. needs sub ("directory
    # TMP does not exist" was said of the one that exists, and watch's check let it through)
    through = f"{tmp_path}/sub/../x.txt"
    assert missing_directory(through) == str(tmp_path / "sub")
    with pytest.raises(PlinkError, match=f"directory {tmp_path / 'sub'} does not exist"):
        write_text(through, "x")
    assert missing_directory(tmp_path / "a" / "b" / "c.txt") == str(tmp_path / "a")  # the first one missing


def test_dev_stdout_is_written_through_stdout_not_resolved(tmp_path):
    """-o /dev/stdout: into a pipe (not resolved to /proc/PID/fd/pipe:[...]), appended to a file the
    shell opened with >> (the file is not replaced, what was there stays), refused with --json."""
    probe = str(ROOT / "examples" / "dc64.json")
    order = ["order", probe, "--algo", "ring", "--time-limit", "0.2", "--jobs", "1"]
    r = plink(*order, "-o", "/dev/stdout")  # stdout is a pipe here
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.split()) == 64
    kept = tmp_path / "log.txt"
    kept.write_text("keep\n")
    with open(kept, "a") as out:
        r = subprocess.run([sys.executable, "-m", "plink", *order, "-o", "/dev/stdout"], stdout=out,
                           stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    lines = kept.read_text().split()
    assert lines[0] == "keep" and len(lines) == 65
    with open(kept, "a") as out:  # the same file by its own name is stdout too
        r = subprocess.run([sys.executable, "-m", "plink", *order, "--json", "-o", str(kept)], stdout=out,
                           stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2 and "cannot write there too" in r.stderr and len(kept.read_text().split()) == 65


def test_read_text_refuses_binary_and_endless_input_as_it_reads(tmp_path, monkeypatch):
    """`plink order /dev/zero` read until memory ran out (killed, or 'internal error: MemoryError')."""
    from plink.data import fileio
    from plink.errors import PlinkError

    with pytest.raises(PlinkError, match=r"^/dev/zero: holds NUL bytes: not a text file$"):
        fileio.read_text("/dev/zero")
    big = tmp_path / "big.txt"
    big.write_text("h\n" * 3000)
    monkeypatch.setattr(fileio, "_CHUNK", 1000)
    assert fileio.read_text(big) == "h\n" * 3000
    monkeypatch.setattr(fileio, "MAX_TEXT_BYTES", 5000)
    with pytest.raises(PlinkError, match=r"big.txt: more than 0 GiB: not a file plink reads"):
        fileio.read_text(big)
    monkeypatch.setattr(fileio, "MAX_TEXT_BYTES", 6000)
    odd = tmp_path / "utf8.txt"  # a multi-byte character across a chunk boundary, and a BOM
    odd.write_bytes(b"\xef\xbb\xbf" + ("\u00e9" * 1500).encode())
    assert fileio.read_text(odd) == "\u00e9" * 1500


@pytest.mark.parametrize("cmd", [["order", "/dev/zero"], ["group", "/dev/urandom"], ["emit", "/dev/zero", "--format", "openmpi"],
                                 ["probe", "/dev/zero"]])
def test_commands_refuse_a_device_that_never_ends(cmd):
    proc = subprocess.run([sys.executable, "-m", "plink", *cmd], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "not a text file" in proc.stderr, proc.stderr
