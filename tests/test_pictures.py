"""plink show --order: heatmaps before/after reordering (PNG); bad input."""

import os
import subprocess
import sys

import pytest

from plink.data.simulate import simulate_datacenter

pytest.importorskip("matplotlib")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "plink", *args], capture_output=True, text=True, env=env, timeout=120)


def test_before_after_png_and_a_foreign_order(tmp_path):
    probe = simulate_datacenter(racks=3, hosts_per_rack=4, seed=1)
    p = tmp_path / "dc.json"
    probe.save(p)
    order = tmp_path / "order.txt"
    order.write_text("".join(f"{n}\n" for n in sorted(probe.names)))
    png = tmp_path / "ba.png"
    proc = run("show", str(p), "--order", str(order), "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    order.write_text("".join(f"{n}\n" for n in probe.names[:-1] + ["stranger"]))
    proc = run("show", str(p), "--order", str(order), "--plot", str(png))
    assert proc.returncode == 1 and "another host list" in proc.stderr and len(proc.stderr.splitlines()) == 1
    proc = run("show", str(p), "--order", str(order))  # --order without --plot
    assert proc.returncode == 2 and "--order" in proc.stderr


def test_a_bandwidth_matrix_is_not_labelled_rtt(tmp_path):
    from plink.data.inputs import load_input
    import numpy as np

    from plink.plots import _what

    path = tmp_path / "bw.csv"
    np.savetxt(path, np.array([[0, 10, 1], [10, 0, 1], [1, 1, 0]]) * 1.0, delimiter=",")
    assert _what(load_input(path, kind="bandwidth", unit="Gbit/s").probe) == "1 / bandwidth (µs per byte)"
    assert _what(load_input(path, unit="us").probe) == "RTT (µs)"


def test_a_wan_matrix_is_drawn_in_ms_not_in_hundreds_of_thousands_of_us(tmp_path):
    from plink.data.inputs import load_input
    import numpy as np

    from plink.plots import _shown, _what

    path = tmp_path / "rtt.csv"
    m = np.array([[0, 19, 180], [19, 0, 200], [180, 200, 0]]) * 1.0
    np.savetxt(path, m, delimiter=",")
    probe = load_input(path, unit="ms").probe  # stored in us
    assert _what(probe) == "RTT (ms)"
    assert np.nanmax(_shown(probe)) == 200.0  # the colour bar's values in ms, as the text reports them
    probe = load_input(path, unit="s").probe
    assert _what(probe) == "RTT (s)" and np.nanmax(_shown(probe)) == 200.0


def test_heatmaps_leave_the_diagonal_blank_and_name_the_hosts(tmp_path, monkeypatch):
    """A host with itself is no measurement: drawn as 0 it looked like the fastest pair and pulled
    the colour scale to 0. Up to MAX_NAMED hosts the axes carry the names, in the order drawn."""
    import numpy as np

    from plink import plots
    from plink.data.probefile import from_matrix

    probe = simulate_datacenter(racks=2, hosts_per_rack=3, seed=2)
    shown = plots._shown(probe)
    assert np.isnan(np.diag(shown)).all() and np.isfinite(shown[~np.eye(probe.n, dtype=bool)]).all()
    assert np.diag(probe.latency).tolist() == [0.0] * probe.n  # the probe itself is untouched
    drawn = {}
    real_save = plots._save

    def keep(fig, path):
        drawn[str(path)] = [(ax.get_title(), [t.get_text() for t in ax.get_xticklabels()],
                             [t.get_text() for t in ax.get_yticklabels()]) for ax in fig.axes]
        real_save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    order = np.array([5, 4, 3, 2, 1, 0])
    plots.plot_heatmaps_before_after(probe, order, tmp_path / "ba.png")
    axes = drawn[str(tmp_path / "ba.png")]
    assert axes[0][1] == probe.names and axes[1][1] == [probe.names[i] for i in order] == axes[1][2]
    big = from_matrix(np.ones((plots.MAX_NAMED + 1,) * 2), [f"h{i}" for i in range(plots.MAX_NAMED + 1)])
    plots.plot_heatmap(big, np.arange(big.n), tmp_path / "big.png")
    assert "h0" not in drawn[str(tmp_path / "big.png")][0][1]  # too many to read: index ticks


def test_group_boundaries_are_drawn_only_where_they_leave_the_matrix_readable(tmp_path, monkeypatch):
    """The lines between groups are white, like the missing pairs: at PlanetLab's 163 groups they
    covered the heatmap and read as missing data. A level's lines are drawn up to MAX_CUTS groups
    (its bar beside the matrix shows any number); the coarser level's red lines still are."""
    import numpy as np

    from plink import plots
    from plink.data.groupfile import Groups

    probe = simulate_datacenter(racks=plots.MAX_CUTS + 5, hosts_per_rack=2, rows=3, seed=1)
    fine = np.arange(probe.n) // 2
    coarse = fine * 3 // (probe.n // 2)  # 3 rows
    assert plots._cuts(fine).size == 0 and plots._cuts(coarse).tolist() == [
        i + 0.5 for i in range(probe.n - 1) if coarse[i] != coarse[i + 1]]
    few = np.arange(probe.n) * plots.MAX_CUTS // probe.n
    assert len(plots._cuts(few)) == plots.MAX_CUTS - 1
    lines = {}
    real_save = plots._save

    def keep(fig, path):
        lines[str(path)] = [(line.get_color(), ax) for ax in fig.axes for line in ax.get_lines()]
        real_save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    groups = Groups(hosts=probe.names, labels=fine, levels=[fine, coarse])
    plots.plot_hierarchy(probe, groups, tmp_path / "h.png")
    colours = [c for c, _ in lines[str(tmp_path / "h.png")]]
    assert colours and set(colours) == {"red"} and len(colours) == 2 * 2  # 3 rows: 2 cuts, both axes


def test_a_matrix_with_no_pair_measured_gets_no_colour_bar(tmp_path, monkeypatch):
    """With nothing measured the colour bar showed a scale of 0..1 in the matrix's unit."""
    import numpy as np

    from plink import plots
    from plink.data.probefile import ProbeData, Host

    probe = ProbeData(hosts=[Host(f"h{i}") for i in range(4)], latency=np.full((4, 4), np.nan))
    drawn = {}
    real_save = plots._save

    def keep(fig, path):
        drawn[str(path)] = (len(fig.axes), [t.get_text() for ax in fig.axes for t in ax.texts])
        real_save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    plots.plot_heatmap(probe, np.arange(4), tmp_path / "h.png")
    plots.plot_heatmaps_before_after(probe, np.arange(4), tmp_path / "ba.png")
    assert drawn[str(tmp_path / "h.png")] == (1, ["no pair measured"])  # one axes: no colour bar's
    assert drawn[str(tmp_path / "ba.png")] == (2, ["no pair measured"] * 2)
    measured = simulate_datacenter(racks=2, hosts_per_rack=2, seed=0)
    plots.plot_heatmap(measured, np.arange(4), tmp_path / "m.png")
    assert drawn[str(tmp_path / "m.png")] == (2, [])


def test_group_plot_projects_many_coordinates_on_their_principal_axes():
    """plink group --method balanced --plot drew the first 2 of 10 embedding coordinates: groups apart
    only in coordinates 3 and 4 lay on top of each other. More than two coordinates are now drawn on
    their first two principal axes, labelled with the share of the spread each shows."""
    import numpy as np

    from plink.plots import group_projection

    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2, 3], 6)
    centres = np.zeros((4, 10))
    centres[1, 2] = centres[3, 2] = 10.0  # the groups differ in coordinates 3 and 4 only
    centres[2, 3] = centres[3, 3] = 10.0
    x = centres[labels] + rng.normal(scale=0.3, size=(24, 10))
    xy, xlabel, ylabel = group_projection(x)
    assert xy.shape == (24, 2) and "of 10 coordinates" in xlabel and "%" in ylabel

    def separation(points):  # smallest distance between group means over the largest spread inside one
        means = np.array([points[labels == g].mean(axis=0) for g in range(4)])
        gaps = min(np.linalg.norm(means[a] - means[b]) for a in range(4) for b in range(a + 1, 4))
        return gaps / max(points[labels == g].std(axis=0).max() for g in range(4))

    assert separation(xy) > 10 and separation(x[:, :2]) < 1  # the first two coordinates would hide them
    two = rng.normal(size=(5, 2))
    np.testing.assert_array_equal(group_projection(two)[0], two)  # two coordinates: drawn as they are
    one = group_projection(two[:, :1])[0]
    assert one.shape == (5, 2) and not one[:, 1].any()
    with pytest.raises(ValueError, match=r"\(N, d\)"):
        group_projection(np.zeros(5))
