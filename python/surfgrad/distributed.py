"""The kNN graph of a large embedding set sharded over a Ray cluster; the layout on one GPU.

    import surfgrad.distributed as sgd
    report = sgd.map_shards("embeddings/", "out/map", method="umap")            # a local Ray cluster
    report = sgd.map_shards("emb/*.parquet", "out/map", address="head:6379", gpus_per_task=0.25)
    # out/map.npy: [N, 2] float32 in input order; out/map.parquet: columns id, x, y

or from a shell: ``python -m surfgrad.distributed map embeddings/ -o out/map --ray head:6379``.

The input is a set of shards (``.npy`` files of [n_i, D] floats, or Parquet files with an
``embedding`` list column or only float columns), read by the workers, never whole by one
process. Point ids are row numbers in the order of the shards (sorted by file name).

Steps (each a set of idempotent Ray tasks; Ray reruns a task whose worker died):
  1. sample: a seeded sample of rows, read by one task per shard;
  2. on the driver: PCA basis (``pca`` components) and seeded k-means (C centroids, C =
     ceil(N / points_per_cluster): fixed by the data, not by the cluster's size) on the sample;
  3. prepare: one task per shard projects its rows on the basis and assigns each to its 2
     nearest centroids;
  4. knn: one task per cluster computes the kNN of its points on its worker's GPU (surfgrad's
     choice: exact up to 20,000 points, on GPUs far past that, neighbour descent beyond);
  5. merge (driver, numpy): per point the union of its two lists, duplicates removed, top-k by
     (distance, id);
  6. refine: ``refine_rounds`` rounds of neighbour descent across clusters, from the merged
     graph: in one GPU task over all points where their search features fit one storage binding
     (N × components × 4 bytes: 10M points at 50 components), else a task per cluster and round
     over the points it owns and their neighbours' neighbours, wherever those live. Points far
     from every cluster boundary are served by step 4; structureless data (where a point's true
     neighbours straddle many clusters) needs these rounds: 0.39 recall@15 after one round on
     10M built-in points (BENCHMARKS.md);
  7. layout: the graph gathered to one task, where t-SNE or UMAP runs (surfgrad's map_graph),
     started from the points' first two principal components.

Every task's output depends only on its inputs (and the GPU, the same on every worker), so the
graph and the map are bit-identical for any number of workers and after retried tasks.
"""

from __future__ import annotations

import glob as _glob
import math
import os
import resource
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _core
from ._tensor import _adapter

__all__ = ["ShardSet", "Graph", "ClusterError", "open_shards", "knn_graph", "map_shards", "write_map",
           "exact_neighbours", "recall"]


class ClusterError(_core.Error, ConnectionError):
    """The Ray cluster cannot be reached or used (a ConnectionError and a surfgrad.Error)."""


# Fault injection for the tests: a path; the first knn task to find it absent creates it and
# kills its own worker process, as a machine lost mid-run would (Ray then reruns the task).
_CRASH_ONCE_ENV = "SURFGRAD_DISTRIBUTED_CRASH_ONCE"


# ----------------------------------------------------------------------------------------------
# Shards


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
    list_cols = [x.name for x in schema if pa.types.is_list(x.type) or pa.types.is_fixed_size_list(x.type)
                 or pa.types.is_large_list(x.type)]
    if "embedding" in schema.names or list_cols:
        col = "embedding" if "embedding" in schema.names else list_cols[0]
        t = schema.field(col).type
        if not (pa.types.is_list(t) or pa.types.is_fixed_size_list(t) or pa.types.is_large_list(t)) or \
                not pa.types.is_floating(t.value_type):
            raise _bad(path, f"column {col!r} is {t}; it must be a list of floats (one embedding a row)")
        if pa.types.is_fixed_size_list(t):
            dims = t.list_size
        else:
            first = next(f.iter_batches(batch_size=1, columns=[col]), None)
            dims = len(first.column(0)[0]) if first is not None and first.num_rows else 0
        return Shard(path, "parquet", rows, col), int(dims)
    floats = [x for x in schema if pa.types.is_floating(x.type)]
    if not floats or len(floats) != len(schema):
        raise _bad(path, "needs an 'embedding' list column, or float columns only (one a dimension)")
    return Shard(path, "parquet", rows, None), len(floats)


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
        if shard.column:
            col = table.column(0).combine_chunks()
            if col.null_count:
                raise _bad(shard.path, f"column {shard.column!r} has {col.null_count} empty (null) rows")
            if not pa.types.is_fixed_size_list(col.type):
                lengths = np.diff(np.asarray(col.offsets))
                if (lengths != dims).any():
                    bad = int(np.argmax(lengths != dims))
                    raise _bad(shard.path, f"row {bad} of column {shard.column!r} has {lengths[bad]} values, "
                                           f"expected {dims} (every embedding the same length)")
            x = np.asarray(col.flatten(), dtype=np.float32).reshape(len(col), dims)
        else:
            x = np.column_stack([np.asarray(c, dtype=np.float32) for c in table.columns])
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


# ----------------------------------------------------------------------------------------------
# Ray tasks (plain functions; wrapped by ray.remote when a job starts)


