"""Launcher files from a rank order: one pure function per launcher format.

Every emitter takes the hosts in rank order (host 0 gets the first rank) and
returns the text of a file that launcher accepts as-is, with a ``#`` header
(where the format allows comments) giving the command line that uses it.
``slots`` is the number of processes (GPUs) per host; the ranks of one host
are always contiguous, so host ``i`` holds ranks ``i*slots .. i*slots+slots-1``
(with a per-host list of slots, the running sum).

What makes the order stick, per launcher:

``openmpi``  one line per *rank* for ``mpirun --map-by seq``: the sequential
    mapper places rank ``r`` on the host of line ``r``.  (A plain hostfile's
    order is *not* a placement guarantee once slots, ``--map-by`` or
    ``--rank-by`` come into play.)
``rankfile``  Open MPI ``rank r=host slot=k`` lines (``mpirun --rankfile``);
    ``slot=k`` pins local rank ``k`` to logical CPU ``k``.
``mpich``  MPICH / Intel MPI (Hydra) machinefile, ``host:slots`` per line:
    Hydra fills the lines in order, ``slots`` consecutive ranks each
    (``-ppn`` overrides the counts and deals ranks round-robin).
``slurm``  ``SLURM_HOSTFILE`` for ``srun --distribution=arbitrary``: one host
    per task, task ``r`` on line ``r`` (a node list, ``srun -w``, is placed in
    Slurm's own node order instead).
``slurm-topology``  a ``topology.conf`` for the ``topology/tree`` plugin: a
    leaf switch per plink group, one root switch above them.  It steers
    Slurm's node *selection*, not rank order.
``torchrun``  the node-rank map for static rendezvous: one node per line,
    node rank 0 first, and in the header the command every node runs
    (``--node-rank "$(plink node-rank ORDER)"``).
``deepspeed``  DeepSpeed hostfile (``host slots=N``): the launcher numbers
    nodes in file order (its default pdsh runner; proven).
``horovod``  the ``-H host:slots,...`` argument of ``horovodrun``: ranks are
    handed out host by host in that order.
``env``  shell ``export`` lines for the collective library, matching the
    algorithm the order was optimised for (NCCL_ALGO, Open MPI's tuned
    allreduce algorithm), with what each library does with the rank order.

All emitters are O(N * slots) string building.
"""

from __future__ import annotations

import re
import shlex
from typing import Callable, Hashable, Sequence

from plink.errors import InputError, OptionError, PlinkError

#: every format ``plink order --format`` accepts, in --help order
FORMATS = (
    "plain", "json", "openmpi", "rankfile", "mpich", "slurm", "slurm-topology",
    "torchrun", "deepspeed", "horovod", "env",
)

#: the formats :func:`emit` writes from a host list: every one but ``json``, an order file that holds the
#: search's result (:func:`plink.data.orderfile.render`)
EMIT_FORMATS = tuple(f for f in FORMATS if f != "json")

#: the collective algorithms an order is optimised for (``plink order --algo``)
ALGOS = ("ring", "hd", "rd", "dbt", "bcube", "bintree")

DEFAULT_MASTER_PORT = 29500


def _hosts(hosts: Sequence) -> list:
    """``hosts`` as :class:`plink.data.probefile.Host` objects (names are wrapped); :class:`InputError`
    unless it is a sequence of hosts (a string would be its characters: one host per letter; a set or
    a mapping has no order, and the order is the rank order)."""
    from collections.abc import Mapping, Set

    from plink.data.probefile import Host

    if isinstance(hosts, (str, bytes, Set, Mapping)) or not hasattr(hosts, "__iter__"):
        raise InputError(f"hosts must be a sequence of host names, got {type(hosts).__name__}")
    out = []
    for h in hosts:
        out.append(h if isinstance(h, Host) else Host(str(h)))
    if not out:
        raise PlinkError("no hosts to write")
    names = [h.name for h in out]
    check_launcher_names(names)
    return out


def _no_ipv6(hosts: list, fmt: str) -> list:
    """``hosts``, unless one is an IPv6 address: ``host:slots`` formats cannot hold one (``fe80::1:4``
    reads back as another address) and their launchers take no brackets."""
    for h in hosts:
        if ":" in h.name:
            raise PlinkError(f"the {fmt} format writes host:slots, which the IPv6 address {h.name!r} makes "
                             "ambiguous: give the host a name (or use --format openmpi or slurm)")
    return hosts


