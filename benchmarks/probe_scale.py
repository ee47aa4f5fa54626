#!/usr/bin/env python3
"""Per-host costs of ``plink probe`` measured at several sizes, and what they predict for 1,024+ hosts.

Reads the JSON lines that ``benchmarks/probe_time.py --append FILE`` wrote
(one per run; run it at 32, 64, 128, 256 hosts first) and fits each cost
by least squares on the model stated next to it:

=============================  =========================  ============================
cost                           model                      why
=============================  =========================  ============================
controller CPU, setup          a x N                      one SSH handshake per host
hosts' CPU, setup (sshd+agent) a x N                      per host; parallel on real VMs
controller CPU per round       a x N + b                  N/2 pairs' results + fixed
controller memory growth       a x N^2 x count + b        the samples kept per direction
probe file write               a x N^2 + b                the N x N matrices
rounds / bound                 measured ratio             the agents' self-timed slots
=============================  =========================  ============================

and prints, for each target size, the predicted wall time on real VMs
(hosts' setup in parallel, so setup = the controller's setup CPU or the
connection pipeline ``N / concurrency x per-host latency``, whichever is
larger) and on this machine (hosts' CPU shares its cores).  Every input
figure is printed with the run it came from, so the fit can be checked.

    python benchmarks/probe_scale.py runs.jsonl --sizes 512 1024 2048
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def fit_prop(x, y):
    """Least-squares ``a`` of ``y = a x`` (through the origin)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    return float(x @ y / (x @ x))


def fit_affine(x, y):
    a, b = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    return float(a), float(b)


def main() -> int:
    ap = argparse.ArgumentParser(description="fit per-host probe costs and extrapolate to large N")
    ap.add_argument("runs", help="JSON lines from benchmarks/probe_time.py --append")
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048])
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--host-latency", type=float, default=0.3,
                    help="seconds one connection holds a slot on real VMs (TCP + key exchange + auth + exec)")
    ap.add_argument("--cores", type=int, default=2, help="cores of the machine the runs were on")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.runs, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if r.get("scenario") == "time"]
    # setup and write costs are over before any host is lost; the rounds' costs
    # only count from runs where every pair was measured
    full = [r for r in rows if not r.get("missing_pairs")]
    if len(rows) < 2 or len(full) < 2:
        print("need at least two 'time' runs of different sizes with every pair measured", file=sys.stderr)
        return 1
    rows.sort(key=lambda r: r["hosts"])
    n = np.array([r["hosts"] for r in rows], float)
    cnt = np.array([r["count"] for r in rows], float)
    print("measured (benchmarks/probe_time.py; * = pairs missing: its setup and write costs are used, "
          "not its rounds):")
    print(" hosts  bound_s  wall_s  setup_s  rounds/bound  ctl_cpu_setup  hosts_cpu_setup  ctl_ms/round  "
          "rss_growth_MB  write_s")
    for r in rows:
        print(f"{'*' if r.get('missing_pairs') else ' '}{r['hosts']:5d}  {r['bound_s']:7.1f}  {r['wall_s']:6.1f}  {r['setup_s']:7.2f}  {r['ratio_rounds']:12.3f}  "
              f"{r['controller_cpu_setup_s']:13.2f}  {r['hosts_cpu_setup_s']:15.2f}  "
              f"{r['controller_cpu_ms_per_round']:12.2f}  "
              f"{r['controller_peak_rss_mb'] - r.get('controller_rss_before_mb', 0):13.1f}  "
              f"{r['phases_s'].get('write', float('nan')):7.2f}")
    ctl_setup = fit_prop(n, [r["controller_cpu_setup_s"] for r in rows])
    host_setup = fit_prop(n, [r["hosts_cpu_setup_s"] for r in rows])
    nf = np.array([r["hosts"] for r in full], float)
    ctl_round, ctl_round_b = fit_affine(nf, [r["controller_cpu_ms_per_round"] / 1000 for r in full])
    mem_a, mem_b = fit_affine(nf * nf * np.array([r["count"] for r in full], float),
                              [r["controller_peak_rss_mb"] - r.get("controller_rss_before_mb", 0) for r in full])
    wr_a, wr_b = fit_affine(n * n, [r["phases_s"].get("write", 0.0) for r in rows])
    ratio = max(r["ratio_rounds"] for r in full)
    print("\nfitted per-host costs:")
    print(f"  controller CPU to connect one host      {1000 * ctl_setup:7.1f} ms")
    print(f"  hosts' CPU to start one host's agent    {1000 * host_setup:7.1f} ms (sshd + python3 on the host)")
    print(f"  controller CPU per round per host       {1e6 * ctl_round:7.1f} us (+ {1000 * ctl_round_b:.1f} ms)")
    print(f"  controller memory per sample kept       {1e6 * mem_a:7.1f} bytes (+ {mem_b:.0f} MB)")
    print(f"  probe file write per matrix entry       {1e6 * wr_a:7.2f} us")
    print(f"  rounds / bound (worst measured)         {ratio:7.3f}")
    slot = args.count * args.interval * 1.01 + 0.002
    print(f"\npredicted (count {args.count}, interval {args.interval} s, concurrency {args.concurrency}, "
          f"{args.host_latency} s per connection on real VMs):")
    print("  hosts  bound_s  ctl_cpu/round  real-VM setup  real-VM wall  ratio   this-machine setup  ratio  "
          "memory_MB  write_s")
    for N in args.sizes:
        rounds = N - 1 if N % 2 == 0 else N
        bound = rounds * args.count * args.interval
        per_round = ctl_round * N + ctl_round_b
        setup_real = max(ctl_setup * N, N / args.concurrency * args.host_latency)
        write = wr_a * N * N + wr_b
        wall_real = setup_real + ratio * bound + write
        setup_here = (ctl_setup + host_setup) * N / args.cores
        wall_here = setup_here + ratio * bound + write
        keeps_up = "" if per_round < slot else "  (controller cannot keep up with a round!)"
        print(f"  {N:5d}  {bound:7.1f}  {1000 * per_round:10.1f} ms  {setup_real:11.1f} s  {wall_real:10.1f} s  "
              f"{wall_real / bound:5.2f}x  {setup_here:16.1f} s  {wall_here / bound:5.2f}x  "
              f"{mem_a * N * N * args.count + mem_b:9.0f}  {write:7.1f}{keeps_up}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
