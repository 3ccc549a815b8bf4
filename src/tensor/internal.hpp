// Shared by the tensor sources: building tensors from parts and launching the kernel families.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/launch.hpp"
#include "kernels/tensor_access.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

Shape contiguous_strides(const Shape& shape);
void check_rank(const Shape& shape, const char* op);
int normalize_axis(int axis, int rank, const char* op);
// Strides of `t` viewed as `shape` under broadcasting (0 on broadcast axes).
Shape broadcast_strides(const Tensor& t, const Shape& shape);
void check_same_context(const Tensor& a, const Tensor& b, const char* op);
void check_f16_supported(const gpu::ContextPtr& ctx, DType dtype, const char* op);

// WGSL element type for a dtype.
const char* wgsl_type(DType dtype);
inline uint32_t f32_bits(float f) {
  uint32_t u;
  static_assert(sizeof u == sizeof f);
  __builtin_memcpy(&u, &f, 4);
  return u;
}

// One operand of a strided map: a tensor viewed with the map's shape through `strides`.
struct MapOperand {
  const Tensor* tensor;  // the caller's, alive for the launch
  Shape strides;
  DType dtype;          // as the kernel declares it (a f32 target of atomics is bound as u32 bits)
  bool atomic = false;  // bound read_write as array<atomic<u32|i32>> (scatter_add's target)
};
// `t` broadcast to `shape` (stride 0 on broadcast axes).
MapOperand map_operand(const Tensor& t, const Shape& shape);

// Runs map.wgsl over `shape`: operands[0] is written, the rest are read. `body` is WGSL using
// in0..inN-1 / out, idx[k] (element index of operand k) and param_f32/param_i32/param_u32(k);
// it must not `return` (a thread of map_flat.wgsl handles several elements).
// `extra` buffers are bound after the operands as `extra_decls` declare them.
void launch_map(const gpu::ContextPtr& ctx, const std::string& name, const Shape& shape,
                std::vector<MapOperand> operands, const std::string& body, const std::string& helpers = "",
                const std::vector<uint32_t>& params = {}, const std::vector<const gpu::Buffer*>& extra = {},
                const std::vector<std::string>& extra_decls = {});

// out = expr over the values of the inputs (operands[1..], named `names` in `expr`), converted
// to the output's type. One-axis launches use map_values.wgsl, which issues all of a thread's
// loads before its stores; others fall back to map.wgsl.
constexpr int kValuesPerThread = 4;
void launch_values(const gpu::ContextPtr& ctx, const std::string& name, const Shape& shape,
                   std::vector<MapOperand> operands, const std::vector<std::string>& names, const std::string& expr,
                   const std::string& helpers = "", const std::vector<uint32_t>& params = {});

// out = expr(x) elementwise (expr in terms of x and its type {{T}}), checked for the dtypes the op
// takes: floating only, or also i32 (u32 is refused).
Tensor launch_unary(const Tensor& x, const char* name, bool float_only, const std::string& expr,
                    const std::string& helpers = "", const std::vector<uint32_t>& params = {});

// Copies `src` (any strides) into `dst` (any strides, same shape); both may be views.
void copy_into(const Tensor& src, const Tensor& dst);

}  // namespace surfgrad
