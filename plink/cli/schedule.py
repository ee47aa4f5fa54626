"""plink schedule / verify / retune: 2LHA aggregation schedules."""

from __future__ import annotations

import click

from plink.cli._app import (check_option_files, _echo_json, _stderr_console, cli, existing_dir, matrix_input_options,
                            note_groups_beyond, print_table, refuse_input_as_output, size_value)
from plink.errors import PlinkError, UnmeasuredHostError


def _exact_size(nbytes: int) -> str:
    """A size as plink prints sizes, with its bytes when that rounds them (65537 B read '64 KiB')."""
    from plink.units import format_size, parse_size

    shown = format_size(nbytes)
    return shown if parse_size(shown) == nbytes else f"{shown} ({nbytes} B)"


def render_schedule_summary(s: dict, console) -> None:
    from rich.table import Table

    from plink.units import format_size, format_us

    console.print(f"{s['hosts']} hosts in {s['groups']} group{'s' * (s['groups'] != 1)}; {s['chunks']} "
                  f"chunk{'s' * (s['chunks'] != 1)} of {format_size(s['chunk'])} over {_exact_size(s['size'])}")
    if "balance" in s:
        b = s["balance"]

        def r(v):
            return "undefined (a zero)" if v is None else f"{v:.3f}"

        console.print(f"master balance max/min: load {r(b['load'])}, GMs per group {r(b['gm_groups'])}, "
                      f"LMs per node {r(b['lm_nodes'])}")
    if s.get("verified") is True:
        console.print(f"verified: every node delivers the exact global sum of every chunk ({s['actions']} actions)")
    elif s.get("verified") is False:
        console.print(f"INVALID schedule: {len(s['errors'])} problem(s), first: {s['errors'][0]}")
    elif "note" in s:
        console.print(s["note"])
    if "rounds" not in s:
        return
    t41 = s["table41"]
    model = ""
    if "model" in s:
        model = f" (time model: {s['model']}" + (f"; 2LHA in {s['waves']} waves" if s.get("waves", 1) > 1 else "") + ")"
    t = Table(show_edge=False, title="per all-reduce" + model, title_justify="left")
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
    print_table(console, t)
    # (the rack-by-rack ring only where it is another ring: more than one rack, another price)
    if "ring_contiguous" in pred and s.get("groups", 2) > 1 and pred["ring_contiguous"]["time_us"] != pred["ring"]["time_us"]:
        rc, lha = pred["ring_contiguous"]["time_us"], pred["2lha"]["time_us"]
        console.print("note: flat ring: the ring plink order's search finds on these links; the ring rack by rack "
                      f"over the racks priced: {format_us(rc)}" + (f" (2LHA speedup {rc / lha:.2f}x)" if lha > 0 else ""))
    if "note_unmeasured" in s:
        console.print(f"note: {s['note_unmeasured']}")
    for note in s.get("notes", []):
        console.print(f"note: {note}")
    if "assumed_bandwidth_gbps" in s:  # (the title and the notes say it was assumed; this, how to set it)
        console.print("no bandwidth matrix: set the host NICs with --assume-bandwidth or give --bandwidth-matrix")
    console.print(f"Table 4.1 for 2LHA: {t41['2lha']['rounds']} rounds, 2(N-1)S = "
                  f"{format_size(t41['2lha']['bytes_total'])}, 2(k-1)S = {format_size(t41['2lha']['bytes_cross'])} "
                  "cross-group")



@cli.command()
@click.argument("probefile", type=click.Path(dir_okay=False))
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False),
              help="Groups file from 'plink group', taken as it is (default: the finest groups plink group finds, "
                   "a host it leaves alone put with its nearest host; when it finds none, average linkage into "
                   "sqrt(N) groups). It may name more hosts than the probe (a rack map of the whole site).")
@click.option("--size", required=True, callback=size_value, help="All-reduce buffer size (bytes, or KiB/MiB/GiB/KB/MB/GB).")
@click.option("--chunk", default="64KiB", show_default=True, callback=size_value, help="Chunk size.")
@click.option("--capacity", type=click.Choice(["auto", "cardinality", "bandwidth"]), default="auto",
              show_default=True,
              help="Master shares: group size / node (cardinality) or outbound bandwidth (Quicktune); "
                   "auto = bandwidth when the probe file has a bandwidth matrix.")
@click.option("--compact", is_flag=True, help="Write the compact form (masters only; expanded on load).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), required=True,
              callback=existing_dir,
              help="Schedule file to write.")
