import fcntl
import os
import sys

import pytest

# Tests import the packages from this checkout, whatever is installed.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture(autouse=True)
def _shared_machine_netns_lock(request):
    """With ``PLINK_NETNS_LOCK=<file>`` (a machine shared by several people), each
    netns test holds an flock on that file while it runs, so timed cluster runs
    do not share the cores.  Not needed for correctness: clusters pick their own
    subnets and prefixes (plink/probes/netns.py)."""
    path = os.environ.get("PLINK_NETNS_LOCK")
    if not path or request.node.get_closest_marker("netns") is None:
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@pytest.fixture
def stop_with():
    """``stop_with(proc, sig, timeout, what) -> stderr``: send ``sig`` to a ``subprocess.Popen`` with
    text pipes and wait; a process still running after ``timeout`` s is killed and the test fails
    naming ``what``."""
    import subprocess

    def stop(proc, sig, timeout: float, what: str) -> str:
        proc.send_signal(sig)
        try:
            return proc.communicate(timeout=timeout)[1]
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(what)

    return stop
