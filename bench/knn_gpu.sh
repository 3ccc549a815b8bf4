#!/usr/bin/env bash
# Exact kNN and million-point maps on the GPU machine (BENCHMARKS.md, "Exact kNN without the
# distance matrix"): surfgrad's streaming exact kernel, neighbour descent and PyTorch's chunked
# matmul + topk on the same shapes in one call, then t-SNE and UMAP of the built-in set at a
# million points with --knn auto (exact) and --knn descent (the pipeline before).
# Usage: OUT=DIR bench/knn_gpu.sh [SURFGRAD]     (SURFGRAD: the CLI, default ./build/surfgrad)
set -u
bin=${1:-./build/surfgrad}
out=${OUT:-/tmp/knn-bench}
mkdir -p "$out"
"$bin" info >"$out/info.txt" 2>&1
"$bin" bench knn --points 1000000 --dims 50 --k 90 --methods exact,descent --recall-sample 2000 \
  --json "$out/knn1m.json" 2>&1 | tee "$out/knn1m.txt"
python3 bench/torch_knn.py 1000000 50 90 2>&1 | tee "$out/torch1m.json"
"$bin" bench knn --points 100000 --dims 50 --k 15 --methods exact,blocked,descent --json "$out/knn100k.json" 2>&1 |
  tee "$out/knn100k.txt"
python3 bench/torch_knn.py 100000 50 15 2>&1 | tee "$out/torch100k.json"
for m in umap tsne; do
  for knn in auto descent; do
    echo "== map --points 1000000 --method $m --knn $knn" | tee -a "$out/maps.log"
    /usr/bin/time -v "$bin" map --points 1000000 --method $m --knn $knn -o "/tmp/$m-$knn" >"$out/map-$m-$knn.txt" 2>&1
    grep -E "t-SNE of|UMAP of|recall@|phase|^  [a-zA-Z]|peaks|Maximum resident" "$out/map-$m-$knn.txt" | grep -v '^  optimise\|^  pca\|^  knn\|^  affin\|^  memb' | tee -a "$out/maps.log"
  done
done