def check_launcher_names(names: Sequence[str], what: str = "a launcher file",
                         hint: str = "a JSON order file, 'plink order --format json', keeps any name; for a "
                                     "launcher file the hosts need host names or IP addresses (a matrix's "
                                     "--hosts FILE can list them)") -> None:
    """Raise :class:`PlinkError` unless every name is a host name or an IP address, once (names
    differing in case only are one host to a resolver and to plink's host-list reader): what
    every launcher file and plain order file can hold and read back in the same order."""
    from plink.data.hostlist import host_name_problem
    from plink.data.inputs import case_note, first_duplicate

    for n in names:
        problem = host_name_problem(n)
        if problem is not None:
            if "to resolvers" in problem:  # a number: --hosts cannot help if its names are the numbers
                why = problem.replace(f"host name {n!r} is", "it is")
                hint = ("give the hosts names that are not numbers, such as node100, or their IP addresses; a JSON "
                        "order file, 'plink order --format json', keeps any name")
            else:
                why = "it is not a host name or an IP address, and would read back as other hosts or not at all"
            raise PlinkError(f"host name {n!r} cannot be written to {what}: {why} ({hint})")
    dup = first_duplicate(names)
    if dup is not None:
        note = case_note(names, *dup)
        raise PlinkError(f"host {names[dup[1]]!r} appears twice in the order" + (f" ({note})" if note else ""))


MAX_SLOTS = 4096  #: processes per host, far above any machine's cores, far below a file of gigabytes


def _whole_slots(s) -> int:
    """One slot count as an int, or :class:`OptionError` unless it is a whole number (``2`` or ``2.0``;
    not ``2.5``, NaN, None, a bool or a string)."""
    from plink.data.inputs import is_whole_number

    if is_whole_number(s):
        return int(s)
    raise OptionError(f"slots must be a whole number, got {s!r}")


def check_slots(slots, n: int) -> list[int]:
    """``slots`` as one integer in ``1..MAX_SLOTS`` per host (an int applies to all; a list gives one per
    host); :class:`OptionError` for anything else."""
    if getattr(slots, "ndim", None) == 0:  # (a 0-d array: one count)
        slots = slots[()]
    if not isinstance(slots, (str, bytes)) and hasattr(slots, "__len__"):
        per = [_whole_slots(s) for s in slots]
        if len(per) != n:
            raise OptionError(f"{len(per)} slot counts for {n} hosts")
    else:
        per = [_whole_slots(slots)] * n
    bad = [s for s in per if s <= 0]
    if bad:
        raise OptionError(f"slots must be >= 1 (processes per host), got {bad[0]}")
    big = [s for s in per if s > MAX_SLOTS]
    if big:
        raise OptionError(f"slots must be <= {MAX_SLOTS} (processes per host), got {big[0]}")
    return per


def _header(lines: Sequence[str]) -> str:
    return "".join(f"# {ln}\n" for ln in lines)


def _total(per: list[int]) -> int:
    return int(sum(per))


# ---------------------------------------------------------------------------
# MPI


def openmpi_hostfile(hosts: Sequence, slots=1) -> str:
    """Open MPI hostfile for ``mpirun --map-by seq``: one line per rank."""
    hs = _hosts(hosts)
    per = check_slots(slots, len(hs))
    n = _total(per)
    out = _header([
        f"plink rank order for Open MPI: one line per rank ({len(hs)} host{'s' * (len(hs) != 1)}, "
        f"{n} rank{'s' * (n != 1)}).",
        "The sequential mapper puts rank r on the host of line r:",
        f"  mpirun --hostfile THIS_FILE --map-by seq -np {n} ./app",
    ])
    for h, s in zip(hs, per):
        out += f"{h.name}\n" * s
    return out


def openmpi_rankfile(hosts: Sequence, slots=1) -> str:
    """Open MPI rankfile: ``rank r=host slot=k`` (k = local rank = logical CPU)."""
    hs = _hosts(hosts)
    per = check_slots(slots, len(hs))
    n = _total(per)
    out = _header([
        f"plink rank order for Open MPI ({len(hs)} hosts, {n} ranks); slot=k pins local rank k to logical CPU k:",
        f"  mpirun --rankfile THIS_FILE -np {n} ./app",
    ])
    r = 0
    for h, s in zip(hs, per):
        for k in range(s):
            out += f"rank {r}={h.name} slot={k}\n"
            r += 1
    return out


