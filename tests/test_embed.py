"""ProbeEmbed: recovery of known configurations, masking, heights, scale invariance, bad input."""

import numpy as np
import pytest

from plink.structure.embed import ProbeEmbed, check_measurements
from plink.errors import PlinkError
from plink.data.probefile import from_matrix

FAST = dict(max_iter=300, n_restarts=1, random_state=0)


def _dist(x):
    return np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))


def _procrustes_error(a, b):
    """Residual of the best rotation/reflection + translation mapping a onto b, relative to b's spread."""
    a = a - a.mean(0)
    b = b - b.mean(0)
    u, _, vt = np.linalg.svd(a.T @ b)
    return np.linalg.norm(a @ (u @ vt) - b) / np.linalg.norm(b)


def test_recovers_known_2d_configuration():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 10, size=(20, 2))
    d = _dist(x)
    e = ProbeEmbed(2, alpha=1.0, heights=False, **FAST).fit(d)
    assert e.median_rel_error_ < 0.01
    assert e.stress_ < 0.01
    # the coordinates are x up to rotation, translation and the normalising scale
    y = e.coordinates_ * e.scale_
    assert _procrustes_error(y, x) < 0.02
    assert np.allclose(e.distances_, d, rtol=0.03, atol=0.05)
    assert e.embedding_ is e.coordinates_
    assert e.coordinates_.shape == (20, 2) and e.n_iter_ >= 1


def test_alpha_two_fits_squared_distances():
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 3, size=(16, 2))
    p = _dist(x) ** 2
    e = ProbeEmbed(2, alpha=2.0, heights=False, **FAST).fit(p)
    assert e.median_rel_error_ < 0.02
    np.testing.assert_allclose(_dist(e.coordinates_) ** 2 * e.scale_, e.distances_, rtol=1e-6, atol=1e-6)


def test_missing_pairs_are_masked_not_filled():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 10, size=(15, 2))
    d = _dist(x)
    corrupt = d.copy()
    holes = [(0, 5), (2, 9), (3, 11), (7, 14)]
    for i, j in holes:
        corrupt[i, j] = corrupt[j, i] = 1e4  # absurd values, then hidden
    masked = corrupt.copy()
    for i, j in holes:
        masked[i, j] = masked[j, i] = np.nan
    a = ProbeEmbed(2, alpha=1.0, heights=False, **FAST).fit(masked)
    assert a.n_pairs_ == 15 * 14 // 2 - len(holes)
    # the hidden values had no influence: the fit still matches the true distances there
    for i, j in holes:
        assert abs(a.distances_[i, j] - d[i, j]) / d[i, j] < 0.05
    b = ProbeEmbed(2, alpha=1.0, heights=False, **FAST).fit(corrupt)
    assert b.loss_ > 100 * a.loss_


def test_masked_pairs_do_not_change_the_loss():
    """Changing the value under a NaN is impossible; changing a measured value changes the fit."""
    from plink.structure.embed import _Pairs
    import torch

    n = 6
    rng = np.random.default_rng(0)
    p = rng.uniform(1, 2, size=(n, n))
    iu, ju = np.triu_indices(n, 1)
    keep = np.ones(iu.size, bool)
    keep[3] = False
    v = torch.as_tensor(rng.normal(size=(n, 2)), dtype=torch.float32)
    h = torch.zeros(n)
    dense = _Pairs(n, iu[keep], ju[keep], p[iu, ju][keep], torch.device("cpu"), dense=True)
    sparse = _Pairs(n, iu[keep], ju[keep], p[iu, ju][keep], torch.device("cpu"), dense=False)
    full_before = float(dense.full_loss(v, h, 2.0))
    assert full_before == pytest.approx(sparse.exact_loss(v, h, 2.0), rel=1e-5)
    # loss by hand over the kept pairs only
    vv = v.numpy()
    manual = np.mean([(((vv[i] - vv[j]) ** 2).sum() - p[i, j]) ** 2 for i, j, k in zip(iu, ju, keep) if k])
    assert full_before == pytest.approx(manual, rel=1e-5)


def test_heights_are_non_negative_and_recovered():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 10, size=(24, 2))
    h = rng.uniform(0.0, 2.0, size=24)
    p = _dist(x) + h[:, None] + h[None, :]
    np.fill_diagonal(p, 0)
    e = ProbeEmbed(2, alpha=1.0, heights=True, max_iter=800, n_restarts=1, random_state=0).fit(p)
    assert (e.heights_ >= 0).all()
    assert e.median_rel_error_ < 0.02
    assert np.corrcoef(e.heights_, h)[0, 1] > 0.9
    assert np.abs(e.heights_ - h).mean() < 0.3


