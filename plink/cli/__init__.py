"""The ``plink`` command line: parse, call the library, render.

One module per stage (probe, order, structure, schedule, launch); each command is a few lines
over a library function. Exit codes: 0 success, 1 failure (bad input, unreachable hosts, ...),
2 usage error; see each command's ``--help`` for codes of its own. Every error is one line on
stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import re
import sys

import click

from plink.cli import launch, order, probe, schedule, simulate, structure  # noqa: F401  (register the commands)
from plink.cli._app import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, cli
from plink.data.fileio import WRITE_ERRNOS as _WRITE_ERRNOS
from plink.data.fileio import guard_closed_stdout as _guard_closed_stdout
from plink.data.fileio import quiet_stdout as _quiet_stdout
from plink.errors import OptionError, PlinkError, Terminated, terminate_as_interrupt

__all__ = ["cli", "main"]

_ESCAPED_BYTE = re.compile(r"\\udc([89a-f][0-9a-f])")


def _readable(msg: str) -> str:
    """An error message on one line, with the bytes of an argument that is not UTF-8 shown as the
    user typed them: ``--host $'\\xff'`` reaches Python as the lone surrogate U+DCFF, whose repr
    ``'\\udcff'`` names no byte the user knows; it is said ``'\\xff'`` (and a raw lone surrogate
    the same way, which the terminal could not print)."""
    msg = " ".join(msg.split())
    msg = "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in msg)
    return _ESCAPED_BYTE.sub(lambda m: "\\x" + m.group(1), msg)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one-line errors, documented exit codes."""
    args = sys.argv[1:] if argv is None else list(argv)
    head = args[:args.index("--")] if "--" in args else args
    debug = "--debug" in head
    if debug:  # a global flag, wherever it was typed (`plink probe ... --debug` too)
        args = ["--debug"] + [a for a in head if a != "--debug"] + args[len(head):]
    if not debug:  # library warnings (paramiko, numpy) never break the one-line-error rule
        import logging
        import warnings

        warnings.simplefilter("ignore")
        logging.getLogger("paramiko").addHandler(logging.NullHandler())
        logging.getLogger("paramiko").propagate = False
    terminate_as_interrupt()
    _guard_closed_stdout()
    try:
        # the context and the command as click's main runs them, without its own handling of a Ctrl-C, which
        # prints an empty line and turns the interrupt (SIGTERM's Terminated too) into its Abort
        with cli.make_context("plink", args) as ctx:
            rc = cli.invoke(ctx)
        if isinstance(rc, int) and rc != EXIT_OK:
            sys.exit(rc)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:  # click's form of a Ctrl-C (plink asks no questions; kept for safety)
        if Terminated.received:
            click.echo("plink: terminated (SIGTERM)", err=True)
            sys.exit(143)
        click.echo("plink: interrupted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        if debug:
            raise
        if type(exc).__name__ == "NoArgsIsHelpError" and exc.ctx is not None:  # a bare `plink`: its help
            click.echo(exc.ctx.get_help(), err=True)
            sys.exit(EXIT_USAGE)
        cmd = exc.ctx.command_path if exc.ctx is not None else "plink"
        msg = _readable(exc.format_message())
        if exc.ctx is not None and exc.ctx.command.name == "watch" and "--json" in head:
            # plink watch --json prints the run's status always (for cron's monitoring), a usage error's too
            from plink.cli._app import _echo_json

            _echo_json({"status": "error", "changed": False, "message": msg, "exit_code": EXIT_USAGE})
        click.echo(f"plink: error: {msg} (see '{cmd} --help')", err=True)  # one prefix for every error
        sys.exit(EXIT_USAGE)
    except click.ClickException as exc:
        if debug:
            raise
        click.echo(f"plink: error: {_readable(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)
    except PlinkError as exc:
        if debug:
            raise
        msg = _readable(str(exc))
        if isinstance(exc, OptionError):  # a usage error plink checks itself: pointed at --help as click's are
            sub = next((a for a in args if a in cli.commands), None)
            msg += f" (see 'plink{' ' + sub if sub else ''} --help')"
        click.echo(f"plink: error: {msg}", err=True)
        sys.exit(exc.exit_code)
    except Terminated:  # (a KeyboardInterrupt: before it)
        click.echo("plink: terminated (SIGTERM)", err=True)
        sys.exit(143)
    except KeyboardInterrupt:
        click.echo("plink: interrupted", err=True)
        sys.exit(130)
    except MemoryError:  # not a bug: the input needs more memory than the machine has
        if debug:
            raise
        click.echo("plink: error: out of memory (the input needs more than this machine has free)", err=True)
        sys.exit(EXIT_FAILURE)
    except BrokenPipeError:
        _quiet_stdout()
        sys.exit(EXIT_FAILURE)
    except OSError as exc:
        if debug or exc.errno not in _WRITE_ERRNOS:
            raise
        # a full disk or a device that failed while writing (stdout to /dev/full, a full disk): not a bug
        _quiet_stdout()
        click.echo(f"plink: error: cannot write the output: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_FAILURE)
    except ModuleNotFoundError as exc:  # an installation without one of plink's dependencies
        if debug:
            raise
        top = (exc.name or "").partition(".")[0]
        if top in ("", "plink", "solvers", "probes"):  # a part of plink itself: a broken install, a bug
            click.echo(f"plink: internal error: ModuleNotFoundError: {exc} (rerun with --debug for a traceback)",
                       err=True)
        else:
            click.echo(f"plink: error: the Python package {top!r} is missing from this environment "
                       f"({sys.executable}): reinstall plink with its dependencies ('pip install .' in the "
                       f"checkout, see the README's Set up)", err=True)
        sys.exit(EXIT_FAILURE)
    except Exception as exc:  # a bug: say so in one line, traceback with --debug
        if debug:
            raise
        click.echo(f"plink: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)", err=True)
        sys.exit(EXIT_FAILURE)
    sys.exit(EXIT_OK)
