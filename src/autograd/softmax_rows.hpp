// Var::softmax's fused row kernels (src/autograd/softmax_rows.cpp).
#pragma once
#include "surfgrad/autograd.hpp"

namespace surfgrad {

// Whether softmax over `axis` of x takes the fused kernels (f32, the last axis, not empty).
bool softmax_rows_applies(const Var& x, int axis);
Var softmax_rows(const Var& x);

}  // namespace surfgrad