def test_heights_off_gives_zeros():
    p = _dist(np.random.default_rng(0).uniform(size=(8, 2)))
    e = ProbeEmbed(2, heights=False, **FAST).fit(p)
    assert np.array_equal(e.heights_, np.zeros(8))


def test_scale_invariance_units():
    rng = np.random.default_rng(4)
    p = _dist(rng.uniform(0, 1, size=(12, 3))) + 0.1
    np.fill_diagonal(p, 0)
    a = ProbeEmbed(2, **FAST).fit(p)
    b = ProbeEmbed(2, **FAST).fit(p * 1000.0)
    np.testing.assert_allclose(a.coordinates_, b.coordinates_, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(a.distances_ * 1000.0, b.distances_, rtol=1e-4)
    assert a.median_rel_error_ == pytest.approx(b.median_rel_error_, rel=1e-4)


def test_deterministic_for_a_seed_and_restarts_keep_best():
    p = _dist(np.random.default_rng(7).uniform(size=(10, 2)))
    a = ProbeEmbed(2, max_iter=60, n_restarts=3, random_state=11).fit(p)
    b = ProbeEmbed(2, max_iter=60, n_restarts=3, random_state=11).fit(p)
    assert np.array_equal(a.coordinates_, b.coordinates_)
    assert a.loss_ == pytest.approx(min(a.restart_losses_))
    assert len(a.restart_losses_) == 3


def test_probedata_input_and_fit_transform():
    from plink.data.simulate import simulate_datacenter

    probe = simulate_datacenter(racks=3, hosts_per_rack=3, seed=0)
    e = ProbeEmbed(2, **FAST)
    y = e.fit_transform(probe)
    assert y.shape == (9, 2)
    assert e.hosts_ == probe.names
    assert e.heights_.shape == (9,)


def test_stochastic_mode_matches_full_batch_quality():
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 10, size=(40, 2))
    d = _dist(x)
    e = ProbeEmbed(2, alpha=1.0, heights=False, max_iter=1500, n_restarts=1, random_state=0,
                   full_batch_max_n=10, batch_size=256).fit(d)
    assert e.stochastic_
    assert e.median_rel_error_ < 0.05


@pytest.mark.parametrize(
    "bad, msg",
    [
        (np.zeros((2, 2)), "at least 3"),
        (np.ones((3, 4)), "square"),
        (np.array([[0, -1, 1], [-1, 0, 1], [1, 1, 0]], float), "negative"),
        (np.array([[0, np.inf, 1], [1, 0, 1], [1, 1, 0]], float), "infinite"),
        (np.zeros((4, 4)), "host 0 has 0 measured pair"),  # a plain matrix's 0 is unmeasured (as in the files)
        ("nonsense", "ProbeData"),
    ],
)
@pytest.mark.filterwarnings("ignore:read .* off-diagonal zero")  # (the zero matrices: said, then refused)
def test_bad_matrices(bad, msg):
    with pytest.raises(PlinkError, match=msg):
        ProbeEmbed(2, **FAST).fit(bad)


def test_host_without_measurements_is_named():
    m = np.ones((5, 5))
    np.fill_diagonal(m, 0)
    m[2, :] = np.nan
    m[:, 2] = np.nan
    m[2, 2] = 0
    probe = from_matrix(m, ["a", "b", "c", "d", "e"])
    with pytest.raises(PlinkError, match=r"^c has 0 measured pair"):
        ProbeEmbed(2, **FAST).fit(probe)


def test_mostly_missing_and_disconnected():
    n = 10
    m = np.full((n, n), np.nan)
    np.fill_diagonal(m, 0)
    # two cliques of 5, nothing between them: 20 of 45 pairs measured
    for block in (range(0, 5), range(5, 10)):
        for i in block:
            for j in block:
                if i != j:
                    m[i, j] = 1.0
    with pytest.raises(PlinkError, match="mostly missing"):
        check_measurements(m)
    with pytest.raises(PlinkError, match="disconnected"):
        check_measurements(m, min_coverage=0.1)


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(alpha=2.5), "alpha"),
        (dict(alpha=0.5), "alpha"),
        (dict(n_components=0), "n_components"),
        (dict(max_iter=0), "max_iter"),
        (dict(lr=-1.0), "lr"),
        (dict(device="tpu"), "device"),
        (dict(random_state="x"), "random_state"),
    ],
)
def test_bad_params(kw, msg):
    p = _dist(np.random.default_rng(0).uniform(size=(5, 2)))
    with pytest.raises(PlinkError, match=msg):
        ProbeEmbed(**kw).fit(p)


