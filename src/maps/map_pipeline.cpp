// map_points: the one call behind `surfgrad map`, the Python package and the browser page.
// Order and arguments of every step are those `surfgrad map` always used, so its maps are
// bitwise what they were: PCA (seeded), kNN (seeded), recall on a sample, then tsne()/umap()
// with the graph passed in.
#include "surfgrad/map_pipeline.hpp"

#include <chrono>
#include <cmath>
#include <string>

#include "maps/input_scale.hpp"
#include "maps/layout_prewarm.hpp"
#include "maps/map_method.hpp"
#include "platform/host_resources.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"
#include "surfgrad/pca.hpp"

namespace surfgrad {

namespace {

// Phase timings: each phase ends with a sync so that its GPU work is counted in it.
class PhaseClock {
 public:
  explicit PhaseClock(gpu::ContextPtr ctx) : ctx_(std::move(ctx)) {}
  double lap(bool sync = true) {
    if (sync) ctx_->sync();
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }

 private:
  gpu::ContextPtr ctx_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Rows scaled to unit length (the cosine metric): on unit vectors |a − b|² = 2 − 2·cos(a, b), so
// euclidean neighbours, PCA and layouts on them are cosine ones.
void normalise_rows(PointBlocks& x) {
  for (Tensor& b : x.blocks) {
    Tensor norms = (b * b).sum({1}, true).sqrt();
    if (norms.min().to_vector<float>()[0] == 0)
      throw Error(ErrorKind::Value,
                  "map: the cosine metric (--metric cosine) needs every point to be non-zero; "
                  "at least one point is all zeros");
    b = div(b, norms);
  }
}

template <typename Report>
void run_layout(const Tensor& features, const MapOptions& options, MapResult& r, PhaseClock& clock,
                const Report& report) {
  const MapMethodSpec& method = map_method(options.method);
  report(method.graph_phase, 0, 1);
  // The finiteness check's sum is read one report late, without a sync (the GPU keeps the steps
  // queued since), except at the last step; an error names the step whose sum it was.
  gpu::PendingDownload sum_ahead;
  int sum_step = 0;
  auto check_sum = [&](int total) {
    float s = 0;
    sum_ahead.wait(&s);
    if (!std::isfinite(s))
      throw Error(ErrorKind::Value, std::string(map_method_name(options.method)) +
                                        ": the map became non-finite (NaN or infinity) by " + method.step + " " +
                                        std::to_string(sum_step) + " of " + std::to_string(total) +
                                        "; standardise the input (zero mean, unit variance per dimension), or "
                                        "lower " +
                                        method.calmer);
  };
  auto on_step = [&](int it, int total, const Tensor& y) {
    if (it == 0) {  // the layout synced: the graph is built
      r.phases.push_back({method.graph_phase, clock.lap(false)});
      report(method.graph_phase, 1, 1);
    } else if (options.check_finite) {
      // A sum is NaN or infinite as soon as one coordinate is; one scalar comes back.
      if (sum_ahead.pending()) check_sum(total);
      sum_ahead = y.sum().to_host_later();
      sum_step = it;
      if (it == total) check_sum(total);
    }
    report("optimise", it, total, &y);
  };
  const Tensor* start = options.init.defined() ? &options.init : (r.embedding.defined() ? &r.embedding : nullptr);
  r.embedding = method.layout(features, options, on_step, &r.neighbours, start);
}

}  // namespace

// Calls `progress` with a phase's state; throws Cancelled when it returns false. Shared by
// map_points and map_graph.
static auto phase_reporter(const MapProgressFn& progress) {
  return [&progress](std::string_view phase, int64_t done, int64_t total, const Tensor* embedding = nullptr) {
    if (progress && !progress(MapProgressEvent{phase, done, total, embedding}))
      throw Error(ErrorKind::Cancelled, "map: cancelled by the progress callback during " + std::string(phase) + " (" +
                                            std::to_string(done) + "/" + std::to_string(total) + ")");
  };
}

MapResult map_points(PointBlocks x, const MapOptions& options, const MapProgressFn& progress) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (x.blocks.empty() || x.rows() == 0) throw Error(ErrorKind::Value, "map: no points");
  auto ctx = x.blocks[0].context();
  const int64_t n = x.rows(), d = x.dims();
  check_map_fits(ctx, options, n, d);

  MapResult r;
  PhaseClock clock(ctx);
  auto report = phase_reporter(progress);
  // The layout's kernels compile on worker threads while PCA and the kNN run (cold start).
  prewarm_map_tensor_ops(ctx, options, n, d);  // the input checks' and PCA's, needed first
  prewarm_layout_kernels(ctx, options, n, map_neighbours(options, n));

  normalise_input_scale(x);  // refuses NaN and identical points; rescales tiny or huge ones
  // After: the rows' squares would underflow or overflow for tiny or huge points.
  if (options.metric == MapMetric::Cosine) normalise_rows(x);
  if (options.init.defined()) {
    if (options.init.context() != ctx)
      throw Error(ErrorKind::Value, "map: init (the starting positions) must be on the points' context (adapter)");
    float s = options.init.cast(DType::f32).abs().sum().to_vector<float>()[0];
    if (!std::isfinite(s))
      throw Error(ErrorKind::Value,
                  "map: init (the starting positions) holds NaN or infinity, or values whose sum overflows float32");
  }
  r.phases.push_back({"input checks", clock.lap()});

