"""The groups plink finds from a ``--bandwidth`` probe, against the true racks, on the saved proof runs.

For every saved run of ``benchmarks/collectives_netns.py`` (its ``--bandwidth`` probe and the
true racks), prints the AMI of: the latency's grouping alone, the inverse bandwidth's alone, the
two earlier rules for choosing between them (the finer of nested groupings, else the higher
silhouette on its own matrix, until 2026-11-29; else the higher sum of silhouettes on both
matrices, until this rule) and plink's rule (``plink.structure.probegroups``: the latency's
groups, split where the bandwidth's grouping splits them and measured the parts far apart),
and, given the true number of racks K (``plink group --groups K``), the latencies alone cut into
K (what it did until 2026-12-01) and plink's (:func:`plink.structure.probegroups.cut_with_bandwidth`).
Then what the rule rests on, from the true racks: the in-rack pairs' inverse bandwidth over
their median (largest), and the share of cross-rack pairs under ``FAR_RATIO`` times it (pairs
alone on their uplinks read the full rate).

In every saved run the latency alone finds the true racks, so the saved runs cannot tell the
rules apart. ``--simulate S`` also draws S clusters per scenario with a probe's two matrices
made the way the netns cluster makes them (:func:`simulated_probe`): 3-6 racks of 2-7 hosts
in random order, the pair bandwidths of the circle-method rounds measured at the same time
through shared rack uplinks, latency with in-rack 30-40 us and cross-rack 55-90 us; "quiet",
"busy" (a third of the hosts add 0-40 us to every pair of theirs) and "flat" (the latency
shows no racks: every pair 40-80 us). ``--noisy-pairs F`` slows a share F of all pairs, in-rack
ones too, as transients would; the column "plink, no re-deal" is plink's rule without its last
step (:func:`plink.structure.probegroups.split_slow_pairs`), and a line counts the clusters that
step makes better and worse. Deterministic, minutes, no root::

    python benchmarks/probe_groups.py --simulate 100
    python benchmarks/probe_groups.py --simulate 60 --noisy-pairs 0.03
    python benchmarks/probe_groups.py --simulate 100 --noisy-in-rack 2 [--small]
    python benchmarks/probe_groups.py benchmarks/results/2026-11-29-D-seed13/D.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.collectives_netns import saved_cases  # noqa: E402
from plink.data.probefile import Host, ProbeData, from_dict  # noqa: E402
from plink.probes.rounds import round_robin  # noqa: E402
from plink.structure.hierarchy import HierarchicalGrouper, infer_groups  # noqa: E402
from plink.structure.metrics import ami, refines, separation  # noqa: E402
from plink.structure.probegroups import (FAR_RATIO, _group, infer_probe_groups, inverse,  # noqa: E402
                                        joins_of_two, placed_hosts, split_by_far_pairs, split_far_halves)


def _older(lat_lab, lat, bw_lab, inv, both: bool):
    """The earlier rules: the finer of nested groupings, else the higher silhouette on its own
    matrix (``both=False``) or summed over both matrices (``both=True``)."""
    if refines(lat_lab, bw_lab) != refines(bw_lab, lat_lab):
        return lat_lab if refines(lat_lab, bw_lab) else bw_lab
    if refines(lat_lab, bw_lab):
        return lat_lab
    if both:
        s_lat = separation(lat, lat_lab) + separation(inv, lat_lab)
        s_bw = separation(lat, bw_lab) + separation(inv, bw_lab)
    else:
        s_lat, s_bw = separation(lat, lat_lab), separation(inv, bw_lab)
    return bw_lab if s_bw > s_lat + 1e-12 else lat_lab


def simulated_probe(seed: int, scenario: str, noisy: float = 0.0, noisy_in_rack: int = 0,
                    small: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(racks, latency_us, bandwidth)`` of a drawn cluster (see the module docstring).

    Bandwidth: NIC rate 1; each rack's uplink carries 1-2 NIC rates each way; in every round of
    :func:`plink.probes.rounds.round_robin` each pair exchanges both ways at once, a cross-rack
    pair at ``min(1, uplink / cross-rack flows of its rack)`` over its two racks, +-2% noise.
    With ``noisy``, that share of the pairs (in-rack ones too) reads 0.40-0.75x its rate in one
    direction, as a transient would make it (drawn apart, so the cluster is the same); with
    ``noisy_in_rack``, that many in-rack pairs do. ``small``: 2-4 racks of 2-5 hosts whose
    uplinks carry one NIC rate (a user's first few VMs)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 6, rng.integers(2, 5)) if small else rng.integers(2, 8, rng.integers(3, 7))
    racks = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    n = len(racks)
    cap = np.ones(len(sizes)) if small else rng.uniform(1.0, 2.0, len(sizes))
    bw = np.full((n, n), np.nan)
    for rnd in round_robin(n):
        flows = np.zeros(len(sizes))
        for a, b in rnd:
            if racks[a] != racks[b]:
                flows[racks[a]] += 1
                flows[racks[b]] += 1
        for a, b in rnd:
            rate = 1.0 if racks[a] == racks[b] else min(1.0, cap[racks[a]] / flows[racks[a]],
                                                         cap[racks[b]] / flows[racks[b]])
            bw[a, b], bw[b, a] = rate * rng.normal(1, 0.02), rate * rng.normal(1, 0.02)
    same = racks[:, None] == racks[None, :]
    if scenario == "flat":
        lat = rng.uniform(40, 80, (n, n))
    else:
        lat = np.where(same, rng.uniform(30, 40, (n, n)), rng.uniform(55, 90, (n, n)))
        if scenario == "busy":
            extra = np.where(rng.random(n) < 1 / 3, rng.uniform(0, 40, n), 0.0)
            lat = lat + extra[:, None] + extra[None, :]
    np.fill_diagonal(lat, 0.0)
    if noisy:
        rng = np.random.default_rng(1000 + seed)
        hit = np.triu(rng.random((n, n)) < noisy, 1)
        bw = np.where(hit, bw * rng.uniform(0.4, 0.75, (n, n)), bw)
    if noisy_in_rack:
        rng = np.random.default_rng(2000 + seed)
        pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if racks[a] == racks[b]]
        for k in rng.choice(len(pairs), min(noisy_in_rack, len(pairs)), replace=False):
            a, b = pairs[k]
            bw[a, b] *= rng.uniform(0.4, 0.75)
    return racks, lat, bw


def _forced(racks, lat_raw, bw_raw) -> tuple[float, float]:
    """AMI against ``racks`` of ``plink group --groups K`` with the true K: the latencies alone cut
    into K (what it did before 2026-12-01), and what it does now (the bandwidths used)."""
    k = int(np.max(racks)) + 1
    probe = ProbeData(hosts=[Host(f"h{i}") for i in range(len(racks))], latency=lat_raw, bandwidth=bw_raw)
    return (ami(racks, HierarchicalGrouper(k).fit(probe).labels_),
            ami(racks, infer_groups(probe, n_groups=k).labels))


def _rules(racks, lat_raw, bw_raw) -> dict:
    """AMI of each grouping (the columns) of one probe's two matrices against ``racks``."""
    lat = np.fmin(lat_raw, lat_raw.T)
    inv = inverse(bw_raw)
    lat_lab = _group(lat, placed_hosts(lat), 0)
    bw_lab = _group(inv, placed_hosts(inv), 0)
    lab, _, source = infer_probe_groups(lat_raw, bw_raw)
    undealt = split_far_halves(split_by_far_pairs(lat_lab, bw_lab, inv), inv)  # plink's, but for split_slow_pairs
    undealt = undealt if undealt.max() > lat_lab.max() else lat_lab
    k_lat, k_plink = _forced(racks, lat_raw, bw_raw)
    return {"latency": ami(racks, lat_lab), "bandwidth": ami(racks, bw_lab),
            "own silhouette": ami(racks, _older(lat_lab, lat, bw_lab, inv, False)),
            "sum of silhouettes": ami(racks, _older(lat_lab, lat, bw_lab, inv, True)),
            "plink": ami(racks, lab), "plink, no re-deal": ami(racks, undealt), "K given: latency": k_lat, "K given: plink": k_plink, "source": source,
            "found": f"{lat_lab.max() + 1} / {bw_lab.max() + 1} / {lab.max() + 1}",
            "joins": len(joins_of_two(lab, inv))}


