"""`surfgrad map … --tiles DIR` (docs/tiles.md) read back the way a browser would, with pyarrow: every
row exactly once, each tile inside its quadrant and within its row limit, the root a spread sample,
the manifest's tree the tiles' own; and bad folders refused without a trace. Needs the CLI built
with Arrow (build/surfgrad, or SURFGRAD_CLI); skipped otherwise. About 10 s on lavapipe."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
ipc = pytest.importorskip("pyarrow.ipc")

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("SURFGRAD_CLI", ROOT / "build" / "surfgrad"))
N, ROWS = 3000, 200


def _run(*args):
    return subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def tiled(tmp_path_factory):
    if not CLI.exists() or "--tiles" not in _run("map", "--help").stdout:
        pytest.skip(f"{CLI} is not built with Arrow (--tiles)")
    d = tmp_path_factory.mktemp("tiles")
    rng = np.random.default_rng(3)
    labels = np.arange(N, dtype=np.int32) % 5
    x = (rng.standard_normal((N, 8)) + 6 * np.eye(8)[labels]).astype(np.float32)
    np.save(d / "x.npy", x)
    np.save(d / "labels.npy", labels)
    done = _run("map", d / "x.npy", "--labels", d / "labels.npy", "-o", d / "map", "--method", "umap",
                "--epochs", 30, "--tiles", d / "tiles", "--tile-rows", ROWS)
    assert done.returncode == 0, done.stderr
    return d, np.load(d / "map.npy"), labels


def _tiles(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    tiles = {}
    for t in manifest["tiles"]:
        reader = ipc.open_file(folder / f"{t['key']}.feather")
        assert reader.num_record_batches == 1  # deepscatter reads one batch a tile
        tiles[t["key"]] = (t, reader.get_batch(0), reader.schema)
    return manifest, tiles


def test_every_row_once_with_its_place_and_label(tiled):
    d, xy, labels = tiled
    manifest, tiles = _tiles(d / "tiles")
    assert manifest["format"] == "surfgrad-tiles" and manifest["version"] == 1
    assert manifest["points"] == N and manifest["tile_count"] == len(tiles) > 5
    assert [c["name"] for c in manifest["columns"]] == ["x", "y", "ix", "label"]
    ix = np.concatenate([b.column("ix").to_numpy() for _, b, _ in tiles.values()])
    assert len(ix) == N and np.array_equal(np.sort(ix), np.arange(N))
    for t, b, _ in tiles.values():
        i = b.column("ix").to_numpy()
        assert b.num_rows == t["rows"] <= ROWS
        assert np.array_equal(b.column("x").to_numpy(), xy[i, 0]) and np.array_equal(b.column("y").to_numpy(), xy[i, 1])
        assert np.array_equal(b.column("label").to_numpy(), labels[i])


def test_tiles_lie_in_their_quadrants(tiled):
    d, xy, _ = tiled
    manifest, tiles = _tiles(d / "tiles")
    x0, y0, x1, y1 = manifest["bounds"]
    assert x0 <= xy[:, 0].min() and xy[:, 0].max() < x1 and y0 <= xy[:, 1].min() and xy[:, 1].max() < y1
    for key, (t, b, schema) in tiles.items():
        z, tx, ty = map(int, key.split("/"))
        w, h = (x1 - x0) / 2**z, (y1 - y0) / 2**z
        bx0, by0, bx1, by1 = t["bounds"]
        assert np.allclose([bx0, by0, bx1, by1], [x0 + tx * w, y0 + ty * h, x0 + (tx + 1) * w, y0 + (ty + 1) * h],
                           rtol=1e-5, atol=1e-5)
        px, py = b.column("x").to_numpy(), b.column("y").to_numpy()
        assert (px >= bx0).all() and (px < bx1).all() and (py >= by0).all() and (py < by1).all(), key
        # The tree: the tile's own metadata names the manifest's children, each one level down inside it.
        assert json.loads(schema.metadata[b"children"]) == t["children"]
        for c in t["children"]:
            cz, cx, cy = map(int, c.split("/"))
            assert cz == z + 1 and cx // 2 == tx and cy // 2 == ty
        if t["children"]:
            assert t["rows"] == ROWS  # only a full tile hands points down


def test_root_is_a_spread_sample(tiled):
    d, xy, _ = tiled
    manifest, tiles = _tiles(d / "tiles")
    _, root, _ = tiles[manifest["root"]]
    x0, y0, x1, y1 = manifest["bounds"]
    cells = lambda px, py: np.clip(((px - x0) / (x1 - x0) * 4).astype(int), 0, 3) * 4 + \
        np.clip(((py - y0) / (y1 - y0) * 4).astype(int), 0, 3)
    everyone = np.bincount(cells(xy[:, 0], xy[:, 1]), minlength=16) / N
    sample = np.bincount(cells(root.column("x").to_numpy(), root.column("y").to_numpy()), minlength=16) / ROWS
    # A uniform sample of 200: every 4×4 cell's share within a few standard errors of the whole's.
    assert np.all(np.abs(sample - everyone) <= 4 * np.sqrt(everyone * (1 - everyone) / ROWS) + 0.01)


def test_string_labels_are_named_in_the_manifest(tiled, tmp_path):
    d, _, _ = tiled
    pq = pytest.importorskip("pyarrow.parquet")
    x = np.load(d / "x.npy")
    names = np.array(["emu", "cat", "dog"])[np.arange(N) % 3]
    pq.write_table(pa.table({"embedding": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), x.shape[1]),
                             "kind": names}), tmp_path / "t.parquet", row_group_size=500)
    done = _run("map", tmp_path / "t.parquet", "--labels-column", "kind", "-o", tmp_path / "m.parquet",
                "--method", "umap", "--epochs", 5, "--tiles", tmp_path / "tiles", "--tile-rows", ROWS)
    assert done.returncode == 0, done.stderr
    manifest, tiles = _tiles(tmp_path / "tiles")
    assert manifest["label_names"] == ["emu", "cat", "dog"]
    for _, b, _ in tiles.values():
        ix, lab = b.column("ix").to_numpy(), b.column("label").to_numpy()
        assert (np.array(manifest["label_names"])[lab] == names[ix]).all()
    m = pq.read_table(tmp_path / "m.parquet")  # the column itself, carried as `label`
    assert m.column("label").to_pylist() == names.tolist()


def test_bad_folders_are_refused_and_nothing_is_left(tiled, tmp_path):
    d, _, _ = tiled
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for target, words in [(full, "not empty"), (a_file, "is a file"), (tmp_path / "no" / "such", "does not exist")]:
        done = _run("map", d / "x.npy", "-o", tmp_path / "m", "--method", "umap", "--epochs", 5, "--tiles", target)
        assert done.returncode != 0 and words in done.stderr and str(target.name) in done.stderr, done.stderr
    assert (full / "keep.txt").read_text() == "mine" and a_file.read_text() == "x"
    # --force replaces the folder, and no staging folder stays beside it.
    done = _run("map", d / "x.npy", "-o", tmp_path / "m", "--method", "umap", "--epochs", 5, "--tiles", full, "--force")
    assert done.returncode == 0, done.stderr
    assert not (full / "keep.txt").exists() and (full / "manifest.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
