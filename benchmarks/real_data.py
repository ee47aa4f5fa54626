"""Every matrix-reading command on real public data sets: does it work, how long, what it buys.

For each set in ``--data`` (default ``/work/shared/data``; without it, the MIT/Apache slices in
``tests/data``) and each command (``show``, ``order --algo ring``, ``order --algo hd``,
``group``, ``schedule``, ``verify``, ``watch --probe-file``), the command runs in this process
through ``plink.cli.main`` exactly as typed (the argv is printed), and the table gives:

* whether it worked (exit 0, or 4 for ``watch``'s first order; anything else, or
  ``internal error`` on stderr, is a failure), and its wall time on this machine;
* for ``order``: the pair-sum model cost (dissertation §5.2.1) of the median of 500 random
  orders over plink's order, **priced on measured pairs only**: unmeasured pairs are priced
  once at the best and once at the worst measured value, so the speedup is a range ``lo-hi``
  (one number when no pair is missing), and the ring's hops over unmeasured pairs are counted;
  in brackets, the speedup over random orders that plink's own report gives (its default
  shared-link model; where it assumed NICs or uplinks, the span from the other end of those
  capacities, uplinks that never bind or the latencies alone, to the oversubscribed model);
* for ``group``: the AMI of the groups against the set's labels, where the set has them,
  for the default ``k`` and for ``--groups`` = the true number of classes;
* ARCHER (bandwidth, ``--kind bandwidth``): ring hops that cross nodes against the minimum (8).

Targets (exit 1 when missed): every command works on every set; ARCHER's ring crosses nodes
at most twice the minimum; ``plink schedule --json`` output is finite JSON with a global
master in every group.

    python benchmarks/real_data.py                 # all sets (~10-20 min on 2 shared cores)
    python benchmarks/real_data.py --sets seattle99-raw archer192-bw --time-limit 2
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np

SHARED = Path("/work/shared/data")


def sets(data: Path) -> list[dict]:
    """The data sets found under ``data`` (name, file, input options, labels)."""
    out = []

    def add(name, rel, args, labels=None, note=""):
        f = data / rel
        if f.exists():
            lab = None
            if labels is not None:
                lf, col, k = labels
                if (data / lf).exists():
                    lab = (data / lf, col, k)
            out.append({"name": name, "file": f, "args": [a if not str(a).startswith("@") else str(data / a[1:])
                                                          for a in args], "labels": lab, "note": note})

    add("planetlab490", "planetlab490_rtt/rtt_ms_median18.csv", ["--unit", "ms"])
    add("seattle99", "seattle99_rtt/rtt_s_median688.csv", ["--unit", "s"])
    add("seattle99-raw", "seattle99_rtt/rtt_s_frame001.csv", ["--unit", "s"])
    add("skyplane69-rtt", "cloud_interregion_skyplane/latency_rtt_ms.csv",
        ["--unit", "ms", "--hosts", "@cloud_interregion_skyplane/hosts.csv"])
    add("skyplane63-tput", "cloud_interregion_skyplane/throughput_gbps.csv",
        ["--kind", "bandwidth", "--unit", "Gbit/s", "--hosts", "@cloud_interregion_skyplane/throughput_hosts.csv"])
    add("ec2-p4d-64", "ec2_p4d_rdma_latency_groundtruth/rdma_read_us_64.csv", ["--unit", "us"],
        labels=("ec2_p4d_rdma_latency_groundtruth/labels_64.csv", 1, 2))
    add("ec2-p4d-32", "ec2_p4d_rdma_latency_groundtruth/rdma_read_us_32.csv", ["--unit", "us"],
        labels=("ec2_p4d_rdma_latency_groundtruth/labels_64.csv", 1, 2))
    add("archer192-bw", "archer_mpi_bandwidth_192/mpi_send_bandwidth_MBps_192.csv",
        ["--kind", "bandwidth", "--unit", "MB/s"], labels=("archer_mpi_bandwidth_192/labels_192.csv", 1, 8))
    # the slices shipped in tests/data (same file names as make_slices.py writes)
    add("planetlab24-slice", "planetlab24_rtt_ms.csv", ["--unit", "ms"])
    add("seattle24-slice", "seattle24_rtt_s.csv", ["--unit", "s"])
    add("skyplane20-slice", "skyplane20_rtt_ms.csv", ["--unit", "ms", "--hosts", "@skyplane20_hosts.csv"])
    add("skyplane16-tput-slice", "skyplane16_throughput_gbps.csv",
        ["--kind", "bandwidth", "--hosts", "@skyplane16_throughput_hosts.csv"])
    return out


def run_cli(argv: list[str]) -> tuple[int, str, str, float]:
    from plink.cli import main

    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - t0


def _labels(spec, n: int) -> list[str] | None:
    if spec is None:
        return None
    path, col, _k = spec
    rows = [ln.split(",") for ln in path.read_text().splitlines()[1:] if ln.strip()]
    return [r[col].strip() for r in rows[:n]]


def measured_only(probe, perm, algo: str, size: int, n_random: int = 500, seed: int = 0):
    """``(speedup lo, speedup hi, hops over unmeasured pairs)`` of ``perm`` vs the median random order.

    Unmeasured pairs are priced at the best measured value, then at the worst; the speedup's
    range covers both pricings of both orders (lo: plink at worst, random at best).
    """
    from plink.solvers.costmodels import CostModel, PairCost

    n = probe.n
    off = ~np.eye(n, dtype=bool)
    lat = probe.latency.copy()
    miss = np.isnan(lat) & off
    bw = None if probe.bandwidth is None else probe.bandwidth.copy()
    meas = lat[off & ~miss]
    rng = np.random.default_rng(seed)
    rand = [rng.permutation(n) for _ in range(n_random)]
    costs = {}
    for fill in ("best", "worst"):
        la = lat.copy()
        la[miss] = meas.min() if fill == "best" else meas.max()
        b = None
        if bw is not None:
            b = bw.copy()
            bm = np.isnan(b) & off
            known = b[off & ~bm]
            b[bm] = known.max() if fill == "best" else known.min()
        model = CostModel(algo, PairCost.from_matrices(la, b), size)
        costs[fill] = (model(np.asarray(perm)), float(np.median([model(p) for p in rand])))
    lo = costs["best"][1] / costs["worst"][0]
    hi = costs["worst"][1] / costs["best"][0]
    hops = sum(bool(miss[perm[i], perm[(i + 1) % n]]) for i in range(n)) if algo == "ring" else None
    return min(lo, hi), max(lo, hi), hops


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=SHARED if SHARED.exists() else ROOT / "tests" / "data")
    ap.add_argument("--sets", nargs="*", help="only these sets (names in the table)")
    ap.add_argument("--time-limit", type=float, default=5.0, help="plink order / watch search seconds")
    ap.add_argument("--size", default="16MiB", help="all-reduce size for order and schedule")
    args = ap.parse_args()

    from plink.data.inputs import load_input
    from plink.structure.metrics import ami
    from plink.units import parse_size

    size = parse_size(args.size)
    chosen = [s for s in sets(args.data) if not args.sets or s["name"] in args.sets]
    if not chosen:
        print(f"no data sets under {args.data}", file=sys.stderr)
        return 1
    print(f"# plink on real data ({args.data}), {time.strftime('%Y-%m-%d %H:%M')}, search {args.time_limit:g} s")
    failures: list[str] = []
    rows = []
    tl = f"{args.time_limit:g}"
    with tempfile.TemporaryDirectory(prefix="plink-real-") as tmp:
        tmp = Path(tmp)
        for s in chosen:
            f, a, name = str(s["file"]), s["args"], s["name"]
            probe = load_input(f, **_kw(a)).probe
            truth = _labels(s["labels"], probe.n)
            out = {"set": name, "n": probe.n, "missing": probe.n_missing_pairs()}
            cmds = {
                "show": ["show", f, *a, "--json"],
                "order ring": ["order", f, *a, "--algo", "ring", "--size", args.size, "--time-limit", tl, "--json"],
                "order hd": ["order", f, *a, "--algo", "hd", "--size", args.size, "--time-limit", tl, "--json"],
                "group": ["group", f, *a, "-o", str(tmp / f"{name}.groups.json"), "--json"],
                "schedule": ["schedule", f, *a, "--size", args.size, "-o", str(tmp / f"{name}.sched.json"), "--json"],
                "verify": ["verify", str(tmp / f"{name}.sched.json"), f, *a, "--json"],
                "watch": ["watch", str(tmp / f"{name}.watch"), "--probe-file", f,
                          *a, "--time-limit", tl, "--json"],
            }
            if truth is not None:
                k = s["labels"][2]
                cmds[f"group k={k}"] = ["group", f, *a, "--groups", str(k), "-o", str(tmp / f"{name}.gk.json"), "--json"]
            for cname, argv in cmds.items():
                code, stdout, stderr, dt = run_cli(argv)
                ok = code in ((0, 4) if cname == "watch" else (0,)) and "internal error" not in stderr
                out[cname] = {"ok": ok, "s": dt}
                print(f"  {name:22} {cname:10} {'ok' if ok else 'FAIL'} {dt:6.1f} s   plink {' '.join(argv)}",
                      flush=True)
                if not ok:
                    failures.append(f"{name} {cname}: exit {code}: {stderr.strip()[-300:]}")
                    continue
                if cname.startswith("order"):
                    doc = json.loads(stdout)
                    perm = doc.get("order") or [probe.names.index(h if isinstance(h, str) else h["name"])
                                                for h in doc["hosts"]]
                    lo, hi, hops = measured_only(probe, perm, cname.split()[1], size)
                    out[cname].update(lo=lo, hi=hi, hops=hops,
                                      report=(doc.get("speedup_spans") or {}).get("random_median"))
                    if name.startswith("archer") and cname == "order ring":
                        node = np.array([int(x) for x in _labels(s["labels"], probe.n)])
                        cross = int(sum(node[perm[i]] != node[perm[(i + 1) % len(perm)]] for i in range(len(perm))))
                        out["crossings"] = cross
                        if cross > 2 * len(set(node)):
                            failures.append(f"{name}: ring crosses nodes {cross} times (> 2 x {len(set(node))})")
                if cname == "schedule":
                    try:
                        doc = json.loads(stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
                    except ValueError as exc:
                        failures.append(f"{name} schedule: non-finite JSON ({exc})")
                        continue
                    sched = json.loads((tmp / f"{name}.sched.json").read_text())
                    labels = np.array(sched["groups"])
                    gm_groups = set(labels[np.array(sched["gm"])].tolist())
                    sizes = np.bincount(labels)
                    out["groups"] = f"{len(sizes)} ({sizes.min()}..{sizes.max()})"
                    if gm_groups != set(range(len(sizes))):
                        failures.append(f"{name} schedule: {len(sizes) - len(gm_groups)} group(s) without a GM")
                if cname.startswith("group") and truth is not None:
                    g = json.loads(Path(argv[argv.index("-o") + 1]).read_text())
                    pos = {h: i for i, h in enumerate(g["hosts"])}
                    pred = [g["labels"][pos[h]] for h in probe.names]
                    out[cname]["ami"] = ami(truth, pred)
            rows.append(out)
    print()
    print(table(rows))
    for f in failures:
        print("FAIL", f)
    print(f"{sum(1 for r in rows for k, v in r.items() if isinstance(v, dict) and v.get('ok'))} commands worked, "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


def _kw(a: list[str]) -> dict:
    """load_input keywords from the CLI input options."""
    kw = {}
    for flag, key in (("--unit", "unit"), ("--kind", "kind"), ("--hosts", "hosts")):
        if flag in a:
            kw[key] = a[a.index(flag) + 1]
    return kw


def _speed(c) -> str:
    if not c or not c.get("ok"):
        return "FAIL"
    lo, hi = c.get("lo"), c.get("hi")
    rng = f"{lo:.2f}x" if math.isclose(lo, hi, rel_tol=5e-3) else f"{lo:.2f}-{hi:.2f}x"
    hops = c.get("hops")
    rng += f" ({hops} hops unmeasured)" if hops else ""
    # what plink's own report says (its cost model, spanning the capacities it assumed)
    rep = c.get("report")
    if not rep or rep[0] is None or rep[1] is None:
        return rng
    text = f"{rep[0]:.2f}x" if math.isclose(rep[0], rep[1], rel_tol=5e-3) else f"{rep[0]:.2f}-{rep[1]:.2f}x"
    return rng + f" [report {text}]"


def table(rows: list[dict]) -> str:
    cmds = ("show", "order ring", "order hd", "group", "schedule", "verify", "watch")
    head = ("| set | N | missing pairs | works (s): " + " / ".join(cmds)
            + " | ring vs random | hd vs random | AMI group (k=true) | schedule groups |")
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        works = " / ".join((f"{r[c]['s']:.1f}" if r[c]["ok"] else "FAIL") if c in r else "-" for c in cmds)
        ami_cells = [f"{r[c]['ami']:.3f}" for c in r if c.startswith("group") and isinstance(r[c], dict) and "ami" in r[c]]
        ami_txt = " (".join(ami_cells) + (")" if len(ami_cells) > 1 else "") if ami_cells else "-"
        ring = _speed(r.get("order ring"))
        if "crossings" in r:
            ring += f", crosses nodes {r['crossings']}x"
        lines.append(f"| {r['set']} | {r['n']} | {r['missing']} | {works} | {ring} | {_speed(r.get('order hd'))} | "
                     f"{ami_txt} | {r.get('groups', '-')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
