// Exact kNN with its inner products on subgroup matrices (Dawn's chromium-experimental-subgroup-
// matrix: tensor cores from WGSL; issue 34), kept exact by a float32 re-check
// (knn_subgroup_matrix.cpp says how).
#pragma once
#include <cstdint>
#include <string>

#include "maps/knn_fused.hpp"
#include "maps/knn_prune.hpp"

namespace surfgrad {

struct KnnSubgroupMatrixOptions {
  // Candidates a row keeps by its f16 score before the f32 re-check (≥ k, ≤ 256; 0: min(2k + 16,
  // 256)); always at most N − 1.
  int candidates = 0;
  // Tests only: the subgroup-matrix builtins emulated by plain WGSL (adapters without the feature).
  bool emulate = false;
  int64_t pairs_per_dispatch = 0;  // 0: the adapter's default (knn_fused_dispatch)
  // `bench knn` only: time each step (a sync after each: slightly slower overall), and the
  // candidate kernel without pushes (no candidate passes a bar: the products and the keys' tests
  // alone; the lists are left unfilled, no re-check).
  bool time_steps = false;
  bool no_push = false;
  // Experimental, not yet run on a GPU: the candidate kernel's right operands loaded col_major
  // from the row-major f16 copy (16 points' DP contiguous halves each) rather than row_major from
  // the transposed one (16 rows 2·NPAD bytes apart). `bench knn` sets it from
  // SURFGRAD_KNN_SGMAT_RIGHT=cols; KnnSgmatDiag checks its products.
  bool right_cols = false;
  // Skip the tiles no row can use (knn_prune.hpp): for points sorted by cell (knn_order.hpp).
  bool prune = false;
};

struct KnnSubgroupMatrixStats {
  int64_t rows = 0, recomputed = 0;  // rows whose bound was not clear: recomputed in f32
  int candidates = 0;
  double scale = 0;  // the power of two applied before rounding to f16
  // With time_steps: seconds in the prep, the candidate kernel, the f32 re-check and the recompute.
  double prep_seconds = 0, candidates_seconds = 0, check_seconds = 0, recompute_seconds = 0;
  KnnPruneStats prune;  // with prune and time_steps: the tiles skipped
};

// Why the subgroup-matrix kNN cannot run here for points of d dimensions ("" when it can).
std::string knn_subgroup_matrix_unsupported(const gpu::Context& ctx, int64_t d, const KnnSubgroupMatrixOptions& o = {});
// Whether knn_exact_rows takes the subgroup-matrix kNN for `rows` rows of d-dimensional points and
// k neighbours, `ordered`: the points sorted by cell first (knn_order.hpp). SURFGRAD_KNN_SUBGROUP_MATRIX=1:
// wherever it can run; =0: never. Unset: on NVIDIA adapters (the only ones its products were
// checked on in hardware: a driver that got them wrong would give wrong lists the re-check cannot
// see), from kKnnSubgroupMatrixMinPoints rows (a few rows, as a recall sample asks for, would pay
// its prep of all N points for nothing) and for k up to where it is faster than the f32 kernel:
// kKnnSubgroupMatrixMaxK on points as given, kKnnSubgroupMatrixMaxKOrdered on sorted ones.
// H200, 50-D clusters, 1M points, subgroup matrices against f32, points as given
// (bench/results/2026-11-28-h200-dawn-knn-sgmat-k-sweep.json): k = 15 2.85 / 4.15 s, 30 3.13 / 4.20,
// 45 3.54 / 4.26, 60 3.82 / 4.32, 75 4.26 / 4.39, 90 4.62 / 4.43 (its lists of 2k + 16 candidates
// cost merges the f32 kernel's k do not); k = 15 at 300k points 0.358 / 0.390 s, at 100k 0.135 /
// 0.047 (its prep and re-check). Sorted (…-knn-order.json), k = 90: 3.30 / 4.62 s, the merges
// being what the order saves.
constexpr int kKnnSubgroupMatrixMaxK = 60;
constexpr int kKnnSubgroupMatrixMaxKOrdered = 90;
constexpr int64_t kKnnSubgroupMatrixMinPoints = 300000;
bool knn_subgroup_matrix_chosen(const gpu::Context& ctx, int64_t rows, int64_t d, int k, bool ordered = false);
// The rule alone, for tests: `env` is SURFGRAD_KNN_SUBGROUP_MATRIX's value ("" unset; anything but
// "", "0" and "1" is refused by name), `adapter` the adapter's vendor and name, `runs` whether the
// kNN on subgroup matrices can run there (knn_subgroup_matrix_unsupported is "").
bool knn_subgroup_matrix_rule(const std::string& env, const std::string& adapter, bool runs, int64_t rows, int k,
                              bool ordered = false);
// knn_exact_rows through subgroup matrices: the same lists (ties by the smaller id, squared
// distances ascending, computed in f32 as Σ (x_i − x_j)²). Checks as knn_exact_rows.
KnnResult knn_exact_subgroup_matrix(const Tensor& x, int k, int64_t row_begin, int64_t row_end,
                                    const KnnSubgroupMatrixOptions& o = {}, KnnSubgroupMatrixStats* stats = nullptr);

}  // namespace surfgrad
