"""Pairwise exchanges on the netns cluster: Open MPI's ``MPI_Sendrecv`` against plain TCP over
the same links, each against "bytes x flows on the busiest link / link rate".

Why: the step-by-step run of Rabenseifner (``benchmarks/hd_steps_netns.py``) measured every
exchange step 1.2-2.3x slower than that price, more where a host NIC is the bottleneck.  This
separates the network from the library: the same exchanges, at the same moments, once by Open
MPI and once by two Python processes per pair (one TCP connection, both directions at once).

Run as root (network namespaces, sshd, Open MPI with its headers; ~3 min at 350 Mbit/s)::

    sudo "$(command -v python)" benchmarks/exchange_netns.py [--mbit 350] [--json FILE]
    python benchmarks/exchange_netns.py --analyse-only FILE

While holding ``/tmp/plink-netns.lock`` it builds 2 racks of 2 hosts (host links and rack uplinks
at ``--mbit``; ``make_cluster`` of ``benchmarks/collectives_netns.py``, hosts rack by rack:
h0 h1 | h2 h3) and times, for each size (``--sizes``, ``--repeats`` runs after a warm-up, the
slowest end of each run, the median printed):

* ``one pair``: h0 <-> h1 alone (Open MPI with 2 ranks); price B / rate;
* ``one pair, 4-rank job``: the same exchange, Open MPI with 4 ranks of which 2 exchange (TCP:
  as ``one pair``);
* ``two pairs in racks``: h0 <-> h1 and h2 <-> h3 at once, each bound by its hosts' NICs; B / rate;
* ``two pairs across racks``: h0 <-> h2 and h1 <-> h3 at once, two flows on every rack uplink
  direction; 2 B / rate;

by ``MPI_Sendrecv`` (``benchmarks/mpi/exchange.c``, ``mpirun --map-by seq``, the proof's MCA
settings; once as they are and once with ``btl_tcp_flags`` without ``put``, so that long messages
go as send/receive fragments, not the TCP BTL's emulated-RDMA pipeline), by a TCP exchange (``benchmarks/exchange_peer.py``: runs start together on the shared
clock) and by one-way TCP (the lower host of each pair sends).  ``--json`` keeps the raw data.
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

from benchmarks.collectives_netns import (  # noqa: E402
    compile_timer, load_saved, log, make_cluster, measure_and_report, mpirun, netns_lock, size_arg, utc)

SRC = ROOT / "benchmarks" / "mpi" / "exchange.c"
PEER = ROOT / "benchmarks" / "exchange_peer.py"
# name: (pairs of host indices, flows on the busiest link per byte of one exchange, MPI ranks, MPI stride,
#        MPI ranks that exchange)
CASES = {
    "one pair": ([(0, 1)], 1, 2, 1, 2),
    "one pair, 4-rank job": ([(0, 1)], 1, 4, 1, 2),
    "two pairs in racks": ([(0, 1), (2, 3)], 1, 4, 1, 4),
    "two pairs across racks": ([(0, 2), (1, 3)], 2, 4, 2, 4),
}
PORT = 5310
# Open MPI 4.1's default btl_tcp_flags without put (and hetero-rdma): long messages go as send/receive
# fragments instead of the emulated-RDMA pipeline
NO_PUT = "send,inplace,need-ack,need-csum"


def tcp_runs(c, pairs, size: int, repeats: int, mbit: float, mode: str) -> list[float]:
    """Slowest end of each run (the first is a warm-up) of ``pairs`` exchanging at once over TCP."""
    hosts = c.hosts
    period = 3 * size * 8 * 2 / (mbit * 1e6) + 0.3
    start = time.time() + 2.0
    procs = []
    for k, (a, b) in enumerate(pairs):
        for role, h in (("server", hosts[a]), ("client", hosts[b])):
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", h.netns, sys.executable, str(PEER), role, hosts[a].address,
                 str(PORT + k), str(size), str(repeats + 1), repr(start), repr(period), mode],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60 + (repeats + 1) * period)
        if p.returncode != 0:
            raise RuntimeError(f"exchange peer failed: {err.strip()[-300:]}")
        outs.append(json.loads(out)["seconds"])
    return [max(col) for col in zip(*outs)][1:]


def mpi_runs(c, exe: Path, tmp: Path, ranks: int, stride: int, active: int, size: int, repeats: int,
             mca: tuple = ()) -> list[float]:
    want = [h.name for h in c.hosts[:ranks]]
    hostfile = tmp / f"hosts-{ranks}"
    hostfile.write_text("".join(f"{h} slots=1\n" for h in want))
    rows = mpirun(c, hostfile, want, [str(exe), str(size), str(repeats), str(stride), str(active)], mca=mca)
    return next(r["seconds"] for r in rows if "seconds" in r)


def measure(args, save) -> dict:
    doc = {"format": "plink-exchange", "version": 1, "command": " ".join(sys.argv), "started": utc(),
           "cluster": {"hosts_per_rack": [2, 2], "host_mbit": args.mbit, "uplink_mbit": args.mbit, "extra_hops": 4},
           "sizes": args.sizes, "repeats": args.repeats, "runs": {}}
    with netns_lock(), tempfile.TemporaryDirectory(prefix="plink-exchange-") as tmp:
        tmp = Path(tmp)
        exe = compile_timer(tmp, SRC)
        with make_cluster(doc["cluster"], {}) as c:
            doc["hosts"] = [h.name for h in c.hosts]
            for name, (pairs, flows, ranks, stride, active) in CASES.items():
                for size in args.sizes:
                    row = {"case": name, "size": size, "model_s": size * 8 * flows / (args.mbit * 1e6)}
                    row["mpi"] = mpi_runs(c, exe, tmp, ranks, stride, active, size, args.repeats)
                    row["mpi_noput"] = mpi_runs(c, exe, tmp, ranks, stride, active, size, args.repeats,
                                                mca=(("btl_tcp_flags", NO_PUT),))
                    row["tcp_exchange"] = tcp_runs(c, pairs, size, args.repeats, args.mbit, "exchange")
                    row["tcp_oneway"] = tcp_runs(c, pairs, size, args.repeats, args.mbit, "oneway")
                    doc["runs"][f"{name} {size}"] = row
                    log(f"{name}, {size / 2**20:g} MiB: model {row['model_s']:.4f} s, MPI "
                        f"{np.median(row['mpi']):.4f} (without put {np.median(row['mpi_noput']):.4f}), TCP exchange {np.median(row['tcp_exchange']):.4f}, "
                        f"one-way {np.median(row['tcp_oneway']):.4f}")
                    save(doc)
    doc["finished"] = utc()
    return doc


def analyse(doc: dict) -> str:
    cl = doc["cluster"]
    lines = [f"pairwise exchanges, 2 racks of 2 hosts, host/uplink {cl['host_mbit']:g}/{cl['uplink_mbit']:g} Mbit/s; "
             f"median of {doc['repeats']} runs (slowest end); {doc['started']} - {doc.get('finished', 'unfinished')}",
             "measured / model (model: bytes x flows on the busiest link / rate)", "",
             f"{'case':<26} {'MiB':>4} {'model s':>8} {'MPI_Sendrecv':>13} {'without put':>12} {'TCP exchange':>13} "
             f"{'TCP one-way':>12}  runs over 1.75x: MPI, without put, TCP exchange"]
    for row in doc["runs"].values():
        m = row["model_s"]
        cols = [k for k in ("mpi", "mpi_noput", "tcp_exchange", "tcp_oneway") if k in row]  # older files: no mpi_noput
        slow = [f"{sum(x / m > 1.75 for x in row[k])}/{len(row[k])}" if k in row else "-"
                for k in ("mpi", "mpi_noput", "tcp_exchange")]
        lines.append(f"{row['case']:<26} {row['size'] / 2**20:>4g} {m:>8.4f} "
                     + " ".join(f"{np.median(row[k]) / m:>12.2f}x" if k in cols else f"{'-':>13}"
                                for k in ("mpi", "mpi_noput", "tcp_exchange", "tcp_oneway"))
                     + f"  {slow[0]:>5}, {slow[1]}, {slow[2]}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mbit", type=float, default=350, help="host link and rack uplink rate")
    ap.add_argument("--sizes", nargs="+", default=["2MiB", "8MiB"], help="bytes each end sends")
    ap.add_argument("--repeats", type=int, default=9, help="timed runs per case and size (after 1 warm-up)")
    ap.add_argument("--json", help="save the raw data here (as soon as it exists)")
    ap.add_argument("--analyse-only", metavar="FILE", help="re-print the table of a saved --json file")
    args = ap.parse_args(argv)
    if args.analyse_only:
        print(analyse(load_saved(ap, args.analyse_only)))
        return 0
    args.sizes = [size_arg(ap, s) for s in args.sizes]
    if args.repeats < 1 or not 0 < args.mbit <= 1500:
        ap.error("--repeats must be >= 1 and --mbit in (0, 1500]")
    return measure_and_report(args, measure, analyse)


if __name__ == "__main__":
    sys.exit(main())
