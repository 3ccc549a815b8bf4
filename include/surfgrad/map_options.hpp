// A map job's options and their schema: one record per option (its name in each front end,
// type, default, range, documentation), from which validate(), the CLI's options and --help,
// the Python estimators' parameters and the JavaScript option names all come.
//
//   for (const MapOptionSpec& s : map_option_schema())
//     std::printf("%s (%s): %s, default %s\n", s.key, s.cli, s.doc, map_option_default(s).c_str());
//   MapOptions o;
//   set_map_option(o, *find_map_option("perplexity", MapMethod::Tsne), "40", "--perplexity");
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "surfgrad/knn.hpp"
#include "surfgrad/tensor.hpp"
#include "surfgrad/tsne.hpp"
#include "surfgrad/umap.hpp"

namespace surfgrad {

enum class MapMethod { Tsne, Umap };
// Cosine: rows are scaled to unit length first (on unit vectors |a − b|² = 2 − 2·cos(a, b), so
// euclidean neighbours are cosine neighbours); an all-zero row is refused.
enum class MapMetric { Euclidean, Cosine };

struct MapOptions {
  MapMethod method = MapMethod::Tsne;
  TsneOptions tsne;
  UmapOptions umap;
  MapMetric metric = MapMetric::Euclidean;
  // kNN on this many principal components: −1 auto (50 past kExactKnnLimit points, where kNN is
  // approximate; none below), 0 off, else 1..D.
  int pca_components = -1;
  // Exact kNN or neighbour descent; Auto picks by size and adapter (knn_is_exact).
  KnnMethod knn = KnnMethod::Auto;
  // One seed for PCA, kNN descent and the layout; it replaces tsne.seed and umap.seed.
  uint64_t seed = 1;
  // Points whose exact neighbours are computed to measure the approximate kNN's recall (0: skip).
  int64_t recall_sample = 1000;
  // The start when `init` is undefined: the first two principal components (t-SNE scaled to
  // std 1e-4 as openTSNE, UMAP to ±10), else seeded random positions (t-SNE N(0, 1e-4²), UMAP
  // uniform in ±10). It replaces tsne.pca_init.
  bool pca_start = true;
  // Non-finite positions are looked for at every progress step (a GPU reduction, 4 bytes read).
  bool check_finite = true;
  // Starting positions, [N, 2] of the points' context (f32, or cast to it), used as given (not
  // rescaled; t-SNE works best from a spread near 1e-4, as its PCA start).
  Tensor init;
};

// The names of a method ("tsne", "umap") and their inverse; `who` names the caller in the error
// for any other word ("map: method is 'tsne' or 'umap', not 'pca'").
std::string_view map_method_name(MapMethod method);
MapMethod parse_map_method(std::string_view name, std::string_view who = "map");

enum class MapOptionType { Integer, Number, Choice };

struct MapOptionSpec {
  const char* key;     // the library's name: MapOptions' field, Python's options dict, messages
  const char* cli;     // `surfgrad map`'s flag
  const char* js;      // the JavaScript option (camelCase)
  const char* python;  // the estimator's parameter (TSNE / UMAP), scikit-learn's name where it has one
  const char* method;  // "tsne", "umap", or "" for every method
  MapOptionType type;
  double lo = 0, hi = 0;  // Integer and Number: the range, with open ends where said
  bool lo_open = false, hi_open = false;
  // Number and Integer options with an automatic setting: this value (0), also written "auto".
  bool has_automatic = false;
  std::vector<std::string> choices;  // Choice: the words, in order
  const char* doc;                   // one line, for --help and docstrings
  const char* automatic_doc = "";    // what "auto" means
  // An upper bound that depends on the job (N points, D dimensions), with why: perplexity,
  // n_neighbors and pca. Null where the range is the whole story.
  double (*upper_for)(int64_t n, int64_t d) = nullptr;
  const char* upper_why = "";
  // Access to the field in MapOptions: numbers (Integer and Number) or the index of a choice.
  double (*get)(const MapOptions&) = nullptr;
  void (*set)(MapOptions&, double) = nullptr;
};

// Every option, methods' own after the shared ones.
const std::vector<MapOptionSpec>& map_option_schema();
// The option of that name that applies to `method`, null if none: by any of its names, or by one
// front end's (`&MapOptionSpec::js`: the JavaScript name only).
const MapOptionSpec* find_map_option(std::string_view name, MapMethod method,
                                     const char* MapOptionSpec::* front_end = nullptr);
bool map_option_applies(const MapOptionSpec& spec, MapMethod method);

// The value in MapOptions as text ("30", "auto", "pca"): defaults come from MapOptions{}.
std::string map_option_text(const MapOptionSpec& spec, const MapOptions& options);
std::string map_option_default(const MapOptionSpec& spec);
// "an integer in [2, 128]", "a number in (1, 43)", "auto or a number in (0, 1e9]", "pca or random".
std::string map_option_range(const MapOptionSpec& spec);
// Sets the option from text ("40", "auto", "random"), strictly: the whole text is a decimal
// number (integers whole: "1e9" is not an iteration count), finite, a listed word for choices.
// Range checks are validate()'s. Throws Error(Value) naming the option as `as_named`.
void set_map_option(MapOptions& options, const MapOptionSpec& spec, std::string_view text, std::string_view as_named);
// Sets a number (Integer: whole) or a choice's word; the same checks.
void set_map_option(MapOptions& options, const MapOptionSpec& spec, double value, std::string_view as_named);
// The schema as JSON (an array of objects with every field above and the default), for the
// front ends that are not C++ (the browser's option names, Python's docstrings and tests).
std::string map_option_schema_json();

}  // namespace surfgrad
