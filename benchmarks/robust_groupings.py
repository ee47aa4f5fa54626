"""Choosing an order robustly over the plausible groupings of a latency probe: what ``plink
order``'s hedge (``solvers.hedge``) does, screened on the saved proof probes.

The latency alone cannot tell a rack of 2 from part of its neighbour: in proof case D seed 25 the
latency probe's groups put a rack of 2 with a rack of 5, and plink's recursive-doubling order,
cheap only if the 7 were one rack, measured 1.30x the best (README, "Proof against real
collectives").  The idea: besides the grouping plink finds, take as plausible each grouping with
one found group of 4 or more hosts split in two by average linkage of its latencies
(``plink.structure.probegroups.splits_in_two``); run plink's search under each
(``order_hosts(labels=...)``, the same seed and ``--max-iter``: deterministic), add the found
grouping's rack-contiguous order, and pick from these candidates

- ``found``: the search under the found grouping alone (``plink order --no-hedge``);
- ``minimax``: the least worst regret over the groupings (regret: an order's price under a
  grouping over the cheapest candidate's price under it); tried, not kept;
- ``plink``: what ``plink order`` returns (``order_hosts``, hedging by default): the least worst
  regret among the candidates priced within 2% (the model's resolution) of the cheapest under the
  found grouping, moving from ``found`` only for a worst regret lower by more than 2%
  (``solvers.hedge.hedged_pick``).

Each pick is judged by a proxy, as no new collective is timed: its price (the fluid model, as
``plink order`` reports) with the run's ``--bandwidth`` probe and the true racks, over the
cheapest of the run's measured orders by the same proxy.  How far the proxy can be trusted is
printed too: its Spearman over each run's measured orders, per collective.

For every saved proof run with both probes (``collectives_netns.saved_cases``: the runs under
``benchmarks/results`` made with the kernel's settings).  A line per run and algorithm where a
pick differs from ``found`` by more than 2%, then the tally.  About 1-4 minutes on 2 cores
(``--jobs 2``), deterministic (``--max-iter``), no root::

    python benchmarks/robust_groupings.py

``--time-limit 3 --seeds 3``: instead, ``plink order``'s pick against ``--no-hedge`` with
time-limited searches, as the proof runs make their orders (``--seed 0 --time-limit 3``), for
seeds 0-2: how much of a pick is search luck.  Not deterministic; about a minute per run file.
``--main-share F`` with it: the search under the groups found gets F of the time and the split
groupings' searches share the rest (``plink.order.HEDGE_MAIN_SHARE``, default plink's: 0.5);
``equal``: every search the same share.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.collectives_netns import load_saved, order_name, run_algos, saved_cases  # noqa: E402
from plink.data.probefile import from_dict  # noqa: E402
import plink.order  # noqa: E402
from plink.order import HEDGE_MAX_SPLITS, order_hosts  # noqa: E402
from plink.pricing import find_groups, network  # noqa: E402
from plink.solvers.contention import SharedCostModel  # noqa: E402
from plink.solvers.fluid import pricing_model  # noqa: E402
from plink.solvers.groupsearch import rack_contiguous  # noqa: E402
from plink.solvers.hedge import regrets  # noqa: E402
from plink.structure.probegroups import splits_in_two  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
PICKS = ("found", "minimax", "plink")
CHANGED = 0.02  #: a pick counts as better / worse than ``found`` beyond this (the model's resolution)


def price(probe, labels, algo: str, size: int):
    """What ``plink order`` prices ``algo``'s orders with, on ``probe`` with groups ``labels``."""
    return pricing_model(SharedCostModel(algo, network(probe, find_groups(probe, labels)), size, 2))


def picks(probe, algo: str, size: int, max_iter: int) -> tuple[dict[str, np.ndarray], int]:
    """``({pick: order}, number of split groupings)`` for ``probe``'s latencies (see module docstring)."""
    found = find_groups(probe).labels
    groupings = [found] + splits_in_two(probe.structure_latency, found, max_splits=HEDGE_MAX_SPLITS)
    cands = [np.asarray(order_hosts(probe, algo, size=size, seed=0, max_iter=max_iter, n_random=20,
                                    labels=lab).order) for lab in groupings]
    cands.append(rack_contiguous(found))
    prices = np.array([[float(p(o)) for o in cands] for p in (price(probe, lab, algo, size) for lab in groupings)])
    plink = order_hosts(probe, algo, size=size, seed=0, max_iter=max_iter, n_random=20)  # (hedges by default)
    return {"found": cands[0], "minimax": cands[int(np.argmin(regrets(prices)))],
            "plink": np.asarray(plink.order)}, len(groupings) - 1


def timed_picks(probe, algo: str, size: int, time_limit: float, seed: int) -> tuple[dict[str, np.ndarray], int]:
    """``picks`` as ``plink order`` makes them by default, time-limited (so not deterministic):
    ``found`` with ``--no-hedge`` and ``plink`` with it, each given ``time_limit`` seconds."""
    found = order_hosts(probe, algo, size=size, seed=seed, time_limit=time_limit, n_random=20, hedge=False)
    plink = order_hosts(probe, algo, size=size, seed=seed, time_limit=time_limit, n_random=20)
    return ({"found": np.asarray(found.order), "plink": np.asarray(plink.order)},
            int(plink.solver.get("hedge", {}).get("groupings", 0)))


