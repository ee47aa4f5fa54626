#!/usr/bin/env python3
"""Install checks run by .ci/run (each exits non-zero with the reason when it fails).

    python .ci/check_install.py fresh       # after the README's first set-up command
    python .ci/check_install.py torch-kept  # installing into an environment with a torch
    python .ci/check_install.py docker      # build the image when a Docker engine is there

fresh: in the environment the README's first command installed into: torch is
the CPU build (Linux x86_64) and no nvidia-*/triton/cuda package is installed;
the distribution's files are ``plink/`` and its dist-info only (nothing else at
the top of site-packages); from a neutral directory ``import plink.solvers``
works and ``import probes`` / ``import solvers`` fail; the compiled ring kernel
loads and runs.

torch-kept: ``pip install --dry-run --report`` of this project (the README's
install for an environment that already has torch: ``pip install .``) into
(a) this environment, which has torch, and (b) a new venv holding only a
metadata-only stand-in for another torch build (``torch 2.5.1+cu121``): the
report installs no torch, nvidia-*, triton or cuda package, and in (a)
nothing but plink-locality itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CUDA = re.compile(r"^(torch|nvidia-.*|triton|pytorch-triton.*|cuda-.*)$")


def fail(msg: str) -> None:
    print(f"check_install: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def ok(msg: str) -> None:
    print(f"check_install: ok: {msg}", flush=True)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def fresh() -> None:
    from importlib import metadata

    dists = {_norm(d.metadata["Name"]): d.version for d in metadata.distributions()}
    gpu = sorted(n for n in dists if CUDA.match(n) and n != "torch")
    if gpu:
        fail(f"CUDA packages installed: {gpu}")
    torch = dists.get("torch")
    if torch is None:
        fail("torch is not installed")
    import platform

    if platform.system() == "Linux" and platform.machine() == "x86_64" and not torch.endswith("+cpu"):
        fail(f"torch {torch} is not the CPU build")
    ok(f"torch {torch}, no nvidia/triton/cuda packages ({len(dists)} distributions)")

    files = metadata.files("plink-locality") or []
    top = sorted({f.parts[0] for f in files if f.parts and f.parts[0] != ".."})
    if [t for t in top if t != "plink" and not t.endswith(".dist-info")]:
        fail(f"plink-locality installs more than plink at the top of site-packages: {top}")
    if not any(str(f).startswith("plink/solvers/") for f in files):
        fail("plink/solvers is not in the installed files (is this an editable install?)")
    # every package of the source tree is installed (pyproject lists them by hand)
    subpackages = sorted(p.parent.name for p in (ROOT / "plink").glob("*/__init__.py"))
    installed = {str(f) for f in files}
    missing = [s for s in subpackages if f"plink/{s}/__init__.py" not in installed]
    if missing:
        fail(f"packages of the source tree not installed (add them to pyproject's packages): {missing}")
    ok(f"installed top level: {top}; packages: plink.{', plink.'.join(subpackages)}")

    code = ("import importlib.util, plink.solvers, plink.probes.netns, plink.distributed.probe\n"
            "from plink.solvers import ringsearch\n"
            "assert ringsearch.kernel() is not None, 'the compiled ring kernel did not load'\n"
            "t = ringsearch.warm_kernel()\n"
            "leaked = [m for m in ('probes', 'solvers') if importlib.util.find_spec(m)]\n"
            "assert not leaked, f'top-level packages importable: {leaked}'\n"
            "print(plink.solvers.__file__, f'kernel ready in {t:.1f} s')\n")
    with tempfile.TemporaryDirectory() as neutral:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PLINK_NO_NUMBA")}
        r = subprocess.run([sys.executable, "-c", code], cwd=neutral, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"import check: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    ok(f"import plink.solvers from {r.stdout.strip()}; 'probes' and 'solvers' are not importable")


def _dry_run(python: str, cwd: Path) -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        argv = [python, "-m", "pip", "install", "-q", "--dry-run", "--report", str(report), str(ROOT)]
        r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"{' '.join(argv)}: {r.stderr.strip()[-800:]}")
        doc = json.loads(report.read_text())
    return [(_norm(i["metadata"]["name"]), i["metadata"]["version"]) for i in doc["install"]]


def _stand_in_torch(where: Path) -> Path:
    """A metadata-only wheel ``torch 2.5.1+cu121`` (no code, no dependencies)."""
    name, version = "torch", "2.5.1+cu121"
    whl = where / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: check_install\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "torch_stand_in.py": "",
    }
    with zipfile.ZipFile(whl, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{info}/RECORD", "".join(f"{p},,\n" for p in files) + f"{info}/RECORD,,\n")
    return whl


def torch_kept() -> None:
    # (a) this environment: it has a torch
    import importlib.metadata as md

    have = {_norm(d.metadata["Name"]): d.version for d in md.distributions()}
    if "torch" not in have:
        fail("this environment has no torch to keep (run after the README's first command)")
    plan = _dry_run(sys.executable, ROOT)
    touched = [(n, v) for n, v in plan if CUDA.match(n) or (n in have and n != "plink-locality")]
    if touched or [n for n, _ in plan] != ["plink-locality"]:
        fail(f"pip install . into this environment would install {plan}")
    ok(f"pip install . with torch {have['torch']} present installs only {plan}")
    # (b) another torch build (a stand-in carrying only its metadata) in a new venv
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, "-m", "venv", str(tmp / "venv")], check=True)
        py = str(tmp / "venv" / "bin" / "python")
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(_stand_in_torch(tmp))],
                       check=True)
        plan = _dry_run(py, tmp)
    bad = [(n, v) for n, v in plan if CUDA.match(n)]
    if bad:
        fail(f"pip install . next to torch 2.5.1+cu121 would install {bad}")
    ok(f"pip install . next to torch 2.5.1+cu121 keeps it: {len(plan)} packages to install, "
       "none of them torch, nvidia-*, triton or cuda")


def docker() -> None:
    if shutil.which("docker") is None:
        print("check_install: skipped docker: no docker command", flush=True)
        return
    r = subprocess.run(["docker", "info"], capture_output=True, text=True)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["docker info failed"])[-1]
        print(f"check_install: skipped docker: no Docker engine ({why})", flush=True)
        return
    tag = "plink-ci:latest"
    subprocess.run(["docker", "build", "-q", "-t", tag, str(ROOT)], check=True)
    uid = f"{os.getuid()}:{os.getgid()}"
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(ROOT / "examples" / "dc64.json", tmp)
        os.chmod(tmp, 0o777)
        run = ["docker", "run", "--rm", "--user", uid, "-v", "plink-ci-cache:/cache", "-v", f"{tmp}:/w", "-w", "/w",
               tag, "order", "dc64.json", "--algo", "ring", "--time-limit", "1", "-o", "hosts.txt"]
        subprocess.run(run, check=True)
        if len(Path(tmp, "hosts.txt").read_text().split()) != 64:
            fail("docker run did not write the 64-host order")
    ok(f"docker image builds and runs as {uid}, writing into a bind mount")


if __name__ == "__main__":
    checks = {"fresh": fresh, "torch-kept": torch_kept, "docker": docker}
    if len(sys.argv) != 2 or sys.argv[1] not in checks:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    checks[sys.argv[1]]()
