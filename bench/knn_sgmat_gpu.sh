#!/usr/bin/env bash
# Exact kNN on subgroup matrices (tensor cores, f32 re-check: recall 1.0) beside today's f32
# streaming kernel and PyTorch, under Dawn on the GPU machine (issue 34).
#
# Here (development machine):  bench/dawn_matmul_gpu.sh --pack build-NAME   (a build configured
#   with SURFGRAD_DAWN_LIBRARY; makes build-NAME/dawn-gpu.tar.xz: carry it and .gl)
# GPU machine, repository root:  bench/knn_sgmat_gpu.sh PACK [STAGE]
#   e.g. run(command="OUT=$OUT bash bench/knn_sgmat_gpu.sh build-dawn/dawn-gpu.tar.xz diag",
#            carry=["build-dawn/dawn-gpu.tar.xz", ".gl"])
#   STAGE diag (<= 3 min): the GPU diagnostic (tests/knn_sgmat_diag_test.cpp: prep's f16 copies and
#     the tensor-core products, alone, in a workgroup tile and inside the candidate kernel, against
#     the host, with the mismatches' pattern), then the kNN tests under Dawn; no benchmark.
#   STAGE 1m (default, <= 540 s; ~3 min expected on the H200): the diagnostic and the kNN tests
#     under Dawn, then 1M × 50-D, k = 90: exact-sgmat (per-step seconds), exact-sgmat-no-push,
#     exact-f32 and its no-push shape in one surfgrad call, exact-sgmat at 128 and 256 candidates,
#     PyTorch (bench/torch_knn.py).
#   STAGE variants (<= 300 s): the candidate kernel's variants (KnnSgmatVariant: staged, split
#     products), each without pushes and whole, beside the f32 kernel and PyTorch (see the stage).
#   STAGE cols (<= 300 s): the diagnostic, then 1M x 50-D k = 90 exact-sgmat with the default right
#     operands and with SURFGRAD_KNN_SGMAT_RIGHT=cols (col_major from the row-major copy).
#   STAGE maps (<= 400 s): exact-sgmat against exact-f32 at k = 15 … 90 (1M) and at 100k and 300k
#     points (k = 15), then the 1M built-in UMAP and t-SNE under wgpu-native, Dawn with the f32 kNN,
#     and Dawn's default (the kNN on subgroup matrices where knn_subgroup_matrix_chosen says).
#   STAGE 10m (<= 560 s): 10M × 50-D, k = 15, exact-sgmat (about 100× the 1M work; today's f32
#     kernel and PyTorch would take several times the 10-minute limit there, so they are not run).
# Writes $OUT/rows-STAGE.json: size, variant, seconds, tflops (2·N²·D / s), cublas_tflops (the same
# for PyTorch where run), recall, rows_recomputed, backend. OUT default /tmp/knn-sgmat. POINTS_1M and
# POINTS_10M shrink the runs (a dry run on lavapipe, where exact-sgmat is skipped).
set -u
cd "$(dirname "$0")/.."
log() { echo "[knn_sgmat_gpu] $*" >&2; }
pack=${1:-build-dawn/dawn-gpu.tar.xz}
stage=${2:-1m}
out=${OUT:-/tmp/knn-sgmat}
# A folder per pack: gpu_pack_env.sh unpacks only into an empty one, and a warm machine may still
# hold an earlier pack's binaries.
work=${WORK:-/tmp/knn-gpu-$(cksum <"$pack" | cut -d' ' -f1)}
mkdir -p "$out" "$work"
. bench/gpu_pack_env.sh "$pack" "$work"
export SURFGRAD_WEBGPU=dawn
"$bin/surfgrad" info >"$out/info-dawn.txt" 2>&1
grep -E "^(adapter|implementation|shader-f16|subgroups|subgroup-matrix) " "$out/info-dawn.txt"