def _main_share(share: str | None) -> None:
    """(A worker's initializer) the hedge's share of ``--time-limit`` for the search under the groups
    found: ``"equal"``, a number, or None for plink's own."""
    if share is not None:
        plink.order.HEDGE_MAIN_SHARE = None if share == "equal" else float(share)


def run_file(path: Path, max_iter: int, time_limit: float | None = None,
             seeds: int = 1) -> tuple[list[str], dict[str, list[float]], dict[str, float]] | None:
    """``(lines to print, {pick: its proxy price over found's, per search}, {collective: proxy's
    Spearman})`` for one proof data file, or None when it lacks a probe."""
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict) or not {"latency", "bandwidth"} <= set(doc.get("probes", {})):
        return None
    lat, bw = from_dict(doc["probes"]["latency"]), from_dict(doc["probes"]["bandwidth"])
    racks = np.asarray(doc["rack"])
    run = str(path.relative_to(RESULTS)) if path.is_relative_to(RESULTS) else str(path)
    lines, ratios, rho, seen = [], {p: [] for p in PICKS}, {}, set()
    for coll in doc["collectives"]:
        algo = run_algos(doc, coll)["default"]
        size = doc["size_bytes"] if coll.startswith("gloo") else doc["mpi_size_bytes"]
        proxy = price(bw, racks, algo, size)
        named = [n for n, o in doc["orders"].items() if coll in o["measured"]]
        pred = [float(proxy(np.asarray(doc["orders"][n]["order"]))) for n in named]
        rho[coll] = float(spearmanr(pred, [doc["orders"][n]["measured"][coll] for n in named])[0])
        if (algo, size) in seen or order_name(algo, "lat", "default") not in doc["orders"]:
            continue
        seen.add((algo, size))
        best = min(pred)
        for seed in range(seeds) if time_limit else [None]:
            chosen, splits = (picks(lat, algo, size, max_iter) if seed is None
                              else timed_picks(lat, algo, size, time_limit, seed))
            r = {p: float(proxy(o)) / best for p, o in chosen.items()}
            for p in r:
                ratios[p].append(r[p] / r["found"])
            if any(abs(r[p] / r["found"] - 1) > CHANGED for p in r):
                name = run if seed is None else f"{run} s{seed}"
                lines.append(f"{name:<34} {algo:<8} {splits:>6} " + " ".join(
                    f"{r[p]:>8.3f}" if p in r else f"{'-':>8}" for p in PICKS))
    return lines, ratios, rho


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="proof data files (default: every saved one)")
    ap.add_argument("--max-iter", type=int, default=1000, help="annealing iterations per search (default 1000)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="instead: time-limited searches as plink order makes them, SECONDS each, plink's pick "
                         "against --no-hedge only (not deterministic)")
    ap.add_argument("--seeds", type=int, default=3, help="with --time-limit: searches per run and algorithm, "
                                                         "seeds 0.. (default 3)")
    ap.add_argument("--main-share", default=None,
                    help="with --time-limit: the share of it the search under the groups found gets, the split "
                         "groupings' searches sharing the rest, or 'equal' (default: plink's, "
                         f"{plink.order.HEDGE_MAIN_SHARE})")
    ap.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    args = ap.parse_args(argv)
    if args.max_iter < 1:
        ap.error("--max-iter must be >= 1")
    if args.time_limit is not None and not (0 < args.time_limit <= 600) or args.seeds < 1:
        ap.error("--time-limit must be in (0, 600] seconds and --seeds >= 1")
    if args.main_share is not None:
        try:
            ok = args.main_share == "equal" or 0 < float(args.main_share) < 1
        except ValueError:
            ok = False
        if not ok or args.time_limit is None:
            ap.error("--main-share must be 'equal' or in (0, 1), with --time-limit")
    files = [Path(f).resolve() for f in args.files] or saved_cases(RESULTS)
    for f in files:
        load_saved(ap, f)  # (a missing or broken file: a usage error before any work)
    ratios = {p: [] for p in PICKS}
    rho: dict[str, list[float]] = {}
    print(f"{'run':<34} {'algo':<8} {'splits':>6} " + " ".join(f"{p:>8}" for p in PICKS)
          + "   (proxy price / the best measured order's)")
    with ProcessPoolExecutor(max(1, args.jobs), initializer=_main_share, initargs=(args.main_share,)) as pool:
        for got in pool.map(run_file, files, [args.max_iter] * len(files), [args.time_limit] * len(files),
                            [args.seeds] * len(files)):
            if got is None:
                continue
            lines, r, rh = got
            for line in lines:
                print(line, flush=True)
            for p in PICKS:
                ratios[p] += r[p]
            for coll, v in rh.items():
                rho.setdefault(coll, []).append(v)
    print("\nproxy's Spearman over each run's measured orders (median, min-max over runs):")
    for coll, v in rho.items():
        print(f"  {coll:<24} {np.median(v):.2f} ({min(v):.2f}-{max(v):.2f}), {len(v)} runs")
    n = len(ratios["found"])
    print(f"\nagainst 'found' over {n} searches (proxy price ratio):")
    for p in PICKS[1:]:
        if not ratios[p]:
            continue
        v = np.array(ratios[p])
        print(f"  {p:<8} better by > {CHANGED:.0%}: {int((v < 1 - CHANGED).sum()):>3}   worse by > {CHANGED:.0%}: "
              f"{int((v > 1 + CHANGED).sum()):>3}   geo mean {np.exp(np.log(v).mean()):.3f}   "
              f"range {v.min():.3f}-{v.max():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
