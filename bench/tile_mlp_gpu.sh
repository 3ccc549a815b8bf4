#!/usr/bin/env bash
# The tile-mlp benchmark on the GPU machine, in one call (see BENCHMARKS.md): surfgrad's fused
# tile kernels and its ordinary ops (8, 16, 32 pixels per workgroup), then PyTorch eager and
# torch.compile on the same network, image and step count; the fitted image as PNG.
# Usage: bench/tile_mlp_gpu.sh [STEPS]   (OUT: where logs, JSON and the PNG go)
set -u
steps=${1:-300}
out=${OUT:-/tmp/tile-mlp-bench}
mkdir -p "$out" "$out/wgsl"
bin=${SURFGRAD:-./build/surfgrad}  # the CLI (a carried copy on the GPU machine)
$bin info | head -4 | tee "$out/tile_mlp.log"
for rows in 8 16 32; do
  $bin bench tile-mlp --side 64 --steps "$steps" --tile-rows $rows --json "$out/tile_mlp_rows$rows.json" 2>&1 |
    tee -a "$out/tile_mlp.log"
done
$bin bench tile-mlp --side 256 --steps 100 --tile-rows 32 --json "$out/tile_mlp_256.json" 2>&1 | tee -a "$out/tile_mlp.log"
python3 bench/tile_mlp_torch.py --side 64 --steps "$steps" --json "$out/tile_mlp_torch.json" 2>&1 | tee -a "$out/tile_mlp.log"
python3 bench/tile_mlp_torch.py --side 256 --steps 100 --json "$out/tile_mlp_torch_256.json" 2>&1 | tee -a "$out/tile_mlp.log"
SURFGRAD_DUMP_WGSL="$out/wgsl" $bin demo tile-mlp --side 64 --steps 1000 --out "$out/tile_mlp.png" 2>&1 | tee -a "$out/tile_mlp.log"