knn() {  # NAME POINTS K METHODS TIMEOUT [more bench knn options]
  log "bench knn $2 x 50, k = $3: $4"
  timeout "$5" "$bin/surfgrad" bench knn --points "$2" --dims 50 --k "$3" --methods "$4" --recall-sample 2000 \
    --json "$out/knn-$1.json" "${@:6}" 2>&1 | grep -v '^Warning: maxDynamic' | tee "$out/knn-$1.txt"
}
diag() {  # the diagnostic, printed whole (it is the point of the stage), then the kNN tests
  log "diagnostic under Dawn"
  timeout 60 "$bin/surfgrad_tests" --gtest_filter='KnnSgmatDiag.*' >"$out/diag-dawn.txt" 2>&1
  echo "diagnostic under Dawn: exit $? (log $out/diag-dawn.txt)"
  grep -v '^Warning: maxDynamic' "$out/diag-dawn.txt" | grep -vE '^(Running main|Note: Google|\[-|\[=)' | head -120
}
tests() {
  log "tests under Dawn"
  timeout 90 "$bin/surfgrad_tests" --gtest_brief=1 --gtest_filter='KnnSubgroupMatrix.*:Knn.Streaming*' \
    >"$out/tests-dawn.txt" 2>&1
  echo "tests under Dawn: exit $? (log $out/tests-dawn.txt)"
  grep -E "rows recomputed|^\[  (FAILED|PASSED|SKIPPED) |FAILED TEST" "$out/tests-dawn.txt" | tail -20
  grep -v '^Warning: maxDynamic' "$out/tests-dawn.txt" | grep -A8 'Failure' | head -40
}
if [ "$stage" = variants ]; then
  # The candidate kernel's layouts and staging (knn_sgmat_internal.hpp: KnnSgmatVariant), 1M x 50-D,
  # k = 90 (<= 300 s; ~2.5 min expected on the H100): the diagnostic (each variant's products
  # against the host inside the kernel), then per variant the stream without pushes and the whole
  # kNN; split products at queues of 16 and 12 and at 128 candidates, the f32 kernel, PyTorch.
  diag
  tests
  variant() {  # NAME LAYOUT PAD STAGE [more bench knn options]
    SURFGRAD_KNN_SGMAT_LAYOUT=$2 SURFGRAD_KNN_SGMAT_PAD=$3 SURFGRAD_KNN_SGMAT_STAGE=$4 \
      knn "variants-$1" "${POINTS_1M:-1000000}" 90 exact-sgmat-no-push,exact-sgmat 40 "${@:5}"
  }
  variant staged blocked 8 1
  SURFGRAD_KNN_SGMAT_SPLIT=1 variant split blocked 8 1
  SURFGRAD_KNN_SGMAT_SPLIT=1 SURFGRAD_KNN_SGMAT_QUEUE=12,10 variant split-q12 blocked 8 1
  SURFGRAD_KNN_SGMAT_SPLIT=1 variant split-c128 blocked 8 1 --candidates 128
  knn variants-f32 "${POINTS_1M:-1000000}" 90 exact-f32 40 --shapes 64x64x8/4x4/q12m10e8s512/no-push
  timeout 90 python3 bench/torch_knn.py "${POINTS_1M:-1000000}" 50 90 >"$out/torch-variants.json" 2>"$out/torch-variants.err"
  cat "$out/torch-variants.json"
elif [ "$stage" = cols ]; then
  # The experimental col_major right operands (KnnSubgroupMatrixOptions::right_cols) beside the
  # default, 1M x 50-D k = 90 (<= 300 s): the diagnostic checks their products first.
  diag
  knn 1m-rows "${POINTS_1M:-1000000}" 90 exact-sgmat,exact-sgmat-no-push 100
  SURFGRAD_KNN_SGMAT_RIGHT=cols knn 1m-cols "${POINTS_1M:-1000000}" 90 exact-sgmat,exact-sgmat-no-push 100
  exit 0
elif [ "$stage" = diag ]; then
  diag
  tests
  exit 0
