"""Measured capacities that differ by less than the test's own noise are priced as one."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from plink.data.probefile import Uplink, from_matrix
from plink.pricing import find_groups, network
from plink.structure.capacities import _q95, capacity_classes, measurement_noise


def _passes(centre, spread):
    return [centre * math.exp(-spread), centre, centre * math.exp(spread)]


def test_noise_is_the_median_pass_difference_on_the_log_scale():
    # each link: passes at -s, 0, +s (log): differences s, s, 2s -> median s
    s = 0.01
    sigma = measurement_noise([_passes(42e6, s), _passes(72e6, s)])
    assert sigma == pytest.approx(s / (0.6744897501960817 * math.sqrt(2)))
    assert measurement_noise([[42e6], [40e6]]) is None


def test_two_links_split_exactly_at_the_two_sided_test():
    s = 0.01
    sigma = s / (0.6744897501960817 * math.sqrt(2))
    limit = _q95(2, 4) * sigma / math.sqrt(3)  # 2 links x (3 - 1) degrees of freedom
    close = capacity_classes([_passes(100.0, s), _passes(100.0 * math.exp(0.99 * limit), s)])
    far = capacity_classes([_passes(100.0, s), _passes(100.0 * math.exp(1.01 * limit), s)])
    assert close.classes == ((0, 1),) and close.pooled
    assert close.values[0] == close.values[1] == pytest.approx(np.median(close.values))
    assert far.classes == ((0,), (1,)) and not far.pooled
    assert far.values.tolist() == [100.0, pytest.approx(100.0 * math.exp(1.01 * limit))]


def test_equal_links_pool_and_a_faster_link_stays_apart():
    # case D's shape: three equal uplinks, one twice as fast; passes with 1% noise
    rng = np.random.default_rng(0)
    links = [list(c * np.exp(rng.normal(0, 0.01, 3))) for c in (36.5e6, 36.5e6, 73e6, 36.5e6)]
    cc = capacity_classes(links)
    assert sorted(cc.classes, key=len) == [(2,), tuple(sorted((0, 1, 3), key=lambda i: np.median(links[i])))]
    assert len(set(cc.values[[0, 1, 3]].tolist())) == 1 and cc.values[2] == pytest.approx(np.median(links[2]))
    assert cc.values[0] == pytest.approx(np.median(np.concatenate([links[i] for i in (0, 1, 3)])))


def test_a_persistently_slower_link_is_not_pooled_but_one_bad_pass_is_outvoted():
    steady = [_passes(42e6, 0.004) for _ in range(3)]
    slow = capacity_classes(steady + [_passes(40.6e6, 0.004)])  # 3.4% lower in every pass
    assert slow.classes == ((3,), (0, 1, 2))
    burst = capacity_classes(steady + [[42e6 * 0.996, 21e6, 42e6 * 1.004]])  # one pass hit by other load
    assert len(burst.classes) == 1 and sorted(burst.classes[0]) == [0, 1, 2, 3]
    assert burst.sigma < 0.01  # the burst does not widen the noise estimate (a median)


def test_one_pass_per_link_keeps_every_figure():
    cc = capacity_classes([[42e6], [40.7e6], [42.1e6]])
    assert cc.sigma is None and not cc.pooled and cc.values.tolist() == [42e6, 40.7e6, 42.1e6]
    assert cc.classes == ((1,), (0,), (2,))


@pytest.mark.parametrize("bad", [[[0.0, 1.0]], [[float("nan")]], [[]], [[-1.0, 2.0]]])
def test_bad_passes_are_refused(bad):
    with pytest.raises(ValueError, match="link 0"):
        capacity_classes(bad)


def _four_racks(up_passes, down_passes=None):
    n = 16
    lab = np.repeat(np.arange(4), 4)
    lat = np.where(lab[:, None] == lab[None, :], 30.0, 120.0)
    np.fill_diagonal(lat, 0)
    pd = from_matrix(lat, [f"h{i}" for i in range(n)])
    down_passes = up_passes if down_passes is None else down_passes
    pd.uplinks = [Uplink(tuple(range(4 * g, 4 * g + 4)), float(np.median(u)), float(np.median(d)),
                         {"passes_up_bps": list(u), "passes_down_bps": list(d)})
                  for g, (u, d) in enumerate(zip(up_passes, down_passes))]
    return pd, lab


def test_network_prices_uplinks_within_noise_alike_and_says_so():
    # proof case A seed 10's figures: 41.9 / 41.5 / 40.7 / 42.1 MB/s, here with a pass spread that covers them
    pd, lab = _four_racks([_passes(c, 0.02) for c in (41.9e6, 41.5e6, 40.7e6, 42.1e6)])
    net = network(pd, find_groups(pd, labels=lab))
    assert len(set(net.up.tolist())) == 1 and net.up.tolist() == net.down.tolist()
    assert any("8 measured uplink capacities (up and down) priced as 1" in note for note in net.notes)
    raw = network(pd, find_groups(pd, labels=lab), pool_uplinks=False)  # each at its own median
    assert raw.up.tolist() == [41.9e6, 41.5e6, 40.7e6, 42.1e6] and not any("priced as" in n for n in raw.notes)
    # the same medians from passes that agree to 0.1%: the slow rack is a capacity of its own
    pd, lab = _four_racks([_passes(c, 0.001) for c in (41.9e6, 41.5e6, 40.7e6, 42.1e6)])
    net = network(pd, find_groups(pd, labels=lab))
    assert net.up[2] == pytest.approx(40.7e6) and net.up[2] < min(net.up[[0, 1, 3]])


def test_network_without_passes_keeps_each_measured_uplink():
    lat = np.full((8, 8), 10.0)
    np.fill_diagonal(lat, 0)
    pd = from_matrix(lat, [f"h{i}" for i in range(8)])
    pd.uplinks = [SimpleNamespace(hosts=(0, 1, 2, 3), up_bps=41.9e6, down_bps=42.2e6),
                  SimpleNamespace(hosts=(4, 5, 6, 7), up_bps=40.7e6, down_bps=40.7e6)]
    net = network(pd, find_groups(pd, labels=np.repeat([0, 1], 4)))
    assert net.up.tolist() == [41.9e6, 40.7e6] and net.down.tolist() == [42.2e6, 40.7e6]
    assert not any("priced as" in note for note in net.notes)
