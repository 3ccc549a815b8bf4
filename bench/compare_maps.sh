#!/usr/bin/env bash
# Runs the same seven maps with two surfgrad binaries and compares their .npy outputs bit for bit:
# the check that a refactor left every map unchanged (t-SNE exact and FFT repulsion, UMAP, MNIST,
# and 24,000 points through PCA and descent kNN). About 6 minutes per binary on two CPU cores.
#   bench/compare_maps.sh OLD/surfgrad NEW/surfgrad [MNIST_DIR] [OUT_DIR]
set -euo pipefail
old=$1 new=$2
mnist=${3:-$(dirname "$0")/../../shared/data/mnist10k}
out=${4:-$(mktemp -d)}
run_maps() {  # BIN DIR
  local b=$1 o=$2
  mkdir -p "$o"
  "$b" map --points 3000 -o "$o/b3k_tsne"
  "$b" map --points 7000 --iterations 300 -o "$o/b7k_tsne_fft"
  "$b" map --points 3000 --method umap -o "$o/b3k_umap"
  "$b" map "$mnist/t10k-images-idx3-ubyte.gz" --labels "$mnist/t10k-labels-idx1-ubyte.gz" --iterations 200 -o "$o/mnist_tsne"
  "$b" map "$mnist/t10k-images-idx3-ubyte.gz" --method umap --epochs 100 -o "$o/mnist_umap"
  "$b" map --points 24000 --iterations 30 -o "$o/b24k_tsne_descent"
  "$b" map --points 24000 --method umap --epochs 20 -o "$o/b24k_umap_descent"
}
run_maps "$old" "$out/old" >"$out/old.log" 2>&1
run_maps "$new" "$out/new" >"$out/new.log" 2>&1
status=0
for f in "$out"/old/*.npy; do
  name=$(basename "$f")
  if cmp -s "$f" "$out/new/$name"; then echo "same      $name"; else echo "DIFFERENT $name"; status=1; fi
done
exit $status
