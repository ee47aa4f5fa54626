"""Does plink price equal rack uplinks as one capacity, and a slower one apart?  Measured on the netns cluster.

``plink probe`` tests each group uplink in 3 interleaved passes, and ``plink order`` prices the
capacities that differ by less than the passes' own noise as one
(``plink.structure.capacities``, since a073e6a).  This script checks that rule where the truth
is known, on the emulated cluster of the proof's case A (4 racks of 4, hosts at 350 Mbit/s,
prefix ``pu``, subnet ``10.206``), in two configurations:

- ``equal``: every rack uplink at 350 Mbit/s: the 8 capacities (4 uplinks, up and down) should
  be one;
- ``slower``: rack 3's uplink at ``--slower`` x 350 Mbit/s (default 0.95): its 2 capacities
  should be apart from the other 6, which should be one.

For each configuration it runs ``plink probe --uplinks --bw-seconds 1`` (latency, then the uplink
test) ``--runs`` times, and prints per run the classes the rule makes, the test's noise, and the
baseline: each pass's figures taken literally, as a probe before a073e6a priced them, with the
largest ratio between two equal-rate capacities (over 1.02, the shared model's resolution, it
splits orders of one pattern).  Then the counts over the runs.

Run as root (about 40 s per probe)::

    python benchmarks/uplink_noise.py --runs 4 --json benchmarks/results/uplink-noise.json
    python benchmarks/uplink_noise.py --analyse-only benchmarks/results/uplink-noise.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import benchmarks.collectives_netns as proof  # noqa: E402
from plink.data.probefile import from_dict  # noqa: E402
from plink.structure.capacities import capacity_classes  # noqa: E402

PREFIX, SUBNET = "pu", "10.206"
RACKS, HOSTS_PER_RACK, MBIT = 4, 4, 350.0
RESOLUTION = 1.02


def measure(args, save) -> dict:
    """Probe each configuration ``--runs`` times; the saved document (``save(doc)`` after each probe)."""
    from plink.probes.netns import NetnsCluster

    configs = {"equal": [MBIT] * RACKS, "slower": [MBIT] * (RACKS - 1) + [MBIT * args.slower]}
    doc = {"format": "plink-uplink-noise", "version": 1, "host_mbit": MBIT, "configs": configs,
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": {k: [] for k in configs}}
    with proof.netns_lock(), tempfile.TemporaryDirectory(prefix="plink-uplink-noise-") as tmp:
        for name, rates in configs.items():
            t0 = time.monotonic()
            with NetnsCluster(hosts_per_rack=HOSTS_PER_RACK, racks=RACKS, prefix=PREFIX, subnet=SUBNET,
                              host_mbit=MBIT, uplink_mbit=rates, sshd=True, clean_shell=True) as c:
                proof.log(f"{name}: {len(c.hosts)} hosts up in {time.monotonic() - t0:.1f} s; uplinks {rates} Mbit/s")
                hostlist = Path(tmp) / "hosts.txt"
                rng = np.random.default_rng(args.seed)
                for run in range(args.runs):
                    handout = [c.hosts[i] for i in rng.permutation(len(c.hosts))]
                    hostlist.write_text("".join(f"{h.name}\n" for h in handout))
                    out = Path(tmp) / f"{name}-{run}.json"
                    t = time.monotonic()
                    proof.plink("probe", str(hostlist), "--ssh-config", c.ssh_config, "--known-hosts",
                                c.known_hosts, "--uplinks", "--bw-seconds", "1", "-q", "-o", str(out))
                    probe = json.loads(out.read_text())
                    racks = {h["name"]: c.rack_of(h["name"]) for h in probe["hosts"]}
                    doc["runs"][name].append({"probe": probe, "rack": racks})
                    proof.log(f"{name} run {run}: plink probe --uplinks {time.monotonic() - t:.1f} s")
                    save(doc)
    return doc


def judge(run: dict, rates: list[float]) -> dict:
    """The rule's classes and the one-pass baseline for one probe of a configuration."""
    probe = from_dict(run["probe"])
    links, samples, rate = [], [], []
    for u in probe.uplinks or []:
        racks = {run["rack"][probe.hosts[i].name] for i in u.hosts}
        if len(racks) != 1 or len(u.hosts) != HOSTS_PER_RACK:
            return {"error": f"an uplink test over hosts of racks {sorted(racks)}: the groups were not the racks"}
        r = racks.pop()
        for key in ("up_bps", "down_bps"):
            links.append(f"r{r} {key[:-4]}")
            samples.append(u.extra.get(f"passes_{key}") or [getattr(u, key)])
            rate.append(rates[r])
    if len(links) != 2 * RACKS:
        return {"error": f"{len(links) // 2} uplinks measured, not {RACKS}"}
    by_rack = sorted(range(len(links)), key=lambda i: links[i])  # r0 down, r0 up, r1 down, ...
    links, samples, rate = [links[i] for i in by_rack], [samples[i] for i in by_rack], [rate[i] for i in by_rack]
    cc = capacity_classes(samples)
    truth = sorted(sorted(links[i] for i in range(len(links)) if rate[i] == v) for v in sorted(set(rate)))
    found = sorted(sorted(links[i] for i in c) for c in cc.classes)
    passes = min(len(s) for s in samples)
    baseline = []  # per pass: the largest ratio between two capacities of one rate
    for p in range(passes):
        worst = 1.0
        for v in set(rate):
            x = [samples[i][p] for i in range(len(links)) if rate[i] == v]
            worst = max(worst, max(x) / min(x))
        baseline.append(worst)
    return {"classes": found, "right": found == truth, "sigma": cc.sigma, "baseline": baseline,
            "mbit": [round(float(np.median(s)) * 8e-6, 1) for s in samples], "links": links}


