"""plink: locality-aware rank orders for collectives on rented cloud VMs.

Library first: every CLI command is a thin layer over a function here.

>>> from plink import simulate_datacenter, order_hosts
>>> probe = simulate_datacenter(racks=4, hosts_per_rack=4, seed=1)
>>> result = order_hosts(probe, algo="ring", time_limit=0.5, seed=1)
>>> result.cost_plink <= result.cost_random_median
True

The names below load on first use (PEP 562): ``import plink`` itself loads nothing heavy, so
the ``plink`` command can turn a Ctrl-C while Python loads the rest into a clean exit.
"""

__version__ = "0.1.0"

#: the public names and the module each comes from
_EXPORTS = {
    "PlinkError": "plink.errors",
    "ProbeFileError": "plink.errors",
    "Host": "plink.data.probefile",
    "ProbeData": "plink.data.probefile",
    "Truth": "plink.data.probefile",
    "load": "plink.data.probefile",
    "from_matrix": "plink.data.probefile",
    "simulate_datacenter": "plink.data.simulate",
    "OrderResult": "plink.order",
    "order_hosts": "plink.order",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'plink' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
