#!/usr/bin/env bash
# Lazy mode (issue 36) on the GPU machine, in one call: `surfgrad bench lazy` (eager and lazy
# mode in one process: a 20-op chain on 16M f32 against a device copy, gelu forward/backward,
# the MLP 784-1024-1024-10 Adam step) and PyTorch eager's step from bench/torch_reference.py in
# the same call; rows {bench, ms, pytorch_ms, dispatches, eager_dispatches, ...} in
# $OUT/lazy_rows.json (copy to bench/results/ with the date and card in the name).
# The chain's row also has its GPU time beside a device copy's (timestamp queries, 20 runs back
# to back after ~100 ms of warm-up): gpu_ms, copy_gpu_ms, gpu_gbs, fraction_of_copy (target 0.9).
# Usage: bench/lazy_gpu.sh [ELEMENTS]   (OUT: where logs and JSON go; SURFGRAD: the CLI; STEPS and
# REPS: MLP steps per timed run and timed runs, 20 and 5; a dry run on lavapipe:
# `OUT=/tmp/lz STEPS=1 REPS=1 SURFGRAD=build/surfgrad bash bench/lazy_gpu.sh 4096`, ~1 min)
# Each row with "dispatches" also has "eager_dispatches" (the same work in eager mode, one process).
# TESTS=path/to/surfgrad_tests adds the MLP step's per-kernel dispatch counts and the lazy matmul tests.
# Then the MLP step alone in each mode under SURFGRAD_PROFILE (`bench lazy --only train --mode M`,
# 14 steps each): $OUT/train_eager_profile.txt and train_lazy_profile.txt (PROFILE=0: not run).
# On the GPU machine from a pack (bash bench/dawn_matmul_gpu.sh --pack build-NAME, carried with .gl):
#   mkdir -p /tmp/pk && . bench/gpu_pack_env.sh build-NAME/dawn-gpu.tar.xz /tmp/pk &&
#   OUT=$OUT/lazy SURFGRAD=$bin/surfgrad TESTS=$bin/surfgrad_tests bash bench/lazy_gpu.sh
# (2026-11-28 03:06: build-l2/dawn-gpu.tar.xz, `bench/cold_start_gpu.sh --pack build-l2` at 7c3a579.)
set -u
elements=${1:-16777216}
steps=${STEPS:-20}
reps=${REPS:-5}
out=${OUT:-/tmp/lazy-bench}
mkdir -p "$out"
bin=${SURFGRAD:-./build/surfgrad}
$bin info | head -4 | tee "$out/lazy.log"
$bin bench lazy --elements "$elements" --steps "$steps" --reps "$reps" --json "$out/surfgrad_lazy.json" 2>&1 | tee -a "$out/lazy.log"
# TESTS (the pack's surfgrad_tests): the MLP step's dispatches eager and lazy on this adapter, with
# every kernel's count (SURFGRAD_PROFILE: $out/mlp_step_profile.txt, 3 steps each way plus set-up),
# and the matmul-epilogue tests on this adapter's tiled kernels (bits against eager).
if [ -n "${TESTS:-}" ]; then
  SURFGRAD_PROFILE="$out/mlp_step_profile.txt" $TESTS --gtest_filter='LazyMlpStep.*:LazyMatmul.*' >"$out/lazy_tests.log" 2>&1
  grep -E "MLP step dispatches|PASSED|FAILED|Failure|differ from eager" "$out/lazy_tests.log" | tee -a "$out/lazy.log"
fi
# One mode's MLP steps alone (PROFILE=0 skips): SURFGRAD_PROFILE's per-kernel table of that mode,
# in $out/train_{eager,lazy}_profile.txt; `steps run` in the log divides its counts into a step's.
if [ "${PROFILE:-1}" != 0 ]; then
  for mode in eager lazy; do
    SURFGRAD_PROFILE="$out/train_${mode}_profile.txt" $bin bench lazy --only train --mode "$mode" --steps 2 --reps 2 \
      --json "$out/train_${mode}.json" 2>&1 | grep -E "train" | tee -a "$out/lazy.log"
  done
fi
python3 bench/torch_reference.py --elements "$elements" --json "$out/torch.json" 2>&1 | tee -a "$out/lazy.log"
python3 - "$out" <<'PY' | tee -a "$out/lazy.log"
import json, sys
out = sys.argv[1]
rows = json.load(open(f"{out}/surfgrad_lazy.json"))
try:
    torch = json.loads(open(f"{out}/torch.json").read())
except (OSError, ValueError):
    torch = {}
for r in rows:
    if r["bench"] == "train":
        r["pytorch_ms"] = torch.get("train_step_ms")
    r["pytorch"] = torch.get("torch")
with open(f"{out}/lazy_rows.json", "w") as f:
    json.dump(rows, f, indent=2)
for r in rows:
    keys = ("bench", "ms", "pytorch_ms", "dispatches", "eager_ms", "eager_dispatches", "gpu_ms", "copy_gpu_ms",
            "gpu_gbs", "copy_gpu_gbs", "fraction_of_copy")
    print(json.dumps({k: r.get(k) for k in keys if k in r}))
if torch:
    print(json.dumps({"pytorch_copy_gbs": torch.get("copy_gbs"), "pytorch_add_gbs": torch.get("add_gbs")}))
PY
