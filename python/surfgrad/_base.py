"""scikit-learn's BaseEstimator when scikit-learn is installed, else a small compatible base
(get_params / set_params from the constructor's signature, so sklearn.base.clone works too)."""

from __future__ import annotations

import inspect
from typing import Any, Dict

try:  # pragma: no cover - depends on the environment
    from sklearn.base import BaseEstimator, TransformerMixin  # type: ignore

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover
    HAVE_SKLEARN = False

    class BaseEstimator:  # type: ignore[no-redef]
        @classmethod
        def _get_param_names(cls) -> list:
            signature = inspect.signature(cls.__init__)
            return sorted(p.name for p in signature.parameters.values()
                          if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

        def get_params(self, deep: bool = True) -> Dict[str, Any]:
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params: Any) -> "BaseEstimator":
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"Invalid parameter {key!r} for estimator {type(self).__name__}; "
                                     f"valid parameters are {valid}")
                setattr(self, key, value)
            return self

        def __repr__(self) -> str:
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class TransformerMixin:  # type: ignore[no-redef]
        pass


if HAVE_SKLEARN:  # pragma: no cover - depends on the environment
    from sklearn.exceptions import NotFittedError as _SklearnNotFitted

    class NotFittedError(_SklearnNotFitted):  # type: ignore[misc]
        """A fitted attribute read before fit (scikit-learn's NotFittedError: a ValueError and an
        AttributeError)."""
else:  # pragma: no cover

    class NotFittedError(ValueError, AttributeError):  # type: ignore[no-redef]
        """A fitted attribute read before fit (a ValueError and an AttributeError, as
        scikit-learn's NotFittedError)."""