def _stats(t0: float, adapter: Optional[str] = None) -> Dict[str, Any]:
    st = {"seconds": time.perf_counter() - t0, "worker": f"{socket.gethostname()}:{os.getpid()}",
          "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if adapter is not None:
        st["adapter"] = adapter or "default"
    return st


_node_gpu_count: List[int] = []  # per worker process: the GPUs of its node, asked of Ray once


def _task_adapter(adapter: str) -> str:
    """The adapter a GPU task runs on: the one the caller named (``device``), else, on a node with
    several GPUs, the one Ray gave this task, as "#i": NVIDIA's Vulkan driver lists every GPU of
    the host, in nvidia-smi's order, whatever CUDA_VISIBLE_DEVICES says (checked on a two-H200
    host, BENCHMARKS.md), so without this every task would land on the first GPU. On a node with
    one GPU (or none) the library's default choice stands."""
    if adapter:
        return adapter
    import ray

    ids = ray.get_gpu_ids()
    if not ids:
        return adapter
    if not _node_gpu_count:
        node = ray.get_runtime_context().get_node_id()
        _node_gpu_count.append(int(next((nd.get("Resources", {}).get("GPU", 0) for nd in ray.nodes()
                                         if nd.get("NodeID") == node), 0)))
    return f"#{int(ids[0])}" if _node_gpu_count[0] > 1 else adapter


def _task_sample(shard: Shard, dims: int, rows: np.ndarray):
    t0 = time.perf_counter()
    return _read(shard, dims, rows), _stats(t0)


def _task_prepare(shard: Shard, dims: int, mean: np.ndarray, basis: Optional[np.ndarray], basis2: np.ndarray,
                  centroids: np.ndarray):
    """Features (projection on the basis, or the rows), the 2 nearest centroids, the 2-D start."""
    t0 = time.perf_counter()
    x = _read(shard, dims)
    centred = x - mean
    features = np.ascontiguousarray(centred @ basis if basis is not None else x, dtype=np.float32)
    start = np.ascontiguousarray(centred @ basis2, dtype=np.float32)
    # Squared distances to the centroids in float64, |c|² − 2 f·c (|f|² is the same for all), in
    # row blocks (a 250,000-row shard against 1,000 centroids would be 2 GB at once); the two
    # nearest of each row by two argmins, ties to the smaller index as a stable sort would give
    # (a full sort of every row took 20 s a shard at 10M points).
    c2 = (centroids * centroids).sum(1)[None, :]
    order = np.empty((len(features), 2), dtype=np.int32)
    for b in range(0, len(features), 32768):
        d = c2 - 2.0 * (features[b:b + 32768].astype(np.float64) @ centroids.T)
        rows = np.arange(len(d))
        first = np.argmin(d, axis=1)
        order[b:b + 32768, 0] = first
        if centroids.shape[0] == 1:
            order[b:b + 32768, 1] = first
        else:
            d[rows, first] = np.inf
            order[b:b + 32768, 1] = np.argmin(d, axis=1)
    return features, order, start, _stats(t0)


def _gather(ids: np.ndarray, offsets: np.ndarray, features: Sequence[np.ndarray]) -> np.ndarray:
    """Rows of the given global ids (sorted) from per-shard feature arrays."""
    out = np.empty((len(ids), features[0].shape[1]), dtype=np.float32)
    shard_of = np.searchsorted(offsets, ids, side="right") - 1
    for s in np.unique(shard_of):
        sel = shard_of == s
        out[sel] = features[s][ids[sel] - offsets[s]]
    return out


def _members(c: int, assignments: Sequence[np.ndarray], offsets: np.ndarray, primary_only: bool) -> np.ndarray:
    ids = []
    for s, a in enumerate(assignments):
        hit = (a[:, 0] == c) if primary_only else ((a[:, 0] == c) | (a[:, 1] == c))
        ids.append(np.flatnonzero(hit).astype(np.int64) + offsets[s])
    return np.concatenate(ids)


def _task_knn(c: int, k: int, seed: int, method: str, adapter: str, offsets: np.ndarray, feature_refs: list,
              assign_refs: list):
    """The kNN lists of cluster c's points (global ids), on this worker's GPU."""
    import ray

    t0 = time.perf_counter()
    adapter = _task_adapter(adapter)
    crash = os.environ.get(_CRASH_ONCE_ENV)
    if crash and c == 0 and not os.path.exists(crash):
        open(crash, "w").close()
        os._exit(1)  # the worker process dies mid-task, as on a lost machine
    features = ray.get(feature_refs)
    assignments = ray.get(assign_refs)
    ids = _members(c, assignments, offsets, primary_only=False)
    kk = min(k, len(ids) - 1)
    idx = np.full((len(ids), k), -1, dtype=np.int32)  # ids < 2^31 (checked): half the bytes to the driver
    dist = np.full((len(ids), k), np.inf, dtype=np.float32)
    if kk >= 1:
        x = _gather(ids, offsets, features)
        li = np.empty((len(ids), kk), dtype=np.int32)
        ld = np.empty((len(ids), kk), dtype=np.float32)
        _core.knn_graph(x, kk, li, ld, method, seed * 1000003 + c, adapter)
        idx[:, :kk] = ids[li]
        dist[:, :kk] = ld
    return ids, idx, dist, _stats(t0, adapter)


def _task_refine(c: int, adapter: str, offsets: np.ndarray, feature_refs: list, assign_refs: list,
                 graph: np.ndarray, graph_distances: np.ndarray):
    """One round of descent for the points whose first cluster is c, over those points, their
    neighbours and their neighbours' neighbours (from any cluster)."""
    import ray

    t0 = time.perf_counter()
    adapter = _task_adapter(adapter)
    assignments = ray.get(assign_refs)
    own = _members(c, assignments, offsets, primary_only=True)
    if len(own) == 0:
        return own, graph[:0], np.empty((0, graph.shape[1]), np.float32), _stats(t0, adapter)
    hop1 = graph[own].ravel()
    hop1 = np.unique(hop1[hop1 >= 0])
    hop2 = graph[hop1].ravel()
    rows = np.unique(np.concatenate([own, hop1, hop2[hop2 >= 0]]))
    listed = np.unique(np.concatenate([own, hop1]))
    local = np.full((len(rows), graph.shape[1]), -1, dtype=np.int32)
    at = np.searchsorted(rows, listed)
    g = graph[listed]
    local[at] = np.where(g >= 0, np.searchsorted(rows, np.maximum(g, 0)), -1)
    if len(rows) <= graph.shape[1] + 1:  # too few points around to search among: lists as merged
        return own, graph[own], graph_distances[own], _stats(t0, adapter)
    x = _gather(rows, offsets, ray.get(feature_refs))
    dist = np.empty(local.shape, dtype=np.float32)
    _core.knn_refine(x, local, dist, 1, adapter)
    mine = np.searchsorted(rows, own)
    li = local[mine]
    out = np.where(li >= 0, rows[np.maximum(li, 0)], -1)
    return own, out.astype(np.int32), dist[mine], _stats(t0, adapter)


# Descent's lists stall when short: knn_graph's refinement, like the library's own descent
# (nearest_neighbours), searches with lists of at least 48 and keeps the k nearest.
_DESCENT_SEARCH = 48


def _task_refine_all(graph: np.ndarray, offsets: np.ndarray, feature_refs: list, rounds: int, search: int,
                     adapter: str):
    """``rounds`` of neighbour descent over all N points at once on this task's GPU, from the merged
    graph widened to ``search`` slots (−1: empty, filled by the first round); the k nearest of
    each list. (None, None) where the features or the lists exceed one binding of the adapter."""
    import ray

    t0 = time.perf_counter()
    adapter = _task_adapter(adapter)
    n, k = graph.shape
    limits = _core.device_info(adapter)["limits"]
    cap = min(limits["max_buffer_size"], limits["max_storage_buffer_binding_size"])
    features = ray.get(feature_refs)
    if n * max(features[0].shape[1], search) * 4 > cap:
        return None, None, _stats(t0, adapter)
    x = np.concatenate(features) if len(features) > 1 else np.ascontiguousarray(features[0])
    del features
    g = np.full((n, search), -1, dtype=np.int32)
    g[:, :k] = graph
    dist = np.empty((n, search), dtype=np.float32)
    _core.knn_refine(x, g, dist, rounds, adapter)
    return np.ascontiguousarray(g[:, :k]), np.ascontiguousarray(dist[:, :k]), _stats(t0, adapter)


def _task_recall(graph: np.ndarray, offsets: np.ndarray, feature_refs: list, sample: int, adapter: str):
    """Recall@k of the merged graph against exact lists of ``sample`` points, on the features the
    search ran on (all of them gathered to this task: N × components floats)."""
    import ray

    t0 = time.perf_counter()
    adapter = _task_adapter(adapter)
    features = ray.get(feature_refs)
    x = np.concatenate(features) if len(features) > 1 else np.ascontiguousarray(features[0])
    del features
    return _core.knn_recall_sampled(x, graph, sample, adapter), _stats(t0, adapter)


def _task_layout(indices: np.ndarray, distances: np.ndarray, init: np.ndarray, method: str, options: dict,
                 adapter: str):
    t0 = time.perf_counter()
    adapter = _task_adapter(adapter)
    out = np.empty((indices.shape[0], 2), dtype=np.float32)
    report = _core.map_graph(indices, distances, out, method, options, adapter, None, init)
    return out, report, _stats(t0, adapter)


# ----------------------------------------------------------------------------------------------
# The driver


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"Ray address {address!r} is not HOST:PORT (e.g. 10.0.0.5:6379, as `ray start --head` "
                           "prints), 'auto', or unset for a local cluster")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise ClusterError(f"cannot reach the Ray cluster at {address} ({e.strerror or e}): start it with "
                           f"`ray start --head --port={port}` on {host}, check the address, or leave the address "
                           "unset for a local cluster on this machine") from None


