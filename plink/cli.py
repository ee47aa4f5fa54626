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
from .emitters import FORMATS
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
    smt = result.solver.get("smt")
    if result.proven_optimal and smt and smt.get("tolerance"):
        extra = f", to within {smt['tolerance']:.2g} us"
    if result.lower_bound is not None and result.proven_optimal is not True:
        gap = result.cost_plink / result.lower_bound - 1 if result.lower_bound > 0 else float("inf")
        extra = f", lower bound {format_us(result.lower_bound)}: at most {gap:.1%} above optimal"
    if smt and not result.proven_optimal:
        extra += f"; Z3: {smt['status']} after {smt['seconds']:.1f} s"
    console.print(f"proven optimal: {proof} (solver: {solver}{extra}); {result.elapsed:.1f} s")
    if result.missing_pairs:
        console.print(f"note: {result.missing_pairs} unmeasured pairs were priced as the worst measured pair")


def _render_order(result, probe, fmt, slots=1, labels=None, output=None) -> str:
    """The order (or a launcher file) as text: plain/json order files, else an emitter."""
    from .orderfile import render

    if fmt in ("plain", "json"):
        return render(result, probe, fmt)
    from .emitters import emit

    hosts = [probe.hosts[i] for i in result.order]
    lab = None if labels is None else [labels[i] for i in result.order]
    return emit(fmt, hosts, slots=slots, algo=result.algo, labels=lab, order_file=output or "THIS_FILE")


def _check_format_options(fmt: str, slots: int, groups_file: str | None) -> None:
    """Usage errors of --format/--slots/--groups, before any work."""
    if slots < 1:
        raise click.BadParameter(f"must be >= 1 (processes per host), got {slots}", param_hint="--slots")
    if fmt in ("plain", "json") and slots != 1:
        raise click.BadParameter(f"the {fmt} order file has one entry per host; --slots applies to launcher formats",
                                 param_hint="--slots")
    if fmt == "slurm-topology" and not groups_file:
        raise click.BadParameter("--format slurm-topology needs the groups (plink group -o groups.json)",
                                 param_hint="--groups")


@cli.command()
@click.argument("probefile", type=click.Path(dir_okay=False))
@click.option("--algo", type=click.Choice(["ring", "hd", "dbt", "bcube"]), default="ring", show_default=True,
              help="Collective algorithm to optimise for.")
@click.option("--size", default="25MiB", show_default=True, help="All-reduce size (bytes, or KiB/MiB/GiB/KB/MB/GB).")
@click.option("--base", default=2, show_default=True, type=int, help="BCube base (--algo bcube).")
@click.option("--time-limit", default=5.0, show_default=True, type=float, help="Seconds of search.")
@click.option("--jobs", default=1, show_default=True, type=int, help="Search processes (0: all cores).")
@click.option("--smt-time", default=0.0, show_default=True, type=float,
              help="Seconds for Z3 to improve the order or prove it optimal (0: skip).")
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False),
              help="Groups file (plink group): also start from the grouping; the switches of --format slurm-topology.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="plain", show_default=True,
              help="Order file (plain, json) or launcher file (see 'plink emit --help') written with -o or to stdout.")
