"""A synthetic datacenter: probe data with known ground truth.

Hosts sit in a hierarchy ``dc / cluster / row / rack / host`` with a
configurable fan-out per level.  The RTT of a pair is set by the outermost
level at which the two hosts differ (``rack_us`` inside a rack, ``row_us``
between racks of a row, and so on), plus each host's own startup cost
("height", the per-host term of ProbeEmbed, §4.2.1), then noise:

* ``jitter``: multiplicative log-normal noise, ``exp(N(0, jitter))``;
* ``outlier_frac`` / ``outlier_scale``: that fraction of pairs is hit by other
  tenants' traffic and inflated by ``1 + outlier_scale * Pareto(1.5)``
  (heavy-tailed);
* ``asymmetry``: the fraction of pairs whose two directions differ (one is
  inflated by up to 50%); plink symmetrises with max on load;
* ``missing_frac``: the fraction of pairs left unmeasured (``null``);
* ``tenant_us`` / ``noisy_hosts``: other tenants on the hosts.  Host ``i`` has
  a noise scale ``s_i = tenant_us * exp(N(0, 1))`` (heavy-tailed over hosts),
  ``noisy_factor`` times larger on a ``noisy_hosts`` fraction of them; every
  pair gets ``s_i * X + s_j * Y`` added, ``X, Y ~ Lomax(1.5)`` (heavy-tailed
  over pairs).

``hosts_per_rack`` is an int (every rack the same) or a range ``(lo, hi)``:
each rack then holds ``lo..hi`` hosts, uniformly at random (unequal racks).

With ``bandwidth=True`` a bandwidth matrix is added: ``host_gbps`` inside a
rack, divided by ``oversubscription`` for every level above the rack that a
pair crosses, with the same jitter, never above ``host_gbps`` (until 2026-12-01
the jitter put the fastest pairs above it: 13-18% on 64 hosts at the default jitter).

The hosts are shuffled into a random order (as a cloud hands them out) and
named ``vm000 ..`` in that order, so names say nothing about placement; the
true location of each host is kept in ``truth``.  Deterministic for a seed.
"""

from __future__ import annotations


import numpy as np

from plink.errors import OptionError, PlinkError
from plink.data.inputs import MAX_LATENCY_US
from plink.data.probefile import Host, ProbeData, Truth, new_meta

LEVELS = ("dc", "cluster", "row", "rack")


