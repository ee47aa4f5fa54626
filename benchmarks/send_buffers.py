"""Do the socket send buffers explain the price's misranking of Rabenseifner's orders?  Over every saved proof run.

The fluid price (``solvers.fluid``) moves a rank on to its next step when the step's flows are
delivered.  With the kernel's TCP send buffers (``net.ipv4.tcp_wmem``, autotuned up to 4 MiB by
default) a rank's ``MPI_Sendrecv`` completes once its message is in the buffer, so it may move on
while its message still drains, and its next exchange shares its links with the old one
(``benchmarks/hd_steps_netns.py``: capping the buffers at 64 KiB made ``MPI_Allreduce`` rank six orders
as priced, Spearman 0.99 against 0.75).  This prices every saved run's orders with the fluid's
``sndbuf`` knob (a sender is done with a flow once at most ``sndbuf`` bytes are left; the receiver at
delivery; ``unequal_shares.unequal_price``) for each ``--sndbuf`` and ranks them against their measured times as
``benchmarks/price_models.py`` does (Spearman, orders priced within 2% tied), for recursive doubling,
Rabenseifner and the tree, from the latency and the ``--bandwidth`` probe.  ``none`` is plink's
price.  Prints the mean over the runs per buffer size, how many runs each ranks better / worse than
the price, and the runs under the 0.9 target; ``--runs`` lists every run.  Deterministic; a few
minutes (the numpy event loop)::

    python benchmarks/send_buffers.py
    python benchmarks/send_buffers.py --sndbuf none 64KiB 4MiB --runs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import benchmarks.collectives_netns as proof  # noqa: E402
from benchmarks.price_models import COLLECTIVES  # noqa: E402  (the clocked collectives price_models ranks)
from benchmarks.unequal_shares import unequal_price, variant_table  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="saved proof cases (default: every one under --results)")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--sndbuf", nargs="+", default=["none", "64KiB", "256KiB", "1MiB", "4MiB"],
                    help="send buffer sizes (none: plink's price, senders done at delivery)")
    ap.add_argument("--sigma", type=float, default=0.0,
                    help="also unequal TCP shares: log-normal spread of the flow weights (0: equal shares)")
    ap.add_argument("--draws", type=int, default=4, help="with --sigma: draws of the weights per order")
    ap.add_argument("--collectives", nargs="+", default=list(COLLECTIVES), choices=COLLECTIVES)
    ap.add_argument("--runs", action="store_true", help="print every run's figures")
    args = ap.parse_args(argv)
    if not (np.isfinite(args.sigma) and args.sigma >= 0) or args.draws < 1:
        ap.error("--sigma must be >= 0 and --draws >= 1")
    sizes = [None if v == "none" else proof.size_arg(ap, v) for v in args.sndbuf]
    if not proof.shared_model_available():
        ap.error("needs plink's shared-link model (plink.solvers.contention)")
    sizes = [None] + [s for s in sizes if s is not None]
    labels = ["none" if s is None else f"{s / 2**10:g} KiB" for s in sizes]
    # the first column is plink's price; with --sigma the others are priced with unequal shares too
    prices = [lambda m, p: unequal_price(m, p, 0.0, 1)] + [
        lambda m, p, s=s: unequal_price(m, p, args.sigma, args.draws, sndbuf=s)
        for s in sizes if args.sigma > 0 or s is not None]
    if args.sigma > 0:
        labels = ["price"] + [f"s={args.sigma:g}, {lab}" for lab in labels]
    table = variant_table(ap, [Path(f) for f in args.files] or proof.saved_cases(Path(args.results)),
                          args.collectives, prices, labels, args.runs)
    print("Spearman(price, measured), orders priced within 2% tied, mean over the runs; senders done "
          "with a flow when at most sndbuf bytes are left")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
