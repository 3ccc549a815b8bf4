"""The Ray tasks: plain functions, wrapped by ray.remote when a job starts (graph.py). Each
task's output depends only on its inputs, so a retried task gives the same bits."""

from __future__ import annotations

import os
import resource
import socket
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import _core
from .shards import Shard, _read

# Fault injection for the tests: a path; the first knn task to find it absent creates it and
# kills its own worker process, as a machine lost mid-run would (Ray then reruns the task).
_CRASH_ONCE_ENV = "SURFGRAD_DISTRIBUTED_CRASH_ONCE"


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
