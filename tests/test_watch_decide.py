"""plink watch's decision rule (``decide``, ``should_reorder``, ``relative_gain``) with a scripted solver.

The search is replaced by a stand-in that returns given costs, so every branch of the rule is
pinned exactly and fast; test_watch.py runs the rule end to end with the real search.
"""

from dataclasses import dataclass

import numpy as np
import pytest

from plink.errors import PlinkError
from plink.data.probefile import Host, ProbeData
from plink.watch import decide, relative_gain, should_reorder

NAMES = ["a", "b", "c", "d"]


def probe(names=NAMES):
    n = len(names)
    lat = np.arange(n * n, dtype=float).reshape(n, n) + 1.0
    np.fill_diagonal(lat, 0.0)
    return ProbeData(hosts=[Host(x) for x in names], latency=lat)


@dataclass
class Result:
    hosts: list
    cost_input: float
    cost_plink: float


class Solver:
    """Returns the probe's hosts reversed with the given costs; records what it was asked."""

    def __init__(self, cost_input=100.0, cost_plink=90.0):
        self.cost_input, self.cost_plink, self.calls = cost_input, cost_plink, []

    def __call__(self, p, algo, **search):
        self.calls.append((p.names, algo, search))
        self.last = Result(list(reversed(p.names)), self.cost_input, self.cost_plink)
        return self.last


def test_relative_gain():
    assert relative_gain(100.0, 90.0) == pytest.approx(0.1)
    assert relative_gain(100.0, 110.0) == pytest.approx(-0.1)
    assert relative_gain(0.0, 0.0) == 0.0
    assert relative_gain(-1.0, -2.0) == 0.0  # a zero/negative current cost never divides
    assert relative_gain(0.5, 0.25) == pytest.approx(0.5)
    assert should_reorder(100.0, 90.0, 0.05) is True  # complete unless told otherwise


@pytest.mark.parametrize("cur, new, min_gain, incomplete, want", [
    (100.0, 95.0, 0.05, False, True),    # exactly the threshold: adopted (>=)
    (100.0, 95.01, 0.05, False, False),  # just under it
    (100.0, 90.0, 0.05, True, False),    # incomplete probe: never
    (100.0, 100.0, 0.0, False, False),   # min_gain 0 still needs a strictly cheaper order
    (100.0, 99.99, 0.0, False, True),
    (0.0, -1.0, 0.0, False, True),       # gain 0 >= 0 and strictly cheaper
    (0.0, 0.0, 0.0, False, False),
])
def test_should_reorder(cur, new, min_gain, incomplete, want):
    assert should_reorder(cur, new, min_gain, incomplete) is want


def test_initial_searches_the_whole_probe():
    s = Solver(cost_plink=42.0)
    d = decide(probe(), None, s, "hd", {"size": 8}, 0.05)
    assert (d.status, d.order, d.cost_current, d.cost_new, d.gain, d.notes) == \
        ("initial", ["d", "c", "b", "a"], None, 42.0, None, [])
    assert s.calls == [(NAMES, "hd", {"size": 8})]
    assert d.result.hosts == ["d", "c", "b", "a"]


def test_searches_from_the_current_order_and_reorders_on_gain():
    s = Solver(100.0, 90.0)
    cur = ["c", "a", "d", "b"]
    d = decide(probe(), cur, s, "ring", {"seed": 1}, 0.1)
    assert s.calls == [(cur, "ring", {"seed": 1})]  # the probe handed over in the current order
    assert (d.status, d.order, d.cost_current, d.cost_new, d.notes) == \
        ("reordered", ["b", "d", "a", "c"], 100.0, 90.0, [])
    assert d.gain == pytest.approx(0.1)
    assert isinstance(d.cost_current, float) and isinstance(d.cost_new, float)
    assert d.result is s.last


def test_kept_below_the_threshold():
    cur = ["c", "a", "d", "b"]
    s = Solver(100, 91)
    d = decide(probe(), tuple(cur), s, "ring", {}, 0.1)
    assert (d.status, d.order, d.cost_current, d.cost_new, d.notes) == ("kept", cur, 100.0, 91.0, [])
    assert d.result is s.last  # the rejected search's report, for the caller to drop
    assert d.gain == pytest.approx(0.09)


def test_incomplete_probe_keeps_the_order_and_says_why():
    cur = ["c", "a", "d", "b"]
    d = decide(probe(), cur, Solver(100, 10), "ring", {}, 0.1, incomplete="unreachable: b")
    assert (d.status, d.order) == ("kept", cur)
    assert d.notes == ["the probe is incomplete (unreachable: b): order kept"]
    assert d.gain == pytest.approx(0.9)


@pytest.mark.parametrize("cur", [
    ["a", "b", "c", "x"],          # another host
    ["a", "b", "c"],               # one missing
    ["a", "b", "c", "d", "d"],     # same set, a duplicate
])
def test_hosts_changed_searches_a_new_order(cur):
    s = Solver(cost_plink=7.0)
    d = decide(probe(), cur, s, "dbt", {"seed": 3}, 0.05, source="the current order (s)")
    assert (d.status, d.order, d.cost_current, d.cost_new, d.gain) == \
        ("hosts-changed", ["d", "c", "b", "a"], None, 7.0, None)
    assert s.calls == [(NAMES, "dbt", {"seed": 3})] and d.result is s.last
    if len(set(cur)) == len(cur):
        assert len(d.notes) == 1 and d.notes[0].startswith("the current order (s) is from another host list")
    else:  # (the duplicate went unsaid before check_same_hosts refused duplicates)
        assert d.notes == ["the current order (s) lists host 'd' twice"]


def test_hosts_changed_strict_raises():
    with pytest.raises(PlinkError, match="--initial-order file is from another host list"):
        decide(probe(), ["a", "b", "x", "d"], Solver(), "ring", {}, 0.05, source="the --initial-order file",
               strict=True)


def test_hosts_changed_default_source_in_the_note():
    d = decide(probe(), ["a", "b", "x", "d"], Solver(), "ring", {}, 0.05)
    assert d.notes == ["the current order is from another host list: it lists 1 host(s) not in the probe (x) "
                       "and lacks 1 probed host(s) (c)"]


@pytest.mark.parametrize("cur, change", [
    (["a", "b", "c"], "hosts added: d"),                           # a host added (misspelled, unreachable)
    (["a", "b", "c", "d", "e"], "hosts removed: e"),
    (["a", "b", "c", "x"], "hosts added: d; hosts removed: x"),
])
def test_hosts_changed_on_an_incomplete_probe_writes_no_order(cur, change):
    """A misspelled host added to the list made a new order with the unreachable host mid-ring (and a rack
    split three ways), exit 4, the output not saying it was unreachable (outside-in check): the current
    order no longer fits and an incomplete probe never writes one, so the run is an error, before any search."""
    s = Solver(cost_plink=7.0)
    with pytest.raises(PlinkError) as exc:
        decide(probe(), cur, s, "ring", {}, 0.05, incomplete="unreachable: d", source="the current order (s)")
    assert str(exc.value) == (f"the host list changed ({change}) but the probe is incomplete (unreachable: d): no "
                              "new order written, nothing changed; the current order (s) is for the old host list "
                              "(make the hosts reachable or correct the host list, then rerun)")
    assert s.calls == []


def test_a_first_order_on_an_incomplete_probe_says_so():
    d = decide(probe(), None, Solver(), "ring", {}, 0.05, incomplete="unreachable: b")
    assert d.status == "initial" and d.notes == [
        "the probe is incomplete (unreachable: b): the first order was searched without the missing pairs' measurements"]
