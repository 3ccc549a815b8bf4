// matmul: numpy semantics (1-D promotion, broadcast batch axes), transposed operands read in
// place through their strides, one tiled kernel (matmul_tiled.wgsl).
#include <algorithm>

#include "internal.hpp"

namespace surfgrad {

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  check_same_context(a_in, b_in, "matmul");
  if (a_in.dtype() != b_in.dtype())
    throw Error(ErrorKind::DType, "matmul: dtypes differ (" + a_in.describe() + " @ " + b_in.describe() + ")");
  if (!is_float(a_in.dtype()))
    throw Error(ErrorKind::DType, "matmul needs f32 or f16 operands, got " + a_in.describe() + "; cast first");
  if (a_in.rank() == 0 || b_in.rank() == 0)
    throw Error(ErrorKind::Shape, "matmul: operands must have rank ≥ 1, got " + a_in.describe() + " @ " + b_in.describe());
  Tensor a = a_in.rank() == 1 ? a_in.unsqueeze(0) : a_in;   // [K] → [1, K]
  Tensor b = b_in.rank() == 1 ? b_in.unsqueeze(1) : b_in;   // [K] → [K, 1]
  int64_t M = a.shape(-2), K = a.shape(-1), K2 = b.shape(-2), N = b.shape(-1);
  if (K != K2)
    throw Error(ErrorKind::Shape, "matmul: inner sizes differ: " + a_in.describe() + " @ " + b_in.describe() + " (" +
                                      std::to_string(K) + " vs " + std::to_string(K2) + ")");
  Shape a_batch(a.shape().begin(), a.shape().end() - 2), b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(a_batch, b_batch, "matmul (batch axes)");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  auto ctx = a.context();
  Tensor c = Tensor::empty(ctx, out_shape, a.dtype());
  int64_t batches = shape_numel(batch);
  if (c.numel() > 0) {
    if (K == 0) return Tensor::zeros(ctx, out_shape, a.dtype()).reshape(out_shape);
    // Batch strides of each operand under broadcasting (0 on broadcast axes).
    Shape a_full = batch, b_full = batch;
    a_full.insert(a_full.end(), {M, K});
    b_full.insert(b_full.end(), {K, N});
    Shape as = broadcast_strides(a, a_full), bs = broadcast_strides(b, b_full);
    int64_t tiles_m = (M + 15) / 16, tiles_n = (N + 15) / 16;
    std::vector<uint32_t> meta(38, 0);
    uint32_t* m = meta.data();
    m[0] = uint32_t(M), m[1] = uint32_t(N), m[2] = uint32_t(K);
    m[3] = uint32_t(tiles_m), m[4] = uint32_t(tiles_n), m[5] = uint32_t(batches);
    m[6] = uint32_t(a.strides()[a.rank() - 2]), m[7] = uint32_t(a.strides()[a.rank() - 1]);
    m[8] = uint32_t(b.strides()[b.rank() - 2]), m[9] = uint32_t(b.strides()[b.rank() - 1]);
    m[10] = uint32_t(a.offset()), m[11] = uint32_t(b.offset()), m[12] = uint32_t(c.offset());
    m[13] = uint32_t(batch.size());
    for (size_t d = 0; d < batch.size(); ++d) {
      m[14 + d] = uint32_t(batch[d]);
      m[22 + d] = uint32_t(as[d]);
      m[30 + d] = uint32_t(bs[d]);
    }
    auto kernel = ctx->kernel(kernel_source(*ctx, "matmul_tiled.wgsl", {{"T", wgsl_type(a.dtype())}},
                                            a.dtype() == DType::f16, 3));
    ctx->dispatch(kernel, {c.storage()->buffer.get(), a.storage()->buffer.get(), b.storage()->buffer.get()}, meta,
                  ctx->grid_for(uint64_t(batches) * uint64_t(tiles_m) * uint64_t(tiles_n)));
  }
  // Undo the 1-D promotions, as numpy does.
  Shape final_shape = batch;
  if (a_in.rank() > 1) final_shape.push_back(M);
  if (b_in.rank() > 1) final_shape.push_back(N);
  return c.reshape(final_shape);
}

Tensor Tensor::matmul(const Tensor& other) const { return surfgrad::matmul(*this, other); }

}  // namespace surfgrad
