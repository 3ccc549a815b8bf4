// `surfgrad demo tile-fftconv` (a batch of signals convolved with a filter by FFT in one tile
// kernel, checked against float64) and `surfgrad bench tile-fftconv` (fused vs one tile kernel per
// step, forward and forward + backward, in one call).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "cli_options.hpp"
#include "output_files.hpp"
#include "surfgrad/demos.hpp"

namespace surfgrad::cli {

namespace {

void add_options(CLI::App* c, demos::TileFftConvOptions& o) {
  c->add_option("--signals", o.signals, "signals (even: transformed in pairs)")
      ->check(integer_in(2, 1 << 24))
      ->capture_default_str();
  c->add_option("--length", o.length, "samples per signal (a power of two)")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  c->add_option("--taps", o.taps, "filter taps (≤ length; zero-padded, circular convolution)")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  c->add_option("--tile-rows", o.tile_rows, "signal pairs per workgroup (0: the most that fit)")
      ->check(integer_in(0, 256))
      ->capture_default_str();
  c->add_option("--threads", o.threads, "workgroup size")->check(integer_in(1, 1024))->capture_default_str();
  c->add_option("--steps", o.steps, "steps per timed group (five groups, median)")
      ->check(integer_in(1, 100000))
      ->capture_default_str();
  c->add_option("--seed", o.seed, "seed")->check(integer_in<uint64_t>(0, UINT64_MAX))->capture_default_str();
}

// The relative error that counts as a pass: f32 FFTs of this length.
bool accurate(const demos::TileFftConvResult& r) { return r.max_error <= 1e-4 * std::max(1.0, r.output_scale); }

void print_form(const char* name, const demos::TileFftConvTiming& t) {
  std::printf(
      "  %-28s forward %9.3f ms %3llu dispatches %8.2f MB | forward+backward %9.3f ms %3llu dispatches %8.2f MB\n",
      name, t.forward_ms, (unsigned long long)t.forward_dispatches, double(t.forward_bytes) / 1e6, t.train_ms,
      (unsigned long long)t.train_dispatches, double(t.train_bytes) / 1e6);
}

int run_demo(const gpu::ContextPtr& ctx, demos::TileFftConvOptions o) {
  std::printf("tile-fftconv: %d signals of %d samples, circular convolution with a %d-tap filter, on %s\n", o.signals,
              o.length, o.taps, ctx->info().name.c_str());
  auto r = demos::run_tile_fftconv(ctx, o);
  std::printf("fused tile kernel (%d signal pairs per workgroup, %llu bytes of workgroup memory backward):\n",
              r.tile_rows, (unsigned long long)r.workgroup_bytes);
  std::printf(
      "  max |error| vs a direct float64 convolution on 5 signals: %.3g (fused), %.3g (unfused); outputs up "
      "to %.3g\n",
      r.max_error, r.unfused_max_error, r.output_scale);
  std::printf("  gradients (signals and filter), fused vs unfused: max |difference| %.3g\n", r.grad_difference);
  print_form("fused (1 tile kernel)", r.fused);
  print_form("unfused (4 tile kernels)", r.unfused);
  return accurate(r) ? 0 : 1;
}

int run_bench(const gpu::ContextPtr& ctx, demos::TileFftConvOptions o, const std::string& json_path) {
  std::printf("bench tile-fftconv on %s (%s, %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), today().c_str());
  std::printf("  %d signals × %d samples, %d-tap filter, circular, f32; median of 5 groups of %d steps\n", o.signals,
              o.length, o.taps, o.steps);
  auto r = demos::run_tile_fftconv(ctx, o);
  std::printf(
      "  %d signal pairs per workgroup, %d threads, %llu bytes of workgroup memory (fused backward); max "
      "|error| %.3g (scale %.3g)\n",
      r.tile_rows, o.threads, (unsigned long long)r.workgroup_bytes, r.max_error, r.output_scale);
  print_form("fused (1 tile kernel)", r.fused);
  print_form("unfused (4 tile kernels)", r.unfused);
  std::printf("  fused is %.2fx the unfused forward's speed, %.2fx forward+backward's\n",
              r.unfused.forward_ms / r.fused.forward_ms, r.unfused.train_ms / r.fused.train_ms);
  if (!json_path.empty()) {
    auto form = [](const demos::TileFftConvTiming& t) {
      return nlohmann::ordered_json{{"forward_ms", t.forward_ms},
                                    {"train_ms", t.train_ms},
                                    {"forward_dispatches", t.forward_dispatches},
                                    {"train_dispatches", t.train_dispatches},
                                    {"forward_bytes", t.forward_bytes},
                                    {"train_bytes", t.train_bytes}};
    };
    nlohmann::ordered_json j = {{"bench", "tile-fftconv"},
                                {"adapter", ctx->info().name},
                                {"backend", ctx->info().backend},
                                {"implementation", ctx->info().implementation},
                                {"date", today()},
                                {"signals", o.signals},
                                {"length", o.length},
                                {"taps", o.taps},
                                {"tile_rows", r.tile_rows},
                                {"threads", o.threads},
                                {"steps", o.steps},
                                {"workgroup_bytes", r.workgroup_bytes},
                                {"max_error", r.max_error},
                                {"unfused_max_error", r.unfused_max_error},
                                {"grad_difference", r.grad_difference},
                                {"fused", form(r.fused)},
                                {"unfused", form(r.unfused)}};
    write_file_atomically(json_path, j.dump(2) + "\n", "--json");
  }
  return accurate(r) ? 0 : 1;
}

}  // namespace

void add_tile_fftconv_demo(CLI::App& demo, CommandFn& chosen) {
  auto o = std::make_shared<demos::TileFftConvOptions>();
  o->steps = 5;
  CLI::App* c = demo.add_subcommand("tile-fftconv", "FFT convolution of a batch of signals in one tile kernel");
  add_options(c, *o);
  c->callback([o, &chosen] { chosen = [o](const gpu::ContextPtr& ctx) { return run_demo(ctx, *o); }; });
}

void add_tile_fftconv_bench(CLI::App& bench, CommandFn& chosen) {
  auto o = std::make_shared<demos::TileFftConvOptions>();
  auto json_path = std::make_shared<std::string>();
  CLI::App* c = bench.add_subcommand("tile-fftconv", "FFT convolution: one fused tile kernel vs one per step");
  add_options(c, *o);
  c->add_option("--json", *json_path, "write the results to this JSON file (- for standard output)");
  c->callback([o, json_path, &chosen] {
    chosen = [o, json_path](const gpu::ContextPtr& ctx) { return run_bench(ctx, *o, *json_path); };
  });
}

}  // namespace surfgrad::cli
