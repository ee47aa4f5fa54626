"""Run a function in N local processes joined by a Gloo process group on 127.0.0.1.

For tests, benchmarks and trying plink.distributed on one machine::

    from plink.distributed.local import run_ranks
    res = run_ranks(4, lambda rank: plink.distributed.probe_group(per_rank=True).n)

The processes are forked from the caller (torch is imported once, in the
parent; import what ``fn`` needs before calling), so a 64-rank run starts in
seconds instead of 64 torch imports.  Each child gets torchrun's variables
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR=127.0.0.1``, ...),
joins ``init_process_group("gloo")``, runs ``fn(rank, *args)`` and sends the
result back (it must pickle).  Linux/macOS only (fork).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import time
import traceback


def store_socket() -> socket.socket:
    """A listening socket on a free port of 127.0.0.1, for rank 0's store.

    Held open from before the fork until every rank is done, so nothing else can take the port
    between choosing it and rank 0 listening on it (a closed "free port" can be, and was: EADDRINUSE).
    """
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    return s


def _child(fn, rank, world, listener, env, q, args, barrier):
    try:
        port = listener.getsockname()[1]
        os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                           "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
        os.environ.update(env)
        from datetime import timedelta

        import torch.distributed as dist

        timeout = timedelta(seconds=60)
        if rank == 0:  # the store listens on the socket the parent opened
            store = dist.TCPStore("127.0.0.1", port, world, True, timeout, master_listen_fd=listener.fileno())
        else:
            listener.close()
            store = dist.TCPStore("127.0.0.1", port, world, False, timeout)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
        out = fn(rank, *args)
        q.put((rank, "ok", out))
        # keep the store (rank 0) up until the others are done with it
        if barrier:
            dist.barrier()
        dist.destroy_process_group()
    except BaseException as exc:  # noqa: BLE001 - report everything to the parent
        q.put((rank, "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"))
    finally:
        q.close()
        q.join_thread()  # flush the result before leaving without cleanup
        os._exit(0)


#: what Gloo says when a connection between two local ranks drops while a group is being made
#: (seen once in ~50 fresh-clone CI runs, pytorch/gloo#168); run_ranks starts the ranks again
TRANSIENT = ("connectFullMesh",)


def run_ranks(world: int, fn, *args, timeout: float = 60.0, env: dict | None = None,
              expect=None, barrier: bool = True, retries: int = 1) -> dict[int, tuple[str, object]]:
    """``{rank: ("ok", fn's result) | ("error", message)}``; ranks that never report are missing.

    Waits until every rank (or every rank in ``expect``) has reported, or ``timeout``; then kills the rest.
    ``barrier``: the ranks meet in a barrier after ``fn`` (keeps rank 0's store up for the others); turn it
    off when ``fn`` leaves the process group unusable (a rank that dies, ``destroy_process_group``).
    ``retries``: times the whole run is started again (new processes, new port) when a rank failed
    with Gloo's transient loopback error (:data:`TRANSIENT`); ``fn`` then runs again from the start.
    """
    res = _run_once(world, fn, args, timeout, env, expect, barrier)
    for _ in range(retries):
        if not any(s == "error" and any(t in str(v) for t in TRANSIENT) for s, v in res.values()):
            break
        res = _run_once(world, fn, args, timeout, env, expect, barrier)
    return res


def _run_once(world, fn, args, timeout, env, expect, barrier):
    expect = set(range(world) if expect is None else expect)
    import torch  # noqa: F401 - imported before forking, once
    import torch.distributed  # noqa: F401

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    listener = store_socket()
    procs = [ctx.Process(target=_child, args=(fn, r, world, listener, env or {}, q, args, barrier), daemon=True)
             for r in range(world)]
    try:
        for p in procs:
            p.start()
        return _collect(procs, q, expect, timeout)
    finally:
        listener.close()


def _collect(procs, q, expect, timeout) -> dict[int, tuple[str, object]]:
    results: dict[int, tuple[str, object]] = {}
    end = time.monotonic() + timeout
    while not expect <= set(results) and time.monotonic() < end:
        try:
            rank, status, value = q.get(timeout=max(0.1, min(1.0, end - time.monotonic())))
            results.setdefault(rank, (status, value))  # the first word counts
        except Exception:  # noqa: BLE001 - queue.Empty
            if all(not p.is_alive() for p in procs) and q.empty():
                break
    for p in procs:
        p.join(timeout=max(0.1, min(5.0, end - time.monotonic())))
        if p.is_alive():
            p.kill()
            p.join()
    return results
