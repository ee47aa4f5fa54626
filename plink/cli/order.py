"""plink order: the best rank order for a collective."""

from __future__ import annotations

import math

import click

from plink.cli._app import (check_option_files, cli, _echo_json, matrix_input_options, note_groups_beyond, _stderr_console,
                            print_table, refuse_input_as_output, refuse_json_with_dash, size_value, stdout_if_dash)
from plink.launch.emitters import FORMATS


def _fmt_cost(result, value: float) -> str:
    from plink.units import format_us

    return format_us(value * 1e6 if result.unit == "s" else value)


def _fmt_range(result, name: str) -> str:
    lo, hi = result.ranges[name]
    if abs(hi - lo) <= 1e-12 * max(1.0, abs(hi)):
        return _fmt_cost(result, hi)
    return f"{_fmt_cost(result, lo)} - {_fmt_cost(result, hi)}"


def _digits(result, *values: float) -> int:
    """Two decimals, three when a value is near the resolution's edges, so that "1.02x" and
    "~1.02x" never both occur (the ends of a span alike)."""
    r = result.resolution
    return 3 if any(min(abs(v - (1 + r)), abs(v - 1 / (1 + r))) < 0.005 for v in values) else 2


def _fmt_speedup(result, name: str) -> str:
    if result.same_cost(name):  # (no '~': not a gap too small to resolve, no gap at all)
        return "1x (every order alike)" if getattr(result, "every_order_same", False) else "1x (same order)"
    span = result.speedup_span(name)
    digits = _digits(result, *span)
    lo, hi = (f"{v:.{digits}f}" for v in span)
    text = f"{lo}x" if lo == hi else f"{lo}-{hi}x"
    return text if result.span_resolved(name) else f"~{text}"


def _any_span(result) -> bool:
    return any("-" in _fmt_speedup(result, k) for k in ("input", "random_median", "contiguous"))


_SCENARIOS = {"uplinks non-blocking": "with rack uplinks that never bind",
              "latencies alone": "by the measured latencies alone (no capacity binding)"}


def _scenario_note(result) -> str | None:
    """What the 'plink speedup' column spans when capacities were assumed (None when no row's span is
    wider than its printed figure): each figure, over random orders."""
    if not _any_span(result):
        return None
    name = "random_median"
    model = ("oversubscribed rack uplinks" if "uplinks non-blocking" in result.capacity_scenarios
             else "the assumed NICs")

    def x(v):
        return f"{v:.{_digits(result, v)}f}x"

    parts = [f"{x(result.speedup_range(name)[1])} with {model} (the model: 'predicted' and the search)"]
    parts += [f"{x(v[name])} {_SCENARIOS[k]}" for k, v in result.capacity_scenarios.items()]
    from plink.pricing import SET_ASIDE

    set_aside = any(n.startswith(SET_ASIDE) for n in result.notes)
    return (f"note: 'plink speedup' spans capacities that were not measured: each row gives the smallest and the "
            f"largest of plink's speedups priced with each of them. Over random orders: {'; '.join(parts)}. "
            + ("Without --no-bandwidth the probe's measured NICs and rack uplinks price them" if set_aside else
               "'plink probe --bandwidth' measures NICs and rack uplinks"))


def _silhouette(groups: dict) -> str:
    """How clear the groups are, for the report's title: their silhouette (1 = tight, far apart; near 0 =
    no structure: then an order 'by racks' rests on groups a user should look at with plink group)."""
    from plink.order import weak_groups

    conf = groups.get("confidence")
    weak = weak_groups(conf, groups.get("k", 0))
    if weak is None:
        return ""
    shown = math.trunc(conf * 100) / 100  # toward 0 (rounded, 0.2488 read "0.25: weak"; floored, -0.053 "-0.06")
    if groups.get("source") == "groups file":  # a rack map may be right and still not show in the probe
        return f", silhouette on the probe {shown:.2f}" + (
            ": weak, the probe hardly shows them; compare 'plink group'" if weak else "")
    return f", silhouette {shown:.2f}" + (": weak, see 'plink group'" if weak else "")


