"""benchmarks/uniform_crossing.py: the step count of an exchange butterfly over racks, and the
residual after the price, on orders whose answer is known by hand."""

import numpy as np

from benchmarks.uniform_crossing import residuals, step_shares

CONTIGUOUS = [r for r in range(4) for h in range(4)]    # the rack of each rank
INTERLEAVED = [r for h in range(4) for r in range(4)]


def test_contiguous_crosses_racks_only_in_the_small_halving_steps():
    # steps 1 and 2 stay in the rack (1/2 + 1/4); steps 4 and 8 put 4 flows on every uplink,
    # both directions (4 x (1/8 + 1/16) = 0.75)
    assert step_shares(CONTIGUOUS, "halving") == (0.75, 1.5)
    # recursive doubling moves the whole vector every step: 1 + 1 + 4 + 4
    assert step_shares(CONTIGUOUS, "whole") == (8.0, 10.0)


def test_interleaved_crosses_every_uplink_in_the_large_steps():
    uniform, total = step_shares(INTERLEAVED, "halving")
    assert (uniform, total) == (3.0, 3.0 + 0.125 + 0.0625)


def test_a_step_loading_the_uplinks_unevenly_is_not_uniform():
    # swap the first hosts of racks 0 and 1: in steps 1 and 2 two pairs cross between those two
    # racks (2 flows on each of their uplinks, each direction; racks 2 and 3 idle), steps 4 and 8
    # still load every uplink with 4
    swapped = list(CONTIGUOUS)
    swapped[0], swapped[4] = swapped[4], swapped[0]
    assert step_shares(swapped, "halving") == (0.75, 0.5 * 2 + 0.25 * 2 + 0.125 * 4 + 0.0625 * 4)


def test_residuals_are_what_the_price_does_not_explain():
    price = np.log([1.0, 2.0, 3.0, 4.0])
    measured = price * 0.5 + np.array([0.0, 0.1, 0.0, -0.1])
    r = residuals(np.column_stack([price, measured, np.zeros(4)]))
    assert abs(r.sum()) < 1e-12
    # a measurement that is the price exactly leaves nothing
    assert np.allclose(residuals(np.column_stack([price, price * 0.7, np.zeros(4)])), 0.0)
    assert r[1] > 0 > r[3]
