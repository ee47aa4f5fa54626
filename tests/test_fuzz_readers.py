"""Every reader on malformed input: a one-line error (exit 1/2), never an internal error or a hang.

A fast slice of ``benchmarks/fuzz_readers.py`` (the same seeded generator: mutations of valid
files plus the named classes of issue 11 — Infinity/1e308/huge integers, deep nesting, CSV cells
over 128 KiB, lone surrogates and control characters in names, ``host:²``, huge .npy shapes,
wrong field types in state/stats files, Slurm ranges of millions).
"""

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "fuzz_readers", Path(__file__).resolve().parents[1] / "benchmarks" / "fuzz_readers.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)


@pytest.mark.parametrize("seed", [11, 12])
def test_no_internal_errors_hangs_or_damaged_outputs(seed):
    res = fuzz.run(cases=2 * 9 * 5, seed=seed, timeout=30)
    assert res["failures"] == []
    counts = res["counts"]
    assert all(c["cases"] == 10 for c in counts.values())
    # the generator reaches the error paths (it is not only producing valid files)
    assert sum(c["clean_error"] for c in counts.values()) > 40


def test_damage_check_catches_a_smuggled_host_line(tmp_path):
    out = tmp_path / "hosts.txt"
    out.write_text("a slots=1\nb\nevil slots=1\n")
    assert fuzz.damaged(out, 0, 2) == "3 host lines for 2 hosts"
    out.write_text("a\nb\x1b[0m\n")
    assert "control character" in fuzz.damaged(out, 0, 2)
    assert fuzz.damaged(out, 1, 2).startswith("exit 1 but wrote")
