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

from . import _columns, _core, _map_options
from ._base import BaseEstimator, NotFittedError
from ._core import ArgumentError, ShapeError
from ._tensor import _adapter

class _ObjectsNotNumbers(_core.DTypeError, TypeError):
    """An object array holding something that is not a number: a DTypeError (a ValueError, as
    surfgrad's dtype errors are) and a TypeError (as numpy raises for it)."""


def _points(X: Any) -> np.ndarray:
    """[N, D] float32 C-contiguous rows, finite (the cosine metric is the library's: it scales
    the rows on the GPU)."""
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
    bad = _columns.first_non_finite(X)  # in passes: no N x D temporary
    if bad >= 0:
        raise ArgumentError(f"fit: sample {bad} has a NaN or infinite value (float32)")
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

    def _check_job(self, X: Any) -> Optional[Dict[str, Any]]:
        """The options, and the job's memory from X's shape and dtype alone: a job too large for
        this machine is refused before X is converted or copied (a stride-0 view of 5e6 × 768
        would otherwise be copied in full first). None where X has no 2-D shape to read."""
        shape = getattr(X, "shape", None)
        if shape is None or len(shape) != 2 or not all(isinstance(v, (numbers.Integral, np.integer)) for v in shape):
            return None  # a list or a ragged input: _points says what is wrong with it
        n, d = int(shape[0]), int(shape[1])
        if n < 2 or d < 1:
            return None  # _points words these as scikit-learn does
        # Anything but C-contiguous float32 rows is copied once (np.ascontiguousarray in _points).
        flags = getattr(X, "flags", None)
        copied = not (getattr(X, "dtype", None) == np.float32 and flags is not None and flags["C_CONTIGUOUS"])
        return self._check_shape(n, d, copied)

    def _check_shape(self, n: int, d: int, copied: bool) -> Optional[Dict[str, Any]]:
        """The options, and the memory of a job of n x d points (``copied``: once more on the host)."""
        if n < 2 or d < 1:
            return None  # _points words these as scikit-learn does
        options = self._options(n)
        _core.check_map_job(n, d, self._method, options, _adapter(self.device), n * d * 4 if copied else 0)
        return options

    def fit(self, X: Any, y: Any = None) -> "_MapEstimator":
        """Computes the map of X ([n_samples, n_features]; or a pyarrow / pandas / polars column
        of embeddings, surfgrad._columns); the result is ``embedding_``."""
        checked: list = []  # an Arrow / pandas / polars column: its job checked before any copy
        X = _columns.points_of(X, check=lambda n, d, copied: checked.append(self._check_shape(n, d, copied)))
        options = checked[0] if checked else self._check_job(X)
        points = _points(X)
        n = points.shape[0]
        if options is None:
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

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: a fitted attribute before fit is NotFittedError
        # (scikit-learn's, where it is installed; an AttributeError too, so hasattr() is False).
        if name.endswith("_") and not name.startswith("__"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet: {name} is set by fit(). "
                                 "Call fit or fit_transform first.")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _schema_options(self, n: int) -> Dict[str, Any]:
        """The schema's options of this method from the estimator's parameters (their Python
        types checked here, their ranges by the library), by the library's keys."""
        if self.n_components != 2:
            raise ArgumentError(f"n_components: surfgrad computes 2-D maps, got {self.n_components}")
        owner = type(self).__name__
        options: Dict[str, Any] = {}
        for spec in _map_options.options_for(self._method):
            name = spec["python"]
            value = getattr(self, name)
            if name == "random_state":
                options["seed"] = _seed(value)
                continue
            if name == "init" and not isinstance(value, str):
                continue  # an array of starting positions: passed as the start, not as an option
            if name == "init" and value not in spec["choices"]:
                words = ", ".join(repr(c) for c in spec["choices"])
                raise ArgumentError(f"{owner}: init must be {words} or an (n_samples, 2) array, not {value!r}")
            if name == "max_iter":
                value = self._iterations()
            if value is None:
                continue  # the library's default (n_epochs=None: automatic)
            options[spec["key"]] = _map_options.checked(owner, spec, value)
        return options


