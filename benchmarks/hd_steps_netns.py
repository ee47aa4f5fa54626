"""Rabenseifner's all-reduce step by step on the netns cluster: does "bytes x flows on the busiest
link / link rate" price each step, and is there a shared spine bottleneck besides the rack uplinks?

Run as root (network namespaces, sshd, iperf3, Open MPI with its headers; ~6 min)::

    sudo "$(command -v python)" benchmarks/hd_steps_netns.py [--mbit 350] [--size 4MiB] [--passes 2] \\
        [--seed 7] [--mpi-mca btl_tcp_flags=send,inplace,need-ack,need-csum] \\
        [--sysctl net.ipv4.tcp_slow_start_after_idle=0] [--quickack] [--queue-packets 64] \\
        [--json benchmarks/results/hd_steps-350.json]
    python benchmarks/hd_steps_netns.py --analyse-only benchmarks/results/hd_steps-350.json [--sndbuf 4MiB]

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
   (slowest rank per step), the exchanges back to back with the local sums, and the same again
   with every rank noting when it ends each exchange (the trace; since 2026-11-30 19:00 UTC); and
   TCP's counters summed over the hosts around each ``mpirun`` (``TCP_COUNTERS``, ``nstat``).

It prints per order and step "flows on the busiest link : model s / measured s", where the model
prices a step of B bytes as B x flows / rate on its busiest link (a rack uplink direction shared
by ``flows`` exchanges, or the host NIC), then the Pearson correlation of model and measured over
all steps and the measured / model ratios of NIC-bound and uplink-bound steps; from the trace, per
order and step, when the last rank ends it and the ranks' spread, how busy the rack uplinks were,
how far apart the exchanges become ready and how long each takes once ready, beside the ends in
plink's fluid price (``FluidCostModel.round_ends``); then the TCP counters. ``--json`` keeps
the raw data; ``--analyse-only FILE`` re-prints it (no root needed). ``--mpi-mca NAME=VALUE`` adds Open
MPI settings (the proof's ``btl_tcp_flags``), ``--sysctl NAME=VALUE`` sets a kernel setting in every
host's namespace and ``--quickack`` adds ``quickack 1`` to every host's routes (experiments: TCP's slow
start after idle, delayed acknowledgements); ``--queue-packets N`` gives every shaped link a queue of
N packets instead of the veth's 1000 (bufferbloat); all are recorded.
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
    rack_contiguous, rack_interleaved, set_quickack, set_sysctl, size_arg, sysctl_arg, utc, write_files)

SRC = ROOT / "benchmarks" / "mpi" / "hd_steps.c"
HOSTS_PER_RACK = [4, 4, 4, 4]
EXTRA_HOPS = 4
IPERF_SECONDS = 5
IPERF_PORT = 5300
#: TCP counters summed over the hosts around every mpirun (``nstat``): retransmitted segments,
#: retransmission timeouts, tail loss probes
TCP_COUNTERS = ("TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes")
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


def ready_times(ends: np.ndarray) -> np.ndarray:
    """From every rank's step ends ``(runs, ranks, steps)``: when each rank is ready for each step's
    exchange, both it and its partner (rank ``r ^ mask``) done with the step before (0 for the
    first), ``(runs, ranks, steps)``."""
    runs, n, _ = ends.shape
    start = np.concatenate([np.zeros((runs, n, 1)), ends[:, :, :-1]], axis=2)
    ready = np.empty_like(ends)
    for s, mask in enumerate(masks(n)):
        peer = np.arange(n) ^ mask
        ready[:, :, s] = np.maximum(start[:, :, s], start[:, peer, s])
    return ready


def uplink_busy(ends: np.ndarray, rank_racks: list[int], size: int, uplink_mbit: float) -> np.ndarray:
    """Per step, how busy the rack uplinks were in a traced run, from every rank's step ends
    ``ends`` ``(runs, ranks, steps)``: for each uplink direction the step's exchanges cross, the bytes
    they carry over ``uplink_mbit`` x the window from the first of its exchanges being ready (both
    ranks done with the step before) to the last one's end (the later of its two ranks'); median over
    the runs of the mean over the directions.  NaN for steps that cross no uplink."""
    runs, n, steps = ends.shape
    ready = ready_times(ends)
    out = np.full(steps, np.nan)
    for s, mask in enumerate(masks(n)):
        peer = np.arange(n) ^ mask
        done = np.maximum(ends[:, :, s], ends[:, peer, s])
        # the ranks whose exchanges cross each uplink direction: out of a rack (its ranks send), into it
        groups: dict[tuple[int, int], list[int]] = {}
        for r in range(n):
            if rank_racks[r] != rank_racks[peer[r]]:
                groups.setdefault((0, rank_racks[r]), []).append(r)
                groups.setdefault((1, rank_racks[peer[r]]), []).append(r)
        if not groups:
            continue
        seconds = size / (2 * mask) * 8 / (uplink_mbit * 1e6)  # one exchange's bytes alone on the uplink
        fill = [[len(rs) * seconds / (done[k, rs].max() - ready[k, rs, s].min()) for rs in groups.values()]
                for k in range(runs)]
        out[s] = float(np.median(np.mean(fill, axis=1)))
    return out


def exchange_times(ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From every rank's step ends ``(runs, ranks, steps)``: per run and step, how far apart the ranks
    are in becoming ready for the step (``ready_times``; the latest less the earliest), ``(runs,
    steps)``; and per rank and step the median over the runs of how long its exchange took once ready
    (its own end less that), ``(ranks, steps)``."""
    ready = ready_times(ends)
    return ready.max(axis=1) - ready.min(axis=1), np.median(ends - ready, axis=0)


