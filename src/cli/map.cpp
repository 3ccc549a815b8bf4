// `surfgrad map` and `surfgrad eval`: embedding maps from files (or a built-in data set).
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/maps.hpp"

using namespace surfgrad;

namespace {

double seconds_since(std::chrono::steady_clock::time_point& t) {
  auto now = std::chrono::steady_clock::now();
  double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}

}  // namespace

int cmd_map(const gpu::ContextPtr& ctx, int argc, char** argv) {
  std::string input, out = "map", labels_path, method = "tsne";
  TsneOptions opt;
  UmapOptions uopt;
  int64_t builtin_n = 5000;
  int pca_dims = -1;  // auto: 50 components where kNN is approximate (N > kExactKnnLimit), else none
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(ErrorKind::Value, "map: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "-o" || a == "--out") out = next();
    else if (a == "--labels") labels_path = next();
    else if (a == "--method") method = next();
    else if (a == "--perplexity") opt.perplexity = std::atof(next().c_str());
    else if (a == "--iterations") opt.iterations = std::atoi(next().c_str());
    else if (a == "--learning-rate") opt.learning_rate = std::atof(next().c_str());
    else if (a == "--early-exaggeration") opt.exaggeration = std::atof(next().c_str());
    else if (a == "--seed") opt.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--points") builtin_n = std::atoll(next().c_str());
    else if (a == "--pca") pca_dims = std::atoi(next().c_str());
    else if (a == "--n-neighbors") uopt.n_neighbors = std::atoi(next().c_str());
    else if (a == "--min-dist") uopt.min_dist = std::atof(next().c_str());
    else if (a == "--epochs") uopt.epochs = std::atoi(next().c_str());
    else if (a == "--repulsion") {
      std::string v = next();
      if (v != "auto" && v != "exact" && v != "fft")
        throw Error(ErrorKind::Value, "map: --repulsion takes auto, exact or fft, not " + v);
      opt.repulsion = v == "exact" ? Repulsion::Exact : v == "fft" ? Repulsion::Fft : Repulsion::Auto;
    }
    else if (a == "--max-step-norm") opt.max_step_norm = std::atof(next().c_str());
    else if (a == "--grid-spacing") {
      opt.grid_spacing = std::atof(next().c_str());
      if (!(opt.grid_spacing > 0)) throw Error(ErrorKind::Value, "map: --grid-spacing must be a positive number");
    }
    else if (a == "--init") {
      std::string v = next();
      if (v != "pca" && v != "random") throw Error(ErrorKind::Value, "map: --init takes pca or random, not " + v);
      opt.pca_init = v == "pca";
    }
    else if (!a.empty() && a[0] == '-') throw Error(ErrorKind::Value, "map: unknown option " + a);
    else input = a;
  }
  if (method != "tsne" && method != "umap")
    throw Error(ErrorKind::Value, "map: --method takes tsne or umap, not " + method);
  {  // fail before the work if the output cannot be written
    std::ofstream probe(out + ".npy", std::ios::binary | std::ios::app);
    if (!probe) throw Error(ErrorKind::IO, "'" + out + ".npy': cannot write the output there");
  }
  auto t = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, double>> phases;
  Tensor labels;
  PointBlocks x = input.empty() ? builtin_point_blocks(ctx, builtin_n, labels) : load_point_blocks(ctx, input);
  if (!labels_path.empty()) labels = load_labels(ctx, labels_path, x.rows());
  ctx->sync();
  phases.emplace_back(input.empty() ? "generate" : "load", seconds_since(t));
  uopt.seed = opt.seed;
  if (method == "tsne")
    std::printf("t-SNE of %lld points in %lld dimensions on %s (perplexity %g, %d iterations)\n", (long long)x.rows(),
                (long long)x.dims(), ctx->info().name.c_str(), opt.perplexity, opt.iterations);
  else
    std::printf("UMAP of %lld points in %lld dimensions on %s (n_neighbors %d, min_dist %g)\n", (long long)x.rows(),
                (long long)x.dims(), ctx->info().name.c_str(), uopt.n_neighbors, uopt.min_dist);
  Tensor features;
  // Exact neighbours are found in the input space itself, as openTSNE and umap-learn do; past
  // kExactKnnLimit points descent runs on 50 principal components (in 768-D it would be 15×
  // slower, and recall on a sample is reported either way).
  if (pca_dims < 0) pca_dims = x.rows() > kExactKnnLimit ? 50 : 0;
  if (pca_dims > 0 && x.dims() > pca_dims) {  // neighbours on the leading components, as is usual
    features = pca(x, pca_dims, opt.seed).scores;
    ctx->sync();
    phases.emplace_back("PCA to " + std::to_string(pca_dims), seconds_since(t));
  } else {
    features = x.single();
  }
  x.blocks.clear();  // the full-dimensional points are not needed any more
  int64_t n = features.shape(0);
  int k = method == "tsne" ? tsne_neighbours(opt.perplexity, n) : uopt.n_neighbors;
  KnnResult nn = nearest_neighbours(features, k, opt.seed);
  ctx->sync();
  bool approximate = n > kExactKnnLimit;
  phases.emplace_back(approximate ? "kNN (descent)" : "kNN (exact)", seconds_since(t));
  if (approximate) {
    double recall = knn_recall_sampled(features, nn, 1000);
    std::printf("kNN recall@%d against exact neighbours on 1,000 points: %.3f\n", k, recall);
    phases.emplace_back("kNN recall check", seconds_since(t));
  }
  auto progress = [&](int it, int total) {
    if (it == 0) phases.emplace_back(method == "tsne" ? "affinities" : "memberships", seconds_since(t));
    else std::printf("\r  optimisation %d/%d", it, total), std::fflush(stdout);
  };
  Tensor y = method == "tsne" ? tsne(features, opt, progress, &nn) : umap(features, uopt, progress, &nn);
  ctx->sync();
  phases.emplace_back("optimisation", seconds_since(t));
  std::printf("\n");
  write_outputs(out, y, labels);
  phases.emplace_back("write", seconds_since(t));
  std::printf("phase timings:\n");
  double total = 0;
  for (auto& [name, s] : phases) std::printf("  %-18s %8.3f s\n", name.c_str(), s), total += s;
  std::printf("  %-18s %8.3f s\nwrote %s.npy, %s.csv, %s.png\n", "total", total, out.c_str(), out.c_str(), out.c_str());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("memory peaks: GPU %.1f MiB (surfgrad's buffers at once), host %.1f MiB (resident set)\n",
              double(ctx->pool_stats().peak_live_bytes) / (1 << 20), double(usage.ru_maxrss) / 1024.0);
  return 0;
}

