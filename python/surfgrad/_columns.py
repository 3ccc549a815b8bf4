"""Points from the columns users keep their embeddings in: pyarrow arrays, chunked arrays, tables
and record batches, pandas Series/DataFrames and polars Series/DataFrames, read as [N, D] float32
without a copy where the layout allows:

- a ``fixed_size_list<float32>`` (or a fixed-shape tensor) with no nulls in one chunk: a numpy
  view of its values buffer (no copy);
- a ``list<float32>`` / ``large_list<float32>`` in one chunk whose rows all have D values: its
  values buffer, reshaped (no copy);
- several chunks, other float widths (float16/float64) or several numeric columns: one copy into
  the [N, D] float32 array, chunk by chunk (no intermediate);
- a pandas object column of lists/arrays: one row at a time into the [N, D] array.

The column conventions are the distributed shards' (``surfgrad.distributed.shards`` uses
:func:`choose`): a named column (or a list of numeric columns); else the ``embedding`` column;
else the first list column; else every column, all of them floats (one a dimension).

pyarrow, pandas and polars stay optional: nothing here imports them until such an input comes.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._core import ArgumentError, ShapeError

Column = Union[None, str, Sequence[str]]
Check = Optional[Callable[[int, int, bool], Any]]  # (rows, dims, will be copied) before any copy

_ROWS_A_PASS = 1 << 16  # rows a finite-check pass reads (its bool temporary: 64K x D bytes)


def first_non_finite(x: np.ndarray) -> int:
    """The first row of ``x`` ([N, D]) holding NaN or infinity, or -1; reads ``x`` in passes of
    64K rows, so the check's temporary stays small (np.isfinite(x) would be N x D bytes)."""
    for start in range(0, x.shape[0], _ROWS_A_PASS):
        part = x[start:start + _ROWS_A_PASS]
        ok = np.isfinite(part).all(axis=1)
        if not ok.all():
            return start + int(np.argmin(ok))
    return -1


def _module(x: Any) -> str:
    return type(x).__module__.split(".")[0]


def is_columnar(x: Any) -> bool:
    """Whether ``x`` is a pyarrow / pandas / polars object this module reads."""
    return _module(x) in ("pyarrow", "pandas", "polars")


# ---------------------------------------------------------------------------------------------
# The conventions (one place: the estimators, map_table and the distributed shards).

def _is_list(t: Any) -> bool:
    import pyarrow as pa

    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _value_type(t: Any) -> Any:
    import pyarrow as pa

    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    return t.value_type


def choose(schema: Any, column: Column = None) -> Tuple[Union[str, List[str]], bool]:
    """The column(s) of an Arrow ``schema`` that hold the points: (a name, True) for a list
    column, (names, False) for numeric columns, one a dimension. ``column``: a name, a list of
    names, or None for the convention (``embedding``; else the first list column; else every
    column, all floats). Raises ArgumentError saying what is wrong (callers add the file)."""
    import pyarrow as pa

    names = list(schema.names)
    if column is not None and not isinstance(column, str):
        cols = list(column)
        if not cols:
            raise ArgumentError("column: an empty list of columns")
        for c in cols:
            if c not in names:
                raise ArgumentError(f"no column {c!r} (columns: {', '.join(map(repr, names))})")
            t = schema.field(c).type
            if not (pa.types.is_floating(t) or pa.types.is_integer(t)):
                raise ArgumentError(f"column {c!r} is {t}; the point columns must be numbers (one a dimension)")
        return cols, False
    if column is None:
        lists = [f.name for f in schema if _is_list(f.type)]
        if "embedding" in names:
            column = "embedding"
        elif lists:
            column = lists[0]
        else:
            floats = [f.name for f in schema if pa.types.is_floating(f.type)]
            if not floats or len(floats) != len(names):
                raise ArgumentError("needs an 'embedding' list column, a list column, or float columns only "
                                    f"(one a dimension); columns: {_describe(schema)}")
            return floats, False
    if column not in names:
        raise ArgumentError(f"no column {column!r} (columns: {', '.join(map(repr, names)) or 'none'})")
    t = schema.field(column).type
    if pa.types.is_floating(t) or pa.types.is_integer(t):
        return [column], False  # one number a row: 1-D points
    if not _is_list(t) or not pa.types.is_floating(_value_type(t)):
        raise ArgumentError(f"column {column!r} is {t}; it must be a list of floats (one embedding a row), "
                            "e.g. fixed_size_list<float>[D] or list<float>")
    return column, True


