"""sg.TSNE / sg.UMAP on a small clustered set: shape, finite values, determinism, separation,
and the scikit-learn estimator conventions."""

import numpy as np
import pytest

import surfgrad as sg
from conftest import clusters


def separation(Y, labels):
    """Share of points whose nearest map neighbour carries their label."""
    d = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    return (labels[d.argmin(1)] == labels).mean()


@pytest.fixture(scope="module")
def data():
    return clusters(n_per=60, centers=4, dim=12, seed=0)


@pytest.mark.parametrize("make", [lambda: sg.TSNE(perplexity=15, max_iter=300, random_state=3),
                                  lambda: sg.UMAP(n_neighbors=10, n_epochs=100, random_state=3)],
                         ids=["tsne", "umap"])
def test_map_of_clusters(make, data):
    X, labels = data
    est = make()
    Y = est.fit_transform(X)
    assert Y.shape == (X.shape[0], 2) and Y.dtype == np.float32
    assert np.isfinite(Y).all()
    assert est.embedding_ is Y
    assert separation(Y, labels) > 0.95
    assert set(est.timings_) >= {"upload", "knn", "optimise", "total"}
    assert est.knn_recall_ is None and est.n_neighbors_ > 0
    np.testing.assert_array_equal(make().fit_transform(X), Y)  # same random_state, same map


def test_different_seeds_differ(data):
    X, _ = data
    a = sg.TSNE(perplexity=10, max_iter=100, init="random", random_state=1).fit_transform(X)
    b = sg.TSNE(perplexity=10, max_iter=100, init="random", random_state=2).fit_transform(X)
    assert not np.array_equal(a, b)


def test_cosine_metric_and_float64_input(data):
    X, labels = data
    Y = sg.UMAP(n_neighbors=10, n_epochs=60, metric="cosine", random_state=0).fit_transform(X.astype(np.float64))
    assert Y.shape == (X.shape[0], 2) and np.isfinite(Y).all()


def test_get_set_params_and_clone():
    est = sg.TSNE(perplexity=12, random_state=5)
    params = est.get_params()
    assert params["perplexity"] == 12 and params["random_state"] == 5 and params["learning_rate"] == "auto"
    assert est.set_params(perplexity=7, verbose=1) is est and est.perplexity == 7
    with pytest.raises(ValueError):
        est.set_params(no_such_parameter=1)
    sklearn = pytest.importorskip("sklearn.base")
    copy = sklearn.clone(est)
    assert copy is not est and copy.get_params() == est.get_params()
    assert "perplexity=7" in repr(est)
    assert sg.UMAP().get_params()["n_neighbors"] == 15


def test_progress_callback_and_verbose(data, capsys):
    X, _ = data
    sg.TSNE(perplexity=10, max_iter=120, random_state=0, verbose=1).fit(X)
    assert "total" in capsys.readouterr().out


def test_exception_in_progress_propagates(data, monkeypatch):
    # A Python error raised while the C++ pipeline runs (here from the progress callback) ends
    # the fit with that same error, not a crash.
    X, _ = data
    import surfgrad._core as core

    real = core.map_points

    def failing(points, out, method, options, adapter, progress, init=None):
        def boom(i, total):
            raise KeyError("stop here")
        return real(points, out, method, options, adapter, boom, init)

    monkeypatch.setattr(core, "map_points", failing)
    with pytest.raises(KeyError, match="stop here"):
        sg.TSNE(perplexity=10, max_iter=100, random_state=0).fit(X)


def test_fit_in_a_thread_while_tensors_are_used(data):
    # The fit runs without the GIL on its own context; tensor work in the main thread meanwhile
    # must neither crash nor disturb it.
    import threading

    X, labels = data
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault(
        "Y", sg.TSNE(perplexity=10, max_iter=200, random_state=4).fit_transform(X)))
    thread.start()
    a = sg.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    for _ in range(50):
        np.testing.assert_array_equal((a * 2).sum(dim=0).numpy(), np.arange(12).reshape(3, 4).sum(0) * 2)
    thread.join()
    np.testing.assert_array_equal(result["Y"], sg.TSNE(perplexity=10, max_iter=200, random_state=4).fit_transform(X))