int cmd_eval(const gpu::ContextPtr& ctx, int argc, char** argv) {
  std::string embedding, input, labels_path;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--input" && i + 1 < argc) input = argv[++i];
    else if (a == "--labels" && i + 1 < argc) labels_path = argv[++i];
    else if (!a.empty() && a[0] != '-') embedding = a;
    else throw Error(ErrorKind::Value, "eval: unknown option " + a + " (EMBEDDING.npy --input INPUT [--labels L])");
  }
  if (embedding.empty() || input.empty()) throw Error(ErrorKind::Value, "eval: give EMBEDDING.npy and --input INPUT");
  Tensor x = load_points(ctx, input), y = load_points(ctx, embedding);
  Tensor labels;
  if (!labels_path.empty()) labels = load_labels(ctx, labels_path, x.shape(0));
  MapQuality q = evaluate_map(x, y, labels);
  std::printf("kNN recall@10      %.4f\n", q.knn_recall);
  std::printf("trustworthiness   %.4f\n", q.trustworthiness);
  std::printf("KL divergence     %.4f   (t-SNE objective on a sample of up to 2,000 points)\n", q.kl_divergence);
  if (q.knn_accuracy >= 0) std::printf("10-NN accuracy     %.4f\n", q.knn_accuracy);
  return 0;
}
