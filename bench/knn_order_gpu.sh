#!/usr/bin/env bash
# The exact kNN with the points sorted by cell first (src/maps/knn_order.hpp) against the points
# as given, on the GPU machine (issue 34): `bench knn` at 1M x 50-D, k = 90 and 15, under
# wgpu-native (the f32 streaming kernel) and Dawn (subgroup matrices), then the 1M built-in t-SNE
# and UMAP with and without the order, and PyTorch's kNN at k = 90 for scale.
#
# Here:         bash bench/dawn_matmul_gpu.sh --pack build      (carry build/dawn-gpu.tar.xz and .gl)
# GPU machine:  OUT=$OUT bash bench/knn_order_gpu.sh build/dawn-gpu.tar.xz [STAGES]
#   STAGES (default "knn maps"): tests (<= 240 s), sweep (<= 200 s), knn (<= 200 s), maps (<= 200 s),
#   torch (<= 60 s), prune (<= 240 s: tile skipping, src/maps/knn_prune.hpp, on and off, clusters
#   and one Gaussian cloud), prune-groups (<= 200 s: the tiles a skip test covers), prune-maps
#   (<= 200 s: the 1M maps with it on and off), candidates (<= 240 s: the subgroup-matrix kNN's
#   candidates past k, Dawn with and without robustness), unchecked-maps (<= 200 s: the 1M maps
#   on Dawn's unchecked map context against SURFGRAD_CHECKED_KERNELS=1), unchecked-tests (<= 300 s:
#   the map path's suites under Dawn's disable_robustness).
# Prints a line a run (seconds, recall; a map's phases, wall time and md5); bench knn's JSON and
# the maps' logs in $OUT.
set -u
cd "$(dirname "$0")/.."
pack=${1:-build/dawn-gpu.tar.xz}
stages=${2:-knn maps}
out=${OUT:-/tmp/knn-order}
work=${WORK:-/tmp/knn-order-gpu-$(cksum <"$pack" | cut -d' ' -f1)}
mkdir -p "$out" "$work"
. bench/gpu_pack_env.sh "$pack" "$work"
log() { echo "[knn_order_gpu] $*" >&2; }
"$bin/surfgrad" info 2>&1 | grep -E "^(adapter|driver|implementation) " | tee "$out/info.txt"
knn() {  # NAME IMPL K ORDER [env...]
  local name=$1 impl=$2 k=$3 order=$4
  shift 4
  log "bench knn ${PTS:-1000000} x 50, k = $k, $impl, order $order"
  env SURFGRAD_WEBGPU="$impl" SURFGRAD_KNN_ORDER="$order" "$@" timeout 120 "$bin/surfgrad" bench knn --points "${PTS:-1000000}" \
    --dims 50 --k "$k" --data "${DATA:-clusters}" --methods exact --recall-sample 2000 --json "$out/knn-$name.json" 2>&1 |
    grep -v '^Warning: maxDynamic' | sed "s/^/[$name] /"
}
map() {  # NAME IMPL METHOD ORDER [env...]: the phases, wall time and md5 of `surfgrad map --points 1000000`
  local name=$1 impl=$2 method=$3 order=$4
  shift 4
  local t0 t1 rc
  t0=$(date +%s.%N)
  env SURFGRAD_WEBGPU="$impl" SURFGRAD_KNN_ORDER="$order" "$@" timeout 150 "$bin/surfgrad" map --points 1000000 \
    --method "$method" -o "/tmp/map-$name" >"$out/map-$name.txt" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "[map $name] exit $rc, wall $(python3 -c "print(round($t1 - $t0, 2))") s, md5 $(md5sum "/tmp/map-$name.npy" 2>/dev/null | cut -c1-12)" \
    "$(grep -E '^  (kNN|knn|affinities|memberships|optimisation|total)' "$out/map-$name.txt" | tr -s ' ' | tr '\n' ' ')"
  rm -f /tmp/map-$name.*
}
for s in $stages; do
  case $s in
    tests)  # the order's tests and the streaming kernels' (every block starting at its own tile)
      for impl in wgpu dawn; do
        SURFGRAD_WEBGPU=$impl timeout 120 "$bin/surfgrad_tests" --gtest_brief=1 \
          --gtest_filter='KnnOrder.*:KnnPrune.*:Knn.Streaming*:Knn.EveryTileShape*:Knn.RowsAndSampledRecall:KnnSubgroupMatrix.*' \
          >"$out/tests-$impl.txt" 2>&1
        echo "[tests $impl] exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests-$impl.txt" | tr '\n' ' ')"
        grep -A3 "Failure" "$out/tests-$impl.txt" | head -20
      done
      ;;
    sweep)  # the rotation groups' size (SURFGRAD_KNN_ROTATE_ROWS) at k = 90, both kernels
      for impl in wgpu dawn; do
        sg=; [ $impl = dawn ] && sg=SURFGRAD_KNN_SUBGROUP_MATRIX=1
        knn "$impl-k90-none-r0" $impl 90 none SURFGRAD_KNN_ROTATE_ROWS=0 $sg
        for r in 64 1024 4096 16384 65536; do
          knn "$impl-k90-cells-r$r" $impl 90 cells SURFGRAD_KNN_ROTATE_ROWS=$r $sg
        done
      done
      ;;
    knn)
      knn wgpu-k90-none wgpu 90 none
      knn wgpu-k90-cells wgpu 90 cells
      knn wgpu-k15-none wgpu 15 none
      knn wgpu-k15-cells wgpu 15 cells
      knn dawn-k90-none dawn 90 none SURFGRAD_KNN_SUBGROUP_MATRIX=1
      knn dawn-k90-cells dawn 90 cells SURFGRAD_KNN_SUBGROUP_MATRIX=1
      knn dawn-k15-none dawn 15 none
      knn dawn-k15-cells dawn 15 cells
      for n in 200000 300000; do  # where the rule starts (kKnnOrderMinPoints; knn_subgroup_matrix's 300k)
        PTS=$n knn wgpu-n$n-k15-none wgpu 15 none
        PTS=$n knn wgpu-n$n-k15-cells wgpu 15 cells
        PTS=$n knn dawn-n$n-k15-none dawn 15 none
        PTS=$n knn dawn-n$n-k15-cells dawn 15 cells
      done
      ;;
    maps)
      # Each implementation's default (the order on; Dawn: subgroup matrices up to k = 90 on
      # sorted points) against the order off; Dawn's first map fills its pipeline cache (cold).
      map tsne-wgpu-none wgpu tsne none
      map tsne-wgpu-default wgpu tsne ""
      map tsne-dawn-cold dawn tsne ""
      map tsne-dawn-default dawn tsne ""
      map tsne-dawn-none dawn tsne none
      map umap-wgpu-none wgpu umap none
      map umap-wgpu-default wgpu umap ""
      map umap-dawn-default dawn umap ""
      map umap-dawn-none dawn umap none
      ;;
    prune)  # tile skipping on and off: the f32 kernel (wgpu-native) and subgroup matrices (Dawn)
      for data in clusters gaussian; do
        for impl in wgpu dawn; do
          for k in 90 15; do
            [ $data = gaussian ] && [ $k = 15 ] && continue
            for p in 0 1; do DATA=$data knn "$impl-$data-k$k-prune$p" $impl $k cells SURFGRAD_KNN_PRUNE=$p; done
          done
        done
      done
      ;;
    prune-groups)  # the tiles a skip test covers (SURFGRAD_KNN_PRUNE_GROUP), both kernels, clusters
      for impl in wgpu dawn; do
        for k in 90 15; do
          for g in 2 4 8; do knn "$impl-clusters-k$k-g$g" $impl $k cells SURFGRAD_KNN_PRUNE_GROUP=$g; done
        done
      done
      ;;
    prune-maps)  # Dawn's first map fills its pipeline cache (cold)
      map tsne-dawn-cold dawn tsne ""
      for p in 0 1; do
        for impl in wgpu dawn; do
          map tsne-$impl-prune$p $impl tsne "" SURFGRAD_KNN_PRUNE=$p
          map umap-$impl-prune$p $impl umap "" SURFGRAD_KNN_PRUNE=$p
        done
      done
      ;;
    candidates)  # the subgroup-matrix kNN's candidates past k (SURFGRAD_KNN_SGMAT_EXTRA; default k + 16),
      # Dawn with and without robustness: the 1M t-SNE profiled (the candidate kernel, the re-check,
      # the f32 recompute of flagged rows), then bench knn on clusters
      map tsne-dawn-cold dawn tsne ""
      for tog in "" disable_robustness; do
        for e in "" 32 16; do
          name=tsne-dawn-e${e:-def}-${tog:-robust}
          map "$name" dawn tsne "" SURFGRAD_KNN_SGMAT_EXTRA=$e SURFGRAD_DAWN_TOGGLES=$tog SURFGRAD_PROFILE="$out/profile-$name.txt"
          grep -E "knn|dispatches|all kernels" "$out/profile-$name.txt" | head -8 | sed "s/^/[$name] /"
        done
      done
      for e in "" 32 16; do
        knn "dawn-clusters-k90-e${e:-def}" dawn 90 cells SURFGRAD_KNN_SGMAT_EXTRA=$e
      done
      ;;
    unchecked-maps)  # map contexts under Dawn without robustness (ContextOptions::own_kernels_only, the
      # CLI's default now) against SURFGRAD_CHECKED_KERNELS=1, and wgpu-native; exit codes and md5s
      map tsne-dawn-cold dawn tsne ""
      for r in 1 2; do
        map tsne-dawn-unchecked$r dawn tsne ""
        map tsne-dawn-checked$r dawn tsne "" SURFGRAD_CHECKED_KERNELS=1
        map umap-dawn-unchecked$r dawn umap ""
        map umap-dawn-checked$r dawn umap "" SURFGRAD_CHECKED_KERNELS=1
      done
      map tsne-wgpu wgpu tsne ""
      map umap-wgpu wgpu umap ""
      ;;
    unchecked-tests)  # the map path's suites under Dawn without robustness (<= 300 s)
      SURFGRAD_WEBGPU=dawn SURFGRAD_DAWN_TOGGLES=disable_robustness timeout 300 "$bin/surfgrad_tests" --gtest_brief=1 \
        --gtest_filter='Knn*.*:Tsne*.*:Umap*.*:UncheckedDevice.*:InputScale.*:DescentKernels.*:FftLines.*:IncomingEdges.*:Pca.*:PointBlocks.*:PrefixSum*.*-Knn.NeighbourDescentRecallsMostExactNeighbours' \
        >"$out/tests-dawn-unchecked.txt" 2>&1
      echo "[tests dawn unchecked] exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests-dawn-unchecked.txt" | tr '\n' ' ')"
      grep -A3 "Failure" "$out/tests-dawn-unchecked.txt" | head -20
      ;;
    torch)
      log "PyTorch kNN 1M x 50, k = 90"
      timeout 60 python3 bench/torch_knn.py 1000000 50 90 >"$out/torch-1m.json" 2>"$out/torch-1m.err"
      cat "$out/torch-1m.json"
      ;;
  esac
done
