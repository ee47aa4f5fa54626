"""Structure inference on real latency probes of small emulated clusters, against average linkage given K.

The simulated datacentres of ``benchmarks/structure.py`` have 60-344 hosts; a user trying plink on
a few VMs has 6-9. This benchmark reads saved ``plink probe`` files of netns clusters of 2-4 racks
of 2-4 hosts (``benchmarks/results/2026-12-03-small-clusters``: shape, method and load in its
README; the true rack of each host in ``truth.json``) and prints, per folder, how often
``plink group``'s grouping (:func:`plink.structure.hierarchy.infer_groups`, K from the data)
finds the racks exactly (AMI 1), its mean AMI, and the same for average linkage on
``min(d_ij, d_ji)`` given the true K (as ``benchmarks/structure.py`` runs it) and with K of 2..N/2 by
the best silhouette (not told K), then the probes where plink is under average linkage given K by
more than 0.02; with ``--structureless R``, how often it splits
matrices of 6-15 hosts that have no racks (6 kinds of noise, R each per size), the price of finding
small racks. Deterministic, ~10 s::

    python benchmarks/structure_netns.py
    python benchmarks/structure_netns.py --structureless 30   # and false splits of matrices without racks (~1.5 min)
    python benchmarks/structure_netns.py --orders              # and the rack crossings of plink order's ring
    python benchmarks/structure_netns.py DIR [DIR ...]          # other folders of the same layout

``--collect DIR`` (root, network namespaces, sshd) probes new clusters into ``DIR`` first, in the
layout read here: for each shape and method of ``--plan`` (default: the one the saved folders were
made with), a cluster of its own (``--prefix``/``--subnet``) probed ``runs`` times; a method
``M+bw`` probes with ``--method M --bandwidth`` (pair bandwidths in rounds and the uplink test, the
defaults ``--bw-seconds 2 --uplink-passes 3``) into ``<shape>-M-bw``; the load average is printed
before and after each shape (the machine may be shared)::

    sudo "$(command -v python)" benchmarks/structure_netns.py --collect /tmp/small --plan 3,3:fping:4
    sudo "$(command -v python)" benchmarks/structure_netns.py --collect /tmp/bw --plan 3,3,2:udp+bw:6 \
        --prefix bw54 --subnet 10.254
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.structure import linkage_labels, raw_symmetric  # noqa: E402
from plink.data.probefile import load_json  # noqa: E402
from plink.structure.hierarchy import infer_groups  # noqa: E402
from plink.structure.metrics import ami  # noqa: E402

SAVED = ROOT / "benchmarks" / "results" / "2026-12-03-small-clusters"
#: shape:method:runs of the saved folders (3-3-fping-first was an earlier run of 3,3:fping:10)
PLAN = ("3,3,2:fping:8", "3,3,2:udp:4", "3,3:fping:10", "2,2,2:fping:6", "4,4:fping:4", "2,3,4:fping:6",
        "3,3,3:fping:4", "2,2,2,2:fping:4",
        "3,3:udp:8", "2,2,2:udp:6", "4,4:udp:4", "2,3,4:udp:6", "3,3,3:udp:4", "2,2,2,2:udp:4")
MARGIN = 0.02


def folders(paths: list[Path]) -> list[Path]:
    """The folders holding a truth.json under each path (itself or one level down), sorted; a path
    that is a file (a README beside the folders, from a shell glob) is skipped."""
    out = []
    for p in paths:
        if (p / "truth.json").is_file():
            out.append(p)
        elif p.is_dir():
            out += sorted(d for d in p.iterdir() if (d / "truth.json").is_file())
    return out


def silhouette_k(s: np.ndarray) -> np.ndarray:
    """Average linkage on ``s`` (symmetric, zero diagonal) cut at the K of 2..N/2 with the best mean
    silhouette: the simple alternative that is not told K (it never answers one group)."""
    from sklearn.metrics import silhouette_score

    best = (-np.inf, np.zeros(s.shape[0], dtype=int))
    for k in range(2, s.shape[0] // 2 + 1):
        lab = linkage_labels(s, k, "average")
        if 2 <= len(set(lab)) < s.shape[0]:
            v = silhouette_score(s, lab, metric="precomputed")
            if v > best[0]:
                best = (v, lab)
    return best[1]


def crossings(order: list, rack_of) -> int:
    """Ring hops of ``order`` (the closing one included) between hosts of different racks; ``rack_of[h]``:
    host ``h``'s rack (a list by index, or a dict by name)."""
    return sum(rack_of[a] != rack_of[b] for a, b in zip(order, order[1:] + order[:1]))


