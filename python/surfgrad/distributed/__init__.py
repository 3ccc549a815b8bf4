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

# The package's files, one idea each: shards.py (the input), tasks.py (the Ray tasks), cluster.py
# (the cluster and running a phase), merge.py (the union of per-cluster lists), graph.py
# (knn_graph), map_job.py (map_shards, outputs, report), measures.py (exact lists, recall),
# cli.py (the command line).
from .cluster import ClusterError
from .graph import Graph, knn_graph
from .map_job import format_report, map_shards, write_map
from .measures import exact_neighbours, recall
from .merge import merge_lists
from .shards import Shard, ShardSet, open_shards
from .cli import main

__all__ = ["ShardSet", "Shard", "Graph", "ClusterError", "open_shards", "knn_graph", "map_shards", "write_map",
           "format_report", "merge_lists", "exact_neighbours", "recall", "main"]
