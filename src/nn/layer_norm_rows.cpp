// nn::LayerNorm on f32 in fused kernels (issue 36): the forward in one (layer_norm_rows.wgsl,
// keeping each row's mean and 1/σ), the backward in one (layer_norm_backward.wgsl: workgroups a
// row for the input's gradient beside workgroups of 32 columns for the weight's and bias's). The
// composite (mean, sub, mul, mean, add, rsqrt, mul, mul, add) stays for other dtypes.
#include "nn/layer_norm_rows.hpp"

#include "autograd/var_access.hpp"
#include "kernels/launch.hpp"

namespace surfgrad::nn {

bool layer_norm_rows_applies(const Var& x, const Var& weight, const Var& bias) {
  return x.value().dtype() == DType::f32 && weight.value().dtype() == DType::f32 &&
         bias.value().dtype() == DType::f32 && x.value().numel() > 0;
}

Var layer_norm_rows(const Var& x, const Var& weight, const Var& bias, double eps) {
  Tensor xv = kernels::dense(x.value()), wv = kernels::dense(weight.value()), bv = kernels::dense(bias.value());
  auto ctx = xv.context();
  int64_t c = xv.shape().back(), rows = xv.numel() / c;
  Tensor y = Tensor::empty(ctx, xv.shape()), stats = Tensor::empty(ctx, {rows, 2});
  kernels::Program::file(ctx, "layer_norm_rows.wgsl")
      .launch({y, xv, wv, bv, stats}, {rows, c, eps}, ctx->grid_for(uint64_t(rows)));
  return VarAccess::make(y, "layer_norm", {x, weight, bias}, [=](const Tensor& g) {
    Tensor gd = kernels::dense(g), dx = Tensor::empty(ctx, xv.shape());
    Tensor dw = Tensor::empty(ctx, wv.shape()), db = Tensor::empty(ctx, bv.shape());
    // A workgroup a row, then one per 32 columns.
    uint64_t groups = uint64_t(rows) + (uint64_t(c) + 31) / 32;
    kernels::Program::file(ctx, "layer_norm_backward.wgsl")
        .launch({dx, dw, db, xv, wv, gd, stats}, {rows, c}, ctx->grid_for(groups));
    return std::vector<Tensor>{dx, dw, db};
  });
}

}  // namespace surfgrad::nn
