#!/usr/bin/env python3
"""CPU the probe agents spend per ping while probing (no SSH, no root).

``--pairs`` pairs of local agents (loopback addresses) run the ``udp`` schedule against each
other as in ``plink probe`` (``udp_sched``: ``--slots`` slots of ``--count``
pings ``--interval`` apart, both directions at once, kernel timestamps on),
while heartbeats arrive every 4 s.  Reported: the agents' CPU (user +
system, ``/proc/<pid>/stat``) per ping sent, i.e. per sent ping with its
pong received plus one ping of the partner answered, and per second of
probing.  ``--repo`` picks the plink tree whose agent runs (to compare
branches).  With N hosts probing at once the hosts need about
``N x (CPU per second of one agent)`` of CPU.

    python benchmarks/agent_packet_cpu.py --slots 25 --count 20 --interval 0.01 --repeats 3
"""

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--slots", type=int, default=25)
ap.add_argument("--count", type=int, default=20)
ap.add_argument("--interval", type=float, default=0.01)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--pairs", type=int, default=1, help="agent pairs probing at once (more: busy cores, as on the cluster)")
ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
args = ap.parse_args()
sys.path.insert(0, args.repo)

from plink.probes.methods import slot_seconds  # noqa: E402
from plink.probes.session import AgentSession, local_pipe  # noqa: E402


def proc_cpu(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def one_run() -> tuple[float, float, int]:
    key = secrets.token_hex(32)
    n = 2 * args.pairs
    agents = [AgentSession(local_pipe(), str(i)) for i in range(n)]
    try:
        for i, s in enumerate(agents):
            s.hello(key, 600, bind=f"127.0.{1 + i // 200}.{2 + i % 200}", hid=i)
        slot = slot_seconds(args.count, args.interval)
        plans = {}
        for i in range(0, n, 2):
            a, b = agents[i], agents[i + 1]
            plans[a] = [[k, k, b.info["addr"], b.info["udp_port"]] for k in range(args.slots)]
            plans[b] = [[k, k, a.info["addr"], a.info["udp_port"]] for k in range(args.slots)]
        c0 = sum(proc_cpu(s.pipe.proc.pid) for s in agents)
        t0 = time.monotonic()
        start = 0.05 + 0.002 * n
        rids = {s: s.send("udp_sched", plan=p, start=round(start - (time.monotonic() - t0), 6), slot=slot,
                          count=args.count, interval=args.interval, timeout=1.0, size=64, stamps=True)
                for s, p in plans.items()}
        end = t0 + start + args.slots * slot + 5
        next_hb = t0 + 4
        done = {}
        while len(done) < n and time.monotonic() < end:
            for s in agents:
                if s not in done:
                    s.pump()
                    r = s.reply(rids[s])
                    if r is not None:
                        done[s] = r
            if time.monotonic() > next_hb:
                for s in agents:
                    s.heartbeat()
                next_hb += 4
            time.sleep(0.02)
        wall = time.monotonic() - t0
        cpu = sum(proc_cpu(s.pipe.proc.pid) for s in agents) - c0
        got = sum(len(r[2]) for s in agents for r in s.parts.get(rids[s], []))
        return cpu, wall, got
    finally:
        for s in agents:
            s.close()


def main() -> int:
    per_ping, per_s = [], []
    sent = 2 * args.pairs * args.slots * args.count
    for _ in range(args.repeats):
        cpu, wall, got = one_run()
        per_ping.append(cpu / sent * 1e6)
        per_s.append(cpu / (2 * args.pairs) / wall * 1000)
        if got < 0.95 * sent:
            print(f"warning: only {got} of {sent} pongs came back", file=sys.stderr)
    print(f"agent {args.repo}: {args.pairs} pair(s), {args.slots} slots x {args.count} pings, "
          f"interval {args.interval} s, both ways")
    print(f"agent CPU per ping sent (its pong taken, the partner's ping answered): "
          f"median {statistics.median(per_ping):.1f} us (min {min(per_ping):.1f}, max {max(per_ping):.1f}); "
          f"per agent while probing: {statistics.median(per_s):.1f} ms CPU per s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
