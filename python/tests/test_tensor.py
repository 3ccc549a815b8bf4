"""Host round trips, ops against numpy, views and indexing."""

import numpy as np
import pytest

import surfgrad as sg


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5), (2, 3, 4), (1, 1, 2, 1, 3)])
def test_round_trip_kept_dtypes(dtype, shape, rng):
    a = (rng.uniform(-100, 100, size=shape) if dtype != np.uint32 else rng.uniform(0, 100, size=shape)).astype(dtype)
    t = sg.tensor(a)
    assert t.shape == shape and t.dtype == np.dtype(dtype)
    out = t.numpy()
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, a)


def test_round_trip_float16():
    if not sg.device()["features"]["shader_f16"]:
        pytest.skip("adapter without shader-f16")
    a = np.linspace(-3, 3, 11).astype(np.float16)
    np.testing.assert_array_equal(sg.tensor(a).numpy(), a)


def test_converted_dtypes(rng):
    a64 = rng.normal(size=(4, 3))
    t = sg.tensor(a64)
    assert t.dtype == np.float32
    np.testing.assert_allclose(t.numpy(), a64.astype(np.float32))
    i64 = np.arange(10, dtype=np.int64) - 5
    assert sg.tensor(i64).dtype == np.int32
    np.testing.assert_array_equal(sg.tensor(i64).numpy(), i64)
    assert sg.tensor([[1.5, 2.0]]).shape == (1, 2)
    assert sg.tensor(3.0).item() == 3.0
    assert sg.tensor(np.arange(4), dtype=np.float32).dtype == np.float32


def test_non_contiguous_inputs_are_copied(rng):
    a = rng.normal(size=(6, 8)).astype(np.float32)
    for view in (a.T, a[::2, 1::3], a[:, ::-1], np.asfortranarray(a)):
        np.testing.assert_array_equal(sg.tensor(view).numpy(), view)


def test_dlpack_and_array_protocol(rng):
    a = rng.normal(size=(3, 4)).astype(np.float32)
    t = sg.from_dlpack(a)
    np.testing.assert_array_equal(np.from_dlpack(t), a)
    np.testing.assert_array_equal(np.asarray(t), a)


UNARY = {
    "neg": np.negative, "exp": np.exp, "tanh": np.tanh, "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "abs": np.abs, "sin": np.sin, "cos": np.cos,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_match_numpy(name, rng):
    a = rng.normal(size=(5, 7)).astype(np.float32)
    np.testing.assert_allclose(getattr(sg.tensor(a), name)().numpy(), UNARY[name](a), rtol=1e-5, atol=1e-5)


def test_positive_domain_ops(rng):
    a = rng.uniform(0.1, 4, size=(9,)).astype(np.float32)
    t = sg.tensor(a)
    np.testing.assert_allclose(t.log().numpy(), np.log(a), rtol=1e-5)
    np.testing.assert_allclose(t.sqrt().numpy(), np.sqrt(a), rtol=1e-5)
    np.testing.assert_allclose((t ** 1.5).numpy(), a**1.5, rtol=1e-5)


def test_binary_ops_broadcast(rng):
    a = rng.normal(size=(4, 1, 3)).astype(np.float32)
    b = rng.uniform(0.5, 2, size=(5, 1)).astype(np.float32)
    ta, tb = sg.tensor(a), sg.tensor(b)
    for got, want in [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta / tb, a / b),
                      (ta + 2, a + 2), (2 - ta, 2 - a), (ta * 0.5, a * 0.5), (1 / tb, 1 / b),
                      (ta + b, a + b), (b * ta, b * a), (ta.maximum(tb), np.maximum(a, b))]:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal((ta > tb).numpy(), (a > b).astype(np.uint32))