def mpich_machinefile(hosts: Sequence, slots=1) -> str:
    """MPICH / Intel MPI (Hydra) machinefile: ``host:slots`` lines, filled in order."""
    hs = _no_ipv6(_hosts(hosts), "mpich")
    per = check_slots(slots, len(hs))
    n = _total(per)
    out = _header([
        f"plink rank order for MPICH / Intel MPI ({len(hs)} hosts, {n} ranks); lines are filled in order:",
        f"  mpiexec -f THIS_FILE -n {n} ./app              # MPICH",
        f"  mpirun -machinefile THIS_FILE -n {n} ./app     # Intel MPI",
        "No -ppn: it overrides the :N counts and deals ranks round-robin over the hosts.",
    ])
    for h, s in zip(hs, per):
        out += f"{h.name}:{s}\n"
    return out


# ---------------------------------------------------------------------------
# Slurm


def slurm_hostfile(hosts: Sequence, slots=1) -> str:
    """``SLURM_HOSTFILE`` for ``srun --distribution=arbitrary``: one host per task."""
    hs = _hosts(hosts)
    per = check_slots(slots, len(hs))
    n = _total(per)
    out = _header([
        f"plink rank order for Slurm ({len(hs)} nodes, {n} tasks): task r runs on the node of line r.",
        f"  SLURM_HOSTFILE=THIS_FILE srun --distribution=arbitrary -n {n} ./app",
        "A node list (srun -w / --nodelist) does not keep this order: Slurm places tasks in its own node order.",
    ])
    for h, s in zip(hs, per):
        out += f"{h.name}\n" * s
    return out


_NUM_TAIL = re.compile(r"^(.*?)(\d+)$")


def compress_hostlist(names: Sequence[str]) -> str:
    """Slurm hostlist expression for ``names``, e.g. ``node[01-04,07],gpu1``.

    Names ending in digits with a common prefix (and digit width) are folded
    into ranges; everything else (and a name holding ``[``) is listed as is.
    Order is prefix-grouped, numbers ascending: a hostlist is a set.  The
    names are ones :func:`slurm_topology` accepts (no ``,`` or whitespace).
    O(N log N).
    """
    groups: dict[tuple[str, int], list[int]] = {}
    order: list[tuple[str, int] | str] = []
    for name in names:
        m = _NUM_TAIL.match(name)
        if m is None or "[" in name:
            order.append(name)
            continue
        prefix, digits = m.group(1), m.group(2)
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        key = (prefix, width)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(digits))
    parts = []
    for key in order:
        if isinstance(key, str):
            parts.append(key)
            continue
        prefix, width = key
        nums = sorted(set(groups[key]))

        def fmt(x: int) -> str:
            return f"{x:0{width}d}"  # width 0: no padding

        if len(nums) == 1:
            parts.append(prefix + fmt(nums[0]))
            continue
        ranges, start, prev = [], nums[0], nums[0]
        for x in nums[1:] + [None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            ranges.append(fmt(start) if start == prev else f"{fmt(start)}-{fmt(prev)}")
            if x is not None:
                start = prev = x
        parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)


def slurm_topology(hosts: Sequence, labels: Sequence[Hashable], *, prefix: str = "plink") -> str:
    """Slurm ``topology.conf`` (``TopologyPlugin=topology/tree``) from plink groups.

    ``labels[i]`` is the group of ``hosts[i]``: any hashable values (group numbers, rack names); each
    group becomes a leaf switch ``{prefix}-s{g}`` (numbered in rank order of first appearance),
    joined by a root switch ``{prefix}-root``.
    """
    hs = _hosts(hosts)
    from plink.data.groupfile import group_codes

    codes = group_codes(labels, [h.name for h in hs], first_seen=True).tolist()
    members: list[list[str]] = [[] for _ in range(max(codes) + 1)]
    for h, g in zip(hs, codes):
        members[g].append(h.name)
    out = _header([
        f"plink groups as a Slurm switch tree ({len(hs)} nodes, {len(members)} leaf switches).",
        "Put it next to slurm.conf and set TopologyPlugin=topology/tree; it steers node selection",
        "(jobs packed under few switches), not rank order: use the slurm format for that.",
    ])
    for s, names in enumerate(members):
        out += f"SwitchName={prefix}-s{s} Nodes={compress_hostlist(names)}\n"
    if len(members) > 1:
        out += f"SwitchName={prefix}-root Switches={prefix}-s[0-{len(members) - 1}]\n"
    return out


# ---------------------------------------------------------------------------
# PyTorch / DeepSpeed / Horovod


