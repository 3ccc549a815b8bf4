"""Host data in and out of surfgrad tensors, and the Tensor methods written in Python."""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from . import _core
from ._core import ArgumentError, DTypeError, ShapeError, Tensor

# numpy dtypes a tensor keeps as they are, and those converted on the way in.
_KEPT = {np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int32), np.dtype(np.uint32)}
_TO_F32 = {np.dtype(np.float64)}
# Wider integers become int32 when every value fits (Python ints arrive as int64).
_TO_I32 = {np.dtype(np.int64), np.dtype(np.int16), np.dtype(np.int8), np.dtype(np.uint16), np.dtype(np.uint8)}
_MAX_RANK = 8


def _adapter(device: Optional[str]) -> str:
    if device is None:
        return _default_device[0]
    if not isinstance(device, str):
        raise TypeError(f"device must be an adapter name substring or None, not {type(device).__name__}")
    return device


# The adapter substring that tensors use when no device= is given (set by set_device).
_default_device = [""]


def _host_array(data: Any, dtype: Any = None) -> np.ndarray:
    """A C-contiguous numpy array of a dtype surfgrad holds, or a DTypeError / ShapeError."""
    if isinstance(data, Tensor):
        data = data.numpy()
    if dtype is not None:
        dtype = np.dtype(dtype)
        if dtype not in _KEPT:
            raise DTypeError(f"tensor: dtype {dtype} is not one of float32, float16, int32, uint32")
    try:
        array = np.asarray(data)
    except (ValueError, TypeError) as e:  # ragged nested lists, unconvertible objects
        raise DTypeError(f"tensor: cannot convert {type(data).__name__} to an array: {e}") from None
    kind = array.dtype
    if dtype is not None:
        if kind.kind in "OcVSUMmb":
            raise DTypeError(f"tensor: {kind} data cannot become {dtype}")
        array = array.astype(dtype)
    elif kind in _TO_F32:
        array = array.astype(np.float32)
    elif kind in _TO_I32:
        if array.size and (array.min() < np.iinfo(np.int32).min or array.max() > np.iinfo(np.int32).max):
            raise DTypeError(f"tensor: {kind} values outside the int32 range (surfgrad has int32 and uint32)")
        array = array.astype(np.int32)
    elif kind not in _KEPT:
        raise DTypeError(
            f"tensor: numpy dtype {kind} is not supported (surfgrad holds float32, float16, int32, uint32; "
            "float64 becomes float32 and int64 int32); convert it first, e.g. a.astype(np.float32)"
        )
    if array.ndim > _MAX_RANK:
        raise ShapeError(f"tensor: rank {array.ndim} exceeds the maximum of {_MAX_RANK}")
    # Strided, Fortran-ordered or negative-stride views are copied into C order here.
    # (np.ascontiguousarray would turn a 0-d array into 1-d.)
    return array if array.flags.c_contiguous else array.copy(order="C")


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False, device: Optional[str] = None) -> Tensor:
    """A GPU tensor holding a copy of ``data`` (numpy array, nested lists, number, or Tensor).

    float64 becomes float32 and int64 int32 (when the values fit); float32, float16, int32 and
    uint32 are kept. bool, complex, object and string data raise :class:`surfgrad.DTypeError`
    (a ``ValueError``). ``device`` picks an adapter by a substring of its name.
    """
    return _core.from_array(_host_array(data, dtype), _adapter(device), bool(requires_grad))


def from_numpy(array: np.ndarray, requires_grad: bool = False, device: Optional[str] = None) -> Tensor:
    """Same as :func:`tensor` (always copies: the data moves to the GPU)."""
    return tensor(array, requires_grad=requires_grad, device=device)


def from_dlpack(obj: Any, device: Optional[str] = None) -> Tensor:
    """A tensor from any host (CPU) object that speaks DLPack, through numpy."""
    return tensor(np.from_dlpack(obj), device=device)


