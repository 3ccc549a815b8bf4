#!/usr/bin/env bash
# Dawn beside wgpu-native on the GPU machine (issue 34): the C++ tests that matter for the Dawn
# backend run under SURFGRAD_WEBGPU=dawn (the ABI canary, the matmul ladder with its
# subgroup-matrix rungs against float64, the gpu layer), then `surfgrad bench matmul` f16 rungs at
# 4096³ and 8192³ under both implementations, each call measuring cuBLAS fp16 through PyTorch
# (bench/torch_matmul.py) in the same run. Writes $OUT/rows.json: one row per (backend, size,
# variant) with size, variant, tflops, cublas_tflops, backend (and ms, max_error, valid).
#
# Here (development machine):  bench/dawn_matmul_gpu.sh --pack [BUILD]   (default BUILD: build-dawn)
#   packs BUILD's surfgrad and surfgrad_tests with the libraries they open (wgpu-native, Dawn,
#   Arrow, libpng, the Vulkan loader's Debian package) into BUILD/dawn-gpu.tar.xz (~25 MB: carry
#   that one path and .gl, e.g. run(carry=["build-dawn/dawn-gpu.tar.xz", ".gl"])).
# GPU machine, repository root:  bench/dawn_matmul_gpu.sh [PACK]   (default: build-dawn/dawn-gpu.tar.xz)
# Time: at most 100 s of tests, 2 x 120 s of baselines and 4 x 50 s of rungs (one 10-minute call).
# Environment: OUT (default /tmp/dawn-matmul), WORK (unpacked pack; default /tmp/dawn-gpu),
#   SIZES (default 4096x4096x4096,8192x8192x8192), BASELINE (today's f16 rungs, both
#   implementations), SGMAT (the subgroup-matrix rungs, Dawn only).
# SWEEP=1: instead, the subgroup-matrix grid (`bench matmul --sweep sgmat`: ~30 configurations of
#   the panel kernel and 2 references at the first size, the fastest SWEEP_TOP (4) at the others) under Dawn after one baseline call
#   (f16-tuned[-tiled], f16-sgmat-direct; f32: tuned, f32-sgmat-split[-staged], int8-dot4, int8-sgmat; cuBLAS) and the Dawn tests; rows.json as usual, the sweep's
#   variants named f16-sgmat:tm=..,tn=..,... (pass one back to --variants to rerun it).
#   Time: <= 100 s tests, 120 s baseline, SWEEP_LIMIT (270) s sweep, 60 s of its top 4 without
#   robustness (SURFGRAD_DAWN_TOGGLES). SKIP_TESTS=1 skips the tests.
set -u
cd "$(dirname "$0")/.."
log() { echo "[dawn_matmul_gpu] $*" >&2; }

if [ "${1:-}" = --pack ]; then
  build=${2:-build-dawn}
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib" "$stage/vulkan"
  cp "$build/surfgrad" "$build/surfgrad_tests" "$stage/bin/"
  # Everything they link outside the C library, copied from where the loader finds it here.
  for lib in $(ldd "$build/surfgrad" "$build/surfgrad_tests" | awk '/=> \//{print $3}' | sort -u); do
    case $(basename "$lib") in libc.so*|libm.so*|libgcc_s*|libstdc++*|libdl.so*|libpthread*|librt.so*|ld-linux*) ;;
      *) cp -L "$lib" "$stage/lib/" ;; esac
  done
  dawn=${SURFGRAD_DAWN_LIBRARY:-$(grep -m1 '^SURFGRAD_DAWN_LIBRARY:' "$build/CMakeCache.txt" | cut -d= -f2)}
  cp -L "$dawn" "$stage/lib/libwebgpu_dawn.so"
  (cd "$stage/vulkan" && apt-get download libvulkan1 >/dev/null 2>&1) || log "no libvulkan1 package downloaded"
  tar -C "$stage" -cf - . | xz -T2 -6 >"$build/dawn-gpu.tar.xz"
  rm -rf "$stage"
  log "$build/dawn-gpu.tar.xz: $(du -h "$build/dawn-gpu.tar.xz" | cut -f1) (carry it)"
  exit 0
fi

pack=${1:-build-dawn/dawn-gpu.tar.xz}
out=${OUT:-/tmp/dawn-matmul}
work=${WORK:-/tmp/dawn-gpu}
sizes=${SIZES:-4096x4096x4096,8192x8192x8192}
baseline=${BASELINE:-f16-tiled-acc32,f16-tuned}
sgmat=${SGMAT:-f16-sgmat-direct,f16-sgmat-staged,f16-sgmat-2x2,f16-sgmat-4x2,f16-sgmat-pan,f16-sgmat-pan-bk32,int8-sgmat}
mkdir -p "$out" "$work"
. bench/gpu_pack_env.sh "$pack" "$work"  # unpacks the pack, sets the loader paths and $bin

