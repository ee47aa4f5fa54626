"""ProbeEmbed: denoise a probed distance matrix by embedding hosts in a low-dimensional space.

Dissertation §4.2.1, equation (4.1).  Find coordinates ``v_i`` (and optional
non-negative per-host "heights" ``h_i``, a fixed startup cost such as the
network stack, as in Vivaldi [Dabek et al. 2004]) minimising

    sum_{i<j, (i,j) measured} (d_ij^alpha + 1_h (h_i + h_j) - p_ij)^2,
    d_ij = ||v_i - v_j||_2,

with torch's Adam.  ``alpha`` in ``[1, 2]``: ``alpha = 1`` fits distances
directly; ``alpha = 2`` (the paper's default) compacts long distances more
than short ones without changing their order, which pulls hosts that are
mutually close closer together.  A low embedding dimension strengthens the
denoising effect (the paper's argument: a host close to a reference host is
probably close to that host's neighbours too).

Details that are ours, not the paper's:

* **Missing pairs** (``NaN``) are masked out of the sum; nothing is filled in.
* **Heights are bounded**: ``0 <= h_i <= min_j p_ij / 2`` (a startup cost is
  paid on every path of the host).  With only ``h_i >= 0`` the heights soaked
  up the common part of all distances (fitted 25 µs where the truth was
  0-5 µs) and the racks of a row collapsed onto one point.
* **Refused input** (one-line :class:`PlinkError`): fewer than 3 hosts, a host
  with fewer than ``min(n_components + 1, 3)`` measured pairs, less than
  ``min_coverage`` (50%) of the pairs measured, measured pairs that split the
  hosts into disconnected parts, or no positive measurement.
* **Scale normalisation**: the probed values are divided by their median
  (``scale_``) before fitting, so the learning rate, tolerances and the
  coordinates do not depend on the unit (µs, ms, ...).  ``coordinates_`` are
  in these normalised units; ``heights_`` and ``distances_`` are converted
  back to the input's units.
* **Convergence**: Adam with a plateau schedule; when the (smoothed) loss has
  not improved by a relative ``tol`` for ``patience`` steps the learning rate
  is halved, and fitting stops after the fifth halving or ``max_iter`` steps.
* **Restarts**: ``n_restarts`` random initialisations; the one with the lowest
  exact loss is kept.
* **Large N** (more than ``full_batch_max_n`` hosts): a full-batch step costs
  O(N²), too slow at N = 4096 on 2 cores, so the fit goes in three stages:
  (1) ``full_batch_max_n // 3`` random landmark hosts are embedded exactly
  (full batch, their sub-matrix); (2) every other host is placed against the
  fixed landmarks (one dense ``(N - L, L)`` block, started at its nearest
  landmark); (3) all hosts are refined together for at most ``max_iter // 2``
  Adam steps (a quarter of ``lr``, ``5 * patience``: the loss of a sampled batch
  is noisy) of ``batch_size`` pairs sampled uniformly from all measured pairs
  (an unbiased stochastic gradient of the same objective).  ``loss_`` is still
  the exact objective over all measured pairs.  This is an approximation of
  the full-batch optimiser; ``stochastic_`` says when it was used.

Complexity: O(max_iter * n_restarts * N² * D) time for full-batch fits,
O(max_iter * (L² + N L + batch_size) * D) above ``full_batch_max_n``; O(N²)
memory.  Measured run times (benchmarks/embed_group.py) are in the README.

References
----------
[Dabek et al. 2004] F. Dabek, R. Cox, F. Kaashoek, R. Morris. "Vivaldi: A Decentralized Network
Coordinate System". ACM SIGCOMM 2004.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from plink.errors import InputError, OptionError
from plink.structure.params import Params

#: Fewest hosts plink embeds and groups (a triangle: fewer say nothing about locality).
MIN_HOSTS = 3
#: Default smallest fraction of measured pairs accepted.
MIN_COVERAGE = 0.5


def _is_number(v) -> bool:
    """What the estimators' float parameters are checked with: :func:`plink.data.inputs.is_number`
    (``True`` is no exponent or rate)."""
    from plink.data.inputs import is_number

    return is_number(v)


def _is_complex(X) -> bool:
    """Whether ``X`` is an array of complex numbers (numpy would drop the imaginary parts with a warning)."""
    try:
        return np.asarray(X).dtype.kind == "c"
    except (TypeError, ValueError):  # (ragged: the conversion that follows says what is wrong)
        return False


def _as_matrix(X: Any) -> tuple[np.ndarray, list[str] | None]:
    """An (N, N) float matrix (NaN = missing) and host names, from ProbeData or an array."""
    from plink.data.probefile import ProbeData

    if isinstance(X, ProbeData):
        return np.array(X.latency, dtype=float), X.names
    if _is_complex(X):  # (as HierarchicalGrouper refuses one)
        raise InputError("distance matrix must be real numbers, got a complex matrix")
    try:
        m = np.array(X, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"expected a ProbeData or an (N, N) numeric matrix, got {type(X).__name__}") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise InputError(f"expected a square (N, N) distance matrix, got shape {m.shape}")
    if np.isinf(m).any():
        raise InputError("distance matrix has infinite values (use NaN for missing pairs)")
    off = ~np.eye(m.shape[0], dtype=bool)
    if (m[off] < 0).any():
        raise InputError("distance matrix has negative values")
    zero = (m == 0) & off
    if zero.any():  # as plink's file readers and HierarchicalGrouper read a plain matrix
        import warnings

        from plink.structure.hierarchy import ZERO_IS_UNMEASURED

        warnings.warn(f"read {int(zero.sum())} off-diagonal zero(s) as not measured: {ZERO_IS_UNMEASURED}",
                      UserWarning, stacklevel=3)
        m[zero] = np.nan
    m = np.fmax(m, m.T)  # as ProbeData: the slower direction, or the measured one
    np.fill_diagonal(m, 0.0)
    return m, None


def check_measurements(m: np.ndarray, names: list[str] | None = None, *, min_coverage: float = MIN_COVERAGE,
                       min_pairs_per_host: int = 1) -> None:
    """Refuse matrices that cannot be embedded meaningfully (one-line :class:`PlinkError`).

    Too few hosts (< ``MIN_HOSTS``), a host with fewer than
    ``min_pairs_per_host`` measured pairs, coverage below ``min_coverage``,
    a measurement graph in several pieces (nothing relates one piece to the
    other), or no positive measurement.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n = m.shape[0]
    if n < MIN_HOSTS:
        raise InputError(f"{n} host(s): embedding and grouping need at least {MIN_HOSTS}")
    measured = ~np.isnan(m)
    np.fill_diagonal(measured, False)
    per_host = measured.sum(axis=1)
    need = min(min_pairs_per_host, n - 1)
    low = np.flatnonzero(per_host < need)
    if low.size:
        who = names[low[0]] if names is not None else f"host {low[0]}"
        raise InputError(
            f"{who} has {per_host[low[0]]} measured pair(s) (needs {need}; {low.size} host(s) affected): re-probe it or drop it"
        )
    pairs = n * (n - 1) // 2
    coverage = measured.sum() / 2 / pairs
    if coverage < min_coverage:
        raise InputError(
            f"only {coverage:.0%} of host pairs are measured (needs {min_coverage:.0%}): the matrix is mostly missing"
        )
    ncomp, lab = connected_components(csr_matrix(measured), directed=False)
    if ncomp > 1:
        sizes = np.bincount(lab)
        raise InputError(
            f"the measured pairs split the hosts into {ncomp} disconnected parts (sizes {sorted(sizes.tolist(), reverse=True)[:5]}): "
            "nothing relates one part to another"
        )
    if not (m[measured] > 0).any():
        raise InputError("every measured distance is 0: nothing to embed")


