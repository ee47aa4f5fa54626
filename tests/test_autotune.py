"""Quicktune and Finetune move load away from slow nodes; stats file and plink retune."""

import json
import re

import numpy as np
import pytest

from plink.schedule.autotune import (blame, check_finetune, finetune, load_stats, model_stats, quicktune, stats_from_dict)
from plink.cli import main
from plink.schedule.dag import Schedule, load_schedule
from plink.errors import OptionError, PlinkError
from plink.data.probefile import from_matrix
from plink.schedule.plan import node_loads, plan_schedule
from plink.schedule.timemodel import pair_cost
from plink.schedule.verify import verify
from plink.schedule.dag import expand

N = 16
SLOW = 5


def probe(slow=None, factor=4.0):
    lat = np.full((N, N), 40.0)
    bw = np.full((N, N), 10.0)
    labels = np.repeat(np.arange(4), 4)
    bw[labels[:, None] != labels[None, :]] = 2.5
    if slow is not None:
        bw[slow, :] /= factor
        bw[:, slow] /= factor
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, np.nan)
    return from_matrix(lat, [f"h{i:02d}" for i in range(N)], bandwidth=bw), labels


@pytest.fixture(scope="module")
def setup():
    p, labels = probe()
    plan = plan_schedule(p, labels, size=N * 8 * 1024, chunk=1024, capacity="cardinality")  # 8 GMs per node
    slow_probe, _ = probe(SLOW)
    stats = model_stats(plan, pair_cost(slow_probe))
    return plan, stats


def test_balanced_stats_move_nothing(setup):
    plan, _ = setup
    p, _ = probe()
    stats = model_stats(plan, pair_cost(p))
    res = finetune(plan, stats, epsilon=1.05)
    assert res.ratio <= 1.05
    assert res.moved_gm == res.moved_lm == 0
    np.testing.assert_array_equal(res.plan.gm, plan.gm)


def test_finetune_moves_away_from_the_bottleneck_exponentially(setup):
    plan, stats = setup
    b = blame(stats)
    assert int(np.argmax(b)) == SLOW
    state = None
    cur = plan
    moved = []
    for _ in range(3):
        res = finetune(cur, stats, state)
        assert res.source == f"h{SLOW:02d}"
        moved.append(res.moved_gm)
        assert verify(expand(res.plan)).ok
        cur, state = res.plan, res.state
    assert moved == [1, 2, 4]  # 1, then exponentially more while the bottleneck stays
    assert (cur.gm == SLOW).sum() == (plan.gm == SLOW).sum() - 7
    assert node_loads(cur)[SLOW] < node_loads(plan)[SLOW]
    # another bottleneck resets the streak
    assert finetune(cur, stats, {"bottleneck": "h00", "streak": 5}).state["streak"] == 0


def test_finetune_moves_lms_when_no_gm_left(setup):
    plan, stats = setup
    p = plan.copy()
    g = p.labels[SLOW]
    mates = [i for i in range(N) if p.labels[i] == g and i != SLOW]
    for c in np.flatnonzero(p.gm == SLOW):
        p.lm[c, g] = mates[0]
        p.gm[c] = mates[0]
    res = finetune(p, stats)
    assert res.moved_gm == 0 and res.moved_lm == 1
    assert (res.plan.lm[:, g] == SLOW).sum() == (p.lm[:, g] == SLOW).sum() - 1
    assert res.target in {f"h{m:02d}" for m in mates}


def test_quicktune_shifts_load_from_slow_node(setup):
    plan, stats = setup
    new = quicktune(plan, stats)
    assert verify(expand(new)).ok
    before, after = node_loads(plan), node_loads(new)
    assert after[SLOW] < 0.5 * before[SLOW]
    g = plan.labels[SLOW]
    assert (new.gm_group() == g).sum() < (plan.gm_group() == g).sum()  # its group's outbound bandwidth fell