@click.option("--slots", default=1, show_default=True, type=int,
              help="Processes (GPUs) per host; the ranks of one host stay contiguous.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Order file to write (default: stdout).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option("--hosts", type=click.Path(dir_okay=False), help="Host names for a plain CSV/NPY matrix.")
@click.option("--unit", type=click.Choice(["us", "ms", "s", "ns"]), default="us", show_default=True,
              help="Latency unit of a plain CSV/NPY matrix.")
@click.option("--no-bandwidth", is_flag=True, help="Ignore a bandwidth matrix; cost by latency only.")
def order(probefile, algo, size, base, time_limit, jobs, smt_time, groups_file, seed, fmt, slots, output, as_json,
          hosts, unit, no_bandwidth) -> None:
    """Find the rank order that minimises the collective's cost model.

    PROBEFILE is a plink probe file (.json) or a plain latency matrix
    (.csv/.tsv/.npy). Writes the hosts in rank order and reports the predicted
    cost of the input order, of the median random order and of the plink order.

    \b
    Example:
      plink simulate --racks 8 --hosts-per-rack 8 --seed 1 -o dc.json
      plink order dc.json --algo ring -o hosts.txt
      plink order dc.json --algo hd --time-limit 30 --jobs 0 --smt-time 60 -o hosts.txt

    Small clusters (ring up to 16 hosts, other algorithms up to ~9) get a
    certified optimum; the report says whether the order is proven optimal
    and the best lower bound known.

    \b
    Launcher files (--slots N processes per host; every format: 'plink emit --help'):
      plink order dc.json --format openmpi --slots 8 -o hosts.ompi
      mpirun --hostfile hosts.ompi --map-by seq -np 512 ./app
    """
    from .order import group_labels, order_hosts
    from .units import parse_size

    _check_format_options(fmt, slots, groups_file)
    probe = _load_probe(probefile, hosts, unit)
    labels = group_labels(probe, groups_file) if groups_file else None
    nbytes = parse_size(size)
    console = _stderr_console()
    with console.status(f"searching {algo} orders of {probe.n} hosts for {time_limit:g} s", spinner="dots"):
        result = order_hosts(
            probe, algo, size=nbytes, time_limit=time_limit, seed=seed, base=base,
            use_bandwidth=not no_bandwidth, jobs=jobs, smt_time=smt_time, labels=labels,
        )
    text = _render_order(result, probe, fmt, slots, labels, output)
    if output:
        from .fileio import atomic_write_text

        atomic_write_text(output, text)
    if as_json:
        _echo_json(result.to_dict())
        return
    if not output:
        click.echo(text, nl=False)
    render_order_report(result, console)
    if output:
        click.echo(f"wrote {output}", err=True)


# ---------------------------------------------------------------------------
# probe (probing: plink probe)

EXIT_INCOMPLETE = 3


class IncompleteMatrix(PlinkError):
    """The probe file was written but some pairs are missing (exit 3)."""

    exit_code = EXIT_INCOMPLETE


def _probe_summary(probe, output) -> dict:
    import numpy as np

    meta = probe.meta
    n = probe.n
    lat = probe.latency[np.triu_indices(n, 1)]
    lat = lat[np.isfinite(lat)]
    out = {
        "output": output or "-",
        "hosts": n,
        "pairs": n * (n - 1) // 2,
        "missing_pairs": probe.n_missing_pairs(),
        "complete": bool(meta.get("complete")),
        "method": meta.get("method"),
        "rounds": meta.get("rounds"),
        "rounds_run": len(meta.get("schedule", [])),
        "elapsed_s": meta.get("elapsed_s"),
        "latency_us": {"min": None, "median": None, "max": None},
        "unreachable": meta.get("unreachable", {}),
        "dead": meta.get("dead", {}),
        "exit_code": EXIT_OK if meta.get("complete") else EXIT_INCOMPLETE,
    }
    if len(lat):
        out["latency_us"] = {"min": round(float(lat.min()), 2), "median": round(float(np.median(lat)), 2),
                             "max": round(float(lat.max()), 2)}
    if probe.bandwidth is not None:
        bw = probe.bandwidth[np.triu_indices(n, 1)]
        bw = bw[np.isfinite(bw)]
        out["bandwidth_gbps"] = ({"min": round(float(bw.min()), 3), "median": round(float(np.median(bw)), 3),
                                  "max": round(float(bw.max()), 3)} if len(bw) else None)
    return out


class _ProbeProgress:
    """rich progress bar on a terminal; nothing otherwise (cron)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.progress = None
        self.task = None
        self.phase = None

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("ETA"),
                TimeRemainingColumn(), TimeElapsedColumn(), console=_stderr_console(), transient=False,
            )
            self.progress.__enter__()
        return self

    def __call__(self, ev) -> None:
        if self.progress is None:
            return
        if ev.phase != self.phase and ev.phase in ("connect", "round"):
            self.phase = ev.phase
            label = "connecting" if ev.phase == "connect" else "probing rounds"
            self.task = self.progress.add_task(label, total=max(ev.total, 1))
        if self.task is not None and ev.phase in ("connect", "round"):
            self.progress.update(self.task, completed=ev.done)
            if ev.phase == "round" and ev.message:
                self.progress.update(self.task, description=f"probing {ev.message}")
        if ev.phase == "connect" and ev.message:
            self.progress.console.print(f"[yellow]unreachable:[/] {ev.message}")

    def __exit__(self, *exc):
        if self.progress is not None:
            self.progress.__exit__(*exc)


@cli.command()
@click.argument("hosts", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Probe file to write; rewritten atomically after every round (default: stdout, no checkpoint).")
@click.option("--method", type=click.Choice(["udp", "fping", "icmp"]), default="udp", show_default=True,
              help="Latency probe: the agent's UDP echo, fping on the hosts, or ICMP via icmplib.")
@click.option("--count", default=20, show_default=True, type=int, help="Samples per pair and direction.")
@click.option("--interval", default=0.01, show_default=True, type=float, help="Seconds between samples.")
@click.option("--bandwidth", is_flag=True, help="Also measure TCP throughput of every pair (both directions).")
@click.option("--bw-seconds", default=2.0, show_default=True, type=float,
              help="Seconds per direction of a bandwidth test (whole seconds for iperf3).")
@click.option("--streams", default=1, show_default=True, type=int, help="Parallel TCP streams per bandwidth test.")
@click.option("--bw-tool", type=click.Choice(["auto", "agent", "iperf3"]), default="auto", show_default=True,
              help="Bandwidth tool; auto = iperf3 when both hosts have it, else the agent's own TCP test.")
@click.option("--resume", is_flag=True, help="Continue the interrupted probe in -o: measure only missing pairs.")
@click.option("--concurrency", default=16, show_default=True, type=click.IntRange(1, 16),
              help="SSH connections opened at a time.")
@click.option("--timeout", default=10.0, show_default=True, type=float, help="SSH connect/command timeout (s).")
@click.option("--retries", default=2, show_default=True, type=click.IntRange(0, 10),
              help="Retries of a failed SSH connection (exponential backoff).")
@click.option("--ssh-config", type=click.Path(dir_okay=False), help="ssh config file (default: ~/.ssh/config).")
@click.option("--known-hosts", type=click.Path(dir_okay=False),
              help="known_hosts file (default: the config's UserKnownHostsFile, else ~/.ssh/known_hosts).")
@click.option("--accept-new-host-keys", is_flag=True,
              help="Trust and store keys of hosts not in known_hosts (like OpenSSH accept-new); changed keys are still refused.")
@click.option("--hosts-format", type=click.Choice(["auto", "plain", "openmpi", "mpich", "slurm"]), default="auto",
              show_default=True, help="Host list format (see README: 'host:N' is a port or a slot count).")
@click.option("--python", "python", default="python3", show_default=True, help="Python interpreter on the hosts.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout (needs -o).")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary (errors and missing hosts only).")
def probe(hosts, output, method, count, interval, bandwidth, bw_seconds, streams, bw_tool, resume, concurrency,
          timeout, retries, ssh_config, known_hosts, accept_new_host_keys, hosts_format, python, as_json, quiet) -> None:
    """Measure pairwise latency (and bandwidth) between HOSTS over SSH.

    HOSTS is a host list: [user@]host[:port] lines, an OpenMPI hostfile
    (host slots=N), an MPICH machinefile (host:N) or Slurm node lists
    (node[01-16]). Nothing is installed on the hosts: a small python3 agent is
    streamed over SSH and exits when the probe ends. Pairs are probed in
    N-1 rounds of disjoint pairs (a bye each for odd N). Host keys must be in
    known_hosts unless --accept-new-host-keys.

    \b
    Exit codes: 0 complete matrix; 3 incomplete matrix (unreachable or dead
    hosts; the file is still written, pairs missing as null; rerun with
    --resume to fill them in); 1 error; 2 usage error.

    \b
    Example:
      plink probe hosts.txt -o probe.json
      plink probe hosts.txt --bandwidth --bw-seconds 3 -o probe.json
      plink probe hosts.txt -o probe.json --resume     # after a crash / exit 3
      plink order probe.json --algo ring -o order.txt
    """
    from .hostlist import read_hostlist
    from probes.probe import probe_hosts
    from probes.ssh import SSHOptions

    if as_json and not output:
        raise click.UsageError("--json prints a summary on stdout, so the probe file needs -o")
    if resume and not output:
        raise click.UsageError("--resume continues the probe file given with -o")
    entries = read_hostlist(hosts, fmt=hosts_format)
    opts = SSHOptions(ssh_config=ssh_config, known_hosts=known_hosts, accept_new_host_keys=accept_new_host_keys,
                      connect_timeout=timeout, command_timeout=max(timeout, 30.0), retries=retries,
                      concurrency=concurrency, python=python)
    show_progress = not quiet and not as_json and sys.stderr.isatty()
    with _ProbeProgress(show_progress) as bar:
        result = probe_hosts(entries, method=method, count=count, interval=interval, bandwidth=bandwidth,
                             bw_seconds=bw_seconds, streams=streams, bw_tool=bw_tool, checkpoint=output,
                             resume=resume, progress=bar, ssh=opts)
    summary = _probe_summary(result, output)
    if not output:
        click.echo(result.dumps(), nl=False)
    if as_json:
        _echo_json(summary)
    else:
        for name, why in {**summary["unreachable"], **summary["dead"]}.items():
            state = "unreachable" if name in summary["unreachable"] else "died"
            click.echo(f"plink probe: {name} {state}: {why}", err=True)
        if not quiet:
            lat = summary["latency_us"]
            line = (f"probed {summary['hosts']} hosts, {summary['pairs'] - summary['missing_pairs']}/"
                    f"{summary['pairs']} pairs in {summary['rounds_run']} rounds, {summary['elapsed_s']:.1f} s")
            if lat["median"] is not None:
                line += f"; latency p10 min/median/max {lat['min']}/{lat['median']}/{lat['max']} us"
            if summary.get("bandwidth_gbps"):
                b = summary["bandwidth_gbps"]
                line += f"; bandwidth min/median/max {b['min']}/{b['median']}/{b['max']} Gbit/s"
            click.echo(line, err=True)
            if output:
                click.echo(f"wrote {output}", err=True)
    if summary["missing_pairs"]:
        raise IncompleteMatrix(f"incomplete matrix: {summary['missing_pairs']} of {summary['pairs']} pairs missing"
                               + (f" (rerun with -o {output} --resume)" if output else "") + ", exit 3")


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
@click.option("--order", "orderfile", type=click.Path(dir_okay=False),
              help="With --plot: two heatmaps, as probed and in this order file's rank order.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--hosts", type=click.Path(dir_okay=False), help="Host names for a plain CSV/NPY matrix.")
@click.option("--unit", type=click.Choice(["us", "ms", "s", "ns"]), default="us", show_default=True,
              help="Latency unit of a plain CSV/NPY matrix.")
def show(probefile, groups_file, plot, orderfile, as_json, hosts, unit) -> None:
    """Summarise a probe file; optionally draw its matrix as a heatmap.

    The heatmap orders hosts by group (with --groups), else by true location
    when the file has ground truth, so racks show up as blocks.

    \b
    Example:
      plink show dc.json
      plink show dc.json --groups groups.json --plot heatmap.png
      plink show dc.json --groups groups.json --order order.json --plot before-after.png
    """
    from .summary import display_order, summarize

    if orderfile and not plot:
        raise click.BadParameter("--order draws the before/after heatmaps of --plot PNG", param_hint="--order")

    probe = _load_probe(probefile, hosts, unit)
    groups = None
    if groups_file:
        from .groupfile import load_groups

        groups = load_groups(groups_file)
        groups.aligned_to(probe.names)  # same hosts, or a one-line error
    summary = summarize(probe, groups)
    if plot and orderfile:  # before/after reordering
        from .orderfile import read_order
        from .plots import plot_heatmaps_before_after
        from .watch import check_same_hosts

        names = read_order(orderfile)
        check_same_hosts(names, probe, f"the order file {orderfile}")
        labels = groups.aligned_to(probe.names) if groups is not None else None
        plot_heatmaps_before_after(probe, [probe.index(n) for n in names], plot, labels=labels)
    elif plot:
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


def render_schedule_summary(s: dict, console) -> None:
    from rich.table import Table

    from .units import format_size, format_us

    console.print(f"{s['hosts']} hosts in {s['groups']} groups; {s['chunks']} chunks of "
                  f"{format_size(s['chunk'])} over {format_size(s['size'])}")
    if "balance" in s:
        b = s["balance"]
        console.print(f"master balance max/min: load {b['load']:.3f}, GMs per group {b['gm_groups']:.3f}, "
                      f"LMs per node {b['lm_nodes']:.3f}")
    if s.get("verified") is True:
        console.print(f"verified: every node delivers the exact global sum of every chunk ({s['actions']} actions)")
    elif s.get("verified") is False:
        console.print(f"INVALID schedule: {len(s['errors'])} problem(s), first: {s['errors'][0]}")
    elif "note" in s:
        console.print(s["note"])
    if "rounds" not in s:
        return
    t41 = s["table41"]
    t = Table(show_edge=False, title="per all-reduce" + (f" ({s['model']} model)" if "model" in s else ""),
              title_justify="left")
    for col in ("algorithm", "rounds", "bytes on wire", "cross-group bytes", "predicted time", "2LHA speedup"):
        t.add_column(col, justify="left" if col == "algorithm" else "right")
    pred = s.get("predicted", {})
    names = {"2lha": "2LHA (this schedule)", "ring": "flat ring", "ps": "sharded PS"}
    for key in ("2lha", "ring", "ps"):
        if key == "2lha":
            rounds, nbytes, cross = s["rounds"], s["bytes_total"], s["bytes_cross_group"]
        elif key in pred:
            rounds, nbytes, cross = pred[key]["rounds"], pred[key]["bytes_total"], pred[key]["bytes_cross_group"]
        else:
            rounds, nbytes, cross = t41[key]["rounds"], t41[key]["bytes_total"], t41[key]["bytes_cross"]
        time = format_us(pred[key]["time_us"]) if key in pred else "-"
        speed = (f"{pred[key]['time_us'] / pred['2lha']['time_us']:.2f}x"
                 if key in pred and key != "2lha" and pred["2lha"]["time_us"] > 0 else "")
        t.add_row(names[key], str(rounds), format_size(nbytes), format_size(cross), time, speed)
    console.print(t)
    console.print(f"Table 4.1 for 2LHA: {t41['2lha']['rounds']} rounds, 2(N-1)S = "
                  f"{format_size(t41['2lha']['bytes_total'])}, 2(k-1)S = {format_size(t41['2lha']['bytes_cross'])} "
                  "cross-group")


def _render_or_json(summary: dict, as_json: bool) -> None:
    if as_json:
        _echo_json(summary)
    else:
        render_schedule_summary(summary, _stderr_console())


@cli.command()
@click.argument("probefile", type=click.Path(dir_okay=False))
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False),
              help="Groups file from 'plink group' (default: cluster the latency matrix into sqrt(N) groups).")
@click.option("--size", required=True, help="All-reduce buffer size (bytes, or KiB/MiB/GiB/KB/MB/GB).")
@click.option("--chunk", default="64KiB", show_default=True, help="Chunk size.")
@click.option("--capacity", type=click.Choice(["auto", "cardinality", "bandwidth"]), default="auto",
              show_default=True,
              help="Master shares: group size / node (cardinality) or outbound bandwidth (Quicktune); "
                   "auto = bandwidth when the probe file has a bandwidth matrix.")
@click.option("--compact", is_flag=True, help="Write the compact form (masters only; expanded on load).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="Schedule file to write.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
def schedule(probefile, groups_file, size, chunk, capacity, compact, output, as_json) -> None:
    """Plan a 2-level hierarchical all-reduce (2LHA) schedule.

    Chunks the buffer, picks a local master per group and a global master
    per chunk (balanced by group size or bandwidth), writes the action DAG
    and reports rounds, bytes, cross-group bytes and the predicted time
    against a flat ring and a sharded parameter server.

    \b
    Example:
      plink simulate --racks 4 --hosts-per-rack 4 --bandwidth --seed 1 -o dc.json
      plink schedule dc.json --size 16MiB -o schedule.json
      plink verify schedule.json dc.json
    """
    from .dag import Schedule
    from .groupfile import load_groups
    from .schedule import plan_schedule
    from .units import parse_size
    from .verify import VERIFY_LIMIT, summarize

    probe = _load_probe(probefile)
    labels = load_groups(groups_file).aligned_to(probe.names) if groups_file else None
    plan = plan_schedule(probe, labels, size=parse_size(size), chunk=parse_size(chunk),
                         capacity=None if capacity == "auto" else capacity)
    sched = Schedule.from_plan(plan, parse_size(chunk))
    summary = summarize(sched, probe)
    if summary.get("verified") is False:
        raise PlinkError(f"internal error: generated schedule fails verification: {summary['errors'][0]}")
    form = "compact" if compact else "dag"
    if not compact and 4 * plan.n * plan.n_chunks > VERIFY_LIMIT:
        form = "compact"
        summary["note_form"] = (f"wrote the compact form: the DAG form would hold about {4 * plan.n * plan.n_chunks} "
                                "actions (pass --compact to silence this)")
    sched.save(output, form)
    summary["output"] = output
    summary["form"] = form
    _render_or_json(summary, as_json)
    if not as_json and "note_form" in summary:
        click.echo(summary["note_form"], err=True)
    if not as_json:
        click.echo(f"wrote {output}", err=True)


@cli.command()
@click.argument("schedulefile", type=click.Path(dir_okay=False))
@click.argument("probefile", type=click.Path(dir_okay=False), required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
def verify(schedulefile, probefile, as_json) -> None:
    """Prove a schedule correct by symbolic execution (exit 1 if it is not).

    Checks that every node delivers exactly the global sum of every chunk,
    that every ReceiveFrom has its SendTo and that nothing deadlocks; with
    PROBEFILE also predicts its time against flat ring and sharded PS.

    \b
    Example:
      plink verify schedule.json dc.json
    """
    from .dag import load_schedule
    from .verify import summarize

    sched = load_schedule(schedulefile)
    probe = _load_probe(probefile) if probefile else None
    summary = summarize(sched, probe, verify_limit=10**12)
    if summary["verified"] or as_json:
        _render_or_json(summary, as_json)
    if not summary["verified"]:
        raise PlinkError(f"{schedulefile}: invalid schedule: {summary['errors'][0]}")



@cli.command()
@click.argument("schedulefile", type=click.Path(dir_okay=False))
@click.argument("statsfile", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, help="New schedule file.")
@click.option("--quick", is_flag=True, help="Quicktune: re-assign all masters from the measured bandwidths.")
@click.option("--beta", default=1.0, show_default=True, help="Finetune: weight of the load imbalance in the blame.")
@click.option("--gamma", default=1.0, show_default=True, help="Finetune: weight of the transfer time in the blame.")
@click.option("--epsilon", default=1.1, show_default=True, help="Finetune: move only if max/min blame exceeds this.")
@click.option("--compact", is_flag=True, help="Write the compact form.")
@click.option("--json", "as_json", is_flag=True, help="Print what changed as JSON on stdout.")
def retune(schedulefile, statsfile, output, quick, beta, gamma, epsilon, compact, as_json) -> None:
    """Re-balance a schedule's masters from measured link stats (Autotune).

    Default is one Finetune step: blame every node from STATSFILE (time and
    load), move a global (else local) master from the most to the least
    blamed node, exponentially more when the same node stays the bottleneck.
    --quick re-assigns all masters in proportion to measured bandwidth.

    \b
    Example:
      plink simulate --racks 4 --hosts-per-rack 4 --bandwidth --seed 1 -o dc.json
      plink schedule dc.json --size 16MiB -o schedule.json
      plink retune schedule.json examples/stats16.json -o schedule2.json
    """
    from .autotune import finetune, load_stats, quicktune
    from .dag import Schedule, ScheduleError, load_schedule
    from .schedule import node_loads

    sched = load_schedule(schedulefile)
    if sched.plan is None:
        raise ScheduleError(f"{schedulefile}: schedule has no master assignment (lm/gm) to retune")
    stats = load_stats(statsfile, sched.hosts)
    old = node_loads(sched.plan)
    if quick:
        plan = quicktune(sched.plan, stats)
        info = {"mode": "quicktune"}
        state = {"bottleneck": None, "streak": 0}
    else:
        res = finetune(sched.plan, stats, sched.autotune, beta=beta, gamma=gamma, epsilon=epsilon)
        plan, state = res.plan, res.state
        info = {"mode": "finetune", **res.to_dict()}
    new = Schedule.from_plan(plan, sched.chunk_bytes, meta=sched.meta, autotune=state)
    new.save(output, "compact" if compact else "dag")
    loads = node_loads(plan)
    info["changed_masters"] = int((plan.lm != sched.plan.lm).sum() + (plan.gm != sched.plan.gm).sum())
    info["load_max_over_min"] = {"before": float(old.max() / old.min()), "after": float(loads.max() / loads.min())}
    info["output"] = output
    if as_json:
        _echo_json(info)
        return
    if info["mode"] == "finetune":
        if info["moved_gm"] or info["moved_lm"]:
            click.echo(f"finetune: blame max/min {info['blame_ratio']:.3f} > {epsilon}: moved {info['moved_gm']} GM "
                       f"and {info['moved_lm']} LM from {info['from']} to {info['to']}", err=True)
        else:
            ratio = info["blame_ratio"]
            click.echo(f"finetune: blame max/min {ratio:.3f} <= {epsilon}: nothing to move" if ratio is not None
                       else "finetune: nothing to move", err=True)
    else:
        click.echo(f"quicktune: re-assigned masters, {info['changed_masters']} entries changed", err=True)
    click.echo(f"wrote {output}", err=True)


#


# ---------------------------------------------------------------------------
# launchers / watch (launchers: plink node-rank, plink watch)


@cli.command("emit")
@click.argument("orderfile", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice([f for f in FORMATS if f != "json"]), required=True,
              help="Launcher file to write (examples below).")
@click.option("--slots", default=1, show_default=True, type=int,
              help="Processes (GPUs) per host; the ranks of one host stay contiguous.")
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False),
              help="Groups file (plink group) for --format slurm-topology.")
@click.option("--algo", type=click.Choice(["ring", "hd", "dbt", "bcube"]),
              help="Algorithm for --format env (default: the JSON order file's, else ring).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="File to write (default: stdout).")
def emit_cmd(orderfile, fmt, slots, groups_file, algo, output) -> None:
    """Write a launcher file from an existing order file (no new search).

    ORDERFILE is a plain or JSON order file (plink order, plink watch's
    STATE_DIR/order.json), so every launcher file of one job has the same order.

    \b
    Every format, with the command that uses it (N hosts x S slots = R ranks):
      plink order probe.json --format json -o order.json
      plink emit order.json --format openmpi --slots 8 -o hosts.ompi
        mpirun --hostfile hosts.ompi --map-by seq -np R ./app
      plink emit order.json --format rankfile --slots 8 -o ranks.ompi
        mpirun --rankfile ranks.ompi -np R ./app
      plink emit order.json --format mpich --slots 8 -o hosts.mpich
        mpiexec -f hosts.mpich -n R ./app    (Intel MPI: mpirun -machinefile hosts.mpich -n R)
      plink emit order.json --format slurm --slots 8 -o hosts.slurm
        SLURM_HOSTFILE=hosts.slurm srun --distribution=arbitrary -n R ./app
      plink emit order.json --format slurm-topology --groups groups.json -o topology.conf
        (slurm.conf: TopologyPlugin=topology/tree)
      plink emit order.json --format torchrun -o nodes.torchrun     (copy to every node, then on each:)
        torchrun --nnodes N --nproc-per-node 8 --node-rank "$(plink node-rank nodes.torchrun)" \\
          --master-addr "$(plink node-rank nodes.torchrun --master)" --master-port 29500 train.py
      plink emit order.json --format deepspeed --slots 8 -o hostfile
        deepspeed --hostfile hostfile train.py
      horovodrun -np R -H "$(plink emit order.json --format horovod --slots 8)" python train.py
      plink emit order.json --format env -o plink.env && . ./plink.env    (NCCL_ALGO, Open MPI tuned)
    """
    from .emitters import emit
    from .orderfile import read_order_hosts

    _check_format_options(fmt, slots, groups_file)
    hosts = read_order_hosts(orderfile)
    if algo is None:
        algo = _order_file_algo(orderfile) or "ring"
    labels = None
    if groups_file:
        from .groupfile import load_groups
        from .errors import ProbeFileError

        try:
            labels = load_groups(groups_file).aligned_to([h.name for h in hosts]).tolist()
        except ProbeFileError as exc:
            raise ProbeFileError(f"{groups_file} and {orderfile} are from different host lists: {exc}") from None
    text = emit(fmt, hosts, slots=slots, algo=algo, labels=labels, order_file=output or orderfile)
    if output:
        from .fileio import atomic_write_text

        atomic_write_text(output, text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


def _order_file_algo(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        return doc.get("algo") if isinstance(doc, dict) else None
    except (OSError, ValueError):
        return None


@cli.command("node-rank")
@click.argument("orderfile", type=click.Path(dir_okay=False))
@click.option("--host", help="Match this name or IP address instead of this machine's.")
@click.option("--master", is_flag=True, help="Print rank 0's address (or name) instead: the --master-addr.")
def node_rank_cmd(orderfile, host, master) -> None:
    """Print this node's rank in ORDERFILE (for torchrun --node-rank).

    ORDERFILE is a JSON or plain order file (or the torchrun map). This node
    is matched by host name, FQDN or short name, or by any of its IP
    addresses (the JSON file's addresses, or host names resolved).

    \b
    Example, on every node:
      torchrun --nnodes 8 --nproc-per-node 8 \\
        --node-rank "$(plink node-rank order.json)" \\
        --master-addr "$(plink node-rank order.json --master)" --master-port 29500 train.py
    """
    from .emitters import master_address
    from .noderank import node_rank
    from .orderfile import read_order_hosts

    hosts = read_order_hosts(orderfile)
    if master:
        click.echo(master_address(hosts))
        return
    click.echo(node_rank(hosts, host, source=orderfile))


def _parse_gain(text: str) -> float:
    t = str(text).strip()
    try:
        return float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a fraction (0.05) or a percentage (5%)", param_hint="--min-gain") from None


def _parse_emit(items) -> list[tuple[str, str]]:
    out = []
    for item in items:
        fmt, sep, path = item.partition(":")
        if not sep or not path:
            raise click.BadParameter(f"{item!r}: expected FORMAT:PATH, e.g. openmpi:/shared/hosts.ompi", param_hint="--emit")
        out.append((fmt, path))
    return out


def _prober(hosts_file, probe_file, hosts_format="auto", **probe_kw):
    """The probe step of plink watch: a probe file, or the probing library over a host list."""
    if probe_file:
        return lambda: _load_probe(probe_file)
    ssh_keys = ("ssh_config", "known_hosts")
    ssh_kw = {k: probe_kw.pop(k) for k in ssh_keys if probe_kw.get(k)}
    for k in ssh_keys:
        probe_kw.pop(k, None)

    def probe_now():
        try:
            from probes.probe import probe_hosts
            from probes.ssh import SSHOptions
        except ImportError as exc:
            raise PlinkError(f"the probing library is not available ({exc}); use --probe-file") from None
        from .hostlist import read_hostlist

        return probe_hosts(read_hostlist(hosts_file, fmt=hosts_format), ssh=SSHOptions(**ssh_kw), **probe_kw)

    return probe_now


@cli.command("watch")
@click.argument("state_dir", type=click.Path(file_okay=False))
@click.option("--hosts", "hosts_file", type=click.Path(dir_okay=False), help="Host list to probe (as plink probe).")
@click.option("--probe-file", type=click.Path(dir_okay=False),
              help="Use this probe file instead of probing (probing done elsewhere).")
@click.option("--method", type=click.Choice(["udp", "fping", "icmp"]), default="udp", show_default=True,
              help="Latency probe (as plink probe).")
@click.option("--count", default=20, show_default=True, type=click.IntRange(1, 100000), help="Samples per pair.")
@click.option("--ssh-config", type=click.Path(dir_okay=False), help="ssh config file (as plink probe).")
@click.option("--known-hosts", type=click.Path(dir_okay=False), help="known_hosts file (as plink probe).")
@click.option("--hosts-format", type=click.Choice(["auto", "plain", "openmpi", "mpich", "slurm"]), default="auto",
              show_default=True, help="Host list format (as plink probe).")
@click.option("--algo", type=click.Choice(["ring", "hd", "dbt", "bcube"]), default="ring", show_default=True)
@click.option("--size", default="25MiB", show_default=True, help="All-reduce size.")
@click.option("--base", default=2, show_default=True, type=int, help="BCube base (--algo bcube).")
@click.option("--min-gain", default="5%", show_default=True,
              help="Re-order only if the new order is predicted this much cheaper than the current one.")
@click.option("--time-limit", default=5.0, show_default=True, type=float, help="Seconds of search.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--initial-order", type=click.Path(dir_okay=False),
              help="The order in use now (plain/JSON order file), compared against on the first run.")
@click.option("--emit", "emit_items", multiple=True, metavar="FORMAT:PATH",
              help="Keep a launcher file in sync with the current order (repeatable), e.g. openmpi:/shared/hosts.ompi.")
@click.option("--slots", default=1, show_default=True, type=click.IntRange(min=1), help="Processes per host for --emit files.")
@click.option("--keep", default=500, show_default=True, type=click.IntRange(min=0), help="Runs kept in the history (0: all).")
@click.option("--window", default=1, show_default=True, type=click.IntRange(min=1),
              help="Decide on the median of the last K probes (1: the new probe alone); damps noise.")
@click.option("--reset", is_flag=True, help="Move a corrupt state file aside (kept) and start over.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's status as JSON (always).")
@click.option("-v", "--verbose", is_flag=True, help="Print the status even when nothing changed.")
def watch_cmd(state_dir, hosts_file, probe_file, method, count, ssh_config, known_hosts, hosts_format, algo, size, base, min_gain, time_limit, seed, initial_order,
              emit_items, slots, keep, window, reset, as_json, verbose) -> None:
    """Re-probe and re-order only when it pays: for cron.

    Probes the hosts, compares with the last probe (drift report) and writes a
    new order to STATE_DIR/order.json (and hosts.txt, and --emit files) only
    if it is predicted at least --min-gain cheaper than the current order, both
    costed on the new probe. Quiet unless the order changed or something needs a
    look (a stale lock, an incomplete probe), or with -v/--json.

    \b
    Exit codes: 0 order kept, 4 new order written, 75 another run holds the
    lock (this run did nothing), 1 error (nothing changed), 2 usage error.
    \b
    Example (crontab, every 15 minutes):
      */15 * * * * plink watch /var/lib/plink --hosts /etc/plink/hosts.txt --emit openmpi:/shared/hosts.ompi
    Without a cluster:
      plink simulate --seed 1 -o p.json && plink watch state --probe-file p.json
    """
    from .orderfile import read_order
    from .units import parse_size
    from .watch import WatchBusy, watch

    if bool(hosts_file) == bool(probe_file):
        raise click.UsageError("give exactly one of --hosts HOSTS (probe them) or --probe-file PROBE")
    prober = _prober(hosts_file, probe_file, hosts_format, method=method, count=count, ssh_config=ssh_config,
                     known_hosts=known_hosts)
    try:
        result = watch(
            state_dir, prober, algo=algo, size=parse_size(size), base=base, min_gain=_parse_gain(min_gain),
            time_limit=time_limit, seed=seed, initial_order=read_order(initial_order) if initial_order else None,
            emit=_parse_emit(emit_items), slots=slots, keep=keep, window=window, reset=reset,
        )
    except WatchBusy as exc:
        if not as_json:
            raise
        _echo_json({"status": "busy", "changed": False, "message": str(exc), "exit_code": exc.exit_code})
        raise click.exceptions.Exit(exc.exit_code) from None
    if as_json:
        _echo_json(result.to_dict())
    elif result.noteworthy or verbose:
        click.echo("\n".join(result.summary()))
    raise click.exceptions.Exit(result.exit_code)


# ---------------------------------------------------------------------------
# entry point


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one-line errors, documented exit codes."""
    args = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in args
    try:
        # without standalone mode click returns a command's ctx.exit() code
        rc = cli.main(args=args, prog_name="plink", standalone_mode=False)
        if isinstance(rc, int) and rc != EXIT_OK:
            sys.exit(rc)
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
