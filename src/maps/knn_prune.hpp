// Tiles the exact kNN can skip on points sorted by cell (knn_order.hpp).
//
// After the sort, a group of consecutive tiles of points and a block of BM consecutive query rows
// each lie in a small ball (centre c, radius r). No point of the group is nearer to a row of the
// block than |c_q − c_g| − r_q − r_g (the triangle inequality). When that bound, squared and less
// the keys' rounding, exceeds every row's current bar (its k-th key plus |x_i|²: the distance a
// candidate must beat), no key of the group can pass, so the streaming kernel (knn_fused.wgsl, the
// f32 kernel and the subgroup-matrix one alike) skips its tiles without loading them. The lists are
// bit for bit the same: a skipped tile pushes nothing either way.
//
// The test runs once a group of tiles (kKnnPruneGroupTiles) (when the stream enters a new group), its
// sum over the dimensions by subgroups (at every tile, with a serial sum by one thread, it cost the
// f32 kernel 26% and the subgroup-matrix one 120% where nothing was skipped; H200, 1M × 50-D
// Gaussian, k = 90). What it costs now does not depend on how often it runs (groups of 4, 16 or 64
// tiles: 5.73, 5.83, 5.64 s against 5.29 without it): the kernel with the test is slower as such,
// so where the first dispatch skipped little the rest runs the kernel without it
// (kKnnPruneKeepAbove). One Gaussian cloud in 50-D skips nothing: the balls overlap everywhere
// (BENCHMARKS.md).
#pragma once
#include <cstdint>
#include <string>

#include "kernels/launch.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

// Tiles a group (`bench knn`, 1M × 50-D clusters, H200, one call; f32 kernel / subgroup matrices):
// 2 tiles skip 80% and take 2.45 / 3.55 s at k = 90, 2.18 / 1.75 s at k = 15; 4 tiles skip 75%,
// 2.10 / 2.44 s and 2.01 / 1.35 s; 8 tiles skip 69%, 2.33 / 2.46 s and 2.25 / 1.22 s.
constexpr int kKnnPruneGroupTiles = 4;
// SURFGRAD_KNN_PRUNE_GROUP (tiles a group, 1 to 64), else `fallback`.
int knn_prune_group_tiles(int fallback);
// Where the first dispatch of a kNN skipped less than this share of its (block, tile) pairs, the
// rest of the stream runs the kernel without the test (its cost, ~10% of the stream on the H200,
// for nothing: one Gaussian cloud, or `surfgrad map`'s built-in points: 1M × 50-D Gaussian, k = 90,
// 4.89 s against 5.29 without the test and 5.73 with it throughout).
constexpr double kKnnPruneKeepAbove = 0.05;

// Bounds of x's groups of `group_rows` points and blocks of `block_rows` rows (u32 words, f32 bits:
// each one's centre, radius and largest squared norm, D + 2 words), then one skip count a block.
struct KnnPrune {
  Tensor words;
  int64_t dims = 0, groups = 0, blocks = 0, group_tiles = 0;
  // Set by knn_fused_dispatch when the first dispatch skipped too little (kKnnPruneKeepAbove).
  mutable bool abandoned = false;
  bool defined() const { return words.defined(); }
  int64_t width() const { return dims + 2; }
  int64_t block_offset() const { return groups * width(); }
  int64_t stats_offset() const { return (groups + blocks) * width(); }
};

struct KnnPruneStats {
  int64_t skipped = 0, pairs = 0;  // (row block, tile) pairs skipped, of all a pass over the points streams
  bool abandoned = false;          // the test stopped after the first dispatch (kKnnPruneKeepAbove)
};

// The bounds of x (f32 [N, D], dense) for a kernel of BN = tile_rows, BM = block_rows, testing
// groups of group_tiles tiles.
KnnPrune knn_prune_bounds(const Tensor& x, int64_t tile_rows, int64_t block_rows, int group_tiles);

// Whether the sorted kNN skips tiles on this adapter: it needs subgroups; SURFGRAD_KNN_PRUNE=0 turns
// it off (default on; a value other than 0 or 1 is refused, the variable named).
bool knn_prune_enabled(const gpu::Context& ctx);

// What the kernel skipped (a readback of the blocks' counts): kept apart from the bounds so that
// these can be freed once the kernel is queued.
struct KnnPruneCounts {
  Tensor counts;  // u32, one a row block
  int64_t tiles = 0;
  bool abandoned = false;
  KnnPruneStats read() const;
};
KnnPruneCounts knn_prune_counts(const KnnPrune& p, int64_t tiles);

// The most recent pruned kNN's counts in this process (for `bench knn` and the tests), kept only
// while recording is on (off by default: keeping them costs a readback after each kNN).
void knn_prune_record_stats(bool on);
KnnPruneStats knn_prune_last_stats();
void knn_prune_set_last(const KnnPruneCounts& c);  // reads c back where recording is on

// Fills knn_fused.wgsl's {{PRUNE_*}} blocks of `v` for groups of group_tiles tiles (its LOAD and
// MAIN_BUILTINS already set; the kernel must be compiled with subgroups). binding: the bounds' (the kernel's
// last storage binding: the launch seam numbers them in order); row_bar: WGSL of a row's bar, in the kernel's key units
// plus |x_i|² (row thread `lid` of row `my_row`).
void knn_prune_values(kernels::Values& v, int binding, const std::string& row_bar, int group_tiles);
// The blocks' empty defaults (no skipping).
void knn_prune_values_off(kernels::Values& v);

}  // namespace surfgrad
