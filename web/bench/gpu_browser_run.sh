#!/usr/bin/env bash
# The browser benchmarks on the GPU machine (no node, no browser there): unpacks the Chromium
# bundle carried in parts (.carry/chrome1, .carry/chrome2: scripts/make_chromium_bundle.sh),
# finds the Chromium flags under which WebGPU gets the NVIDIA Vulkan adapter (not SwiftShader),
# then runs a page through chromium_gpu.py.
#   bash web/bench/gpu_browser_run.sh OUT [TOOLS] [SIZES]
# TOOLS (default surfgrad-umap,surfgrad-tsne,umap-js): web/bench/autorun.html (surfgrad and umap-js
#   on MNIST, SIZES default 1797,10000). Or one of:
# scale: issue 32's case (web/bench/scale.html): builtinPoints(SIZES, default 1000000) mapped by
#   t-SNE and UMAP (METHODS) in a worker, each twice (cold, warm), beside `$SURFGRAD map --points N`
#   timed in the same call; rows in OUT/run/scale.json, with the WebGPU calls per layout iteration.
# scale-stream: the same with points made in JS in the worker and streamed in (the upload).
# scale-robustness: scale (SIZES default 10000, METHODS default tsne) twice in one call: as chosen
#   (OUT/run) and with --enable-dawn-features=disable_robustness added (OUT/run-norobust).
# parquet: a SIZES-row (default 1000000) Parquet file of 64-D float32 points (fixed-size lists,
#   65,536-row groups, `id` and `label` int32) made here by python3 + numpy + pyarrow in /tmp, served
#   by URL to the map page itself (web/page/, through web/bench/page_run.html), loaded once and mapped
#   by t-SNE and UMAP twice each, drawn; `$SURFGRAD map FILE` timed in the same call. Rows (n, method,
#   seconds, native_seconds, max_frame_gap_ms, tab_peak_mb, load_seconds, …) in OUT/run/scale.json.
# tiles: SIZES (default 10000000) built-in points mapped natively (TILES_METHOD, default umap) with
#   `--tiles DIR` (timed: native_seconds), then page/?tiles= opened: first_view_s, pan_fps and zoom_fps
#   (the plot's redraws a second while the camera moves every frame), rows in OUT/run/scale.json.
# Environment:
#   EXTRA_FLAGS  more Chromium flags for every mode (recorded in each row as `flags`)
#   SURFGRAD     the native CLI (default: .carry/arrow's, unpacked to /tmp/arrow-io-work, where
#                carried; else build/surfgrad). parquet and tiles need one built with Arrow.
#   BROWSER      a browser binary to use instead of the bundle, with no adapter probe: for dry runs
#                without a GPU (BROWSER=/usr/bin/chromium: WebGPU on SwiftShader).
#   METHODS, REPEATS  the maps and runs of each (scale*, parquet); TILES_METHOD, TILE_ROWS, PAN_SECONDS (tiles).
# Carried files put in place when present: .carry/webbin (scripts: web/bench/pack_web_carry.sh) →
# web/package/surfgrad.wasm + webgpu_layout.js, web/bench/dist, web/page/dist; .gl (the Vulkan
# loader debs, the device README) unpacked for the native CLI on the GPU machine.
#
# Issue 32's remaining GPU runs, three device calls back to back (the machine must stay warm: the
# first call's carried files and /tmp stay there for the next; 64 MiB a call with the tree):
#   here:   bash web/bench/pack_web_carry.sh   (after the wasm build; and scripts/pack_arrow_carry.sh
#           BUILD for a current native CLI with Arrow; the Vulkan loader debs in .gl, the device README)
#   call 1: carry .carry/chrome1 .carry/webbin .gl   (≈ 57 MiB)   command: ls .carry/chrome1 .carry/webbin
#   call 2: carry .carry/chrome2 .carry/arrow          (≈ 53 MiB; ~5 min)   command:
#     bash web/bench/gpu_browser_run.sh /tmp/g/rob scale-robustness 10000; bash web/bench/gpu_browser_run.sh
#     /tmp/g/pq parquet 1000000; cp /tmp/g/rob/run/scale.json $OUT/robust.json; cp
#     /tmp/g/rob/run-norobust/scale.json $OUT/norobust.json; cp /tmp/g/pq/run/scale.json $OUT/parquet.json
#   call 3: no carry (~2 min): bash web/bench/gpu_browser_run.sh /tmp/g/tl tiles 10000000;
#     cp /tmp/g/tl/run/scale.json $OUT/tiles.json; cp /tmp/g/tl/native-tiles.txt $OUT/
# (Only a few files come back from $OUT, so the logs stay in /tmp/g; each mode prints its rows.)
set -uo pipefail
out=${1:?usage: gpu_browser_run.sh OUT [TOOLS] [SIZES]}
tools=${2:-surfgrad-umap,surfgrad-tsne,umap-js}
sizes=${3:-}
bundle=/tmp/chromium-bundle
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

