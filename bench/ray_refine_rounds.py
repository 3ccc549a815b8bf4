"""Recall of surfgrad.distributed's graph against the rounds of descent across clusters, on data
with no structure (isotropic Gaussian points): the case where a point's true neighbours straddle
many k-means clusters and the merged per-cluster lists alone recall least.

    python bench/ray_refine_rounds.py --points 30000 --dims 32 --workers 2     # BENCHMARKS.md
"""

import argparse
import os
import tempfile
import time

import numpy as np

import surfgrad as sg
import surfgrad.distributed as sgd


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--points", type=int, default=30000)
    p.add_argument("--dims", type=int, default=32)
    p.add_argument("--k", type=int, default=15)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--points-per-cluster", type=int, default=3000)
    p.add_argument("--sample", type=int, default=500, help="points whose exact lists are computed (float64)")
    p.add_argument("--rounds", default="0,1,2,4", help="refine_rounds to try (0: no refinement)")
    args = p.parse_args()
    import ray

    x = np.random.default_rng(3).normal(size=(args.points, args.dims)).astype(np.float32)
    rows = np.random.default_rng(0).choice(args.points, args.sample, replace=False)
    exact = sgd.exact_neighbours(x, rows, args.k)
    print(f"adapter: {sg.device()['adapter']}; {args.points} × {args.dims} isotropic, k = {args.k}", flush=True)
    li = np.empty((args.points, args.k), np.int32)
    ld = np.empty((args.points, args.k), np.float32)
    t0 = time.perf_counter()
    sg._core.knn_graph(x, args.k, li, ld, "descent", 1, "")
    print(f"one process's descent: recall {sgd.recall(li, exact, rows):.4f} in {time.perf_counter() - t0:.1f} s",
          flush=True)
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i, part in enumerate(np.array_split(x, 3)):
            paths.append(os.path.join(folder, f"s{i}.npy"))
            np.save(paths[-1], part)
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
        try:
            for r in (int(v) for v in args.rounds.split(",")):
                t0 = time.perf_counter()
                g = sgd.knn_graph(paths, args.k, points_per_cluster=args.points_per_cluster, pca=0, verbose=False,
                                  refine=r > 0, refine_rounds=max(r, 1))
                print(f"refine_rounds {r}: recall {sgd.recall(g.indices, exact, rows):.4f} in "
                      f"{time.perf_counter() - t0:.1f} s ({g.report.get('refine')})", flush=True)
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
