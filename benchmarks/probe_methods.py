#!/usr/bin/env python3
"""How well each latency method separates racks on the emulated cluster (root).

For every method, probes the cluster ``--repeats`` times and prints the median
p10 RTT inside a rack and across racks, and the AUC: the probability that a
random cross-rack pair measures slower than a random in-rack pair (1.0 = racks
perfectly separated by latency alone, 0.5 = no information).  The baseline is
``fping`` (the remote reply comes from the kernel), measured in the same run;
``udp-user`` is plink's udp echo timed in user space (``kernel_stamps=False``:
no kernel receive timestamps, the reflector's turnaround left in), what
``udp`` measured before.  ``--busy K`` puts a tenant's busy loop (duty
``--duty``) in K host namespaces; the methods alternate within each repeat.

    sudo "$(command -v python)" benchmarks/probe_methods.py
    sudo "$(command -v python)" benchmarks/probe_methods.py --methods udp udp-user fping --busy 3
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
from plink.structure.metrics import rack_auc  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description="rack separation by latency method")
    ap.add_argument("--racks", type=int, default=2)
    ap.add_argument("--hosts-per-rack", type=int, default=4)
    ap.add_argument("--methods", nargs="+", default=["udp", "fping"], choices=["udp", "udp-user", "fping", "icmp"])
    ap.add_argument("--busy", type=int, default=0, help="hosts with a tenant's busy loop")
    ap.add_argument("--duty", type=float, default=0.4, help="busy fraction of those hosts")
    ap.add_argument("--extra-hops", type=int, default=4, help="router namespaces per side across racks")
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--interval", type=float, default=0.005)
    ap.add_argument("--repeats", type=int, default=3)
    # the hosts are namespaces of this machine: the interpreter running this script is there
    # too, with icmplib (a plink dependency) for --methods icmp; no machine-specific path
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter on the hosts (default: this one; icmp needs icmplib)")
    ap.add_argument("--prefix", default=None, help="namespace name prefix (default: picked per run)")
    ap.add_argument("--subnet", default=None, help="first two octets of a free /16 (default: picked per run)")
    args = ap.parse_args()
    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"skipped: {reason}", file=sys.stderr)
        return 0
    with NetnsCluster(racks=args.racks, hosts_per_rack=args.hosts_per_rack, prefix=args.prefix,
                      subnet=args.subnet, clean_shell=True, extra_hops=args.extra_hops,
                      busy={k * (args.racks * args.hosts_per_rack) // max(1, args.busy): args.duty
                            for k in range(args.busy)}) as c:
        opts = SSHOptions(ssh_config=c.ssh_config, python=args.python)
        rack = np.array([c.rack_of(h.name) for h in c.hosts])
        n = len(rack)
        same = (rack[:, None] == rack[None, :]) & ~np.eye(n, dtype=bool)
        cross = rack[:, None] != rack[None, :]
        print(f"{n} hosts, {args.racks} racks, count {args.count}, {args.repeats} runs per method")
        print(f"busy hosts: {sorted(c.busy_hosts())}")
        print("method     in-rack p10 (us)   cross-rack p10 (us)   AUC (median of runs)   AUC min")
        rows = {m: [] for m in args.methods}
        for _ in range(args.repeats):
            for m in args.methods:  # alternate, so a burst of load does not hit one method only
                p = probe_hosts([HostEntry(h.name) for h in c.hosts], method=m.replace("-user", ""),
                                count=args.count, interval=args.interval, ssh=opts,
                                kernel_stamps=not m.endswith("-user"))
                if p.n_missing_pairs():
                    print(f"{m}: incomplete ({p.meta.get('unreachable')})", file=sys.stderr)
                    continue
                lat = p.latency
                rows[m].append((np.median(lat[same]), np.median(lat[cross]), rack_auc(lat[cross], lat[same])))
        for m in args.methods:
            if rows[m]:
                a = np.median(np.array(rows[m]), axis=0)
                lo = min(r[2] for r in rows[m])
                print(f"{m:10s} {a[0]:12.1f} {a[1]:20.1f} {a[2]:19.3f} {lo:13.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
