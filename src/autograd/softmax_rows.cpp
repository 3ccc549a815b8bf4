// Var::softmax over the last axis of f32 as one kernel each way (softmax_rows.wgsl, issue 36):
// forward y = exp(x − max) / Σ exp(x − max), backward dx = y · (g − Σ g·y), a workgroup a row.
// Other axes and dtypes keep the composite (max, sub, exp, sum, div: ~5 dispatches forward).
#include "autograd/softmax_rows.hpp"

#include "autograd/var_access.hpp"
#include "kernels/launch.hpp"

namespace surfgrad {

namespace {

Tensor softmax_rows(const Tensor& a, const Tensor& b, bool backward) {
  auto ctx = a.context();
  int64_t c = a.shape().back(), rows = a.numel() / c;
  Tensor out = Tensor::empty(ctx, a.shape());
  kernels::Program::file(ctx, "softmax_rows.wgsl", {{"BACKWARD", backward ? "true" : "false"}})
      .launch({out, a, b}, {rows, c}, ctx->grid_for(uint64_t(rows)));
  return out;
}

}  // namespace

bool softmax_rows_applies(const Var& x, int axis) {
  int r = x.rank();
  return x.value().dtype() == DType::f32 && r >= 1 && (axis == -1 || axis == r - 1) && x.value().numel() > 0;
}

Var softmax_rows(const Var& x) {
  Tensor xv = kernels::dense(x.value());
  Tensor y = softmax_rows(xv, xv, false);
  return VarAccess::make(y, "softmax", {x}, [y](const Tensor& g) {
    Tensor gd = kernels::dense(g);
    return std::vector<Tensor>{softmax_rows(y, gd, true)};
  });
}

}  // namespace surfgrad
