// `surfgrad demo tile-spd` (batched SPD solves in one tile kernel, checked, timed) and
// `surfgrad bench tile-spd` (the fused kernel against the same maths as four launches, forward
// and forward + backward, in one call).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "cli_options.hpp"
#include "output_files.hpp"
#include "surfgrad/demos.hpp"

namespace surfgrad::cli {

namespace {

void add_options(CLI::App* c, demos::TileSpdOptions& o) {
  c->add_option("--systems", o.systems, "systems solved at once (one workgroup each)")
      ->check(integer_in<int64_t>(1, 65535))
      ->capture_default_str();
  c->add_option("--n", o.shape.n, "unknowns per system (H is n×n)")->check(integer_in(1, 64))->capture_default_str();
  c->add_option("--m", o.shape.m, "rows of J (M is m×m)")->check(integer_in(1, 128))->capture_default_str();
  c->add_option("--rhs", o.shape.rhs, "right-hand sides per system")->check(integer_in(1, 64))->capture_default_str();
  c->add_option("--threads", o.shape.threads, "workgroup size")->check(integer_in(1, 1024))->capture_default_str();
  c->add_option("--steps", o.steps, "solves per timed group")->check(integer_in(1, 100000))->capture_default_str();
  c->add_option("--repeats", o.repeats, "timed groups (median reported)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  c->add_option("--seed", o.seed, "seed")->check(integer_in<uint64_t>(0, UINT64_MAX))->capture_default_str();
}

std::string describe(const demos::TileSpdOptions& o) {
  char s[200];
  std::snprintf(s, sizeof s, "%lld systems x = (JᵀMJ + diag R)⁻¹ f, J %dx%d, M %dx%d, f %dx%d, f32, %d threads",
                (long long)o.systems, o.shape.m, o.shape.n, o.shape.m, o.shape.m, o.shape.n, o.shape.rhs,
                o.shape.threads);
  return s;
}

const demos::TileSpdRun* find(const demos::TileSpdResult& r, const char* form, bool backward) {
  for (const auto& run : r.runs)
    if (run.form == form && run.backward == backward) return &run;
  return nullptr;
}

// The solves and (where both backward kernels fit) their gradients agree with float64 and each other.
bool passed(const demos::TileSpdResult& r) {
  return r.residual < 1e-3 && r.unfused_difference < 1e-3 && r.gradient_difference < 1e-3;
}

int run_demo(const gpu::ContextPtr& ctx, const demos::TileSpdOptions& o) {
  std::printf("tile-spd: %s, on %s\n", describe(o).c_str(), ctx->info().name.c_str());
  auto r = demos::run_tile_spd(ctx, o, {});
  const demos::TileSpdRun &f = *find(r, "fused", false), &u = *find(r, "unfused", false);
  std::printf(
      "fused tile kernel (%llu / %llu bytes of workgroup memory forward / backward): max ‖Hx − f‖/‖f‖ %.2e, "
      "fused vs unfused %.2e, their gradients %.2e;\n%.3f ms per batched solve in %llu dispatches (unfused: %.3f "
      "ms, %llu dispatches)\n",
      (unsigned long long)r.workgroup_bytes_forward, (unsigned long long)r.workgroup_bytes_backward, r.residual,
      r.unfused_difference, r.gradient_difference, f.ms, (unsigned long long)f.dispatches, u.ms,
      (unsigned long long)u.dispatches);
  return passed(r) ? 0 : 1;
}

int run_bench(const gpu::ContextPtr& ctx, const demos::TileSpdOptions& o, const std::string& json_path) {
  std::printf("bench tile-spd on %s (%s, %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), today().c_str());
  std::printf("  %s; median of %d groups of %d\n", describe(o).c_str(), o.repeats, o.steps);
  auto r = demos::run_tile_spd(ctx, o, {});
  std::printf(
      "  max ‖Hx − f‖/‖f‖ %.2e (float64 H), fused vs unfused %.2e, their gradients %.2e; workgroup memory: fused "
      "%llu B forward, %llu B backward, unfused backward at most %llu B\n",
      r.residual, r.unfused_difference, r.gradient_difference, (unsigned long long)r.workgroup_bytes_forward,
      (unsigned long long)r.workgroup_bytes_backward, (unsigned long long)r.unfused_workgroup_bytes_backward);
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const auto& run : r.runs) {
    std::printf("  %-8s %-19s %9.3f ms  %3llu dispatches (%llu kernels)  %8.2f MiB\n", run.form.c_str(),
                run.backward ? "forward + backward" : "forward", run.ms, (unsigned long long)run.dispatches,
                (unsigned long long)run.kernels, double(run.bytes) / (1 << 20));
    runs.push_back({{"form", run.form},
                    {"backward", run.backward},
                    {"ms", run.ms},
                    {"dispatches", run.dispatches},
                    {"kernels", run.kernels},
                    {"bytes", run.bytes}});
  }
  for (bool backward : {false, true}) {
    const demos::TileSpdRun *f = find(r, "fused", backward), *u = find(r, "unfused", backward);
    if (f && u)
      std::printf("  %s: fused is %.2fx the unfused speed\n", backward ? "forward + backward" : "forward",
                  u->ms / f->ms);
  }
  if (!r.note.empty()) std::printf("  %s\n", r.note.c_str());
  if (!json_path.empty()) {
    nlohmann::ordered_json j = {{"bench", "tile-spd"},
                                {"adapter", ctx->info().name},
                                {"backend", ctx->info().backend},
                                {"implementation", ctx->info().implementation},
                                {"date", today()},
                                {"systems", o.systems},
                                {"n", o.shape.n},
                                {"m", o.shape.m},
                                {"rhs", o.shape.rhs},
                                {"threads", o.shape.threads},
                                {"steps", o.steps},
                                {"repeats", o.repeats},
                                {"residual", r.residual},
                                {"unfused_difference", r.unfused_difference},
                                {"gradient_difference", r.gradient_difference},
                                {"workgroup_bytes_forward", r.workgroup_bytes_forward},
                                {"workgroup_bytes_backward", r.workgroup_bytes_backward},
                                {"unfused_workgroup_bytes_backward", r.unfused_workgroup_bytes_backward},
                                {"note", r.note},
                                {"runs", runs}};
    write_file_atomically(json_path, j.dump(2) + "\n", "--json");
  }
  return passed(r) ? 0 : 1;
}

}  // namespace

void add_tile_spd_demo(CLI::App& demo, CommandFn& chosen) {
  auto o = std::make_shared<demos::TileSpdOptions>();
  o->steps = 3;
  o->repeats = 3;
  CLI::App* c = demo.add_subcommand("tile-spd", "batched SPD solves (JᵀMJ + diag R) x = f in one tile kernel");
  add_options(c, *o);
  c->callback([o, &chosen] { chosen = [o](const gpu::ContextPtr& ctx) { return run_demo(ctx, *o); }; });
}

void add_tile_spd_bench(CLI::App& bench, CommandFn& chosen) {
  auto o = std::make_shared<demos::TileSpdOptions>();
  auto json_path = std::make_shared<std::string>();
  CLI::App* c = bench.add_subcommand("tile-spd", "batched SPD solves: one fused tile kernel vs four launches");
  add_options(c, *o);
  c->add_option("--json", *json_path, "write the results to this JSON file (- for standard output)");
  c->callback([o, json_path, &chosen] {
    chosen = [o, json_path](const gpu::ContextPtr& ctx) { return run_bench(ctx, *o, *json_path); };
  });
}

}  // namespace surfgrad::cli
