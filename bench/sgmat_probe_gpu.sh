#!/usr/bin/env bash
# What the subgroup-matrix builtins do on the GPU (issue 34: why tile_matmul on subgroup matrices
# gives wrong integer sums on the H200 while the panel matmul is right), in one call of <= 4 min (timeouts sum to 250 s; ~1 min expected):
#  1. SgmatSemantics.* (tests/sgmat_semantics_test.cpp) under Dawn on the device's builtins: ~26
#     tiny kernels with integer operands checked exactly, stepping from the known-good form
#     (storage loads, literal offsets) to the tile kernel's (flat f16 workgroup staging, runtime
#     offsets, k loop, workgroup result store handed out by lanes, a spare-slot subgroup), each
#     with decoding products that name the operand element a wrong entry holds; then the tile
#     kernel itself (tiles API) on the same decoding products;
#     (SgmatSemantics.TileApiDecode) with its workgroup arrays 16-byte aligned (the fix) and as they
#     were (SURFGRAD_TILE_SGMAT_ALIGN=0);
#  2. the existing tests on real builtins: TileSgmat*/TilesSgmat* (SURFGRAD_TILE_SGMAT=auto; and its
#     integer/float64 tests with SURFGRAD_TILE_SGMAT_ALIGN=0), KnnSgmatDiag.*, KnnSubgroupMatrix.*.
# Writes $OUT/summary.txt (the probe's table and each test run's verdict) and the logs.
#
# Here (development machine), once the tests build:
#   flock /tmp/build-dawn.lock nice cmake --build build-dawn -j2 --target surfgrad surfgrad_tests
#   flock /tmp/build-dawn.lock bash bench/dawn_matmul_gpu.sh --pack build-dawn
# GPU machine, repository root (carry build-dawn/dawn-gpu.tar.xz and .gl):
#   OUT=$OUT bash bench/sgmat_probe_gpu.sh build-dawn/dawn-gpu.tar.xz
# Dry run here (lavapipe: no subgroup matrices, so the probe and the device tests skip; with
# SURFGRAD_SGMAT_PROBE_EMULATE=1 the probe runs emulated, all pass, but takes minutes of CPU):
#   BIN=build-NAME OUT=/tmp/sgp bash bench/sgmat_probe_gpu.sh
set -u
cd "$(dirname "$0")/.."
log() { echo "[sgmat_probe_gpu] $*" >&2; }
out=${OUT:-/tmp/sgmat-probe}
mkdir -p "$out"
if [ -n "${BIN:-}" ]; then
  bin=$BIN
else
  pack=${1:-build-dawn/dawn-gpu.tar.xz}
  work=${WORK:-/tmp/sgp-gpu-$(cksum <"$pack" | cut -d' ' -f1)}
  mkdir -p "$work"
  . bench/gpu_pack_env.sh "$pack" "$work"
fi
export SURFGRAD_WEBGPU=${IMPL:-dawn}
sum=$out/summary.txt
: >"$sum"
"$bin/surfgrad" info >"$out/info.txt" 2>&1
grep -E "^(adapter|implementation|shader-f16|subgroups|subgroup-matrix)" "$out/info.txt" | tee -a "$sum"

gt() {  # NAME TIMEOUT FILTER [env...]: one test run, its verdict and failures into the summary
  local name=$1 t=$2 filter=$3
  shift 3
  log "$name"
  env "$@" timeout "$t" "$bin/surfgrad_tests" --gtest_filter="$filter" >"$out/$name.txt" 2>&1
  local rc=$?
  {
    echo "== $name ($filter${*:+; $*}): exit $rc (log $name.txt)"
    grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests? ran" "$out/$name.txt" | tail -12
    grep -v '^Warning: maxDynamic' "$out/$name.txt" | grep -B2 -A8 'Failure' | head -40
  } >>"$sum"
}

log "probe"
timeout 50 "$bin/surfgrad_tests" --gtest_filter='SgmatSemantics.Probe' >"$out/probe.txt" 2>&1
echo "== probe (SgmatSemantics.Probe): exit $? (log probe.txt)" >>"$sum"
grep -E "^(PASS|FAIL|subgroup-matrix semantics|    )|variants failed" "$out/probe.txt" >>"$sum"
# The tile kernel itself on the decoding products, 16-byte aligned (the fix) and as it was.
for align in 1 0; do
  SURFGRAD_TILE_SGMAT_ALIGN=$align timeout 30 "$bin/surfgrad_tests" --gtest_filter='SgmatSemantics.TileApiDecode' \
    >"$out/tile-decode-align$align.txt" 2>&1
  echo "== tile kernel decode, SURFGRAD_TILE_SGMAT_ALIGN=$align: exit $? (log tile-decode-align$align.txt)" >>"$sum"
  grep -E "^(PASS|FAIL|   )" "$out/tile-decode-align$align.txt" >>"$sum"
done
gt tile-auto 40 'TileSgmat*.*:TilesSgmat*.*' SURFGRAD_TILE_SGMAT=auto
gt tile-auto-align0 40 'TileSgmat.SmallIntegersExact:TileSgmat.ForwardMatchesFloat64' SURFGRAD_TILE_SGMAT=auto \
  SURFGRAD_TILE_SGMAT_ALIGN=0
gt knn-diag 40 'KnnSgmatDiag.*'
gt knn-tests 40 'KnnSubgroupMatrix.*'
cat "$sum"
