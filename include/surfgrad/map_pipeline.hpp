// The whole map job in one call: checks, optional PCA, kNN (exact or by descent, with a sampled
// recall), affinities and t-SNE or UMAP, with phase timings and memory peaks. `surfgrad map`,
// the Python package and the browser page are thin shells over this.
//
//   MapOptions opt;  opt.method = MapMethod::Umap;  opt.umap.n_neighbors = 30;
//   MapResult r = map_points(points, opt, [](const MapProgressEvent& e) {
//     std::printf("%s %lld/%lld\n", std::string(e.phase).c_str(), (long long)e.done, (long long)e.total);
//     return true;  // false cancels: map_points throws Error(ErrorKind::Cancelled)
//   });
//   // r.embedding: f32 [N, 2]; r.neighbours: the kNN graph; r.phases: (name, seconds)
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "surfgrad/knn.hpp"
#include "surfgrad/map_options.hpp"
#include "surfgrad/point_blocks.hpp"
#include "surfgrad/tensor.hpp"
#include "surfgrad/tsne.hpp"
#include "surfgrad/umap.hpp"

namespace surfgrad {

// A report from map_points. Phases, in order: "pca" (if any), "knn", "recall" (approximate kNN
// only), "affinities" (t-SNE) or "memberships" (UMAP), "optimise". Each phase reports done = 0
// when it starts and done = total when it ends; "optimise" also every 50 iterations or epochs,
// with the current positions.
struct MapProgressEvent {
  std::string_view phase;
  int64_t done = 0, total = 0;
  // During "optimise": the current f32 [N, 2] positions on the GPU (reading them is a sync); else null.
  const Tensor* embedding = nullptr;
};
// Return false to cancel the job: map_points then throws Error(ErrorKind::Cancelled).
using MapProgressFn = std::function<bool(const MapProgressEvent&)>;

struct MapPhaseTime {
  std::string name;  // as printed: "PCA to 50", "kNN (exact)", "kNN recall check", "affinities", ...
  double seconds = 0;
};

struct MapResult {
  Tensor embedding;        // f32 [N, 2]
  KnnResult neighbours;    // the kNN graph the layout used ([N, k], on the features kNN ran on)
  int k = 0;               // neighbours per point
  int pca_components = 0;  // components kNN ran on (0: the input itself)
  bool approximate_knn = false;
  double knn_recall = -1;  // sampled recall@k of the approximate kNN; −1 where exact or not measured
  std::vector<MapPhaseTime> phases;
  uint64_t gpu_peak_bytes = 0;   // the context's most-ever live buffer bytes (pool statistics)
  uint64_t host_peak_bytes = 0;  // the process's peak resident set (0 where the platform lacks it)
};

// Throws Error(ErrorKind::Value) naming the first option out of its schema's range, as field,
// CLI flag and estimator parameter ("perplexity (--perplexity) must be a number in (1, 33] for
// 100 points, got 40 (...)"), for a job of n points in d dimensions; where no value fits n, it
// says how many points would do. An init that is not [n, 2] is an Error(ErrorKind::Shape) (its
// values are checked by map_points). The first two check only the method's own options.
void validate(const TsneOptions& options, int64_t n);
void validate(const UmapOptions& options, int64_t n);
void validate(const MapOptions& options, int64_t n, int64_t d);
// One option's value (a choice's index) against its range, and the job's bound where n > 0.
void check_map_option(const MapOptionSpec& spec, double value, int64_t n = 0, int64_t d = 0);
// "t-SNE (perplexity 30, 750 iterations)": what a report says it ran.
std::string describe_map_options(const MapOptions& options);

// The neighbours per point a job uses (⌊3·perplexity⌋ for t-SNE, n_neighbors for UMAP), and the
// components kNN runs on (pca_components resolved; 0: none). Automatic PCA on a CPU adapter
// (cpu_adapter: lavapipe, SwiftShader) also projects points of more than 200 dimensions to 100,
// where exact kNN in the input space costs more than the map (map_options.cpp: what was measured).
int map_neighbours(const MapOptions& options, int64_t n);
int map_pca_components(const MapOptions& options, int64_t n, int64_t d, bool cpu_adapter = false);

// What a job of n points in d dimensions will hold at its peak, estimated from its largest
// tensors and host arrays.
struct MapMemoryEstimate {
  uint64_t gpu_bytes = 0;       // the input points included
  uint64_t host_bytes = 0;      // host arrays (kNN lists, edge lists, UMAP's union table)
  uint64_t largest_tensor = 0;  // the largest single tensor, against the adapter's limits
  std::string largest_name;
};
MapMemoryEstimate estimate_map_memory(const MapOptions& options, int64_t n, int64_t d);
// validate(), then refuses (Error LimitExceeded / OutOfMemory, with the estimate, the limit and
// what to change) a job whose largest tensor exceeds the adapter's buffer limits or whose memory
// exceeds the host's (on CPU adapters the GPU's buffers are host memory too). Call it before
// generating or loading points to fail at once; map_points calls it too.
// `extra_host_bytes`: what the caller holds besides (the Python estimators' float32 copy of
// the points), counted against the host's memory too.
void check_map_fits(const gpu::ContextPtr& ctx, const MapOptions& options, int64_t n, int64_t d,
                    uint64_t extra_host_bytes = 0);

// The map of f32 points (row blocks, e.g. from load_point_blocks; pass them by std::move so
// that the full-dimensional points are released once PCA has run). Refuses points that are all
// identical (no map to draw) or whose squared distances overflow f32 (standardise them), and
// throws Error(Value) if the layout becomes non-finite, naming the iteration.
MapResult map_points(PointBlocks points, const MapOptions& options, const MapProgressFn& progress = {});
MapResult map_points(const Tensor& points, const MapOptions& options, const MapProgressFn& progress = {});

// The layout alone, from a kNN graph computed elsewhere (surfgrad.distributed shards the search
// over a cluster and gathers the graph to one GPU): indices i32 [N, k] (rows of the map, each
// row's neighbours distinct, not itself), distances f32 [N, k] squared and ascending, k =
// map_neighbours(options, N). There are no points to take principal components of: the start is
// options.init, else seeded random positions (t-SNE N(0, 1e-4²), UMAP uniform in ±10).
// options.pca_components and recall_sample are not used. Phases: "affinities" or "memberships",
// "optimisation"; r.neighbours is the graph given.
MapResult map_graph(const KnnResult& graph, const MapOptions& options, const MapProgressFn& progress = {});

}  // namespace surfgrad
