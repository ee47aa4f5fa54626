"""plink group / plink show: the structure of the network."""

from __future__ import annotations

import json
import math

import click
import numpy as np

from plink.cli._app import (check_option_files, cli, _echo_json, check_picture_format, matrix_input_options, note_groups_beyond, _stderr_console, _stdout_console, plot_file,
                            print_table, refuse_input_as_output, refuse_json_with_dash, stdout_if_dash)
from plink.errors import UnmeasuredHostError


def render_groups_report(groups, console) -> None:
    from rich.table import Table

    m, p = groups.metrics, groups.params
    t = Table(title=f"{len(groups.hosts)} hosts in {groups.k} group{'s' * (groups.k != 1)} "
                    f"(alpha {p.get('alpha')}, {p.get('dims')}-D, elasticity {p.get('elasticity')})",
              title_justify="left", show_edge=False)
    t.add_column("metric")
    t.add_column("value", justify="right")
    sizes = m.get("sizes", groups.sizes())
    t.add_row("group sizes", f"{min(sizes)}..{max(sizes)} (allowed {m.get('min_size')}..{m.get('max_size')})")
    t.add_row("embedding median rel. error", f"{m['median_rel_error']:.1%}")
    t.add_row("embedding stress", f"{m['stress']:.3f}")
    if m.get("paia_raw") is not None and m.get("paia_embedded") is not None:
        t.add_row("PAIA raw -> embedded", f"{m['paia_raw']:.1%} -> {m['paia_embedded']:.1%}")
        t.add_row(f"AMI vs true {m.get('truth_level') or 'locations'}", f"{m['ami']:.3f}")
    t.add_row("time (embed + group)", f"{m['embed_seconds']:.1f} s + {m['group_seconds']:.1f} s")
    print_table(console, t)


def _floor2(x: float) -> str:
    """``x`` to 2 decimals, rounded down: a host under the 0.25 of "low" never shows as 0.25."""
    return f"{math.floor(x * 100 + 1e-9) / 100:.2f}"


