// The binary op table (see binary_ops.hpp). One row per op: forward WGSL, host reference,
// gradient rule, test ranges.
#include "tensor/binary_ops.hpp"

#include <algorithm>
#include <cmath>

#include "internal.hpp"
#include "tensor/lazy.hpp"

namespace surfgrad {

namespace {

const char* kPowAny = R"(
// x^p for any sign of x: negative bases allowed for integer exponents, as in C's pow.
fn pow_any(x: f32, p: f32) -> f32 {
  if (p == 0.0) { return 1.0; }
  let r = exp2(p * log2(abs(x)));
  if (x >= 0.0) { return r; }
  // NaN, as C's pow. Built from x at run time: Tint (Chromium, Dawn) refuses a NaN constant
  // ("value nan cannot be represented as 'f32'"), which naga accepts.
  if (fract(p) != 0.0) { return bitcast<f32>(0x7fc00000u | (bitcast<u32>(x) & 0u)); }
  return select(r, -r, fract(p * 0.5) != 0.0);
}
)";

using Grads = std::array<Tensor, 2>;
Tensor mask_of(const Tensor& m, DType dtype) { return m.cast(dtype); }  // u32 0/1 → 0.0/1.0

Grads pow_backward(const Tensor& a, const Tensor& b, const Tensor& y, const Tensor& g, bool want_a, bool want_b) {
  Grads d;
  if (want_a) d[0] = mul(g, mul(b, pow(a, sub(b, scalar_like(b, 1)))));
  if (want_b) d[1] = mul(g, mul(y, a.log()));
  return d;
}

// maximum/minimum: the larger (smaller) side gets the gradient; ties split it in half.
template <bool kMax>
Grads extremum_backward(const Tensor& a, const Tensor& b, const Tensor&, const Tensor& g, bool, bool) {
  DType d = g.dtype();
  Tensor wins_a = mask_of(kMax ? gt(a, b) : lt(a, b), d);
  Tensor tie = mul(mask_of(eq(a, b), d), scalar_like(g, 0.5));
  Tensor share_a = add(wins_a, tie);
  Tensor share_b = sub(scalar_like(g, 1), share_a);
  return {mul(g, share_a), mul(g, share_b)};
}

using S = BinarySpec;
constexpr double kNoGrad = 0;  // comparisons: no gradient range

const std::vector<BinarySpec> kBinaryOps = {
    {BinaryOp::add, "add", S::Any, false, "a + b", "", [](double a, double b) { return a + b; },
     [](const Tensor&, const Tensor&, const Tensor&, const Tensor& g, bool, bool) { return Grads{g, g}; }, 0.5, 3, -2,
     2},
    {BinaryOp::sub, "sub", S::Any, false, "a - b", "", [](double a, double b) { return a - b; },
     [](const Tensor&, const Tensor&, const Tensor&, const Tensor& g, bool, bool) { return Grads{g, g.neg()}; }, 0.5, 3,
     -2, 2},
    {BinaryOp::mul, "mul", S::Any, false, "a * b", "", [](double a, double b) { return a * b; },
     [](const Tensor& a, const Tensor& b, const Tensor&, const Tensor& g, bool want_a, bool want_b) {
       return Grads{want_a ? mul(g, b) : Tensor(), want_b ? mul(g, a) : Tensor()};
     },
     0.5, 3, -2, 2},
    // Integer division truncates, as C's (and WGSL's).
    {BinaryOp::div, "div", S::Any, false, "a / b", "", [](double a, double b) { return a / b; },
     [](const Tensor&, const Tensor& b, const Tensor& y, const Tensor& g, bool, bool want_b) {
       Tensor g_over_b = div(g, b);
       return Grads{g_over_b, want_b ? mul(g_over_b, y).neg() : Tensor()};
     },
     0.5, 3, 0.5, 2},
    {BinaryOp::pow, "pow", S::Float, false, "pow_any(f32(a), f32(b))", kPowAny,
     [](double a, double b) { return std::pow(a, b); }, pow_backward, 0.5, 3, 0.5, 2},
    {BinaryOp::maximum, "maximum", S::Any, false, "max(a, b)", "", [](double a, double b) { return std::max(a, b); },
     extremum_backward<true>, 0.5, 3, -2, 2},
    {BinaryOp::minimum, "minimum", S::Any, false, "min(a, b)", "", [](double a, double b) { return std::min(a, b); },
     extremum_backward<false>, 0.5, 3, -2, 2},
    {BinaryOp::eq, "eq", S::Any, true, "select(0u, 1u, a == b)", "", [](double a, double b) { return double(a == b); },
     nullptr, 0.5, 3, kNoGrad, kNoGrad},
    {BinaryOp::ne, "ne", S::Any, true, "select(0u, 1u, a != b)", "", [](double a, double b) { return double(a != b); },
     nullptr, 0.5, 3, kNoGrad, kNoGrad},
    {BinaryOp::lt, "lt", S::Any, true, "select(0u, 1u, a < b)", "", [](double a, double b) { return double(a < b); },
     nullptr, 0.5, 3, kNoGrad, kNoGrad},
    {BinaryOp::le, "le", S::Any, true, "select(0u, 1u, a <= b)", "", [](double a, double b) { return double(a <= b); },
     nullptr, 0.5, 3, kNoGrad, kNoGrad},
    {BinaryOp::gt, "gt", S::Any, true, "select(0u, 1u, a > b)", "", [](double a, double b) { return double(a > b); },
     nullptr, 0.5, 3, kNoGrad, kNoGrad},
    {BinaryOp::ge, "ge", S::Any, true, "select(0u, 1u, a >= b)", "", [](double a, double b) { return double(a >= b); },
     nullptr, 0.5, 3, kNoGrad, kNoGrad},
};

}  // namespace