def master_address(hosts: Sequence) -> str:
    """How to reach rank 0: its address when known, else its name."""
    h0 = _hosts(hosts)[0]
    return h0.address or h0.name


def torchrun_map(hosts: Sequence, slots=1, *, order_file: str = "order.json", master_port: int = DEFAULT_MASTER_PORT) -> str:
    """torchrun node-rank map for static rendezvous: node rank = line number.

    The header carries the command every node runs; ``plink node-rank``
    prints the node's own rank from this file or from the JSON order file.
    """
    hs = _hosts(hosts)
    per = check_slots(slots, len(hs))
    if len(set(per)) != 1:
        raise PlinkError("torchrun runs the same --nproc-per-node on every node: give one slot count")
    master = master_address(hs)
    out = _header([
        f"plink node ranks for torchrun static rendezvous ({len(hs)} node{'s' * (len(hs) != 1)} x {per[0]} process{'es' * (per[0] != 1)} each).",
        "On every node (node rank = line number below, from 0):",
        f"  torchrun --nnodes={len(hs)} --nproc-per-node={per[0]} --node-rank=\"$(plink node-rank {shlex.quote(order_file)})\" \\",
        f"      --master-addr={shlex.quote(master)} --master-port={master_port} train.py",
    ])
    width = max(len(h.name) for h in hs)
    for r, h in enumerate(hs):
        where = f", address={h.address}" if h.address else ""
        out += f"{h.name:<{width}}  # node-rank {r}{where}\n"
    return out


def deepspeed_hostfile(hosts: Sequence, slots=1) -> str:
    """DeepSpeed hostfile: ``host slots=N`` lines, nodes ranked in file order."""
    hs = _hosts(hosts)
    per = check_slots(slots, len(hs))
    out = _header([
        f"plink rank order for DeepSpeed ({len(hs)} nodes, {_total(per)} ranks); nodes are ranked in file order:",
        "  deepspeed --hostfile THIS_FILE train.py --deepspeed_config ds.json",
        "With the default pdsh launcher; --launcher openmpi/mpich/slurm hand the hosts to that launcher",
        "(use plink's openmpi, mpich or slurm file with it directly).",
    ])
    for h, s in zip(hs, per):
        out += f"{h.name} slots={s}\n"
    return out


def horovod_hosts(hosts: Sequence, slots=1) -> str:
    """The ``-H`` argument of ``horovodrun``: ``host:slots,...`` in rank order."""
    hs = _no_ipv6(_hosts(hosts), "horovod")
    per = check_slots(slots, len(hs))
    return ",".join(f"{h.name}:{s}" for h, s in zip(hs, per)) + "\n"


# ---------------------------------------------------------------------------
# environment hints


