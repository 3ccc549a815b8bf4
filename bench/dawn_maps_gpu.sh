#!/usr/bin/env bash
# Maps under both WebGPU implementations on the GPU machine (issue 34: the default implementation
# is decided per adapter by measurement). Uses the pack of bench/dawn_matmul_gpu.sh --pack (same
# WORK folder: run that script first in the call, or this one unpacks the pack itself).
#   bench/dawn_maps_gpu.sh [MNIST_DIR]   (default .carry/data/mnist10k; skipped if absent)
# For each implementation, each map twice in a row (cold process, then warm driver caches):
# t-SNE and UMAP of MNIST 10k, and of 1M built-in 768-D points. Writes $OUT/maps.json rows
# {backend, map, n, run, seconds} (wall of the whole process) and each run's log.
set -u
cd "$(dirname "$0")/.."
mnist=${1:-.carry/data/mnist10k}
out=${OUT:-/tmp/dawn-maps}
work=${WORK:-/tmp/dawn-gpu}
pack=${PACK:-build-dawn/dawn-gpu.tar.xz}
big=${BIG:-1000000}  # the built-in set's size (small for a dry run)
mkdir -p "$out" "$work"
# shellcheck source=bench/gpu_pack_env.sh
. bench/gpu_pack_env.sh "$pack" "$work"
bin=$bin/surfgrad

rows=$out/rows.txt
: >"$rows"
one() {  # IMPL NAME N RUN ARGS...
  local impl=$1 name=$2 n=$3 run=$4; shift 4
  local log=$out/$impl-$name-$run.txt t0 t1
  t0=$(date +%s%N)
  SURFGRAD_WEBGPU=$impl timeout 120 "$bin" map "$@" -o "$out/$impl-$name" >"$log" 2>&1
  local rc=$?
  t1=$(date +%s%N)
  rm -f "$out/$impl-$name".{csv,png,npy}
  if [ $rc -ne 0 ]; then echo "$impl $name run $run: exit $rc (log $log)" >&2; tail -3 "$log" >&2; return; fi
  echo "$impl $name $n $run $(( (t1 - t0) / 1000000 ))e-3" | tee -a "$rows"
}
for impl in wgpu dawn; do
  if [ -f "$mnist/t10k-images-idx3-ubyte.gz" ]; then
    for m in tsne umap; do for r in 1 2; do
      one $impl "mnist10k-$m" 10000 $r "$mnist/t10k-images-idx3-ubyte.gz" --labels "$mnist/t10k-labels-idx1-ubyte.gz" --method $m
    done; done
  fi
  for m in tsne umap; do for r in 1 2; do one $impl "builtin-$m" "$big" $r --points "$big" --method $m; done; done
done
python3 - "$rows" "$out/maps.json" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    impl, name, n, run, s = line.split()
    rows.append({"backend": impl, "map": name, "n": int(n), "run": int(run), "seconds": float(s)})
json.dump(rows, open(sys.argv[2], "w"), indent=1)
PY
