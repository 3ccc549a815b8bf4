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

    def failing(points, out, method, options, adapter, progress):
        def boom(i, total):
            raise KeyError("stop here")
        return real(points, out, method, options, adapter, boom)

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
    import time

    import surfgrad._core as core

    X, _ = data
    real = core.map_points

    def interrupted(points, out, method, options, adapter, progress):
        return real(points, out, method, options, adapter, lambda i, total: _thread.interrupt_main())

    monkeypatch.setattr(core, "map_points", interrupted)
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        sg.TSNE(perplexity=10, max_iter=20000, random_state=0).fit(X)
    assert time.perf_counter() - start < 10
    monkeypatch.undo()
    # The pipeline's context is usable afterwards.
    assert sg.TSNE(perplexity=10, max_iter=60, random_state=0).fit_transform(X).shape == (X.shape[0], 2)
