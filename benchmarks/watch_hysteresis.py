"""How --min-gain trades order churn for cost: plink watch on noisy re-probes.

A simulated datacenter (8 racks x 8 hosts) is re-measured ``--runs`` times
with multiplicative log-normal noise (``--noise``); halfway through, the hosts
are moved (same names, new racks: a real change).  For each ``--min-gain``
threshold (and ``--window``), ``plink.watch.watch`` runs over the sequence and prints
how often the order changed and how far the order in force was, on average,
from the order plink finds on the noise-free matrix of that moment (model
cost, ratio >= 1).  Everything is measured in this run, with the
dissertation's pair-sum model (``watch(..., model="pairsum")``; ``plink watch``
defaults to the shared-link model, which a simulated latency matrix without
bandwidth cannot exercise).

    python benchmarks/watch_hysteresis.py            # about two minutes on 2 cores
    python benchmarks/watch_hysteresis.py --runs 10 --gains 0 5
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from plink.order import order_hosts, pair_cost  # noqa: E402
from plink.data.probefile import ProbeData  # noqa: E402
from plink.data.simulate import simulate_datacenter  # noqa: E402
from plink.watch import watch  # noqa: E402
from plink.solvers.costmodels import CostModel  # noqa: E402


def noisy(probe: ProbeData, rng: np.random.Generator, sigma: float) -> ProbeData:
    noise = np.exp(rng.normal(0, sigma, probe.latency.shape))
    noise = np.sqrt(noise * noise.T)
    return ProbeData(hosts=probe.hosts, latency=probe.latency * noise)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--noise", type=float, nargs="+", default=[0.02, 0.05, 0.1],
                    help="log-normal sigma of a re-measurement (several: one table each)")
    ap.add_argument("--gains", type=float, nargs="+", default=[0, 2, 5, 10], help="--min-gain values in percent")
    ap.add_argument("--windows", type=int, nargs="+", default=[1, 5], help="--window values")
    ap.add_argument("--max-iter", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    truths = [simulate_datacenter(racks=8, hosts_per_rack=8, seed=1, jitter=0.0),
              simulate_datacenter(racks=8, hosts_per_rack=8, seed=2, jitter=0.0)]
    half = args.runs // 2
    size = 25 * 2**20
    models = [CostModel("ring", pair_cost(t)[0], size) for t in truths]
    best = [order_hosts(t, "ring", max_iter=args.max_iter, time_limit=60, seed=0, model="pairsum").cost_plink
            for t in truths]
    print(f"{args.runs} re-probes of 64 hosts (8 racks x 8), ring, hosts moved to new racks at run {half}")
    print(f"{'noise':>6} {'window':>6} {'min-gain':>8} {'order changes':>14} {'cost / best, mean':>18} {'worst run':>10}")
    for sigma in args.noise:
        rng = np.random.default_rng(args.seed)
        measured = [noisy(truths[0 if r < half else 1], rng, sigma) for r in range(args.runs)]
        for w in args.windows:
            for g in args.gains:
                with tempfile.TemporaryDirectory() as d:
                    changes, ratios = 0, []
                    for r, probe in enumerate(measured):
                        res = watch(d, lambda p=probe: p, min_gain=g / 100, window=w, max_iter=args.max_iter,
                                    time_limit=60, seed=r, model="pairsum")
                        changes += res.changed and r > 0
                        k = 0 if r < half else 1
                        perm = np.array([truths[k].index(n) for n in res.order])
                        ratios.append(models[k](perm) / best[k])
                print(f"{sigma:>6g} {w:>6d} {g:>7g}% {changes:>14d} {np.mean(ratios):>18.3f} {max(ratios):>10.3f}")


if __name__ == "__main__":
    main()
