"""sg.map_quality (the library's evaluate_map, as `surfgrad eval` prints it) against NumPy and
scikit-learn references, and sg.builtin_points (the CLI's built-in data set)."""

import numpy as np
import pytest

import surfgrad as sg
from conftest import clusters


def knn(Z, k=10):
    d = ((Z[:, None, :].astype(np.float64) - Z[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    return np.argsort(d, axis=1, kind="stable")[:, :k]


@pytest.fixture(scope="module")
def mapped():
    X, labels = clusters(n_per=50, centers=4, dim=10, seed=5, spread=3.0)
    Y = sg.TSNE(perplexity=10, max_iter=200, random_state=1).fit_transform(X)
    return X, Y, labels


def test_map_quality_matches_references(mapped):
    X, Y, labels = mapped
    q = sg.map_quality(X, Y, labels)
    assert set(q) == {"knn_recall", "knn_accuracy", "trustworthiness", "kl_divergence"}
    nx, ny = knn(X), knn(Y)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(nx, ny)])
    assert q["knn_recall"] == pytest.approx(recall, abs=1e-3)
    votes = np.array([np.bincount(labels[row], minlength=4).argmax() for row in ny])
    assert q["knn_accuracy"] == pytest.approx((votes == labels).mean(), abs=0.011)  # ties may break otherwise
    manifold = pytest.importorskip("sklearn.manifold")
    assert q["trustworthiness"] == pytest.approx(manifold.trustworthiness(X, Y, n_neighbors=10), abs=2e-3)
    assert 0 < q["kl_divergence"] < 5
    # A random map is worse on every measure; without labels the accuracy is -1.
    R = np.random.default_rng(0).normal(size=Y.shape).astype(np.float32)
    r = sg.map_quality(X, R)
    assert r["knn_accuracy"] == -1
    assert r["knn_recall"] < q["knn_recall"] - 0.05 and r["trustworthiness"] < q["trustworthiness"] - 0.1
    assert r["kl_divergence"] > q["kl_divergence"]


@pytest.mark.parametrize("bad_y, bad_labels, message", [
    (lambda Y: Y[:-1], None, r"Y must have shape"),
    (lambda Y: np.c_[Y, Y[:, :1]], None, r"Y must have shape"),
    (lambda Y: Y, lambda l: l[:-1], "labels must be"),
    (lambda Y: Y, lambda l: l.astype(np.float32), "labels must be"),
    (lambda Y: Y, lambda l: l - 1, r"labels must be in \[0"),
])
def test_map_quality_refuses_bad_input(mapped, bad_y, bad_labels, message):
    X, Y, labels = mapped
    with pytest.raises(ValueError, match=message):
        sg.map_quality(X, bad_y(Y), None if bad_labels is None else bad_labels(labels))


def test_builtin_points():
    X, labels = sg.builtin_points(500)
    assert X.shape == (500, 768) and X.dtype == np.float32 and labels.dtype == np.int32
    np.testing.assert_array_equal(labels, np.arange(500) % 10)
    assert np.isfinite(X).all()
    # Ten clusters: every point is nearest to its own cluster's mean.
    means = np.stack([X[labels == c].mean(0) for c in range(10)])
    nearest = ((X[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(nearest, labels)
    X2, _ = sg.builtin_points(500)
    np.testing.assert_array_equal(X, X2)
    with pytest.raises(ValueError, match="n must be an int"):
        sg.builtin_points(0)