def render_order_report(result, console) -> None:
    from rich.table import Table

    from plink.units import format_size

    proof = {True: "yes", False: "no", None: "not proven"}[result.proven_optimal]
    what = {"shared": "shared-link model, seconds", "pairsum": "pair-sum model (§5.2.1)"}[result.cost_model]
    g = result.groups
    # the pair sum of latencies alone has no bytes in it: the size would name what it does not price
    size = "" if result.cost_model == "pairsum" and result.model == "latency" else f"{format_size(result.size)}, "
    title = (
        f"{result.algo} over {len(result.hosts)} host{'s' * (len(result.hosts) != 1)}, {size}{what}, {result.model}; "
        f"{g.get('k', '?')} group(s) ({g.get('source', '?')}{_silhouette(g)})"
    )
    t = Table(title=title, title_justify="left", show_edge=False)
    t.add_column("order")
    t.add_column("predicted", justify="right")
    t.add_column("plink speedup", justify="right")
    every = result.n_random == math.factorial(len(result.hosts))  # (random_orders: every order, when as few)
    rows = [("input order", "input"),
            (f"median of all {result.n_random} orders" if every else f"median of {result.n_random} random",
             "random_median"),
            (f"rack-contiguous (best of {result.n_contiguous} group orders)" if result.n_contiguous > 1
             else "rack-contiguous", "contiguous")]
    if g.get("k", 2) < 2:  # no racks found: that row is the input order again, under a name it is not
        rows = rows[:2]
    for label, name in rows:
        t.add_row(label, _fmt_range(result, name), _fmt_speedup(result, name))
    t.add_row("plink order", _fmt_range(result, "plink"), "")
    print_table(console, t)
    solver = result.solver.get("name", "?")
    extra = ""
    smt = result.solver.get("smt")
    if result.proven_optimal and smt and smt.get("tolerance"):
        extra = f", to within {smt['tolerance']:.2g} us"
    if result.proven_optimal and result.solver.get("proven_by") == "lower bound":
        extra = f", its lower bound {_fmt_cost(result, result.lower_bound)} meets the order's cost to 1e-8"
    if result.lower_bound is not None and result.proven_optimal is not True:
        gap = result.cost_plink / result.lower_bound - 1
        extra = f", lower bound {_fmt_cost(result, result.lower_bound)}: at most {gap:.1%} above optimal"
    if smt and not result.proven_optimal:
        extra += f"; Z3: {smt['status']} after {smt['seconds']:.1f} s"
    if result.solver.get("proven_for"):  # an exhaustive search of the clocks, too many orders to redo on the price
        proof = "no: proven for the search's model (the per-rank clocks), not for this price"
    console.print(f"proven optimal: {proof} (solver: {solver}{extra}); {result.elapsed:.1f} s")
    ties = [label for label, name in rows if not result.span_resolved(name) and not result.same_cost(name)]
    if ties:
        from plink.solvers.resolution import UNRESOLVED

        every = " (every figure of its span)" if result.capacity_scenarios and _any_span(result) else ""
        console.print(f"note: '~': the {result.cost_model} model prices plink's order within "
                      f"{result.resolution:.0%}{every} of: {'; '.join(ties)}. It does not resolve gaps that small (on "
                      f"real collectives, {UNRESOLVED}: README, 'How far to trust a prediction')")
    if result.missing_pairs:
        console.print(
            f"note: {result.missing_pairs} host {'pair was' if result.missing_pairs == 1 else 'pairs were'} not measured; ranges price {'it' if result.missing_pairs == 1 else 'them'} at the lowest and the "
            f"highest value measured between the same groups (over all pairs, for two groups with no pair measured "
            f"between them; the search used the highest); "
            f"{result.pairs_used_unmeasured} of the {result.pairs_used} pairs the plink order uses are unmeasured, "
            f"in {result.steps_unmeasured} of its {result.steps} steps"
        )
    for note in result.notes:
        console.print(f"note: {note}")
    note = _scenario_note(result) if result.capacity_scenarios else None
    if note:
        console.print(note)


