// `surfgrad map` and `surfgrad eval`: options, one library call (map_points / evaluate_map),
// and printing. Everything a map needs beyond reading and writing files is in the library, so
// Python and the browser get the same job.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli.hpp"
#include "cli_options.hpp"
#include "output_files.hpp"
#include "progress_bar.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/maps.hpp"

namespace surfgrad::cli {

namespace {

constexpr int64_t kBuiltinDims = 768;  // builtin_point_blocks' dimensions

struct MapArgs {
  std::string input, out = "map", labels, method = "tsne", repulsion = "auto", init = "pca", knn = "auto";
  int64_t points = 5000;
  MapOptions map;
};

double mib(uint64_t bytes) { return double(bytes) / double(1 << 20); }

int run_map(const gpu::ContextPtr& ctx, MapArgs& a) {
  MapOptions& opt = a.map;
  opt.method = a.method == "umap" ? MapMethod::Umap : MapMethod::Tsne;
  opt.tsne.repulsion = a.repulsion == "exact" ? Repulsion::Exact
                       : a.repulsion == "fft" ? Repulsion::Fft
                                              : Repulsion::Auto;
  opt.tsne.pca_init = a.init == "pca";
  opt.knn = a.knn == "exact" ? KnnMethod::Exact : a.knn == "descent" ? KnnMethod::Descent : KnnMethod::Auto;
  // Refuse a bad output name, or one that would overwrite an input, before any work.
  StagedOutputs outputs(a.out, {".npy", ".csv", ".png"}, {a.input, a.labels}, "-o");
  if (a.input.empty()) check_usage([&] { check_map_fits(ctx, opt, a.points, kBuiltinDims); });  // before generating
  auto t0 = std::chrono::steady_clock::now();
  Tensor labels;
  PointBlocks x = a.input.empty() ? builtin_point_blocks(ctx, a.points, labels) : load_point_blocks(ctx, a.input);
  if (!a.labels.empty()) labels = load_labels(ctx, a.labels, x.rows());
  ctx->sync();
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int64_t n = x.rows(), d = x.dims();
  check_usage([&] { validate(opt, n, d); });  // before printing what would be done
  if (opt.method == MapMethod::Tsne)
    std::printf("t-SNE of %lld points in %lld dimensions on %s (perplexity %g, %d iterations)\n", (long long)n,
                (long long)d, ctx->info().name.c_str(), opt.tsne.perplexity, opt.tsne.iterations);
  else
    std::printf("UMAP of %lld points in %lld dimensions on %s (n_neighbors %d, min_dist %g)\n", (long long)n,
                (long long)d, ctx->info().name.c_str(), opt.umap.n_neighbors, opt.umap.min_dist);
  std::fflush(stdout);

  ProgressBar bar;
  MapResult r = map_points(std::move(x), opt, [&](const MapProgressEvent& e) {
    bar.update(std::string(e.phase), e.done, e.total);
    return true;
  });
  bar.finish();
  if (r.knn_recall >= 0)
    std::printf("kNN recall@%d against exact neighbours on %lld points: %.3f\n", r.k,
                (long long)std::min(n, opt.recall_sample), r.knn_recall);

  auto t1 = std::chrono::steady_clock::now();
  outputs.write(
      [&] { write_outputs(outputs.path(".npy"), outputs.path(".csv"), outputs.path(".png"), r.embedding, labels); });
  outputs.commit();
  double write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();

  std::printf("phase timings:\n");
  double total = load_s + write_s;
  std::printf("  %-18s %8.3f s\n", a.input.empty() ? "generate" : "load", load_s);
  for (auto& p : r.phases) std::printf("  %-18s %8.3f s\n", p.name.c_str(), p.seconds), total += p.seconds;
  std::printf("  %-18s %8.3f s\n", "write", write_s);
  std::printf("  %-18s %8.3f s\nwrote %s.npy, %s.csv, %s.png\n", "total", total, a.out.c_str(), a.out.c_str(),
              a.out.c_str());
  std::printf("memory peaks: GPU %.1f MiB (surfgrad's buffers at once), host %.1f MiB (resident set)\n",
              mib(r.gpu_peak_bytes), mib(r.host_peak_bytes));
  return 0;
}

struct EvalArgs {
  std::string embedding, input, labels;
};

int run_eval(const gpu::ContextPtr& ctx, const EvalArgs& a) {
  Tensor x = load_points(ctx, a.input), y = load_points(ctx, a.embedding);
  if (y.shape(1) < 2)
    throw Error(ErrorKind::Shape,
                "eval: the embedding '" + a.embedding + "' must have 2 (or more) columns, got " + y.describe());
  if (y.shape(0) != x.shape(0))
    throw Error(ErrorKind::Shape, "eval: the embedding '" + a.embedding + "' has " + std::to_string(y.shape(0)) +
                                      " points, the input '" + a.input + "' " + std::to_string(x.shape(0)));
  Tensor labels;
  if (!a.labels.empty()) labels = load_labels(ctx, a.labels, x.shape(0));
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
      "t-SNE or UMAP map of points from .npy, IDX or CSV (no INPUT: the built-in 10 clusters in 768-D).\n"
      "Writes OUT.npy (f32 [N, 2]), OUT.csv and OUT.png. Input limits: t-SNE needs perplexity <= (N - 1)/3\n"
      "and uses k = floor(3 * perplexity) <= 128 neighbours; UMAP needs n_neighbors <= min(128, N - 1).");
  TsneOptions& t = a->map.tsne;
  UmapOptions& u = a->map.umap;
  map->add_option("INPUT", a->input,
                  "points: .npy (any float/int dtype), .npz (one array), IDX (MNIST, .gz too) or CSV");
  map->add_option("-o,--out", a->out, "output name: writes OUT.npy, OUT.csv, OUT.png (not - nor a device)")
      ->capture_default_str();
  map->add_option("--labels", a->labels, "labels (i32, one per point) to colour the PNG and CSV");
  map->add_option("--method", a->method, "tsne or umap")->check(one_of({"tsne", "umap"}))->capture_default_str();
  map->add_option("--points", a->points, "points of the built-in data set (without INPUT)")
      ->check(integer_in<int64_t>(2, (int64_t(1) << 31) - 2))
      ->capture_default_str();
  map->add_option("--seed", a->map.seed, "seed of PCA, kNN descent and the layout")
      ->check(integer_in<uint64_t>(0, UINT64_MAX))
      ->capture_default_str();
  map->add_option("--pca", a->map.pca_components,
                  "kNN on this many principal components: -1 auto (50 past 20,000 points), 0 off, else 1..D")
      ->check(integer_in<int>(-1, 1 << 20))
      ->capture_default_str();
  map->add_option("--knn", a->knn,
                  "neighbours: exact, descent, or auto (exact up to 20,000 points, and on GPUs while N²·D <= 1e15 and "
                  "the lists fit one binding)")
      ->check(one_of({"auto", "exact", "descent"}))
      ->capture_default_str();
  map->add_option("--recall-sample", a->map.recall_sample,
                  "points on which approximate kNN's recall is measured (0: skip)")
      ->check(integer_in<int64_t>(0, (int64_t(1) << 31) - 1))
      ->capture_default_str();
  // t-SNE
  map->add_option("--perplexity", t.perplexity, "t-SNE: perplexity, also <= (N - 1)/3")
      ->check(number_in(1, 43, true, true))
      ->capture_default_str();
  map->add_option("--iterations", t.iterations, "t-SNE: iterations")
      ->check(integer_in<int>(1, 1000000))
      ->capture_default_str();
  map->add_option("--exaggeration-iterations", t.exaggeration_iterations, "t-SNE: early exaggeration iterations")
      ->check(integer_in<int>(0, 1000000))
      ->capture_default_str();
  map->add_option("--early-exaggeration", t.exaggeration, "t-SNE: early exaggeration factor")
      ->check(number_in(0, 1000, true))
      ->capture_default_str();
  map->add_option("--learning-rate", t.learning_rate, "t-SNE: learning rate, 0 = max(N / exaggeration, 50)")
      ->check(number_in(0, 1e9))
      ->capture_default_str();
  map->add_option("--max-step-norm", t.max_step_norm, "t-SNE: longest update step, 0 = unclipped")
      ->check(number_in(0, 1e6))
      ->capture_default_str();
  map->add_option("--repulsion", a->repulsion, "t-SNE: repulsion (auto: fft past 5,000 points)")
      ->check(one_of({"auto", "exact", "fft"}))
      ->capture_default_str();
  map->add_option("--grid-spacing", t.grid_spacing, "t-SNE, fft: largest distance between grid nodes")
      ->check(number_in(0, 100, true))
      ->capture_default_str();
  map->add_option("--init", a->init, "t-SNE: start from PCA or random positions")
      ->check(one_of({"pca", "random"}))
      ->capture_default_str();
  // UMAP
  map->add_option("--n-neighbors", u.n_neighbors, "UMAP: neighbours per point, also <= N - 1")
      ->check(integer_in<int>(2, 128))
      ->capture_default_str();
  map->add_option("--min-dist", u.min_dist, "UMAP: minimum distance in the map")
      ->check(number_in(0, 1))
      ->capture_default_str();
  map->add_option("--epochs", u.epochs, "UMAP: epochs, 0 = 500 up to 10,000 points, else 200")
      ->check(integer_in<int>(0, 1000000))
      ->capture_default_str();
  map->callback([a, &chosen] { chosen = [a](const gpu::ContextPtr& ctx) { return run_map(ctx, *a); }; });

  auto e = std::make_shared<EvalArgs>();
  CLI::App* eval = app.add_subcommand("eval", "quality of a map: kNN recall@10, trustworthiness, KL, 10-NN accuracy");
  eval->add_option("EMBEDDING", e->embedding, "the map (.npy/CSV, [N, 2])")->required();
  eval->add_option("--input", e->input, "the points the map was made from")->required();
  eval->add_option("--labels", e->labels, "labels, for the 10-NN accuracy");
  eval->callback([e, &chosen] { chosen = [e](const gpu::ContextPtr& ctx) { return run_eval(ctx, *e); }; });
}

}  // namespace surfgrad::cli
