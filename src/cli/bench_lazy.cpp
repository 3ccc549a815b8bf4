// `surfgrad bench lazy`: eager vs lazy mode (issue 36) on the same work, in one process: the
// dispatches and milliseconds of a 20-op elementwise chain, gelu forward and backward, and the
// MLP 784-1024-1024-10 Adam step of `bench train`. Dispatches are counted between syncs
// (Context::pending_dispatches), so a step is counted without its loss readback. Milliseconds are
// wall time to a sync (median of --reps); the chain, the copy and gelu forward+backward also get
// their GPU time (gpu_ms: timestamp queries over 20 runs back to back after a warm-up), which is
// what the chain's fraction of a copy's bandwidth is computed from.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_options.hpp"
#include "output_files.hpp"
#include "surfgrad/autograd.hpp"
#include "surfgrad/nn.hpp"
#include "surfgrad/optim.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad::cli {

namespace {

using json = nlohmann::ordered_json;

struct Measure {
  uint64_t dispatches = 0;
  double ms = 0;
};

// `work` once to warm up (kernels compiled), once counted, then `reps` timed runs (median ms,
// wall clock to the end of `finish`, which syncs). `realize` computes what `work` left pending
// (lazy mode): its dispatches count.
Measure measure(const gpu::ContextPtr& ctx, int reps, const std::function<void()>& work,
                const std::function<void()>& realize, const std::function<void()>& finish) {
  work();
  realize();
  finish();
  ctx->sync();
  Measure m;
  uint64_t before = ctx->pending_dispatches();
  work();
  realize();
  m.dispatches = ctx->pending_dispatches() - before;
  finish();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    work();
    realize();
    finish();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  m.ms = ms[ms.size() / 2];
  return m;
}

// GPU time per run of `work` + `realize` (timestamp queries; wall time where the adapter has
// none): the GPU is first kept busy for ~100 ms (an idle GPU runs at a fraction of its clock:
// the H200 at 345 MHz), then `reps` runs are recorded back to back and timed as one span, so the
// host's recording and the wait for the device are not in the figure.
double gpu_ms(const gpu::ContextPtr& ctx, int reps, const std::function<void()>& work,
              const std::function<void()>& realize) {
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < 100) {
    work();
    realize();
    ctx->sync();
  }
  return ctx->timed_ms([&] {
    for (int r = 0; r < reps; ++r) {
      work();
      realize();
    }
  }) / reps;
}

struct LazyBenchArgs {
  int64_t elements = 1 << 20;
  int steps = 5, reps = 5;
  std::string json_path;
  std::string only = "all";   // all, chain20, gelu, train
  std::string mode = "both";  // both, eager, lazy
};

