#!/usr/bin/env python3
"""CPU cost of starting one probe agent, by piece (no SSH, no root needed).

plink starts an agent on every host; on the emulated cluster all hosts share
this machine's cores, so the per-host start cost is paid N times in a row.
This measures, as CPU seconds (user + system, from the children's rusage) per
start, each piece in isolation with a clean environment like sshd's:

* ``bash -c 'exec true'``: the remote shell sshd runs the command with;
* ``python3 [-S] -c pass``: the interpreter alone (``-S``: without site);
* the imports of the agent, old set and the current one;
* a whole agent (``agent_argv``) from start to its hello answer and exit,
  with the code sent compiled (``marshal``) or as source, as it was before.

    python benchmarks/agent_start.py --python /usr/bin/python3 --runs 60

Median of 5 batches, the cases taking turns; noisy on a shared machine (a few tenths of a ms).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plink.probes.session import BOOT, PY_FLAGS, agent_argv, agent_payload, agent_source  # noqa: E402

ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": os.environ.get("HOME", "/"),
       "LANG": "C.UTF-8"}
OLD_IMPORTS = "import hashlib, hmac, json, os, select, shutil, signal, socket, struct, subprocess, sys, threading, time"
NEW_IMPORTS = "import _signal, _socket, _json, hmac, os, select, struct, sys, threading, time"
OLD_BOOT = 'import sys;exec(compile(sys.stdin.buffer.read(int(sys.argv[1])),"<plink-agent>","exec"))'


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_plain(argv):
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)


def run_agent(argv, payload):
    """Start the agent, send hello and exit, read until the exit answer."""
    hello = json.dumps({"id": 1, "op": "hello", "key": "00" * 32, "bind": "127.0.0.1", "deadline": 60})
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    p.stdin.write(payload + hello.encode() + b'\n{"id":2,"op":"exit"}\n')
    p.stdin.flush()
    got = p.stdout.read()
    p.stdin.close()
    p.wait()
    if b'"id":2' not in got or b'"udp_port"' not in got:
        raise SystemExit(f"agent did not answer: {got[:200]!r}")


def per_start_ms(cases: dict, runs: int, batches: int = 5) -> dict:
    """``{name: (median, min, max)}`` ms per start; the cases take turns batch
    by batch, so a burst of other load hits them all alike."""
    per = {name: [] for name in cases}
    k = max(1, runs // batches)
    for _ in range(batches):
        for name, fn in cases.items():
            c0 = _children_cpu()
            for _ in range(k):
                fn()
            per[name].append((_children_cpu() - c0) / k * 1000)
    return {name: (statistics.median(v), min(v), max(v)) for name, v in per.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default="python3", help="the hosts' interpreter (default python3 on PATH)")
    ap.add_argument("--runs", type=int, default=60)
    args = ap.parse_args()
    py = args.python
    src = agent_source()
    argv_new, payload_new = agent_argv(py)
    cases = {
        "bash -c 'exec true'": lambda: run_plain(["/bin/bash", "-c", "exec true"]),
        "python3 -c pass": lambda: run_plain([py, "-c", "pass"]),
        "python3 -S -c pass": lambda: run_plain([py, "-S", "-c", "pass"]),
        "python3 -S: the old agent's imports": lambda: run_plain([py, "-S", "-c", OLD_IMPORTS]),
        "python3 -S: the agent's imports now": lambda: run_plain([py, "-S", "-c", NEW_IMPORTS]),
        "python3 -S: compile the agent source": lambda: run_plain(
            [py, "-S", "-c", f"compile(open({str(Path(__file__).resolve().parents[1] / 'probes' / 'agent.py')!r}).read(),'a','exec')"]),
        "agent as before (-u, source compiled on the host)": lambda: run_agent([py, "-u", "-c", OLD_BOOT, str(len(src))], src),
        "agent now, but its source compiled on the host": lambda: run_agent(argv_new, b"\0\0\0\0" + payload_new[4:]),
        "agent now (-S -u, code sent compiled)": lambda: run_agent(argv_new, payload_new),
    }
    res = per_start_ms(cases, args.runs)
    print(f"CPU per start (ms), median of 5 interleaved batches of {max(1, args.runs // 5)} (min, max); {py}; "
          f"agent payload {len(payload_new)} bytes, flags {' '.join(PY_FLAGS)}")
    for name, v in res.items():
        print("%-52s %6.2f  (%.2f, %.2f)" % ((name,) + v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
