import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plink.probes.rounds import check_rounds, remaining_rounds, round_robin


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 70))
def test_every_pair_once_no_host_twice_per_round(n):
    rounds = round_robin(n)
    check_rounds(n, rounds)
    pairs = [p for r in rounds for p in r]
    assert sorted(pairs) == sorted(itertools.combinations(range(n), 2))
    for r in rounds:
        hosts = [h for p in r for h in p]
        assert len(hosts) == len(set(hosts))


@pytest.mark.parametrize("n, expected", [(0, 0), (1, 0), (2, 1), (3, 3), (4, 3), (7, 7), (8, 7), (16, 15), (17, 17)])
def test_round_counts(n, expected):
    rounds = round_robin(n)
    assert len(rounds) == expected
    if n >= 2:
        # full rounds: N/2 pairs (even), (N-1)/2 pairs with one bye (odd)
        assert all(len(r) == n // 2 for r in rounds)


def test_odd_n_every_host_has_exactly_one_bye():
    n = 9
    byes = [set(range(n)) - {h for p in r for h in p} for r in round_robin(n)]
    assert all(len(b) == 1 for b in byes)
    assert sorted(h for b in byes for h in b) == list(range(n))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 30), st.data())
def test_remaining_rounds_skip_done_pairs_and_dead_hosts(n, data):
    allpairs = list(itertools.combinations(range(n), 2))
    done = data.draw(st.sets(st.sampled_from(allpairs)))
    dead = data.draw(st.sets(st.integers(0, n - 1), max_size=2))
    rest = remaining_rounds(n, [(b, a) for a, b in done], dead)
    got = [p for _, ps in rest for p in ps]
    assert sorted(got) == sorted(p for p in allpairs if p not in done and not (set(p) & dead))
    assert all(ps for _, ps in rest)
    idx = [r for r, _ in rest]
    assert idx == sorted(set(idx))


def test_bad_n():
    with pytest.raises(ValueError):
        round_robin(-1)
