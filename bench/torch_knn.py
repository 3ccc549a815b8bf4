"""Exact kNN in PyTorch, the reference for `surfgrad bench knn` (same call, same shapes).

    python3 bench/torch_knn.py N D K [--data clusters|gaussian] [--chunk ROWS]

The way a PyTorch user computes it: for a chunk of rows, squared distances to every point by
one matmul (|a|² + |b|² − 2ab, TF32 off), the point itself masked, torch.topk(k, largest=False).
The points are made like surfgrad's (100 Gaussian centres with spread 3 plus unit noise, or one
cloud), with PyTorch's own generator: the work does not depend on the values. Prints one JSON
object with the seconds (CUDA-synchronised wall clock, after one warm-up chunk).
"""
import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("d", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("--data", choices=["clusters", "gaussian"], default="clusters")
    ap.add_argument("--chunk", type=int, default=2048)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator(device="cuda").manual_seed(11)
    x = torch.randn(a.n, a.d, device="cuda", generator=g)
    if a.data == "clusters":
        centres = torch.randn(100, a.d, device="cuda", generator=g) * 3
        x += centres[(torch.arange(a.n, device="cuda") * 7919) % 100]
    norms = (x * x).sum(1)
    idx = torch.empty(a.n, a.k, dtype=torch.int64, device="cuda")
    dist = torch.empty(a.n, a.k, device="cuda")

    def chunk(r0):
        r1 = min(a.n, r0 + a.chunk)
        d2 = norms[r0:r1, None] + norms[None, :] - 2 * (x[r0:r1] @ x.T)
        d2[torch.arange(r1 - r0, device="cuda"), torch.arange(r0, r1, device="cuda")] = float("inf")
        v, i = torch.topk(d2, a.k, dim=1, largest=False)
        dist[r0:r1], idx[r0:r1] = v.clamp_min_(0), i

    chunk(0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for r0 in range(0, a.n, a.chunk):
        chunk(r0)
    torch.cuda.synchronize()
    s = time.perf_counter() - t0
    print(json.dumps({"bench": "torch_knn", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "n": a.n, "d": a.d, "k": a.k, "data": a.data, "chunk": a.chunk, "seconds": s}))


if __name__ == "__main__":
    main()
