#!/usr/bin/env bash
# Set-up (idempotent) and build of the browser target into build-web/: web/package/surfgrad.wasm
# and web/package/webgpu_layout.js beside the package's JavaScript, then the map page's bundle
# (web/page/dist/). Serve with `node web/tools/serve.mjs` and open http://localhost:8080/page/.
set -euo pipefail
cd "$(dirname "$0")/.."
wgpu_dir=$(bash scripts/setup.sh | tail -n 1)
mapfile -t web_setup < <(bash scripts/setup_web.sh | tail -n 2)
eh_runtime=${web_setup[0]}
node_bin=${web_setup[1]}
werror=OFF
[ "${CI:-}" = true ] && werror=ON
cmake -S . -B build-web -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE=cmake/wasm32-wasi.cmake \
  -DSURFGRAD_WGPU_DIR="$wgpu_dir" -DSURFGRAD_WASM_EH_RUNTIME="$eh_runtime" -DNODE="$(command -v "$node_bin")" \
  -DSURFGRAD_WERROR=$werror >/dev/null
cmake --build build-web -j "$(nproc)"
if [ -f web/page/build.mjs ]; then "$node_bin" web/page/build.mjs; fi
ls -l web/package/surfgrad.wasm | awk '{printf "web/package/surfgrad.wasm: %.1f MiB\n", $5 / 1048576}'