def ring_crossings(probe, racks: list) -> int:
    """How many hops of ``plink order``'s ring (library :func:`plink.order.order_hosts`, the probe as
    it is: latency-only when it has no bandwidths) go between true racks; K racks need K."""
    from plink.order import order_hosts

    return crossings([int(i) for i in order_hosts(probe, "ring", time_limit=2.0).order], racks)


def score(folder: Path, orders: bool = False) -> list[dict]:
    """Per probe of ``folder``: plink's AMI (K from the data), average linkage's given the true K and with
    K by the best silhouette; with ``orders``, the rack crossings of plink's ring order."""
    truth = json.loads((folder / "truth.json").read_text())
    rows = []
    for f in sorted(folder.glob("p*.json"), key=lambda f: int(f.stem[1:]) if f.stem[1:].isdigit() else 0):
        probe = load_json(f)
        t = [truth[n] for n in probe.names]
        k = len(set(t))
        g = infer_groups(probe)
        s = raw_symmetric(np.asarray(probe.structure_latency, dtype=float))
        avg = linkage_labels(s, k, "average")
        rows.append({"probe": f.name, "k": k, "found": int(g.labels.max() + 1),
                     "plink": float(ami(t, g.labels)), "average": float(ami(t, avg)),
                     "silhouette": float(ami(t, silhouette_k(s)))})
        if orders:
            rows[-1]["crossings"] = ring_crossings(probe, t)
    return rows


#: structureless matrices (no racks): every pair's latency drawn alike, as ``kind``
NULL_KINDS = ("lognormal 0.3", "lognormal 0.6", "host overheads + gamma", "350 + gamma", "pareto", "8 us, 20% x2-5")


def structureless(n: int, kind: int, rng: np.random.Generator) -> np.ndarray:
    """An n x n symmetric latency matrix without racks, of noise ``NULL_KINDS[kind]``."""
    if kind == 0:
        m = 100 * rng.lognormal(0, 0.3, (n, n))
    elif kind == 1:
        m = 100 * rng.lognormal(0, 0.6, (n, n))
    elif kind == 2:
        h = rng.exponential(5, n)
        m = 10 + h[:, None] + h[None, :] + rng.gamma(2, 1, (n, n))
    elif kind == 3:
        m = 350 + rng.gamma(2, 10, (n, n))
    elif kind == 4:
        m = 10 * (1 + rng.pareto(2.0, (n, n)))
    else:
        m = 8 * rng.lognormal(0, 0.15, (n, n))
        m = np.where(rng.random((n, n)) < 0.2, m * rng.uniform(2, 5, (n, n)), m)
    m = np.minimum(m, m.T)
    np.fill_diagonal(m, 0)
    return m


def false_splits(reps: int) -> None:
    """Print how often structure inference splits structureless matrices of 6-15 hosts (should be never)."""
    from plink.structure.hierarchy import infer_hierarchy

    sizes = (6, 7, 8, 9, 10, 12, 15)
    print(f"\nstructureless matrices, {reps} per size and noise: split into groups (K > 1)")
    print(f"{'noise':24s} " + " ".join(f"{'n=' + str(n):>5s}" for n in sizes) + "   all")
    total = 0
    for kind, name in enumerate(NULL_KINDS):
        row = []
        for n in sizes:
            rng = np.random.default_rng(1000 * n + kind)
            row.append(sum(infer_hierarchy(structureless(n, kind, rng), random_state=0).n_groups > 1
                           for _ in range(reps)))
        total += sum(row)
        print(f"{name:24s} " + " ".join(f"{v:5d}" for v in row) + f" {sum(row):5d}")
    print(f"{'all':24s} {total} of {reps * len(sizes) * len(NULL_KINDS)}")


