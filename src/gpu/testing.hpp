// Hooks for the test suite only, kept out of the public headers.
#pragma once
#include "surfgrad/gpu.hpp"

namespace surfgrad::gpu {

struct ContextTesting {
  // Destroys the device the way a driver reset would: every later call fails with DeviceLost.
  static void destroy_device(Context& ctx) { ctx.destroy_device(); }
};

}  // namespace surfgrad::gpu
