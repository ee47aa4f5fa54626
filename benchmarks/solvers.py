"""Solver quality and speed, as ratios against baselines measured in the same run.

    python benchmarks/solvers.py            # full run (~20 min on 2 cores)
    python benchmarks/solvers.py --quick    # reduced run (~3 min)

1. TSPLIB (read at run time from ``shared/data/tsplib`` beside the checkout,
   or ``$PLINK_TSPLIB``; skipped with a message if absent): the shipped
   optimal tours are costed first (must equal ``optima.csv``), then plink's
   ring search (``solvers.solve.minimise``, ``--jobs`` processes) is run with
   a time limit of ``min(30, max(3, N/25))`` s: cost / optimum and time; and
   LKH-3 (``elkai``, ``runs=1`` by default, ``--lkh-runs``; elkai's own
   default is 10): cost / optimum, time, and the
   plink / LKH cost and time ratios; then plink again with a quarter of
   LKH's time (at least 0.2 s): its cost / LKH's ("LKH/4: p/LKH").
2. Simulated datacenters (``plink.data.simulate``), N = 64 ... 1024: plink ring
   vs LKH-3 (on the matrix scaled to integer 0.1 us units), also with a
   quarter of LKH's time.
3. hd / dbt / bcube: annealing (1 s) vs the exhaustive optimum at N = 8, and
   a run vs a 10x longer run at N = 256.
4. Scaling: the whole pipeline (ring and hd) at N = 1024 ... 4096, time and
   peak resident memory, each in a fresh process.
5. Certified optima for small N: time of the exact stage.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# this file is named like the `solvers` package: keep its folder off the import path
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != HERE]
sys.path.insert(0, ROOT)

from plink.data.simulate import simulate_datacenter  # noqa: E402
from plink.solvers.costmodels import CostModel, PairCost, ring_hops  # noqa: E402
from plink.solvers.exact import solve_exact  # noqa: E402
from plink.solvers.solve import minimise  # noqa: E402
from benchmarks.tsplib import check_optimal_tours, find_folder, optima, read_tsp  # noqa: E402

QUICK_TSP = ["att48", "gr96", "ch150", "brg180", "a280", "pr439"]


def _lkh_child(matrix, runs):
    import elkai

    t = time.perf_counter()
    tour = elkai.DistanceMatrix(matrix.astype(np.int64).tolist()).solve_tsp(runs=runs)
    return tour[:-1], time.perf_counter() - t


def _lkh(matrix: np.ndarray, runs: int = 10) -> tuple[np.ndarray, float]:
    """LKH-3 through elkai, in a child process (LKH aborts the process on some inputs)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=mp.get_context("fork")) as ex:
        tour, sec = ex.submit(_lkh_child, matrix, runs).result()
    return np.array(tour), sec


def _ring(matrix, perm) -> float:
    return ring_hops(matrix, np.asarray(perm))


def _plink_ring(matrix, time_limit, jobs, seed=0):
    model = CostModel("ring", PairCost.from_matrices(matrix))
    t = time.perf_counter()
    r = minimise(model, time_limit=time_limit, jobs=jobs, seed=seed)
    return r, time.perf_counter() - t


