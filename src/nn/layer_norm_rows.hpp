// nn::LayerNorm's fused kernels (src/nn/layer_norm_rows.cpp); shapes checked by the caller
// (x [..., C], weight and bias [C]).
#pragma once
#include "surfgrad/autograd.hpp"

namespace surfgrad::nn {

bool layer_norm_rows_applies(const Var& x, const Var& weight, const Var& bias);
Var layer_norm_rows(const Var& x, const Var& weight, const Var& bias, double eps);

}  // namespace surfgrad::nn
