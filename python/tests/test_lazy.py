"""Lazy mode from Python (issue 36): sg.set_lazy / sg.lazy() / sg.realize over the library's lazy
graph. The same numbers as eager mode (bit for bit where the fused order is eager's), fewer
kernels, and the mode restored after the ``with`` block."""

import numpy as np
import pytest

import surfgrad as sg
from test_training import two_moons


@pytest.fixture(autouse=True)
def eager_after():
    before = sg.is_lazy()
    yield
    sg.set_lazy(before)


def chain(x):
    # 20 elementwise ops, each reading the one before: one kernel in lazy mode, 20 eagerly.
    y = x
    for _ in range(5):
        y = ((y * 1.0001 + 0.5).tanh() - 0.25).relu()
    return y


def chain_f64(x):
    y = x.astype(np.float64)
    for _ in range(5):
        y = np.maximum(np.tanh(y * 1.0001 + 0.5) - 0.25, 0)
    return y


def dispatches(make):
    sg.synchronize()  # submits: the count starts from 0
    out = make()
    before = sg._core._pending_dispatches()
    sg.realize(out)
    return out, before, sg._core._pending_dispatches()


def test_chain_is_one_kernel_and_eager_bits():
    X = np.random.default_rng(3).normal(size=(257, 33)).astype(np.float32)
    x = sg.tensor(X)
    sg.set_lazy(False)
    y, _, eager_count = dispatches(lambda: chain(x))
    eager = y.numpy()
    assert eager_count >= 20  # a kernel an op at least (scalar operands are filled eagerly)
    with sg.lazy():
        assert sg.is_lazy()
        y, recorded, lazy_count = dispatches(lambda: chain(x))
        assert (recorded, lazy_count) == (0, 1)  # nothing ran until realize, then one kernel
        lazy = y.numpy()
    assert not sg.is_lazy()
    np.testing.assert_array_equal(lazy, eager)
    np.testing.assert_allclose(lazy, chain_f64(X), rtol=1e-5, atol=1e-6)  # float32 rounding of float64


def test_training_step_losses_equal_eager():
    X, y = two_moons(n=256)

    def losses(lazy):
        sg.set_lazy(lazy)
        model = sg.nn.mlp([2, 32, 32, 2], seed=0)
        opt = sg.optim.Adam(model.parameters(), lr=0.01)
        x, labels = sg.tensor(X), sg.tensor(y)
        out = []
        for _ in range(5):
            loss = sg.nn.cross_entropy(model(x), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
        return np.array(out)

    eager, lazy = losses(False), losses(True)
    assert eager[-1] < eager[0]
    np.testing.assert_allclose(lazy, eager, rtol=1e-5, atol=1e-6)


def test_gradients_through_lazy_ops_match_eager():
    X = np.random.default_rng(4).normal(size=(16, 8)).astype(np.float32)

    def grad(lazy):
        sg.set_lazy(lazy)
        x = sg.tensor(X, requires_grad=True)
        (x.tanh() * x + (x * 0.5).relu()).sum().backward()
        return x.grad.numpy()

    np.testing.assert_allclose(grad(True), grad(False), rtol=1e-6, atol=1e-7)
    t = np.tanh(X.astype(np.float64))
    want = (1 - t * t) * X + t + 0.5 * (X > 0)
    np.testing.assert_allclose(grad(True), want, rtol=1e-5, atol=1e-5)


def test_lazy_mode_is_restored_after_an_error():
    sg.set_lazy(False)
    with pytest.raises(sg.ShapeError):
        with sg.lazy():
            sg.ones(3) + sg.ones(4)
    assert not sg.is_lazy()


def test_realize_refuses_what_is_not_a_tensor():
    with pytest.raises(TypeError, match="realize: expected surfgrad tensors, got ndarray"):
        sg.realize(np.ones(3))
