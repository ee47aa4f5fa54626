"""In-job latency by UDP echo with kernel timestamps (``probe_group(method="udp")``).

The tensor ping-pong of :mod:`plink.distributed.probe` times a round trip of
Gloo ``send``/``recv``: two process wake-ups and the library's own work on
every sample (330-390 us on the 2-core test machine, against ~25 us
for the network difference between a rack and the next one), so on busy
hosts the racks hardly show.  This method runs plink's probe agent
(:mod:`plink.probes.agent`, the one ``plink probe`` streams over SSH) as a
local subprocess of each measuring rank: its echo responder answers
authenticated pings in the background, and an RTT is the pong's *kernel*
arrival time minus the send time minus the reflector's turnaround (TWAMP
style, see ``SO_TIMESTAMPNS`` in the agent), so neither side's scheduling
delay enters it.

Protocol over the job's store (keys under the probe's prefix):

1. rank 0 publishes a random 32-byte key (``udp/key``); the store is the
   job's own rendezvous, the trust boundary of everything else in the job;
2. every measuring rank starts its agent bound to its own address (the one
   Gloo uses) and publishes ``udp/info/{entry}`` = address and UDP port;
3. once all are in, rank 0 publishes a start time (``udp/go``, wall clock,
   0.3 s ahead); every agent then runs the whole schedule on its own clock
   (:func:`plink.probes.methods.slot_seconds` per slot): slot ``ps x R + r``
   is pass ``ps`` over round ``r`` of the 1-factorisation, in which it pings
   its partner (both directions are measured, each by its sender);
4. the agent exits when the schedule is done (``exit``; it also exits on its
   own deadline or when this process dies: its stdin closes).

Time: ``passes x rounds x slot`` plus the agents' start (~50 ms) and the
store round trips; O(N) rounds, O(N) store keys per rank.
"""

from __future__ import annotations

import json
import secrets
import time

import numpy as np

from plink.errors import PlinkError
from plink.probes.methods import slot_seconds, summarize
from plink.probes.session import AgentError, AgentLost, AgentSession, Fleet, local_pipe

START_AHEAD_S = 0.3  # rank 0's start time is this far ahead of when the last agent reported
MAX_SKEW_S = 5.0  # a start time further away than this on our clock: use our own (clocks disagree)


def publish_key(store) -> None:
    """Rank 0: the per-probe key of the packets' HMAC."""
    store.set("udp/key", secrets.token_hex(32))


def udp_schedule(rounds, mine: int, passes: int, per_pass: list[int]) -> list[tuple[int, int, int]]:
    """``[(slot, peer entry, count), ...]`` of entry ``mine``: in slot ``ps x R + r`` it pings its
    partner of ``rounds[r]`` ``per_pass[ps]`` times (pure; O(passes x N))."""
    out = []
    for ps in range(passes):
        if per_pass[ps] <= 0:
            continue
        for r, pairs in enumerate(rounds):
            for a, b in pairs:
                if mine in (a, b):
                    out.append((ps * len(rounds) + r, b if mine == a else a, per_pass[ps]))
    return out


def udp_latency(store, plan, rounds, mine: int, *, samples: int, interval: float, passes: int, timeout: float,
                wait, poll) -> dict[str, dict]:
    """This entry's RTTs to every partner: ``{str(peer): {"round", "p10", "median", "p90", "samples",
    "loss"}}`` (or ``{"error": ...}``).  ``wait(store, key, timeout, what)`` and ``poll(store, keys,
    deadline)`` are the probe's store helpers.  Called by every measuring rank at once."""
    n = len(plan.entries)
    per_pass = [samples // passes + (1 if k < samples % passes else 0) for k in range(passes)]
    sched = udp_schedule(rounds, mine, passes, per_pass)
    slot = slot_seconds(max(per_pass), interval)
    n_slots = passes * len(rounds)
    key = wait(store, "udp/key", timeout, "the probe key from rank 0").decode()
    session = AgentSession(local_pipe(), plan.names[mine])
    fleet = None
    try:
        deadline = time.time() + 2 * timeout + n_slots * slot + 30
        try:
            info = session.hello(key, deadline - time.time(), bind=plan.addresses[mine], timeout=timeout, hid=mine)
        except (AgentLost, AgentError) as exc:
            raise PlinkError(f"cannot start the UDP echo agent on {plan.names[mine]} "
                             f"({plan.addresses[mine]}): {exc}; method='tensor' needs no agent") from None
        fleet = Fleet({mine: session})
        store.set(f"udp/info/{mine}", json.dumps({"addr": info["addr"], "port": info["udp_port"]}))
        got = poll(store, {f"udp/info/{i}": i for i in range(n)}, time.monotonic() + timeout)
        peers = {i: json.loads(v) for i, v in got.items()}
        if plan.entries[mine][0] == 0:  # rank 0 leads entry 0
            store.set("udp/go", repr(time.time() + START_AHEAD_S))
        go = float(wait(store, "udp/go", timeout, "the start time from rank 0").decode())
        start = go - time.time()
        if not -MAX_SKEW_S < start < MAX_SKEW_S:
            start = START_AHEAD_S
        entries = [[k, k, peers[p]["addr"], peers[p]["port"], c] for k, p, c in sched if p in peers]
        peer_of = {k: p for k, p, _ in sched}
        rtts: dict[int, list[float]] = {}
        sent: dict[int, int] = {}
        if entries:
            rid = session.send("udp_sched", plan=entries, start=round(max(0.0, start), 6), slot=slot,
                               count=max(per_pass), interval=interval, timeout=1.0, size=64, stamps=True)

            def on_part(_k, _rid, rows):
                for tag, n_sent, values in rows:
                    p = peer_of.get(int(tag))
                    if p is not None:
                        rtts.setdefault(p, []).extend(float(x) for x in values)
                        sent[p] = sent.get(p, 0) + int(n_sent)

            res = fleet.wait([(mine, rid)], time.monotonic() + max(0.0, start) + n_slots * slot + timeout,
                             on_part=on_part)
            err = res.get((mine, rid))
            if isinstance(err, (AgentLost, AgentError)):
                raise PlinkError(f"the UDP echo agent on {plan.names[mine]} failed: {err}")
    finally:
        if fleet is not None:
            fleet.close()
        else:
            session.close()
    row: dict[str, dict] = {}
    round_of = {}
    for r, pairs in enumerate(rounds):
        for a, b in pairs:
            if mine in (a, b):
                round_of[b if mine == a else a] = r
    for p, r in round_of.items():
        if p not in peers:
            row[str(p)] = {"error": f"{plan.names[p]} published no UDP echo port in time", "round": r}
            continue
        st = summarize(rtts.get(p, []), sent.get(p, 0))
        if st.samples == 0:
            row[str(p)] = {"error": f"no UDP echo from {plan.names[p]} ({plan.addresses[p]} port "
                                    f"{peers[p]['port']}): a firewall? method='tensor' uses the job's own "
                                    "connections", "round": r}
            continue
        row[str(p)] = {"round": r, "p10": st.p10, "median": st.median, "p90": st.p90, "samples": st.samples,
                       "loss": round(float(np.clip(st.loss, 0.0, 1.0)), 4)}
    return row
