#!/usr/bin/env bash
# Packs what the GPU machine's browser runs (web/bench/gpu_browser_run.sh) need of the web build
# into .carry/webbin (ignored by git; ~13 MB): the package's wasm, its JavaScript and generated layout table, the
# peers page's bundle (the adapter probe loads it) and the map page's dist/ (parquet and tiles
# modes), source maps left out. gpu_browser_run.sh puts them in place there.
# Usage: bash web/bench/pack_web_carry.sh   (after `flock /tmp/web-build.lock bash scripts/build_web.sh`
#        whenever src/ or web/src/ changed: the wasm must match the package's JavaScript)
set -euo pipefail
cd "$(dirname "$0")/../.."
for f in web/package/surfgrad.wasm web/package/webgpu_layout.js; do
  [ -f "$f" ] || { echo "pack_web_carry.sh: no $f; build it first (flock /tmp/web-build.lock bash scripts/build_web.sh)" >&2; exit 1; }
done
(cd web && npx --no-install esbuild bench/peers.js bench/peers-worker.js --bundle --format=esm --outdir=bench/dist --log-level=warning)
node web/page/build.mjs > /dev/null
dest=.carry/webbin
rm -rf "$dest"
mkdir -p "$dest/benchdist" "$dest/pagedist"
cp web/package/surfgrad.wasm web/package/webgpu_layout.js "$dest/"
# The package's JavaScript as it is now, beside the wasm built from the same tree: the device runs
# this pair even if the checkout's package/ moves on before the call (others edit it meanwhile).
mkdir -p "$dest/package"
cp web/package/*.js "$dest/package/"
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- web/package src web/src || echo '+changes') packed $(date -u '+%F %H:%M UTC')" > "$dest/STAMP"
cp web/bench/dist/*.js "$dest/benchdist/"
cp web/page/dist/*.js web/page/dist/*.wasm "$dest/pagedist/"
echo "packed $(du -sh "$dest" | cut -f1) in $dest (wasm of $(date -r web/package/surfgrad.wasm -u '+%F %H:%M UTC')); carry: $dest"
