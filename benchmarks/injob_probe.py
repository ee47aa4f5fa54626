"""Scale of the in-job probe: rounds and gather at 8/16/32/64 ranks on one machine, wall time vs bound.

    nice -n 19 python benchmarks/injob_probe.py                  # 8 16 32 64 ranks
    python benchmarks/injob_probe.py --ranks 8 16 --samples 10

Every size runs ``plink.distributed.probe_group(per_rank=True, method=...)`` in that
many local processes (forked by ``plink.distributed.local.run_ranks``; Gloo on
127.0.0.1; with ``udp`` each also starts its echo agent), so the rounds of
disjoint pairs, the per-pair sub-groups (``tensor``) and the gather through the
store run at that scale.  The bound is ``rounds x samples
x interval`` (N-1 rounds).  Printed per size: the processes' set-up
(fork + init_process_group), the probe's rendezvous and rounds, the rounds'
ratio to the bound, and whether every pair was measured.  On one machine
all ranks share its cores, so at large N the ratio measures CPU contention
(32 concurrent pairs on 2 cores), not the network.

Exit 1 unless every size completes with every pair measured on every rank
(no deadlock, nothing missing); ``--max-ratio`` adds a target on rounds/bound.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from plink.distributed.probe import METHODS  # noqa: E402


def _probe(rank, kwargs):
    import plink.distributed as pd

    t = time.monotonic()
    data = pd.probe_group(**kwargs)
    out = {"seconds": time.monotonic() - t, "missing": data.n_missing_pairs(), "n": data.n}
    if rank == 0:
        out["meta"] = data.meta
    return out


def run(world: int, samples: int, interval: float, timeout: float, transport: str = "pair", passes: int = 1,
        method: str = "udp") -> dict:
    import plink.distributed  # noqa: F401 - before forking
    from plink.distributed.local import run_ranks

    t0 = time.monotonic()
    res = run_ranks(world, _probe, {"samples": samples, "interval": interval, "per_rank": True, "timeout": timeout,
                                       "transport": transport, "passes": passes, "method": method},
                    timeout=timeout * 4 + world * 2)
    wall = time.monotonic() - t0
    ok = [r for r, (s, v) in res.items() if s == "ok"]
    errors = {r: str(v)[:300] for r, (s, v) in res.items() if s != "ok"}
    row = {"ranks": world, "wall_s": wall, "reported": len(ok), "errors": errors}
    if 0 in ok:
        meta = res[0][1]["meta"]
        row.update(rounds=meta["rounds"], bound_s=meta["rounds_bound_s"], rounds_s=meta["rounds_s"],
                   rendezvous_s=meta["rendezvous_s"], total_s=meta.get("total_s"),
                   ratio=meta["rounds_s"] / meta["rounds_bound_s"], failed=meta["failed"])
        row["setup_s"] = wall - max(res[r][1]["seconds"] for r in ok)
        row["complete"] = len(ok) == world and all(res[r][1]["missing"] == 0 and res[r][1]["n"] == world for r in ok)
    else:
        row["complete"] = False
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--interval", type=float, default=0.005)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--method", choices=METHODS, default="udp", help="the probe's latency method")
    ap.add_argument("--transport", choices=["pair", "world"], default="pair")
    ap.add_argument("--passes", type=int, default=1, help="passes over the rounds (1: each round once)")
    ap.add_argument("--max-ratio", type=float, default=None, help="also fail when rounds/bound exceeds this")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    rows, bad = [], []
    print(f"in-job probe, per rank, Gloo on 127.0.0.1, method {args.method}, transport {args.transport}, "
          f"{args.passes} pass(es), {args.samples} samples "
          f"{args.interval * 1e3:g} ms apart")
    print(f"{'ranks':>5} {'rounds':>6} {'bound':>7} {'rounds':>8} {'ratio':>6} {'rdzv':>6} {'setup':>6} {'wall':>6}  complete")
    for n in args.ranks:
        r = run(n, args.samples, args.interval, args.timeout, args.transport, args.passes, args.method)
        rows.append(r)
        if "rounds" in r:
            print(f"{n:>5} {r['rounds']:>6} {r['bound_s']:>6.2f}s {r['rounds_s']:>7.2f}s {r['ratio']:>6.2f} "
                  f"{r['rendezvous_s']:>5.2f}s {r['setup_s']:>5.1f}s {r['wall_s']:>5.1f}s  {r['complete']}", flush=True)
        else:
            print(f"{n:>5} rank 0 did not report: {r['errors']}", flush=True)
        if not r["complete"]:
            bad.append(f"{n} ranks: incomplete ({r['reported']} of {n} ranks reported; {r['errors'] or r.get('failed')})")
        elif args.max_ratio is not None and r["ratio"] > args.max_ratio:
            bad.append(f"{n} ranks: rounds {r['ratio']:.2f} x the bound > {args.max_ratio}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    for b in bad:
        print(f"TARGET MISSED: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