def env_hints(hosts: Sequence, algo: str = "ring", slots=1, made_for: str | None = "") -> str:
    """Shell ``export`` lines telling the collective library to run ``algo``.

    ``made_for``: the algorithm the order was searched for (an order file's ``algo``), None when
    unknown (a plain host list); by default ``algo`` itself. What the file says of Gloo, which
    runs a ring whatever is set, follows it.

    Honest about what each library does with the rank order:

    * NCCL numbers nodes in the order their first rank appears; its
      inter-node ring follows that node order and its double binary tree is
      built over it.  Inside a node NCCL picks the GPU order itself from the
      PCIe/NVLink topology.  NCCL has no halving-doubling or BCube all-reduce.
    * Gloo (torch.distributed CPU) runs its ring all-reduce in rank order;
      PyTorch has no switch for Gloo's halving-doubling or BCube.
    * Open MPI's ``tuned`` component can be locked to ring (4) or
      Rabenseifner = reduce-scatter halving + all-gather doubling (6).
    """
    if algo not in ALGOS:
        raise OptionError(f"unknown algorithm {algo!r} (choose from {', '.join(ALGOS)})")
    hs = _hosts(hosts)
    per = check_slots(slots, len(hs))
    lines = [
        f"# plink: environment for {algo} all-reduce in the plink rank order ({len(hs)} hosts, {_total(per)} ranks).",
        "# Source it before the launcher:  . THIS_FILE",
        "# NCCL numbers nodes in the order their first rank appears: its inter-node ring follows",
        "# that node order and its trees are built over it; the GPU order inside a node is NCCL's own.",
    ]
    ompi = {"ring": "4  # ring", "rd": "3  # recursive doubling",
            "bintree": "2  # reduce (binary tree) + broadcast (binary tree)", "hd": "6  # rabenseifner: recursive-halving reduce-scatter + doubling all-gather"}
    if algo == "ring":
        lines += ["export NCCL_ALGO=Ring"]
    elif algo == "dbt":
        lines += ["export NCCL_ALGO=Tree   # NCCL's double binary tree over the node order"]
    else:
        name = {"hd": "halving-doubling", "rd": "recursive-doubling", "bintree": "binary-tree", "bcube": "BCube"}[algo]
        lines += [f"# NCCL has no {name} all-reduce (NCCL_ALGO left unset)"
                  + ("; Open MPI does (below)." if algo in ompi else
                     "; nor have Open MPI's coll/tuned or Gloo under torch.distributed: no variable here runs it.")]
    made_for = algo if made_for == "" else made_for
    gloo = "# Gloo (torch.distributed on CPU) runs a ring in rank order"
    if made_for == "ring":
        lines += [f"{gloo}: this order is for it too."]
    elif made_for is None:  # (a plain list: made for a ring, or not)
        lines += [f"{gloo} whatever is set here; for Gloo use an order made for a ring (plink order --algo ring)."]
    else:
        lines += [f"{gloo} whatever is set here; this order was made for {made_for}, so for Gloo make a ring "
                  "order (plink order --algo ring)."]
    if algo in ompi:
        lines += [
            "# Open MPI (coll/tuned):",
            "export OMPI_MCA_coll_tuned_use_dynamic_rules=1",
            f"export OMPI_MCA_coll_tuned_allreduce_algorithm={ompi[algo]}",
        ]
        if algo == "bintree":
            lines += ["export OMPI_MCA_coll_tuned_reduce_algorithm=4", "export OMPI_MCA_coll_tuned_bcast_algorithm=5",
                      "# (their segment sizes left at 0, whole messages level by level: as plink priced the order)"]
    first = hs[0]
    lines += ["# rank 0 (torchrun / torch.distributed rendezvous):"]
    if first.address is None:  # a plain list, or a host never reached: the name may be an ssh-config alias
        lines += ["# (the host's name as given, no address recorded: if it is an SSH config alias, set MASTER_ADDR to",
                  "#  an address every host resolves; plink probe records one)"]
    lines += [f"export MASTER_ADDR={shlex.quote(first.address or first.name)}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# dispatch


EMITTERS: dict[str, Callable[..., str]] = {
    "openmpi": openmpi_hostfile,
    "rankfile": openmpi_rankfile,
    "mpich": mpich_machinefile,
    "slurm": slurm_hostfile,
    "deepspeed": deepspeed_hostfile,
    "horovod": horovod_hosts,
}


def emit(
    fmt: str,
    hosts: Sequence,
    *,
    slots=1,
    algo: str = "ring",
    labels: Sequence[Hashable] | None = None,
    order_file: str = "order.json",
    made_for: str | None = "",
) -> str:
    """Text of the file ``fmt`` (one of :data:`EMIT_FORMATS`) for ``hosts`` in rank order.

    ``plain`` is the plain order file, one host per line (``slots`` must be 1); the
    other formats are the launchers' of the module docstring.  The ``json`` order file
    is not written here: it holds the search's result, not only the hosts
    (:func:`plink.data.orderfile.render`).  ``labels`` (one group per host, any
    hashable values) is needed by ``slurm-topology`` only; ``made_for`` (what the
    order was searched for, None = unknown; default ``algo``) by ``env`` only.
    """
    if fmt in EMITTERS:
        return EMITTERS[fmt](hosts, slots)
    if fmt == "slurm-topology":
        if labels is None:
            raise OptionError("the slurm-topology format needs the groups: pass labels, one group per host "
                              "(e.g. a groups file's, from plink group)")
        return slurm_topology(hosts, labels)
    if fmt == "torchrun":
        return torchrun_map(hosts, slots, order_file=order_file)
    if fmt == "env":
        return env_hints(hosts, algo, slots, made_for)
    if fmt == "plain":
        hs = _hosts(hosts)
        if any(s != 1 for s in check_slots(slots, len(hs))):
            raise PlinkError("a plain order file has one line per host: slots apply to launcher formats")
        return "".join(f"{h.name}\n" for h in hs)
    if fmt == "json":
        raise OptionError("emit() does not write the json order file: it holds the search's result, not only the "
                          "hosts (write it with plink.data.orderfile.render(result, probe, 'json'))")
    raise OptionError(f"unknown format {fmt!r} (choose from {', '.join(EMIT_FORMATS)})")
