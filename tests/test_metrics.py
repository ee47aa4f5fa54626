"""PAIA (vectorised vs the definition), AMI, relative error."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from plink.errors import PlinkError
from plink.structure.metrics import ami, common_prefix_lengths, paia, relative_error
from plink.data.simulate import simulate_datacenter


def paia_reference(distances: np.ndarray, labels) -> tuple[int, int]:
    """Triple loop over (c, a, b) straight from the definition: ``(agree, comparable)``. O(N³); for tests."""
    M = np.asarray(distances, dtype=float)
    n = len(labels)

    def lcp(x, y):
        k = 0
        for u, w in zip(x, y):
            if u != w:
                break
            k += 1
        return k

    agree = comparable = 0
    for c in range(n):
        for a in range(n):
            for b in range(a + 1, n):
                if c in (a, b):
                    continue
                la, lb = lcp(labels[a], labels[c]), lcp(labels[b], labels[c])
                if la == lb or np.isnan(M[a, c]) or np.isnan(M[b, c]):
                    continue
                comparable += 1
                ta, tb = -la, -lb  # hop distance falls as the common prefix grows
                if (M[a, c] < M[b, c] and ta < tb) or (M[a, c] > M[b, c] and ta > tb):
                    agree += 1
    return agree, comparable


def test_common_prefix_lengths():
    labels = [("a", "x", "1"), ("a", "x", "2"), ("a", "y", "1"), ("b", "x", "1")]
    L = common_prefix_lengths(labels)
    assert L[0].tolist() == [3, 2, 1, 0]
    assert L[2, 3] == 0 and L[3, 3] == 3
    # equal names under different parents are different places
    assert L[0, 2] == 1


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), racks=st.integers(1, 3), rows=st.integers(1, 3), hpr=st.integers(1, 3),
       missing=st.sampled_from([0.0, 0.2]), rounding=st.sampled_from([None, -1]))
def test_paia_vectorised_equals_reference(seed, racks, rows, hpr, missing, rounding):
    probe = simulate_datacenter(racks=racks, rows=rows, hosts_per_rack=hpr, jitter=0.4, missing_frac=missing,
                                seed=seed) if racks * rows * hpr >= 2 else None
    if probe is None:
        return
    m = probe.latency if rounding is None else np.round(probe.latency, rounding)  # rounding makes ties
    labels = probe.truth.labels
    assert paia(m, labels, return_counts=True, chunk=3) == paia_reference(m, labels)


def test_paia_counts_match_the_paper_style_count():
    probe = simulate_datacenter(racks=8, hosts_per_rack=8, jitter=0.0, seed=1)
    agree, comparable = paia(probe.latency, probe.truth.labels, return_counts=True)
    # per observer: 7 rack mates x 56 others, unordered pairs counted once
    assert comparable == 64 * 7 * 56
    assert agree == comparable


def test_paia_extremes():
    probe = simulate_datacenter(racks=3, hosts_per_rack=3, rows=2, jitter=0.0, height_us=0.0, seed=2)
    labels = probe.truth.labels
    assert paia(probe.latency, labels) == 1.0
    assert paia(1.0 / (probe.latency + np.eye(probe.n)), labels) == 0.0  # order reversed
    assert paia(np.ones((probe.n, probe.n)), labels) == 0.0  # all ties
    assert np.isnan(paia(np.ones((3, 3)), [("a",), ("a",), ("a",)]))  # nothing comparable


def test_paia_bad_input():
    with pytest.raises(PlinkError):
        paia(np.ones((3, 3)), [("a",), ("b",)])


def test_ami():
    assert ami([("r", "1"), ("r", "1"), ("r", "2"), ("r", "2")], [5, 5, 0, 0]) == pytest.approx(1.0)
    assert ami(["a", "a", "b", "b"], [0, 1, 0, 1]) < 0.01
    with pytest.raises(PlinkError):
        ami(["a"], [0, 1])


def test_relative_error():
    m = np.array([[0, 10, np.nan], [10, 0, 4], [np.nan, 4, 0]], float)
    f = np.array([[0, 11, 99], [11, 0, 4], [99, 4, 0]], float)
    assert relative_error(f, m) == pytest.approx(0.05)


def test_rack_auc_is_the_mann_whitney_probability_with_ties_half():
    from plink.structure.metrics import rack_auc

    rng = np.random.default_rng(0)
    for _ in range(50):
        c = np.round(rng.normal(1, 1, rng.integers(1, 20)), 1)   # rounded: ties happen
        w = np.round(rng.normal(0, 1, rng.integers(1, 20)), 1)
        want = ((c[:, None] > w[None, :]).sum() + 0.5 * (c[:, None] == w[None, :]).sum()) / (len(c) * len(w))
        assert rack_auc(c, w) == pytest.approx(want, abs=1e-12)
    assert rack_auc([3.0, np.nan], [1.0, 2.0]) == 1.0 and rack_auc([1.0], [1.0]) == 0.5
    assert np.isnan(rack_auc([], [1.0])) and np.isnan(rack_auc([np.nan], [1.0]))


def test_refines():
    from plink.structure.metrics import refines

    fine, coarse = np.array([0, 0, 1, 1, 2, 2]), np.array([0, 0, 0, 0, 1, 1])
    assert refines(fine, coarse) and not refines(coarse, fine) and refines(fine, fine)
    assert refines(fine, np.zeros(6, int)) and not refines(fine, np.array([0, 1, 0, 1, 0, 1]))


def test_paia_with_flat_labels_says_what_it_takes():
    """paia(M, [0, 1, ...]) raised "TypeError: 'int' object is not iterable" from deep inside."""
    from plink.errors import PlinkError

    with pytest.raises(PlinkError, match="labels must be location tuples"):
        paia(np.ones((3, 3)), [0, 1, 0])
    with pytest.raises(PlinkError, match="labels must be location tuples"):
        paia(np.ones((3, 3)), ["r0", "r1", "r0"])
