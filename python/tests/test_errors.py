"""Bad input: every case ends in the documented exception, never a crash."""

import numpy as np
import pytest

import surfgrad as sg


def test_exception_hierarchy():
    for cls, builtin in [(sg.ShapeError, ValueError), (sg.DTypeError, ValueError), (sg.ArgumentError, ValueError),
                         (sg.IndexOutOfRange, ValueError), (sg.OutOfMemoryError, MemoryError),
                         (sg.FileError, OSError), (sg.DeviceLost, RuntimeError), (sg.DeviceError, RuntimeError)]:
        assert issubclass(cls, builtin) and issubclass(cls, sg.Error)


@pytest.mark.parametrize("bad", [np.array([1, None], dtype=object), np.array([1 + 2j]), np.array([True, False]),
                                 np.array(["a", "b"]), [[1, 2], [3]], {"a": 1}, np.arange(3, dtype=np.uint64) + 2**40,
                                 np.int64(2**40)])
def test_unsupported_host_data(bad):
    with pytest.raises(sg.DTypeError):
        sg.tensor(bad)


def test_shape_errors_keep_the_cpp_message():
    a, b = sg.ones(2, 3), sg.ones(4, 5)
    with pytest.raises(sg.ShapeError, match="matmul"):
        a @ b
    with pytest.raises(sg.ShapeError):
        a + b
    with pytest.raises(sg.ShapeError):
        a.reshape(7)
    with pytest.raises(sg.ShapeError):
        a.sum(dim=5)
    with pytest.raises(sg.ShapeError):
        sg.tensor(np.zeros((1,) * 9, np.float32))
    with pytest.raises(sg.ShapeError):
        a.item()
    with pytest.raises(sg.Error):
        a.sum().backward(sg.ones(3))


def test_empty_nan_and_huge():
    e = sg.tensor(np.zeros((0, 3), np.float32))  # empty tensors are legal
    assert e.shape == (0, 3) and e.numpy().shape == (0, 3)
    n = sg.tensor(np.array([np.nan, np.inf, 1.0], np.float32))  # NaN is data, not an error
    assert np.isnan(n.numpy()[0]) and np.isinf(n.exp().numpy()[1])
    with pytest.raises((sg.DeviceError, sg.OutOfMemoryError, sg.ShapeError, sg.ArgumentError)):
        sg.zeros(1 << 20, 1 << 20)  # 4 TiB
    with pytest.raises((sg.ShapeError, sg.ArgumentError, sg.DeviceError)):
        sg.zeros(-1, 2)


def test_wrong_argument_types_are_type_errors():
    with pytest.raises(TypeError):
        sg.ones(2).reshape("a")
    with pytest.raises(TypeError):
        sg.ones(2)["x"]
    with pytest.raises(TypeError):
        sg.tensor([1.0], device=3)
    with pytest.raises(TypeError):
        sg._core.Tensor()


@pytest.mark.parametrize("X, exc", [
    (np.ones(10), sg.ShapeError),                                     # 1-D
    (np.ones((1, 3)), sg.ShapeError),                                 # one sample
    (np.ones((10, 0)), sg.ShapeError),                                # no features
    (np.ones((2, 2, 2)), sg.ShapeError),                              # 3-D
    (np.array([[1.0, np.nan]] * 10), sg.ArgumentError),               # NaN
    (np.array([[1.0, np.inf]] * 10), sg.ArgumentError),               # inf
    (np.array([[1e39, 1.0]] * 10), sg.ArgumentError),                 # overflows float32
    (np.array([["a", "b"]] * 10), sg.DTypeError),                     # strings
    (np.array([[{}, 1]] * 10, dtype=object), sg.DTypeError),         # objects that are not numbers
    (np.array([[None, 1]] * 10, dtype=object), sg.ArgumentError),    # None: NaN, as numpy and sklearn read it
    (np.array([[1 + 2j, 1]] * 10), sg.DTypeError),                   # complex
])
def test_estimators_refuse_bad_points(X, exc):
    with pytest.raises(exc):
        sg.TSNE(perplexity=2).fit(X)
    with pytest.raises(exc):
        sg.UMAP(n_neighbors=3).fit(X)


@pytest.mark.parametrize("est", [sg.TSNE(perplexity=50), sg.TSNE(perplexity=-1), sg.TSNE(metric="hamming"),
                                 sg.TSNE(learning_rate="fast"), sg.TSNE(perplexity=5, init=np.zeros((39, 2))), sg.TSNE(max_iter=0),
                                 sg.TSNE(n_components=3), sg.TSNE(random_state=-3), sg.TSNE(early_exaggeration=0),
                                 sg.UMAP(n_neighbors=100), sg.UMAP(n_neighbors=1), sg.UMAP(min_dist=-1),
                                 sg.UMAP(n_epochs=-5), sg.UMAP(random_state="x")])
def test_estimators_refuse_bad_parameters(est):
    X = np.random.default_rng(0).normal(size=(40, 5))
    with pytest.raises(sg.ArgumentError):
        est.fit(X)


def test_non_contiguous_points_are_accepted():
    X = np.random.default_rng(0).normal(size=(5, 80)).T  # [80, 5], Fortran order
    assert np.isfinite(sg.TSNE(perplexity=5, max_iter=60, random_state=0).fit_transform(X)).all()


def test_unknown_device_is_an_error():
    with pytest.raises(sg.Error):
        sg.device("no-such-adapter-xyz")
