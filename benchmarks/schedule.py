"""2LHA schedule: predicted 2LHA vs flat ring vs sharded PS, and the executor vs Gloo.

Part 1 (predicted, time model of plink/schedule/timemodel.py): simulated datacenters
``simulate_datacenter(racks=sqrt(N), hosts_per_rack=sqrt(N), bandwidth=True)``
(25 Gbit/s in a rack, 4x oversubscribed above it), groups from the
fallback clustering, an all-reduce of ``--size`` in 64 KiB chunks.  Prints
per N: master balance (max/min), rounds, cross-group bytes and predicted
time of 2LHA, flat ring (the ring ``plink order``'s search finds,
``timemodel.ring_order``; the ring rack by rack beside it) and sharded PS, and whether the
DAG was verified (symbolic execution; for large N on a smaller buffer with
the same groups, see the ``verified`` column).

Part 2 (measured): ``plink.schedule.executor.all_reduce`` vs ``torch.distributed.all_reduce``
(Gloo) across local processes on 127.0.0.1, median of ``--iters`` runs,
with the time model's predicted ratio for a uniform network whose latency
and bandwidth are measured between two of the processes.

    python benchmarks/schedule.py                 # full run
    python benchmarks/schedule.py --quick         # N = 16, 64 only; small local run
    python benchmarks/schedule.py --netns         # also on the netns cluster (root; probes/netns.py)

Part 3 (``--netns``, measured): the same on the emulated cluster of
``probes/netns.py`` (2 racks x 4 hosts, a free subnet and prefix picked per run;
host links 400 Mbit/s, each rack's uplink 200 Mbit/s shared by its 4
hosts), ranks in rack order, groups = racks; predicted ratio from the
pair model of that testbed (host rate in a rack, uplink rate across).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from plink.schedule.dag import expand  # noqa: E402
from plink.schedule.plan import balance, plan_schedule  # noqa: E402
from plink.data.simulate import simulate_datacenter  # noqa: E402
from plink.units import format_size, format_us  # noqa: E402
from plink.schedule.executor import DEFAULT_WAVES  # noqa: E402
from plink.schedule.timemodel import compare, pair_cost, shared_network  # noqa: E402
from plink.schedule.verify import verify  # noqa: E402

VERIFY_ACTIONS = 1_200_000


def predicted(ns, size, chunk, seed):
    rows = []
    for n in ns:
        r = int(round(math.sqrt(n)))
        probe = simulate_datacenter(racks=r, hosts_per_rack=n // r, bandwidth=True, seed=seed)
        t0 = time.perf_counter()
        plan = plan_schedule(probe, size=size, chunk=chunk)
        t_plan = time.perf_counter() - t0
        # shared links (what plink schedule reports), 2LHA in the executor's waves; the pair model beside it
        res = compare(plan, shared_network(probe, plan.labels), waves=DEFAULT_WAVES)
        pairs = compare(plan, pair_cost(probe))
        bal = balance(plan, probe.bandwidth)
        racks = [t[-1] for t in probe.truth.labels]
        pure = all(len({racks[i] for i in np.flatnonzero(plan.labels == g)}) == 1 for g in range(plan.k))
        # verify the DAG: full size when small enough, else the largest buffer under the action budget
        per_chunk = 4.3 * n
        vchunks = max(1, min(plan.n_chunks, int(VERIFY_ACTIONS / per_chunk)))
        vplan = plan if vchunks == plan.n_chunks else plan_schedule(
            probe, plan.labels, size=vchunks * chunk, chunk=chunk)
        rep = verify(expand(vplan))
        vsize = vplan.size
        rows.append({
            "n": n, "k": plan.k, "groups_are_racks": pure, "chunks": plan.n_chunks, "plan_s": t_plan,
            "bal": bal, "res": res, "pairs": pairs, "verified": rep.ok and rep.rounds == res["2lha"].rounds, "vsize": vsize,
        })
        print(f"  N={n}: planned in {t_plan:.1f} s, verified={rep.ok} at {format_size(vsize)}", file=sys.stderr)
    return rows


def predicted_ratios(plan, net, pc, size) -> dict:
    """2LHA over flat ring as the time model predicts it: on shared links (``net``, what ``plink
    schedule`` reports) with the rounds back to back (1 wave) and in the executor's waves, and pair by
    pair (``pc``, the dissertation's model); and the ring's predicted seconds on the shared links.
    The ring is the one Gloo runs here, rack by rack in rank order (``ring_contiguous``)."""
    one, piped, pairs = compare(plan, net), compare(plan, net, waves=DEFAULT_WAVES), compare(plan, pc)
    ring = one["ring_contiguous"].time_us
    return {
        "pred_pairs": pairs["2lha"].time_us / pairs["ring"].time_us,
        "pred_1": one["2lha"].time_us / ring,
        "pred_waves": piped["2lha"].time_us / ring,
        "ring_pred_s": ring * 1e-6,
    }


def print_predicted(rows, size):
    print(f"\n### Predicted, {format_size(size)} all-reduce, 64 KiB chunks (time model, plink/schedule/timemodel.py: "
          f"shared links, 2LHA in {DEFAULT_WAVES} waves; the pair model's speedups last)\n")
    print("| N | groups | chunks | balance load / GMs per group | rounds 2LHA / ring / PS "
          "| cross-group bytes 2LHA / ring / PS | time 2LHA | ring | ring rack by rack | PS "
          "| 2LHA speedup vs ring / PS | verified | pair model: speedup vs ring / PS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        a, g, p = r["res"]["2lha"], r["res"]["ring"], r["res"]["ps"]
        c = r["res"]["ring_contiguous"]
        pr = r["pairs"]
        v = "yes" if r["verified"] else "NO"
        v += "" if r["vsize"] == size else f" (at {format_size(r['vsize'])})"
        print(f"| {r['n']} | {r['k']}{'' if r['groups_are_racks'] else ' (not racks)'} | {r['chunks']} "
              f"| {r['bal']['load']:.3f} / {r['bal']['gm_groups']:.3f} "
              f"| {a.rounds} / {g.rounds} / {p.rounds} "
              f"| {format_size(a.bytes_cross)} / {format_size(g.bytes_cross)} / {format_size(p.bytes_cross)} "
              f"| {format_us(a.time_us)} | {format_us(g.time_us)} | {format_us(c.time_us)} | {format_us(p.time_us)} "
              f"| {g.time_us / a.time_us:.2f}x / {p.time_us / a.time_us:.2f}x | {v} "
              f"| {pr['ring'].time_us / pr['2lha'].time_us:.2f}x / {pr['ps'].time_us / pr['2lha'].time_us:.2f}x |")


# ---------------------------------------------------------------------------
# measured, local processes


def _worker(rank, world, nbytes_list, labels, iters):
    import torch
    import torch.distributed as dist

    from plink.schedule.dag import Schedule
    from plink.schedule.executor import all_reduce
    from plink.data.probefile import from_matrix

    torch.set_num_threads(1)
    lines = []
    # p2p latency and bandwidth between ranks 0 and 1 (for the uniform time model)
    small, big = torch.zeros(1), torch.zeros(4 * 1024 * 1024 // 4)
    lat = bw = None
    for t, n_rep in ((small, 50), (big, 5)):
        dist.barrier()
        if rank in (0, 1):
            for i in range(2 * n_rep + 2):  # the first n_rep + 2 round trips warm the pair up
                if i == n_rep + 2:
                    t0 = time.perf_counter()
                if rank == 0:
                    dist.send(t, 1)
                    dist.recv(t, 1)
                else:
                    dist.recv(t, 0)
                    dist.send(t, 0)
            dt = (time.perf_counter() - t0) / n_rep  # round trip
            if t is small:
                lat = dt * 1e6
            else:
                bw = 2 * t.numel() * 4 * 8 / dt / 1e9  # Gbit/s, latency included (never negative)
    dist.barrier()
    for nbytes in nbytes_list:
        n = world
        latm = np.full((n, n), 30.0)  # the plan uses the given groups and cardinality only
        np.fill_diagonal(latm, 0.0)
        probe = from_matrix(latm, [f"r{i}" for i in range(n)])
        from plink.schedule.plan import plan_schedule

        sched = Schedule.from_plan(plan_schedule(probe, np.array(labels), size=nbytes, chunk=64 * 1024))
        x = torch.randint(-100, 100, (nbytes // 4,), generator=torch.Generator().manual_seed(rank)).float()
        ref = x.clone()
        dist.all_reduce(ref)
        y = x.clone()
        all_reduce(y, sched)
        ok = bool(torch.equal(y, ref))
        all_reduce(x.clone(), sched, waves=1)
        t_exec, t_exec1, t_gloo = [], [], []
        for _ in range(iters):
            for waves, sink in ((DEFAULT_WAVES, t_exec), (1, t_exec1)):
                y = x.clone()
                dist.barrier()
                t0 = time.perf_counter()
                all_reduce(y, sched, waves=waves)
                dist.barrier()
                sink.append(time.perf_counter() - t0)
            y = x.clone()
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(y)
            dist.barrier()
            t_gloo.append(time.perf_counter() - t0)
        if rank == 0:
            lines.append(f"{nbytes} {statistics.median(t_exec)} {statistics.median(t_exec1)} "
                         f"{statistics.median(t_gloo)} {int(ok)} {lat} {bw}")
    return lines


def measured(world, labels, sizes, iters):
    from plink.distributed.local import run_ranks

    from plink.data.probefile import from_matrix
    from plink.solvers.contention import Network
    from plink.solvers.costmodels import PairCost

    res = run_ranks(world, _worker, world, sizes, labels, iters, timeout=3600)
    if res.get(0, ("missing",))[0] != "ok":
        raise SystemExit(f"the measured run failed: {res}")
    rows = [line.split() for line in res[0][1]]
    out = []
    for nbytes, te, te1, tg, ok, lat, bw in rows:
        nbytes, te, te1, tg, lat, bw = int(nbytes), float(te), float(te1), float(tg), float(lat), float(bw)
        latm = np.full((world, world), lat)
        bwm = np.full((world, world), bw)
        pc = PairCost.from_matrices(latm, bwm)
        # one machine: every rank's "NIC" the measured pair rate, no uplink that binds
        lab = np.array(labels)
        k = int(lab.max()) + 1
        nic = np.full(world, bw * 1e9 / 8)
        net = Network(np.where(np.eye(world, dtype=bool), 0.0, latm) * 1e-6 / 2, nic, nic, lab,
                      np.full(k, nic.sum()), np.full(k, nic.sum()))
        probe = from_matrix(np.where(np.eye(world, dtype=bool), 0.0, latm), [f"r{i}" for i in range(world)])
        plan = plan_schedule(probe, lab, size=nbytes, chunk=64 * 1024)
        out.append({"world": world, "groups": len(set(labels)), "size": nbytes, "exec_s": te, "exec1_s": te1, "gloo_s": tg,
                    "ok": ok == "1", **predicted_ratios(plan, net, pc, nbytes), "lat_us": lat, "bw_gbps": bw})
    return out


def print_measured(rows):
    print("\n### Measured: executor vs Gloo all_reduce, local processes on 127.0.0.1 (2 shared cores)\n")
    print(f"| ranks | groups | size | executor ({DEFAULT_WAVES} waves) | executor (1 wave) | Gloo all_reduce "
          f"| measured exec/Gloo, {DEFAULT_WAVES} waves / 1 wave | predicted 2LHA/ring: shared links, "
          f"{DEFAULT_WAVES} waves / 1 wave / pair model | equal to Gloo | p2p RTT / bw |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['world']} | {r['groups']} | {format_size(r['size'])} | {r['exec_s'] * 1e3:.1f} ms "
              f"| {r['exec1_s'] * 1e3:.1f} ms | {r['gloo_s'] * 1e3:.1f} ms "
              f"| {_ratios(r)} | {'yes' if r['ok'] else 'NO'} | {r['lat_us']:.0f} us / {r['bw_gbps']:.1f} Gbit/s |")


def _ratios(r) -> str:
    """The measured and predicted 2LHA / ring columns of a row."""
    return (f"{r['exec_s'] / r['gloo_s']:.2f} / {r['exec1_s'] / r['gloo_s']:.2f} "
            f"| {r['pred_waves']:.2f} / {r['pred_1']:.2f} / {r['pred_pairs']:.2f}")


# ---------------------------------------------------------------------------
# measured, netns cluster (probes/netns.py): racks of hosts behind a shared, oversubscribed uplink


def _netns_worker(argv):
    """One rank inside a host namespace: ``--netns-worker rank world addr port sizes labels iters``."""
    import json

    import torch
    import torch.distributed as dist

    from plink.schedule.dag import Schedule
    from plink.schedule.executor import all_reduce
    from plink.data.probefile import from_matrix

    rank, world, addr, port = int(argv[0]), int(argv[1]), argv[2], int(argv[3])
    sizes = [int(x) for x in argv[4].split(",")]
    labels = np.array([int(x) for x in argv[5].split(",")])
    iters = int(argv[6])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=world)
    # RTT to an in-rack and a cross-rack peer (rank 0 <-> 1 and 0 <-> world-1)
    small = torch.zeros(1)
    rtt = {}
    for peer in (1, world - 1):
        dist.barrier()
        if rank in (0, peer):
            other = peer if rank == 0 else 0
            for i in range(40):
                if i == 10:
                    t0 = time.perf_counter()
                if rank == 0:
                    dist.send(small, other)
                    dist.recv(small, other)
                else:
                    dist.recv(small, other)
                    dist.send(small, other)
            rtt[peer] = (time.perf_counter() - t0) / 30 * 1e6
    dist.barrier()
    out = []
    latm = np.full((world, world), 30.0)
    np.fill_diagonal(latm, 0.0)
    probe = from_matrix(latm, [f"r{i}" for i in range(world)])
    from plink.schedule.plan import plan_schedule

    for nbytes in sizes:
        sched = Schedule.from_plan(plan_schedule(probe, labels, size=nbytes, chunk=64 * 1024))
        x = torch.randint(-100, 100, (nbytes // 4,), generator=torch.Generator().manual_seed(rank)).float()
        ref = x.clone()
        dist.all_reduce(ref)
        y = x.clone()
        all_reduce(y, sched)
        ok = bool(torch.equal(y, ref))
        all_reduce(x.clone(), sched, waves=1)
        te, te1, tg = [], [], []
        for _ in range(iters):
            for sink, fn in ((te, lambda t: all_reduce(t, sched, waves=DEFAULT_WAVES)),
                             (te1, lambda t: all_reduce(t, sched, waves=1)), (tg, dist.all_reduce)):
                y = x.clone()
                dist.barrier()
                t0 = time.perf_counter()
                fn(y)
                dist.barrier()
                sink.append(time.perf_counter() - t0)
        out.append({"size": nbytes, "exec_s": statistics.median(te), "exec1_s": statistics.median(te1),
                    "gloo_s": statistics.median(tg), "ok": ok})
    if rank == 0:
        print(json.dumps({"rtt_in_us": rtt.get(1), "rtt_cross_us": rtt.get(world - 1), "rows": out}), flush=True)
    dist.destroy_process_group()


def netns(sizes, iters, racks=2, hosts_per_rack=4, host_mbit=400.0, uplink_mbit=200.0):
    """Executor vs Gloo on the emulated cluster; returns rows or a reason it was skipped."""
    import json
    from concurrent.futures import ThreadPoolExecutor

    try:
        from plink.probes.netns import NetnsCluster, unavailable_reason
    except ImportError:
        return "probes/netns.py is not available on this branch"
    reason = unavailable_reason(sshd=False)
    if reason:
        return reason
    from plink.data.probefile import from_matrix
    from plink.solvers.contention import Network
    from plink.solvers.costmodels import PairCost

    world = racks * hosts_per_rack
    with NetnsCluster(racks=racks, hosts_per_rack=hosts_per_rack,
                      host_mbit=host_mbit, uplink_mbit=uplink_mbit, sshd=False) as cl:
        hosts = sorted(cl.hosts, key=lambda h: (h.rack, h.index))  # rank order = rack order
        labels = [h.rack for h in hosts]
        port = 29500 + os.getpid() % 1000
        env = dict(os.environ, GLOO_SOCKET_IFNAME="eth0", PYTHONPATH=ROOT)

        def launch(rank):
            argv = [sys.executable, os.path.abspath(__file__), "--netns-worker", str(rank), str(world),
                    hosts[0].address, str(port), ",".join(map(str, sizes)), ",".join(map(str, labels)), str(iters)]
            return cl.exec(hosts[rank].name, argv, capture_output=True, text=True, env=env, timeout=900)

        with ThreadPoolExecutor(world) as pool:
            results = list(pool.map(launch, range(world)))
    bad = [r for r in results if r.returncode != 0]
    if bad:
        return f"a netns worker failed: {bad[0].stderr.strip().splitlines()[-1:]}"
    doc = json.loads(results[0].stdout.strip().splitlines()[-1])
    # the testbed as set: host links at host_mbit, each rack's uplink at uplink_mbit (shared links);
    # and its pair model (the dissertation's): pairs in a rack at host_mbit, across at the uplink rate
    same = np.equal.outer(labels, labels)
    lat = np.where(same, doc["rtt_in_us"], doc["rtt_cross_us"])
    np.fill_diagonal(lat, 0.0)
    bw = np.where(same, host_mbit, min(host_mbit, uplink_mbit)) / 1000.0
    pc = PairCost.from_matrices(lat, bw)
    nic = np.full(world, host_mbit * 1e6 / 8)
    net = Network(lat * 1e-6 / 2, nic, nic, np.array(labels), np.full(racks, uplink_mbit * 1e6 / 8),
                  np.full(racks, uplink_mbit * 1e6 / 8))
    rows = []
    for r in doc["rows"]:
        probe = from_matrix(lat, [f"r{i}" for i in range(world)])
        from plink.schedule.plan import plan_schedule

        plan = plan_schedule(probe, np.array(labels), size=r["size"], chunk=64 * 1024)
        rows.append({**r, **predicted_ratios(plan, net, pc, r["size"]), "world": world, "racks": racks,
                     "rtt_in": doc["rtt_in_us"], "rtt_cross": doc["rtt_cross_us"]})
    return rows


def print_netns(rows, host_mbit=400.0, uplink_mbit=200.0):
    print(f"\n### Measured: executor vs Gloo all_reduce on the netns cluster (hosts {host_mbit:g} Mbit/s, "
          f"rack uplinks {uplink_mbit:g} Mbit/s shared)\n")
    if isinstance(rows, str):
        print(f"skipped: {rows}")
        return
    print(f"| ranks | racks | size | executor ({DEFAULT_WAVES} waves) | executor (1 wave) | Gloo all_reduce "
          f"| ring predicted (shared links) | measured exec/Gloo, {DEFAULT_WAVES} waves / 1 wave "
          f"| predicted 2LHA/ring: shared links, {DEFAULT_WAVES} waves / 1 wave / pair model | equal to Gloo "
          "| RTT in / cross rack |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['world']} | {r['racks']} | {format_size(r['size'])} | {r['exec_s'] * 1e3:.1f} ms "
              f"| {r['exec1_s'] * 1e3:.1f} ms | {r['gloo_s'] * 1e3:.1f} ms | {r['ring_pred_s'] * 1e3:.1f} ms "
              f"| {_ratios(r)} | {'yes' if r['ok'] else 'NO'} | {r['rtt_in']:.0f} / {r['rtt_cross']:.0f} us |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size", default=256 * 1024 * 1024, type=int)
    ap.add_argument("--iters", default=5, type=int)
    ap.add_argument("--seed", default=0, type=int)
    ap.add_argument("--netns", action="store_true", help="also measure on the emulated netns cluster (root)")
    ap.add_argument("--netns-only", action="store_true", help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--netns-worker"]:
        return _netns_worker(argv[1:])
    args = ap.parse_args(argv)
    if args.netns_only:
        print_netns(netns([4 * 1024 * 1024, 16 * 1024 * 1024], args.iters))
        return
    ns = [16, 64] if args.quick else [16, 64, 256, 1024]
    size = 16 * 1024 * 1024 if args.quick else args.size
    print(f"# python benchmarks/schedule.py {' '.join(sys.argv[1:])}".rstrip())
    rows = predicted(ns, size, 64 * 1024, args.seed)
    print_predicted(rows, size)
    msizes = [1024 * 1024] if args.quick else [4 * 1024 * 1024, 16 * 1024 * 1024]
    local = measured(4, [0, 0, 1, 1], msizes, args.iters)
    if not args.quick:
        local += measured(8, [0, 0, 0, 0, 1, 1, 1, 1], msizes, args.iters)
    print_measured(local)
    if args.netns:
        print_netns(netns([4 * 1024 * 1024, 16 * 1024 * 1024], args.iters))


if __name__ == "__main__":
    main()
