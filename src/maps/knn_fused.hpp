// The streaming exact-kNN kernel behind knn_exact (knn_fused.cpp, knn_fused.wgsl).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "kernels/launch.hpp"
#include "maps/knn_prune.hpp"
#include "surfgrad/knn.hpp"

namespace surfgrad {

// A workgroup's BM query rows × BN points a tile, BK dimensions staged at a time, TM×TN
// outputs a thread, Q queue slots a row, merged into the row's list once M are taken,
// looked at every E tiles; S / k rows merged at once. `select` = false skips the
// selection (the lists are left unfilled): for `bench knn` only, to time the inner products and staging alone.
struct KnnFusedShape {
  int bm = 128, bn = 128, bk = 8, tm = 8, tn = 8, queue = 16, merge_at = 8, merge_every = 1;
  // Slots for copies of the merging rows' lists: scratch / k rows merge at once (at least 128, the
  // largest k).
  int scratch = 256;
  bool select = true;
  bool push = true;  // false: nothing passes the bars (for `bench knn`'s no-push timing)
  // Which cells a thread owns: blocked (the f32 kernel's register tiles) puts thread (tx, ty)'s TM×TN
  // cells at rows ty·TM + i, columns tx·TN + j; strided at rows ty + i·(BM/TM), columns tx + j·(BN/TN),
  // so that a subgroup reads consecutive words of one row (the subgroup-matrix kernel's product
  // tile in workgroup memory: no bank conflicts). Not parsed: set by code only (the subgroup-matrix
  // kernel, whose keys name its layout); the f32 kernel's register tiles assume blocked cells.
  bool strided = false;
  int threads() const { return (bm / tm) * (bn / tn); }
  // Whether the lists' copies fit in the staging tiles (keys in the queries', ids in the points'),
  // which hold nothing live while rows merge: then they take no workgroup memory of their own.
  bool scratch_in_tiles() const { return scratch <= bk * (std::min(bm, bn) + 4); }
  uint64_t workgroup_bytes() const {
    return 4ull *
           (uint64_t(bk) * (bm + 4) + uint64_t(bk) * (bn + 4) + bn + 4ull * bm + 2ull * bm * queue +
            (scratch_in_tiles() ? 0ull : 2ull * scratch) + 12);  // (retry, merge_count, merge_total: 4 words each)
  }
  // "BMxBNxBK/TMxTN/qQmMeEsS", with "/compute-only" when select is off, "/no-push" when push is
  // (sS may be left out when parsing: 256).
  std::string describe() const;
  // The same text back; an Error naming the text and the rule it breaks otherwise.
  static KnnFusedShape parse(const std::string& text);
};
// WGSL (u32) of thread (tx, ty)'s cell (i, j) under f's layout (blocked or strided): its row
// among the workgroup's BM rows, its column in the tile of BN points.
std::string knn_cell_row(const KnnFusedShape& f, int i);
std::string knn_cell_col(const KnnFusedShape& f, int j);
// The shape knn_exact uses on this adapter for k neighbours (0: k not known, the shape for long lists).
KnnFusedShape knn_fused_shape(const gpu::Context& ctx, int k = 0);

// Queues the exact kNN's GPU kernel for N points in D dimensions for a worker thread to build
// (kernels::prewarm; cold start): small sets' (knn_rows_gpu.hpp) or this adapter's shape of the
// streaming kernel, whichever knn_exact takes. Neither key depends on the points, so a front end
// can ask before it reads them: with N unknown (≤ 0) both are queued (the small sets' for D a
// multiple of 4). Nothing on CPU adapters (knn_rows_cpu). k: the neighbours, which pick the
// streaming kernel's shape (knn_fused_shape; 0: unknown); prune: the kernel that skips tiles and
// its bounds' kernel (points sorted by cell: knn_prune.hpp). Whether a build was queued.
bool prewarm_knn_fused(const gpu::ContextPtr& ctx, int64_t n = 0, int64_t d = 0, int k = 0, bool prune = false);

// knn_exact_rows with a given shape (checked against the adapter's limits): for `bench knn`.
// row_end < 0: all rows. pairs_per_dispatch > 0 replaces the adapter's default (for tests: many
// dispatches on small inputs). prune: skip tiles by the points' bounds (knn_prune.hpp; for points
// sorted by cell, where it pays; the lists are the same either way; on adapters with subgroups),
// its counts then in knn_prune_last_stats() where they are recorded (knn_prune_record_stats).
KnnResult knn_exact_shaped(const Tensor& x, int k, const KnnFusedShape& shape, int64_t row_begin = 0,
                           int64_t row_end = -1, int64_t pairs_per_dispatch = 0, bool prune = false);

// Rows [row_begin, row_end) of the exact k-nearest-neighbour lists of x (f32 [N, D], dense from
// its buffer's start), given norms = |x_i|² (f32 [N]). Checked by the caller.
// prune: the bounds of x's tiles and row blocks for this shape (knn_prune.hpp), to skip tiles.
KnnResult knn_fused_rows(const Tensor& x, const Tensor& norms, int k, int64_t row_begin, int64_t row_end,
                         const KnnFusedShape& shape, int64_t pairs_per_dispatch = 0, const KnnPrune* prune = nullptr);

// The template values of knn_fused.wgsl for `shape` (the f32 register-tiled inner products); the
// subgroup-matrix variant (knn_subgroup_matrix.cpp) replaces the inner-product blocks.
kernels::Values knn_fused_values(const KnnFusedShape& shape);
// Rows whose blocks start streaming at one tile, the tile of their first point (knn_fused.wgsl):
// SURFGRAD_KNN_ROTATE_ROWS, else kKnnRotateRows (0: every block starts at the first point).
// H200, 1M x 50-D clusters sorted by cell, k = 90 (bench/knn_order_gpu.sh sweep): groups of 64
// rows (every workgroup its own tile) 4.82 s f32 / 3.45 s subgroup matrices, 1,024 rows 4.62 /
// 3.30, 4,096 4.67 / 3.38, 16,384 4.71 / 3.69, 65,536 4.76 / 4.12; unsorted and unrotated 5.08 / 4.87,
// unsorted in groups of 1,024 5.05 / 4.91 (the next call: no cost within its noise).
constexpr int64_t kKnnRotateRows = 1024;
int64_t knn_rotate_rows();

// Runs a compiled knn_fused.wgsl program over rows [row_begin, row_end) of n points in dispatches
// of about `pairs_per_dispatch` pairs (0: the adapter's default); args[0..1] are the lists
// ([row_end − row_begin, k] ids and keys), then the kernel's other bindings. With `prune` (a kernel
// built with tile skipping, its bounds the last binding): their parameters, `unit` the keys' units
// per squared unit of x; `unpruned` makes the same kernel without the test (the same bindings but
// the last), which takes over where the first dispatch skipped too little (kKnnPruneKeepAbove).
void knn_fused_dispatch(const kernels::Program& program, std::span<const kernels::Arg> args, int64_t n, int64_t d,
                        int k, int64_t row_begin, int64_t row_end, const KnnFusedShape& shape,
                        int64_t pairs_per_dispatch = 0, const KnnPrune* prune = nullptr, double unit = 1.0,
                        const std::function<kernels::Program()>& unpruned = {});

}  // namespace surfgrad