def test_stats_roundtrip_and_errors(tmp_path, setup):
    plan, stats = setup
    path = tmp_path / "stats.json"
    stats.save(path)
    back = load_stats(path, plan.hosts)
    np.testing.assert_allclose(np.nan_to_num(back.nbytes), np.nan_to_num(stats.nbytes))
    doc = json.loads(path.read_text())
    # names differing only in case are one host, as in every other file plink reads
    upper = {**doc, "links": [{**ln, "src": ln["src"].upper(), "dst": ln["dst"].upper()} for ln in doc["links"]]}
    np.testing.assert_allclose(np.nan_to_num(stats_from_dict(upper, plan.hosts).nbytes), np.nan_to_num(stats.nbytes))
    doc["links"][0]["src"] = "nohost"
    with pytest.raises(PlinkError, match="unknown host 'nohost'"):
        stats_from_dict(doc, plan.hosts)
    with pytest.raises(PlinkError, match="not a plink stats"):
        stats_from_dict({"format": "x"}, plan.hosts)
    doc["links"] = [{"src": "h00", "dst": "h01", "bytes": 10, "seconds": 0}]
    with pytest.raises(PlinkError, match="'seconds' must be > 0 when"):
        stats_from_dict(doc, plan.hosts)


def test_retune_cli(tmp_path, setup, capsys):
    plan, stats = setup
    Schedule.from_plan(plan).save(tmp_path / "s.json", "compact")
    stats.save(tmp_path / "st.json")
    for i, expect in enumerate([1, 2]):
        src = tmp_path / ("s.json" if i == 0 else f"n{i - 1}.json")
        with pytest.raises(SystemExit) as exc:
            main(["retune", str(src), str(tmp_path / "st.json"), "-o", str(tmp_path / f"n{i}.json"), "--json"])
        out, err = capsys.readouterr()
        assert exc.value.code == 0, err
        info = json.loads(out)
        assert info["moved_gm"] == expect and info["from"] == f"h{SLOW:02d}"
    assert load_schedule(tmp_path / "n1.json").autotune == {"bottleneck": f"h{SLOW:02d}", "streak": 1}
    with pytest.raises(SystemExit) as exc:
        main(["retune", str(tmp_path / "s.json"), str(tmp_path / "st.json"), "--quick", "-o", str(tmp_path / "q.json")])
    assert exc.value.code == 0
    bad = json.loads((tmp_path / "st.json").read_text())
    bad["links"][0]["dst"] = "stranger"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["retune", str(tmp_path / "s.json"), str(tmp_path / "bad.json"), "-o", str(tmp_path / "x.json")])
    _, err = capsys.readouterr()
    assert exc.value.code == 1 and "unknown host 'stranger'" in err and len(err.strip().splitlines()) == 1
    # an out-of-range value is a usage error naming its option (exit 1, "epsilon must be ...", before)
    with pytest.raises(SystemExit) as exc:
        main(["retune", str(tmp_path / "s.json"), str(tmp_path / "st.json"), "-o", str(tmp_path / "x.json"),
              "--epsilon", "nan"])
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and err.startswith("plink: error: --epsilon must be >= 1, got nan")
    # -o - and --json both wrote to stdout: the schedule, then the summary (not one JSON document)
    with pytest.raises(SystemExit) as exc:
        main(["retune", str(tmp_path / "s.json"), str(tmp_path / "st.json"), "-o", "-", "--json"])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == "" and "would both write to stdout" in err


