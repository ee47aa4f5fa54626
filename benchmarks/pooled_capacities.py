"""An experiment on saved proof runs: does pricing split orders by capacities measured with noise?

For each case's ``--bandwidth`` probe, prints Spearman (predicted, measured) at the model's
resolution (as ``collectives_netns.py --analyse-only`` judges it) three times:

- as plink prices it (since a073e6a, group uplinks whose capacities differ by less than the
  uplink test's own noise priced as one, ``plink.structure.capacities``; probes written before
  kept one figure per uplink, and for them this is the next column);
- with every measured uplink at its own figure (``network(..., pool_uplinks=False)``, plink's
  model before a073e6a);
- with every NIC set to the median NIC and every group uplink to the median uplink (not plink's
  model: a test of whether the measured differences between links of one rate, a few percent,
  are what splits the orders of one pattern).

Usage::

    python benchmarks/pooled_capacities.py benchmarks/results/2026-11-28-A-seed10/A.json [more CASE.json ...]
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from plink.data.probefile import from_dict  # noqa: E402
from plink.pricing import find_groups, network  # noqa: E402
from plink.solvers.contention import SharedCostModel  # noqa: E402
from plink.solvers.fluid import pricing_model  # noqa: E402  (what plink order prices with)
from plink.solvers.resolution import ranks, resolution_for  # noqa: E402

ALGOS = {"gloo_ring": "ring", "mpi_ring": "ring", "mpi_recursive_doubling": "rd", "mpi_rabenseifner": "hd",
         "mpi_tree": "bintree"}


def pooled(net):
    """``net`` with every NIC at the median NIC and every group uplink at the median uplink."""
    nic = np.full(net.n, float(np.median(net.nic_send)))
    k = len(net.up)
    return dataclasses.replace(net, nic_send=nic, nic_recv=nic.copy(), up=np.full(k, float(np.median(net.up))),
                               down=np.full(k, float(np.median(net.down))))


def main(paths: list[str]) -> None:
    if not paths:
        sys.exit("usage: python benchmarks/pooled_capacities.py CASE.json [CASE.json ...]")
    print("case file | collective | Spearman: as plink prices it | each uplink's own figure | all at the median")
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
            probe = from_dict(doc["probes"]["bandwidth"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            sys.exit(f"{path}: not a collectives_netns.py CASE.json with a --bandwidth probe ({exc!r})")
        groups = find_groups(probe)
        net, raw = network(probe, groups), network(probe, groups, pool_uplinks=False)
        for coll, algo in ALGOS.items():
            size = doc["size_bytes"] if coll.startswith("gloo") else doc["mpi_size_bytes"]
            first = {}
            for name, o in doc["orders"].items():
                if coll in o["measured"]:
                    first.setdefault(tuple(o["order"]), name)  # an order two names share counts once
            names = list(first.values())
            measured = np.array([doc["orders"][n]["measured"][coll] for n in names])
            perms = np.array([doc["orders"][n]["order"] for n in names])
            rho = [spearmanr(ranks(pricing_model(SharedCostModel(algo, x, size)).batch(perms), resolution_for("shared")),
                             measured)[0] for x in (net, raw, pooled(raw))]
            print(f"{path} | {coll} | {rho[0]:.2f} | {rho[1]:.2f} | {rho[2]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
