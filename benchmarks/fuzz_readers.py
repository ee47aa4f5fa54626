"""Fuzz every plink reader with malformed inputs: no internal error, no hang, no damaged output.

Each case writes one malformed file (mutated from a valid seed, or one of the known nasty
classes: Infinity / 1e308 / huge integers, deep JSON nesting, CSV cells over 128 KiB, lone
surrogates and control characters in names, ``host:²``, huge .npy shapes, wrong field types
in state.json, stats endpoints of the wrong type, Slurm ranges that expand to millions) and
runs the plink command that reads it, in this process (``plink.cli.main``).  A case fails when

* the command ends in ``plink: internal error`` or a traceback, or an exit code other than
  0, 1, 2, 3 (a clear one-line error is exit 1 or 2);
* it runs longer than ``--timeout`` seconds (a hang);
* it exits 0 but the order / launcher file it wrote is damaged: a host line that is not one
  of the input's hosts, a control character, or not one line per host.

Seeded: ``python benchmarks/fuzz_readers.py --cases 2000 --seed 0`` prints the counts per
reader and exits 1 unless all three failure counts are 0.  ``tests/test_fuzz_readers.py``
runs a small slice of the same generator.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

NASTY_NUMBERS = ["Infinity", "-Infinity", "NaN", "1e308", "1e309", "-1e308", "1" + "0" * 400, "-0", "1e-320",
                 "-5", "0", "True", "\"12\"", "[]", "{}", "null"]
NASTY_NAMES = ["a\nb", "a b", "a\tb", "\x00", "\x1b[31mred", "\ud800", "host:\u00b2", "\u00b2", "", " ", "h0\r",
               "x" * 5000, "node[0-99999999]", "[::1", "a@b@c", "héllo", "\u202eevil", "h0", "h1"]
READERS = ("probe-json", "csv", "npy", "hostlist", "groups", "order", "schedule", "stats", "state")


class Hang(Exception):
    pass


def _alarm(_sig, _frm):
    raise Hang()


# ---------------------------------------------------------------------------
# seeds


def make_seeds(d: Path) -> dict[str, Path]:
    """Valid files of every kind, for 8 hosts (16 for stats/schedule), in ``d``."""
    from plink.data.simulate import simulate_datacenter
    from plink.schedule.dag import Schedule
    from plink.schedule.plan import plan_schedule

    probe = simulate_datacenter(racks=2, hosts_per_rack=4, seed=1, bandwidth=True)
    seeds = {"probe-json": d / "seed.json"}
    probe.save(seeds["probe-json"])
    lat = probe.latency
    names = probe.names
    csv = "," + ",".join(names) + "\n" + "".join(
        n + "," + ",".join(f"{v:.3f}" for v in row) + "\n" for n, row in zip(names, lat))
    seeds["csv"] = d / "seed.csv"
    seeds["csv"].write_text(csv)
    seeds["npy"] = d / "seed.npy"
    np.save(seeds["npy"], lat)
    seeds["hostlist"] = d / "seed.hosts"
    seeds["hostlist"].write_text("".join(f"{n}\n" for n in names))
    seeds["plain-csv"] = d / "plain.csv"
    seeds["plain-csv"].write_text("".join(",".join(f"{v:.3f}" for v in row) + "\n" for row in lat))
    labels = [int(h.name[-1]) % 2 for h in probe.hosts]
    seeds["groups"] = d / "seed.groups.json"
    seeds["groups"].write_text(json.dumps({
        "format": "plink-groups", "version": 1, "hosts": names, "labels": labels, "k": 2,
        "coordinates": [[0.0, 1.0]] * 8, "heights": [1.0] * 8, "params": {}, "metrics": {}}))
    seeds["order"] = d / "seed.order.json"
    seeds["order"].write_text(json.dumps({"format": "plink-order", "version": 1, "algo": "ring",
                                          "hosts": [{"rank": i, "name": n, "address": f"10.0.0.{i + 1}"} for i, n in enumerate(names)]}))
    stats = json.loads(Path(__file__).resolve().parents[1].joinpath("examples/stats16.json").read_text())
    seeds["stats"] = d / "seed.stats.json"
    seeds["stats"].write_text(json.dumps(stats))
    from plink.data.probefile import from_matrix

    rng = np.random.default_rng(0)
    n16 = len(stats["hosts"])
    m = rng.uniform(10, 100, (n16, n16))
    p16 = from_matrix((m + m.T) / 2, stats["hosts"])
    plan = plan_schedule(p16, np.arange(n16) % 4, size=1 << 20, chunk=1 << 16)
    seeds["schedule"] = d / "seed.sched.json"
    Schedule.from_plan(plan, 1 << 16).save(seeds["schedule"], "compact")
    seeds["state"] = d / "state.json"
    seeds["state"].write_text(json.dumps({"format": "plink-watch", "version": 1, "order": names,
                                          "algo": "ring", "cost_us": 10.0, "runs": 1}))
    return seeds


# ---------------------------------------------------------------------------
# mutations


def _mutate_json_value(doc, rng: random.Random):
    """Replace one random node of a parsed JSON document with a nasty value."""
    nodes = []

    def walk(x, parent, key, depth):
        nodes.append((parent, key))
        if depth > 6:
            return
        if isinstance(x, dict):
            for k, v in list(x.items())[:30]:
                walk(v, x, k, depth + 1)
        elif isinstance(x, list):
            for i, v in enumerate(x[:30]):
                walk(v, x, i, depth + 1)

    walk(doc, None, None, 0)
    parent, key = rng.choice(nodes[1:] or nodes)
    choices = [None, True, 1.5, -1, 10 ** 400, float("inf"), float("nan"), 1e308, "x", "\ud800", "a\nb", [], {},
               [[]], {"a": 1}, "Infinity", rng.choice(NASTY_NAMES), [1, 2, 3], 0]
    value = rng.choice(choices)
    if parent is None:
        return value
    if isinstance(parent, dict) and rng.random() < 0.2:
        del parent[key]
    else:
        parent[key] = value
    return doc


def _dump(doc) -> str:
    try:
        return json.dumps(doc, allow_nan=True)
    except (ValueError, OverflowError):
        return json.dumps(str(doc))


def _bytes_mutation(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    kind = rng.randrange(6)
    if kind == 0 and b:  # truncate
        return bytes(b[: rng.randrange(len(b))])
    if kind == 1 and b:  # flip bytes
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 2:  # insert a nasty token
        tok = rng.choice(NASTY_NUMBERS + NASTY_NAMES).encode("utf-8", "surrogatepass")
        pos = rng.randrange(len(b) + 1)
        return bytes(b[:pos] + tok + b[pos:])
    if kind == 3 and b:  # duplicate a slice
        i = rng.randrange(len(b))
        j = min(len(b), i + rng.randint(1, 200))
        return bytes(b[:j] + b[i:j] + b[j:])
    if kind == 4:  # delete a slice
        if not b:
            return bytes(b)
        i = rng.randrange(len(b))
        return bytes(b[:i] + b[i + rng.randint(1, 50):])
    return bytes(b) + rng.choice([b"\n", b",", b"\x00", b"]", b"}", b"\xff\xfe"])


def _special(reader: str, seed_text: str, rng: random.Random) -> bytes | None:
    """One of the named classes of the issue, for this reader (None: no special case drawn)."""
    r = rng.random()
    if r > 0.35:
        return None
    if reader in ("probe-json", "groups", "order", "schedule", "stats", "state"):
        c = rng.randrange(4)
        if c == 0:
            depth = rng.choice([500, 5000, 100000])
            return ("[" * depth + "]" * depth).encode()
        if c == 1:
            return seed_text.replace("10.", "1" + "0" * rng.choice([20, 400, 5000]) + ".", 1).encode()
        if c == 2:
            return seed_text.replace(".", "e308*", 1).replace("e308*", "e308", 1).encode()
        doc = json.loads(seed_text)
        return _dump(_mutate_json_value(doc, rng)).encode("utf-8", "surrogatepass")
    if reader == "csv":
        c = rng.randrange(4)
        lines = seed_text.splitlines()
        if c == 0:  # a cell over 128 KiB
            return (lines[0] + "\n" + lines[1].replace(",", "," + "9" * 140000, 1) + "\n" + "\n".join(lines[2:])).encode()
        if c == 1:
            tok = rng.choice(["Infinity", "1e308", "1e309", "-1", "1" + "0" * 400, "nan", "1e-320"])
            row = rng.randrange(1, len(lines))
            cells = lines[row].split(",")
            cells[rng.randrange(1, len(cells))] = tok
            lines[row] = ",".join(cells)
            return "\n".join(lines).encode()
        if c == 2:  # a name with a control character / surrogate
            name = rng.choice(NASTY_NAMES)
            return seed_text.replace("h", name, 1).encode("utf-8", "surrogatepass")
        return (seed_text * rng.randint(2, 3)).encode()
    if reader == "hostlist":
        c = rng.randrange(4)
        if c == 0:
            return "\n".join(f"n{i}[0-99999]" for i in range(30)).encode()
        if c == 1:
            return ("node[" + ",".join(f"{i}-{i + 9999}" for i in range(0, 10 ** 6, 10000)) + "]\n").encode()
        if c == 2:
            return ("host:\u00b2\n" + seed_text).encode()
        return (seed_text + rng.choice(NASTY_NAMES) + "\n").encode("utf-8", "surrogatepass")
    if reader == "npy":
        c = rng.randrange(3)
        buf = io.BytesIO()
        if c == 0:  # a header announcing a huge shape
            np.save(buf, np.zeros((2, 2)))
            data = buf.getvalue().replace(b"(2, 2)", b"(99999999, 99999999)".ljust(6)[:len(b"(99999999, 99999999)")])
            return data
        if c == 1:
            np.save(buf, np.array([[0, np.inf], [np.inf, 0]]))
            return buf.getvalue()
        np.save(buf, np.array(["a", "b"]))
        return buf.getvalue()
    return None


def make_case(reader: str, seeds: dict[str, Path], rng: random.Random) -> bytes:
    seed = seeds[reader].read_bytes()
    special = _special(reader, seed.decode("latin-1") if reader == "npy" else seed.decode(), rng)
    if special is not None:
        return special
    if reader not in ("npy", "hostlist", "csv") and rng.random() < 0.5:
        doc = json.loads(seed)
        return _dump(_mutate_json_value(doc, rng)).encode("utf-8", "surrogatepass")
    return _bytes_mutation(seed, rng)


# ---------------------------------------------------------------------------
# running


def command(reader: str, case: Path, seeds: dict[str, Path], work: Path, rng: random.Random) -> tuple[list[str], Path | None]:
    """The plink command that reads ``case``, and the output file it may write."""
    out = work / "out.txt"
    fast = ["--time-limit", "0.05"]
    if reader == "probe-json":
        cmd = rng.choice([["order", str(case), "-o", str(out)] + fast,
                          ["order", str(case), "--format", "torchrun", "-o", str(out)] + fast,
                          ["show", str(case)], ["show", str(case), "--json"]])
        return cmd, out
    if reader == "csv":
        return ["order", str(case), "--unit", rng.choice(["us", "ms", "s"]), "-o", str(out)] + fast, out
    if reader == "npy":
        return ["order", str(case), "-o", str(out)] + fast, out
    if reader == "hostlist":
        return ["order", str(seeds["plain-csv"]), "--hosts", str(case), "--format", "openmpi", "-o", str(out)] + fast, out
    if reader == "groups":
        return ["show", str(seeds["probe-json"]), "--groups", str(case)], None
    if reader == "order":
        return rng.choice([["emit", str(case), "--format", "openmpi", "-o", str(out)],
                           ["emit", str(case), "--format", "torchrun", "-o", str(out)],
                           ["node-rank", str(case), "--host", "h0"]]), out
    if reader == "schedule":
        return ["verify", str(case)], None
    if reader == "stats":
        return ["retune", str(seeds["schedule"]), str(case), "-o", str(work / "s2.json")], None
    if reader == "state":
        sd = work / "state"
        sd.mkdir(exist_ok=True)
        os.replace(case, sd / "state.json")
        return ["watch", str(sd), "--probe-file", str(seeds["probe-json"]), "--time-limit", "0.05"], None
    raise ValueError(reader)


def run_cli(argv: list[str], timeout: float) -> tuple[int, str, str, bool]:
    """``(exit code, stdout, stderr, hung)`` of ``plink argv`` run in this process."""
    from plink.cli import main

    out, err = io.StringIO(), io.StringIO()
    code, hung = 0, False
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Hang:
        hung = True
        code = -1
    except BaseException as exc:  # noqa: BLE001 (escaped main(): a bug, counted as one)
        err.write(f"ESCAPED {type(exc).__name__}: {exc}\n")
        code = -2
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return code, out.getvalue(), err.getvalue(), hung


def damaged(out: Path | None, code: int, n_hosts: int | None) -> str | None:
    """Why the output file of a run is damaged (None: fine or not written).

    Damaged: written by a failed run, a control character, a host twice, or not one host
    line per host of the input (``n_hosts``; None: not known).
    """
    if out is None or not out.exists():
        return None
    if code != 0:
        return f"exit {code} but wrote {out.name}"
    text = out.read_text(encoding="utf-8", errors="replace")
    lines = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    for ln in lines:
        if any((not ch.isprintable() and ch != "\t") for ch in ln):
            return f"control character in {ln[:40]!r}"
    firsts = [ln.split()[0] for ln in lines]
    if len(firsts) != len(set(firsts)):
        return "a host twice"
    if n_hosts is not None and len(firsts) != n_hosts and len(lines) > 1:
        return f"{len(firsts)} host lines for {n_hosts} hosts"
    return None


def run(cases: int, seed: int, timeout: float = 20.0, verbose: bool = False) -> dict:
    """Run ``cases`` malformed inputs spread over every reader; return the counts."""
    rng = random.Random(seed)
    counts = {r: {"cases": 0, "ok": 0, "clean_error": 0, "internal": 0, "hang": 0, "damaged": 0} for r in READERS}
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="plink-fuzz-") as tmp:
        tmp = Path(tmp)
        seeds = make_seeds(tmp)
        names_json = json.loads(seeds["probe-json"].read_text())["hosts"]
        names = [h["name"] if isinstance(h, dict) else h for h in names_json]
        for k in range(cases):
            reader = READERS[k % len(READERS)]
            work = tmp / f"w{k}"
            work.mkdir()
            suffix = {"csv": ".csv", "npy": ".npy", "hostlist": ".hosts"}.get(reader, ".json")
            case = work / f"case{suffix}"
            case.write_bytes(make_case(reader, seeds, rng))
            argv, out = command(reader, case, seeds, work, rng)
            code, _stdout, stderr, hung = run_cli(argv, timeout)
            c = counts[reader]
            c["cases"] += 1
            bad = None
            if hung:
                c["hang"] += 1
                bad = "hang"
            elif "internal error" in stderr or "Traceback" in stderr or code not in (0, 1, 2, 3, 4):
                c["internal"] += 1
                bad = f"exit {code}: {stderr.strip()[-300:]}"
            else:
                dmg = damaged(out, code, None if reader == "order" or argv[0] == "node-rank" else len(names))
                if dmg:
                    c["damaged"] += 1
                    bad = dmg
                elif code == 0 or code == 4:
                    c["ok"] += 1
                else:
                    c["clean_error"] += 1
                    lines = [ln for ln in stderr.strip().splitlines() if ln.startswith("plink") and "error" in ln]
                    if not lines:
                        c["internal"] += 1
                        c["clean_error"] -= 1
                        bad = f"exit {code} without a one-line error: {stderr.strip()[-300:]!r}"
            if bad:
                failures.append(f"{reader} case {k} ({' '.join(argv[:1])}): {bad}")
                if verbose:
                    print(failures[-1], file=sys.stderr)
                    keep = Path("/tmp") / f"plink-fuzz-fail-{seed}-{k}{suffix}"
                    if case.exists():
                        keep.write_bytes(case.read_bytes())
    return {"counts": counts, "failures": failures}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before a case counts as a hang")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    res = run(args.cases, args.seed, args.timeout, args.verbose)
    total = {k: sum(c[k] for c in res["counts"].values()) for k in next(iter(res["counts"].values()))}
    print(f"plink reader fuzz: {args.cases} malformed inputs, seed {args.seed}, {time.perf_counter() - t0:.0f} s")
    print(f"{'reader':12} {'cases':>6} {'ok':>5} {'clean error':>12} {'internal':>9} {'hang':>5} {'damaged':>8}")
    for r, c in res["counts"].items():
        print(f"{r:12} {c['cases']:6d} {c['ok']:5d} {c['clean_error']:12d} {c['internal']:9d} {c['hang']:5d} {c['damaged']:8d}")
    print(f"{'total':12} {total['cases']:6d} {total['ok']:5d} {total['clean_error']:12d} {total['internal']:9d} "
          f"{total['hang']:5d} {total['damaged']:8d}")
    for f in res["failures"][:20]:
        print("FAIL", f)
    bad = total["internal"] + total["hang"] + total["damaged"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
