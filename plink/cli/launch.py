"""plink emit / node-rank / watch: launcher files and the cron re-probe."""

from __future__ import annotations

import json

import click

from plink.cli._app import (check_option_files, cli, _echo_json, matrix_input_options, note_groups_beyond, refuse_input_as_output,
                            size_value, stdout_if_dash)
from plink.cli.order import _check_format_options
from plink.data.fileio import text_lines
from plink.errors import PlinkError
from plink.launch.emitters import FORMATS, MAX_SLOTS


@cli.command("emit")
@click.argument("orderfile", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice([f for f in FORMATS if f != "json"]), required=True,
              help="Launcher file to write (examples above).")
@click.option("--slots", default=1, show_default=True, type=int,
              help="Processes (GPUs) per host; the ranks of one host stay contiguous.")
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False),
              help="Groups file (plink group) for --format slurm-topology; it may name more hosts than the order.")
@click.option("--algo", type=click.Choice(["ring", "hd", "rd", "dbt", "bcube", "bintree"]),
              help="Algorithm for --format env (default: the JSON order file's, else ring).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), callback=stdout_if_dash, help="File to write (default: stdout).")
def emit_cmd(orderfile, fmt, slots, groups_file, algo, output) -> None:
    """Write a launcher file from an existing order file (no new search).

    ORDERFILE is a plain or JSON order file (plink order, plink watch's
    STATE_DIR/order.json; - reads it from stdin), so every launcher file of
    one job has the same order.

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
    from plink.data.orderfile import read_order_hosts
    from plink.launch.emitters import emit

    _check_format_options(fmt, slots, groups_file)
    if groups_file and fmt != "slurm-topology":
        raise click.UsageError(f"--groups is for --format slurm-topology (the {fmt} format has no groups)")
    if fmt == "slurm-topology" and not groups_file:  # (exit 1; an order file does not say who is in which group)
        raise click.UsageError("--format slurm-topology needs --groups GROUPS.json (plink group): an order file "
                               "does not keep its groups")
    if algo is not None and fmt != "env":
        raise click.UsageError(f"--algo is for --format env (the {fmt} format does not depend on the algorithm)")
    refuse_input_as_output({"-o": output}, {"ORDERFILE": orderfile, "--groups": groups_file})
    check_option_files({"--groups": groups_file})
    # - is a pipe: plink order probe.json --format json -o - | plink emit - --format openmpi
    source, given = _order_input(orderfile)
    hosts = read_order_hosts(source, text=given)
    searched = _order_file_algo(given)
    kept = _plain_slots(given)
    if kept and kept != {slots} and fmt not in ("plain", "json", "slurm-topology"):
        # a launcher hostfile given as the order: its slots are not carried over, --slots is
        said = f"slots={kept.pop()}" if len(kept) == 1 else f"slots={min(kept)}..{max(kept)}"
        click.echo(f"plink: note: {orderfile} says {said}; this file gives every host --slots {slots} "
                   "(plink emit takes the processes per host from --slots alone)", err=True)
    if algo is None and searched is None and fmt == "env":
        click.echo(f"plink: note: {orderfile} does not say which collective its order was made for (a plain host "
                   "list): this environment is for a ring; --algo names another", err=True)
    if algo is None:
        algo = searched or "ring"
    elif searched and searched != algo:
        click.echo(f"plink: note: {orderfile}'s order was searched for {searched}; this environment asks the "
                   f"libraries for {algo}, which the order was not made for ('plink order --algo {algo}' makes one)",
                   err=True)
    labels = None
    if groups_file:
        from plink.data.groupfile import load_groups
        from plink.order import group_labels

        groups = load_groups(groups_file)  # (its own errors say what is wrong with the file)
        names = [h.name for h in hosts]
        labels = group_labels(names, groups_file, groups, where=f"the order {orderfile}").tolist()  # (as plink order's)
        note_groups_beyond(groups_file, groups, names, "the order")
    order_file = output or (orderfile if orderfile != "-" else "THIS_FILE")  # what a torchrun map's header names
    try:
        text = emit(fmt, hosts, slots=slots, algo=algo, labels=labels, order_file=order_file, made_for=searched)
    except PlinkError as exc:  # (which file's hosts)
        raise PlinkError(f"{source}: {exc}") from None
    if output:
        from plink.data.fileio import atomic_write_text

        atomic_write_text(output, text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


def _plain_slots(text: str) -> set[int]:
    """The ``slots=N`` values on the lines of a plain order file's ``text`` (a launcher hostfile given as
    the order); empty for a JSON one or lines without them."""
    found = set()
    if not text.lstrip().startswith("{"):
        from plink.data.orderfile import _mpich_slots, host_slot_fields

        for raw in text_lines(text):
            line = raw.partition("#")[0]
            words = line.split()
            fields = host_slot_fields(line)
            if fields is not None:
                found.update(_mpich_slots(f) for f in fields)  # MPICH's host:N, Horovod's host:N,host:N
            for word in words[1:]:
                key, _, value = word.partition("=")
                if key == "slots" and value.isdigit():
                    found.add(int(value))
    return found


def _order_file_algo(text: str) -> str | None:
    """The collective a JSON order file's ``text`` was searched for; None for a plain one."""
    try:
        doc = json.loads(text.removeprefix("\ufeff"))
        return doc.get("algo") if isinstance(doc, dict) else None
    except (ValueError, RecursionError):
        return None


