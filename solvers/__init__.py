"""Optimisation over rank orders: collective cost models and solvers.

Pure functions over plain numpy data; nothing here imports ``plink``.
"""

from .costmodels import ALGORITHMS, CostModel, PairCost  # noqa: F401
from .solve import SolveResult, minimise  # noqa: F401

__all__ = ["ALGORITHMS", "CostModel", "PairCost", "SolveResult", "minimise"]
