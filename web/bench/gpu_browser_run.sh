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
# map-builtin: the map page on the built-in clusters (SIZES rows, default 1000000, × 768, made in the
#   page's worker), t-SNE and UMAP twice each, drawn; `$SURFGRAD map --points N` in the same call.
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
#   TRACE_SECONDS, TRACE_CATEGORIES, TRACE_MS  a trace of the browser's first seconds and its long tasks (below)
#   SURFGRAD     the native CLI (default: .carry/arrow's, unpacked to /tmp/arrow-io-work, where
#                carried; else build/surfgrad). parquet and tiles need one built with Arrow.
#   BROWSER      a browser binary to use instead of the bundle, with no adapter probe: for dry runs
#                without a GPU (BROWSER=/usr/bin/chromium: WebGPU on SwiftShader).
#   METHODS, REPEATS  the maps and runs of each (scale*, parquet); TILES_METHOD, TILE_ROWS, PAN_SECONDS (tiles).
#   PAGE_TIMEOUT, NATIVE_BUDGET, DATA_TIMEOUT  a mode's budgets in seconds (below); ALL_SECONDS `all`'s.
#   STOP=load|run-start, PAGE_ARGS (parquet): end after the load / once the first map has read every
#                row (then cancelled); the map page's URL parameters (iterations=50&epochs=20).
#   ROBUST_N, PARQUET_N, TILES_N, SECOND_N  `all`'s sizes (dry runs). Dry run of `all` here (SwiftShader,
#   ~5 min, the tiles map on lavapipe): BROWSER=/usr/bin/chromium SURFGRAD=build-parquet/surfgrad
#   ROBUST_N=300 TILES_N=2000 SECOND_N=300 STOP=run-start bash web/bench/gpu_browser_run.sh /tmp/x all
# Carried files put in place when present: .carry/webbin (scripts: web/bench/pack_web_carry.sh) →
# web/package/surfgrad.wasm + webgpu_layout.js, web/bench/dist, web/page/dist; .gl (the Vulkan
# loader debs, the device README) unpacked for the native CLI on the GPU machine.
#
# matmul: issue 34 in the browser: sg.benchMatmul (web/bench/matmul.html) on SIZES (default
#   4096x4096x4096,8192x8192x8192) and VARIANTS (default f16-tuned,f16-tuned-tiled,f16-sgmat-direct),
#   then `$SURFGRAD bench matmul` natively (MATMUL_NATIVE, default wgpu) with cuBLAS in the same call;
#   rows in OUT/run/results.jsonl (kind matmul) and OUT/native-IMPL.json.
# second-load: issue 35's second page load, two ways, each VARIANT of the page (below) on its own
#   fresh profiles and empty NVIDIA/Mesa shader caches. t-SNE (METHODS, default tsne) of
#   builtinPoints(SIZES, default 10000) in web/bench/scale.html:
#   reload (the browser still running: a user's reload or second visit): a browser runs it once =
#     cold, then the page loads itself again (location.replace to its own address with pass=2: a
#     new document, worker, wasm instance and device, the browser's GPU process and caches kept)
#     and runs it twice = the second load, then a warm run in the same page.
#   restart: a browser runs it once = cold; it is left 3 s to write Dawn's cache, closed; a NEW
#     browser process on the same profile runs it twice = the second load, then a warm run.
#   Every browser serves the page on one port (SECOND_LOAD_PORT, default a free one): the origin
#   keys the HTTP cache and the wasm's code cache. One row per variant in OUT/run/scale.json
#   (web/bench/second_load_rows.py): variant, n, method; the restart's cold_seconds,
#   second_load_seconds, warm_seconds, second_over_warm, dawn_cache_kb, wasm_code_cache_kb and its
#   split (second_load_outside_map_seconds, second_load_init_ms (init()'s parts),
#   second_load_worker_loaded_ms, second_load_unphased_seconds (the worker's map outside its
#   phases), phases_over_warm_seconds, second_load_pipelines with the names built at first use,
#   second_load_webgpu_calls / warm_webgpu_calls, errors); the reload's the same as reload_*
#   (reload_cold_seconds, reload_seconds, reload_warm_seconds, reload_over_warm, reload_init_ms,
#   reload_worker_loaded_ms, reload_phases_over_warm_seconds, ..., reload_errors). Each number
#   comes from its own load's browser (checked: pass and page flags). Printed as `second-load:`
#   lines (both loads), `second-load split:` lines (one a load) and a `second-load table:`; OUT
#   also gets summary.txt and second-load-logs.tgz (every load's rows and logs; the work is in
#   /tmp/second-load-work).
#   SECOND_LOAD_VARIANTS (default "plain warmgpu"; `all`: "plain"): page flags joined by +, plain
#     none: warmgpu (the page asks for an adapter before it starts its worker: the GPU process sets
#     WebGPU up while the worker's modules load), precompile (the page compiles the wasm with
#     compileStreaming at its first script and posts the Module to the worker: init({ wasmModule })).
#   SECOND_LOAD_MODES (default "reload restart"); SECOND_LOAD_PAGE_ARGS: more of the page's
#     parameters for every load (e.g. reload_after_ms=1000: the page waits before reloading itself).
# all: scale-robustness 10000, parquet 1000000 and tiles 10000000 (then second-load 10000 if time
#   is left), each under its own `timeout` inside one device call of at most ALL_SECONDS (default
#   550): OUT gets only browser-all.tgz (every stage's rows and logs), summary.txt and the rows
#   (robust.json, norobust.json, parquet.json, tiles.json, second-load.json); the work is in
#   /tmp/gpu-browser-all. A stage that runs past its budget is killed (browser and all), its
#   progress log's tail printed, and the next stage starts.
#
# Budgets (each stage's `timeout`, from the times expected on the H200, about ×2.5; `all` shrinks
# a stage's budget to what its deadline leaves after reserving the later stages' minimums):
#   scale-robustness 10000   2 × 50 s  (each: page ≤ 30 s: start ~3 s + cold 3.8 s + warm 1.5 s; native ≤ 15 s)
#   parquet 1000000          230 s     (data ≤ 45 s (~8 s); page ≤ 130 s: load + t-SNE and UMAP twice, ~60 s; native ≤ 50 s, ~25 s)
#   tiles 10000000           190 s     (native map + tiles ≤ 130 s, ~65 s; page ≤ 55 s: first view + 2 × PAN_SECONDS)
#   second-load 10000        90 s      (in `all`: one variant, plain; a variant = reload (one browser, 3 runs) +
#                                       restart (two browsers, 3 runs), ~10 s a browser on the H200 before: ~30 s.
#                                       Alone: each load ≤ PAGE_TIMEOUT + 15 = 50 s, both variants ~60 s expected;
#                                       SwiftShader here, 300 points: 13 s reload + 16 s restart a variant)
# The progress of every page run streams to its OUT/…/progress.log (chromium_gpu.py).
#
# Issue 32's remaining GPU runs, two device calls back to back (the machine must stay warm: the
# first call's carried files stay there for the second; 64 MiB a call with the tree):
#   here:   flock /tmp/web-build.lock bash scripts/build_web.sh; bash web/bench/pack_web_carry.sh;
#           scripts/pack_arrow_carry.sh build-dawn (a current native CLI with Arrow); .gl (the
#           Vulkan loader debs, the device README); .carry/fonts (cd .carry/fonts && apt-get download
#           fonts-dejavu-core: the GPU machine has no fonts, and the headless shell aborts without)
#   call 1: carry .carry/chrome1 .carry/webbin .gl   (56 MB + the tree's 5 MB)   command:
#     ls .carry/chrome1 .carry/webbin .gl; cat .carry/webbin/STAMP
#   call 2: carry .carry/chrome2 .carry/arrow .carry/fonts   (52 MB + 5 MB; ≤ 9.5 min)   command:
#     bash web/bench/gpu_browser_run.sh $OUT all
#   (.carry/webbin holds the package's JavaScript with its wasm: the pair the device runs, whatever
#   the checkout's web/package/ is by then; STAMP says from which commit and when)
set -uo pipefail
out=${1:?usage: gpu_browser_run.sh OUT [TOOLS] [SIZES]}
tools=${2:-surfgrad-umap,surfgrad-tsne,umap-js}
sizes=${3:-}
bundle=/tmp/chromium-bundle
here=$(cd "$(dirname "$0")" && pwd)
script_start=$(date +%s)
if [ "$tools" = all ]; then  # (the device returns 8 files: the work stays in /tmp, OUT gets a few)
  results=$out
  out=/tmp/gpu-browser-all
  rm -rf "$out"
  mkdir -p "$results"
