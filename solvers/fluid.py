"""The fluid price of a collective: its flows share every link max-min fairly, re-shared as flows start and end.

``solvers.contention.SharedCostModel`` prices the rounds of hd, rd, BCube and
bintree on per-rank clocks with *static* shares: a flow takes the time of the
busiest link it crosses, that link's load being every flow of the round on it,
whether those flows overlap in time or not.  That is what makes it fast enough
to anneal over (O(flows) numpy per batch of orders), and it is pessimistic
in two ways a real network is not:

- a flow that shares a link with a flow that started earlier (or ends
  sooner) gets the whole link once the other is gone;
- a flow's share is set by its own bottleneck, not its round's busiest link;
  flows that leave the busy link get the capacity it leaves unused
  elsewhere.

And it misses one way the network is worse: a rank that runs ahead into its
next round shares links with ranks still in the previous one.

:class:`FluidCostModel` prices the same rounds as a fluid (a standard
flow-level model: Bertsekas & Gallager, *Data Networks*, 2nd ed. 1992,
§6.5.2, max-min fairness by progressive filling): a flow of a round starts
when both its ranks are done with every earlier round (as on the clocks); at
every moment the running flows get max-min fair rates over the host NICs,
the group uplinks of every level and, where the pairs' bandwidths were
measured alone (``Network.path``), each flow's own path; rates are re-shared
whenever a flow ends (and the flows it releases start).  The bandwidth term is
the time the last flow ends; the latency term is the same chain of messages
as the shared model's (``solvers.contention.critical_latency``).  The ring
and dbt keep the shared model's price: a ring's steps are all alike and each
rank sends one flow, so its clocks advance by the busiest link every step
anyway; dbt is one pipelined step.

Use: search on the shared model (fast), price what is reported with this one
(``plink.order.order_hosts`` does both).  Measured on the emulated cluster
over the 50 saved proof runs (``benchmarks/price_models.py``, README "Cost
models"; latency probe): it ranks orders by their measured time better than
the clocks on the mean (recursive doubling 0.914 -> 0.924, Rabenseifner
0.903 -> 0.916, the tree 0.951 -> 0.954, Spearman with orders within 2%
tied), not in every run (worse in 7-18 of 50 per collective and probe; case
A seed 15's recursive doubling 0.87 -> 0.78),
and much better on the busy-host case D seed 20 that it was not designed on.

Complexity: per order O(E x I x flows x levels), ``E <= flows`` events (a
flow ending), ``I`` progressive-filling passes per event (distinct bottleneck
rates).  Compiled (``solvers._fluidkernel``): about 0.1 ms per order at 16
ranks, 1.2 ms at 64 and 13 ms at 128 for Rabenseifner; far slower than the
shared model's batches, hence a price, not a search objective
(:data:`FLUID_MAX_RANKS`).
"""

from __future__ import annotations

import os

import numpy as np

from .contention import SharedCostModel, _advance_clocks, shared_lower_bound

#: above this many ranks ``plink order`` prices with the shared model's clocks: the report prices
#: about 500 orders twice, and one order of Rabenseifner takes ~1 ms at 64 ranks, 13 ms at 128 and
#: 60 ms at 256 (compiled)
FLUID_MAX_RANKS = 64
#: ``plink order`` re-runs an exhaustive search on the fluid model (to prove its order optimal for
#: the price it reports) up to this many orders: 8! orders take about a second
FLUID_EXHAUSTIVE_MAX = 40_320


def _weights(weights, n: int) -> np.ndarray:
    """``n`` flow weights as floats (``None``: all 1); anything but ``n`` finite positive numbers is a
    ``ValueError``."""
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,) or not np.all(w > 0) or not np.all(np.isfinite(w)):
        raise ValueError(f"weights must be {n} finite positive numbers, one per flow")
    return w