@cli.command("node-rank")
@click.argument("orderfile", type=click.Path(dir_okay=False))
@click.option("--host", help="Match this name or IP address instead of this machine's.")
@click.option("--master", is_flag=True, help="Print rank 0's address (or name) instead: the --master-addr.")
def node_rank_cmd(orderfile, host, master) -> None:
    """Print this node's rank in ORDERFILE (for torchrun --node-rank).

    ORDERFILE is a JSON or plain order file (or the torchrun map; - reads
    it from stdin). This node
    is matched by host name, FQDN or short name, or by any of its IP
    addresses (the JSON file's addresses, or host names resolved).

    \b
    Example, on every node:
      torchrun --nnodes 8 --nproc-per-node 8 \\
        --node-rank "$(plink node-rank order.json)" \\
        --master-addr "$(plink node-rank order.json --master)" --master-port 29500 train.py
    """
    from plink.data.orderfile import read_order_hosts
    from plink.launch.emitters import master_address
    from plink.launch.noderank import node_rank

    source, given = _order_input(orderfile)
    hosts = read_order_hosts(source, text=given)
    if master:
        click.echo(master_address(hosts))
        return
    click.echo(node_rank(hosts, host, source=source))


def _order_input(orderfile: str) -> tuple[str, str]:
    """``(name for messages, text)`` of ORDERFILE, read once: ``-`` is standard input."""
    if orderfile != "-":
        from plink.data.orderfile import read_order_text

        return orderfile, read_order_text(orderfile)
    from plink.data.fileio import STDIN_NAME, read_stdin
    from plink.errors import ProbeFileError

    return STDIN_NAME, read_stdin(ProbeFileError)


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


def _prober(hosts_file, probe_file, hosts_format="auto", load_input=None, max_hosts=None, quiet=True,
            input_notes=None, **probe_kw):
    """The probe step of plink watch: a probe file (read with the input options; --hosts then
    names a plain matrix's hosts; its notes on stderr unless ``quiet``: a cron run stays quiet,
    -v shows them; and into the list ``input_notes`` when given, for --json), or the probing
    library over a host list."""
    # the input is read now, before plink watch makes its state directory: a bad file changes nothing
    # (a first run with a bad host list left DIR/history and DIR/lock behind, exit 1)
    if probe_file:
        probe = load_input(probe_file, hosts=hosts_file, quiet=quiet, collect=input_notes)
        return lambda: probe
    ssh_keys = ("ssh_config", "known_hosts")
    ssh_kw = {k: probe_kw.pop(k) for k in ssh_keys if probe_kw.get(k)}
    for k in ssh_keys:
        probe_kw.pop(k, None)
    if "timeout" in probe_kw:  # as plink probe: connect timeout and the dead-host timeout
        t = probe_kw.pop("timeout")
        ssh_kw.update(connect_timeout=t, command_timeout=max(t, 30.0))
        probe_kw["reply_timeout"] = t
    if "retries" in probe_kw:
        ssh_kw["retries"] = probe_kw.pop("retries")

    from plink.data.hostlist import check_entry_names, read_hostlist

    entries = read_hostlist(hosts_file, fmt=hosts_format, max_hosts=max_hosts)
    check_entry_names(entries, hosts_file)

    def probe_now():
        try:
            from plink.probes.probe import probe_hosts
            from plink.probes.ssh import SSHOptions
        except ImportError as exc:
            raise PlinkError(f"the probing library is not available ({exc}); use --probe-file") from None

        return probe_hosts(entries, ssh=SSHOptions(**ssh_kw), **probe_kw)

    return probe_now


