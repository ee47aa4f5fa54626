"""plink end to end on an emulated cluster: probe -> order -> real launchers -> measure.

Run as root (network namespaces), with the Python that has plink's dependencies
(``sudo`` alone would pick the system's python3)::

    sudo "$(command -v python)" examples/netns-cluster/launch.py     # 2 racks x 4 hosts
    sudo "$(command -v python)" examples/netns-cluster/launch.py --racks 4 --random 5 --json results.json

What it does:

1. builds the emulated datacenter of ``probes.netns.NetnsCluster`` (a free
   subnet and prefix picked per run; hosts and rack uplinks shaped to 400 Mbit/s, so
   the uplink a rack shares is the bottleneck of cross-rack traffic);
2. probes it over SSH with ``probes.probe.probe_hosts`` (fping, p10 RTT);
3. orders it with ``plink.order.order_hosts`` (ring) and writes the launcher
   files with ``plink.launch.emitters``: a torchrun node-rank map per order and an
   Open MPI ``--map-by seq`` hostfile;
4. runs a real ``torch.distributed`` Gloo all-reduce, one process per host
   (``ip netns exec``, ``GLOO_SOCKET_IFNAME=eth0``), each process taking its
   rank from the map with ``plink.launch.noderank`` (its own IP address), for the
   plink order, ``--random`` random orders, the worst order by the cost model
   and the racks-interleaved order (the physically worst ring), and checks
   every rank ran on the host the file gives;
5. runs real ``torchrun`` on every host for the plink order, exactly as the
   map's header says (``--node-rank "$(plink node-rank MAP)"``, static
   rendezvous), and checks the placement again;
6. runs the same all-reduce under ``mpirun --map-by seq`` from the emitted
   hostfile (ranks from Open MPI, over SSH into the namespaces) for the plink
   and the worst order, and checks the placement again;
7. prints the predicted speedup (cost model) beside the measured one.

Everything is torn down on exit, also after an error.  When the torchrun or
mpirun step fails (or ``mpirun`` is missing) the results measured before it
are still printed (and written to ``--json``), the failed step is named, and
the exit code is 1.  The functions are reused by ``tests/test_launch_netns.py``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from plink.launch import emitters  # noqa: E402
from plink.data.fileio import atomic_write_text  # noqa: E402
from plink.order import order_hosts, pair_cost  # noqa: E402
from plink.data.orderfile import read_order_hosts  # noqa: E402
from plink.data.probefile import Host, ProbeData  # noqa: E402
from plink.solvers.costmodels import CostModel  # noqa: E402

WORKER = HERE / "allreduce_worker.py"


# ---------------------------------------------------------------------------
# cluster and probe


def cluster(racks: int = 2, hosts_per_rack: int = 4, mbit: float = 400, extra_hops: int = 4):
    from plink.probes.netns import NetnsCluster

    return NetnsCluster(racks=racks, hosts_per_rack=hosts_per_rack,
                        host_mbit=mbit, uplink_mbit=mbit, extra_hops=extra_hops, sshd=True)


def probe_cluster(c, count: int = 50, method: str = "fping") -> ProbeData:
    """Probe the cluster over SSH, the way ``plink probe`` does."""
    from plink.probes.probe import probe_hosts
    from plink.probes.ssh import SSHOptions

    probe = probe_hosts(c.hostfile, method=method, count=count,
                        ssh=SSHOptions(ssh_config=c.ssh_config, known_hosts=c.known_hosts))
    # the cluster knows every address even if a probe session did not report it
    addr = {h.name: h.address for h in c.hosts}
    probe.hosts = [Host(h.name, h.address or addr.get(h.name), h.ssh) for h in probe.hosts]
    return probe


# ---------------------------------------------------------------------------
# orders


def worst_order(probe: ProbeData, algo: str = "ring", size: int = 0) -> list[int]:
    """The most expensive order by the cost model (exhaustive for N <= 9)."""
    model = CostModel(algo, pair_cost(probe)[0], size)
    n = probe.n
    if n <= 9:
        best, best_cost = None, -1.0
        for rest in itertools.permutations(range(1, n)):
            perm = np.array((0,) + rest)
            c = model(perm)
            if c > best_cost:
                best, best_cost = perm, c
        return best.tolist()
    from plink.solvers.anneal import anneal

    return anneal(lambda p: -model(p), n, time_limit=3.0, seed=0).perm.tolist()


def plan_orders(probe: ProbeData, n_random: int = 5, seed: int = 0, time_limit: float = 2.0,
                algo: str = "ring", size: int = 16 * 2**20) -> tuple[dict[str, list[int]], dict[str, float], object]:
    """The orders to measure (plink, random-k, worst) and their model costs."""
    res = order_hosts(probe, algo, size=size, time_limit=time_limit, seed=seed)
    orders = {"plink": list(res.order)}
    rng = np.random.default_rng(seed)
    for k in range(n_random):
        orders[f"random-{k}"] = rng.permutation(probe.n).tolist()
    orders["worst"] = worst_order(probe, algo, size)
    model = CostModel(algo, pair_cost(probe)[0], size)
    costs = {name: float(model(np.array(o))) for name, o in orders.items()}
    return orders, costs, res


def write_launcher_files(outdir: Path, probe: ProbeData, orders: dict[str, list[int]]) -> dict[str, dict[str, Path]]:
    """For every order: the torchrun map, the JSON-free Open MPI hostfile; returns paths."""
    files: dict[str, dict[str, Path]] = {}
    for name, order in orders.items():
        hosts = [probe.hosts[i] for i in order]
        tr, om = outdir / f"{name}.torchrun", outdir / f"{name}.openmpi"
        atomic_write_text(tr, emitters.emit("torchrun", hosts, order_file=str(tr)))
        atomic_write_text(om, emitters.emit("openmpi", hosts))
        files[name] = {"torchrun": tr, "openmpi": om}
    return files


# ---------------------------------------------------------------------------
# launching


def _worker_env() -> dict:
    env = dict(os.environ, GLOO_SOCKET_IFNAME="eth0", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    env.pop("MASTER_ADDR", None)
    return env


def _parse_lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def _collect(c, procs, timeout: float, who: str, what: str) -> list[dict]:
    """Wait for one process per host (all within ``timeout`` s) and parse their result lines."""
    from plink.probes.netns import wait_all

    outs = wait_all(procs, [h.name for h in c.hosts], timeout, what, who=who)
    return [r for out in outs for r in _parse_lines(out)]


def run_gloo(c, order_files: list[Path], size: int, repeats: int = 3, warmup: int = 1, port: int = 29600,
             timeout: float = 300.0) -> list[dict]:
    """One worker per host (``ip netns exec``); ranks from each order file."""
    argv = [sys.executable, str(WORKER), *map(str, order_files), "--size", str(size),
            "--repeats", str(repeats), "--warmup", str(warmup), "--port", str(port)]
    procs = []
    for h in c.hosts:
        procs.append(subprocess.Popen(["ip", "netns", "exec", h.netns, *argv], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=_worker_env()))
    return _collect(c, procs, timeout, "the all-reduce workers", "worker")


def run_torchrun(c, map_file: Path, size: int, repeats: int = 3, warmup: int = 1, port: int = 29800,
                 timeout: float = 300.0, more: list[Path] = ()) -> list[dict]:
    """Real torchrun on every host, exactly as the map's header says.

    Each host runs ``torchrun --node-rank "$(plink node-rank MAP)" --master-addr
    "$(plink node-rank MAP --master)" ...`` (static rendezvous) in its namespace;
    the worker takes ``RANK`` from torchrun.  ``more`` order files are run by
    the same workers afterwards, ranks from each map (result ``order`` 1, 2, ...).
    """
    n = len(read_order_hosts(map_file))
    plink = f"{shlex.quote(sys.executable)} -m plink"
    m = shlex.quote(str(map_file))
    script = (
        f'exec {shlex.quote(sys.executable)} -m torch.distributed.run --nnodes={n} --nproc-per-node=1 '
        f'--node-rank="$({plink} node-rank {m})" --master-addr="$({plink} node-rank {m} --master)" '
        f'--master-port={port} {shlex.quote(str(WORKER))} {m} '
        + "".join(f"{shlex.quote(str(p))} " for p in more)
        + f'--rank-from env --size {size} --repeats {repeats} --warmup {warmup} --port {port + 1}'
    )
    # torchrun makes a log directory under TMPDIR on every start and leaves it behind
    with tempfile.TemporaryDirectory(prefix="plink-torchrun-") as tmp:
        env = dict(_worker_env(), TMPDIR=tmp)
        procs = [subprocess.Popen(["ip", "netns", "exec", h.netns, "sh", "-c", script], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env) for h in c.hosts]
        return _collect(c, procs, timeout, "torchrun", "torchrun")


def run_mpirun(c, hostfile: Path, order_file: Path, size: int, repeats: int = 3, warmup: int = 1,
               port: int = 29700, timeout: float = 300.0, placement_only: bool = False) -> list[dict]:
    """``mpirun --map-by seq`` from the emitted hostfile, over SSH into the namespaces.

    ``placement_only``: the ranks only report where they run (no torch, fast).
    """
    n = len(read_order_hosts(order_file))
    env = _worker_env()
    env["OMPI_MCA_plm_rsh_args"] = f"-F {c.ssh_config}"
    net = f"{c.subnet}.0.0/16"
    argv = [
        "mpirun", "--allow-run-as-root", "--hostfile", str(hostfile), "--map-by", "seq", "-np", str(n),
        "--mca", "oob_tcp_if_include", net, "--mca", "btl_tcp_if_include", net,
        "-x", "PYTHONPATH", "-x", "GLOO_SOCKET_IFNAME", "-x", "OMP_NUM_THREADS",
        sys.executable, str(WORKER), str(order_file), "--rank-from", "ompi", "--size", str(size),
        "--repeats", str(repeats), "--warmup", str(warmup), "--port", str(port),
    ] + (["--placement-only"] if placement_only else [])
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"mpirun failed (exit {p.returncode}): {p.stderr.strip()[-800:]}\n"
                           f"command: {' '.join(shlex.quote(a) for a in argv)}")
    return _parse_lines(p.stdout)


def mpirun_placement(c, launcher_args: list[str], n: int, timeout: float = 120.0) -> list[str]:
    """Host name of each rank of ``mpirun <launcher_args> -np n`` (a shell echo, no torch)."""
    env = dict(os.environ, OMPI_MCA_plm_rsh_args=f"-F {c.ssh_config}")
    net = f"{c.subnet}.0.0/16"
    argv = ["mpirun", "--allow-run-as-root", *launcher_args, "-np", str(n), "--mca", "oob_tcp_if_include", net,
            "--mca", "btl_tcp_if_include", net, "sh", "-c", 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"']
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"mpirun failed (exit {p.returncode}): {p.stderr.strip()[-800:]}")
    pairs = sorted((int(r), h) for r, h in (ln.split() for ln in p.stdout.splitlines() if ln.strip()))
    if [r for r, _ in pairs] != list(range(n)):
        raise RuntimeError(f"mpirun reported ranks {[r for r, _ in pairs]}")
    return [h for _, h in pairs]


def check_placement(results: list[dict], order_file: Path, k: int = 0, by_hostname: bool = False) -> list[str]:
    """Rank r ran on the host of line r: mismatches (empty when all ranks are where the file says)."""
    hosts = read_order_hosts(order_file)
    mine = sorted((r for r in results if r["order"] == k), key=lambda r: r["rank"])
    problems = []
    if [r["rank"] for r in mine] != list(range(len(hosts))):
        problems.append(f"ranks reported: {[r['rank'] for r in mine]}, expected 0..{len(hosts) - 1}")
    for r in mine:
        if r["rank"] >= len(hosts):
            continue
        want = hosts[r["rank"]]
        got_ok = r["address"] == want.address and (not by_hostname or r["host"] == want.name)
        if not got_ok:
            problems.append(f"rank {r['rank']} ran on {r['host']} ({r['address']}), the file says {want.name} ({want.address})")
        if not r.get("correct", True):
            problems.append(f"rank {r['rank']}: wrong all-reduce result")
    return problems


def measured_seconds(results: list[dict], k: int) -> float:
    """Median over repeats of the slowest rank's all-reduce time."""
    mine = [r["seconds"] for r in results if r["order"] == k]
    per_repeat = [max(ts) for ts in zip(*mine)]
    return float(statistics.median(per_repeat))


