#!/usr/bin/env bash
# The tile-spd benchmark on the GPU machine, in one call (see BENCHMARKS.md): 1,024 batched SPD
# solves x = (JᵀMJ + diag R)⁻¹ f by surfgrad's one fused tile kernel and by four launches, forward
# and forward + backward, at n = 16, 24 and 32 unknowns (at n = 32, m = 48 the fused backward kernel
# needs 55,680 bytes of workgroup memory, over 48 KiB, so that shape runs forward only); then
# PyTorch (cholesky + cholesky_solve, eager and torch.compile) on the same shapes; the fused
# kernels' WGSL under $OUT/wgsl.
# Usage: bench/tile_spd_gpu.sh [STEPS]   (OUT: where logs and JSON go)
set -u
steps=${1:-20}
out=${OUT:-/tmp/tile-spd-bench}
mkdir -p "$out"
bin=${SURFGRAD:-./build/surfgrad}  # the CLI (a carried copy on the GPU machine)
$bin info | head -4 | tee "$out/tile_spd.log"
for shape in "16 24" "24 32" "32 32" "32 48"; do
  set -- $shape
  for threads in 64 128; do
    $bin bench tile-spd --systems 1024 --n "$1" --m "$2" --threads $threads --steps "$steps" --repeats 7 \
      --json "$out/tile_spd_n$1_m$2_t$threads.json" 2>&1 | tee -a "$out/tile_spd.log"
  done
  python3 bench/tile_spd_torch.py --systems 1024 --n "$1" --m "$2" --steps "$steps" --repeats 7 \
    --json "$out/tile_spd_torch_n$1_m$2.json" 2>&1 | tee -a "$out/tile_spd.log"
done
mkdir -p "$out/wgsl"  # the dump writes into an existing folder
SURFGRAD_DUMP_WGSL="$out/wgsl" $bin demo tile-spd --systems 1024 --n 32 --m 32 2>&1 | tee -a "$out/tile_spd.log"