def _check_random_state(random_state) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state is not None and random_state < 0:
            raise OptionError(f"random_state must be >= 0 (numpy's seeds are), got {random_state}")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31 - 1))
    raise OptionError(f"random_state must be None, an int or a numpy Generator, not {type(random_state).__name__}")



def _heights(hcap, hraw):
    """Per-host startup costs from their free parameters: ``hcap * sigmoid(hraw)`` (each host's
    height stays below its cap), or None when heights are not fitted."""
    import torch

    return hcap * torch.sigmoid(hraw) if hraw is not None else None

class ProbeEmbed(Params):
    """Embed hosts so that ``d_ij^alpha + h_i + h_j`` matches the probed distance ``p_ij``.

    Parameters
    ----------
    n_components : int, default 3
        Embedding dimension.  Low on purpose: fewer dimensions denoise more.
    alpha : float in [1, 2], default 2
        Exponent on the embedded distance (§4.2.1).
    heights : bool, default True
        Fit a per-host startup cost ``0 <= h_i <= min_j p_ij / 2`` (the cost is paid on
        every path of the host, so it cannot exceed half its shortest measured distance;
        parametrised as ``cap_i * sigmoid(raw_i)``).  Without the upper bound the heights
        absorb the common part of all distances and the coordinates lose the rack structure.
    max_iter : int, default 1500
        Most Adam steps per restart.
    lr : float, default 0.05
        Initial Adam learning rate (normalised units).
    tol : float, default 1e-3
        Relative loss improvement that counts as progress.
    patience : int, default 10
        Steps without progress before the learning rate is halved.
    n_restarts : int or "auto", default "auto"
        Random initialisations; the lowest exact loss wins.  "auto": 4 up to
        ``full_batch_max_n`` hosts, 1 above (large fits are smoother and cost more).
    min_coverage : float, default 0.5
        Refuse matrices with a smaller fraction of measured pairs.
    full_batch_max_n : int, default 1536
        Up to this many hosts each step uses all measured pairs; above, the
        landmark scheme of the module docstring.
    batch_size : int, default 65536
        Pairs per refinement step above ``full_batch_max_n`` hosts.
    random_state : int, numpy Generator or None
        Seeds initialisation and pair sampling; fits are deterministic for an int on CPU.
    device : str, default "cpu"
        A torch device; "cuda" is used only when asked for and available.
    n_jobs : int or None, default 1
        torch CPU threads during the fit (restored afterwards); None keeps torch's setting.
        One thread is the default: on a shared or busy machine more threads spin and
        were measured to cost 4-6x more CPU time per step.

    Attributes
    ----------
    coordinates_ : (N, n_components) array, normalised units.  ``embedding_`` is the same array.
    heights_ : (N,) array in the input's units (zeros with ``heights=False``).
    distances_ : (N, N) array: ``scale_ * (d_ij^alpha + h_i + h_j)``, 0 on the diagonal;
        the denoised distance matrix in the input's units, defined for every pair.
    scale_ : the median measured distance the input was divided by.
    loss_ : mean squared residual over measured pairs, normalised units, best restart.
    stress_ : Kruskal stress-1, ``sqrt(sum (fit - p)^2 / sum p^2)`` over measured pairs.
    median_rel_error_ : median of ``|fit - p| / p`` over measured pairs with ``p > 0``.
    n_iter_ : Adam steps taken by the best restart.
    n_pairs_ : measured pairs used.
    stochastic_ : whether the large-N landmark scheme was used (N > ``full_batch_max_n``).
    restart_losses_ : exact loss of every restart.
    hosts_ : host names when fitted on a ProbeData, else None.
    """

    def __init__(
        self,
        n_components: int = 3,
        *,
        alpha: float = 2.0,
        heights: bool = True,
        max_iter: int = 1500,
        lr: float = 0.05,
        tol: float = 1e-3,
        patience: int = 10,
        n_restarts: int | str = "auto",
        min_coverage: float = MIN_COVERAGE,
        full_batch_max_n: int = 1536,
        batch_size: int = 65536,
        random_state=None,
        device: str = "cpu",
        n_jobs: int | None = 1,
    ) -> None:
        self.n_components = n_components
        self.alpha = alpha
        self.heights = heights
        self.max_iter = max_iter
        self.lr = lr
        self.tol = tol
        self.patience = patience
        self.n_restarts = n_restarts
        self.min_coverage = min_coverage
        self.full_batch_max_n = full_batch_max_n
        self.batch_size = batch_size
        self.random_state = random_state
        self.device = device
        self.n_jobs = n_jobs

    # -- scikit-learn plumbing ----------------------------------------------
    def get_params(self, deep: bool = True) -> dict:
        """The parameters of ``__init__`` by name, as set (``deep`` is scikit-learn's; there are no
        sub-estimators)."""
        return {k: getattr(self, k) for k in (
            "n_components", "alpha", "heights", "max_iter", "lr", "tol", "patience", "n_restarts",
            "min_coverage", "full_batch_max_n", "batch_size", "random_state", "device", "n_jobs")}


    def _validate_params(self) -> None:
        def is_int(v):
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

        if not is_int(self.n_components) or not 1 <= self.n_components <= 64:
            raise OptionError(f"n_components (dims) must be an integer in 1..64, got {self.n_components!r}")
        if not _is_number(self.alpha) or not 1.0 <= float(self.alpha) <= 2.0:
            raise OptionError(f"alpha must be between 1 and 2, got {self.alpha!r}")
        if not isinstance(self.heights, (bool, np.bool_)):  # ('no' was read as True)
            raise OptionError(f"heights must be True or False, got {self.heights!r}")
        if self.n_restarts != "auto" and (not is_int(self.n_restarts) or self.n_restarts < 1):
            raise OptionError(f"n_restarts must be a positive integer or 'auto', got {self.n_restarts!r}")
        for name in ("max_iter", "patience", "full_batch_max_n", "batch_size"):
            v = getattr(self, name)
            if not is_int(v) or v < 1:
                raise OptionError(f"{name} must be a positive integer, got {v!r}")
        for name in ("lr", "tol"):
            v = getattr(self, name)
            if not _is_number(v) or not (math.isfinite(v) and v > 0):
                raise OptionError(f"{name} must be a positive number, got {v!r}")
        if self.n_jobs is not None and (not is_int(self.n_jobs) or self.n_jobs < 1):
            raise OptionError(f"n_jobs must be a positive integer or None, got {self.n_jobs!r}")
        if not _is_number(self.min_coverage) or not 0.0 <= self.min_coverage <= 1.0:
            raise OptionError(f"min_coverage must be between 0 and 1, got {self.min_coverage!r}")

    def _torch_device(self):
        import torch

        dev = str(self.device)
        if dev.startswith("cuda"):
            if not torch.cuda.is_available():
                raise OptionError(f"device {dev!r} asked for but this torch has no CUDA GPU (use device='cpu')")
        elif dev != "cpu":
            raise OptionError(f"device must be 'cpu' or 'cuda[:i]', got {dev!r}")
        return torch.device(dev)

    # -- fitting --------------------------------------------------------------
    def fit(self, X, y=None) -> "ProbeEmbed":
        """Fit to ``X``: a :class:`~plink.data.probefile.ProbeData` or an (N, N) matrix, NaN = missing."""
        import torch

        self._validate_params()
        m, names = _as_matrix(X)
        check_measurements(m, names, min_coverage=self.min_coverage,
                           min_pairs_per_host=min(self.n_components + 1, 3))
        dev = self._torch_device()
        n = m.shape[0]
        iu, ju = np.triu_indices(n, 1)
        pv = m[iu, ju]
        keep = ~np.isnan(pv)
        iu, ju, pv = iu[keep], ju[keep], pv[keep]
        scale = float(np.median(pv))
        if scale <= 0:
            scale = float(pv[pv > 0].mean())
        q = pv / scale
        rng = _check_random_state(self.random_state)
        stochastic = n > self.full_batch_max_n
        restarts = (1 if stochastic else 4) if self.n_restarts == "auto" else int(self.n_restarts)
        seeds = rng.integers(0, 2**31 - 1, size=restarts)
        data = _Pairs(n, iu, ju, q, dev, dense=not stochastic)
        if stochastic:
            data.Q = (m / scale).astype(np.float32)
        # a startup cost is paid on every path of the host: h_i <= min_j p_ij / 2
        cap = np.full(n, np.inf)
        np.minimum.at(cap, iu, q)
        np.minimum.at(cap, ju, q)
        data.hcap = torch.as_tensor(0.5 * cap, dtype=torch.float32, device=dev)
        best = None
        losses = []
        threads = torch.get_num_threads()
        if self.n_jobs is not None and dev.type == "cpu":
            torch.set_num_threads(int(self.n_jobs))
        try:
            for seed in seeds:
                res = self._fit_once(data, int(seed), stochastic)
                losses.append(res["loss"])
                if best is None or res["loss"] < best["loss"]:
                    best = res
        finally:
            torch.set_num_threads(threads)
        v = best["v"]
        h = best["h"]
        self.scale_ = scale
        self.coordinates_ = v
        self.embedding_ = v
        self.heights_ = h * scale
        self.distances_ = _pred_matrix(v, h, float(self.alpha)) * scale
        self.loss_ = float(best["loss"])
        self.n_iter_ = int(best["n_iter"])
        self.restart_losses_ = [float(x) for x in losses]
        self.n_pairs_ = int(pv.size)
        self.stochastic_ = bool(stochastic)
        self.hosts_ = names
        fit = self.distances_[iu, ju]
        self.stress_ = float(np.sqrt(((fit - pv) ** 2).sum() / (pv**2).sum()))
        pos = pv > 0
        self.median_rel_error_ = float(np.median(np.abs(fit[pos] - pv[pos]) / pv[pos])) if pos.any() else 0.0
        self.n_features_in_ = n
        return self

    def fit_transform(self, X, y=None) -> np.ndarray:
        """Fit and return ``coordinates_``."""
        return self.fit(X).coordinates_

    def _adam(self, params, loss_fn, lr: float, smooth: bool, max_iter: int, patience: int | None = None) -> int:
        """Adam with the plateau schedule (see the module docstring); returns the steps taken."""
        import torch

        opt = torch.optim.Adam(params, lr=lr)
        best = math.inf
        since = halvings = it = 0
        ema = None
        for it in range(1, max_iter + 1):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn()
            loss.backward()
            opt.step()
            cur = float(loss.detach())
            ema = cur if (ema is None or not smooth) else 0.9 * ema + 0.1 * cur
            if ema < best * (1 - float(self.tol)):
                best = ema
                since = 0
                continue
            since += 1
            if since >= (patience or self.patience):
                halvings += 1
                if halvings > 4:
                    break
                lr *= 0.5
                for grp in opt.param_groups:
                    grp["lr"] = lr
                since = 0
                if smooth:
                    best = ema
        return it

    def _init(self, n: int, g, dev):
        import torch

        d = int(self.n_components)
        # typical d^alpha ~ 1 (the median normalised distance)
        v = (torch.randn(n, d, generator=g, dtype=torch.float32) / math.sqrt(2 * d)).to(dev).requires_grad_(True)
        hraw = torch.zeros(n, dtype=torch.float32, device=dev, requires_grad=True) if self.heights else None
        return v, hraw

    def _fit_once(self, data: "_Pairs", seed: int, stochastic: bool) -> dict:
        import torch

        dev = data.device
        g = torch.Generator(device="cpu").manual_seed(seed)
        n = data.n
        alpha = float(self.alpha)
        if not stochastic:
            v, hraw = self._init(n, g, dev)
            params = [v] + ([hraw] if hraw is not None else [])
            it = self._adam(params, lambda: data.full_loss(v, _heights(data.hcap, hraw), alpha), float(self.lr),
                            False, int(self.max_iter))
        else:
            v, hraw, it = self._fit_landmarks(data, g, alpha)

        with torch.no_grad():
            h = _heights(data.hcap, hraw)
            exact = data.exact_loss(v, h, alpha)
            v_np = v.detach().cpu().double().numpy()
            h_np = h.detach().cpu().double().numpy() if h is not None else np.zeros(n)
        return {"loss": exact, "v": v_np, "h": h_np, "n_iter": it}

    def _fit_landmarks(self, data: "_Pairs", g, alpha: float):
        """Large N: fit landmarks exactly, place the other hosts against them, refine on sampled pairs."""
        import torch

        n, dev = data.n, data.device
        n_land = min(n, max(self.full_batch_max_n // 3, 4 * int(self.n_components) + 4))
        perm = torch.randperm(n, generator=g).numpy()
        land, rest = np.sort(perm[:n_land]), np.sort(perm[n_land:])
        Q = data.Q  # (N, N) float32 numpy, NaN = missing
        hcap = data.hcap
        # 1. landmarks: the exact full-batch problem on their sub-matrix
        sub = Q[np.ix_(land, land)]
        li, lj = np.triu_indices(n_land, 1)
        ok = ~np.isnan(sub[li, lj])
        ldata = _Pairs(n_land, li[ok], lj[ok], sub[li, lj][ok], dev, dense=True)
        ldata.hcap = hcap[torch.as_tensor(land)]
        vl, hl = self._init(n_land, g, dev)
        it = self._adam([vl] + ([hl] if hl is not None else []),
                        lambda: ldata.full_loss(vl, _heights(ldata.hcap, hl), alpha),
                        float(self.lr), False, int(self.max_iter))
        # 2. every other host against the (now fixed) landmarks: one dense block
        block = Q[np.ix_(rest, land)]
        P = torch.as_tensor(np.nan_to_num(block, nan=0.0), device=dev)
        W = torch.as_tensor(~np.isnan(block), dtype=torch.float32, device=dev)
        count = max(float(W.sum()), 1.0)
        vl_fixed = vl.detach()
        hl_fixed = _heights(ldata.hcap, hl).detach() if hl is not None else None
        vr, hr = self._init(len(rest), g, dev)
        hcap_r = hcap[torch.as_tensor(rest)]
        # start each host at the landmark it is closest to
        nearest = np.nanargmin(np.where(np.isnan(block), np.inf, block), axis=1)
        with torch.no_grad():
            vr.copy_(vl_fixed[torch.as_tensor(nearest)] + 0.01 * vr)

        def block_loss():
            sq_r = (vr * vr).sum(1)
            sq_l = (vl_fixed * vl_fixed).sum(1)
            d2 = (sq_r[:, None] + sq_l[None, :] - 2.0 * (vr @ vl_fixed.T)).clamp_min(0.0)
            pred = _Pairs._powdist(d2, alpha)
            if hr is not None:
                pred = pred + _heights(hcap_r, hr)[:, None] + hl_fixed[None, :]
            r = (pred - P) * W
            return (r * r).sum() / count

        it += self._adam([vr] + ([hr] if hr is not None else []), block_loss, float(self.lr), False,
                         int(self.max_iter))
        # 3. all hosts together on sampled pairs, gently
        with torch.no_grad():
            v = torch.empty(n, vl.shape[1], dtype=torch.float32, device=dev)
            v[torch.as_tensor(land)] = vl_fixed
            v[torch.as_tensor(rest)] = vr.detach()
            hraw = None
            if self.heights:
                hraw = torch.empty(n, dtype=torch.float32, device=dev)
                hraw[torch.as_tensor(land)] = hl.detach()
                hraw[torch.as_tensor(rest)] = hr.detach()
        v.requires_grad_(True)
        if hraw is not None:
            hraw.requires_grad_(True)

        it += self._adam([v] + ([hraw] if hraw is not None else []),
                         lambda: data.batch_loss(v, _heights(hcap, hraw), alpha, int(self.batch_size), g),
                         0.25 * float(self.lr), True, max(1, int(self.max_iter) // 2),
                         patience=5 * int(self.patience))
        return v, hraw, it


class _Pairs:
    """The measured pairs in the forms the loss needs (dense masked or an index list)."""

    def __init__(self, n, iu, ju, q, device, dense: bool):
        import torch

        self.n = n
        self.device = device
        self.count = len(q)
        self.iu = torch.as_tensor(iu, dtype=torch.int64)
        self.ju = torch.as_tensor(ju, dtype=torch.int64)
        self.q = torch.as_tensor(q, dtype=torch.float32)
        self.dense = dense
        if dense:
            P = torch.zeros(n, n, dtype=torch.float32)
            W = torch.zeros(n, n, dtype=torch.float32)
            P[self.iu, self.ju] = self.q
            W[self.iu, self.ju] = 1.0
            self.P = P.to(device)
            self.W = W.to(device)  # upper triangle only: each unordered pair once
        else:
            self.iu = self.iu.to(device)
            self.ju = self.ju.to(device)
            self.q = self.q.to(device)

    @staticmethod
    def _powdist(d2, alpha):
        import torch

        if alpha == 2.0:
            return d2
        # (d2 + eps)^(alpha/2): smooth at 0 (the gradient of |x| is undefined there)
        return torch.pow(d2 + 1e-9, alpha / 2)

    def full_loss(self, v, h, alpha):
        sq = (v * v).sum(1)
        d2 = (sq[:, None] + sq[None, :] - 2.0 * (v @ v.T)).clamp_min(0.0)
        pred = self._powdist(d2, alpha)
        if h is not None:
            pred = pred + h[:, None] + h[None, :]
        r = (pred - self.P) * self.W
        return (r * r).sum() / self.count

    def _pair_loss(self, v, h, alpha, i, j, q, reduce="mean"):
        diff = v[i] - v[j]
        pred = self._powdist((diff * diff).sum(1), alpha)
        if h is not None:
            pred = pred + h[i] + h[j]
        r = pred - q
        return (r * r).mean() if reduce == "mean" else (r * r).sum()

    def batch_loss(self, v, h, alpha, batch, g):
        import torch

        idx = torch.randint(self.count, (min(batch, self.count),), generator=g).to(self.device)
        return self._pair_loss(v, h, alpha, self.iu[idx], self.ju[idx], self.q[idx])

    def exact_loss(self, v, h, alpha) -> float:
        if self.dense:
            return float(self.full_loss(v, h, alpha))
        total = 0.0
        step = 1 << 20
        for s in range(0, self.count, step):
            sl = slice(s, s + step)
            total += float(self._pair_loss(v, h, alpha, self.iu[sl], self.ju[sl], self.q[sl], reduce="sum"))
        return total / self.count


def _pred_matrix(v: np.ndarray, h: np.ndarray, alpha: float) -> np.ndarray:
    """``d_ij^alpha + h_i + h_j`` for every pair (float64), 0 on the diagonal."""
    sq = (v * v).sum(1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (v @ v.T), 0.0)
    out = d2 if alpha == 2.0 else d2 ** (alpha / 2)
    out = out + h[:, None] + h[None, :]
    np.fill_diagonal(out, 0.0)
    return out