def fluid_ends(racks: list[int], order: list[int], size: int, host_mbit: float, uplink_mbit: float,
               sndbuf: float | None = None):
    """``(ranks, 2 log2 n)`` seconds at which each rank ends each exchange of Rabenseifner in plink's
    fluid price (``FluidCostModel.round_ends``) on this cluster's nominal rates, with ``sndbuf``
    bytes of send buffer per sender (None: the price's, senders done at delivery); None without
    plink's shared-link model."""
    try:
        from plink.solvers.contention import Network
        from plink.solvers.fluid import FluidCostModel
    except ImportError:
        return None
    n, g = len(racks), np.asarray(racks, dtype=np.int64)
    k = int(g.max()) + 1
    nic, up = np.full(n, host_mbit * 1e6 / 8), np.full(k, uplink_mbit * 1e6 / 8)
    model = FluidCostModel("hd", Network(latency=np.zeros((n, n)), nic_send=nic, nic_recv=nic, groups=g, up=up,
                                         down=up), size)
    ends = model.round_ends(np.asarray(order), sndbuf=sndbuf)
    return ends[:, ~np.isnan(ends).all(axis=0)]  # (a power of two: no fold rounds)


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


def tcp_counters(c) -> dict[str, int]:
    """``TCP_COUNTERS`` summed over every host's namespace (absolute values; ``nstat -as`` keeps no history)."""
    out = dict.fromkeys(TCP_COUNTERS, 0)
    for h in c.hosts:
        for line in c.exec(h.name, ["nstat", "-asz", *TCP_COUNTERS], check=True, capture_output=True,
                           text=True).stdout.splitlines():
            f = line.split()
            if len(f) >= 2 and f[0] in out:
                out[f[0]] += int(f[1])
    return out


def run_steps(c, exe: Path, hostfile: Path, want: list[str], size: int, repeats: int, mca: tuple = ()) -> dict:
    """One ``mpirun.openmpi --map-by seq`` of hd_steps (``collectives_netns.mpirun``, ``mca`` pairs added)."""
    got = {r.get("what", "hosts"): r
           for r in mpirun(c, hostfile, want, [str(exe), str(size), "1", str(repeats)], mca=mca)}
    if got["allreduce"]["read_back"] != 6 or not got["allreduce"]["correct"]:
        raise RuntimeError(f"MPI_Allreduce: algorithm read back {got['allreduce']['read_back']}, "
                           f"correct={got['allreduce']['correct']}")
    out = {k: got[k]["seconds"] for k in ("allreduce", "steps", "free")}
    if "trace" in got:  # every rank's step ends, back to back (hd_steps.c since 2026-11-30 19:10 UTC)
        out["trace"] = got["trace"]["ends"]
    return out


