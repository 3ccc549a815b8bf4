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
  c->add_option("--tile-rows", o.tile_rows, "pixels per workgroup (fused)")
      ->check(integer_in(1, 256))
      ->capture_default_str();
  c->add_option("--threads", o.threads, "workgroup size (fused)")->check(integer_in(1, 1024))->capture_default_str();
  c->add_option("--steps", o.steps, "Adam steps")->check(integer_in(2, 1000000))->capture_default_str();
  c->add_option("--lr", o.lr, "Adam learning rate")->check(number_in(0, 10, true))->capture_default_str();
  c->add_option("--seed", o.seed, "seed")->check(integer_in<uint64_t>(0, UINT64_MAX))->capture_default_str();
  c->add_option("--weights", o.weights,
                "the fused kernels' weights: f16 (a copy of the f32 parameters each step), f32, or auto (f16 "
                "where the adapter has shader-f16)")
      ->check(CLI::IsMember({"auto", "f16", "f32"}))
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
  std::printf("tile-mlp: MLP %s (ReLU, sigmoid out) learns a %dx%d image, every pixel each step, Adam, on %s\n",
              shape_of(o).c_str(), o.side, o.side, ctx->info().name.c_str());
  auto r = demos::train_tile_mlp(ctx, o, show);
  write_fitted(png, o.side, r.fitted);
  std::printf(
      "fused tile kernels (%s weights, %d pixels per workgroup, %llu bytes of workgroup memory backward): loss "
      "%.5f → %.5f, PSNR %.1f dB, %.3f ms per step, %llu dispatches per step; fitted image written to %s\n",
      r.weights.c_str(), o.tile_rows, (unsigned long long)r.workgroup_bytes, r.first_loss, r.final_loss, r.psnr,
      r.ms_per_step, (unsigned long long)r.dispatches_per_step, png.c_str());
  return r.final_loss < r.first_loss ? 0 : 1;
}

int run_bench(const gpu::ContextPtr& ctx, demos::TileMlpOptions o, const std::string& json_path) {
  std::printf("bench tile-mlp on %s (%s, %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), today().c_str());
  std::printf("  MLP %s, %d pixels per step, Adam, %d steps each\n", shape_of(o).c_str(), o.side * o.side, o.steps);
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  // The fused step with the weights asked for (auto: f16 where the adapter has it), and with f32
  // weights too when that was f16 (the like-for-like comparison with the unfused f32 step).
  std::vector<std::string> fused_weights{o.weights};
  if (o.weights != "f32" && ctx->features().shader_f16) fused_weights = {"f16", "f32"};
  double fused_ms = 0, unfused_ms = 0;
  for (size_t form = 0; form <= fused_weights.size(); ++form) {
    bool fused = form < fused_weights.size();
    o.fused = fused;
    if (fused) o.weights = fused_weights[form];
    auto r = demos::train_tile_mlp(ctx, o, {});
    if (!fused) unfused_ms = r.ms_per_step;
    if (fused && (fused_ms == 0 || r.ms_per_step < fused_ms)) fused_ms = r.ms_per_step;
    std::string name = fused ? "fused (tile, " + r.weights + ")" : "unfused (ops, f32)";
    std::printf("  %-22s %9.3f ms/step  %4llu dispatches/step  loss %.5f → %.5f  PSNR %.1f dB\n", name.c_str(),
                r.ms_per_step, (unsigned long long)r.dispatches_per_step, r.first_loss, r.final_loss, r.psnr);
    runs.push_back({{"form", fused ? "fused" : "unfused"},
                    {"weights", r.weights},
                    {"ms_per_step", r.ms_per_step},
                    {"dispatches_per_step", r.dispatches_per_step},
                    {"first_loss", r.first_loss},
                    {"final_loss", r.final_loss},
                    {"psnr_db", r.psnr},
                    {"workgroup_bytes", r.workgroup_bytes}});
  }
  std::printf("  the faster fused step is %.2fx the unfused step's speed\n", unfused_ms / fused_ms);
  if (!json_path.empty()) {
    nlohmann::ordered_json j = {{"bench", "tile-mlp"},
                                {"adapter", ctx->info().name},
                                {"backend", ctx->info().backend},
                                {"implementation", ctx->info().implementation},
                                {"date", today()},
                                {"side", o.side},
                                {"hidden", o.hidden},
                                {"layers", o.layers},
                                {"tile_rows", o.tile_rows},
                                {"steps", o.steps},
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
  c->add_option("--out", *png, "the fitted image (PNG)")->capture_default_str();
  c->callback([o, png, &chosen] { chosen = [o, png](const gpu::ContextPtr& ctx) { return run_demo(ctx, *o, *png); }; });
}

void add_tile_mlp_bench(CLI::App& bench, CommandFn& chosen) {
  auto o = std::make_shared<demos::TileMlpOptions>();
  o->steps = 200;
  auto json_path = std::make_shared<std::string>();
  CLI::App* c = bench.add_subcommand("tile-mlp", "the tile-mlp training step: fused tile kernels vs ordinary ops");
  add_network_options(c, *o);
  c->add_option("--json", *json_path, "write the results as JSON");
  c->callback([o, json_path, &chosen] {
    chosen = [o, json_path](const gpu::ContextPtr& ctx) { return run_bench(ctx, *o, *json_path); };
  });
}

}  // namespace surfgrad::cli
