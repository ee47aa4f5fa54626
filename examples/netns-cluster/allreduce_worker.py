"""One process per host: torch.distributed Gloo all-reduce in the ranks a file gives.

Started inside a host's network namespace (``ip netns exec``, by
``launch.py``) or by ``mpirun`` (then the rank comes from Open MPI).  For
every order file given, the process finds its own rank, joins a process
group (TCPStore on rank 0's address), runs ``--warmup`` untimed and
``--repeats`` timed all-reduces of ``--size`` bytes, and prints one JSON line:
``{"order": i, "rank": r, "world": n, "host": ..., "address": ..., "seconds": [...]}``.
With ``--passes P`` the files are run P times, every other pass in reverse
order (one line per order and pass, ``"pass": p``), so a burst of load on the
machine does not land on one order's runs only.

Rank sources (``--rank-from``, for the first file; later files always use ``map``):

* ``map``: the torchrun node-rank map / order file, matched against this
  namespace's IP addresses by ``plink.launch.noderank`` (what ``plink node-rank``
  does on a real node);
* ``ompi``: ``OMPI_COMM_WORLD_RANK`` set by ``mpirun --map-by seq``;
* ``env``: ``RANK`` set by ``torchrun`` (which got ``--node-rank`` from
  ``plink node-rank``).
"""

import argparse
import json
import os
import socket
import sys
import time
from datetime import timedelta


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("orders", nargs="+", help="order files (torchrun map, JSON or plain), one process group each")
    ap.add_argument("--rank-from", choices=["map", "ompi", "env"], default="map")
    ap.add_argument("--size", type=int, default=16 * 2**20)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--port", type=int, default=29600, help="port of the first order's store; +1 per order and pass")
    ap.add_argument("--passes", type=int, default=1, help="run all files this many times, alternating direction")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--placement-only", action="store_true", help="report rank and host, no all-reduce (no torch)")
    args = ap.parse_args()

    from plink.launch.emitters import master_address
    from plink.launch.noderank import local_identity, node_rank
    from plink.data.orderfile import read_order_hosts

    ident = local_identity()
    address = next((a for a in ident.addresses if ":" not in a), "?")
    if not args.placement_only:
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
    n_files = len(args.orders)
    sequence = [(p, k) for p in range(max(1, args.passes))
                for k in (range(n_files) if p % 2 == 0 else reversed(range(n_files)))]
    for p, k in sequence:
        path = args.orders[k]
        hosts = read_order_hosts(path)
        world = len(hosts)
        source = args.rank_from if k == 0 else "map"  # --rank-from is for the first file
        if source == "ompi":
            rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
            if int(os.environ["OMPI_COMM_WORLD_SIZE"]) != world:
                sys.exit(f"mpirun started {os.environ['OMPI_COMM_WORLD_SIZE']} ranks for {world} hosts")
        elif source == "env":  # torchrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
            rank = int(os.environ["RANK"])
            if int(os.environ["WORLD_SIZE"]) != world:
                sys.exit(f"torchrun started {os.environ['WORLD_SIZE']} ranks for {world} hosts")
        else:
            rank = node_rank(hosts, identity=ident, source=path)
        if args.placement_only:
            print(json.dumps({"order": k, "file": os.path.basename(path), "rank": rank, "world": world,
                              "host": socket.gethostname(), "address": address, "seconds": [], "correct": True}),
                  flush=True)
            continue
        if source == "env":
            init = "env://"  # the store torchrun's agents rendezvoused on
        else:
            init = f"tcp://{master_address(hosts)}:{args.port + p * n_files + k}"  # rank 0's address (or name)
            # under torchrun, tcp:// would otherwise expect the agent's store and never host one
            os.environ.pop("TORCHELASTIC_USE_AGENT_STORE", None)
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world,
                                timeout=timedelta(seconds=args.timeout))
        x = torch.ones(args.size // 4, dtype=torch.float32)
        for _ in range(args.warmup):
            dist.all_reduce(x)
        times = []
        for _ in range(args.repeats):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            times.append(time.perf_counter() - t0)
        ok = bool(torch.all(x == float(world) ** (args.warmup + args.repeats)))
        dist.destroy_process_group()
        print(json.dumps({
            "order": k, "pass": p, "file": os.path.basename(path), "rank": rank, "world": world,
            "host": socket.gethostname(), "address": address, "seconds": times, "correct": ok,
        }), flush=True)


if __name__ == "__main__":
    main()
