// Checks of a map job before any GPU work: every option's range from the schema (named as the
// field, the CLI flag and the estimators' parameter, so Python, JavaScript and CLI users read the
// same message), and its estimated memory against the adapter's limits and the host's RAM.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "maps/knn_order.hpp"
#include "maps/list_blocks.hpp"
#include "maps/map_method.hpp"
#include "maps/number_text.hpp"
#include "platform/host_resources.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"
#include "surfgrad/map_pipeline.hpp"

namespace surfgrad {

namespace {

std::string mib(uint64_t bytes) { return number_text(std::round(double(bytes) / double(1 << 20))) + " MiB"; }

// "perplexity (--perplexity)", with the estimators' name where it differs: "iterations
// (--iterations, max_iter)".
std::string label(const MapOptionSpec& s) {
  std::string flags = s.cli;
  if (s.python[0] != 0 && std::string_view(s.python) != s.key) flags += std::string(", ") + s.python;
  return std::string(s.key) + " (" + flags + ")";
}

// The smallest job (points) for which the option's range is not empty, for the message that
// says why no value fits; 0 if none up to a million.
int64_t fewest_points(const MapOptionSpec& s, int64_t d) {
  for (int64_t n = 2; n <= 1000000; ++n) {
    double upper = std::min(s.hi, s.upper_for(n, std::max<int64_t>(d, n)));
    if (upper > s.lo || (upper == s.lo && !s.lo_open)) return n;
  }
  return 0;
}

}  // namespace

void check_map_option(const MapOptionSpec& s, double v, int64_t n, int64_t d) {
  if (s.type == MapOptionType::Choice) {
    if (!(v >= 0 && v < double(s.choices.size())))
      throw Error(ErrorKind::Value, label(s) + " must be one of " + map_option_range(s));
    return;
  }
  if (s.has_automatic && v == 0) return;
  double hi = s.hi;
  bool hi_open = s.hi_open;
  std::string range = map_option_range(s), why;
  if (n > 0 && s.upper_for) {
    double job_hi = s.upper_for(n, d);
    if (job_hi < hi || (job_hi == hi && hi_open)) {
      hi = job_hi, hi_open = false;
      if (s.type == MapOptionType::Integer) hi = std::floor(hi);
      if (hi < s.lo || (hi == s.lo && s.lo_open)) {
        int64_t fewest = fewest_points(s, d);
        throw Error(ErrorKind::Value, label(s) + ": no value fits a job of " + std::to_string(n) + " points (" +
                                          s.upper_why + ")" +
                                          (fewest > 0 ? "; map at least " + std::to_string(fewest) + " points" : ""));
      }
      std::string what = s.type == MapOptionType::Integer ? "an integer in " : "a number in ";
      range = (s.has_automatic ? "auto (0) or " : "") + what + (s.lo_open ? "(" : "[") + number_text(s.lo) + ", " +
              number_text(hi) + "] for " + std::to_string(n) + " points";
      why = s.upper_why;
    }
  }
  // NaN fails every comparison, so it fails here too.
  bool ok = (s.lo_open ? v > s.lo : v >= s.lo) && (hi_open ? v < hi : v <= hi);
  if (!ok)
    throw Error(ErrorKind::Value,
                label(s) + " must be " + range + ", got " + number_text(v) + (why.empty() ? "" : " (" + why + ")"));
}

namespace {

// Every option of the job's method (and the shared ones where `shared`) against its range.
void validate_options(const MapOptions& o, int64_t n, int64_t d, bool shared) {
  for (const MapOptionSpec& s : map_option_schema()) {
    if (!map_option_applies(s, o.method) || (!shared && s.method[0] == 0)) continue;
    check_map_option(s, s.get(o), n, d);
  }
}

}  // namespace

void validate(const TsneOptions& t, int64_t n) {
  MapOptions o;
  o.method = MapMethod::Tsne;
  o.tsne = t;
  validate_options(o, n, 0, false);
}

void validate(const UmapOptions& u, int64_t n) {
  MapOptions o;
  o.method = MapMethod::Umap;
  o.umap = u;
  validate_options(o, n, 0, false);
}

void validate_layout_options(const MapOptions& o, int64_t n) { validate_options(o, n, 0, false); }

void validate(const MapOptions& o, int64_t n, int64_t d) {
  if (n < 2 || d < 1)
    throw Error(ErrorKind::Value, "map: need at least 2 points of at least 1 dimension, got " + std::to_string(n) +
                                      " × " + std::to_string(d));
  if (n >= (int64_t(1) << 31) - 1)
    throw Error(ErrorKind::Value, "map: " + std::to_string(n) + " points: at most 2^31 − 2 (32-bit point indices)");
  validate_options(o, n, d, true);
  if (o.init.defined() && (o.init.rank() != 2 || o.init.shape(0) != n || o.init.shape(1) != 2))
    throw Error(ErrorKind::Shape,
                "map: init (the starting positions) must be [" + std::to_string(n) + ", 2], got " + o.init.describe());
  // The kNN graph's edge lists (N·k entries plus N + 1 offsets) are indexed with 32 bits.
  int k = map_neighbours(o, n);
  if (double(n) * double(k + 1) + 1 >= double(int64_t(1) << 31))
    throw Error(ErrorKind::LimitExceeded, "map: " + std::to_string(n) + " points × " + std::to_string(k) +
                                              " neighbours exceed the 2^31 edges of the kNN graph; lower the "
                                              "neighbours (--perplexity / --n-neighbors) or map fewer points");
}

int map_neighbours(const MapOptions& o, int64_t n) { return map_method(o.method).neighbours(o, n); }

namespace {
// On CPU adapters below kExactKnnLimit: exact kNN on this many components, where the points have
// more than twice as many dimensions.
constexpr int kCpuPcaComponents = 100;
}  // namespace

int map_pca_components(const MapOptions& o, int64_t n, int64_t d, bool cpu_adapter) {
  // Exact neighbours are found in the input space itself, as openTSNE and umap-learn do; past
  // kExactKnnLimit points descent runs on 50 principal components (in 768-D it would be 15×
  // slower, and recall on a sample is reported either way). On a CPU adapter exact kNN in many
  // dimensions is most of a map's time (MNIST 10k, 784-D, lavapipe on 2 cores: 14.3 s of a 33 s
  // t-SNE), so automatic PCA projects there too: to 100 components, not 50, for the map's
  // quality (t-SNE recall@10 / trustworthiness / 10-NN accuracy: 100 components 0.432 / 0.986 /
  // 0.952, 50 components 0.424 / 0.987 / 0.955, openTSNE on the exact 784-D lists 0.434 / 0.986
  // / 0.946, scikit-learn 0.433 / 0.987 / 0.948).
  // (Not below 2 × 100 points either: the components cannot outnumber the points, and exact kNN
  // of so few points is cheap in any dimension.)
  int automatic = n > kExactKnnLimit                                                        ? 50
                  : (cpu_adapter && d > 2 * kCpuPcaComponents && n > 2 * kCpuPcaComponents) ? kCpuPcaComponents
                                                                                            : 0;
  int p = o.pca_components < 0 ? automatic : o.pca_components;
  return p > 0 && d > p ? p : 0;
}

std::string describe_map_options(const MapOptions& o) {
  const MapMethodSpec& m = map_method(o.method);
  return std::string(m.title) + " (" + m.describe(o) + ")";
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
  // The exact kNN on points sorted by cell (knn_order.hpp; GPUs from kKnnOrderMinPoints, counted
  // on any adapter) also holds the sorted copy of the points, the order, its inverse and each
  // point's centre, and while the lists are mapped back one more list-sized array (knn_unorder).
  const uint64_t knn_dims = p > 0 ? p : D;
  const uint64_t sorted = n >= kKnnOrderMinPoints ? N * knn_dims * f4 + 3 * N * f4 + N * k * f4 : 0;
  uint64_t knn =
      approximate ? 2 * N * search * 8 + N * 16 * f4 + 2 * (N + 1 + N * search) * f4 + 2 * N * ((search + 31) / 32) * f4
                  : N * k * 8 + N * f4 + sorted;
  uint64_t edges = (N + 1 + N * k) * f4;
  // weights, edges, positions, repulsion, and on GPUs the FFT spread's order of the points by cell
  // (TsneCellOrder: order and (cell, rank) pairs)
  uint64_t layout = 2 * N * k * f4 + edges + 8 * N * 2 * f4 + N * 4 * f4 + 3 * N * f4;
  e.gpu_bytes = input + std::max(pca_work, std::max(knn, N * k * 8 + layout)) + (p > 0 ? N * p * f4 : 0);
  largest(p > 0 ? N * p * f4 : N * D * f4, p > 0 ? "the principal components" : "the points as one tensor (use --pca)");
  // t-SNE on descent's lists takes them in row blocks and their incoming edges in blocks of
  // targets (list_blocks.hpp; checked against the adapter in check_map_fits); UMAP and the exact
  // kernel need each as one tensor.
  if (!(approximate && map_method(o.method).lists_in_blocks)) {
    largest(N * search * f4, "the kNN lists");
    largest(edges, "the kNN graph's incoming edges");
    if (approximate) largest((N + 1 + N * search) * f4, "neighbour descent's incoming edges");
  }
  // Host: the kNN lists read back, incoming edges; UMAP's fuzzy union adds a hash table of the
  // N·k directed edges (~56 bytes each).
  uint64_t host = N * k * f4 * 3 + edges;
  host += map_method(o.method).extra_host_bytes(N, k);
  if (approximate) host = std::max(host, N * search * f4);
  e.host_bytes = host;
  return e;
}

void check_map_fits(const gpu::ContextPtr& ctx, const MapOptions& o, int64_t n, int64_t d, uint64_t extra_host_bytes) {
  validate(o, n, d);
  map_method(o.method).check_cost(o, n);
  MapMemoryEstimate e = estimate_map_memory(o, n, d);
  // On a CPU adapter (lavapipe) the GPU's buffers are host memory as well.
  uint64_t need = e.host_bytes + extra_host_bytes + (ctx->info().is_cpu ? e.gpu_bytes : 0);
  uint64_t have = platform::host_available_bytes();
  if (have > 0 && need > have)
    throw Error(ErrorKind::OutOfMemory, "map: " + std::to_string(n) + " points × " + std::to_string(d) +
                                            " dimensions need about " + mib(need) + " of host memory" +
                                            (ctx->info().is_cpu ? " (this CPU adapter's buffers included)" : "") +
                                            ", more than the " + mib(have) + " available; map fewer points");
  const int k = map_neighbours(o, n), pca = map_pca_components(o, n, d, ctx->info().is_cpu);
  const bool approximate = !knn_is_exact(*ctx, n, pca > 0 ? pca : d, o.knn, k);
  if (approximate && map_method(o.method).lists_in_blocks)  // names the blocks past kMaxListBlocks
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
