// The map pipeline for sg.TSNE / sg.UMAP: one binding function, map_points. Where the library
// has its pipeline call (surfgrad/map_pipeline.hpp: map_points) the binding is a thin shell over
// it; before that call lands it runs what `surfgrad map` ran (src/cli/map.cpp): points up in row
// blocks, PCA to 50 components past kExactKnnLimit points, the neighbours, then t-SNE or UMAP.
// Both report the same phase keys to Python, so nothing in Python changes between them; once
// the pipeline call is on every branch, the second `run` below is deleted.
#include "surfgrad/maps.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/map_pipeline.hpp"
#include "surfgrad/map_quality.hpp"

namespace nb = nanobind;

namespace surfgrad::python {
namespace {

// Unwinds the C++ pipeline when Python asked to stop (KeyboardInterrupt, an exception in the
// progress callback); the Python error is raised again once the GIL is back.
struct Interrupted {};

// The pipeline has a context of its own per adapter (a second device on the same adapter),
// held under a lock: it runs without the GIL while other Python threads may use the tensors'
// context, which is not meant for use from two threads at once.
std::pair<gpu::ContextPtr, std::unique_lock<std::mutex>> map_context_for(const std::string& adapter) {
  static auto* contexts = new std::map<std::string, gpu::ContextPtr>;  // never destroyed: see context_for
  static auto* mutex = new std::mutex;
  std::unique_lock<std::mutex> lock(*mutex);
  auto& ctx = (*contexts)[adapter];
  if (!ctx || ctx->device_lost()) {
    gpu::ContextOptions options;
    options.adapter = adapter;
    options.quiet = true;             // the notice about running on the CPU is the tensors' context's to give
    options.own_kernels_only = true;  // only the map's kernels run here: under Dawn, unchecked
    ctx = gpu::Context::create(options);
  }
  return {ctx, std::move(lock)};
}

// The options dict the estimators pass (the schema's keys: surfgrad/map_options.hpp) →
// MapOptions. Values are int, float or str ("auto", a choice's word); the estimators have checked
// their Python types, the schema checks the rest with the messages the CLI gives.
MapOptions parse(const std::string& method, const nb::dict& options) {
  MapOptions o;
  o.method = parse_map_method(method, "map_points");
  for (auto [key_object, value] : options) {
    std::string key = nb::cast<std::string>(nb::str(key_object));
    const MapOptionSpec* spec = find_map_option(key, o.method, &MapOptionSpec::key);
    if (!spec || key == "method") {
      std::string list;
      for (const MapOptionSpec& s : map_option_schema())
        if (map_option_applies(s, o.method) && std::string_view(s.key) != "method")
          list += std::string(list.empty() ? "" : ", ") + s.key;
      throw Error(ErrorKind::Value, "map_points: unknown option '" + key + "' for " + method + " (" + list + ")");
    }
    if (value.is_none()) continue;
    if (nb::isinstance<nb::str>(value))
      set_map_option(o, *spec, nb::cast<std::string>(value), spec->key);
    else if (nb::isinstance<nb::bool_>(value) ||
             !(nb::isinstance<nb::int_>(value) || nb::isinstance<nb::float_>(value)))
      throw Error(ErrorKind::Value, std::string(spec->key) + " must be " + map_option_range(*spec) + ", got " +
                                        nb::cast<std::string>(nb::repr(value)));
    else
      set_map_option(o, *spec, nb::cast<double>(value), spec->key);
  }
  return o;
}

// Progress from the pipeline's thread (GIL released) to Python.
struct ProgressBridge {
  nb::object progress;  // callable(done, total) or None
  std::optional<nb::python_error> error;

  // false: stop (Ctrl-C, or the callback raised; the error is kept).
  bool call(int64_t done, int64_t total, bool forward) {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      error.emplace();
      return false;
    }
    if (!forward || progress.is_none()) return true;
    try {
      progress(done, total);
    } catch (nb::python_error& e) {
      error.emplace(std::move(e));
      return false;
    }
    return true;
  }
};

struct Outcome {
  std::vector<std::pair<std::string, double>> phases;  // keys: upload pca knn recall affinities|memberships optimise
  double knn_recall = -1;
  int k = 0, pca_components = 0;
  uint64_t gpu_peak_bytes = 0;
};

class Clock {
 public:
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - t_).count();
    t_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point t_ = std::chrono::steady_clock::now();
};