def test_reductions_match_numpy(rng):
    a = rng.normal(size=(3, 4, 5)).astype(np.float32)
    t = sg.tensor(a)
    for dim in (None, 0, 1, 2, (0, 2), -1):
        for keepdim in (False, True):
            np_dim = dim
            kw = dict(axis=np_dim, keepdims=keepdim)
            np.testing.assert_allclose(t.sum(dim=dim, keepdim=keepdim).numpy(), a.sum(**kw), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(t.mean(dim=dim, keepdim=keepdim).numpy(), a.mean(**kw), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(t.amax(dim=dim, keepdim=keepdim).numpy(), a.max(**kw))
            np.testing.assert_allclose(t.amin(dim=dim, keepdim=keepdim).numpy(), a.min(**kw))
    np.testing.assert_array_equal(t.argmax(dim=1).numpy(), a.argmax(axis=1))
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(t.softmax(dim=-1).numpy(), e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_max_min_as_pytorch(rng):
    # max(dim)/min(dim): (values, indices) with the first index of ties; max(): a value;
    # max(tensor): the elementwise maximum; values carry the gradient to the chosen entries.
    a = rng.normal(size=(4, 6)).astype(np.float32)
    a[2, 1] = a[2, 4] = a[2].max() + 1  # a tie: the first index wins
    t = sg.tensor(a, requires_grad=True)
    for name, np_fn, np_arg in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                values, indices = getattr(t, name)(dim, keepdim=keepdim)
                np.testing.assert_array_equal(values.numpy(), np_fn(a, axis=dim, keepdims=keepdim))
                want = np_arg(a, axis=dim)
                np.testing.assert_array_equal(indices.numpy(), np.expand_dims(want, dim) if keepdim else want)
                assert indices.dtype == np.int32
        r = getattr(t, name)(dim=1)
        assert r.values is r[0] and r.indices is r[1]
        assert float(getattr(t, name)()) == np_fn(a)
    np.testing.assert_array_equal(t.max(1).indices.numpy()[2], 1)
    b = rng.normal(size=(4, 6)).astype(np.float32)
    np.testing.assert_array_equal(t.max(sg.tensor(b)).numpy(), np.maximum(a, b))
    np.testing.assert_array_equal(t.min(sg.tensor(b)).numpy(), np.minimum(a, b))
    t.max(dim=1).values.sum().backward()
    want = np.zeros_like(a)
    want[np.arange(4), a.argmax(1)] = 1
    np.testing.assert_array_equal(t.grad.numpy(), want)
    for bad in ((0, 1), 1.5, "x"):
        with pytest.raises(ValueError, match="dim must be an int"):
            t.max(bad)
    with pytest.raises(ValueError, match="keepdim needs a dim"):
        t.min(keepdim=True)


def test_scatter_add_index_add_clone(rng):
    x = rng.normal(size=(5, 3)).astype(np.float32)
    src = rng.normal(size=(4, 3)).astype(np.float32)
    rows = np.array([4, 0, 4, 2], dtype=np.int32)
    want = x.copy()
    np.add.at(want, rows, src)
    tx, ts = sg.tensor(x, requires_grad=True), sg.tensor(src, requires_grad=True)
    out = sg.index_add(tx, 0, sg.tensor(rows), ts)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(tx.index_add(0, sg.tensor(rows), ts).numpy(), want, rtol=1e-6, atol=1e-6)
    (out * sg.tensor(np.arange(15, dtype=np.float32).reshape(5, 3))).sum().backward()
    np.testing.assert_array_equal(ts.grad.numpy(), np.arange(15).reshape(5, 3)[rows])
    index = rng.integers(0, 5, size=(4, 3)).astype(np.int32)
    want = x.copy()
    for i, j in np.ndindex(index.shape):
        want[index[i, j], j] += src[i, j]
    np.testing.assert_allclose(sg.scatter_add(sg.tensor(x), 0, sg.tensor(index), sg.tensor(src)).numpy(), want,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sg.tensor(x).scatter_add(0, sg.tensor(index), sg.tensor(src)).numpy(), want,
                               rtol=1e-6, atol=1e-6)
    c = sg.tensor(x, requires_grad=True)
    copy = c.clone()
    assert not np.shares_memory(copy.numpy(), c.numpy())
    np.testing.assert_array_equal(copy.numpy(), x)
    (copy * 3).sum().backward()
    np.testing.assert_array_equal(c.grad.numpy(), np.full_like(x, 3))
    np.testing.assert_array_equal(sg.tensor(x).T.clone().numpy(), x.T)


def test_matmul_and_shapes(rng):
    a = rng.normal(size=(2, 5, 7)).astype(np.float32)
    b = rng.normal(size=(7, 3)).astype(np.float32)
    np.testing.assert_allclose((sg.tensor(a) @ sg.tensor(b)).numpy(), a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(sg.tensor(a).matmul(sg.tensor(b)).numpy(), a @ b, rtol=1e-4, atol=1e-4)
    t = sg.tensor(a)
    np.testing.assert_array_equal(t.reshape(10, 7).numpy(), a.reshape(10, 7))
    np.testing.assert_array_equal(t.reshape((-1,)).numpy(), a.reshape(-1))
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(t.permute(1, 2, 0).numpy(), a.transpose(1, 2, 0))
    np.testing.assert_array_equal(t.unsqueeze(1).numpy(), a[:, None])
    np.testing.assert_array_equal(sg.tensor(b).T.numpy(), b.T)


def test_indexing(rng):
    a = rng.normal(size=(4, 5, 6)).astype(np.float32)
    t = sg.tensor(a)
    for key in [1, -1, (slice(1, 3),), (2, slice(None, None, 2)), (Ellipsis, 3), (None, 0), (slice(None), 4, slice(1, 5))]:
        np.testing.assert_array_equal(t[key].numpy(), a[key])
    with pytest.raises(IndexError):
        t[7]


def test_creation_and_cat():
    np.testing.assert_array_equal(sg.zeros(2, 3).numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(sg.ones((4,), dtype="int32").numpy(), np.ones(4, np.int32))
    np.testing.assert_array_equal(sg.arange(5).numpy(), np.arange(5, dtype=np.float32))
    r = sg.rand(1000, seed=3).numpy()
    assert 0 <= r.min() and r.max() < 1 and abs(r.mean() - 0.5) < 0.05
    np.testing.assert_array_equal(sg.rand(10, seed=3).numpy(), sg.rand(10, seed=3).numpy())
    c = sg.cat([sg.ones(2, 2), sg.zeros(1, 2)], dim=0)
    assert c.shape == (3, 2)


def test_device_info():
    info = sg.device()
    assert info["adapter"] and info["backend"]
    assert info["limits"]["max_storage_buffer_binding_size"] > 0
    assert isinstance(info["features"]["device_features"], list)
    assert "requires_grad" not in repr(sg.ones(2)) and "tensor(" in repr(sg.ones(2))
