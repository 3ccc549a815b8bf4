// `surfgrad bench knn`: k-nearest neighbours of N points in D dimensions by each of the
// library's methods, timed end to end (upload excluded, readback of nothing: the lists stay on
// the GPU), with recall against exact lists on a sample of rows. The data: `clusters` (points
// around 100 Gaussian centres, like embeddings after PCA) or `gaussian` (one cloud, the hard case
// for neighbour descent). bench/torch_knn.py is the PyTorch reference for the same shapes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_options.hpp"
#include "maps/knn_fused.hpp"
#include "maps/knn_prune.hpp"
#include "maps/knn_rows_gpu.hpp"
#include "maps/knn_subgroup_matrix.hpp"
#include "output_files.hpp"
#include "surfgrad/knn.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad::cli {

namespace {

struct KnnBenchArgs {
  int64_t points = 100000, dims = 50, sample = 2000;
  int k = 15, reps = 1, candidates = 0;
  std::string data = "clusters", methods = "exact,blocked,descent", json_path;
  std::vector<std::string> shapes;  // extra runs of the exact kernel with these tile shapes
};

Tensor bench_points(const gpu::ContextPtr& ctx, const KnnBenchArgs& a) {
  Tensor noise = Tensor::normal(ctx, {a.points, a.dims}, 11);
  if (a.data == "gaussian") return noise;
  int64_t c = 100;
  Tensor centres = Tensor::normal(ctx, {c, a.dims}, 12, 0, 3);
  std::vector<int32_t> label(static_cast<size_t>(a.points));
  for (int64_t i = 0; i < a.points; ++i) label[size_t(i)] = int32_t((i * 7919) % c);
  return add(index_select(centres, 0, Tensor::from_vector(ctx, label, {a.points})), noise);
}

bool env_is(const char* name, const std::string& value) {
  const char* v = std::getenv(name);
  return v && value == v;
}

// "exact" (knn_exact: subgroup matrices where the device has them), "exact-f32" (the f32
// streaming kernel), "exact-rows-gpu" (small sets' kernel, knn_rows_gpu.hpp), "exact-sgmat" (subgroup matrices with
// --candidates; its stats in `sgmat`), "blocked", "descent" (as the maps run it: a search list of max(k, 48)), or
// "exact:SHAPE" (the streaming kernel with that tile shape).
KnnResult run_method(const std::string& m, const Tensor& x, int k, int candidates, KnnSubgroupMatrixStats& sgmat) {
  if (m == "exact") return knn_exact(x, k);
  if (m == "exact-f32") return knn_exact_shaped(x, k, knn_fused_shape(*x.context(), k));
  if (m == "exact-rows-gpu") {  // small sets' kernel (knn_rows_gpu.hpp) on any set and adapter
    Tensor norms = (x * x).sum({1});
    return knn_rows_gpu(x, norms, k, 0, x.shape(0));
  }
  if (m == "exact-sgmat" || m == "exact-sgmat-no-push")
    return knn_exact_subgroup_matrix(x, k, 0, x.shape(0),
                                     {.candidates = candidates,
                                      .time_steps = true,
                                      .no_push = m != "exact-sgmat",
                                      .right_cols = env_is("SURFGRAD_KNN_SGMAT_RIGHT", "cols")},
                                     &sgmat);
  if (m == "blocked") return knn_exact_blocked(x, k, 0, x.shape(0));
  if (m == "descent") return nearest_neighbours(x, k, 1, KnnMethod::Descent);
  return knn_exact_shaped(x, k, KnnFusedShape::parse(m.substr(6)));
}

int bench_knn(const gpu::ContextPtr& ctx, const KnnBenchArgs& a) {
  using json = nlohmann::ordered_json;
  Tensor x = bench_points(ctx, a);
  ctx->sync();
  std::printf("kNN of %lld × %lld (%s), k = %d on %s (%s)\n", (long long)a.points, (long long)a.dims, a.data.c_str(),
              a.k, ctx->info().name.c_str(), ctx->info().backend.c_str());
  json results = json::array();
  std::vector<std::string> methods;
  std::stringstream list(a.methods);
  for (std::string m; std::getline(list, m, ',');) methods.push_back(m);
  for (const auto& s : a.shapes) methods.push_back("exact:" + s);
  for (const std::string& m : methods) {
    // Warm-up on a slice: compiles the pipelines, so the timed runs measure the work only.
    int64_t warm = std::min<int64_t>(a.points, 4 * int64_t(a.k) + 512);
    KnnSubgroupMatrixStats sgmat;
    const bool sgmat_method = m.rfind("exact-sgmat", 0) == 0;
    if (sgmat_method) {
      if (std::string why = knn_subgroup_matrix_unsupported(*ctx, a.dims); !why.empty()) {
        std::printf("  %-32s skipped: %s\n", m.c_str(), why.c_str());
        results.push_back({{"method", m}, {"skipped", why}});
        continue;
      }
    }
    run_method(m, x.slice(0, 0, warm).contiguous(), a.k, a.candidates, sgmat).indices.to_vector<int32_t>();
    std::vector<double> seconds;
    KnnResult r;
    knn_prune_record_stats(true);  // (a readback of the blocks' counts at the end of each timed run)
    knn_prune_set_last({});
    for (int rep = 0; rep < a.reps; ++rep) {
      ctx->sync();
      auto t0 = std::chrono::steady_clock::now();
      r = run_method(m, x, a.k, a.candidates, sgmat);
      ctx->sync();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    double s = seconds[seconds.size() / 2];
    const KnnPruneStats pruned = knn_prune_last_stats();  // (the last run's, where it skipped tiles: knn_prune.hpp)
    // A compute-only or no-push shape leaves the lists unfilled: no recall to measure.
    bool filled = m.find("compute-only") == std::string::npos && m.find("no-push") == std::string::npos;
    // Against the f32 streaming kernel's lists (knn_exact_rows would take subgroup matrices where
    // asked for, small sets' kernel on GPUs).
    const char* rows_env = std::getenv("SURFGRAD_KNN_GPU_ROWS");
    const std::string rows_choice = rows_env ? rows_env : "";
    ::setenv("SURFGRAD_KNN_SUBGROUP_MATRIX", "0", 1);
    ::setenv("SURFGRAD_KNN_GPU_ROWS", "0", 1);
    double recall = filled ? knn_recall_sampled(x, r, a.sample) : -1;
    ::unsetenv("SURFGRAD_KNN_SUBGROUP_MATRIX");
    if (rows_env)
      ::setenv("SURFGRAD_KNN_GPU_ROWS", rows_choice.c_str(), 1);
    else
      ::unsetenv("SURFGRAD_KNN_GPU_ROWS");
    std::printf("  %-32s %9.3f s   recall@%d %.4f (sample of %lld rows)\n", m.c_str(), s, a.k, recall,
                (long long)std::min(a.sample, a.points));
    std::fflush(stdout);
    json row = {{"method", m}, {"seconds", s}, {"all_seconds", seconds}, {"recall", recall}};
    if (pruned.pairs > 0) {
      std::printf("  %-32s tiles skipped: %lld of %lld (row block, tile) pairs (%.1f%%)%s\n", "",
                  (long long)pruned.skipped, (long long)pruned.pairs,
                  100.0 * double(pruned.skipped) / double(pruned.pairs),
                  pruned.abandoned ? "; the test dropped after the first dispatch" : "");
      row["tiles_skipped"] = pruned.skipped;
      row["tile_pairs"] = pruned.pairs;
      row["skip_test_dropped"] = pruned.abandoned;
    }
    if (sgmat_method) {  // rows whose f16 bound was not clear, recomputed by the f32 kernel
      std::printf("  %-32s candidates %d, rows recomputed in f32: %lld of %lld\n", "", sgmat.candidates,
                  (long long)sgmat.recomputed, (long long)sgmat.rows);
      // Each step synced (the last run's): where the time goes.
      std::printf("  %-32s steps: prep %.3f s, candidates %.3f s, f32 re-check %.3f s, recompute %.3f s\n", "",
                  sgmat.prep_seconds, sgmat.candidates_seconds, sgmat.check_seconds, sgmat.recompute_seconds);
      row["candidates"] = sgmat.candidates;
      row["rows_recomputed"] = sgmat.recomputed;
      row["steps"] = {{"prep", sgmat.prep_seconds},
                      {"candidates", sgmat.candidates_seconds},
                      {"check", sgmat.check_seconds},
                      {"recompute", sgmat.recompute_seconds}};
    }
    results.push_back(row);
  }
  if (!a.json_path.empty()) {
    json j = {{"bench", "knn"},
              {"adapter", ctx->info().name},
              {"backend", ctx->info().backend},
              {"date", today()},
              {"points", a.points},
              {"dims", a.dims},
              {"k", a.k},
              {"data", a.data},
              {"recall_sample", a.sample},
              {"results", results}};
    write_file_atomically(a.json_path, j.dump(2) + "\n", "--json");
  }
  return 0;
}

}  // namespace

void add_bench_knn_command(CLI::App& bench, CommandFn& chosen) {
  auto a = std::make_shared<KnnBenchArgs>();
  CLI::App* s = bench.add_subcommand("knn", "k-nearest neighbours: exact (streaming), blocked, descent; recall");
  s->add_option("--points", a->points, "N")->check(integer_in<int64_t>(2, int64_t(1) << 31))->capture_default_str();
  s->add_option("--dims", a->dims, "D")->check(integer_in<int64_t>(1, 4096))->capture_default_str();
  s->add_option("--k", a->k, "neighbours per point")->check(integer_in(1, 128))->capture_default_str();
  s->add_option("--data", a->data, "clusters or gaussian")
      ->check(CLI::IsMember({"clusters", "gaussian"}))
      ->capture_default_str();
  s->add_option("--methods", a->methods,
                "comma-separated: exact (knn_exact's choice: small sets' kernel on GPUs, subgroup matrices where "
                "asked for), exact-f32 (the streaming kernel), exact-rows-gpu (small sets' kernel), exact-sgmat, "
                "exact-sgmat-no-push "
                "(its candidate stream without pushes: lists unfilled), blocked, descent")
      ->check([](const std::string& v) {
        std::stringstream list(v);
        for (std::string m; std::getline(list, m, ',');)
          if (m != "exact" && m != "exact-f32" && m != "exact-rows-gpu" && m != "exact-sgmat" &&
              m != "exact-sgmat-no-push" && m != "blocked" && m != "descent")
            return "unknown method '" + m +
                   "' (exact, exact-f32, exact-rows-gpu, exact-sgmat, exact-sgmat-no-push, blocked, descent)";
        return std::string();
      })
      ->capture_default_str();
  s->add_option("--shapes", a->shapes,
                "also run the exact kernel with these tile shapes, BMxBNxBK/TMxTN/qQmMeE[sS][/compute-only|/no-push]")
      ->delimiter(',')
      ->check([](const std::string& v) {
        try {
          KnnFusedShape::parse(v);
        } catch (const Error& e) {
          return std::string(e.message());
        }
        return std::string();
      });
  s->add_option(
       "--candidates", a->candidates,
       "exact-sgmat: candidates a row keeps by the f16 key before the f32 re-check (k..256; 0: min(2k+16, 256))")
      ->check(integer_in(0, 256))
      ->capture_default_str();
  s->add_option("--reps", a->reps, "timed runs per method (median)")->check(integer_in(1, 100))->capture_default_str();
  s->add_option("--recall-sample", a->sample, "rows checked against exact lists")
      ->check(integer_in<int64_t>(8, 1000000))
      ->capture_default_str();
  s->add_option("--json", a->json_path, "also write the results to this JSON file (- for standard output)");
  s->callback([a, &chosen] {
    if (a->k >= a->points) throw CLI::ValidationError("--k", "must be below --points");
    if (a->candidates && a->candidates < a->k) throw CLI::ValidationError("--candidates", "must be 0 or at least --k");
    chosen = [a](const gpu::ContextPtr& ctx) { return bench_knn(ctx, *a); };
  });
}

}  // namespace surfgrad::cli
