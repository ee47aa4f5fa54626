"""What one extra rack crossing of a ring costs, timed with Gloo (helper 59; root; run from the repository).

The saved probe 2026-12-03-small-clusters-bw/2-3-4-udp-bw/p0.json (racks of 2, 3, 4 hosts) had its rack of 4 cut
in two by the latencies; plink order's ring for it crossed racks 4 times before commit c1c87a2 and 3 times after.
This builds a fresh netns cluster of the same shape (prefix gw59, subnet 10.59; 400 Mbit/s host links and rack
uplinks, extra_hops=4, sshd, as benchmarks/structure_netns.py), maps both saved orders onto it by (rack, host
index) (bw54r2h1 -> gw59r2h1), and times a 16 MiB float32 Gloo all-reduce (examples/netns-cluster/launch.py
run_gloo: one process per host, 2 warm-ups, 5 timed, the slowest rank's time of each) of:
  A old plink order (orders.json at 0b080e5), B new plink order (orders.json at c1c87a2),
  C the racks in a row, D interleaved (r0h0 r1h0 r2h0 r0h1 r1h1 r2h1 r1h2 r2h2 r2h3),
in 3 passes A B C D, D C B A, A B C D (one run_gloo launch each).  Usage:
  sudo "$(command -v python)" run.py OUTDIR
"""
import json, os, re, subprocess, sys, time, statistics
from pathlib import Path
ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples" / "netns-cluster"))
sys.path.insert(0, str(ROOT))
import launch
from plink.probes.netns import NetnsCluster

OUT = Path(sys.argv[1]); OUT.mkdir(parents=True, exist_ok=True)
SAVED = "benchmarks/results/2026-12-03-small-clusters-bw/2-3-4-udp-bw/orders.json"
PREFIX, SUBNET = "gw59", "10.59"
def load(): return " ".join(Path("/proc/loadavg").read_text().split()[:3])
def ts(): return time.strftime('%H:%M:%S', time.gmtime())
def saved(commit):
    d = json.loads(subprocess.run(["git", "show", f"{commit}:{SAVED}"], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout)
    return d["p0.json"]
def mine(name):  # bw54r2h1 -> gw59r2h1 by (rack, host index)
    m = re.fullmatch(r"[a-z0-9]*?r(\d+)h(\d+)", name)
    return f"{PREFIX}r{m.group(1)}h{m.group(2)}"

old, new = saved("0b080e5"), saved("c1c87a2")
print(ts(), "UTC start, load", load(), "| uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
      flush=True)
print("saved old (0b080e5):", " ".join(old), "\nsaved new (c1c87a2):", " ".join(new), flush=True)
with NetnsCluster(hosts_per_rack=[2, 3, 4], prefix=PREFIX, subnet=SUBNET, host_mbit=400, uplink_mbit=400,
                  extra_hops=4, sshd=True) as c:
    print(ts(), "built, load", load(), flush=True)
    for h in c.hosts: print(h.name, h.address, h.netns, c.rack_of(h.name), flush=True)
    by = {h.name: h for h in c.hosts}
    racks = {}
    for h in c.hosts: racks.setdefault(h.rack, []).append(h)
    rk = sorted(racks)
    inter = [by[f"{PREFIX}r{r}h{i}"] for i in range(max(len(v) for v in racks.values())) for r in rk
             if i < len(racks[r])]
    orders = {"old plink (0b080e5)": [by[mine(n)] for n in old], "new plink (c1c87a2)": [by[mine(n)] for n in new],
              "racks in a row": [h for r in rk for h in racks[r]], "interleaved": inter}
    def crossings(o):
        n = len(o); return sum(o[i].rack != o[(i + 1) % n].rack for i in range(n))
    files = {}
    for j, (k, o) in enumerate(orders.items()):
        assert sorted(h.name for h in o) == sorted(by), k
        p = OUT / f"order_{'ABCD'[j]}.txt"; p.write_text("".join(f"{h.address}\n" for h in o)); files[k] = p
        print(f"{'ABCD'[j]} {k}: {crossings(o)} crossings: {' '.join(h.name for h in o)}  -> {p.name}", flush=True)
    names = list(orders)
    passes = [names, names[::-1], names]
    per = {k: [] for k in names}
    summary = {"when_utc": time.strftime('%Y-%m-%d', time.gmtime()), "size_bytes": 16 * 2**20, "warmup": 2,
               "repeats": 5, "cluster": {"racks": [2, 3, 4], "prefix": PREFIX, "subnet": SUBNET, "host_mbit": 400,
                                         "uplink_mbit": 400, "extra_hops": 4},
               "orders": {k: {"file": files[k].name, "hosts": [h.name for h in orders[k]],
                              "crossings": crossings(orders[k]), "passes": []} for k in names}, "passes": []}
    for p, seq in enumerate(passes):
        l0, t0 = load(), time.monotonic()
        print(ts(), f"pass {p}: {' '.join('ABCD'[names.index(k)] for k in seq)}, load {l0}", flush=True)
        res = launch.run_gloo(c, [files[k] for k in seq], size=16 * 2**20, repeats=5, warmup=2,
                              port=29600 + 20 * p)
        dt = time.monotonic() - t0
        print(ts(), f"pass {p}: {dt:.0f} s, load {load()}", flush=True)
        (OUT / f"gloo_pass{p}.json").write_text(json.dumps(res))
        summary["passes"].append({"pass": p, "sequence": ["ABCD"[names.index(k)] for k in seq], "load_before": l0,
                                  "load_after": load(), "seconds": round(dt, 1)})
        for i, k in enumerate(seq):
            rs = [r for r in res if r["order"] == i]
            slow = [max(t) for t in zip(*(r["seconds"] for r in rs))]
            rec = {"pass": p, "slowest_rank_times": slow, "median": statistics.median(slow), "min": min(slow),
                   "max": max(slow), "ranks": len(rs), "correct": all(r["correct"] for r in rs)}
            summary["orders"][k]["passes"].append(rec); per[k] += slow
            print(f"  {'ABCD'[names.index(k)]} {k}: median {rec['median']:.3f} s ({rec['min']:.3f}-{rec['max']:.3f}),"
                  f" ranks {rec['ranks']}, correct {rec['correct']}", flush=True)
    for k in names:
        t = per[k]
        summary["orders"][k]["overall"] = {"n": len(t), "median": statistics.median(t), "min": min(t), "max": max(t)}
        print(f"overall {k} ({crossings(orders[k])} crossings): median {statistics.median(t):.3f} s "
              f"({min(t):.3f}-{max(t):.3f}), n={len(t)}", flush=True)
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1))
    print(ts(), "done, tearing down, load", load(), flush=True)
left = [l for l in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()
        if l.startswith(PREFIX)]
print(ts(), "torn down; gw59 namespaces left:", left or "none", flush=True)
