#!/usr/bin/env bash
# Parquet / Arrow I/O on the GPU machine (issue 33's targets; BENCHMARKS.md): 1M × 768 f32 points
# mapped from Parquet (row groups of 64k rows, and one 1M-row group as pyarrow writes by
# default) against the same points as .npy, and a 10M built-in map's write phase (.npy + CSV +
# PNG, Parquet, tiles), each printing the CLI's phase timings; plus surfgrad_io_bench's I/O-only
# timings (no map) where it was packed.
# Here:   scripts/pack_arrow_carry.sh build      (→ .carry/arrow, ~17 MB of xz)
# There:  carry .carry/arrow and .gl;  bash bench/arrow_io_gpu.sh [STEPS]   (STEPS: "data 1m 10m io";
#         default all, ~5 min on an H100; data makes the files once under $WORK)
# pyarrow and numpy come from the machine's own python3 (its image has both).
set -u
steps=${1:-"data 1m 10m io"}
out=${OUT:-/tmp/arrow-io-bench}
work=${WORK:-/tmp/arrow-io-work}
method=${METHOD:-umap}
mkdir -p "$out" "$work"
if [ ! -x "$work/bin/surfgrad" ] || [ .carry/arrow/surfgrad-arrow.tar.xz -nt "$work/bin/surfgrad" ]; then
  tar -xJf .carry/arrow/surfgrad-arrow.tar.xz -C "$work" || { echo "no .carry/arrow: run scripts/pack_arrow_carry.sh and carry it" >&2; exit 1; }
fi
export LD_LIBRARY_PATH="$work/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The NVIDIA Vulkan driver needs libglvnd and the Vulkan loader: the device README's .gl packages
# (carry .gl), unpacked as bench/python_gpu.sh's run does.
if ls .gl/*.deb >/dev/null 2>&1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$icd" ] && export VK_DRIVER_FILES=${VK_DRIVER_FILES:-$icd}
bin=$work/bin/surfgrad
echo "cores: $(nproc); $(python3 -c 'import pyarrow, numpy; print("pyarrow", pyarrow.__version__, "numpy", numpy.__version__)')" | tee "$out/io.log"

run() {  # name, then the map command's arguments
  local name=$1; shift
  echo "== $name: surfgrad map $*" | tee -a "$out/io.log"
  /usr/bin/time -v "$bin" map "$@" >"$out/$name.txt" 2>&1 || { tail -5 "$out/$name.txt" | tee -a "$out/io.log"; return; }
  grep -E "UMAP of|t-SNE of|^  |peaks|Maximum resident|Elapsed" "$out/$name.txt" | tee -a "$out/io.log"
}

for s in $steps; do
  case $s in
    data)  # 1M × 768 f32 in 10 clusters, as .npy and two Parquet files (fixed-size lists, id, label)
      [ -f "$work/p1m.parquet" ] || python3 - "$work" <<'PY'
import sys, time, numpy as np, pyarrow as pa, pyarrow.parquet as pq
work = sys.argv[1]; n, d = 1_000_000, 768
t0 = time.time()
rng = np.random.default_rng(0)
labels = (np.arange(n) % 10).astype(np.int32)
x = rng.standard_normal((n, d), dtype=np.float32)
x += 4 * rng.standard_normal((10, d), dtype=np.float32)[labels]
np.save(f"{work}/p1m.npy", x); np.save(f"{work}/p1m_labels.npy", labels)
t = pa.table({"id": np.arange(n), "embedding": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), d),
              "label": labels})
pq.write_table(t, f"{work}/p1m.parquet", row_group_size=65536)
pq.write_table(t, f"{work}/p1m_rg1m.parquet", row_group_size=1 << 20)
print(f"data: 1M x 768 as .npy and Parquet in {time.time() - t0:.1f} s")
PY
      ls -la "$work" | tee -a "$out/io.log" ;;
    1m)
      run npy-1m "$work/p1m.npy" --labels "$work/p1m_labels.npy" --method "$method" -o "$work/m1m"
      run parquet-1m "$work/p1m.parquet" --column embedding --labels-column label --keep id --method "$method" \
        -o "$work/m1m.parquet"
      run parquet-1m-one-row-group "$work/p1m_rg1m.parquet" --method "$method" -o "$work/m1m1.parquet" ;;
    10m)
      rm -rf "$work/tiles10m"
      run builtin-10m-default-and-tiles --points 10000000 --method "$method" -o "$work/m10m" --tiles "$work/tiles10m"
      run builtin-10m-parquet --points 10000000 --method "$method" -o "$work/m10m.parquet"
      du -sh "$work/m10m.csv" "$work/m10m.png" "$work/m10m.parquet" "$work/tiles10m" | tee -a "$out/io.log" ;;
    io)  # I/O alone (no map): reading the points, writing a 10M × 2 map each way
      io=$work/bin/surfgrad_io_bench
      [ -x "$io" ] || { echo "no surfgrad_io_bench packed; skipping io" | tee -a "$out/io.log"; continue; }
      for f in p1m.parquet p1m_rg1m.parquet; do for r in 1 2; do echo "$f: $($io read "$work/$f")" | tee -a "$out/io.log"; done; done
      rm -rf "$work/io-tiles"
      for w in "write 10000000 $work/io10m" "parquet 10000000 $work/io10m.parquet" "tiles 10000000 $work/io-tiles"; do
        $io $w 2>/dev/null | tee -a "$out/io.log"
      done ;;
  esac
done
rm -f "$work"/m1m* "$work"/m10m* "$work"/io10m*
echo "log: $out/io.log"