def _check_gpus(ray, gpus_per_task: float, layout: bool) -> None:
    """GPU tasks that no node can run would wait forever: refused before any work."""
    if not gpus_per_task:
        return
    need = max(gpus_per_task, 1.0 if layout else 0.0)
    most = max((nd.get("Resources", {}).get("GPU", 0) for nd in ray.nodes() if nd.get("Alive", True)), default=0)
    if most < need:
        raise ClusterError(f"gpus_per_task = {gpus_per_task} needs a node with at least {need:g} GPU"
                           f"{'s' if need != 1 else ''} (the layout task takes a whole one), but the cluster's nodes "
                           f"have at most {most:g}: pass gpus_per_task=0 to run on CPU adapters, or start Ray "
                           "where it sees the GPUs (ray start --num-gpus N; num_gpus= for a local cluster)")


class _Cluster:
    """Connects to (or starts) a Ray cluster for one job; shuts down only what it started."""

    def __init__(self, address: Optional[str], workers: Optional[int], gpus: Optional[float] = None) -> None:
        try:
            import ray
        except ImportError:
            raise ImportError("surfgrad.distributed needs Ray: pip install -r "
                              "python/requirements-distributed.txt") from None
        self.ray = ray
        self.started = False
        if ray.is_initialized():
            return
        import logging

        if address and address != "auto":
            _check_reachable(address)
        try:
            if address:
                ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
            else:
                ray.init(num_cpus=workers or os.cpu_count(), num_gpus=gpus, include_dashboard=False,
                         logging_level=logging.WARNING, log_to_driver=False)
        except ConnectionError as e:
            raise ClusterError(f"cannot connect to the Ray cluster at {address}: {e}") from None
        self.started = True

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