def _describe(schema: Any) -> str:
    return ", ".join(f"{f.name!r} {f.type}" for f in schema) or "none"


# ---------------------------------------------------------------------------------------------
# Arrow arrays → [N, D] float32.

def _check_no_nulls(arr: Any, name: str, offset: int) -> None:
    if arr.null_count:
        import pyarrow.compute as pc

        bad = int(pc.index(arr.is_null(), True).as_py())
        raise ArgumentError(f"column {name!r}: row {offset + bad} is null (empty); every row needs an embedding")


def _list_view(arr: Any, name: str, offset: int, dims: Optional[int]) -> Tuple[np.ndarray, int]:
    """One chunk (no nulls) of a list column as [n, D] values in its own dtype: a view of the
    values buffer where the offsets are regular (fixed-size lists always are)."""
    import pyarrow as pa

    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    n = len(arr)
    if pa.types.is_fixed_size_list(arr.type):
        d = arr.type.list_size
        values = arr.values.slice(arr.offset * d, n * d)
    else:
        offsets = arr.offsets.to_numpy()  # this slice's n + 1 offsets (a view)
        if dims is None:
            dims = int(offsets[1] - offsets[0]) if n else 0
        d = dims
        lengths = np.diff(offsets)
        if n and (lengths != d).any():
            bad = int(np.argmax(lengths != d))
            raise ShapeError(f"column {name!r}: row {offset + bad} has {lengths[bad]} values, row "
                             f"{offset if dims is None else 0} has {d}; every embedding must have the same length "
                             "(ragged lists)")
        values = arr.values.slice(int(offsets[0]), n * d)
    if dims is not None and d != dims:
        raise ShapeError(f"column {name!r}: rows from {offset} have {d} values, the rows before {dims}")
    if values.null_count:
        bad = int(np.argmax(np.asarray(values.is_null())))
        raise ArgumentError(f"column {name!r}: row {offset + bad // max(d, 1)} holds a null value")
    flat = values.to_numpy(zero_copy_only=True)  # floats with no nulls: a view
    return flat.reshape(n, d), d


def _chunks_of(x: Any) -> List[Any]:
    import pyarrow as pa

    if isinstance(x, pa.ChunkedArray):
        return [c for c in x.chunks if len(c)] or list(x.chunks[:1])
    return [x]


def _arrow_list(x: Any, name: str, check: Check) -> np.ndarray:
    """A list column (Array or ChunkedArray) as [N, D] float32: a view for one float32 chunk."""
    import pyarrow as pa

    t = x.type.storage_type if isinstance(x.type, pa.BaseExtensionType) else x.type
    if not _is_list(t):
        raise ArgumentError(f"column {name!r} is {x.type}; it must be a list of floats (one embedding a row)")
    if not pa.types.is_floating(t.value_type):
        raise ArgumentError(f"column {name!r} is {x.type}; its values must be floats")
    n = len(x)
    _check_no_nulls(x, name, 0)
    chunks = _chunks_of(x)
    if n == 0:
        raise ShapeError(f"column {name!r} has no rows (an empty table)")
    first, d = _list_view(chunks[0], name, 0, t.list_size if pa.types.is_fixed_size_list(t) else None)
    if d < 1:
        raise ShapeError(f"column {name!r}: its embeddings have 0 values")
    copied = len(chunks) > 1 or first.dtype != np.float32
    if check is not None:
        check(n, d, copied)
    if not copied:
        return _done(first, name)
    out = np.empty((n, d), dtype=np.float32)
    row = 0
    with np.errstate(over="ignore"):
        for i, chunk in enumerate(chunks):
            view = first if i == 0 else _list_view(chunk, name, row, d)[0]
            out[row:row + len(view)] = view
            row += len(view)
    return _done(out, name)


def _arrow_numbers(columns: Sequence[Tuple[str, Any]], check: Check) -> np.ndarray:
    """Numeric columns (Arrays or ChunkedArrays), one a dimension, as [N, D] float32 (a copy)."""
    n = len(columns[0][1])
    for name, col in columns:
        _check_no_nulls(col, name, 0)
    if n == 0:
        raise ShapeError(f"column {columns[0][0]!r} has no rows (an empty table)")
    if check is not None:
        check(n, len(columns), True)
    out = np.empty((n, len(columns)), dtype=np.float32)
    for j, (_, col) in enumerate(columns):
        row = 0
        for chunk in _chunks_of(col):
            values = chunk.to_numpy(zero_copy_only=False)
            with np.errstate(over="ignore"):
                out[row:row + len(values), j] = values
            row += len(values)
    return _done(out, ", ".join(name for name, _ in columns))