def render_structure(groups, console) -> None:
    """What the inferred hierarchy says: groups per level, sizes, members, how sure."""
    from rich.table import Table

    levels = groups.levels or [groups.labels]
    m = groups.metrics
    n = len(groups.hosts)
    head = " / ".join(str(int(lv.max()) + 1) for lv in levels)
    title = (f"{n} hosts: 1 group" if len(levels) == 1 and int(levels[0].max()) == 0
             else f"{n} hosts: {head} groups" + (" (finest level first)" if len(levels) > 1 else ""))
    t = Table(title=title, title_justify="left", show_edge=False)
    t.add_column("level")
    t.add_column("groups", justify="right")
    t.add_column("sizes")
    # k-means groups, not racks found (files before 2026-12-01 name no method: theirs has an elasticity)
    params = groups.params or {}
    balanced = params.get("method") == "balanced" or ("method" not in params and "elasticity" in params)
    for i, lv in enumerate(levels):
        sizes = np.bincount(lv)
        name = ("balanced (k-means)" if balanced else "finest (e.g. racks)") if i == 0 else f"level {i + 1}"
        shown = " ".join(map(str, sizes[:24])) + (" ..." if sizes.size > 24 else "")
        t.add_row(name, str(sizes.size), shown)
    print_table(console, t)
    conf = groups.confidence
    g = Table(show_edge=False, title="finest groups", title_justify="left")
    g.add_column("group", justify="right")
    g.add_column("hosts", justify="right")
    if conf is not None:
        g.add_column("confidence mean/min", justify="right")
    g.add_column("members")
    for k, members in enumerate(groups.members()):
        names = [groups.hosts[i] for i in members]
        shown = ", ".join(names[:8]) + (f", ... (+{len(names) - 8})" if len(names) > 8 else "")
        row = [str(k), str(len(members))]
        if conf is not None:  # (one group: a host's silhouette is not defined, "-")
            row.append(f"{conf[members].mean():.2f} / {_floor2(conf[members].min())}" if groups.k > 1 else "-")
        g.add_row(*row, shown)
        if k >= 39:
            g.add_row("...", "", *([""] if conf is not None else []), f"{groups.k - 40} more groups")
            break
    print_table(console, g)
    if groups.k == 1 and m.get("one_group_why"):
        console.print(f"one group: {m['one_group_why']}")  # (a small cluster's cut the permutation test refused)
    if conf is not None and groups.k == 1:
        console.print("confidence: - (one group: nothing to tell its hosts apart from)")
    elif conf is not None:
        low = m.get("low_confidence_hosts")
        if low is None:
            from plink.structure.hierarchy import LOW_CONFIDENCE

            low = [groups.hosts[i] for i in np.flatnonzero(conf < LOW_CONFIDENCE)]
        line = f"confidence: mean {conf.mean():.2f}, min {_floor2(conf.min())}"
        line += (f"; low (< 0.25): {', '.join(low[:12])}{' ...' if len(low) > 12 else ''}" if low
                 else "; no low-confidence host")
        console.print(line)
    alone = m.get("alone_hosts")
    if alone:
        # with K given, a host may be alone because K asked for that many groups, not for being near no rack
        why = "the K given asks for that many groups" if (groups.params or {}).get("groups") else "near no rack"
        console.print(f"alone (a group of their own, {why}; plink schedule puts each with its nearest "
                      f"host): {', '.join(alone[:12])}{' ...' if len(alone) > 12 else ''}")
    if m.get("bandwidth_used"):
        console.print("note: --groups K used the pair bandwidths: these K groups differ from the latencies' "
                      "cut into K alone")
    if m.get("split_by_bandwidth"):
        from plink.structure.probegroups import FAR_RATIO

        k = m["split_by_bandwidth"]
        console.print(f"split by the pair bandwidths: {k} more finest group{'s' if k > 1 else ''} than the "
                      f"latency gives (parts measured {FAR_RATIO:g}x or more slower between than within)")
    if "ami" in m:
        console.print(f"AMI vs true {m.get('truth_level') or 'locations'}: {round(m['ami'], 3) + 0.0:.3f}"
                      + (f" (levels: {', '.join(f'{round(v, 3) + 0.0:.3f}' + (f' vs {w}' if w else '') for v, w in zip(m['ami_levels'], m.get('ami_levels_against') or [None] * len(m['ami_levels'])))})"
                         if m.get("ami_levels") else ""))


@cli.command()
@click.argument("probefile", type=click.Path(dir_okay=False))
@click.option("--groups", "n_groups", type=int,
              help="Fix the number of groups K (default: chosen from the data; balanced: round(sqrt(N))).")
@click.option("--method", type=click.Choice(["hierarchy", "balanced"]), default="hierarchy", show_default=True,
              help="hierarchy: infer racks (and rows) with K from the data; balanced: the dissertation's "
                   "ProbeEmbed + balanced k-means into sqrt(N) groups (what 2LHA uses).")
@click.option("--levels", "max_levels", default=3, show_default=True, type=int,
              help="hierarchy: at most this many nested levels.")
@click.option("--elasticity", default=1.0, show_default=True, type=float,
              help="balanced: elasticity in [1, 2]: 1 = equal sizes, 2 = each group >= N/(2k).")
