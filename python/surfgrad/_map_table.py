"""``surfgrad.map_table``: the map of a table's embedding column, returned as the table with two
float32 columns ``x`` and ``y`` appended; written as Parquet it opens as it is in Apple's
embedding-atlas (``embedding-atlas map.parquet --x x --y y``, or its Jupyter widget)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _columns
from ._core import ArgumentError


def map_table(table: Any, column: _columns.Column = "embedding", method: str = "umap", *, x: str = "x",
              y: str = "y", **options: Any) -> Any:
    """The map of ``table``'s points with ``x`` and ``y`` (float32, one a row) appended.

    ``table``: a pyarrow Table or RecordBatch (a Table/RecordBatch comes back), a pandas
    DataFrame (a DataFrame comes back; the frame is not changed) or a polars DataFrame.
    ``column``: the embedding column (a fixed-size list or list of floats, read without a copy
    where its layout allows), a list of numeric columns (one a dimension), or None for the
    convention of ``surfgrad.distributed``'s shards (``embedding``, else the first list column,
    else every float column). ``method``: "umap" or "tsne"; ``options``: that estimator's
    parameters (``sg.UMAP`` / ``sg.TSNE``), e.g. ``n_neighbors=15, random_state=0``.

        t = sg.map_table(pq.read_table("emb.parquet"), column="embedding", random_state=0)
        pq.write_table(t, "map.parquet")      # embedding-atlas map.parquet --x x --y y
    """
    from .manifold import TSNE, UMAP

    estimators = {"umap": UMAP, "tsne": TSNE}
    if not isinstance(method, str) or method.lower() not in estimators:
        raise ArgumentError(f"map_table: method must be 'umap' or 'tsne', got {method!r}")
    cls = estimators[method.lower()]
    try:
        est = cls(**options)
    except TypeError as e:
        raise ArgumentError(f"map_table: {e} (the options are {cls.__name__}'s parameters)") from None
    kind = _columns._module(table)
    if kind not in ("pyarrow", "pandas", "polars") or type(table).__name__ not in ("Table", "RecordBatch",
                                                                                    "DataFrame"):
        raise ArgumentError(f"map_table: expected a pyarrow Table or RecordBatch, a pandas or a polars DataFrame, "
                            f"got {type(table).__module__}.{type(table).__name__}")
    for name in (x, y):
        if not isinstance(name, str) or not name:
            raise ArgumentError(f"map_table: the output column names must be strings, got {name!r}")
    if x == y:
        raise ArgumentError(f"map_table: x and y must be different columns, both are {x!r}")
    names = [str(c) for c in table.columns] if kind != "pyarrow" else list(table.schema.names)
    for name in (x, y):
        if name in names:
            raise ArgumentError(f"map_table: the table already has a column {name!r}; name the map's columns with "
                                f"x=... and y=...")
    points = _columns.points_of(table, column, where="map_table",
                                check=lambda n, d, copied: est._check_shape(n, d, copied))
    Y = est.fit_transform(points)
    xs, ys = np.ascontiguousarray(Y[:, 0]), np.ascontiguousarray(Y[:, 1])
    if kind == "pyarrow":
        import pyarrow as pa

        return table.append_column(pa.field(x, pa.float32(), nullable=False), pa.array(xs)) \
                    .append_column(pa.field(y, pa.float32(), nullable=False), pa.array(ys))
    if kind == "pandas":
        return table.assign(**{x: xs, y: ys})
    import polars as pl

    return table.with_columns(pl.Series(x, xs, dtype=pl.Float32), pl.Series(y, ys, dtype=pl.Float32))
