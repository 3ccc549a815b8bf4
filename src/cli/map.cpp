// `surfgrad map` and `surfgrad eval`: options, one library call (map_points / evaluate_map),
// and printing. Everything a map needs beyond reading and writing files is in the library, so
// Python and the browser get the same job.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_options.hpp"
#include "map_option_flags.hpp"
#include "map_tables.hpp"
#include "maps/layout_prewarm.hpp"
#include "output_files.hpp"
#include "progress_bar.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/maps.hpp"

namespace surfgrad::cli {

namespace {

constexpr int64_t kBuiltinDims = 768;  // builtin_point_blocks' dimensions

struct MapArgs {
  std::string input, out = "map", labels, labels_column, tiles;
  bool force = false;  // --tiles may replace a non-empty folder
  int64_t tile_rows = 65536;
  std::vector<std::string> columns, keep;  // a table input's point columns; its columns carried into a Parquet map
  int64_t points = 5000;
  MapFlagValues options;  // the schema's flags as given (map_option_flags.hpp)
  MapOptions map;
};

double mib(uint64_t bytes) { return double(bytes) / double(1 << 20); }

int run_map(const gpu::ContextPtr& ctx, MapArgs& a) {
  MapOptions& opt = a.map;
  apply_map_option_flags(a.options, opt);
  // Refuse a bad output name, or one that would overwrite an input, before any work.
  bool parquet = writes_parquet(a.out);
  check_usage([&] { check_table_options(a.input, a.columns, a.keep, parquet); });
  if (!a.labels_column.empty())
    check_usage([&] {
      if (!a.labels.empty())
        throw Error(ErrorKind::Value, "--labels FILE and --labels-column NAME both give labels; give one");
      check_labels_column_option(a.input, a.labels_column);
    });
  if (!a.tiles.empty()) check_usage([&] { check_tiles_option(a.tiles, a.force); });
  StagedOutputs outputs(a.out,
                        parquet ? std::vector<std::string>{""} : std::vector<std::string>{".npy", ".csv", ".png"},
                        {a.input, a.labels}, "-o");
  if (a.input.empty()) check_usage([&] { check_map_fits(ctx, opt, a.points, kBuiltinDims); });  // before generating
  // Cold start: the kNN's and the layout's kernels compile on worker threads while the points load.
  // The kernels the last maps used (loading's and the tensor ops' included) first, in the order
  // they were first used; then the kNN's and the layout's, which a first map has no record of.
  MapKernelRecord record(ctx, opt);
  prewarm_map_kernels(ctx, opt);
  auto t0 = std::chrono::steady_clock::now();
  Tensor labels;
  PointBlocks x =
      a.input.empty() ? builtin_point_blocks(ctx, a.points, labels) : load_input_points(ctx, a.input, a.columns);
  if (!a.labels.empty()) labels = load_labels(ctx, a.labels, x.rows());
  std::vector<std::string> label_names;  // a string labels column's class names, for the tiles' manifest
  if (!a.labels_column.empty()) labels = load_table_labels(ctx, a.input, a.labels_column, x.rows(), &label_names);
  ctx->sync();
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t n = x.rows(), d = x.dims();
  check_usage([&] { validate(opt, n, d); });    // before printing what would be done
  std::string job = describe_map_options(opt);  // "t-SNE (perplexity 30, 750 iterations)"
  size_t paren = job.find(" (");
  std::printf("%s of %lld points in %lld dimensions on %s%s\n", job.substr(0, paren).c_str(), (long long)n,
              (long long)d, ctx->info().name.c_str(), job.substr(paren).c_str());
  std::fflush(stdout);

  ProgressBar bar;
  MapResult r = map_points(std::move(x), opt, [&](const MapProgressEvent& e) {
    bar.update(std::string(e.phase), e.done, e.total);
    return true;
  });
  bar.finish();
  record.save();
  if (r.knn_recall >= 0)
    std::printf("kNN recall@%d against exact neighbours on %lld points: %.3f\n", r.k,
                (long long)std::min(n, opt.recall_sample), r.knn_recall);

  auto t1 = std::chrono::steady_clock::now();
  outputs.write([&] {
    if (parquet)
      write_parquet_map(outputs.path(""), r.embedding, a.input, a.keep, a.labels_column);
    else
      write_outputs(outputs.path(".npy"), outputs.path(".csv"), outputs.path(".png"), r.embedding, labels);
  });
  outputs.commit();
  auto t2 = std::chrono::steady_clock::now();
  int64_t tiles =
      a.tiles.empty() ? 0 : write_map_tiles(a.tiles, r.embedding, labels, a.force, a.tile_rows, label_names);
  double write_s = std::chrono::duration<double>(t2 - t1).count();
  double tiles_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count();

  std::printf("phase timings:\n");
  double total = load_s + write_s;
  std::printf("  %-18s %8.3f s\n", a.input.empty() ? "generate" : "load", load_s);
  for (auto& p : r.phases) std::printf("  %-18s %8.3f s\n", p.name.c_str(), p.seconds), total += p.seconds;
  std::printf("  %-18s %8.3f s\n", "write", write_s);
  if (!a.tiles.empty()) std::printf("  %-18s %8.3f s\n", "tiles", tiles_s), total += tiles_s;
  std::printf("  %-18s %8.3f s\n", "total", total);
  if (parquet)
    std::printf("wrote %s\n", a.out.c_str());
  else
    std::printf("wrote %s.npy, %s.csv, %s.png\n", a.out.c_str(), a.out.c_str(), a.out.c_str());
  if (!a.tiles.empty()) std::printf("wrote %lld tiles and manifest.json in %s\n", (long long)tiles, a.tiles.c_str());
  std::printf("memory peaks: GPU %.1f MiB (surfgrad's buffers at once), host %.1f MiB (resident set)\n",
              mib(r.gpu_peak_bytes), mib(r.host_peak_bytes));
  return 0;
}

struct EvalArgs {
  std::string embedding, input, labels, labels_column;
  std::vector<std::string> columns;  // a table input's point columns
};

int run_eval(const gpu::ContextPtr& ctx, const EvalArgs& a) {
  if (!a.columns.empty()) check_usage([&] { check_table_options(a.input, a.columns, {}, false); });
  if (!a.labels_column.empty() && !a.labels.empty())
    check_usage(
        [] { throw Error(ErrorKind::Value, "--labels FILE and --labels-column NAME both give labels; give one"); });
  Tensor x = load_input_points(ctx, a.input, a.columns).single();
  Tensor y = is_table(a.embedding) ? load_map_table(ctx, a.embedding) : load_points(ctx, a.embedding);
  if (y.shape(1) < 2)
    throw Error(ErrorKind::Shape,
                "eval: the embedding '" + a.embedding + "' must have 2 (or more) columns, got " + y.describe());
  if (y.shape(0) != x.shape(0))
    throw Error(ErrorKind::Shape, "eval: the embedding '" + a.embedding + "' has " + std::to_string(y.shape(0)) +
                                      " points, the input '" + a.input + "' " + std::to_string(x.shape(0)));
  Tensor labels;
  if (!a.labels.empty()) labels = load_labels(ctx, a.labels, x.shape(0));
  // A labels column of the input table, else of the map's table (a map written with --keep label).
  if (!a.labels_column.empty())
    labels = load_table_labels(ctx, is_table(a.input) ? a.input : a.embedding, a.labels_column, x.shape(0));
  MapQuality q = evaluate_map(x, y, labels);
  std::printf("kNN recall@10      %.4f\n", q.knn_recall);
  std::printf("trustworthiness   %.4f\n", q.trustworthiness);
  std::printf("KL divergence     %.4f   (t-SNE objective on a sample of up to 2,000 points)\n", q.kl_divergence);
  if (q.knn_accuracy >= 0) std::printf("10-NN accuracy     %.4f\n", q.knn_accuracy);
  return 0;
}

}  // namespace

void add_map_commands(CLI::App& app, CommandFn& chosen) {
  auto a = std::make_shared<MapArgs>();
  CLI::App* map = app.add_subcommand(
      "map",
      "t-SNE or UMAP map of points from .npy, IDX, CSV, Parquet or Arrow IPC (no INPUT: the built-in 10 clusters\n"
      "in 768-D). Writes OUT.npy (f32 [N, 2]), OUT.csv and OUT.png, or OUT.parquet (x, y, --keep columns). Input "
      "limits: t-SNE needs perplexity <= (N - 1)/3\n"
      "and uses k = floor(3 * perplexity) <= 128 neighbours; UMAP needs n_neighbors <= min(128, N - 1).");
  map->add_option("INPUT", a->input,
                  "points: .npy (any float/int dtype), .npz (one array), IDX (MNIST, .gz too), CSV, or a table: "
                  "Parquet, Arrow IPC / Feather (.arrow, .feather)");
  // One argument each (a,b,c), split here: a vector option would take INPUT after it as a column.
  map->add_option_function<std::string>(
      "--column", [a](const std::string& v) { a->columns = split_column_names(v); },
      "a table's points: a list column of floats (one point a row) or numeric columns a,b,c (default: "
      "'embedding', else the first list column, else all float columns)");
  map->add_option_function<std::string>(
      "--keep", [a](const std::string& v) { a->keep = split_column_names(v); },
      "columns of a table INPUT carried into -o NAME.parquet (e.g. id,text,label)");
  map->add_option("-o,--out", a->out,
                  "output name: writes OUT.npy, OUT.csv, OUT.png (not - nor a device); NAME.parquet: that one file")
      ->capture_default_str();
  map->add_option("--labels", a->labels, "labels (i32, one per point) to colour the PNG and CSV");
  map->add_option("--labels-column", a->labels_column,
                  "a table INPUT's column of labels (integers or strings) to colour the PNG and CSV; carried into "
                  "-o NAME.parquet as 'label'");
  map->add_option("--tiles", a->tiles,
                  "also write the map as a quadtree of Arrow IPC tiles (x, y, ix, label) and manifest.json into this "
                  "new folder, for drawing millions of points progressively (docs/tiles.md)");
  map->add_flag("--force", a->force, "let --tiles replace a folder that is not empty");
  map->add_option("--tile-rows", a->tile_rows, "--tiles: at most this many points a tile")
      ->check(integer_in<int64_t>(16, int64_t(1) << 24))
      ->capture_default_str();
  map->add_option("--points", a->points, "points of the built-in data set (without INPUT)")
      ->check(integer_in<int64_t>(2, (int64_t(1) << 31) - 2))
      ->capture_default_str();
  // Every map option of the library's schema (surfgrad/map_options.hpp), with its range and default.
  add_map_option_flags(*map, a->options);
  map->callback([a, &chosen] {
    // A map runs only surfgrad's kernels: under Dawn, without robustness (ContextOptions).
    context_options().own_kernels_only = true;
    chosen = [a](const gpu::ContextPtr& ctx) { return run_map(ctx, *a); };
  });

  auto e = std::make_shared<EvalArgs>();
  CLI::App* eval = app.add_subcommand("eval", "quality of a map: kNN recall@10, trustworthiness, KL, 10-NN accuracy");
  eval->add_option("EMBEDDING", e->embedding, "the map (.npy/CSV, [N, 2]; or a map Parquet: columns x, y)")->required();
  eval->add_option("--input", e->input, "the points the map was made from")->required();
  eval->add_option("--labels", e->labels, "labels, for the 10-NN accuracy");
  eval->add_option_function<std::string>(
      "--column", [e](const std::string& v) { e->columns = split_column_names(v); },
      "a table INPUT's point columns (as for map)");
  eval->add_option("--labels-column", e->labels_column,
                   "labels from a column of the INPUT table (else of the map's table), for the 10-NN accuracy");
  eval->callback([e, &chosen] { chosen = [e](const gpu::ContextPtr& ctx) { return run_eval(ctx, *e); }; });
}

}  // namespace surfgrad::cli