def simulate_datacenter(
    racks: int = 8,
    hosts_per_rack: int | tuple[int, int] = 8,
    *,
    rows: int = 1,
    clusters: int = 1,
    dcs: int = 1,
    rack_us: float = 20.0,
    row_us: float = 60.0,
    cluster_us: float = 120.0,
    dc_us: float = 250.0,
    inter_dc_us: float = 2000.0,
    height_us: float = 5.0,
    jitter: float = 0.05,
    outlier_frac: float = 0.0,
    outlier_scale: float = 1.0,
    asymmetry: float = 0.0,
    missing_frac: float = 0.0,
    bandwidth: bool = False,
    host_gbps: float = 25.0,
    oversubscription: float = 4.0,
    shuffle: bool = True,
    seed: int = 0,
    tenant_us: float = 0.0,
    noisy_hosts: float = 0.0,
    noisy_factor: float = 10.0,
) -> ProbeData:
    """Generate a :class:`ProbeData` for a synthetic datacenter (the model: this module's docstring).

    All latencies are RTTs in microseconds; fractions are in ``[0, 1]``.

    Parameters
    ----------
    racks : int, default 8
        Racks *per row*.
    hosts_per_rack : int or (lo, hi), default 8
        Hosts in each rack, or a range: each rack gets ``lo..hi`` hosts at random.
    rows : int, default 1
        Rows per cluster.
    clusters : int, default 1
        Clusters per datacenter.
    dcs : int, default 1
        Datacenters in total.
    rack_us, row_us, cluster_us, dc_us, inter_dc_us : float
        RTT of a pair inside one rack (default 20), between racks of a row (60), between rows of a
        cluster (120), between clusters of a datacenter (250) and between datacenters (2000).
    height_us : float, default 5
        Largest per-host startup cost: each host gets one uniformly in ``[0, height_us]``, added to
        every pair it is in.
    jitter : float, default 0.05
        Sigma of the multiplicative log-normal noise ``exp(N(0, jitter))`` on every pair (and bandwidth).
    outlier_frac : float, default 0
        Fraction of pairs inflated by heavy-tailed noise, ``1 + outlier_scale * Pareto(1.5)``.
    outlier_scale : float, default 1
        Scale of that noise.
    asymmetry : float, default 0
        Fraction of pairs whose two directions differ (one inflated by up to 50%).
    missing_frac : float, default 0 (below 1)
        Fraction of pairs left unmeasured (NaN).
    bandwidth : bool, default False
        Also generate a bandwidth matrix (Gbit/s).
    host_gbps : float, default 25
        Bandwidth of a pair inside a rack, and the most any pair gets.
    oversubscription : float in [1, 1000], default 4
        Bandwidth divisor per switch level above the rack that a pair crosses.
    shuffle : bool, default True
        Hand the hosts out in a random order (as a cloud does); False keeps them in rack order.
    seed : int in 0 .. 2**32 - 1, default 0
        Seeds every random draw: the same seed and parameters give the same datacenter.
    tenant_us : float, default 0
        Scale of other tenants' noise per host (heavy-tailed over hosts and over pairs); 0 = none.
    noisy_hosts : float, default 0
        Fraction of hosts with ``noisy_factor`` times more tenant noise (needs ``tenant_us > 0``).
    noisy_factor : float, default 10
        How much noisier the noisy hosts are.

    Returns a :class:`ProbeData` whose ``truth`` holds each host's ``dc / cluster / row / rack``.
    A parameter out of range is an :class:`~plink.errors.OptionError`.
    """
    seed = _check_seed(seed)
    if not isinstance(bandwidth, (bool, np.bool_)):  # ('no' would read as True)
        raise OptionError(f"bandwidth must be True or False, got {bandwidth!r}")
    hpr_range, hosts_per_rack = _hosts_per_rack(hosts_per_rack)
    lat_levels = [inter_dc_us, dc_us, cluster_us, row_us, rack_us]
    _check_params(racks, hosts_per_rack, rows, clusters, dcs, lat_levels, height_us=height_us, jitter=jitter,
                  outlier_frac=outlier_frac, outlier_scale=outlier_scale, asymmetry=asymmetry,
                  missing_frac=missing_frac, host_gbps=host_gbps, oversubscription=oversubscription,
                  tenant_us=tenant_us, noisy_hosts=noisy_hosts, noisy_factor=noisy_factor)
    racks, rows, clusters, dcs, hosts_per_rack = (int(v) for v in (racks, rows, clusters, dcs, hosts_per_rack))
    # one generator, drawn from in a fixed order by the steps below: the output is a function of the seed
    rng = np.random.default_rng(seed)
    loc = _locations(rng, racks, rows, clusters, dcs, hosts_per_rack, hpr_range)
    common = _common_prefix(loc)
    lat = _latency(rng, common, lat_levels, height_us, jitter)
    lat = _interference(rng, lat, tenant_us=tenant_us, noisy_hosts=noisy_hosts, noisy_factor=noisy_factor,
                        outlier_frac=outlier_frac, outlier_scale=outlier_scale, asymmetry=asymmetry)
    big = np.nanmax(np.where(np.isfinite(lat), lat, 0.0)) if lat.size else 0.0
    if not np.isfinite(lat[~np.isnan(lat)]).all() or big > MAX_LATENCY_US:  # the file must read back
        raise PlinkError(f"these latencies reach {big:.3g} us, above what plink reads (one day): "
                         "lower --height-us, --tenant-us or the per-level latencies")
    bw = _bandwidth(rng, common, host_gbps, oversubscription, jitter) if bandwidth else None
    if missing_frac > 0:
        _drop_pairs(rng, missing_frac, lat, bw)
    hosts, lat, bw, labels = _shuffled(rng, shuffle, lat, bw, loc)
    meta = new_meta(
        "simulate",
        seed=seed,
        params={
            "racks": racks,
            "hosts_per_rack": list(hpr_range) if hpr_range else hosts_per_rack,
            "rows": rows,
            "clusters": clusters,
            "dcs": dcs,
            "rack_us": rack_us,
            "row_us": row_us,
            "cluster_us": cluster_us,
            "dc_us": dc_us,
            "inter_dc_us": inter_dc_us,
            "height_us": height_us,
            "jitter": jitter,
            "outlier_frac": outlier_frac,
            "outlier_scale": outlier_scale,
            "asymmetry": asymmetry,
            "missing_frac": missing_frac,
            "bandwidth": bandwidth,
            "host_gbps": host_gbps,
            "oversubscription": oversubscription,
            **({"tenant_us": tenant_us, "noisy_hosts": noisy_hosts, "noisy_factor": noisy_factor}
               if tenant_us > 0 else {}),
        },
    )
    return ProbeData(hosts=hosts, latency=lat, bandwidth=bw, meta=meta, truth=Truth(LEVELS, labels))


