#!/usr/bin/env bash
# The panel kernel's knob sweep on the GPU machine in ONE call (issue 34: f16 matmul on tensor
# cores toward 0.5x cuBLAS): every configuration of subgroup_matrix_sweep() (matmul_subgroup_matrix.cpp:
# tiles, subgroups, bk, buffers, f16 accumulators, 16x8x16 fragments, vec8 staging, fragments
# loaded as used, padding, swizzle) at 8192^3 and 4096^3 under Dawn, each checked against float64
# on 256 sampled entries before it is timed (a wrong configuration is printed REJECTED and never
# ranked), cuBLAS fp16 through PyTorch (bench/torch_matmul.py) measured in the same call, then the
# fastest 4 again without Dawn's robustness. Writes $OUT/rows.json (size, variant, tflops,
# cublas_tflops, backend, ms, max_error, valid), $OUT/summary.txt (ranked, ratio to cuBLAS) and
# the raw logs.
#
# Here:  /tmp/hbuild.sh m surfgrad surfgrad_tests && bash bench/dawn_matmul_gpu.sh --pack build-m
#        (carry build-m/dawn-gpu.tar.xz and .gl)
# GPU:   OUT=$OUT bash bench/dawn_matmul_sweep_gpu.sh build-m/dawn-gpu.tar.xz
# Dry run on an adapter without subgroup matrices (lavapipe): prints 'skipped: no subgroup
#   matrices' and exits 0 after the info; DRY=1 runs the bench anyway at SIZES (every row is
#   skipped with its reason), checking the script's plumbing.
# Time on the H200: ~15 s unpack, ~20 s PyTorch, the sweep at most SWEEP_LIMIT (300) s (~30
#   configurations x 2 sizes, ~2-4 s each), 60 s without robustness: under 7 minutes.
# Environment: OUT (default /tmp/dawn-sweep), WORK (default /tmp/dawn-gpu), SIZES (default
#   8192x8192x8192,4096x4096x4096: the first size ranks, 8192^3 being the reliable timer there),
#   SWEEP_TOP (configurations kept past the first size; default all), SWEEP_LIMIT, REPS (20).
set -u
cd "$(dirname "$0")/.."
log() { echo "[dawn_matmul_sweep] $*" >&2; }

pack=${1:-build-m/dawn-gpu.tar.xz}
out=${OUT:-/tmp/dawn-sweep}
work=${WORK:-/tmp/dawn-gpu}
sizes=${SIZES:-8192x8192x8192,4096x4096x4096}
mkdir -p "$out" "$work"
if [ -f "$pack" ]; then
  . bench/gpu_pack_env.sh "$pack" "$work"  # unpacks the pack, sets the loader paths and $bin
else
  bin=${BIN:-build-m}  # a local build (dry runs here)
  log "no pack at $pack: binaries from $bin"
fi
export SURFGRAD_WEBGPU=dawn

"$bin/surfgrad" info >"$out/info.txt" 2>&1
grep -E "^(adapter  |implementation|shader-f16|subgroups|subgroup-matrix)" "$out/info.txt"
if ! grep -qE "^subgroup-matrix +yes" "$out/info.txt" && [ "${DRY:-0}" != 1 ]; then
  echo "skipped: no subgroup matrices on this adapter ($(grep -m1 '^adapter  ' "$out/info.txt" | sed 's/^adapter *//'))"
  exit 0
fi

bench() {  # NAME LIMIT ARGS...: one bench matmul call, its JSON rewritten after every row
  local name=$1 limit=$2
  shift 2
  log "bench matmul $name (<= $limit s)"
  timeout "$limit" "$bin/surfgrad" bench matmul --sizes "$sizes" --json "$out/matmul-$name.json" "$@" 2>&1 |
    grep -v '^Warning: maxDynamic' | tee "$out/matmul-$name.txt"
}
# The sweep plus today's default (f16-tuned) and the CUDA-core kernel, cuBLAS first in the same call.
bench sweep "${SWEEP_LIMIT:-300}" --sweep sgmat --sweep-top "${SWEEP_TOP:-99}" --reps "${REPS:-20}" \
  --variants f16-tuned,f16-tuned-tiled --torch-script bench/torch_matmul.py
top=$(python3 - "$out/matmul-sweep.json" <<'PY'
import json, sys
try:
    rows = json.load(open(sys.argv[1]))["rows"]
except Exception:
    rows = []
first = rows[0]["size"] if rows else ""
best = sorted((r for r in rows if r["size"] == first and r["valid"] and r["variant"].startswith("f16-sgmat:")),
              key=lambda r: -r["tflops"])[:4]
print(",".join(r["variant"] for r in best))
PY
)
# What robustness (Tint's clamps, Dawn's workgroup zeroing) costs the fastest 4.
[ -n "$top" ] && SURFGRAD_DAWN_TOGGLES=disable_robustness,disable_workgroup_init \
  bench norobust 60 --variants "$top" --reps "${REPS:-20}" --torch-script /nonexistent

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
rows, cublas = [], {}
for name, backend in (("matmul-sweep.json", "dawn"), ("matmul-norobust.json", "dawn+norobust")):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        continue
    run = json.load(open(path))
    for r in run["rows"]:
        if r["cublas_tflops"]:
            cublas[r["size"]] = r["cublas_tflops"]
        rows.append({"size": r["size"], "variant": r["variant"], "tflops": r["tflops"],
                     "cublas_tflops": r["cublas_tflops"], "backend": backend, "ms": r["ms"],
                     "max_error": r["max_error"], "valid": r["valid"], "adapter": run["adapter"],
                     "implementation": run["implementation"], "date": run["date"]})
for r in rows:
    r["cublas_tflops"] = r["cublas_tflops"] or cublas.get(r["size"], 0)
json.dump(rows, open(os.path.join(out, "rows.json"), "w"), indent=1)
lines = []
for size in dict.fromkeys(r["size"] for r in rows):
    cu = cublas.get(size, 0)
    lines.append(f"{size}: cuBLAS fp16 {cu:.1f} TFLOP/s (0.5x = {cu / 2:.1f})")
    for r in sorted((r for r in rows if r["size"] == size), key=lambda r: (not r["valid"], -r["tflops"])):
        ratio = f'{r["tflops"] / cu:5.3f}x' if cu and r["valid"] else "  -   "
        state = "" if r["valid"] else f'  WRONG (error {r["max_error"]:.1e})'
        lines.append(f'  {r["backend"]:13} {r["tflops"]:7.1f} {ratio}  err {r["max_error"]:.1e}  {r["variant"]}{state}')
# Kernels Dawn refused (FAILED) or the adapter cannot run (skipped): in the log only, not rows.
for name in ("matmul-sweep.txt", "matmul-norobust.txt"):
    path = os.path.join(out, name)
    if os.path.exists(path):
        lines += [f"  {name}: {l.strip()}" for l in open(path) if " FAILED: " in l or " skipped: " in l]
text = "\n".join(lines) + "\n"
open(os.path.join(out, "summary.txt"), "w").write(text)
print(text, end="")
PY
