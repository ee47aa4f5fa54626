"""Atomic file writes: a reader sees the old file or the new one, never half.

The data is written to a temporary file in the target's directory, flushed
and fsynced, then renamed over the target (``os.replace`` is atomic on POSIX
within one file system).  A crash mid-write leaves the old file untouched.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from plink.errors import PlinkError


def atomic_write_text(path: str | os.PathLike, text: str, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` atomically (temp file + fsync + rename)."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise PlinkError(f"cannot write {target}: directory {directory} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise PlinkError(f"cannot write {target}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_text(path: str | os.PathLike, error: type[PlinkError] = PlinkError) -> str:
    """The UTF-8 text of ``path``, or ``error`` with a one-line reason."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a file") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None


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
