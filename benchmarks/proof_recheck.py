"""Re-measure some orders of a saved proof case with Open MPI, on a fresh cluster of the same shape.

When the proof run (``collectives_netns.py``) shows a difference between orders that the model
prices alike, this asks whether it repeats: the named orders of ``benchmarks/results/CASE.json``
(their hosts by name) are measured again, ``--rounds`` times each, alternating direction, on a
new ``NetnsCluster`` of the case's shape (same prefix and subnet as the proof, holding
``/tmp/plink-netns.lock``). Prints the median seconds per order and coll_tuned algorithm::

    sudo "$(command -v python)" benchmarks/proof_recheck.py A plink-ring-bw plink-rd-lat rack-contiguous

``--order-file NAME=FILE`` adds an order the run did not have: ``plink order ... -o FILE`` (plain or
``--format json``) on one of the run's probes (its hosts by name), e.g. one made by a newer plink.  Each cell
gives the median and, in brackets, the 10th-90th percentile of the order's runs; ``--json FILE``
keeps every run (written after each round, so an interrupted recheck keeps what it measured).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import benchmarks.collectives_netns as proof  # noqa: E402
from plink.data.fileio import missing_directory, write_json  # noqa: E402
from plink.data.orderfile import read_order  # noqa: E402
from plink.errors import PlinkError  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", choices=sorted(proof.CASES))
    ap.add_argument("orders", nargs="*", help="order names in the case's JSON file")
    ap.add_argument("--order-file", action="append", default=[], metavar="NAME=FILE",
                    help="also measure this order: an order file of plink order (plain or --format json), "
                         "hosts by name")
    ap.add_argument("--rounds", type=int, default=4, help="passes over the orders (3 runs each)")
    ap.add_argument("--data-dir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--json", help="also write every run here: the orders (host names) and each order's runs per coll_tuned algorithm id")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    missing = args.json and missing_directory(args.json)
    if missing:
        ap.error(f"--json {args.json}: no such directory {missing}")
    from plink.data.probefile import from_dict
    from plink.probes.netns import unavailable_reason

    path = Path(args.data_dir) / f"{args.case}.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        ap.error(f"cannot read {path}: {exc}")
    unknown = [n for n in args.orders if n not in doc["orders"]]
    if unknown:
        ap.error(f"no such order in {args.case}.json: {', '.join(unknown)}")
    index = {h: i for i, h in enumerate(doc["hosts"])}
    for spec in args.order_file:
        name, sep, file = spec.partition("=")
        if not sep or not name or name in doc["orders"] or name in args.orders:
            ap.error(f"--order-file {spec}: give NAME=FILE, a name no other order of the run or of this command has")
        try:
            hosts = read_order(file)
        except PlinkError as exc:
            ap.error(str(exc))
        if sorted(hosts) != sorted(index):
            ap.error(f"{file}: its hosts are not the {args.case} run's")
        doc["orders"][name] = {"order": [index[h] for h in hosts]}
        args.orders.append(name)
    if not args.orders:
        ap.error("name an order of the run or give --order-file")
    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"cannot build the emulated cluster: {reason}", file=sys.stderr)
        return 1
    probe_hosts = from_dict(doc["probes"]["latency"]).hosts
    runs: dict[str, dict[str, list]] = {n: {} for n in args.orders}
    out = {"case": args.case, "data_dir": str(args.data_dir), "started": proof.utc(), "rounds_done": 0,
           "orders": {n: [doc["hosts"][i] for i in doc["orders"][n]["order"]] for n in args.orders}, "runs": runs}
    with proof.netns_lock(), tempfile.TemporaryDirectory(prefix="plink-recheck-") as tmp:
        tmp = Path(tmp)
        exe = proof.compile_timer(tmp)
        with proof.make_cluster(doc["cluster"], proof.CASES[args.case]["busy"]) as c:
            files = {n: proof.order_files(c, tmp, n, [probe_hosts[i] for i in doc["orders"][n]["order"]])
                     for n in args.orders}
            for r in range(args.rounds):
                for n in (args.orders if r % 2 == 0 else args.orders[::-1]):
                    got = proof.run_mpi(c, exe, files[n]["openmpi"], files[n]["hosts"], doc["mpi_size_bytes"], 3)
                    for spec_name, secs in got.items():
                        runs[n].setdefault(spec_name, []).extend(secs)
                out["rounds_done"] = r + 1
                if args.json:
                    write_json(args.json, out)
                proof.log(f"round {r + 1} of {args.rounds} done")
    names = {v[2]: k for k, v in proof.COLLECTIVES.items() if v[2]}
    width = max(len(n) for n in args.orders)
    print(f"{'order':<{width}} " + " ".join(f"{names[s]:>26}" for s in names))
    for n in args.orders:
        print(f"{n:<{width}} " + " ".join(f"{cell(runs[n][s]):>26}" for s in names))
    return 0


def cell(secs: list[float]) -> str:
    """``median (p10-p90)`` of the runs, in seconds."""
    p10, p90 = np.percentile(secs, [10, 90])
    return f"{statistics.median(secs):.4f} ({p10:.3f}-{p90:.3f})"


if __name__ == "__main__":
    sys.exit(main())
