#!/usr/bin/env bash
# Set-up (idempotent) and build into build/. Used by both README commands.
set -euo pipefail
cd "$(dirname "$0")/.."
wgpu_dir=$(bash scripts/setup.sh | tail -n 1)
werror=OFF
[ "${CI:-}" = true ] && werror=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSURFGRAD_WGPU_DIR="$wgpu_dir" -DSURFGRAD_WERROR=$werror >/dev/null
cmake --build build -j "$(nproc)"
