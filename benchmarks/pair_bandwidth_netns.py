"""Which cost model is right on a network of pair-limited paths (a public inter-region bandwidth matrix)?

On Skyplane's inter-region throughput matrix the two models disagree about plink's
recursive-doubling/halving-doubling order: the pair sum (dissertation §5.2.1) and the
shared-link model price each other's orders very differently, and `benchmarks/real_data.py`
had no measured collective to say which is right. This script measures it:

1. builds a netns cluster of N hosts on one bridge (``plink.probes.netns.NetnsCluster``,
   prefix ``pw``, subnet ``10.203``; no rack uplinks), and shapes every host's egress
   **per destination** with htb: the flow from host i to host j gets the matrix's
   bandwidth ``bw[i, j]``, scaled so that the fastest pair gets ``--max-mbit`` (400 Mbit/s:
   16 hosts at most 6.4 Gbit/s together); a host's flows together get at most its fastest
   pair (its NIC). Packets under 128 bytes (ACKs) get a priority class of their own;
2. checks the shaping with iperf3 on the slowest, the median and the fastest pair;
3. asks ``plink order`` for its orders on the scaled matrix, as a user would type it
   (``--kind bandwidth --unit Mbit/s``), for ``rd``/``hd`` and ``ring``, with the default
   shared-link model and with ``--model pairsum``; adds the input order and ``--random``
   random orders;
4. measures each order with Open MPI's all-reduce (``mpirun --map-by seq`` from plink's
   hostfile, coll_tuned forced: recursive doubling 3, ring 4, Rabenseifner 6): the median of
   ``--repeats`` runs x ``--passes`` passes over the orders (every other pass in reverse);
5. prints, per algorithm, each order's measured time and the two models' predictions,
   Spearman(predicted, measured) for each model, and each plink order's measured speedup over
   the median random order beside what each model predicted for it.

Run as root::

    python benchmarks/pair_bandwidth_netns.py --json benchmarks/results/pair-bandwidth.json
    python benchmarks/pair_bandwidth_netns.py --matrix /work/shared/data/cloud_interregion_skyplane/throughput_gbps.csv \
        --hosts 16 --subset-seed 1 --specs 3,6 --json ...   # 16 of the 63 regions
    python benchmarks/pair_bandwidth_netns.py --analyse-only benchmarks/results/pair-bandwidth.json

The default matrix is the 16-region slice shipped in ``tests/data`` (Apache-2.0).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

import benchmarks.collectives_netns as proof  # noqa: E402
from plink.data.probefile import default_host_names  # noqa: E402

PREFIX, SUBNET = "pw", "10.203"
MATRIX = ROOT / "tests" / "data" / "skyplane16_throughput_gbps.csv"
#: coll_tuned spec -> (name, algo priced by the shared model, algo priced by the pair sum)
SPECS = {"3": ("recursive doubling", "rd", "hd"), "4": ("ring", "ring", "ring"), "6": ("Rabenseifner", "hd", "hd")}


def scaled_matrix(path: Path, unit: str, max_mbit: float, pick: list[int] | None = None
                  ) -> tuple[np.ndarray, list[str]]:
    """The matrix read as ``plink order PATH --kind bandwidth --unit UNIT`` reads it (the hosts
    ``pick`` of it, when given), in Mbit/s, scaled so that its fastest pair is ``max_mbit``; the
    host names plink gives it."""
    from plink.data.inputs import load_input

    probe = load_input(str(path), kind="bandwidth", unit=unit).probe
    bw = np.array(probe.bandwidth, dtype=float)  # Gbit/s, as measured per direction
    names = [h.name for h in probe.hosts]
    if pick is not None:
        bw, names = bw[np.ix_(pick, pick)], [names[i] for i in pick]
    np.fill_diagonal(bw, np.nan)
    bw = bw * max_mbit / np.nanmax(bw)
    return bw, names


def subset(n_all: int, n: int, seed: int) -> list[int]:
    """``n`` of ``n_all`` hosts drawn with ``seed`` (sorted)."""
    return sorted(int(i) for i in np.random.default_rng(seed).choice(n_all, n, replace=False))


def shape_pairs(c, bw: np.ndarray) -> None:
    """Per-destination htb on every host's eth0: flows to host j at ``bw[i, j]`` Mbit/s, all of a host's
    flows together at most its fastest pair; ACK-sized packets in a priority class."""
    for i, h in enumerate(c.hosts):
        nic = float(np.nanmax(bw[i]))
        tc = ["tc", "-n", h.netns]
        cmds = [["qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default", "2"],
                ["class", "add", "dev", "eth0", "parent", "1:", "classid", "1:1", "htb",
                 "rate", f"{nic:.3f}mbit", "ceil", f"{nic:.3f}mbit"],
                ["class", "add", "dev", "eth0", "parent", "1:1", "classid", "1:2", "htb",
                 "rate", "1mbit", "ceil", f"{nic:.3f}mbit", "prio", "1"],  # ssh, anything else
                ["class", "add", "dev", "eth0", "parent", "1:1", "classid", "1:3", "htb",
                 "rate", f"{max(0.5, min(nic * 0.05, 10.0)):.3f}mbit", "ceil", f"{nic:.3f}mbit", "prio", "0"],
                ["filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                 "match", "u16", "0x0000", "0xff80", "at", "2", "flowid", "1:3"]]
        for j, o in enumerate(c.hosts):
            if j == i:
                continue
            rate = f"{bw[i, j]:.3f}mbit"
            cmds += [["class", "add", "dev", "eth0", "parent", "1:1", "classid", f"1:{100 + j}", "htb",
                      "rate", rate, "ceil", rate, "prio", "1"],
                     ["filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "2", "u32",
                      "match", "ip", "dst", f"{o.address}/32", "flowid", f"1:{100 + j}"]]
        for cmd in cmds:
            p = subprocess.run(tc + cmd, capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"tc {' '.join(cmd)} in {h.netns}: {p.stderr.strip()}")


def iperf_check(c, bw: np.ndarray, seconds: float = 3.0) -> list[dict]:
    """iperf3 (one TCP flow) on the slowest, the median and the fastest pair: Mbit/s measured vs set."""
    off = np.argwhere(~np.eye(len(bw), dtype=bool))
    vals = bw[~np.eye(len(bw), dtype=bool)]
    picks = [off[np.argmin(vals)], off[np.argsort(vals)[len(vals) // 2]], off[np.argmax(vals)]]
    out = []
    for i, j in picks:
        srv, cli = c.hosts[int(j)], c.hosts[int(i)]
        s = subprocess.Popen(["ip", "netns", "exec", srv.netns, "iperf3", "-s", "-1", "-p", "5301"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            p = subprocess.run(["ip", "netns", "exec", cli.netns, "iperf3", "-c", srv.address, "-p", "5301",
                                "-t", str(seconds), "-J"], capture_output=True, text=True, timeout=60)
            got = json.loads(p.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6
        finally:
            s.kill()
            s.wait()
        out.append({"src": int(i), "dst": int(j), "set_mbit": float(bw[i, j]), "measured_mbit": got})
        proof.log(f"iperf3 {cli.name} -> {srv.name}: {got:.1f} Mbit/s (set {bw[i, j]:.1f})")
    return out


def plink_orders(csv: Path, names: list[str], size: int, tmp: Path) -> dict[str, list[int]]:
    out = {}
    for algo in ("rd", "hd", "ring"):
        for model in ("shared", "pairsum"):
            if (algo, model) == ("rd", "pairsum"):
                continue  # the pair sum prices recursive doubling as hd (same partners)
            f = tmp / f"order-{algo}-{model}.json"
            proof.plink("order", str(csv), "--kind", "bandwidth", "--unit", "Mbit/s", "--algo", algo,
                        "--model", model, "--size", str(size), "--format", "json", "--seed", "0",
                        "--time-limit", "5", "-o", str(f))
            got = [h["name"] for h in json.loads(f.read_text())["hosts"]]
            out[f"plink {algo} ({model})"] = [names.index(n) for n in got]
    return out


def measure(args, save) -> dict:
    pick = subset(args.n_all, args.hosts, args.subset_seed) if args.hosts else None
    bw, picked = scaled_matrix(Path(args.matrix), args.unit, args.max_mbit, pick)
    n = len(picked)
    names = default_host_names(n)  # what plink names the scaled CSV's hosts
    rng = np.random.default_rng(args.seed)
    doc = {"format": "plink-pair-bandwidth", "version": 1, "matrix": str(args.matrix), "unit": args.unit,
           "max_mbit": args.max_mbit, "bandwidth_mbit": bw.tolist(), "names": picked, "picked": pick, "size_bytes": args.size,
           "repeats": args.repeats, "passes": args.passes, "mpi_mca": [list(kv) for kv in args.mpi_mca],
           "started": proof.utc()}
    proof.SUBNET = SUBNET  # mpirun's interfaces
    with proof.netns_lock(), tempfile.TemporaryDirectory(prefix="plink-pairbw-") as tmp:
        tmp = Path(tmp)
        csv = tmp / "scaled_mbit.csv"
        m = np.where(np.isfinite(bw), bw, 0.0)
        csv.write_text("".join(",".join(f"{v:.4f}" for v in row) + "\n" for row in m))
        orders = plink_orders(csv, names, args.size, tmp)
        orders["input order"] = list(range(n))
        for k in range(args.random):
            orders[f"random {k}"] = [int(x) for x in rng.permutation(n)]
        doc["orders"] = orders
        exe = proof.compile_timer(tmp)
        from plink.data.probefile import Host
        from plink.probes.netns import NetnsCluster

        with NetnsCluster(hosts_per_rack=[n], prefix=PREFIX, subnet=SUBNET, host_mbit=0, uplink_mbit=0,
                          extra_hops=0, sshd=True, clean_shell=True) as c:
            shape_pairs(c, bw)
            doc["iperf3"] = iperf_check(c, bw)
            files = {}
            for name, o in orders.items():
                hosts = [Host(c.hosts[i].name, c.hosts[i].address) for i in o]
                files[name] = {**proof.write_files(tmp, name.replace(" ", "_").replace("(", "").replace(")", ""),
                                                   hosts), "hosts": [h.name for h in hosts]}
            # the proof's passes over the orders (every other one in reverse), its collectives named by spec
            coll_of = {v[2]: k for k, v in proof.COLLECTIVES.items() if v[2] in SPECS}
            runs: dict[str, dict[str, list]] = {name: {} for name in orders}
            doc["runs"] = runs

            def record(name, coll, secs):
                spec = proof.COLLECTIVES[coll][2]
                runs[name][spec] = list(secs)
                proof.log(f"{name}: {SPECS[spec][0]} {np.median(secs):.3f} s over {len(secs)} runs")

            proof.mpi_passes(c, exe, files, list(orders), args.passes, args.size, args.repeats,
                             tuple(args.mpi_mca), record, lambda: save(doc),
                             colls_of=lambda _: [coll_of[sp] for sp in args.specs])
    doc["finished"] = proof.utc()
    return doc


def predictions(doc: dict) -> dict[str, dict[str, dict[str, float]]]:
    """``pred[spec][model][order]``: seconds by the shared-link model as ``plink order`` prices it (the fluid
    model for the butterflies, ``solvers.fluid.pricing_model``), the pair-sum cost (its own units)."""
    from plink.data.probefile import Host, ProbeData, new_meta
    from plink.data.inputs import MATRIX_BANDWIDTH, bandwidth_to_distance_us
    from plink.pricing import find_groups, network, pair_cost
    from plink.solvers.contention import SharedCostModel
    from plink.solvers.costmodels import CostModel
    from plink.solvers.fluid import pricing_model

    bw = np.array(doc["bandwidth_mbit"], dtype=float) / 1e3  # Gbit/s, as plink holds it
    n = len(bw)
    np.fill_diagonal(bw, np.nan)
    sym = np.fmin(bw, bw.T)
    lat = bandwidth_to_distance_us(sym)
    np.fill_diagonal(lat, 0.0)
    meta = new_meta("matrix", kind="bandwidth", bandwidth_source=MATRIX_BANDWIDTH)
    probe = ProbeData(hosts=[Host(nm) for nm in default_host_names(n)], latency=lat, bandwidth=np.fmin(bw, bw.T),
                      meta=meta)
    groups = find_groups(probe)
    net = network(probe, groups, fill="high", use_bandwidth=True)
    # the other end of plink's span: no uplink was measured, and here there are none to share
    free = network(probe, groups, fill="high", use_bandwidth=True, uplinks="non-blocking")
    pc = pair_cost(probe, True, groups.labels, "high")[0]
    out: dict = {}
    for spec, (_, shared_algo, pair_algo) in SPECS.items():
        sm = pricing_model(SharedCostModel(shared_algo, net, doc["size_bytes"]))
        fm = pricing_model(SharedCostModel(shared_algo, free, doc["size_bytes"]))
        pm = CostModel(pair_algo, pc, doc["size_bytes"])
        out[spec] = {"shared": {k: float(sm(np.array(o))) for k, o in doc["orders"].items()},
                     "non-blocking": {k: float(fm(np.array(o))) for k, o in doc["orders"].items()},
                     "pairsum": {k: float(pm(np.array(o))) for k, o in doc["orders"].items()}}
    return out


def render(doc: dict) -> str:
    pred = predictions(doc)
    runs = doc.get("runs", {})
    lines = [f"# {doc['matrix']} scaled to {doc['max_mbit']:g} Mbit/s for its fastest pair, "
             f"{len(doc['names'])} hosts, {doc['size_bytes'] / 2**20:g} MiB all-reduce, "
             f"{doc['repeats']} runs x {doc['passes']} passes per order ({doc.get('started')} - {doc.get('finished')})"]
    for r in doc.get("iperf3", []):
        lines.append(f"# iperf3 pair {r['src']}->{r['dst']}: {r['measured_mbit']:.1f} Mbit/s measured, "
                     f"{r['set_mbit']:.1f} set")
    rnd = [k for k in doc["orders"] if k.startswith("random")]
    for spec, (name, sa, pa) in SPECS.items():
        have = [k for k in doc["orders"] if spec in runs.get(k, {})]
        if not have:
            continue
        meas = {k: float(np.median(runs[k][spec])) for k in have}
        ps, pf, pp = pred[spec]["shared"], pred[spec]["non-blocking"], pred[spec]["pairsum"]
        lines += ["", f"## Open MPI {name} (coll_tuned {spec}); shared model prices it as {sa}, the pair sum as {pa}",
                  "(shared: plink's default, group uplinks assumed oversubscribed; non-blocking: the same model "
                  "with uplinks that never bind, the other end of plink's span)",
                  f"{'order':24s} {'measured s':>10s} {'shared s':>9s} {'non-block s':>11s} {'pair sum':>10s}"]
        for k in sorted(have, key=lambda k: meas[k]):
            lines.append(f"{k:24s} {meas[k]:10.3f} {ps[k]:9.3f} {pf[k]:11.3f} {pp[k]:10.4g}")
        x = np.array([meas[k] for k in have])
        rho = {m: spearmanr([pred[spec][m][k] for k in have], x).statistic for m in pred[spec]}
        lines.append(f"Spearman(predicted, measured) over {len(have)} orders: shared {rho['shared']:.2f}, "
                     f"non-blocking {rho['non-blocking']:.2f}, pair sum {rho['pairsum']:.2f}")
        rm = float(np.median([meas[k] for k in rnd if k in meas])) if rnd else float("nan")
        best = min(meas.values())
        for k in have:
            if k.startswith("plink"):
                lines.append(f"  {k}: {meas[k] / best:.2f}x the best measured; measured {rm / meas[k]:.2f}x faster "
                             "than the median random order; predicted "
                             + ", ".join(f"{np.median([pred[spec][m][r] for r in rnd]) / pred[spec][m][k]:.2f}x ({m})"
                                         for m in ("shared", "non-blocking", "pairsum")))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--matrix", default=str(MATRIX), help="bandwidth matrix (CSV)")
    ap.add_argument("--unit", default="Gbit/s", help="its unit (as plink's --unit)")
    ap.add_argument("--max-mbit", type=float, default=400.0, help="the fastest pair's rate in the emulation")
    ap.add_argument("--size", default="2MiB", help="all-reduce size")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--random", type=int, default=7, help="random orders")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mpi-mca", action="append", default=[], metavar="NAME=VALUE",
                    type=lambda s: tuple(s.split("=", 1)))
    ap.add_argument("--hosts", type=int, default=0, help="measure this many hosts of the matrix, drawn with "
                    "--subset-seed (0: all)")
    ap.add_argument("--subset-seed", type=int, default=1)
    ap.add_argument("--specs", default="3,4,6", help="coll_tuned all-reduce algorithms (3 recursive doubling, "
                    "4 ring, 6 Rabenseifner)")
    ap.add_argument("--json", help="save the raw data here (as it is measured)")
    ap.add_argument("--analyse-only", metavar="JSON", help="print the table of a saved run")
    args = ap.parse_args(argv)
    if args.analyse_only:
        print(render(proof.load_saved(ap, args.analyse_only)))
        return 0
    args.size = proof.size_arg(ap, args.size)
    args.specs = [x.strip() for x in args.specs.split(",") if x.strip()]
    if not args.specs or any(x not in SPECS for x in args.specs):
        ap.error(f"--specs: give some of {', '.join(SPECS)}")
    from plink.data.inputs import load_input
    from plink.errors import PlinkError

    try:  # the matrix is read before any cluster is built: a bad one is one line
        args.n_all = load_input(str(args.matrix), kind="bandwidth", unit=args.unit).probe.n
    except PlinkError as exc:
        ap.error(str(exc))
    if args.hosts and not 2 <= args.hosts <= args.n_all:
        ap.error(f"--hosts {args.hosts}: give 2..{args.n_all} (the hosts of {args.matrix})")
    return proof.measure_and_report(args, measure, render, tools=("mpirun.openmpi", "iperf3"))


if __name__ == "__main__":
    sys.exit(main())