@click.option("--alpha", default=1.0, show_default=True, type=float, help="balanced: ProbeEmbed exponent in [1, 2].")
@click.option("--dims", default=10, show_default=True, type=int, help="balanced: embedding dimensions.")
@click.option("--no-heights", is_flag=True, help="balanced: do not fit per-host startup costs.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="Random seed: of the shuffled copies a split is tested against (hierarchy), of ProbeEmbed and k-means (balanced).")
@click.option("--plot", type=click.Path(dir_okay=False), callback=plot_file,
              help="Write a picture of the groups (needs matplotlib; the format follows the extension, PNG without one).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), callback=stdout_if_dash, help="Groups file to write (default: stdout).")
@click.option("--json", "as_json", is_flag=True, help="With -o: print the metrics as JSON on stdout (without -o, stdout is the groups file, metrics included).")
@matrix_input_options()
def group(probefile, n_groups, method, max_levels, elasticity, alpha, dims, no_heights, seed, plot, output,
          as_json, load_input) -> None:
    """Find the network's structure: racks (and rows above them), K from the data.

    Default (--method hierarchy): compares hosts by their whole row of
    latencies, clusters them (average linkage) and keeps a split only when it
    beats the same split on shuffled data, then corrects what noise does to
    the clusters, in this order: a group as loose as its row is cut again
    (into its racks, or into the one rack it holds and the hosts left; a
    host there near no one stays alone, a group of 1), a rack cut in two is
    merged, a host left alone joins its nearest host's group when that host
    is near on the racks' scale, and one much nearer another rack moves
    there (README, "plink
    group"; docs/structure.md says why).  A probe with pair bandwidths
    (plink probe --bandwidth) has its racks split where the bandwidths
    measured the parts far apart, as plink order does (with --groups K,
    parts the bandwidths keep apart are joined last).  Prints the
    groups per level, their hosts and how sure plink is of each host (on
    stderr; without -o stdout is the groups file).  --groups K fixes K.
    --method balanced is the dissertation's ProbeEmbed + balanced k-means
    into sqrt(N) equal groups (what 2LHA uses).  With ground truth in the
    probe file, reports the AMI against the true racks.

    PROBEFILE is a plink probe file (.json) or a plain matrix (.csv/.tsv/.txt/.npy;
    latency, or bandwidth with --kind bandwidth; host names from a header row, a
    name column or --hosts).

    \b
    Example:
      plink simulate --racks 4 --rows 2 --hosts-per-rack 5-9 --seed 1 -o dc.json
      plink group dc.json -o groups.json
      plink show dc.json --groups groups.json --plot heatmap.png
    """
    refuse_input_as_output({"-o": output, "--plot": plot}, {"PROBEFILE": probefile})
    refuse_json_with_dash(as_json, "the metrics")  # (without -o, stdout is the groups file, metrics in it)
    check_picture_format(plot)
    ctx = click.get_current_context()
    own = {"balanced": ("elasticity", "alpha", "dims", "no_heights"), "hierarchy": ("max_levels",)}
    for m, names in own.items():
        for name in names:
            if m != method and ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
                flag = {"no_heights": "--no-heights", "max_levels": "--levels"}.get(name, f"--{name}")
                raise click.UsageError(f"{flag} applies to --method {m} (this is --method {method})")
    from plink.structure.hierarchy import check_positive_int

    # before the matrix is read (its notes would come out first)
    if n_groups is not None:
        check_positive_int(n_groups, "--groups")
    check_positive_int(max_levels, "--levels")
    probe = load_input(probefile)
    if method == "balanced":
        from plink.structure.group import group_hosts

        result = group_hosts(probe, n_groups=n_groups, elasticity=elasticity, alpha=alpha, dims=dims,
                             heights=not no_heights, seed=seed)
    else:
        from plink.structure.hierarchy import infer_groups

        try:
            result = infer_groups(probe, n_groups=n_groups, max_levels=max_levels, seed=seed)
        except UnmeasuredHostError as exc:  # the message names the host; add the file
            raise UnmeasuredHostError(f"{probefile}: {exc}") from None
    if plot:
        if result.coordinates is not None:
            from plink.plots import plot_groups

            plot_groups(result.coordinates, result.labels, plot)
        else:
            from plink.plots import plot_hierarchy

            plot_hierarchy(probe, result, plot)
    if output:
        result.save(output)
    else:
        click.echo(json.dumps(result.to_dict(), indent=1, allow_nan=False))
    if as_json:
        if output:
            _echo_json({"output": output, "metrics": result.metrics, "params": result.params})
        return
    if method == "balanced":
        render_groups_report(result, _stderr_console())
    else:
        render_structure(result, _stderr_console())
    for path in (output, plot):
        if path:
            click.echo(f"wrote {path}", err=True)


def _figures(figures, width: int = 40, sep: str = "  ") -> str:
    """Labelled figures (``p90 22.74 us``) on lines of at most ``width`` characters, never split: one line
    of five wrapped in an 80-column terminal between a label and its number, or a number and its unit
    ("p90" / "22.74 us")."""
    lines: list[str] = []
    for fig in figures:
        if lines and len(lines[-1]) + len(sep) + len(fig) <= width:
            lines[-1] += sep + fig
        else:
            lines.append(fig)
    return "\n".join(lines)


def render_show(summary, console) -> None:
    from rich.table import Table

    t = Table(title=f"{summary['hosts']} host{'s' * (summary['hosts'] != 1)}", title_justify="left", show_edge=False)
    t.add_column("")
    t.add_column("value", justify="right")
    t.add_row("measured pairs", f"{summary['measured_pairs']} of {summary['pairs']} ({summary['coverage']:.1%})"
              if summary["pairs"] else "none (one host: no pairs)")
    if summary.get("bandwidth_pairs", summary["measured_pairs"]) != summary["measured_pairs"]:
        t.add_row("pairs with a bandwidth", f"{summary['bandwidth_pairs']} of {summary['pairs']}")
    from plink.data.summary import crossing
    from plink.units import format_bandwidth, format_us

    fit = max(16, min(40, console.width - 30))  # the value column's room beside the labels
    pct = summary.get("latency_us")
    if pct:  # each figure in its own readable unit (a matrix in ms or s reads as ms or s)
        t.add_row("latency (RTT)", _figures((f"{k} {format_us(v)}" for k, v in pct.items()), fit))
    pct = summary.get("bandwidth_gbps")
    if pct:
        t.add_row("pair bandwidth", _figures((f"{k} {format_bandwidth(v)}" for k, v in pct.items()), fit))
    for u in summary.get("uplinks", []):
        t.add_row(f"uplink of {u['hosts']} host{'s' * (u['hosts'] != 1)} ({u['first']}{', ...' * (u['hosts'] > 1)})",
                  _figures([f"up {format_bandwidth(u['up_mbit'] / 1e3)} /",
                            f"down {format_bandwidth(u['down_mbit'] / 1e3)},", crossing(u["hosts"], u.get("flows"))],
                           fit, " "))
    if summary.get("truth_counts"):
        t.add_row("ground truth", ", ".join(f"{v} {k}{'' if v == 1 else 's'}" for k, v in summary["truth_counts"].items()))
    if "groups" in summary:
        sizes = summary["group_sizes"]
        t.add_row("groups", f"{summary['groups']} (sizes {min(sizes)}..{max(sizes)})")
        for key, label in (("median_latency_within_groups_us", "median RTT within groups"),
                           ("median_latency_between_groups_us", "median RTT between groups")):
            if key in summary:
                t.add_row(label, format_us(summary[key]))
        for key, label in (("median_bandwidth_within_groups_gbps", "median bandwidth within groups"),
                           ("median_bandwidth_between_groups_gbps", "median bandwidth between groups")):
            if key in summary:
                t.add_row(label, format_bandwidth(summary[key]))
    print_table(console, t)
    other = sum(u.get("a_group_shown") is False for u in summary.get("uplinks", []))
    if other:
        console.print(f"note: {other} of the {len(summary['uplinks'])} uplink tests ran on hosts that are not one of "
                      "the groups shown (the probe's groups when it ran): plink order does not price them as one "
                      "group's uplink (its report says how it uses them)")
    if summary.get("bandwidth_concurrent"):
        console.print("note: pair bandwidths were measured in rounds of N/2 pairs at once (every host in one), so a pair whose round "
                      "shared a rack uplink reads less than its path alone; the uplink rows are what a rack's hosts "
                      "get crossing at once")


@cli.command()
@click.argument("probefile", type=click.Path(dir_okay=False))
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False), help="A groups file from 'plink group' (may name more hosts, e.g. a rack map of the whole site: those are left out, with a note).")
@click.option("--plot", type=click.Path(dir_okay=False), callback=plot_file,
              help="Write a heatmap of the matrix in group order (needs matplotlib; the format follows the extension, PNG without one).")