@cli.command("watch")
@click.argument("state_dir", type=click.Path(file_okay=False))
@click.option("--hosts", "hosts_file", type=click.Path(dir_okay=False),
              help="Host list to probe (as plink probe); with --probe-file, the host names of a plain matrix.")
@click.option("--probe-file", type=click.Path(dir_okay=False),
              help="Use this probe file (or plain matrix, see --kind/--unit) instead of probing.")
@click.option("--method", type=click.Choice(["udp", "fping", "icmp"]), default="udp", show_default=True,
              help="Latency probe (as plink probe).")
@click.option("--count", default=20, show_default=True, type=click.IntRange(1, 100000), help="Samples per pair.")
@click.option("--timeout", default=10.0, show_default=True, type=click.FloatRange(0, 600, min_open=True),
              help="SSH connect timeout, and seconds of silence after which a host counts as dead (as plink probe).")
@click.option("--retries", default=2, show_default=True, type=click.IntRange(0, 10),
              help="Retries of a failed SSH connection (as plink probe).")
@click.option("--ssh-config", type=click.Path(dir_okay=False), help="ssh config file (as plink probe).")
@click.option("--known-hosts", type=click.Path(dir_okay=False), help="known_hosts file (as plink probe).")
@click.option("--hosts-format", type=click.Choice(["auto", "plain", "openmpi", "mpich", "slurm"]), default="auto",
              show_default=True, help="Host list format (as plink probe).")
@click.option("--algo", type=click.Choice(["ring", "hd", "rd", "dbt", "bcube", "bintree"]), default="ring", show_default=True)
@click.option("--size", default="25MiB", show_default=True, callback=size_value,
              help="All-reduce size (bytes, or KiB/MiB/GiB/KB/MB/GB); 0 prices the latencies alone.")
@click.option("--base", default=2, show_default=True, type=int, help="BCube base (--algo bcube).")
@click.option("--model", "cost_model", type=click.Choice(["shared", "pairsum"]), default="shared", show_default=True,
              help="Cost model, as plink order: shared NICs and rack uplinks (seconds), or the pair sum.")
@click.option("--nic-gbps", type=float, default=None,
              help="Host NIC speed for --model shared when the probe has no bandwidth (as plink order) [assumed 10].")
@click.option("--min-gain", default="5%", show_default=True,
              help="Re-order only if the new order is predicted this much cheaper than the current one.")
@click.option("--time-limit", default=5.0, show_default=True, type=float,
              help="Seconds of order search (reading the matrix and inferring its groups come on top: "
                   "up to about a minute at ~500 hosts on 2 cores).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1),
              help="Random seed of the order search at each re-probe.")
@click.option("--initial-order", type=click.Path(dir_okay=False),
              help="The order in use now (plain/JSON order file), compared against on the first run.")
@click.option("--emit", "emit_items", multiple=True, metavar="FORMAT:PATH",
              help="Keep a launcher file in sync with the current order (repeatable), e.g. openmpi:/shared/hosts.ompi.")
@click.option("--slots", default=1, show_default=True, type=click.IntRange(min=1, max=MAX_SLOTS),
              help="Processes per host for --emit files.")
@click.option("--keep", default=500, show_default=True, type=click.IntRange(min=0), help="Runs kept in the history (0: all).")
@click.option("--window", default=1, show_default=True, type=click.IntRange(min=1),
              help="Decide on the median of the last K probes (1: the new probe alone); damps noise.")