int bench_lazy(const gpu::ContextPtr& ctx, const LazyBenchArgs& a) {
  bool was_lazy = lazy_mode();
  std::printf("bench lazy on %s (%s, %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), today().c_str());
  json rows = json::array();
  auto row = [&](const std::string& bench, const Measure& eager, const Measure& lazy, json extra) {
    if (a.mode == "both")
      std::printf("  %-34s eager %9.3f ms %5llu dispatches   lazy %9.3f ms %5llu dispatches\n", bench.c_str(), eager.ms,
                  (unsigned long long)eager.dispatches, lazy.ms, (unsigned long long)lazy.dispatches);
    else
      std::printf("  %-34s %s %9.3f ms %5llu dispatches\n", bench.c_str(), a.mode.c_str(),
                  a.mode == "eager" ? eager.ms : lazy.ms,
                  (unsigned long long)(a.mode == "eager" ? eager.dispatches : lazy.dispatches));
    json j = {{"bench", bench},
              {"adapter", ctx->info().name},
              {"backend", ctx->info().backend},
              {"date", today()},
              {"ms", lazy.ms},
              {"dispatches", lazy.dispatches},
              {"eager_ms", eager.ms},
              {"eager_dispatches", eager.dispatches}};
    // One mode only (--mode): the other's fields are absent.
    if (a.mode == "eager") {
      j["ms"] = j["eager_ms"], j["dispatches"] = j["eager_dispatches"];
      j["mode"] = "eager";
    }
    if (a.mode != "both") j.erase("eager_ms"), j.erase("eager_dispatches");
    if (a.mode == "lazy") j["mode"] = "lazy";
    j.update(extra);
    rows.push_back(j);
  };
  // --mode eager or lazy runs that mode only (the other's Measure stays 0), so that
  // SURFGRAD_PROFILE's per-kernel table is one mode's kernels.
  auto both = [&](const std::function<Measure()>& run) {
    Measure e, l;
    if (a.mode != "lazy") {
      set_lazy(false);
      e = run();
    }
    if (a.mode != "eager") {
      set_lazy(true);
      l = run();
    }
    set_lazy(was_lazy);
    return std::pair{e, l};
  };
  const bool any_mode = a.mode == "both";

  Tensor r;
  if (a.only == "all" || a.only == "chain20") {
    // A 20-op chain (10 x (mul, add) with scalars) over `elements` f32, against a device copy.
    Tensor x = Tensor::uniform(ctx, {a.elements}, 1);
    auto [ce, cl] = both([&] {
      return measure(
          ctx, a.reps,
          [&] {
            r = x;
            for (int i = 0; i < 10; ++i) r = r * 0.999 + 0.001;
          },
          [&] { r.realize(); }, [&] { ctx->sync(); });
    });
    Measure copy = measure(ctx, a.reps, [&] { r = x.clone(); }, [] {}, [&] { ctx->sync(); });
    // The kernels' own time, the fused chain beside the copy (same kernel template, same bytes).
    auto chain = [&] {
      r = x;
      for (int i = 0; i < 10; ++i) r = r * 0.999 + 0.001;
    };
    // The fused chain's GPU time (lazy; eager's own with --mode eager).
    set_lazy(a.mode != "eager");
    double chain_gpu = gpu_ms(ctx, 20, chain, [&] { r.realize(); });
    set_lazy(was_lazy);
    double copy_gpu = gpu_ms(ctx, 20, [&] { r = x.clone(); }, [] {});
    double bytes = 8.0 * double(a.elements);  // one read, one write per element
    std::printf("  chain20 on the GPU: %s %.3f ms (%.0f GB/s), copy %.3f ms (%.0f GB/s): %.0f%% of the copy\n",
                a.mode == "eager" ? "eager" : "lazy", chain_gpu, bytes / (chain_gpu * 1e6), copy_gpu,
                bytes / (copy_gpu * 1e6), 100 * copy_gpu / chain_gpu);
    row("chain20", ce, cl,
        {{"elements", a.elements},
         {"copy_ms", copy.ms},
         {"gbs", bytes / ((a.mode == "eager" ? ce.ms : cl.ms) * 1e6)},
         {"copy_gbs", bytes / (copy.ms * 1e6)},
         {"gpu_ms", chain_gpu},
         {"copy_gpu_ms", copy_gpu},
         {"gpu_gbs", bytes / (chain_gpu * 1e6)},
         {"copy_gpu_gbs", bytes / (copy_gpu * 1e6)},
         {"fraction_of_copy", copy_gpu / chain_gpu}});
  }

  if (a.only == "all" || a.only == "gelu") {
    // gelu forward, and forward + backward through autograd.
    Tensor gx = Tensor::uniform(ctx, {a.elements}, 2, -3, 3);
    Tensor seed = Tensor::uniform(ctx, {a.elements}, 3);
    auto [ge, gl] =
        both([&] { return measure(ctx, a.reps, [&] { r = gx.gelu(); }, [&] { r.realize(); }, [&] { ctx->sync(); }); });
    row("gelu_forward", ge, gl, {{"elements", a.elements}});
    auto [be, bl] = both([&] {
      return measure(
          ctx, a.reps,
          [&] {
            Var v = Var::param(gx);
            v.gelu().backward(seed);
            r = v.grad();
          },
          [&] { r.realize(); }, [&] { ctx->sync(); });
    });
    set_lazy(a.mode != "eager");
    double gelu_gpu = gpu_ms(
        ctx, 10,
        [&] {
          Var v = Var::param(gx);
          v.gelu().backward(seed);
          r = v.grad();
        },
        [&] { r.realize(); });
    set_lazy(was_lazy);
    row("gelu_forward_backward", be, bl, {{"elements", a.elements}, {"gpu_ms", gelu_gpu}});
  }

  if (a.only == "all" || a.only == "train") {
    // The MLP Adam step of `bench train`: `steps` steps, then the loss read (ms per step).
    const int64_t batch = 512;
    auto [te, tl] = both([&] {
      auto model = nn::mlp(ctx, {784, 1024, 1024, 10}, nn::Activation::ReLU, 1);
      optim::Adam adam(model->parameters(), 1e-3);
      Tensor xb = Tensor::normal(ctx, {batch, 784}, 2);
      Tensor yb = Tensor::arange(ctx, 0, double(batch), 1, DType::i32);
      yb = sub(yb, mul(div(yb, scalar_like(yb, 10)), scalar_like(yb, 10)));  // labels 0..9
      Var loss;
      auto step = [&] {
        loss = nn::cross_entropy(model->forward(Var(xb)), yb);
        adam.zero_grad();
        loss.backward();
        adam.step();
      };
      for (int i = 0; i < 3; ++i) step();
      Measure one = measure(ctx, 1, step, [&] { loss.value().realize(); }, [&] { ctx->sync(); });
      Measure m = measure(
          ctx, a.reps,
          [&] {
            for (int i = 0; i < a.steps; ++i) step();
          },
          [] {}, [&] { (void)loss.value().to_vector<float>(); });
      m.ms /= a.steps;
      m.dispatches = one.dispatches;
      return m;
    });
    // Steps run per mode: 3 warm-up, 3 in the counted measure (warm-up, counted, 1 timed), then
    // (2 + reps) x steps: SURFGRAD_PROFILE's counts over this are per step (plus the model's and
    // the batch's initialisation, a few fills and random draws).
    const int steps_run = 6 + (2 + a.reps) * a.steps;
    if (!any_mode) std::printf("  train: %s mode only, %d steps run\n", a.mode.c_str(), steps_run);
    row("train", te, tl,
        {{"model", "784-1024-1024-10"}, {"batch", batch}, {"steps", a.steps}, {"steps_run", steps_run}});
  }
  if (!a.json_path.empty()) write_file_atomically(a.json_path, rows.dump(2) + "\n", "--json");
  return 0;
}

}  // namespace

