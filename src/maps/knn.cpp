// Exact kNN: distance tiles through matmul, then per-row top-k (topk_rows.wgsl).
#include <algorithm>

#include "surfgrad/maps.hpp"
#include "tensor/internal.hpp"

namespace surfgrad {

KnnResult knn_exact(const Tensor& x_in, int k, int64_t block_rows) {
  if (x_in.rank() != 2) throw Error(ErrorKind::Shape, "knn: points must be [N, D], got " + x_in.describe());
  if (x_in.dtype() != DType::f32) throw Error(ErrorKind::DType, "knn: points must be f32, got " + x_in.describe());
  int64_t n = x_in.shape(0);
  if (k < 1 || k > 128) throw Error(ErrorKind::Value, "knn: k must be in [1, 128], got " + std::to_string(k));
  if (k >= n)
    throw Error(ErrorKind::Value, "knn: k = " + std::to_string(k) + " needs more than " + std::to_string(k) +
                                      " points, got " + std::to_string(n));
  auto ctx = x_in.context();
  Tensor x = x_in.contiguous();
  Tensor norms = (x * x).sum({1});  // [N]
  if (block_rows <= 0) block_rows = std::max<int64_t>(1, std::min<int64_t>(n, (int64_t(64) << 20) / n));
  KnnResult out{Tensor::empty(ctx, {n, k}, DType::i32), Tensor::empty(ctx, {n, k}, DType::f32)};
  auto kernel = ctx->kernel("topk_rows|" + std::to_string(k), [&] {
    return kernel_source(*ctx, "topk_rows.wgsl", {{"K", std::to_string(k)}}, false, 3);
  });
  Tensor xt = x.t();  // [D, N], a view: the matmul reads it in place
  for (int64_t r0 = 0; r0 < n; r0 += block_rows) {
    int64_t r1 = std::min(n, r0 + block_rows);
    Tensor rows = x.slice(0, r0, r1);
    // |a|² + |b|² − 2 a·b for this block of rows against every point.
    Tensor d = add(sub(norms.slice(0, r0, r1).unsqueeze(1), rows.matmul(xt) * 2.0), norms.unsqueeze(0));
    std::vector<uint32_t> meta = {uint32_t(r1 - r0), uint32_t(n), uint32_t(r0), uint32_t(d.offset())};
    ctx->dispatch(kernel, {out.indices.storage()->buffer.get(), out.distances.storage()->buffer.get(), d.storage()->buffer.get()},
                  meta, ctx->grid_for(uint64_t((r1 - r0 + 63) / 64)));
  }
  return out;
}

}  // namespace surfgrad
