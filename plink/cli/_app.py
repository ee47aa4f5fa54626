"""The ``plink`` command group and what every command shares."""
from __future__ import annotations

import json

import click

from plink import __version__

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def stdout_if_dash(ctx, param, value):
    """Click callback of ``-o``: ``-o -`` means stdout, as no ``-o`` does."""
    return None if value == "-" else value


def _load_probe(path: str, hosts: str | None = None, unit: str = "us"):
    from plink.data.probefile import load

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



def _stdout_console():
    from rich.console import Console

    return Console(highlight=False)
