#!/usr/bin/env bash
# One-time, idempotent set-up for surfgrad on Debian 12 (bookworm).
#  1. Debian packages: compiler, CMake, Ninja, GoogleTest, zlib, libpng, CLI11 and nlohmann-json
#     (header-only, pinned by the distribution), and, from bookworm-backports,
#     Mesa >= 25 (lavapipe, the CPU Vulkan driver; llvmpipe through EGL for the GLES backend)
#     with the Vulkan loader. Stock Mesa 22's lavapipe lacks features WebGPU implementations
#     need; Mesa 25's gives subgroups and f16.
#  2. The native WebGPU implementation: wgpu-native, taken from the PyPI wheel `wgpu` (pinned
#     by version and sha256) because that wheel ships the library together with the exact
#     webgpu.h/wgpu.h it was built from. Unpacked into a cache outside the build folder.
#  3. Apache Arrow C++ (Parquet and Arrow IPC for `surfgrad map`): libarrow, libparquet and their
#     headers from the PyPI wheel `pyarrow` (the version python/requirements-distributed.txt pins,
#     by sha256): the wheel ships them built with the C++11 ABI, needing GLIBCXX <= 3.4.22 (Debian
#     12 has 3.4.30) and nothing beyond libc and libstdc++. Unpacked beside wgpu-native, where CMake
#     finds it (SURFGRAD_ARROW is then ON). SURFGRAD_NO_ARROW=1 skips it.
#  4. Dawn (Chromium's WebGPU), the second native implementation (SURFGRAD_WEBGPU=dawn; issue 34):
#     libwebgpu_dawn.so from the PyPI wheel `rillfacet` (pinned by sha256), the one registry
#     package found that ships Dawn as a C-API shared library (276 exported wgpu* functions, Dawn
#     of Sep-Oct 2026). Checked and passed over: `wgpudawn` (a cffi module, no exported C API),
#     npm `webgpu` (dawn.node, no exported C API), `dawn-python` (Dawn of January 2025). No header
#     ships with it: src/gpu/dawn_abi.hpp declares the few Dawn-only things, checked by a test.
#     Unpacked beside wgpu-native, where CMake finds it. SURFGRAD_NO_DAWN=1 skips it.
# Prints the wgpu-native directory on its last line (cmake -DSURFGRAD_WGPU_DIR=...).
set -euo pipefail

