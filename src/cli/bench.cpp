// `surfgrad bench`: the foundation's two benchmarks (elementwise bandwidth, dispatch overhead).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_options.hpp"
#include "kernels/launch.hpp"
#include "output_files.hpp"
#include "surfgrad/nn.hpp"
#include "surfgrad/optim.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad::cli {

std::string today() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using json = nlohmann::ordered_json;  // fields in the order written: bench, adapter, ... as before

// The adapter and date every benchmark record carries.
json bench_record(const gpu::ContextPtr& ctx, const char* bench) {
  return {{"bench", bench},
          {"adapter", ctx->info().name},
          {"backend", ctx->info().backend},
          {"implementation", ctx->info().implementation},
          {"date", today()}};
}

void write_json(const std::string& path, const json& body) {
  if (!path.empty()) write_file_atomically(path, body.dump(2) + "\n", "--json");
}

// GPU time of `work` (timestamp queries), or wall time around submit + wait where the adapter
// has no timestamps. Median of `reps` after one warm-up.
template <typename F>
double time_ms(const gpu::ContextPtr& ctx, int reps, F work, bool* used_timestamps) {
  work();
  ctx->sync();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    t.push_back(ctx->timed_ms(work, used_timestamps));
  }
  return median(t);
}

int bench_elementwise(const gpu::ContextPtr& ctx, int64_t n, int reps, const std::string& json_path) {
  Tensor a = Tensor::uniform(ctx, {n}, 1), b = Tensor::uniform(ctx, {n}, 2);
  Tensor out = Tensor::empty(ctx, {n});
  Tensor copy_dst = Tensor::empty(ctx, {n});
  bool ts = false;
  Tensor c;
  double add_ms = time_ms(ctx, reps, [&] { c = add(a, b); }, &ts);
  // Device copy through the same kernel family (one read, one write per element).
  double copy_ms = time_ms(ctx, reps, [&] { copy_dst = a.clone(); }, &ts);
  // The implementation's own buffer copy (copyBufferToBuffer), outside compute passes, so it is
  // timed by the wall clock over 10 copies in one submission.
  const int copies = 10;
  std::vector<double> raw;
  for (int r = 0; r < std::max(3, reps / 2); ++r) {
    ctx->sync();
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < copies; ++k) kernels::copy_buffer(a, copy_dst);
    ctx->sync();
    raw.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / copies);
  }
  double raw_ms = median(raw);
  // Check the result once (host side) on a sample.
  std::vector<float> av = a.slice(0, 0, 4096).to_vector<float>(), bv = b.slice(0, 0, 4096).to_vector<float>(),
                     cv = c.slice(0, 0, 4096).to_vector<float>();
  for (size_t i = 0; i < cv.size(); ++i)
    if (cv[i] != av[i] + bv[i]) throw Error(ErrorKind::Value, "bench elementwise: wrong sum at " + std::to_string(i));
  double add_gbs = 3.0 * 4.0 * double(n) / (add_ms * 1e6);
  double copy_gbs = 2.0 * 4.0 * double(n) / (copy_ms * 1e6);
  std::printf("bench elementwise on %s (%s, %s), %s timing, %s\n", ctx->info().name.c_str(),
              ctx->info().backend.c_str(), ctx->info().implementation.c_str(), ts ? "GPU timestamp" : "wall-clock",
              today().c_str());
  std::printf("  add  f32 x %lld: %8.3f ms  %8.1f GB/s (3 x 4 B per element)\n", (long long)n, add_ms, add_gbs);
  std::printf("  copy f32 x %lld: %8.3f ms  %8.1f GB/s (2 x 4 B per element)\n", (long long)n, copy_ms, copy_gbs);
  double raw_gbs = 2.0 * 4.0 * double(n) / (raw_ms * 1e6);
  std::printf("  copyBufferToBuffer: %8.3f ms  %8.1f GB/s (wall clock, 10 copies per submission)\n", raw_ms, raw_gbs);
  std::printf("  add / copy-kernel bandwidth: %.1f%%   add / copyBufferToBuffer bandwidth: %.1f%%\n",
              100.0 * add_gbs / copy_gbs, 100.0 * add_gbs / raw_gbs);
  json j = bench_record(ctx, "elementwise");
  j.update({{"elements", n},
            {"timing", ts ? "timestamp" : "wall"},
            {"add_ms", add_ms},
            {"add_gbs", add_gbs},
            {"copy_ms", copy_ms},
            {"copy_gbs", copy_gbs},
            {"ratio", add_gbs / copy_gbs},
            {"buffer_copy_ms", raw_ms},
            {"buffer_copy_gbs", raw_gbs}});
  write_json(json_path, j);
  return 0;
}