def render(doc: dict) -> tuple[str, int]:
    """The table and the counts, and 1 when the rule got a configuration wrong in any run (else 0)."""
    out, bad = [], 0
    for name, rates in doc["configs"].items():
        runs = doc["runs"].get(name, [])
        out.append(f"\n{name}: rack uplinks {', '.join(f'{r:g}' for r in rates)} Mbit/s; {len(runs)} probes")
        out.append("run | medians (Mbit/s: r0 down, r0 up, r1 down, ...) | noise per pass | classes the rule prices "
                   "| right | one pass alone: largest ratio between equal-rate capacities")
        right = split = passes = 0
        for k, run in enumerate(runs):
            j = judge(run, rates)
            if "error" in j:
                out.append(f"{k} | {j['error']}")
                bad += 1
                continue
            right += j["right"]
            split += sum(b > RESOLUTION for b in j["baseline"])
            passes += len(j["baseline"])
            noise = "-" if j["sigma"] is None else f"+-{np.expm1(j['sigma']) * 100:.1f}%"
            out.append(f"{k} | {' '.join(f'{m:g}' for m in j['mbit'])} | {noise} | "
                       f"{' / '.join('{' + ', '.join(c) + '}' for c in j['classes'])} | "
                       f"{'yes' if j['right'] else 'NO'} | {', '.join(f'{b:.3f}' for b in j['baseline'])}")
        out.append(f"{name}: the rule priced the true capacities in {right} of {len(runs)} probes; single passes put "
                   f"two equal-rate capacities more than {(RESOLUTION - 1) * 100:.0f}% apart in {split} of {passes}")
        bad += len(runs) - right
    return "\n".join(out), 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=4, help="probes per configuration")
    ap.add_argument("--slower", type=float, default=0.95, help="rack 3's uplink rate in the 'slower' configuration, "
                                                                   "as a fraction of the others'")
    ap.add_argument("--seed", type=int, default=0, help="the hand-out orders")
    ap.add_argument("--json", help="save the probes here (written after each probe)")
    ap.add_argument("--analyse-only", metavar="JSON", help="re-print the tables of a saved run")
    args = ap.parse_args(argv)
    if args.analyse_only:
        doc = proof.load_saved(ap, args.analyse_only, "plink-uplink-noise")
        text, code = render(doc)
        print(text)
        return code
    if not 1 <= args.runs <= 50 or not 0.5 <= args.slower < 1:
        ap.error("--runs must be 1..50 and --slower in [0.5, 1)")
    codes = []

    def text(doc):
        t, code = render(doc)
        codes.append(code)
        return t

    return proof.measure_and_report(args, measure, text) or codes[0]


if __name__ == "__main__":
    sys.exit(main())
