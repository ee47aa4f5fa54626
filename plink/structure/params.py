"""What the structure estimators share, as in scikit-learn: ``set_params`` and a ``repr`` over the
hyper-parameters each one's ``get_params`` names (set in ``__init__``, checked in ``fit``)."""

from __future__ import annotations

from plink.errors import OptionError, PlinkError


class Params:
    """``set_params(**params)`` (an unknown name is a :class:`PlinkError`) and ``repr`` over
    ``get_params()``, which the estimator defines."""

    def get_params(self, deep: bool = True) -> dict:  # pragma: no cover - every estimator has its own
        raise NotImplementedError

    def set_params(self, **params):
        valid = self.get_params()
        for k, v in params.items():
            if k not in valid:
                raise OptionError(f"{type(self).__name__} has no parameter {k!r}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_params().items())})"
