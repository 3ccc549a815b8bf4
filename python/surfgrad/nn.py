"""Layers and losses, written over surfgrad tensor ops (the C++ losses do the numerics).

    model = sg.nn.Sequential(sg.nn.Linear(2, 32), sg.nn.ReLU(), sg.nn.Linear(32, 2))
    loss = sg.nn.cross_entropy(model(x), y)     # y: int32 labels
"""

from __future__ import annotations

from typing import Any, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import _core
from ._core import Tensor
from ._tensor import tensor


class Module:
    """Base of layers: parameters are the Tensor attributes that require a gradient, and those
    of sub-modules, found by attribute order."""

    training: bool = True

    def forward(self, x: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, x: Any) -> Tensor:
        return self.forward(x if isinstance(x, Tensor) else tensor(x))

    def named_parameters(self, prefix: str = "") -> Iterator[Tuple[str, Tensor]]:
        for name, value in vars(self).items():
            if isinstance(value, Tensor) and value.requires_grad:
                yield prefix + name, value
            elif isinstance(value, Module):
                yield from value.named_parameters(prefix + name + ".")
            elif isinstance(value, (list, tuple)):
                for i, m in enumerate(value):
                    if isinstance(m, Module):
                        yield from m.named_parameters(f"{prefix}{i}.")

    def parameters(self) -> List[Tensor]:
        return [p for _, p in self.named_parameters()]

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = None

    def train(self, mode: bool = True) -> "Module":
        self.training = mode
        for value in vars(self).values():
            for m in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(m, Module):
                    m.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)


class Linear(Module):
    """y = x·W + b with W of shape [in, out], initialised as PyTorch does: U(−1/√in, 1/√in)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, seed: Optional[int] = None,
                 device: Optional[str] = None) -> None:
        rng = np.random.default_rng(seed)
        bound = 1.0 / np.sqrt(in_features)
        self.weight = tensor(rng.uniform(-bound, bound, (in_features, out_features)).astype(np.float32),
                             requires_grad=True, device=device)
        self.bias = (tensor(rng.uniform(-bound, bound, (out_features,)).astype(np.float32), requires_grad=True,
                            device=device) if bias else None)

    def forward(self, x: Tensor) -> Tensor:
        y = x @ self.weight
        return y + self.bias if self.bias is not None else y


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.relu()


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.tanh()


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.sigmoid()


class GELU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.gelu()


class Sequential(Module):
    def __init__(self, *layers: Module) -> None:
        self.layers = list(layers)

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)


_ACTIVATIONS = {"relu": ReLU, "tanh": Tanh, "sigmoid": Sigmoid, "gelu": GELU}


def mlp(widths: Sequence[int], activation: str = "relu", seed: Optional[int] = None,
        device: Optional[str] = None) -> Sequential:
    """Linear layers of the given widths with ``activation`` between them (none after the last)."""
    if len(widths) < 2:
        raise ValueError("mlp: give at least an input and an output width")
    if activation not in _ACTIVATIONS:
        raise ValueError(f"mlp: activation is one of {sorted(_ACTIVATIONS)}, not {activation!r}")
    seeds = np.random.SeedSequence(seed).generate_state(len(widths))
    layers: List[Module] = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(Linear(a, b, seed=int(seeds[i]), device=device))
        if i < len(widths) - 2:
            layers.append(_ACTIVATIONS[activation]())
    return Sequential(*layers)


def _as_tensor(x: Any, like: Tensor) -> Tensor:
    return x if isinstance(x, Tensor) else tensor(x, device=like.device)


def mse_loss(input: Tensor, target: Any) -> Tensor:
    """Mean of squared differences."""
    return _core.mse_loss(input, _as_tensor(target, input))


def cross_entropy(input: Tensor, target: Any) -> Tensor:
    """Softmax cross-entropy of logits [N, C] with integer labels [N] in [0, C), batch mean."""
    return _core.cross_entropy(input, _as_tensor(target, input))


def binary_cross_entropy_with_logits(input: Tensor, target: Any) -> Tensor:
    """Binary cross-entropy from logits in the stable form, batch mean."""
    return _core.bce_with_logits(input, _as_tensor(target, input))


class MSELoss:
    def __call__(self, input: Tensor, target: Any) -> Tensor:
        return mse_loss(input, target)


class CrossEntropyLoss:
    def __call__(self, input: Tensor, target: Any) -> Tensor:
        return cross_entropy(input, target)


class BCEWithLogitsLoss:
    def __call__(self, input: Tensor, target: Any) -> Tensor:
        return binary_cross_entropy_with_logits(input, target)
