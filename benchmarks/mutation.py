"""Mutation score of the modules whose correctness users rely on (mutmut 3, one module a run).

Each run copies the working tree into ``--workdir/<module>``, writes a ``[tool.mutmut]``
section that mutates that one module and selects only the test files named for it below (the
fast, direct tests: mutmut 3 then runs, for each mutant, the selected tests that call the
mutated function), runs ``mutmut run`` under ``nice -n 19`` with ``--max-children`` workers,
and prints killed / timeout / survived / no-test counts, the score (detected / mutants, where
detected = killed + timeout) and every survivor. It exits 1 when the score is under
``--target`` (90%), 2 when mutmut is missing.

Survivors that are equivalent mutants (same behaviour, e.g. ``dtype=None`` for the default
dtype) are named with their reason in the README's "Development" section; everything else is
meant to be killed by a test.

    python -m venv --system-site-packages .mut && .mut/bin/pip install mutmut
    nice -n 19 python benchmarks/mutation.py costmodels --mutmut .mut/bin/mutmut
    python benchmarks/mutation.py --list

Cost: about 0.5-1 s per mutant with 2 workers on 2 cores (the module sizes are in --list).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> (file to mutate, test files to run, mutant-name globs or None for the whole module)
MODULES: dict[str, tuple[str, list[str], list[str] | None]] = {
    "costmodels": ("plink/solvers/costmodels.py", ["tests/test_costmodels.py"], None),
    "contention": ("plink/solvers/contention.py", ["tests/test_contention.py"], None),
    "fluid": ("plink/solvers/fluid.py", ["tests/test_fluid.py"], None),
    "exact": ("plink/solvers/exact.py", ["tests/test_solvers_exact.py"], None),
    "bounds": ("plink/solvers/bounds.py", ["tests/test_solvers_exact.py"], None),
    "hostlist": ("plink/data/hostlist.py", ["tests/test_hostlist.py"], None),
    # the readers (JSON probe files, CSV matrices, host-name files) and the validation
    "probefile": ("plink/data/probefile.py", ["tests/test_probefile.py", "tests/test_fuzz_readers.py"],
                  ["plink.data.probefile.x_from_dict*", "plink.data.probefile.x__parse_matrix*",
                   "plink.data.probefile.x__parse_uplinks*", "plink.data.probefile.x_validate*",
                   "plink.data.probefile.x_load*", "plink.data.probefile.x__parse_cell*",
                   "plink.data.probefile.x__is_number*", "plink.data.probefile.x__is_value*",
                   "plink.data.probefile.x_csv_rows*", "plink.data.probefile.x_read_matrix_csv*",
                   "plink.data.probefile.x_from_matrix*",
                   "plink.data.probefile.xǁProbeDataǁ__post_init__*"]),
    "emitters": ("plink/launch/emitters.py", ["tests/test_emitters.py"], None),
    "watch": ("plink/watch.py", ["tests/test_watch_decide.py"],
              ["plink.watch.x_decide*", "plink.watch.x_should_reorder*", "plink.watch.x_relative_gain*"]),
    "dag": ("plink/schedule/dag.py", ["tests/test_schedule.py", "tests/test_schedule_cli.py"], None),
    "verify": ("plink/schedule/verify.py", ["tests/test_schedule.py", "tests/test_schedule_cli.py"], None),
    "timemodel": ("plink/schedule/timemodel.py", ["tests/test_schedule.py", "tests/test_schedule_cli.py"], None),
}

PYTEST_ARGS = ["-p", "no:cacheprovider", "-m", "not netns and not slow", "-q"]
DETECTED = ("killed", "timeout")


def _toml_list(xs) -> str:
    return "[" + ", ".join(f'"{x}"' for x in xs) + "]"


def mutmut_config(path: str, tests: list[str]) -> str:
    return (
        "[tool.mutmut]\n"
        'source_paths = ["plink"]\n'
        # tests/test_fuzz_readers.py loads benchmarks/fuzz_readers.py, which reads examples/stats16.json
        'also_copy = ["benchmarks", "examples"]\n'
        f"only_mutate = {_toml_list([path])}\n"
        f"pytest_add_cli_args = {_toml_list(PYTEST_ARGS)}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(tests)}\n"
    )


# ``plink/solvers`` and ``plink/probes`` are links to the top-level folders. mutmut names a mutant by its
# file's path, and tests import ``plink.solvers.*``: in the copy the folders move under ``plink/`` (the
# top-level names become the links), so the two names agree.
MOVED = ("solvers", "probes")


def copy_tree(dst: Path) -> None:
    """Copy the files git knows (tracked and untracked-not-ignored) as they are in the working tree."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for d in MOVED:
        if not os.path.lexists(dst / d):
            os.symlink(f"plink/{d}", dst / d)
    for f in filter(None, files):
        if f in (f"plink/{d}" for d in MOVED):
            continue
        src = ROOT / f
        out = dst / ("plink/" + f if f.split("/")[0] in MOVED else f)
        if not os.path.lexists(src):
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(out):
            out.unlink()
        if src.is_symlink():
            os.symlink(os.readlink(src), out)
        else:
            shutil.copy2(src, out)


