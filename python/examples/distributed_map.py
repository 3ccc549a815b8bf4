"""A map of sharded embeddings with the kNN graph computed over a Ray cluster (surfgrad.distributed).

    python python/examples/distributed_map.py [--points 20000] [--workers 2] [--address HOST:PORT]

Writes the CLI's built-in set (10 Gaussian clusters in 768-D) as four .npy shards into a temporary
folder, maps them with UMAP (the kNN graph sharded over the cluster's workers, the layout on one
GPU), prints the report, and checks the map's 10-NN label accuracy on a sample.
"""

import argparse
import os
import tempfile

import numpy as np

import surfgrad as sg
import surfgrad.distributed as sgd

p = argparse.ArgumentParser()
p.add_argument("--points", type=int, default=20000)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--address", default=None, help="a running Ray cluster; default: a local one")
args = p.parse_args()

# %% Shards: any folder of .npy (or Parquet) files, each [rows, D]
x, labels = sg.builtin_points(args.points)
folder = tempfile.mkdtemp(prefix="surfgrad-shards-")
for i, part in enumerate(np.array_split(x, 4)):
    np.save(os.path.join(folder, f"part-{i}.npy"), part)

# %% The map: writes map.npy and map.parquet (id, x, y)
report = sgd.map_shards(folder, os.path.join(folder, "map"), "umap", address=args.address, workers=args.workers,
                        epochs=200)
print(sgd.format_report(report))
y = np.load(os.path.join(folder, "map.npy"))
# 10-NN majority vote in the map for 1,000 sampled points (sg.map_quality measures more, slowly on a CPU).
rows = np.random.default_rng(0).choice(len(y), 1000, replace=False)
d = ((y[rows, None, :] - y[None, :, :]) ** 2).sum(-1)
d[np.arange(len(rows)), rows] = np.inf
near = np.argpartition(d, 10, axis=1)[:, :10]
votes = np.array([np.bincount(labels[n], minlength=10).argmax() for n in near])
accuracy = float((votes == labels[rows]).mean())
print(f"10-NN accuracy of the map (1,000 sampled points): {accuracy:.3f}")
assert accuracy > 0.9
