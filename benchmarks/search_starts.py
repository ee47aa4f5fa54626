"""The search's starts and the price it reports: plink order on the saved proof probes, with and without
the changes of 2026-11-30.

``plink order`` anneals on the per-rank clocks and reports the fluid price (``solvers.fluid``).  Two
changes to the search (``plink.solvers.groupsearch``):

- **every order of the groups** as a start (up to 6 groups) for the algorithms that tell a rotation
  apart (recursive doubling, Rabenseifner, the tree); before, the cyclic orders with the first group
  fixed, which is all a ring needs;
- **by_price**: the annealed order, or one of the 32 starts the clocks price lowest when the fluid
  prices it more than the tie tolerance (2%) lower.

For every saved proof run made with the kernel's settings (``collectives_netns.saved_cases``), both
probes and every non-ring algorithm plink priced that run's collectives with, runs ``order_hosts``
with the same seed and ``--max-iter`` (deterministic) twice, with the changes (``new``) and without
(``old``: the two switched off in this process only), and prints the fluid price of each order and the tally.  A price, not a
measured time: the proof runs measure (``collectives_netns.py``).  About 5 minutes, no root::

    python benchmarks/search_starts.py
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

import plink.solvers.groupsearch as gs  # noqa: E402
from benchmarks.collectives_netns import load_saved, run_algos, saved_cases  # noqa: E402
from plink.data.probefile import from_dict  # noqa: E402
from plink.order import order_hosts  # noqa: E402


def _kept(price, model, perm, others, **kw):
    """``by_price`` switched off: the annealed order stays."""
    return np.asarray(perm), float(price(perm)), None


def search(probe, algo: str, size: int, old: bool, max_iter: int) -> dict:
    saved = gs.MAX_GROUP_ORDERS, gs.by_price
    if old:
        gs.MAX_GROUP_ORDERS, gs.by_price = 0, _kept  # (0: the cyclic orders only)
    try:
        res = order_hosts(probe, algo, size=size, seed=0, max_iter=max_iter, n_random=20, hedge=False)
    finally:
        gs.MAX_GROUP_ORDERS, gs.by_price = saved
    return {"price": res.cost_plink, "order": [int(i) for i in res.order], "by_price": res.solver.get("by_price")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="proof data files (default: every saved one)")
    ap.add_argument("--max-iter", type=int, default=1000, help="annealing iterations (default 1000)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)
    results = ROOT / "benchmarks" / "results"
    files = [Path(f).resolve() for f in args.files] or saved_cases(results)
    rows = []
    print(f"{'run':<34} {'probe':<9} {'algo':<7} {'old':>8} {'new':>8} {'new/old':>7}  by_price")
    for f in files:
        doc = load_saved(ap, f)
        if not isinstance(doc, dict) or "probes" not in doc or "collectives" not in doc:
            continue
        algos = sorted({run_algos(doc, c)["default"] for c in doc["collectives"] if c.startswith("mpi")} - {"ring"})
        for kind in ("latency", "bandwidth"):
            if kind not in doc["probes"]:
                continue
            probe = from_dict(doc["probes"][kind])
            for algo in algos:
                old = search(probe, algo, doc["mpi_size_bytes"], True, args.max_iter)
                new = search(probe, algo, doc["mpi_size_bytes"], False, args.max_iter)
                r = {"run": str(f.relative_to(results)) if f.resolve().is_relative_to(results) else str(f),
                     "probe": kind, "algo": algo, "old": old["price"], "new": new["price"],
                     "by_price": new["by_price"], "same": old["order"] == new["order"]}
                rows.append(r)
                bp = "" if r["by_price"] is None else f"{r['by_price']['price_before'] / r['by_price']['price']:.3f}x"
                print(f"{r['run']:<34} {kind:<9} {algo:<7} {r['old']:>8.4f} {r['new']:>8.4f} "
                      f"{r['new'] / r['old']:>7.3f}  {bp}", flush=True)
    if not rows:
        print("no proof data with probes found", file=sys.stderr)
        return 1
    ratio = np.array([r["new"] / r["old"] for r in rows])
    print(f"\n{len(rows)} searches ({len({r['run'] for r in rows})} runs): the new order priced >2% lower in "
          f"{int((ratio < 0.98).sum())}, >2% higher in {int((ratio > 1.02).sum())}, within 2% in "
          f"{int(((ratio >= 0.98) & (ratio <= 1.02)).sum())}; geometric mean new/old {np.exp(np.log(ratio).mean()):.3f}, "
          f"range {ratio.min():.3f}-{ratio.max():.3f}; a different order in {sum(not r['same'] for r in rows)}; "
          f"by_price took a start in {sum(r['by_price'] is not None for r in rows)}")
    for algo in sorted({r["algo"] for r in rows}):
        a = np.array([r["new"] / r["old"] for r in rows if r["algo"] == algo])
        print(f"  {algo}: {len(a)} searches, >2% lower {int((a < 0.98).sum())}, >2% higher {int((a > 1.02).sum())}, "
              f"geometric mean {np.exp(np.log(a).mean()):.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
