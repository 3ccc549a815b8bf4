"""Shards: the input as .npy / Parquet files in id order, their headers checked before any work,
read by the workers (rows or all of a shard)."""

from __future__ import annotations

import glob as _glob
import os
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import _columns, _core


@dataclass
class Shard:
    path: str
    kind: str  # "npy" or "parquet"
    rows: int
    column: Optional[str] = None  # parquet: the list column, or None for float columns


@dataclass
class ShardSet:
    """The shards of an input: files in id order, rows each, the common dimension."""

    shards: List[Shard]
    dims: int

    @property
    def rows(self) -> int:
        return int(sum(s.rows for s in self.shards))

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum([s.rows for s in self.shards])]).astype(np.int64)


def _bad(path: str, problem: str) -> _core.FileError:
    return _core.FileError(f"shard {path}: {problem}")


def _npy_header(path: str) -> Tuple[Tuple[int, ...], np.dtype, bool, int]:
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            return shape, dtype, fortran, f.tell()
    except OSError as e:
        raise _bad(path, f"cannot be read: {e.strerror or e}") from None
    except ValueError as e:
        raise _bad(path, f"is not a .npy file ({e}); write shards with numpy.save") from None


def _open_npy(path: str) -> Tuple[Shard, int]:
    shape, dtype, fortran, offset = _npy_header(path)
    if len(shape) != 2:
        raise _bad(path, f"holds an array of shape {shape}; shards must be [rows, dims]")
    if dtype.kind != "f" or dtype.itemsize not in (2, 4, 8):
        raise _bad(path, f"holds {dtype}; shards must be float16, float32 or float64")
    if fortran:
        raise _bad(path, "is in Fortran order; save it C-contiguous (numpy.ascontiguousarray)")
    want = offset + shape[0] * shape[1] * dtype.itemsize
    have = os.path.getsize(path)
    if have != want:
        raise _bad(path, f"is truncated or padded: {have} bytes, its header ({shape}, {dtype}) needs {want}")
    return Shard(path, "npy", int(shape[0])), int(shape[1])


def _parquet():
    try:
        import pyarrow
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("Parquet shards and outputs need pyarrow: pip install -r "
                          "python/requirements-distributed.txt") from None
    return pyarrow, pq


def _open_parquet(path: str) -> Tuple[Shard, int]:
    pa, pq = _parquet()
    try:
        f = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises ArrowInvalid and OSError subclasses
        raise _bad(path, f"is not a readable Parquet file ({e})") from None
    schema = f.schema_arrow
    rows = int(f.metadata.num_rows)
    try:  # the conventions of surfgrad._columns (the estimators and map_table read tables by them too)
        chosen, is_list = _columns.choose(schema)
    except _core.ArgumentError as e:
        raise _bad(path, str(e)) from None
    if not is_list:
        return Shard(path, "parquet", rows, None), len(chosen)
    t = schema.field(chosen).type
    if pa.types.is_fixed_size_list(t):
        dims = t.list_size
    else:
        first = next(f.iter_batches(batch_size=1, columns=[chosen]), None)
        dims = len(first.column(0)[0]) if first is not None and first.num_rows and first.column(0)[0].is_valid else 0
    return Shard(path, "parquet", rows, chosen), int(dims)


def open_shards(source: Any) -> ShardSet:
    """The shards of ``source``: a directory (its ``*.npy`` and ``*.parquet`` files), a glob, a
    file, or a list of files; sorted by name. Reads headers only; refuses (FileError naming the
    file) a file that is not a 2-D float array, is truncated, or whose dimension differs."""
    if isinstance(source, (list, tuple)):
        files = [os.fspath(p) for p in source]
    else:
        source = os.fspath(source)
        if os.path.isdir(source):
            files = sorted(p for p in _glob.glob(os.path.join(source, "*"))
                           if p.endswith((".npy", ".parquet")))
        elif any(c in source for c in "*?["):
            files = sorted(_glob.glob(source))
        elif not os.path.exists(source):
            raise _core.FileError(f"no shards in {source!r}: no such file or folder")
        else:
            files = [source]
    if not files:
        raise _core.FileError(f"no shards in {source!r}: expected .npy or .parquet files (a folder, a glob or "
                              "a list of files)")
    shards, dims = [], None
    for path in files:
        if not os.path.isfile(path):
            raise _core.FileError(f"shard {path}: no such file")
        if path.endswith(".npy"):
            shard, d = _open_npy(path)
        elif path.endswith(".parquet"):
            shard, d = _open_parquet(path)
        else:
            raise _bad(path, "is neither .npy nor .parquet")
        if shard.rows == 0:
            continue
        if d < 1:
            raise _bad(path, "has rows of 0 dimensions")
        if dims is not None and d != dims:
            raise _bad(path, f"has {d} dimensions, the shards before it {dims}")
        dims = d
        shards.append(shard)
    if not shards:
        raise _core.FileError(f"the shards of {source!r} hold no rows")
    return ShardSet(shards, int(dims))


def _read(shard: Shard, dims: int, rows: Optional[np.ndarray] = None) -> np.ndarray:
    """The shard's rows (all, or those numbered ``rows``) as float32 [n, dims], checked."""
    if shard.kind == "npy":
        try:
            a = np.load(shard.path, mmap_mode="r")
        except (OSError, ValueError) as e:
            raise _bad(shard.path, f"cannot be read: {e}") from None
        if a.shape != (shard.rows, dims):
            raise _bad(shard.path, f"changed while the job ran: shape {a.shape}, expected {(shard.rows, dims)}")
        x = np.ascontiguousarray(a if rows is None else a[rows], dtype=np.float32)
    else:
        pa, pq = _parquet()
        try:
            table = pq.read_table(shard.path, columns=[shard.column] if shard.column else None)
        except Exception as e:
            raise _bad(shard.path, f"cannot be read ({e})") from None
        try:  # read as the estimators read a table (surfgrad._columns): nulls, ragged rows, NaN named
            x = _columns.points_of(table, shard.column or list(table.schema.names), where="shard")
        except (_core.ArgumentError, _core.ShapeError) as e:
            raise _bad(shard.path, str(e).replace("shard: ", "", 1)) from None
        if x.shape[1] != dims:
            raise _bad(shard.path, f"has {x.shape[1]} values a row, expected {dims} (every embedding the same length)")
        if x.shape[0] != shard.rows:
            raise _bad(shard.path, f"holds {x.shape[0]} rows, its metadata {shard.rows}")
        if rows is not None:
            x = x[rows]
        x = np.ascontiguousarray(x, dtype=np.float32)
    if not np.isfinite(x).all():
        bad = int(np.argwhere(~np.isfinite(x))[0, 0])
        row = bad if rows is None else int(rows[bad])
        raise _bad(shard.path, f"row {row} holds NaN or infinity (also beyond float32's range)")
    return x