def collect(out: Path, plan: list[str], prefix: str, subnet: str) -> None:
    """Probe one netns cluster per shape and method of ``plan`` into ``out/<shape>-<method>/pN.json``."""
    from plink.probes.netns import NetnsCluster

    import time

    def load() -> str:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])

    for item in plan:
        shape, method, runs = item.split(":")
        method, bw = (method[:-3], True) if method.endswith("+bw") else (method, False)
        sizes = [int(v) for v in shape.split(",")]
        d = out / f"{'-'.join(map(str, sizes))}-{method}{'-bw' if bw else ''}"
        d.mkdir(parents=True, exist_ok=True)
        print(f"{d.name}: start {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load()}", flush=True)
        with NetnsCluster(hosts_per_rack=sizes, prefix=prefix, subnet=subnet, host_mbit=400, uplink_mbit=400,
                          extra_hops=4, sshd=True) as c:
            (d / "truth.json").write_text(json.dumps({h.name: h.rack for h in c.hosts}))
            for i in range(int(runs)):
                args = [sys.executable, "-m", "plink", "probe", c.hostfile, "-o", str(d / f"p{i}.json"),
                        "--method", method, "--ssh-config", c.ssh_config, "--known-hosts", c.known_hosts, "-q"]
                if method == "fping":
                    args += ["--count", "20"]
                if bw:
                    args += ["--bandwidth"]
                env = dict(os.environ, PYTHONPATH=str(ROOT))
                t0 = time.monotonic()
                r = subprocess.run(args, capture_output=True, text=True, env=env)
                print(f"{d.name} p{i}: exit {r.returncode} in {time.monotonic() - t0:.0f} s, load {load()} "
                      f"{r.stderr.strip()[-200:]}", flush=True)
        print(f"{d.name}: end {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load()}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*", type=Path, help=f"folders of probes (default: {SAVED.relative_to(ROOT)})")
    ap.add_argument("--collect", type=Path, default=None, metavar="DIR", help="probe new clusters into DIR first")
    ap.add_argument("--plan", nargs="+", default=list(PLAN), metavar="SHAPE:METHOD:RUNS",
                    help="with --collect: clusters to probe, e.g. 3,3,2:udp:4")
    ap.add_argument("--prefix", default="sx2", help="with --collect: the clusters' name prefix")
    ap.add_argument("--subnet", default="10.234", help="with --collect: the clusters' subnet")
    ap.add_argument("--structureless", type=int, default=0, metavar="R",
                    help="also group R structureless matrices per size (6-15 hosts) and noise: false splits")
    ap.add_argument("--orders", action="store_true",
                    help="also count the rack crossings of plink order's ring on each probe (~10 s)")
    a = ap.parse_args(argv)
    if a.collect is not None:
        collect(a.collect, a.plan, a.prefix, a.subnet)
    paths = a.dirs or ([a.collect] if a.collect is not None else [SAVED])
    total, below = [], []
    print(f"{'cluster':18s} {'probes':>6s}  {'plink exact':>11s} {'mean AMI':>8s}   "
          f"{'average|K exact':>15s} {'mean AMI':>8s}   {'average|sil exact':>17s} {'mean AMI':>8s}")

    def line(name: str, rows: list[dict]) -> str:
        n = len(rows)
        return f"{name:18s} {n:6d}  " + "   ".join(
            f"{sum(r[key] > 0.999 for r in rows):{w}d} of {n:<3d} {np.mean([r[key] for r in rows]):8.3f}"
            for key, w in (("plink", 5), ("average", 9), ("silhouette", 11)))

    for d in folders(paths):
        rows = score(d, a.orders)
        for r in rows:
            r["folder"] = d.name
        total += rows
        below += [(d.name, r) for r in rows if r["plink"] < r["average"] - MARGIN]
        print(line(d.name, rows))
    n = len(total)
    if not n:
        print("no probes found")
        return 1
    print(line("all", total))
    print("(average|sil: average linkage with K of 2..N/2 by the best silhouette, not told K; it never "
          "answers one group)")
    print(f"plink under average linkage given K by > {MARGIN}: {len(below)} of {n}"
          + "".join(f"\n  {name}/{r['probe']}: plink {r['plink']:.3f} ({r['found']} groups), "
                    f"average {r['average']:.3f} (K={r['k']})" for name, r in below))
    if a.orders:
        extra = [r for r in total if r["crossings"] > r["k"]]
        print(f"\nplink order --algo ring: crosses racks K times (the least) on {n - len(extra)} of {n} probes"
              + "".join(f"\n  {r['folder']}/{r['probe']}: {r['crossings']} crossings of {r['k']} racks; "
                        f"groups found {r['found']}, AMI {r['plink']:.3f}" for r in extra))
    if a.structureless:
        false_splits(a.structureless)
    return 0


if __name__ == "__main__":
    sys.exit(main())
