"""plink probe: measure a real cluster over SSH."""

from __future__ import annotations

import os
import sys

import click

from plink.cli._app import EXIT_OK, _echo_json, _stderr_console, cli, refuse_input_as_output, stdout_if_dash
from plink.errors import PlinkError, Terminated
from plink.units import format_bandwidth

EXIT_INCOMPLETE = 3


class IncompleteMatrix(PlinkError):
    """The probe file was written but some pairs are missing (exit 3)."""

    exit_code = EXIT_INCOMPLETE


class Interrupted(PlinkError):
    """Ctrl-C (exit 130) or SIGTERM (143) during the probe: what was kept, and how to go on."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def _stat(path) -> tuple | None:
    try:
        st = os.stat(path) if path else None
    except OSError:
        return None
    return None if st is None else (st.st_ino, st.st_mtime_ns, st.st_size)


BW_SECONDS = 2.0  #: --bw-seconds's default


#: parameters of plink probe the resume hint does not repeat: HOSTS and -o come first, and these say
#: nothing of what to measure or how to reach the hosts
_NOT_RESUMED = ("hosts", "output", "resume", "as_json", "quiet")


def _rerun(ctx: click.Context, hosts: str, output: str) -> str:
    """The resume hint, a command that runs as printed: ``plink probe HOSTS -o FILE --resume`` and every
    option given on the command line (what to measure: a resume without ``--bandwidth`` of a file lacking
    bandwidths is refused, and without ``--uplinks`` a missing uplink test is not run; how to reach the
    hosts: ``--ssh-config``, ``--known-hosts``, ...), each word quoted with :func:`shlex.quote`."""
    import shlex

    from click.core import ParameterSource

    words = ["plink", "probe", hosts, "-o", output, "--resume"]
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in _NOT_RESUMED:
            continue
        if ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
            continue
        value, name = ctx.params[param.name], _long(param.opts)
        if param.is_flag and param.secondary_opts:  # --uplinks / --no-uplinks
            words.append(name if value else _long(param.secondary_opts))
        elif param.is_flag:
            if value:
                words.append(name)
        else:
            words += [name, _word(value)]
    return "rerun with: " + " ".join(shlex.quote(w) for w in words)


def _long(opts) -> str:
    """An option's long name (``--output`` of ``-o, --output``)."""
    return max(opts, key=len)


