"""Parsing and printing of sizes and durations given on the command line."""

from __future__ import annotations

import re

from plink.errors import OptionError

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "t": 1000**4,
    "tb": 1000**4,
    "tib": 1024**4,
}


#: the largest size accepted (1 PiB): beyond it a size is a typo, and costs would be nonsense
MAX_SIZE = 2**50


def parse_size(text: str | int | float) -> int:
    """Bytes from ``'64MiB'``, ``'25MB'``, ``'1G'``, ``'4096'`` (SI and IEC units).

    A size with a unit is rounded to the nearest byte (``1.1MiB`` is 1153434); a plain
    number of bytes must be whole (``1.5`` is refused, not read as 2)."""
    unit = ""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
        if not m or m.group(2).lower() not in _SIZE_UNITS:
            raise OptionError(f"invalid size {text!r}: use bytes or a unit such as 64KiB, 25MB, 1GiB")
        unit = m.group(2).lower()
        value = float(m.group(1)) * _SIZE_UNITS[unit]
    if value < 0 or value != value or value == float("inf"):
        raise OptionError(f"invalid size {text!r}: must be a finite number >= 0")
    if value > MAX_SIZE:
        raise OptionError(f"invalid size {text!r}: more than 1 PiB, far beyond any collective's buffer")
    if unit in ("", "b") and value != int(value):
        raise OptionError(f"invalid size {text!r}: a number of bytes must be whole (or give a unit, e.g. 1.5KiB)")
    return int(round(value))


def format_size(n: float) -> str:
    """``26214400 -> '25 MiB'``."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor:
            v = n / factor
            return f"{v:.4g} {unit}"
    return f"{int(n)} B"


def format_us(us: float) -> str:
    """A duration in microseconds, scaled to a readable unit."""
    if us >= 1e6:
        return f"{us / 1e6:.3f} s"
    if us >= 1e3:
        return f"{us / 1e3:.3f} ms"
    return f"{us:.2f} us"


def format_bandwidth(gbps: float) -> str:
    """A bandwidth in Gbit/s, scaled to a readable unit (``0.35 -> '350 Mbit/s'``, ``25 -> '25 Gbit/s'``):
    the commands print every bandwidth, pairs' and uplinks', this way, so figures side by side compare."""
    if gbps >= 1:
        return f"{gbps:.4g} Gbit/s"
    if gbps >= 1e-3:
        return f"{gbps * 1e3:.4g} Mbit/s"
    return f"{gbps * 1e6:.4g} kbit/s"