PointBlocks upload(const gpu::ContextPtr& ctx, const float* host, int64_t n, int64_t d) {
  PointBlocks x = PointBlocks::from_host(ctx, host, n, d);
  ctx->sync();  // the upload is a phase of its own in timings_
  return x;
}

// The library's own pipeline call: the same steps as `surfgrad map`.
std::string phase_key(const std::string& name) {
  if (name.rfind("PCA", 0) == 0) return "pca";
  if (name.rfind("kNN recall", 0) == 0) return "recall";
  if (name.rfind("kNN", 0) == 0) return "knn";
  if (name == "input checks") return "checks";
  if (name == "optimisation") return "optimise";
  return name;
}

Outcome run(const gpu::ContextPtr& ctx, const float* host, int64_t n, int64_t d, MapOptions options,
            ProgressBridge& bridge, float* out, const float* init) {
  Outcome o;
  Clock clock;
  PointBlocks x = upload(ctx, host, n, d);
  Tensor start = init ? Tensor::from_host(ctx, init, {n, 2}, DType::f32) : Tensor();
  o.phases.emplace_back("upload", clock.lap());
  options.init = start;
  try {
    MapResult r = map_points(std::move(x), options, [&](const MapProgressEvent& e) {
      return bridge.call(e.done, e.total, e.phase == "optimise");
    });
    r.embedding.to_host(out);
    for (const auto& p : r.phases) o.phases.emplace_back(phase_key(p.name), p.seconds);
    o.knn_recall = r.knn_recall;
    o.k = r.k;
    o.pca_components = r.pca_components;
  } catch (const Error&) {
    if (bridge.error) throw Interrupted{};  // the pipeline's Cancelled, because Python said stop
    throw;
  }
  return o;
}

}  // namespace