def _from_arrow(x: Any, column: Column, check: Check) -> np.ndarray:
    import pyarrow as pa

    if isinstance(x, (pa.Table, pa.RecordBatch)):
        chosen, is_list = choose(x.schema, column)
        if is_list:
            return _arrow_list(x.column(chosen), chosen, check)
        return _arrow_numbers([(c, x.column(c)) for c in chosen], check)
    if isinstance(x, (pa.Array, pa.ChunkedArray)):
        name = column if isinstance(column, str) else "<array>"
        t = x.type.storage_type if isinstance(x.type, pa.BaseExtensionType) else x.type
        if pa.types.is_floating(t) or pa.types.is_integer(t):
            return _arrow_numbers([(name, x)], check)
        return _arrow_list(x, name, check)
    raise ArgumentError(f"cannot read points from a pyarrow {type(x).__name__}; pass a Table, a RecordBatch, "
                        "an Array or a ChunkedArray")


# ---------------------------------------------------------------------------------------------
# pandas and polars.

def _pandas_series(s: Any, name: str, check: Check) -> np.ndarray:
    import pandas as pd

    dtype = s.dtype
    if isinstance(dtype, pd.ArrowDtype):  # Arrow-backed: its chunked array, no copy
        return _from_arrow(s.array.__arrow_array__(), name, check)
    if dtype.kind in "fiu":
        return _points_2d(np.asarray(s).reshape(-1, 1), name, check)
    if dtype.kind != "O":
        raise ArgumentError(f"column {name!r} is {dtype}; it must hold lists or arrays of floats (one a row)")
    values = s.to_numpy()
    n = len(values)
    if n == 0:
        raise ShapeError(f"column {name!r} has no rows (an empty table)")
    d = None
    for i, v in enumerate(values):
        if v is None or (isinstance(v, float) and v != v):
            raise ArgumentError(f"column {name!r}: row {i} is null (empty); every row needs an embedding")
        if not hasattr(v, "__len__") or isinstance(v, (str, bytes)):
            raise ArgumentError(f"column {name!r}: row {i} is {type(v).__name__}, not a list of floats")
        if d is None:
            d = len(v)
        elif len(v) != d:
            raise ShapeError(f"column {name!r}: row {i} has {len(v)} values, row 0 has {d}; every embedding must "
                             "have the same length (ragged lists)")
    if d < 1:
        raise ShapeError(f"column {name!r}: its embeddings have 0 values")
    if check is not None:
        check(n, d, True)
    out = np.empty((n, d), dtype=np.float32)
    try:
        with np.errstate(over="ignore"):
            for i, v in enumerate(values):
                out[i] = v
    except (TypeError, ValueError) as e:
        raise ArgumentError(f"column {name!r}: row {i} is not a list of numbers ({e})") from None
    return _done(out, name)


def _pandas_schema_column(df: Any, column: Column) -> Tuple[Any, Column]:
    """Where ``column`` is None: the pandas frame's convention column(s), by the shards' rule."""
    if column is not None:
        return df, column
    names = [str(c) for c in df.columns]
    if "embedding" in names:
        return df, "embedding"
    for c in df.columns:
        s = df[c]
        if s.dtype.kind == "O" and len(s) and hasattr(s.iloc[0], "__len__") and not isinstance(s.iloc[0], str):
            return df, c
        if "list" in str(s.dtype) or "fixed_size_list" in str(s.dtype):
            return df, c
    floats = [c for c in df.columns if df[c].dtype.kind == "f"]
    if not floats or len(floats) != len(names):
        raise ArgumentError("needs an 'embedding' list column, a list column, or float columns only (one a "
                            f"dimension); columns: {', '.join(f'{c!r} {df[c].dtype}' for c in df.columns) or 'none'}")
    return df, floats