def measure(args, save) -> dict:
    from plink.data.probefile import Host

    doc = {"format": "plink-hd-steps", "version": 1, "command": " ".join(sys.argv), "started": utc(),
           "cluster": {"hosts_per_rack": HOSTS_PER_RACK, "host_mbit": args.mbit, "uplink_mbit": args.mbit,
                       "extra_hops": EXTRA_HOPS, "queue_packets": args.queue_packets},
           "size_bytes": args.size, "repeats": args.repeats, "passes": args.passes, "seed": args.seed,
           "mpi_mca": [list(kv) for kv in args.mpi_mca], "sysctl": [list(kv) for kv in args.sysctl],
           "quickack": bool(args.quickack)}
    with netns_lock(), tempfile.TemporaryDirectory(prefix="plink-hd-steps-") as tmp:
        tmp = Path(tmp)
        exe = compile_timer(tmp, SRC)
        with make_cluster(doc["cluster"], {}) as c:
            racks = [h.rack for h in c.hosts]
            doc.update(hosts=[h.name for h in c.hosts], racks=racks)
            set_sysctl(c, args.sysctl)  # per-namespace kernel settings, on every host
            if args.quickack:  # every route of every host acknowledges at once (no delayed ACKs)
                set_quickack(c)
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
                    t, before = time.monotonic(), tcp_counters(c)
                    doc["mpi"][name].append({"pass": p, **run_steps(c, exe, files["openmpi"], want, args.size,
                                                                     args.repeats, args.mpi_mca)})
                    after = tcp_counters(c)
                    doc["mpi"][name][-1]["tcp"] = {k: after[k] - before[k] for k in TCP_COUNTERS}
                    log(f"pass {p} {name}: {time.monotonic() - t:.0f} s")
                    save(doc)
            doc["finished"] = utc()
    return doc


# ---------------------------------------------------------------------------
# report (from the saved data alone)


