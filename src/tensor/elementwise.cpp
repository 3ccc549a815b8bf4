// Elementwise ops on map.wgsl: unary, binary with broadcasting, where, cast, strided copies.
#include <cmath>

#include "internal.hpp"

namespace surfgrad {

namespace {

// Merges axes that are laid out contiguously for every operand and drops size-1 axes, so the
// kernel's index arithmetic runs over as few axes as possible.
void coalesce(Shape& shape, std::vector<MapOperand>& ops) {
  Shape s;
  std::vector<Shape> st(ops.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !s.empty();
    for (size_t k = 0; k < ops.size() && merge; ++k) merge = st[k].back() == ops[k].strides[d] * shape[d];
    if (merge) {
      s.back() *= shape[d];
      for (size_t k = 0; k < ops.size(); ++k) st[k].back() = ops[k].strides[d];
    } else {
      s.push_back(shape[d]);
      for (size_t k = 0; k < ops.size(); ++k) st[k].push_back(ops[k].strides[d]);
    }
  }
  if (s.empty()) {
    s.push_back(1);
    for (auto& x : st) x.push_back(0);
  }
  shape = s;
  for (size_t k = 0; k < ops.size(); ++k) ops[k].strides = st[k];
}

std::string decl(uint32_t binding, const std::string& name, const MapOperand& op, bool write) {
  std::string elem = wgsl_type(op.dtype);
  if (op.atomic) elem = "atomic<" + std::string(op.dtype == DType::i32 ? "i32" : "u32") + ">";
  return "@group(0) @binding(" + std::to_string(binding) + ") var<storage, " + (write ? "read_write" : "read") + "> " +
         name + ": array<" + elem + ">;\n";
}

}  // namespace

void launch_map(const gpu::ContextPtr& ctx, const std::string& name, const Shape& shape_in,
                std::vector<MapOperand> ops, const std::string& body, const std::string& helpers,
                const std::vector<uint32_t>& params, const std::vector<const gpu::Buffer*>& extra,
                const std::vector<std::string>& extra_decls) {
  int64_t n = shape_numel(shape_in);
  if (n == 0) return;
  Shape shape = shape_in;
  coalesce(shape, ops);
  bool f16 = false;
  std::string bindings;
  for (size_t k = 0; k < ops.size(); ++k) {
    f16 |= ops[k].dtype == DType::f16;
    bindings += decl(uint32_t(k), k == 0 ? "out" : "in" + std::to_string(k - 1), ops[k], k == 0);
  }
  for (size_t e = 0; e < extra_decls.size(); ++e)
    bindings += "@group(0) @binding(" + std::to_string(ops.size() + e) + ") " + extra_decls[e] + "\n";
  uint32_t nops = uint32_t(ops.size());
  bool flat = shape.size() == 1;
  auto kernel = ctx->kernel("map|" + name + "|" + (flat ? "flat|" : "strided|") + bindings + body + helpers, [&] {
    return kernel_source(*ctx, flat ? "map_flat.wgsl" : "map.wgsl",
                         {{"BINDINGS", bindings},
                          {"NOPS", std::to_string(nops)},
                          {"HELPERS", helpers},
                          {"BODY", "// op: " + name + "\n  " + body}},
                         f16, uint32_t(ops.size() + extra.size()));
  });
  std::vector<uint32_t> meta(2 + nops + 8 + nops * 8, 0);
  meta[0] = uint32_t(n);
  meta[1] = uint32_t(shape.size());
  for (uint32_t k = 0; k < nops; ++k) meta[2 + k] = uint32_t(ops[k].offset);
  for (size_t d = 0; d < shape.size(); ++d) meta[2 + nops + d] = uint32_t(shape[d]);
  for (uint32_t k = 0; k < nops; ++k)
    for (size_t d = 0; d < shape.size(); ++d) meta[2 + nops + 8 + k * 8 + d] = uint32_t(ops[k].strides[d]);
  meta.insert(meta.end(), params.begin(), params.end());
  uint64_t per_group = flat ? 256 * 4 : 256;  // map_flat.wgsl: 4 elements per thread
  auto groups = ctx->grid_for((uint64_t(n) + per_group - 1) / per_group);
  const gpu::Buffer* b[8] = {};
  size_t nb = 0;
  for (auto& op : ops) b[nb++] = op.buffer;
  for (auto* e : extra) b[nb++] = e;
  switch (nb) {  // dispatch takes an initializer list
    case 1: ctx->dispatch(kernel, {b[0]}, meta, groups); break;
    case 2: ctx->dispatch(kernel, {b[0], b[1]}, meta, groups); break;
    case 3: ctx->dispatch(kernel, {b[0], b[1], b[2]}, meta, groups); break;
    case 4: ctx->dispatch(kernel, {b[0], b[1], b[2], b[3]}, meta, groups); break;
    case 5: ctx->dispatch(kernel, {b[0], b[1], b[2], b[3], b[4]}, meta, groups); break;
    default: throw Error(ErrorKind::Value, "launch_map: too many bindings");
  }
}

static MapOperand operand(const Tensor& t, const Shape& shape) {
  return {t.storage()->buffer.get(), t.offset(), broadcast_strides(t, shape), t.dtype()};
}

void copy_into(const Tensor& src, const Tensor& dst) {
  if (src.shape() != dst.shape())
    throw Error(ErrorKind::Shape, "copy: " + src.describe() + " into " + dst.describe());
  launch_map(dst.context(), "copy", dst.shape(), {operand(dst, dst.shape()), operand(src, dst.shape())},
             std::string("out[idx[0]] = ") + wgsl_type(dst.dtype()) + "(in0[idx[1]]);");
}

Tensor Tensor::cast(DType dtype) const {
  if (dtype == dtype_) return *this;
  check_f16_supported(context(), dtype, "cast");
  Tensor out = empty(context(), shape_, dtype);
  copy_into(*this, out);
  return out;
}

// ---------------------------------------------------------------- unary

namespace {

enum class Kind { Float, Signed, Any };

struct UnaryOp {
  const char* name;
  Kind kind;
  const char* expr;  // in terms of x (type T) and T
};

const char* kPowHelper = R"(
// x^p for any sign of x: negative bases allowed for integer exponents, as in C's pow.
fn pow_any(x: f32, p: f32) -> f32 {
  if (p == 0.0) { return 1.0; }
  let r = exp2(p * log2(abs(x)));
  if (x >= 0.0) { return r; }
  if (fract(p) != 0.0) { return bitcast<f32>(0x7fc00000u); }  // NaN, as C's pow
  return select(r, -r, fract(p * 0.5) != 0.0);
}
)";

Tensor unary(const Tensor& x, const UnaryOp& op, const std::vector<uint32_t>& params = {}) {
  if (op.kind == Kind::Float && !is_float(x.dtype()))
    throw Error(ErrorKind::DType, std::string(op.name) + " needs a floating dtype (f32 or f16), got " + x.describe() +
                                      "; cast first: x.cast(DType::f32)");
  if (op.kind == Kind::Signed && x.dtype() == DType::u32)
    throw Error(ErrorKind::DType, std::string(op.name) + " is not defined for u32 (" + x.describe() + ")");
  Tensor out = Tensor::empty(x.context(), x.shape(), x.dtype());
  std::string T = wgsl_type(x.dtype());
  std::string body = "let x = in0[idx[1]];\n  out[idx[0]] = " + T + "(" + op.expr + ");";
  launch_map(x.context(), op.name, x.shape(), {operand(out, x.shape()), operand(x, x.shape())},
             fill_template(body, {{"T", T}}), op.name == std::string("pow") ? kPowHelper : "", params);
  return out;
}

}  // namespace