int bench_dispatch(const gpu::ContextPtr& ctx, int ops, int reps, const std::string& json_path) {
  Tensor x = Tensor::uniform(ctx, {1024}, 3);
  Tensor one = Tensor::full(ctx, {1024}, 1e-3);
  auto chain = [&] {
    Tensor y = x;
    for (int i = 0; i < ops; ++i) y = add(y, one);  // each op: encode + bind group + dispatch
    return y;
  };
  chain();
  ctx->sync();
  std::vector<double> wall, record;
  Tensor last;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    last = chain();
    auto t1 = std::chrono::steady_clock::now();
    ctx->sync();
    wall.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    record.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  float got = last.to_vector<float>()[0], start = x.to_vector<float>()[0];
  if (std::abs(got - (start + float(ops) * 1e-3f)) > 1e-3f * float(ops) * 1e-2f + 1e-4f)
    throw Error(ErrorKind::Value, "bench dispatch: wrong chain result");
  double us = median(wall) / ops, record_us = median(record) / ops;
  std::printf("bench dispatch on %s (%s, %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), today().c_str());
  std::printf(
      "  %d chained adds of 1024 f32, recorded and submitted in batches: %.2f us per op (wall, incl. submit + wait)\n",
      ops, us);
  std::printf("  of which recording on the host (validation, bind groups, encoding): %.2f us per op\n", record_us);
  json j = bench_record(ctx, "dispatch");
  j.update({{"ops", ops}, {"us_per_op", us}, {"record_us_per_op", record_us}});
  write_json(json_path, j);
  return 0;
}

// One training step (forward, backward, Adam) of an MLP 784-1024-1024-10 on a batch of 512,
// and the pool's buffer counts over many steps (they must stay flat).
int bench_train(const gpu::ContextPtr& ctx, int steps, int64_t long_steps, const std::string& json_path) {
  const int64_t batch = 512;
  auto model = nn::mlp(ctx, {784, 1024, 1024, 10}, nn::Activation::ReLU, 1);
  optim::Adam adam(model->parameters(), 1e-3);
  Tensor x = Tensor::normal(ctx, {batch, 784}, 2);
  Tensor y = Tensor::arange(ctx, 0, double(batch), 1, DType::i32);
  y = sub(y, mul(div(y, scalar_like(y, 10)), scalar_like(y, 10)));  // labels 0..9
  float last_loss = 0;
  auto step = [&] {
    Var loss = nn::cross_entropy(model->forward(Var(x)), y);
    adam.zero_grad();
    loss.backward();
    adam.step();
    return loss;
  };
  for (int i = 0; i < 5; ++i) step();
  ctx->sync();
  std::vector<double> per_step;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    Var loss;
    for (int i = 0; i < steps; ++i) loss = step();
    last_loss = loss.value().to_vector<float>()[0];  // the sync point
    per_step.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                       steps);
  }
  double ms = median(per_step);
  std::printf("bench train on %s (%s, %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), today().c_str());
  std::printf("  MLP 784-1024-1024-10, batch 512, f32, Adam: %.3f ms per step (median of 5 x %d steps; loss %.4f)\n",
              ms, steps, last_loss);
  // Memory: pool statistics along a long run.
  json pools = json::array();
  auto stats_line = [&](int64_t at) {
    auto s = ctx->pool_stats();
    std::printf("  after %7lld steps: %llu live buffers (%.1f MiB), %llu pooled (%.1f MiB), %llu device allocations\n",
                (long long)at, (unsigned long long)s.live_buffers, double(s.live_bytes) / (1 << 20),
                (unsigned long long)s.pooled_buffers, double(s.pooled_bytes) / (1 << 20),
                (unsigned long long)s.allocations);
    pools.push_back({{"step", at},
                     {"live_buffers", s.live_buffers},
                     {"live_bytes", s.live_bytes},
                     {"pooled_buffers", s.pooled_buffers},
                     {"allocations", s.allocations}});
  };
  int64_t done = 5 + 5 * int64_t(steps);
  for (int64_t target : {int64_t(100), int64_t(1000), long_steps}) {
    if (target > long_steps || target <= done) continue;
    for (; done < target; ++done) {
      step();
      if (done % 64 == 0) ctx->sync();  // keep the queue short, as a training loop reading its loss would
    }
    ctx->sync();
    stats_line(done);
  }
  json j = bench_record(ctx, "train");
  j.update({{"model", "784-1024-1024-10"}, {"batch", 512}, {"ms_per_step", ms}, {"pool", pools}});
  write_json(json_path, j);
  return 0;
}