def max_min_rates(slots: np.ndarray, capacity: np.ndarray, private: np.ndarray | None = None,
                  weights: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates of flows over shared links, by progressive filling.

    ``slots``: ``(F, P)`` link indices each flow crosses (repeat an index, or point at a link of
    infinite capacity, for fewer links); ``capacity``: ``(L,)`` per link (``inf`` allowed);
    ``private``: optional ``(F,)`` cap of each flow alone (its own link).  Every flow gets the
    largest rate such that no link is over capacity and no flow can gain without taking from
    a flow whose rate is not larger (each flow has a saturated link on which its rate is the
    largest).  Links a flow lists twice count it once.  ``weights``: optional ``(F,)`` positive
    weights for *weighted* max-min fairness (rates ``weight x level``, the levels max-min fair;
    Bertsekas & Gallager §6.5.2): a flow of weight 2 gets twice the share of a flow of weight 1
    on the link they both saturate.  O(I x F x P), ``I`` distinct levels.
    """
    slots = np.asarray(slots, dtype=np.int64)
    F = len(slots)
    rate = np.zeros(F)
    if F == 0:
        return rate
    w = _weights(weights, F)
    L = len(capacity)
    # one entry per (flow, distinct link): a flow listing a link twice uses it once
    srt = np.sort(slots, axis=1)
    first = np.ones_like(srt, dtype=bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    flow_of = np.broadcast_to(np.arange(F)[:, None], srt.shape)[first]
    link_of = srt[first]
    remaining = np.asarray(capacity, dtype=float).copy()
    live = np.ones(F, dtype=bool)
    priv = None if private is None else np.asarray(private, dtype=float)
    while live.any():
        on = live[flow_of]
        count = np.bincount(link_of[on], weights=w[flow_of[on]], minlength=L)  # live weight per link
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(count > 0, remaining / np.where(count > 0, count, 1.0), np.inf)
        best = np.full(F, np.inf)  # each flow's level: its tightest link's share per unit of weight
        np.minimum.at(best, flow_of[on], share[link_of[on]])
        if priv is not None:
            best = np.minimum(best, priv / w)
        best[~live] = np.inf
        m = best.min()
        if not np.isfinite(m):
            raise ValueError("a flow crosses no link of finite capacity: its rate is unbounded")
        freeze = live & (best <= m * (1 + 1e-12))
        rate[freeze] = m * w[freeze]
        live &= ~freeze
        hit = freeze[flow_of]
        np.subtract.at(remaining, link_of[hit], m * w[flow_of[hit]])
        np.maximum(remaining, 0.0, out=remaining)
    return rate


class FluidCostModel(SharedCostModel):
    """``model(perm) -> seconds`` of ``algo`` over ``net``, the bandwidth of hd, rd, BCube and
    bintree priced as a fluid (see the module docstring); ring and dbt as the shared model.

    Same arguments as :class:`~solvers.contention.SharedCostModel`; ``batch(perms, smooth=True)``
    is the shared model's (the search's companion), the plain price is the fluid one.
    """

    kind = "fluid"

    def __init__(self, algo, net, size, base: int = 2):
        super().__init__(algo, net, size, base)
        self._cap = np.where(self._inv > 0, 1.0 / np.where(self._inv > 0, self._inv, 1.0), np.inf)
        rounds = self.rounds or []
        if rounds:
            self._src = np.concatenate([s.src for s in rounds])
            self._dst = np.concatenate([s.dst for s in rounds])
            self._bytes = np.concatenate([s.nbytes for s in rounds])
            self._round = np.concatenate([np.full(len(s.src), i) for i, s in enumerate(rounds)])
            # per rank, its flows per round: a rank moves on to its next round when its current one is done
            n = self.n
            self._todo0 = np.zeros((n, len(rounds)), dtype=np.int64)
            np.add.at(self._todo0, (self._src, self._round), 1)
            np.add.at(self._todo0, (self._dst, self._round), 1)

    @classmethod
    def like(cls, model: SharedCostModel) -> "FluidCostModel":
        """The fluid model of the same collective and network as ``model``."""
        return cls(model.algo, model.net, model.size, model.base)

    def _clocked_bandwidth(self, P: np.ndarray, soft=None) -> np.ndarray:
        if soft is not None:  # batch(smooth=True): the search's companion and price are the shared model's
            return super()._clocked_bandwidth(P, soft)
        return np.array([self.fluid_time(p) for p in P])

    @property
    def n_flows(self) -> int:
        """Flows of the clocked rounds (the length of ``fluid_time``'s ``weights``); 0 for ring and dbt."""
        return len(self._src) if self.rounds else 0

    def fluid_time(self, perm, weights=None, sndbuf: float | None = None) -> float:
        """Seconds until the last flow of the clocked rounds ends for rank order ``perm``
        (the bandwidth term; 0 for ring and dbt, which are not priced this way). O(E x I x flows).

        ``weights``: optional per-flow weights (:attr:`n_flows` of them, the rounds' flows in order)
        for weighted max-min shares instead of equal ones: an experiment's knob (unequal TCP
        shares, ``benchmarks/unequal_shares.py``), not used by the price.  ``sndbuf``: optional
        bytes of every sender's socket buffer, so that a rank moves on before its sends are
        delivered (``fluid_time_reference``; numpy loop only): another experiment's knob
        (``benchmarks/send_buffers.py``), not used by the price."""
        if not self.rounds:
            return 0.0
        args = self._flow_args(perm, weights)
        if sndbuf is not None:
            return fluid_time_reference(*args, sndbuf=sndbuf)
        kernel = _kernel()
        return float(kernel(*args)) if kernel is not None else fluid_time_reference(*args)

    def _flow_args(self, perm, weights) -> tuple:
        """The event loop's arguments for rank order ``perm`` (``fluid_time_reference``'s, in order):
        each flow's link slots, own cap and (checked) weight beside the rounds' fixed arrays."""
        p = np.asarray(perm, dtype=np.int64)
        net = self.net
        hs, hd = p[self._src], p[self._dst]
        slots = net.link_index(hs[:, None], hd[:, None], self._L - 1)
        private = np.full(len(hs), np.inf) if net.path is None else net.path[hs, hd]
        return (slots, self._cap, private, self._bytes, self._round, self._src, self._dst, self._todo0,
                _weights(weights, len(hs)))

    def round_ends(self, perm, weights=None, sndbuf: float | None = None) -> np.ndarray:
        """``(N, R)`` seconds at which each rank is done with each clocked round in the fluid of
        rank order ``perm`` (NaN where a rank has no flow in a round): when its steps end, to
        set beside a trace of the real collective (``benchmarks/hd_steps_netns.py``).  Ranks
        are rank indices, not hosts; latency not included; ``weights`` and ``sndbuf`` as in
        :meth:`fluid_time`.  The numpy loop (no compiled version): O(E x I x flows x levels)."""
        if not self.rounds:
            return np.zeros((self.n, 0))
        ends = np.full(self._todo0.shape, np.nan)
        fluid_time_reference(*self._flow_args(perm, weights), ends, sndbuf=sndbuf)
        return ends


def pricing_model(model: SharedCostModel) -> SharedCostModel:
    """What ``plink order`` prices ``model``'s orders with: the fluid model of the same collective and
    network for the clocked algorithms (hd, rd, BCube, bintree) up to :data:`FLUID_MAX_RANKS` ranks,
    else ``model`` itself."""
    if model.rounds is None or model.n > FLUID_MAX_RANKS or isinstance(model, FluidCostModel):
        return model
    return FluidCostModel.like(model)


def _kernel():
    """The compiled event loop (``solvers._fluidkernel``), or None where numba cannot be loaded or
    ``PLINK_NO_NUMBA`` is set (as for the ring search)."""
    global _KERNEL
    if os.environ.get("PLINK_NO_NUMBA", "") not in ("", "0"):
        return None
    if _KERNEL is False:
        try:
            from ._fluidkernel import fluid_time as kernel
        except Exception:  # numba absent or unusable: the numpy loop
            kernel = None
        _KERNEL = kernel
    return _KERNEL


_KERNEL = False  #: not tried yet


def fluid_time_reference(slots, cap, private, nbytes, rnd, src, dst, todo0, weights=None,
                         ends: np.ndarray | None = None, sndbuf: float | None = None) -> float:
    """The event loop in numpy (the compiled kernel's reference, and its fallback without numba):
    ``slots`` (F, P) link slots of each flow, ``cap`` (L,) link capacities, ``private`` (F,) each
    flow's own cap (``inf``: none), ``nbytes``/``rnd``/``src``/``dst`` (F,) each flow's bytes,
    round and ranks, ``todo0`` (N, R) each rank's flows per round, ``weights`` (F,) optional
    weights of weighted max-min shares (``max_min_rates``); ``ends``: an optional (N, R) array
    that gets the time each rank is done with each round of its own (others left as they are).

    ``sndbuf``: optional bytes of a sender's socket buffer.  A flow starts when both its ranks
    are at its round (as without it); its *sender* is done with it once at most ``sndbuf`` bytes
    are left (the rest sits in the kernel's buffer), so the sender may move on while the flow
    still drains and shares links with its next round's flows; the receiver is done with it when
    it is delivered.  None (the price): both are done at delivery; anything but None or a finite
    number >= 0 is a ``ValueError``.
    Seconds until the last flow ends. O(E x I x F x P)."""
    if sndbuf is not None and not (np.isfinite(sndbuf) and sndbuf >= 0):
        raise ValueError("sndbuf must be a finite number of bytes >= 0")
    w = _weights(weights, len(nbytes))
    left = np.asarray(nbytes, dtype=float).copy()
    buf = -1.0 if sndbuf is None else float(sndbuf)  # -1: a sender is released at delivery only
    done = left <= 0
    sent = done.copy()  # the sender is done with the flow
    started = done.copy()
    todo = todo0.copy()
    np.subtract.at(todo, (src[done], rnd[done]), 1)
    np.subtract.at(todo, (dst[done], rnd[done]), 1)
    n_rounds = todo.shape[1]

    def at():  # each rank's current round: its first with flows not done
        busy = todo > 0
        return np.where(busy.any(axis=1), busy.argmax(axis=1), n_rounds)

    def release(fs, ranks, t):  # the flows fs are done for ``ranks`` (their src or dst) at time t
        np.subtract.at(todo, (ranks, rnd[fs]), 1)
        if ends is not None:
            for r, k in zip(ranks, rnd[fs]):
                if todo[r, k] == 0:
                    ends[r, k] = t

    level = at()
    t = 0.0
    while not done.all():
        while True:  # flows whose ranks are both at their round start; small ones free their senders at once
            new = ~started & (level[src] == rnd) & (level[dst] == rnd)
            started |= new
            rel = np.flatnonzero(new & ~sent & (left <= buf))
            if not len(rel):
                break
            sent[rel] = True
            release(rel, src[rel], t)
            level = at()
        run = np.flatnonzero(started & ~done)
        rate = max_min_rates(slots[run], cap, private[run], w[run])
        need = left[run] / rate
        pend = ~sent[run]
        need_rel = np.where(pend, (left[run] - buf) / rate, np.inf) if buf >= 0 else np.full(len(run), np.inf)
        dt = min(need.min(), need_rel.min())
        t += dt
        end = need <= dt * (1 + 1e-9)
        rel = run[pend & ~end & (need_rel <= dt * (1 + 1e-9))]
        left[run] -= rate * dt
        fin = run[end]
        left[fin] = 0.0
        done[fin] = True
        left[rel] = np.minimum(left[rel], buf)
        sent[rel] = True
        release(rel, src[rel], t)
        fs = fin[~sent[fin]]  # senders not yet released are released at delivery
        sent[fin] = True
        release(fs, src[fs], t)
        release(fin, dst[fin], t)
        level = at()
    return float(t)


def fluid_lower_bound(model: SharedCostModel) -> float:
    """A valid lower bound on :class:`FluidCostModel` (and the shared model) over every order.

    The latency term as :func:`solvers.contention.shared_lower_bound`.  Bandwidth, by induction
    over the rounds on per-rank clocks ``t`` that never run ahead of the fluid's: a rank starts
    its round's flows no earlier than ``t[rank]`` and its NIC carries at most the fastest NIC's
    rate, so it is done no earlier than ``t[rank] + (its bytes of the round) / fastest NIC``
    (sent and received apart), nor before each of its flows can end (``max(t[src], t[dst]) +
    bytes / fastest NIC``).  Weaker than the shared model's own bound (there a flow takes its
    rank's whole round: static shares), which does not hold here (a parent of the tree whose
    children arrive apart receives them one after the other at full rate).  Ring and dbt: the
    shared model's bound (their price is the shared model's).  O(N^2 + flows).
    """
    if model.rounds is None or model.n < 2:
        return shared_lower_bound(model)
    no_bytes = SharedCostModel(model.algo, model.net, 0.0, model.base)
    total = shared_lower_bound(no_bytes)  # the latency part alone
    net, n = model.net, model.n
    fastest = min(net.nic_send.max(), net.nic_recv.max())
    t = np.zeros(n)
    for s, once in zip(model.rounds, model._once):
        new = _advance_clocks(t[None, :], s, (s.nbytes / fastest)[None, :], once)[0]  # each flow's own end
        sent = np.bincount(s.src, weights=s.nbytes, minlength=n) / net.nic_send.max()
        recv = np.bincount(s.dst, weights=s.nbytes, minlength=n) / net.nic_recv.max()
        active = np.zeros(n, dtype=bool)
        active[s.src] = active[s.dst] = True
        t = np.where(active, np.maximum(new, t + np.maximum(sent, recv)), t)
    return total + float(t.max())


__all__ = ["FLUID_EXHAUSTIVE_MAX", "FLUID_MAX_RANKS", "FluidCostModel", "fluid_lower_bound", "max_min_rates",
           "pricing_model"]
