// Elementwise ops: unary, where, cast, strided copies (launch_values); the binary ops are the table
// of binary_ops.cpp.
#include <cmath>

#include "internal.hpp"
#include "tensor/binary_ops.hpp"
#include "tensor/lazy.hpp"
#include "tensor/unary_ops.hpp"

namespace surfgrad {

void copy_into(const Tensor& src, const Tensor& dst) {
  if (src.shape() != dst.shape()) throw Error(ErrorKind::Shape, "copy: " + src.describe() + " into " + dst.describe());
  launch_values(dst.context(), "copy", dst.shape(), {map_operand(dst, dst.shape()), map_operand(src, dst.shape())},
                {"x"}, "x");
}

void Tensor::assign(const Tensor& src) const {
  check_same_context(*this, src, "assign");
  if (broadcast_shapes(src.shape(), shape_, "assign") != shape_)
    throw Error(ErrorKind::Shape, "assign: " + src.describe() + " does not broadcast to " + describe());
  launch_values(context(), "assign", shape_, {map_operand(*this, shape_), map_operand(src, shape_)}, {"x"}, "x");
}

Tensor Tensor::cast(DType dtype) const {
  if (dtype == dtype_) return *this;
  check_f16_supported(context(), dtype, "cast");
  if (lazy_enabled()) return lazy_record(context(), "cast", shape_, dtype, {*this}, {"x"}, "x");
  Tensor out = empty(context(), shape_, dtype);
  copy_into(*this, out);
  return out;
}

// ---------------------------------------------------------------- unary

Tensor launch_unary(const Tensor& x, const char* name, bool float_only, const std::string& expr,
                    const std::string& helpers, const std::vector<uint32_t>& params) {
  if (float_only && !is_float(x.dtype()))
    throw Error(ErrorKind::DType, std::string(name) + " needs a floating dtype (f32 or f16), got " + x.describe() +
                                      "; cast first: x.cast(DType::f32)");
  if (!float_only && x.dtype() == DType::u32)
    throw Error(ErrorKind::DType, std::string(name) + " is not defined for u32 (" + x.describe() + ")");
  std::string code = kernels::fill_template(expr, {{"T", wgsl_type(x.dtype())}, {"P", "0u"}});
  if (lazy_enabled()) {  // a parameter is named {{P}} in expr; the fused kernel numbers it
    std::string lazy_code = kernels::fill_template(expr, {{"T", wgsl_type(x.dtype())}, {"P", "{{P}}"}});
    return lazy_record(x.context(), name, x.shape(), x.dtype(), {x}, {"x"}, lazy_code, helpers,
                       params.empty() ? nullptr : params.data());
  }
  Tensor out = Tensor::empty(x.context(), x.shape(), x.dtype());
  launch_values(x.context(), name, x.shape(), {map_operand(out, x.shape()), map_operand(x, x.shape())}, {"x"}, code,
                helpers, params);
  return out;
}

#define SURFGRAD_UNARY(name) \
  Tensor Tensor::name() const { return apply_unary(*this, UnaryOp::name); }
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY

Tensor Tensor::pow(double exponent) const {
  return launch_unary(*this, "pow", true, "pow_any(f32(x), param_f32({{P}}))", pow_any_wgsl(),
                      {f32_bits(float(exponent))});
}

// ---------------------------------------------------------------- binary (binary_ops.cpp), where

Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b) {
  check_same_context(mask, a, "where");
  check_same_context(a, b, "where");
  if (a.dtype() != b.dtype())
    throw Error(ErrorKind::DType, "where: value dtypes differ (" + a.describe() + " and " + b.describe() + ")");
  Shape shape = broadcast_shapes(broadcast_shapes(mask.shape(), a.shape(), "where"), b.shape(), "where");
  std::string zero = std::string(wgsl_type(mask.dtype())) + "(0)";
  if (lazy_enabled())
    return lazy_record(a.context(), "where", shape, a.dtype(), {mask, a, b}, {"m", "a", "b"},
                       "select(b, a, m != " + zero + ")");
  Tensor out = Tensor::empty(a.context(), shape, a.dtype());
  launch_values(a.context(), "where", shape,
                {map_operand(out, shape), map_operand(mask, shape), map_operand(a, shape), map_operand(b, shape)},
                {"m", "a", "b"}, "select(b, a, m != " + zero + ")");
  return out;
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(a, b)); }
Tensor operator-(const Tensor& a, double b) { return sub(a, scalar_like(a, b)); }
Tensor operator*(const Tensor& a, double b) { return mul(a, scalar_like(a, b)); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar_like(a, b)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(b, a), b); }
Tensor operator-(double a, const Tensor& b) { return sub(scalar_like(b, a), b); }
Tensor operator*(double a, const Tensor& b) { return mul(scalar_like(b, a), b); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_like(b, a), b); }

}  // namespace surfgrad