class TSNE(_MapEstimator):
    """t-SNE on the GPU: exact kNN (k = 3·perplexity; neighbour descent on 50 principal
    components past 20,000 points), sparse affinities, FFT-accelerated repulsion past 5,000
    points, momentum and gains. Deterministic for an int ``random_state`` on a device.

    ``learning_rate="auto"``: max(N / early_exaggeration, 50), as openTSNE and scikit-learn.
    ``init``: "pca" (first two principal components scaled to std 1e-4), "random" (N(0, 1e-4²))
    or an (n_samples, 2) array of starting positions, used as given (scale it to a standard
    deviation near 1e-4, as scikit-learn and openTSNE advise, for the usual early exaggeration).
    ``metric``: "euclidean" or "cosine". ``max_iter`` (or the older ``n_iter``): iterations,
    the first ``early_exaggeration_iter`` with early exaggeration. ``device``: adapter name
    substring.
    """

    _method = "tsne"

    def __init__(self, n_components: int = 2, perplexity: float = 30.0, early_exaggeration: float = 12.0,
                 learning_rate: Union[float, str] = "auto", max_iter: Optional[int] = None,
                 n_iter: Optional[int] = None, metric: str = "euclidean", init: Any = "pca",
                 verbose: int = 0, random_state: Any = None, device: Optional[str] = None,
                 early_exaggeration_iter: int = 250, max_step_norm: float = 5.0, repulsion: str = "auto",
                 grid_spacing: float = 0.5, pca_components: int = -1, knn: str = "auto",
                 recall_sample: int = 1000) -> None:
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
        self.early_exaggeration_iter = early_exaggeration_iter
        self.max_step_norm = max_step_norm
        self.repulsion = repulsion
        self.grid_spacing = grid_spacing
        self.pca_components = pca_components
        self.knn = knn
        self.recall_sample = recall_sample

    def _iterations(self) -> int:
        iterations = self.max_iter if self.max_iter is not None else self.n_iter
        iterations = 750 if iterations is None else iterations
        if isinstance(iterations, (bool, np.bool_)) or not isinstance(iterations, (numbers.Integral, np.integer)) \
                or iterations < 1:
            raise ArgumentError(f"max_iter must be a positive int, got {iterations!r}")
        return int(iterations)

    def _total(self, n: int) -> Optional[int]:
        return self._iterations()

    def _options(self, n: int) -> Dict[str, Any]:
        return self._schema_options(n)


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
                 device: Optional[str] = None, pca_components: int = -1, knn: str = "auto",
                 recall_sample: int = 1000) -> None:
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
        self.pca_components = pca_components
        self.knn = knn
        self.recall_sample = recall_sample

    def _total(self, n: int) -> Optional[int]:
        if isinstance(self.n_epochs, (numbers.Integral, np.integer)) and self.n_epochs > 0:
            return int(self.n_epochs)
        return 500 if n <= 10000 else 200

    def _options(self, n: int) -> Dict[str, Any]:
        return self._schema_options(n)


TSNE.__doc__ = (TSNE.__doc__ or "") + _map_options.parameters_doc("tsne")
UMAP.__doc__ = (UMAP.__doc__ or "") + _map_options.parameters_doc("umap")


def map_quality(X: Any, Y: Any, labels: Any = None, device: Optional[str] = None) -> Dict[str, float]:
    """The quality of a map Y ([n, 2]) of points X ([n, d]), as ``surfgrad eval`` prints it:
    ``knn_recall`` (share of each point's 10 nearest neighbours in X kept in Y),
    ``knn_accuracy`` (10-NN majority-vote accuracy of ``labels`` in Y; -1 without labels),
    ``trustworthiness`` (T(10) on up to 10,000 sampled points) and ``kl_divergence`` (t-SNE's
    KL(P‖Q) at perplexity 30 on up to 2,000 sampled points)."""
    points = _points(X)
    embedding = _points(Y)
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
