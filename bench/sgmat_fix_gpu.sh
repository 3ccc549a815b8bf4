#!/usr/bin/env bash
# The subgroup-matrix fixes on the GPU (issue 34), one call of <= 7 min (timeouts; ~3 expected):
#  1. tile_matmul on subgroup matrices with 16-byte aligned workgroup arrays: the tile tests with
#     SURFGRAD_TILE_SGMAT=auto (against float64, gradcheck, the fused MLP against the unfused one),
#     then `surfgrad bench tile-mlp` with it on and off under Dawn and off under wgpu-native
#     (bench/tile_sgmat_gpu.sh SKIP_TESTS=1 does the benches): the path becomes the default only
#     where it is faster;
#  2. exact kNN 1M x 50-D, k = 90 on subgroup matrices beside the f32 kernel (time, recall, rows
#     recomputed), and on subgroup matrices again without Dawn's robustness
#     (SURFGRAD_DAWN_TOGGLES=disable_robustness: what the predicated loads from the storage
#     buffers cost; a browser always has robustness on).
# Here: bash bench/dawn_matmul_gpu.sh --pack BUILD (a build with surfgrad and surfgrad_tests)
# GPU machine (carry BUILD/dawn-gpu.tar.xz and .gl):
#   OUT=$OUT bash bench/sgmat_fix_gpu.sh BUILD/dawn-gpu.tar.xz
# Dry run here: BIN=build-NAME POINTS=20000 STEPS=4 SIDE=16 OUT=/tmp/sgf bash bench/sgmat_fix_gpu.sh
set -u
cd "$(dirname "$0")/.."
log() { echo "[sgmat_fix_gpu] $*" >&2; }
out=${OUT:-/tmp/sgmat-fix}
points=${POINTS:-1000000}
mkdir -p "$out"
if [ -n "${BIN:-}" ]; then
  bin=$BIN
else
  pack=${1:-build-dawn/dawn-gpu.tar.xz}
  work=${WORK:-/tmp/sgp-gpu-$(cksum <"$pack" | cut -d' ' -f1)}
  mkdir -p "$work"
  . bench/gpu_pack_env.sh "$pack" "$work"
  export BIN=$bin WORK=$work
fi
sum=$out/summary.txt
: >"$sum"

log "probe: the tile-form variants (their result rows fixed since the first call)"
SURFGRAD_WEBGPU=dawn SURFGRAD_SGMAT_PROBE_ONLY=tile-mimic timeout 30 "$bin/surfgrad_tests" \
  --gtest_filter='SgmatSemantics.Probe' >"$out/probe-mimic.txt" 2>&1
echo "== probe, tile-mimic variants: exit $?" >>"$sum"
grep -E "^(PASS|FAIL|    )" "$out/probe-mimic.txt" >>"$sum"

log "tile tests, SURFGRAD_TILE_SGMAT=auto"
SURFGRAD_WEBGPU=dawn SURFGRAD_TILE_SGMAT=auto timeout 60 "$bin/surfgrad_tests" --gtest_brief=1 \
  --gtest_filter='TileSgmat*.*:SgmatSemantics.TileApiDecode' >"$out/tile-tests.txt" 2>&1
{
  echo "== tile tests on subgroup matrices: exit $? (log tile-tests.txt)"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests? ran|FAILED TEST" "$out/tile-tests.txt" | tail -10
  grep -v '^Warning: maxDynamic' "$out/tile-tests.txt" | grep -A6 'Failure' | head -30
} >>"$sum"
SKIP_TESTS=1 OUT="$out/tile" IMPL=dawn BIN=$bin bash bench/tile_sgmat_gpu.sh >"$out/tile-bench.txt" 2>&1
echo "== bench tile-mlp (ms a step; auto = subgroup matrices):" >>"$sum"
grep -hE "ms|step" "$out"/tile/tile_mlp-*.txt 2>/dev/null | head -30 >>"$sum"

knn() {  # NAME METHODS TIMEOUT [env...]
  log "bench knn $points x 50, k = 90: $2 ${*:4}"
  env SURFGRAD_WEBGPU=dawn "${@:4}" timeout "$3" "$bin/surfgrad" bench knn --points "$points" --dims 50 --k 90 \
    --methods "$2" --recall-sample 2000 --json "$out/knn-$1.json" 2>&1 | grep -v '^Warning: maxDynamic' >"$out/knn-$1.txt"
  echo "== knn $1 (${*:4}): exit $?" >>"$sum"
  cat "$out/knn-$1.txt" >>"$sum"
}
knn sgmat-f32 exact-sgmat,exact-sgmat-no-push,exact-f32 150
knn sgmat-norobust exact-sgmat,exact-sgmat-no-push 90 SURFGRAD_DAWN_TOGGLES=disable_robustness
cat "$sum"