def _render_order(result, probe, fmt, slots=1, labels=None, output=None) -> str:
    """The order (or a launcher file) as text: plain/json order files, else an emitter."""
    from plink.data.orderfile import render

    if fmt in ("plain", "json"):
        return render(result, probe, fmt)
    from plink.launch.emitters import emit

    hosts = [probe.hosts[i] for i in result.order]
    lab = None if labels is None else [labels[i] for i in result.order]
    return emit(fmt, hosts, slots=slots, algo=result.algo, labels=lab, order_file=output or "THIS_FILE")


class _HeldSignals:
    """Ctrl-C and SIGTERM held back from ``start()`` (the search is over) to ``stop()`` (the order is
    written), so that a signal in between cannot lose a finished order: the command then says so and
    exits 130 / 143. In the main thread only (where Python takes signals); the handlers are restored."""

    def __init__(self):
        self.signals: list[int] = []
        self._old: dict | None = None

    def _hold(self, signum, frame) -> None:
        self.signals.append(signum)

    def start(self) -> None:
        import signal
        import threading

        if self._old is None and threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self._hold) for s in (signal.SIGINT, signal.SIGTERM)}

    def stop(self) -> None:
        import signal

        for s, handler in (self._old or {}).items():
            signal.signal(s, handler)
        self._old = None


def _check_format_options(fmt: str, slots: int, groups_file: str | None) -> None:
    """Usage errors of --format/--slots/--groups, before any work."""
    from plink.launch.emitters import MAX_SLOTS

    if not 1 <= slots <= MAX_SLOTS:
        raise click.BadParameter(f"must be 1..{MAX_SLOTS} (processes per host), got {slots}", param_hint="--slots")
    if fmt in ("plain", "json") and slots != 1:
        raise click.BadParameter(f"the {fmt} order file has one entry per host; --slots applies to launcher formats",
                                 param_hint="--slots")
    if fmt == "slurm-topology" and slots != 1:  # (it was ignored without a word)
        raise click.BadParameter("a slurm topology.conf names switches and nodes, not ranks; --slots applies to "
                                 "launcher formats", param_hint="--slots")


@cli.command()
@click.argument("probefile", type=click.Path(dir_okay=False))
@click.option("--algo", type=click.Choice(["ring", "hd", "rd", "dbt", "bcube", "bintree"]), default="ring", show_default=True,
              help="Collective algorithm to optimise for.")
@click.option("--size", default="25MiB", show_default=True, callback=size_value,
              help="All-reduce size (bytes, or KiB/MiB/GiB/KB/MB/GB); 0 prices the latencies alone.")
@click.option("--base", default=2, show_default=True, type=int,
              help="BCube base (--algo bcube; the number of hosts must be a power of it); a base equal to the "
                   "number of hosts is one step that no order changes (the input order is kept).")
@click.option("--time-limit", default=5.0, show_default=True, type=float,
              help="Seconds of order search (reading the matrix and inferring its groups come on top: "
                   "up to about a minute at ~500 hosts on 2 cores).")
@click.option("--jobs", default=1, show_default=True, type=int,
              help="Search processes for --model pairsum (0: all cores; at most the cores).")
@click.option("--smt-time", default=0.0, show_default=True, type=float,
              help="Seconds for Z3 to improve a --model pairsum order or prove it optimal (0: skip).")
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False),
              help="Groups file (plink group): also start from the grouping; the switches of --format slurm-topology "
                   "(default: the groups inferred from the probe). "
                   "It may name more hosts than the probe (a rack map of the whole site).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="Random seed of the order search (its random starts and moves); a search cut short by --time-limit can still differ between runs.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Order file (plain, json) or launcher file (see 'plink emit --help') written with -o or to stdout "
                   "[default: json when -o names a .json file, else plain].")
