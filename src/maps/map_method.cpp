// The records of t-SNE and UMAP (map_method.hpp).
#include "maps/map_method.hpp"

#include <algorithm>
#include <cmath>

#include "maps/fft_grid_budget.hpp"
#include "maps/layout.hpp"
#include "maps/number_text.hpp"
#include "surfgrad/error.hpp"

namespace surfgrad {

namespace {

const MapMethodSpec kTsne{
    MapMethod::Tsne,
    "tsne",
    "t-SNE",
    "affinities",
    "iteration",
    "⌊3·perplexity⌋",
    "--learning-rate, --early-exaggeration or --max-step-norm",
    [](const MapOptions& o, int64_t n) {
      return int(std::min<double>(double(n - 1), std::floor(3 * o.tsne.perplexity)));
    },
    [](const MapOptions& o) {
      return "perplexity " + number_text(o.tsne.perplexity) + ", " + std::to_string(o.tsne.iterations) + " iterations";
    },
    [](const gpu::ContextPtr& ctx, int64_t n, uint64_t seed) { return Tensor::normal(ctx, {n, 2}, seed, 0, 1e-4); },
    [](const Tensor& x, const MapOptions& o, const MapProgress& progress, const KnnResult* nn, const Tensor* start) {
      TsneOptions t = o.tsne;
      t.seed = o.seed;
      t.pca_init = o.pca_start;
      return tsne_layout(x, t, progress, nn, start);
    },
    [](uint64_t, uint64_t) { return uint64_t(0); },
    true,
    [](const MapOptions& o, int64_t n) { check_fft_grid_spacing(o.tsne, n); },
};

const MapMethodSpec kUmap{
    MapMethod::Umap,
    "umap",
    "UMAP",
    "memberships",
    "epoch",
    "n_neighbors",
    "--learning-rate",
    [](const MapOptions& o, int64_t) { return o.umap.n_neighbors; },
    [](const MapOptions& o) {
      return "n_neighbors " + std::to_string(o.umap.n_neighbors) + ", min_dist " + number_text(o.umap.min_dist);
    },
    [](const gpu::ContextPtr& ctx, int64_t n, uint64_t seed) { return Tensor::uniform(ctx, {n, 2}, seed, -10, 10); },
    [](const Tensor& x, const MapOptions& o, const MapProgress& progress, const KnnResult* nn, const Tensor* start) {
      UmapOptions u = o.umap;
      u.seed = o.seed;
      Tensor random;
      if (!start && !o.pca_start) {
        random = Tensor::uniform(x.context(), {x.shape(0), 2}, o.seed, -10, 10);
        start = &random;
      }
      return umap_layout(x, u, progress, nn, start);
    },
    // The fuzzy union's hash table of the N·k directed edges (~56 bytes each) and its weights.
    [](uint64_t n, uint64_t k) { return n * k * (56 + 8); },
    false,
    [](const MapOptions&, int64_t) {},
};

}  // namespace

const std::vector<const MapMethodSpec*>& map_methods() {
  static const std::vector<const MapMethodSpec*> all = {&kTsne, &kUmap};
  return all;
}

const MapMethodSpec& map_method(MapMethod method) { return *map_methods().at(size_t(method)); }

std::string_view map_method_name(MapMethod method) { return map_method(method).name; }

MapMethod parse_map_method(std::string_view name, std::string_view who) {
  std::string words;
  for (const MapMethodSpec* m : map_methods()) {
    if (name == m->name) return m->id;
    words += (words.empty() ? "'" : " or '") + std::string(m->name) + "'";
  }
  throw Error(ErrorKind::Value, std::string(who) + ": method is " + words + ", not '" + std::string(name) + "'");
}

}  // namespace surfgrad
