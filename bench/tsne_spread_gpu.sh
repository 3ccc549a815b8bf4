#!/usr/bin/env bash
# t-SNE's FFT spread in index order against cell by cell (SURFGRAD_TSNE_SPREAD=plain|sorted;
# tsne_fft_spread_sorted.wgsl), on the GPU machine, from a pack made here by
# `bash bench/dawn_matmul_gpu.sh --pack build` (carry build/dawn-gpu.tar.xz and .gl).
#   OUT=$OUT/s bash bench/tsne_spread_gpu.sh build/dawn-gpu.tar.xz [STAGES]
# Stages (default "profile maps"):
#   profile  SURFGRAD_PROFILE of `surfgrad map --points 1000000` (t-SNE): plain, sorted every
#            iteration, sorted every ORDER_EVERY (default 8) iterations;
#   profile1 the same, plain and sorted every iteration only;
#   maps     the same map unprofiled, plain and sorted (every iteration) alternated twice, phase timings and the
#            md5 of each map (the two spreads must give the same bits);
#   10m      the 10M-point t-SNE, plain then sorted, once each (about 2 × 140 s).
# Logs and profiles go to $OUT; a summary is printed last.
set -u
pack=${1:-build/dawn-gpu.tar.xz}
stages=${2:-"profile maps"}
out=${OUT:-/tmp/tsne-spread}
work=${WORK:-/tmp/tsne-spread-pack}
mkdir -p "$out" "$work"
. bench/gpu_pack_env.sh "$pack" "$work" >"$out/env.log" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
every=${ORDER_EVERY:-8}
map() {  # name, spread, order-every, extra environment..., -- map arguments
  local name=$1 spread=$2 ev=$3; shift 3
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env SURFGRAD_TSNE_SPREAD="$spread" SURFGRAD_TSNE_ORDER_EVERY="$ev" "${envs[@]}" \
    "$bin/surfgrad" map "$@" -o "/tmp/$name" >"$out/$name.log" 2>&1
  echo "$name: rc=$? $(md5sum "/tmp/$name.npy" 2>/dev/null | cut -c1-12) $(grep -E '^  (kNN|affinities|optimisation|total)|optimise +(50|250|750)/' "$out/$name.log" | tr -s ' ' | tr '\n' ' ')"
  rm -f "/tmp/$name.csv" "/tmp/$name.png"
}
for s in $stages; do
  case $s in
    profile)
      map prof-plain plain 1 SURFGRAD_PROFILE="$out/prof-plain.txt" -- --points 1000000
      map prof-sorted sorted 1 SURFGRAD_PROFILE="$out/prof-sorted.txt" -- --points 1000000
      map prof-sorted$every sorted "$every" SURFGRAD_PROFILE="$out/prof-sorted$every.txt" -- --points 1000000
      for f in plain sorted sorted$every; do
        echo "-- profile $f"
        grep -E 'tsne_fft|prefix_sum|tsne_attraction|knn_fused' "$out/prof-$f.txt" | head -12
      done ;;
    profile1)
      map prof-plain plain 1 SURFGRAD_PROFILE="$out/prof-plain.txt" -- --points 1000000
      map prof-sorted sorted 1 SURFGRAD_PROFILE="$out/prof-sorted.txt" -- --points 1000000
      for f in plain sorted; do
        echo "-- profile $f"
        grep -E 'tsne_fft|prefix_sum|tsne_attraction|knn_fused' "$out/prof-$f.txt" | head -12
      done ;;
    maps)
      for r in 1 2; do
        map "tsne-1m-plain-$r" plain 1 -- --points 1000000
        map "tsne-1m-sorted-$r" sorted 1 -- --points 1000000
      done ;;
    10m)
      map tsne-10m-plain plain 1 -- --points 10000000 --recall-sample 0
      map tsne-10m-sorted sorted 1 -- --points 10000000 --recall-sample 0 ;;
  esac
done 2>&1 | tee "$out/summary.txt"
rm -f /tmp/tsne-*.npy /tmp/prof-*.npy