const std::vector<BinarySpec>& binary_specs() { return kBinaryOps; }

const BinarySpec& binary_spec(BinaryOp op) {
  for (const auto& s : kBinaryOps)
    if (s.op == op) return s;
  throw Error(ErrorKind::Value, "binary op " + std::to_string(int(op)) + " has no row in the binary op table");
}

const char* pow_any_wgsl() { return kPowAny; }

Tensor apply_binary(const Tensor& a, const Tensor& b, BinaryOp op) {
  const BinarySpec& s = binary_spec(op);
  check_same_context(a, b, s.name);
  if (a.dtype() != b.dtype())
    throw Error(ErrorKind::DType, std::string(s.name) + ": dtypes differ (" + a.describe() + " and " + b.describe() +
                                      "); cast one operand so both match");
  if (s.domain == S::Float && !is_float(a.dtype()))
    throw Error(ErrorKind::DType, std::string(s.name) + " needs floating operands, got " + a.describe());
  Shape shape = broadcast_shapes(a.shape(), b.shape(), s.name);
  DType out_dtype = s.comparison ? DType::u32 : a.dtype();
  if (lazy_enabled()) return lazy_record(a.context(), s.name, shape, out_dtype, {a, b}, {"a", "b"}, s.wgsl, s.helpers);
  Tensor out = Tensor::empty(a.context(), shape, out_dtype);
  launch_values(a.context(), s.name, shape, {map_operand(out, shape), map_operand(a, shape), map_operand(b, shape)},
                {"a", "b"}, s.wgsl, s.helpers);
  return out;
}

#define SURFGRAD_BINARY(name) \
  Tensor name(const Tensor& a, const Tensor& b) { return apply_binary(a, b, BinaryOp::name); }
#define SURFGRAD_COMPARISON(name) SURFGRAD_BINARY(name)
#include "surfgrad/binary_ops.inc"
#undef SURFGRAD_COMPARISON
#undef SURFGRAD_BINARY

}  // namespace surfgrad
