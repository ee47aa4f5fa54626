"""The ``plink`` command group and what every command shares."""
from __future__ import annotations

import json
import os

import click

from plink import __version__

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def existing_dir(ctx, param, value):
    """Click callback of an output path: a file in a directory that does not exist is a usage
    error at once, not after the work (a search of minutes); ``-`` passes, an empty path does not
    (``-o ''``, an unset shell variable, wrote to stdout without a word)."""
    if value == "":
        dash = param is not None and param.type is not None and getattr(param.type, "allow_dash", False)
        raise click.BadParameter("empty path" + (" (- is stdout)" if dash else ""))
    if value is not None:
        from plink.data.fileio import missing_directory
        from plink.errors import PlinkError

        try:
            missing = missing_directory(value)
        except PlinkError as exc:  # a symlink loop: said by the write, with its message
            raise click.BadParameter(str(exc)) from None
        if missing is not None:
            raise click.BadParameter(f"cannot write {value}: directory {missing} does not exist")
    return value


def stdout_if_dash(ctx, param, value):
    """Click callback of ``-o``: ``-o -`` (or ``/dev/stdout``, or the file stdout goes to) means stdout,
    as no ``-o`` does (see :func:`existing_dir`)."""
    value = existing_dir(ctx, param, value)
    if value is not None:
        from plink.data.fileio import is_stdout

        if is_stdout(value):  # -o /dev/stdout, or the file stdout is redirected to: the same as -o -
            ctx.meta["plink.output_dash"] = True
            return None
    return value