Tensor Tensor::neg() const { return unary(*this, {"neg", Kind::Signed, "-x"}); }
Tensor Tensor::abs() const {
  return dtype_ == DType::u32 ? clone() : unary(*this, {"abs", Kind::Signed, "abs(x)"});
}
Tensor Tensor::exp() const { return unary(*this, {"exp", Kind::Float, "exp(x)"}); }
Tensor Tensor::log() const { return unary(*this, {"log", Kind::Float, "log(x)"}); }
Tensor Tensor::sqrt() const { return unary(*this, {"sqrt", Kind::Float, "sqrt(x)"}); }
Tensor Tensor::rsqrt() const { return unary(*this, {"rsqrt", Kind::Float, "inverseSqrt(x)"}); }
Tensor Tensor::sin() const { return unary(*this, {"sin", Kind::Float, "sin(x)"}); }
Tensor Tensor::cos() const { return unary(*this, {"cos", Kind::Float, "cos(x)"}); }
// tanh is clamped first: some implementations compute it as a ratio of exponentials that
// overflows to inf/inf for large |x|; at |x| = 15 tanh is already 1 in f32.
Tensor Tensor::tanh() const { return unary(*this, {"tanh", Kind::Float, "tanh(clamp(f32(x), -15.0, 15.0))"}); }
Tensor Tensor::sigmoid() const { return unary(*this, {"sigmoid", Kind::Float, "1.0 / (1.0 + exp(-f32(x)))"}); }
Tensor Tensor::relu() const {
  return dtype_ == DType::u32 ? clone() : unary(*this, {"relu", Kind::Signed, "max(x, {{T}}(0))"});
}
Tensor Tensor::gelu() const {
  return unary(*this, {"gelu", Kind::Float,
                       "0.5 * f32(x) * (1.0 + tanh(clamp(0.7978845608028654 * (f32(x) + 0.044715 * f32(x) * f32(x) * "
                       "f32(x)), -15.0, 15.0)))"});
}
Tensor Tensor::pow(double exponent) const {
  return unary(*this, {"pow", Kind::Float, "pow_any(f32(x), param_f32(0u))"}, {f32_bits(float(exponent))});
}

