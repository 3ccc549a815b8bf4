// For op implementations (src/autograd, and later layers that add differentiable ops): recording
// a result on the tape.
#pragma once
#include "surfgrad/autograd.hpp"

namespace surfgrad {

struct VarAccess {
  static Var make(Tensor value, const char* op, std::vector<Var> inputs, BackwardFn backward) {
    return Var::make(std::move(value), op, std::move(inputs), std::move(backward));
  }
};

}  // namespace surfgrad
