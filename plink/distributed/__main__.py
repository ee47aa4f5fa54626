"""``python -m plink.distributed probe -o probe.json``: the in-job probe under any launcher.

Every process of the job runs the same line (torchrun, srun, mpirun, a
PyTorchJob); rank 0 writes the probe file ``plink order`` reads.  Exit codes:
0 every pair measured, 3 some pairs missing or a node failed (the file is
written, the failed nodes are named on stderr), 1 error, 2 usage.

``python -m plink.distributed compare order.json``: the job's all-reduce timed
in the launcher's order and in the order file's (what ``plink order`` predicted,
measured); rank 0 prints both.  Exit codes: 0, 1 error, 2 usage.
"""

from __future__ import annotations

import json
import os
import sys

# torch's C++ log (a lost store or a failed join prints 15-25 lines of C++ frames before the error plink
# reports in one line): fatal messages only, unless the user set another level; set before torch is imported
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")

import click  # noqa: E402

from plink.distributed.probe import MAX_TIMEOUT, METHODS  # noqa: E402
from plink.errors import PlinkError  # noqa: E402

EXIT_INCOMPLETE = 3


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
def cli() -> None:
    """Locality from inside a torch.distributed job (no SSH)."""


@cli.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Probe file to write (rank 0).")
@click.option("--method", type=click.Choice(METHODS), default="udp", show_default=True,
              help="Latency by udp: plink's agent as a local process of each measuring rank, an authenticated "
                   "UDP echo timed by kernel stamps (UDP on ephemeral ports must pass between the nodes); "
                   "tensor: ping-pongs of a tensor over the job's backend.")
@click.option("--samples", default=50, show_default=True, type=click.IntRange(min=1),
              help="Pings per pair (udp: per direction).")
@click.option("--interval", default=0.01, show_default=True, type=click.FloatRange(min=0), help="Seconds between pings.")
@click.option("--passes", default=1, show_default=True, type=click.IntRange(min=1),
              help="Go through the rounds this many times, samples split between passes (spreads each pair over time).")
@click.option("--per-rank", is_flag=True, help="One entry per rank (default: one per node, local rank 0 measures).")
@click.option("--bandwidth", is_flag=True, help="Also measure bandwidth per direction.")
@click.option("--bw-seconds", default=1.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Seconds of streaming per direction and pair.")
@click.option("--bw-size", default="4MiB", show_default=True, help="Tensor size for the bandwidth test.")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0, max=MAX_TIMEOUT, min_open=True),
              help="Seconds any wait for another rank may take before it is reported failed (udp: a pong "
                   "counts as lost after 1 s; a pair without any is reported with the reason; joining the "
                   "job: at least 60).")
@click.option("--transport", type=click.Choice(["pair", "world"]), default="pair", show_default=True,
              help="Tensors (--method tensor, --bandwidth) go over: pair: a 2-rank sub-group per pair (a failure "
                   "stays in the pair); world: send/recv on the default group.")
@click.option("--backend", type=click.Choice(["auto", "gloo", "nccl"]), default="auto", show_default=True,
              help="Process group backend (auto: NCCL if this rank has a GPU, else Gloo).")
