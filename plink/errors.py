"""Errors a user can act on.

Every failure that is the user's input (a malformed file, an option out of
range, an unreachable host) raises :class:`PlinkError` with a one-line
message.  The CLI prints it as ``plink: error: <message>`` and exits 1 (2 for
an :class:`OptionError`, a parameter out of range, like click's usage errors);
anything else is a bug and is shown as a traceback only with ``--debug``.

As in scikit-learn and numpy, a bad value is a :class:`ValueError`: an option or parameter out of
range (:class:`OptionError`) and invalid data (:class:`InputError`: a matrix or labels handed to a
function, a file that cannot be read, a host without a measured pair) are also ``ValueError``, so library code that
catches ``ValueError`` around plink's calls catches them.  What is not a bad value (a host that does
not answer, a busy state file) is a plain :class:`PlinkError`; ``except PlinkError`` catches all of them.
"""


class PlinkError(Exception):
    """A user-facing error with a one-line, actionable message."""

    exit_code = 1


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, Slurm, Kubernetes, ``kill``) in the ``plink`` command: raised in the main thread
    so that what a command has measured or found is kept as on Ctrl-C: a ``KeyboardInterrupt``, so that
    every handler of Ctrl-C (the searches keep their best order so far) handles it too, and no ``except
    Exception`` swallows it; exit 143. ``received`` is set once the signal came (a search that kept its
    order on it says so by ``solver["interrupted"]`` alone)."""

    received = False


def terminate_as_interrupt() -> None:
    """Make SIGTERM raise :class:`Terminated` in the main thread (the ``plink`` and ``python -m
    plink.distributed`` commands), so a command cleans up as on Ctrl-C (a probe keeps what it measured
    in its file); without it the process died at once, leaving only the journal."""
    import signal
    import threading

    def raise_terminated(signum, frame):
        Terminated.received = True
        raise Terminated()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, raise_terminated)


class OptionError(PlinkError, ValueError):
    """A parameter outside its range (``--jobs -3``, ``--time-limit nan``): a usage error, exit 2,
    as click gives for the ranges it checks itself."""

    exit_code = 2


class InputError(PlinkError, ValueError):
    """Data that is invalid: a matrix, labels or coordinates handed to a library function (not
    square, negative, a host without a measured pair), or a file's contents (:class:`ProbeFileError`)."""


class ProbeFileError(InputError):
    """A probe, group or order file that cannot be read or is invalid."""


class UnitError(OptionError, ProbeFileError):
    """A unit that does not fit the matrix kind (``--kind bandwidth --unit ms``): an option
    error (exit 2), and a :class:`ProbeFileError` to code that reads matrices."""


class UnmeasuredHostError(InputError):
    """A host without a single measured pair, where structure inference must place every host
    (``plink group``, ``plink schedule``): the commands add the file's name to the message."""
