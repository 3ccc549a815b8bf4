"""The two-moons MLP, as in the README: a training loop in a few lines reaches ≥ 97% accuracy."""

import numpy as np
import pytest

import surfgrad as sg


def two_moons(n=400, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, n)
    upper = rng.random(n) < 0.5
    x = np.where(upper[:, None], np.c_[np.cos(t), np.sin(t)], np.c_[1 - np.cos(t), 0.5 - np.sin(t)])
    return (x + rng.normal(scale=noise, size=x.shape)).astype(np.float32), upper.astype(np.int32)


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_two_moons_mlp(optimizer):
    X, y = two_moons()
    model = sg.nn.mlp([2, 32, 32, 2], seed=0)
    if optimizer == "adam":
        opt = sg.optim.Adam(model.parameters(), lr=0.01)
    else:
        opt = sg.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    x, labels = sg.tensor(X), sg.tensor(y)
    for _ in range(300):
        loss = sg.nn.cross_entropy(model(x), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with sg.no_grad():
        accuracy = (model(x).argmax(dim=1).numpy() == y).mean()
    assert loss.item() < 0.2
    assert accuracy >= 0.97


def test_module_parameters_and_losses():
    model = sg.nn.Sequential(sg.nn.Linear(3, 4, seed=1), sg.nn.Tanh(), sg.nn.Linear(4, 1, seed=2))
    assert [tuple(p.shape) for p in model.parameters()] == [(3, 4), (4,), (4, 1), (1,)]
    x = np.ones((5, 3), np.float32)
    out = model(x)
    assert out.shape == (5, 1)
    mse = sg.nn.mse_loss(out, np.zeros((5, 1), np.float32))
    np.testing.assert_allclose(mse.item(), (out.numpy() ** 2).mean(), rtol=1e-5)
    bce = sg.nn.binary_cross_entropy_with_logits(out, np.ones((5, 1), np.float32))
    np.testing.assert_allclose(bce.item(), np.log1p(np.exp(-out.numpy())).mean(), rtol=1e-4)
    with pytest.raises(ValueError):
        sg.optim.SGD([], lr=0.1)