  r.pca_components = map_pca_components(options, n, d, ctx->info().is_cpu);
  Tensor features;
  if (r.pca_components > 0) {  // neighbours on the leading components, as is usual
    report("pca", 0, 1);
    features = pca(x, r.pca_components, options.seed).scores;
    r.phases.push_back({"PCA to " + std::to_string(r.pca_components), clock.lap()});
    report("pca", 1, 1);
  } else {
    features = x.single();
  }
  x.blocks.clear();  // the full-dimensional points are not needed any more
  // Nor is their memory: the pool would keep it for tensors of their sizes, which do not come
  // again (at 10M × 768, 31 GB the kNN lists and t-SNE's graph then could not get).
  ctx->trim_pool();

  r.k = map_neighbours(options, n);
  r.approximate_knn = !knn_is_exact(*features.context(), n, features.shape(1), options.knn, r.k);
  report("knn", 0, 1);
  r.neighbours = nearest_neighbours(features, r.k, options.seed, options.knn);
  r.phases.push_back({r.approximate_knn ? "kNN (descent)" : "kNN (exact)", clock.lap()});
  ctx->trim_pool();  // descent's rounds leave lists and edge blocks the layout does not reuse
  report("knn", 1, 1);
  if (r.approximate_knn && options.recall_sample > 0) {
    report("recall", 0, 1);
    r.knn_recall = knn_recall_sampled(features, r.neighbours, options.recall_sample);
    r.phases.push_back({"kNN recall check", clock.lap(false)});
    report("recall", 1, 1);
  }

  run_layout(features, options, r, clock, report);
  r.phases.push_back({"optimisation", clock.lap()});
  r.gpu_peak_bytes = ctx->pool_stats().peak_live_bytes;
  r.host_peak_bytes = platform::host_peak_resident_bytes();
  return r;
}

MapResult map_points(const Tensor& points, const MapOptions& options, const MapProgressFn& progress) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (!points.defined() || points.rank() != 2)
    throw Error(ErrorKind::Shape, "map: points must be [N, D], got " + (points.defined() ? points.describe() : "none"));
  PointBlocks blocks;
  blocks.blocks.push_back(points.dtype() == DType::f32 ? points : points.cast(DType::f32));
  return map_points(std::move(blocks), options, progress);
}

MapResult map_graph(const KnnResult& graph, const MapOptions& options, const MapProgressFn& progress) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (graph.blocked())
    throw Error(ErrorKind::Shape,
                "map_graph: the graph must be one [N, k] tensor each of indices and distances, "
                "not row blocks (lists past one storage binding: use map_points, which runs "
                "t-SNE on them)");
  const Tensor& gi = graph.indices;
  if (!gi.defined() || !graph.distances.defined() || gi.rank() != 2)
    throw Error(ErrorKind::Shape, "map_graph: the graph's indices must be [N, k], got " +
                                      (gi.defined() ? gi.describe() : std::string("none")));
  const int64_t n = gi.shape(0);
  auto ctx = gi.context();
  const MapMethodSpec& method = map_method(options.method);
  validate_layout_options(options, n);
  const int k = map_neighbours(options, n);
  if (gi.shape(1) != k)
    throw Error(ErrorKind::Shape, "map_graph: the graph has " + std::to_string(gi.shape(1)) +
                                      " neighbours per point; this map needs k = " + std::to_string(k) + " (" +
                                      method.k_rule + ")");
  if (options.init.defined() && (options.init.rank() != 2 || options.init.shape(0) != n || options.init.shape(1) != 2))
    throw Error(ErrorKind::Shape,
                "map_graph: init must be [" + std::to_string(n) + ", 2], got " + options.init.describe());
  // The layouts index points by these ids on the host and the GPU: every one must be a row.
  std::vector<int32_t> idx = gi.to_vector<int32_t>();
  for (size_t e = 0; e < idx.size(); ++e)
    if (idx[e] < 0 || idx[e] >= n || int64_t(e) / k == idx[e])
      throw Error(ErrorKind::Value, "map_graph: neighbour [" + std::to_string(int64_t(e) / k) + ", " +
                                        std::to_string(int64_t(e) % k) + "] = " + std::to_string(idx[e]) +
                                        " is not another point's row (0 … " + std::to_string(n - 1) + ")");
  float dsum = graph.distances.cast(DType::f32).sum().to_vector<float>()[0];
  if (!std::isfinite(dsum)) throw Error(ErrorKind::Value, "map_graph: the graph's distances hold NaN or infinity");
  MapResult r;
  PhaseClock clock(ctx);
  auto report = phase_reporter(progress);
  r.k = k;
  r.neighbours = graph;
  r.approximate_knn = true;
  if (!options.init.defined())  // run_layout starts from r.embedding when there is no init
    r.embedding = method.random_start(ctx, n, options.seed);
  // The layouts read only the shape and context of the points when they are given a graph and a start.
  Tensor rows = Tensor::empty(ctx, {n, 1});
  clock.lap();
  run_layout(rows, options, r, clock, report);
  r.phases.push_back({"optimisation", clock.lap()});
  r.gpu_peak_bytes = ctx->pool_stats().peak_live_bytes;
  r.host_peak_bytes = platform::host_peak_resident_bytes();
  return r;
}

}  // namespace surfgrad
