"""Exact neighbours on the host (float64) and recall: the tests' and benchmarks' yardsticks."""

from __future__ import annotations

import numpy as np


def exact_neighbours(x: np.ndarray, rows: np.ndarray, k: int, chunk: int = 256) -> np.ndarray:
    """Exact neighbours (ids, nearest first, float64 on the host) of the points ``rows`` of x."""
    out = np.empty((len(rows), k), dtype=np.int64)
    x64 = x.astype(np.float64)
    norms = (x64 * x64).sum(1)
    for b in range(0, len(rows), chunk):
        r = rows[b:b + chunk]
        d = norms[r, None] + norms[None, :] - 2.0 * (x64[r] @ x64.T)
        d[np.arange(len(r)), r] = np.inf
        part = np.argpartition(d, k, axis=1)[:, :k]
        order = np.argsort(np.take_along_axis(d, part, 1), axis=1, kind="stable")
        out[b:b + chunk] = np.take_along_axis(part, order, 1)
    return out


def recall(indices: np.ndarray, exact: np.ndarray, rows: np.ndarray) -> float:
    """Share of the exact lists' entries (of the points ``rows``) found in ``indices``."""
    k = exact.shape[1]
    hits = sum(len(np.intersect1d(indices[r, :k], exact[i])) for i, r in enumerate(rows))
    return hits / float(len(rows) * k)
