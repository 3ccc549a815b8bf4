#!/usr/bin/env bash
# Issue 35's CPU-adapter t-SNE variants, checked on a GPU: the GPUs must run what they ran before
# (tsne_repulsion.wgsl with THREADS=32 PAIRED=false, the FFT spread/charges with NARROW=false, the
# FFT grid kernels' div_line indices). On this adapter: the variant tests (both variants of each
# kernel run on the GPU itself: 32 and 8 threads the same bits, paired division within 1e-4,
# 32-bit charges within their rounding of the 64-bit ones), the FFT/exact repulsion tests, and
# MNIST 10k by t-SNE twice (FFT repulsion; the second run warm) with its quality, and the 1,797-point
# digits-sized exact path (--points 1797 of the built-in set).
# Usage (GPU machine, from a pack of this tree: bash bench/dawn_matmul_gpu.sh --pack build-NAME):
#   mkdir -p /tmp/pk && . bench/gpu_pack_env.sh build-NAME/dawn-gpu.tar.xz /tmp/pk &&
#   OUT=$OUT/tsne SURFGRAD=$bin/surfgrad TESTS=$bin/surfgrad_tests bash bench/tsne_cpu_variants_gpu.sh
# Writes $OUT/tsne.log (the tests' pass/fail lines, each map's phases and quality) and the maps.
# A dry run here (lavapipe) takes ~1 min plus MNIST's two maps.
set -u
out=${OUT:-/tmp/tsne-variants}
mkdir -p "$out"
bin=${SURFGRAD:-./build/surfgrad}
tests=${TESTS:-./build/surfgrad_tests}
mnist=
for d in shared/data/mnist10k ../shared/data/mnist10k .carry/data/mnist10k; do
  [ -z "$mnist" ] && [ -f "$d/t10k-images-idx3-ubyte.gz" ] && mnist=$d
done
$bin info 2>&1 | head -4 | tee "$out/tsne.log"
$tests --gtest_filter='TsneRepulsion.*:TsneIndirectDispatch.*:Tsne.*:FftLines.*:FirstMapPrewarm.*' >"$out/tests.log" 2>&1
grep -E "^\[ +(OK|FAILED|PASSED) |Failure|extent " "$out/tests.log" | tee -a "$out/tsne.log"
map() {  # name, then the map's arguments
  local name=$1; shift
  $bin map "$@" -o "$out/$name" >"$out/$name.txt" 2>&1
  echo "== $name: $*" | tee -a "$out/tsne.log"
  grep -E "t-SNE of|^  [a-zA-Z]|recall|trust|accuracy" "$out/$name.txt" | grep -v optimise | tee -a "$out/tsne.log"
  rm -f "$out/$name.csv" "$out/$name.png"
}
if [ -n "$mnist" ]; then
  for run in 1 2; do map "mnist_$run" "$mnist/t10k-images-idx3-ubyte.gz" --labels "$mnist/t10k-labels-idx1-ubyte.gz"; done
  $bin eval "$out/mnist_2.npy" --input "$mnist/t10k-images-idx3-ubyte.gz" --labels "$mnist/t10k-labels-idx1-ubyte.gz" 2>&1 |
    tee -a "$out/tsne.log"
  cmp -s "$out/mnist_1.npy" "$out/mnist_2.npy" && echo "mnist: both runs the same bytes" | tee -a "$out/tsne.log"
else
  echo "no MNIST 10k found: skipped its maps" | tee -a "$out/tsne.log"
fi
map exact_1797 --points 1797