@click.option("--slots", default=1, show_default=True, type=int,
              help="Processes (GPUs) per host; the ranks of one host stay contiguous.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), callback=stdout_if_dash, help="Order file to write (default: stdout).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the report as JSON on stdout (its 'hosts' are the order; the order file needs -o FILE).")
@click.option("--no-bandwidth", is_flag=True,
              help="Ignore the probe's bandwidths and measured uplinks; cost by latency only.")
@click.option("--no-hedge", is_flag=True,
              help="With groups inferred, do not also search under the groupings with one group split in two "
                   "(latencies alone) or two groups joined (pair bandwidths): the hedge, see above.")
@click.option("--model", "cost_model", type=click.Choice(["shared", "pairsum"]), default="shared", show_default=True,
              help="shared: the collective's steps with NICs and rack uplinks shared (seconds); "
                   "pairsum: the dissertation's sum of pair costs.")
@click.option("--nic-gbps", type=float, default=None,
              help="Host NIC speed for --model shared when the probe has no bandwidth [assumed 10].")
@matrix_input_options()
def order(probefile, algo, size, base, time_limit, jobs, smt_time, groups_file, seed, fmt, slots, output, as_json,
          no_bandwidth, no_hedge, cost_model, nic_gbps, load_input) -> None:
    """Find the rank order that minimises the collective's cost model.

    PROBEFILE is a plink probe file (.json) or a plain matrix (.csv/.tsv/.txt/.npy;
    latency, or bandwidth with --kind bandwidth; host names from a header row, a
    name column or --hosts). Writes the hosts in rank order and reports the predicted
    cost of the input order, of the median random order and of the plink order.

    \b
    Example:
      plink simulate --racks 8 --hosts-per-rack 8 --seed 1 -o dc.json
      plink order dc.json --algo ring -o hosts.txt
      plink order dc.json --algo hd --model pairsum --time-limit 30 --jobs 0 --smt-time 60 -o hosts.txt

    The default --model shared prices the collective's real steps in seconds
    with host NICs and rack uplinks shared by concurrent flows (racks from
    --groups, the probe's measured uplinks, or inferred from the latencies;
    rd, hd, bcube and bintree up to 64 ranks: searched on per-rank clocks,
    priced as a fluid, flows sharing links max-min fairly as they start and
    end); --model pairsum is the dissertation's sum of pair costs. The report
    compares the input order, the median random order and the rack-contiguous
    order (each rack one block, in the best order of the racks tried);
    unmeasured pairs are priced at their best and worst plausible
    value and the figures given as ranges. Small clusters get a certified
    optimum of the chosen model; a lower bound is printed when informative.

    The hedge: latencies alone cannot tell a rack from two (a rack of 2
    beside a rack of 5 read as one in a measured case). With --model
    shared, when no bandwidth matrix or --groups gave the racks, the
    search also runs under each grouping with one group of 4+ hosts split
    in two (at most 5, the largest groups'; they share half of
    --time-limit, the main search gets the other), and of the orders
    priced within 2% of the best, plink takes the one least far above the
    best under its worst grouping (--no-hedge: off). Probing with
    --bandwidth is the better fix. With a --bandwidth probe the hedge is
    over two groups joined instead, where every pair between them reads as
    fast as a rack's (the latencies can cut a rack in two).

    \b
    Launcher files (--slots N processes per host; every format: 'plink emit --help'):
      plink order dc.json --format openmpi --slots 8 -o hosts.ompi
      mpirun --hostfile hosts.ompi --map-by seq -np 512 ./app
    """
    from plink.order import check_options, group_labels, order_hosts

    # before the matrix is read (its notes would come out first)
    check_options(algo, model=cost_model, time_limit=time_limit, smt_time=smt_time, size=size, jobs=jobs,
                  nic_gbps=nic_gbps, base=base)
    if fmt is None:  # -o order.json: the JSON order file (plink emit and node-rank read a .json file as JSON)
        fmt = "json" if output and output.lower().endswith(".json") else "plain"  # (-o - is None here)
    _check_format_options(fmt, slots, groups_file)
    refuse_input_as_output({"-o": output}, {"PROBEFILE": probefile, "--groups": groups_file})
    check_option_files({"--groups": groups_file})
    refuse_json_with_dash(as_json, "the report (its 'hosts' are the order)")
    probe = load_input(probefile)
    writes = output is not None or not as_json  # (--json alone prints the report, no order file)
    if writes and fmt != "json":  # names a launcher or plain file cannot hold: say so before the search
        from plink.launch.emitters import check_launcher_names

        check_launcher_names(probe.names, "a plain order file" if fmt == "plain" else "a launcher file")
    labels = None
    if groups_file:
        from plink.data.groupfile import load_groups

        groups = load_groups(groups_file)
        labels = group_labels(probe, groups_file, groups)
        note_groups_beyond(groups_file, groups, probe.names)
    console = _stderr_console()
    held = _HeldSignals()
    try:
        with console.status(f"searching {algo} orders of {probe.n} hosts for {time_limit:g} s", spinner="dots"):
            result = order_hosts(
                probe, algo, size=size, time_limit=time_limit, seed=seed, base=base,
                use_bandwidth=not no_bandwidth, jobs=jobs, smt_time=smt_time, labels=labels, model=cost_model,
                nic_gbps=nic_gbps, keep_on_interrupt=True, hedge=not no_hedge, on_searched=held.start,
            )
        switches = labels
        if fmt == "slurm-topology" and labels is None and writes:
            # the switches are the groups the order was searched under (it refused without --groups)
            switches = result.group_labels
            k = result.groups["k"]
            from plink.data.fileio import is_stdout

            where = "the topology" if output is None or is_stdout(output) else click.format_filename(output)
            # in the report's notes and --json's (it was a line of its own, missing from --json)
            result.notes.append(f"the switches of {where} are the {k} group{'s' * (k != 1)} the order was searched "
                                f"under ({result.groups['source']}); review them with 'plink group' and give "
                                "--groups to set them")
        text = _render_order(result, probe, fmt, slots, switches, output) if writes else ""
        if output:
            from plink.data.fileio import atomic_write_text, replaces_atomically

            if not replaces_atomically(output):
                # a FIFO (or a device) may block until a reader comes: signals act again, so a Ctrl-C or
                # SIGTERM ends the wait (it was held until the write was done: with no reader, for good)
                held.stop()
            atomic_write_text(output, text)
    finally:
        held.stop()
    interrupted = bool(result.solver.get("interrupted"))
    if as_json:
        _echo_json(result.to_dict())
    else:
        if not output:
            click.echo(text, nl=False)
        render_order_report(result, console)
        if output:
            click.echo(f"wrote {output}", err=True)
    if held.signals and not interrupted:  # Ctrl-C / SIGTERM once the search was over: the order is whole
        import signal

        term = signal.SIGTERM in held.signals
        click.echo(f"plink: {'terminated (SIGTERM)' if term else 'interrupted'} after the search: the order is "
                   "complete", err=True)
        click.get_current_context().exit(143 if term else 130)
    if interrupted:  # Ctrl-C or SIGTERM during the search: the best order so far was written; say so, exit 130 / 143
        from plink.errors import Terminated

        what = ("the best of the search's starting orders (the search's own progress is lost)"
                if result.solver.get("name") == "warm start" else "the best found so far")
        how = "terminated (SIGTERM)" if Terminated.received else "interrupted"
        click.echo(f"plink: {how} after {result.elapsed:.1f} s: the order is {what}", err=True)
        click.get_current_context().exit(143 if Terminated.received else 130)
