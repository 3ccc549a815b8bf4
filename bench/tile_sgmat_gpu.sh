#!/usr/bin/env bash
# tile_matmul on tensor cores (issue 34; src/tiles/matmul_sgmat.cpp) on the GPU machine, in one
# call of at most ~6 minutes: under Dawn (SURFGRAD_WEBGPU=dawn, where the adapter offers
# chromium-experimental-subgroup-matrix) the tile tests with the feature used (SURFGRAD_TILE_SGMAT
# auto: every product of 16-multiple shapes on subgroup matrices, split f16, against the float64
# reference and by gradcheck) and with it off (the scalar code), then `surfgrad bench tile-mlp`
# (16 pixels a workgroup, the size where the MLP's products are 16-multiples) with it on and off,
# and once under wgpu-native for reference; the fused kernels' WGSL as compiled, with it on.
#
# Here (development machine):  bash bench/dawn_matmul_gpu.sh --pack build-dawn   (the pack)
# GPU machine, repository root:  OUT=$OUT bash bench/tile_sgmat_gpu.sh [PACK]
#   PACK default build-dawn/dawn-gpu.tar.xz; carry it and .gl.
# Dry run here (lavapipe, no subgroup matrices: "auto" is the scalar code; STEPS small):
#   BIN=DIR (surfgrad and surfgrad_tests) SIDE=16 STEPS=4 OUT=/tmp/tsg bash bench/tile_sgmat_gpu.sh
# SKIP_TESTS=1: the benchmarks only.
# Time: <= 2 x 90 s of tests, 2 x <= 60 s of bisecting ones, 3 x <= 60 s of benchmarks (each: fused f16 and f32 weights, the
# autograd form, the unfused ops; STEPS default 300, 3 rounds).
set -u
cd "$(dirname "$0")/.."
log() { echo "[tile_sgmat_gpu] $*" >&2; }
out=${OUT:-/tmp/tile-sgmat}
steps=${STEPS:-300}
side=${SIDE:-64}
mkdir -p "$out/wgsl-sgmat"
if [ -n "${BIN:-}" ]; then
  bin=$BIN  # a build directory (dry run)
else
  pack=${1:-build-dawn/dawn-gpu.tar.xz}
  work=${WORK:-/tmp/dawn-gpu}
  mkdir -p "$work"
  . bench/gpu_pack_env.sh "$pack" "$work"  # sets $bin and the loader paths
fi
impl=${IMPL:-dawn}  # the implementation with subgroup matrices (the dry run may say wgpu)

SURFGRAD_WEBGPU=$impl "$bin/surfgrad" info >"$out/info-$impl.txt" 2>&1
grep -E "^(adapter|implementation|shader-f16|subgroups|subgroup-matrix)" "$out/info-$impl.txt"

tests() {  # MODE
  log "tile tests under $impl, SURFGRAD_TILE_SGMAT=$1"
  SURFGRAD_WEBGPU=$impl SURFGRAD_TILE_SGMAT=$1 timeout 90 "$bin/surfgrad_tests" --gtest_brief=1 \
    --gtest_filter='Tile*.*' >"$out/tests-$1.txt" 2>&1
  echo "tile tests, SURFGRAD_TILE_SGMAT=$1: exit $? (log $out/tests-$1.txt)"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests? ran|FAILED TEST" "$out/tests-$1.txt" | tail -15
  grep -v '^Warning: maxDynamic' "$out/tests-$1.txt" | grep -A8 'Failure' | head -40
}
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  tests auto
  tests off
  # Bisecting wrong products (<= 2 x 60 s): integer operands (exact unless a fragment's layout,
  # offset or stride is wrong) and random ones, with the hi parts' product alone (f16's accuracy
  # expected: ForwardMatchesFloat64 fails by ~1e-3, SmallIntegersExact passes) and unscaled.
  for d in hi noscale; do
    SURFGRAD_WEBGPU=$impl SURFGRAD_TILE_SGMAT_DIAG=$d timeout 60 "$bin/surfgrad_tests" --gtest_brief=1 \
      --gtest_filter='TileSgmat.SmallIntegersExact:TileSgmat.ForwardMatchesFloat64' >"$out/diag-$d.txt" 2>&1
    echo "SURFGRAD_TILE_SGMAT_DIAG=$d: exit $? (log $out/diag-$d.txt)"
    grep -v '^Warning: maxDynamic' "$out/diag-$d.txt" | grep -A7 'Failure' | head -24
  done
fi

bench() {  # IMPL MODE [extra env]
  log "bench tile-mlp under $1, SURFGRAD_TILE_SGMAT=$2"
  env SURFGRAD_WEBGPU=$1 SURFGRAD_TILE_SGMAT=$2 "${@:3}" timeout 60 "$bin/surfgrad" bench tile-mlp --side "$side" \
    --steps "$steps" --tile-rows 16 --rounds 3 --json "$out/tile_mlp-$1-$2.json" 2>&1 |
    grep -v '^Warning: maxDynamic' | tee "$out/tile_mlp-$1-$2.txt"
}
bench "$impl" auto SURFGRAD_DUMP_WGSL="$out/wgsl-sgmat"
bench "$impl" off
bench wgpu off
n=$(grep -l subgroupMatrixMultiplyAccumulate "$out"/wgsl-sgmat/* 2>/dev/null | wc -l)
echo "kernels compiled with subgroup matrices (SURFGRAD_TILE_SGMAT=auto, $out/wgsl-sgmat): $n"