def test_cuda_only_when_available():
    import torch

    p = _dist(np.random.default_rng(0).uniform(size=(5, 2)))
    if not torch.cuda.is_available():
        with pytest.raises(PlinkError, match="CUDA"):
            ProbeEmbed(2, device="cuda").fit(p)
    else:  # on a GPU machine the same fit runs there and agrees with the CPU's
        gpu = ProbeEmbed(2, device="cuda", random_state=0).fit(p)
        cpu = ProbeEmbed(2, device="cpu", random_state=0).fit(p)
        assert gpu.coordinates_.shape == (5, 2)
        assert gpu.stress_ == pytest.approx(cpu.stress_, rel=0.05, abs=1e-6)


def test_a_probe_built_in_code_with_every_distance_0_is_refused():
    """(A plain matrix's 0 is unmeasured; a ProbeData's is a distance, and all of them 0 say nothing.)"""
    from plink.data.probefile import Host, ProbeData

    with pytest.raises(PlinkError, match="every measured distance is 0"):
        ProbeEmbed(2, **FAST).fit(ProbeData([Host(f"h{i}") for i in range(4)], np.zeros((4, 4))))


# -- the library API: numpy numbers are numbers, bools and complex matrices are refused ------------


@pytest.mark.parametrize("kw", [
    dict(alpha=np.float32(1.5)),  # was 'alpha must be between 1 and 2, got np.float32(1.5)'
    dict(alpha=np.float16(1)), dict(alpha=np.int8(2)),
    dict(lr=np.float32(0.05)),  # was 'lr must be a positive number'
    dict(tol=np.float32(1e-3)), dict(min_coverage=np.float32(0.5)),
    dict(heights=np.bool_(False)),
])
def test_numpy_numbers_of_any_width_are_parameters(kw):
    p = _dist(np.random.default_rng(0).uniform(size=(6, 2)))
    e = ProbeEmbed(2, **{**FAST, **kw}).fit(p)
    assert np.isfinite(e.loss_)


@pytest.mark.parametrize("kw, msg", [
    (dict(alpha=True), "alpha must be between 1 and 2, got True"),  # was read as 1.0
    (dict(lr=True), "lr must be a positive number, got True"),
    (dict(min_coverage=np.bool_(True)), "min_coverage must be between 0 and 1, got np.True_"),
    (dict(heights="no"), "heights must be True or False, got 'no'"),  # any non-empty string was True
    (dict(heights=1), "heights must be True or False, got 1"),
    (dict(heights=None), "heights must be True or False, got None"),
])
def test_bools_and_non_bools_are_refused_where_they_do_not_fit(kw, msg):
    from plink.errors import OptionError

    p = _dist(np.random.default_rng(0).uniform(size=(6, 2)))
    with pytest.raises(OptionError) as exc:
        ProbeEmbed(2, **{**FAST, **kw}).fit(p)
    assert str(exc.value) == msg


@pytest.mark.filterwarnings("error")  # (numpy's ComplexWarning was all a user got)
def test_a_complex_matrix_is_refused_as_hierarchical_grouper_refuses_it():
    from plink.errors import InputError

    p = _dist(np.random.default_rng(0).uniform(size=(6, 2)))
    with pytest.raises(InputError, match=r"^distance matrix must be real numbers, got a complex matrix$"):
        ProbeEmbed(2, **FAST).fit(p + 1j)
    with pytest.raises(InputError, match="real numbers"):
        ProbeEmbed(2, **FAST).fit((p + 0j).tolist())


def test_the_public_methods_and_the_citations_are_documented():
    import plink.structure.embed as embed

    assert ProbeEmbed.get_params.__doc__
    assert "[34]" not in embed.__doc__  # a numbered reference with no bibliography
    assert "Vivaldi: A Decentralized Network Coordinate System" in " ".join(embed.__doc__.split())
    assert "[Dabek et al. 2004] F. Dabek" in embed.__doc__  # the reference that "Vivaldi [..]" cites
    assert ProbeEmbed(2, alpha=np.float32(1.5)).get_params()["alpha"] == np.float32(1.5)