@dataclass
class Graph:
    """A kNN graph: ``indices`` int32 [N, k] (ids of neighbours, nearest first), ``distances``
    float32 [N, k] (squared, on the features the search ran on), ``start`` float32 [N, 2] (the
    first two principal components), ``report`` (times per phase and per worker, memory peaks)."""

    indices: np.ndarray
    distances: np.ndarray
    start: np.ndarray
    report: Dict[str, Any] = field(default_factory=dict)


class _Log:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        if self.enabled:
            print(f"[{time.perf_counter() - self.t0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def _run(ray, remote, args_list, phase: str, log: _Log, report: Dict[str, Any], label) -> list:
    """Submits one task per args, prints each as it ends, returns results in submission order."""
    t0 = time.perf_counter()
    refs = [remote.remote(*a) for a in args_list]
    where = {r: i for i, r in enumerate(refs)}
    results: list = [None] * len(refs)
    pending = list(refs)
    workers = report.setdefault("workers", {})
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        i = where[done[0]]
        try:
            results[i] = ray.get(done[0])
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            raise (cause if isinstance(cause, Exception) else e) from None
        st = results[i][-1]
        w = workers.setdefault(st["worker"], {"tasks": 0, "seconds": 0.0, "peak_rss": 0})
        w["tasks"] += 1
        w["seconds"] += st["seconds"]
        w["peak_rss"] = max(w["peak_rss"], st["peak_rss"])
        if "adapter" in st:
            w.setdefault("adapters", [])
            if st["adapter"] not in w["adapters"]:
                w["adapters"].append(st["adapter"])
        where_ran = st["worker"] + (f" ({st['adapter']})" if "adapter" in st else "")
        log(f"{phase} {len(refs) - len(pending)}/{len(refs)}: {label(i, results[i])} in {st['seconds']:.2f} s "
            f"on {where_ran}")
    report["phases"][phase] = time.perf_counter() - t0
    return results


def _kmeans(x: np.ndarray, c: int, seed: int, iterations: int = 20) -> np.ndarray:
    """Seeded Lloyd's k-means in float64 (centres start at c sampled points); empty clusters keep
    their centre."""
    rng = np.random.default_rng(seed)
    centres = x[np.sort(rng.choice(len(x), c, replace=False))].copy()
    for _ in range(iterations):
        d = (centres * centres).sum(1)[None, :] - 2.0 * (x @ centres.T)
        nearest = np.argmin(d, axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, nearest, x)
        counts = np.bincount(nearest, minlength=c)
        full = counts > 0
        centres[full] = sums[full] / counts[full, None]
    return centres


_EMPTY_KEY = np.iinfo(np.int64).max  # an empty slot's sort key: after every real entry


def _float_order_bits(d: np.ndarray) -> np.ndarray:
    """float32 → uint32 whose unsigned order is the floats' order (−0 as +0)."""
    u = (np.asarray(d, dtype=np.float32) + np.float32(0)).view(np.uint32)
    return np.where(u >> 31 == 1, ~u, u | np.uint32(0x80000000))


def _float_from_order_bits(u: np.ndarray) -> np.ndarray:
    u = u.astype(np.uint32)
    return np.where(u >> 31 == 1, u & np.uint32(0x7FFFFFFF), ~u).view(np.float32)


def merge_lists(ids: np.ndarray, idx: np.ndarray, dist: np.ndarray, n: int, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Per point (``ids``, repeated where a point has several lists): the union of its lists,
    each neighbour once at its smallest distance, the k nearest by (distance, id); −1 / inf
    where fewer than k were found.

    Each entry is one int64 key, so that rows sort by value (numpy's vectorised integer sort, no
    argsort and gathers): (id, distance) for the duplicates, then (distance, id) for the k
    nearest. In place on one [N, lists·m] array: 5× faster than three argsorts of the entries
    (1.2 s against 5.6 s for 1M points in 2 lists of 15 on two cores; 34–54 s at 10M)."""
    m = idx.shape[1]
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    occurrence = np.empty(len(ids), dtype=np.int64)
    occurrence[order] = np.arange(len(ids)) - np.searchsorted(sorted_ids, sorted_ids, side="left")
    slots = int(occurrence.max()) + 1 if len(ids) else 1
    by_id = idx.astype(np.int64)  # a copy: the caller's lists stay as they are
    empty = by_id < 0
    by_id <<= 32
    by_id |= _float_order_bits(dist)
    by_id[empty] = _EMPTY_KEY
    del empty
    keys = np.full((n, slots * m), _EMPTY_KEY, dtype=np.int64)
    keys.reshape(n, slots, m)[ids, occurrence] = by_id
    del by_id
    keys.sort(axis=1)
    # A repeated id after its first (nearest) copy is dropped; then the keys become (distance, id).
    last = keys == _EMPTY_KEY
    q = keys >> 32
    repeat = q[:, 1:] == q[:, :-1]
    keys &= 0xFFFFFFFF
    keys -= 1 << 31  # the distance's order bits, signed, so that the key's sign follows them
    keys <<= 32
    keys |= q
    del q
    keys[:, 1:][repeat] = _EMPTY_KEY
    keys[last] = _EMPTY_KEY
    del repeat, last
    keys.sort(axis=1)
    top = keys[:, :k]
    empty = top == _EMPTY_KEY
    out_i = (top & 0xFFFFFFFF).astype(np.int32)
    out_i[empty] = -1
    out_d = _float_from_order_bits((top >> 32) + (1 << 31))
    out_d[empty] = np.inf
    if out_i.shape[1] < k:
        out_i = np.pad(out_i, ((0, 0), (0, k - out_i.shape[1])), constant_values=-1)
        out_d = np.pad(out_d, ((0, 0), (0, k - out_d.shape[1])), constant_values=np.inf)
    return out_i, np.ascontiguousarray(out_d)


def knn_graph(source: Any, k: int = 15, *, address: Optional[str] = None, workers: Optional[int] = None,
              points_per_cluster: int = 8000, sample: int = 0, pca: int = -1, seed: int = 1,
              method: str = "auto", refine: bool = True, refine_rounds: int = 4, refine_on: str = "auto",
              gpus_per_task: float = 0,
              num_gpus: Optional[float] = None,
              device: Optional[str] = None, recall_sample: int = 0, verbose: bool = True,
              _layout: Optional[Tuple[str, dict]] = None) -> Graph:
    """The kNN graph of the points in ``source`` (see :func:`open_shards`), sharded over Ray.

    ``address``: a running cluster (HOST:PORT or "auto"); None starts a local one with
    ``workers`` worker processes (default: the CPU count) and stops it afterwards; if Ray is
    already initialised in this process, that cluster is used. ``points_per_cluster``: C =
    ceil(N / points_per_cluster) clusters (each point in 2, so ~2× that many points a task).
    ``sample``: rows for PCA and k-means (0: max(50·C, 20,000), at most N). ``pca``: components
    the search runs on (−1: 50 where D > 50, else none; 0: none). ``method``: per-cluster kNN,
    "auto" (exact up to 20,000 points), "exact" or "descent". ``gpus_per_task``: Ray's num_gpus
    for GPU tasks (e.g. 0.25: four tasks share a GPU; 0 on machines without one); ``num_gpus``:
    GPUs of a local cluster (default: Ray's detection). A GPU task uses the adapter ``device``
    names, else, on a node with several GPUs, the GPU Ray assigned it (adapter "#i").
    ``refine``, ``refine_rounds``: rounds of descent across clusters after the merge (step 6);
    ``refine_on``: "auto" (one GPU task over all points where they fit one binding, else a task
    per cluster and round), "one-gpu" (an error where they do not fit) or "clusters".
    ``recall_sample``: if > 0, recall@k of the graph against exact lists of that many points, on
    the features the search ran on (a GPU task holding all N of them), in ``report["knn_recall"]``.
    """
    if not 1 <= k <= 128:
        raise _core.ArgumentError(f"k must be in [1, 128], got {k}")
    if not gpus_per_task >= 0 or (gpus_per_task > 1 and gpus_per_task != int(gpus_per_task)):
        raise _core.ArgumentError(f"gpus_per_task must be 0 (no GPU), a fraction in (0, 1] or a whole number, "
                                  f"got {gpus_per_task}")
    if points_per_cluster < 2 * k + 2:
        raise _core.ArgumentError(f"points_per_cluster must be at least 2·k + 2 = {2 * k + 2}, got "
                                  f"{points_per_cluster}")
    if method not in ("auto", "exact", "descent"):
        raise _core.ArgumentError(f"method must be 'auto', 'exact' or 'descent', not {method!r}")
    if refine and not 1 <= refine_rounds <= 100:
        raise _core.ArgumentError(f"refine_rounds must be in [1, 100], got {refine_rounds}")
    if refine_on not in ("auto", "one-gpu", "clusters"):
        raise _core.ArgumentError(f"refine_on must be 'auto', 'one-gpu' or 'clusters', not {refine_on!r}")
    if recall_sample < 0:
        raise _core.ArgumentError(f"recall_sample must be 0 (skip) or a number of points, got {recall_sample}")
    shards = open_shards(source)
    n, dims = shards.rows, shards.dims
    if n <= k:
        raise _core.ArgumentError(f"k = {k} needs more than {k} points; the shards hold {n}")
    if n >= 2**31 // (k + 1):
        raise _core.ArgumentError(f"{n} points × (k + 1) exceed 32-bit edge lists")
    components = (50 if dims > 50 else 0) if pca < 0 else pca
    if components > dims:
        raise _core.ArgumentError(f"pca = {components} exceeds the points' {dims} dimensions")
    clusters = max(1, math.ceil(n / points_per_cluster))
    sample = min(n, sample or max(50 * clusters, 20000))
    adapter = _adapter(device)
    log = _Log(verbose)
    report: Dict[str, Any] = {"points": n, "dims": dims, "k": k, "clusters": clusters, "sample": sample,
                              "pca": components, "shards": len(shards.shards), "phases": {}}
    cluster = _Cluster(address, workers, num_gpus)
    ray = cluster.ray
    try:
        report["cluster_cpus"] = ray.cluster_resources().get("CPU", 0)
        report["cluster_gpus"] = ray.cluster_resources().get("GPU", 0)
        _check_gpus(ray, gpus_per_task, layout=_layout is not None)
        cpu = ray.remote(num_cpus=1, max_retries=5)
        # max_calls=0: a worker runs any number of GPU tasks. Ray's default for GPU tasks is one
        # task per worker process, which at 10M points (1,000 clusters) started 2,000 processes,
        # each paying a WebGPU device and pipeline compilation: 0.6 s a task instead of ~0.05 s.
        gpu = ray.remote(num_cpus=1, num_gpus=gpus_per_task, max_retries=5, max_calls=0) if gpus_per_task else cpu
        log(f"{n} points × {dims} in {len(shards.shards)} shards; {clusters} clusters, k = {k}, "
            f"{int(report['cluster_cpus'])} CPUs in the cluster")
        offsets = shards.offsets

        # 1. The sample, read where the shards are.
        rng = np.random.default_rng(seed)
        chosen = np.sort(rng.choice(n, sample, replace=False))
        per = [chosen[(chosen >= offsets[s]) & (chosen < offsets[s + 1])] - offsets[s]
               for s in range(len(shards.shards))]
        jobs = [(shards.shards[s], dims, per[s]) for s in range(len(per)) if len(per[s])]
        parts = _run(ray, cpu(_task_sample), jobs, "sample", log, report, lambda i, r: f"{len(r[0])} rows")
        xs = np.concatenate([p[0] for p in parts]).astype(np.float64)

        # 2. PCA basis and k-means on the sample (driver).
        t0 = time.perf_counter()
        mean = xs.mean(0)
        _, _, vt = np.linalg.svd(xs - mean, full_matrices=False)
        vt *= np.where(vt[np.arange(len(vt)), np.argmax(np.abs(vt), 1)] < 0, -1.0, 1.0)[:, None]  # fixed signs
        basis = np.ascontiguousarray(vt[:components].T, dtype=np.float32) if components else None
        basis2 = np.ascontiguousarray(vt[:2].T if len(vt) >= 2 else np.eye(dims, 2), dtype=np.float32)
        feats = (xs - mean) @ basis.astype(np.float64) if components else xs
        centroids = _kmeans(feats, min(clusters, sample), seed)
        mean32 = mean.astype(np.float32)
        report["phases"]["partition"] = time.perf_counter() - t0
        log(f"partition: PCA to {components or dims}, k-means into {clusters} clusters on {sample} rows")

        # 3. Features, assignments and starts per shard (kept in Ray's object store).
        jobs = [(s, dims, mean32, basis, basis2, centroids) for s in shards.shards]
        prepare = ray.remote(num_cpus=1, max_retries=5, num_returns=4)(_task_prepare)
        t0 = time.perf_counter()
        outs = [prepare.remote(*a) for a in jobs]
        feature_refs = [o[0] for o in outs]
        assign_refs = [o[1] for o in outs]
        try:
            stats = ray.get([o[3] for o in outs])
        except ray.exceptions.RayTaskError as e:
            raise (e.cause if isinstance(getattr(e, "cause", None), Exception) else e) from None
        for st in stats:
            w = report.setdefault("workers", {}).setdefault(st["worker"], {"tasks": 0, "seconds": 0.0, "peak_rss": 0})
            w["tasks"] += 1
            w["seconds"] += st["seconds"]
            w["peak_rss"] = max(w["peak_rss"], st["peak_rss"])
        report["phases"]["prepare"] = time.perf_counter() - t0
        log(f"prepare: {len(jobs)} shards projected and assigned")
        assignments = ray.get(assign_refs)
        sizes = np.zeros(clusters, dtype=np.int64)
        for a in assignments:
            sizes += np.bincount(a.ravel(), minlength=clusters)[:clusters]
        report["cluster_points"] = {"min": int(sizes.min()), "max": int(sizes.max()), "mean": float(sizes.mean())}

        # 4. kNN per cluster.
        jobs = [(c, k, seed, method, adapter, offsets, feature_refs, assign_refs) for c in range(clusters)]
        parts = _run(ray, gpu(_task_knn), jobs, "knn", log, report,
                     lambda i, r: f"cluster {i}, {len(r[0])} points")

        # 5. Merge.
        t0 = time.perf_counter()
        ids = np.concatenate([p[0] for p in parts])
        indices, distances = merge_lists(ids, np.concatenate([p[1] for p in parts]),
                                         np.concatenate([p[2] for p in parts]), n, k)
        del parts
        report["phases"]["merge"] = time.perf_counter() - t0
        log(f"merge: {len(ids)} lists into {n}")

        # 6. Rounds of descent across clusters: on one GPU over all points where their features
        # fit one binding of its adapter, else a task per cluster and round.
        if refine:
            t0 = time.perf_counter()
            one = ray.remote(num_cpus=1, num_gpus=min(gpus_per_task, 1), max_retries=5, max_calls=0) \
                if gpus_per_task else cpu
            search = min(max(k, _DESCENT_SEARCH), n - 1, 128)
            li = None
            if refine_on != "clusters":
                li, ld, _ = _run(ray, one(_task_refine_all), [(indices, offsets, feature_refs, refine_rounds, search,
                                                               adapter)], "refine", log, report,
                                 lambda i, r: f"{refine_rounds} rounds over all {n} points" if r[0] is not None
                                 else "the points exceed one binding: a task per cluster instead")[0]
                if li is None and refine_on == "one-gpu":
                    raise _core.ArgumentError(f"refine_on='one-gpu': {n} points × {search} slots or their features "
                                              "exceed one storage binding of the adapter; use 'auto' or 'clusters'")
            if li is not None:
                indices, distances = li, ld
                report["refine"] = {"where": "one GPU", "rounds": refine_rounds, "search": search}
            else:
                for _ in range(refine_rounds):
                    graph_ref, dist_ref = ray.put(indices), ray.put(distances)
                    jobs = [(c, adapter, offsets, feature_refs, assign_refs, graph_ref, dist_ref)
                            for c in range(clusters)]
                    parts = _run(ray, gpu(_task_refine), jobs, "refine", log, report,
                                 lambda i, r: f"cluster {i}, {len(r[0])} points")
                    for own, li, ld, _ in parts:
                        indices[own] = li
                        distances[own] = ld
                    del parts, graph_ref, dist_ref
                report["refine"] = {"where": "clusters", "rounds": refine_rounds}
            report["phases"]["refine"] = time.perf_counter() - t0
        missing = int((indices < 0).sum())
        if missing:
            raise _core.ArgumentError(f"the sharded search found fewer than k = {k} neighbours for some points "
                                      f"({missing} slots empty): raise points_per_cluster (now {points_per_cluster})")

        if recall_sample:
            rec = ray.remote(num_cpus=1, num_gpus=min(gpus_per_task, 1), max_retries=5, max_calls=0) \
                if gpus_per_task else cpu
            res = _run(ray, rec(_task_recall), [(indices, offsets, feature_refs, min(recall_sample, n), adapter)],
                       "recall", log, report, lambda i, r: f"recall@{k} {r[0]:.4f}")[0]
            report["knn_recall"] = res[0]
            report["recall_sample"] = min(recall_sample, n)

        start = np.concatenate([o for o in ray.get([o[2] for o in outs])])
        graph = Graph(indices, distances, start, report)
        if _layout is not None:
            method_name, options = _layout
            init = _scaled_start(start, method_name)
            lay = ray.remote(num_cpus=1, num_gpus=1 if gpus_per_task else 0, max_retries=5)(_task_layout)
            res = _run(ray, lay, [(indices, distances, init, method_name, options, adapter)], "layout", log, report,
                       lambda i, r: f"{method_name} of {n} points")[0]
            graph.report["embedding"] = res[0]
            graph.report["layout_phases"] = dict(res[1]["phases"])
            graph.report["gpu_peak_bytes"] = int(res[1]["gpu_peak_bytes"])
        report["driver_peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return graph
    finally:
        cluster.close()


def _scaled_start(start: np.ndarray, method: str) -> np.ndarray:
    """The PCA start as the library scales it: t-SNE to a standard deviation of 1e-4 in the first
    coordinate, UMAP to ±10."""
    s = start.astype(np.float64)
    if method == "tsne":
        sd = math.sqrt(float((s[:, 0] ** 2).mean()))
        s = s * (1e-4 / max(sd, 1e-30))
    else:
        s = s * (10.0 / max(float(np.abs(s).max()), 1e-30))
    return np.ascontiguousarray(s, dtype=np.float32)


def write_map(output: str, embedding: np.ndarray, formats: Sequence[str] = ("npy", "parquet")) -> Tuple[str, ...]:
    """Writes ``output``.npy ([N, 2] float32) and ``output``.parquet (id, x, y): each under a
    hidden name in its folder, renamed into place only once all are complete."""
    if "parquet" in formats:
        pa, pq = _parquet()
    base = output[:-4] if output.endswith(".npy") else output
    folder = os.path.dirname(os.path.abspath(base))
    paths = tuple(base + "." + f for f in formats)
    temps = []
    try:
        for f in formats:
            fd, tmp = tempfile.mkstemp(prefix=".surfgrad-", suffix="." + f, dir=folder)
            os.close(fd)
            temps.append(tmp)
            if f == "npy":
                np.save(tmp, embedding.astype(np.float32))
            elif f == "parquet":
                table = pa.table({"id": np.arange(len(embedding), dtype=np.int64), "x": embedding[:, 0],
                                  "y": embedding[:, 1]})
                pq.write_table(table, tmp)
            else:
                raise _core.ArgumentError(f"output format {f!r} is not 'npy' or 'parquet'")
        for tmp, path in zip(temps, paths):
            os.replace(tmp, path)
        temps = []
    finally:
        for tmp in temps:
            if os.path.exists(tmp):
                os.remove(tmp)
    return paths


def _check_output(output: str, shards: ShardSet) -> str:
    base = os.fspath(output)
    base = base[:-4] if base.endswith(".npy") else base
    if not base or os.path.isdir(base):
        raise _core.ArgumentError(f"output {output!r} must name a file (written as NAME.npy and NAME.parquet)")
    folder = os.path.dirname(os.path.abspath(base))
    if not os.path.isdir(folder):
        raise _core.FileError(f"output folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise _core.FileError(f"output folder {folder} is not writable")
    inputs = {os.path.abspath(s.path) for s in shards.shards}
    for suffix in (".npy", ".parquet"):
        if os.path.abspath(base + suffix) in inputs:
            raise _core.ArgumentError(f"output {base + suffix} would overwrite an input shard")
    return base


def map_shards(source: Any, output: Optional[str], method: str = "umap", *, perplexity: float = 30.0,
               n_neighbors: int = 15, iterations: int = 750, epochs: int = 0, min_dist: float = 0.1,
               seed: int = 1, method_knn: str = "auto", formats: Sequence[str] = ("npy", "parquet"),
               **kwargs: Any) -> Dict[str, Any]:
    """The map of the points in ``source``: the kNN graph sharded over Ray (:func:`knn_graph`,
    whose keyword arguments pass through), then t-SNE or UMAP of it on one GPU (a Ray task).
    Writes ``output``.npy and ``output``.parquet (None: nothing written); returns the report
    (phases, workers, memory peaks, ``embedding``). ``method_knn``: knn_graph's ``method``;
    ``formats``: the outputs to write (Parquet needs pyarrow)."""
    if method not in ("tsne", "umap"):
        raise _core.ArgumentError(f"method must be 'tsne' or 'umap', not {method!r}")
    shards = open_shards(source)
    base = _check_output(output, shards) if output is not None else None
    if base is not None and "parquet" in formats:
        _parquet()  # before any work: pyarrow is there
    if method == "tsne":
        k = int(min(shards.rows - 1, math.floor(3 * perplexity)))
        options = {"perplexity": float(perplexity), "iterations": int(iterations), "seed": int(seed)}
    else:
        k = int(n_neighbors)
        options = {"n_neighbors": k, "min_dist": float(min_dist), "seed": int(seed)}
        if epochs:
            options["epochs"] = int(epochs)
    t0 = time.perf_counter()
    graph = knn_graph([s.path for s in shards.shards], k, seed=seed, method=method_knn, _layout=(method, options),
                      **kwargs)
    report = graph.report
    if base is not None:
        t1 = time.perf_counter()
        report["outputs"] = write_map(base, report["embedding"], formats)
        report["phases"]["write"] = time.perf_counter() - t1
    report["total_seconds"] = time.perf_counter() - t0
    return report


def format_report(report: Dict[str, Any]) -> str:
    """The report as printed by the CLI: seconds per phase and per worker, memory peaks."""
    lines = [f"{report['points']} points × {report['dims']}, {report['shards']} shards, {report['clusters']} "
             f"clusters ({report['cluster_points']['min']}–{report['cluster_points']['max']} points), k = "
             f"{report['k']}"]
    lines.append("phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in report["phases"].items()))
    if "layout_phases" in report:
        lines.append("layout: " + ", ".join(f"{k} {v:.2f} s" for k, v in report["layout_phases"].items()))
    if "knn_recall" in report:
        lines.append(f"kNN recall@{report['k']} {report['knn_recall']:.4f} on {report['recall_sample']} points "
                     "(against exact lists on the searched features)")
    for w, s in sorted(report.get("workers", {}).items()):
        gpus = f" on {', '.join(s['adapters'])}" if s.get("adapters") else ""
        lines.append(f"worker {w}: {s['tasks']} tasks{gpus}, {s['seconds']:.2f} s, peak RSS "
                     f"{s['peak_rss'] / 2**20:.0f} MiB")
    lines.append(f"driver peak RSS {report.get('driver_peak_rss', 0) / 2**20:.0f} MiB"
                 + (f", layout GPU peak {report['gpu_peak_bytes'] / 2**20:.0f} MiB" if "gpu_peak_bytes" in report
                    else ""))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# Measures


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


# ----------------------------------------------------------------------------------------------
# Command line: python -m surfgrad.distributed map SOURCE -o OUT [--ray ADDRESS] ...


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``surfgrad-distributed map SOURCE -o OUT [options]``; exit status 0, 1 (an error while
    working) or 2 (a usage error), as ``surfgrad map``."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m surfgrad.distributed",
                                description="t-SNE / UMAP of sharded embeddings, the kNN graph sharded over Ray")
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("map", help="map the points of a folder or glob of .npy / Parquet shards")
    m.add_argument("source", help="folder, glob or file of .npy / .parquet shards")
    m.add_argument("-o", "--output", required=True, help="writes OUT.npy ([N, 2] float32) and OUT.parquet (id, x, y)")
    m.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="a running Ray cluster (HOST:PORT, or 'auto'); default: a local cluster on this machine")
    m.add_argument("--workers", type=int, default=None, help="worker processes of a local cluster (default: CPUs)")
    m.add_argument("--method", choices=("tsne", "umap"), default="umap")
    m.add_argument("--perplexity", type=float, default=30.0)
    m.add_argument("--iterations", type=int, default=750, help="t-SNE iterations")
    m.add_argument("--n-neighbors", type=int, default=15)
    m.add_argument("--min-dist", type=float, default=0.1)
    m.add_argument("--epochs", type=int, default=0, help="UMAP epochs (0: the library's default)")
    m.add_argument("--points-per-cluster", type=int, default=8000,
                   help="C = ceil(N / this) clusters, each point in its 2 nearest")
    m.add_argument("--pca", type=int, default=-1, help="search on this many components (-1: 50 where D > 50)")
    m.add_argument("--knn", choices=("auto", "exact", "descent"), default="auto", help="kNN in each cluster")
    m.add_argument("--no-refine", action="store_true", help="skip the rounds of descent across clusters")
    m.add_argument("--refine-rounds", type=int, default=4, help="rounds of descent across clusters")
    m.add_argument("--refine-on", choices=("auto", "one-gpu", "clusters"), default="auto",
                   help="where: one GPU over all points (auto: where they fit one binding) or a task per cluster")
    m.add_argument("--gpus-per-task", type=float, default=0,
                   help="Ray num_gpus of each GPU task (0.25: four share a GPU; 0 without GPUs)")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--device", default=None,
                   help="adapter name substring or #i (default: the GPU Ray gives each task where a node has several)")
    m.add_argument("--recall-sample", type=int, default=0,
                   help="report recall@k against exact lists of this many points (0: skip)")
    m.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    try:
        report = map_shards(args.source, args.output, args.method, perplexity=args.perplexity,
                            n_neighbors=args.n_neighbors, iterations=args.iterations, epochs=args.epochs,
                            min_dist=args.min_dist, seed=args.seed, address=args.ray, workers=args.workers,
                            points_per_cluster=args.points_per_cluster, pca=args.pca, method_knn=args.knn,
                            refine=not args.no_refine, refine_rounds=args.refine_rounds, refine_on=args.refine_on,
                            gpus_per_task=args.gpus_per_task, device=args.device,
                            recall_sample=args.recall_sample, verbose=not args.quiet)
    except _core.ArgumentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (_core.Error, OSError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(format_report(report))
    print(f"wrote {' and '.join(report['outputs'])} in {report['total_seconds']:.2f} s")
    return 0


if __name__ == "__main__":
    from surfgrad.distributed import main as _main  # the module's functions, importable by Ray's workers

    sys.exit(_main())
