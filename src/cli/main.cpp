// The surfgrad command-line tool. `surfgrad --help` lists the commands; `surfgrad COMMAND
// --help` lists a command's options with their ranges and defaults. No command: the moons demo.
//
// Exit status: 0 success, 1 an error while working (a surfgrad::Error, out of memory, any other
// exception), 2 a usage error (unknown command or option, a value out of range). Nothing
// escapes main: every failure ends in one line on stderr.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "cli.hpp"
#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"

using namespace surfgrad;

gpu::ContextOptions& surfgrad::cli::context_options() {
  static gpu::ContextOptions options;
  return options;
}

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int cmd_info(const gpu::ContextPtr& ctx) {
  const auto& i = ctx->info();
  const auto& f = ctx->features();
  const auto& l = ctx->limits();
  std::printf("adapter          %s\n", i.name.c_str());
  std::printf("type             %s\n", i.adapter_type.c_str());
  std::printf("vendor           %s %s\n", i.vendor.c_str(), i.architecture.c_str());
  std::printf("driver           %s\n", i.driver.c_str());
  std::printf("backend          %s\n", i.backend.c_str());
  std::printf("implementation   %s\n", i.implementation.c_str());
  std::printf("shader-f16       %s\n", f.shader_f16 ? "yes" : "no");
  std::printf("subgroups        %s (sizes %u-%u)\n", f.subgroups ? "yes" : "no", f.subgroup_min_size,
              f.subgroup_max_size);
  std::printf("timestamp-query  %s\n", f.timestamp_query ? "yes" : "no");
  std::printf("coop-matrix      %s\n",
              f.cooperative_matrix                    ? "yes (native:cooperative-matrix requested)"
              : !f.cooperative_matrix_refusal.empty() ? "offered by the adapter, refused when requested (see below)"
              : f.cooperative_matrix_offered          ? "offered, not requested (SURFGRAD_COOPERATIVE_MATRIX=1)"
                                                      : "no");
  if (!f.cooperative_matrix_refusal.empty()) {
    std::string why = f.cooperative_matrix_refusal;
    for (size_t p = 0; (p = why.find('\n', p)) != std::string::npos;) why.replace(p, 1, " "), ++p;
    std::printf("                 %s\n", why.c_str());
  }
  std::printf("subgroup-matrix  %s", f.subgroup_matrix ? "yes (Dawn, chromium-experimental-subgroup-matrix):" : "no");
  for (auto& c : f.subgroup_matrix_configs)
    std::printf(" %sx%s->%s %ux%ux%u", c.component.c_str(), c.component.c_str(), c.result.c_str(), c.m, c.n, c.k);
  std::printf("\n");
  std::printf("adapter features");
  for (auto& s : f.adapter_features) std::printf(" %s", s.c_str());
  std::printf(
      "\nlimits           maxBufferSize %llu, maxStorageBufferBindingSize %llu, maxStorageBuffersPerShaderStage %u,\n"
      "                 maxComputeWorkgroupsPerDimension %u, maxComputeInvocationsPerWorkgroup %u, "
      "maxComputeWorkgroupStorageSize %u\n",
      (unsigned long long)l.max_buffer_size, (unsigned long long)l.max_storage_buffer_binding_size,
      l.max_storage_buffers_per_shader_stage, l.max_compute_workgroups_per_dimension,
      l.max_compute_invocations_per_workgroup, l.max_compute_workgroup_storage_size);
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"surfgrad: GPU tensors, autodiff and embedding maps (t-SNE, UMAP) through WebGPU", "surfgrad"};
  app.footer(
      "environment: SURFGRAD_BACKEND=vulkan|gles|metal|d3d12, SURFGRAD_ADAPTER=<name substring>,\n"
      "SURFGRAD_PROFILE=1|FILE (GPU time per kernel), SURFGRAD_DUMP_WGSL=DIR\n"
      "exit status: 0 success, 1 error, 2 usage");
  app.require_subcommand(0, 1);
  cli::CommandFn chosen;
  app.add_subcommand("info", "adapter, WebGPU implementation, features and limits")->callback([&] {
    chosen = cmd_info;
  });
  cli::add_demo_commands(app, chosen);
  cli::add_bench_commands(app, chosen);
  cli::add_map_commands(app, chosen);
  cli::add_tune_command(app, chosen);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and a pointer to --help
    return kExitUsage;
  }
  if (!chosen) chosen = cli::default_job();  // no command: the moons demo with its defaults
  auto ctx = gpu::Context::create(cli::context_options());
  int rc = chosen(ctx);
  ctx->write_profile();  // SURFGRAD_PROFILE=FILE: a table that cannot be written fails the run
  return rc;
}

// The one error line, after what the command printed (stdout is buffered when it is not a
// terminal, so where both go to one file or pipe the error would otherwise come first).
void say(const std::string& line) {
  std::fflush(stdout);
  std::fprintf(stderr, "surfgrad: %s\n", line.c_str());
}

// Whatever went to standard output must have arrived: `surfgrad eval … > /dev/full` (or a full
// disk) fails only when the buffered output is flushed, after the command has returned.
int check_stdout(int rc) {
  errno = 0;
  bool ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (ok) return rc;
  int err = errno;
  std::fprintf(stderr, "surfgrad: cannot write to standard output (%s)\n", err ? std::strerror(err) : "a write failed");
  return rc == 0 ? kExitError : rc;
}

}  // namespace

int main(int argc, char** argv) {
  int rc = kExitError;
  try {
    rc = run(argc, argv);
  } catch (const cli::UsageError& e) {
    say(e.what());
    rc = kExitUsage;
  } catch (const Error& e) {
    say(e.what());
  } catch (const std::bad_alloc&) {
    say("out of host memory; map or load fewer points (see README, input limits)");
  } catch (const std::exception& e) {
    say(std::string("internal error: ") + e.what());
  } catch (...) {
    say("internal error (an unknown exception)");
  }
  return check_stdout(rc);
}
