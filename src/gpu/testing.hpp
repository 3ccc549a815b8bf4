// Hooks for the test suite only, kept out of the public headers.
#pragma once
#include "surfgrad/gpu.hpp"

namespace surfgrad::gpu {

struct ContextTesting {
  // Destroys the device the way a driver reset would: every later call fails with DeviceLost.
  static void destroy_device(Context& ctx) { ctx.destroy_device(); }
  // The next `count` allocations of 1 MiB or more fail as the device's out-of-memory would.
  static void fail_allocations(Context& ctx, int count);
  // Creates a shader module from `wgsl` inside an error scope and pops it as a kernel build does
  // (deferred_errors.cpp): the error now ("" for none, or deferred under Context::defer_errors).
  static std::string build_in_scope(Context& ctx, const std::string& wgsl);
  // Returns once the prewarm's workers have nothing queued or under way (pipelines.cpp).
  static void wait_for_prewarm(Context& ctx);
  // Prewarm worker threads running in this process, all contexts together.
  static int live_prewarm_workers();
};

}  // namespace surfgrad::gpu
