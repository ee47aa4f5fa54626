"""Where the price errs on Open MPI's butterflies: orders whose steps load every rack uplink alike.

For each saved proof run (``collectives_netns.saved_cases``: ``benchmarks/results/**/X.json``, X a
case of the proof, made with the kernel's settings) with a power-of-two number of hosts, every
distinct order measured for the collective is priced as ``plink order`` prices it (``collectives_netns.predict``, latency probe), and its measured time is fitted on the price
within the run (least squares on the logs, both centred on the run's mean). The residual is what
the price misses. Beside it, from the true racks alone: the share of the order's time, by a simple
step count (each exchange step costs its data fraction times the most flows on any uplink
direction, at least 1), spent in steps that put the *same* number of flows on *every* uplink in both
directions ("uniform": rack-interleaved orders, the tree orders, rack-contiguous orders' cross-rack
steps), against steps that load some uplinks more than others (random orders).

Rabenseifner and recursive doubling are exchanges between ranks ``r`` and ``r xor 2^k``:
Rabenseifner's step ``k`` moves ``S / 2^(k+1)`` each way (reduce-scatter, then the same in reverse
for the allgather), recursive doubling's the whole ``S``. Prints, per collective, the mean residual
of the orders with more than ``--share`` of their step time uniform against the others, the
correlation of residual and share over all orders, and (``--runs``) the correlation run by run::

    python benchmarks/uniform_crossing.py                 # ~15 s
    python benchmarks/uniform_crossing.py --runs

A positive gap says such orders measure slower than their price, relative to the other orders of
the same run: something about saturating every uplink at once that the fluid price does not see.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import benchmarks.collectives_netns as proof  # noqa: E402
from benchmarks.hd_steps_netns import uplink_loads  # noqa: E402

COLLECTIVES = {"mpi_rabenseifner": "halving", "mpi_recursive_doubling": "whole"}


def step_shares(rank_racks: list, data: str) -> tuple[float, float]:
    """(uniform step time, total step time) of an exchange butterfly whose rank ``r`` sits in rack
    ``rank_racks[r]``.

    Step ``k`` pairs rank ``r`` with ``r xor 2^k`` and costs its data fraction (``halving``:
    ``2^-(k+1)``; ``whole``: 1) times the most flows on any uplink direction (at least 1). A step
    is uniform when every rack's uplink carries the same number of flows out and in (and some)."""
    n = len(rank_racks)
    racks = set(rank_racks)
    uniform = total = 0.0
    for k in range(n.bit_length() - 1):
        frac = 0.5 ** (k + 1) if data == "halving" else 1.0
        up, down = uplink_loads(rank_racks, 1 << k)
        loads = [*up.values(), *down.values()]
        most = max(loads, default=0)
        total += frac * max(1, most)
        if len(up) == len(down) == len(racks) and len(set(loads)) == 1:
            uniform += frac * most
    return uniform, total


def run_rows(doc: dict, coll: str) -> np.ndarray | None:
    """Per distinct order of one run: (log price, log measured, uniform share), or None when the run
    did not measure ``coll`` or its host count is not a power of two."""
    from plink.data.probefile import from_dict

    if coll not in doc["collectives"]:
        return None
    probe = from_dict(doc["probes"]["latency"])
    algo = proof.run_algos(doc, coll)["default"]
    rows, orders = [], doc["orders"]
    names = [n for n in orders if coll in orders[n]["measured"]]
    for o in (orders[names[i]] for i in proof.first_of_each(orders, names)):
        n = len(o["hosts"])
        if n & (n - 1):
            return None
        uni, tot = step_shares([doc["rack"][i] for i in o["order"]], COLLECTIVES[coll])
        price = proof.predict(probe, o["order"], algo, doc["mpi_size_bytes"], "default")
        rows.append((np.log(price), np.log(o["measured"][coll]), uni / tot))
    return np.array(rows) if len(rows) >= 5 else None


def residuals(rows: np.ndarray) -> np.ndarray:
    """log(measured) minus its least-squares fit on log(price), both centred on the run's mean."""
    x = rows[:, 0] - rows[:, 0].mean()
    y = rows[:, 1] - rows[:, 1].mean()
    return y - (x @ y) / (x @ x) * x


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="saved proof cases (default: every one under --results)")
    ap.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--share", type=float, default=0.7, help="an order is 'uniform' above this share")
    ap.add_argument("--runs", action="store_true", help="print each run's correlation")
    args = ap.parse_args(argv)
    files = [Path(f) for f in args.files] or proof.saved_cases(Path(args.results))
    for coll in COLLECTIVES:
        res, share, per_run = [], [], []
        for path in files:
            rows = run_rows(json.loads(path.read_text()), coll)
            if rows is None:
                continue
            r = residuals(rows)
            res.extend(r)
            share.extend(rows[:, 2])
            uni = rows[:, 2] > args.share
            corr = float(np.corrcoef(r, rows[:, 2])[0, 1]) if rows[:, 2].std() > 0 else float("nan")
            per_run.append((str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path), corr, int(uni.sum()),
                            float(r[uni].mean() - r[~uni].mean()) if 0 < uni.sum() < len(r) else float("nan")))
        if not res:
            print(f"{coll}: no run with a power-of-two number of hosts")
            continue
        res, share = np.array(res), np.array(share)
        uni = share > args.share
        with_uni = [p for p in per_run if p[2] > 0]
        positive = sum(1 for p in with_uni if p[1] > 0)
        print(f"{coll}: {len(per_run)} runs, {len(res)} orders, {int(uni.sum())} uniform (share > {args.share:g}); "
              f"mean residual uniform {np.exp(res[uni].mean()):.3f}x, others {np.exp(res[~uni].mean()):.3f}x "
              f"(measured over the run's fit on the price); correlation of residual and share {np.corrcoef(res, share)[0, 1]:.2f}, "
              f"positive in {positive} of the {len(with_uni)} runs with uniform orders")
        if args.runs:
            for name, corr, k, gap in per_run:
                print(f"  {name:55s} corr {corr:+.2f}  uniform orders {k:2d}  gap {np.exp(gap) if gap == gap else float('nan'):.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
