#!/usr/bin/env bash
# Cold vs warm start on the GPU machine (issue 35): MNIST 10k t-SNE in fresh processes, under
# wgpu-native and under Dawn. Per implementation: one run with every cache empty (cold: NVIDIA's
# driver cache, Mesa's, surfgrad's pipeline cache for Dawn), then two with the caches those runs
# filled (warm), then one profiled cold and one profiled warm run for the start-up lines
# (instance/adapter/device ms, pipelines created, shader-module vs pipeline ms, cache hits).
# Target: cold within 1.2x of warm. wgpu-native also gets two runs with empty driver caches but
# surfgrad's kernel record from the earlier runs (cold-record, cold-record-profiled), and the
# profiled runs' rows say how many pipelines were still built at first use (built_at_use) and which
# (at_use_kernels; the log has each pipeline's creation, thread and time: SURFGRAD_LOG_PIPELINES),
# and every row the map's phases (phases: load, input checks, PCA, kNN, affinities, optimisation).
# The cold run is the first ever on a machine: no kernel record, so what the map path prewarms by
# itself (its layout's kernels and its tensor ops': prewarm_map_tensor_ops) is all it gets.
# Prewarming (the layout's kernels built on worker threads while
# PCA and the kNN run; kernels::prewarm) is on by default; each implementation also gets a cold
# and a warm run with SURFGRAD_PREWARM=0, with caches of their own, to show what it buys.
#
# Here (development machine):  bench/cold_start_gpu.sh --pack [BUILD]   (default BUILD: build-lead)
#   packs BUILD with bench/dawn_matmul_gpu.sh --pack (surfgrad, surfgrad_tests, their libraries,
#   Dawn, the Vulkan loader's .deb) into BUILD/dawn-gpu.tar.xz: carry that one path.
# GPU machine, repository root:  bench/cold_start_gpu.sh [PACK]   (default: build-lead/dawn-gpu.tar.xz)
#   Carry .gl too where the machine lacks libglvnd (as for dawn_matmul_gpu.sh).
# Environment: OUT (default /tmp/cold-start), WORK (unpacked pack; default /tmp/cold-start-pack),
#   MNIST (folder with t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz; default
#   shared/data/mnist10k or ../shared/data/mnist10k; none or absent: the built-in set of POINTS),
#   POINTS (default 10000), IMPLS (default "wgpu dawn"), ARGS (more `surfgrad map` flags).
# Time: about 7 map runs per implementation, each a few seconds on an H100 (well under a minute);
#   a dry run on lavapipe: MNIST=none POINTS=500 takes ~2 minutes.
# Output: $OUT/cold_start.log (every run's phase timings), $OUT/rows.json (one row per run:
#   impl, run, wall_s, total_s, pipelines, pipeline_ms, module_ms, cache hits), and a summary.
set -u
cd "$(dirname "$0")/.."
log() { echo "[cold_start_gpu] $*" >&2; }

if [ "${1:-}" = --pack ]; then
  exec bench/dawn_matmul_gpu.sh --pack "${2:-build-lead}"
fi

pack=${1:-build-lead/dawn-gpu.tar.xz}
out=${OUT:-/tmp/cold-start}
work=${WORK:-/tmp/cold-start-pack}
points=${POINTS:-10000}
impls=${IMPLS:-wgpu dawn}
mkdir -p "$out" "$work"
# shellcheck source=bench/gpu_pack_env.sh
. bench/gpu_pack_env.sh "$pack" "$work"

mnist=${MNIST:-}
[ "$mnist" = none ] && mnist=/nonexistent  # the built-in set (dry runs)
for d in shared/data/mnist10k ../shared/data/mnist10k; do [ -z "$mnist" ] && [ -f "$d/t10k-images-idx3-ubyte.gz" ] && mnist=$d; done
if [ -f "$mnist/t10k-images-idx3-ubyte.gz" ]; then
  input=("$mnist/t10k-images-idx3-ubyte.gz" --labels "$mnist/t10k-labels-idx1-ubyte.gz")
  what="MNIST 10k ($mnist)"