def analyse(doc: dict, sndbuf: float | None = None) -> tuple[str, dict]:
    """The tables and figures of a saved run; ``sndbuf``: also the fluid's ends with senders done
    once at most that many bytes are left (``solvers.fluid``'s send-buffer knob)."""
    cl, size, racks = doc["cluster"], doc["size_bytes"], doc["racks"]
    lines = [f"hd steps on {len(racks)} hosts, racks {cl['hosts_per_rack']}, host/uplink {cl['host_mbit']:g}/"
             f"{cl['uplink_mbit']:g} Mbit/s, {cl['extra_hops']} extra hops; {size / 2**20:g} MiB; {doc['passes']} "
             f"passes x {doc['repeats']} repeats; {doc['started']} - {doc.get('finished', 'unfinished')}"
             + "".join(f"; mpirun --mca {k} {v}" for k, v in (doc.get("mpi_mca") or []))
             + "".join(f"; sysctl {k}={v}" for k, v in (doc.get("sysctl") or []))
             + ("; routes with quickack 1" if doc.get("quickack") else "")
             + (f"; queues of {q} packets" if (q := doc["cluster"].get("queue_packets")) else ""), "",
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
    traced = {name: [rep for r in doc["mpi"].get(name) or [] for rep in r.get("trace") or []] for name in doc["orders"]}
    if any(traced.values()):
        lines += ["", "Back to back, every rank's step ends (median of runs), per step 'when the last rank ends it, "
                  "less when the last ended the step before / the first rank's end to the last's', ms; total s; "
                  "below each order how busy the rack uplinks were (median over the runs of the bytes a "
                  "direction carries in the step over its rate x the time from the first of its exchanges' ranks "
                  "being ready to the last one's end, mean over the directions), its exchanges 'spread of the "
                  "times their ranks are both ready: fastest-slowest exchange once both are' (ms, each rank's median "
                  "over the runs), and the ends in plink's fluid price "
                  "(solvers.fluid, equal max-min shares, no latency)",
                  f"  {'order':<17}" + "".join(f"{x:>12}" for x in labels) + f"{'total':>8}"]
        for name, reps in traced.items():
            if not reps:
                continue
            E = np.array(reps)  # (runs, ranks, steps)
            last = E.max(axis=1)
            inc = np.median(np.diff(np.concatenate([np.zeros((len(E), 1)), last], axis=1), axis=1), axis=0)
            spread = np.median(E.max(axis=1) - E.min(axis=1), axis=0)
            lines.append(f"  {name:<17}" + "".join(f"{f'{1e3 * a:.0f}/{1e3 * b:.0f}':>12}" for a, b in zip(inc, spread))
                         + f"{np.median(last[:, -1]):8.3f}")
            busy = uplink_busy(E, [racks[i] for i in doc["orders"][name]], size, cl["uplink_mbit"])
            lines.append(f"  {'  uplinks busy':<17}" + "".join(f"{'' if np.isnan(b) else f'{b:.0%}':>12}" for b in busy))
            ready, took = exchange_times(E)
            lines.append(f"  {'  exchanges':<17}" + "".join(
                f"{f'{1e3 * np.median(r):.0f}:{1e3 * t.min():.0f}-{1e3 * t.max():.0f}':>12}"
                for r, t in zip(ready.T, took.T)))
            variants = [(None, "  the fluid")]
            if sndbuf is not None:
                variants.append((sndbuf, f"  buffered {sndbuf / 2**10:g}K"))
            for buf, what in variants:
                fl = fluid_ends(racks, doc["orders"][name], size, cl["host_mbit"], cl["uplink_mbit"], buf)
                if fl is not None:
                    last = np.nanmax(fl, axis=0)
                    fin = last - np.nanmin(fl, axis=0)
                    lines.append(f"  {what:<17}" + "".join(
                        f"{f'{1e3 * a:.0f}/{1e3 * b:.0f}':>12}" for a, b in zip(np.diff(np.r_[0.0, last]), fin))
                        + f"{last[-1]:8.3f}")
    tcp = {name: [r["tcp"] for r in doc["mpi"].get(name) or [] if "tcp" in r] for name in doc["orders"]}
    if any(tcp.values()):
        lines += ["", "TCP counters summed over the hosts, per mpirun of every part above (" + ", ".join(TCP_COUNTERS)
                  + "), per pass"]
        for name, runs in tcp.items():
            lines.append(f"  {name:<17} " + "  ".join("/".join(str(r[k]) for k in TCP_COUNTERS) for r in runs))
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
    ap.add_argument("--sndbuf", metavar="SIZE",
                    help="with --analyse-only: also the fluid's step ends with every sender done once at most "
                         "SIZE bytes are left (e.g. 4MiB, the kernel's largest autotuned send buffer)")
    ap.add_argument("--mpi-mca", nargs="+", default=[], metavar="NAME=VALUE",
                    help="more Open MPI settings, e.g. btl_tcp_flags=send,inplace,need-ack,need-csum (the proof's)")
    ap.add_argument("--sysctl", nargs="+", default=[], metavar="NAME=VALUE",
                    help="kernel settings of every host's namespace, e.g. net.ipv4.tcp_slow_start_after_idle=0")
    ap.add_argument("--quickack", action="store_true",
                    help="every host's routes with quickack 1 (TCP acknowledges at once, no delayed ACKs)")
    ap.add_argument("--queue-packets", type=int, metavar="N",
                    help="packets every shaped link may queue (default: the veth's txqueuelen, 1000)")
    args = ap.parse_args(argv)
    if args.sndbuf is not None and not args.analyse_only:
        ap.error("--sndbuf goes with --analyse-only")
    if args.analyse_only:
        print(analyse(load_saved(ap, args.analyse_only), None if args.sndbuf is None else size_arg(ap, args.sndbuf))[0])
        return 0
    args.size = size_arg(ap, args.size)
    args.mpi_mca = pairs_arg(ap, args.mpi_mca, "--mpi-mca")
    args.sysctl = sysctl_arg(ap, args.sysctl)
    if args.queue_packets is not None and not 1 <= args.queue_packets <= 100_000:
        ap.error("--queue-packets must be 1..100000")
    if args.mbit * sum(HOSTS_PER_RACK) > 6500:
        ap.error("keep hosts x link rate <= ~6 Gbit/s on this machine")
    return measure_and_report(args, measure, lambda doc: analyse(doc)[0], tools=("iperf3",))


if __name__ == "__main__":
    sys.exit(main())