def _word(value) -> str:
    """An option's value as it is typed: 1 for 1.0, 0.01 for 0.01."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def _kept(checkpoint, before, how: str, rerun: str | None = None, uplinks_wanted: bool = False) -> str:
    """What a probe stopped by ``how`` left in ``checkpoint`` (its measured pairs, written as it
    stopped); ``rerun``: the resume hint (:func:`_rerun`); ``uplinks_wanted``: the run was to test
    the shared uplinks (a file without the test says so)."""
    from plink.data.probefile import load
    from plink.probes.journal import journal_path

    if checkpoint is None:
        return f"stopped by {how}: nothing written (no -o file)"
    rerun = rerun or f"rerun with -o {checkpoint} --resume"
    after = _stat(checkpoint)
    if after is None or after == before:
        if journal_path(checkpoint).exists():
            return f"stopped by {how}: the pairs measured are in {journal_path(checkpoint)} ({rerun})"
        # (a file that was not there before the run is not "left as it was": there is none)
        return (f"stopped by {how} before any pair was measured: "
                + (f"{checkpoint} left as it was" if before is not None else "nothing written"))
    try:
        p = load(checkpoint)
    except PlinkError:
        return f"stopped by {how}: {rerun}"
    s = _probe_summary(p, checkpoint)
    pairs = s["pairs"]
    split = (f" (latency of {pairs - s['missing_latency_pairs']}, bandwidth of {pairs - s['missing_bandwidth_pairs']})"
             if s.get("missing_bandwidth_pairs") else "")
    untested = ", the shared-uplink test not done" if uplinks_wanted and not p.uplinks else ""
    return (f"stopped by {how}: {pairs - s['missing_pairs']} of {pairs} pairs measured{split}{untested}, kept in "
            f"{checkpoint} ({rerun})")


def _probe_summary(probe, output) -> dict:
    import numpy as np

    meta = probe.meta
    n = probe.n
    lat = probe.latency[np.triu_indices(n, 1)]
    lat = lat[np.isfinite(lat)]
    # a pair is missing when it lacks its latency or, in a probe with bandwidth, its bandwidth
    # (the probe's own count, which knows whether bandwidth was asked for)
    missing = meta.get("missing_pairs")
    out = {
        "output": output or "-",
        "hosts": n,
        "pairs": n * (n - 1) // 2,
        "missing_pairs": missing if isinstance(missing, int) else probe.n_missing_pairs(),
        "missing_latency_pairs": probe.n_missing_pairs(),
        "complete": bool(meta.get("complete")),
        "method": meta.get("method"),
        "rounds": meta.get("rounds"),
        # rounds of disjoint pairs run, every pass and the bandwidth rounds included (a udp pass
        # entry of the schedule holds its passes' rounds; the other entries are one round each)
        "rounds_run": sum(int(e.get("rounds", 1)) if "pass" in e else 1 for e in meta.get("schedule", [])),
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
        from plink.data.probefile import measured_pairs

        out["missing_bandwidth_pairs"] = int((~measured_pairs(probe, bandwidth=True))[np.triu_indices(n, 1)].sum())
        bw = probe.bandwidth[np.triu_indices(n, 1)]
        bw = bw[np.isfinite(bw)]
        out["bandwidth_gbps"] = ({"min": round(float(bw.min()), 3), "median": round(float(np.median(bw)), 3),
                                  "max": round(float(bw.max()), 3)} if len(bw) else None)
    if probe.uplinks:
        from plink.data.summary import uplink_flows

        out["uplinks"] = [{"hosts": [probe.hosts[i].name for i in u.hosts], "up_mbit": round(u.up_bps * 8e-6, 1),
                           "down_mbit": round(u.down_bps * 8e-6, 1), "flows": uplink_flows(u),
                           "passes": len(u.extra.get("passes_up_bps") or [None])} for u in probe.uplinks]
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
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("ETA"),
                TimeRemainingColumn(), TimeElapsedColumn(), console=_stderr_console(), transient=False,
            )
            self.progress.__enter__()
        return self

    def __call__(self, ev) -> None:
        if self.progress is None:
            return
        if ev.phase in ("connect", "round", "uplinks"):
            # a bar per stage: connecting, the latency passes, the bandwidth rounds, the uplink test (each
            # with its own total; the bandwidth rounds kept the latency pass's total of 1 before)
            stage = (ev.phase, ev.phase == "round" and (ev.message or "").startswith("bandwidth"))
            if stage != self.phase:
                if self.task is not None:  # the stage before is over
                    self.progress.update(self.task, completed=self.progress.tasks[-1].total)
                self.phase = stage
                label = {"connect": "connecting", "round": "probing rounds", "uplinks": "shared uplinks"}[ev.phase]
                self.task = self.progress.add_task(label, total=max(ev.total, 1))
            self.progress.update(self.task, completed=ev.done, total=max(ev.total, 1))
            if ev.phase in ("round", "uplinks") and ev.message:
                self.progress.update(self.task, description=f"probing {ev.message}")
        if ev.phase == "connect" and ev.message:
            self.progress.console.print(f"[yellow]unreachable:[/] {ev.message}")

    def __exit__(self, *exc):
        if self.progress is not None:
            self.progress.__exit__(*exc)


def _interpreter(value: str) -> str:
    """--python: one command or path, quoted as one word on the remote side (so a path may hold blanks)."""
    if not value.strip() or not value.isprintable():
        raise click.BadParameter(f"must be a command or a path without control characters, got {value!r}")
    return value


@cli.command()
@click.argument("hosts", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), callback=stdout_if_dash,
              help="Probe file to write at the end; a regular file gets measurements journalled to FILE.journal "
                   "meanwhile, a device or FIFO is written once at the end (default: stdout, no journal).")
@click.option("--method", type=click.Choice(["udp", "fping", "icmp"]), default="udp", show_default=True,
              help="Latency probe: the agent's authenticated UDP echo (timed by kernel receive timestamps, "
                   "the far end's turnaround taken out), fping on the hosts, or ICMP via icmplib.")
@click.option("--count", default=20, show_default=True, type=int,
              help="Samples per pair and direction (at least; see --max-count).")
@click.option("--interval", default=0.01, show_default=True, type=float, help="Seconds between samples.")
@click.option("--passes", default=1, show_default=True, type=int,
              help="Split --count into this many passes over all rounds, each in another round order (udp).")
@click.option("--max-count", type=int, default=None,
              help="Adaptive sampling (udp): re-probe pairs whose p10 is not yet stable, up to this many samples.")
@click.option("--tol", default=0.1, show_default=True, type=float,
              help="A pair's p10 is stable when its 90% confidence interval is within this fraction (or 2 us).")
@click.option("--bandwidth", is_flag=True, help="Also measure TCP throughput of every pair (both directions).")
@click.option("--bw-seconds", default=BW_SECONDS, show_default=True, type=float,
              help="Seconds per direction of a bandwidth test (whole seconds for iperf3).")
@click.option("--streams", default=1, show_default=True, type=int, help="Parallel TCP streams per bandwidth test.")
@click.option("--uplinks/--no-uplinks", default=None,
              help="After the rounds, measure each inferred group's shared uplink: all its hosts send across the "
                   "group boundary at once, both directions, --bw-seconds per group (default: on with --bandwidth).")
@click.option("--uplink-passes", default=3, show_default=True, type=click.IntRange(1, 20),
              help="Interleaved tests of each uplink; the median is kept, and their spread tells plink order "
                   "which uplink capacities differ by no more than measurement noise (priced as one).")
@click.option("--bw-tool", type=click.Choice(["auto", "agent", "iperf3"]), default="auto", show_default=True,
              help="Bandwidth tool; auto = the agent's own authenticated TCP test; iperf3 only when asked "
                   "(its server accepts any client while it runs).")
@click.option("--resume", is_flag=True, help="Continue the interrupted probe in -o: measure only missing pairs (hosts of the file that "
                   "HOSTS leaves out, e.g. a dead one, are dropped with their pairs).")
@click.option("--concurrency", default=16, show_default=True, type=click.IntRange(1, 16),
              help="SSH connections opened at a time.")
@click.option("--timeout", default=10.0, show_default=True, type=click.FloatRange(0, 600, min_open=True),
              help="SSH connect timeout, and seconds of silence after which a host counts as dead.")
@click.option("--retries", default=2, show_default=True, type=click.IntRange(0, 10),
              help="Retries of a failed SSH connection (exponential backoff).")
@click.option("--ssh-config", type=click.Path(dir_okay=False), help="ssh config file (default: ~/.ssh/config).")
@click.option("--known-hosts", type=click.Path(dir_okay=False),
              help="known_hosts file (default: the config's UserKnownHostsFile, else ~/.ssh/known_hosts).")
@click.option("--accept-new-host-keys", is_flag=True,
              help="Trust and store keys of hosts not in known_hosts (like OpenSSH accept-new); changed keys are still refused.")
@click.option("--hosts-format", type=click.Choice(["auto", "plain", "openmpi", "mpich", "slurm"]), default="auto",
              show_default=True, help="Host list format (see README: 'host:N' is a port or a slot count).")
@click.option("--max-hosts", default=4096, show_default=True, type=click.IntRange(1),
              help="Refuse a host list that expands to more hosts (Slurm ranges are counted before expanding).")
@click.option("--python", "python", default="python3", show_default=True, callback=lambda ctx, param, value: _interpreter(value),
              help="Python interpreter on the hosts (a command or a path).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout (needs -o).")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary (errors and missing hosts only).")
def probe(hosts, output, method, count, interval, passes, max_count, tol, bandwidth, bw_seconds, streams, uplinks,
          uplink_passes, bw_tool,
          resume, concurrency, timeout, retries, ssh_config, known_hosts, accept_new_host_keys, hosts_format, max_hosts,
          python, as_json, quiet) -> None:
    """Measure pairwise latency (and bandwidth) between HOSTS over SSH.

    HOSTS is a host list: [user@]host[:port] lines, an OpenMPI hostfile
    (host slots=N), an MPICH machinefile (host:N) or Slurm node lists
    (node[01-16]). Nothing is installed on the hosts: a small python3 agent is
    streamed over SSH and exits when the probe ends. Pairs are probed in
    N-1 rounds of disjoint pairs (a bye each for odd N). Host keys must be in
    known_hosts unless --accept-new-host-keys.

    Latency alone takes seconds; --bandwidth (52-85 s for 16-24 hosts with
    --bw-seconds 1) also measures what the racks' uplinks carry, and its
    groups are surer: latencies alone can read a rack of 2 and its
    neighbour as one rack (README, "Proof against real collectives").

    \b
    Exit codes: 0 complete matrix; 3 incomplete matrix (unreachable or dead
    hosts, or every host lost; the file is still written, pairs missing as
    null; rerun with --resume to fill them in); 1 error (also no host reached:
    nothing measured, -o left as it was); 2 usage error; 130 / 143 stopped
    by Ctrl-C / SIGTERM (the file keeps what was measured).

    \b
    Example:
      plink probe hosts.txt --bandwidth -o probe.json
      plink probe hosts.txt -o probe.json              # latency only
      plink probe hosts.txt --uplinks -o probe.json    # latency + shared uplinks only
      plink probe hosts.txt -o probe.json --resume     # after a crash / exit 3
      plink order probe.json --algo ring -o order.txt
    """
    from plink.data.hostlist import check_entry_names, read_hostlist
    from plink.probes.probe import probe_hosts
    from plink.probes.ssh import SSHOptions, added_keys_note

    if as_json and not output:
        raise click.UsageError("--json prints a summary on stdout, so the probe file needs -o FILE (not -)")
    if resume and not output:
        raise click.UsageError("--resume continues the probe file given with -o")
    # (a probe keeps its journal beside -o, and a new probe removes an old one)
    refuse_input_as_output({"-o": output, "-o's journal": None if output is None else f"{output}.journal"},
                           {"HOSTS": hosts, "--ssh-config": ssh_config, "--known-hosts": known_hosts})
    from plink.data.fileio import replaces_atomically

    # a device or FIFO given as -o is written once at the end, never rewritten per round
    checkpoint = output if output and replaces_atomically(output) else None
    if resume and checkpoint is None:
        raise click.UsageError(f"--resume needs a regular file as -o, not {output}")
    entries = read_hostlist(hosts, fmt=hosts_format, max_hosts=max_hosts)
    check_entry_names(entries, hosts)
    opts = SSHOptions(ssh_config=ssh_config, known_hosts=known_hosts, accept_new_host_keys=accept_new_host_keys,
                      connect_timeout=timeout, command_timeout=max(timeout, 30.0), retries=retries,
                      concurrency=concurrency, python=python)
    show_progress = not quiet and not as_json and sys.stderr.isatty()
    before = _stat(checkpoint)
    had_output = output is not None and os.path.lexists(output)  # (a file, a device, a FIFO, a dangling symlink)
    rerun = _rerun(click.get_current_context(), hosts, output) if output else ""
    try:
        with _ProbeProgress(show_progress) as bar:
            result = probe_hosts(entries, method=method, count=count, interval=interval, passes=passes,
                                 max_count=max_count, tol=tol, reply_timeout=timeout, bandwidth=bandwidth,
                                 bw_seconds=bw_seconds, streams=streams, bw_tool=bw_tool, checkpoint=checkpoint,
                                 resume=resume, progress=bar, ssh=opts,
                                 uplinks=bandwidth if uplinks is None else uplinks, uplink_passes=uplink_passes)
    except (KeyboardInterrupt, Terminated) as exc:
        raise Interrupted(_kept(checkpoint, before, "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C", rerun,
                                bandwidth if uplinks is None else bool(uplinks)),
                          143 if isinstance(exc, Terminated) else 130) from None
    finally:  # the keys --accept-new-host-keys stored, in one line (OpenSSH says "Permanently added"), also
        # before an error's line: they were added whatever came after
        added = added_keys_note(opts.added_host_keys)
        if added and not quiet:
            click.echo(f"plink probe: {added}", err=True)
    summary = _probe_summary(result, output)
    from plink.probes.probe import measured_anything

    if not measured_anything(result):  # every host unreachable (a bad key, config or known_hosts): no file
        gone = {**summary["unreachable"], **summary["dead"]}
        first = next(iter(gone.values()), result.meta.get("aborted") or "no pair answered")
        raise PlinkError(f"nothing measured: {len(gone)} of {summary['hosts']} hosts unreachable (first: {first})"
                         + ((f"; {output} left as it was" if had_output else "; nothing written") if output else ""))
    if output and checkpoint is None:
        result.save(output)
    if not output:
        click.echo(result.dumps(), nl=False)
    if as_json:
        _echo_json(summary)
    else:
        gone = {**summary["unreachable"], **summary["dead"]}
        for name, why in list(gone.items())[:10 if result.meta.get("aborted") else None]:
            state = "unreachable" if name in summary["unreachable"] else "died"
            click.echo(f"plink probe: {name} {state}: {why}", err=True)
        if not quiet:
            lat = summary["latency_us"]
            line = (f"probed {summary['hosts']} hosts, {summary['pairs'] - summary['missing_pairs']}/"
                    f"{summary['pairs']} pairs in {summary['rounds_run']} round{'' if summary['rounds_run'] == 1 else 's'}, "
                    f"{summary['elapsed_s']:.1f} s")
            if summary.get("missing_bandwidth_pairs"):
                line += (f" (bandwidth of {summary['pairs'] - summary['missing_bandwidth_pairs']}/"
                         f"{summary['pairs']}, latency of {summary['pairs'] - summary['missing_latency_pairs']})")
            if lat["median"] is not None:
                line += f"; latency p10 min/median/max {lat['min']}/{lat['median']}/{lat['max']} us"
            if summary.get("bandwidth_gbps"):
                b = summary["bandwidth_gbps"]
                line += ("; bandwidth min/median/max "
                         + "/".join(format_bandwidth(b[k]) for k in ("min", "median", "max")))
            click.echo(line, err=True)
            if result.meta.get("left_out"):
                click.echo(f"plink probe: left out (not in {hosts}): {', '.join(result.meta['left_out'])}", err=True)
            skipped = (result.meta.get("uplinks") or {}).get("skipped")
            if skipped:
                click.echo(f"plink probe: uplinks not measured: {skipped}", err=True)
            from plink.data.summary import crossing

            for u in summary.get("uplinks", []):
                click.echo(f"uplink of {len(u['hosts'])} host{'s' * (len(u['hosts']) != 1)} ({', '.join(u['hosts'][:4])}"
                           f"{', ...' if len(u['hosts']) > 4 else ''}): up {format_bandwidth(u['up_mbit'] / 1e3)} / down "
                           f"{format_bandwidth(u['down_mbit'] / 1e3)} with {crossing(len(u['hosts']), u['flows'])}"
                           + (f" (median of {u['passes']} passes)" if u["passes"] > 1 else ""), err=True)
            if output:
                click.echo(f"wrote {output}", err=True)
    if result.meta.get("aborted"):
        raise IncompleteMatrix(f"probe stopped: {result.meta['aborted']}; "
                               f"{summary['missing_pairs']} of {summary['pairs']} pairs missing"
                               + (f" ({rerun})" if output else "") + ", exit 3")
    if summary["missing_pairs"]:
        raise IncompleteMatrix(f"incomplete matrix: {summary['missing_pairs']} of {summary['pairs']} pairs missing"
                               + (f" ({rerun})" if output else "") + ", exit 3")
