#!/usr/bin/env python3
"""CPU cost of one host's part of ``plink probe``'s setup over real SSH, by piece (root).

On a 2-host emulated cluster (network namespaces, sshd per host), repeated
``--runs`` times one connection at a time, as CPU seconds per connection of
the host side (sshd and everything under it, summed from ``/proc``) and of
this controller process:

* ``connect``: paramiko connect, key exchange, host-key check, public-key auth, close;
* ``+ exec true``: the same plus one exec channel running ``true`` (sshd's
  session process and the user's shell);
* ``+ agent``: plink's agent started as ``probe`` does (``start_agent``),
  hello answered, agent exits.

    sudo "$(command -v python)" benchmarks/ssh_start.py --runs 40 --prefix pt --subnet 10.214
"""

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plink.data.hostlist import HostEntry  # noqa: E402
from plink.probes.netns import NetnsCluster, unavailable_reason  # noqa: E402
from plink.probes.ssh import SSHOptions, _load_config, connect, resolve, start_agent  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_time import hosts_cpu_seconds  # noqa: E402


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--prefix", default=None)
    ap.add_argument("--subnet", default=None)
    args = ap.parse_args()
    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"skipped: {reason}", file=sys.stderr)
        return 0
    with NetnsCluster(racks=1, hosts_per_rack=2, prefix=args.prefix, subnet=args.subnet, clean_shell=True) as c:
        opts = SSHOptions(ssh_config=c.ssh_config)
        config = _load_config(c.ssh_config)
        target = resolve(HostEntry(c.hosts[0].name), config, opts)
        roots = [p.pid for p in c._sshd.values()]

        def conn_only():
            connect(target, opts, config).close()

        def exec_true():
            cl = connect(target, opts, config)
            ch = cl.get_transport().open_session()
            ch.exec_command("true")
            ch.recv_exit_status()
            cl.close()

        def agent():
            s = start_agent(target, opts, config)
            s.hello("00" * 32, 60)
            s.close()
            s.pipe.chan.recv_exit_status()

        cases = {"connect + auth": conn_only, "+ exec true": exec_true, "+ agent, hello, exit": agent}
        per = {k: ([], []) for k in cases}
        k = max(1, args.runs // 5)
        for _ in range(5):
            for name, fn in cases.items():
                h0, c0 = hosts_cpu_seconds(roots), own_cpu()
                for _ in range(k):
                    fn()
                time.sleep(0.3)  # let the sessions' processes exit and be reaped
                per[name][0].append((hosts_cpu_seconds(roots) - h0) / k * 1000)
                per[name][1].append((own_cpu() - c0) / k * 1000)
    print(f"CPU per connection (ms), median of 5 interleaved batches of {k}: hosts (sshd + children) / controller")
    for name, (h, ctl) in per.items():
        print("%-28s hosts %6.2f (%.2f-%.2f)   controller %6.2f (%.2f-%.2f)"
              % (name, statistics.median(h), min(h), max(h), statistics.median(ctl), min(ctl), max(ctl)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
