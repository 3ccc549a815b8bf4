"""surfgrad.distributed on local Ray clusters of worker processes (lavapipe where there is no GPU):
recall against one process's neighbour descent, the same graph bits for 1, 2 and 4 workers and
after a killed worker, .npy and Parquet shards, the map's outputs, and the errors (unreachable
cluster, malformed shards, nothing half-written).
Run by scripts/test_distributed.sh."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import surfgrad as sg
import surfgrad.distributed as sgd
import surfgrad.distributed.tasks as sgd_tasks

K = 10


def blobs(n, dim, centers, seed):
    """Gaussian clusters of different spreads: points [n, dim] float32."""
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(centers, dim)) * 6.0
    which = rng.integers(0, centers, n)
    scale = rng.uniform(0.5, 2.0, centers)[which, None]
    return (means[which] + rng.normal(size=(n, dim)) * scale).astype(np.float32)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """6,000 points × 24 in three .npy shards of uneven sizes (float32, float64, float32)."""
    folder = tmp_path_factory.mktemp("shards")
    x = blobs(6000, 24, 12, seed=5)
    bounds = [0, 1700, 4100, 6000]
    for i in range(3):
        part = x[bounds[i]:bounds[i + 1]]
        np.save(folder / f"part-{i}.npy", part.astype(np.float64) if i == 1 else part)
    return folder, x


def graph(folder, workers, **kw):
    return sgd.knn_graph(folder, K, workers=workers, points_per_cluster=1000, seed=3, verbose=False, **kw)


@pytest.fixture(scope="module")
def reference(data):
    folder, _ = data
    return graph(folder, 2)


def test_graph_is_good_and_identical_for_1_2_4_workers(data, reference):
    folder, x = data
    rows = np.arange(0, len(x), 7)
    exact = sgd.exact_neighbours(x, rows, K)
    r = sgd.recall(reference.indices, exact, rows)
    assert r >= 0.97, f"recall@{K} {r}"
    assert reference.report["clusters"] == 6
    assert reference.indices.dtype == np.int32 and reference.indices.shape == (6000, K)
    assert (np.diff(reference.distances, axis=1) >= 0).all()
    for workers in (1, 4):
        g = graph(folder, workers, recall_sample=800 if workers == 4 else 0)
        assert np.array_equal(g.indices, reference.indices), f"{workers} workers: other neighbours"
        assert np.array_equal(g.distances.view(np.uint32), reference.distances.view(np.uint32)), workers
        assert np.array_equal(g.start.view(np.uint32), reference.start.view(np.uint32)), workers
        assert len(g.report["workers"]) >= min(workers, 2)
    # The recall the cluster reports (exact lists on the GPU, eight runs of 100 consecutive rows)
    # equals the host's float64 measure on those rows, up to near ties: the cluster's exact lists
    # are float32 sums, and a K-th neighbour within rounding of the next may fall the other way
    # (one pair in 8,000 on lavapipe since CPU adapters' two-row kNN kernel, 73681a4). Two such
    # pairs at most; a wrong recall computation would be off by far more.
    assert "knn_recall" not in reference.report
    sampled = np.concatenate([np.arange(r * (len(x) // 8), r * (len(x) // 8) + 100) for r in range(8)])
    host = sgd.recall(reference.indices, sgd.exact_neighbours(x, sampled, K), sampled)
    assert g.report["recall_sample"] == 800
    assert abs(g.report["knn_recall"] - host) <= 2 / (800 * K) + 1e-9, (g.report["knn_recall"], host)


def test_gpu_tasks_without_gpus_fail_fast_instead_of_waiting(data):
    """On this GPU-less machine a local cluster has no GPUs: tasks asking for them would wait
    forever. Refused within seconds, naming the option and the fix."""
    folder, _ = data
    t0 = time.perf_counter()
    with pytest.raises(sgd.ClusterError, match=r"gpus_per_task = 0.25 needs a node with at least 1 GPU.*at most 0"):
        sgd.map_shards(folder, None, workers=1, gpus_per_task=0.25, num_gpus=0, verbose=False)
    assert time.perf_counter() - t0 < 60
    with pytest.raises(sg.ArgumentError, match="gpus_per_task"):
        graph(folder, 1, gpus_per_task=1.5)


def test_gpu_tasks_take_the_gpu_ray_assigned_on_a_node_with_several(monkeypatch):
    import ray

    class Context:
        def get_node_id(self):
            return "node-a"

    monkeypatch.setattr(ray, "get_runtime_context", lambda: Context())
    for gpus_on_node, assigned, named, expected in ((2, [1], "", "#1"), (2, ["0"], "", "#0"), (1, [0], "", ""),
                                                    (2, [], "", ""), (2, [1], "H200", "H200")):
        monkeypatch.setattr(sgd_tasks, "_node_gpu_count", [])
        monkeypatch.setattr(ray, "get_gpu_ids", lambda: assigned)
        monkeypatch.setattr(ray, "nodes", lambda: [{"NodeID": "node-b", "Resources": {"GPU": 8.0}},
                                                   {"NodeID": "node-a", "Resources": {"GPU": float(gpus_on_node)}}])
        assert sgd_tasks._task_adapter(named) == expected, (gpus_on_node, assigned, named)


def test_refinement_by_cluster_tasks_where_the_points_exceed_one_gpu(data, reference):
    """The fallback past one binding (forced here): two rounds of per-cluster tasks, as good a graph."""
    folder, x = data
    assert reference.report["refine"] == {"where": "one GPU", "rounds": 4, "search": 48}
    g = graph(folder, 2, refine_on="clusters", refine_rounds=2)
    assert g.report["refine"] == {"where": "clusters", "rounds": 2}
    rows = np.arange(0, len(x), 7)
    exact = sgd.exact_neighbours(x, rows, K)
    assert sgd.recall(g.indices, exact, rows) >= 0.97
    assert (np.diff(g.distances, axis=1) >= 0).all()
    with pytest.raises(sg.ArgumentError, match="refine_on"):
        graph(folder, 2, refine_on="elsewhere")
    with pytest.raises(sg.ArgumentError, match="refine_rounds"):
        graph(folder, 2, refine_rounds=0)


def test_a_killed_worker_changes_nothing(data, reference, tmp_path, monkeypatch):
    folder, _ = data
    marker = tmp_path / "crashed"
    monkeypatch.setenv("SURFGRAD_DISTRIBUTED_CRASH_ONCE", str(marker))  # workers inherit it
    g = graph(folder, 2)
    assert marker.exists(), "the knn task of cluster 0 should have killed its worker once"
    assert np.array_equal(g.indices, reference.indices)
    assert np.array_equal(g.distances.view(np.uint32), reference.distances.view(np.uint32))


def test_parquet_shards_give_the_same_graph(data, reference, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    _, x = data
    # The same points as a list column in one file and as float columns in another.
    pq.write_table(pa.table({"embedding": list(x[:2500]), "id": np.arange(2500)}), tmp_path / "a.parquet")
    pq.write_table(pa.table({f"d{j}": x[2500:, j] for j in range(x.shape[1])}), tmp_path / "b.parquet")
    g = graph(tmp_path, 2)
    # The float64 shard of the .npy set rounds to the same float32 values.
    assert np.array_equal(g.indices, reference.indices)


def test_merge_keeps_each_neighbour_once_nearest_first_ties_by_id():
    ids = np.array([0, 0, 1])
    idx = np.array([[5, 3, 2], [3, 4, -1], [7, 6, 8]])
    dist = np.array([[1.0, 2.0, 2.0], [1.5, 2.0, np.inf], [0.5, 0.5, 0.7]], dtype=np.float32)
    i, d = sgd.merge_lists(ids, idx, dist, 2, 3)
    assert i.tolist() == [[5, 3, 2], [6, 7, 8]]
    assert d.tolist() == [[1.0, 1.5, 2.0], [0.5, 0.5, pytest.approx(0.7)]]


def test_merge_against_a_per_row_reference_fuzzed():
    """merge_lists (sort keys packed in int64) against a plain per-row union: ties, repeated
    neighbours, empty slots, zero, −0 and slightly negative distances (exact distances are
    |a|² + |b|² − 2a·b in float32 and can round below zero), rows with fewer than k."""
    rng = np.random.default_rng(7)
    for trial in range(150):
        n, k, m = int(rng.integers(3, 120)), int(rng.integers(1, 10)), int(rng.integers(1, 10))
        lists = int(rng.integers(n, 3 * n))
        ids = np.concatenate([np.arange(n), rng.integers(0, n, lists - n)])
        idx = rng.integers(-1, n, (lists, m)).astype(np.int64)
        dist = (rng.integers(-2, 5, (lists, m)) * 0.25).astype(np.float32)
        dist[rng.random(dist.shape) < 0.05] = -0.0
        dist[idx < 0] = np.inf
        got_i, got_d = sgd.merge_lists(ids, idx, dist, n, k)
        for p in range(n):
            best = {}
            for row in np.flatnonzero(ids == p):
                for q, d in zip(idx[row], dist[row]):
                    if q >= 0 and (q not in best or d < best[q]):
                        best[int(q)] = float(d) + 0.0
            want = sorted(best.items(), key=lambda e: (e[1], e[0]))[:k]
            want_i = [q for q, _ in want] + [-1] * (k - len(want))
            want_d = [d for _, d in want] + [np.inf] * (k - len(want))
            assert got_i[p].tolist() == want_i, (trial, p)
            assert got_d[p].tolist() == want_d, (trial, p)


def test_map_writes_npy_and_parquet(data, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    folder, _ = data
    out = tmp_path / "map"
    report = sgd.map_shards(folder, str(out), "umap", n_neighbors=K, epochs=60, workers=2, points_per_cluster=1000,
                            verbose=False)
    y = np.load(tmp_path / "map.npy")
    assert y.shape == (6000, 2) and y.dtype == np.float32 and np.isfinite(y).all()
    t = pq.read_table(tmp_path / "map.parquet")
    assert t.column("id").to_pylist()[:3] == [0, 1, 2]
    assert np.array_equal(t.column("x").to_numpy(), y[:, 0])
    assert sorted(os.listdir(tmp_path)) == ["map.npy", "map.parquet"]  # no temporary files left
    for phase in ("sample", "partition", "prepare", "knn", "merge", "refine", "layout", "write"):
        assert phase in report["phases"], phase
    assert "optimise" in report["layout_phases"]
    text = sgd.format_report(report)
    assert "peak RSS" in text and "worker" in text


def test_unreachable_cluster_fails_fast_with_a_clear_message(data, tmp_path):
    folder, _ = data
    t0 = time.perf_counter()
    with pytest.raises(sgd.ClusterError, match="cannot reach the Ray cluster at 127.0.0.1:9"):
        sgd.map_shards(folder, str(tmp_path / "map"), address="127.0.0.1:9", verbose=False)
    assert time.perf_counter() - t0 < 15
    with pytest.raises(sgd.ClusterError, match="not HOST:PORT"):
        sgd.knn_graph(folder, K, address="nowhere", verbose=False)
    assert os.listdir(tmp_path) == []
    # The command line: exit status 1 and the message, nothing written.
    run = subprocess.run([sys.executable, "-m", "surfgrad.distributed", "map", str(folder), "-o",
                          str(tmp_path / "map"), "--ray", "127.0.0.1:9"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "cannot reach the Ray cluster" in run.stderr, run.stderr
    assert os.listdir(tmp_path) == []


def test_malformed_shards_are_named_and_nothing_is_written(data, tmp_path):
    folder, x = data
    out = tmp_path / "out"
    out.mkdir()
    bad = tmp_path / "bad"
    bad.mkdir()
    np.save(bad / "a.npy", x[:3000])
    # Truncated: the header promises more rows than the file holds.
    np.save(bad / "b.npy", x[3000:])
    with open(bad / "b.npy", "r+b") as f:
        f.truncate(os.path.getsize(bad / "b.npy") - 100)
    with pytest.raises(sg.FileError, match=r"b\.npy: is truncated"):
        sgd.map_shards(bad, str(out / "map"), verbose=False)
    np.save(bad / "b.npy", x[3000:, :10])
    with pytest.raises(sg.FileError, match=r"b\.npy: has 10 dimensions, the shards before it 24"):
        sgd.map_shards(bad, str(out / "map"), verbose=False)
    np.save(bad / "b.npy", x[3000:].astype(np.int32))
    with pytest.raises(sg.FileError, match=r"b\.npy: holds int32"):
        sgd.map_shards(bad, str(out / "map"), verbose=False)
    (bad / "b.npy").write_bytes(b"not numpy at all")
    with pytest.raises(sg.FileError, match=r"b\.npy: is not a \.npy file"):
        sgd.map_shards(bad, str(out / "map"), verbose=False)
    # A NaN is found by the worker that reads the shard, and named with its row.
    y = x[3000:].copy()
    y[123, 4] = np.nan
    np.save(bad / "b.npy", y)
    with pytest.raises(sg.FileError, match=r"b\.npy: row 123 holds NaN"):
        sgd.map_shards(bad, str(out / "map"), workers=2, points_per_cluster=1000, verbose=False)
    with pytest.raises(sg.FileError, match="no shards"):
        sgd.map_shards(tmp_path / "none", str(out / "map"), verbose=False)
    with pytest.raises(sg.FileError, match="does not exist"):
        sgd.map_shards(folder, str(tmp_path / "missing" / "map"), verbose=False)
    assert os.listdir(out) == []


def recall_against_single_process(n, dims, tmp_path, **kw):
    """n × dims blobs in 4 shards, k = 15: recall against exact neighbours (1,000 sampled points) of
    the sharded graph and of the library's single-process neighbour descent, and their times."""
    x = blobs(n, dims, 50, seed=11)
    for i, part in enumerate(np.array_split(x, 4)):
        np.save(tmp_path / f"s{i}.npy", part)
    rows = np.random.default_rng(0).choice(len(x), 1000, replace=False)
    exact = sgd.exact_neighbours(x, rows, 15)
    t0 = time.perf_counter()
    li = np.empty((len(x), 15), np.int32)
    ld = np.empty((len(x), 15), np.float32)
    sg._core.knn_graph(x, 15, li, ld, "descent", 1, "")  # what map_points runs past 20,000 points
    single_s = time.perf_counter() - t0
    single = sgd.recall(li, exact, rows)
    t0 = time.perf_counter()
    g = sgd.knn_graph(tmp_path, 15, workers=2, pca=0, seed=1, verbose=False, **kw)
    sharded_s = time.perf_counter() - t0
    sharded = sgd.recall(g.indices, exact, rows)
    print(f"\nrecall@15 {n}×{dims}: sharded {sharded:.4f} ({sharded_s:.1f} s, 2 workers, {g.report['clusters']} clusters "
          f"of {g.report['cluster_points']}, phases { {k: round(v, 1) for k, v in g.report['phases'].items()} }); "
          f"single-process descent {single:.4f} ({single_s:.1f} s)")
    return sharded, single


def test_recall_against_single_process_descent(tmp_path):
    """22,000 × 32 (past the exact limit, so one process runs neighbour descent; smaller than the
    issue's 200,000 × 64 below to keep CI within minutes): the sharded graph recalls at least as
    much as one process's descent − 0.01."""
    sharded, single = recall_against_single_process(22000, 32, tmp_path, points_per_cluster=3000)
    assert sharded >= single - 0.01


@pytest.mark.skipif(os.environ.get("SURFGRAD_LARGE") != "1",
                    reason="200,000 points: one process's neighbour descent alone takes over 20 minutes on two CPU "
                           "cores under lavapipe; SURFGRAD_LARGE=1 runs it (bench/ray_gpu.sh recall on a GPU)")
def test_recall_at_200k_against_single_process_descent(tmp_path):
    sharded, single = recall_against_single_process(200000, 64, tmp_path)
    assert sharded >= single - 0.01
