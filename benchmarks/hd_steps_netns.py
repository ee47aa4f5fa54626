"""Rabenseifner's all-reduce step by step on the netns cluster: does "bytes x flows on the busiest
link / link rate" price each step, and is there a shared spine bottleneck besides the rack uplinks?

Run as root (network namespaces, sshd, iperf3, Open MPI with its headers; ~6 min)::

    sudo "$(command -v python)" benchmarks/hd_steps_netns.py [--mbit 350] [--size 4MiB] [--passes 2] \\
        [--seed 7] [--mpi-mca btl_tcp_flags=send,inplace,need-ack,need-csum] \\
        [--sysctl net.ipv4.tcp_slow_start_after_idle=0] [--json benchmarks/results/hd_steps-350.json]
    python benchmarks/hd_steps_netns.py --analyse-only benchmarks/results/hd_steps-350.json

While holding ``/tmp/plink-netns.lock`` the script builds the proof's cluster (16 hosts, 4 racks of 4,
host links and rack uplinks at ``--mbit``, 4 extra router hops per rack; ``make_cluster`` of
``benchmarks/collectives_netns.py``) and measures

1. iperf3 flows (``IPERF_SECONDS`` each, ``--passes`` times): one rack's uplink alone, every rack
   uplink at once (rack r -> r+1, 4 flows per uplink direction, 16 flows), one flow per uplink and
   pairs inside the racks; Mbit/s per uplink direction and in total. If every uplink at once
   carries what one alone does, the spine (one namespace forwarding all of it) is no bottleneck;
2. ``benchmarks/mpi/hd_steps.c`` launched with ``mpirun --map-by seq`` from each order's hostfile,
   for 6 orders (rack-contiguous, rack-interleaved, two partly interleaved, two random from
   ``--seed``; ``--passes`` passes, every other one reversed): the real ``MPI_Allreduce`` (coll_tuned
   algorithm 6, Rabenseifner), its 8 exchanges emulated with ``MPI_Sendrecv`` separated by barriers
   (slowest rank per step), and the exchanges back to back with the local sums.

It prints per order and step "flows on the busiest link : model s / measured s", where the model
prices a step of B bytes as B x flows / rate on its busiest link (a rack uplink direction shared
by ``flows`` exchanges, or the host NIC), then the Pearson correlation of model and measured over
all steps and the measured / model ratios of NIC-bound and uplink-bound steps. ``--json`` keeps
the raw data; ``--analyse-only FILE`` re-prints it (no root needed). ``--mpi-mca NAME=VALUE`` adds Open
MPI settings (the proof's ``btl_tcp_flags``), ``--sysctl NAME=VALUE`` sets a kernel setting in every
host's namespace and ``--quickack`` adds ``quickack 1`` to every host's routes (experiments: TCP's slow
start after idle, delayed acknowledgements); all are recorded.
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
from scipy.stats import pearsonr, spearmanr  # noqa: E402

from benchmarks.collectives_netns import (  # noqa: E402
    compile_timer, load_saved, log, make_cluster, measure_and_report, mpirun, netns_lock, pairs_arg,
    rack_contiguous, rack_interleaved, size_arg, utc, write_files)

SRC = ROOT / "benchmarks" / "mpi" / "hd_steps.c"
HOSTS_PER_RACK = [4, 4, 4, 4]
EXTRA_HOPS = 4
IPERF_SECONDS = 5
IPERF_PORT = 5300
ALONE, EVERY = "rack 0's uplink alone (4 up, 4 down)", "every rack uplink at once, r -> r+1 (16)"


# ---------------------------------------------------------------------------
# orders and the step model (pure)


def make_orders(racks: list[int], seed: int) -> dict[str, list[int]]:
    """The 6 rank orders (host indices, rank 0 first) for 4 racks."""
    inter = rack_interleaved(racks)

    def mixed(rs):  # the hosts of racks ``rs`` interleaved with one another
        return [i for i in inter if racks[i] in rs]

    rng = np.random.default_rng(seed)
    return {"rack-contiguous": rack_contiguous(racks), "rack-interleaved": inter,
            "interleave-01-23": mixed({0, 1}) + mixed({2, 3}),  # mask 1 across racks, mask 2 inside
            "interleave-23": [i for i in rack_contiguous(racks) if racks[i] in (0, 1)] + mixed({2, 3}),
            "random-0": rng.permutation(len(racks)).tolist(), "random-1": rng.permutation(len(racks)).tolist()}


def masks(n: int) -> list[int]:
    """Rabenseifner's partner distances: reduce-scatter 1, 2, .., n/2, then allgather n/2, .., 1."""
    rs = [1 << s for s in range(n.bit_length() - 1)]
    return rs + rs[::-1]