if [ -d .carry/webbin ]; then
  cp .carry/webbin/surfgrad.wasm .carry/webbin/webgpu_layout.js web/package/ 2>/dev/null
  [ -d .carry/webbin/benchdist ] && mkdir -p web/bench/dist && cp .carry/webbin/benchdist/* web/bench/dist/
  [ -d .carry/webbin/pagedist ] && mkdir -p web/page/dist && cp .carry/webbin/pagedist/* web/page/dist/
fi
for f in web/package/surfgrad.wasm web/bench/dist/peers.js web/page/dist/main.js web/page/dist/tables.js; do
  # (the adapter probe loads the peers page's bundle; the map page needs its own dist/)
  [ -f "$f" ] || { echo "$f is missing: make .carry/webbin here with bash web/bench/pack_web_carry.sh and carry it" >&2; exit 2; }
done
if [ -d /usr/local/nvidia ] && ls .gl/*.deb >/dev/null 2>&1; then  # (only on the GPU machine: it writes to /)
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd; fi

# The native CLI: the Arrow build where carried (parquet input, --tiles), else build/surfgrad.
work=/tmp/arrow-io-work
if [ -z "${SURFGRAD:-}" ] && [ -f .carry/arrow/surfgrad-arrow.tar.xz ]; then
  if [ ! -x "$work/bin/surfgrad" ] || [ .carry/arrow/surfgrad-arrow.tar.xz -nt "$work/bin/surfgrad" ]; then
    mkdir -p "$work" && tar -xJf .carry/arrow/surfgrad-arrow.tar.xz -C "$work"
  fi
  export LD_LIBRARY_PATH="$work/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  SURFGRAD=$work/bin/surfgrad
fi
native=${SURFGRAD:-build/surfgrad}
echo "native: $native"

browser_args=(--chromium "$bundle")
if [ -n "${BROWSER:-}" ]; then
  browser_args=(--browser "$BROWSER")
  chosen="--enable-unsafe-webgpu"
else
  mkdir -p "$bundle"
  if [ ! -x "$bundle/chromium/chromium-headless-shell" ]; then
    cat .carry/chrome1/part.* .carry/chrome2/part.* | xz -d | tar -C "$bundle" -xf - || exit 1
  fi
  base="--enable-unsafe-webgpu --ignore-gpu-blocklist --disable-gpu-sandbox"
  variants=("$base --enable-features=Vulkan,VulkanFromANGLE --use-angle=vulkan --enable-gpu"  # (the one that worked)
            "$base --enable-features=Vulkan"
            "$base --enable-features=Vulkan --use-vulkan=native --use-angle=vulkan"
            "$base --use-gl=angle --use-angle=swiftshader-webgl")
  chosen=""
  probes=/tmp/gpu-browser-probes  # (not in OUT: the device returns only a few files)
  mkdir -p "$probes"
  for i in "${!variants[@]}"; do
    probe="$probes/probe$i"
    rm -rf "$probe"
    python3 "$here/chromium_gpu.py" --chromium "$bundle" --data .carry/data --out "$probe" --tools none --n 0 \
      --flags="${variants[$i]}" --timeout 60 > "$probe.log" 2>&1
    adapter=$(head -c 400 "$probe/results.jsonl" 2>/dev/null)
    echo "variant $i (${variants[$i]}): $adapter" | tee -a "$out/probe.txt"
    if [ -n "$adapter" ] && ! grep -q swiftshader <<<"$adapter"; then chosen=${variants[$i]}; break; fi
  done
  if [ -z "$chosen" ]; then
    echo "no variant gave a GPU adapter; the last browser log:"; tail -40 "$probe/browser.log"
    chosen=${variants[0]}
  fi
fi
echo "running with: $chosen ${EXTRA_FLAGS:-}"
drive() { python3 "$here/chromium_gpu.py" "${browser_args[@]}" --flags="$chosen" --extra-flags="${EXTRA_FLAGS:-}" "$@"; }

case $tools in
  scale|scale-stream|scale-robustness)
    source=builtin
    [ "$tools" = scale-stream ] && source=stream
    methods=${METHODS:-tsne,umap}
    if [ "$tools" = scale-robustness ]; then
      methods=${METHODS:-tsne}
      sizes=${sizes:-10000}
    fi
    scale() { drive --page scale --source $source --n "${sizes:-1000000}" --methods "$methods" --repeats "${REPEATS:-2}" \
                --surfgrad "$native" --timeout 500 "$@"; }
    if [ "$tools" = scale-robustness ]; then
      scale --out "$out/run"
      EXTRA_FLAGS="${EXTRA_FLAGS:-} --enable-dawn-features=disable_robustness" scale --out "$out/run-norobust"
    else
      scale --out "$out/run"
    fi ;;
  parquet)
    n=${sizes:-1000000}
    dir=/tmp/page-parquet
    file=p${n}x64.parquet
    mkdir -p "$dir"
    if [ ! -f "$dir/$file" ]; then
      # (numpy and pyarrow: the GPU machine's python3 has both, as bench/arrow_io_gpu.sh uses them)
      ${PYTHON:-python3} - "$dir/$file" "$n" <<'PY' || { echo "could not write the Parquet file (python3 with numpy and pyarrow)" >&2; exit 1; }
import sys, time, numpy as np, pyarrow as pa, pyarrow.parquet as pq
path, n, d = sys.argv[1], int(sys.argv[2]), 64
t0 = time.time()
rng = np.random.default_rng(0)
labels = (np.arange(n) % 10).astype(np.int32)
x = rng.standard_normal((n, d), dtype=np.float32)
x += 4 * rng.standard_normal((10, d), dtype=np.float32)[labels]
t = pa.table({"id": np.arange(n, dtype=np.int64),
              "embedding": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), d), "label": labels})
pq.write_table(t, path + ".part", row_group_size=65536)
import os; os.replace(path + ".part", path)
print(f"data: {n} x {d} Parquet ({os.path.getsize(path) / 1e6:.0f} MB) in {time.time() - t0:.1f} s")
PY
    fi
    drive --page map --serve "$dir" --data-url "/files/$file" --native-input "$dir/$file" --n "$n" \
      --methods "${METHODS:-tsne,umap}" --repeats "${REPEATS:-2}" --surfgrad "$native" --out "$out/run" --timeout 540 ;;
  tiles)
    n=${sizes:-10000000}
    dir=/tmp/page-tiles
    rm -rf "$dir" /tmp/page-tiles-map.*
    t0=$(date +%s.%N)
    "$native" map --points "$n" --method "${TILES_METHOD:-umap}" -o /tmp/page-tiles-map.parquet --tiles "$dir" \
      --tile-rows "${TILE_ROWS:-65536}" \
      > "$out/native-tiles.txt" 2>&1 || { tail -5 "$out/native-tiles.txt"; exit 1; }
    seconds=$(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 2))")
    echo "native: map --points $n --tiles in $seconds s ($(ls "$dir" | wc -l) entries in $dir)"
    drive --page tiles --serve "$dir" --native-seconds "$seconds" --pan-seconds "${PAN_SECONDS:-3}" --out "$out/run" \
      --timeout 300 ;;
  *)
    drive --data .carry/data --out "$out/run" --tools "$tools" --n "${sizes:-1797,10000}" --timeout 480 ;;
esac
