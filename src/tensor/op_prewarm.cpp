// The tensor ops' kernels, prewarmed by calling the ops (op_prewarm.hpp).
#include "tensor/op_prewarm.hpp"

#include <cstdlib>
#include <string>

#include "kernels/launch.hpp"
#include "platform/host_resources.hpp"

namespace surfgrad {

// As pipelines.cpp's prewarm_off: no worker threads under Dawn (its device is not thread-safe
// here), in WebAssembly, or with SURFGRAD_PREWARM=0. Then the ops are not even called (their
// small tensors would be allocated for nothing).
bool tensor_prewarm_on(const gpu::Context& ctx) {
  if (!SURFGRAD_HOST_HAS_THREADS) return false;
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
  try {
    ops();
  } catch (const Error&) {
    // a head start only: the real call reports its own errors
  }
}

}  // namespace surfgrad
