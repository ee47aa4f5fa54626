"""Where does Open MPI's ring lose time that no rank order changes?  Measured on the proof's cluster.

In every proof run Open MPI's ring (coll_tuned 4) measured about twice its price on the fast
orders (0.33-0.43 s for 0.19 s at 4 MiB) and near its price on the slow ones, so its measured
speedups are 42-68% of the predicted (README, "Where this stands").  This script times the ring on case A's cluster (4 racks
of 4, 350 Mbit/s, prefix ``pf``, subnet ``10.201``, as ``collectives_netns.py``) for the
rack-contiguous order (one flow per uplink) and the rack-interleaved one (four), at two sizes,
with the proof's ``btl_tcp_flags`` and without ``need-csum`` (is it the checksums?), ``--reps``
times each (3 runs a launch, the median), and prints measured / priced, the price being the
ring's bytes, 2 (N-1)/N x size, over the busiest link.  A gap that stays the same when the size
grows is a cost per step (the ring has 2 (N-1) = 30), not a rate.  ``--quickack`` keeps the proof's
flags only and times each case with the kernel's delayed acknowledgements and with ``quickack 1`` on
every host's routes (``collectives_netns.set_quickack``), alternating the two every launch: is the
cost per step TCP's delayed acknowledgements?

Run as root (about 4 min)::

    python benchmarks/mpi_ring_overhead.py --json benchmarks/results/mpi-ring-overhead.json
    python benchmarks/mpi_ring_overhead.py --quickack --json benchmarks/results/mpi-ring-quickack.json
    python benchmarks/mpi_ring_overhead.py --analyse-only benchmarks/results/mpi-ring-overhead.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import benchmarks.collectives_netns as proof  # noqa: E402

SHAPE = {"hosts_per_rack": [4, 4, 4, 4], "host_mbit": 350, "uplink_mbit": 350, "extra_hops": 4}
FLAGS = {"need-csum": "send,inplace,need-ack,need-csum", "no csum": "send,inplace,need-ack"}
SIZES_MIB = (4, 16)


def measure(args, save=None) -> dict:
    """Time the ring ``args.reps`` times for each size, flags and order; the saved document."""
    from plink.data.probefile import Host

    rows = []
    with proof.netns_lock(), tempfile.TemporaryDirectory(prefix="plink-mpiring-") as tmp:
        tmp = Path(tmp)
        exe = proof.compile_timer(tmp)
        with proof.make_cluster(SHAPE, {}) as c:
            names = [h.name for h in c.hosts]
            racks = [c.rack_of(n) for n in names]
            orders = {"rack-contiguous": proof.rack_contiguous(racks), "rack-interleaved": proof.rack_interleaved(racks)}
            files = {k: proof.write_files(tmp, k, [Host(names[i], c.host(names[i]).address) for i in o])
                     for k, o in orders.items()}
            flags = {"need-csum": FLAGS["need-csum"]} if args.quickack else FLAGS
            acks = ("delayed", "quick") if args.quickack else ("delayed",)
            for rep in range(args.reps):
                for ack in acks if rep % 2 == 0 else acks[::-1]:
                    if args.quickack:
                        proof.set_quickack(c, ack == "quick")
                    for mib in SIZES_MIB:
                        for flag, value in flags.items():
                            for k, o in orders.items():
                                t = proof.run_mpi(c, exe, files[k]["openmpi"], [names[i] for i in o], mib << 20, 3,
                                                  mca=(("btl_tcp_flags", value),), specs=["4"])["4"]
                                rows.append({"rep": rep, "mib": mib, "flags": flag, "order": k, "ack": ack,
                                             "seconds": t})
                                proof.log(f"{mib} MiB, {flag}, {ack} ACKs, {k}: median {statistics.median(t):.3f} s")
    return {"format": "plink-mpi-ring-overhead", "version": 1, "cluster": SHAPE, "rows": rows}


def render(doc: dict) -> str:
    """The table: measured against priced, per size, flags and order."""
    n = sum(doc["cluster"]["hosts_per_rack"])
    rate = doc["cluster"]["uplink_mbit"] * 1e6 / 8
    out = ["size | btl_tcp_flags | ACKs | order | measured s (median of launches) | priced s | measured / priced | "
           "measured - priced s"]
    for mib in SIZES_MIB:
        for flag in FLAGS:
            for ack in ("delayed", "quick"):
                for k, flows in (("rack-contiguous", 1), ("rack-interleaved", 4)):
                    meds = [statistics.median(r["seconds"]) for r in doc["rows"] if r["mib"] == mib
                            and r["flags"] == flag and r.get("ack", "delayed") == ack and r["order"] == k]
                    if not meds:
                        continue
                    m = statistics.median(meds)
                    price = 2 * (n - 1) / n * (mib << 20) * flows / rate
                    out.append(f"{mib} MiB | {flag} | {ack} | {k} | {m:.3f} | {price:.3f} | {m / price:.2f} | "
                               f"{m - price:+.3f}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2, help="launches per size, flags and order")
    ap.add_argument("--json", help="save the runs here")
    ap.add_argument("--analyse-only", metavar="JSON", help="re-print a saved run")
    ap.add_argument("--quickack", action="store_true",
                    help="the proof's flags only, each launch with the kernel's delayed acknowledgements and with "
                         "quickack 1 on every host's routes, alternating")
    args = ap.parse_args(argv)
    if args.analyse_only:
        doc = proof.load_saved(ap, args.analyse_only, "plink-mpi-ring-overhead")
        print(render(doc))
        return 0
    if not 1 <= args.reps <= 20:
        ap.error("--reps must be 1..20")
    return proof.measure_and_report(args, measure, render, tools=("mpirun.openmpi",))


if __name__ == "__main__":
    sys.exit(main())
