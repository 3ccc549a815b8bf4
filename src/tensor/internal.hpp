// Shared by the tensor sources: building tensors from parts and launching the kernel families.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

namespace kernels {
std::string_view wgsl_source(std::string_view name);
}

struct TensorAccess {
  static Tensor make(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype) {
    Tensor t;
    t.storage_ = std::move(storage);
    t.shape_ = std::move(shape);
    t.strides_ = std::move(strides);
    t.offset_ = offset;
    t.dtype_ = dtype;
    return t;
  }
};

Shape contiguous_strides(const Shape& shape);
void check_rank(const Shape& shape, const char* op);
int normalize_axis(int axis, int rank, const char* op);
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Strides of `t` viewed as `shape` under broadcasting (0 on broadcast axes).
Shape broadcast_strides(const Tensor& t, const Shape& shape);
void check_same_context(const Tensor& a, const Tensor& b, const char* op);
void check_f16_supported(const gpu::ContextPtr& ctx, DType dtype, const char* op);

// WGSL element type for a dtype.
const char* wgsl_type(DType dtype);
// Replaces every {{KEY}} in `text`.
std::string fill_template(std::string_view text, const std::map<std::string, std::string>& values);
// preamble (enables) + common.wgsl + the named template, with {{META_BINDING}} set.
std::string kernel_source(const gpu::Context& ctx, std::string_view name, std::map<std::string, std::string> values,
                          bool f16, uint32_t meta_binding);

inline uint32_t f32_bits(float f) {
  uint32_t u;
  static_assert(sizeof u == sizeof f);
  __builtin_memcpy(&u, &f, 4);
  return u;
}

// One operand of a strided map: a tensor viewed with the map's shape through `strides`.
struct MapOperand {
  const gpu::Buffer* buffer;
  int64_t offset;
  Shape strides;
  DType dtype;
  bool atomic = false;  // bound read_write as array<atomic<u32|i32>> (scatter_add's target)
};

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

// Copies `src` (any strides) into `dst` (any strides, same shape); both may be views.
void copy_into(const Tensor& src, const Tensor& dst);

}  // namespace surfgrad
