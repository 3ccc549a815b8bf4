#!/usr/bin/env bash
# The browser benchmark on the GPU machine (no node, no browser there): unpacks the Chromium
# bundle carried in parts (.carry/chrome1, .carry/chrome2: scripts/make_chromium_bundle.sh),
# finds the Chromium flags under which WebGPU gets the NVIDIA Vulkan adapter (not SwiftShader),
# then runs web/bench/autorun.html (surfgrad and umap-js on MNIST) through chromium_gpu.py.
#   bash web/bench/gpu_browser_run.sh OUT [TOOLS] [SIZES]
# TOOLS = scale: issue 32's case instead (web/bench/scale.html): builtinPoints(SIZES, default
# 1000000) mapped by t-SNE and UMAP in a worker, each twice (cold, warm), beside `build/surfgrad
# map --points N` timed in the same call (SURFGRAD=path to change it); rows in OUT/run/scale.json.
# TOOLS = scale-stream: the same with points made in JS in the worker and streamed in (the upload).
set -uo pipefail
out=${1:?usage: gpu_browser_run.sh OUT [TOOLS] [SIZES]}
tools=${2:-surfgrad-umap,surfgrad-tsne,umap-js}
sizes=${3:-1797,10000}
bundle=/tmp/chromium-bundle
# The adapter probe loads the peers page's bundle (web/bench/dist, built here by
# web/bench/browser_peers.mjs, ignored by git): without it every probe waits out its timeout.
if [ ! -f web/bench/dist/peers.js ]; then
  echo "web/bench/dist/peers.js is missing: build it where node is (node web/bench/browser_peers.mjs, or esbuild" \
    "web/bench/peers.js web/bench/peers-worker.js --bundle --format=esm --outdir=web/bench/dist) and carry it" >&2
  exit 2
fi
mkdir -p "$out" "$bundle"
if [ ! -x "$bundle/chromium/chromium-headless-shell" ]; then
  cat .carry/chrome1/part.* .carry/chrome2/part.* | xz -d | tar -C "$bundle" -xf - || exit 1
fi
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export VK_ICD_FILENAMES=$VK_DRIVER_FILES
fi
base="--enable-unsafe-webgpu --ignore-gpu-blocklist --disable-gpu-sandbox"
variants=("$base --enable-features=Vulkan"
          "$base --enable-features=Vulkan --use-vulkan=native --use-angle=vulkan"
          "$base --enable-features=Vulkan,VulkanFromANGLE --use-angle=vulkan --enable-gpu"
          "$base --use-gl=angle --use-angle=swiftshader-webgl")
chosen=""
for i in "${!variants[@]}"; do
  probe="$out/probe$i"
  python3 web/bench/chromium_gpu.py --chromium "$bundle" --data .carry/data --out "$probe" --tools none --n 0 \
    --flags="${variants[$i]}" --timeout 60 > "$probe.log" 2>&1
  adapter=$(head -c 400 "$probe/results.jsonl" 2>/dev/null)
  echo "variant $i (${variants[$i]}): $adapter"
  if [ -n "$adapter" ] && ! grep -q swiftshader <<<"$adapter"; then chosen=${variants[$i]}; break; fi
done
if [ -z "$chosen" ]; then
  echo "no variant gave a GPU adapter; the last browser log:"; tail -40 "$probe/browser.log"
  chosen=${variants[0]}
fi
echo "running with: $chosen"
if [ "$tools" = scale ] || [ "$tools" = scale-stream ]; then
  [ "$sizes" = 1797,10000 ] && sizes=1000000
  source=builtin
  [ "$tools" = scale-stream ] && source=stream
  exec python3 web/bench/chromium_gpu.py --chromium "$bundle" --page scale --source $source --out "$out/run" \
    --n "$sizes" --methods tsne,umap --repeats 2 --surfgrad "${SURFGRAD:-build/surfgrad}" --flags="$chosen" --timeout 400
fi
python3 web/bench/chromium_gpu.py --chromium "$bundle" --data .carry/data --out "$out/run" --tools "$tools" \
  --n "$sizes" --flags="$chosen" --timeout 480