def _check_seed(seed) -> int:
    """``seed`` as an int in ``0 .. 2**32 - 1`` (a whole float, ``1e6``, is taken), as
    :func:`plink.order_hosts` checks its seed; else :class:`OptionError`."""
    from plink.data.inputs import is_whole_number

    if not is_whole_number(seed):
        raise OptionError(f"seed must be a whole number, got {seed!r}")
    if not 0 <= seed < 2**32:
        raise OptionError(f"seed must be 0 .. 2**32 - 1, got {seed}")
    return int(seed)


def _hosts_per_rack(hosts_per_rack) -> tuple[tuple[int, int] | None, int]:
    """``(the (lo, hi) range or None, the largest rack size)`` of a ``hosts_per_rack`` argument."""
    if not isinstance(hosts_per_rack, (tuple, list)):
        return None, hosts_per_rack
    if len(hosts_per_rack) != 2 or not all(isinstance(v, (int, np.integer)) for v in hosts_per_rack) \
            or not 1 <= hosts_per_rack[0] <= hosts_per_rack[1]:
        got = "-".join(map(str, hosts_per_rack)) if len(hosts_per_rack) == 2 else repr(hosts_per_rack)
        raise OptionError(f"--hosts-per-rack LO-HI must be two integers 1 <= LO <= HI, got {got}")
    hpr_range = (int(hosts_per_rack[0]), int(hosts_per_rack[1]))
    return hpr_range, hpr_range[1]


