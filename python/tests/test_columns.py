"""Tables in (surfgrad._columns): pyarrow arrays/tables, pandas and polars columns of embeddings read
as [N, D] float32 (a view of the Arrow values buffer where the layout allows, one copy at most
otherwise), sg.map_table, the hand-off to embedding-atlas (its loading path: pandas.read_parquet,
its row-id column, Arrow, the x/y columns cast to DOUBLE), and bad input naming the column.
Skipped where pyarrow / pandas / polars is not installed (requirements-dev.txt pins the first two)."""

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import surfgrad as sg
from surfgrad import _columns
from conftest import clusters

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

FAST = dict(n_neighbors=10, n_epochs=40, random_state=5)


@pytest.fixture(scope="module")
def data():
    X, labels = clusters(n_per=40, centers=3, dim=8, seed=2)
    return X, labels


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _fsl(X):
    return pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), X.shape[1])


# --- the layouts and which of them are copied ------------------------------------------------

def test_fixed_size_list_is_a_view_of_its_values_buffer(data):
    X, _ = data
    col = _fsl(X)
    p = _columns.points_of(col)
    assert p.dtype == np.float32 and p.shape == X.shape and p.flags["C_CONTIGUOUS"]
    assert _address(p) == col.values.buffers()[1].address  # no copy
    np.testing.assert_array_equal(p, X)
    part = col.slice(7, 50)  # a slice: still a view, at its offset
    q = _columns.points_of(part)
    assert _address(q) == col.values.buffers()[1].address + 7 * X.shape[1] * 4
    np.testing.assert_array_equal(q, X[7:57])


def test_list_with_regular_offsets_is_a_view(data):
    X, _ = data
    col = pa.array(list(X), type=pa.list_(pa.float32()))
    p = _columns.points_of(col)
    assert _address(p) == col.values.buffers()[1].address
    np.testing.assert_array_equal(p, X)
    large = pa.array(list(X), type=pa.large_list(pa.float32())).slice(3)
    np.testing.assert_array_equal(_columns.points_of(large), X[3:])


def test_chunks_and_other_widths_are_copied_once(data):
    X, _ = data
    col = _fsl(X)
    chunked = pa.chunked_array([col.slice(0, 10), col.slice(10, 0), col.slice(10)])
    seen = []
    p = _columns.points_of(chunked, check=lambda n, d, copied: seen.append((n, d, copied)))
    assert seen == [(len(X), X.shape[1], True)]
    np.testing.assert_array_equal(p, X)
    one = pa.chunked_array([col])
    seen.clear()
    assert _address(_columns.points_of(one, check=lambda *a: seen.append(a))) == col.values.buffers()[1].address
    assert seen == [(len(X), X.shape[1], False)]
    wide = pa.array(list(X.astype(np.float64)), type=pa.list_(pa.float64()))
    np.testing.assert_array_equal(_columns.points_of(wide), X)
    half = pa.array(list(X.astype(np.float16)), type=pa.list_(pa.float16()))
    np.testing.assert_array_equal(_columns.points_of(half), X.astype(np.float16).astype(np.float32))


def test_fixed_shape_tensor_extension(data):
    X, _ = data
    tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(X)
    np.testing.assert_array_equal(_columns.points_of(tensor), X)


def test_table_conventions_are_the_shards(data, tmp_path):
    X, _ = data
    n = len(X)
    ids = pa.array(np.arange(n))
    named = pa.table({"id": ids, "vec": _fsl(X), "embedding": pa.array(list(X))})
    np.testing.assert_array_equal(_columns.points_of(named), X)  # 'embedding' first
    first_list = pa.table({"id": ids, "text": pa.array(["a"] * n), "vec": _fsl(X)})
    np.testing.assert_array_equal(_columns.points_of(first_list), X)
    floats = pa.table({f"f{j}": X[:, j] for j in range(X.shape[1])})
    np.testing.assert_array_equal(_columns.points_of(floats), X)
    ints = pa.table({"a": np.arange(n), "b": np.arange(n) * 2})
    np.testing.assert_array_equal(_columns.points_of(ints, ["a", "b"]),
                                  np.stack([np.arange(n), np.arange(n) * 2], 1).astype(np.float32))
    with pytest.raises(sg.ArgumentError, match="float columns only"):
        _columns.points_of(ints)  # ints are not picked by the convention (an id column is not a dimension)
    # The distributed shards pick the same column (one definition: _columns.choose).
    from surfgrad.distributed.shards import _read, open_shards
    pq.write_table(first_list, tmp_path / "a.parquet")
    shards = open_shards(str(tmp_path / "a.parquet"))
    assert shards.shards[0].column == "vec" and shards.dims == X.shape[1]
    np.testing.assert_array_equal(_read(shards.shards[0], shards.dims), X)