void add_bench_lazy_command(CLI::App& bench, CommandFn& chosen) {
  auto a = std::make_shared<LazyBenchArgs>();
  CLI::App* c = bench.add_subcommand(
      "lazy", "eager vs lazy mode: ms and dispatches of a 20-op chain, gelu forward/backward, the MLP Adam step");
  c->add_option("--elements", a->elements, "f32 elements of the chain and gelu")
      ->check(integer_in<int64_t>(1, int64_t(1) << 30))
      ->capture_default_str();
  c->add_option("--steps", a->steps, "MLP steps per timed run")->check(integer_in(1, 100000))->capture_default_str();
  c->add_option("--reps", a->reps, "timed repetitions (median)")->check(integer_in(1, 1000))->capture_default_str();
  c->add_option("--only", a->only, "run one benchmark: chain20, gelu (forward, forward+backward) or train")
      ->check(CLI::IsMember({"all", "chain20", "gelu", "train"}))
      ->capture_default_str();
  c->add_option("--mode", a->mode,
                "eager or lazy: that mode only (with SURFGRAD_PROFILE=1, a per-kernel table of one mode)")
      ->check(CLI::IsMember({"both", "eager", "lazy"}))
      ->capture_default_str();
  c->add_option("--json", a->json_path, "also write the rows to this JSON file (- for standard output)");
  c->callback([a, &chosen] { chosen = [a](const gpu::ContextPtr& ctx) { return bench_lazy(ctx, *a); }; });
}

}  // namespace surfgrad::cli