def uplink_loads(rank_racks, mask: int) -> tuple[dict, dict]:
    """Exchanges on each rack's uplink, out (``up``) and in (``down``), when every rank r sends to
    r ^ mask; racks none of whose exchanges cross are absent."""
    up, down = {}, {}
    for r, rack in enumerate(rank_racks):
        peer = rank_racks[r ^ mask]
        if peer != rack:
            up[rack], down[peer] = up.get(rack, 0) + 1, down.get(peer, 0) + 1
    return up, down


def step_flows(rank_racks, mask: int) -> int:
    """Most exchanges on one rack uplink direction when every rank r sends to r ^ mask (0: none cross)."""
    up, down = uplink_loads(rank_racks, mask)
    return max([*up.values(), *down.values(), 0])


def step_model(rank_racks, size: int, host_mbit: float, uplink_mbit: float) -> list[tuple[int, str, float]]:
    """Per step: (flows on its busiest link, "nic" or "uplink", seconds = bytes x flows / link rate)."""
    out = []
    for mask in masks(len(rank_racks)):
        nbytes, f = size / (2 * mask), step_flows(rank_racks, mask)
        uplink = f >= 1 and uplink_mbit / f < host_mbit
        rate = uplink_mbit / f if uplink else host_mbit
        out.append((f if uplink else 1, "uplink" if uplink else "nic", nbytes * 8 / (rate * 1e6)))
    return out


def iperf_patterns(by_rack: list[list[int]]) -> dict[str, list[tuple[int, int]]]:
    """(sender, receiver) host indices of each iperf3 pattern (4 racks of 4)."""
    H = lambda r, h: by_rack[r][h]  # noqa: E731
    return {ALONE: [(H(0, h), H(1 + h % 3, h)) for h in range(4)]
            + [(H(1 + (h + 1) % 3, (h + 1) % 4), H(0, h)) for h in range(4)],
            EVERY: [(H(r, h), H((r + 1) % 4, h)) for r in range(4) for h in range(4)],
            "1 flow per uplink, r -> r+1 (4)": [(H(r, 3), H((r + 1) % 4, 0)) for r in range(4)],
            "in-rack pairs (16)": [(H(r, h), H(r, h ^ 1)) for r in range(4) for h in range(4)]}


def link_rates(pairs, racks: list[int], mbit: list[float]) -> dict[str, float]:
    """Mbit/s per rack uplink direction ("up0": out of rack 0, "down1": into rack 1)."""
    out: dict[str, float] = {}
    for (a, b), m in zip(pairs, mbit):
        if racks[a] != racks[b]:
            for k in (f"up{racks[a]}", f"down{racks[b]}"):
                out[k] = out.get(k, 0.0) + m
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------
# measuring (root)


