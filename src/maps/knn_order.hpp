// Points sorted so that near points lie near in memory, for the exact kNN's stream (issue 34).
//
// The streaming kernel (knn_fused.wgsl) starts each block of rows at its own tile of points and
// wraps around. A row's candidates are pushed and merged only while they beat its current k-th
// best, so the sooner the bar reaches its final height, the less selection work: in random order
// a row pushes about k·ln(N/k) candidates (~900 at 1M, k = 90), most of them in the first tiles.
// With the points in this order its first tiles hold its near neighbours (a simulation of the
// kernel's bar on 100k clustered 50-D points, k = 90: 757 pushes a row in random order, 400 in
// this one, 371 in the order of the true clusters). On the H200 the tensor-core kNN, whose time
// is mostly merges, gains most: 1M x 50-D, k = 90, 4.91 → 3.40 s.
//
// The order: C = 1,024 of the points (drawn at random, a fixed seed) are cell centres; each point goes to
// its nearest centre (one kernel on the GPU up to kNearestCentreMaxDims dimensions, else a matmul
// and argmin in chunks), the centres are put in a
// locality order on the host (recursive halving along their principal direction), and the points
// are counting-sorted by their centre's place in it. The lists come back in the caller's ids and
// rows; only ties between equal distances may resolve differently: the smaller id in sorted order
// wins, not the smaller of the caller's ids (surfgrad/knn.hpp says so too).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/launch.hpp"
#include "surfgrad/knn.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct KnnOrder {
  Tensor order;    // i32 [N]: sorted position p holds point order[p]
  Tensor inverse;  // i32 [N]: point i sits at position inverse[i]
  bool defined() const { return order.defined(); }
};

// The locality order of x (f32 [N, D] on the GPU) with `cells` centres (at most N). None (not
// defined()) where some point has no nearest centre: a NaN or infinite coordinate (or values so
// large that the keys overflow); the kNN then takes the points as given.
KnnOrder knn_locality_order(const Tensor& x, int cells = 1024);

// Each point's nearest centre (i32 [N]): argmin of |c|² − 2·x·c, the smaller index on ties, −1
// where no key is finite. knn_nearest_centre.wgsl keeps a point's coordinates in registers: up
// to kNearestCentreMaxDims dimensions (a map's PCA gives 50); more take a matmul and argmin.
Tensor knn_nearest_centres(const Tensor& x, const Tensor& centres);
// (Its pipeline's values, for d dimensions.)
constexpr int64_t kNearestCentreMaxDims = 64;
kernels::Values nearest_centre_values(int64_t d);

// Lists computed on x[order] (rows and ids in sorted positions) → the same lists in x's rows and
// ids. Takes the sorted lists by value and releases them as it goes (memory: at most three lists).
KnnResult knn_unorder(KnnResult sorted, const KnnOrder& o);

// Whether knn_exact sorts the points first: SURFGRAD_KNN_ORDER=cells (always) or none (never);
// unset: GPUs (not CPU adapters, not the browser) from kKnnOrderMinPoints points. H200, 50-D
// clusters, sorted against as given (bench/results/2026-11-28-h200-knn-order.json): 1M, k = 90
// 4.87 / 5.05 s f32, 3.40 / 4.91 subgroup matrices; k = 15 3.86 / 4.76, 2.52 / 2.94; 300k, k = 15
// 0.396 / 0.424, 0.388 / 0.460; 200k, k = 15 0.233 / 0.224, 0.261 / 0.238 (the sort's own cost
// ahead). The browser is left out until measured there (the sort's copies of the lists).
constexpr int64_t kKnnOrderMinPoints = 300000;
bool knn_order_rule(const std::string& env, bool is_cpu, bool browser, int64_t n);
bool knn_order_chosen(const gpu::Context& ctx, int64_t n);
// Whether knn_exact sorts N points of D dimensions (all rows asked for): knn_order_chosen, where
// the kNN is the streaming kernel's (not small sets' knn_rows_gpu, not CPU adapters' knn_rows_cpu).
// The layouts' prewarm asks the same (layout_prewarm.cpp).
bool knn_order_applies(const gpu::Context& ctx, int64_t n, int64_t d);

// The rows that serve as centres (exposed for its test): C distinct rows of N drawn at random with a
// fixed seed (the same every run), in increasing order. Not evenly spaced rows: those alias with
// periodic data (below).
std::vector<int32_t> knn_centre_picks(int64_t n, int64_t c);

// The centres' order on the host (exposed for its test): C points of D floats (row-major) → a
// permutation of 0..C−1 in which consecutive entries lie near each other.
std::vector<int32_t> knn_centre_order(const std::vector<float>& centres, int64_t c, int64_t d);

}  // namespace surfgrad