def write_pyproject(dst: Path, path: str, tests: list[str]) -> None:
    text = (dst / "pyproject.toml").read_text()
    text = re.sub(r"(?ms)^\[tool\.mutmut\].*?(?=^\[|\Z)", "", text)
    (dst / "pyproject.toml").write_text(text.rstrip() + "\n\n" + mutmut_config(path, tests))


def parse_results(text: str) -> dict[str, str]:
    """``mutmut results --all true`` lines ``    name: status`` -> {name: status}."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\S+__mutmut_\d+): (.+)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module", nargs="?", choices=sorted(MODULES))
    ap.add_argument("--list", action="store_true", help="print the modules, files and tests, then exit")
    ap.add_argument("--mutmut", default=shutil.which("mutmut") or "mutmut", help="the mutmut command")
    ap.add_argument("--workdir", default="/tmp/plink-mutation", help="where the copies are made")
    ap.add_argument("--max-children", type=int, default=2)
    ap.add_argument("--keep", action="store_true",
                    help="re-use the previous run's results (mutmut re-runs only what changed)")
    ap.add_argument("--target", type=float, default=90.0, help="minimum score in percent")
    ap.add_argument("mutants", nargs="*", help="mutant names or globs (default: the module's)")
    args = ap.parse_args()
    if args.list or not args.module:
        for name, (path, tests, globs) in MODULES.items():
            print(f"{name:11s} {path:28s} {' '.join(tests)}" + (f"  only {' '.join(globs)}" if globs else ""))
        return 0
    if not shutil.which(args.mutmut):
        print(f"mutmut not found ({args.mutmut}); install it in a venv, see the docstring", file=sys.stderr)
        return 2
    path, tests, globs = MODULES[args.module]
    work = Path(args.workdir) / args.module
    if not args.keep and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    copy_tree(work)
    write_pyproject(work, path, tests)
    selected = args.mutants or globs or []
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cmd = ["nice", "-n", "19", args.mutmut, "run", "--max-children", str(args.max_children), *selected]
    subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL)
    res = subprocess.run(["nice", "-n", "19", args.mutmut, "results", "--all", "true"], cwd=work, env=env,
                         capture_output=True, text=True)
    status = parse_results(res.stdout)
    if globs:
        pat = re.compile("|".join(re.escape(g).replace(r"\*", ".*") for g in globs))
        status = {k: v for k, v in status.items() if pat.fullmatch(k)}
    counts: dict[str, int] = {}
    for s in status.values():
        counts[s] = counts.get(s, 0) + 1
    total = len(status)
    detected = sum(counts.get(s, 0) for s in DETECTED)
    score = 100.0 * detected / total if total else 0.0
    print(f"{args.module}: {path}, tests {' '.join(tests)}" + (f", only {' '.join(globs)}" if globs else ""))
    print("  " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"  score {detected}/{total} = {score:.1f}% (target {args.target:.0f}%)")
    for name, s in sorted(status.items()):
        if s not in DETECTED and s != "not checked":
            print(f"  {s}: {name}")
    return 0 if score >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