def run_iperf(c, pairs, seconds: float = IPERF_SECONDS) -> list[float]:
    """Mbit/s received of each (sender, receiver) iperf3 flow, all at once; every iperf3 is reaped."""
    procs: list[subprocess.Popen] = []
    try:
        for k, (_, b) in enumerate(pairs):
            procs.append(subprocess.Popen(["ip", "netns", "exec", c.hosts[b].netns, "iperf3", "-s", "-1", "-p",
                                           str(IPERF_PORT + k)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 10
        for k, (_, b) in enumerate(pairs):
            while not any(f":{IPERF_PORT + k} " in s for s in c.listening(c.hosts[b].name)):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"iperf3 server on {c.hosts[b].name}:{IPERF_PORT + k} did not start")
                time.sleep(0.05)
        clients = [subprocess.Popen(["ip", "netns", "exec", c.hosts[a].netns, "iperf3", "-c", c.hosts[b].address,
                                     "-p", str(IPERF_PORT + k), "-t", str(seconds), "-J"], stdout=subprocess.PIPE,
                                    text=True) for k, (a, b) in enumerate(pairs)]
        procs += clients
        rates = []
        for p in clients:
            doc = json.loads(p.communicate(timeout=seconds + 30)[0])
            if "error" in doc:
                raise RuntimeError(f"iperf3: {doc['error']}")
            rates.append(doc["end"]["sum_received"]["bits_per_second"] / 1e6)
        for p in procs:
            p.wait(timeout=10)
        return rates
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def run_steps(c, exe: Path, hostfile: Path, want: list[str], size: int, repeats: int, mca: tuple = ()) -> dict:
    """One ``mpirun.openmpi --map-by seq`` of hd_steps (``collectives_netns.mpirun``, ``mca`` pairs added)."""
    got = {r.get("what", "hosts"): r
           for r in mpirun(c, hostfile, want, [str(exe), str(size), "1", str(repeats)], mca=mca)}
    if got["allreduce"]["read_back"] != 6 or not got["allreduce"]["correct"]:
        raise RuntimeError(f"MPI_Allreduce: algorithm read back {got['allreduce']['read_back']}, "
                           f"correct={got['allreduce']['correct']}")
    return {k: got[k]["seconds"] for k in ("allreduce", "steps", "free")}


def measure(args, save) -> dict:
    from plink.data.probefile import Host

    doc = {"format": "plink-hd-steps", "version": 1, "command": " ".join(sys.argv), "started": utc(),
           "cluster": {"hosts_per_rack": HOSTS_PER_RACK, "host_mbit": args.mbit, "uplink_mbit": args.mbit,
                       "extra_hops": EXTRA_HOPS},
           "size_bytes": args.size, "repeats": args.repeats, "passes": args.passes, "seed": args.seed,
           "mpi_mca": [list(kv) for kv in args.mpi_mca], "sysctl": [list(kv) for kv in args.sysctl],
           "quickack": bool(args.quickack)}
    with netns_lock(), tempfile.TemporaryDirectory(prefix="plink-hd-steps-") as tmp:
        tmp = Path(tmp)
        exe = compile_timer(tmp, SRC)
        with make_cluster(doc["cluster"], {}) as c:
            racks = [h.rack for h in c.hosts]
            doc.update(hosts=[h.name for h in c.hosts], racks=racks)
            for h in c.hosts:  # per-namespace kernel settings (--sysctl), on every host
                for k, v in args.sysctl:
                    c.exec(h.name, ["sysctl", "-qw", f"{k}={v}"], check=True, capture_output=True)
                if args.quickack:  # every route of the host acknowledges at once (no delayed ACKs)
                    routes = c.exec(h.name, ["ip", "-4", "-o", "route", "show"], check=True, capture_output=True,
                                    text=True).stdout.splitlines()
                    for r in routes:
                        c.exec(h.name, ["ip", "route", "change", *r.split(), "quickack", "1"], check=True,
                               capture_output=True)
            by_rack = [[h.index for h in c.hosts if h.rack == r] for r in range(len(HOSTS_PER_RACK))]
            pats = iperf_patterns(by_rack)
            doc["iperf"] = {"seconds": IPERF_SECONDS,
                            "patterns": {n: {"pairs": p, "mbit": []} for n, p in pats.items()}}
            for p in range(args.passes):
                for name in (list(pats) if p % 2 == 0 else list(pats)[::-1]):
                    doc["iperf"]["patterns"][name]["mbit"].append(run_iperf(c, pats[name]))
                    log(f"iperf3 {name}: {sum(doc['iperf']['patterns'][name]['mbit'][-1]):.0f} Mbit/s in total")
            if c.leftovers():
                raise RuntimeError(f"left running after iperf3: {c.leftovers()}")
            save(doc)
            orders = make_orders(racks, args.seed)
            doc["orders"] = orders
            doc["mpi"] = {n: [] for n in orders}
            for p in range(args.passes):
                for name in (list(orders) if p % 2 == 0 else list(orders)[::-1]):
                    want = [c.hosts[i].name for i in orders[name]]
                    files = write_files(tmp, name, [Host(h, c.host(h).address) for h in want])
                    t = time.monotonic()
                    doc["mpi"][name].append({"pass": p, **run_steps(c, exe, files["openmpi"], want, args.size,
                                                                     args.repeats, args.mpi_mca)})
                    log(f"pass {p} {name}: {time.monotonic() - t:.0f} s")
                    save(doc)
            doc["finished"] = utc()
    return doc


# ---------------------------------------------------------------------------
# report (from the saved data alone)


def analyse(doc: dict) -> tuple[str, dict]:
    cl, size, racks = doc["cluster"], doc["size_bytes"], doc["racks"]
    lines = [f"hd steps on {len(racks)} hosts, racks {cl['hosts_per_rack']}, host/uplink {cl['host_mbit']:g}/"
             f"{cl['uplink_mbit']:g} Mbit/s, {cl['extra_hops']} extra hops; {size / 2**20:g} MiB; {doc['passes']} "
             f"passes x {doc['repeats']} repeats; {doc['started']} - {doc.get('finished', 'unfinished')}"
             + "".join(f"; mpirun --mca {k} {v}" for k, v in (doc.get("mpi_mca") or []))
             + "".join(f"; sysctl {k}={v}" for k, v in (doc.get("sysctl") or []))
             + ("; routes with quickack 1" if doc.get("quickack") else ""), "",
             f"iperf3, {doc['iperf']['seconds']} s per flow: Mbit/s per rack uplink direction, per pass"]
    per_dir = {}
    for name, pat in doc["iperf"]["patterns"].items():
        for rates in pat["mbit"]:
            lk = link_rates(pat["pairs"], racks, rates)
            per_dir.setdefault(name, []).append(lk)
            lines.append((f"  {name:<42} total {sum(rates):6.0f}  flows {min(rates):4.0f}-{max(rates):4.0f}  "
                          + " ".join(f"{k}={v:.0f}" for k, v in lk.items())).rstrip())
    alone, every = per_dir[ALONE], per_dir[EVERY]
    one = np.mean([d[k] for d in alone for k in ("up0", "down0")])
    allv = [v for d in every for v in d.values()]
    figs = {"uplink_alone_mbit": float(one), "uplink_all_mean_mbit": float(np.mean(allv)),
            "uplink_all_min_mbit": float(np.min(allv))}
    lines.append(f"  every rack uplink direction at once: mean {np.mean(allv):.0f}, min {np.min(allv):.0f} Mbit/s, "
                 f"against rack 0's alone {one:.0f} ({np.mean(allv) / one:.0%}): "
                 + ("no shared spine bottleneck" if np.min(allv) >= 0.9 * one else "the spine limits them"))
    labels = [f"{'RS' if s < len(masks(len(racks))) // 2 else 'AG'}{m}" for s, m in enumerate(masks(len(racks)))]
    lines += ["", "Rabenseifner, per step 'flows on the busiest link : model s / measured s' (median of all runs; "
              "1 flow: the host NIC), sum, free-running steps, MPI_Allreduce (algorithm 6), seconds",
              f"  {'order':<17}" + "".join(f"{x:>15}" for x in labels) + f"{'sum':>13} {'free':>6} {'allred':>6}"]
    X, Y, kind, tot_model, tot_ar = [], [], [], [], []
    for name, order in doc["orders"].items():
        runs = doc["mpi"].get(name) or []
        if not runs:
            continue
        model = step_model([racks[i] for i in order], size, cl["host_mbit"], cl["uplink_mbit"])
        meas = np.median([st for r in runs for st in r["steps"]], axis=0)
        ar, fr = (float(np.median([x for r in runs for x in r[k]])) for k in ("allreduce", "free"))
        X += [m for _, _, m in model]
        Y += meas.tolist()
        kind += [k for _, k, _ in model]
        tot_model.append(sum(m for _, _, m in model))
        tot_ar.append(ar)
        lines.append(f"  {name:<17}" + "".join(f"{f'{f}:{m:.3f}/{y:.3f}':>15}" for (f, _, m), y in zip(model, meas))
                     + f"{f'{tot_model[-1]:.3f}/{meas.sum():.3f}':>13} {fr:6.3f} {ar:6.3f}")
    X, Y, kind = np.array(X), np.array(Y), np.array(kind)
    figs["pearson_steps"] = float(pearsonr(X, Y)[0])
    lines.append(f"  Pearson(model, measured) over {len(X)} steps of {len(tot_ar)} orders: {figs['pearson_steps']:.3f}")
    for k, what in (("nic", "a host NIC"), ("uplink", "a shared rack uplink")):
        r = Y[kind == k] / X[kind == k]
        if len(r):
            figs[f"ratio_{k}"] = [float(r.min()), float(np.median(r)), float(r.max())]
            lines.append(f"  measured / model, {len(r)} steps whose busiest link is {what}: {r.min():.2f} - "
                         f"{r.max():.2f} (median {np.median(r):.2f})")
    if len(tot_ar) >= 3:
        figs["spearman_orders"] = float(spearmanr(tot_model, tot_ar)[0])
        lines.append(f"  Spearman(model sum, MPI_Allreduce) over the {len(tot_ar)} orders: "
                     f"{figs['spearman_orders']:.2f}")
    return "\n".join(lines), figs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mbit", type=float, default=350, help="host link and rack uplink rate")
    ap.add_argument("--size", default="4MiB", help="all-reduce size")
    ap.add_argument("--passes", type=int, default=2, help="passes over the orders (every other one reversed)")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per order and pass (after 1 warm-up)")
    ap.add_argument("--seed", type=int, default=7, help="seed of the two random orders")
    ap.add_argument("--json", help="save the raw data here (as soon as it exists)")
    ap.add_argument("--analyse-only", metavar="FILE", help="re-print the tables of a saved --json file")
    ap.add_argument("--mpi-mca", nargs="+", default=[], metavar="NAME=VALUE",
                    help="more Open MPI settings, e.g. btl_tcp_flags=send,inplace,need-ack,need-csum (the proof's)")
    ap.add_argument("--sysctl", nargs="+", default=[], metavar="NAME=VALUE",
                    help="kernel settings of every host's namespace, e.g. net.ipv4.tcp_slow_start_after_idle=0")
    ap.add_argument("--quickack", action="store_true",
                    help="every host's routes with quickack 1 (TCP acknowledges at once, no delayed ACKs)")
    args = ap.parse_args(argv)
    if args.analyse_only:
        print(analyse(load_saved(ap, args.analyse_only))[0])
        return 0
    args.size = size_arg(ap, args.size)
    args.mpi_mca = pairs_arg(ap, args.mpi_mca, "--mpi-mca")
    args.sysctl = pairs_arg(ap, args.sysctl, "--sysctl", lambda k: k.replace(".", "").replace("_", "").isalnum(),
                            " (NAME: letters, digits, dots, underscores)")
    if args.mbit * sum(HOSTS_PER_RACK) > 6500:
        ap.error("keep hosts x link rate <= ~6 Gbit/s on this machine")
    return measure_and_report(args, measure, lambda doc: analyse(doc)[0], tools=("iperf3",))


if __name__ == "__main__":
    sys.exit(main())