@click.option("--json", "as_json", is_flag=True, help="Rank 0 prints a summary as JSON on stdout.")
def probe(output, method, samples, interval, passes, per_rank, bandwidth, bw_seconds, bw_size, timeout, transport, backend, as_json):
    """Measure RTT (and bandwidth) between the job's nodes; rank 0 writes the probe file.

    \b
    torchrun --nnodes 16 --nproc-per-node 8 ... -m plink.distributed probe -o probe.json
    srun python -m plink.distributed probe -o probe.json
    mpirun -x MASTER_ADDR=node01 python -m plink.distributed probe -o probe.json
    """
    from plink.distributed import init_from_env, probe_group

    size = _size_option(bw_size, "--bw-size")
    if output and as_json:
        from plink.data.fileio import is_stdout

        if is_stdout(output):  # the probe file and the summary would be two documents on one stream
            raise click.UsageError(f"-o {output} and --json would both write to stdout: write the probe file to a file")
    if output:  # rank 0 (from the launcher's variables) checks -o before the job starts, not after the probe
        from plink.data.fileio import missing_directory
        from plink.distributed.launcher import launcher_env

        try:
            first = launcher_env().rank == 0
        except PlinkError:  # no launcher: init_from_env below says so
            first = False
        missing = missing_directory(output) if first else None
        if missing is not None:
            raise click.BadParameter(f"cannot write {output}: directory {missing} does not exist", param_hint="-o")
    env = init_from_env(backend, timeout=max(timeout, 60.0))
    data = probe_group(samples=samples, interval=interval, passes=passes, per_rank=per_rank, bandwidth=bandwidth,
                       bw_seconds=bw_seconds, bw_size=size, timeout=timeout, transport=transport, method=method)
    if env.rank != 0:
        return 0
    if output:
        data.save(output)
    meta = data.meta
    failed = meta.get("failed") or {}
    for name, reason in failed.items():
        click.echo(f"plink.distributed: {name} failed: {reason}", err=True)
    pair_errors = meta.get("pair_errors") or {}
    for k, (pair, reason) in enumerate(pair_errors.items()):
        if k == 5:
            click.echo(f"plink.distributed: ... and {len(pair_errors) - 5} more pairs (meta.pair_errors in the file)",
                       err=True)
            break
        click.echo(f"plink.distributed: pair {pair}: {reason}", err=True)
    summary = {"entries": data.n, "ranks": sum(len(e) for e in meta["ranks"]), "missing_pairs": data.n_missing_pairs(),
               "rounds": meta["rounds"], "rounds_bound_s": meta["rounds_bound_s"], "rounds_s": meta["rounds_s"],
               "rendezvous_s": meta["rendezvous_s"], "total_s": meta.get("total_s"), "failed": failed,
               "pair_errors": pair_errors,
               "launcher": meta.get("launcher"), "output": output}
    if as_json:
        click.echo(json.dumps(summary))
    else:
        what = "rank" if per_rank else "node"
        click.echo(f"plink.distributed: {_count(data.n, what)}, {_count(meta['rounds'], 'round')} in "
                   f"{meta['rounds_s']:.1f} s (bound {meta['rounds_bound_s']:.1f} s), rendezvous "
                   f"{meta['rendezvous_s']:.1f} s, {_count(data.n_missing_pairs(), 'pair')} missing"
                   + (f", written to {output}" if output else "; not kept (no -o)"), err=True)
    # a node that failed makes the run incomplete even where its pairs were measured from the other side
    return EXIT_INCOMPLETE if data.n_missing_pairs() or failed else 0


@cli.command()
@click.argument("order_file", type=click.Path(dir_okay=False))
@click.option("--size", default="25MiB", show_default=True, help="All-reduce size (float32), e.g. 25MiB.")
@click.option("--repeats", default=5, show_default=True, type=click.IntRange(min=1),
              help="Timed runs per order (after one warm-up), the orders alternating.")
@click.option("--per-rank", is_flag=True, help="The file names ranks, not nodes (as from probe --per-rank).")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0, max=MAX_TIMEOUT, min_open=True),
              help="Seconds any wait for another rank may take (joining the job: at least 60).")
@click.option("--backend", type=click.Choice(["auto", "gloo", "nccl"]), default="auto", show_default=True,
              help="Process group backend (auto: NCCL if this rank has a GPU, else Gloo).")
@click.option("--json", "as_json", is_flag=True, help="Rank 0 prints the times as JSON on stdout.")
def compare(order_file, size, repeats, per_rank, timeout, backend, as_json):
    """Time the all-reduce in the launcher's order and in ORDER_FILE's.

    Rank 0 prints both. ORDER_FILE is `plink order`'s output (a host list,
    --format json or a torchrun map), read on rank 0 and matched to the job's
    nodes by name, then address. The
    medians of REPEATS alternating runs (the slowest rank's time) show what
    the order buys with this job's library, backend and load, the whole
    collective, where `plink order` predicts the network's part.

    \b
    plink order probe.json --algo ring --format json -o order.json
    torchrun --nnodes 16 --nproc-per-node 8 ... -m plink.distributed compare order.json --size 25MiB
    """
    from plink.distributed import init_from_env, order_from_file
    from plink.distributed.compare import compare_groups
    from plink.distributed.group import _dist, _new_group

    nbytes = _size_option(size, "--size")
    if nbytes < 4:
        raise click.BadParameter(f"{size!r} is less than one float32 (4 bytes)", param_hint="--size")
    env = init_from_env(backend, timeout=max(timeout, 60.0))
    order = order_from_file(order_file, per_rank=per_rank, timeout=timeout)
    group = _new_group(_dist(), order, timeout, None)
    cmp = compare_groups(group, size=nbytes, repeats=repeats)
    if env.rank != 0:
        return 0
    same = order == list(range(len(order)))
    if as_json:
        click.echo(json.dumps({**cmp.to_dict(), "order_file": order_file, "order": order,
                               "same_as_launcher": same}))
    else:
        click.echo(f"plink.distributed: {cmp.summary('launcher order', order_file + ' order')}")
        if same:
            click.echo(f"plink.distributed: {order_file}'s order is the launcher's: the difference is noise", err=True)
    return 0


