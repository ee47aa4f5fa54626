#!/usr/bin/env python3
"""Probe wall time against its physical bound, on the emulated cluster (root).

The bound is ``rounds x per-pair probe time``: with every pair of a round
probed at once, a probe cannot be faster than the configured time of one pair
(``count x interval``, plus ``2 x bw_seconds`` with bandwidth) per round.
All hosts share this machine's cores, so the SSH and agent setup (CPU-bound
here, parallel on real VMs) runs the hosts' shells as fresh VMs would
(``clean_shell``: without this machine's root dotfiles; ``--dirty-shell``
keeps them).
Prints the measured wall time over that bound (target <= 1.2 for 16 hosts),
for the whole probe and for the rounds alone (without SSH connection setup).

    sudo python3 benchmarks/probe_time.py                    # 16 hosts, latency
    sudo python3 benchmarks/probe_time.py --bandwidth --bw-seconds 1
    sudo python3 benchmarks/probe_time.py --racks 2 --hosts-per-rack 4 --count 50   # quick
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plink.data.hostlist import HostEntry  # noqa: E402
from plink.probes.netns import NetnsCluster, unavailable_reason  # noqa: E402
from plink.probes.probe import per_pair_seconds, probe_hosts  # noqa: E402
from plink.probes.rounds import round_robin  # noqa: E402
from plink.probes.ssh import SSHOptions  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description="plink probe wall time vs rounds x per-pair probe time")
    ap.add_argument("--racks", type=int, default=4)
    ap.add_argument("--hosts-per-rack", type=int, default=4)
    ap.add_argument("--method", default="udp", choices=["udp", "fping", "icmp"])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--bandwidth", action="store_true")
    ap.add_argument("--bw-seconds", type=float, default=1.0)
    ap.add_argument("--bw-tool", default="auto", choices=["auto", "agent", "iperf3"])
    ap.add_argument("--prefix", default=None, help="namespace name prefix (default: picked per run)")
    ap.add_argument("--subnet", default=None, help="first two octets of a free /16 (default: picked per run)")
    ap.add_argument("--dirty-shell", action="store_true",
                    help="let SSH sessions run this machine's root dotfiles (default: hosts behave as fresh VMs)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"skipped: {reason}", file=sys.stderr)
        return 0

    with NetnsCluster(racks=args.racks, hosts_per_rack=args.hosts_per_rack, prefix=args.prefix,
                      subnet=args.subnet, host_mbit=400, uplink_mbit=400, clean_shell=not args.dirty_shell) as c:
        n = len(c.hosts)
        marks = {}

        def progress(ev):
            if ev.phase == "round" and "rounds" not in marks:
                marks["rounds"] = time.monotonic()

        t0 = time.monotonic()
        p = probe_hosts([HostEntry(h.name) for h in c.hosts], method=args.method, count=args.count,
                        interval=args.interval, bandwidth=args.bandwidth, bw_seconds=args.bw_seconds,
                        bw_tool=args.bw_tool, ssh=SSHOptions(ssh_config=c.ssh_config), progress=progress)
        wall = time.monotonic() - t0
        rounds_wall = sum(r["seconds"] for r in p.meta["schedule"])
        rounds = len(round_robin(n))
        bw_s = args.bw_seconds
        if args.bandwidth and "iperf3" in {t for r in p.meta["schedule"] for t in r.get("bw_tools", [])}:
            bw_s = max(1, -(-bw_s // 1))  # iperf3 runs whole seconds
        bound = rounds * per_pair_seconds(args.count, args.interval, args.bandwidth, bw_s)
        res = {
            "hosts": n, "rounds": rounds, "missing_pairs": p.n_missing_pairs(),
            "per_pair_s": round(per_pair_seconds(args.count, args.interval, args.bandwidth, bw_s), 3),
            "bound_s": round(bound, 2), "wall_s": round(wall, 2), "setup_s": round(marks.get("rounds", t0) - t0, 2),
            "rounds_s": round(rounds_wall, 2),
            "ratio_total": round(wall / bound, 3), "ratio_rounds": round(rounds_wall / bound, 3),
        }
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"{n} hosts, {rounds} rounds x {res['per_pair_s']} s per pair = bound {res['bound_s']} s")
        print(f"wall time {res['wall_s']} s (SSH + agent setup {res['setup_s']} s, rounds {res['rounds_s']} s)")
        print(f"wall / bound: {res['ratio_total']:.3f}x total, {res['ratio_rounds']:.3f}x rounds only "
              f"(target <= 1.2x); missing pairs: {res['missing_pairs']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
