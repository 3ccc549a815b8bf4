"""t-SNE and UMAP as scikit-learn estimators, computed on the GPU by surfgrad.

    Y = sg.TSNE(perplexity=30, random_state=0).fit_transform(X)    # X: [N, D] array
    Y = sg.UMAP(n_neighbors=15, min_dist=0.1).fit_transform(X)

Both run the pipeline of ``surfgrad map``: PCA to 50 components past 20,000 points (where the
neighbours become approximate), the neighbours, then the layout. ``timings_`` holds the
seconds of each phase (upload, pca, knn, recall, affinities or memberships, optimise, total),
``knn_recall_`` the sampled recall of approximate neighbours (None where they are exact).
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, Optional, Union

import numpy as np

from . import _core
from ._base import BaseEstimator
from ._core import ArgumentError, ShapeError
from ._tensor import _adapter

_METRICS = ("euclidean", "cosine")


class _ObjectsNotNumbers(_core.DTypeError, TypeError):
    """An object array holding something that is not a number: a DTypeError (a ValueError, as
    surfgrad's dtype errors are) and a TypeError (as numpy raises for it)."""


def _points(X: Any, metric: str) -> np.ndarray:
    """[N, D] float32 C-contiguous rows, finite, with cosine turned into euclidean on the unit sphere."""
    if metric not in _METRICS:
        raise ArgumentError(f"metric must be one of {_METRICS}, not {metric!r}")
    if type(X).__module__.startswith("scipy.sparse"):
        raise ArgumentError("fit: sparse input is not supported; pass a dense array (X.toarray())")
    if hasattr(X, "numpy") and not isinstance(X, np.ndarray):
        X = X.numpy()
    try:
        X = np.asarray(X)
    except (ValueError, TypeError) as e:
        raise ArgumentError(f"fit: cannot read the points as an array: {e}") from None
    if X.dtype.kind == "c":
        raise _core.DTypeError(f"fit: Complex data not supported (dtype {X.dtype})")
    if X.dtype.kind == "O":  # numbers held as objects are read as numbers (as numpy and scikit-learn do)
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError) as e:
            raise _ObjectsNotNumbers(f"fit: points of dtype object must all be numbers: {e}") from None
    if X.dtype.kind not in "fiu":
        raise _core.DTypeError(f"fit: points must be numbers, got dtype {X.dtype}")
    if X.ndim != 2:
        raise ShapeError(f"fit: expected points of shape [n_samples, n_features], got {list(X.shape)}")
    # Worded as scikit-learn's check_array words them, which its estimator checks look for.
    if X.shape[0] < 2:
        raise ShapeError(f"fit: found array with {X.shape[0]} sample(s) (shape={X.shape}) while a minimum of 2 is "
                         "required.")
    if X.shape[1] < 1:
        raise ShapeError(f"fit: found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    with np.errstate(over="ignore"):  # values beyond float32 become inf, reported just below
        X = np.ascontiguousarray(X, dtype=np.float32)
    if not np.isfinite(X).all():
        bad = int(np.argwhere(~np.isfinite(X))[0, 0])
        raise ArgumentError(f"fit: sample {bad} has a NaN or infinite value (float32)")
    if metric == "cosine":
        # On unit vectors |a − b|² = 2 − 2·cos(a, b): euclidean neighbours are cosine neighbours.
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        if (norms == 0).any():
            raise ArgumentError("fit: cosine metric with an all-zero sample")
        X = np.ascontiguousarray(X / norms, dtype=np.float32)
    return X


def _initial_positions(init: Any, n: int) -> Optional[np.ndarray]:
    """An array ``init`` as [n, 2] float32 C-contiguous starting positions (None for a string)."""
    if isinstance(init, str):
        return None
    if hasattr(init, "numpy") and not isinstance(init, np.ndarray):
        init = init.numpy()
    try:
        start = np.asarray(init)
    except (ValueError, TypeError) as e:
        raise ArgumentError(f"init: cannot read the starting positions as an array: {e}") from None
    if start.dtype.kind not in "fiu":
        raise ArgumentError(f"init: starting positions must be numbers, got dtype {start.dtype}")
    if start.shape != (n, 2):
        raise ArgumentError(f"init: starting positions must have shape ({n}, 2) (n_samples, 2), got {start.shape}")
    with np.errstate(over="ignore"):
        start = np.ascontiguousarray(start, dtype=np.float32)
    if not np.isfinite(start).all():
        bad = int(np.argwhere(~np.isfinite(start))[0, 0])
        raise ArgumentError(f"init: starting position {bad} is NaN or infinite (float32)")
    return start


def _seed(random_state: Any) -> int:
    """An int seed: given, drawn from a RandomState/Generator, or fresh for None (as sklearn)."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(random_state, (numbers.Integral, np.integer)):
        if random_state < 0:
            raise ArgumentError(f"random_state must be non-negative, got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    raise ArgumentError(f"random_state must be None, an int, a RandomState or a Generator, not {random_state!r}")


class _MapEstimator(BaseEstimator):
    _method = ""

    def _options(self, n: int) -> Dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _start(self, n: int, options: Dict[str, Any]) -> Optional[np.ndarray]:
        """The starting positions to pass to the pipeline (None: its own start)."""
        return _initial_positions(self.init, n)

    def _total(self, n: int) -> Optional[int]:
        return None

    def fit(self, X: Any, y: Any = None) -> "_MapEstimator":
        """Computes the map of X ([n_samples, n_features]); the result is ``embedding_``."""
        points = _points(X, self.metric)
        n = points.shape[0]
        options = self._options(n)
        start = self._start(n, options)
        out = np.empty((n, 2), dtype=np.float32)
        bar = None
        progress = None
        if self.verbose:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # verbose still prints the phase timings below
                tqdm = None
            if tqdm is not None:
                bar = tqdm(total=self._total(n), desc=f"{type(self).__name__}", unit="it")

                def progress(iteration: int, total: int) -> None:
                    bar.total = total
                    bar.update(iteration - bar.n)

        try:
            report = _core.map_points(points, out, self._method, options, _adapter(self.device), progress,
                                       start)
        finally:
            if bar is not None:
                bar.close()
        self.timings_ = {name: seconds for name, seconds in report["phases"]}
        self.timings_["total"] = sum(seconds for _, seconds in report["phases"])
        # Sampled recall@k of the approximate neighbours (past 20,000 samples); None where exact.
        self.knn_recall_ = report["knn_recall"] if report["knn_recall"] >= 0 else None
        self.n_neighbors_ = report["k"]
        if self.verbose:
            print(", ".join(f"{k} {v:.2f} s" for k, v in self.timings_.items()))
        self.embedding_ = out
        self.n_features_in_ = points.shape[1]
        return self

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """Computes the map of X and returns it, [n_samples, 2] float32."""
        return self.fit(X, y).embedding_


class TSNE(_MapEstimator):
    """t-SNE on the GPU: exact kNN (k = 3·perplexity; neighbour descent on 50 principal
    components past 20,000 points), sparse affinities, FFT-accelerated repulsion past 5,000
    points, momentum and gains. Deterministic for an int ``random_state`` on a device.

    ``learning_rate="auto"``: max(N / early_exaggeration, 50), as openTSNE and scikit-learn.
    ``init``: "pca" (first two principal components scaled to std 1e-4), "random" (N(0, 1e-4²))
    or an (n_samples, 2) array of starting positions, used as given (scale it to a standard
    deviation near 1e-4, as scikit-learn and openTSNE advise, for the usual early exaggeration).
    ``metric``: "euclidean" or "cosine". ``max_iter`` (or the older ``n_iter``): iterations,
    the first 250 with early exaggeration. ``device``: adapter name substring.
    """

    _method = "tsne"

    def __init__(self, n_components: int = 2, perplexity: float = 30.0, early_exaggeration: float = 12.0,
                 learning_rate: Union[float, str] = "auto", max_iter: Optional[int] = None,
                 n_iter: Optional[int] = None, metric: str = "euclidean", init: Any = "pca",
                 verbose: int = 0, random_state: Any = None, device: Optional[str] = None) -> None:
        self.n_components = n_components
        self.perplexity = perplexity
        self.early_exaggeration = early_exaggeration
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.n_iter = n_iter
        self.metric = metric
        self.init = init
        self.verbose = verbose
        self.random_state = random_state
        self.device = device

    def _iterations(self) -> int:
        iterations = self.max_iter if self.max_iter is not None else self.n_iter
        iterations = 750 if iterations is None else iterations
        if not isinstance(iterations, (numbers.Integral, np.integer)) or iterations < 1:
            raise ArgumentError(f"max_iter must be a positive int, got {iterations!r}")
        return int(iterations)

    def _total(self, n: int) -> Optional[int]:
        return self._iterations()

    def _options(self, n: int) -> Dict[str, Any]:
        if self.n_components != 2:
            raise ArgumentError(f"n_components: surfgrad computes 2-D maps, got {self.n_components}")
        if isinstance(self.init, str) and self.init not in ("pca", "random"):
            raise ArgumentError(f"init must be 'pca', 'random' or an (n_samples, 2) array, not {self.init!r}")
        perplexity = float(self.perplexity)
        if not np.isfinite(perplexity) or perplexity <= 0:
            raise ArgumentError(f"perplexity must be positive, got {self.perplexity!r}")
        if int(3 * perplexity) >= n:
            raise ArgumentError(f"perplexity {perplexity:g} needs more than {int(3 * perplexity)} samples, "
                                f"got {n}; use a perplexity below {n / 3:g}")
        if self.learning_rate == "auto":
            learning_rate = 0.0
        elif isinstance(self.learning_rate, numbers.Real) and self.learning_rate > 0:
            learning_rate = float(self.learning_rate)
        else:
            raise ArgumentError(f"learning_rate must be 'auto' or a positive number, got {self.learning_rate!r}")
        exaggeration = float(self.early_exaggeration)
        if not np.isfinite(exaggeration) or exaggeration < 1:
            raise ArgumentError(f"early_exaggeration must be ≥ 1, got {self.early_exaggeration!r}")
        iterations = self._iterations()
        return {
            "perplexity": perplexity,
            "iterations": iterations,
            "exaggeration": exaggeration,
            "exaggeration_iterations": min(250, iterations),
            "learning_rate": learning_rate,
            "pca_init": isinstance(self.init, str) and self.init == "pca",
            "seed": _seed(self.random_state),
        }


class UMAP(_MapEstimator):
    """UMAP on the GPU: fuzzy memberships over the kNN graph, PCA initialisation, epochs of
    attraction and negative sampling with umap-learn's gradients. Deterministic for an int
    ``random_state`` on a device. ``n_epochs=None``: 500 up to 10,000 samples, else 200.
    ``init``: "pca" (first two principal components scaled to ±10; umap-learn's default is a
    spectral layout, which surfgrad does not compute), "random" (uniform in [-10, 10]², from
    ``random_state``) or an (n_samples, 2) array of starting positions, used as given.
    """

    _method = "umap"

    def __init__(self, n_neighbors: int = 15, n_components: int = 2, min_dist: float = 0.1,
                 n_epochs: Optional[int] = None, learning_rate: float = 1.0, negative_sample_rate: int = 5,
                 metric: str = "euclidean", init: Any = "pca", random_state: Any = None, verbose: int = 0,
                 device: Optional[str] = None) -> None:
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.min_dist = min_dist
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.negative_sample_rate = negative_sample_rate
        self.metric = metric
        self.init = init
        self.random_state = random_state
        self.verbose = verbose
        self.device = device

    def _start(self, n: int, options: Dict[str, Any]) -> Optional[np.ndarray]:
        if isinstance(self.init, str) and self.init == "random":
            return np.random.default_rng(options["seed"]).uniform(-10, 10, (n, 2)).astype(np.float32)
        return _initial_positions(self.init, n)

    def _total(self, n: int) -> Optional[int]:
        if self.n_epochs is not None:
            return int(self.n_epochs)
        return 500 if n <= 10000 else 200

    def _options(self, n: int) -> Dict[str, Any]:
        if self.n_components != 2:
            raise ArgumentError(f"n_components: surfgrad computes 2-D maps, got {self.n_components}")
        if not isinstance(self.n_neighbors, (numbers.Integral, np.integer)) or not 2 <= self.n_neighbors < n:
            raise ArgumentError(f"n_neighbors must be an int in [2, n_samples), got {self.n_neighbors!r} "
                                f"for {n} samples")
        min_dist = float(self.min_dist)
        if not np.isfinite(min_dist) or min_dist < 0:
            raise ArgumentError(f"min_dist must be ≥ 0, got {self.min_dist!r}")
        epochs = 0 if self.n_epochs is None else self.n_epochs
        if not isinstance(epochs, (numbers.Integral, np.integer)) or epochs < 0:
            raise ArgumentError(f"n_epochs must be None or a positive int, got {self.n_epochs!r}")
        if isinstance(self.init, str) and self.init not in ("pca", "random"):
            raise ArgumentError(f"init must be 'pca', 'random' or an (n_samples, 2) array, not {self.init!r}")
        if not self.learning_rate > 0 or not self.negative_sample_rate > 0:
            raise ArgumentError("learning_rate and negative_sample_rate must be positive")
        return {
            "n_neighbors": int(self.n_neighbors),
            "min_dist": min_dist,
            "epochs": int(epochs),
            "umap_learning_rate": float(self.learning_rate),
            "negative_sample_rate": float(self.negative_sample_rate),
            "seed": _seed(self.random_state),
        }


def map_quality(X: Any, Y: Any, labels: Any = None, device: Optional[str] = None) -> Dict[str, float]:
    """The quality of a map Y ([n, 2]) of points X ([n, d]), as ``surfgrad eval`` prints it:
    ``knn_recall`` (share of each point's 10 nearest neighbours in X kept in Y),
    ``knn_accuracy`` (10-NN majority-vote accuracy of ``labels`` in Y; -1 without labels),
    ``trustworthiness`` (T(10) on up to 10,000 sampled points) and ``kl_divergence`` (t-SNE's
    KL(P‖Q) at perplexity 30 on up to 2,000 sampled points)."""
    points = _points(X, "euclidean")
    embedding = _points(Y, "euclidean")
    if embedding.shape != (points.shape[0], 2):
        raise ShapeError(f"map_quality: Y must have shape ({points.shape[0]}, 2), got {embedding.shape}")
    label_array = None
    if labels is not None:
        label_array = np.asarray(labels)
        if label_array.shape != (points.shape[0],) or label_array.dtype.kind not in "iu":
            raise ArgumentError(f"map_quality: labels must be {points.shape[0]} integers, got "
                                f"{label_array.dtype} {label_array.shape}")
        if label_array.size and (label_array.min() < 0 or label_array.max() > np.iinfo(np.int32).max):
            raise ArgumentError("map_quality: labels must be in [0, 2^31 - 1]")
        label_array = np.ascontiguousarray(label_array, dtype=np.int32)
    return dict(_core.evaluate_map(points, embedding, label_array, _adapter(device)))


_BUILTIN_DIMS = 768  # the CLI's built-in set: 10 Gaussian clusters in 768-D (surfgrad/io.hpp)


def builtin_points(n: int, device: Optional[str] = None) -> Any:
    """The data set ``surfgrad map`` maps without an input: n points of 10 Gaussian clusters in
    768 dimensions, generated on the device (the same points on every adapter). Returns
    (points float32 [n, 768], labels int32 [n]; point i in cluster i mod 10)."""
    if not isinstance(n, (numbers.Integral, np.integer)) or not 1 <= n < 2**31 - 1:
        raise ArgumentError(f"builtin_points: n must be an int in [1, 2^31 - 2], got {n!r}")
    points = np.empty((int(n), _BUILTIN_DIMS), dtype=np.float32)
    labels = np.empty(int(n), dtype=np.int32)
    _core.builtin_points(points, labels, _adapter(device))
    return points, labels
