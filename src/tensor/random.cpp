// uniform / normal from random.wgsl (Philox-4x32-10, counter = element block, key = seed).
#include <cmath>

#include "internal.hpp"

namespace surfgrad {

static Tensor random(const gpu::ContextPtr& ctx, const Shape& shape, uint64_t seed, double a, double b, DType dtype,
                     bool normal, const char* name) {
  if (!is_float(dtype))
    throw Error(ErrorKind::DType, std::string(name) + " makes floating tensors (f32 or f16), not " + dtype_name(dtype));
  if (!std::isfinite(a) || !std::isfinite(b))
    throw Error(ErrorKind::Value, std::string(name) + ": parameters must be finite");
  Tensor out = Tensor::empty(ctx, shape, dtype);
  uint64_t n = uint64_t(out.numel());
  if (n == 0) return out;
  auto kernel =
      kernels::Program::file(ctx, "random.wgsl", {{"T", wgsl_type(dtype)}, {"NORMAL", normal ? "true" : "false"}},
                             {.f16 = dtype == DType::f16});
  kernel.launch({out}, {n, uint32_t(seed), uint32_t(seed >> 32), a, b}, kernels::groups_for(*ctx, (n + 3) / 4, 256));
  return out;
}

Tensor Tensor::uniform(const gpu::ContextPtr& ctx, const Shape& shape, uint64_t seed, double low, double high,
                       DType dtype) {
  return random(ctx, shape, seed, low, high, dtype, false, "uniform");
}

Tensor Tensor::normal(const gpu::ContextPtr& ctx, const Shape& shape, uint64_t seed, double mean, double stddev,
                      DType dtype) {
  if (stddev < 0) throw Error(ErrorKind::Value, "normal: stddev must be ≥ 0, got " + std::to_string(stddev));
  return random(ctx, shape, seed, mean, stddev, dtype, true, "normal");
}

}  // namespace surfgrad
