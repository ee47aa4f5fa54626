#!/usr/bin/env python3
"""Build an emulated cluster in network namespaces, probe it with `plink probe`, tear it down.

Run as root from a checkout (needs iproute2, openssh-server; fping/iperf3 optional):

    sudo python3 examples/probe-netns.py                       # 2 racks x 4 hosts, latency
    sudo python3 examples/probe-netns.py --bandwidth --uplink-mbit 200
    sudo python3 examples/probe-netns.py --racks 4 --hosts-per-rack 4 -o probe.json

It prints the plink command it runs (copy it to probe a real cluster: only the
host list and --ssh-config change), then the latency / bandwidth summary per
rack pair.  Namespaces use the prefix --prefix and the subnet --subnet
(default: a free /16 and prefix picked for this run, so several runs can
share a machine; nothing outside it is touched) and are removed on exit,
also on Ctrl-C.
"""

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from plink.data.probefile import load  # noqa: E402
from plink.probes.netns import NetnsCluster, unavailable_reason  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--racks", type=int, default=2)
    ap.add_argument("--hosts-per-rack", type=int, default=4)
    ap.add_argument("--host-mbit", type=float, default=400)
    ap.add_argument("--uplink-mbit", type=float, default=200)
    ap.add_argument("--extra-hops", type=int, default=4)
    ap.add_argument("--prefix", default=None, help="namespace name prefix (default: picked per run)")
    ap.add_argument("--subnet", default=None, help="first two octets of a free /16 (default: picked per run)")
    ap.add_argument("--bandwidth", action="store_true", help="also measure bandwidth (1 s per direction)")
    ap.add_argument("--method", default="udp", choices=["udp", "fping", "icmp"])
    ap.add_argument("-o", "--output", help="keep the probe file here (default: a temp dir)")
    args = ap.parse_args()

    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"cannot build the cluster: {reason}", file=sys.stderr)
        return 1
    with NetnsCluster(racks=args.racks, hosts_per_rack=args.hosts_per_rack, prefix=args.prefix,
                      subnet=args.subnet, host_mbit=args.host_mbit, uplink_mbit=args.uplink_mbit,
                      extra_hops=args.extra_hops) as c, tempfile.TemporaryDirectory() as tmp:
        out = args.output or os.path.join(tmp, "probe.json")
        cmd = [sys.executable, "-m", "plink", "probe", c.hostfile, "-o", out, "--ssh-config", c.ssh_config,
               "--method", args.method, "--count", "30"]
        if args.bandwidth:
            cmd += ["--bandwidth", "--bw-seconds", "1"]
        print(f"{len(c.hosts)} hosts in {args.racks} racks; running:\n  {shlex.join(cmd)}", flush=True)
        rc = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ROOT))).returncode
        if rc not in (0, 3):
            return rc
        p = load(out)
        rack = np.array([c.rack_of(h.name) for h in p.hosts])
        print("\nrack pair   p10 RTT median (us)" + ("   bandwidth median (Gbit/s)" if p.bandwidth is not None else ""))
        for a in range(args.racks):
            for b in range(a, args.racks):
                mask = (rack[:, None] == a) & (rack[None, :] == b) & ~np.eye(p.n, dtype=bool)
                line = f"r{a} - r{b}     {np.nanmedian(p.latency[mask]):8.1f}"
                if p.bandwidth is not None:
                    line += f"              {np.nanmedian(p.bandwidth[mask]):8.3f}"
                print(line)
        leftovers = {h.name: [s for s in c.listening(h.name) if '"sshd"' not in s] for h in c.hosts}
        leftovers = {k: v for k, v in leftovers.items() if v}
        print(f"\nlistening on the hosts after the probe besides sshd: {leftovers or 'nothing'}")
        print(f"rounds: {len(p.meta['schedule'])}, missing pairs: {p.n_missing_pairs()}, exit code {rc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