else
  input=(--points "$points")
  what="the built-in set, $points points (no MNIST folder: set MNIST)"
fi
log "t-SNE of $what"
: >"$out/cold_start.log"
: >"$out/rows.json"

# One fresh process; caches under $1. Prints the row and appends the log.
run() {  # IMPL RUN CACHES [profile] [prewarm: 1 or 0]
  local impl=$1 name=$2 caches=$3 profile=${4:-} prewarm=${5:-1}
  mkdir -p "$caches/nvidia" "$caches/mesa" "$caches/surfgrad"
  local t0 t1 text
  t0=$(date +%s.%N)
  # env: the profile variable is given only to the profiled runs (an expanded word is not an
  # assignment to the shell).
  text=$(env SURFGRAD_WEBGPU=$impl __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH="$caches/nvidia" \
    __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 MESA_SHADER_CACHE_DIR="$caches/mesa" \
    SURFGRAD_PIPELINE_CACHE="$caches/surfgrad" SURFGRAD_TUNE_CACHE="$caches/tuning.json" \
    SURFGRAD_PREWARM="$prewarm" ${profile:+SURFGRAD_PROFILE=1 SURFGRAD_LOG_PIPELINES=1} \
    "$bin/surfgrad" map "${input[@]}" ${ARGS:-} -o "$out/map-$impl-$name" 2>&1)
  local rc=$?
  t1=$(date +%s.%N)
  printf '== %s %s (exit %s)\n%s\n' "$impl" "$name" "$rc" "$text" | grep -v '^  optimise\|^Warning: maxDynamic' >>"$out/cold_start.log"
  local wall total pipes pms mms hits
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  total=$(echo "$text" | awk '/^  total /{print $2}')
  pipes=$(echo "$text" | sed -n 's/^pipelines: \([0-9]*\) created.*/\1/p')
  mms=$(echo "$text" | sed -n 's/^pipelines: .*shader modules \([0-9.]*\) ms.*/\1/p')
  pms=$(echo "$text" | sed -n 's/^pipelines: .*, pipelines \([0-9.]*\) ms).*/\1/p')
  hits=$(echo "$text" | sed -n 's/^pipeline cache: .*: \([0-9]*\) hits.*/\1/p')
  local pre pre_wait scope_wait at_use at_use_ms at_use_names phases
  at_use=$(echo "$text" | sed -n 's/^at first use: \([0-9]*\) built.*/\1/p')
  # The kernels built on the critical path (profiled runs), and every run's phases ("load 0.044,
  # input checks 0.148, ..."): where a cold run's extra time goes. Quotes and backslashes dropped.
  at_use_names=$(echo "$text" | sed -n 's/^at first use: [0-9]* built by the asking thread in [0-9.]* ms: //p' | tr -d '"\\\000-\037')
  phases=$(echo "$text" | sed -n '/^phase timings:/,/^  total/p' | sed -n 's/^  \(.*[^ ]\)  *\([0-9.]*\) s$/\1 \2/p' | paste -sd, - | sed 's/,/, /g' | tr -d '"\\')
  at_use_ms=$(echo "$text" | sed -n 's/^at first use: [0-9]* built by the asking thread in \([0-9.]*\) ms.*/\1/p')
  local none=null  # a profiled run without the at-first-use line built nothing there
  [ -n "$profile" ] && none=0
  pre=$(echo "$text" | sed -n 's/^prewarm: \([0-9]*\) built.*/\1/p')
  pre_wait=$(echo "$text" | sed -n 's/^prewarm: .* first uses waited \([0-9.]*\) ms.*/\1/p')
  scope_wait=$(echo "$text" | sed -n 's/^prewarm: .* error scopes .* waited \([0-9.]*\) ms.*/\1/p')
  printf '{"impl": "%s", "run": "%s", "prewarm": %s, "exit": %s, "wall_s": %s, "total_s": %s, "pipelines": %s, "pipeline_ms": %s, "module_ms": %s, "cache_hits": %s, "prewarmed": %s, "prewarm_wait_ms": %s, "scope_wait_ms": %s, "built_at_use": %s, "at_use_ms": %s, "at_use_kernels": "%s", "phases": "%s"}\n' \
    "$impl" "$name" "$prewarm" "$rc" "$wall" "${total:-null}" "${pipes:-null}" "${pms:-null}" "${mms:-null}" "${hits:-null}" "${pre:-null}" "${pre_wait:-null}" "${scope_wait:-null}" "${at_use:-$none}" "${at_use_ms:-$none}" "$at_use_names" "$phases" >>"$out/rows.json"
  printf '%-5s %-14s exit %s  wall %6.2f s  map total %6s s%s\n' "$impl" "$name" "$rc" "$wall" "${total:-?}" \
    "${pipes:+  pipelines $pipes: modules ${mms} ms, pipelines ${pms} ms${hits:+, cache hits $hits}}"
}

