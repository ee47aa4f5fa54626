"""The Gloo walk of this folder, as helper 56 ran it (root; a clone at /tmp/oi56 then; here the repository
root): one 3+3+2 netns cluster, 3 x (plink probe --bandwidth, plink order --algo ring, a 16 MiB Gloo
all-reduce of plink's order, the racks in a row and the interleaved input order). Usage:
sudo "$(command -v python)" run.py OUTDIR"""
import json, os, subprocess, sys, time, statistics, re
from pathlib import Path
ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples" / "netns-cluster"))
sys.path.insert(0, str(ROOT))
import launch
from plink.probes.netns import NetnsCluster

OUT = Path(sys.argv[1]); OUT.mkdir(parents=True, exist_ok=True)
def load(): return " ".join(Path("/proc/loadavg").read_text().split()[:3])
def ts(): return time.strftime('%H:%M:%S', time.gmtime())
env = dict(os.environ, PYTHONPATH=str(ROOT))
with NetnsCluster(hosts_per_rack=[3,3,2], prefix="oi56", subnet="10.56", host_mbit=400, uplink_mbit=400,
                  extra_hops=4, sshd=True) as c:
    print(ts(), "built, load", load(), flush=True)
    hf = Path(c.hostfile).read_text()
    print("hostfile given:\n" + hf, flush=True)
    hosts = list(c.hosts)
    for h in hosts: print(h.name, h.address, h.netns, c.rack_of(h.name), flush=True)
    racks = {}
    for h in hosts: racks.setdefault(c.rack_of(h.name), []).append(h)
    rk = sorted(racks)
    inter = []
    for i in range(max(len(v) for v in racks.values())):
        for r in rk:
            if i < len(racks[r]): inter.append(racks[r][i])
    contig = [h for r in rk for h in racks[r]]
    lines = [l for l in hf.splitlines() if l.strip() and not l.strip().startswith("#")]
    def line_of(h):
        for l in lines:
            toks = l.split()
            if h.address in toks or h.name in toks: return l
        raise SystemExit(f"no line for {h.name}")
    hostfile = OUT / "hosts_interleaved.txt"
    hostfile.write_text("\n".join(line_of(h) for h in inter) + "\n")
    print("interleaved hostfile:\n" + hostfile.read_text(), flush=True)
    by = {}
    for h in hosts: by[h.name] = h; by[h.address] = h
    def crossings(order):
        n = len(order); return sum(c.rack_of(order[i].name) != c.rack_of(order[(i+1)%n].name) for i in range(n))
    def write(order, name):
        p = OUT / name; p.write_text("\n".join(h.address for h in order) + "\n"); return p
    summary = []
    for k in range(3):
        pj, ot = OUT / f"p{k}.json", OUT / f"order{k}.txt"
        args = [sys.executable, "-m", "plink", "probe", str(hostfile), "--method", "udp", "--bandwidth", "-o", str(pj),
                "--ssh-config", c.ssh_config, "--known-hosts", c.known_hosts]
        print(ts(), "CMD", " ".join(args), "load", load(), flush=True)
        t0 = time.monotonic(); r = subprocess.run(args, capture_output=True, text=True, env=env)
        print(ts(), f"probe {k}: exit {r.returncode} in {time.monotonic()-t0:.0f} s, load {load()}\nstderr tail: {r.stderr[-600:]}", flush=True)
        args = [sys.executable, "-m", "plink", "order", str(pj), "--algo", "ring", "-o", str(ot)]
        print(ts(), "CMD", " ".join(args), flush=True)
        t0 = time.monotonic(); r = subprocess.run(args, capture_output=True, text=True, env=env)
        print(ts(), f"order {k}: exit {r.returncode} in {time.monotonic()-t0:.0f} s, load {load()}", flush=True)
        print("STDOUT:\n" + r.stdout + "\nSTDERR:\n" + r.stderr, flush=True)
        print("order file:\n" + ot.read_text(), flush=True)
        toks = [l.split()[0] for l in ot.read_text().splitlines() if l.strip() and not l.startswith("#")]
        porder = [by[t] for t in toks]
        orders = {"plink": porder, "racks": contig, "interleaved": inter}
        files = [write(o, f"o{k}_{n}.txt") for n, o in orders.items()]
        t0 = time.monotonic()
        res = launch.run_gloo(c, files, size=16 * 2**20, repeats=5, warmup=2, port=29600 + 10 * k)
        print(ts(), f"gloo {k}: {time.monotonic()-t0:.0f} s, load {load()}", flush=True)
        (OUT / f"gloo{k}.json").write_text(json.dumps(res))
        rec = {"probe": k}
        for i, (n, o) in enumerate(orders.items()):
            mine = [r["seconds"] for r in res if r["order"] == i]
            ok = all(r["correct"] for r in res if r["order"] == i)
            per = [max(t) for t in zip(*mine)]
            rec[n] = {"order": [h.name for h in o], "cross": crossings(o), "slowest_rank_times": per,
                      "median": statistics.median(per), "min": min(per), "max": max(per), "ranks": len(mine), "correct": ok}
            print(n, json.dumps(rec[n]), flush=True)
        summary.append(rec)
        (OUT / "summary.json").write_text(json.dumps(summary, indent=1))
    print(ts(), "done, tearing down, load", load(), flush=True)
print(ts(), "torn down", flush=True)
