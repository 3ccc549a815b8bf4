// The tile examples (issue 15; include/surfgrad/demos.hpp) for JavaScript (web/package/tiles.js):
// each runs the demo's fused tile kernels beside the same computation unfused, on the page's
// WebGPU, and returns what the demo measured as JSON. The demos are the library's own code
// (src/demos/); this file only turns options into theirs and results into JSON.
//
// The defaults are smaller than the CLI's: SwiftShader, the browser's WebGPU on a machine without
// a GPU, runs each in seconds, and they fit browsers' default 16 KiB of workgroup memory.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "json_options.hpp"
#include "surfgrad/demos.hpp"
#include "surfgrad/error.hpp"
#include "web_session.hpp"

using namespace surfgrad;
using surfgrad::web::guarded;
using surfgrad::web::session;

namespace {

using nlohmann::json;

json mlp_form(const demos::TileMlpResult& r) {
  json losses = json::array();
  for (const auto& l : r.losses) losses.push_back({{"step", l.step}, {"loss", l.loss}});
  return {{"firstLoss", r.first_loss},  {"finalLoss", r.final_loss},
          {"losses", losses},           {"psnr", r.psnr},
          {"msPerStep", r.ms_per_step}, {"dispatchesPerStep", r.dispatches_per_step},
          {"weights", r.weights},       {"firstGradient", r.first_gradient},
          {"image", r.fitted}};
}

// The image-fitting MLP, trained fused and then unfused from the same initial parameters.
json tile_mlp(const json& o) {
  const std::string what = "tileMlp option";
  web::refuse_unknown_options(o, {"side", "hidden", "layers", "tileRows", "threads", "steps", "lr", "seed", "weights"},
                              what);
  demos::TileMlpOptions opt;
  opt.side = web::option_number(o, "side", 16, what);
  opt.hidden = web::option_number(o, "hidden", 16, what);
  opt.layers = web::option_number(o, "layers", 2, what);
  opt.tile_rows = web::option_number(o, "tileRows", 8, what);
  opt.threads = web::option_number(o, "threads", 64, what);
  opt.steps = web::option_number(o, "steps", 60, what);
  opt.lr = web::option_number(o, "lr", 1e-2, what);
  opt.seed = web::option_number(o, "seed", uint64_t(1), what);
  opt.weights = web::option_string(o, "weights", "auto", what);
  gpu::ContextPtr ctx = session().context();
  opt.fused = true;
  demos::TileMlpResult fused = demos::train_tile_mlp(ctx, opt);
  opt.fused = false;
  demos::TileMlpResult unfused = demos::train_tile_mlp(ctx, opt);
  // The backward kernel's check: both forms' gradients at the same initial parameters.
  double difference = 0, scale = 0;
  for (size_t i = 0; i < fused.first_gradient.size() && i < unfused.first_gradient.size(); ++i) {
    difference = std::max(difference, double(std::abs(fused.first_gradient[i] - unfused.first_gradient[i])));
    scale = std::max(scale, double(std::abs(unfused.first_gradient[i])));
  }
  return {{"side", opt.side},
          {"gradientDifference", difference},
          {"gradientScale", scale},
          {"workgroupBytes", fused.workgroup_bytes},
          {"fused", mlp_form(fused)},
          {"unfused", mlp_form(unfused)},
          {"wgsl", {{"forward", fused.forward_wgsl}, {"backward", fused.backward_wgsl}}}};
}

json fft_timing(const demos::TileFftConvTiming& t) {
  return {{"forwardMs", t.forward_ms},
          {"trainMs", t.train_ms},
          {"forwardDispatches", t.forward_dispatches},
          {"trainDispatches", t.train_dispatches},
          {"forwardBytes", t.forward_bytes},
          {"trainBytes", t.train_bytes}};
}

// A batch of signals convolved with one filter by FFT: one fused kernel vs four.
json tile_fftconv(const json& o) {
  const std::string what = "tileFftConv option";
  web::refuse_unknown_options(o, {"signals", "length", "taps", "tileRows", "threads", "steps", "seed"}, what);
  demos::TileFftConvOptions opt;
  opt.signals = web::option_number(o, "signals", 64, what);
  opt.length = web::option_number(o, "length", 64, what);
  opt.taps = web::option_number(o, "taps", 16, what);
  opt.tile_rows = web::option_number(o, "tileRows", 0, what);
  opt.threads = web::option_number(o, "threads", 64, what);
  opt.steps = web::option_number(o, "steps", 2, what);
  opt.seed = web::option_number(o, "seed", uint64_t(1), what);
  demos::TileFftConvResult r = demos::run_tile_fftconv(session().context(), opt);
  return {{"maxError", r.max_error},
          {"unfusedMaxError", r.unfused_max_error},
          {"outputScale", r.output_scale},
          {"gradDifference", r.grad_difference},
          {"tileRows", r.tile_rows},
          {"workgroupBytes", r.workgroup_bytes},
          {"fused", fft_timing(r.fused)},
          {"unfused", fft_timing(r.unfused)},
          {"wgsl", {{"forward", r.forward_wgsl}, {"backward", r.backward_wgsl}}}};
}

// Batched SPD solves x = (JᵀMJ + diag R)⁻¹·f: one fused kernel per system vs four launches.
json tile_spd(const json& o) {
  const std::string what = "tileSpd option";
  web::refuse_unknown_options(o, {"systems", "n", "m", "rhs", "threads", "steps", "repeats", "seed"}, what);
  demos::TileSpdOptions opt;
  opt.systems = web::option_number(o, "systems", int64_t(256), what);  // the CLI: 1024
  opt.shape.n = web::option_number(o, "n", 8, what);
  opt.shape.m = web::option_number(o, "m", 8, what);
  opt.shape.rhs = web::option_number(o, "rhs", 1, what);
  opt.shape.threads = web::option_number(o, "threads", 64, what);
  opt.steps = web::option_number(o, "steps", 1, what);
  opt.repeats = web::option_number(o, "repeats", 3, what);
  opt.seed = web::option_number(o, "seed", uint64_t(1), what);
  demos::TileSpdResult r = demos::run_tile_spd(session().context(), opt);
  json runs = json::array();
  for (const auto& run : r.runs)
    runs.push_back({{"form", run.form},
                    {"backward", run.backward},
                    {"ms", run.ms},
                    {"dispatches", run.dispatches},
                    {"kernels", run.kernels},
                    {"bytes", run.bytes}});
  return {{"residual", r.residual},
          {"unfusedDifference", r.unfused_difference},
          {"gradientDifference", r.gradient_difference},
          {"workgroupBytesForward", r.workgroup_bytes_forward},
          {"workgroupBytesBackward", r.workgroup_bytes_backward},
          {"unfusedWorkgroupBytesBackward", r.unfused_workgroup_bytes_backward},
          {"runs", runs},
          {"note", r.note},
          {"wgsl", {{"forward", r.forward_wgsl}, {"backward", r.backward_wgsl}}}};
}

}  // namespace

// Runs the tile example `name` ("mlp", "fftconv" or "spd") with its options (a JSON object, the
// JavaScript names); 0 and its results in sg_result_json(), or -1.
SG_EXPORT(sg_tile_demo) int sg_tile_demo(const char* name, const char* options_json) {
  return guarded([&] {
    std::string which = name;
    json options = web::parse_options_object(options_json, "tile example option");
    json result;
    if (which == "mlp")
      result = tile_mlp(options);
    else if (which == "fftconv")
      result = tile_fftconv(options);
    else if (which == "spd")
      result = tile_spd(options);
    else
      throw Error(ErrorKind::Value, "tile example is 'mlp', 'fftconv' or 'spd', not '" + which + "'");
    session().result_json = result.dump();
  });
}
