"""knn_graph: the sharded kNN graph (sample, partition, prepare, knn, merge, refine), and the
layout task when a map is asked for."""

from __future__ import annotations

import math
import resource
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .. import _core
from .._tensor import _adapter
from .cluster import _check_gpus, _Cluster, _Log, _run
from .merge import merge_lists
from .shards import open_shards
from .tasks import (_DESCENT_SEARCH, _task_knn, _task_layout, _task_prepare, _task_recall, _task_refine,
                    _task_refine_all, _task_sample)


@dataclass
class Graph:
    """A kNN graph: ``indices`` int32 [N, k] (ids of neighbours, nearest first), ``distances``
    float32 [N, k] (squared, on the features the search ran on), ``start`` float32 [N, 2] (the
    first two principal components), ``report`` (times per phase and per worker, memory peaks)."""

    indices: np.ndarray
    distances: np.ndarray
    start: np.ndarray
    report: Dict[str, Any] = field(default_factory=dict)


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
