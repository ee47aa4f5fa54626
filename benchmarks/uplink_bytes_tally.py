"""Does crossing the racks less make an order faster, among orders the model prices alike?

Reads saved proof runs (``benchmarks/collectives_netns.py`` data files) and, for every collective
where plink's order from the latency probe and its order from the ``--bandwidth`` probe (each the
cheapest its model found, so priced alike) send different numbers of bytes between the true racks,
prints both and their measured times (median of every run, first passes and runoff), then the
tally: how often the order sending fewer bytes over the racks' uplinks was the faster one.  This is
the evidence for the search's tie-break (``plink.solvers.groupsearch.fewer_uplink_bytes``).
Seconds, no root::

    python benchmarks/uplink_bytes_tally.py benchmarks/results/2026-11-2*/[A-E].json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.collectives_netns import cross_rack_bytes, order_name, run_algos  # noqa: E402


def rows(doc: dict, name: str) -> list[dict]:
    """One row per collective whose two plink orders differ in bytes between the true racks."""
    out = []
    for coll in doc["collectives"]:
        algo = run_algos(doc, coll)["default"]
        size = doc["size_bytes"] if coll.startswith("gloo") else doc["mpi_size_bytes"]
        lat, bw = order_name(algo, "lat", "default"), order_name(algo, "bw", "default")
        if lat not in doc["orders"] or bw not in doc["orders"]:
            continue
        b = {k: cross_rack_bytes(algo, doc["orders"][k]["order"], doc["rack"], size) for k in (lat, bw)}
        if abs(b[lat] - b[bw]) < 1:
            continue

        def seconds(k):
            o = doc["orders"][k]
            runs = o["runs"].get(coll, []) + o.get("runoff", {}).get(coll, [])
            return statistics.median(runs) if runs else None

        t = {k: seconds(k) for k in (lat, bw)}
        if None in t.values():
            continue
        fewer, more = (lat, bw) if b[lat] < b[bw] else (bw, lat)
        out.append({"run": name, "collective": coll, "lat_mib": b[lat] / 2**20, "bw_mib": b[bw] / 2**20,
                    "lat_s": t[lat], "bw_s": t[bw], "fewer_faster": t[fewer] < t[more],
                    "gap": t[more] / t[fewer] - 1})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="collectives_netns.py data files (CASE.json)")
    args = ap.parse_args(argv)
    found = []
    for f in args.files:
        try:
            doc = json.loads(Path(f).read_text())
            if doc.get("format") != "plink-proof" or "rack" not in doc:
                raise ValueError("not a collectives_netns.py data file")
        except (OSError, ValueError) as e:
            ap.error(f"{f}: {e}")
        found += rows(doc, f"{Path(f).parent.name}/{doc['case']}")
    print("run | collective | MiB over the racks' uplinks, latency / --bandwidth order | median s, latency / "
          "--bandwidth order | the order sending fewer bytes")
    for r in found:
        print(f"{r['run']} | {r['collective']} | {r['lat_mib']:.0f} / {r['bw_mib']:.0f} | {r['lat_s']:.3f} / "
              f"{r['bw_s']:.3f} | {'faster' if r['fewer_faster'] else 'slower'} by {abs(r['gap']) * 100:.1f}%")
    by = {}
    for r in found:
        by.setdefault(r["collective"], []).append(r["fewer_faster"])
    print(f"fewer bytes over the uplinks faster in {sum(r['fewer_faster'] for r in found)} of {len(found)}: "
          + ", ".join(f"{c} {sum(v)} of {len(v)}" for c, v in by.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
