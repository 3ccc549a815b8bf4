// The pieces of the subgroup-matrix exact kNN (knn_subgroup_matrix.cpp) that its GPU diagnostic
// (knn_sgmat_diag.cpp) runs on their own: the f16 prep, the code of one 16×16 product tile, and
// the candidate kernel (optionally dumping its products). One copy of each, so that the
// diagnostic checks exactly what the kNN runs.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/launch.hpp"
#include "maps/knn_fused.hpp"

namespace surfgrad {

// How the candidate kernel moves its operands and products (issue 34: what the stream's time went
// to besides the products). From the environment (knn_sgmat_variant), for `bench knn` sweeps:
//   SURFGRAD_KNN_SGMAT_LAYOUT=blocked|strided: a thread's cells in the product tile (knn_fused.hpp:
//     strided, 8×2 cells, lets a subgroup read 32 consecutive words of one row; blocked, 4×4, read
//     with a stride of 4 words and two rows a subgroup: 4-way bank conflicts);
//   SURFGRAD_KNN_SGMAT_PAD=N: floats past BN in each row of the product tile (8: the 16 lanes of a
//     64-bit store phase write 4 rows on 32 distinct banks; 0: 8 rows on the same 8 banks);
//   SURFGRAD_KNN_SGMAT_QUEUE=Q,M: the queues (below);
//   SURFGRAD_KNN_SGMAT_SPLIT=1|0: split products (X̃·X̃ + X̃·r̃ + r̃·X̃, r̃ the f16 rounding's residual
//     rounded to f16 again: three products for one, about a tenth of the error bound, so the margin
//     bar takes far fewer candidates; H100, 1M x 50-D: 5.25 s against 4.38, the merges no cheaper);
//     staged kernels only (a second panel: queues 16/12 by default, to fit 48 KiB);
//   SURFGRAD_KNN_SGMAT_STAGE=1|0: the tile's points staged through workgroup panels (vec4 loads,
//     one copy for all subgroups; right operands at literal offsets, which robustness need not
//     predicate) or each subgroup's right operands loaded from the transposed copy in storage.
struct KnnSgmatVariant {
  bool strided = false;  // H100, 1M x 50-D: blocked staged 2.14 s without pushes, strided 2.28 s
  int pad = 8;
  bool staged = true;
  bool split = false;
  // Each row's queue of candidates and the fill at which it merges (knn_fused.wgsl's Q and
  // MERGE_AT; SURFGRAD_KNN_SGMAT_QUEUE=Q,M): the lists here are ~2k long, so a merge costs twice
  // the f32 kernel's.
  int queue = 24, merge_at = 20;  // H100, 1M x 50-D, k = 90: 4.46 s against 12,10: 4.98 (32,24: 4.44; 48,40: 6.90)
  // Candidates a row keeps past k (SURFGRAD_KNN_SGMAT_EXTRA=E, for sweeps): KP = min(k + E, 256);
  // -1, the default: KP = min(2k + 16, 256).
  int extra = -1;
  std::string describe() const;
};
KnnSgmatVariant knn_sgmat_variant();

// The candidate kernel's tile shape: 64×64, 256 invocations (as knn_fused's GPU shape), BK 4, 4×4
// cells a thread blocked or 8×2 strided, the variant's queues.
KnnFusedShape knn_sgmat_shape(const KnnSgmatVariant& v = knn_sgmat_variant());

// Prep's outputs (knn_sgmat_prep.wgsl): X = s·(x − mean) rounded to f16, row-major xh [npad, dp]
// and transposed xt [dp, npad] (zeros past N and D), norms |X_j|² [npad], the residuals r = X − X̃
// rounded to f16, row-major xr [npad, dp], stats [npad, 4] = (|X̃_j|, |r_j|, |r_j − r̃_j|, 0).
struct KnnSgmatPrep {
  Tensor xh, xt, xr, norms, stats, mean;
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
// Bindings: out_index, out_key, xh, norms, then knn_sgmat_points(prep, variant), the rows' margins
// ([NPAD] f32 then k, read with margin_bar: knn_exact_subgroup_matrix's bar at the k-th key), where
// split (knn_sgmat_split) xr, then dump; with prune_group > 0 (tiles a skip test covers; not with
// dump) the bounds (knn_prune.hpp) last, the keys' unit s² (knn_fused_dispatch).
// A staged variant applies where DP ≤ 128 and its panels fit the adapter's workgroup memory, and
// neither plain nor right_cols.
kernels::Program knn_sgmat_candidate_program(const gpu::ContextPtr& ctx, int dp, int sg, bool emulate,
                                             bool dump = false, bool plain = false, bool push = true,
                                             bool right_cols = false,
                                             const KnnSgmatVariant& variant = knn_sgmat_variant(),
                                             bool margin_bar = false, int prune_group = 0);
// The WGSL that program compiles.
std::string knn_sgmat_candidate_wgsl(const gpu::Context& ctx, int dp, int sg, bool emulate, bool dump, bool plain,
                                     bool push, bool right_cols, const KnnSgmatVariant& variant,
                                     bool margin_bar = false, int prune_group = 0);
// Whether it multiplies split products (the variant's split, where staged).
bool knn_sgmat_split(const gpu::Context& ctx, const KnnSgmatVariant& v, int dp, bool plain, bool right_cols);
// Whether the candidate kernel stages its points for these parameters (see above).
bool knn_sgmat_staged(const gpu::Context& ctx, const KnnSgmatVariant& v, int dp, bool plain, bool right_cols);
// The candidate kernel's fifth binding: the transposed copy, or (staged) the row-major one again,
// read as vec4s.
const Tensor& knn_sgmat_points(const KnnSgmatPrep& p, bool staged);

// The row ranges [a, b) in which knn_exact_subgroup_matrix recomputes its flagged rows (flag[i] != 0)
// with the f32 kernel: each run of flagged rows, runs less than `gap` rows apart merged into one
// range. A range of the f32 kernel costs at least a workgroup streaming all N points (~70 ms at 1M on
// the H200), and rows cost a wave's time per wave of workgroups: so scattered flags (ties and
// duplicates) cost about one full f32 kNN at most, where a dispatch a run cost 27 s for 391 rows
// (H100, 1M x 50-D). kKnnSgmatRecomputeGap: a wave of 64-row workgroups on a large GPU.
constexpr int64_t kKnnSgmatRecomputeGap = 16384;
std::vector<std::pair<int64_t, int64_t>> knn_sgmat_recompute_ranges(const std::vector<int32_t>& flag, int64_t gap);

}  // namespace surfgrad
