"""The fluid price against the search's per-rank clocks, over every saved proof run.

For each case file under ``benchmarks/results`` (the proof's saved runs made with the kernel's
settings, ``collectives_netns.saved_cases``: probes, orders and measured times),
``collectives_netns.analyse`` prices the run's orders with plink's price (``default``: the
fluid model of ``solvers.fluid`` for recursive doubling, Rabenseifner and the tree) and with the
clocks the search minimises (``clocks``), from the latency and the ``--bandwidth`` probe, and ranks
them against the measured times (Spearman, orders priced within 2% of one another tied).  Prints,
per collective and probe, the mean over the runs, in how many runs each model ranked better, and
how many runs fall under the 0.9 target; ``--runs`` lists every run.  The ring and Gloo are
priced alike by both (not printed).  Takes about 3 minutes::

    python benchmarks/price_models.py
    python benchmarks/price_models.py benchmarks/results/2026-11-29-D-seed20/D.json   # one run
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import benchmarks.collectives_netns as proof  # noqa: E402

COLLECTIVES = ("mpi_recursive_doubling", "mpi_rabenseifner", "mpi_tree")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="saved proof cases (default: every one under --results)")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--runs", action="store_true", help="print every run's figures")
    args = ap.parse_args(argv)
    results = Path(args.results)
    rows: dict[tuple[str, str], list[tuple[str, float, float]]] = {}
    files = [Path(f) for f in args.files] or proof.saved_cases(results)
    for path in files:
        try:
            doc = json.loads(path.read_text())
            _, figs = proof.analyse(doc)
        except (OSError, ValueError, KeyError) as exc:
            ap.error(f"{path}: not a saved proof case ({exc.__class__.__name__}: {exc})")
        name = f"{path.parent.name}/{path.name}"
        for coll in COLLECTIVES:
            f = figs.get(coll)
            if not f or "spearman_latency_clocks_resolved" not in f:
                continue
            for probe in ("latency", "bandwidth"):
                c, d = f[f"spearman_{probe}_clocks_resolved"], f[f"spearman_{probe}_default_resolved"]
                rows.setdefault((coll, probe), []).append((name, c, d))
                if args.runs:
                    print(f"{name:<40} {coll:<24} {probe:<9} clocks {c:.3f}  fluid {d:.3f}")
    print("Spearman(predicted, measured), orders priced within 2% tied; mean over the runs")
    print(f"{'collective':<24} {'probe':<9} {'runs':>4} {'clocks':>7} {'fluid':>7} {'fluid better/worse':>19} "
          f"{'runs < 0.9 clocks -> fluid':>27}")
    for (coll, probe), r in rows.items():
        c = np.array([x[1] for x in r])
        d = np.array([x[2] for x in r])
        better, worse = int(np.sum(d > c + 1e-9)), int(np.sum(d < c - 1e-9))
        print(f"{coll:<24} {probe:<9} {len(r):>4} {c.mean():>7.3f} {d.mean():>7.3f} {f'{better} / {worse}':>19} "
              f"{f'{int(np.sum(c < 0.9))} -> {int(np.sum(d < 0.9))}':>27}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
