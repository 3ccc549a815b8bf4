// The `surfgrad` program's commands. Each add_* registers its subcommands (options with their
// ranges and defaults, shown by --help) on the CLI11 app; once the command line is parsed, the
// chosen command's work runs with the GPU context.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <stdexcept>
#include <string>

#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"

namespace surfgrad::cli {

using CommandFn = std::function<int(const gpu::ContextPtr&)>;

void add_map_commands(CLI::App& app, CommandFn& chosen);    // map, eval
void add_demo_commands(CLI::App& app, CommandFn& chosen);   // demo [moons|mnist|tensors]
void add_bench_commands(CLI::App& app, CommandFn& chosen);  // bench elementwise|dispatch|train|matmul
void add_tune_command(CLI::App& app, CommandFn& chosen);    // tune
void add_bench_matmul_command(CLI::App& bench, CommandFn& chosen);
void add_bench_coop_command(CLI::App& bench, CommandFn& chosen);  // bench coop (probe)
void add_tile_mlp_demo(CLI::App& demo, CommandFn& chosen);        // demo tile-mlp
void add_tile_mlp_bench(CLI::App& bench, CommandFn& chosen);      // bench tile-mlp
void add_tile_fftconv_demo(CLI::App& demo, CommandFn& chosen);    // demo tile-fftconv
void add_tile_fftconv_bench(CLI::App& bench, CommandFn& chosen);  // bench tile-fftconv
void add_tile_spd_demo(CLI::App& demo, CommandFn& chosen);        // demo tile-spd
void add_tile_spd_bench(CLI::App& bench, CommandFn& chosen);      // bench tile-spd
void add_bench_knn_command(CLI::App& bench, CommandFn& chosen);   // bench knn
void add_bench_lazy_command(CLI::App& bench, CommandFn& chosen);  // bench lazy (eager vs lazy mode)

// The options of the context the chosen command runs on; a command's callback may change them
// (`map` asks for a device that runs only surfgrad's own kernels: ContextOptions::own_kernels_only).
gpu::ContextOptions& context_options();

// The job of `surfgrad` without a command: the moons demo with its defaults.
CommandFn default_job();

// An option value the command's work found out of range (e.g. a perplexity too large for the
// points loaded): reported like CLI11's parse errors, with exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Runs `check` (validate(), check_map_fits()), turning its Value errors into UsageErrors.
template <typename F>
void check_usage(F&& check) {
  try {
    check();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Value) throw UsageError(e.what());
    throw;
  }
}

// The parts the commands share.
std::string today();  // YYYY-MM-DD (UTC), for benchmark records
int cmd_demo_tensors(const gpu::ContextPtr& ctx);

}  // namespace surfgrad::cli
