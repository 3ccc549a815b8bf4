// k-nearest neighbours on the GPU, exact and by neighbour descent.
//
//   KnnResult nn = knn_exact(x, 15);      // x: f32 [N, D] on the GPU
//   // nn.indices: i32 [N, 15], nearest first (a point is never its own neighbour)
//   // nn.distances: f32 [N, 15], squared Euclidean distances
#pragma once
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct KnnResult {
  Tensor indices;    // i32 [N, k]
  Tensor distances;  // f32 [N, k], squared Euclidean, ascending
  // Lists past one storage binding (N·k·4 bytes over the adapter's maxStorageBufferBindingSize:
  // t-SNE's k = 90 at 10M points is 3.6 GB against NVIDIA's 2 GiB) come from neighbour descent
  // as row blocks instead, with `indices` and `distances` left empty: block b holds the rows
  // [b·block_rows, min(N, (b + 1)·block_rows)). t-SNE takes them as they are.
  std::vector<Tensor> index_blocks, distance_blocks;
  int64_t block_rows = 0;

  bool blocked() const { return !index_blocks.empty(); }
  int64_t rows() const;
  int64_t k() const;
  // Both lists into host memory (rows() × k() each, C order), blocked or not; distances_out may
  // be null (the ids only).
  void to_host(int32_t* indices_out, float* distances_out) const;
  // The rows [begin, end) as one plain result, blocked or not (a sample for recall, say).
  KnnResult rows_between(int64_t begin, int64_t end) const;
};

// Exact k-nearest neighbours by brute force, in one streaming kernel: a workgroup owns a block of
// rows and runs over all N points in tiles, with the inner products register-tiled like the
// tuned matmul and each row's k best kept by a threshold and a small queue; no N×N (or block×N)
// distance matrix is ever written. Ties are broken by the smaller index, with one exception: on
// GPUs from 300,000 points the points are first sorted by cell (src/maps/knn_order.hpp; 1M × 50-D,
// k = 90 on an H200: 3.4 s against 4.9 on tensor cores), and ties between equal distances go to
// the smaller index in that order, so a row's list may differ from knn_exact_rows's for the same
// row where distances tie (SURFGRAD_KNN_ORDER=none: the smaller index always). On sorted points
// the kernel also skips groups of tiles that no row of a block can use, by the balls around them
// (src/maps/knn_prune.hpp; the same lists; clustered data gains most: 1M × 50-D clusters, k = 90,
// 5.4 → 2.1 s on an H200; SURFGRAD_KNN_PRUNE=0 turns it off). x must fit one storage binding
// (reduce D with pca() first at millions of points).
KnnResult knn_exact(const Tensor& x, int k);
// The same for the rows [row_begin, row_end) only (against all N points): [row_end − row_begin, k].
KnnResult knn_exact_rows(const Tensor& x, int k, int64_t row_begin, int64_t row_end);
// The path knn_exact replaced, kept as its benchmark baseline: squared distances for blocks of
// rows through the tuned matmul, then a top-k selection per row. block_rows = 0 picks a block
// whose distance tile fits half the adapter's binding limit (and 256 MiB); segment = columns per
// selection thread (0: max(4k, 512) on GPUs, a whole row on CPU adapters).
KnnResult knn_exact_blocked(const Tensor& x, int k, int64_t row_begin, int64_t row_end, int64_t block_rows = 0,
                            int64_t segment = 0);

// Approximate k-nearest neighbours by neighbour descent: random starting lists, then
// `iterations` rounds in which every point keeps the k closest among B(i) and B(u) for u in
// B(i), where B(i) is i's neighbours plus up to `reverse` points that list i (the reverse
// neighbours, which make descent converge far faster; −1: min(k, 16)). O(N·(k+r)²·D) a round
// instead of O(N²·D); deterministic for a seed on a device.
KnnResult knn_approx(const Tensor& x, int k, int iterations = 10, uint64_t seed = 1, int reverse = -1);
// Rounds of the same descent started from a given graph instead of random lists: `graph` is i32
// [N, k] of x's rows (−1: an empty slot). Used to refine a graph merged from parts computed apart
// (surfgrad.distributed: the union of per-cluster lists, one round across clusters). Each list
// only improves; deterministic on a device.
KnnResult knn_refine(const Tensor& x, const Tensor& graph, int iterations = 1, int reverse = -1);
// Share of the exact lists' entries that the approximate lists found (recall@k).
double knn_recall(const KnnResult& approx, const KnnResult& exact);
// The same measured on `sample` points (eight runs of consecutive rows spread over the set),
// against exact lists computed for those points only. Only approx.indices is read.
double knn_recall_sampled(const Tensor& x, const KnnResult& approx, int64_t sample = 1000);

// How t-SNE and UMAP find their neighbours. Auto: exact up to kExactKnnLimit points on every
// adapter, and on GPUs (not CPU adapters) while N²·D ≤ kExactPairWorkOnGpu, where the streaming
// exact kernel beats neighbour descent (measured on an H100, BENCHMARKS.md: at 4M × 50-D exact
// 65–67 s, descent 71–80 s at k = 15 and 90), and its lists of k (when given) fit one binding;
// descent past that.
enum class KnnMethod { Auto, Exact, Descent };
constexpr int64_t kExactKnnLimit = 20000;
constexpr double kExactPairWorkOnGpu = 1e15;  // 4.5M points in 50-D
bool knn_is_exact(const gpu::Context& ctx, int64_t n, int64_t d, KnnMethod method, int k = 0);
KnnResult nearest_neighbours(const Tensor& x, int k, uint64_t seed = 1, KnnMethod method = KnnMethod::Auto);

}  // namespace surfgrad
