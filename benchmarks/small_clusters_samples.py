"""Does more measurement fix the udp probe's rack misses on small netns clusters?

``plink group`` on the default udp probe (``--count 20``: a pair's p10 is its 2nd smallest sample) of
6-9 emulated hosts found the exact racks in 27 of 36 saved probes
(``benchmarks/results/2026-12-03-small-clusters``, ``*-udp``), average linkage given the true K in 35.
This benchmark probes the SAME cluster with three sample budgets, interleaved so that the shared
machine's load hits all alike:

* ``udp20``: the default, ``plink probe --method udp --count 20``;
* ``udp20-100``: adaptive, ``--count 20 --max-count 100`` (default ``--tol``);
* ``udp60``: ``--count 60``.

For each shape of ``--shapes`` one cluster (``plink.probes.netns.NetnsCluster`` as
``benchmarks/structure_netns.py --collect`` builds it: 400 Mbit/s host links and rack uplinks,
``extra_hops=4``, sshd) is probed ``--rounds`` times with each configuration, round ``i`` running
the three in the order rotated by ``i`` (A B C, B C A, C A B, ...), so none always runs first after
the build.  Probes go to ``OUT/<shape>-<config>/pN.json`` with ``truth.json`` (host -> rack), the
layout ``benchmarks/structure_netns.py`` reads, and ``runs.json`` (per probe: wall time of the
``plink probe`` process, its own ``elapsed_s``, load average before and after, UTC start).

Then (or, without ``--collect``, on saved folders) it prints, per configuration and shape and
overall, exact-of-N and mean AMI of plink's groups, of average linkage given the true K and of
average linkage with K by the best silhouette (``structure_netns.score``), the probe wall time and
the mean samples per pair and direction::

    python benchmarks/small_clusters_samples.py                       # the saved results
    sudo "$(command -v python)" benchmarks/small_clusters_samples.py --collect /tmp/samples \\
        --shapes 3,3 2,2,2 --rounds 3 --prefix sm57 --subnet 10.57
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.structure_netns import folders, score  # noqa: E402

SAVED = ROOT / "benchmarks" / "results" / "2026-12-03-small-clusters-samples"
SHAPES = ("3,3", "2,2,2", "4,4", "2,3,4", "3,3,3", "2,2,2,2", "3,3,2")
#: configuration name -> extra ``plink probe`` arguments (after ``--method udp``)
CONFIGS = {"udp20": ["--count", "20"], "udp20-100": ["--count", "20", "--max-count", "100"],
           "udp60": ["--count", "60"]}


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def utc() -> str:
    return time.strftime("%H:%M:%S", time.gmtime())


def collect(out: Path, shapes: list[str], rounds: int, prefix: str, subnet: str) -> None:
    """Probe one cluster per shape, ``rounds`` times each configuration, interleaved."""
    from plink.probes.netns import NetnsCluster

    names = list(CONFIGS)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for shape in shapes:
        sizes = [int(v) for v in shape.split(",")]
        tag = "-".join(map(str, sizes))
        dirs = {c: out / f"{tag}-{c}" for c in names}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
            if any(d.glob("p*.json")):
                raise SystemExit(f"{d} holds probes already: give another --collect folder")
        runs = {c: [] for c in names}
        print(f"{tag}: start {utc()} UTC, load {load()}", flush=True)
        with NetnsCluster(hosts_per_rack=sizes, prefix=prefix, subnet=subnet, host_mbit=400, uplink_mbit=400,
                          extra_hops=4, sshd=True) as c:
            truth = json.dumps({h.name: h.rack for h in c.hosts})
            for d in dirs.values():
                (d / "truth.json").write_text(truth)
            for i in range(rounds):
                for cfg in names[i % 3:] + names[:i % 3]:
                    f = dirs[cfg] / f"p{i}.json"
                    args = [sys.executable, "-m", "plink", "probe", c.hostfile, "-o", str(f), "--method", "udp",
                            *CONFIGS[cfg], "--ssh-config", c.ssh_config, "--known-hosts", c.known_hosts, "-q"]
                    l0, s0, t0 = load(), utc(), time.monotonic()
                    r = subprocess.run(args, capture_output=True, text=True, env=env)
                    wall = time.monotonic() - t0
                    elapsed = json.loads(f.read_text())["meta"].get("elapsed_s") if r.returncode == 0 else None
                    runs[cfg].append({"probe": f.name, "start_utc": s0, "exit": r.returncode, "wall_s": round(wall, 2),
                                      "elapsed_s": elapsed, "load_before": l0, "load_after": load()})
                    print(f"{tag}-{cfg} p{i}: exit {r.returncode} in {wall:.1f} s, load {load()} "
                          f"{r.stderr.strip()[-200:]}", flush=True)
                    (dirs[cfg] / "runs.json").write_text(json.dumps(runs[cfg], indent=1) + "\n")
        print(f"{tag}: end {utc()} UTC, load {load()}", flush=True)


def samples_per_pair(f: Path) -> float:
    """Mean samples received per pair and direction of probe file ``f``."""
    s = np.asarray(json.loads(f.read_text())["meta"]["samples_received"], dtype=float)
    return float(s[~np.eye(len(s), dtype=bool)].mean())


def summary(paths: list[Path]) -> int:
    """Print the table per configuration (overall and per shape)."""
    by = {}  # (config, shape) -> rows
    for d in folders(paths):
        shape, cfg = next(((d.name[:-len(c) - 1], c) for c in sorted(CONFIGS, key=len, reverse=True)
                           if d.name.endswith("-" + c)), (d.name, "?"))
        rows = score(d)
        runs = {r["probe"]: r for r in json.loads((d / "runs.json").read_text())} if (d / "runs.json").is_file() else {}
        for r in rows:
            r["wall"] = runs.get(r["probe"], {}).get("wall_s", np.nan)
            r["samples"] = samples_per_pair(d / r["probe"])
        by.setdefault((cfg, shape), []).extend(rows)
    if not by:
        print("no probes found")
        return 1
    order = ["-".join(s.split(",")) for s in SHAPES]
    shapes = sorted({s for _, s in by}, key=lambda s: (order.index(s) if s in order else len(order), s))
    cfgs = [c for c in list(CONFIGS) + ["?"] if any(k[0] == c for k in by)]

    def cell(rows: list[dict], key: str) -> str:
        return f"{sum(r[key] > 0.999 for r in rows):3d}/{len(rows):<3d} {np.mean([r[key] for r in rows]):.3f}"

    print(f"{'shape':9s} {'config':10s} {'plink':>13s}   {'average|K':>13s}   {'average|sil':>13s}   "
          f"{'wall s (mean, max)':>18s}  {'samples/pair':>12s}")
    for s in shapes + ["all"]:
        for c in cfgs:
            rows = [r for (c2, s2), v in by.items() if c2 == c and s in (s2, "all") for r in v]
            if not rows:
                continue
            w = [r["wall"] for r in rows]
            print(f"{s:9s} {c:10s} " + "   ".join(cell(rows, k) for k in ("plink", "average", "silhouette"))
                  + f"   {np.nanmean(w):9.1f} {np.nanmax(w):8.1f}  {np.mean([r['samples'] for r in rows]):12.1f}")
    print("(exact/N and mean AMI; average|K: average linkage given the true K; average|sil: K of 2..N/2 by the "
          "best silhouette; wall: the plink probe process)")
    # the same cluster and round (probe pI.json of each configuration's folder) against the first configuration
    from scipy.stats import binomtest

    exact = {(c, s, r["probe"]): r["plink"] > 0.999 for (c, s), v in by.items() for r in v}
    base = cfgs[0]
    for c in cfgs[1:]:
        keys = [(s, p) for (c2, s, p) in exact if c2 == c and (base, s, p) in exact]
        won = sum(exact[(c, s, p)] and not exact[(base, s, p)] for s, p in keys)
        lost = sum(exact[(base, s, p)] and not exact[(c, s, p)] for s, p in keys)
        pv = binomtest(won, won + lost).pvalue if won + lost else 1.0
        print(f"plink, {c} against {base} on the same cluster and round: exact where {base} was not {won}, "
              f"not where it was {lost} (sign test p {pv:.2f})")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="configurations: " + "; ".join(f"{k}: --method udp {' '.join(v)}"
                                                                       for k, v in CONFIGS.items()))
    ap.add_argument("dirs", nargs="*", type=Path, help=f"folders of probes (default: {SAVED.relative_to(ROOT)})")
    ap.add_argument("--collect", type=Path, default=None, metavar="DIR", help="probe new clusters into DIR first")
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), metavar="SIZES",
                    help="with --collect: hosts per rack of each cluster, e.g. 3,3,2")
    ap.add_argument("--rounds", type=int, default=3, help="with --collect: probes per configuration and shape")
    ap.add_argument("--prefix", default="sm57", help="with --collect: the clusters' name prefix")
    ap.add_argument("--subnet", default="10.57", help="with --collect: the clusters' subnet")
    a = ap.parse_args(argv)
    if a.collect is not None:
        collect(a.collect, a.shapes, a.rounds, a.prefix, a.subnet)
    return summary(a.dirs or ([a.collect] if a.collect is not None else [SAVED]))


if __name__ == "__main__":
    sys.exit(main())