void bind_maps(nb::module_& m) {
  // The map options' schema as JSON (surfgrad/map_options.hpp): the estimators' parameters,
  // docstrings and checks, and the tests that hold every front end to it.
  m.def("map_option_schema_json", [] { return map_option_schema_json(); });

  // The options against the schema for a job of n points in d dimensions (no device needed).
  m.def(
      "validate_map_options",
      [](int64_t n, int64_t d, const std::string& method, const nb::dict& options) {
        validate(parse(method, options), n, d);
      },
      nb::arg("n"), nb::arg("d"), nb::arg("method"), nb::arg("options"));

  // The job's checks before the points are converted or copied: options against the schema and
  // the estimated memory (plus `extra_host_bytes` the caller is about to hold, e.g. a float32
  // copy of the points) against the adapter and the host, with the CLI's messages.
  m.def(
      "check_map_job",
      [](int64_t n, int64_t d, const std::string& method, const nb::dict& options, const std::string& adapter,
         uint64_t extra_host_bytes) {
        MapOptions job = parse(method, options);
        nb::gil_scoped_release release;
        auto [ctx, lock] = map_context_for(adapter);
        check_map_fits(ctx, job, n, d, extra_host_bytes);
      },
      nb::arg("n"), nb::arg("d"), nb::arg("method"), nb::arg("options"), nb::arg("adapter") = "",
      nb::arg("extra_host_bytes") = 0);

  m.def(
      "map_points",
      [](nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> points,
         nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu> out, const std::string& method,
         const nb::dict& options, const std::string& adapter, nb::object progress,
         std::optional<nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>> init) {
        const int64_t n = int64_t(points.shape(0)), d = int64_t(points.shape(1));
        if (n < 2 || d < 1) throw Error(ErrorKind::Shape, "map_points: need at least 2 points of at least 1 dimension");
        if (int64_t(out.shape(0)) != n || out.shape(1) != 2)
          throw Error(ErrorKind::Shape, "map_points: the output must be [" + std::to_string(n) + ", 2]");
        if (init && (int64_t(init->shape(0)) != n || init->shape(1) != 2))
          throw Error(ErrorKind::Shape, "map_points: init must be [" + std::to_string(n) + ", 2]");
        const float* init_data = init ? init->data() : nullptr;
        MapOptions job = parse(method, options);
        ProgressBridge bridge{std::move(progress), std::nullopt};
        Outcome outcome;
        bool interrupted = false;
        {
          // The whole pipeline runs without the GIL (notebooks stay responsive, other threads
          // run); it takes the GIL back only to report progress.
          nb::gil_scoped_release release;
          auto [ctx, lock] = map_context_for(adapter);
          try {
            outcome = run(ctx, points.data(), n, d, job, bridge, out.data(), init_data);
          } catch (const Interrupted&) {
            interrupted = true;
          }
          ctx->trim_pool();  // hand the map's buffers back to the device between fits
        }
        if (interrupted) throw *bridge.error;
        nb::list phases;
        for (const auto& [name, seconds] : outcome.phases) phases.append(nb::make_tuple(name, seconds));
        nb::dict result;
        result["phases"] = phases;
        result["knn_recall"] = outcome.knn_recall;
        result["k"] = outcome.k;
        result["pca_components"] = outcome.pca_components;
        return result;
      },
      nb::arg("points"), nb::arg("out"), nb::arg("method"), nb::arg("options"), nb::arg("adapter") = "",
      nb::arg("progress").none() = nb::none(), nb::arg("init").none() = nb::none());

  // surfgrad.distributed: the kNN graph of one block of points (its own row numbers; the caller
  // maps them to global ids), by the pipeline's choice (knn_is_exact) or as asked; written into caller-made [m, k]
  // arrays. GIL released.
  m.def(
      "knn_graph",
      [](nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> points, int k,
         nb::ndarray<int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> out_indices,
         nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu> out_distances, const std::string& method,
         uint64_t seed, const std::string& adapter) {
        const int64_t n = int64_t(points.shape(0)), d = int64_t(points.shape(1));
        if (n < 2 || d < 1) throw Error(ErrorKind::Shape, "knn_graph: need at least 2 points of at least 1 dimension");
        for (int64_t cols : {int64_t(out_indices.shape(1)), int64_t(out_distances.shape(1))})
          if (cols != k) throw Error(ErrorKind::Shape, "knn_graph: the outputs must be [n, k]");
        if (int64_t(out_indices.shape(0)) != n || int64_t(out_distances.shape(0)) != n)
          throw Error(ErrorKind::Shape, "knn_graph: the outputs must be [n, k]");
        if (method != "auto" && method != "exact" && method != "descent")
          throw Error(ErrorKind::Value, "knn_graph: method is 'auto', 'exact' or 'descent', not '" + method + "'");
        const float* src = points.data();
        int32_t* idx_out = out_indices.data();
        float* dist_out = out_distances.data();
        nb::gil_scoped_release release;
        auto [ctx, lock] = map_context_for(adapter);
        {
          Tensor x = Tensor::from_host(ctx, src, {n, d}, DType::f32);
          // exact: every block exactly; descent: neighbour descent at any size; auto: the pipeline's
          // choice (knn_is_exact: by size and adapter).
          KnnMethod how = method == "exact"     ? KnnMethod::Exact
                          : method == "descent" ? KnnMethod::Descent
                                                : KnnMethod::Auto;
          KnnResult r = nearest_neighbours(x, k, seed, how);
          r.to_host(idx_out, dist_out);  // blocked or not
        }
        ctx->trim_pool();
      },
      nb::arg("points"), nb::arg("k"), nb::arg("out_indices"), nb::arg("out_distances"), nb::arg("method") = "auto",
      nb::arg("seed") = 1, nb::arg("adapter") = "");

  // One or more rounds of neighbour descent from a given graph (knn_refine), in place.
  m.def(
      "knn_refine",
      [](nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> points,
         nb::ndarray<int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> indices,
         nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu> out_distances, int iterations,
         const std::string& adapter) {
        const int64_t n = int64_t(points.shape(0)), d = int64_t(points.shape(1)), k = int64_t(indices.shape(1));
        if (int64_t(indices.shape(0)) != n || int64_t(out_distances.shape(0)) != n ||
            int64_t(out_distances.shape(1)) != k)
          throw Error(ErrorKind::Shape, "knn_refine: indices and distances must be [n, k] for the n points");
        const float* src = points.data();
        int32_t* idx = indices.data();
        float* dist_out = out_distances.data();
        nb::gil_scoped_release release;
        auto [ctx, lock] = map_context_for(adapter);
        {
          Tensor x = Tensor::from_host(ctx, src, {n, d}, DType::f32);
          Tensor g = Tensor::from_host(ctx, idx, {n, k}, DType::i32);
          KnnResult r = knn_refine(x, g, iterations);
          r.indices.to_host(idx);
          r.distances.to_host(dist_out);
        }
        ctx->trim_pool();
      },
      nb::arg("points"), nb::arg("indices"), nb::arg("out_distances"), nb::arg("iterations") = 1,
      nb::arg("adapter") = "");

  // Recall@k of a graph made elsewhere (surfgrad.distributed's merged graph) against exact lists
  // of `sample` of its points (knn_recall_sampled: eight runs of consecutive rows), on the GPU.
  m.def(
      "knn_recall_sampled",
      [](nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> points,
         nb::ndarray<const int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> indices, int64_t sample,
         const std::string& adapter) {
        const int64_t n = int64_t(points.shape(0)), d = int64_t(points.shape(1)), k = int64_t(indices.shape(1));
        if (n < 2 || d < 1 || int64_t(indices.shape(0)) != n || k < 1 || k >= n)
          throw Error(ErrorKind::Shape,
                      "knn_recall_sampled: need points [n, d] and indices [n, k] with 1 <= k < n, got [" +
                          std::to_string(n) + ", " + std::to_string(d) + "] and [" + std::to_string(indices.shape(0)) +
                          ", " + std::to_string(k) + "]");
        if (sample < 1) throw Error(ErrorKind::Value, "knn_recall_sampled: sample must be at least 1");
        const float* src = points.data();
        const int32_t* idx = indices.data();
        double recall = 0;
        {
          nb::gil_scoped_release release;
          auto [ctx, lock] = map_context_for(adapter);
          {
            Tensor x = Tensor::from_host(ctx, src, {n, d}, DType::f32);
            KnnResult graph{Tensor::from_host(ctx, idx, {n, k}, DType::i32), Tensor()};
            recall = knn_recall_sampled(x, graph, sample);
          }
          ctx->trim_pool();
        }
        return recall;
      },
      nb::arg("points"), nb::arg("indices"), nb::arg("sample") = 1000, nb::arg("adapter") = "");

  // The layout from a kNN graph computed elsewhere (map_graph): t-SNE or UMAP as map_points runs
  // them; options as map_points'.
  m.def(
      "map_graph",
      [](nb::ndarray<const int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu> indices,
         nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> distances,
         nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu> out, const std::string& method,
         const nb::dict& options, const std::string& adapter, nb::object progress,
         std::optional<nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>> init) {
        const int64_t n = int64_t(indices.shape(0)), k = int64_t(indices.shape(1));
        if (int64_t(distances.shape(0)) != n || int64_t(distances.shape(1)) != k)
          throw Error(ErrorKind::Shape, "map_graph: indices and distances must both be [n, k]");
        if (int64_t(out.shape(0)) != n || out.shape(1) != 2)
          throw Error(ErrorKind::Shape, "map_graph: the output must be [" + std::to_string(n) + ", 2]");
        if (init && (int64_t(init->shape(0)) != n || init->shape(1) != 2))
          throw Error(ErrorKind::Shape, "map_graph: init must be [" + std::to_string(n) + ", 2]");
        MapOptions job = parse(method, options);
        const int32_t* idx = indices.data();
        const float* dist = distances.data();
        const float* init_data = init ? init->data() : nullptr;
        float* out_data = out.data();
        ProgressBridge bridge{std::move(progress), std::nullopt};
        Outcome o;
        bool interrupted = false;
        {
          nb::gil_scoped_release release;
          auto [ctx, lock] = map_context_for(adapter);
          try {
            Clock clock;
            MapOptions opt = job;
            KnnResult g{Tensor::from_host(ctx, idx, {n, k}, DType::i32),
                        Tensor::from_host(ctx, dist, {n, k}, DType::f32)};
            if (init_data) opt.init = Tensor::from_host(ctx, init_data, {n, 2}, DType::f32);
            ctx->sync();
            o.phases.emplace_back("upload", clock.lap());
            MapResult r = map_graph(
                g, opt, [&](const MapProgressEvent& e) { return bridge.call(e.done, e.total, e.phase == "optimise"); });
            r.embedding.to_host(out_data);
            for (const auto& p : r.phases) o.phases.emplace_back(phase_key(p.name), p.seconds);
            o.k = r.k;
            o.gpu_peak_bytes = r.gpu_peak_bytes;
          } catch (const Error&) {
            if (!bridge.error) throw;
            interrupted = true;
          }
          ctx->trim_pool();
        }
        if (interrupted) throw *bridge.error;
        nb::list phases;
        for (const auto& [name, seconds] : o.phases) phases.append(nb::make_tuple(name, seconds));
        nb::dict result;
        result["phases"] = phases;
        result["k"] = o.k;
        result["gpu_peak_bytes"] = o.gpu_peak_bytes;
        return result;
      },
      nb::arg("indices"), nb::arg("distances"), nb::arg("out"), nb::arg("method"), nb::arg("options"),
      nb::arg("adapter") = "", nb::arg("progress").none() = nb::none(), nb::arg("init").none() = nb::none());

  // The quality measures `surfgrad eval` prints, on the maps' context (GIL released).
  m.def(
      "evaluate_map",
      [](nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> points,
         nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> embedding,
         std::optional<nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>> labels,
         const std::string& adapter) {
        const int64_t n = int64_t(points.shape(0)), d = int64_t(points.shape(1));
        if (n < 2 || d < 1)
          throw Error(ErrorKind::Shape, "evaluate_map: need at least 2 points of at least 1 dimension");
        if (int64_t(embedding.shape(0)) != n || embedding.shape(1) < 2)
          throw Error(ErrorKind::Shape, "evaluate_map: the embedding must be [" + std::to_string(n) + ", 2]");
        if (labels && int64_t(labels->shape(0)) != n)
          throw Error(ErrorKind::Shape, "evaluate_map: labels must be [" + std::to_string(n) + "]");
        const int32_t* label_data = labels ? labels->data() : nullptr;
        MapQuality q;
        {
          nb::gil_scoped_release release;
          auto [ctx, lock] = map_context_for(adapter);
          Tensor x = Tensor::from_host(ctx, points.data(), {n, d}, DType::f32);
          Tensor y = Tensor::from_host(ctx, embedding.data(), {n, int64_t(embedding.shape(1))}, DType::f32);
          Tensor l = label_data ? Tensor::from_host(ctx, label_data, {n}, DType::i32) : Tensor();
          q = evaluate_map(x, y, l);
          ctx->trim_pool();
        }
        nb::dict result;
        result["knn_recall"] = q.knn_recall;
        result["knn_accuracy"] = q.knn_accuracy;
        result["trustworthiness"] = q.trustworthiness;
        result["kl_divergence"] = q.kl_divergence;
        return result;
      },
      nb::arg("points"), nb::arg("embedding"), nb::arg("labels").none() = nb::none(), nb::arg("adapter") = "");

  // The CLI's built-in data set (`surfgrad map` without INPUT), copied into caller-made arrays.
  m.def(
      "builtin_points",
      [](nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu> out,
         nb::ndarray<int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> labels_out, const std::string& adapter) {
        const int64_t n = int64_t(out.shape(0));
        if (n < 1 || int64_t(labels_out.shape(0)) != n)
          throw Error(ErrorKind::Shape, "builtin_points: out must be [n, D] and labels [n], n >= 1");
        float* dst = out.data();
        int32_t* label_dst = labels_out.data();
        nb::gil_scoped_release release;
        auto [ctx, lock] = map_context_for(adapter);
        Tensor labels;
        PointBlocks x = builtin_point_blocks(ctx, n, labels);
        if (int64_t(out.shape(1)) != x.dims())
          throw Error(ErrorKind::Shape, "builtin_points: out must have " + std::to_string(x.dims()) + " columns");
        for (const Tensor& b : x.blocks) {
          b.to_host(dst);
          dst += b.numel();
        }
        labels.to_host(label_dst);
        ctx->trim_pool();
      },
      nb::arg("out"), nb::arg("labels"), nb::arg("adapter") = "");
}

}  // namespace surfgrad::python
