"""In-job locality on the emulated cluster: plink.distributed under torchrun and mpirun vs plink probe over SSH.

Run as root, holding the machine's netns lock::

    flock /tmp/plink-netns.lock python benchmarks/injob_netns.py --json injob.json

Builds ``R`` racks x ``H`` hosts (``plink.probes.netns.NetnsCluster``, prefix
``pj``, subnet ``10.203``; hosts and rack uplinks 400 Mbit/s, so a rack's 4
hosts share one uplink) and hands the node ranks out **interleaved across
racks** (node rank k on rack k mod R), the worst case for a ring in rank
order.  Every host runs in its own UTS namespace so it has its own host name.
In one cluster it measures:

1. ``plink probe`` over SSH, ``--samples`` pings ``--interval`` apart, with
   its default method (``udp``, the agent's echo) and with ``fping`` (the
   method that separates racks best in the README) - the baselines;
2. ``torchrun ... -m plink.distributed probe`` on every host (static
   rendezvous, one process per host) - same samples and interval;
3. the same module under ``mpirun.openmpi --map-by seq`` (ranks from Open
   MPI's variables, ``-x MASTER_ADDR``);
4. a torchrun job calling ``plink.distributed.locality_group(algo="ring")``
   and timing a 16 MiB Gloo all-reduce on the default group, the reordered
   group and the rack-contiguous group (``benchmarks/injob_worker.py``).

Separation of racks by a probe: AUC (the chance that a cross-rack pair
measures slower than an in-rack pair) and the rack crossings of the ring
``plink.order_hosts`` makes from it (R is the minimum).

Targets (exit 1 when one is missed): in-job AUC >= AUC of ``plink probe``
with its default method (``udp``) - 0.02 and in-job ring crossings <= that
probe's ring crossings, for torchrun and mpirun (``fping``, which needs fping
on the hosts, is measured and printed too); in-job
rounds <= 1.2 x bound (rounds x samples x interval); all-reduce default /
plink >= 1.8; plink / contiguous <= 1.05.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from plink.distributed.probe import METHODS  # noqa: E402
from plink.probes.netns import wait_all  # noqa: E402
from plink.structure.metrics import rack_auc  # noqa: E402

PREFIX, SUBNET = "pj", "10.203"
WORKER = ROOT / "benchmarks" / "injob_worker.py"


def auc(lat: np.ndarray, same: np.ndarray) -> float:
    """P(cross-rack pair > in-rack pair) over the measured pairs (upper triangle), ties half."""
    iu = np.triu_indices(len(lat), 1)
    vals, s = lat[iu], same[iu]
    return rack_auc(vals[~s], vals[s])


def separation(probe, rack_of: dict[str, int]) -> dict:
    from plink import order_hosts

    racks = np.array([rack_of[h.name] for h in probe.hosts])
    same = racks[:, None] == racks[None, :]
    off = ~np.eye(probe.n, dtype=bool)
    lat = probe.latency
    res = order_hosts(probe, "ring", time_limit=2.0, seed=0)
    ring = racks[res.order]
    return {"auc": auc(lat, same), "in_rack_median_us": float(np.nanmedian(lat[same & off])),
            "cross_rack_median_us": float(np.nanmedian(lat[~same])),
            "in_rack_max_us": float(np.nanmax(lat[same & off])), "cross_rack_min_us": float(np.nanmin(lat[~same])),
            "ring_crossings": int(np.sum(ring != np.roll(ring, 1))), "missing_pairs": probe.n_missing_pairs()}


def _env() -> dict:
    env = dict(os.environ, GLOO_SOCKET_IFNAME="eth0", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    for k in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(k, None)
    return env


def run_torchrun(c, hosts, module_args: list[str], port: int, timeout: float = 600.0) -> tuple[list[str], float]:
    """torchrun on every host (node rank = position in ``hosts``); returns stdout per host and wall time."""
    n = len(hosts)
    procs = []
    t0 = time.monotonic()
    # torchrun makes a log directory under TMPDIR on every start and leaves it behind
    tmp = tempfile.TemporaryDirectory(prefix="plink-torchrun-")
    env = dict(_env(), TMPDIR=tmp.name)
    for k, h in enumerate(hosts):
        torchrun = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={n}", "--nproc-per-node=1",
                    f"--node-rank={k}", f"--master-addr={hosts[0].address}", f"--master-port={port}", *module_args]
        argv = ["ip", "netns", "exec", h.netns, "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec "$@"', h.name, *torchrun]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    with tmp:
        outs = wait_all(procs, [h.name for h in hosts], timeout, "torchrun", tail=600)
    return outs, time.monotonic() - t0


def run_mpirun(c, hosts, module_args: list[str], port: int, workdir: Path, timeout: float = 600.0) -> tuple[str, float]:
    hostfile = workdir / "mpi-hosts"
    hostfile.write_text("".join(f"{h.name} slots=1\n" for h in hosts))
    env = _env()
    env["OMPI_MCA_plm_rsh_args"] = f"-F {c.ssh_config}"
    env["MASTER_ADDR"], env["MASTER_PORT"] = hosts[0].address, str(port)
    net = f"{SUBNET}.0.0/16"
    argv = ["mpirun.openmpi", "--allow-run-as-root", "--hostfile", str(hostfile), "--map-by", "seq",
            "-np", str(len(hosts)), "--mca", "oob_tcp_if_include", net, "--mca", "btl_tcp_if_include", net,
            "-x", "PYTHONPATH", "-x", "GLOO_SOCKET_IFNAME", "-x", "OMP_NUM_THREADS", "-x", "MASTER_ADDR",
            "-x", "MASTER_PORT", sys.executable, *module_args]
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"mpirun failed (exit {p.returncode}): {p.stderr.strip()[-800:]}\n"
                           f"command: {' '.join(shlex.quote(a) for a in argv)}")
    return p.stdout, time.monotonic() - t0


def _json_line(texts) -> dict:
    for text in texts:
        for line in text.splitlines():
            if line.strip().startswith("{"):
                return json.loads(line)
    raise RuntimeError("no JSON summary line in the output")


def experiment(racks: int, hosts_per_rack: int, samples: int, interval: float, size: int, repeats: int,
               mbit: float, log=print, keep: str | None = None, steps: tuple = ("ssh", "torchrun", "mpirun", "allreduce"),
               probe_args: tuple = (), compare: tuple = (), passes: int = 1, verify: bool = False,
               bandwidth: bool = False, bw_seconds: float = 1.0, method: str = "udp") -> dict:
    from plink import load
    from plink.probes.netns import NetnsCluster
    from plink.probes.probe import probe_hosts
    from plink.probes.ssh import SSHOptions

    out: dict = {"racks": racks, "hosts_per_rack": hosts_per_rack, "samples": samples, "interval_s": interval,
                 "passes": passes,
                 "mbit": mbit, "size_bytes": size, "repeats": repeats, "method": method,
                 "probe_args": list(probe_args)}
    with NetnsCluster(racks=racks, hosts_per_rack=hosts_per_rack, prefix=PREFIX, subnet=SUBNET, host_mbit=mbit,
                      uplink_mbit=mbit, extra_hops=4, sshd=True, clean_shell=True) as c, \
            tempfile.TemporaryDirectory(prefix="plink-injob-") as tmp:
        tmp = Path(tmp)
        by_rack = [[h for h in c.hosts if h.rack == r] for r in range(racks)]
        hosts = [by_rack[r][i] for i in range(hosts_per_rack) for r in range(racks)]  # interleaved
        rack_of = {h.name: h.rack for h in c.hosts}
        (tmp / "racks.json").write_text(json.dumps(rack_of))
        log(f"cluster {racks}x{hosts_per_rack} up; node ranks interleaved: {' '.join(h.name for h in hosts)}")

        t = time.monotonic()
        if "ssh" in steps:
            for ssh_method in ("udp", "fping"):  # plink probe's default, and the method that separates racks best
                t = time.monotonic()
                ssh = probe_hosts([h.name for h in hosts], method=ssh_method, count=samples, interval=interval,
                                  ssh=SSHOptions(ssh_config=c.ssh_config, known_hosts=c.known_hosts))
                out[f"ssh_{ssh_method}"] = {"wall_s": time.monotonic() - t, **separation(ssh, rack_of)}
                log(f"plink probe --method {ssh_method} (SSH): {out[f'ssh_{ssh_method}']}")
                _keep(keep, ssh, f"ssh-{ssh_method}-probe.json")

        args = ["--samples", str(samples), "--interval", str(interval), "--passes", str(passes), "--json", *probe_args]
        if "torchrun" in steps:
            pf = tmp / "torchrun-probe.json"
            outs, wall = run_torchrun(c, hosts, ["-m", "plink.distributed", "probe", "-o", str(pf), *args], 29510)
            probe = load(pf)
            out["torchrun_probe"] = {"wall_s": wall, **_timing(probe), **separation(probe, rack_of),
                                     "names_ok": sorted(probe.names) == sorted(rack_of),
                                     "addresses_ok": all(c.host(h.name).address == h.address for h in probe.hosts)}
            log(f"torchrun -m plink.distributed probe: {out['torchrun_probe']}")
            _keep(keep, probe, "torchrun-probe.json")

        if "mpirun" in steps:
            pf = tmp / "mpirun-probe.json"
            stdout, wall = run_mpirun(c, hosts, ["-m", "plink.distributed", "probe", "-o", str(pf), *args], 29520, tmp)
            probe = load(pf)
            out["mpirun_probe"] = {"wall_s": wall, **_timing(probe), **separation(probe, rack_of),
                                   "launcher": probe.meta.get("launcher"),
                                   "names_ok": sorted(probe.names) == sorted(rack_of)}
            log(f"mpirun.openmpi python -m plink.distributed probe: {out['mpirun_probe']}")
            _keep(keep, probe, "mpirun-probe.json")
        for extra in compare:  # more variants of the module under mpirun, for comparison (no targets)
            pf = tmp / "mpirun-variant.json"
            stdout, wall = run_mpirun(c, hosts, ["-m", "plink.distributed", "probe", "-o", str(pf), "--samples",
                                                 str(samples), "--interval", str(interval), *shlex.split(extra)],
                                      29521 + len(out.get("variants", [])), tmp)
            probe = load(pf)
            out.setdefault("variants", []).append({"args": extra, "wall_s": wall, **_timing(probe),
                                                   **separation(probe, rack_of)})
            log(f"mpirun variant {extra!r}: {out['variants'][-1]}")
            _keep(keep, probe, f"mpirun-variant-{len(out['variants'])}.json")
        if "allreduce" not in steps:
            return out

        outs, wall = run_torchrun(c, hosts, [str(WORKER), "--racks", str(tmp / "racks.json"), "--size", str(size),
                                             "--repeats", str(repeats), "--samples", str(samples),
                                             "--interval", str(interval), "--passes", str(passes),
                                             "--method", method, *(["--verify"] if verify else []),
                                             *(["--bandwidth", "--bw-seconds", str(bw_seconds)] if bandwidth else [])],
                                 29530)
        res = _json_line(outs)
        res["wall_s"] = wall
        res["plink_ring_crossings"] = _crossings([rack_of[h] for h in res["orders"]["plink"]])
        res["default_ring_crossings"] = _crossings([rack_of[h] for h in res["orders"]["default"]])
        out["allreduce"] = res
        s = res["seconds"]
        log(f"all-reduce {size / 2**20:g} MiB: default {s['default']:.3f} s, plink {s['plink']:.3f} s, "
            f"contiguous {s['contiguous']:.3f} s; plink order {' '.join(res['orders']['plink'])}")
        if res.get("verify"):
            log(f"locality_group(verify=True): {res['verify']}")
    return out


def _keep(keep, probe, name) -> None:
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        probe.save(Path(keep) / name)


def _crossings(racks: list[int]) -> int:
    return sum(racks[i] != racks[i - 1] for i in range(len(racks)))


def _timing(probe) -> dict:
    m = probe.meta
    return {"rounds": m["rounds"], "rounds_s": m["rounds_s"], "rounds_bound_s": m["rounds_bound_s"],
            "rendezvous_s": m["rendezvous_s"], "probe_total_s": m.get("total_s"),
            "rounds_vs_bound": m["rounds_s"] / m["rounds_bound_s"], "launcher": m.get("launcher")}


def check(out: dict) -> list[str]:
    bad = []
    ssh = out["ssh_udp"]  # plink probe as it runs by default
    for key in ("torchrun_probe", "mpirun_probe"):
        r = out[key]
        if not r["auc"] >= ssh["auc"] - 0.02:
            bad.append(f"{key}: AUC {r['auc']:.3f} < plink probe's (udp) {ssh['auc']:.3f} - 0.02")
        if r["ring_crossings"] > ssh["ring_crossings"]:
            bad.append(f"{key}: ring crosses racks {r['ring_crossings']} times, plink probe's (udp) ring {ssh['ring_crossings']}")
        if r["rounds_vs_bound"] > 1.2:
            bad.append(f"{key}: rounds took {r['rounds_vs_bound']:.2f} x the bound (> 1.2)")
        if r["missing_pairs"]:
            bad.append(f"{key}: {r['missing_pairs']} pairs missing")
    s = out["allreduce"]["seconds"]
    if not s["default"] / s["plink"] >= 1.8:
        bad.append(f"all-reduce default/plink {s['default'] / s['plink']:.2f} < 1.8")
    if not s["plink"] / s["contiguous"] <= 1.05:
        bad.append(f"all-reduce plink/contiguous {s['plink'] / s['contiguous']:.2f} > 1.05")
    if not all(out["allreduce"]["correct"].values()):
        bad.append(f"wrong all-reduce result: {out['allreduce']['correct']}")
    return bad


def render(out: dict) -> str:
    lines = [f"{out['racks']} racks x {out['hosts_per_rack']} hosts, {out['mbit']:g} Mbit/s hosts and uplinks, "
             f"node ranks interleaved; {out['samples']} samples {out['interval_s'] * 1e3:g} ms apart",
             f"{'probe':<28} {'AUC':>6} {'in-rack':>9} {'cross':>9} {'ring x':>6} {'rounds':>8} {'bound':>7} {'ratio':>6} {'rdzv':>6} {'wall':>6}"]
    for key, label in (("ssh_udp", "plink probe (SSH, udp)"), ("ssh_fping", "plink probe (SSH, fping)"), ("torchrun_probe", "torchrun, plink.distributed"),
                       ("mpirun_probe", "mpirun, plink.distributed")):
        r = out[key]
        timing = (f"{r['rounds_s']:>7.2f}s {r['rounds_bound_s']:>6.2f}s {r['rounds_vs_bound']:>6.2f} {r['rendezvous_s']:>5.2f}s"
                  if "rounds_s" in r else f"{'':>8} {'':>7} {'':>6} {'':>6}")
        lines.append(f"{label:<28} {r['auc']:>6.3f} {r['in_rack_median_us']:>7.1f}us {r['cross_rack_median_us']:>7.1f}us "
                     f"{r['ring_crossings']:>6} {timing} {r['wall_s']:>5.1f}s")
    for v in out.get("variants", []):
        lines.append(f"{'  mpirun ' + v['args']:<28} {v['auc']:>6.3f} {v['in_rack_median_us']:>7.1f}us "
                     f"{v['cross_rack_median_us']:>7.1f}us {v['ring_crossings']:>6} {v['rounds_s']:>7.2f}s "
                     f"{v['rounds_bound_s']:>6.2f}s {v['rounds_vs_bound']:>6.2f} {v['rendezvous_s']:>5.2f}s {v['wall_s']:>5.1f}s")
    a = out["allreduce"]
    s = a["seconds"]
    lines.append(f"all-reduce {out['size_bytes'] / 2**20:g} MiB (median of {out['repeats']}, slowest rank): "
                 f"default {s['default']:.3f} s ({a['default_ring_crossings']} rack crossings), "
                 f"plink {s['plink']:.3f} s ({a['plink_ring_crossings']}), contiguous {s['contiguous']:.3f} s")
    lines.append(f"default / plink = {s['default'] / s['plink']:.2f}x (target >= 1.8), "
                 f"plink / contiguous = {s['plink'] / s['contiguous']:.3f} (target <= 1.05); "
                 f"locality_group took {a['locality_group_s']:.1f} s")
    if a.get("verify"):
        v = a["verify"]
        lines.append(f"locality_group(verify=True): {'kept plink' if v['kept_plink'] else 'fell back to the default'}"
                     f"'s group; {'; '.join(v['log'])}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--racks", type=int, default=4)
    ap.add_argument("--hosts-per-rack", type=int, default=4)
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--passes", type=int, default=1, help="--passes of the in-job probe (also locality_group's)")
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--size", type=int, default=16 * 2**20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mbit", type=float, default=400)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", help="save the probe files in this directory")
    ap.add_argument("--steps", nargs="+", default=["ssh", "torchrun", "mpirun", "allreduce"],
                    choices=["ssh", "torchrun", "mpirun", "allreduce"], help="what to run (targets need all)")
    ap.add_argument("--probe-args", default="", help="extra options for 'python -m plink.distributed probe'")
    ap.add_argument("--compare", nargs="*", default=[], help="options of more probe variants to run under mpirun")
    ap.add_argument("--verify", action="store_true",
                    help="the job calls locality_group(verify=True): plink's group only if it measures faster")
    ap.add_argument("--bandwidth", action="store_true",
                    help="the job's locality_group probes bandwidth too (probe_options bandwidth=True)")
    ap.add_argument("--bw-seconds", type=float, default=1.0, help="with --bandwidth: seconds per direction and pair")
    ap.add_argument("--method", default="udp", choices=METHODS,
                    help="latency method of the job's locality_group probe (the probe steps: --probe-args)")
    args = ap.parse_args(argv)
    from plink.probes.netns import unavailable_reason

    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"cannot build the emulated cluster: {reason}", file=sys.stderr)
        return 1
    out = experiment(args.racks, args.hosts_per_rack, args.samples, args.interval, args.size, args.repeats,
                     args.mbit, log=lambda m: print(m, file=sys.stderr, flush=True), keep=args.keep,
                     steps=tuple(args.steps), probe_args=tuple(shlex.split(args.probe_args)),
                     compare=tuple(args.compare), passes=args.passes, verify=args.verify,
                     bandwidth=args.bandwidth, bw_seconds=args.bw_seconds, method=args.method)
    if len(args.steps) < 4:
        print(json.dumps(out, indent=1))
        return 0
    bad = check(out)
    out["failed_targets"] = bad
    print(render(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    for b in bad:
        print(f"TARGET MISSED: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
