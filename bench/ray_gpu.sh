#!/usr/bin/env bash
# surfgrad.distributed on the GPU machine (one H100 / H200, no package registry): 10M × 768 points
# as .npy shards, the kNN graph sharded over a local Ray cluster whose workers share the GPU
# (--gpus-per-task 0.25: four GPU tasks at once), the UMAP layout on the same GPU; then the
# single-process map (sg.UMAP) of the same points; seconds per phase of both (bench/ray_maps.py).
#
# On the development machine (Python 3.12 wheels for the GPU machine; see bench/python_gpu.sh):
#   bash bench/python_gpu.sh --prepare build-wheel/py312 3.12     # NumPy, build requirements, Vulkan loader
#   bash bench/ray_gpu.sh --prepare 3.12                           # Ray and its requirements, pinned
# Ray's wheel (79 MB) and the rest exceed one call's 64 MiB of carried files, so they travel in
# two folders, over two calls; what a call carried stays on the (warm) machine:
#   call 1: carry build-wheel/py312 build-wheel/ray312-a     bash bench/ray_gpu.sh setup
#   call 2: carry build-wheel/ray312-b                        bash bench/ray_gpu.sh setup data
#   call 3:                                                   bash bench/ray_gpu.sh ray
#   call 4:                                                   bash bench/ray_gpu.sh single recall
# (`setup` in call 1 builds the surfgrad wheel and venv and stops where Ray's second half is
# missing; the steps are idempotent.) Each step stays within the 10-minute limit of one call.
# `recall`: 200,000 × 64 points (no PCA), k = 15: recall@15 against exact neighbours of 1,000
# sampled points, of the sharded graph and of one process's neighbour descent (the issue's
# criterion: sharded ≥ single − 0.01; on two CPU cores the single-process descent takes > 20 min).
# The 10M points are the CLI's built-in set (10 Gaussian clusters in 768-D, labelled), written as
# shards by `data`; `ray` reports recall@15 of the sharded graph against exact lists of RECALL
# points (on the GPU) and the map's 10-NN label accuracy. On a host with several GPUs (issue 17),
# NUM_GPUS=2 gives the local Ray cluster two GPUs and each GPU task the adapter "#i" of the GPU Ray
# assigned it; the logs and JSON of `ray` are named by NUM_GPUS (ray-1gpu.*, ray-2gpu.*).
# Environment: WORK (venv, shards, outputs; default /tmp/ray-gpu-work; the shards need 31 GB of
# disk), OUT (logs and JSON; default $WORK/results), POINTS (10000000), DIMS (768), SHARDS (40),
# WORKERS (Ray CPUs: nproc), NUM_GPUS (1), GPUS_PER_TASK (0.25: four GPU tasks at once on each GPU),
# PPC (points per cluster, 10000), EPOCHS (0: default), RECALL (10000).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --prepare ]; then
  pyver=${2:?usage: $0 --prepare PYVER}
  tmp=$(mktemp -d)
  .venv-python/bin/python -m pip download --quiet --dest "$tmp" --only-binary=:all: --python-version "$pyver" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --no-deps $(grep -E '^[A-Za-z].*==' python/requirements-distributed.txt |
      grep -v '^pyarrow==')
  rm -rf build-wheel/ray312-a build-wheel/ray312-b
  mkdir -p build-wheel/ray312-a build-wheel/ray312-b
  ray=$(ls "$tmp"/ray-*.whl)
  (cd "$tmp" && sha256sum "$(basename "$ray")") > build-wheel/ray312-a/SHA256SUMS
  # Ray's wheel in two pieces (joined on the GPU machine), each folder under 64 MiB with the rest.
  split -b 40m -d "$ray" "build-wheel/ray312-a/$(basename "$ray").part-"
  mv "build-wheel/ray312-a/$(basename "$ray").part-01" build-wheel/ray312-b/
  rm "$ray"
  mv "$tmp"/*.whl build-wheel/ray312-b/
  echo "$(basename "$ray")" > build-wheel/ray312-a/WHEEL_NAME
  du -sh build-wheel/py312 build-wheel/ray312-a build-wheel/ray312-b
  rm -rf "$tmp"
  exit 0
fi

work=${WORK:-/tmp/ray-gpu-work}
out=${OUT:-$work/results}
points=${POINTS:-10000000}
dims=${DIMS:-768}
shards=${SHARDS:-40}
workers=${WORKERS:-$(nproc)}
gpt=${GPUS_PER_TASK:-0.25}
gpus=${NUM_GPUS:-1}
recall=${RECALL:-10000}
ppc=${PPC:-10000}
epochs=${EPOCHS:-0}
mkdir -p "$work" "$out"
venv=$work/venv
log() { echo "[ray_gpu] $*" >&2; }
python=${PYTHON:-python3}
[ $# -gt 0 ] || set -- setup data ray single recall

vulkan() {  # the Vulkan loader, where the system lacks one (as bench/python_gpu.sh)
  if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
    deb=$(ls build-wheel/py312/libvulkan1_*.deb 2>/dev/null | head -1 || true)
    if [ -n "$deb" ] && [ ! -d "$work/vulkan" ]; then dpkg-deb -x "$deb" "$work/vulkan"; fi
    export LD_LIBRARY_PATH="$work/vulkan/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
}
vulkan
export RAY_USAGE_STATS_ENABLED=0 RAY_DISABLE_DOCKER_CPU_WARNING=1

for step in "$@"; do
  case $step in
    setup)
      pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input)
      if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import surfgrad' 2>/dev/null; then
        rm -rf "$venv" && "$python" -m venv "$venv"
        export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
        t0=$(date +%s)
        rm -rf "$work/wheel"
        "${pip[@]}" wheel --quiet --no-index --find-links build-wheel/py312 --no-deps . -w "$work/wheel" \
          --config-settings=build-dir="$work/build/{wheel_tag}"
        "${pip[@]}" install --quiet --no-index --find-links build-wheel/py312 "$work"/wheel/surfgrad-*.whl
        log "surfgrad built and installed in $(($(date +%s) - t0)) s"
      fi
      if ! "$venv/bin/python" -c 'import ray' 2>/dev/null; then
        name=$(cat build-wheel/ray312-a/WHEEL_NAME)
        if [ ! -f build-wheel/ray312-b/"$name".part-01 ]; then
          log "build-wheel/ray312-b is not here yet: carry it in the next call and run setup again"
          continue
        fi
        cat build-wheel/ray312-a/"$name".part-00 build-wheel/ray312-b/"$name".part-01 > "$work/$name"
        (cd "$work" && sha256sum -c "$OLDPWD/build-wheel/ray312-a/SHA256SUMS")
        "${pip[@]}" install --quiet --no-index --find-links build-wheel/ray312-b --find-links build-wheel/py312 \
          "$work/$name"
        rm "$work/$name"
      fi
      "$venv/bin/python" -c 'import surfgrad as sg, ray; d = sg.device(); print(d["adapter"], d["backend"], "ray", ray.__version__)' |
        tee "$out/device.txt"
      nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >> "$out/device.txt" || true
      ;;
    recall)
      "$venv/bin/python" bench/ray_maps.py --data blobs --points 200000 --dims 64 --shards 4 --workers "$workers" \
        --gpus-per-task "$gpt" --num-gpus "$gpus" --pca 0 --recall-sample 1000 --only recall --work "$work/recall" \
        --json "$out/recall.json" 2>&1 | tee "$out/recall.log"
      ;;
    data | ray | single)
      args=(--data builtin --points "$points" --dims "$dims" --shards "$shards" --workers "$workers"
        --gpus-per-task "$gpt" --num-gpus "$gpus" --points-per-cluster "$ppc" --epochs "$epochs" --recall-sample 0
        --graph-recall-sample "$recall" --work "$work/bench")
      if [ "$step" = data ]; then
        "$venv/bin/python" bench/ray_maps.py "${args[@]}" --only data 2>&1 | tee "$out/data.log"
      elif [ "$step" = ray ]; then
        nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader -l 2 >"$out/ray-${gpus}gpu.smi" &
        smi=$!
        "$venv/bin/python" bench/ray_maps.py "${args[@]}" --only ray --json "$out/ray-${gpus}gpu.json" 2>&1 |
          tee "$out/ray-${gpus}gpu.log"
        kill $smi 2>/dev/null || true
      else
        "$venv/bin/python" bench/ray_maps.py "${args[@]}" --only single --json "$out/single.json" 2>&1 |
          tee "$out/single.log"
      fi
      ;;
    *) log "unknown step $step (setup, data, ray, single, recall)"; exit 2 ;;
  esac
done
log "done: $out"
