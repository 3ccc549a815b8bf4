// The tensor ops' kernels, prewarmed by calling the ops (op_prewarm.hpp).
#include "tensor/op_prewarm.hpp"

#include <cstdlib>
#include <string>

#include "kernels/launch.hpp"
#include "platform/host_resources.hpp"

namespace surfgrad {

// As pipelines.cpp's prewarm_off: nothing under Dawn (its device is not thread-safe here) or
// with SURFGRAD_PREWARM=0. Then the ops are not even called (their small tensors would be
// allocated for nothing). In WebAssembly (no threads) Context::prewarm starts each build on the
// browser's own workers (createComputePipelineAsync) and returns: the lists run there too, so a
// page's tensor-op kernels compile together ahead of their first use instead of one round trip
// each on the map's path (issue 35's second page load).
bool tensor_prewarm_on(const gpu::Context& ctx) {
#if !defined(__wasm__)
  if (!SURFGRAD_HOST_HAS_THREADS) return false;
#endif
  if (ctx.info().implementation.rfind("Dawn", 0) == 0) return false;
  const char* v = std::getenv("SURFGRAD_PREWARM");
  return !(v && std::string(v) == "0");
}

OpLayout dense_layout(int64_t rows, int64_t cols) { return (rows * cols) % 4 == 0 ? OpLayout::Vec4 : OpLayout::Flat; }

Tensor layout_sample(const gpu::ContextPtr& ctx, OpLayout layout, DType dtype) {
  switch (layout) {
    case OpLayout::Vec4: return Tensor::empty(ctx, {4}, dtype);
    case OpLayout::Flat: return Tensor::empty(ctx, {3}, dtype);
    case OpLayout::Strided: break;
  }
  return Tensor::empty(ctx, {2, 4}, dtype);
}

void prewarm_ops(const gpu::ContextPtr& ctx, const std::function<void()>& ops) {
  if (!tensor_prewarm_on(*ctx)) return;
  kernels::PrewarmOnly only;
  EagerScope eager;  // the lists name eager mode's kernels, which the map path (eager) runs
  try {
    ops();
  } catch (const Error&) {
    // a head start only: the real call reports its own errors
  }
}

}  // namespace surfgrad