# ---------------------------------------------------------------------------
# the whole experiment


def experiment(racks: int = 2, hosts_per_rack: int = 4, size: int = 16 * 2**20, n_random: int = 5,
               repeats: int = 3, seed: int = 0, mpi: bool = True, torchrun: bool = True, count: int = 50,
               log=print) -> dict:
    """Run the whole experiment; the summary of what was measured.

    The torchrun and mpirun steps come after the Gloo measurements: when one of
    them fails (or ``mpirun`` is not installed, checked before the cluster is
    built) the summary keeps everything measured so far and names the failed
    step in ``summary["failed"]`` ({step: reason}).
    """
    t0 = time.monotonic()
    failed: dict[str, str] = {}
    if mpi and shutil.which("mpirun") is None:
        failed["mpirun"] = "mpirun not found (install Open MPI, e.g. openmpi-bin, or run with --no-mpi)"
        log(f"{failed['mpirun']}: the mpirun step will be skipped")
        mpi = False

    def later_step(name, fn):
        try:
            return fn()
        except Exception as exc:  # keep what was measured before this step
            failed[name] = " ".join(f"{type(exc).__name__}: {exc}".split())[:800]
            log(f"{name} step failed: {failed[name]}; keeping the results measured before it")
            return None

    with cluster(racks, hosts_per_rack) as c, tempfile.TemporaryDirectory(prefix="plink-launch-") as tmp:
        out = Path(tmp)
        log(f"cluster: {racks} racks x {hosts_per_rack} hosts up in {time.monotonic() - t0:.1f} s")
        t = time.monotonic()
        probe = probe_cluster(c, count=count)
        log(f"probed {probe.n} hosts in {time.monotonic() - t:.1f} s (fping p10 RTT)")
        orders, costs, res = plan_orders(probe, n_random, seed, size=size)
        # the physically worst ring, known from the cluster's layout: racks interleaved
        by_rack = [[probe.index(h.name) for h in c.hosts if h.rack == r] for r in range(racks)]
        orders["interleaved"] = [i for group in itertools.zip_longest(*by_rack) for i in group if i is not None]
        costs["interleaved"] = float(CostModel("ring", pair_cost(probe)[0], size)(np.array(orders["interleaved"])))
        files = write_launcher_files(out, probe, orders)
        rack = {h.name: h.rack for h in c.hosts}
        names = list(orders)
        same = np.array([[rack[a.name] == rack[b.name] for b in probe.hosts] for a in probe.hosts])
        off = ~np.eye(probe.n, dtype=bool)
        rtt = {"within_rack_median_us": float(np.nanmedian(probe.latency[same & off])),
               "across_racks_median_us": float(np.nanmedian(probe.latency[~same])),
               "within_rack_max_us": float(np.nanmax(probe.latency[same & off])),
               "across_racks_min_us": float(np.nanmin(probe.latency[~same]))}
        log(f"probed RTT (p10): within racks median {rtt['within_rack_median_us']:.1f} us "
            f"(max {rtt['within_rack_max_us']:.1f}), across racks median {rtt['across_racks_median_us']:.1f} us "
            f"(min {rtt['across_racks_min_us']:.1f})")
        t = time.monotonic()
        gloo = run_gloo(c, [files[n]["torchrun"] for n in names], size, repeats=repeats)
        log(f"Gloo all-reduce over {len(names)} orders in {time.monotonic() - t:.1f} s")
        rows = {}
        for k, name in enumerate(names):
            bad = check_placement(gloo, files[name]["torchrun"], k)
            if bad:
                raise AssertionError(f"{name}: " + "; ".join(bad))
            ring = [rack[probe.hosts[i].name] for i in orders[name]]
            crossings = sum(ring[i] != ring[i - 1] for i in range(len(ring)))
            rows[name] = {"predicted_cost_us": costs[name], "seconds": measured_seconds(gloo, k),
                          "rack_crossings": crossings, "hosts": [probe.hosts[i].name for i in orders[name]]}
        torchrun_rows = {}
        if torchrun:
            def torchrun_step():
                t = time.monotonic()
                res_tr = run_torchrun(c, files["plink"]["torchrun"], size, repeats=repeats)
                bad = check_placement(res_tr, files["plink"]["torchrun"], 0)
                if bad:
                    raise AssertionError("torchrun plink: " + "; ".join(bad))
                torchrun_rows["plink"] = {"seconds": measured_seconds(res_tr, 0)}
                log(f"torchrun --node-rank \"$(plink node-rank MAP)\": plink order in {time.monotonic() - t:.1f} s; "
                    "ranks where the map says")

            later_step("torchrun", torchrun_step)
        mpi_rows = {}
        if mpi:
            def mpirun_step():
                t = time.monotonic()
                for j, name in enumerate(("plink", "worst")):
                    order_json = out / f"{name}.json"
                    hosts = [probe.hosts[i] for i in orders[name]]
                    atomic_write_text(order_json, json.dumps({"format": "plink-order", "version": 1, "hosts": [
                        {"rank": r, **h.to_dict()} for r, h in enumerate(hosts)]}))
                    res_mpi = run_mpirun(c, files[name]["openmpi"], order_json, size, repeats=repeats,
                                         port=29700 + j)
                    bad = check_placement(res_mpi, order_json, 0, by_hostname=True)
                    if bad:
                        raise AssertionError(f"mpirun {name}: " + "; ".join(bad))
                    mpi_rows[name] = {"seconds": measured_seconds(res_mpi, 0)}
                log(f"mpirun --map-by seq: plink and worst orders in {time.monotonic() - t:.1f} s; "
                    "ranks where the hostfile says")

            later_step("mpirun", mpirun_step)
    rand = [rows[n] for n in names if n.startswith("random-")]
    summary = {
        "hosts": racks * hosts_per_rack, "racks": racks, "size_bytes": size, "repeats": repeats,
        "model": res.model, "rtt": rtt, "orders": rows, "torchrun": torchrun_rows, "mpirun": mpi_rows,
        "failed": failed,
        "plink_seconds": rows["plink"]["seconds"],
        "random_median_seconds": float(statistics.median(r["seconds"] for r in rand)) if rand else None,
        "worst_seconds": rows["worst"]["seconds"],
        "interleaved_seconds": rows["interleaved"]["seconds"],
        "predicted_speedup_vs_random_median": (float(statistics.median(r["predicted_cost_us"] for r in rand)) / rows["plink"]["predicted_cost_us"]) if rand else None,
        "predicted_speedup_vs_worst": rows["worst"]["predicted_cost_us"] / rows["plink"]["predicted_cost_us"],
        "elapsed": round(time.monotonic() - t0, 1),
    }
    if rand:
        summary["measured_speedup_vs_random_median"] = summary["random_median_seconds"] / summary["plink_seconds"]
    summary["measured_speedup_vs_worst"] = summary["worst_seconds"] / summary["plink_seconds"]
    summary["predicted_speedup_vs_interleaved"] = rows["interleaved"]["predicted_cost_us"] / rows["plink"]["predicted_cost_us"]
    summary["measured_speedup_vs_interleaved"] = summary["interleaved_seconds"] / summary["plink_seconds"]
    return summary