def _same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` are one existing file (also through links)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one does not exist (yet)
        return False


def check_option_files(inputs: dict) -> None:
    """A one-line error naming the option when a file an option reads (``--groups 0``) does not
    exist; ``inputs``: ``{option: path or None}`` (arguments say their file in their own errors)."""
    from plink.errors import ProbeFileError

    for flag, path in inputs.items():
        if path not in (None, "-") and not os.path.lexists(path):
            raise ProbeFileError(f"{flag} {path}: no such file")


def refuse_input_as_output(outputs: dict, inputs: dict) -> None:
    """A usage error, before any work, when an output path is one of the command's input files
    (the same file, also through a symlink or a hard link): writing it would replace what the
    command reads, e.g. ``plink group dc.json -o dc.json`` turned the probe file into a groups file.
    ``outputs`` / ``inputs``: ``{option: path or None}``."""
    ctx = click.get_current_context(silent=True)
    pairs = list(inputs.items()) + list(({} if ctx is None else ctx.meta.get("plink.inputs", {})).items())
    outs = [(f, o) for f, o in outputs.items() if o is not None and o != "-"]
    for i, (fa, a) in enumerate(outs):  # two outputs on one file: the last would replace the first
        for fb, b in outs[i + 1:]:
            if _same_file(a, b) or os.path.abspath(a) == os.path.abspath(b):
                raise click.UsageError(f"{fa} and {fb} name the same file ({b}): one would replace the other")
    for oflag, out in outputs.items():
        if out is None or out == "-":
            continue
        for iflag, inp in pairs:
            if inp is None or inp == "-":
                continue
            if _same_file(out, inp):
                what = oflag if oflag.endswith(str(out)) else f"{oflag} {out}"
                raise click.UsageError(f"{what} is the file {iflag} reads: writing it would replace "
                                       "that input; write somewhere else")


def size_value(ctx, param, value):
    """Click callback of a size option: bytes (an int), or a usage error (exit 2) naming the option."""
    if value is None:
        return None
    from plink.errors import PlinkError
    from plink.units import parse_size

    try:
        return parse_size(value)
    except PlinkError as exc:
        raise click.BadParameter(str(exc)) from None


def plot_file(ctx, param, value):
    """Click callback of ``--plot``: a file (a picture on stdout would mix with the text there)."""
    value = existing_dir(ctx, param, value)
    if value is not None:
        from plink.data.fileio import is_stdout

        if is_stdout(value) and os.path.realpath(value) != os.devnull:  # (/dev/null: thrown away, stdout there or not)
            raise click.BadParameter("the picture needs a file (on stdout it would mix with the text)")
    return value


def check_picture_format(path: str | None) -> None:
    """Refuse a ``--plot`` file name whose extension matplotlib cannot write, before any matrix is
    read (it failed after the work was done); commands call it after ``refuse_input_as_output``, whose
    refusal says more. Without matplotlib the plot's own one-line error says so."""
    suffix = os.path.splitext(path or "")[1].lower().lstrip(".")
    if not suffix:
        return  # (no --plot, or matplotlib writes its default format, PNG)
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        return
    kinds = FigureCanvasBase.get_supported_filetypes()
    if suffix not in kinds:
        raise click.UsageError(f"--plot: cannot draw a .{suffix} picture (give one of: {', '.join(sorted(kinds))})")


def note_groups_beyond(groups_file: str, groups, names, where: str = "the probe") -> None:
    """A note on stderr when ``groups`` (read from ``groups_file``) names hosts that ``names`` (the
    probe's, the order's) lack: they are left out (a rack map of the whole site is fine; a typo shows here)."""
    from plink.data.inputs import hosts_not_in

    extra = sorted(hosts_not_in(groups.hosts, names))  # (case ignored, as the groups are matched)
    if extra:
        more = f", {extra[1]!r}" if len(extra) == 2 else (f" and {len(extra) - 1} more" if len(extra) > 2 else "")
        click.echo(f"plink: note: {groups_file} names {len(extra)} host(s) not in {where} ({extra[0]!r}{more}): "
                   "left out of the groups", err=True)


def refuse_json_with_dash(as_json: bool, what: str) -> None:
    """``--json`` with an explicit ``-o -`` (or ``-o /dev/stdout``): both would write to stdout, so one
    would be lost."""
    if as_json and click.get_current_context().meta.get("plink.output_dash"):
        raise click.UsageError(f"--json prints {what} on stdout, so -o cannot write there too: give -o a file")


def _load_probe(path: str, hosts: str | None = None, unit: str | None = None, kind: str = "latency",
                bandwidth: str | None = None, bandwidth_unit: str | None = None, quiet: bool = False,
                collect: list | None = None):
    """Read PROBEFILE with the input options (see :func:`matrix_input_options`); notes go to stderr
    (not when ``quiet``), and into ``collect`` when given (warnings first, as printed)."""
    from plink.data.inputs import load_input

    loaded = load_input(path, hosts=hosts, unit=unit, kind=kind, bandwidth=bandwidth, bandwidth_unit=bandwidth_unit)
    for w in loaded.warnings:
        click.echo(f"plink: warning: {w}", err=True)
    if not quiet:
        for note in loaded.notes:
            click.echo(f"plink: note: {note}", err=True)
    if collect is not None:
        collect.extend([*loaded.warnings, *loaded.notes])
    return loaded.probe


def matrix_input_options(hosts_flag: str = "--hosts"):
    """The input options of every command that reads a matrix, as one decorator.

    Adds ``--hosts`` (host names of a plain matrix: a host list in any format, or a CSV
    column as FILE or FILE:COLUMN), ``--unit``, ``--kind latency|bandwidth``,
    ``--bandwidth-matrix`` and ``--bandwidth-unit``, and passes the command one keyword
    ``load_input``: a function PATH -> ProbeData that reads with them (notes to stderr).
    """
    from plink.data.inputs import BANDWIDTH_UNITS, LATENCY_UNITS, UNITS

    class UnitChoice(click.Choice):
        """The units and their other spellings; an unknown one is told the units, not every spelling."""

        def convert(self, value, param, ctx):
            if value not in self.choices:
                self.fail(f"{value!r} is not a unit plink reads: " + ", ".join(LATENCY_UNITS) + " (latency) or "
                          + ", ".join(BANDWIDTH_UNITS) + " (bandwidth), or another spelling of one (Gbps, MBps, "
                          "msec, ...)", param, ctx)
            return super().convert(value, param, ctx)

    def decorate(f):
        import functools

        @functools.wraps(f)
        def wrapper(*args, matrix_hosts=None, unit=None, kind="latency", bandwidth_matrix=None,
                    bandwidth_unit=None, **kwargs):
            # the files they name are inputs too: refuse_input_as_output checks them
            from plink.data.inputs import host_names_file

            click.get_current_context().meta["plink.inputs"] = {
                "--hosts": None if matrix_hosts is None else host_names_file(matrix_hosts),
                "--bandwidth-matrix": bandwidth_matrix}
            if bandwidth_unit is not None and bandwidth_matrix is None:  # (it was ignored without a word)
                raise click.UsageError("--bandwidth-unit is the unit of --bandwidth-matrix, which is not given")
            if bandwidth_matrix is not None and kwargs.get("no_bandwidth"):  # (read, then set aside silently)
                raise click.UsageError("--bandwidth-matrix and --no-bandwidth exclude each other")

            def load(path, quiet=False, hosts=None, collect=None):
                return _load_probe(path, matrix_hosts if hosts is None else hosts, unit, kind, bandwidth_matrix,
                                   bandwidth_unit, quiet=quiet, collect=collect)

            return f(*args, load_input=load, **kwargs)

        opts = [] if hosts_flag is None else [
            click.option(hosts_flag, "matrix_hosts", metavar="FILE[:COLUMN]",
                         help="Host names of a plain matrix, in row order: a host list (any plink probe format) "
                              "or a column of a CSV table (FILE:COLUMN; default the name/host/region column).")]
        for opt in reversed(opts + [
            click.option("--kind", type=click.Choice(["latency", "bandwidth"]), default="latency", show_default=True,
                         help="What a plain matrix holds: latency (lower is closer) or bandwidth (higher is "
                              "closer; its inverse is the distance, dissertation 4.2.1)."),
            click.option("--unit", type=UnitChoice(UNITS), metavar="UNIT",
                         help="Unit of a plain matrix: us, ms, s, ns (latency; default us) or Gbit/s, Mbit/s, "
                              "GB/s, MB/s, GiB/s, Gbps, MBps, ... (bandwidth; default Gbit/s)."),
            click.option("--bandwidth-matrix", type=click.Path(dir_okay=False),
                         help="A bandwidth matrix (same hosts, same order) to add to a latency matrix or probe file."),
            click.option("--bandwidth-unit", type=UnitChoice(UNITS), metavar="UNIT",
                         help="Unit of --bandwidth-matrix (default Gbit/s)."),
        ]):
            wrapper = opt(wrapper)
        return wrapper

    return decorate


def _echo_json(obj) -> None:
    click.echo(json.dumps(obj, indent=1, allow_nan=False))


def print_table(console, table) -> None:
    """Print a rich ``table`` with its title on a line of its own: rich wraps a title to the
    table's width, which cut titles mid-phrase (a narrow table, or any table in a log at 80 columns)."""
    title, table.title = table.title, None
    if title:
        console.print(title)
    console.print(table)


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
      plink order probe.json --algo ring -o ranks.txt   (not over hosts.txt)
    \b
    Try it without a cluster:
      plink simulate --racks 8 --hosts-per-rack 8 --seed 1 -o dc.json
      plink order dc.json --algo ring -o hosts.txt
    """



def _stdout_console():
    from rich.console import Console

    return Console(highlight=False)