def _count(n: int, what: str) -> str:
    """``1 node``, ``2 nodes``."""
    return f"{n} {what}{'' if n == 1 else 's'}"


def _size_option(text: str, hint: str) -> int:
    """Bytes from a size option; a bad one is a usage error (exit 2)."""
    from plink.units import parse_size

    try:
        return parse_size(text)
    except PlinkError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


PROG = "python -m plink.distributed"


def main(argv=None) -> None:
    """Run the command; every error is one line ``plink.distributed: error: ...``, a Ctrl-C one line
    ``plink.distributed: interrupted`` (exit 130; SIGTERM: 143), and a rank that loses the job
    (rank 0 or the launcher's store died) says so in one line, exit 1."""
    from plink.data.fileio import WRITE_ERRNOS, guard_closed_stdout, quiet_stdout
    from plink.errors import OptionError, Terminated, terminate_as_interrupt

    args = sys.argv[1:] if argv is None else list(argv)
    terminate_as_interrupt()

    guard_closed_stdout()  # `>&-`: the summary or --json fails with an error, not lost with exit 0
    try:
        # the context and the command as click's main runs them, without its handling of a Ctrl-C (an empty
        # line, then Abort: SIGTERM's Terminated came out as 'interrupted', 130)
        with cli.make_context(PROG, args) as ctx:
            rc = cli.invoke(ctx)
    except click.exceptions.Exit as exc:
        rc = exc.exit_code
    except click.exceptions.Abort:  # (kept for safety: plink asks no questions)
        click.echo("plink.distributed: interrupted", err=True)
        rc = 130
    except click.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError" and exc.ctx is not None:  # no command: the help, as plink
            click.echo(exc.ctx.get_help(), err=True)
            rc = 2
        else:
            cmd = exc.ctx.command_path if exc.ctx is not None else PROG
            click.echo(f"plink.distributed: error: {' '.join(exc.format_message().split())} (see '{cmd} --help')",
                       err=True)
            rc = 2
    except PlinkError as exc:
        msg = " ".join(str(exc).split())
        if isinstance(exc, OptionError):
            sub = next((a for a in args if a in cli.commands), None)
            msg += f" (see '{PROG}{' ' + sub if sub else ''} --help')"
        click.echo(f"plink.distributed: error: {msg}", err=True)
        rc = exc.exit_code
    except Terminated:
        click.echo("plink.distributed: terminated (SIGTERM)", err=True)
        rc = 143
    except KeyboardInterrupt:
        click.echo("plink.distributed: interrupted", err=True)
        rc = 130
    except OSError as exc:
        if exc.errno in WRITE_ERRNOS:  # stdout closed or full: the run's output is lost, so it failed
            quiet_stdout()
            click.echo(f"plink.distributed: error: cannot write the output: {exc.strerror or exc}", err=True)
        else:
            click.echo(f"plink.distributed: internal error: {type(exc).__name__}: {exc}", err=True)
        rc = 1
    except Exception as exc:  # noqa: BLE001 - torch's own errors: one line, not 45 of C++ frames
        lost = _lost_job(exc)
        if lost is None:
            click.echo(f"plink.distributed: internal error: {type(exc).__name__}: "
                       f"{' '.join(str(exc).split())[:300]}", err=True)
        else:
            click.echo(f"plink.distributed: error: {lost}", err=True)
        rc = 1
    _shutdown()
    sys.exit(rc if isinstance(rc, int) else 0)


def _lost_job(exc: BaseException) -> str | None:
    """The one-line reason for torch.distributed's error ``exc`` (another rank or the launcher's store
    went away), or None for anything else."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not isinstance(exc, getattr(dist, "DistError", ())):
        return None
    first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
    return (f"lost the job's other ranks ({type(exc).__name__}: {first[:160]}): did rank 0, another rank or "
            "the launcher stop?")


def _shutdown() -> None:
    try:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - best effort at exit
        pass


if __name__ == "__main__":
    main()