def render(summary: dict) -> str:
    rows = summary["orders"]
    lines = [f"{summary['hosts']} hosts in {summary['racks']} racks, {summary['size_bytes'] / 2**20:g} MiB Gloo all-reduce, "
             f"median of {summary['repeats']}; cost model: {summary['model']}",
             f"probed RTT: within racks median {summary['rtt']['within_rack_median_us']:.1f} us, "
             f"across racks median {summary['rtt']['across_racks_median_us']:.1f} us",
             f"{'order':<12} {'rack crossings':>14} {'predicted cost':>15} {'measured':>10}"]
    for name, r in rows.items():
        lines.append(f"{name:<12} {r['rack_crossings']:>14} {r['predicted_cost_us']:>12.1f} us {r['seconds']:>8.3f} s")
    if summary.get("random_median_seconds") is not None:
        lines.append(f"plink vs median random: predicted {summary['predicted_speedup_vs_random_median']:.2f}x, "
                     f"measured {summary['measured_speedup_vs_random_median']:.2f}x")
    lines.append(f"plink vs worst (model): predicted {summary['predicted_speedup_vs_worst']:.2f}x, "
                 f"measured {summary['measured_speedup_vs_worst']:.2f}x")
    lines.append(f"plink vs interleaved:   predicted {summary['predicted_speedup_vs_interleaved']:.2f}x, "
                 f"measured {summary['measured_speedup_vs_interleaved']:.2f}x")
    for name, r in summary.get("torchrun", {}).items():
        lines.append(f"torchrun (static rendezvous), {name} order: {r['seconds']:.3f} s")
    for name, r in summary.get("mpirun", {}).items():
        lines.append(f"mpirun --map-by seq, {name} order: {r['seconds']:.3f} s")
    for step, why in summary.get("failed", {}).items():
        lines.append(f"NOT MEASURED: the {step} step failed: {why}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--racks", type=int, default=2)
    ap.add_argument("--hosts-per-rack", type=int, default=4)
    ap.add_argument("--size", default="16MiB")
    ap.add_argument("--random", type=int, default=5, help="random orders to measure")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--count", type=int, default=50, help="pings per pair")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-mpi", action="store_true", help="skip the mpirun runs")
    ap.add_argument("--no-torchrun", action="store_true", help="skip the torchrun run")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    from plink.units import parse_size
    from plink.probes.netns import unavailable_reason

    reason = unavailable_reason(sshd=True)
    if reason:
        print(f"cannot build the emulated cluster: {reason}", file=sys.stderr)
        return 1
    summary = experiment(args.racks, args.hosts_per_rack, parse_size(args.size), args.random, args.repeats,
                         args.seed, mpi=not args.no_mpi, torchrun=not args.no_torchrun, count=args.count,
                         log=lambda m: print(m, file=sys.stderr, flush=True))
    print(render(summary))
    if args.json:
        atomic_write_text(args.json, json.dumps(summary, indent=1) + "\n")
    if summary["failed"]:
        print(f"{', '.join(summary['failed'])} failed; the results above were measured before "
              + ("and are in " + args.json if args.json else "it"), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