def test_finetune_refuses_weights_that_are_not_numbers(setup):
    plan, stats = setup[0], setup[1]
    for kw, msg in (({"beta": float("nan")}, "beta must be a weight in [0, 1e+06], got nan"),
                    ({"gamma": -1.0}, "gamma must be a weight in [0, 1e+06], got -1.0"),
                    ({"beta": float("inf")}, "beta must be a weight in [0, 1e+06], got inf"),
                    ({"beta": 1e308}, "beta must be a weight in [0, 1e+06], got 1e+308"),
                    ({"gamma": 1e6 + 1}, "gamma must be a weight in [0, 1e+06], got 1000001.0"),
                    ({"epsilon": float("nan")}, "epsilon must be >= 1, got nan")):
        with pytest.raises(PlinkError) as e:
            finetune(plan, stats, **kw)
        assert str(e.value) == msg
    with pytest.raises(OptionError, match="^--epsilon must be >= 1, got 0.5$"):  # a usage error: exit 2
        check_finetune(1.0, 1.0, 0.5, prefix="--")
    assert finetune(plan, stats, beta=0.0, gamma=0.0).ratio == 1.0  # zero weights: no blame, no move
    assert finetune(plan, stats, beta=1e6, gamma=1e6).ratio == finetune(plan, stats).ratio  # relative weights


def test_a_bad_field_of_a_stats_link_is_named():
    """"rtt_us": "x" was reported as "needs numeric 'bytes' and 'seconds'"."""
    hosts = ["a", "b"]
    link = {"src": "a", "dst": "b", "bytes": 100, "seconds": 0.1}
    with pytest.raises(PlinkError, match=r"link 0: 'rtt_us' must be a number, not 'x'"):
        stats_from_dict({"format": "plink-stats", "version": 1, "links": [dict(link, rtt_us="x")]}, hosts, "s.json")
    with pytest.raises(PlinkError, match=r"link 0: 'seconds' must be a number, not 'soon'"):
        stats_from_dict({"format": "plink-stats", "version": 1, "links": [dict(link, seconds="soon")]}, hosts, "s.json")
    with pytest.raises(PlinkError, match=r"link 0: needs numeric 'bytes' and 'seconds' \('bytes' is missing\)"):
        stats_from_dict({"format": "plink-stats", "version": 1, "links": [{"src": "a", "dst": "b", "seconds": 1}]}, hosts, "s.json")
    assert stats_from_dict({"format": "plink-stats", "version": 1, "links": [dict(link, rtt_us=None)]}, hosts, "s.json").nbytes[0, 1] == 100
    for key, bad, msg in (("rtt_us", float("inf"), "'rtt_us' must be finite and >= 0, not inf"),
                          ("rtt_us", float("nan"), "'rtt_us' must be finite and >= 0, not nan"),
                          ("rtt_us", -1, "'rtt_us' must be finite and >= 0, not -1"),
                          ("bytes", True, "'bytes' must be a number, not 'True'"),
                          ("seconds", "5", "'seconds' must be a number, not '5'"),
                          ("seconds", 0, "'seconds' must be > 0 when 'bytes' is")):
        with pytest.raises(PlinkError, match=re.escape(msg)):  # inf went on to a blame of 300 digits
            stats_from_dict({"format": "plink-stats", "version": 1, "links": [dict(link, **{key: bad})]}, hosts, "s")


def test_retune_refuses_stats_that_leave_hosts_out(tmp_path, setup, capsys):
    """Stats of 16 of a schedule's 64 hosts were taken: Finetune blamed the hosts without stats nothing
    ("blame max/min inf") and moved a GM onto one of them; --quick changed 3140 masters and the load
    max/min went from 1.02 to 4.5 (an outside-in check). Every node of a schedule sends, so a host
    that sent nothing is a rank whose stats were not merged in: refused, naming it."""
    plan, stats = setup
    Schedule.from_plan(plan).save(tmp_path / "s.json", "compact")
    doc = stats.to_dict()
    doc["links"] = [row for row in doc["links"] if row["src"] != "h03"]
    (tmp_path / "part.json").write_text(json.dumps(doc))
    for extra in ([], ["--quick"]):
        with pytest.raises(SystemExit) as exc:
            main(["retune", str(tmp_path / "s.json"), str(tmp_path / "part.json"), "-o", str(tmp_path / "x.json"),
                  *extra])
        _, err = capsys.readouterr()
        assert exc.value.code == 1 and len(err.strip().splitlines()) == 1
        assert f"no link sent by 1 of the schedule's {len(plan.hosts)} hosts ('h03')" in err
        assert not (tmp_path / "x.json").exists()
