// `surfgrad demo tile-mlp` (an MLP learns an image, fused into tile kernels; PNG out) and
// `surfgrad bench tile-mlp` (its training step fused and on ordinary ops, in one call).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "cli_options.hpp"
#include "output_files.hpp"
#include "surfgrad/demos.hpp"
#include "surfgrad/io.hpp"

namespace surfgrad::cli {

namespace {

void add_network_options(CLI::App* c, demos::TileMlpOptions& o) {
  c->add_option("--side", o.side, "image side in pixels (side² pixels per step)")
      ->check(integer_in(2, 4096))
      ->capture_default_str();
  c->add_option("--hidden", o.hidden, "hidden width")->check(integer_in(3, 256))->capture_default_str();
  c->add_option("--layers", o.layers, "hidden layers")->check(integer_in(1, 16))->capture_default_str();
  c->add_option("--tile-rows", o.tile_rows, "pixels per workgroup (fused; 0: chosen for the adapter)")
      ->check(integer_in(0, 256))
      ->capture_default_str();
  c->add_option("--threads", o.threads, "workgroup size (fused; 0: chosen for the adapter)")
      ->check(integer_in(0, 1024))
      ->capture_default_str();
  c->add_option("--steps", o.steps, "Adam steps")->check(integer_in(2, 1000000))->capture_default_str();
  c->add_option("--lr", o.lr, "Adam learning rate")->check(number_in(0, 10, true))->capture_default_str();
  c->add_option("--seed", o.seed, "seed")->check(integer_in<uint64_t>(0, UINT64_MAX))->capture_default_str();
  c->add_option("--weights", o.weights,
                "the fused kernels' weights: f16 (a copy of the f32 parameters each step), f32, or auto (f16 "
                "where the adapter has shader-f16)")
      ->check(CLI::IsMember({"auto", "f16", "f32"}))
      ->capture_default_str();
  c->add_option("--one-kernel", o.one_kernel,
                "the fused step's loss and gradient from one kernel (false: the tile kernel as an autograd op, "
                "a forward and a backward kernel)")
      ->capture_default_str();
  c->add_option("--stage-weights", o.stage_weights,
                "stage each weight matrix in workgroup memory where it fits (false: read them in global memory)")
      ->capture_default_str();
}

void show(const std::string& line, bool final_line) {
  if (final_line) std::printf("%s\n", line.c_str());
}

std::string shape_of(const demos::TileMlpOptions& o) {
  std::string s = "2";
  for (int l = 0; l < o.layers; ++l) s += "-" + std::to_string(o.hidden);
  return s + "-3";
}

// The demo's fitted image (row 0 at the bottom) as a PNG (row 0 at the top).
void write_fitted(const std::string& path, int side, const std::vector<float>& rgb) {
  Image img(side, side);
  auto byte = [](float v) { return uint8_t(std::lround(std::clamp(v, 0.0f, 1.0f) * 255)); };
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x) {
      size_t i = (size_t(y) * size_t(side) + size_t(x)) * 3;
      img.set(x, side - 1 - y, byte(rgb[i]), byte(rgb[i + 1]), byte(rgb[i + 2]));
    }
  write_png(path, img);
}

int run_demo(const gpu::ContextPtr& ctx, demos::TileMlpOptions o, const std::string& png) {
  StagedOutputs out(png, {""}, {}, "--out");  // a bad output name is refused before the work
  std::printf("tile-mlp: MLP %s (ReLU, sigmoid out) learns a %dx%d image, every pixel each step, Adam, on %s\n",
              shape_of(o).c_str(), o.side, o.side, ctx->info().name.c_str());
  auto r = demos::train_tile_mlp(ctx, o, show);
  out.write([&] { write_fitted(out.path(""), o.side, r.fitted); });
  out.commit();
  std::printf(
      "fused tile kernels (%s weights, %d pixels and %d threads per workgroup, %llu bytes of workgroup memory "
      "backward): loss %.5f → %.5f, PSNR %.1f dB, %.3f ms per step, %llu dispatches per step; fitted image written "
      "to %s\n",
      r.weights.c_str(), r.tile_rows, r.threads, (unsigned long long)r.workgroup_bytes, r.first_loss, r.final_loss,
      r.psnr, r.ms_per_step, (unsigned long long)r.dispatches_per_step, png.c_str());
  if (r.final_loss < r.first_loss) return 0;
  // A run that did not learn fails (exit 1), and says so: the output above looks normal.
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", o.lr);
  std::string hint = o.lr > demos::TileMlpOptions{}.lr ? std::string("--lr ") + lr +
                                                             " is likely too large for Adam here: try the default, "
                                                             "0.005, or less"
                                                       : "try more --steps or another --seed";
  std::fflush(stdout);  // after the lines above, where both go to one place
  std::fprintf(stderr, "surfgrad: demo tile-mlp: the loss did not fall (%.5g → %.5g over %d steps); %s\n",
               double(r.first_loss), double(r.final_loss), o.steps, hint.c_str());
  return 1;
}

int run_bench(const gpu::ContextPtr& ctx, demos::TileMlpOptions o, int rounds, const std::string& json_path) {
  std::printf("bench tile-mlp on %s (%s, %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), today().c_str());
  std::printf("  MLP %s, %d pixels per step, Adam, %d steps each, %d round%s (medians)\n", shape_of(o).c_str(),
              o.side * o.side, o.steps, rounds, rounds == 1 ? "" : "s");
  // The forms, each run once a round (rounds interleave them, so drifts of the machine fall on
  // all alike): the fused step as asked (one kernel; weights auto: f16 where the adapter has
  // it), with f32 weights too when those were f16, the tile kernel as an autograd op (two
  // kernels), and the same network on ordinary ops.
  struct Form {
    bool fused, one_kernel;
    std::string weights;
    std::vector<double> ms;
    demos::TileMlpResult last;
  };
  std::vector<Form> forms;
  bool f16 = o.weights == "f16" || (o.weights == "auto" && ctx->features().shader_f16);
  forms.push_back({true, o.one_kernel, f16 ? "f16" : "f32", {}, {}});
  if (f16) forms.push_back({true, o.one_kernel, "f32", {}, {}});
  if (o.one_kernel) forms.push_back({true, false, "f32", {}, {}});
  forms.push_back({false, false, "f32", {}, {}});
  for (int round = 0; round < rounds; ++round)
    for (Form& f : forms) {
      o.fused = f.fused;
      o.one_kernel = f.one_kernel;
      o.weights = f.weights;
      f.last = demos::train_tile_mlp(ctx, o, {});
      f.ms.push_back(f.last.ms_per_step);
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  double unfused_ms = median(forms.back().ms);
  for (const Form& f : forms) {
    const auto& r = f.last;
    double ms = median(f.ms);
    std::string name = !f.fused       ? "unfused (ops, f32)"
                       : f.one_kernel ? "fused, 1 kernel, " + r.weights
                                      : "fused, autograd, " + r.weights;
    std::string shape = f.fused ? std::to_string(r.tile_rows) + "×" + std::to_string(r.threads) : "";
    std::printf("  %-24s %7s %9.3f ms/step  %4llu dispatches/step  loss %.5f → %.5f  PSNR %.1f dB  %5.2fx\n",
                name.c_str(), shape.c_str(), ms, (unsigned long long)r.dispatches_per_step, r.first_loss, r.final_loss,
                r.psnr, unfused_ms / ms);
    nlohmann::ordered_json ms_all = f.ms;
    runs.push_back({{"form", f.fused ? "fused" : "unfused"},
                    {"one_kernel", f.fused && f.one_kernel},
                    {"weights", r.weights},
                    {"tile_rows", r.tile_rows},
                    {"threads", r.threads},
                    {"ms_per_step", ms},
                    {"ms_per_step_rounds", ms_all},
                    {"dispatches_per_step", r.dispatches_per_step},
                    {"first_loss", r.first_loss},
                    {"final_loss", r.final_loss},
                    {"psnr_db", r.psnr},
                    {"workgroup_bytes", r.workgroup_bytes}});
  }
  std::printf("  (the last column: the unfused step's time over the form's)\n");
  if (!json_path.empty()) {
    nlohmann::ordered_json j = {{"bench", "tile-mlp"},
                                {"adapter", ctx->info().name},
                                {"backend", ctx->info().backend},
                                {"implementation", ctx->info().implementation},
                                {"date", today()},
                                {"side", o.side},
                                {"hidden", o.hidden},
                                {"layers", o.layers},
                                {"steps", o.steps},
                                {"rounds", rounds},
                                {"runs", runs}};
    write_file_atomically(json_path, j.dump(2) + "\n", "--json");
  }
  return 0;
}

}  // namespace

void add_tile_mlp_demo(CLI::App& demo, CommandFn& chosen) {
  auto o = std::make_shared<demos::TileMlpOptions>();
  auto png = std::make_shared<std::string>("tile_mlp.png");
  CLI::App* c = demo.add_subcommand("tile-mlp", "an MLP learns an image, forward and backward fused into tile kernels");
  add_network_options(c, *o);
  c->add_option("--out", *png, "the fitted image (PNG; - for standard output)")->capture_default_str();
  c->callback([o, png, &chosen] { chosen = [o, png](const gpu::ContextPtr& ctx) { return run_demo(ctx, *o, *png); }; });
}

void add_tile_mlp_bench(CLI::App& bench, CommandFn& chosen) {
  auto o = std::make_shared<demos::TileMlpOptions>();
  o->steps = 200;
  auto json_path = std::make_shared<std::string>();
  auto rounds = std::make_shared<int>(3);
  CLI::App* c = bench.add_subcommand("tile-mlp", "the tile-mlp training step: fused tile kernels vs ordinary ops");
  add_network_options(c, *o);
  c->add_option("--rounds", *rounds, "rounds, each running every form once (medians reported)")
      ->check(integer_in(1, 100))
      ->capture_default_str();
  c->add_option("--json", *json_path, "write the results to this JSON file (- for standard output)");
  c->callback([o, json_path, rounds, &chosen] {
    chosen = [o, json_path, rounds](const gpu::ContextPtr& ctx) { return run_bench(ctx, *o, *rounds, *json_path); };
  });
}

}  // namespace surfgrad::cli
