#!/usr/bin/env bash
# Exact kNN before and after a kernel change, on the GPU machine in one call (BENCHMARKS.md,
# "the workgroup merge"): the old and new CLI alternate at 500k and 1M points, then the new
# kernel's tile shapes at 500k, then t-SNE (old once, new twice) and UMAP of a million built-in
# points, then PyTorch's chunked matmul + topk.
# Usage: OUT=DIR bench/knn_merge_gpu.sh OLD_CLI NEW_CLI [SHAPES]
set -u
old=$1 new=$2
shapes=${3:-64x64x8/4x4/q16m12e1s256}
out=${OUT:-/tmp/knn-merge}
mkdir -p "$out"
"$new" info >"$out/info.txt" 2>&1
for n in 500000 1000000; do
  for which in old new old new; do
    bin=$old; [ $which = new ] && bin=$new
    echo "== $which bench knn --points $n" | tee -a "$out/knn.log"
    "$bin" bench knn --points $n --dims 50 --k 90 --methods exact --recall-sample 500 2>&1 | tee -a "$out/knn.log"
  done
done
echo "== new shapes at 500k" | tee -a "$out/knn.log"
"$new" bench knn --points 500000 --dims 50 --k 90 --methods exact --shapes "$shapes" --recall-sample 500 \
  --json "$out/shapes.json" 2>&1 | tee -a "$out/knn.log"
for run in old:tsne new:tsne new:tsne new:umap; do
  which=${run%%:*} m=${run##*:}
  bin=$old; [ $which = new ] && bin=$new
  echo "== $which map --points 1000000 --method $m" | tee -a "$out/maps.log"
  /usr/bin/time -v "$bin" map --points 1000000 --method $m -o "/tmp/$m-$which" >"$out/map-$m-$which.txt" 2>&1
  grep -E "t-SNE of|UMAP of|recall@|^  [a-zA-Z]|peaks|Maximum resident|Elapsed" "$out/map-$m-$which.txt" |
    grep -v '^  optimise \|^  pca \|^  knn \|^  affin\|^  memb' | tee -a "$out/maps.log"
done
python3 bench/torch_knn.py 1000000 50 90 2>&1 | tee "$out/torch1m.json"
