"""The compiled ring kernel (numba) against the pure-Python ring search, and the fallback."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import plink.solvers
from plink.solvers import ringsearch
from plink.solvers.ringsearch import iterated_local_search, local_search, neighbour_lists, tour_length

ROOT = Path(__file__).resolve().parents[1]
NO_NUMBA = os.environ.get("PLINK_NO_NUMBA", "") not in ("", "0")

# numba is a dependency: the kernel tests fail (not skip) where it does not load
needs_kernel = pytest.mark.skipif(NO_NUMBA, reason="PLINK_NO_NUMBA is set")


@needs_kernel
def test_the_default_install_has_the_compiled_kernel():
    assert ringsearch.kernel() is not None


_CACHE_PROBE = """
import os, sys
real = os.access
import plink.solvers as S
pkg = os.path.dirname(os.path.abspath(S.__file__))
# the installed package is read-only for this user (a system-wide install)
os.access = lambda p, m, *a, **k: (False if m == os.W_OK and os.path.abspath(p).startswith(pkg)
                                   else real(p, m, *a, **k))
import numba
import plink.solvers._ringkernel as k
print(k.cache_dir())
print(k._next._cache._cache_path)
print(repr(numba.config.CACHE_DIR))
"""


@needs_kernel
@pytest.mark.parametrize("numba_cache_dir", [None, "own"])
def test_compiled_code_is_cached_per_user_when_the_install_is_read_only(tmp_path, numba_cache_dir):
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    env.pop("NUMBA_CACHE_DIR", None)
    if numba_cache_dir:
        env["NUMBA_CACHE_DIR"] = str(tmp_path / numba_cache_dir)
    r = subprocess.run([sys.executable, "-c", _CACHE_PROBE], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    ours, where, config = r.stdout.split("\n")[:3]
    if numba_cache_dir:  # the user's own setting wins
        assert ours == "None" and where.startswith(str(tmp_path / numba_cache_dir))
        assert config == repr(str(tmp_path / numba_cache_dir))
    else:
        assert ours == str(tmp_path / "xdg" / "plink" / "numba") and where.startswith(ours)
        assert config == "''"  # the caller's other numba code keeps numba's default


def _euclid(seed, n):
    pts = np.random.default_rng(seed).random((n, 2))
    return np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))


def _ties(seed, n):
    """Small integer costs: many equal edges and zero-gain moves."""
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 4, (n, n)).astype(float)
    m = np.maximum(m, m.T)
    np.fill_diagonal(m, 0)
    return m


def _is_perm(t, n):
    return sorted(np.asarray(t).tolist()) == list(range(n))


@needs_kernel
@pytest.mark.parametrize("make,seed,n", [(_euclid, 0, 30), (_euclid, 1, 80), (_euclid, 2, 150), (_ties, 3, 40), (_ties, 4, 90)])
def test_kernel_and_python_reach_each_others_local_optima(make, seed, n):
    m = make(seed, n)
    nb = neighbour_lists(m, 8)
    start = np.random.default_rng(seed + 100).permutation(n)
    fast = local_search(m, start, nb, engine="numba")
    slow = local_search(m, start, nb, engine="python")
    assert _is_perm(fast, n) and _is_perm(slow, n)
    assert tour_length(m, fast) < tour_length(m, start)
    # same neighbourhood: neither engine improves the other's local optimum
    again = local_search(m, fast, nb, engine="python")
    assert tour_length(m, again) == pytest.approx(tour_length(m, fast), abs=1e-9)
    again = local_search(m, slow, nb, engine="numba")
    assert tour_length(m, again) == pytest.approx(tour_length(m, slow), abs=1e-9)


@needs_kernel
def test_kernel_local_search_matches_python_exactly():
    # same moves, same order of examination: the very same tour
    m = _euclid(5, 60)
    nb = neighbour_lists(m, 8)
    start = np.random.default_rng(9).permutation(60)
    assert local_search(m, start, nb, engine="numba").tolist() == local_search(m, start, nb, engine="python").tolist()


@needs_kernel
@pytest.mark.parametrize("make,seed,n", [(_euclid, 6, 25), (_euclid, 7, 200), (_ties, 8, 60), (_ties, 9, 7)])
def test_kernel_ils_permutation_local_optimum_deterministic(make, seed, n):
    m = make(seed, n)
    nb = neighbour_lists(m, 8)
    r1 = iterated_local_search(m, max_kicks=3000, time_limit=60, seed=seed, neighbours=nb, engine="numba")
    r2 = iterated_local_search(m, max_kicks=3000, time_limit=60, seed=seed, neighbours=nb, engine="numba")
    assert _is_perm(r1.tour, n)
    assert r1.tour.tolist() == r2.tour.tolist() and r1.kicks == r2.kicks == 3000
    assert r1.cost == pytest.approx(tour_length(m, r1.tour))
    # a local optimum of the pure-Python neighbourhood too
    assert tour_length(m, local_search(m, r1.tour, nb, engine="python")) == pytest.approx(r1.cost, abs=1e-9)
    # no worse than the Python search with the same budget, give or take 2 %
    rp = iterated_local_search(m, max_kicks=3000, time_limit=60, seed=seed, neighbours=nb, engine="python")
    assert r1.cost <= rp.cost * 1.02 + 1e-9


@needs_kernel
def test_kernel_chunks_do_not_change_the_result():
    kr = ringsearch.kernel()
    m = _euclid(10, 120)
    nb = neighbour_lists(m, 8)
    results = []
    for chunks in ([900], [1, 7, 92, 300, 500]):
        t = np.arange(120, dtype=np.int64)
        kr.local_search(m, nb, t)
        pos = np.empty(120, dtype=np.int64)
        pos[t] = np.arange(120)
        c = tour_length(m, t)
        best = t.copy()
        f = np.array([c, c])
        ist = np.zeros(3, dtype=np.int64)
        rng = np.array([12345], dtype=np.uint64)
        for c in chunks:
            assert kr.ils_run(m, nb, t, pos, best, f, ist, rng, c, 25, 0, 0, 0.0, False) == c
        assert _is_perm(t, 120) and _is_perm(best, 120)
        assert (pos[t] == np.arange(120)).all()
        assert f[1] == pytest.approx(tour_length(m, best))
        results.append(best.tolist())
    assert results[0] == results[1]


@needs_kernel
def test_kernel_finds_small_optimum_and_stalls():
    from plink.solvers.exact import held_karp

    m = _euclid(11, 14)
    _, opt = held_karp(m)
    r = iterated_local_search(m, max_kicks=2000, time_limit=60, seed=0, engine="numba")
    assert r.cost == pytest.approx(opt)
    r = iterated_local_search(m, max_kicks=10**7, time_limit=60, seed=0, stall=500, engine="numba")
    assert r.kicks < 10**7


def test_fallback_without_numba(monkeypatch):
    monkeypatch.setenv("PLINK_NO_NUMBA", "1")
    assert ringsearch.kernel() is None
    with pytest.raises(RuntimeError, match="numba"):
        local_search(_euclid(0, 10), np.arange(10), engine="numba")
    m = _euclid(12, 40)
    r = iterated_local_search(m, max_kicks=200, time_limit=60, seed=0)
    assert _is_perm(r.tour, 40)


def test_fallback_when_numba_cannot_be_imported(monkeypatch):
    monkeypatch.delenv("PLINK_NO_NUMBA", raising=False)
    monkeypatch.setattr(ringsearch, "_KERNEL", [])
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba -> ImportError
    monkeypatch.delitem(sys.modules, "plink.solvers._ringkernel", raising=False)
    monkeypatch.delattr(plink.solvers, "_ringkernel", raising=False)
    assert ringsearch.kernel() is None
    m = _euclid(13, 30)
    r = iterated_local_search(m, max_kicks=100, time_limit=60, seed=0)
    assert _is_perm(r.tour, 30)


def test_bad_engine():
    with pytest.raises(ValueError, match="engine"):
        local_search(_euclid(0, 10), np.arange(10), engine="fortran")


@needs_kernel
def test_kernel_ils_with_temperature_keeps_the_best():
    m = _euclid(14, 100)
    nb = neighbour_lists(m, 8)
    ls = local_search(m, np.arange(100), nb, engine="numba")
    r1 = iterated_local_search(m, ls, max_kicks=2000, time_limit=60, seed=3, neighbours=nb, temperature=0.5)
    r2 = iterated_local_search(m, ls, max_kicks=2000, time_limit=60, seed=3, neighbours=nb, temperature=0.5)
    assert _is_perm(r1.tour, 100) and r1.tour.tolist() == r2.tour.tolist()
    assert r1.cost <= tour_length(m, ls) + 1e-9
    assert r1.cost == pytest.approx(tour_length(m, r1.tour))


def test_fallback_when_the_kernel_fails_to_compile(monkeypatch):
    class Broken:
        def local_search(self, *a):
            raise RuntimeError("LLVM says no")

    monkeypatch.delenv("PLINK_NO_NUMBA", raising=False)
    monkeypatch.setattr(ringsearch, "_KERNEL", [Broken()])
    r = iterated_local_search(_euclid(15, 30), max_kicks=50, time_limit=60, seed=0)
    assert ringsearch.kernel() is None
    assert _is_perm(r.tour, 30)


_LARGE_VALUES = """
import sys
import numpy as np
from plink.solvers.ringsearch import iterated_local_search, local_search, tour_length
rng = np.random.default_rng(0)
p = rng.random((60, 2)) * 100
D = np.sqrt(((p[:, None] - p[None]) ** 2).sum(-1))
D /= D.max()
for engine in ("numba", "python") if sys.argv[1] == "1" else ("python",):
    base = tour_length(D, local_search(D, list(range(60)), engine=engine))
    for scale in (3e8, 1e14, 1e-310):  # (1e-310: subnormal, whose scale factor 2**1030 overflowed a float)
        t = local_search(D * scale, list(range(60)), engine=engine)
        r = iterated_local_search(D * scale, max_kicks=200, engine=engine)
        print(engine, scale, tour_length(D, t) / base, r.cost / scale / tour_length(D, r.tour))
"""


def test_the_search_ends_on_large_values():
    # edges of ~1e8 (a matrix in seconds read as microseconds): one ulp exceeded the
    # moves' absolute epsilon, and a 2-opt move and its inverse alternated forever
    # (plink order on PlanetLab with --unit s never returned)
    out = subprocess.run([sys.executable, "-c", _LARGE_VALUES, "0" if NO_NUMBA else "1"], capture_output=True,
                         text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines()]
    assert len(rows) == (3 if NO_NUMBA else 6)
    for _engine, _scale, same_tour, cost in rows:
        assert float(same_tour) == pytest.approx(1.0, rel=1e-9)  # the tour of the unscaled matrix
        assert float(cost) == pytest.approx(1.0, rel=1e-12 if float(_scale) > 1e-300 else 1e-6)  # on the caller's matrix
