"""The ``plink`` console script and ``python -m plink``: the CLI, loaded inside a guard.

Loading the CLI takes a second or more (numpy, scipy, click; tens of seconds on a starved
machine); a Ctrl-C then is an interruption like any other (``plink: interrupted``, exit 130),
not a traceback from deep inside an import.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Load :func:`plink.cli.main` and run it; Ctrl-C while loading exits 130 with one line."""
    try:
        from plink.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("plink: interrupted\n")
        sys.exit(130)
    cli_main()