def bench_tsplib(args) -> None:
    folder = find_folder()
    print("\n## 1. Ring on TSPLIB (optimum = published optimal tour length)")
    if folder is None:
        print("TSPLIB folder not found (shared/data/tsplib or $PLINK_TSPLIB): skipped")
        return
    checks = check_optimal_tours(folder)
    bad = [c for c in checks if c[1] != c[2]]
    print(f"distance functions: {len(checks) - len(bad)}/{len(checks)} shipped optimal tours cost exactly the listed optimum")
    if bad:
        print("MISMATCH:", bad)
    rows = optima(folder)
    if args.quick:
        rows = [r for r in rows if r["name"] in QUICK_TSP]
    print(f"plink: minimise(), --jobs {args.jobs}, time limit min(30, max(3, N/25)) s"
          + (" (quick: / 10)" if args.quick else "") + f"; LKH-3: elkai runs={args.lkh_runs}")
    hdr = f"{'instance':10s} {'N':>5s} {'type':>8s} {'plink/opt':>10s} {'plink s':>8s} {'LKH/opt':>8s} {'LKH s':>7s} {'plink/LKH cost':>15s} {'plink/LKH time':>15s} {'LKH/4: p/LKH':>14s} {'s':>6s}"
    print(hdr)
    ratios = []
    for row in rows:
        name, n, opt = row["name"], int(row["n"]), float(row["optimal_length"])
        d = read_tsp(os.path.join(folder, name + ".tsp"))
        tl = min(30.0, max(3.0, n / 25))
        if args.quick:
            tl = max(1.0, tl / 10)
        lt, lsec = _lkh(d, args.lkh_runs)
        lc = _ring(d, lt)
        r, pt = _plink_ring(d, tl, args.jobs)
        pc = _ring(d, r.perm)
        # the speed target: plink given a quarter of LKH's time (at least 0.2 s)
        rq, qt = _plink_ring(d, max(0.2, lsec / 4), args.jobs)
        qc = _ring(d, rq.perm)
        ratios.append((n, pc / opt, pc / lc, pt / lsec, qc / opt))
        print(f"{name:10s} {n:5d} {row['edge_weight_type']:>8s} {pc / opt:10.4f} {pt:8.1f} {lc / opt:8.4f} {lsec:7.1f} "
              f"{pc / lc:15.4f} {pt / lsec:15.2f} {qc / lc:14.4f} {qt:6.1f}", flush=True)
    arr = np.array(ratios)
    print(f"plink/opt: mean {arr[:, 1].mean():.4f}, worst {arr[:, 1].max():.4f}; "
          f"instances <= 1.005 x opt: {(arr[:, 1] <= 1.005).sum()}/{len(arr)}; "
          f"in a quarter of LKH's time: worst {arr[:, 4].max():.4f}, <= 1.005 x opt: {(arr[:, 4] <= 1.005).sum()}/{len(arr)}")


