"""Optimizers: each step updates every parameter with one fused GPU kernel (the C++ ones)."""

from __future__ import annotations

from typing import Iterable, Tuple

from . import _core
from ._core import Tensor


def _params(params: Iterable[Tensor]) -> list:
    params = list(params)
    if not params:
        raise ValueError("optimizer got an empty parameter list")
    for p in params:
        if not isinstance(p, Tensor) or not p.requires_grad:
            raise ValueError("optimizer parameters must be tensors with requires_grad=True")
    return params


class SGD(_core.SGD):
    """p ← p − lr·d with d = g + weight_decay·p; with momentum μ: b ← μ·b + d, d = b (Nesterov: d + μ·b)."""

    def __init__(self, params: Iterable[Tensor], lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        super().__init__(_params(params), lr, momentum, weight_decay, nesterov)


class Adam(_core.Adam):
    """Adam with bias correction (Kingma & Ba); weight decay added to the gradient (L2)."""

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        super().__init__(_params(params), lr, betas[0], betas[1], eps, weight_decay, False)


class AdamW(_core.Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter)."""

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01) -> None:
        super().__init__(_params(params), lr, betas[0], betas[1], eps, weight_decay, True)
