#!/usr/bin/env bash
# Checks surfgrad as a CMake package, the way an outside project uses it:
#  1. installs the already-built tree (default build/) into a temporary prefix, then moves that
#     prefix elsewhere (the install must be relocatable);
#  2. configures tests/consumer against it with only -DCMAKE_PREFIX_PATH (find_package), builds
#     it and runs it (a context, a matmul, a backward pass, checked: prints OK);
#  3. checks that the installed library has neither the demos nor the matmul ladder, and that
#     webgpu.h is not reachable: not installed, and a consumer source that includes
#     <webgpu/webgpu.h> fails to compile for that reason;
#  4. with --subdir, also builds the same consumer with surfgrad as add_subdirectory (this
#     compiles libsurfgrad once more: minutes on two cores, hence not by default).
# Usage: scripts/test_consumer.sh [--subdir] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
subdir=0
build=build
for arg in "$@"; do
  case $arg in
    --subdir) subdir=1 ;;
    -*) echo "usage: $0 [--subdir] [BUILD_DIR]" >&2; exit 2 ;;
    *) build=$arg ;;
  esac
done
[ -f "$build/CMakeCache.txt" ] || { echo "[consumer] $build is not a configured build (run scripts/build.sh)" >&2; exit 1; }

log() { echo "[consumer] $*"; }
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
work=$(mktemp -d "${TMPDIR:-/tmp}/surfgrad-consumer.XXXXXX")
# SURFGRAD_CONSUMER_KEEP=1 keeps the folder (install, builds, logs) for a look afterwards.
[ "${SURFGRAD_CONSUMER_KEEP:-0}" = 1 ] && log "keeping $work" || trap 'rm -rf "$work"' EXIT

# What is installed must be up to date (a no-op after scripts/build.sh).
cmake --build "$build" >/dev/null
cmake --install "$build" --prefix "$work/install" >/dev/null
mv "$work/install" "$work/prefix"  # nothing may point back at the install location
prefix=$work/prefix
log "installed and moved to $prefix: $(cd "$prefix" && find . -type f | wc -l) files"

# The demos and the matmul ladder belong to the CLI and the tests, not to the installed library.
if nm -C "$prefix/lib/libsurfgrad.a" | grep -E ' T surfgrad::(matmul_variants\(|demos::)'; then
  log "FAIL: libsurfgrad.a carries the demos or the matmul ladder"; exit 1
fi
if find "$prefix" -name 'webgpu.h' -o -name 'wgpu.h' | grep -q .; then
  log "FAIL: the install contains webgpu.h / wgpu.h"; exit 1
fi

# Only CMAKE_PREFIX_PATH: no SURFGRAD_WGPU_DIR, no surfgrad source tree.
cmake -S tests/consumer -B "$work/consumer" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/consumer" --target consumer >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
log "WebGPU library at run time: $(ldd "$work/consumer/consumer" | awk '/libwgpu_native/ {print $3}')"
out=$("$work/consumer/consumer" 2>&1) || { echo "$out"; log "FAIL: the consumer's checks failed"; exit 1; }
echo "$out"
grep -q '^OK' <<<"$out" || { log "FAIL: the consumer did not print OK"; exit 1; }

# webgpu.h is private to surfgrad: including it from a consumer must fail, and for that reason.
if cmake --build "$work/consumer" --target consumer_includes_webgpu >"$work/webgpu.log" 2>&1; then
  log "FAIL: a consumer compiled #include <webgpu/webgpu.h> (surfgrad leaks the WebGPU include path)"; exit 1
fi
grep -q 'webgpu/webgpu.h: No such file' "$work/webgpu.log" || { cat "$work/webgpu.log"; log "FAIL: unexpected error"; exit 1; }
log "webgpu.h is not on a consumer's include path (as intended)"

if [ $subdir = 1 ]; then
  wgpu_dir=$(sed -n 's/^SURFGRAD_WGPU_DIR:PATH=//p' "$build/CMakeCache.txt")
  cmake -S tests/consumer -B "$work/subdir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DSURFGRAD_CONSUMER_SOURCE="$root" -DSURFGRAD_WGPU_DIR="$wgpu_dir" >"$work/configure-subdir.log" 2>&1 ||
    { cat "$work/configure-subdir.log"; exit 1; }
  # A subproject builds neither surfgrad's tests nor its program.
  if grep -q 'surfgrad_tests\|surfgrad_cli' <(cmake --build "$work/subdir" --target help); then
    log "FAIL: surfgrad as a subproject defines its tests or CLI"; exit 1
  fi
  cmake --build "$work/subdir" --target consumer -j "$(nproc)" >"$work/build-subdir.log" 2>&1 ||
    { cat "$work/build-subdir.log"; exit 1; }
  out=$("$work/subdir/consumer" 2>&1) || { echo "$out"; log "FAIL: the add_subdirectory consumer's checks failed"; exit 1; }
  echo "$out"
  grep -q '^OK' <<<"$out" || { log "FAIL: the add_subdirectory consumer did not print OK"; exit 1; }
  if cmake --build "$work/subdir" --target consumer_includes_webgpu >"$work/webgpu-subdir.log" 2>&1; then
    log "FAIL: add_subdirectory: a consumer compiled #include <webgpu/webgpu.h>"; exit 1
  fi
  grep -q 'webgpu/webgpu.h: No such file' "$work/webgpu-subdir.log" ||
    { cat "$work/webgpu-subdir.log"; log "FAIL: unexpected error"; exit 1; }
fi
log "OK"
