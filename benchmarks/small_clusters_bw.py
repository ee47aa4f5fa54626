"""Groups and ring orders of ``--bandwidth`` probes of small netns clusters, against the true racks.

Reads folders of the layout of ``benchmarks/structure_netns.py`` (``truth.json`` + ``pN.json``;
default ``benchmarks/results/2026-12-03-small-clusters-bw``) and prints, per probe: the true rack
sizes, the AMI of :func:`plink.pricing.find_groups` (what ``plink order`` prices) with the pair
bandwidths and with ``use_bandwidth=False``, the AMI of average linkage of the latency given the
true K, and the rack crossings of ``plink order pN.json --algo ring`` (the racks-in-a-row order
crosses K times; on the emulated Gloo ring every uplink direction shared by one more ring flow cost
~0.62 s of a 16 MB all-reduce, ``/work/shared/notes/testbed.md``).  The orders are kept in
``orders.json`` beside the probes; ``--reorder`` runs ``plink order`` again (~5-10 s a probe),
otherwise the kept ones are read.  ``--diagnose`` prints, for every probe whose bandwidth groups
are not the racks, what led there: the latency's and the bandwidth's own groups, the cross-rack
pairs the bandwidth measured near (inverse bandwidth under ``FAR_RATIO`` times the in-rack median)
and the round they ran in, and the uplink test's sums per group::

    python benchmarks/small_clusters_bw.py [--diagnose] [--reorder] [DIR ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.structure import linkage_labels, raw_symmetric  # noqa: E402
from benchmarks.structure_netns import crossings, folders  # noqa: E402
from plink.data.probefile import load_json  # noqa: E402
from plink.pricing import find_groups  # noqa: E402
from plink.structure.metrics import ami  # noqa: E402
from plink.structure.probegroups import FAR_RATIO, _group, inverse, placed_hosts, slowness  # noqa: E402

SAVED = ROOT / "benchmarks" / "results" / "2026-12-03-small-clusters-bw"


def probes(folder: Path) -> list[Path]:
    return sorted(folder.glob("p*.json"), key=lambda f: int(f.stem[1:]) if f.stem[1:].isdigit() else 0)


def ring_order(path: Path) -> list[str]:
    """The hosts in the order ``plink order PATH --algo ring`` gives (its JSON report's ``hosts``)."""
    r = subprocess.run([sys.executable, "-m", "plink", "order", str(path), "--algo", "ring", "--json"],
                       capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"plink order {path}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    return list(json.loads(r.stdout)["hosts"])


def shape(truth: dict) -> str:
    return "+".join(str(v) for v in np.bincount(list(truth.values())))


def groups_str(labels, names=None) -> str:
    """``{0,1,2}{3,4}``: the groups as sets of host indices."""
    labels = np.asarray(labels)
    return "".join("{" + ",".join(str(i) for i in np.flatnonzero(labels == g)) + "}" for g in
                   sorted(np.unique(labels), key=lambda g: np.flatnonzero(labels == g)[0]))


def diagnose(probe, t: np.ndarray) -> list[str]:
    """Lines on why ``find_groups`` with bandwidth gave what it gave."""
    out = []
    lat = np.asarray(probe.structure_latency, dtype=float)
    lat = np.fmin(lat, lat.T)
    inv = inverse(probe.bandwidth)
    n = probe.n
    glat = _group(lat, placed_hosts(lat), 0)
    gbw = _group(inv, placed_hosts(inv), 0)
    out.append(f"truth {groups_str(t)}; latency's groups {groups_str(glat)}; bandwidth's {groups_str(gbw)}")
    off = ~np.eye(n, dtype=bool)
    same = (t[:, None] == t[None, :]) & off
    level = float(np.median(inv[same & np.isfinite(inv)]))
    rounds = {}
    for s in probe.meta.get("schedule") or []:
        for a, b in s.get("bandwidth_pairs") or []:
            rounds[(min(a, b), max(a, b))] = (s["round"], s["bandwidth_pairs"])
    cross_near, cross_far, in_ratio = [], [], []
    for i in range(n):
        for j in range(i + 1, n):
            r = inv[i, j] / level
            if t[i] == t[j]:
                in_ratio.append(r)
                continue
            rnd, pairs = rounds.get((i, j), (None, []))
            # other cross-rack pairs of the round that leave by rack t[i]'s or t[j]'s uplink
            sharing = [(a, b) for a, b in pairs if (a, b) != (i, j) and t[a] != t[b]
                       and ({t[a], t[b]} & {t[i], t[j]})]
            (cross_near if r < FAR_RATIO else cross_far).append((i, j, r, rnd, sharing))
    out.append(f"in-rack inverse bandwidth / in-rack median: {min(in_ratio):.2f}-{max(in_ratio):.2f}; "
               f"cross-rack pairs: {len(cross_near)} of {len(cross_near) + len(cross_far)} under {FAR_RATIO}x "
               f"(far ones {min((c[2] for c in cross_far), default=np.nan):.2f}x and up)")
    for i, j, r, rnd, sharing in cross_near:
        out.append(f"  near cross-rack pair ({i},{j}) racks {t[i]}-{t[j]}: {r:.2f}x, "
                   f"{probe.bandwidth[i, j]:.3f}/{probe.bandwidth[j, i]:.3f} Gbit/s, round {rnd}, "
                   f"other cross-rack pairs on its racks' uplinks that round: {sharing or 'none'}")
    nic = np.nanmax(np.where(off, probe.bandwidth, np.nan))
    for u in probe.uplinks or []:
        hosts = sorted(int(h) for h in u.hosts)
        racks = sorted(set(t[hosts].tolist()))
        whole = sorted(np.flatnonzero(np.isin(t, racks)).tolist()) == hosts
        kind = "a rack" if whole and len(racks) == 1 else ("racks " + "+".join(map(str, racks))
                                                           + ("" if whole else " (parts)"))
        out.append(f"  uplink test {{{','.join(map(str, hosts))}}} ({kind}): up {u.up_bps * 8e-6:.0f} / down "
                   f"{u.down_bps * 8e-6:.0f} Mbit/s (passes up "
                   f"{', '.join(f'{v * 8e-6:.0f}' for v in u.extra.get('passes_up_bps', [u.up_bps]))}); "
                   f"fastest pair {nic * 1e3:.0f} Mbit/s")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--reorder", action="store_true", help="run plink order again (else read orders.json)")
    ap.add_argument("--diagnose", action="store_true", help="explain the probes grouped wrong with bandwidth")
    a = ap.parse_args(argv)
    rows = []
    print(f"{'probe':24s} {'racks':8s} {'AMI bw':>6s} {'no bw':>6s} {'avg|K':>6s} {'ring crossings':>14s}")
    for d in folders(a.dirs or [SAVED]):
        truth = json.loads((d / "truth.json").read_text())
        kept = d / "orders.json"
        orders = json.loads(kept.read_text()) if kept.is_file() and not a.reorder else {}
        for f in probes(d):
            probe = load_json(f)
            t = np.array([truth[h] for h in probe.names])
            k = len(set(t.tolist()))
            gb, gl = find_groups(probe), find_groups(probe, use_bandwidth=False)
            avg = linkage_labels(raw_symmetric(np.asarray(probe.structure_latency, dtype=float)), k, "average")
            if f.name not in orders:
                orders[f.name] = ring_order(f)
            cx = crossings(orders[f.name], truth)
            same = (t[:, None] == t[None, :]) & ~np.eye(len(t), dtype=bool)
            row = {"probe": f"{d.name}/{f.name}", "racks": shape(truth), "k": k, "bw": float(ami(t, gb.labels)),
                   "lat": float(ami(t, gl.labels)), "avg": float(ami(t, avg)), "cross": cx,
                   "in_rack": float(np.nanmax(slowness(inverse(probe.bandwidth))[same]))}
            rows.append(row)
            print(f"{row['probe']:24s} {row['racks']:8s} {row['bw']:6.3f} {row['lat']:6.3f} {row['avg']:6.3f} "
                  f"{cx:6d} (K={k})" + ("" if gb.labels.max() + 1 == k and row["bw"] > 0.999
                                       else f"  bw groups {groups_str(gb.labels)}"))
            if a.diagnose and row["bw"] < 0.999 and probe.bandwidth is not None:
                print("\n".join("    " + s for s in diagnose(probe, t)))
        if a.reorder or not kept.is_file():
            kept.write_text(json.dumps(orders, indent=1) + "\n")
    if not rows:
        print("no probes found")
        return 1
    print()
    for racks in sorted({r["racks"] for r in rows}) + ["all"]:
        sel = [r for r in rows if racks in ("all", r["racks"])]
        n = len(sel)
        print(f"{racks:8s} {n:3d} probes: exact with bw {sum(r['bw'] > 0.999 for r in sel)}, without "
              f"{sum(r['lat'] > 0.999 for r in sel)}, average|K {sum(r['avg'] > 0.999 for r in sel)}; "
              f"ring orders crossing more than K times: {sum(r['cross'] > r['k'] for r in sel)} "
              f"(extra crossings {sum(max(r['cross'] - r['k'], 0) for r in sel)})")
    print(f"in-rack pairs read at most {max(r['in_rack'] for r in rows):.3f}x what both their hosts carry "
          f"(probegroups.slowness; split_slow_pairs takes {FAR_RATIO}x as slow)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