def _from_pandas(x: Any, column: Column, check: Check) -> np.ndarray:
    import pandas as pd

    if isinstance(x, pd.Series):
        return _pandas_series(x, str(x.name) if x.name is not None else "<series>", check)
    if not isinstance(x, pd.DataFrame):
        raise ArgumentError(f"cannot read points from a pandas {type(x).__name__}; pass a DataFrame or a Series")
    x, column = _pandas_schema_column(x, column)
    if isinstance(column, str):
        if column not in x.columns:
            raise ArgumentError(f"no column {column!r} (columns: {', '.join(map(repr, map(str, x.columns)))})")
        return _pandas_series(x[column], column, check)
    cols = list(column)
    for c in cols:
        if c not in x.columns:
            raise ArgumentError(f"no column {c!r} (columns: {', '.join(map(repr, map(str, x.columns)))})")
        if x[c].dtype.kind not in "fiu":
            raise ArgumentError(f"column {c!r} is {x[c].dtype}; the point columns must be numbers (one a dimension)")
        if x[c].isna().any():
            bad = int(np.argmax(x[c].isna().to_numpy()))
            raise ArgumentError(f"column {c!r}: row {bad} is null (NaN)")
    return _points_2d(x[cols].to_numpy(dtype=np.float32), ", ".join(map(str, cols)), check)


def _from_polars(x: Any, column: Column, check: Check) -> np.ndarray:
    import polars as pl

    if isinstance(x, pl.Series):
        return _from_arrow(x.to_arrow(), x.name or "<series>", check)
    if isinstance(x, pl.LazyFrame):
        raise ArgumentError("a polars LazyFrame: collect() it first")
    if not isinstance(x, pl.DataFrame):
        raise ArgumentError(f"cannot read points from a polars {type(x).__name__}; pass a DataFrame or a Series")
    chosen, is_list = choose(x.head(0).to_arrow().schema, column)
    if is_list:
        return _arrow_list(x.get_column(chosen).to_arrow(), chosen, check)
    return _arrow_numbers([(c, x.get_column(c).to_arrow()) for c in chosen], check)


def _points_2d(a: np.ndarray, name: str, check: Check) -> np.ndarray:
    if a.shape[0] == 0:
        raise ShapeError(f"column {name!r} has no rows (an empty table)")
    if check is not None:
        check(a.shape[0], a.shape[1], not (a.dtype == np.float32 and a.flags["C_CONTIGUOUS"]))
    return _done(a, name)


def _done(points: np.ndarray, name: str) -> np.ndarray:
    """[N, D] float32 C-contiguous (converted once where it is not), finite."""
    if points.dtype != np.float32 or not points.flags["C_CONTIGUOUS"]:
        with np.errstate(over="ignore"):
            points = np.ascontiguousarray(points, dtype=np.float32)
    bad = first_non_finite(points)
    if bad >= 0:
        raise ArgumentError(f"column {name!r}: row {bad} holds NaN or infinity (float32)")
    return points


# ---------------------------------------------------------------------------------------------

def points_of(x: Any, column: Column = None, check: Check = None, where: str = "fit") -> Any:
    """``x`` as [N, D] float32 points (a read-only view where the layout allows), checked for
    nulls, ragged rows and NaN/infinity, each error naming the column; ``check(N, D, copied)``
    runs before anything is copied (the estimators' memory check). Anything that is not a
    pyarrow / pandas / polars object is returned as it is (numpy's path reads it), as is a
    pandas or polars frame of plain numeric columns when no ``column`` is named."""
    kind = _module(x)
    if kind not in ("pyarrow", "pandas", "polars"):
        return x
    if column is None and kind in ("pandas", "polars") and _plain_frame(x):
        return x  # numbers in every column: numpy reads the frame as [N, columns], as before
    try:
        if kind == "pyarrow":
            points = _from_arrow(x, column, check)
        elif kind == "pandas":
            points = _from_pandas(x, column, check)
        else:
            points = _from_polars(x, column, check)
    except ArgumentError as e:
        raise type(e)(f"{where}: {e}") from None
    except ShapeError as e:
        raise type(e)(f"{where}: {e}") from None
    return points


def _plain_frame(x: Any) -> bool:
    """A pandas / polars DataFrame whose columns are all plain numbers."""
    if type(x).__name__ != "DataFrame":
        return False
    if _module(x) == "pandas":
        return len(x.columns) > 0 and all(x[c].dtype.kind in "fiub" for c in x.columns)
    return x.width > 0 and all(dt.is_numeric() for dt in x.schema.values())
