// The map pipeline for sg.TSNE / sg.UMAP: one binding function, map_points, that runs what
// `surfgrad map` runs (src/cli/map.cpp): points up in row blocks, PCA to 50 components past
// kExactKnnLimit points, the neighbours, then t-SNE or UMAP. When the library gains its own
// pipeline call this function's body becomes that call; nothing else in Python changes.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>

#include "bindings.hpp"
#include "surfgrad/maps.hpp"

namespace nb = nanobind;

namespace surfgrad::python {
namespace {

// Raised inside the progress callback to unwind the C++ pipeline when Python asked to stop
// (KeyboardInterrupt, an exception in the callback); the Python error is restored afterwards.
struct Interrupted {};

// The map pipeline's own context per adapter, and the lock that keeps it to one fit at a time.
std::pair<gpu::ContextPtr, std::unique_lock<std::mutex>> map_context_for(const std::string& adapter) {
  static auto* contexts = new std::map<std::string, gpu::ContextPtr>;  // never destroyed: see context_for
  static auto* mutex = new std::mutex;
  std::unique_lock<std::mutex> lock(*mutex);
  auto& ctx = (*contexts)[adapter];
  if (!ctx || ctx->device_lost()) {
    gpu::ContextOptions options;
    options.adapter = adapter;
    options.quiet = true;  // the tensors' context already said it runs on the CPU
    ctx = gpu::Context::create(options);
  }
  return {ctx, std::move(lock)};
}

template <typename T>
T option(const nb::dict& options, const char* key, T fallback) {
  return options.contains(key) ? nb::cast<T>(options[key]) : fallback;
}

}  // namespace

void bind_maps(nb::module_& m) {
  m.def(
      "map_points",
      [](nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu> points,
         nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu> out, const std::string& method,
         const nb::dict& options, const std::string& adapter, nb::object progress) {
        if (method != "tsne" && method != "umap")
          throw Error(ErrorKind::Value, "map_points: method is 'tsne' or 'umap', not '" + method + "'");
        const int64_t n = int64_t(points.shape(0)), d = int64_t(points.shape(1));
        if (n < 2 || d < 1) throw Error(ErrorKind::Shape, "map_points: need at least 2 points of at least 1 dimension");
        if (int64_t(out.shape(0)) != n || out.shape(1) != 2)
          throw Error(ErrorKind::Shape, "map_points: the output must be [" + std::to_string(n) + ", 2]");
        TsneOptions tsne_options;
        tsne_options.perplexity = option(options, "perplexity", tsne_options.perplexity);
        tsne_options.iterations = option(options, "iterations", tsne_options.iterations);
        tsne_options.exaggeration = option(options, "exaggeration", tsne_options.exaggeration);
        tsne_options.exaggeration_iterations =
            option(options, "exaggeration_iterations", tsne_options.exaggeration_iterations);
        tsne_options.learning_rate = option(options, "learning_rate", tsne_options.learning_rate);
        tsne_options.pca_init = option(options, "pca_init", tsne_options.pca_init);
        tsne_options.seed = option<uint64_t>(options, "seed", 1);
        UmapOptions umap_options;
        umap_options.n_neighbors = option(options, "n_neighbors", umap_options.n_neighbors);
        umap_options.min_dist = option(options, "min_dist", umap_options.min_dist);
        umap_options.epochs = option(options, "epochs", umap_options.epochs);
        umap_options.learning_rate = option(options, "umap_learning_rate", umap_options.learning_rate);
        umap_options.negative_sample_rate = option(options, "negative_sample_rate", umap_options.negative_sample_rate);
        umap_options.seed = tsne_options.seed;
        int pca_dims = option(options, "pca", -1);

        nb::list phases;  // (name, seconds), filled with the GIL held
        bool interrupted = false;
        std::optional<nb::python_error> python_error;
        const float* host = points.data();
        float* result = out.data();
        {
          // The whole pipeline runs without the GIL (notebooks stay responsive, other threads
          // run); it takes the GIL back only to report progress.
          nb::gil_scoped_release release;
          auto t = std::chrono::steady_clock::now();
          auto phase = [&](const std::string& name) {
            auto now = std::chrono::steady_clock::now();
            double s = std::chrono::duration<double>(now - t).count();
            t = now;
            nb::gil_scoped_acquire gil;
            phases.append(nb::make_tuple(name, s));
          };
          // The pipeline has a context of its own (a second device on the same adapter), held
          // under a lock: it runs without the GIL, and other Python threads may meanwhile use
          // the tensors' context, which is not meant for use from two threads at once.
          auto [ctx, lock] = map_context_for(adapter);
          // Row blocks: one tensor may not exceed a binding (128 MiB on lavapipe).
          PointBlocks x;
          uint64_t block_bytes = ctx->limits().max_storage_buffer_binding_size / 4;
          int64_t rows = std::max<int64_t>(1, int64_t(block_bytes / (uint64_t(d) * 4)));
          for (int64_t r0 = 0; r0 < n; r0 += rows)
            x.blocks.push_back(Tensor::from_host(ctx, host + r0 * d, {std::min(n, r0 + rows) - r0, d}, DType::f32));
          ctx->sync();
          phase("upload");
          if (pca_dims < 0) pca_dims = n > kExactKnnLimit ? 50 : 0;
          Tensor features;
          if (pca_dims > 0 && d > pca_dims) {
            features = pca(x, pca_dims, tsne_options.seed).scores;
            ctx->sync();
            phase("pca");
          } else {
            features = x.single();
          }
          x.blocks.clear();
          int k = method == "tsne" ? tsne_neighbours(tsne_options.perplexity, n) : umap_options.n_neighbors;
          if (k < 1 || k >= n)
            throw Error(ErrorKind::Value, "map_points: " + std::to_string(k) + " neighbours for " + std::to_string(n) +
                                              " points (lower perplexity / n_neighbors)");
          KnnResult nn = nearest_neighbours(features, k, tsne_options.seed);
          ctx->sync();
          phase(n > kExactKnnLimit ? "knn_descent" : "knn_exact");
          MapProgress report = [&](int iteration, int total) {
            if (iteration == 0) phase(method == "tsne" ? "affinities" : "memberships");
            nb::gil_scoped_acquire gil;
            if (PyErr_CheckSignals() != 0) {  // Ctrl-C in a terminal or a notebook
              python_error.emplace();
              throw Interrupted{};
            }
            if (progress.is_none()) return;
            try {
              progress(iteration, total);
            } catch (nb::python_error& e) {
              python_error.emplace(std::move(e));
              throw Interrupted{};
            }
          };
          try {
            Tensor y = method == "tsne" ? tsne(features, tsne_options, report, &nn)
                                        : umap(features, umap_options, report, &nn);
            y.to_host(result);
            phase("optimisation");
            nn = {};
            features = Tensor();
            y = Tensor();
            ctx->trim_pool();  // hand the map's buffers back to the device between fits
          } catch (const Interrupted&) {
            interrupted = true;
          }
        }
        if (interrupted) throw *python_error;
        return phases;
      },
      nb::arg("points"), nb::arg("out"), nb::arg("method"), nb::arg("options"), nb::arg("adapter") = "",
      nb::arg("progress").none() = nb::none());
}

}  // namespace surfgrad::python