def test_ctrl_c_stops_a_fit(data, monkeypatch):
    # KeyboardInterrupt (Ctrl-C in a terminal or a notebook's interrupt) reaches the running fit
    # at its next progress step, and the fit ends with it. The interrupt is raised from the
    # first progress step (deterministic; a timer thread races with the fit's start).
    import _thread
    import signal
    import time

    import surfgrad._core as core

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        # A process started in the background by a shell without job control ignores SIGINT, and
        # then interrupt_main() does nothing: no KeyboardInterrupt can arrive to be tested.
        pytest.skip("SIGINT is not handled by Python in this process (started in the background?)")
    X, _ = data
    real = core.map_points

    def interrupted(points, out, method, options, adapter, progress, init=None):
        return real(points, out, method, options, adapter, lambda i, total: _thread.interrupt_main(), init)

    monkeypatch.setattr(core, "map_points", interrupted)
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        sg.TSNE(perplexity=10, max_iter=20000, random_state=0).fit(X)
    assert time.perf_counter() - start < 10
    monkeypatch.undo()
    # The pipeline's context is usable afterwards.
    assert sg.TSNE(perplexity=10, max_iter=60, random_state=0).fit_transform(X).shape == (X.shape[0], 2)


def _start(n, scale, seed=11):
    return np.random.default_rng(seed).normal(scale=scale, size=(n, 2))


@pytest.mark.parametrize("make", [
    lambda init, **kw: sg.TSNE(perplexity=10, init=init, random_state=2, **kw),
    lambda init, **kw: sg.UMAP(n_neighbors=10, init=init, random_state=2, **kw)], ids=["tsne", "umap"])
def test_init_array_is_the_start(make, data):
    # With a vanishing learning rate and one step the map stays where it started: the given
    # positions (float64 or a nested list) are what the layout begins from, as given.
    X, labels = data
    n = X.shape[0]
    start = _start(n, 1.0)
    few = {"max_iter": 1, "learning_rate": 1e-6} if "perplexity" in make("pca").get_params() else \
        {"n_epochs": 1, "learning_rate": 1e-6}
    Y = make(start, **few).fit_transform(X)
    np.testing.assert_allclose(Y, start, atol=1e-3)
    np.testing.assert_allclose(make(start.tolist(), **few).fit_transform(X), Y)
    # A full run from it: a different map from the default start, deterministic, separated.
    longer = {"max_iter": 300} if "perplexity" in make("pca").get_params() else {"n_epochs": 100}
    scaled = start * (1e-4 if "perplexity" in longer else 5.0)
    A = make(scaled, **longer).fit_transform(X)
    assert not np.array_equal(A, make("pca", **longer).fit_transform(X))
    np.testing.assert_array_equal(A, make(scaled.astype(np.float32), **longer).fit_transform(X))
    assert separation(A, labels) > 0.9
    assert not np.shares_memory(A, scaled)


@pytest.mark.parametrize("cls", [sg.TSNE, sg.UMAP])
@pytest.mark.parametrize("bad, message", [
    (lambda n: np.zeros((n, 3)), r"shape \(\d+, 2\)"),
    (lambda n: np.zeros((n - 1, 2)), r"shape \(\d+, 2\)"),
    (lambda n: np.zeros(2 * n), r"shape \(\d+, 2\)"),
    (lambda n: np.where(np.arange(2 * n).reshape(n, 2) == 17, np.nan, 0.5), "starting position 8 is NaN"),
    (lambda n: np.full((n, 2), np.inf), "starting position 0 is NaN or infinite"),
    (lambda n: np.full((n, 2), 1e300), "NaN or infinite"),
    (lambda n: np.array([["a", "b"]] * n, dtype=object), "must be numbers"),
    (lambda n: "spectral", "init must be 'pca', 'random' or an"),
])
def test_bad_init_is_a_value_error(cls, bad, message, data):
    X, _ = data
    with pytest.raises(ValueError, match=message):
        cls(init=bad(X.shape[0]), random_state=0).fit(X)


def test_umap_random_init_follows_the_seed(data):
    X, _ = data
    a = sg.UMAP(n_neighbors=10, n_epochs=30, init="random", random_state=1).fit_transform(X)
    b = sg.UMAP(n_neighbors=10, n_epochs=30, init="random", random_state=2).fit_transform(X)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, sg.UMAP(n_neighbors=10, n_epochs=30, init="random", random_state=1).fit_transform(X))
