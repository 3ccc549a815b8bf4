#!/usr/bin/env bash
# Packs what the GPU machine needs to run the CLI with Parquet / Arrow (bench/arrow_io_gpu.sh):
# the program (and surfgrad_io_bench where built), libwgpu_native.so and Arrow C++'s two shared
# libraries from the build folder, stripped, into one xz archive in .carry/arrow (ignored by git).
# The device tool carries at most 64 MiB with the working tree; the libraries alone are ~60 MiB
# unpacked, so the build folder itself is not carried: carry .carry/arrow instead.
# Usage: scripts/pack_arrow_carry.sh [BUILD_DIR]   (default: build; build it with scripts/build.sh,
#        and `cmake --build BUILD_DIR --target surfgrad_io_bench` for the I/O-only timings)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dest=.carry/arrow
[ -x "$build/surfgrad" ] || { echo "pack_arrow_carry.sh: no $build/surfgrad; build it first (scripts/build.sh)" >&2; exit 1; }
for lib in libarrow.so.2600 libparquet.so.2600 libwgpu_native.so; do
  [ -f "$build/$lib" ] || { echo "pack_arrow_carry.sh: no $build/$lib (a build without Arrow? run scripts/setup.sh, rebuild)" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin"
for f in surfgrad surfgrad_io_bench libarrow.so.2600 libparquet.so.2600 libwgpu_native.so; do
  [ -f "$build/$f" ] || continue
  cp "$build/$f" "$stage/bin/$f"
  strip --strip-unneeded "$stage/bin/$f"
done
mkdir -p "$dest"
rm -f "$dest/surfgrad-arrow.tar.xz"
tar -C "$stage" -cf - bin | xz -T0 -6 > "$dest/surfgrad-arrow.tar.xz"
echo "unpacked: $(du -sh "$stage/bin" | cut -f1) ($(ls "$stage/bin" | tr '\n' ' '))"
echo "packed:   $(du -h "$dest/surfgrad-arrow.tar.xz" | cut -f1) in $dest/surfgrad-arrow.tar.xz (carry: $dest)"
