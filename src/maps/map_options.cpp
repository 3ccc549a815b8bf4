// Checks of a map job before any GPU work: every option's range (named as the field and as the
// CLI option, so Python, JavaScript and CLI users read the same message), and its estimated
// memory against the adapter's limits and the host's RAM.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string>

#include "maps/list_blocks.hpp"
#include "platform/host_resources.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"
#include "surfgrad/map_pipeline.hpp"

namespace surfgrad {

namespace {

// Option values as a reader wrote them: 30, 0.5, 1e+06.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

[[noreturn]] void out_of_range(const std::string& field, const std::string& flag, const std::string& range, double got,
                               const std::string& why = "") {
  throw Error(ErrorKind::Value,
              field + " (" + flag + ") must be " + range + ", got " + num(got) + (why.empty() ? "" : " (" + why + ")"));
}

// In [lo, hi] and finite (NaN fails every comparison, so it fails here too).
void check_closed(const std::string& field, const std::string& flag, double v, double lo, double hi) {
  if (!(v >= lo && v <= hi)) out_of_range(field, flag, "in [" + num(lo) + ", " + num(hi) + "]", v);
}

std::string mib(uint64_t bytes) { return num(std::round(double(bytes) / double(1 << 20))) + " MiB"; }

constexpr int kMaxNeighbours = 128;  // the kNN kernels keep at most 128 per point
constexpr double kMaxIterations = 1e6;

}  // namespace

void validate(const TsneOptions& o, int64_t n) {
  // t-SNE uses k = ⌊3·perplexity⌋ neighbours (openTSNE's choice): at most 128 (the kNN kernels'
  // lists), at most N − 1, and the bisection for σ needs perplexity > 1.
  double upper = std::min((kMaxNeighbours + 1) / 3.0, double(n - 1) / 3.0);
  bool ok = o.perplexity > 1 && 3 * o.perplexity <= double(n - 1) && std::floor(3 * o.perplexity) <= kMaxNeighbours;
  if (!ok)
    out_of_range(
        "perplexity", "--perplexity", "in (1, " + num(upper) + "] for " + std::to_string(n) + " points", o.perplexity,
        "t-SNE uses k = ⌊3·perplexity⌋ neighbours: at most 128, and at most (N − 1) = " + std::to_string(n - 1));
  check_closed("iterations", "--iterations", o.iterations, 1, kMaxIterations);
  check_closed("exaggeration_iterations", "--exaggeration-iterations", o.exaggeration_iterations, 0, kMaxIterations);
  if (!(o.exaggeration > 0 && o.exaggeration <= 1000))
    out_of_range("exaggeration", "--early-exaggeration", "in (0, 1000]", o.exaggeration,
                 "12 is usual; 0 would divide the automatic learning rate by zero");
  if (!(o.learning_rate == 0 || (o.learning_rate > 0 && o.learning_rate <= 1e9)))
    out_of_range("learning_rate", "--learning-rate", "0 (automatic: max(N / exaggeration, 50)) or in (0, 1e9]",
                 o.learning_rate);
  check_closed("max_step_norm", "--max-step-norm", o.max_step_norm, 0, 1e6);
  if (!(o.grid_spacing > 0 && o.grid_spacing <= 100))
    out_of_range("grid_spacing", "--grid-spacing", "in (0, 100]", o.grid_spacing);
}

void validate(const UmapOptions& o, int64_t n) {
  int64_t upper = std::min<int64_t>(kMaxNeighbours, n - 1);
  if (o.n_neighbors < 2 || o.n_neighbors > upper)
    out_of_range("n_neighbors", "--n-neighbors",
                 "in [2, " + std::to_string(upper) + "] for " + std::to_string(n) + " points", o.n_neighbors,
                 "at most 128 and at most N − 1");
  check_closed("min_dist", "--min-dist", o.min_dist, 0, 1);
  if (!(o.epochs == 0 || (o.epochs >= 1 && o.epochs <= kMaxIterations)))
    out_of_range("epochs", "--epochs", "0 (automatic: 500 up to 10,000 points, else 200) or in [1, 1e6]", o.epochs);
  if (!(o.learning_rate > 0 && o.learning_rate <= 1000))
    out_of_range("learning_rate", "--learning-rate", "in (0, 1000]", o.learning_rate);
  if (!(o.negative_sample_rate > 0 && o.negative_sample_rate <= 1000))
    out_of_range("negative_sample_rate", "--negative-sample-rate", "in (0, 1000]", o.negative_sample_rate);
}

void validate(const MapOptions& o, int64_t n, int64_t d) {
  if (n < 2 || d < 1)
    throw Error(ErrorKind::Value, "map: need at least 2 points of at least 1 dimension, got " + std::to_string(n) +
                                      " × " + std::to_string(d));
  if (n >= (int64_t(1) << 31) - 1)
    throw Error(ErrorKind::Value, "map: " + std::to_string(n) + " points: at most 2^31 − 2 (32-bit point indices)");
  if (o.method == MapMethod::Tsne)
    validate(o.tsne, n);
  else
    validate(o.umap, n);
  if (o.pca_components != -1 && (o.pca_components < 0 || o.pca_components > std::min(n, d)))
    out_of_range("pca_components", "--pca",
                 "-1 (automatic), 0 (off) or in [1, " + std::to_string(std::min(n, d)) + "] (the points' " +
                     std::to_string(d) + " dimensions, at most N)",
                 o.pca_components);
  if (o.init.defined() && (o.init.rank() != 2 || o.init.shape(0) != n || o.init.shape(1) != 2))
    throw Error(ErrorKind::Shape,
                "map: init (the starting positions) must be [" + std::to_string(n) + ", 2], got " + o.init.describe());
  if (o.recall_sample < 0 || o.recall_sample > std::numeric_limits<int32_t>::max())
    out_of_range("recall_sample", "--recall-sample", "in [0, 2^31 - 1] (0: skip the check; at most N are used)",
                 double(o.recall_sample));
  // The kNN graph's edge lists (N·k entries plus N + 1 offsets) are indexed with 32 bits.
  int k = map_neighbours(o, n);
  if (double(n) * double(k + 1) + 1 >= double(int64_t(1) << 31))
    throw Error(ErrorKind::LimitExceeded, "map: " + std::to_string(n) + " points × " + std::to_string(k) +
                                              " neighbours exceed the 2^31 edges of the kNN graph; lower the "
                                              "neighbours (--perplexity / --n-neighbors) or map fewer points");
}

int map_neighbours(const MapOptions& o, int64_t n) {
  if (o.method == MapMethod::Umap) return o.umap.n_neighbors;
  return int(std::min<double>(double(n - 1), std::floor(3 * o.tsne.perplexity)));
}

int map_pca_components(const MapOptions& o, int64_t n, int64_t d) {
  // Exact neighbours are found in the input space itself, as openTSNE and umap-learn do; past
  // kExactKnnLimit points descent runs on 50 principal components (in 768-D it would be 15×
  // slower, and recall on a sample is reported either way).
  int p = o.pca_components < 0 ? (n > kExactKnnLimit ? 50 : 0) : o.pca_components;
  return p > 0 && d > p ? p : 0;
}

MapMemoryEstimate estimate_map_memory(const MapOptions& o, int64_t n, int64_t d) {
  const uint64_t N = uint64_t(n), D = uint64_t(d), f4 = 4;
  uint64_t k = uint64_t(map_neighbours(o, n)), p = uint64_t(map_pca_components(o, n, d));
  // Descent's lists take more memory than the exact kernel's: counted wherever Auto might pick it.
  bool approximate = o.knn == KnnMethod::Descent || (o.knn == KnnMethod::Auto && n > kExactKnnLimit);
  uint64_t search = approximate ? std::max<uint64_t>(k, 48) : k;
  MapMemoryEstimate e;
  auto largest = [&](uint64_t bytes, const std::string& name) {
    if (bytes > e.largest_tensor) e.largest_tensor = bytes, e.largest_name = name;
  };
  uint64_t input = N * D * f4;
  uint64_t pca_work = p > 0 ? N * (p + 10) * f4 * 3 + N * p * f4 : 0;  // sketches and scores
  // kNN: result lists (indices + distances); descent keeps two pairs, reverse lists, and the
  // incoming-edge CSR they are sampled from (and its scratch); exact streams (its lists and the
  // points' norms only).
  // (+ descent's new-bits: two halves of ⌈search/32⌉ words a point)
  uint64_t knn =
      approximate ? 2 * N * search * 8 + N * 16 * f4 + 2 * (N + 1 + N * search) * f4 + 2 * N * ((search + 31) / 32) * f4
                  : N * k * 8 + N * f4;
  uint64_t edges = (N + 1 + N * k) * f4;
  uint64_t layout = 2 * N * k * f4 + edges + 8 * N * 2 * f4 + N * 4 * f4;  // weights, edges, positions, repulsion
  e.gpu_bytes = input + std::max(pca_work, std::max(knn, N * k * 8 + layout)) + (p > 0 ? N * p * f4 : 0);
  largest(p > 0 ? N * p * f4 : N * D * f4, p > 0 ? "the principal components" : "the points as one tensor (use --pca)");
  // t-SNE on descent's lists takes them in row blocks and their incoming edges in blocks of
  // targets (list_blocks.hpp; checked against the adapter in check_map_fits); UMAP and the exact
  // kernel need each as one tensor.
  if (!(approximate && o.method == MapMethod::Tsne)) {
    largest(N * search * f4, "the kNN lists");
    largest(edges, "the kNN graph's incoming edges");
    if (approximate) largest((N + 1 + N * search) * f4, "neighbour descent's incoming edges");
  }
  // Host: the kNN lists read back, incoming edges; UMAP's fuzzy union adds a hash table of the
  // N·k directed edges (~56 bytes each).
  uint64_t host = N * k * f4 * 3 + edges;
  if (o.method == MapMethod::Umap) host += N * k * (56 + 2 * f4);
  if (approximate) host = std::max(host, N * search * f4);
  e.host_bytes = host;
  return e;
}

void check_map_fits(const gpu::ContextPtr& ctx, const MapOptions& o, int64_t n, int64_t d) {
  validate(o, n, d);
  MapMemoryEstimate e = estimate_map_memory(o, n, d);
  // On a CPU adapter (lavapipe) the GPU's buffers are host memory as well.
  uint64_t need = e.host_bytes + (ctx->info().is_cpu ? e.gpu_bytes : 0);
  uint64_t have = platform::host_available_bytes();
  if (have > 0 && need > have)
    throw Error(ErrorKind::OutOfMemory, "map: " + std::to_string(n) + " points × " + std::to_string(d) +
                                            " dimensions need about " + mib(need) + " of host memory" +
                                            (ctx->info().is_cpu ? " (this CPU adapter's buffers included)" : "") +
                                            ", more than the " + mib(have) + " available; map fewer points");
  const int k = map_neighbours(o, n);
  const bool approximate =
      !knn_is_exact(*ctx, n, map_pca_components(o, n, d) > 0 ? map_pca_components(o, n, d) : d, o.knn, k);
  if (approximate && o.method == MapMethod::Tsne)  // names the blocks past kMaxListBlocks
    list_block_rows(*ctx, n, std::max(k, 48));
  // The exact kernel writes its lists as one tensor each (Auto picks it only where they fit).
  if (!approximate && uint64_t(n) * uint64_t(k) * 4 > ctx->limits().largest_binding())
    throw Error(ErrorKind::LimitExceeded, "map: exact kNN lists of " + std::to_string(n) + " points × " +
                                              std::to_string(k) +
                                              " neighbours are more than the adapter binds in "
                                              "one buffer; use --knn descent (it keeps them in blocks), fewer "
                                              "neighbours or fewer points");
  uint64_t limit = ctx->limits().largest_binding();
  if (limit > 0 && e.largest_tensor > limit)
    throw Error(ErrorKind::LimitExceeded, "map: " + e.largest_name + " of " + std::to_string(n) +
                                              " points would take " + mib(e.largest_tensor) +
                                              ", more than the adapter binds in one buffer (" + mib(limit) +
                                              "); map fewer points, fewer neighbours or fewer PCA components");
}

}  // namespace surfgrad