for impl in $impls; do
  SURFGRAD_WEBGPU=$impl "$bin/surfgrad" info 2>&1 | grep -E "^adapter  |^implementation " | sed "s/^/$impl: /"
  caches=$out/caches-$impl
  rm -rf "$caches"
  run "$impl" cold "$caches"
  run "$impl" warm-1 "$caches"
  run "$impl" warm-2 "$caches"
  du -sh "$caches"/* 2>/dev/null | sed "s|$out/||;s/^/  cache /"
  rm -rf "$caches-noprewarm"
  run "$impl" cold-noprewarm "$caches-noprewarm" "" 0
  run "$impl" warm-noprewarm "$caches-noprewarm" "" 0
  rm -rf "$caches-profiled"
  run "$impl" cold-profiled "$caches-profiled" profile
  run "$impl" warm-profiled "$caches-profiled" profile
  if [ "$impl" = wgpu ]; then
    # The driver's cache empty but surfgrad's kernel record kept (Context::prewarm_recorded: the
    # kernels the last maps used, the tensor ops' included, prewarmed from the start): what a
    # new driver, or a driver cache lost, costs. Dawn replays nothing (its device is not
    # thread-safe here) and keeps its blobs in the same folder, so wgpu-native only.
    for r in cold-record cold-record-profiled; do
      rm -rf "$caches-$r"
      mkdir -p "$caches-$r"
      cp -r "$caches-profiled/surfgrad" "$caches-$r/surfgrad"
      run "$impl" "$r" "$caches-$r" "${r#cold-record}"
    done
  fi
done
log "rows: $out/rows.json; log with the profiles' start-up lines: $out/cold_start.log"
# Cold over warm (the target: 1.2): each implementation's cold wall time over the mean of its
# two warm runs; and the record's cold run over the same.
awk -F'"' '{ for (i = 2; i < NF; i += 2) if ($i == "impl") impl = $(i + 2); else if ($i == "run") run = $(i + 2)
             match($0, /"wall_s": [0-9.]+/); w = substr($0, RSTART + 10, RLENGTH - 10); wall[impl "/" run] = w; seen[impl] = 1 }
  END { for (m in seen) { warm = (wall[m "/warm-1"] + wall[m "/warm-2"]) / 2; if (warm <= 0) continue
          printf "%s: cold %.2f s, warm %.2f s: %.2fx", m, wall[m "/cold"], warm, wall[m "/cold"] / warm
          if ((m "/cold-record") in wall) printf "; driver cache empty, kernel record kept: %.2f s, %.2fx", wall[m "/cold-record"], wall[m "/cold-record"] / warm
          printf "\n" } }' "$out/rows.json" | tee "$out/summary.txt"
grep -E "^== |^start-up|^pipelines|^prewarm|^at first use|^pipeline cache|^ +[0-9.]+ +[0-9.]+  " "$out/cold_start.log" | cut -c1-400 | head -100
