// nn::cross_entropy's fused kernels (src/nn/cross_entropy.cpp), for f32 [N, C] logits and i32 [N]
// labels already checked by the caller.
#pragma once
#include "surfgrad/autograd.hpp"

namespace surfgrad::nn {

Var fused_cross_entropy(const Var& logits, const Tensor& labels);

}  // namespace surfgrad::nn
