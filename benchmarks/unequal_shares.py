"""Do unequal TCP shares explain the price's misranking of Rabenseifner's orders?  Over every saved proof run.

The fluid price (``solvers.fluid``) shares every link max-min fairly.  TCP does not: flows that share a
bottleneck get unequal rates (``benchmarks/hd_steps_netns.py``'s iperf3 lines: 4 flows over one 333
Mbit/s uplink direction got 69-97 Mbit/s each), so some exchanges of a step end late and hold up the
next step of their ranks.  This prices each saved run's orders with *weighted* max-min shares, every
flow's weight drawn from a log-normal of spread ``sigma`` (mean over ``--draws`` draws, seeded), and ranks
the orders against their measured times as ``benchmarks/price_models.py`` does (Spearman, orders priced
within 2% tied), for recursive doubling and Rabenseifner, from the latency and the ``--bandwidth``
probe.  Sigma 0 is plink's price.  Prints the mean over the runs per sigma, how many runs each sigma
ranks better / worse than sigma 0, and the runs under the 0.9 target; ``--runs`` lists every run.
Deterministic; about a minute::

    python benchmarks/unequal_shares.py
    python benchmarks/unequal_shares.py --sigmas 0 0.3 --draws 32 --runs
    python benchmarks/unequal_shares.py --collectives mpi_tree --sigmas 0 0.3 0.6   # Open MPI's tree (~2 min)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import benchmarks.collectives_netns as proof  # noqa: E402

COLLECTIVES = ("mpi_recursive_doubling", "mpi_rabenseifner")
ALL_COLLECTIVES = ("gloo_ring", "mpi_ring", "mpi_recursive_doubling", "mpi_rabenseifner", "mpi_tree")


def unequal_price(model, perm, sigma: float, draws: int, seed: int = 0, sndbuf: float | None = None) -> float:
    """``model``'s price of ``perm`` (a ``FluidCostModel``) with log-normal(0, ``sigma``) flow weights,
    mean over ``draws`` draws (the same draws for every order), and with senders released ``sndbuf``
    bytes before delivery (``benchmarks/send_buffers.py``); ``sigma`` 0 and ``sndbuf`` None: the
    price itself."""
    price = float(model(perm))
    if sigma == 0 and sndbuf is None:
        return price
    rng = np.random.default_rng(seed)
    weights = [None] if sigma == 0 else (np.exp(sigma * rng.standard_normal(model.n_flows)) for _ in range(draws))
    return price - model.fluid_time(perm) + float(np.mean([model.fluid_time(perm, w, sndbuf) for w in weights]))


def variant_rows(doc: dict, collectives, prices) -> dict:
    """``{(collective, probe): [Spearman per price]}`` of one saved run: its distinct orders priced by
    each of ``prices`` (callables ``(model, perm) -> seconds``, ``model`` the ``FluidCostModel`` of the
    run's probe) and ranked against their measured times, orders priced within 2% tied."""
    from plink.solvers.fluid import FluidCostModel

    probes = {k: proof.from_dict(v) for k, v in doc["probes"].items()}
    orders, out = doc["orders"], {}
    for coll in collectives:
        names = [n for n in orders if coll in orders[n]["measured"]]
        if len(names) < 3:
            continue
        algo = proof.run_algos(doc, coll)["default"]
        uniq = proof.first_of_each(orders, names)
        meas = np.array([orders[names[i]]["measured"][coll] for i in uniq])
        for kind in ("latency", "bandwidth"):
            model = FluidCostModel(algo, proof.price_network(probes[kind]), doc["mpi_size_bytes"])
            res = proof.resolution_for("shared")
            out[(coll, kind)] = [float(spearmanr(proof.ranks(np.array([price(
                model, orders[names[i]]["order"]) for i in uniq]), res), meas)[0]) for price in prices]
    return out


def variant_table(ap, files, collectives, prices, labels, runs: bool = False) -> str:
    """Every saved run of ``files`` through ``variant_rows``; the table of the mean Spearman per price,
    how many runs each ranks better / worse than the first price, and how many fall under 0.9
    (``runs``: every run's figures printed first).  A file that is not a saved case is ``ap.error``."""
    rows: dict = {}
    for path in files:
        try:
            got = variant_rows(json.loads(path.read_text()), collectives, prices)
        except (OSError, ValueError, KeyError) as exc:
            ap.error(f"{path}: not a saved proof case ({exc.__class__.__name__}: {exc})")
        name = f"{path.parent.name}/{path.name}"
        for key, sp in got.items():
            rows.setdefault(key, []).append(sp)
            if runs:
                print(f"{name:<40} {key[0]:<24} {key[1]:<9} " + " ".join(f"{x:.3f}" for x in sp))
    out = [f"{'collective':<24} {'probe':<9} {'runs':>4} " + " ".join(f"{lab:>17}" for lab in labels),
           f"{'':<24} {'':<9} {'':>4} " + " ".join(f"{'mean b/w <0.9':>17}" for _ in labels)]
    for (coll, kind), r in rows.items():
        a = np.array(r)
        cells = []
        for j in range(len(labels)):
            b, w = int(np.sum(a[:, j] > a[:, 0] + 1e-9)), int(np.sum(a[:, j] < a[:, 0] - 1e-9))
            cells.append(f"{f'{a[:, j].mean():.3f} {b}/{w} {int(np.sum(a[:, j] < 0.9))}':>17}")
        out.append(f"{coll:<24} {kind:<9} {len(r):>4} " + " ".join(cells))
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="saved proof cases (default: every one under --results)")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--sigmas", nargs="+", type=float, default=[0.0, 0.2, 0.4, 0.7],
                    help="log-normal spreads of the flow weights (0: plink's price)")
    ap.add_argument("--draws", type=int, default=16, help="draws of the weights per order")
    ap.add_argument("--runs", action="store_true", help="print every run's figures")
    ap.add_argument("--collectives", nargs="+", default=list(COLLECTIVES), choices=ALL_COLLECTIVES,
                    help="the saved runs' collectives to rank (default: the butterflies)")
    args = ap.parse_args(argv)
    if not args.sigmas or any(s < 0 or not np.isfinite(s) for s in args.sigmas) or args.draws < 1:
        ap.error("--sigmas must be >= 0 and --draws >= 1")
    if not proof.shared_model_available():
        ap.error("needs plink's shared-link model (plink.solvers.contention)")
    sigmas = [0.0] + [s for s in args.sigmas if s != 0]
    prices = [lambda m, p, s=s: unequal_price(m, p, s, args.draws) for s in sigmas]
    table = variant_table(ap, [Path(f) for f in args.files] or proof.saved_cases(Path(args.results)), args.collectives,
                          prices, [f"s={s:g}" for s in sigmas], args.runs)
    print(f"Spearman(price, measured), orders priced within 2% tied, mean over the runs; flow weights "
          f"log-normal, {args.draws} draws")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