def test_estimators_take_tables_and_columns(data):
    X, labels = data
    ref = sg.UMAP(**FAST).fit_transform(X)
    table = pa.table({"id": np.arange(len(X)), "embedding": _fsl(X)})
    for given in (table, table.column("embedding"), table.to_batches()[0], _fsl(X), pa.array(list(X))):
        np.testing.assert_array_equal(sg.UMAP(**FAST).fit_transform(given), ref)
    est = sg.TSNE(perplexity=10, max_iter=100, random_state=1)
    assert est.fit_transform(table).shape == (len(X), 2) and est.n_features_in_ == X.shape[1]


def test_pandas_columns(data):
    pd = pytest.importorskip("pandas")
    X, _ = data
    ref = sg.UMAP(**FAST).fit_transform(X)
    df = pd.DataFrame({"id": np.arange(len(X)), "embedding": list(X)})
    np.testing.assert_array_equal(sg.UMAP(**FAST).fit_transform(df), ref)
    np.testing.assert_array_equal(sg.UMAP(**FAST).fit_transform(df["embedding"]), ref)
    lists = pd.Series([list(map(float, row)) for row in X], name="e")
    np.testing.assert_array_equal(_columns.points_of(lists), X)
    arrow_backed = pa.table({"embedding": _fsl(X)}).to_pandas(types_mapper=pd.ArrowDtype)
    p = _columns.points_of(arrow_backed["embedding"])
    np.testing.assert_array_equal(p, X)
    plain = pd.DataFrame(X)  # numbers in every column: read as before, [N, columns]
    np.testing.assert_array_equal(sg.UMAP(**FAST).fit_transform(plain), ref)


def test_polars_columns(data):
    pl = pytest.importorskip("polars")
    X, _ = data
    ref = sg.UMAP(**FAST).fit_transform(X)
    df = pl.DataFrame({"id": np.arange(len(X)), "embedding": X})  # a 2-D array: an Array column
    assert isinstance(df.schema["embedding"], pl.Array)
    np.testing.assert_array_equal(sg.UMAP(**FAST).fit_transform(df), ref)
    np.testing.assert_array_equal(sg.UMAP(**FAST).fit_transform(df["embedding"]), ref)
    lists = pl.DataFrame({"emb": [list(map(float, r)) for r in X]})
    np.testing.assert_array_equal(_columns.points_of(lists), X)


# --- map_table and the hand-off to embedding-atlas ----------------------------------------------

def test_map_table_appends_x_and_y(data):
    X, _ = data
    ref = sg.UMAP(**FAST).fit_transform(X)
    table = pa.table({"id": np.arange(len(X)), "text": [f"t{i}" for i in range(len(X))], "embedding": _fsl(X)})
    out = sg.map_table(table, **FAST)
    assert out.schema.names == ["id", "text", "embedding", "x", "y"]
    assert out.schema.field("x").type == pa.float32() and out.schema.field("y").type == pa.float32()
    np.testing.assert_array_equal(np.stack([out["x"].to_numpy(), out["y"].to_numpy()], 1), ref)
    assert out.column("embedding").chunk(0).values.buffers()[1].address == \
        table.column("embedding").chunk(0).values.buffers()[1].address  # the input's columns are not copied
    batch = sg.map_table(table.to_batches()[0], **FAST)
    assert isinstance(batch, pa.RecordBatch) and batch.schema.names[-2:] == ["x", "y"]
    t = sg.map_table(table, method="tsne", perplexity=10, max_iter=100, random_state=0, x="tx", y="ty")
    assert t.schema.names[-2:] == ["tx", "ty"]


def test_map_table_pandas_and_polars(data):
    pd = pytest.importorskip("pandas")
    X, _ = data
    ref = sg.UMAP(**FAST).fit_transform(X)
    df = pd.DataFrame({"label": np.arange(len(X)) % 3, "embedding": list(X)})
    out = sg.map_table(df, **FAST)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["label", "embedding", "x", "y"]
    assert "x" not in df.columns  # the given frame is not changed
    assert out["x"].dtype == np.float32 and out["y"].dtype == np.float32
    np.testing.assert_array_equal(out[["x", "y"]].to_numpy(), ref)
    pl = pytest.importorskip("polars")
    pout = sg.map_table(pl.DataFrame({"embedding": X}), **FAST)
    assert pout.columns == ["embedding", "x", "y"] and pout.schema["x"] == pl.Float32
    np.testing.assert_array_equal(pout.select("x", "y").to_numpy(), ref)


