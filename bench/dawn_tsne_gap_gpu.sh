#!/usr/bin/env bash
# Where Dawn's t-SNE time goes against wgpu-native's on the same GPU (issue 32: the browser runs
# Dawn, and its t-SNE at 10k is ~2× native; natively under Dawn the same map is ~2× wgpu-native's
# too, so the gap is largely the implementation's, not the browser's). MNIST 10k t-SNE:
#   1. wall and phase timings, two runs each, under wgpu-native, Dawn, and Dawn with each of
#      DAWN_TOGGLE_SETS (SURFGRAD_DAWN_TOGGLES: robustness, workgroup zero-init, validation);
#   2. the per-kernel GPU time (SURFGRAD_PROFILE: timestamp queries, one pass a dispatch) under
#      both implementations: equal GPU time means the gap is the CPU side (encoding, submits, waits).
# Uses bench/dawn_matmul_gpu.sh's pack (PACK, default build-dawn/dawn-gpu.tar.xz; carry it and .gl)
# and MNIST in MNIST_DIR (default .carry/data/mnist10k). Writes $OUT/rows.json: {backend, toggles,
# run, wall_s, optimisation_s, ms_per_iteration} and the logs/profiles beside it.
#   OUT=$OUT/gap bash bench/dawn_tsne_gap_gpu.sh
set -u
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/dawn-tsne-gap}
work=${WORK:-/tmp/dawn-gpu}
pack=${PACK:-build-dawn/dawn-gpu.tar.xz}
mnist=${MNIST_DIR:-.carry/data/mnist10k}
sets=${DAWN_TOGGLE_SETS:-disable_robustness disable_workgroup_init skip_validation disable_robustness,disable_workgroup_init,skip_validation}
mkdir -p "$out" "$work"
# shellcheck source=bench/gpu_pack_env.sh
. bench/gpu_pack_env.sh "$pack" "$work"
cli=$bin/surfgrad
args=("$mnist/t10k-images-idx3-ubyte.gz" --labels "$mnist/t10k-labels-idx1-ubyte.gz" --method tsne)

: >"$out/rows.txt"
one() {  # IMPL TOGGLES RUN [ENV...]
  local impl=$1 toggles=$2 run=$3; shift 3
  local name=$impl-${toggles//,/+}-$run log t0 t1
  log=$out/$name.txt
  t0=$(date +%s%N)
  env SURFGRAD_WEBGPU="$impl" SURFGRAD_DAWN_TOGGLES="$toggles" "$@" timeout 120 "$cli" map "${args[@]}" \
    -o "$out/map-$name" >"$log" 2>&1
  local rc=$?
  t1=$(date +%s%N)
  rm -f "$out/map-$name".{csv,png,npy}
  if [ $rc -ne 0 ]; then echo "$name: exit $rc" >&2; tail -3 "$log" >&2; return; fi
  local opt
  opt=$(awk '/^  optimisation /{print $2}' "$log")
  echo "$impl ${toggles:-none} $run $(( (t1 - t0) / 1000000 ))e-3 ${opt:-nan}" | tee -a "$out/rows.txt"
}
for impl in wgpu dawn; do for r in 1 2 3; do one $impl "" $r; done; done
for t in $sets; do for r in 1 2; do one dawn "$t" $r; done; done
for impl in wgpu dawn; do
  SURFGRAD_WEBGPU=$impl SURFGRAD_PROFILE="$out/profile-$impl.txt" timeout 120 "$cli" map "${args[@]}" \
    -o "$out/map-prof-$impl" >"$out/prof-run-$impl.txt" 2>&1 || echo "profile $impl: exit $?" >&2
  rm -f "$out/map-prof-$impl".{csv,png,npy}
  echo "== $impl: GPU time by kernel (top 15)"; head -25 "$out/profile-$impl.txt"
done
python3 - "$out/rows.txt" "$out/rows.json" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    impl, toggles, run, wall, opt = line.split()
    o = float(opt)
    rows.append({"backend": impl, "toggles": toggles, "run": int(run), "wall_s": float(wall),
                 "optimisation_s": o, "ms_per_iteration": o / 750 * 1e3, "map": "tsne mnist10k"})
json.dump(rows, open(sys.argv[2], "w"), indent=1)
PY
