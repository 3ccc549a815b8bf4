// The binary op table: each op's WGSL, float64 host reference, gradient rule and the input
// ranges its tests draw from, in one row (src/tensor/binary_ops.cpp). Tensor, Var and HostArray
// define their functions from it (surfgrad/binary_ops.inc), and the tests iterate it.
#pragma once
#include <array>
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

enum class BinaryOp {
#define SURFGRAD_BINARY(name) name,
#define SURFGRAD_COMPARISON(name) name,
#include "surfgrad/binary_ops.inc"
#undef SURFGRAD_COMPARISON
#undef SURFGRAD_BINARY
};

struct BinarySpec {
  BinaryOp op;
  const char* name;
  enum Domain { Any, Float } domain;  // Float: f32/f16 operands only; Any: also i32 and u32
  bool comparison;                    // the result is a u32 mask (1 where true); no gradient
  const char* wgsl;                   // in terms of a and b (one type, the operands')
  const char* helpers;                // WGSL functions the expression calls
  double (*host)(double, double);     // the float64 reference
  // dL/da and dL/db at the output's (broadcast) shape, from the operands, the output y and dL/dy,
  // in tensor ops; the caller sums each to its operand's shape. A side whose `want` is false may
  // be left empty. Null for comparisons.
  std::array<Tensor, 2> (*backward)(const Tensor& a, const Tensor& b, const Tensor& y, const Tensor& g, bool want_a,
                                    bool want_b);
  double lo, hi;            // where both operands are drawn in forward tests (b away from 0: div)
  double grad_lo, grad_hi;  // where finite differences of it are accurate (gradient tests)
};

const std::vector<BinarySpec>& binary_specs();
const BinarySpec& binary_spec(BinaryOp op);
// The op with numpy broadcasting; both operands of one dtype and context.
Tensor apply_binary(const Tensor& a, const Tensor& b, BinaryOp op);
// pow_any(x, p): C's pow in WGSL (negative bases for integer exponents), shared with Tensor::pow.
const char* pow_any_wgsl();

}  // namespace surfgrad
