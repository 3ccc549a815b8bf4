// The map options' schema: one record each. A new option is one record here (and its field in
// MapOptions); validate(), the CLI, Python and JavaScript take it from this table.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "maps/map_method.hpp"
#include "maps/number_text.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/map_options.hpp"
#include "surfgrad/map_pipeline.hpp"

namespace surfgrad {

namespace {

constexpr double kMaxIterations = 1e6;
constexpr double kMaxNeighbours = 128;  // the kNN kernels keep at most 128 per point
// Seeds are whole numbers every front end holds exactly (JavaScript's safe integers).
constexpr double kMaxSeed = 9007199254740991.0;

MapOptionSpec number(const char* key, const char* cli, const char* js, const char* python, const char* method,
                     MapOptionType type, double lo, double hi, bool lo_open, bool hi_open, const char* doc,
                     double (*get)(const MapOptions&), void (*set)(MapOptions&, double)) {
  MapOptionSpec s{key, cli, js, python, method, type};
  s.lo = lo, s.hi = hi, s.lo_open = lo_open, s.hi_open = hi_open, s.doc = doc, s.get = get, s.set = set;
  return s;
}

MapOptionSpec choice(const char* key, const char* cli, const char* js, const char* python, const char* method,
                     std::vector<std::string> words, const char* doc, double (*get)(const MapOptions&),
                     void (*set)(MapOptions&, double)) {
  MapOptionSpec s{key, cli, js, python, method, MapOptionType::Choice};
  s.choices = std::move(words), s.doc = doc, s.get = get, s.set = set;
  return s;
}

MapOptionSpec automatic(MapOptionSpec s, const char* what) {
  s.has_automatic = true;
  s.automatic_doc = what;
  return s;
}

MapOptionSpec bounded(MapOptionSpec s, double (*upper)(int64_t, int64_t), const char* why) {
  s.upper_for = upper;
  s.upper_why = why;
  return s;
}

std::vector<MapOptionSpec> make_schema() {
  using T = MapOptionType;
  std::vector<MapOptionSpec> s;
  // Every method.
  std::vector<std::string> methods;
  for (const MapMethodSpec* m : map_methods()) methods.push_back(m->name);
  s.push_back(choice(
      "method", "--method", "method", "", "", methods, "the layout: t-SNE or UMAP",
      [](const MapOptions& o) { return double(o.method); },
      [](MapOptions& o, double v) { o.method = MapMethod(int(v)); }));
  s.push_back(number(
      "seed", "--seed", "seed", "random_state", "", T::Integer, 0, kMaxSeed, false, false,
      "seed of PCA, kNN descent and the layout (the same map for the same seed on one adapter)",
      [](const MapOptions& o) { return double(o.seed); }, [](MapOptions& o, double v) { o.seed = uint64_t(v); }));
  s.push_back(choice(
      "metric", "--metric", "metric", "metric", "", {"euclidean", "cosine"},
      "distance between points: euclidean, or cosine (rows scaled to unit length first)",
      [](const MapOptions& o) { return double(o.metric); },
      [](MapOptions& o, double v) { o.metric = MapMetric(int(v)); }));
  s.push_back(bounded(
      number(
          "pca_components", "--pca", "pcaComponents", "pca_components", "", T::Integer, -1, 1 << 20, false, false,
          "kNN on this many principal components: -1 automatic (50 past 20,000 points; on CPU adapters 100 past 200 "
          "dimensions), 0 off, else 1..D",
          [](const MapOptions& o) { return double(o.pca_components); },
          [](MapOptions& o, double v) { o.pca_components = int(v); }),
      [](int64_t n, int64_t d) { return double(std::min(n, d)); }, "at most the points' dimensions and N"));
  s.push_back(choice(
      "knn", "--knn", "knn", "knn", "", {"auto", "exact", "descent"},
      "neighbours: exact, descent, or auto (exact up to 20,000 points, and on GPUs while N²·D <= 1e15 and the "
      "lists fit one binding)",
      [](const MapOptions& o) { return double(o.knn); }, [](MapOptions& o, double v) { o.knn = KnnMethod(int(v)); }));
  s.push_back(number(
      "recall_sample", "--recall-sample", "recallSample", "recall_sample", "", T::Integer, 0, 2147483647.0, false,
      false, "points on which approximate kNN's recall is measured (0: skip the check; at most N are used)",
      [](const MapOptions& o) { return double(o.recall_sample); },
      [](MapOptions& o, double v) { o.recall_sample = int64_t(v); }));
  s.push_back(choice(
      "init", "--init", "init", "init", "", {"pca", "random"},
      "the start: the first two principal components, or seeded random positions",
      [](const MapOptions& o) { return o.pca_start ? 0.0 : 1.0; },
      [](MapOptions& o, double v) { o.pca_start = v == 0; }));
  // t-SNE.
  s.push_back(bounded(
      number(
          "perplexity", "--perplexity", "perplexity", "perplexity", "tsne", T::Number, 1, 43, true, true,
          "t-SNE: perplexity; k = floor(3 * perplexity) neighbours",
          [](const MapOptions& o) { return o.tsne.perplexity; },
          [](MapOptions& o, double v) { o.tsne.perplexity = v; }),
      [](int64_t n, int64_t) { return double(n - 1) / 3; },
      "t-SNE uses k = ⌊3·perplexity⌋ neighbours: at most 128, and at most N − 1"));
  s.push_back(number(
      "iterations", "--iterations", "iterations", "max_iter", "tsne", T::Integer, 1, kMaxIterations, false, false,
      "t-SNE: iterations, the first exaggeration_iterations with early exaggeration",
      [](const MapOptions& o) { return double(o.tsne.iterations); },
      [](MapOptions& o, double v) { o.tsne.iterations = int(v); }));
  s.push_back(number(
      "exaggeration_iterations", "--exaggeration-iterations", "exaggerationIterations", "early_exaggeration_iter",
      "tsne", T::Integer, 0, kMaxIterations, false, false,
      "t-SNE: iterations with early exaggeration (momentum 0.5, then 0.8)",
      [](const MapOptions& o) { return double(o.tsne.exaggeration_iterations); },
      [](MapOptions& o, double v) { o.tsne.exaggeration_iterations = int(v); }));
  s.push_back(number(
      "early_exaggeration", "--early-exaggeration", "earlyExaggeration", "early_exaggeration", "tsne", T::Number, 0,
      1000, true, false, "t-SNE: early exaggeration factor (12 is usual)",
      [](const MapOptions& o) { return o.tsne.early_exaggeration; },
      [](MapOptions& o, double v) { o.tsne.early_exaggeration = v; }));
  s.push_back(
      automatic(number(
                    "learning_rate", "--learning-rate", "learningRate", "learning_rate", "tsne", T::Number, 0, 1e9,
                    true, false, "t-SNE: learning rate", [](const MapOptions& o) { return o.tsne.learning_rate; },
                    [](MapOptions& o, double v) { o.tsne.learning_rate = v; }),
                "max(N / early_exaggeration, 50), as openTSNE and scikit-learn"));
  s.push_back(number(
      "max_step_norm", "--max-step-norm", "maxStepNorm", "max_step_norm", "tsne", T::Number, 0, 1e6, false, false,
      "t-SNE: longest update step (openTSNE's clipping); 0: unclipped",
      [](const MapOptions& o) { return o.tsne.max_step_norm; },
      [](MapOptions& o, double v) { o.tsne.max_step_norm = v; }));
  s.push_back(choice(
      "repulsion", "--repulsion", "repulsion", "repulsion", "tsne", {"auto", "exact", "fft"},
      "t-SNE: repulsion exact (all N² pairs) or by FFT on a grid (auto: fft past 5,000 points)",
      [](const MapOptions& o) { return double(o.tsne.repulsion); },
      [](MapOptions& o, double v) { o.tsne.repulsion = Repulsion(int(v)); }));
  s.push_back(number(
      "grid_spacing", "--grid-spacing", "gridSpacing", "grid_spacing", "tsne", T::Number, 0, 100, true, false,
      "t-SNE, fft repulsion: largest distance between grid nodes (embedding units)",
      [](const MapOptions& o) { return o.tsne.grid_spacing; },
      [](MapOptions& o, double v) { o.tsne.grid_spacing = v; }));
  // UMAP.
  s.push_back(bounded(
      number(
          "n_neighbors", "--n-neighbors", "nNeighbors", "n_neighbors", "umap", T::Integer, 2, kMaxNeighbours, false,
          false, "UMAP: neighbours per point", [](const MapOptions& o) { return double(o.umap.n_neighbors); },
          [](MapOptions& o, double v) { o.umap.n_neighbors = int(v); }),
      [](int64_t n, int64_t) { return double(n - 1); }, "at most 128 and at most N − 1"));
  s.push_back(number(
      "min_dist", "--min-dist", "minDist", "min_dist", "umap", T::Number, 0, 1, false, false,
      "UMAP: minimum distance between points in the map", [](const MapOptions& o) { return o.umap.min_dist; },
      [](MapOptions& o, double v) { o.umap.min_dist = v; }));
  s.push_back(automatic(number(
                            "epochs", "--epochs", "epochs", "n_epochs", "umap", T::Integer, 1, kMaxIterations, false,
                            false, "UMAP: epochs", [](const MapOptions& o) { return double(o.umap.epochs); },
                            [](MapOptions& o, double v) { o.umap.epochs = int(v); }),
                        "500 up to 10,000 points, else 200 (umap-learn's defaults)"));
  s.push_back(number(
      "learning_rate", "--learning-rate", "learningRate", "learning_rate", "umap", T::Number, 0, 1000, true, false,
      "UMAP: learning rate", [](const MapOptions& o) { return o.umap.learning_rate; },
      [](MapOptions& o, double v) { o.umap.learning_rate = v; }));
  s.push_back(number(
      "negative_sample_rate", "--negative-sample-rate", "negativeSampleRate", "negative_sample_rate", "umap", T::Number,
      0, 1000, true, false, "UMAP: negative samples per positive one",
      [](const MapOptions& o) { return o.umap.negative_sample_rate; },
      [](MapOptions& o, double v) { o.umap.negative_sample_rate = v; }));
  return s;
}

}  // namespace

const std::vector<MapOptionSpec>& map_option_schema() {
  static const std::vector<MapOptionSpec> schema = make_schema();
  return schema;
}

bool map_option_applies(const MapOptionSpec& spec, MapMethod method) {
  return spec.method[0] == 0 || map_method_name(method) == spec.method;
}

const MapOptionSpec* find_map_option(std::string_view name, MapMethod method, const char* MapOptionSpec::* front_end) {
  for (const MapOptionSpec& s : map_option_schema()) {
    if (!map_option_applies(s, method)) continue;
    bool named = front_end ? (s.*front_end)[0] != 0 && name == s.*front_end
                           : name == s.key || name == s.cli || name == s.js || (s.python[0] != 0 && name == s.python);
    if (named) return &s;
  }
  return nullptr;
}

std::string map_option_text(const MapOptionSpec& spec, const MapOptions& options) {
  double v = spec.get(options);
  if (spec.type == MapOptionType::Choice) return spec.choices.at(size_t(v));
  if (spec.has_automatic && v == 0) return "auto";
  return number_text(v);
}

std::string map_option_default(const MapOptionSpec& spec) { return map_option_text(spec, MapOptions{}); }

std::string map_option_range(const MapOptionSpec& spec) {
  if (spec.type == MapOptionType::Choice) {
    std::string words;
    for (size_t i = 0; i < spec.choices.size(); ++i)
      words += (i == 0 ? "" : i + 1 == spec.choices.size() ? " or " : ", ") + spec.choices[i];
    return words;
  }
  std::string range = std::string(spec.lo_open ? "(" : "[") + number_text(spec.lo) + ", " + number_text(spec.hi) +
                      (spec.hi_open ? ")" : "]");
  std::string what = spec.type == MapOptionType::Integer ? "an integer in " : "a number in ";
  return (spec.has_automatic ? "auto (0) or " : "") + what + range;
}

void set_map_option(MapOptions& options, const MapOptionSpec& spec, double value, std::string_view as_named) {
  const std::string name(as_named);
  if (spec.type == MapOptionType::Choice)
    throw Error(ErrorKind::Value,
                name + " must be one of " + map_option_range(spec) + ", got the number " + number_text(value));
  if (spec.type == MapOptionType::Integer && std::isfinite(value) && value != std::floor(value))
    throw Error(ErrorKind::Value,
                name + " must be a whole number (" + map_option_range(spec) + "), got " + number_text(value));
  // The range without the job's bounds (those are validate()'s; a field could not hold some
  // values), in validate()'s words, after the front end's own name where that is another.
  try {
    check_map_option(spec, value);
  } catch (const Error& e) {
    if (as_named == spec.key || as_named == spec.cli) throw;
    throw Error(ErrorKind::Value, name + ": " + e.message());
  }
  spec.set(options, value);
}

void set_map_option(MapOptions& options, const MapOptionSpec& spec, std::string_view text, std::string_view as_named) {
  const std::string name(as_named);
  if (spec.type == MapOptionType::Choice) {
    for (size_t i = 0; i < spec.choices.size(); ++i)
      if (text == spec.choices[i]) return spec.set(options, double(i));
    throw Error(ErrorKind::Value,
                name + " must be one of " + map_option_range(spec) + ", not '" + std::string(text) + "'");
  }
  if (spec.has_automatic && text == "auto") return spec.set(options, 0);
  double v = 0;
  if (!parse_number_text(text, spec.type == MapOptionType::Integer, v))
    throw Error(ErrorKind::Value, name + " must be " + map_option_range(spec) + ", got '" + std::string(text) +
                                      "' (not " + (spec.type == MapOptionType::Integer ? "a whole" : "a") + " number)");
  set_map_option(options, spec, v, as_named);
}

std::string map_option_schema_json() {
  nlohmann::json all = nlohmann::json::array();
  for (const MapOptionSpec& s : map_option_schema()) {
    nlohmann::json j = {{"key", s.key},
                        {"cli", s.cli},
                        {"js", s.js},
                        {"python", s.python},
                        {"method", s.method},
                        {"type", s.type == MapOptionType::Integer  ? "integer"
                                 : s.type == MapOptionType::Number ? "number"
                                                                   : "choice"},
                        {"default", map_option_default(s)},
                        {"range", map_option_range(s)},
                        {"automatic", s.has_automatic},
                        {"automaticDoc", s.automatic_doc},
                        {"doc", s.doc},
                        {"upperWhy", s.upper_why}};
    if (s.type == MapOptionType::Choice) {
      j["choices"] = s.choices;
    } else {
      j["lo"] = s.lo, j["hi"] = s.hi, j["loOpen"] = s.lo_open, j["hiOpen"] = s.hi_open;
    }
    all.push_back(j);
  }
  return all.dump();
}

}  // namespace surfgrad