@click.option("--assume-bandwidth", default=10.0, show_default=True, type=float, metavar="GBIT/S",
              help="Host NIC bandwidth in the time model when there is no bandwidth matrix "
                   "(group uplinks not measured carry one NIC).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@matrix_input_options()
def schedule(probefile, groups_file, size, chunk, capacity, compact, output, as_json, assume_bandwidth,
             load_input) -> None:
    """Plan a 2-level hierarchical all-reduce (2LHA) schedule.

    Chunks the buffer, picks a local master per group and a global master
    per chunk (balanced by group size or bandwidth), writes the action DAG
    and reports rounds, bytes, cross-group bytes and the predicted time
    against a flat ring and a sharded parameter server.

    PROBEFILE is a plink probe file (.json) or a plain matrix (.csv/.tsv/.txt/.npy;
    latency, or bandwidth with --kind bandwidth; host names from a header row, a
    name column or --hosts).

    \b
    Example:
      plink simulate --racks 4 --hosts-per-rack 4 --bandwidth --seed 1 -o dc.json
      plink schedule dc.json --size 16MiB -o schedule.json
      plink verify schedule.json dc.json
    """
    from plink.data.groupfile import load_groups
    from plink.schedule.dag import Schedule
    from plink.schedule.plan import LONE_JOINED, plan_schedule
    from plink.schedule.verify import VERIFY_LIMIT, summarize

    from plink.data.fileio import is_stdout

    if as_json and output is not None and is_stdout(output):
        raise click.UsageError(f"-o {output} and --json would both write to stdout: write the schedule to a file")
    refuse_input_as_output({"-o": output}, {"PROBEFILE": probefile, "--groups": groups_file})
    check_option_files({"--groups": groups_file})
    probe = load_input(probefile)
    labels = None
    if groups_file:
        from plink.order import group_labels

        groups = load_groups(groups_file)
        labels = group_labels(probe, groups_file, groups)  # (its errors name the file, as plink order's)
        note_groups_beyond(groups_file, groups, probe.names)
    try:
        plan = plan_schedule(probe, labels, size=size, chunk=chunk,
                             capacity=None if capacity == "auto" else capacity)
    except UnmeasuredHostError as exc:  # the message names the host; add the file
        raise UnmeasuredHostError(f"{probefile}: {exc}") from None
    sched = Schedule.from_plan(plan, chunk)
    _check_assumed(assume_bandwidth)
    summary = summarize(sched, probe, assumed_gbps=assume_bandwidth)
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
    summary["groups_source"] = plan.meta["groups"]
    _render_or_json(summary, as_json)
    if not as_json and LONE_JOINED in plan.meta["groups"]:
        click.echo(f"note: groups from {plan.meta['groups']}", err=True)
    if not as_json and "note_form" in summary:
        click.echo(summary["note_form"], err=True)
    if not as_json:
        click.echo(f"wrote {output}", err=True)


@cli.command()
@click.argument("schedulefile", type=click.Path(dir_okay=False))
@click.argument("probefile", type=click.Path(dir_okay=False), required=False)
@click.option("--assume-bandwidth", default=10.0, show_default=True, type=float, metavar="GBIT/S",
              help="Host NIC bandwidth in the time model when there is no bandwidth matrix "
                   "(group uplinks not measured carry one NIC).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@matrix_input_options()
def verify(schedulefile, probefile, as_json, assume_bandwidth, load_input) -> None:
    """Prove a schedule correct by symbolic execution (exit 1 if it is not).

    Checks that every node delivers exactly the global sum of every chunk,
    that every ReceiveFrom has its SendTo and that nothing deadlocks; with
    PROBEFILE also predicts its time against flat ring and sharded PS.

    \b
    Example:
      plink verify schedule.json dc.json
    """
    from plink.schedule.dag import load_schedule
    from plink.schedule.verify import check_memory, summarize

    sched = load_schedule(schedulefile)
    probe = load_input(probefile) if probefile else None
    _check_assumed(assume_bandwidth)
    check_memory(sched)
    try:
        summary = summarize(sched, probe, verify_limit=10**12, assumed_gbps=assume_bandwidth)
    except UnmeasuredHostError as exc:  # the message names the host; add the file
        raise UnmeasuredHostError(f"{probefile}: {exc}") from None
    if summary["verified"] or as_json:
        _render_or_json(summary, as_json, stdout=True)
    if not summary["verified"]:
        raise PlinkError(f"{schedulefile}: invalid schedule: {summary['errors'][0]}")



@cli.command()
@click.argument("schedulefile", type=click.Path(dir_okay=False))
@click.argument("statsfile", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), required=True, callback=existing_dir,
              help="New schedule file.")
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
    from plink.schedule.autotune import check_every_sender, check_finetune, finetune, load_stats, quicktune
    from plink.schedule.dag import Schedule, ScheduleError, load_schedule
    from plink.schedule.plan import node_loads

    from plink.data.fileio import is_stdout

    check_finetune(beta, gamma, epsilon, prefix="--")  # with --quick too: a bad value is a mistake either way
    if as_json and is_stdout(output):
        raise click.UsageError(f"-o {output} and --json would both write to stdout: write the schedule to a file")
    refuse_input_as_output({"-o": output}, {"SCHEDULEFILE": schedulefile, "STATSFILE": statsfile})
    sched = load_schedule(schedulefile)
    if sched.plan is None:
        raise ScheduleError(f"{schedulefile}: schedule has no master assignment (lm/gm) to retune")
    stats = load_stats(statsfile, sched.hosts)
    check_every_sender(stats, statsfile)
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
            ratio = "inf" if info["blame_ratio"] is None else f"{info['blame_ratio']:.3f}"  # no blame at the least
            click.echo(f"finetune: blame max/min {ratio} > {epsilon}: moved {info['moved_gm']} GM "
                       f"and {info['moved_lm']} LM from {info['from']} to {info['to']}", err=True)
        else:
            ratio = info["blame_ratio"]
            click.echo(f"finetune: blame max/min {ratio:.3f} <= {epsilon}: nothing to move" if ratio is not None
                       else "finetune: nothing to move", err=True)
    else:
        click.echo(f"quicktune: re-assigned masters, {info['changed_masters']} entries changed", err=True)
    click.echo(f"wrote {output}", err=True)


def _check_assumed(gbps: float) -> None:
    import math

    if not (math.isfinite(gbps) and 0 < gbps <= 1e6):
        raise click.BadParameter(f"must be a bandwidth in Gbit/s, > 0 and <= 1e6, got {gbps:g}",
                                 param_hint="--assume-bandwidth")


def _render_or_json(summary: dict, as_json: bool, stdout: bool = False) -> None:
    """The report: JSON on stdout, else rendered on stderr (``schedule``: stdout is for data) or,
    with ``stdout``, on stdout (``verify``: the report is its output)."""
    if as_json:
        _echo_json(summary)
    else:
        from plink.cli._app import _stdout_console

        render_schedule_summary(summary, _stdout_console() if stdout else _stderr_console())
