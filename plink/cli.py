"""The ``plink`` command line: parse, call the library, render.

Exit codes: 0 success, 1 failure (bad input, unreachable hosts, ...),
2 usage error; see each command's ``--help`` for codes of its own.
Every error is one line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import json
import sys

import click

from . import __version__
from .errors import PlinkError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2



def _load_probe(path: str, hosts: str | None = None, unit: str = "us"):
    from .probefile import load

    return load(path, hosts_file=hosts, unit=unit)


def _echo_json(obj) -> None:
    click.echo(json.dumps(obj, indent=1, allow_nan=False))


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True, highlight=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="plink")
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
def cli(debug: bool) -> None:
    """Locality-aware rank orders for collectives on rented cloud VMs.

    \b
    Typical use, right before mpirun / torchrun:
      plink probe hosts.txt -o probe.json
      plink order probe.json --algo ring -o hosts.txt
    \b
    Try it without a cluster:
      plink simulate --racks 8 --hosts-per-rack 8 --seed 1 -o dc.json
      plink order dc.json --algo ring -o hosts.txt
    """


# ---------------------------------------------------------------------------
# simulate


@cli.command()
@click.option("--racks", default=8, show_default=True, type=int, help="Racks per row.")
@click.option("--hosts-per-rack", default=8, show_default=True, type=int)
@click.option("--rows", default=1, show_default=True, type=int, help="Rows per cluster.")
@click.option("--clusters", default=1, show_default=True, type=int, help="Clusters per datacenter.")
@click.option("--dcs", default=1, show_default=True, type=int, help="Datacenters.")
@click.option("--rack-us", default=20.0, show_default=True, help="RTT inside a rack (us).")
@click.option("--row-us", default=60.0, show_default=True, help="RTT between racks of a row (us).")
@click.option("--cluster-us", default=120.0, show_default=True, help="RTT between rows (us).")
@click.option("--dc-us", default=250.0, show_default=True, help="RTT between clusters (us).")
@click.option("--inter-dc-us", default=2000.0, show_default=True, help="RTT between datacenters (us).")
@click.option("--height-us", default=5.0, show_default=True, help="Max per-host startup cost (us).")
@click.option("--jitter", default=0.05, show_default=True, help="Log-normal multiplicative noise sigma.")
@click.option("--outliers", "outlier_frac", default=0.0, show_default=True, help="Fraction of pairs hit by heavy-tailed noise.")
@click.option("--outlier-scale", default=1.0, show_default=True, help="Scale of the heavy-tailed noise.")
@click.option("--asymmetry", default=0.0, show_default=True, help="Fraction of pairs with asymmetric RTT.")
@click.option("--missing", "missing_frac", default=0.0, show_default=True, help="Fraction of pairs left unmeasured.")
@click.option("--bandwidth/--no-bandwidth", default=False, show_default=True, help="Also generate a bandwidth matrix.")
@click.option("--host-gbps", default=25.0, show_default=True, help="Bandwidth inside a rack (Gbit/s).")
@click.option("--oversubscription", default=4.0, show_default=True, help="Bandwidth divisor per level above the rack.")
@click.option("--no-shuffle", is_flag=True, help="Keep hosts in rack order (default: random order).")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Probe file to write (default: stdout).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of text.")
def simulate(output, as_json, no_shuffle, **kw) -> None:
    """Generate a synthetic datacenter probe file with ground truth.

    \b
    Example:
      plink simulate --racks 8 --hosts-per-rack 8 --seed 1 -o dc.json
      plink simulate --racks 4 --rows 4 --outliers 0.05 --missing 0.02 -o noisy.json
    """
    from .simulate import simulate_datacenter

    probe = simulate_datacenter(shuffle=not no_shuffle, **kw)
    summary = {"hosts": probe.n, "missing_pairs": probe.n_missing_pairs(), "output": output or "-"}
    if output is None:
        click.echo(probe.dumps(), nl=False)
        return
    probe.save(output)
    if as_json:
        _echo_json(summary)
    else:
        click.echo(f"wrote {output}: {probe.n} hosts, {summary['missing_pairs']} missing pairs", err=True)


# ---------------------------------------------------------------------------
# order


def render_order_report(result, console) -> None:
    from rich.table import Table

    from .units import format_size, format_us

    proof = {True: "yes", False: "no", None: "not proven"}[result.proven_optimal]
    title = (
        f"{result.algo} over {len(result.hosts)} hosts, {format_size(result.size)}, "
        f"{result.model} model"
    )
    t = Table(title=title, title_justify="left", show_edge=False)
    t.add_column("order")
    t.add_column("predicted cost", justify="right")
    t.add_column("plink speedup", justify="right")
    t.add_row("input order", format_us(result.cost_input), f"{result.speedup_vs_input:.2f}x")
    t.add_row(f"median of {result.n_random} random", format_us(result.cost_random_median), f"{result.speedup_vs_random:.2f}x")
    t.add_row("plink order", format_us(result.cost_plink), "")
    console.print(t)
    solver = result.solver.get("name", "?")
    extra = ""
    if result.lower_bound is not None and result.proven_optimal is not True:
        extra = f", lower bound {format_us(result.lower_bound)}"
    console.print(f"proven optimal: {proof} (solver: {solver}{extra}); {result.elapsed:.1f} s")
    if result.missing_pairs:
        console.print(f"note: {result.missing_pairs} unmeasured pairs were priced as the worst measured pair")


@cli.command()
@click.argument("probefile", type=click.Path(dir_okay=False))
@click.option("--algo", type=click.Choice(["ring", "hd", "dbt", "bcube"]), default="ring", show_default=True,
              help="Collective algorithm to optimise for.")
@click.option("--size", default="25MiB", show_default=True, help="All-reduce size (bytes, or KiB/MiB/GiB/KB/MB/GB).")
@click.option("--base", default=2, show_default=True, type=int, help="BCube base (--algo bcube).")
@click.option("--time-limit", default=5.0, show_default=True, type=float, help="Seconds of search.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--format", "fmt", type=click.Choice(["plain", "json"]), default="plain", show_default=True,
              help="Format of the order written with -o (or to stdout).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Order file to write (default: stdout).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option("--hosts", type=click.Path(dir_okay=False), help="Host names for a plain CSV/NPY matrix.")
@click.option("--unit", type=click.Choice(["us", "ms", "s", "ns"]), default="us", show_default=True,
              help="Latency unit of a plain CSV/NPY matrix.")
@click.option("--no-bandwidth", is_flag=True, help="Ignore a bandwidth matrix; cost by latency only.")
def order(probefile, algo, size, base, time_limit, seed, fmt, output, as_json, hosts, unit, no_bandwidth) -> None:
    """Find the rank order that minimises the collective's cost model.

    PROBEFILE is a plink probe file (.json) or a plain latency matrix
    (.csv/.tsv/.npy). Writes the hosts in rank order and reports the predicted
    cost of the input order, of the median random order and of the plink order.

    \b
    Example:
      plink simulate --racks 8 --hosts-per-rack 8 --seed 1 -o dc.json
      plink order dc.json --algo ring -o hosts.txt
      mpirun --hostfile hosts.txt --map-by seq ...
    """
    from .order import order_hosts
    from .orderfile import render, write_order
    from .units import parse_size

    probe = _load_probe(probefile, hosts, unit)
    result = order_hosts(
        probe, algo, size=parse_size(size), time_limit=time_limit, seed=seed, base=base,
        use_bandwidth=not no_bandwidth,
    )
    if output:
        write_order(output, result, probe, fmt)
    if as_json:
        _echo_json(result.to_dict())
        return
    if not output:
        click.echo(render(result, probe, fmt), nl=False)
    render_order_report(result, _stderr_console())
    if output:
        click.echo(f"wrote {output}", err=True)


# ---------------------------------------------------------------------------
# probe (probing: plink probe)
#
#
#
#


# ---------------------------------------------------------------------------
# group / show (embedding and grouping: plink group, plink show)


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
@click.option("--hosts", type=click.Path(dir_okay=False), help="Host names for a plain CSV/NPY matrix.")
@click.option("--unit", type=click.Choice(["us", "ms", "s", "ns"]), default="us", show_default=True,
              help="Latency unit of a plain CSV/NPY matrix.")
def group(probefile, n_groups, elasticity, alpha, dims, no_heights, seed, plot, output, as_json, hosts, unit) -> None:
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
    from .group import group_hosts

    probe = _load_probe(probefile, hosts, unit)
    result = group_hosts(probe, n_groups=n_groups, elasticity=elasticity, alpha=alpha, dims=dims,
                         heights=not no_heights, seed=seed)
    if plot:
        from .plots import plot_groups

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
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--hosts", type=click.Path(dir_okay=False), help="Host names for a plain CSV/NPY matrix.")
@click.option("--unit", type=click.Choice(["us", "ms", "s", "ns"]), default="us", show_default=True,
              help="Latency unit of a plain CSV/NPY matrix.")
def show(probefile, groups_file, plot, as_json, hosts, unit) -> None:
    """Summarise a probe file; optionally draw its matrix as a heatmap.

    The heatmap orders hosts by group (with --groups), else by true location
    when the file has ground truth, so racks show up as blocks.

    \b
    Example:
      plink show dc.json
      plink show dc.json --groups groups.json --plot heatmap.png
    """
    from .summary import display_order, summarize

    probe = _load_probe(probefile, hosts, unit)
    groups = None
    if groups_file:
        from .groupfile import load_groups

        groups = load_groups(groups_file)
        groups.aligned_to(probe.names)  # same hosts, or a one-line error
    summary = summarize(probe, groups)
    if plot:
        from .plots import plot_heatmap

        order = display_order(probe, groups)
        labels = groups.aligned_to(probe.names) if groups is not None else None
        plot_heatmap(probe, order, plot, labels=labels)
    if as_json:
        _echo_json(summary)
        return
    render_show(summary, _stdout_console())
    if plot:
        click.echo(f"wrote {plot}", err=True)


def _stdout_console():
    from rich.console import Console

    return Console(highlight=False)


# ---------------------------------------------------------------------------
# schedule / retune (2LHA: plink schedule, plink retune)
#
#
#
#


# ---------------------------------------------------------------------------
# launchers / watch (launchers: plink node-rank, plink watch)
#
#
#
#


# ---------------------------------------------------------------------------
# entry point


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one-line errors, documented exit codes."""
    args = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="plink", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("plink: aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        if debug:
            raise
        cmd = exc.ctx.command_path if exc.ctx is not None else "plink"
        msg = " ".join(exc.format_message().split())
        click.echo(f"{cmd}: error: {msg} (see '{cmd} --help')", err=True)
        sys.exit(EXIT_USAGE)
    except click.ClickException as exc:
        if debug:
            raise
        click.echo(f"plink: error: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(exc.exit_code)
    except PlinkError as exc:
        if debug:
            raise
        click.echo(f"plink: error: {' '.join(str(exc).split())}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("plink: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(EXIT_FAILURE)
    except Exception as exc:  # a bug: say so in one line, traceback with --debug
        if debug:
            raise
        click.echo(f"plink: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)", err=True)
        sys.exit(EXIT_FAILURE)
    sys.exit(EXIT_OK)
