// Waiting for the GPU to finish what was submitted, where poll() alone does not (Dawn).
#pragma once
#include "surfgrad/gpu.hpp"

namespace surfgrad::gpu {

// Under Dawn: blocks until the queue's submitted work is done (wgpuQueueOnSubmittedWorkDone,
// its callback driven by ticks and ProcessEvents), or the device is lost. Elsewhere nothing:
// wgpu-native's wgpuDevicePoll(wait = true) already waits, and the browser has no blocking wait.
// Context::sync calls it, so that timings around sync() measure the work, not its submission
// (`bench knn` under Dawn timed a second of work at 0.28 ms).
void wait_for_submitted_work(Context::Impl& impl);

}  // namespace surfgrad::gpu
