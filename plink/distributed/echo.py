"""In-job latency by UDP echo with kernel timestamps (``probe_group(method="udp")``).

The tensor ping-pong of :mod:`plink.distributed.probe` times a round trip of
Gloo ``send``/``recv``: two process wake-ups and the library's own work on
every sample (~400 us on the 2-core test machine, against ~25 us
for the network difference between a rack and the next one), so on busy
hosts the racks hardly show.  This method runs plink's probe agent
(:mod:`plink.probes.agent`, the one ``plink probe`` streams over SSH) as a
local subprocess of each measuring rank: its echo responder answers
authenticated pings in the background, and an RTT is the pong's *kernel*
arrival time minus the send time minus the reflector's turnaround (TWAMP
style, see ``SO_TIMESTAMPNS`` in the agent), so neither side's scheduling
delay enters it.

Protocol over the job's store (keys under the probe's prefix):

1. the packets' HMAC key: every measuring node publishes a Diffie-Hellman
   public value (``udp/pub/{entry}``, RFC 3526 group 14); rank 0 draws a
   random 32-byte key and publishes it for each node masked with the secret
   it shares with that node (``udp/key/{entry}``; or ``error:`` and why,
   e.g. for a node whose value did not come within ``timeout``), so one who
   only reads or sniffs the store learns no key.  The store has no access
   control: whoever can read it can also write it, and one who puts in
   values of their own during the probe can still learn the key (as they
   can disturb the rest of the job's rendezvous);
2. every measuring rank starts its agent bound to its own address (the one
   Gloo uses) and publishes ``udp/info/{entry}`` = address and UDP port;
3. once all are in (or ``timeout`` passed), rank 0 publishes who is there
   (``udp/go``: every node's address and port, or why its agent did not
   start); every node uses that list and starts its schedule 0.3 s after
   it sees it (no wall clocks are compared), on its own clock
   (:func:`plink.probes.methods.slot_seconds` per slot): slot ``ps x R + r``
   is pass ``ps`` over round ``r`` of the 1-factorisation, in which it pings
   its partner (both directions are measured, each by its sender);
4. a node done with its schedule keeps answering until every listed node is
   done (``udp/done``, at most ``timeout``), then its agent exits (``exit``;
   it also exits on its own deadline or when this process dies: its stdin
   closes).  A node whose agent cannot start, or a peer that never echoes,
   gives its pairs an error with the reason instead of raising.

Time: ``passes x rounds x slot`` plus the agents' start (~50 ms) and the
store round trips; O(N) rounds, O(N) store keys per rank.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time

import numpy as np

from plink.errors import PlinkError
from plink.probes.methods import slot_seconds, summarize
from plink.probes.session import AgentError, AgentLost, AgentSession, Fleet, local_pipe

START_AHEAD_S = 0.3  # every node starts its schedule this long after it saw rank 0's go


#: RFC 3526 group 14: the 2048-bit MODP prime (a safe prime) and its generator 2
DH_P = int(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
    "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F"
    "83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B"
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF6955817183995497CEA956AE515D2261898FA0510"
    "15728E5A8AACAA68FFFFFFFFFFFFFFFF", 16)
DH_G = 2
_KEY_BYTES = 32


def dh_keypair() -> tuple[int, str]:
    """A secret exponent (256 random bits, twice the group's ~112-bit strength) and its public
    value ``g^x mod p`` as hex.  O(log p) multiplications."""
    x = secrets.randbits(256) | (1 << 255)
    return x, format(pow(DH_G, x, DH_P), "x")


def _pad(secret: int, public_hex: str, entry: int) -> bytes:
    """The 32-byte mask entry ``entry`` and rank 0 share: SHA-256 of their DH secret."""
    try:
        y = int(public_hex, 16)
    except ValueError:
        raise ValueError("a DH public value that is not hex") from None
    if not 2 <= y <= DH_P - 2:
        raise ValueError("a DH public value outside the group")
    shared = pow(y, secret, DH_P)
    return hashlib.sha256(b"plink udp key|%d|" % entry + shared.to_bytes(256, "big")).digest()


class KeyRefused(PlinkError):
    """Rank 0 refused this node's key-exchange value, or the masked key in the store is malformed."""


def agree_key(store, mine: int, n: int, lead: bool, timeout: float, wait, poll) -> str:
    """The probe's packet key (hex) of entry ``mine`` out of ``n``, agreed through the store (step 1
    of the module docstring); ``lead`` is rank 0's entry (0).  ``wait``/``poll`` as in
    :func:`udp_latency`.  Rank 0 waits ``timeout`` for the nodes' public values, then answers every
    node: its masked key, or why there is none (``error:`` and the reason), so no node waits longer.
    Raises :class:`~plink.errors.PlinkError` when rank 0's word never comes, :class:`KeyRefused`
    when rank 0 refused this node's value or the key in the store is malformed.  Rank 0: O(n)
    exponentiations (~1-2 ms each)."""
    x, pub = dh_keypair()
    store.set(f"udp/pub/{mine}", pub)
    if lead:
        key = secrets.token_bytes(_KEY_BYTES)
        others = [i for i in range(n) if i != mine]
        got = poll(store, {f"udp/pub/{i}": i for i in others}, time.monotonic() + timeout)
        for i in others:
            if i not in got:
                store.set(f"udp/key/{i}", f"error:no key exchange value from it within {timeout:g} s")
                continue
            try:
                masked = bytes(a ^ b for a, b in zip(key, _pad(x, got[i].decode("ascii", "replace"), i)))
            except ValueError as exc:
                store.set(f"udp/key/{i}", f"error:rank 0 refused its key exchange value ({exc})")
                continue
            store.set(f"udp/key/{i}", masked.hex())
        return key.hex()
    lead_pub = wait(store, "udp/pub/0", timeout, "rank 0's key exchange value").decode("ascii", "replace")
    # rank 0 answers every node at most ``timeout`` after publishing its own value
    answer = wait(store, f"udp/key/{mine}", timeout + 5, "the probe key from rank 0").decode("ascii", "replace")
    if answer.startswith("error:"):
        raise KeyRefused(answer[6:])
    try:
        masked = bytes.fromhex(answer)
        if len(masked) != _KEY_BYTES:
            raise ValueError("a probe key of the wrong length")
        return bytes(a ^ b for a, b in zip(masked, _pad(x, lead_pub, mine))).hex()
    except ValueError as exc:
        raise KeyRefused(f"the key exchange through the job's store failed: {exc}") from None


def udp_schedule(rounds, mine: int, per_pass: list[int]) -> list[tuple[int, int, int]]:
    """``[(slot, peer entry, count), ...]`` of entry ``mine``: in slot ``ps x R + r`` it pings its
    partner of ``rounds[r]`` ``per_pass[ps]`` times (pure; O(passes x N))."""
    out = []
    for ps, count in enumerate(per_pass):
        if count <= 0:
            continue
        for r, pairs in enumerate(rounds):
            for a, b in pairs:
                if mine in (a, b):
                    out.append((ps * len(rounds) + r, b if mine == a else a, count))
    return out


def udp_latency(store, plan, rounds, mine: int, *, per_pass: list[int], interval: float, timeout: float,
                wait, poll) -> dict[str, dict]:
    """This entry's RTTs to every partner: ``{str(peer): {"round", "p10", "median", "p90", "samples",
    "loss"}}``, or ``{"round", "error"}`` for a pair without echoes; ``per_pass[ps]`` pings per pair
    and direction in pass ``ps`` over the rounds.  ``wait(store, key, timeout,
    what)`` and ``poll(store, keys, deadline)`` are the probe's store helpers.  Called by every
    measuring rank at once; never raises for a failure of this node's agent or a peer's (the pairs
    carry the reason), only when rank 0's word never comes (the
    probe's ``wait`` raises :class:`~plink.errors.PlinkError`)."""
    n = len(plan.entries)
    sched = udp_schedule(rounds, mine, per_pass)
    slot = slot_seconds(max(per_pass), interval)
    n_slots = len(per_pass) * len(rounds)
    lead = plan.entries[mine][0] == 0  # rank 0 leads entry 0 and coordinates
    session = fleet = None
    rtts: dict[int, list[float]] = {}
    sent: dict[int, int] = {}
    failed = None  # why this node measured nothing
    try:
        key = agree_key(store, mine, n, lead, timeout, wait, poll)
    except KeyRefused as exc:  # this node only; rank 0's silence (PlinkError) ends the probe here
        key, failed = None, f"no probe key on {plan.names[mine]}: {exc}"
    mine_info = {"error": failed}
    try:
        try:
            if key is not None:
                session = AgentSession(local_pipe(), plan.names[mine])
                life = 3 * timeout + n_slots * slot + 30  # the agent exits on its own after this (s)
                info = session.hello(key, life, bind=plan.addresses[mine], timeout=timeout, hid=mine)
                fleet = Fleet({mine: session})
                mine_info = {"addr": info["addr"], "port": int(info["udp_port"])}
        except (AgentLost, AgentError, OSError, KeyError, ValueError) as exc:
            failed = f"cannot start the UDP echo agent on {plan.names[mine]} ({plan.addresses[mine]}): " + \
                     " ".join(str(exc).split())[:160]
            mine_info = {"error": failed}
        store.set(f"udp/info/{mine}", json.dumps(mine_info))
        if lead:  # everyone uses rank 0's view of who is there, and starts when it says so
            got = poll(store, {f"udp/info/{i}": i for i in range(n)}, time.monotonic() + timeout)
            store.set("udp/go", json.dumps({str(i): json.loads(v) for i, v in got.items()}))
        peers = {int(i): v for i, v in json.loads(wait(store, "udp/go", 2 * timeout + 5,
                                                        "the start of the UDP echo rounds from rank 0")).items()}
        t_go = time.monotonic()
        live = [i for i, v in peers.items() if "port" in v]
        entries = [[k, k, peers[p]["addr"], peers[p]["port"], c] for k, p, c in sched if p in live]
        peer_of = {k: p for k, p, _ in sched}
        if failed is None and entries:
            rid = session.send("udp_sched", plan=entries, start=START_AHEAD_S, slot=slot, count=max(per_pass),
                               interval=interval, timeout=1.0, size=64, stamps=True)

            def on_part(_k, _rid, rows):
                for tag, n_sent, values in rows:
                    p = peer_of.get(int(tag))
                    if p is not None:
                        rtts.setdefault(p, []).extend(float(x) for x in values)
                        sent[p] = sent.get(p, 0) + int(n_sent)

            res = fleet.wait([(mine, rid)], t_go + START_AHEAD_S + n_slots * slot + timeout, on_part=on_part)
            err = res.get((mine, rid))
            if isinstance(err, (AgentLost, AgentError)):
                failed = f"the UDP echo agent on {plan.names[mine]} failed: " + " ".join(str(err).split())[:160]
        # keep answering until every listed node is done: one that started late still gets its echoes
        # (only listed nodes count, so one whose agent never started cannot end the wait early)
        if mine in live:
            store.add("udp/done", 1)
            end = time.monotonic() + timeout
            while store.add("udp/done", 0) < len(live) and time.monotonic() < end:
                time.sleep(0.02)
    finally:
        if fleet is not None:
            fleet.close()
        elif session is not None:
            session.close()
    row: dict[str, dict] = {}
    for r, pairs in enumerate(rounds):
        for a, b in pairs:
            if mine not in (a, b):
                continue
            p = b if mine == a else a
            st = summarize(rtts.get(p, []), sent.get(p, 0))
            if failed is not None:
                why = failed
            elif p not in peers:
                why = f"{plan.names[p]} published no UDP echo port in time"
            elif "error" in peers[p]:
                why = peers[p]["error"]
            elif st.samples == 0:
                why = (f"no UDP echo from {plan.names[p]} ({peers[p]['addr']} port {peers[p]['port']}): is UDP "
                       "between the nodes blocked? method='tensor' uses the job's own connections")
            else:
                row[str(p)] = {"round": r, "p10": st.p10, "median": st.median, "p90": st.p90,
                               "samples": st.samples, "loss": round(float(np.clip(st.loss, 0.0, 1.0)), 4)}
                continue
            row[str(p)] = {"round": r, "error": why}
    return row
