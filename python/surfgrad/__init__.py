"""surfgrad: GPU tensors, autodiff and t-SNE / UMAP maps through WebGPU.

    import surfgrad as sg
    sg.device()                      # adapter, backend, features, limits
    x = sg.tensor(np.random.rand(4, 3), requires_grad=True)
    (x @ x.T).relu().sum().backward(); x.grad.numpy()
    Y = sg.TSNE(random_state=0).fit_transform(points)

Every surfgrad error derives from :class:`surfgrad.Error` and from the matching builtin
(ShapeError, DTypeError, ArgumentError, IndexOutOfRange: ValueError; OutOfMemoryError:
MemoryError; FileError: OSError; DeviceLost, Cancelled, DeviceError: RuntimeError).
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, Optional

from . import _core
from ._core import (
    ArgumentError,
    Cancelled,
    DeviceError,
    DeviceLost,
    DTypeError,
    Error,
    FileError,
    IndexOutOfRange,
    OutOfMemoryError,
    ShapeError,
    Tensor,
    cat,
    gather,
    index_add,
    index_select,
    is_grad_enabled,
    is_lazy,
    scatter_add,
    where,
)
from ._tensor import arange, from_dlpack, from_numpy, full, ones, rand, randn, tensor, zeros
from ._tensor import _adapter, _default_device
from . import nn, optim
from ._base import NotFittedError
from .manifold import TSNE, UMAP, builtin_points, map_quality
from ._map_table import map_table

__version__ = "0.1.0"


def device(name: Optional[str] = None) -> Dict[str, Any]:
    """The adapter surfgrad computes on: name, backend, type, features and limits.

    ``name`` selects an adapter by a substring of its name (e.g. "llvmpipe", "H100"); the
    context for it is created on first use and kept for the process.
    """
    return _core.device_info(_adapter(name))


def set_device(name: Optional[str]) -> None:
    """Makes the adapter whose name contains ``name`` the default for new tensors and maps."""
    _default_device[0] = "" if name is None else _adapter(name)


def synchronize(device: Optional[str] = None) -> None:
    """Waits until the GPU has finished everything recorded so far."""
    _core.sync(_adapter(device))


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Nothing computed inside is recorded for autograd (evaluation, manual updates)."""
    guard = _core._NoGrad()
    guard.__enter__()
    try:
        yield
    finally:
        guard.__exit__(None, None, None)


def set_lazy(on: bool = True) -> None:
    """Lazy mode on or off for the whole process (on by default; ``SURFGRAD_EAGER=1`` starts eager).

    In lazy mode elementwise ops (arithmetic, unary functions, ``where``, casts, scalars) only
    record; a chain of them runs as one generated GPU kernel when a value is needed: read
    (``numpy()``, ``item()``), used by another kernel (a reduction, a matrix product, whose store
    step can hold the chain: ``relu(x @ W + b)`` is one dispatch), or realised
    (:func:`realize`). Results are eager mode's bits where the fused order of operations is the
    same. Switch it between ops, not while a chain is half recorded.
    """
    _core._set_lazy(bool(on))


@contextlib.contextmanager
def lazy(on: bool = True) -> Iterator[None]:
    """Lazy mode inside the ``with`` block, the previous mode after it (see :func:`set_lazy`)."""
    before = _core.is_lazy()
    _core._set_lazy(bool(on))
    try:
        yield
    finally:
        _core._set_lazy(before)


def realize(*tensors: Tensor) -> None:
    """Runs the recorded work the tensors depend on now (lazy mode), in as few kernels as it can;
    nothing is read back. Eager tensors are already realised."""
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"realize: expected surfgrad tensors, got {type(t).__name__}")
    _core._realize(list(tensors))


def matmul(a: Tensor, b: Tensor) -> Tensor:
    return a @ b


def maximum(a: Tensor, b: Any) -> Tensor:
    return a.maximum(b)


def minimum(a: Tensor, b: Any) -> Tensor:
    return a.minimum(b)


def plot(Y: Any, labels: Any = None, ax: Any = None, s: float = 2.0, **kwargs: Any) -> Any:
    """Scatter plot of a 2-D map with matplotlib (an optional dependency), coloured by labels."""
    import matplotlib.pyplot as plt
    import numpy as np

    Y = np.asarray(Y.numpy() if isinstance(Y, Tensor) else Y)
    if Y.ndim != 2 or Y.shape[1] != 2:
        raise ShapeError(f"plot: expected points of shape [N, 2], got {list(Y.shape)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 7))
    ax.scatter(Y[:, 0], Y[:, 1], c=labels, s=s, cmap=kwargs.pop("cmap", "tab10"), linewidths=0, **kwargs)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    return ax


__all__ = [
    "ArgumentError", "Cancelled", "DTypeError", "DeviceError", "DeviceLost", "Error", "FileError", "IndexOutOfRange",
    "NotFittedError", "OutOfMemoryError", "ShapeError", "TSNE", "Tensor", "UMAP", "arange", "builtin_points", "cat", "device", "from_dlpack",
    "from_numpy", "full", "gather", "index_add", "index_select", "is_grad_enabled", "is_lazy", "lazy", "map_quality", "map_table", "matmul", "maximum", "minimum", "nn",
    "no_grad", "ones", "optim", "plot", "rand", "randn", "realize", "scatter_add", "set_device", "set_lazy", "synchronize", "tensor", "where", "zeros",
]