def bench_datacenter(args) -> None:
    print("\n## 2. Ring on simulated datacenters: plink vs LKH-3 (same matrix, integer 0.1 us units for LKH)")
    sizes = [64, 256] if args.quick else [64, 128, 256, 512, 1024]
    print(f"{'N':>5s} {'plink s':>8s} {'LKH s':>7s} {'plink/LKH cost':>15s} {'plink/LKH time':>15s} {'plink/lower bound':>18s} {'LKH/4: p/LKH':>14s} {'s':>6s}")
    for n in sizes:
        racks = n // 16
        probe = simulate_datacenter(racks=max(1, racks // 4), hosts_per_rack=16, rows=min(4, racks), seed=n,
                                    jitter=0.1, outlier_frac=0.02)
        m = np.maximum(probe.latency, probe.latency.T)
        np.fill_diagonal(m, 0)
        tl = min(30.0, max(2.0, n / 40))
        if args.quick:
            tl = max(1.0, tl / 10)
        r, pt = _plink_ring(m, tl, args.jobs)
        pc = _ring(m, r.perm)
        try:  # LKH-3 wants modest integers: 0.1 us units
            lt, lsec = _lkh(np.round(m * 10), args.lkh_runs)
        except Exception as exc:  # noqa: BLE001 - report and go on
            print(f"{n:5d} {pt:8.1f}  LKH failed: {type(exc).__name__}")
            continue
        lc = _ring(m, lt)
        rq, qt = _plink_ring(m, max(0.2, lsec / 4), args.jobs)  # a quarter of LKH's time
        qc = _ring(m, rq.perm)
        print(f"{n:5d} {pt:8.1f} {lsec:7.1f} {pc / lc:15.4f} {pt / lsec:15.2f} {pc / r.lower_bound:18.4f}"
              f" {qc / lc:14.4f} {qt:6.1f}", flush=True)


def _dc_model(algo, n, seed, base=2):
    racks = max(2, n // 8)
    probe = simulate_datacenter(racks=racks, hosts_per_rack=n // racks, seed=seed, jitter=0.1, bandwidth=True)
    from plink.order import pair_cost

    pc, _ = pair_cost(probe)
    return CostModel(algo, pc, 25 * 1024**2, base)


def bench_models(args) -> None:
    print("\n## 3. hd / dbt / bcube")
    print("N = 8, simulated 4 racks x 2 hosts with bandwidth, 25 MiB; annealing alone (1 s, exact search off) vs exhaustive optimum")
    print(f"{'algo':6s} {'anneal/opt':>10s} {'random median/opt':>18s} {'exhaustive s':>13s}")
    for algo in ("hd", "dbt", "bcube"):
        ratios, rnd = [], []
        for seed in range(3 if args.quick else 10):
            model = _dc_model(algo, 8, seed)
            t = time.perf_counter()
            perm, opt, _ = solve_exact(model)
            ex_s = time.perf_counter() - t
            a = minimise(model, time_limit=1.0, seed=seed, exact=False)
            ratios.append(a.cost / opt)
            rng = np.random.default_rng(seed)
            rnd.append(np.median([model(rng.permutation(8)) for _ in range(200)]) / opt)
        print(f"{algo:6s} {np.mean(ratios):10.4f} {np.mean(rnd):18.3f} {ex_s:13.2f}   (worst anneal/opt {max(ratios):.4f}, {len(ratios)} instances)")
    short = 1.0 if args.quick else 3.0
    print(f"\nN = 256, 32 racks x 8 with bandwidth: {short:g} s vs {10 * short:g} s (10x longer), --jobs {args.jobs}")
    print(f"{'algo':6s} {'short/long cost':>16s} {'short/start':>12s} {'long/lower bound':>17s}")
    for algo in ("hd", "dbt", "bcube"):
        model = _dc_model(algo, 256, 7, base=4 if algo == "bcube" else 2)
        s = minimise(model, time_limit=short, seed=1, jobs=args.jobs)
        lg = minimise(model, time_limit=10 * short, seed=1, jobs=args.jobs)
        print(f"{algo:6s} {s.cost / lg.cost:16.4f} {s.cost / s.info['start_cost']:12.4f} {lg.cost / lg.lower_bound:17.3f}", flush=True)


def bench_exact(args) -> None:
    print("\n## 5. Certified optima for small N (pipeline: minimise(), random symmetric latency)")
    print(f"{'algo':6s} {'N':>3s} {'method':>11s} {'seconds':>8s} {'proven':>7s}")
    cases = [("ring", 12), ("ring", 16), ("hd", 8), ("dbt", 8), ("bcube", 8), ("hd", 9), ("dbt", 9)]
    for algo, n in cases:
        rng = np.random.default_rng(n)
        m = rng.random((n, n)) * 100
        model = CostModel(algo, PairCost.from_matrices(np.maximum(m, m.T)), 0)
        t = time.perf_counter()
        r = minimise(model, time_limit=10)
        print(f"{algo:6s} {n:3d} {r.method:>11s} {time.perf_counter() - t:8.2f} {str(r.proven_optimal):>7s}", flush=True)


def _scale_one(algo: str, n: int, tl: float, jobs: int) -> None:
    probe = simulate_datacenter(racks=max(1, n // 256), hosts_per_rack=32, rows=8, seed=1)
    from plink.order import pair_cost

    pc, _ = pair_cost(probe)
    model = CostModel(algo, pc, 0)
    t = time.perf_counter()
    r = minimise(model, time_limit=tl, jobs=jobs, seed=0)
    el = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = r.info.get("start_cost", r.cost)
    print(f"{algo:5s} {n:5d} {tl:7.1f} {el:8.1f} {rss:10.0f} {start / r.cost:12.3f} {r.cost / r.lower_bound:10.3f}", flush=True)


def bench_scaling(args) -> None:
    print("\n## 4. Scaling: minimise() incl. warm starts and bound, latency only; fresh process each "
          "(peak RSS includes the simulated probe data)")
    print(f"{'algo':5s} {'N':>5s} {'limit s':>7s} {'solve s':>8s} {'peak MiB':>10s} {'start/plink':>12s} {'plink/LB':>10s}")
    sizes = [1024, 4096] if args.quick else [1024, 2048, 4096]
    for algo in ("ring", "hd"):
        for n in sizes:
            tl = 5.0 if args.quick else 10.0
            subprocess.run([sys.executable, os.path.abspath(__file__), "--scale-one", algo, str(n), str(tl), str(args.jobs)],
                           check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="reduced run")
    ap.add_argument("--jobs", type=int, default=2, help="search processes for plink (default 2)")
    ap.add_argument("--lkh-runs", type=int, default=1, help="LKH runs per instance (elkai's default is 10)")
    ap.add_argument("--only", help="comma-separated sections: tsplib,datacenter,models,scaling,exact")
    ap.add_argument("--scale-one", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scale_one:
        algo, n, tl, jobs = args.scale_one
        _scale_one(algo, int(n), float(tl), int(jobs))
        return
    print(f"# plink solver benchmark ({'quick' if args.quick else 'full'}), {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    for name, fn in (("tsplib", bench_tsplib), ("datacenter", bench_datacenter), ("models", bench_models),
                     ("scaling", bench_scaling), ("exact", bench_exact)):
        if args.only is None or name in args.only.split(","):
            fn(args)


if __name__ == "__main__":
    main()
