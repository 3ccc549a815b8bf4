"""surfgrad.distributed against the single-process map, on one machine: the same points as .npy
shards, mapped by sg.UMAP (or sg.TSNE) in this process and by surfgrad.distributed.map_shards
over a local Ray cluster of --workers worker processes (sharing the machine's GPU, or lavapipe);
seconds per phase of each, and kNN recall@k of both graphs against exact neighbours on a sample.

    python bench/ray_maps.py --points 200000 --dims 64 --workers 2 --work /tmp/ray-bench
    python bench/ray_maps.py --points 10000000 --dims 768 --workers 4 --gpus-per-task 0.25 --num-gpus 1 \\
        --shards 40 --recall-sample 0 --work /data/ray-bench          # bench/ray_gpu.sh

The points (--data): "builtin", the CLI's built-in set (10 Gaussian clusters in 768-D, made on the
GPU by sg._core.builtin_points; labels kept in WORK/labels.npy for the maps' 10-NN accuracy), or
"blobs", --centres Gaussian clusters (spread 6, unit noise, seeded per shard, any --dims, by
--jobs processes); written once into WORK/shards (kept for a second run; --fresh rewrites them).
"""

import argparse
import json
import multiprocessing
import os
import sys
import time

import numpy as np


def write_shard(args):
    path, rows, dims, centres, seed = args
    rng = np.random.default_rng(seed)
    means = np.random.default_rng(12345).normal(size=(centres, dims)).astype(np.float32) * 6.0
    which = rng.integers(0, centres, rows)
    x = rng.standard_normal((rows, dims), dtype=np.float32)
    x += means[which]
    tmp = path + ".tmp.npy"
    np.save(tmp, x)
    os.replace(tmp, path)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--points", type=int, default=200000)
    p.add_argument("--dims", type=int, default=64)
    p.add_argument("--data", choices=("builtin", "blobs"), default="builtin")
    p.add_argument("--centres", type=int, default=50, help="blobs: Gaussian clusters")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--gpus-per-task", type=float, default=0)
    p.add_argument("--num-gpus", type=float, default=None)
    p.add_argument("--method", choices=("umap", "tsne"), default="umap")
    p.add_argument("--epochs", type=int, default=0, help="UMAP epochs (0: the library's default)")
    p.add_argument("--iterations", type=int, default=750, help="t-SNE iterations")
    p.add_argument("--points-per-cluster", type=int, default=8000)
    p.add_argument("--pca", type=int, default=-1)
    p.add_argument("--recall-sample", type=int, default=1000, help="points whose exact neighbours are computed "
                   "(numpy, on the features the searches ran on); 0: skip")
    p.add_argument("--graph-recall-sample", type=int, default=0, help="map runs: recall@k of the sharded graph "
                   "against exact lists (on the GPU, on the searched features) of this many points; 0: skip")
    p.add_argument("--only", choices=("all", "data", "ray", "single", "recall"), default="all",
                   help="data: write the shards only; ray / single / recall: the shards and one of the three")
    p.add_argument("--work", default="/tmp/ray-bench")
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    p.add_argument("--fresh", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args()

    import surfgrad as sg
    import surfgrad.distributed as sgd

    info = sg.device()
    print(f"adapter: {info['adapter']} ({info['backend']}); {os.cpu_count()} CPUs; load {os.getloadavg()}",
          flush=True)
    shards_dir = os.path.join(args.work, "shards")
    os.makedirs(shards_dir, exist_ok=True)
    if args.data == "builtin" and args.dims != 768:
        p.error("--data builtin is 768-D: pass --dims 768, or --data blobs for other dimensions")
    what = f"{args.data}-c{args.centres}" if args.data == "blobs" else "builtin"
    marker = os.path.join(args.work, f"points-{args.points}x{args.dims}-{what}-s{args.shards}")
    t0 = time.perf_counter()
    if args.fresh or not os.path.exists(marker):
        for f in os.listdir(shards_dir):
            os.remove(os.path.join(shards_dir, f))
        for f in os.listdir(args.work):
            if f.startswith("points-"):
                os.remove(os.path.join(args.work, f))
        bounds = np.linspace(0, args.points, args.shards + 1).astype(np.int64)
        if args.data == "builtin":
            x = np.empty((args.points, 768), np.float32)
            labels = np.empty(args.points, np.int32)
            sg._core.builtin_points(x, labels)
            np.save(os.path.join(args.work, "labels.npy"), labels)
            for i in range(args.shards):
                np.save(os.path.join(shards_dir, f"part-{i:05d}.npy"), x[bounds[i]:bounds[i + 1]])
            del x
        else:
            jobs = [(os.path.join(shards_dir, f"part-{i:05d}.npy"), int(bounds[i + 1] - bounds[i]), args.dims,
                     args.centres, 1000 + i) for i in range(args.shards)]
            with multiprocessing.Pool(min(args.jobs, args.shards)) as pool:
                pool.map(write_shard, jobs)
        open(marker, "w").close()
        print(f"wrote {args.shards} shards of {args.points} × {args.dims} in {time.perf_counter() - t0:.1f} s",
              flush=True)
    result = {"points": args.points, "dims": args.dims, "data": args.data, "workers": args.workers,
              "gpus_per_task": args.gpus_per_task, "num_gpus": args.num_gpus, "method": args.method,
              "adapter": info["adapter"], "cpus": os.cpu_count(), "load": os.getloadavg()}
    if args.only == "data":
        return 0
    k = 15 if args.method == "umap" else 90
    out_dir = os.path.join(args.work, "out")
    os.makedirs(out_dir, exist_ok=True)

    # Distributed first (the single-process run needs every point in this process's memory).
    kw = {"formats": ("npy", "parquet")}
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # the GPU machine's carried wheels leave pyarrow out (its 55 MB)
        kw["formats"] = ("npy",)
    if args.method == "umap":
        kw.update(n_neighbors=k, epochs=args.epochs)
    else:
        kw.update(perplexity=30.0, iterations=args.iterations)
    if args.only in ("all", "ray"):
        run_distributed(args, sgd, shards_dir, out_dir, kw, result)
    if args.only in ("all", "single"):
        run_single(args, sg, shards_dir, k, result)
    if args.recall_sample and args.only in ("all", "recall"):
        measure_recall(args, sg, sgd, shards_dir, k, result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=float)
    print(json.dumps(result, default=float))


def run_distributed(args, sgd, shards_dir, out_dir, kw, result):
    t0 = time.perf_counter()
    report = sgd.map_shards(shards_dir, os.path.join(out_dir, "map"), args.method, workers=args.workers,
                            gpus_per_task=args.gpus_per_task, num_gpus=args.num_gpus,
                            points_per_cluster=args.points_per_cluster, pca=args.pca, seed=1,
                            recall_sample=args.graph_recall_sample, **kw)
    wall = time.perf_counter() - t0
    print(sgd.format_report(report), flush=True)
    embedding = report.pop("embedding")
    report.pop("outputs", None)
    result["distributed"] = {"wall_seconds": wall, "phases": report["phases"], "layout": report["layout_phases"],
                             "workers": report["workers"], "clusters": report["clusters"],
                             "cluster_gpus": report.get("cluster_gpus"),
                             "cluster_points": report["cluster_points"], "driver_peak_rss": report["driver_peak_rss"],
                             "gpu_peak_bytes": report.get("gpu_peak_bytes"),
                             "knn_recall": report.get("knn_recall"), "recall_sample": report.get("recall_sample"),
                             "map_accuracy_10nn": map_accuracy(args, embedding)}
    print(f"distributed: {wall:.1f} s; kNN recall {report.get('knn_recall')}; 10-NN accuracy of the map "
          f"{result['distributed']['map_accuracy_10nn']}", flush=True)
    del embedding


def map_accuracy(args, embedding, sample=200):
    """10-NN label accuracy of the map on a sample (built-in set only: it has labels); 2-D
    distances by differences, 16 sampled rows at a time, 200 rows (at 10M points a float64 matmul per
    100 rows made this the slowest step of the run)."""
    path = os.path.join(args.work, "labels.npy")
    if args.data != "builtin" or not os.path.exists(path):
        return None
    labels = np.load(path)
    rows = np.random.default_rng(0).choice(len(embedding), min(sample, len(embedding)), replace=False)
    x, y = np.ascontiguousarray(embedding[:, 0]), np.ascontiguousarray(embedding[:, 1])
    votes = np.empty(len(rows), np.int64)
    for b in range(0, len(rows), 16):
        r = rows[b:b + 16]
        d = np.square(x[None, :] - x[r, None]) + np.square(y[None, :] - y[r, None])
        d[np.arange(len(r)), r] = np.inf
        near = np.argpartition(d, 10, axis=1)[:, :10]
        votes[b:b + 16] = [np.bincount(labels[n], minlength=10).argmax() for n in near]
    return float((votes == labels[rows]).mean())


def run_single(args, sg, shards_dir, k, result):
    t0 = time.perf_counter()
    x = np.concatenate([np.load(os.path.join(shards_dir, f)) for f in sorted(os.listdir(shards_dir))
                        if f.endswith(".npy")])
    load = time.perf_counter() - t0
    if args.method == "umap":
        est = sg.UMAP(n_neighbors=k, random_state=1, n_epochs=args.epochs or None)
    else:
        est = sg.TSNE(perplexity=30, random_state=1, max_iter=args.iterations)
    t0 = time.perf_counter()
    est.fit(x)
    fit = time.perf_counter() - t0
    print(f"single process: load {load:.1f} s, fit {fit:.1f} s: "
          + ", ".join(f"{a} {b:.2f} s" for a, b in est.timings_.items()) + f"; sampled recall {est.knn_recall_}",
          flush=True)
    result["single"] = {"load_seconds": load, "fit_seconds": fit, "phases": est.timings_,
                        "knn_recall_sampled": est.knn_recall_, "map_accuracy_10nn": map_accuracy(args, est.embedding_)}
    print(f"single process: 10-NN accuracy of the map {result['single']['map_accuracy_10nn']}", flush=True)
    del x


def measure_recall(args, sg, sgd, shards_dir, k, result):
    # Exact neighbours on the features the distributed search ran on (its PCA or the points),
    # for a sample; the distributed graph's recall against them.
    t0 = time.perf_counter()
    g = sgd.knn_graph(shards_dir, k, workers=args.workers, gpus_per_task=args.gpus_per_task,
                      num_gpus=args.num_gpus, points_per_cluster=args.points_per_cluster, pca=args.pca, seed=1,
                      verbose=False)
    sharded_s = time.perf_counter() - t0
    x = np.concatenate([np.load(os.path.join(shards_dir, f)) for f in sorted(os.listdir(shards_dir))
                        if f.endswith(".npy")])
    rows = np.random.default_rng(0).choice(len(x), args.recall_sample, replace=False)
    if g.report["pca"]:
        print("recall: skipped (the search ran on PCA components; pass --pca 0 to measure it)")
    else:
        exact = sgd.exact_neighbours(x, rows, k)
        result.setdefault("distributed", {}).update(recall=sgd.recall(g.indices, exact, rows),
                                                    graph_seconds=sharded_s, graph_phases=g.report["phases"])
        li = np.empty((len(x), k), np.int32)
        ld = np.empty((len(x), k), np.float32)
        t0 = time.perf_counter()
        sg._core.knn_graph(x, k, li, ld, "descent", 1, "")
        result["single_descent"] = {"seconds": time.perf_counter() - t0,
                                    "recall": sgd.recall(li, exact, rows)}
        print(f"recall@{k} on {len(rows)} points: distributed {result['distributed']['recall']:.4f} "
              f"({sharded_s:.1f} s), "
              f"single-process descent {result['single_descent']['recall']:.4f} "
              f"({result['single_descent']['seconds']:.1f} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
