// Exact kNN with its inner products on subgroup matrices (Dawn's chromium-experimental-subgroup-
// matrix: tensor cores from WGSL; issue 34), kept exact by a float32 re-check
// (knn_subgroup_matrix.cpp says how).
#pragma once
#include <cstdint>
#include <string>

#include "maps/knn_fused.hpp"

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
};

struct KnnSubgroupMatrixStats {
  int64_t rows = 0, recomputed = 0;  // rows whose bound was not clear: recomputed in f32
  int candidates = 0;
  double scale = 0;  // the power of two applied before rounding to f16
  // With time_steps: seconds in the prep, the candidate kernel, the f32 re-check and the recompute.
  double prep_seconds = 0, candidates_seconds = 0, check_seconds = 0, recompute_seconds = 0;
};

// Why the subgroup-matrix kNN cannot run here for points of d dimensions ("" when it can).
std::string knn_subgroup_matrix_unsupported(const gpu::Context& ctx, int64_t d, const KnnSubgroupMatrixOptions& o = {});
// knn_exact_rows through subgroup matrices: the same lists (ties by the smaller id, squared
// distances ascending, computed in f32 as Σ (x_i − x_j)²). Checks as knn_exact_rows.
KnnResult knn_exact_subgroup_matrix(const Tensor& x, int k, int64_t row_begin, int64_t row_end,
                                    const KnnSubgroupMatrixOptions& o = {}, KnnSubgroupMatrixStats* stats = nullptr);

}  // namespace surfgrad
