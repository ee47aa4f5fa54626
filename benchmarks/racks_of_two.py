"""Racks of 2 hosts: plink's structure inference against average linkage given the true K.

    python benchmarks/racks_of_two.py [--seeds 3]

Simulated datacentres (``plink.data.simulate``) of racks of 2 hosts: 8, 16, 24, 32 or 40 racks in one row
and 2 rows of 12, each noise-free ("clean"), with moderate noise (jitter 0.1, 1% outliers, 10%
asymmetric pairs) and with the structure benchmark's kind of noise ("noisy": tenant noise 1 us,
5% noisy hosts at 10x, 3% outliers, 2% missing pairs). Prints, per shape and noise, for each seed:
K found by ``infer_hierarchy`` (number of groups from the data), its AMI against the racks, and
the AMI of average linkage on ``min(d_ij, d_ji)`` (missing pairs filled by the median) given the
true K, as ``benchmarks/structure.py`` runs it. Deterministic; ~20 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from benchmarks.structure import linkage_labels, raw_symmetric  # noqa: E402
from plink.data.simulate import simulate_datacenter  # noqa: E402
from plink.structure.hierarchy import infer_hierarchy  # noqa: E402

SHAPES = [(8, 1), (16, 1), (12, 2), (24, 1), (32, 1), (40, 1)]
NOISE = {
    "clean": {},
    "moderate": dict(jitter=0.1, outlier_frac=0.01, asymmetry=0.1),
    "noisy": dict(jitter=0.1, tenant_us=1.0, noisy_hosts=0.05, outlier_frac=0.03, asymmetry=0.1, missing_frac=0.02),
}


def main(argv=None) -> int:
    from sklearn.metrics import adjusted_mutual_info_score as ami

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 per shape and noise")
    args = ap.parse_args(argv)
    print("racks x rows  noise      per seed: plink K, plink AMI / average linkage given K")
    below = 0
    for racks, rows in SHAPES:
        for noise, kw in NOISE.items():
            cells = []
            for seed in range(args.seeds):
                p = simulate_datacenter(racks=racks, rows=rows, hosts_per_rack=2, seed=seed, **kw)
                truth = np.unique([t[-1] for t in p.truth.labels], return_inverse=True)[1]
                h = infer_hierarchy(p.latency)
                a, b = ami(truth, h.labels), ami(truth, linkage_labels(raw_symmetric(p.latency), truth.max() + 1, "average"))
                below += a < b - 1e-9
                cells.append(f"K={h.n_groups:<3d} {a:.3f}/{b:.3f}")
            print(f"{racks:>3d} x {rows}        {noise:<9s}  " + "   ".join(cells), flush=True)
    print(f"plink below average linkage given K in {below} of {len(SHAPES) * len(NOISE) * args.seeds} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