fi
mkdir -p "$out"

# (Only on the GPU machine: a dry run here (BROWSER set) keeps this checkout's package and bundles;
# copying the carry over them once overwrote uncommitted work in web/package/*.js.)
if [ -d .carry/webbin ] && [ -z "${BROWSER:-}" ]; then
  [ -d .carry/webbin/package ] && cp .carry/webbin/package/*.js web/package/  # (the JS the wasm was built with)
  cp .carry/webbin/surfgrad.wasm .carry/webbin/webgpu_layout.js web/package/ 2>/dev/null
  [ -f .carry/webbin/STAMP ] && echo "web build: $(cat .carry/webbin/STAMP)"
  [ -d .carry/webbin/benchdist ] && mkdir -p web/bench/dist && cp .carry/webbin/benchdist/* web/bench/dist/
  [ -d .carry/webbin/pagedist ] && mkdir -p web/page/dist && cp .carry/webbin/pagedist/* web/page/dist/
fi
for f in web/package/surfgrad.wasm web/bench/dist/peers.js web/page/dist/main.js web/page/dist/tables.js; do
  # (the adapter probe loads the peers page's bundle; the map page needs its own dist/)
  [ -f "$f" ] || { echo "$f is missing: make .carry/webbin here with bash web/bench/pack_web_carry.sh and carry it" >&2; exit 2; }
done
if [ -d /usr/local/nvidia ] && ls .gl/*.deb >/dev/null 2>&1 && [ ! -f /tmp/.gl-unpacked ]; then  # (only on the GPU machine: it writes to /)
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  touch /tmp/.gl-unpacked
fi
# Fonts: the GPU machine has no fontconfig configuration ("Cannot load default config file"), and
# the headless shell aborted there (FATAL SkFontMgr_FontConfigInterface.cpp:163 "Not implemented")
# 0.2 s into the map page's load: the parquet mode's "hang" (the browser dead, the driver waiting).
# .carry/fonts holds Debian's fonts-dejavu-core .deb (apt-get download); unpacked to /tmp with a
# fonts.conf of its own, given to the browser by FONTCONFIG_FILE (where the machine has no
# /etc/fonts/fonts.conf, and always on the GPU machine). FORCE_FONTS=1 uses it anywhere.
if ls .carry/fonts/*.deb >/dev/null 2>&1 && { [ -n "${FORCE_FONTS:-}" ] || [ ! -f /etc/fonts/fonts.conf ] || [ -d /usr/local/nvidia ]; }; then
  fonts=/tmp/gpu-browser-fonts
  if [ ! -f "$fonts/fonts.conf" ]; then
    mkdir -p "$fonts/cache" "$fonts/root"
    for f in .carry/fonts/*.deb; do dpkg -x "$f" "$fonts/root"; done
    cat > "$fonts/fonts.conf" <<EOF
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>$fonts/root/usr/share/fonts</dir>
  <cachedir>$fonts/cache</cachedir>
  <alias><family>sans-serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>system-ui</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>serif</family><prefer><family>DejaVu Serif</family></prefer></alias>
  <alias><family>monospace</family><prefer><family>DejaVu Sans Mono</family></prefer></alias>
</fontconfig>
EOF
  fi
  export FONTCONFIG_FILE=$fonts/fonts.conf
  echo "fonts: $FONTCONFIG_FILE ($(find "$fonts/root" -name '*.ttf' | wc -l) fonts from .carry/fonts)"
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
if [ -n "${BROWSER:-}" ] && [ -n "${CHOSEN_FLAGS:-}" ]; then
  browser_args=(--browser "$BROWSER")
  chosen=$CHOSEN_FLAGS
elif [ -n "${CHOSEN_FLAGS:-}" ]; then  # (`all`'s stages: probed once)
  chosen=$CHOSEN_FLAGS
elif [ -n "${BROWSER:-}" ]; then
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
    timeout -k 5 45 python3 "$here/chromium_gpu.py" --chromium "$bundle" --data .carry/data --out "$probe" --tools none \
      --n 0 --flags="${variants[$i]}" --timeout 30 > "$probe.log" 2>&1
    adapter=$(python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print(json.dumps(r.get("adapter")))' \
                "$probe/results.jsonl" 2>/dev/null)
    webgl=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline()).get("webgl"))' "$probe/results.jsonl" 2>/dev/null)
    echo "variant $i (${variants[$i]}): WebGPU $adapter; WebGL $webgl" | tee -a "$out/probe.txt"
    if [ -n "$adapter" ] && [ "$adapter" != null ] && ! grep -qi swiftshader <<<"$adapter" && ! grep -q '"error"' <<<"$adapter"; then
      chosen=${variants[$i]}; export PROBE_WEBGL=$webgl; break
    fi
  done
  if [ -z "$chosen" ]; then
    echo "no variant gave a GPU adapter; the last browser log:"; tail -40 "$probe/browser.log"
    chosen=${variants[0]}
  fi
fi
export CHOSEN_FLAGS=$chosen
# TRACE_SECONDS=S: the browser records a trace of its first S seconds (TRACE_CATEGORIES) to
# OUT/trace.json, and web/bench/trace_long_tasks.py lists its long tasks (OUT/long_tasks.txt):
# what ran on the GPU process's main thread when the page's frames stopped. One browser a run:
# a mode that starts several writes the last one's.
if [ -n "${TRACE_SECONDS:-}" ]; then
  mkdir -p "$out"
  trace_file=$out/trace.json
  EXTRA_FLAGS="${EXTRA_FLAGS:-} --trace-startup=${TRACE_CATEGORIES:-toplevel,gpu,gpu.dawn,disabled-by-default-gpu.dawn,viz,gpu.angle} --trace-startup-format=json --trace-startup-file=$trace_file --trace-startup-duration=$TRACE_SECONDS"
  trace_report() {
    [ -s "$trace_file" ] || { echo "no trace written to $trace_file (did the browser run for TRACE_SECONDS=$TRACE_SECONDS s?)"; return; }
    python3 "$here/trace_long_tasks.py" "$trace_file" --ms "${TRACE_MS:-34}" --out "$out/long_tasks.json" > "$out/long_tasks.txt" 2>&1
    head -c 20000 "$out/long_tasks.txt"
    gzip -f "$trace_file"
  }
  trap trace_report EXIT
fi
echo "running with: $chosen ${EXTRA_FLAGS:-}"
drive() { python3 "$here/chromium_gpu.py" "${browser_args[@]}" --flags="$chosen" --extra-flags="${EXTRA_FLAGS:-}" "$@"; }

# Runs "$@" under `timeout` for $1 seconds (its process group killed 10 s after); says so when it
# ran out and prints the tail of every progress log under $2 (the stage's folder).
budgeted() {
  local budget=$1 dir=$2 rc
  shift 2
  # (`drive` is a function, which `timeout` cannot run: spelled out here, EXTRA_FLAGS as now)
  [ "$1" = drive ] && { shift; set -- python3 "$here/chromium_gpu.py" "${browser_args[@]}" --flags="$chosen" --extra-flags="${EXTRA_FLAGS:-}" "$@"; }
  timeout -k 10 "$budget" "$@"
  rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    echo "TIMED OUT: '$*' ran past its budget of $budget s; the last progress:"
    find "$dir" -name progress.log 2>/dev/null | while read -r f; do echo "--- $f"; tail -25 "$f" | cut -c1-400; done
    # (a browser whose driver was killed outright: its process group, by the pid the driver wrote)
    find "$dir" -name browser.pid 2>/dev/null | while read -r f; do kill -KILL -- "-$(cat "$f")" 2>/dev/null; rm -f "$f"; done
  fi
  return $rc
}

# The map page draws with WebGL and cannot start without it: where the probe found none under the
# chosen flags, WebGL is let fall back to SwiftShader (recorded in the rows' flags and webgl).
webgl_fallback() {
  if [ "${PROBE_WEBGL:-}" = None ]; then
    echo "the probe found no WebGL under these flags: adding --enable-unsafe-swiftshader (WebGL on the CPU) for the map page"
    EXTRA_FLAGS="${EXTRA_FLAGS:-} --enable-unsafe-swiftshader"
  fi
}

case $tools in
  scale|scale-stream|scale-robustness)
    source=builtin
    [ "$tools" = scale-stream ] && source=stream
    methods=${METHODS:-tsne,umap}
    page_s=${PAGE_TIMEOUT:-500} native_s=${NATIVE_BUDGET:-240}
    if [ "$tools" = scale-robustness ]; then
      methods=${METHODS:-tsne}
      sizes=${sizes:-10000}
      page_s=${PAGE_TIMEOUT:-30} native_s=${NATIVE_BUDGET:-15}
    fi
    scale() { budgeted $((page_s + native_s + 5)) "$out" drive --page scale --source $source --n "${sizes:-1000000}" \
                --methods "$methods" --repeats "${REPEATS:-2}" --surfgrad "$native" --timeout "$page_s" \
                --budget-native "$native_s" "$@"; }
    if [ "$tools" = scale-robustness ]; then
      scale --out "$out/run"
      EXTRA_FLAGS="${EXTRA_FLAGS:-} --enable-dawn-features=disable_robustness" scale --out "$out/run-norobust"
    else
      scale --out "$out/run"
    fi ;;
  parquet)
    webgl_fallback
    n=${sizes:-1000000}
    dir=/tmp/page-parquet
    file=p${n}x64.parquet
    mkdir -p "$dir"
    if [ ! -f "$dir/$file" ]; then
      # (numpy and pyarrow: the GPU machine's python3 has both, as bench/arrow_io_gpu.sh uses them)
      budgeted "${DATA_TIMEOUT:-45}" "$out" ${PYTHON:-python3} - "$dir/$file" "$n" <<'PY' || { echo "could not write the Parquet file (python3 with numpy and pyarrow)" >&2; exit 1; }
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
    page_s=${PAGE_TIMEOUT:-130} native_s=${NATIVE_BUDGET:-50}
    # STOP=load|run-start (dry runs: SwiftShader cannot map 1M points), PAGE_ARGS (map options for the page)
    budgeted $((page_s + native_s + 5)) "$out" drive --page map --serve "$dir" --data-url "/files/$file" \
      --native-input "$dir/$file" --n "$n" --methods "${METHODS:-tsne,umap}" --repeats "${REPEATS:-2}" \
      --surfgrad "$native" --out "$out/run" --timeout "$page_s" --budget-native "$native_s" --native-timeout 40 \
      --stop "${STOP:-}" --page-args "${PAGE_ARGS:-}" ;;
  map-builtin)
    # The map page on `surfgrad map`'s built-in clusters (N × 768, made on the GPU in the page's
    # worker), drawn as a user sees them; native `surfgrad map --points N` in the same call.
    webgl_fallback
    n=${sizes:-1000000}
    page_s=${PAGE_TIMEOUT:-130} native_s=${NATIVE_BUDGET:-60}
    budgeted $((page_s + native_s + 5)) "$out" drive --page map --data-url builtin --page-args "n=$n${PAGE_ARGS:+&$PAGE_ARGS}" \
      --n "$n" --methods "${METHODS:-tsne,umap}" --repeats "${REPEATS:-2}" \
      --surfgrad "$native" --out "$out/run" --timeout "$page_s" --budget-native "$native_s" --native-timeout 40 \
      --stop "${STOP:-}" ;;
  tiles)
    webgl_fallback
    n=${sizes:-10000000}
    dir=/tmp/page-tiles
    rm -rf "$dir" /tmp/page-tiles-map.*
    mkdir -p "$out"
    t0=$(date +%s.%N)
    budgeted "${NATIVE_BUDGET:-130}" "$out" "$native" map --points "$n" --method "${TILES_METHOD:-umap}" \
      -o /tmp/page-tiles-map.parquet --tiles "$dir" --tile-rows "${TILE_ROWS:-65536}" \
      > "$out/native-tiles.txt" 2>&1 || { echo "the native tiles map failed or ran out of time:"; tail -5 "$out/native-tiles.txt"; exit 1; }
    seconds=$(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 2))")
    echo "native: map --points $n --tiles in $seconds s ($(ls "$dir" | wc -l) entries in $dir)"
    page_s=${PAGE_TIMEOUT:-55}
    budgeted $((page_s + 10)) "$out" drive --page tiles --serve "$dir" --native-seconds "$seconds" \
      --pan-seconds "${PAN_SECONDS:-3}" --out "$out/run" --timeout "$page_s" ;;
  matmul)
    # Issue 34 in the browser: matmul rungs in the page (web/bench/matmul.html, sg.benchMatmul) and
    # `surfgrad bench matmul` natively with cuBLAS (PyTorch) on the same sizes and rungs, under each of
    # MATMUL_NATIVE (default wgpu; add dawn where SURFGRAD_DAWN_LIBRARY names a Dawn library).
    msizes=${sizes:-4096x4096x4096,8192x8192x8192} mvariants=${VARIANTS:-f16-tuned,f16-tuned-tiled,f16-sgmat-direct}
    page_s=${PAGE_TIMEOUT:-150}
    budgeted $((page_s + 10)) "$out" drive --page matmul --sizes "$msizes" --variants "$mvariants" \
      --out "$out/run" --timeout "$page_s"
    for impl in ${MATMUL_NATIVE:-wgpu}; do
      budgeted "${NATIVE_BUDGET:-120}" "$out" env SURFGRAD_WEBGPU=$impl "$native" bench matmul --sizes "$msizes" \
        --variants "$mvariants" --torch-script bench/torch_matmul.py --json "$out/native-$impl.json" \
        > "$out/native-$impl.txt" 2>&1
      grep -vE '^Warning' "$out/native-$impl.txt" | tail -8
    done ;;
  second-load)
    # Each VARIANT (SECOND_LOAD_VARIANTS, default "plain warmgpu"; a name is the page's flags joined
    # by +, plain none: warmgpu, precompile, warmgpu+precompile) in each MODE (SECOND_LOAD_MODES,
    # default "reload restart"), every one on its own fresh profile with its own empty NVIDIA/Mesa
    # shader caches, so no load sees another's caches:
    #   reload:  one browser runs the page once (pass 1, cold), then the page loads itself again
    #            (location.replace, pass=2: a new document, worker and device in the same browser)
    #            and runs twice: run 1 the second load in a running browser, run 2 warm.
    #   restart: one browser runs it once (cold), is left 3 s to write Dawn's cache and closed; a
    #            NEW browser on that profile runs it twice: run 1 the second load, run 2 warm.
    # The work (logs, each load's rows) is in /tmp/second-load-work, profiles in
    # /tmp/second-load-profiles; OUT gets run/scale.json (the merged rows: web/bench/second_load_rows.py),
    # summary.txt and second-load-logs.tgz (the device returns 8 files, 2 folders down).
    n=${sizes:-10000} methods=${METHODS:-tsne} page_s=${PAGE_TIMEOUT:-35}
    variants=${SECOND_LOAD_VARIANTS:-plain warmgpu} modes=${SECOND_LOAD_MODES:-reload restart}
    slw=/tmp/second-load-work profiles=/tmp/second-load-profiles
    rm -rf "$slw" "$profiles"
    mkdir -p "$slw" "$profiles" "$out/run"
    # One port for every browser: the page's origin (scheme, host, port) keys the browser's HTTP
    # cache, V8's code cache of the wasm and WebGPU's shader cache; a new port each load (the
    # driver's default) made the second load a first visit to another site for those caches.
    port=${SECOND_LOAD_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    load() { budgeted $((page_s + 15)) "$slw" drive --page scale --source builtin --n "$n" --methods "$methods" \
               --port "$port" --timeout "$page_s" "$@"; }
    for variant in $variants; do
      vargs=""
      [ "$variant" = plain ] || vargs=$(sed 's/+/=1\&/g; s/$/=1/' <<<"$variant")  # warmgpu+precompile -> warmgpu=1&precompile=1
      args=${SECOND_LOAD_PAGE_ARGS:-}
      [ -n "$vargs" ] && args=${args:+$args&}$vargs
      for mode in $modes; do
        dir=$slw/$variant-$mode profile=$profiles/$variant-$mode
        mkdir -p "$dir" "$profile-caches/nv" "$profile-caches/mesa"
        export __GL_SHADER_DISK_CACHE_PATH=$profile-caches/nv MESA_SHADER_CACHE_DIR=$profile-caches/mesa
        t0=$(date +%s.%N)
        case $mode in
          reload)
            load --user-data-dir "$profile" --repeats 1 --page-args "reload=1&reload_repeats=2${args:+&$args}" --out "$dir/reload" ;;
          restart)
            load --user-data-dir "$profile" --repeats 1 --linger 3 --page-args "$args" --out "$dir/cold"
            # (Code Cache/wasm: V8's compiled code of the wasm, written once enough of it has tiered
            # up; the second load uses it when the wasm comes from the HTTP cache: wasm_code_cache_kb;
            # 16 KB is its empty index, no code)
            du -sk "$profile"/Default/*Dawn* "$profile"/Default/GPUCache "$profile/Default/Code Cache/wasm" "$profile-caches"/* \
              2>/dev/null | tee "$dir/caches.txt"
            load --user-data-dir "$profile" --repeats 2 --page-args "$args" --out "$dir/second" ;;
          *) echo "SECOND_LOAD_MODES: no mode '$mode' (reload, restart)" >&2; exit 2 ;;
        esac
        echo "second-load stage: $variant $mode took $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
      done
    done
    python3 "$here/second_load_rows.py" "$slw" "$out/run/scale.json" --variants "$variants" --modes "$modes" \
      | tee "$out/summary.txt"
    tar -C "$slw" --exclude='*.npy' -czf "$out/second-load-logs.tgz" . ;;
  all)
    # Each stage: `bash $0` again (the adapter probed once: CHOSEN_FLAGS), under the smaller of its
    # budget and what the deadline leaves after the later stages' minimums.
    deadline=$((script_start + ${ALL_SECONDS:-550}))
    export SURFGRAD=$native
    stage() {  # NAME BUDGET MIN_LATER MODE SIZE
      local name=$1 budget=$2 later=$3 left
      left=$((deadline - $(date +%s) - later))
      [ "$left" -lt "$budget" ] && budget=$left
      if [ "$budget" -lt 30 ]; then echo "=== $name: skipped (${left} s left before the later stages)" | tee "$out/$name.log"; return; fi
      echo "=== $name: $4 $5, budget $budget s ($(( $(date +%s) - script_start )) s into the call)" | tee "$out/$name.log"
      budgeted "$budget" "$out/$name" bash "$0" "$out/$name" "$4" "$5" 2>&1 | tee -a "$out/$name.log"
    }
    # (the sizes: ROBUST_N, PARQUET_N, TILES_N, SECOND_N for dry runs; a stage squeezed by the
    # deadline is killed at its budget like one that hangs, its progress printed)
    stage robust 100 330 scale-robustness "${ROBUST_N:-10000}"
    stage parquet 230 120 parquet "${PARQUET_N:-1000000}"
    stage tiles 190 0 tiles "${TILES_N:-10000000}"
    # (one variant, plain, in `all`: both loads of two variants need about the stage's whole 90 s)
    [ $((deadline - $(date +%s))) -ge 60 ] && SECOND_LOAD_VARIANTS=${SECOND_LOAD_VARIANTS:-plain} \
      stage second-load 90 0 second-load "${SECOND_N:-10000}"
    {
      echo "gpu_browser_run.sh all: $(( $(date +%s) - script_start )) s; flags: $chosen ${EXTRA_FLAGS:-}"
      cat "$out/probe.txt" 2>/dev/null
      for f in robust parquet tiles second-load; do
        grep -h "^scale:\|^second-load:\|TIMED OUT\|^=== \|^native: map\|probe found no WebGL" "$out/$f.log" 2>/dev/null | cut -c1-600
      done
    } > "$results/summary.txt"
    cp "$out/robust/run/scale.json" "$results/robust.json" 2>/dev/null
    cp "$out/robust/run-norobust/scale.json" "$results/norobust.json" 2>/dev/null
    cp "$out/parquet/run/scale.json" "$results/parquet.json" 2>/dev/null
    cp "$out/tiles/run/scale.json" "$results/tiles.json" 2>/dev/null
    cp "$out/second-load/run/scale.json" "$results/second-load.json" 2>/dev/null
    tar -C "$out" --exclude='*.npy' --exclude='*.parquet' -czf "$results/browser-all.tgz" .
    echo "--- summary ($results: $(ls "$results" | tr '\n' ' '))"
    cat "$results/summary.txt" ;;
  *)
    drive --data .carry/data --out "$out/run" --tools "$tools" --n "${sizes:-1797,10000}" --timeout 480 ;;
esac
