#!/usr/bin/env python3
"""How well each latency method separates racks on the emulated cluster (root).

For every method, probes the cluster ``--repeats`` times and prints the median
p10 RTT inside a rack and across racks, and the AUC: the probability that a
random cross-rack pair measures slower than a random in-rack pair (1.0 = racks
perfectly separated by latency alone, 0.5 = no information).  The baseline is
``fping`` (the remote reply comes from the kernel), measured in the same run.

    sudo python3 benchmarks/probe_methods.py
    sudo python3 benchmarks/probe_methods.py --methods udp fping icmp --python "$(command -v python3)"
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plink.data.hostlist import HostEntry  # noqa: E402
from plink.probes.netns import NetnsCluster, unavailable_reason  # noqa: E402
from plink.probes.probe import probe_hosts  # noqa: E402
from plink.probes.ssh import SSHOptions  # noqa: E402


def auc(cross: np.ndarray, same: np.ndarray) -> float:
    """P(cross > same) + P(tie) / 2 over all (cross, same) value pairs."""
    c, s = cross[:, None], same[None, :]
    return float(np.mean((c > s) + 0.5 * (c == s)))


def main() -> int:
    ap = argparse.ArgumentParser(description="rack separation by latency method")
    ap.add_argument("--racks", type=int, default=2)
    ap.add_argument("--hosts-per-rack", type=int, default=4)
    ap.add_argument("--methods", nargs="+", default=["udp", "fping"], choices=["udp", "fping", "icmp"])
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--interval", type=float, default=0.005)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--python", default="python3", help="interpreter on the hosts (icmp needs icmplib)")
    ap.add_argument("--prefix", default=None, help="namespace name prefix (default: picked per run)")
    ap.add_argument("--subnet", default=None, help="first two octets of a free /16 (default: picked per run)")
    args = ap.parse_args()
    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"skipped: {reason}", file=sys.stderr)
        return 0
    with NetnsCluster(racks=args.racks, hosts_per_rack=args.hosts_per_rack, prefix=args.prefix,
                      subnet=args.subnet, clean_shell=True) as c:
        opts = SSHOptions(ssh_config=c.ssh_config, python=args.python)
        rack = np.array([c.rack_of(h.name) for h in c.hosts])
        n = len(rack)
        same = (rack[:, None] == rack[None, :]) & ~np.eye(n, dtype=bool)
        cross = rack[:, None] != rack[None, :]
        print(f"{n} hosts, {args.racks} racks, count {args.count}, {args.repeats} runs per method")
        print("method   in-rack p10 (us)   cross-rack p10 (us)   AUC (median of runs)")
        for m in args.methods:
            rows = []
            for _ in range(args.repeats):
                p = probe_hosts([HostEntry(h.name) for h in c.hosts], method=m, count=args.count,
                                interval=args.interval, ssh=opts)
                if p.n_missing_pairs():
                    print(f"{m}: incomplete ({p.meta.get('unreachable')})", file=sys.stderr)
                    break
                lat = p.latency
                rows.append((np.median(lat[same]), np.median(lat[cross]), auc(lat[cross], lat[same])))
            if rows:
                a = np.median(np.array(rows), axis=0)
                print(f"{m:8s} {a[0]:12.1f} {a[1]:20.1f} {a[2]:19.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
