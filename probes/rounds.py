"""Round schedule: every pair of hosts once, in O(N) rounds of disjoint pairs.

A round is a set of host pairs in which no host appears twice, so all pairs
of a round can be probed at the same time without sharing an endpoint (the
probes of one round do not disturb each other at the hosts).  The schedule
is a *1-factorisation* of the complete graph K_N built with the circle
method (Lucas' round-robin tournament; Kirkman 1847; see also the
dissertation's §5.2.2 on O(N) probing): N-1 rounds of N/2 pairs for even N;
for odd N a phantom host is added and its partner sits out (a bye), giving N
rounds of (N-1)/2 pairs.
"""

from __future__ import annotations

from typing import Iterable, Sequence

Pair = tuple[int, int]


def round_robin(n: int) -> list[list[Pair]]:
    """The circle-method 1-factorisation of K_n.

    Returns a list of rounds; each round is a list of pairs ``(i, j)`` with
    ``i < j`` over host indices ``0..n-1``.  Every unordered pair appears in
    exactly one round and no index appears twice in a round.  ``n - 1``
    rounds for even ``n``, ``n`` rounds for odd ``n`` (each host has one
    bye), no rounds for ``n < 2``.

    Complexity: O(n^2) time and output size (n(n-1)/2 pairs).

    Host ``m - 1`` (``m`` = ``n`` rounded up to even) stays fixed, the
    others rotate one step per round; in round ``r`` the fixed host meets
    host ``r`` and host ``(r + k) mod (m - 1)`` meets ``(r - k) mod (m - 1)``
    for ``k = 1 .. m/2 - 1``.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    if n < 2:
        return []
    m = n + (n % 2)  # phantom host m-1 when n is odd
    rounds: list[list[Pair]] = []
    for r in range(m - 1):
        pairs: list[Pair] = []
        cand = [(r, m - 1)] + [((r + k) % (m - 1), (r - k) % (m - 1)) for k in range(1, m // 2)]
        for a, b in cand:
            if a >= n or b >= n:  # the bye
                continue
            pairs.append((min(a, b), max(a, b)))
        pairs.sort()
        rounds.append(pairs)
    return rounds


def remaining_rounds(n: int, done: Iterable[Pair], skip_hosts: Iterable[int] = ()) -> list[tuple[int, list[Pair]]]:
    """The rounds of :func:`round_robin` minus pairs already ``done``.

    Pairs with a host in ``skip_hosts`` are dropped too; rounds that end up
    empty are left out.  Returns ``(round_index, pairs)`` so a resumed probe
    keeps the original round numbers.  O(n^2).
    """
    done_set = {(min(a, b), max(a, b)) for a, b in done}
    skip = set(skip_hosts)
    out = []
    for r, pairs in enumerate(round_robin(n)):
        left = [p for p in pairs if p not in done_set and p[0] not in skip and p[1] not in skip]
        if left:
            out.append((r, left))
    return out


def check_rounds(n: int, rounds: Sequence[Sequence[Pair]]) -> None:
    """Raise ``AssertionError`` unless ``rounds`` is a 1-factorisation of K_n."""
    seen = set()
    for r, pairs in enumerate(rounds):
        used = set()
        for a, b in pairs:
            assert 0 <= a < n and 0 <= b < n and a != b, (r, a, b)
            assert a not in used and b not in used, f"host twice in round {r}"
            used.update((a, b))
            key = (min(a, b), max(a, b))
            assert key not in seen, f"pair {key} twice"
            seen.add(key)
    assert len(seen) == n * (n - 1) // 2, "pairs missing"


def pack_rounds(pairs: Iterable[Pair], n: int, shift: int = 0) -> list[list[Pair]]:
    """Rounds of disjoint pairs covering ``pairs`` (a subset of K_n).

    Pairs keep their :func:`round_robin` round when they can (so the full set
    gives exactly those N-1 rounds); the others go first-fit into the next
    round with both hosts free (a greedy edge colouring: at most 2d-1 rounds
    for maximum degree d).  ``shift`` rotates the round order by ``v(shift) x R`` rounds (``v``: the
    van der Corput sequence 0, 1/2, 1/4, 3/4, ...), so repeated passes visit a
    pair at different times (interleaving: a burst of load does not hit all
    of its samples).
    O(P) for the full set, O(P x R) worst case.
    """
    want = {(min(a, b), max(a, b)) for a, b in pairs}
    if not want:
        return []
    slot_of = {}
    for r, ps in enumerate(round_robin(n)):
        for p in ps:
            slot_of[p] = r
    order = sorted(want, key=lambda p: (slot_of[p], p))
    rounds: list[list[Pair]] = []
    used: list[set] = []
    # rounds are numbered compactly in order of the original rounds of the pairs
    remap: dict[int, int] = {}
    for p in order:
        r0 = remap.setdefault(slot_of[p], len(remap))
        while len(rounds) <= r0:
            rounds.append([])
            used.append(set())
        r = r0
        while True:
            if r == len(rounds):
                rounds.append([])
                used.append(set())
            if p[0] not in used[r] and p[1] not in used[r]:
                rounds[r].append(p)
                used[r].update(p)
                break
            r += 1
    rounds = [sorted(ps) for ps in rounds if ps]
    k = int(_van_der_corput(shift) * len(rounds)) % len(rounds)
    return rounds[k:] + rounds[:k]


def _van_der_corput(i: int) -> float:
    """0, 1/2, 1/4, 3/4, 1/8, 5/8, ...: the i-th point of the base-2 van der Corput sequence, so
    rotations by it spread any number of passes over the rounds (pass 1 is half a probe away)."""
    x, f, i = 0.0, 0.5, abs(int(i))
    while i:
        x += f * (i & 1)
        i >>= 1
        f /= 2
    return x
