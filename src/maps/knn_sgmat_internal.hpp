// The pieces of the subgroup-matrix exact kNN (knn_subgroup_matrix.cpp) that its GPU diagnostic
// (knn_sgmat_diag.cpp) runs on their own: the f16 prep, the code of one 16×16 product tile, and
// the candidate kernel (optionally dumping its products). One copy of each, so that the
// diagnostic checks exactly what the kNN runs.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/launch.hpp"
#include "maps/knn_fused.hpp"

namespace surfgrad {

// The candidate kernel's tile shape (knn_fused's GPU shape: 64×64, 4×4 cells a thread, 256
// invocations).
KnnFusedShape knn_sgmat_shape();

// Prep's outputs (knn_sgmat_prep.wgsl): X = s·(x − mean) rounded to f16, row-major xh [npad, dp]
// and transposed xt [dp, npad] (zeros past N and D), norms |X_j|² [npad], stats [npad, 2] =
// (|X̃_j|, |r_j|).
struct KnnSgmatPrep {
  Tensor xh, xt, norms, stats, mean;
  float scale = 1;
  int dp = 16;
  int64_t npad = 0;
};
// x: dense f32 [N, D] without NaN or infinity (checked: an Error naming the op otherwise).
KnnSgmatPrep knn_sgmat_prep(const Tensor& x);

// WGSL for one 16×16 result tile (ti, tj are u32 expressions): rows row0 + 16·ti of `x` (f16,
// row stride DP) times columns col0 + 16·tj of `xt` (f16, row stride NPAD), DP/16 products
// accumulated from zero into `m`, then `store` (a statement using m, ti, tj). Needs the aliases
// TA/TB/TC, the constant DP and the values row0, col0, NPAD in scope.
std::string knn_sgmat_tile(const std::string& ti, const std::string& tj, const std::string& store);

// The candidate kernel (knn_fused.wgsl on subgroup matrices) for `dp` padded dimensions and
// subgroups of `sg`. dump: a sixth binding `dump` (f32 [NPAD rows, NPAD]) receives every product
// X̃_i·X̃_j as the selection reads it (the diagnostic's view inside the real kernel). plain: the
// code that first passed on the H200 (2026-11-27 evening: no hoisted left operands, the next
// tile's norms read under branches), for the diagnostic's comparison. push = false: nothing passes
// the bars (bench knn's no-push timing). right_cols: KnnSubgroupMatrixOptions::right_cols.
kernels::Program knn_sgmat_candidate_program(const gpu::ContextPtr& ctx, int dp, int sg, bool emulate,
                                             bool dump = false, bool plain = false, bool push = true,
                                             bool right_cols = false);

}  // namespace surfgrad
