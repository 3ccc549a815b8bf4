// The unary op table: each op's WGSL, float64 host reference, backward rule and the input ranges
// its tests draw from, in one row (src/tensor/unary_ops.cpp). Tensor, Var and HostArray define
// their methods from it, and the tests iterate it.
#pragma once
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

enum class UnaryOp {
#define SURFGRAD_UNARY(name) name,
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY
};

struct UnarySpec {
  UnaryOp op;
  const char* name;
  enum Domain { Float, Signed } domain;  // Float: f32/f16 only; Signed: also i32 (u32: see below)
  bool identity_on_u32;                  // abs and relu of unsigned values are the values
  const char* wgsl;                      // in terms of x (of type {{T}})
  double (*host)(double);                // the float64 reference
  // dL/dx from the input x, the output y and dL/dy, in tensor ops.
  Tensor (*backward)(const Tensor& x, const Tensor& y, const Tensor& g);
  double lo, hi;            // where the op is defined and well conditioned (forward tests)
  double grad_lo, grad_hi;  // where finite differences of it are accurate (gradient tests)
  bool kink_at_zero;        // not differentiable at 0: gradient tests stay on either side
};

const std::vector<UnarySpec>& unary_specs();
const UnarySpec& unary_spec(UnaryOp op);
Tensor apply_unary(const Tensor& x, UnaryOp op);

}  // namespace surfgrad