def row(path: Path) -> dict | None:
    """The figures of one saved run, or None when it has no ``--bandwidth`` probe."""
    doc = json.loads(path.read_text())
    if "bandwidth" not in doc.get("probes", {}):
        return None
    pd = from_dict(doc["probes"]["bandwidth"])
    racks = np.array([doc["rack"][doc["hosts"].index(h.name)] for h in pd.hosts])
    inv = inverse(pd.bandwidth)
    off = ~np.eye(len(racks), dtype=bool)
    same = (racks[:, None] == racks[None, :]) & off
    level = np.nanmedian(inv[same])
    cross = inv[~same & off]
    return {"run": f"{path.parent.name}/{path.name}", "n": len(racks), "k": int(racks.max()) + 1,
            **_rules(racks, pd.structure_latency, pd.bandwidth),
            "in-rack max": float(np.nanmax(inv[same]) / level),
            "cross under": float(np.mean(cross[np.isfinite(cross)] < FAR_RATIO * level))}


COLUMNS = ["latency", "bandwidth", "own silhouette", "sum of silhouettes", "plink", "plink, no re-deal",
           "K given: latency",
           "K given: plink"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path,
                    help="saved runs (default: every proof run under benchmarks/results made with the kernel's settings)")
    ap.add_argument("--simulate", type=int, default=0, metavar="S",
                    help="also S simulated clusters per scenario (seeds 0..S-1)")
    ap.add_argument("--noisy-pairs", type=float, default=0.0, metavar="F",
                    help="in the simulated clusters, a share F of the pairs read 0.40-0.75x their rate")
    ap.add_argument("--noisy-in-rack", type=int, default=0, metavar="K",
                    help="in the simulated clusters, K in-rack pairs read 0.40-0.75x their rate")
    ap.add_argument("--small", action="store_true",
                    help="simulated clusters of 2-4 racks of 2-5 hosts, uplinks of one NIC rate")
    a = ap.parse_args(argv)
    if a.simulate < 0:
        ap.error("--simulate must be >= 0")
    if not 0 <= a.noisy_pairs <= 1:
        ap.error("--noisy-pairs must be in [0, 1]")
    if a.noisy_in_rack < 0:
        ap.error("--noisy-in-rack must be >= 0")
    files = a.files or saved_cases(ROOT / "benchmarks" / "results")
    for f in files:
        if not f.is_file():
            ap.error(f"{f}: no such file")
    rows = [r for r in (row(f) for f in files) if r is not None]
    if not rows:
        print("no saved run with a --bandwidth probe", file=sys.stderr)
        return 1
    print("AMI against the true racks of the groups of each run's --bandwidth probe")
    print("| run | N | racks | " + " | ".join(COLUMNS) + " | groups found: latency / bandwidth / plink | plink's groups | in-rack max / median "
          f"| cross-rack under {FAR_RATIO}x |")
    print("|---" * (len(COLUMNS) + 7) + "|")
    for r in rows:
        print(f"| {r['run']} | {r['n']} | {r['k']} | " + " | ".join(f"{r[c]:.3f}" for c in COLUMNS)
              + f" | {r['found']} | {r['source']} | {r['in-rack max']:.2f} | {r['cross under']:.0%} |")
    print(f"\n{len(rows)} runs; AMI 1.000 (the true racks) in: "
          + ", ".join(f"{c} {sum(r[c] > 1 - 1e-9 for r in rows)}" for c in COLUMNS))
    print(f"runs whose groups plink order hedges over two joined (joins_of_two): {sum(r['joins'] > 0 for r in rows)}")
    print(f"in-rack pairs read at most {max(r['in-rack max'] for r in rows):.2f}x their median inverse "
          f"bandwidth; cross-rack pairs under {FAR_RATIO}x of it: "
          f"{min(r['cross under'] for r in rows):.0%}-{max(r['cross under'] for r in rows):.0%} per run")
    if a.simulate:
        print(f"\nsimulated ({a.simulate} seeds per scenario"
              + (f", {a.noisy_pairs:.0%} of the pairs read slow" if a.noisy_pairs else "")
              + (f", {a.noisy_in_rack} in-rack pairs read slow" if a.noisy_in_rack else "")
              + (", small clusters" if a.small else "")
              + "): mean AMI [true racks found] (worst), per grouping")
        print("| scenario | " + " | ".join(COLUMNS) + " |")
        print("|---" * (len(COLUMNS) + 1) + "|")
        redeal = {}
        for scenario in ("quiet", "busy", "flat"):
            got = [_rules(*simulated_probe(seed, scenario, a.noisy_pairs, a.noisy_in_rack, a.small))
                   for seed in range(a.simulate)]
            print(f"| {scenario} | " + " | ".join(
                f"{np.mean([g[c] for g in got]):.3f} [{sum(g[c] > 1 - 1e-9 for g in got)}] "
                f"({min(g[c] for g in got):.2f})" for c in COLUMNS) + " |")
            redeal[scenario] = (sum(g["plink"] > g["plink, no re-deal"] + 1e-9 for g in got),
                                sum(g["plink"] < g["plink, no re-deal"] - 1e-9 for g in got))
        print("split_slow_pairs (plink against 'plink, no re-deal'), clusters better / worse: "
              + ", ".join(f"{k} {b} / {w}" for k, (b, w) in redeal.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
