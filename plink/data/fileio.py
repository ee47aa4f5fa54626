"""The one writer and reader of every plink file: never damage what the user has.

:func:`write_text` / :func:`write_bytes` decide by what the output path *is*:

* ``-``, ``/dev/stdout`` (and ``/dev/fd/1``) or a path to the file stdout is: written to
  stdout (:func:`is_stdout`);
* a new file, or an existing regular file: written atomically -- the data
  goes to a temporary file in the same directory, is flushed and fsynced,
  then renamed over the target (``os.replace``, atomic on POSIX within one
  file system), so a reader sees the old file or the new one, never half of
  one, and a crash mid-write leaves the old file untouched.  The new file
  keeps the old one's permission bits (and owner and group, where the
  writer may set them);
* a symlink: the same for the file it points to (followed to the end of a
  chain; a dangling link's target is created), so the link stays a link;
* a character or block device (``/dev/null``, ``/dev/stdout``), a FIFO or
  any other non-regular file: opened for writing and written through, never
  replaced (as root, renaming over ``/dev/null`` would turn it into a
  regular file for every user of the machine);
* a regular file with more than one hard link: written in place, so every
  name keeps seeing the same file (a rename would split the links);
* an existing regular file in a directory the writer cannot create files in
  (but the file itself is writable): written in place;
* a directory, a missing directory or a symlink loop: :class:`PlinkError`
  with a one-line reason.

Cost: O(size of the data) plus one ``fsync`` per atomic write.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import stat
import sys
import tempfile
from typing import Any

import numpy as np

from plink.errors import PlinkError

__all__ = ["write_text", "write_bytes", "write_json", "replaces_atomically", "missing_directory", "atomic_write_text",
           "check_envelope", "read_text", "read_stdin", "read_json", "is_stdout", "finite_json", "WRITE_ERRNOS", "guard_closed_stdout",
           "quiet_stdout"]


_STDOUT_NAMES = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")


def is_stdout(path: str | os.PathLike) -> bool:
    """Whether a write of ``path`` lands on this process's stdout: ``-``, ``/dev/stdout`` and its
    aliases, or any path to the very file stdout is (same device and inode).  Such a path is written
    through stdout, like ``-``: resolving ``/dev/stdout`` to the file the shell redirected it to and
    replacing that file would drop what ``>>`` appended to, and a pipe cannot be resolved at all."""
    name = os.fspath(path)
    if name == "-" or name in _STDOUT_NAMES:
        return True
    try:
        out = os.fstat(1)
        st = os.stat(name)
    except (OSError, ValueError):
        return False
    return (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino)


def _resolve(path: str) -> str:
    """The path a write of ``path`` lands on: symlinks followed (dangling: their target)."""
    if not os.path.islink(path):
        return path
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PlinkError(f"cannot write {path}: too many levels of symbolic links") from None
    return os.path.realpath(path)


def missing_directory(path: str | os.PathLike) -> str | None:
    """The directory a write of ``path`` would create its file in, when that directory does not
    exist (else None; ``-`` is stdout).  The one check of every output path: ``-o`` before any
    work and ``watch --emit`` before anything is probed (:func:`write_bytes` checks the directory of
    the target it resolved once itself)."""
    name = os.fspath(path)
    if is_stdout(name):
        return None
    return _first_missing(os.path.dirname(_resolve(name)) or ".")


def _first_missing(directory: str) -> str | None:
    """The first directory along ``directory`` (as the kernel walks it: ``sub/..`` needs ``sub``)
    that does not exist, absolute; None when all do."""
    if os.path.isdir(directory):
        return None
    walked = os.sep if os.path.isabs(directory) else ""
    for part in directory.split(os.sep):
        if not part:
            continue
        walked = os.path.join(walked, part) if walked else part
        if not os.path.isdir(walked):
            return os.path.abspath(walked)
    return os.path.abspath(directory)


def replaces_atomically(path: str | os.PathLike) -> bool:
    """True when :func:`write_bytes` would replace ``path`` atomically (a new or
    regular file with one link, also through symlinks): rewriting it often is
    safe; False for ``-``, devices, FIFOs, hard-linked files and directories."""
    name = os.fspath(path)
    if is_stdout(name):
        return False
    try:
        st = os.stat(_resolve(name))
    except FileNotFoundError:
        return True
    except (OSError, PlinkError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def write_bytes(path: str | os.PathLike, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` without damaging what is there (module docstring).

    ``mode``: permission bits of a newly created file (default: 0o666 & ~umask;
    an existing file keeps its own).
    """
    name = os.fspath(path)
    if is_stdout(name):
        out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
        if out is None:
            sys.stdout.write(data.decode("utf-8"))
        else:
            sys.stdout.flush()
            out.write(data)
        sys.stdout.flush()
        return
    target = _resolve(name)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise PlinkError(f"cannot write {name}: {exc.strerror or exc}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise PlinkError(f"cannot write {name}: is a directory")
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_through(name, target, data)  # device, FIFO, socket, ...: never replaced
        return
    if st is not None and st.st_nlink > 1:
        _write_in_place(name, target, data)  # keep the hard links together
        return
    directory = os.path.dirname(target) or "."
    if not os.path.isdir(directory):  # of the target resolved once, above
        raise PlinkError(f"cannot write {name}: directory {_first_missing(directory)} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        if st is not None and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and os.access(target, os.W_OK):
            _write_in_place(name, target, data)  # a writable file in a directory we cannot create in
            return
        # e.g. /proc/version: the directory exists but takes no new files
        raise PlinkError(f"cannot write {name}: cannot create a file in {directory} ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, st.st_mode & 0o7777)
            if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except OSError:
                    pass  # not allowed: the new file is the writer's, as any new file would be
        elif mode is not None:
            os.chmod(tmp, mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise PlinkError(f"cannot write {name}: {exc.strerror or exc}") from None
    except BaseException:
        _unlink_quietly(tmp)
        raise


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _write_through(name: str, target: str, data: bytes) -> None:
    """Open an existing non-regular file for writing (no create, no truncate) and write."""
    try:
        fd = os.open(target, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise PlinkError(f"cannot write {name}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        raise PlinkError(f"cannot write {name}: {exc.strerror or exc}") from None


def _write_in_place(name: str, target: str, data: bytes) -> None:
    try:
        with open(target, "r+b") as fh:
            fh.write(data)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise PlinkError(f"cannot write {name}: {exc.strerror or exc}") from None


def write_text(path: str | os.PathLike, text: str, mode: int | None = None) -> None:
    """Write ``text`` (UTF-8) to ``path`` without damaging what is there (module docstring)."""
    write_bytes(path, text.encode("utf-8"), mode)


def finite_json(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by ``None`` (JSON has no inf/NaN); numpy
    scalars become Python numbers.  O(size of ``obj``)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    if isinstance(obj, np.generic):
        return finite_json(obj.item())
    return obj


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Serialise ``obj`` as indented JSON (no NaN) and :func:`write_text` it."""
    write_text(path, json.dumps(obj, indent=1, allow_nan=False) + "\n")


# the names the rest of plink has always used
atomic_write_text = write_text


def check_envelope(doc: Any, path, fmt: str, version: int, what: str, error: type[PlinkError] = PlinkError,
                   version_name: str | None = None) -> int:
    """The ``format``/``version`` envelope every plink JSON file has: ``doc`` must be an object of
    format ``fmt`` with an integer version in ``1..version``; returns the version, else ``error``
    with one line naming ``path`` (``what``: the kind of file, e.g. "schedule")."""
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise error(f"{path}: not a plink {what} file")
    if "version" not in doc:
        raise error(f"{path}: no \"version\" field (a plink {what} file has \"format\": {fmt!r} and \"version\": {version})")
    v = doc.get("version")
    if not isinstance(v, int) or isinstance(v, bool):
        raise error(f"{path}: {version_name or what} version {v!r} is not a whole number (this plink reads 1..{version})")
    if v < 1:
        raise error(f"{path}: {version_name or what} version {v} is not one this plink reads (1..{version})")
    if v > version:
        raise error(f"{path}: {version_name or what} version {v} is newer than this plink reads ({version})")
    return v


def text_lines(text: str) -> list[str]:
    """The lines of a host list's, order file's or matrix's ``text``, split at line feeds only (a
    carriage return before one dropped; a text with carriage returns and no line feed, as old Mac
    editors save, split at those). ``str.splitlines`` also splits at form feeds, vertical tabs,
    ``\\x1c``-``\\x1e``, U+0085 and U+2028/9: in these files they are control characters inside a line
    (a name holding one is refused), not line breaks, and split there the file read as more hosts
    than it has, with every later line number off. O(len(text))."""
    if "\n" not in text and "\r" in text:
        text = text.replace("\r", "\n")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


#: the most text plink reads from one input: a probe file of 4096 hosts with pair bandwidths is about
#: 300 MB; what is larger (``/dev/zero``, a disk image) is no input of plink's, and was read until memory ran out
MAX_TEXT_BYTES = 2**30
_CHUNK = 2**20


def read_stream(fh, name: str, error: type[PlinkError] = PlinkError) -> str:
    """The UTF-8 text of the binary stream ``fh`` (a file, standard input), read a megabyte at a time:
    ``error`` naming ``name`` past :data:`MAX_TEXT_BYTES` or at a NUL byte (see :func:`read_text`);
    ``UnicodeDecodeError`` for text that is not UTF-8. O(size)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    parts, total = [], 0
    while chunk := fh.read(_CHUNK):
        total += len(chunk)
        if total > MAX_TEXT_BYTES:
            raise error(f"{name}: more than {MAX_TEXT_BYTES >> 30} GiB: not a file plink reads")
        if b"\0" in chunk:
            if total == len(chunk) and chunk.startswith(b"\x93NUMPY"):  # (it said only "holds NUL bytes")
                raise error(f"{name}: a .npy matrix (NumPy's binary format): plink reads one from a file, by "
                            "its name ending in .npy or by its first bytes, not from a pipe")
            raise error(f"{name}: holds NUL bytes: not a text file")
        parts.append(decoder.decode(chunk))
    parts.append(decoder.decode(b"", final=True))
    return "".join(parts)


#: how standard input is named in messages
STDIN_NAME = "<stdin>"


def read_stdin(error: type[PlinkError] = PlinkError) -> str:
    """The UTF-8 text of standard input, read as a file is (:func:`read_stream`: a megabyte at a time,
    no NUL bytes, at most :data:`MAX_TEXT_BYTES`), or ``error`` naming ``<stdin>``. O(size)."""
    try:
        return read_stream(sys.stdin.buffer, STDIN_NAME, error)
    except UnicodeDecodeError:
        raise error(f"{STDIN_NAME}: not a UTF-8 text file") from None


def read_text(path: str | os.PathLike, error: type[PlinkError] = PlinkError, what: str = "") -> str:
    """The UTF-8 text of ``path`` (a leading byte-order mark, as Windows editors write, dropped), or
    ``error`` with a one-line reason (naming the file as ``what path``): also for a file of more than
    :data:`MAX_TEXT_BYTES` or one with NUL bytes (binary), found as it is read, a megabyte at a time
    (a device or a pipe that never ends is refused, not read until memory runs out). O(size)."""
    name = f"{what} {path}" if what else f"{path}"
    if os.fspath(path) == "-":  # (it said "-: no such file")
        raise error(f"{name}: standard input is read only as the matrix (PROBEFILE) or plink emit's order; "
                    "give a file here")
    try:
        with open(path, "rb") as fh:
            return read_stream(fh, name, error)
    except FileNotFoundError:
        raise error(f"{name}: no such file") from None
    except IsADirectoryError:
        raise error(f"{name}: is a directory, not a file") from None
    except UnicodeDecodeError:
        raise error(f"{name}: not a UTF-8 text file") from None
    except OSError as exc:
        raise error(f"{name}: cannot read: {exc.strerror or exc}") from None


def loads_json(text: str, source: str, error: type[PlinkError] = PlinkError) -> Any:
    """Parse JSON ``text``, or ``error`` with a one-line reason: a syntax error (with its line),
    nesting too deep for the parser, or an integer too long to convert."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise error(f"{source}: invalid JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal over Python's digit limit
        raise error(f"{source}: invalid JSON: {' '.join(str(exc).split())[:120]}") from None


def read_json(path: str | os.PathLike, error: type[PlinkError] = PlinkError) -> Any:
    """Parse the JSON file at ``path``, or ``error`` naming the line of a syntax error."""
    return loads_json(read_text(path, error), str(path), error)


#: the errors of a write that failed for a reason outside plink (a full disk, a closed stdout): no bug
WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG, errno.EBADF}


class _ClosedStdout(io.RawIOBase):
    """Standard output when the shell closed it (``plink order m.csv >&-``): Python then sets
    ``sys.stdout`` to None and click drops whatever is echoed, so the order was lost with exit 0.
    Writing to this raises EBADF instead: one error line, exit 1. A command that writes nothing to
    stdout (``-o FILE``) is not affected."""

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def guard_closed_stdout() -> None:
    """Give a closed standard output a stand-in that fails on the first write (:class:`_ClosedStdout`)."""
    if sys.stdout is None:
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_ClosedStdout()), encoding="utf-8", write_through=True)
        sys.stdout.plink_closed = True


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of what could not be written
    does not print a second error at exit."""
    if getattr(sys.stdout, "plink_closed", False):
        sys.stdout = open(os.devnull, "w")  # what the closed stream still holds is dropped with it
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout closed or not a file: nothing to flush
        pass
