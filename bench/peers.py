"""Embedding maps side by side: surfgrad's t-SNE against openTSNE and scikit-learn's Barnes-Hut
t-SNE, and surfgrad's UMAP against umap-learn, on the same data with the same parameters, timed on this machine, every map scored by the same code
(`surfgrad eval`: kNN recall@10 against exact neighbours in the input space, 10-NN accuracy,
trustworthiness@10, t-SNE KL divergence on a sample).

    bash scripts/peers_env.sh                      # pinned peers in .venv-peers
    .venv-peers/bin/python bench/peers.py --data ../shared/data/mnist10k --out bench-peers

Writes OUT/<tool>.npy for each map and OUT/peers.json; prints a table.
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import time

import numpy as np


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def evaluate(surfgrad, embedding, images, labels):
    out = subprocess.run([surfgrad, "eval", embedding, "--input", images, "--labels", labels],
                         capture_output=True, text=True, check=True).stdout
    value = lambda name: float(re.search(name + r"\s+([\d.]+)", out).group(1))
    return value("kNN recall@10"), value("10-NN accuracy"), value("trustworthiness"), value("KL divergence")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="../shared/data/mnist10k")
    p.add_argument("--points", help="an N×D .npy to map instead of MNIST (e.g. bench/text_embeddings.py's)")
    p.add_argument("--labels", help="its labels (.npy)")
    p.add_argument("--out", default="bench-peers")
    p.add_argument("--surfgrad", default="build/surfgrad")
    p.add_argument("--perplexity", type=float, default=30)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--skip", default="", help="comma-separated tools to skip")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.points:
        images, labels = a.points, a.labels
        x = np.load(images).astype(np.float32)
    else:
        images = os.path.join(a.data, "t10k-images-idx3-ubyte.gz")
        labels = os.path.join(a.data, "t10k-labels-idx1-ubyte.gz")
        x = read_idx(images).reshape(10000, -1).astype(np.float32)
    skip = set(a.skip.split(","))
    results = []

    def record(tool, seconds, path, detail):
        recall, accuracy, trust, kl = evaluate(a.surfgrad, path, images, labels)
        results.append({"tool": tool, "seconds": seconds, "knn_recall_10": recall, "knn_accuracy_10": accuracy,
                        "trustworthiness_10": trust, "kl_divergence_sample": kl, "detail": detail})
        print(f"{tool:<22} {seconds:9.1f} s   recall@10 {recall:.4f}   10-NN accuracy {accuracy:.4f}   "
              f"trustworthiness {trust:.4f}   KL {kl:.3f}", flush=True)

    if "surfgrad" not in skip:
        t = time.time()
        out = subprocess.run([a.surfgrad, "map", images, "--labels", labels, "-o", os.path.join(a.out, "surfgrad"),
                              "--perplexity", str(a.perplexity)], capture_output=True, text=True, check=True)
        adapter = re.search(r"on (.*) \(perplexity", out.stdout)
        record("surfgrad t-SNE", time.time() - t, os.path.join(a.out, "surfgrad.npy"),
               "PCA 50, exact kNN, FFT-interpolated repulsion, adapter " + (adapter.group(1) if adapter else "?"))
    if "opentsne" not in skip:
        import openTSNE
        t = time.time()
        y = openTSNE.TSNE(perplexity=a.perplexity, n_iter=500, early_exaggeration_iter=250, early_exaggeration=12,
                          learning_rate="auto", n_jobs=a.threads, random_state=1, neighbors="exact").fit(x)
        np.save(os.path.join(a.out, "opentsne.npy"), np.asarray(y, dtype=np.float32))
        record("openTSNE " + openTSNE.__version__, time.time() - t, os.path.join(a.out, "opentsne.npy"),
               f"FFT-accelerated interpolation, exact kNN, {a.threads} threads")
    if "sklearn" not in skip:
        import sklearn
        from sklearn.manifold import TSNE
        t = time.time()
        y = TSNE(perplexity=a.perplexity, early_exaggeration=12, learning_rate="auto", max_iter=750, init="pca",
                 method="barnes_hut", random_state=1, n_jobs=a.threads).fit_transform(x)
        np.save(os.path.join(a.out, "sklearn.npy"), y.astype(np.float32))
        record("scikit-learn " + sklearn.__version__, time.time() - t, os.path.join(a.out, "sklearn.npy"),
               f"Barnes-Hut, {a.threads} threads")
    if "surfgrad-umap" not in skip:
        t = time.time()
        out = subprocess.run([a.surfgrad, "map", images, "--labels", labels, "-o", os.path.join(a.out, "surfgrad-umap"),
                              "--method", "umap"], capture_output=True, text=True, check=True)
        adapter = re.search(r"on (.*) \(n_neighbors", out.stdout)
        record("surfgrad UMAP", time.time() - t, os.path.join(a.out, "surfgrad-umap.npy"),
               "PCA 50, exact kNN, n_neighbors 15, min_dist 0.1, 500 epochs, adapter " + (adapter.group(1) if adapter else "?"))
    if "umap" not in skip:
        import umap
        t = time.time()
        # umap-learn's defaults (n_neighbors 15, min_dist 0.1, 500 epochs below 10,001 points);
        # a fixed random_state makes it single-threaded, so it is left unset and the threads capped.
        import numba
        numba.set_num_threads(a.threads)
        y = umap.UMAP(n_neighbors=15, min_dist=0.1, n_jobs=a.threads).fit_transform(x)
        np.save(os.path.join(a.out, "umap.npy"), y.astype(np.float32))
        record("umap-learn " + umap.__version__, time.time() - t, os.path.join(a.out, "umap.npy"),
               f"NN-descent kNN, spectral init, {a.threads} threads (includes numba compilation)")
    with open(os.path.join(a.out, "peers.json"), "w") as f:
        json.dump({"data": a.points or "MNIST 10k", "perplexity": a.perplexity, "iterations": 750, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
