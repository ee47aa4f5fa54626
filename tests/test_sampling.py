"""Sample-size decisions: the p10 confidence interval, stability, confidence, host overhead."""

import math

import numpy as np
import pytest

from plink.probes.sampling import confidence, host_overhead, is_stable, p10_interval, quantile_sorted


@pytest.mark.parametrize("k", [1, 2, 7, 20, 101])
def test_p10_and_quantiles_match_numpy(k):
    x = list(np.random.default_rng(k).exponential(10, k))
    p, lo, hi = p10_interval(x)
    assert p == pytest.approx(np.percentile(x, 10)) and lo <= hi
    for q in (0.1, 0.5, 0.9):
        assert quantile_sorted(sorted(x), q) == pytest.approx(np.percentile(x, 100 * q))


def test_interval_covers_the_true_p10_as_promised():
    rng = np.random.default_rng(0)
    true = -math.log(0.9)  # p10 of Exp(1)
    for k, level in ((30, 0.9), (100, 0.9), (100, 0.5)):
        hits = sum(lo <= true <= hi for lo, hi in (p10_interval(rng.exponential(1, k), level)[1:] for _ in range(1500)))
        assert hits / 1500 >= level - 0.02, (k, level, hits)


def test_stability_grows_with_samples_and_shrinks_with_noise():
    rng = np.random.default_rng(1)
    quiet = 50 + rng.exponential(1, 20)
    busy = 50 + rng.exponential(400, 20)
    assert is_stable(quiet) and not is_stable(busy)
    assert confidence(quiet) > 0.9 > confidence(busy)
    assert not is_stable([]) and confidence([]) == 0.0
    # more samples of the same noisy distribution: a narrower interval
    many = 50 + rng.exponential(400, 2000)
    assert (p10_interval(many)[2] - p10_interval(many)[1]) < (p10_interval(busy)[2] - p10_interval(busy)[1])


def test_host_overhead_is_the_self_ping_p10():
    h = host_overhead({0: [10.0, 11.0, 30.0], 2: [5.0]}, 3)
    assert h[0] == pytest.approx(np.percentile([10, 11, 30], 10)) and math.isnan(h[1]) and h[2] == 5.0


def test_pair_confidence_reader_is_backward_compatible(tmp_path):
    from plink.data.probefile import ProbeData, load
    from plink.data.simulate import simulate_datacenter
    from plink.probes.sampling import pair_confidence

    old = simulate_datacenter(racks=2, hosts_per_rack=2, seed=0)
    assert pair_confidence(old) is None  # no confidence recorded
    conf = [[None, 0.9, 0.5, None], [0.8, None, 1.0, 0.7], [0.6, 1.0, None, 0.2], [None, 0.7, 0.3, None]]
    new = ProbeData(hosts=old.hosts, latency=old.latency, meta=dict(old.meta, confidence=conf))
    new.save(tmp_path / "p.json")
    c = pair_confidence(load(tmp_path / "p.json"))
    assert c[0, 1] == c[1, 0] == 0.8 and c[2, 3] == c[3, 2] == 0.2 and np.isnan(c[0, 3]) and c[0, 0] == 1.0