// ---------------------------------------------------------------- binary

namespace {

struct BinaryOp {
  const char* name;
  Kind kind;
  const char* expr;  // in terms of a, b
  bool mask;         // result is a u32 mask
};

Tensor binary(const Tensor& a, const Tensor& b, const BinaryOp& op) {
  check_same_context(a, b, op.name);
  if (a.dtype() != b.dtype())
    throw Error(ErrorKind::DType, std::string(op.name) + ": dtypes differ (" + a.describe() + " and " + b.describe() +
                                      "); cast one operand so both match");
  if (op.kind == Kind::Float && !is_float(a.dtype()))
    throw Error(ErrorKind::DType, std::string(op.name) + " needs floating operands, got " + a.describe());
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op.name);
  DType out_dtype = op.mask ? DType::u32 : a.dtype();
  Tensor out = Tensor::empty(a.context(), shape, out_dtype);
  std::string T = wgsl_type(a.dtype());
  std::string body = "let a = in0[idx[1]];\n  let b = in1[idx[2]];\n  out[idx[0]] = " +
                     std::string(wgsl_type(out_dtype)) + "(" + op.expr + ");";
  launch_map(a.context(), op.name, shape, {operand(out, shape), operand(a, shape), operand(b, shape)}, body,
             op.name == std::string("pow") ? kPowHelper : "");
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(a, b, {"add", Kind::Any, "a + b", false}); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(a, b, {"sub", Kind::Any, "a - b", false}); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(a, b, {"mul", Kind::Any, "a * b", false}); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(a, b, {"div", Kind::Any, "a / b", false}); }
Tensor pow(const Tensor& a, const Tensor& b) {
  return binary(a, b, {"pow", Kind::Float, "pow_any(f32(a), f32(b))", false});
}
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(a, b, {"maximum", Kind::Any, "max(a, b)", false}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(a, b, {"minimum", Kind::Any, "min(a, b)", false}); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(a, b, {"eq", Kind::Any, "select(0u, 1u, a == b)", true}); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(a, b, {"ne", Kind::Any, "select(0u, 1u, a != b)", true}); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(a, b, {"lt", Kind::Any, "select(0u, 1u, a < b)", true}); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(a, b, {"le", Kind::Any, "select(0u, 1u, a <= b)", true}); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(a, b, {"gt", Kind::Any, "select(0u, 1u, a > b)", true}); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(a, b, {"ge", Kind::Any, "select(0u, 1u, a >= b)", true}); }

Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b) {
  check_same_context(mask, a, "where");
  check_same_context(a, b, "where");
  if (a.dtype() != b.dtype())
    throw Error(ErrorKind::DType, "where: value dtypes differ (" + a.describe() + " and " + b.describe() + ")");
  Shape shape = broadcast_shapes(broadcast_shapes(mask.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = Tensor::empty(a.context(), shape, a.dtype());
  std::string zero = std::string(wgsl_type(mask.dtype())) + "(0)";
  launch_map(a.context(), "where", shape,
             {operand(out, shape), operand(mask, shape), operand(a, shape), operand(b, shape)},
             "out[idx[0]] = select(in2[idx[3]], in1[idx[2]], in0[idx[1]] != " + zero + ");");
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