WGPU_PY_VERSION=0.32.0
WGPU_WHEEL=wgpu-${WGPU_PY_VERSION}-py3-none-manylinux_2_28_x86_64.whl
WGPU_WHEEL_SHA256=6499a31b5a29a10b4f1089fea4a0806411f42605fa86b6c0b543a07ca0de8568
CACHE=${SURFGRAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/surfgrad}
WGPU_DIR=$CACHE/wgpu-native-py${WGPU_PY_VERSION}
PYARROW_VERSION=26.0.1
PYARROW_WHEEL=pyarrow-${PYARROW_VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl
PYARROW_WHEEL_SHA256=39cb0f2418282c24bea6ceda77b03e5a8f0a5766b63a8bf194d4e2a2c423548c
ARROW_DIR=$CACHE/arrow-cpp-pyarrow${PYARROW_VERSION}
RILLFACET_VERSION=0.1.3
RILLFACET_WHEEL=rillfacet-${RILLFACET_VERSION}-cp312-abi3-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
RILLFACET_WHEEL_SHA256=371c6c831aa43310d2112a7001ce94b36b8e5753af23ce44ef57c9ce97793b70
DAWN_DIR=$CACHE/dawn-rillfacet${RILLFACET_VERSION}

log() { echo "[setup] $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_debian_packages() {
  local need=(g++ cmake ninja-build libgtest-dev zlib1g-dev libpng-dev libcli11-dev nlohmann-json3-dev python3 python3-pip python3-venv unzip ca-certificates)
  local missing=()
  for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  local mesa_ok=0
  if dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | grep -qE '^(2[5-9]|[3-9][0-9])\.'; then
    dpkg -s libvulkan1 >/dev/null 2>&1 && dpkg -s libegl-mesa0 >/dev/null 2>&1 && mesa_ok=1
  fi
  if [ ${#missing[@]} -eq 0 ] && [ $mesa_ok = 1 ]; then log "Debian packages present"; return; fi
  if ! command -v apt-get >/dev/null; then
    log "not a Debian system: install a C++20 compiler, CMake, GoogleTest, zlib and a Vulkan driver yourself"
    return
  fi
  local codename; codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  if [ "$codename" = bookworm ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    log "adding bookworm-backports (for Mesa >= 25)"
    as_root tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  if [ "$codename" = bookworm ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      -t bookworm-backports mesa-vulkan-drivers libvulkan1 libegl-mesa0 libgl1-mesa-dri libegl1 >/dev/null
  else
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      mesa-vulkan-drivers libvulkan1 libegl-mesa0 libgl1-mesa-dri libegl1 >/dev/null
  fi
  log "mesa-vulkan-drivers $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)"
}

# A pinned wheel from PyPI in $CACHE/downloads, checked against its sha256 (downloaded only when
# the cached file is missing or differs): fetch_wheel FILE SHA256 REQUIREMENT [pip download args].
fetch_wheel() {
  local whl=$CACHE/downloads/$1 sha=$2 spec=$3
  shift 3
  mkdir -p "$CACHE/downloads"
  if ! echo "$sha  $whl" | sha256sum -c --status 2>/dev/null; then
    log "downloading $(basename "$whl") from PyPI"
    python3 -m pip download --quiet --no-deps --only-binary=:all: "$@" -d "$CACHE/downloads" "$spec"
    echo "$sha  $whl" | sha256sum -c --status || { log "sha256 mismatch for $whl"; exit 1; }
  fi
}

install_wgpu_native() {
  if [ -f "$WGPU_DIR/.complete" ]; then log "wgpu-native cached at $WGPU_DIR"; return; fi
  local whl=$CACHE/downloads/$WGPU_WHEEL
  fetch_wheel "$WGPU_WHEEL" "$WGPU_WHEEL_SHA256" "wgpu==$WGPU_PY_VERSION" --python-version 3.11 --platform manylinux_2_28_x86_64
  rm -rf "$WGPU_DIR.tmp" && mkdir -p "$WGPU_DIR.tmp/include/webgpu" "$WGPU_DIR.tmp/lib"
  unzip -q -o -j "$whl" 'wgpu/resources/webgpu.h' 'wgpu/resources/wgpu.h' -d "$WGPU_DIR.tmp/include/webgpu"
  unzip -q -o -j "$whl" 'wgpu/resources/libwgpu_native-release.so' -d "$WGPU_DIR.tmp/lib"
  mv "$WGPU_DIR.tmp/lib/libwgpu_native-release.so" "$WGPU_DIR.tmp/lib/libwgpu_native.so"
  echo "wgpu (PyPI) $WGPU_PY_VERSION sha256 $WGPU_WHEEL_SHA256" > "$WGPU_DIR.tmp/SOURCE"
  touch "$WGPU_DIR.tmp/.complete"
  rm -rf "$WGPU_DIR" && mv "$WGPU_DIR.tmp" "$WGPU_DIR"
  log "wgpu-native unpacked to $WGPU_DIR"
}

install_arrow_cpp() {
  if [ "${SURFGRAD_NO_ARROW:-}" = 1 ]; then log "SURFGRAD_NO_ARROW=1: no Parquet / Arrow IPC"; return; fi
  if [ -f "$ARROW_DIR/.complete" ]; then log "Arrow C++ cached at $ARROW_DIR"; return; fi
  if [ "$(uname -m)" != x86_64 ]; then log "Arrow C++ from the pyarrow wheel is pinned for x86_64 only: no Parquet"; return; fi
  local whl=$CACHE/downloads/$PYARROW_WHEEL
  fetch_wheel "$PYARROW_WHEEL" "$PYARROW_WHEEL_SHA256" "pyarrow==$PYARROW_VERSION" --python-version 3.11 --platform manylinux_2_28_x86_64
  rm -rf "$ARROW_DIR.tmp" && mkdir -p "$ARROW_DIR.tmp/lib"
  unzip -q -o "$whl" 'pyarrow/include/arrow/*' 'pyarrow/include/parquet/*' 'pyarrow/libarrow.so.*' \
    'pyarrow/libparquet.so.*' -d "$ARROW_DIR.tmp/wheel"
  mv "$ARROW_DIR.tmp/wheel/pyarrow/include" "$ARROW_DIR.tmp/include"
  mv "$ARROW_DIR.tmp/wheel/pyarrow"/lib*.so.* "$ARROW_DIR.tmp/lib/"
  rm -rf "$ARROW_DIR.tmp/wheel"
  echo "pyarrow (PyPI) $PYARROW_VERSION sha256 $PYARROW_WHEEL_SHA256" > "$ARROW_DIR.tmp/SOURCE"
  touch "$ARROW_DIR.tmp/.complete"
  rm -rf "$ARROW_DIR" && mv "$ARROW_DIR.tmp" "$ARROW_DIR"
  log "Arrow C++ unpacked to $ARROW_DIR"
}

install_dawn() {
  if [ "${SURFGRAD_NO_DAWN:-}" = 1 ]; then log "SURFGRAD_NO_DAWN=1: wgpu-native only"; return; fi
  if [ -f "$DAWN_DIR/.complete" ]; then log "Dawn cached at $DAWN_DIR"; return; fi
  if [ "$(uname -m)" != x86_64 ]; then log "Dawn from the rillfacet wheel is pinned for x86_64 only: wgpu-native only"; return; fi
  local whl=$CACHE/downloads/$RILLFACET_WHEEL
  fetch_wheel "$RILLFACET_WHEEL" "$RILLFACET_WHEEL_SHA256" "rillfacet==$RILLFACET_VERSION" --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
  rm -rf "$DAWN_DIR.tmp" && mkdir -p "$DAWN_DIR.tmp/lib"
  unzip -q -o -j "$whl" 'rillfacet/libwebgpu_dawn.so' -d "$DAWN_DIR.tmp/lib"
  echo "rillfacet (PyPI) $RILLFACET_VERSION sha256 $RILLFACET_WHEEL_SHA256" > "$DAWN_DIR.tmp/SOURCE"
  touch "$DAWN_DIR.tmp/.complete"
  rm -rf "$DAWN_DIR" && mv "$DAWN_DIR.tmp" "$DAWN_DIR"
  log "Dawn unpacked to $DAWN_DIR"
}

install_debian_packages
install_wgpu_native
install_arrow_cpp
install_dawn
echo "$WGPU_DIR"