# ---- Tensor methods that are easier in Python ----------------------------------------------


def _numpy(self: Tensor) -> np.ndarray:
    """A host copy as a numpy array (waits for the GPU)."""
    out = np.empty(self.shape, dtype=np.dtype(self._dtype_name))
    self._copy_to(out)
    return out


def _array(self: Tensor, dtype: Any = None, copy: Any = None) -> np.ndarray:
    a = self.numpy()
    return a if dtype is None else a.astype(dtype)


def _item(self: Tensor) -> numbers.Number:
    if self.numel() != 1:
        raise ShapeError(f"item: the tensor has {self.numel()} elements, not 1")
    return self.numpy().reshape(()).item()


def _repr(self: Tensor) -> str:
    grad = ", requires_grad=True" if self.requires_grad else ""
    body = np.array2string(self.numpy(), separator=", ", threshold=64, edgeitems=3, prefix="tensor(")
    return f"tensor({body}, dtype={self._dtype_name}{grad})"


def _getitem(self: Tensor, key: Any) -> Tensor:
    """Basic indexing: ints, slices with positive steps, ``...`` and ``None``."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = self.ndim - (len(key) - 1 - sum(k is None for k in key))
        key = key[:i] + (slice(None),) * max(fill, 0) + key[i + 1 :]
    if len(key) - sum(k is None for k in key) > self.ndim:
        raise ShapeError(f"index: too many indices for a tensor of rank {self.ndim}")
    out, axis, squeeze = self, 0, []
    for k in key:
        if k is None:
            out = out.unsqueeze(axis)
            axis += 1
        elif isinstance(k, slice):
            start, stop, step = k.indices(out.shape[axis])
            if step <= 0:
                raise ShapeError("index: slices with a negative step are not supported")
            stop = max(stop, start)
            out = out._slice(axis, start, stop, step)
            axis += 1
        elif isinstance(k, (numbers.Integral, np.integer)):
            size = out.shape[axis]
            i = int(k) + size if k < 0 else int(k)
            if not 0 <= i < size:
                raise IndexError(f"index {int(k)} is out of bounds for axis {axis} with size {size}")
            out = out._slice(axis, i, i + 1, 1)
            squeeze.append(axis)
            axis += 1
        else:
            raise TypeError(f"index: {type(k).__name__} indices are not supported (ints, slices, ..., None)")
    for a in reversed(squeeze):
        out = out.squeeze(a)
    return out


def _dtype(self: Tensor) -> np.dtype:
    return np.dtype(self._dtype_name)


def _requires_grad_(self: Tensor, requires_grad: bool = True) -> Tensor:
    self.requires_grad = requires_grad
    return self


def _bool(self: Tensor) -> bool:
    # As numpy and PyTorch: a one-element tensor is its value's truth (one value read back);
    # any other is ambiguous. Without this, bool() fell back to len(): an error for 0-d tensors
    # and True for every non-empty one, whatever its value.
    n = self.numel()
    if n != 1:
        raise ValueError(f"The truth value of a tensor with {n} elements is ambiguous; reduce it first "
                         "(e.g. (t > 0).sum() > 0, or t.max())")
    return bool(_item(self))


def _dlpack(self: Tensor, **kwargs: Any) -> Any:
    # Host export: the data is copied off the GPU first.
    return self.numpy().__dlpack__(**kwargs)


Tensor.numpy = _numpy
Tensor.__array__ = _array
Tensor.__array_priority__ = 1000  # numpy defers to Tensor's reflected operators
Tensor.item = _item
Tensor.tolist = lambda self: self.numpy().tolist()
Tensor.__float__ = lambda self: float(_item(self))
Tensor.__int__ = lambda self: int(_item(self))
Tensor.__bool__ = _bool
Tensor.__repr__ = _repr
Tensor.__getitem__ = _getitem
Tensor.dtype = property(_dtype)
Tensor.requires_grad_ = _requires_grad_
Tensor.__dlpack__ = _dlpack
Tensor.__dlpack_device__ = lambda self: (1, 0)  # kDLCPU: what __dlpack__ hands out
Tensor.size = lambda self, dim=None: self.shape if dim is None else self.shape[dim]


class _ValuesIndices(NamedTuple):
    """What ``max(dim)`` / ``min(dim)`` return, as PyTorch's ``torch.return_types.max``."""

    values: Tensor
    indices: Tensor