def _check_params(racks, hosts_per_rack, rows, clusters, dcs, lat_levels, *, height_us, jitter, outlier_frac,
                  outlier_scale, asymmetry, missing_frac, host_gbps, oversubscription, tenant_us, noisy_hosts,
                  noisy_factor) -> None:
    """Raise :class:`OptionError` for the first parameter out of range (``hosts_per_rack``: the largest rack)."""
    from plink.data.inputs import is_number, is_whole_number

    counts = {"racks": racks, "hosts_per_rack": hosts_per_rack, "rows": rows, "clusters": clusters, "dcs": dcs}
    for name, v in counts.items():  # (a whole float, 2.0, is taken, as the seed is)
        if not is_whole_number(v) or v < 1:
            raise OptionError(f"{name.replace('_', '-')} must be a positive integer, got {v!r}")
    numbers = {"jitter": jitter, "outlier-scale": outlier_scale, "height-us": height_us, "tenant-us": tenant_us,
               "noisy-factor": noisy_factor, "--outliers (outlier_frac)": outlier_frac, "asymmetry": asymmetry,
               "--missing (missing_frac)": missing_frac, "noisy-hosts": noisy_hosts, "host-gbps": host_gbps,
               "oversubscription": oversubscription, "per-level latencies": lat_levels}
    for name, v in numbers.items():  # (numpy's error, or a str compared with a float, otherwise)
        for x in (v if isinstance(v, list) else [v]):
            if not is_number(x):
                raise OptionError(f"{name} must be a number, got {x!r}")
    for name, v in {"jitter": jitter, "outlier-scale": outlier_scale, "height-us": height_us,
                    "tenant-us": tenant_us, "noisy-factor": noisy_factor}.items():
        if not np.isfinite(v) or v < 0:
            raise OptionError(f"{name} must be >= 0, got {v}")
    # named as the CLI flag and, where it differs, the keyword
    for name, v in {"--outliers (outlier_frac)": outlier_frac, "asymmetry": asymmetry, "--missing (missing_frac)": missing_frac,
                    "noisy-hosts": noisy_hosts}.items():
        if not 0.0 <= v <= 1.0:
            raise OptionError(f"{name} must be between 0 and 1, got {v}")
    if missing_frac >= 1.0:
        raise OptionError("--missing (missing_frac) must be < 1 (some pairs must be measured)")
    if noisy_hosts > 0 and tenant_us <= 0:
        raise OptionError("noisy-hosts needs tenant-us > 0 (the noise the noisy hosts have more of)")
    if any((not np.isfinite(v)) or v <= 0 for v in lat_levels):
        raise OptionError("per-level latencies must be finite numbers > 0")
    if not (np.isfinite(host_gbps) and host_gbps > 0):
        raise OptionError(f"host-gbps must be a finite number > 0, got {host_gbps}")
    if not (np.isfinite(oversubscription) and 1 <= oversubscription <= 1000):
        raise OptionError(f"oversubscription must be between 1 and 1000, got {oversubscription}")
    if not host_gbps <= 1e5:
        raise OptionError(f"host-gbps must be at most 100000 (100 Tbit/s), got {host_gbps}")
    n = dcs * clusters * rows * racks * hosts_per_rack
    if n > 20000:
        raise OptionError(f"{n} hosts is more than plink simulates (20000)")


def _locations(rng, racks, rows, clusters, dcs, hosts_per_rack, hpr_range) -> np.ndarray:
    """``(n, 4)`` location (dc, cluster, row, rack) of each host in generation (sorted) order; draws the rack sizes."""
    n_racks = dcs * clusters * rows * racks
    if hpr_range is None:
        rack_sizes = np.full(n_racks, hosts_per_rack)
    else:
        rack_sizes = rng.integers(hpr_range[0], hpr_range[1] + 1, size=n_racks)
    if int(rack_sizes.sum()) < 2:
        raise OptionError("a datacenter needs at least 2 hosts")
    rack_i = np.repeat(np.arange(n_racks), rack_sizes)
    row_i = rack_i // racks
    cluster_i = row_i // rows
    dc_i = cluster_i // clusters
    return np.stack([dc_i, cluster_i, row_i, rack_i], axis=1)


def _common_prefix(loc: np.ndarray) -> np.ndarray:
    """Level at which each pair of hosts first differs: 0 = different dc .. 4 = same rack."""
    same = loc[:, None, :] == loc[None, :, :]
    return same.cumprod(axis=2).sum(axis=2)  # length of common prefix, 0..4


def _sym_noise(rng, n: int, scale: float) -> np.ndarray:
    """Symmetric ``(n, n)`` log-normal factors ``exp(N(0, scale))`` (1 on the diagonal)."""
    z = rng.normal(0.0, scale, size=(n, n))
    z = np.triu(z, 1)
    return np.exp(z + z.T)


