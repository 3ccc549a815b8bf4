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


def _points(X: Any, metric: str) -> np.ndarray:
    """[N, D] float32 C-contiguous rows, finite, with cosine turned into euclidean on the unit sphere."""
    if metric not in _METRICS:
        raise ArgumentError(f"metric must be one of {_METRICS}, not {metric!r}")
    if hasattr(X, "numpy") and not isinstance(X, np.ndarray):
        X = X.numpy()
    try:
        X = np.asarray(X)
    except (ValueError, TypeError) as e:
        raise ArgumentError(f"fit: cannot read the points as an array: {e}") from None
    if X.dtype.kind not in "fiu":
        raise _core.DTypeError(f"fit: points must be numbers, got dtype {X.dtype}")
    if X.ndim != 2:
        raise ShapeError(f"fit: expected points of shape [n_samples, n_features], got {list(X.shape)}")
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise ShapeError(f"fit: need at least 2 samples with at least 1 feature, got {list(X.shape)}")
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

    def _total(self, n: int) -> Optional[int]:
        return None

    def fit(self, X: Any, y: Any = None) -> "_MapEstimator":
        """Computes the map of X ([n_samples, n_features]); the result is ``embedding_``."""
        points = _points(X, self.metric)
        n = points.shape[0]
        options = self._options(n)
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
            report = _core.map_points(points, out, self._method, options, _adapter(self.device), progress)
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
    ``init``: "pca" (first two principal components scaled to std 1e-4) or "random".
    ``metric``: "euclidean" or "cosine". ``max_iter`` (or the older ``n_iter``): iterations,
    the first 250 with early exaggeration. ``device``: adapter name substring.
    """

    _method = "tsne"

    def __init__(self, n_components: int = 2, perplexity: float = 30.0, early_exaggeration: float = 12.0,
                 learning_rate: Union[float, str] = "auto", max_iter: Optional[int] = None,
                 n_iter: Optional[int] = None, metric: str = "euclidean", init: str = "pca",
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
        if not isinstance(self.init, str):
            raise ArgumentError("init: 'pca' or 'random' (an initial array is not supported yet)")
        if self.init not in ("pca", "random"):
            raise ArgumentError(f"init must be 'pca' or 'random', not {self.init!r}")
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
            "pca_init": self.init == "pca",
            "seed": _seed(self.random_state),
        }


class UMAP(_MapEstimator):
    """UMAP on the GPU: fuzzy memberships over the kNN graph, PCA initialisation, epochs of
    attraction and negative sampling with umap-learn's gradients. Deterministic for an int
    ``random_state`` on a device. ``n_epochs=None``: 500 up to 10,000 samples, else 200.
    """

    _method = "umap"

    def __init__(self, n_neighbors: int = 15, n_components: int = 2, min_dist: float = 0.1,
                 n_epochs: Optional[int] = None, learning_rate: float = 1.0, negative_sample_rate: int = 5,
                 metric: str = "euclidean", random_state: Any = None, verbose: int = 0,
                 device: Optional[str] = None) -> None:
        self.n_neighbors = n_neighbors
        self.n_components = n_components
        self.min_dist = min_dist
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.negative_sample_rate = negative_sample_rate
        self.metric = metric
        self.random_state = random_state
        self.verbose = verbose
        self.device = device

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
