#!/usr/bin/env bash
# The exact kNN's GPU kernels compiled cold (issue 35; docs/cold_start.md): small sets' kernel
# (knn_rows_gpu.wgsl, method exact-rows-gpu) and the streaming kernel (knn_fused.wgsl, exact-f32),
# each in a process of its own with an empty NVIDIA driver cache (__GL_SHADER_DISK_CACHE_PATH),
# `surfgrad bench knn --points 10000 --dims 784 --k 90` (MNIST 10k's size; clustered points) with
# SURFGRAD_LOG_PIPELINES=1. Prints, per method and round: the kNN kernels' module + pipeline ms
# (the first built is the method's; the recall check then builds the streaming kernel too), the
# timed run (median of REPS, compile excluded: `bench knn` warms up on a slice) and recall@90
# against the streaming kernel's lists on 2,000 rows.
#
# GPU machine, repository root:  bench/knn_cold_compile.sh [PACK]   (a pack: bench/cold_start_gpu.sh --pack BUILD)
#   or with a built binary:      SURFGRAD=build/surfgrad bench/knn_cold_compile.sh
# Environment: OUT (default /tmp/knn-cold), ROUNDS (default 3), REPS (default 5), POINTS, DIMS, K,
#   SHAPES (default "r4t256c512 r8t256c384 r8t128c256": small sets' kernel also with these shapes,
#   SURFGRAD_KNN_GPU_SHAPE; "" for none; the default's is r8t256c512 on NVIDIA).
# Time: ~2 s a process on an H100 (15 processes by default: about a minute).
set -u
cd "$(dirname "$0")/.."
if [ -n "${SURFGRAD:-}" ]; then
  bin=$(cd "$(dirname "$SURFGRAD")" && pwd)
else
  mkdir -p "${WORK:-/tmp/knn-cold-pack}"
  # shellcheck source=bench/gpu_pack_env.sh
  . bench/gpu_pack_env.sh "${1:-build-lead/dawn-gpu.tar.xz}" "${WORK:-/tmp/knn-cold-pack}"
fi
out=${OUT:-/tmp/knn-cold}
mkdir -p "$out"
args=(--points "${POINTS:-10000}" --dims "${DIMS:-784}" --k "${K:-90}" --reps "${REPS:-5}" --recall-sample 2000)
echo "kNN compile cold (empty driver cache, one process each) and run: ${args[*]}"
shapes=${SHAPES-r4t256c512 r8t256c384 r8t128c256}
for round in $(seq 1 "${ROUNDS:-3}"); do
  for job in exact-rows-gpu $(for s in $shapes; do echo "exact-rows-gpu:$s"; done) exact-f32; do
    method=${job%%:*} shape=${job#*:}
    [ "$shape" = "$job" ] && shape=
    log=$out/${job//:/-}.$round.log
    cache=$(mktemp -d)
    SURFGRAD_KNN_GPU_SHAPE=$shape __GL_SHADER_DISK_CACHE_PATH=$cache SURFGRAD_LOG_PIPELINES=1 \
      "$bin/surfgrad" bench knn "${args[@]}" --methods "$method" >"$log" 2>&1
    rm -rf "$cache"
    compile=$(grep 'surfgrad pipeline:' "$log" | grep -i knn |
      sed -E 's/.*module ([0-9.]+) ms pipeline ([0-9.]+) ms +([^|]*\|[^|]*).*/\3: module \1 + pipeline \2 ms/' |
      paste -sd';' -)
    run=$(grep -E "^  $method " "$log" | sed -E 's/^ +[^ ]+ +//')
    echo "round $round  $job  run: ${run:-FAILED (see $log)}  compile: ${compile:-none logged}"
  done
done
