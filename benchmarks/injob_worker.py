"""One rank of the in-job locality benchmark: what a training script does, plus timing.

Started by ``benchmarks/injob_netns.py`` under torchrun (one process per
namespace host).  It calls ``plink.distributed.locality_group`` exactly as a
training script would, then times a Gloo all-reduce (``--size`` bytes, median
of ``--repeats`` after one warm-up, slowest rank) on three groups:

* ``default``: the job's own rank order (the launcher's);
* ``plink``: the group ``locality_group`` returned;
* ``contiguous``: racks contiguous, built from ``--racks`` (host name -> rack,
  known to the benchmark only, the best simple alternative).

Rank 0 prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from plink.distributed.probe import METHODS  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--racks", required=True, help="JSON {host name: rack}")
    ap.add_argument("--size", type=int, default=16 * 2**20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--method", default="udp", choices=METHODS, help="the in-job probe's latency method")
    ap.add_argument("--time-limit", type=float, default=2.0)
    ap.add_argument("--bandwidth", action="store_true", help="locality_group's probe measures bandwidth too")
    ap.add_argument("--bw-seconds", type=float, default=1.0)
    ap.add_argument("--verify", action="store_true",
                    help="locality_group(verify=True): keep plink's group only if the all-reduce measures faster")
    args = ap.parse_args()

    import torch
    import torch.distributed as dist

    import plink.distributed as pd

    torch.set_num_threads(1)
    t0 = time.monotonic()
    env = pd.init_from_env("gloo")
    t_init = time.monotonic() - t0
    t = time.monotonic()
    said = []  # locality_group's log line (rank 0) with verify
    handler = logging.Handler()
    handler.emit = lambda rec: said.append(rec.getMessage())
    logging.getLogger("plink.distributed").addHandler(handler)
    group, order = pd.locality_group(algo="ring", time_limit=args.time_limit,
                                     probe_options={"samples": args.samples, "interval": args.interval,
                                                    "passes": args.passes, "bandwidth": args.bandwidth,
                                                    "method": args.method,
                                                    "bw_seconds": args.bw_seconds},
                                     verify=args.verify, size=args.size, verify_repeats=args.repeats)
    t_locality = time.monotonic() - t
    racks = json.loads(Path(args.racks).read_text())
    hosts = [None] * dist.get_world_size()
    dist.all_gather_object(hosts, socket.gethostname())
    contiguous = sorted(range(len(hosts)), key=lambda r: (racks[hosts[r]], r))
    groups = {"default": (dist.group.WORLD, list(range(len(hosts)))), "plink": (group, order),
              "contiguous": (dist.new_group(contiguous, sort_ranks=False), contiguous)}
    x = torch.ones(args.size // 4, dtype=torch.float32)
    out = {"world": len(hosts), "launcher": env.launcher, "init_s": t_init, "locality_group_s": t_locality,
           "hosts_by_rank": hosts, "orders": {}, "seconds": {}, "correct": {},
           "verify": {"kept_plink": group is not dist.group.WORLD, "log": [m for m in said if "measured" in m]}
           if args.verify else None}
    for name, (g, o) in groups.items():
        dist.all_reduce(x, group=g)  # warm-up
        times = []
        for _ in range(args.repeats):
            dist.barrier(group=g)
            s = time.perf_counter()
            dist.all_reduce(x, group=g)
            el = torch.tensor([time.perf_counter() - s])
            dist.all_reduce(el, op=dist.ReduceOp.MAX, group=g)  # the slowest rank
            times.append(float(el))
        ok = torch.tensor([float(torch.all(x == float(len(hosts)) ** (args.repeats + 1)))])
        dist.all_reduce(ok, op=dist.ReduceOp.MIN)
        x.fill_(1.0)
        out["orders"][name] = [hosts[r] for r in o]
        out["seconds"][name] = statistics.median(times)
        out["correct"][name] = bool(ok.item() == 1.0)
    if dist.get_rank() == 0:
        print(json.dumps(out), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