def _latency(rng, common: np.ndarray, lat_levels: list[float], height_us: float, jitter: float) -> np.ndarray:
    """The RTTs before interference: the level's latency, plus both hosts' heights, times the jitter."""
    n = len(common)
    base = np.asarray(lat_levels)[common]
    heights = rng.uniform(0.0, height_us, size=n)
    lat = base + heights[:, None] + heights[None, :]
    return lat * _sym_noise(rng, n, jitter)


def _interference(rng, lat: np.ndarray, *, tenant_us, noisy_hosts, noisy_factor, outlier_frac, outlier_scale,
                  asymmetry) -> np.ndarray:
    """``lat`` with other tenants' noise, outlier pairs and asymmetric pairs added (zero diagonal)."""
    n = len(lat)
    if tenant_us > 0:
        scale = tenant_us * np.exp(rng.normal(0.0, 1.0, size=n))
        if noisy_hosts > 0:
            scale = np.where(rng.random(n) < noisy_hosts, scale * noisy_factor, scale)
        add = scale[:, None] * rng.pareto(1.5, size=(n, n)) + scale[None, :] * rng.pareto(1.5, size=(n, n))
        add = np.triu(add, 1)
        lat = lat + add + add.T
    if outlier_frac > 0:
        hit = np.triu(rng.random((n, n)) < outlier_frac, 1)
        factor = 1.0 + outlier_scale * rng.pareto(1.5, size=(n, n))
        factor = np.where(hit, factor, 1.0)
        factor = np.triu(factor, 1)
        factor = factor + factor.T
        factor[factor == 0] = 1.0
        lat = lat * factor
    if asymmetry > 0:
        hit = rng.random((n, n)) < asymmetry
        hit = np.triu(hit, 1)
        which = rng.random((n, n)) < 0.5
        up = hit & which
        lo = (hit & ~which).T
        inflate = 1.0 + 0.5 * rng.random((n, n))
        lat = np.where(up | lo, lat * inflate, lat)
    np.fill_diagonal(lat, 0.0)
    return lat


def _bandwidth(rng, common: np.ndarray, host_gbps: float, oversubscription: float, jitter: float) -> np.ndarray:
    """Bandwidth (Gbit/s) per pair: ``host_gbps`` over ``oversubscription`` per level crossed, with
    jitter, never above ``host_gbps`` (the hosts' NICs carry every pair)."""
    crossed = 4 - common  # switch levels above the rack that the pair crosses
    bw = host_gbps / (oversubscription ** crossed)
    bw = np.minimum(bw / _sym_noise(rng, len(common), jitter), host_gbps)
    np.fill_diagonal(bw, np.nan)
    return bw


def _drop_pairs(rng, missing_frac: float, lat: np.ndarray, bw: np.ndarray | None) -> None:
    """Mark a ``missing_frac`` fraction of the pairs unmeasured (NaN) in ``lat`` and ``bw``, in place."""
    n = len(lat)
    miss = np.triu(rng.random((n, n)) < missing_frac, 1)
    miss = miss | miss.T
    lat[miss] = np.nan
    if bw is not None:
        bw[miss] = np.nan


def _shuffled(rng, shuffle: bool, lat: np.ndarray, bw: np.ndarray | None, loc: np.ndarray):
    """``(hosts, lat, bw, labels)`` with the hosts in a random order (if ``shuffle``), named ``vm000 ..`` in it."""
    n = len(lat)
    order = rng.permutation(n) if shuffle else np.arange(n)
    ix = np.ix_(order, order)
    lat = lat[ix]
    if bw is not None:
        bw = bw[ix]
    width = max(3, len(str(n - 1)))
    hosts = [Host(f"vm{k:0{width}d}") for k in range(n)]
    labels = tuple(
        (f"dc{loc[i, 0]}", f"cluster{loc[i, 1]}", f"row{loc[i, 2]}", f"rack{loc[i, 3]}") for i in order
    )
    return hosts, lat, bw, labels