@click.option("--order", "orderfile", type=click.Path(dir_okay=False),
              help="With --plot: two heatmaps, as probed and in this order file's rank order.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-structure", is_flag=True, help="Without --groups: do not infer the structure (faster).")
@matrix_input_options()
def show(probefile, groups_file, plot, orderfile, as_json, no_structure, load_input) -> None:
    """Summarise a probe file and the structure in it; optionally draw it.

    Prints the structure (groups per level, sizes, hosts, confidence): from
    --groups, else inferred as 'plink group' does (--no-structure skips it).
    --plot draws the hierarchy (one bar per level) beside the heatmap in
    hierarchy order, so racks show up as blocks.

    PROBEFILE is a plink probe file (.json) or a plain matrix (.csv/.tsv/.txt/.npy;
    latency, or bandwidth with --kind bandwidth; host names from a header row, a
    name column or --hosts).

    \b
    Example:
      plink show dc.json
      plink show dc.json --groups groups.json --plot heatmap.png
      plink show dc.json --groups groups.json --order order.json --plot before-after.png
    """
    from plink.data.summary import display_order, summarize

    if orderfile and not plot:
        raise click.BadParameter("--order draws the before/after heatmaps of --plot PNG", param_hint="--order")
    refuse_input_as_output({"--plot": plot}, {"PROBEFILE": probefile, "--groups": groups_file, "--order": orderfile})
    check_option_files({"--groups": groups_file, "--order": orderfile})
    check_picture_format(plot)

    probe = load_input(probefile)
    groups = None
    if groups_file:
        from plink.data.groupfile import load_groups

        # a rack map of the whole site is fine (as for plink order): its other hosts are left out
        from plink.order import group_labels

        whole = load_groups(groups_file)
        group_labels(probe, groups_file, whole)  # every probe host in it, or plink order's one-line error
        groups = whole.restricted_to(probe.names)
        note_groups_beyond(groups_file, whole, probe.names)
    no_groups = None
    if not groups_file and not no_structure and probe.n >= 2:
        from plink.errors import PlinkError
        from plink.structure.hierarchy import infer_groups

        try:
            groups = infer_groups(probe)
        except PlinkError as exc:  # too sparse for structure: the summary still helps
            no_groups = f"no structure inferred: {exc}"
    summary = summarize(probe, groups)
    if no_groups:
        summary["structure_note"] = no_groups
    if groups is not None and groups.levels is not None:
        summary["levels"] = [int(lv.max()) + 1 for lv in groups.levels]
    if groups is not None and groups.confidence is not None:
        summary["confidence_mean"] = round(float(groups.confidence.mean()), 4)
        summary["confidence_min"] = round(float(groups.confidence.min()), 4)
    if plot and orderfile:  # before/after reordering
        from plink.data.orderfile import read_order
        from plink.plots import plot_heatmaps_before_after
        from plink.watch import check_same_hosts

        names = read_order(orderfile)
        names = check_same_hosts(names, probe, f"the order file {orderfile}")  # (in the probe's spelling)
        labels = groups.aligned_to(probe.names) if groups is not None else None
        plot_heatmaps_before_after(probe, [probe.index(n) for n in names], plot, labels=labels)
    elif plot and groups is not None:
        from plink.plots import plot_hierarchy

        plot_hierarchy(probe, groups, plot)
    elif plot:
        from plink.plots import plot_heatmap

        plot_heatmap(probe, display_order(probe, None), plot)
    if as_json:
        _echo_json(summary)
        return
    render_show(summary, _stdout_console())
    if groups is not None:
        render_structure(groups, _stdout_console())
    if no_groups:
        click.echo(f"plink: note: {no_groups}", err=True)
    if plot:
        click.echo(f"wrote {plot}", err=True)
