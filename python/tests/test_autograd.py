"""Gradients from Python against float64 central finite differences of the same function."""

import zlib

import numpy as np
import pytest

import surfgrad as sg


def finite_difference(f, x, eps=1e-3):
    g = np.zeros_like(x, dtype=np.float64)
    for i in np.ndindex(x.shape):
        xp, xm = x.astype(np.float64), x.astype(np.float64)
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def check(sg_fn, np_fn, *arrays, rtol=2e-2, atol=2e-3):
    tensors = [sg.tensor(a, requires_grad=True) for a in arrays]
    sg_fn(*tensors).backward()
    for k, (t, a) in enumerate(zip(tensors, arrays)):
        def f(x, k=k):
            args = list(arrays)
            args[k] = x
            return float(np_fn(*args))
        np.testing.assert_allclose(t.grad.numpy(), finite_difference(f, a), rtol=rtol, atol=atol)


CASES = {
    "mul_sum": (lambda a, b: (a * b).sum(), lambda a, b: (a * b).sum(), [(3, 4), (1, 4)]),
    "matmul_tanh": (lambda a, b: (a @ b).tanh().mean(), lambda a, b: np.tanh(a @ b).mean(), [(3, 5), (5, 2)]),
    "div_exp": (lambda a, b: (a.exp() / (b * b + 1)).sum(), lambda a, b: (np.exp(a) / (b * b + 1)).sum(),
                [(2, 3), (2, 3)]),
    "sigmoid_max": (lambda a: a.sigmoid().max(dim=1).values.sum(), lambda a: (1 / (1 + np.exp(-a))).max(axis=1).sum(),
                    [(4, 5)]),
    "softmax": (lambda a: (a.softmax(dim=-1) * sg.arange(6).reshape(1, 6)).sum(),
                lambda a: (np.exp(a) / np.exp(a).sum(-1, keepdims=True) * np.arange(6)).sum(), [(3, 6)]),
    "relu_keepdim": (lambda a: (a.relu().sum(dim=0, keepdim=True) ** 2).sum(),
                     lambda a: (np.maximum(a, 0).sum(0, keepdims=True) ** 2).sum(), [(5, 3)]),
    "views": (lambda a: (a.T[1:, :] * a.reshape(3, 4).T[1:]).sum(), lambda a: (a.T[1:] * a.reshape(3, 4).T[1:]).sum(),
              [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name):
    sg_fn, np_fn, shapes = CASES[name]
    # A fixed seed per case (str hashes change per process); max's finite differences need its
    # row maxima apart by more than the step, which these seeds give.
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    # Away from relu's kink at 0 so the finite differences are smooth there.
    arrays = [(rng.uniform(0.2, 1.5, s) * rng.choice([-1, 1], s)).astype(np.float32) for s in shapes]
    check(sg_fn, np_fn, *arrays)


def test_gradients_accumulate_and_reset():
    x = sg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4, 6, 8])
    x.grad = None
    assert x.grad is None


def test_no_grad_and_detach():
    x = sg.tensor([1.0, 2.0], requires_grad=True)
    with sg.no_grad():
        y = x * 3
        assert not sg.is_grad_enabled()
    assert sg.is_grad_enabled()
    assert not y.requires_grad
    assert not x.detach().requires_grad
    with pytest.raises(sg.Error):
        y.sum().backward()


def test_requires_grad_rules():
    x = sg.tensor([1.0, 2.0]).requires_grad_()
    assert x.requires_grad and x.is_leaf
    y = x * 2
    with pytest.raises(sg.ArgumentError):
        y.requires_grad = False
    with pytest.raises(sg.DTypeError):
        sg.tensor([1, 2], requires_grad=True)
