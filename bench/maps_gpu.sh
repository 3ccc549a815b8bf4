#!/usr/bin/env bash
# Map benchmarks on the GPU machine (see BENCHMARKS.md): t-SNE of MNIST 10k (FFT and exact
# repulsion, each run twice: the first pays pipeline compilation), t-SNE and UMAP of the
# built-in 768-D set at 100k and 1M points. Writes logs and maps' quality to $OUT.
# Usage: bench/maps_gpu.sh MNIST_DIR [STEPS]   (STEPS: a subset of "mnist 100k 1m text"; text
# maps TEXT_DIR/embeddings.npy with TEXT_DIR/labels.npy, as bench/text_embeddings.py writes them)
set -u
mnist=$1
steps=${2:-"mnist 100k 1m"}
out=${OUT:-/tmp/maps-bench}
mkdir -p "$out"
bin=./build/surfgrad
img=$mnist/t10k-images-idx3-ubyte.gz
lab=$mnist/t10k-labels-idx1-ubyte.gz
run() {  # name, then the map command's arguments
  local name=$1; shift
  echo "== $name: surfgrad map $*" | tee -a "$out/maps.log"
  /usr/bin/time -v $bin map "$@" -o "$out/$name" >"$out/$name.txt" 2>&1
  grep -E "t-SNE of|UMAP of|recall@|phase|^  |peaks|Maximum resident" "$out/$name.txt" | tee -a "$out/maps.log"
  rm -f "$out/$name.csv"
}
for s in $steps; do
  case $s in
    mnist)
      for r in fft exact; do
        for rep in 1 2; do run "tsne-mnist-$r-$rep" "$img" --labels "$lab" --repulsion $r; done
        $bin eval "$out/tsne-mnist-$r-2.npy" --input "$img" --labels "$lab" 2>&1 | tee -a "$out/maps.log"
      done ;;
    100k)
      run tsne-100k --points 100000
      run umap-100k --points 100000 --method umap ;;
    text)
      t=${TEXT_DIR:-build/debian-text}
      for m in tsne umap; do
        run "text-$m" "$t/embeddings.npy" --labels "$t/labels.npy" --method $m
        $bin eval "$out/text-$m.npy" --input "$t/embeddings.npy" --labels "$t/labels.npy" 2>&1 | tee -a "$out/maps.log"
      done ;;
    1m)
      run umap-1m --points 1000000 --method umap
      run tsne-1m --points 1000000 ;;
  esac
done
rm -f "$out"/*.npy
