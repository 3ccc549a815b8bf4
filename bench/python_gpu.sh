#!/usr/bin/env bash
# surfgrad's Python package on a machine without a package registry (the GPU machine): a fresh
# virtual environment (no PyTorch, nothing from the system's site-packages) gets the package and
# NumPy from a carried folder of wheels, then bench/peers.py maps MNIST 10k and the CLI's
# built-in set (100,000 points) with sg.TSNE / sg.UMAP, each map run twice (the first pays
# pipeline compilation), scored by sg.map_quality.
#
# Usage: bench/python_gpu.sh WHEELS [MNIST_DIR]     (from the repository root)
#   WHEELS: a folder made by `bench/python_gpu.sh --prepare WHEELS PYVER` on the development
#     machine: NumPy's wheel for PYVER, and either a surfgrad wheel built for PYVER (where this
#     machine has that Python: `pip wheel . -w WHEELS`) or the build requirements
#     (scikit-build-core, nanobind, wgpu and theirs), from which the wheel is built here from this
#     source tree (CMake >= 3.22, a C++20 compiler, Ninja or Make); and the Vulkan loader's
#     Debian package, unpacked where the system has no libvulkan.so.1.
#   MNIST_DIR: holds t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (default
#     ../shared/data/mnist10k); skipped if absent.
# (--prepare uses .venv-python: bash scripts/python_env.sh.)
# Environment: PYTHON (default python3), OUT (logs and peers.json; default /tmp/python-gpu),
# WORK (the venv, the wheel's build folder, the unpacked loader; default /tmp/python-gpu-work),
# POINTS (default 100000).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --prepare ]; then
  # Development machine: NumPy and the build requirements for Python PYVER (e.g. 3.12) into
  # WHEELS, as pinned in python/requirements-dev.txt and pyproject.toml; the Vulkan loader.
  wheels=${2:?usage: $0 --prepare WHEELS PYVER}
  pyver=${3:?usage: $0 --prepare WHEELS PYVER}
  mkdir -p "$wheels"
  pin() { grep -E "^$1==" python/requirements-dev.txt | head -1; }
  .venv-python/bin/python -m pip download --quiet --dest "$wheels" --only-binary=:all: --python-version "$pyver" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform linux_x86_64 \
    "$(pin numpy)" "$(pin scikit_build_core)" "$(pin nanobind)" "$(pin wgpu)"
  (cd "$wheels" && apt-get download libvulkan1 >/dev/null 2>&1) || echo "no libvulkan1 package downloaded" >&2
  du -sh "$wheels"
  exit 0
fi

wheels=$(realpath "${1:?usage: $0 WHEELS [MNIST_DIR]}")
mnist=${2:-../shared/data/mnist10k}
out=${OUT:-/tmp/python-gpu}
work=${WORK:-/tmp/python-gpu-work}
points=${POINTS:-100000}
python=${PYTHON:-python3}
mkdir -p "$out" "$work"
venv=$work/venv
log() { echo "[python_gpu] $*" >&2; }

# The Vulkan loader, where the system lacks one (wgpu-native opens libvulkan.so.1).
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
  deb=$(ls "$wheels"/libvulkan1_*.deb 2>/dev/null | head -1 || true)
  if [ -n "$deb" ]; then
    rm -rf "$work/vulkan" && dpkg-deb -x "$deb" "$work/vulkan"
    export LD_LIBRARY_PATH="$work/vulkan/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    log "Vulkan loader from $(basename "$deb")"
  else
    log "no libvulkan.so.1 on this system and no libvulkan1_*.deb in $wheels: Vulkan adapters will be missing"
  fi
fi

# A fresh environment from the base interpreter (a venv's python gives a venv of its base).
rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input)
tag=$("$venv/bin/python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
log "$("$venv/bin/python" --version) ($tag) in $venv"
wheel=$(ls "$wheels"/surfgrad-*-"$tag"-*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  log "no surfgrad wheel for $tag in $wheels: building one from this tree with the carried build requirements"
  rm -rf "$work/wheel"
  export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
  # A build folder of its own (pyproject.toml's build-dir is inside the tree).
  t0=$(date +%s)
  "${pip[@]}" wheel --quiet --no-index --find-links "$wheels" --no-deps . -w "$work/wheel" \
    --config-settings=build-dir="$work/build/{wheel_tag}"
  log "built $(ls "$work/wheel") in $(($(date +%s) - t0)) s"
  wheel=$(ls "$work"/wheel/surfgrad-*.whl)
fi
"${pip[@]}" install --quiet --no-index --find-links "$wheels" "$wheel"
"$venv/bin/python" -c 'import surfgrad as sg, json; d = sg.device(); print(d["adapter"], d["backend"])' | tee "$out/device.txt"
if "$venv/bin/python" -c 'import torch' 2>/dev/null; then log "PyTorch is importable: not a clean environment"; exit 1; fi

run() {  # name, then bench/peers.py's arguments
  local name=$1; shift
  log "$name: bench/peers.py $*"
  "$venv/bin/python" bench/peers.py --only surfgrad,surfgrad-umap --repeat 2 --out "$out/$name" "$@" 2>&1 |
    tee "$out/$name.log"
}
if [ -f "$mnist/t10k-images-idx3-ubyte.gz" ]; then run mnist10k --data "$mnist"; else log "no MNIST in $mnist: skipped"; fi
run "builtin-$points" --builtin "$points"
rm -f "$out"/*/*.npy
log "done: $out/*.log, $out/*/peers.json"
