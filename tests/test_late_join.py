"""benchmarks/late_join_netns.py: the fluid of one shared link and the report from saved data."""

import numpy as np
import pytest

from benchmarks.late_join_netns import fluid_single_link, main, render

RATE = 43.75e6  # 350 Mbit/s in bytes/s
MIB = 1 << 20


def test_fluid_single_link():
    alone = MIB / RATE
    assert fluid_single_link([0.0], MIB, RATE) == pytest.approx([alone])
    assert fluid_single_link([0.0] * 4, MIB, RATE) == pytest.approx([4 * alone] * 4)
    # 3 flows for 2 units, then 4 until the 3 are done, then the late one alone: it takes 2 units, not 4
    end = fluid_single_link([0, 0, 0, 2 * alone], MIB, RATE)
    assert end[:3] == pytest.approx([10 / 3 * alone] * 3) and end[3] == pytest.approx(4 * alone)
    # a flow that starts after the others are done has the link to itself
    assert fluid_single_link([0.0, 10.0], MIB, RATE) == pytest.approx([alone, 10.0 + alone])


def _doc():
    alone = MIB / RATE
    runs = []
    for delay, late_end in ((-1.0, alone), (0.0, 4 * alone), (2e3 * alone, 6 * alone)):
        start = [0.0, 0.0, 0.0, max(delay, 0.0) / 1e3] if delay >= 0 else [-1.0, -1.0, -1.0, 0.0]
        end = [4 * alone] * 3 + [late_end] if delay >= 0 else [-1.0, -1.0, -1.0, late_end]
        runs.append({"pass": 0, "ack": "delayed", "size": MIB, "delay_ms": delay,
                     "runs": [{"start": start, "end": end}] * 3})
    return {"format": "plink-late-join", "cluster": {"hosts_per_rack": [4, 4], "host_mbit": 350, "uplink_mbit": 350,
                                                      "extra_hops": 4},
            "sizes": [MIB], "delays_ms": [0.0, 2e3 * alone], "repeats": 3, "started": "t0", "finished": "t1",
            "runs": runs}


def test_render_sets_each_delay_beside_the_fluid():
    lines = render(_doc()).splitlines()
    rows = [x for x in lines if x.startswith("1 MiB")]
    assert rows[0] == "1 MiB | delayed | alone | 24 / 24 | - | 24 / 24 | 100%"
    assert rows[1] == "1 MiB | delayed | 0 | 96 / 96 | 96 / 96 | 96 / 96 | 100%"
    # late by 2 units (48 ms): measured 4 units after its start (as if it had started with the others),
    # the fluid 2; the others end at 4 units (the fluid: 10/3); the uplink 4 units of work in 6
    late = rows[2].split(" | ")
    assert late[2].startswith("47.9")
    assert late[3:] == ["96 / 48", "96 / 80", "144 / 96", "67%"]


def test_arguments(capsys):
    for argv, msg in ((["--hosts-per-rack", "1"], "--hosts-per-rack must be 2..8"),
                      (["--delays", "-3"], "--delays must be 0..5000"),
                      (["--sizes", "lots"], "")):
        with pytest.raises(SystemExit):
            main(argv)
        assert msg in capsys.readouterr().err
