"""One rank of tests/test_executor.py::test_executor_on_netns_cluster (run inside a host namespace).

argv: rank world master_addr port labels(comma separated)
Prints "OK" when the executor's result equals torch.distributed.all_reduce.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from plink.schedule.dag import Schedule  # noqa: E402
from plink.schedule.executor import all_reduce  # noqa: E402
from plink.data.probefile import from_matrix  # noqa: E402
from plink.schedule.plan import plan_schedule  # noqa: E402


def main(argv):
    rank, world, addr, port = int(argv[0]), int(argv[1]), argv[2], int(argv[3])
    labels = np.array([int(x) for x in argv[4].split(",")])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=world)
    try:
        lat = np.full((world, world), 50.0)
        np.fill_diagonal(lat, 0.0)
        sched = Schedule.from_plan(plan_schedule(from_matrix(lat, [f"r{i}" for i in range(world)]), labels,
                                                 size=64 * 1024, chunk=4096))
        x = torch.randint(-1000, 1000, (16 * 1024,), generator=torch.Generator().manual_seed(rank)).float()
        ref = x.clone()
        dist.all_reduce(ref)
        all_reduce(x, sched)
        print("OK" if torch.equal(x, ref) else "MISMATCH", flush=True)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