@pytest.mark.parametrize("writer", ["pyarrow", "pandas"])
def test_written_map_loads_as_embedding_atlas_loads_it(data, tmp_path, writer):
    """embedding-atlas 0.26 (cli.py, utils.py, widget.py, its page): the CLI reads the file with
    pandas.read_parquet, adds a FILE_NAME column and an int row id `__row_index__`, turns the frame
    into Arrow (narwhals → pyarrow.Table.from_pandas) and writes it as the page's Parquet; the
    page (DuckDB-wasm) and the widget (DuckDB over the frame) select `"x"::DOUBLE, "y"::DOUBLE`.
    So: x and y by those names, floats, no nulls, finite, one a row, next to the input's columns."""
    pd = pytest.importorskip("pandas")
    X, labels = data
    table = pa.table({"id": np.arange(len(X)), "label": labels.astype(np.int32), "embedding": _fsl(X)})
    path = tmp_path / "map.parquet"
    if writer == "pyarrow":
        pq.write_table(sg.map_table(table, **FAST), path)
    else:
        sg.map_table(table.to_pandas(), **FAST).to_parquet(path)
    df = pd.read_parquet(path)  # embedding_atlas.utils.load_pandas_data
    df["FILE_NAME"] = str(path)
    df["__row_index__"] = range(df.shape[0])
    assert len(df) == len(X) and {"x", "y", "id", "label", "embedding"} <= set(df.columns)
    for c in ("x", "y"):
        assert df[c].dtype.kind == "f" and not df[c].isna().any() and np.isfinite(df[c].to_numpy()).all()
    arrow = pa.Table.from_pandas(df)  # embedding_atlas.utils.to_parquet_bytes
    sink = pa.BufferOutputStream()
    pq.write_table(arrow, sink)
    page = pq.read_table(pa.BufferReader(sink.getvalue()))
    for c in ("x", "y"):
        assert pa.types.is_floating(page.schema.field(c).type)
        assert page[c].null_count == 0
        np.testing.assert_array_equal(page[c].cast(pa.float64()).to_numpy(), df[c].to_numpy(np.float64))
    # The page (DuckDB-wasm) and the widget (DuckDB) run this SQL. In a process of its own that
    # ends by os._exit: duckdb 2.0's exit handlers free Python objects it cached (its import cache
    # holds pyarrow/pandas/numpy) after the interpreter is gone, which segfaulted the whole
    # suite's process at exit (free(0x1) under _duckdb in __run_exit_handlers, core dumps of
    # 2026-11-27 and -28, about one GLES suite run in five) though every test had passed.
    if importlib.util.find_spec("duckdb") is None:
        pytest.skip("duckdb is not installed (requirements-dev.txt pins it)")
    page_path = tmp_path / "page.parquet"
    pq.write_table(page, page_path)
    sql = f"SELECT \"x\"::DOUBLE AS x, \"y\"::DOUBLE AS y FROM read_parquet('{page_path}')"
    script = (
        "import os, sys, duckdb\n"
        "con = duckdb.connect()\n"
        f"rows = con.sql({sql!r}).fetchall()\n"
        "con.close()\n"
        "print(len(rows), sum(1 for x, y in rows if isinstance(x, float) and isinstance(y, float)))\n"
        "sys.stdout.flush()\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(X)), str(len(X))]


# --- bad input --------------------------------------------------------------------------------

def test_bad_columns_are_named(data):
    X, _ = data
    n = len(X)
    table = pa.table({"id": np.arange(n), "text": pa.array(["a"] * n), "embedding": _fsl(X)})
    with pytest.raises(sg.ArgumentError, match="no column 'emb'"):
        sg.map_table(table, column="emb", **FAST)
    with pytest.raises(sg.ArgumentError, match="column 'text' is string"):
        sg.map_table(table, column="text", **FAST)
    with pytest.raises(sg.ArgumentError, match="column 'text' is string; the point columns must be numbers"):
        _columns.points_of(table, ["id", "text"])
    words = pa.table({"embedding": pa.array([["a", "b"]] * n)})
    with pytest.raises(sg.ArgumentError, match="column 'embedding' is list<item: string>"):
        sg.UMAP().fit(words)
    ragged = pa.table({"embedding": pa.array([[1.0, 2.0]] * 5 + [[1.0]] + [[1.0, 2.0]] * 4)})
    with pytest.raises(sg.ShapeError, match="column 'embedding': row 5 has 1 values.*ragged"):
        sg.UMAP().fit(ragged)
    rows = [list(map(float, r)) for r in X]
    nulls = pa.table({"embedding": pa.array(rows[:9] + [None] + rows[10:])})
    with pytest.raises(sg.ArgumentError, match="column 'embedding': row 9 is null"):
        sg.UMAP().fit(nulls)
    inner = pa.table({"embedding": pa.array(rows[:4] + [[None] + rows[4][1:]] + rows[5:])})
    with pytest.raises(sg.ArgumentError, match="column 'embedding': row 4 holds a null value"):
        sg.UMAP().fit(inner)
    Xn = X.copy()
    Xn[17, 3] = np.nan
    with pytest.raises(sg.ArgumentError, match="column 'embedding': row 17 holds NaN"):
        sg.map_table(pa.table({"embedding": _fsl(Xn)}), **FAST)
    with pytest.raises(sg.ArgumentError, match="row 17 holds NaN"):
        sg.UMAP().fit(pa.chunked_array([_fsl(Xn)[:10], _fsl(Xn)[10:]]))  # found in the copy too
    Xb = X.astype(np.float64)
    Xb[3, 0] = 1e300  # beyond float32
    with pytest.raises(sg.ArgumentError, match="row 3 holds NaN or infinity"):
        sg.UMAP().fit(pa.table({"embedding": pa.array(list(Xb))}))
    with pytest.raises(sg.ShapeError, match="column 'embedding' has no rows"):
        sg.map_table(table.slice(0, 0), **FAST)
    with pytest.raises(sg.ArgumentError, match="needs an 'embedding' list column"):
        sg.UMAP().fit(pa.table({"id": np.arange(n), "text": pa.array(["a"] * n)}))


def test_map_table_refuses_what_it_cannot_do(data):
    X, _ = data
    table = pa.table({"x": np.arange(len(X)), "embedding": _fsl(X)})
    with pytest.raises(sg.ArgumentError, match="already has a column 'x'"):
        sg.map_table(table, **FAST)
    with pytest.raises(sg.ArgumentError, match="method must be 'umap' or 'tsne'"):
        sg.map_table(table, method="pca")
    with pytest.raises(sg.ArgumentError, match="perplexity"):
        sg.map_table(table, x="mx", y="my", perplexity=30)  # a t-SNE option for UMAP
    with pytest.raises(sg.ArgumentError, match="expected a pyarrow Table"):
        sg.map_table(X)


def test_bad_pandas_columns(data):
    pd = pytest.importorskip("pandas")
    X, _ = data
    rows = list(X)
    with pytest.raises(sg.ShapeError, match="column 'embedding': row 2 has 7 values, row 0 has 8"):
        sg.UMAP().fit(pd.DataFrame({"embedding": rows[:2] + [X[2, :7]] + rows[3:]}))
    with pytest.raises(sg.ArgumentError, match="column 'embedding': row 1 is null"):
        sg.UMAP().fit(pd.DataFrame({"embedding": rows[:1] + [None] + rows[2:]}))
    with pytest.raises(sg.ArgumentError, match="column 'name': row 0 is str"):
        sg.map_table(pd.DataFrame({"name": ["a"] * len(X), "embedding": rows}), column="name", **FAST)
    with pytest.raises(sg.ArgumentError, match="no column 'emb'"):
        sg.map_table(pd.DataFrame({"embedding": rows}), column="emb", **FAST)
    with pytest.raises(sg.ShapeError, match="no rows"):
        sg.map_table(pd.DataFrame({"embedding": []}), **FAST)


_PEAK = r'''
import sys
import numpy as np, pyarrow as pa
import surfgrad as sg
from surfgrad import manifold

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

layout, n, d = sys.argv[1], 1_000_000, 50
sg.device()
base = status("VmRSS:")
values = pa.array(np.random.default_rng(0).standard_normal(n * d, dtype=np.float32))
if layout == "fsl":
    col = pa.FixedSizeListArray.from_arrays(values, d)
else:
    col = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * d), values)
table = pa.table({"embedding": col})
del values, col
def fake_map(points, out, *args):  # everything fit does but the native map (lavapipe would take minutes)
    out[:] = points[:, :2]
    return {"phases": [("optimise", 0.0)], "knn_recall": -1.0, "k": 15}
manifold._core.map_points = fake_map
manifold._core.check_map_job = lambda *a: None  # lavapipe binds 128 MiB a buffer: 1M x 50 is refused here
open("/proc/self/clear_refs", "w").write("5")  # VmHWM from here
Y = sg.UMAP(random_state=0).fit_transform(table)
print((status("VmHWM:") - base) / (n * d * 4))
'''


@pytest.mark.parametrize("layout", ["fsl", "list"])
def test_host_peak_of_a_million_rows(layout):
    """issue 33's target: fit on a 1M x 50 float32 list column peaks at <= 1.2x the points' bytes
    (the column itself included: the points are read in place, checked in passes)."""
    import subprocess
    import sys
    from pathlib import Path

    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the peak")
    run = subprocess.run([sys.executable, "-c", _PEAK, layout], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    ratio = float(run.stdout.strip().splitlines()[-1])
    print(f"{layout}: host peak over the RSS before the column = {ratio:.3f} x the points' bytes")
    assert ratio <= 1.2
