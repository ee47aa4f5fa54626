"""How plink installs: the wheel holds only ``plink`` (``plink.probes`` and
``plink.solvers`` mapped from the top-level folders), a non-editable install
imports ``plink.solvers`` and not ``probes``/``solvers``; the README's set-up
commands are the ones CI runs.  (The network-dependent checks -- a fresh
install gets no CUDA packages, an existing torch is kept -- are in
``.ci/check_install.py``, run by ``.ci/run``.)"""

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _setuptools_ok():
    try:
        import setuptools
    except ImportError:
        return False
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if not _setuptools_ok():
        pytest.skip("building the wheel offline needs setuptools >= 70.1 (the 'test' extra has it)")
    out = tmp_path_factory.mktemp("wheel")
    # from a copy without build leftovers: a stale *.egg-info/SOURCES.txt in the checkout adds the
    # files it lists to the wheel, which once hid a package missing from pyproject's list
    src = tmp_path_factory.mktemp("src") / "plink"
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(
        "*.egg-info", "build", "dist", ".git", ".ci", "__pycache__", "*.pyc", "results", ".hypothesis"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out), str(src)], capture_output=True, text=True, timeout=300, cwd=out)
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("plink_locality-*.whl")
    return whl


def test_the_wheel_holds_only_plink(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"plink", f"{wheel.name.split('-py')[0]}.dist-info"}, top
    # the folders probes/ and solvers/ are inside plink, each file once
    assert "plink/probes/netns.py" in names and "plink/solvers/_ringkernel.py" in names
    # every package of the source tree (pyproject lists them by hand; plink.distributed was once left out)
    packages = sorted(p.parent.name for p in (ROOT / "plink").glob("*/__init__.py"))
    assert "distributed" in packages
    assert [p for p in packages if f"plink/{p}/__init__.py" not in names] == []
    assert "plink/data/fileio.py" in names and len(names) == len(set(names))
    assert not [n for n in names if n.startswith(("probes/", "solvers/", "tests/", "benchmarks/"))]


def test_installed_wheel_imports_plink_solvers_and_not_probes(wheel, tmp_path):
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                        str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert {p.name for p in site.iterdir()} - {"bin"} == {"plink", f"{wheel.name.split('-py')[0]}.dist-info"}
    code = (
        "import importlib.util, os, sys\n"
        "import plink, plink.solvers, plink.probes.netns, plink.solvers.costmodels\n"
        "print(os.path.dirname(plink.__file__))\n"
        "print([m for m in ('probes', 'solvers') if importlib.util.find_spec(m) is not None])\n"
    )
    # from a neutral directory, the installed copy first on the path (a checkout's cwd would add probes/)
    env = dict(os.environ, PYTHONPATH=str(site))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    where, leaked = r.stdout.splitlines()
    assert where == str(site / "plink") and leaked == "[]"
    r = subprocess.run([sys.executable, "-c", "import probes"], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 1 and "No module named 'probes'" in r.stderr


def _readme_setup_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.*?)\n```", section, re.S)


def test_ci_runs_the_readme_setup_commands_verbatim():
    blocks = _readme_setup_commands()
    assert len(blocks) >= 2, "README 'Set up' lost its two commands"
    install, tests = blocks[0].strip(), blocks[1].strip()
    assert "\n" not in install and "\n" not in tests
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install in ci and tests in ci
    # the first installs and runs the main job on a shipped example; the second runs the tests
    assert " && plink order examples/" in install
    assert tests.endswith("&& python -m pytest -q -p no:cacheprovider")
