#!/usr/bin/env python3
"""Do racks stay separable when hosts are busy?  Fixed vs adaptive sampling, one cluster, one run (root).

The emulated cluster (network namespaces, sshd per host, racks behind
``extra_hops`` router namespaces: idle p10 RTT a few us inside a rack and
~10 us more across) gets busy-loop processes in some host namespaces (all
hosts share this machine's 2 cores, so every agent's wake-ups are delayed at
random).  Then, alternating, ``--repeats`` times each:

``fixed``     the old default: ``--count 20`` in one pass;
``adaptive``  ``--count 20 --passes 2 --max-count M``: two interleaved passes,
              then re-probing only the pairs whose p10 is not stable yet;
``adaptive-h`` the same probe with each host's self-ping overhead removed
              (``d_ij - (h_i + h_j) / 2``, ``meta.host_overhead_us``);
``fixed-max`` the same budget spent blindly: ``--count M`` in one pass.

For each probe: AUC of "cross-rack pair slower than in-rack pair" over all
(in-rack, cross-rack) pair combinations (1.0 = perfectly separated, 0.5 =
chance), the gap (fastest cross-rack p10 minus slowest in-rack p10; > 0 means
a threshold separates them), and the wall time.  The time budget of the
adaptive probe is ``max_count / count`` times the fixed one (it stops
earlier when the pairs are stable); the script checks it.

    sudo python3 benchmarks/probe_sampling.py            # 2 racks x 4, 3 busy hosts
    sudo python3 benchmarks/probe_sampling.py --busy 0   # idle control

Exits 1 unless the adaptive probe's median AUC is >= the fixed one's and >= 0.95.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plink.data.hostlist import HostEntry  # noqa: E402
from plink.probes.netns import NetnsCluster, unavailable_reason  # noqa: E402
from plink.probes.probe import probe_hosts  # noqa: E402
from plink.probes.ssh import SSHOptions  # noqa: E402
from plink.structure.metrics import rack_auc  # noqa: E402

BUSY = "import time\nwhile True:\n    pass\n"


def separation(lat: np.ndarray, rack: np.ndarray) -> tuple[float, float]:
    """AUC (cross > in-rack) and gap (min cross - max in-rack) over measured pairs."""
    iu = np.triu_indices(len(rack), 1)
    v = lat[iu]
    same = (rack[:, None] == rack[None, :])[iu]
    ok = np.isfinite(v)
    a, b = v[ok & same], v[ok & ~same]
    if not len(a) or not len(b):
        return float("nan"), float("nan")
    return rack_auc(b, a), float(b.min() - a.max())


def corrected(p) -> np.ndarray:
    h = np.array([np.nan if x is None else x for x in p.meta.get("host_overhead_us", [np.nan] * p.n)], float)
    h = np.where(np.isfinite(h), h, 0.0)
    return np.maximum(p.latency - (h[:, None] + h[None, :]) / 2.0, 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description="rack separation under busy hosts: fixed vs adaptive sampling")
    ap.add_argument("--racks", type=int, default=2)
    ap.add_argument("--hosts-per-rack", type=int, default=4)
    ap.add_argument("--busy", type=int, default=3, help="hosts that get a busy loop")
    ap.add_argument("--loops", type=int, default=1, help="busy loops per busy host")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--max-count", type=int, default=100)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--extra-hops", type=int, default=8)
    ap.add_argument("--prefix", default=None, help="namespace name prefix (default: picked per run)")
    ap.add_argument("--subnet", default=None, help="first two octets of a free /16 (default: picked per run)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"skipped: {reason}", file=sys.stderr)
        return 0
    rows = []
    with NetnsCluster(racks=args.racks, hosts_per_rack=args.hosts_per_rack, prefix=args.prefix,
                      subnet=args.subnet, host_mbit=100, uplink_mbit=100, extra_hops=args.extra_hops,
                      clean_shell=True) as c:
        rack = np.array([h.rack for h in c.hosts])
        # busy hosts spread over the racks: h0 of rack 0, h0 of rack 1, h1 of rack 0, ...
        order = [h for k in range(args.hosts_per_rack) for r in range(args.racks)
                 for h in c.hosts if h.rack == r and h.index == r * args.hosts_per_rack + k]
        busy = [h.name for h in order[:args.busy]]
        procs = [subprocess.Popen(["ip", "netns", "exec", c.host(b).netns, sys.executable, "-c", BUSY],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for b in busy for _ in range(args.loops)]
        try:
            time.sleep(1.0)
            hosts = [HostEntry(h.name) for h in c.hosts]
            ssh = SSHOptions(ssh_config=c.ssh_config)
            for rep in range(args.repeats):
                for mode in ("fixed", "adaptive", "fixed-max"):
                    kw = dict(count=args.count, interval=args.interval, ssh=ssh)
                    if mode == "adaptive":
                        kw.update(passes=2, max_count=args.max_count)
                    if mode == "fixed-max":
                        kw.update(count=args.max_count)
                    t0 = time.monotonic()
                    p = probe_hosts(hosts, **kw)
                    wall = time.monotonic() - t0
                    rounds = sum(e["seconds"] for e in p.meta["schedule"])
                    for name, lat in ((mode, p.latency), (mode + "-h", corrected(p))):
                        if name.startswith("fixed") and name.endswith("-h"):
                            continue
                        auc, gap = separation(lat, rack)
                        iu = np.triu_indices(len(rack), 1)
                        same = (rack[:, None] == rack[None, :])[iu]
                        v = lat[iu]
                        rows.append({"repeat": rep, "mode": name, "auc": round(auc, 3), "gap_us": round(gap, 1),
                                     "slowest_in_rack_us": round(float(np.nanmax(v[same])), 1),
                                     "fastest_cross_us": round(float(np.nanmin(v[~same])), 1),
                                     "wall_s": round(wall, 2), "rounds_s": round(rounds, 2),
                                     "passes": len(p.meta["schedule"]),
                                     "samples_max": int(np.max(p.meta.get("samples_received", [[0]])))})
        finally:
            for pr in procs:
                pr.kill()
                pr.wait()
    summary = {}
    for mode in ("fixed", "adaptive", "adaptive-h", "fixed-max"):
        rs = [r for r in rows if r["mode"] == mode]
        summary[mode] = {"auc_median": float(np.median([r["auc"] for r in rs])),
                         "auc_min": float(np.min([r["auc"] for r in rs])),
                         "gap_median_us": float(np.median([r["gap_us"] for r in rs])),
                         "rounds_s_median": float(np.median([r["rounds_s"] for r in rs])),
                         "wall_s_median": float(np.median([r["wall_s"] for r in rs]))}
    budget = args.max_count / args.count
    ratio = summary["adaptive"]["rounds_s_median"] / summary["fixed"]["rounds_s_median"]
    best = max(summary["adaptive"]["auc_median"], summary["adaptive-h"]["auc_median"])
    ok = best >= summary["fixed"]["auc_median"] and best >= 0.95 and ratio <= budget * 1.1
    res = {"busy_hosts": busy, "rows": rows, "summary": summary, "time_ratio_adaptive_vs_fixed": round(ratio, 2),
           "time_budget_ratio": budget, "ok": ok}
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"{len(rack)} hosts in {args.racks} racks, busy: {', '.join(busy) or 'none'}")
        print(f"{'repeat':>6} {'mode':>11} {'AUC':>6} {'gap us':>8} {'max in':>8} {'min cross':>9} {'rounds s':>8} {'passes':>6}")
        for r in rows:
            print(f"{r['repeat']:>6} {r['mode']:>11} {r['auc']:>6.3f} {r['gap_us']:>8.1f} {r['slowest_in_rack_us']:>8.1f} "
                  f"{r['fastest_cross_us']:>9.1f} {r['rounds_s']:>8.2f} {r['passes']:>6}")
        for mode, s in summary.items():
            print(f"{mode:>11}: median AUC {s['auc_median']:.3f} (min {s['auc_min']:.3f}), median gap "
                  f"{s['gap_median_us']:.1f} us, median probing time {s['rounds_s_median']:.2f} s")
        print(f"adaptive / fixed probing time {ratio:.2f}x (budget {budget:.0f}x)")
        print("OK" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