for impl in wgpu dawn; do SURFGRAD_WEBGPU=$impl "$bin/surfgrad" info >"$out/info-$impl.txt" 2>&1; done
grep -E "^(adapter|implementation|shader-f16|subgroups|subgroup-matrix) " "$out"/info-*.txt

if [ "${SKIP_TESTS:-0}" != 1 ]; then
log "tests under Dawn"
SURFGRAD_WEBGPU=dawn timeout 100 "$bin/surfgrad_tests" --gtest_brief=1 \
  --gtest_filter='DawnAbi.*:WgslDialect.*:Matmul/Ladder.*:GpuContext.*:Matmul*.*:SubgroupMatrix*.*' >"$out/tests-dawn.txt" 2>&1
echo "tests under Dawn: exit $? (log $out/tests-dawn.txt)"
grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests? ran|FAILED TEST" "$out/tests-dawn.txt" | tail -25
grep -v '^Warning: maxDynamic' "$out/tests-dawn.txt" | grep -A8 'Failure' | head -60
fi

# Baselines with cuBLAS measured in the same call; then each subgroup-matrix rung in a call of its
# own (a rung whose kernel Dawn refuses must not take the others with it), cuBLAS taken from the
# baseline call of the same implementation.
bench() {  # IMPL NAME VARIANTS TIMEOUT [--torch-script none]
  local impl=$1 name=$2 vars=$3 limit=$4; shift 4
  log "bench matmul under $impl: $vars"
  SURFGRAD_WEBGPU=${impl%%+*} timeout "$limit" "$bin/surfgrad" bench matmul --sizes "$sizes" ${vars:+--variants "$vars"} \
    --json "$out/matmul-$impl-$name.json" "$@" 2>&1 | grep -v '^Warning: maxDynamic' | tee "$out/matmul-$impl-$name.txt"
}
if [ "${SWEEP:-0}" = 1 ]; then
  bench dawn base "${BASELINE:-f16-tuned,f16-tuned-tiled,f16-sgmat-direct,tuned,f32-sgmat-split,f32-sgmat-split-staged,int8-dot4,int8-sgmat}" 120 --torch-script bench/torch_matmul.py
  # The JSON is rewritten after every row: a sweep cut off by the limit keeps what it measured.
  bench dawn sweep "" "${SWEEP_LIMIT:-270}" --sweep sgmat --sweep-top "${SWEEP_TOP:-4}" --reps 5 \
    --torch-script /nonexistent
  # The sweep's fastest 4 again without Tint's bounds clamps and Dawn's workgroup-memory zeroing
  # (what robustness costs these kernels; rows under backend "dawn+norobust"); <= 60 s.
  top=$(python3 - "$out/matmul-dawn-sweep.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
first = rows[0]["size"] if rows else ""
best = sorted((r for r in rows if r["size"] == first and r["valid"] and r["variant"].startswith("f16-sgmat:")),
              key=lambda r: -r["tflops"])[:4]
print(",".join(r["variant"] for r in best))
PY
)
  [ -n "$top" ] && SURFGRAD_DAWN_TOGGLES=disable_robustness,disable_workgroup_init \
    bench dawn+norobust top "$top,f16-sgmat-direct" 60 --reps 5 --torch-script /nonexistent
else
  for impl in wgpu dawn; do bench $impl base "$baseline" 120 --torch-script bench/torch_matmul.py; done
  for v in ${sgmat//,/ }; do bench dawn "$v" "$v" 50 --torch-script /nonexistent; done
fi

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
rows, cublas = [], {}
for name in sorted(os.listdir(out)):
    if not (name.startswith("matmul-") and name.endswith(".json")):
        continue
    impl = name.split("-")[1]
    run = json.load(open(os.path.join(out, name)))
    for r in run["rows"]:
        if r["cublas_tflops"]:
            cublas[(impl, r["size"])] = r["cublas_tflops"]
        rows.append({"size": r["size"], "variant": r["variant"], "tflops": r["tflops"],
                     "cublas_tflops": r["cublas_tflops"], "backend": impl, "ms": r["ms"],
                     "max_error": r["max_error"], "valid": r["valid"],
                     "adapter": run["adapter"], "implementation": run["implementation"], "date": run["date"]})
for r in rows:  # the subgroup-matrix calls did not run PyTorch: the baseline call's cuBLAS
    r["cublas_tflops"] = r["cublas_tflops"] or cublas.get((r["backend"].split("+")[0], r["size"]), 0)
json.dump(rows, open(os.path.join(out, "rows.json"), "w"), indent=1)
for r in rows:
    ratio = r["tflops"] / r["cublas_tflops"] if r["cublas_tflops"] else 0
    print(f'{r["backend"]:5} {r["size"]:15} {r["variant"]:60} {r["tflops"]:8.1f} TFLOP/s  cuBLAS {r["cublas_tflops"]:6.1f}  {ratio:5.3f}x')
PY
