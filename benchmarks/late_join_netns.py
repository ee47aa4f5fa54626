"""Does an exchange that starts late on a loaded rack uplink get its fair share?  Measured on the netns cluster.

Traced rank by rank, Rabenseifner's exchanges that start while others already load their uplink
took about a fair share's time however late they started (docs/proof.md, "Rabenseifner back to
back, rank by rank"), while plink's fluid price gives a flow the whole capacity others leave.  This
times the simplest case: 2 racks of ``K`` hosts (host links and rack uplinks at ``--mbit``; pairs
``(i, i + K)``, so ``K`` exchanges on every uplink direction), every pair but the last exchanging
``--size`` bytes at once and the last pair ``D`` ms later, for each ``D`` of ``--delays``, and the
last pair alone (``benchmarks/mpi/late_join.c``, ``MPI_Sendrecv``, ``mpirun --map-by seq``, the
proof's ``btl_tcp_flags``; ``--repeats`` runs after a warm-up; with ``--quickack`` every launch
again with ``quickack 1`` on every host's routes, alternating).  It prints, per size and delay,
the medians of: the late exchange's time from its start to its end, the others' (their slowest),
the last end; each beside the fluid's (one shared link, equal shares, each flow also capped at
the link's rate alone); and how busy the uplink was (bytes over rate x last end).

Run as root (network namespaces, sshd, Open MPI with its headers; ~3 min)::

    sudo "$(command -v python)" benchmarks/late_join_netns.py [--mbit 350] [--hosts-per-rack 4] \\
        [--sizes 1MiB 2MiB] [--delays 0 24 48 96] [--quickack] [--json FILE]
    python benchmarks/late_join_netns.py --analyse-only FILE
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.collectives_netns import (  # noqa: E402
    compile_timer, load_saved, log, make_cluster, measure_and_report, mpirun, netns_lock, set_quickack, size_arg,
    utc, write_files)

SRC = ROOT / "benchmarks" / "mpi" / "late_join.c"
FLAGS = ("btl_tcp_flags", "send,inplace,need-ack,need-csum")  # the proof's
EXTRA_HOPS = 4


def fluid_single_link(starts, nbytes: float, rate: float) -> np.ndarray:
    """End times of flows of ``nbytes`` each starting at ``starts`` on one link of ``rate`` bytes/s,
    sharing it equally while they overlap (each flow alone gets the whole link). O(F^2)."""
    starts = np.asarray(starts, dtype=float)
    left = np.full(len(starts), float(nbytes))
    end = np.full(len(starts), np.nan)
    t = float(starts.min())
    while np.isnan(end).any():
        on = np.flatnonzero((starts <= t + 1e-15) & np.isnan(end))
        later = starts[(starts > t + 1e-15) & np.isnan(end)]
        if not len(on):  # the link idle until the next flow starts
            t = float(later.min())
            continue
        share = rate / len(on)
        dt = left[on].min() / share
        if len(later) and later.min() - t < dt:
            dt = later.min() - t
        left[on] -= share * dt
        t += dt
        fin = on[left[on] <= 1e-9 * nbytes]
        end[fin] = t
        left[fin] = 0.0
    return end


def measure(args, save) -> dict:
    from plink.data.probefile import Host

    K = args.hosts_per_rack
    shape = {"hosts_per_rack": [K, K], "host_mbit": args.mbit, "uplink_mbit": args.mbit, "extra_hops": EXTRA_HOPS}
    doc = {"format": "plink-late-join", "version": 1, "command": " ".join(sys.argv), "started": utc(),
           "cluster": shape, "sizes": args.sizes, "delays_ms": args.delays, "repeats": args.repeats,
           "quickack": bool(args.quickack), "runs": []}
    with netns_lock(), tempfile.TemporaryDirectory(prefix="plink-late-join-") as tmp:
        exe = compile_timer(Path(tmp), SRC)
        with make_cluster(shape, {}) as c:
            want = [h.name for r in range(2) for h in c.hosts if h.rack == r]
            files = write_files(Path(tmp), "racks", [Host(h, c.host(h).address) for h in want])
            acks = ("delayed", "quick") if args.quickack else ("delayed",)
            for p in range(args.passes):
                for ack in acks if p % 2 == 0 else acks[::-1]:
                    if args.quickack:
                        set_quickack(c, ack == "quick")
                    for size in args.sizes:
                        t = time.monotonic()
                        rows = mpirun(c, files["openmpi"], want,
                                      [str(exe), str(size), str(args.repeats), "-1",
                                       *[f"{d:g}" for d in args.delays]], mca=(FLAGS,))
                        for r in rows:
                            if "delay_ms" in r:
                                doc["runs"].append({"pass": p, "ack": ack, "size": size, **r})
                        log(f"pass {p}, {ack} ACKs, {size} bytes: {time.monotonic() - t:.0f} s")
                        save(doc)
            doc["finished"] = utc()
    return doc


def render(doc: dict) -> str:
    cl = doc["cluster"]
    K, rate = cl["hosts_per_rack"][0], cl["uplink_mbit"] * 1e6 / 8
    lines = [f"late join on 2 racks of {K} ({K} exchanges per uplink direction), host/uplink {cl['host_mbit']:g}/"
             f"{cl['uplink_mbit']:g} Mbit/s; {doc['repeats']} runs a launch; {doc['started']} - "
             f"{doc.get('finished', 'unfinished')}; mpirun --mca {FLAGS[0]} {FLAGS[1]}", "",
             "size | ACKs | late by ms | late exchange ms: measured / fluid | the others' (slowest) | last end | "
             "uplink busy"]
    for size in doc["sizes"]:
        for ack in ("delayed", "quick"):
            for delay in [-1.0] + [float(d) for d in doc["delays_ms"]]:
                runs = [x for r in doc["runs"] if r["size"] == size and r["ack"] == ack and r["delay_ms"] == delay
                        for x in r["runs"]]
                if not runs:
                    continue
                S, E = np.array([x["start"] for x in runs]), np.array([x["end"] for x in runs])
                late = np.median(E[:, -1] - S[:, -1])
                if delay < 0:
                    fl = fluid_single_link([0.0], size, rate)
                    lines.append(f"{size / 2**20:g} MiB | {ack} | alone | {1e3 * late:.0f} / {1e3 * fl[0]:.0f} | - | "
                                 f"{1e3 * np.median(E[:, -1]):.0f} / {1e3 * fl[0]:.0f} | "
                                 f"{size / rate / np.median(E[:, -1]):.0%}")
                    continue
                fl = fluid_single_link([0.0] * (K - 1) + [delay / 1e3], size, rate)
                others = np.median((E[:, :-1] - S[:, :-1]).max(axis=1))
                last = np.median(E.max(axis=1))
                lines.append(f"{size / 2**20:g} MiB | {ack} | {delay:g} | {1e3 * late:.0f} / "
                             f"{1e3 * (fl[-1] - delay / 1e3):.0f} | {1e3 * others:.0f} / {1e3 * fl[:-1].max():.0f} | "
                             f"{1e3 * last:.0f} / {1e3 * fl.max():.0f} | {K * size / rate / last:.0%}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mbit", type=float, default=350, help="host link and rack uplink rate")
    ap.add_argument("--hosts-per-rack", type=int, default=4, help="hosts per rack (exchanges per uplink direction)")
    ap.add_argument("--sizes", nargs="+", default=["1MiB", "2MiB"], help="bytes each way per exchange")
    ap.add_argument("--delays", nargs="+", type=float, default=[0, 24, 48, 96], help="the last pair's delays, ms")
    ap.add_argument("--repeats", type=int, default=10, help="runs per launch after a warm-up")
    ap.add_argument("--passes", type=int, default=2, help="launches per size (and acknowledgement setting)")
    ap.add_argument("--quickack", action="store_true", help="also with quickack 1 on every host's routes")
    ap.add_argument("--json", help="save the raw data here (as soon as it exists)")
    ap.add_argument("--analyse-only", metavar="FILE", help="re-print a saved --json file")
    args = ap.parse_args(argv)
    if args.analyse_only:
        print(render(load_saved(ap, args.analyse_only, "plink-late-join")))
        return 0
    args.sizes = [size_arg(ap, s) for s in args.sizes]
    if not 2 <= args.hosts_per_rack <= 8 or args.mbit * 2 * args.hosts_per_rack > 6500:
        ap.error("--hosts-per-rack must be 2..8 and hosts x rate <= ~6 Gbit/s")
    if any(d < 0 or d > 5000 for d in args.delays) or not 1 <= args.repeats <= 100 or not 1 <= args.passes <= 10:
        ap.error("--delays must be 0..5000 ms, --repeats 1..100, --passes 1..10")
    return measure_and_report(args, measure, render, tools=("mpirun.openmpi",))


if __name__ == "__main__":
    sys.exit(main())
