// Embedding maps (t-SNE, UMAP) and what they stand on: k-nearest neighbours on the GPU.
//
//   KnnResult nn = knn_exact(x, 15);      // x: f32 [N, D] on the GPU
//   // nn.indices: i32 [N, 15], nearest first (a point is never its own neighbour)
//   // nn.distances: f32 [N, 15], squared Euclidean distances
#pragma once
#include <vector>

#include "surfgrad/reference.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct KnnResult {
  Tensor indices;    // i32 [N, k]
  Tensor distances;  // f32 [N, k], squared Euclidean, ascending
};

// Exact k-nearest neighbours by brute force: squared distances |x|² + |y|² − 2·x·y for blocks of
// rows through the tuned matmul (the other operand a transposed view, no copy), then a top-k
// selection per row. block_rows = 0 picks a block whose distance tile fits half the adapter's
// binding limit (and 256 MiB). segment = columns per selection thread: 0 picks max(4k, 512) on GPUs
// (many threads), a whole row on CPU adapters (fewer list fills).
KnnResult knn_exact(const Tensor& x, int k, int64_t block_rows = 0, int64_t segment = 0);
// The same for the rows [row_begin, row_end) only (against all N points): [row_end − row_begin, k].
KnnResult knn_exact_rows(const Tensor& x, int k, int64_t row_begin, int64_t row_end, int64_t block_rows = 0,
                         int64_t segment = 0);

// Approximate k-nearest neighbours by neighbour descent: random starting lists, then
// `iterations` rounds in which every point keeps the k closest among B(i) and B(u) for u in
// B(i), where B(i) is i's neighbours plus up to `reverse` points that list i (the reverse
// neighbours, which make descent converge far faster; −1: min(k, 16)). O(N·(k+r)²·D) a round
// instead of O(N²·D); deterministic for a seed on a device.
KnnResult knn_approx(const Tensor& x, int k, int iterations = 10, uint64_t seed = 1, int reverse = -1);
// Share of the exact lists' entries that the approximate lists found (recall@k).
double knn_recall(const KnnResult& approx, const KnnResult& exact);
// The same measured on `sample` points (eight runs of consecutive rows spread over the set),
// against exact lists computed for those points only.
double knn_recall_sampled(const Tensor& x, const KnnResult& approx, int64_t sample = 1000);

// The neighbours t-SNE and UMAP use: exact up to kExactKnnLimit points, else neighbour descent.
constexpr int64_t kExactKnnLimit = 20000;
KnnResult nearest_neighbours(const Tensor& x, int k, uint64_t seed = 1);

}  // namespace surfgrad

#include <functional>
#include <string>

namespace surfgrad {

// How t-SNE computes its repulsion: Exact sums all N² pairs; Fft interpolates on a grid and
// convolves by FFT (FIt-SNE's method: O(N) in the points); Auto takes Fft above 5,000 points.
enum class Repulsion { Auto, Exact, Fft };

struct TsneOptions {
  double perplexity = 30;
  int iterations = 750;
  int exaggeration_iterations = 250;  // early exaggeration, with momentum 0.5; then 0.8
  double exaggeration = 12;
  double learning_rate = 0;  // 0: max(N / exaggeration, 50), as openTSNE (Belkina et al.: N / 12)
  double max_step_norm = 5;  // updates are clipped to this length (openTSNE's default); 0: off
  uint64_t seed = 1;
  Repulsion repulsion = Repulsion::Auto;
  double grid_spacing = 0.5;  // FFT grid: at most this far between nodes (embedding units)
  bool pca_init = true;  // start from the first two principal components scaled to std 1e-4
                         // (as openTSNE), else from N(0, 1e-4²)
};
// Called with iteration 0 once the kNN graph and affinities are ready, then every 50 iterations.
using MapProgress = std::function<void(int iteration, int total)>;

// t-SNE of f32 [N, D] points to f32 [N, 2]: exact kNN (k = 3·perplexity), per-point bandwidths
// by bisection, symmetrised sparse P; attraction over the kNN graph (deterministic: incoming
// edges are gathered, not scattered with atomics); repulsion exact or by FFT-accelerated
// interpolation (deterministic too: the grid sums are 64-bit integers); momentum and gains as
// the reference implementation.
// `neighbours`, where given, are the k = ⌊3·perplexity⌋ nearest neighbours (as
// nearest_neighbours gives them); else they are computed.
Tensor tsne(const Tensor& x, const TsneOptions& options = {}, const MapProgress& progress = {},
            const KnnResult* neighbours = nullptr);
// The k t-SNE uses for a perplexity.
int tsne_neighbours(double perplexity, int64_t n);

// The repulsion term alone, for f32 positions [N, 2]: [N, 4] rows (Σ_j q_ij²·(y_i − y_j),
// Σ_{j≠i} q_ij, 0) with q_ij = 1 / (1 + |y_i − y_j|²). Auto means Fft here.
Tensor tsne_repulsion(const Tensor& y, Repulsion method = Repulsion::Auto, double grid_spacing = 0.5);

struct MapQuality {
  double knn_recall = 0;       // share of each point's 10 nearest neighbours in D kept in 2-D
  double knn_accuracy = -1;    // 10-NN majority-vote label accuracy in 2-D (−1 without labels)
  double trustworthiness = 0;  // Venna & Kaski's T(10), over a sample of up to 10,000 points
  double kl_divergence = 0;    // t-SNE's KL(P‖Q) on a sample of up to 2,000 points (perplexity 30)
};
// labels: i32 [N] or an undefined Tensor.
MapQuality evaluate_map(const Tensor& x, const Tensor& embedding, const Tensor& labels, int k = 10);

// Trustworthiness T(k) (Venna & Kaski 2001): 1 − 2/(S·k·(2N − 3k − 1)) · Σ (r(i,j) − k) over the
// 2-D k-nearest neighbours j of each sampled point i that are not among its k nearest in D,
// r(i,j) being j's rank by distance from i in D. Sampled points: every ⌈N / sample⌉-th.
// block_rows: sampled rows per distance block (0: sized from the binding limit).
double trustworthiness(const Tensor& x, const Tensor& embedding, int k = 10, int64_t sample = 10000,
                       int64_t block_rows = 0);

// t-SNE's objective KL(P‖Q) restricted to a sample of every ⌈N / sample⌉-th point, computed
// exactly in float64 on the host: P from the sample's D-dimensional distances at `perplexity`
// (bisection, symmetrised), Q ∝ 1 / (1 + |y_i − y_j|²) over the sample.
double kl_divergence(const Tensor& x, const Tensor& embedding, double perplexity = 30, int64_t sample = 2000);

}  // namespace surfgrad