struct BenchArgs {
  int64_t elements = 64ll << 20;
  int ops = 1000, reps = 10, steps = 20;
  int64_t long_steps = 10000;
  std::string json_path;
};

}  // namespace

void add_bench_commands(CLI::App& app, CommandFn& chosen) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks: elementwise, dispatch, train, matmul, knn, coop");
  bench->require_subcommand(1);
  auto a = std::make_shared<BenchArgs>();
  auto json_option = [&](CLI::App* sub) {
    sub->add_option("--json", a->json_path, "also write the results to this JSON file (- for standard output)");
  };
  auto reps_option = [&](CLI::App* sub) {
    sub->add_option("--reps", a->reps, "timed repetitions (median)")
        ->check(integer_in(1, 10000))
        ->capture_default_str();
  };
  CLI::App* e = bench->add_subcommand("elementwise", "64M-element add vs a device copy (GB/s)");
  e->add_option("--elements", a->elements, "f32 elements")
      ->check(integer_in<int64_t>(1, int64_t(1) << 32))
      ->capture_default_str();
  reps_option(e), json_option(e);
  e->callback([a, &chosen] {
    chosen = [a](const gpu::ContextPtr& ctx) { return bench_elementwise(ctx, a->elements, a->reps, a->json_path); };
  });
  CLI::App* d = bench->add_subcommand("dispatch", "microseconds per op for 1,000 small ops submitted as one batch");
  d->add_option("--ops", a->ops, "chained ops")->check(integer_in(1, 10000000))->capture_default_str();
  reps_option(d), json_option(d);
  d->callback([a, &chosen] {
    chosen = [a](const gpu::ContextPtr& ctx) { return bench_dispatch(ctx, a->ops, a->reps, a->json_path); };
  });
  CLI::App* t = bench->add_subcommand("train", "one training step of an MLP 784-1024-1024-10, batch 512");
  t->add_option("--steps", a->steps, "steps per timed run")->check(integer_in(1, 1000000))->capture_default_str();
  t->add_option("--long-steps", a->long_steps, "steps of the memory run (pool statistics along it)")
      ->check(integer_in<int64_t>(1, int64_t(1) << 40))
      ->capture_default_str();
  json_option(t);
  t->callback([a, &chosen] {
    chosen = [a](const gpu::ContextPtr& ctx) { return bench_train(ctx, a->steps, a->long_steps, a->json_path); };
  });
  add_bench_matmul_command(*bench, chosen);
  add_bench_coop_command(*bench, chosen);
  add_tile_mlp_bench(*bench, chosen);
  add_tile_fftconv_bench(*bench, chosen);
  add_tile_spd_bench(*bench, chosen);
  add_bench_knn_command(*bench, chosen);
  add_bench_lazy_command(*bench, chosen);
}

}  // namespace surfgrad::cli
