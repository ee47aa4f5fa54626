"""plink group / plink show: the structure of the network."""

from __future__ import annotations

import json

import click

from plink.cli._app import _echo_json, _stderr_console, _stdout_console, cli, matrix_input_options


def render_groups_report(groups, console) -> None:
    from rich.table import Table

    m, p = groups.metrics, groups.params
    t = Table(title=f"{len(groups.hosts)} hosts in {groups.k} groups "
                    f"(alpha {p.get('alpha')}, {p.get('dims')}-D, elasticity {p.get('elasticity')})",
              title_justify="left", show_edge=False)
    t.add_column("metric")
    t.add_column("value", justify="right")
    sizes = m.get("sizes", groups.sizes())
    t.add_row("group sizes", f"{min(sizes)}..{max(sizes)} (allowed {m.get('min_size')}..{m.get('max_size')})")
    t.add_row("embedding median rel. error", f"{m['median_rel_error']:.1%}")
    t.add_row("embedding stress", f"{m['stress']:.3f}")
    if "paia_raw" in m:
        t.add_row("PAIA raw -> embedded", f"{m['paia_raw']:.1%} -> {m['paia_embedded']:.1%}")
        t.add_row(f"AMI vs true {m.get('truth_level') or 'locations'}", f"{m['ami']:.3f}")
    t.add_row("time (embed + group)", f"{m['embed_seconds']:.1f} s + {m['group_seconds']:.1f} s")
    console.print(t)


@cli.command()
@click.argument("probefile", type=click.Path(dir_okay=False))
@click.option("--groups", "n_groups", type=int, help="Number of groups k (default: round(sqrt(N))).")
@click.option("--elasticity", default=1.0, show_default=True, type=float,
              help="Balance elasticity in [1, 2]: 1 = equal sizes, 2 = each group >= N/(2k).")
@click.option("--alpha", default=1.0, show_default=True, type=float, help="ProbeEmbed exponent in [1, 2].")
@click.option("--dims", default=10, show_default=True, type=int, help="Embedding dimensions.")
@click.option("--no-heights", is_flag=True, help="Do not fit per-host startup costs.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--plot", type=click.Path(dir_okay=False), help="Write a picture of the groups (needs matplotlib).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Groups file to write (default: stdout).")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON on stdout.")
@matrix_input_options()
def group(probefile, n_groups, elasticity, alpha, dims, no_heights, seed, plot, output, as_json, load_input) -> None:
    """Embed the hosts (ProbeEmbed) and split them into balanced locality groups.

    Denoises the probed latencies with a low-dimensional embedding, then runs
    constrained k-means with k = sqrt(N) groups by default. When the probe
    file has ground truth, reports PAIA (raw vs embedded) and the AMI of the
    groups against the true racks.

    \b
    Example:
      plink simulate --racks 8 --hosts-per-rack 8 --seed 1 -o dc.json
      plink group dc.json -o groups.json --plot groups.png
      plink show dc.json --groups groups.json --plot heatmap.png
    """
    from plink.structure.group import group_hosts

    probe = load_input(probefile)
    result = group_hosts(probe, n_groups=n_groups, elasticity=elasticity, alpha=alpha, dims=dims,
                         heights=not no_heights, seed=seed)
    if plot:
        from plink.plots import plot_groups

        plot_groups(result.coordinates, result.labels, plot)
    if output:
        result.save(output)
    else:
        click.echo(json.dumps(result.to_dict(), indent=1, allow_nan=False))
    if as_json:
        if output:
            _echo_json({"output": output, "metrics": result.metrics, "params": result.params})
        return
    render_groups_report(result, _stderr_console())
    for path in (output, plot):
        if path:
            click.echo(f"wrote {path}", err=True)


def render_show(summary, console) -> None:
    from rich.table import Table

    t = Table(title=f"{summary['hosts']} hosts", title_justify="left", show_edge=False)
    t.add_column("")
    t.add_column("value", justify="right")
    t.add_row("measured pairs", f"{summary['measured_pairs']} of {summary['pairs']} ({summary['coverage']:.1%})")
    for key, unit in (("latency_us", "us"), ("bandwidth_gbps", "Gbit/s")):
        pct = summary.get(key)
        if pct:
            t.add_row(f"{key.split('_')[0]} ({unit})", "  ".join(f"{k} {v:g}" for k, v in pct.items()))
    if summary.get("truth_counts"):
        t.add_row("ground truth", ", ".join(f"{v} {k}" for k, v in summary["truth_counts"].items()))
    if "groups" in summary:
        sizes = summary["group_sizes"]
        t.add_row("groups", f"{summary['groups']} (sizes {min(sizes)}..{max(sizes)})")
        for key, label in (("median_latency_within_groups_us", "median RTT within groups"),
                           ("median_latency_between_groups_us", "median RTT between groups")):
            if key in summary:
                t.add_row(label, f"{summary[key]:g} us")
    console.print(t)


@cli.command()
@click.argument("probefile", type=click.Path(dir_okay=False))
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False), help="A groups file from 'plink group'.")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="Write a heatmap of the matrix in group order (needs matplotlib).")
@click.option("--order", "orderfile", type=click.Path(dir_okay=False),
              help="With --plot: two heatmaps, as probed and in this order file's rank order.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@matrix_input_options()
def show(probefile, groups_file, plot, orderfile, as_json, load_input) -> None:
    """Summarise a probe file; optionally draw its matrix as a heatmap.

    The heatmap orders hosts by group (with --groups), else by true location
    when the file has ground truth, so racks show up as blocks.

    \b
    Example:
      plink show dc.json
      plink show dc.json --groups groups.json --plot heatmap.png
      plink show dc.json --groups groups.json --order order.json --plot before-after.png
    """
    from plink.data.summary import display_order, summarize

    if orderfile and not plot:
        raise click.BadParameter("--order draws the before/after heatmaps of --plot PNG", param_hint="--order")

    probe = load_input(probefile)
    groups = None
    if groups_file:
        from plink.data.groupfile import load_groups

        groups = load_groups(groups_file)
        groups.aligned_to(probe.names)  # same hosts, or a one-line error
    summary = summarize(probe, groups)
    if plot and orderfile:  # before/after reordering
        from plink.data.orderfile import read_order
        from plink.plots import plot_heatmaps_before_after
        from plink.watch import check_same_hosts

        names = read_order(orderfile)
        check_same_hosts(names, probe, f"the order file {orderfile}")
        labels = groups.aligned_to(probe.names) if groups is not None else None
        plot_heatmaps_before_after(probe, [probe.index(n) for n in names], plot, labels=labels)
    elif plot:
        from plink.plots import plot_heatmap

        order = display_order(probe, groups)
        labels = groups.aligned_to(probe.names) if groups is not None else None
        plot_heatmap(probe, order, plot, labels=labels)
    if as_json:
        _echo_json(summary)
        return
    render_show(summary, _stdout_console())
    if plot:
        click.echo(f"wrote {plot}", err=True)