@click.option("--reset", is_flag=True, help="Move a corrupt state file aside (kept) and start over.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's status as JSON (always).")
@click.option("-v", "--verbose", is_flag=True, help="Print the status even when nothing changed.")
@click.option("--max-hosts", default=4096, show_default=True, type=click.IntRange(1),
              help="Refuse a host list that expands to more hosts.")
@matrix_input_options(hosts_flag=None)
def watch_cmd(state_dir, hosts_file, probe_file, method, count, timeout, retries, ssh_config, known_hosts, hosts_format, algo, size, base, cost_model, nic_gbps, min_gain, time_limit, seed, initial_order,
              emit_items, slots, keep, window, reset, as_json, verbose, max_hosts, load_input) -> None:
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
    from plink.data.orderfile import read_order
    from plink.watch import WatchBusy, watch

    if not hosts_file and not probe_file:
        raise click.UsageError("give --hosts HOSTS (probe them) or --probe-file PROBE")
    from plink.data.fileio import is_stdout

    emits = _parse_emit(emit_items)
    to_stdout = [f"{fmt}:{path}" for fmt, path in emits if is_stdout(path)]
    if as_json and to_stdout:
        raise click.UsageError(f"--emit {to_stdout[0]} and --json would both write to stdout: emit to a file")
    refuse_input_as_output({f"--emit {fmt}:{path}": path for fmt, path in emits},
                           {"--probe-file": probe_file, "--hosts": hosts_file, "--initial-order": initial_order})
    from plink.watch import is_state_file

    from plink.data.inputs import host_names_file

    for flag, path in (("--hosts", hosts_file), ("--probe-file", probe_file)):
        if path is not None and is_state_file(state_dir, host_names_file(path) if flag == "--hosts" else path):
            raise click.UsageError(f"{flag} {path} is one of {state_dir}'s own files, which plink watch rewrites: "
                                   "keep the input elsewhere")
    input_notes: list[str] = []  # what reading --probe-file said: in --json (stderr only with -v)
    try:
        prober = _prober(hosts_file, probe_file, hosts_format, load_input=load_input, max_hosts=max_hosts,
                         quiet=not verbose, input_notes=input_notes, method=method, count=count, ssh_config=ssh_config, known_hosts=known_hosts, timeout=timeout,
                         retries=retries)
        result = watch(
            state_dir, prober, algo=algo, size=size, base=base, min_gain=_parse_gain(min_gain),
            time_limit=time_limit, seed=seed, initial_order=read_order(initial_order) if initial_order else None,
            emit=emits, slots=slots, keep=keep, window=window, reset=reset, model=cost_model, nic_gbps=nic_gbps,
        )
    except WatchBusy as exc:
        if not as_json:
            raise
        _echo_json({"status": "busy", "changed": False, "message": str(exc), "exit_code": exc.exit_code})
        raise click.exceptions.Exit(exc.exit_code) from None
    except PlinkError as exc:  # a run that failed has a status too (stdout), besides the error line (stderr)
        if as_json:
            _echo_json({"status": "error", "changed": False, "message": " ".join(str(exc).split()),
                        "exit_code": exc.exit_code})
        raise
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated): the state is as it was (written last)
        if as_json:
            from plink.errors import Terminated

            term = isinstance(exc, Terminated)
            _echo_json({"status": "terminated" if term else "interrupted", "changed": False,
                        "message": "stopped by SIGTERM" if term else "stopped by Ctrl-C", "exit_code": 143 if term else 130})
        raise
    from plink.data.fileio import WRITE_ERRNOS, quiet_stdout

    try:
        if as_json:
            _echo_json({**result.to_dict(), "input_notes": input_notes})
        elif result.noteworthy or verbose:
            click.echo("\n".join(result.summary()))
    except OSError as exc:  # the run is done and its files written: its exit code (4: changed) still holds
        if exc.errno not in WRITE_ERRNOS:
            raise
        quiet_stdout()
        click.echo(f"plink: warning: cannot print the run's report ({exc.strerror or exc}); the run itself "
                   f"{'changed the order' if result.changed else 'is done'}: exit {result.exit_code}", err=True)
    raise click.exceptions.Exit(result.exit_code)