def _extremum(name: str, reduce: Any, arg: Any, elementwise: str) -> Any:
    def extremum(self: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
        if isinstance(dim, Tensor):  # torch.max(a, b): the elementwise maximum
            return getattr(self, elementwise)(dim)
        if dim is None:
            if keepdim:
                raise ArgumentError(f"{name}: keepdim needs a dim")
            return reduce(self)
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise ArgumentError(f"{name}: dim must be an int (a{name} reduces over several dims), got {dim!r}")
        # The values are gathered at the indices, so that (as in PyTorch) the gradient goes to the
        # returned index only; amax/amin split it evenly between ties.
        indices = arg(self, int(dim), True)
        values = _core.gather(self, int(dim), indices)
        if not keepdim:
            values, indices = values.squeeze(int(dim)), indices.squeeze(int(dim))
        return _ValuesIndices(values, indices)

    extremum.__name__ = name
    extremum.__doc__ = (f"PyTorch's {name}: over all entries (no dim), (values, indices) along an int dim "
                        f"(indices int32, the first {name}imum; values carry the gradient), or the elementwise "
                        f"{elementwise} with a tensor.")
    return extremum


Tensor.max = _extremum("max", Tensor.amax, Tensor.argmax, "maximum")
Tensor.min = _extremum("min", Tensor.amin, Tensor.argmin, "minimum")
# A differentiable fresh copy (recorded as a multiplication by one: the library's clone is not an autograd op).
Tensor.clone = lambda self: self.contiguous() if not self.is_contiguous() else self * 1


def _shape(shape: Sequence[Any]) -> list:
    if len(shape) == 1 and not isinstance(shape[0], (numbers.Integral, np.integer)):
        shape = tuple(shape[0])
    return [int(s) for s in shape]


def zeros(*shape: Any, dtype: str = "float32", requires_grad: bool = False, device: Optional[str] = None) -> Tensor:
    return _core.full(_shape(shape), 0.0, np.dtype(dtype).name, _adapter(device), requires_grad)


def ones(*shape: Any, dtype: str = "float32", requires_grad: bool = False, device: Optional[str] = None) -> Tensor:
    return _core.full(_shape(shape), 1.0, np.dtype(dtype).name, _adapter(device), requires_grad)


def full(shape: Sequence[int], value: float, dtype: str = "float32", requires_grad: bool = False,
         device: Optional[str] = None) -> Tensor:
    return _core.full(_shape([shape]), float(value), np.dtype(dtype).name, _adapter(device), requires_grad)


def arange(start: float, stop: Optional[float] = None, step: float = 1, dtype: str = "float32",
           device: Optional[str] = None) -> Tensor:
    if stop is None:
        start, stop = 0, start
    return _core.arange(float(start), float(stop), float(step), np.dtype(dtype).name, _adapter(device))


def rand(*shape: Any, seed: int = 0, requires_grad: bool = False, device: Optional[str] = None) -> Tensor:
    """U(0, 1) from the counter-based generator: the same seed gives the same numbers everywhere."""
    return _core.uniform(_shape(shape), int(seed), 0.0, 1.0, _adapter(device), requires_grad)


def randn(*shape: Any, seed: int = 0, requires_grad: bool = False, device: Optional[str] = None) -> Tensor:
    """N(0, 1) from the counter-based generator."""
    return _core.normal(_shape(shape), int(seed), 0.0, 1.0, _adapter(device), requires_grad)
