"""Compiled (numba) vs pure-Python ring local search: the same moves, the same local optimum.

    python benchmarks/ring_kernel_speed.py [--n 1000] [--seeds 3]

Times ``local_search`` from a random tour on random Euclidean instances with each engine
(after one warm-up call, so numba's compile is not counted) and prints the speed ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from plink.solvers.ringsearch import kernel, local_search, tour_length, warm_kernel


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    warm_kernel()
    if kernel() is None:
        print("numba is not available: nothing to compare")
        return 1
    print(f"{'seed':>4} {'N':>5} {'python s':>9} {'numba s':>8} {'speed-up':>9} {'same tour length':>17}")
    ratios = []
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        xy = rng.random((args.n, 2))
        m = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
        start = rng.permutation(args.n)
        t = time.perf_counter()
        a = local_search(m, start, engine="python")
        tp = time.perf_counter() - t
        t = time.perf_counter()
        b = local_search(m, start, engine="numba")
        tn = time.perf_counter() - t
        ratios.append(tp / tn)
        same = abs(tour_length(m, a) - tour_length(m, b)) < 1e-9 * tour_length(m, a)
        print(f"{seed:>4} {args.n:>5} {tp:9.2f} {tn:8.3f} {tp / tn:8.1f}x {str(same):>17}")
    print(f"speed-up: median {np.median(ratios):.1f}x (min {min(ratios):.1f}, max {max(ratios):.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
