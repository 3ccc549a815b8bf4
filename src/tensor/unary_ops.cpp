// The unary op table (see unary_ops.hpp). One row per op: forward WGSL, host reference, backward
// rule, test ranges.
#include "tensor/unary_ops.hpp"

#include <cmath>

#include "internal.hpp"

namespace surfgrad {

namespace {

Tensor mask_of(const Tensor& m, DType dtype) { return m.cast(dtype); }  // u32 0/1 → 0.0/1.0

Tensor gelu_backward(const Tensor& x, const Tensor&, const Tensor& g) {
  // d/dx 0.5·x·(1 + tanh(u)), u = c·(x + 0.044715·x³)
  const double c = 0.7978845608028654;
  Tensor x2 = mul(x, x);
  Tensor t = mul(add(x, mul(x2, x) * 0.044715), scalar_like(x, c)).tanh();
  Tensor du = (x2 * (3 * 0.044715) + 1.0) * c;
  Tensor d = add((t + 1.0) * 0.5, mul(mul(x * 0.5, 1.0 - mul(t, t)), du));
  return mul(g, d);
}

using S = UnarySpec;

const std::vector<UnarySpec> kUnaryOps = {
    {UnaryOp::neg, "neg", S::Signed, false, "-x", [](double x) { return -x; },
     [](const Tensor&, const Tensor&, const Tensor& g) { return g.neg(); }, -3, 3, -2, 2, false},
    {UnaryOp::abs, "abs", S::Signed, true, "abs(x)", [](double x) { return std::abs(x); },
     [](const Tensor& x, const Tensor&, const Tensor& g) {
       Tensor zero = scalar_like(x, 0);
       return mul(g, sub(mask_of(gt(x, zero), x.dtype()), mask_of(lt(x, zero), x.dtype())));
     },
     -3, 3, -2, 2, true},
    {UnaryOp::exp, "exp", S::Float, false, "exp(x)", [](double x) { return std::exp(x); },
     [](const Tensor&, const Tensor& y, const Tensor& g) { return mul(g, y); }, -5, 5, -2, 2, false},
    {UnaryOp::log, "log", S::Float, false, "log(x)", [](double x) { return std::log(x); },
     [](const Tensor& x, const Tensor&, const Tensor& g) { return div(g, x); }, 0.01, 20, 0.2, 3, false},
    {UnaryOp::sqrt, "sqrt", S::Float, false, "sqrt(x)", [](double x) { return std::sqrt(x); },
     [](const Tensor&, const Tensor& y, const Tensor& g) { return div(g, y * 2.0); }, 0, 20, 0.2, 3, false},
    {UnaryOp::rsqrt, "rsqrt", S::Float, false, "inverseSqrt(x)", [](double x) { return 1 / std::sqrt(x); },
     [](const Tensor&, const Tensor& y, const Tensor& g) { return mul(g, y.pow(3) * -0.5); }, 0.05, 20, 0.3, 3, false},
    {UnaryOp::sin, "sin", S::Float, false, "sin(x)", [](double x) { return std::sin(x); },
     [](const Tensor& x, const Tensor&, const Tensor& g) { return mul(g, x.cos()); }, -6, 6, -3, 3, false},
    {UnaryOp::cos, "cos", S::Float, false, "cos(x)", [](double x) { return std::cos(x); },
     [](const Tensor& x, const Tensor&, const Tensor& g) { return mul(g, x.sin()).neg(); }, -6, 6, -3, 3, false},
    // tanh is clamped first: some implementations compute it as a ratio of exponentials that
    // overflows to inf/inf for large |x|; at |x| = 15 tanh is already 1 in f32.
    {UnaryOp::tanh, "tanh", S::Float, false, "tanh(clamp(f32(x), -15.0, 15.0))", [](double x) { return std::tanh(x); },
     [](const Tensor&, const Tensor& y, const Tensor& g) { return mul(g, 1.0 - mul(y, y)); }, -30, 30, -2, 2, false},
    {UnaryOp::sigmoid, "sigmoid", S::Float, false, "1.0 / (1.0 + exp(-f32(x)))",
     [](double x) { return 1 / (1 + std::exp(-x)); },
     [](const Tensor&, const Tensor& y, const Tensor& g) { return mul(g, mul(y, 1.0 - y)); }, -20, 20, -4, 4, false},
    {UnaryOp::relu, "relu", S::Signed, true, "max(x, {{T}}(0))", [](double x) { return x > 0 ? x : 0.0; },
     // The mask from the output (y > 0 exactly where x > 0, NaN and -0 included): the
     // pre-activation is then never read again, so a lazy matmul epilogue need not store it.
     [](const Tensor&, const Tensor& y, const Tensor& g) {
       return mul(g, mask_of(gt(y, scalar_like(y, 0)), g.dtype()));
     },
     -3, 3, -2, 2, true},
    {UnaryOp::gelu, "gelu", S::Float, false,
     "0.5 * f32(x) * (1.0 + tanh(clamp(0.7978845608028654 * (f32(x) + 0.044715 * f32(x) * f32(x) * f32(x)), -15.0, "
     "15.0)))",
     [](double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }, gelu_backward,
     -6, 6, -3, 3, false},
};

}  // namespace

const std::vector<UnarySpec>& unary_specs() { return kUnaryOps; }

const UnarySpec& unary_spec(UnaryOp op) {
  for (const auto& s : kUnaryOps)
    if (s.op == op) return s;
  throw Error(ErrorKind::Value, "unary op " + std::to_string(int(op)) + " has no row in the unary op table");
}

Tensor apply_unary(const Tensor& x, UnaryOp op) {
  const UnarySpec& s = unary_spec(op);
  if (s.identity_on_u32 && x.dtype() == DType::u32) return x.clone();
  return launch_unary(x, s.name, s.domain == UnarySpec::Float, s.wgsl);
}

}  // namespace surfgrad
