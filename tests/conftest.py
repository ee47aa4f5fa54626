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


@pytest.fixture
def racked_bandwidth_csv(tmp_path):
    """``make(within, between, spread)``: a CSV bandwidth matrix of 9 hosts in 3 racks of 3 (seeded,
    symmetric, ``within`` / ``between`` racks times uniform(1 - spread, 1 + spread)); returns its path."""
    import numpy as np

    def make(within: float, between: float, spread: float):
        rng = np.random.default_rng(0)
        racks = np.repeat(np.arange(3), 3)
        m = np.where(racks[:, None] == racks[None, :], within, between) * rng.uniform(1 - spread, 1 + spread, (9, 9))
        m = (m + m.T) / 2
        np.fill_diagonal(m, 0)
        path = tmp_path / "bw.csv"
        np.savetxt(path, m, delimiter=",")
        return path

    return make