namespace surfgrad {

// A set of points as row blocks of f32 [n_b, D] tensors. A tensor must fit one GPU binding
// (2 GiB on most GPUs, 128 MiB on lavapipe); a million 768-D points are 3 GiB.
struct PointBlocks {
  std::vector<Tensor> blocks;
  int64_t rows() const;
  int64_t dims() const;
  // All rows as one tensor; throws (naming the size, the limit and --pca) where they do not fit.
  Tensor single() const;
};

// Points as f32 [N, D] from .npy (any float or int dtype; more axes flattened), IDX (plain or
// gzip, e.g. MNIST images) or CSV (numbers, an optional header line). Refuses empty files and
// NaN or infinite values, naming the point. Duplicate points are kept (they get distance 0).
// Blocks hold at most max_block_bytes (0: a quarter of the adapter's binding limit).
PointBlocks load_point_blocks(const gpu::ContextPtr& ctx, const std::string& path, uint64_t max_block_bytes = 0);
Tensor load_points(const gpu::ContextPtr& ctx, const std::string& path);  // load_point_blocks(…).single()
// Labels (i32 [n]) from the same formats; the count must be n.
Tensor load_labels(const gpu::ContextPtr& ctx, const std::string& path, int64_t n);
// The built-in data set: n points of 10 Gaussian clusters in 768 dimensions, labels 0–9
// (point i in cluster i mod 10), generated on the GPU in blocks of 32,768 rows: the same
// points whatever the adapter's limits.
PointBlocks builtin_point_blocks(const gpu::ContextPtr& ctx, int64_t n, Tensor& labels);
Tensor builtin_points(const gpu::ContextPtr& ctx, int64_t n, Tensor& labels);
// Writes OUT.npy (f32 [N, 2]), OUT.csv (x,y[,label]) and OUT.png (coloured by label).
void write_outputs(const std::string& out, const Tensor& embedding, const Tensor& labels);

}  // namespace surfgrad

namespace surfgrad {

struct PcaResult {
  Tensor scores;                            // [N, components]: centred points on the components
  Tensor mean;                              // [D]
  std::vector<double> explained_variance;  // per component, descending
};
// Randomized PCA: a Gaussian sketch, `power_iterations` subspace iterations, then the exact
// decomposition of the small projected problem. Deterministic for a seed on a device.
PcaResult pca(const Tensor& x, int components, uint64_t seed = 0, int power_iterations = 2);
// The same over row blocks (each pass over the data goes block by block): the scores are one
// tensor [N, components].
PcaResult pca(const PointBlocks& x, int components, uint64_t seed = 0, int power_iterations = 2);

}  // namespace surfgrad

namespace surfgrad {

struct UmapOptions {
  int n_neighbors = 15;
  double min_dist = 0.1;
  int epochs = 0;  // 0: 500 up to 10,000 points, else 200 (umap-learn's defaults)
  double learning_rate = 1.0;
  double negative_sample_rate = 5;
  uint64_t seed = 1;
};
// UMAP of f32 [N, D] points to f32 [N, 2]: fuzzy simplicial set from the kNN graph (exact up to
// 20,000 points, neighbour descent beyond)
// (bisection for σ, fuzzy union), PCA initialisation, then per-epoch updates of all points with
// umap-learn's gradients and negative sampling (deterministic: no edge-by-edge races).
Tensor umap(const Tensor& x, const UmapOptions& options = {}, const MapProgress& progress = {},
            const KnnResult* neighbours = nullptr);  // n_neighbors neighbours, where given

}  // namespace surfgrad
