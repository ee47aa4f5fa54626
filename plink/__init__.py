"""plink: locality-aware rank orders for collectives on rented cloud VMs.

Library first: every CLI command is a thin layer over a function here.

>>> from plink import simulate_datacenter, order_hosts
>>> probe = simulate_datacenter(racks=4, hosts_per_rack=4, seed=1)
>>> result = order_hosts(probe, algo="ring", time_limit=0.5, seed=1)
>>> result.cost_plink <= result.cost_random_median
True
"""

__version__ = "0.1.0"

from plink.errors import PlinkError, ProbeFileError  # noqa: E402
from plink.data.probefile import Host, ProbeData, Truth, load, from_matrix  # noqa: E402
from plink.data.simulate import simulate_datacenter  # noqa: E402
from plink.order import OrderResult, order_hosts  # noqa: E402

__all__ = [
    "__version__",
    "PlinkError",
    "ProbeFileError",
    "Host",
    "ProbeData",
    "Truth",
    "load",
    "from_matrix",
    "simulate_datacenter",
    "OrderResult",
    "order_hosts",
]
