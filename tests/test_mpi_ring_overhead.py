"""benchmarks/mpi_ring_overhead.py: the report from saved runs (the measuring needs root and the netns cluster)."""

import json
from pathlib import Path

import pytest

from benchmarks.mpi_ring_overhead import SHAPE, main, render

ROOT = Path(__file__).resolve().parent.parent


def _doc(rows):
    return {"format": "plink-mpi-ring-overhead", "version": 1, "cluster": SHAPE, "rows": rows}


def test_render_prices_the_ring_and_splits_by_acknowledgements():
    rows = [{"rep": r, "mib": 4, "flags": "need-csum", "order": "rack-contiguous", "ack": ack,
             "seconds": [t + 0.01 * r] * 3}
            for r in range(2) for ack, t in (("delayed", 0.36), ("quick", 0.23))]
    lines = render(_doc(rows)).splitlines()
    # the ring's bytes 2 (N-1)/N x 4 MiB over a 350 Mbit/s link: 0.180 s; medians of the launches
    assert "4 MiB | need-csum | delayed | rack-contiguous | 0.365 | 0.180 | 2.03 | +0.185" in lines
    assert "4 MiB | need-csum | quick | rack-contiguous | 0.235 | 0.180 | 1.31 | +0.055" in lines
    assert len(lines) == 3


def test_rows_without_ack_are_the_kernels_default():
    rows = [{"rep": 0, "mib": 16, "flags": "no csum", "order": "rack-interleaved", "seconds": [3.0, 3.1, 2.9]}]
    assert render(_doc(rows)).splitlines()[1] == "16 MiB | no csum | delayed | rack-interleaved | 3.000 | 2.876 | 1.04 | +0.124"


@pytest.mark.parametrize("name", ["mpi-ring-overhead.json", "mpi-ring-quickack.json"])
def test_shipped_runs_reprint(name, capsys):
    path = ROOT / "benchmarks" / "results" / name
    if not path.exists():
        pytest.skip("not shipped")
    assert main(["--analyse-only", str(path)]) == 0
    out = capsys.readouterr().out
    assert "rack-contiguous" in out and ("quick" in out) == ("quickack" in name)
    assert json.loads(path.read_text())["format"] == "plink-mpi-ring-overhead"