elif [ "$stage" = maps ]; then
  # Where the kNN on subgroup matrices wins (<= 400 s): 1M x 50-D at k = 15 … 90, and 100k and 300k
  # points at k = 15, exact-sgmat beside exact-f32; then `surfgrad map --points 1000000` UMAP and
  # t-SNE under wgpu-native (the default), Dawn with the f32 kNN (SURFGRAD_KNN_SUBGROUP_MATRIX=0),
  # and Dawn's default (knn_subgroup_matrix_chosen); phases and md5.
  tests
  for k in 15 30 45 60 75 90; do knn "maps-k$k" "${POINTS_1M:-1000000}" $k exact-sgmat,exact-f32 60; done
  for n in 100000 300000; do knn "maps-n$n" "$n" 15 exact-sgmat,exact-f32 60; done
  for m in umap tsne; do
    for v in wgpu dawn-f32 dawn; do
      impl=${v%-f32}; sg=; [ "$v" = dawn-f32 ] && sg=0
      SURFGRAD_WEBGPU=$impl SURFGRAD_KNN_SUBGROUP_MATRIX=$sg timeout 120 "$bin/surfgrad" map \
        --points "${POINTS_1M:-1000000}" --method $m -o "/tmp/map-$m-$v" >"$out/map-$m-$v.txt" 2>&1
      echo "map $m $v: exit $? md5 $(md5sum "/tmp/map-$m-$v.npy" 2>/dev/null | cut -c1-12)" \
        "$(grep -E '^  (kNN|affinities|memberships|optimisation|total)' "$out/map-$m-$v.txt" | tr -s ' ' | tr '\n' ' ')"
      rm -f /tmp/map-$m-$v.*
    done
  done
  exit 0
elif [ "$stage" = 1m ]; then
  diag
  tests
  # Where the time goes: each step of exact-sgmat (printed), its candidate stream without pushes,
  # and the f32 kernel's stream without pushes (knn_fused_shape's GPU shape).
  knn 1m "${POINTS_1M:-1000000}" 90 exact-sgmat,exact-sgmat-no-push,exact-f32 200 \
    --shapes 64x64x8/4x4/q12m10e8s512/no-push
  # Fewer candidates (less selection in the stream, more rows the bound may flag), and more.
  for c in 128 256; do
    knn "1m-c$c" "${POINTS_1M:-1000000}" 90 exact-sgmat 45 --candidates "$c"
  done
  timeout 90 python3 bench/torch_knn.py "${POINTS_1M:-1000000}" 50 90 >"$out/torch-1m.json" 2>"$out/torch-1m.err"
  cat "$out/torch-1m.json"
else
  knn 10m "${POINTS_10M:-10000000}" 15 exact-sgmat 560
fi

python3 - "$out" "$stage" <<'PY'
import json, os, sys
out, stage = sys.argv[1], sys.argv[2]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except (OSError, ValueError):
        return None
torch = load(f"torch-{stage}.json")
runs = [load(f"knn-{stage}.json")] + [load(f"knn-{stage}-c{c}.json") for c in (128, 256)]
if stage == "variants":
    names = ("staged", "split", "split-q12", "split-c128", "f32")
    runs = [dict(load(f"knn-variants-{v}.json") or {}, variant_name=v) for v in names]
    runs = [r for r in runs if "results" in r]
rows = []
for run in filter(None, runs):
    n, d = run["points"], run["dims"]
    flop = 2.0 * n * n * d
    torch_tflops = flop / torch["seconds"] / 1e12 if torch else 0
    for r in run["results"]:
        if "seconds" not in r:
            continue
        name = "knn-" + r["method"] + ("/" + run["variant_name"] if "variant_name" in run else "")
        rows.append({"size": f"{n}x{d} k={run['k']}", "variant": name, "seconds": r["seconds"],
                     "tflops": flop / r["seconds"] / 1e12, "cublas_tflops": torch_tflops,
                     "torch_seconds": torch["seconds"] if torch else None, "recall": r["recall"],
                     "rows_recomputed": r.get("rows_recomputed"), "candidates": r.get("candidates"), "steps": r.get("steps"),
                     "backend": "dawn", "adapter": run["adapter"], "date": run["date"]})
json.dump(rows, open(os.path.join(out, f"rows-{stage}.json"), "w"), indent=1)
for r in rows:
    print(f'{r["size"]:22} {r["variant"]:36} {r["seconds"]:8.3f} s  recall {r["recall"]:.4f}  '
          f'recomputed {r["rows_recomputed"]}  torch {r["torch_seconds"]}')
PY
