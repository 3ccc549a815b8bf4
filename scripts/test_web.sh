#!/usr/bin/env bash
# The browser tests (called by scripts/run_tests.sh after the native suite, which built
# build/surfgrad): builds the WebAssembly target and the map page, then, in headless Chromium on
# its WebGPU adapter (SwiftShader on a machine without a GPU), after the type check of the
# package's .d.ts:
#  1. web/tests/browser_suite.mjs: ops against float64, gradients against finite differences,
#     the moons MLP trained from JavaScript, bad input refused with the right error, and t-SNE
#     and UMAP maps of MNIST 10k whose quality measures must be within 0.01 of native maps';
#     web/tests/prewarm_check.mjs (~13 s): a map with its kernels compiled ahead is the same
#     bytes as without, creates no pipeline synchronously, and a rejected kernel is named;
#  2. web/tests/page_screenshot.mjs: the map page maps MNIST (2,000 points) and its screenshot
#     must show a drawn map in the labels' colours;
#  3. web/tests/page_parquet.mjs (~35 s): the page maps a Parquet file that pyarrow wrote (from
#     .venv-python, made by the Python stage before this one), saves the map as Parquet and .npy,
#     pyarrow reads them back; bad tables (missing column, ragged list, NaN, truncated, 404, …) are
#     refused with their messages while the page keeps working; web/tests/page_tables.mjs (~6 s,
#     Node): the page's table reader against pyarrow's values for every point type, bit for bit.
#     web/tests/page_no_webgl.mjs (~3 s): in a browser without WebGL the page stops with its error
#     ("The plot: … WebGL") instead of hanging at 'starting'.
#  4. web/tests/page_tiles.mjs (~20 s: the map ~10 s, the page ~5 s): build/surfgrad writes a UMAP of
#     20,000 points as tiles; the page opens them, draws the root, loads deeper tiles when zoomed in,
#     and refuses a manifest of another format by name (skipped where surfgrad lacks --tiles).
# Outputs (reports, maps, the screenshot) go to build-web/test-output/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build_web.sh
node_bin=$(bash scripts/setup_web.sh 2>/dev/null | tail -n 1)
out=build-web/test-output
mkdir -p "$out"
echo "[web] the package's TypeScript declarations (tsc --strict on web/tests/types_check.ts)"
"$node_bin" web/node_modules/typescript/bin/tsc -p web/tests/tsconfig.json
echo "[web] the bridge's Dawn declarations against src/gpu/dawn_abi.hpp (< 1 s)"
"$node_bin" web/tests/bridge_dawn_abi.mjs
echo "[web] the static file server: escapes and malformed paths refused, still serving (< 1 s)"
"$node_bin" web/tests/serve_check.mjs
echo "[web] browser suite"
"$node_bin" web/tests/browser_suite.mjs --surfgrad build/surfgrad --out "$out"
echo "[web] pipelines compiled ahead and off the GPU main thread (~13 s: two pages, prewarm on and off)"
"$node_bin" web/tests/prewarm_check.mjs
echo "[web] map page screenshot"
"$node_bin" web/tests/page_screenshot.mjs --out "$out"
echo "[web] map page: Parquet in and out"
"$node_bin" web/tests/page_tables.mjs --out "$out"
"$node_bin" web/tests/page_parquet.mjs --out "$out"
"$node_bin" web/tests/page_no_webgl.mjs  # (~3 s: without WebGL the page says so and stops)
echo "[web] map page: a tiled map (surfgrad map --tiles), opened and zoomed"
"$node_bin" web/tests/page_tiles.mjs build/surfgrad --out "$out"
