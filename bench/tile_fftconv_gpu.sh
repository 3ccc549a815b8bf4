#!/usr/bin/env bash
# The tile-fftconv benchmark on the GPU machine, in one call (see BENCHMARKS.md): surfgrad's fused
# FFT-convolution tile kernel and the same steps as four tile kernels (forward and forward +
# backward; 4096 signals of 256 samples at 2 and 1 signal pairs per workgroup, then 16384 of 512,
# one pair per workgroup: what 48 KiB of workgroup memory holds for the backward kernel), then PyTorch eager and torch.compile on the same sizes; the generated WGSL.
# Usage: bench/tile_fftconv_gpu.sh [STEPS]   (OUT: where logs, JSON and WGSL go)
set -u
steps=${1:-50}
out=${OUT:-/tmp/tile-fftconv-bench}
mkdir -p "$out" "$out/wgsl"  # the dump writes into an existing folder
bin=${SURFGRAD:-./build/surfgrad}  # the CLI (a carried copy on the GPU machine)
$bin info | head -4 | tee "$out/tile_fftconv.log"
for rows in 0 1; do  # 0: the most that fit the backward kernel's workgroup memory (2 in 48 KiB)
  $bin bench tile-fftconv --signals 4096 --length 256 --taps 64 --steps "$steps" --tile-rows $rows \
    --json "$out/tile_fftconv_rows$rows.json" 2>&1 | tee -a "$out/tile_fftconv.log"
done
$bin bench tile-fftconv --signals 16384 --length 512 --taps 128 --steps "$steps" \
  --json "$out/tile_fftconv_512.json" 2>&1 | tee -a "$out/tile_fftconv.log"
python3 bench/tile_fftconv_torch.py --signals 4096 --length 256 --taps 64 --steps "$steps" \
  --json "$out/tile_fftconv_torch.json" 2>&1 | tee -a "$out/tile_fftconv.log"
python3 bench/tile_fftconv_torch.py --signals 16384 --length 512 --taps 128 --steps "$steps" \
  --json "$out/tile_fftconv_torch_512.json" 2>&1 | tee -a "$out/tile_fftconv.log"
SURFGRAD_DUMP_WGSL="$out/wgsl" $bin demo tile-fftconv --signals 4096 --length 256 --taps 64 2>&1 |
  tee -a "$out/tile_fftconv.log"
