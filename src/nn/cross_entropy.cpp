// nn::cross_entropy on f32 logits as two fused kernels (issue 36): the forward's row logsumexp,
// the picked logit and the mean in one dispatch (two past 4,096 rows: per-workgroup partials,
// then their sum), the backward's softmax minus the one-hot, scaled by the incoming gradient, in
// one. The composite (log_softmax, gather, mean: ~12 dispatches a step) stays for other dtypes.
#include "nn/cross_entropy.hpp"

#include "autograd/var_access.hpp"
#include "kernels/launch.hpp"
#include "tensor/lazy.hpp"

namespace surfgrad::nn {

Var fused_cross_entropy(const Var& logits, const Tensor& labels) {
  Tensor x = kernels::dense(logits.value());
  Tensor y = kernels::dense(labels);
  auto ctx = x.context();
  int64_t n = x.shape(0), c = x.shape(1);
  // Each thread takes up to 16 rows; one workgroup's partial is the loss itself.
  uint64_t groups = (uint64_t(n) + 256 * 16 - 1) / (256 * 16);
  Tensor partial = Tensor::empty(ctx, {int64_t(groups)});
  Tensor lse = Tensor::empty(ctx, {n});
  kernels::Program::file(ctx, "cross_entropy_forward.wgsl")
      .launch({partial, lse, x, y, ctx->fault_flag()}, {n, c, groups}, ctx->grid_for(groups));
  Tensor loss = groups == 1 ? partial.reshape({}) : partial.sum({}, false);
  return VarAccess::make(loss, "cross_entropy", {logits}, [x, y, lse, n, c](const Tensor& g) {
    auto ctx = x.context();
    if (lazy_enabled()) {
      // Recorded: the reader (the bias gradient's column sum, which stores it for the matmuls)
      // evaluates it in its own pass. cross_entropy_backward.wgsl's expression, so eager's bits;
      // the column index j is a 4·C-byte upload (no dispatch), the backward seed g inlined.
      std::vector<int32_t> cols(static_cast<size_t>(c));
      for (int64_t j = 0; j < c; ++j) cols[size_t(j)] = int32_t(j);
      Tensor j = Tensor::from_vector(ctx, cols, {1, c});
      uint32_t rows = uint32_t(n);
      return std::vector<Tensor>{
          lazy_record(ctx, "cross_entropy_backward", {n, c}, DType::f32,
                      {x, lse.reshape({n, 1}), y.reshape({n, 1}), j, g}, {"x", "l", "y", "j", "g"},
                      "select(exp(x - l), exp(x - l) - 1.0, y == j) * (g / f32(param_u32({{P}})))", "", &rows)};
    }
    Tensor d = Tensor::empty(ctx, x.shape());
    Tensor gd = kernels::dense(g.reshape({1}));
    kernels::Program::file(ctx, "cross_entropy_backward.wgsl")
        .launch({d, x, lse, y, gd}, {n, c}, kernels::groups_for(*ctx, uint64_t(n * c), 256));
    return std::vector<Tensor>{d};
  });
}

}  // namespace surfgrad::nn
