// Small sets on GPUs: the blocked exact kNN (knn_small_gpu.hpp says why).
#include "maps/knn_small_gpu.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernels/launch.hpp"
#include "tensor/op_prewarm.hpp"

namespace surfgrad {

namespace {
int forced() {  // SURFGRAD_KNN_SMALL: 0 off, 1 on, -1 unset
  const char* v = std::getenv("SURFGRAD_KNN_SMALL");
  if (!v || !*v) return -1;
  return std::string(v) == "0" ? 0 : 1;
}
}  // namespace

bool knn_small_gpu_used(const gpu::Context& ctx, int64_t n) {
  if (int f = forced(); f >= 0) return f == 1;
#ifdef __wasm__
  (void)ctx, (void)n;
  return false;
#else
  return !ctx.info().is_cpu && n <= kKnnSmallGpuPoints;
#endif
}

int64_t knn_small_gpu_block_rows(int64_t n) {
  const int64_t tile_elements = int64_t(16) << 20;  // 64 MiB of f32
  const int64_t blocks = std::max<int64_t>(1, (n * n + tile_elements - 1) / tile_elements);
  return std::max<int64_t>(1, (n + blocks - 1) / blocks);
}

KnnResult knn_small_gpu(const Tensor& x, int k, int64_t row_begin, int64_t row_end) {
  return knn_exact_blocked(x, k, row_begin, row_end, knn_small_gpu_block_rows(x.shape(0)));
}

void prewarm_knn_small_gpu(const gpu::ContextPtr& ctx, int k, int64_t n, int64_t d) {
  if (k < 1 || k > 128 || !tensor_prewarm_on(*ctx) || (n > 0 && !knn_small_gpu_used(*ctx, n))) return;
  // The selection (knn_exact_blocked's topk_rows.wgsl, by k), known before the points are read.
  kernels::prewarm(ctx, "topk_rows.wgsl", {{"K", std::to_string(k)}});
  if (n <= 0) return;
  // knn_exact_blocked with the real sizes: x·xᵀ for a block of rows (xᵀ a view), the distances
  // |a|² − 2a·b + |b|² (a [B, 1] column and a [1, N] row broadcast over the [B, N] tile).
  const int64_t block = std::min(n, knn_small_gpu_block_rows(n));
  prewarm_matmul(ctx, DType::f32, block, n, d, false, true);
  prewarm_ops(ctx, [&] {
    Tensor tile = layout_sample(ctx, dense_layout(block, n));
    tile * 2.0;
    Tensor strided = layout_sample(ctx, OpLayout::Strided);  // [2, 4]
    Tensor dist = sub(strided.slice(1, 0, 1), strided);      // a column broadcast over the rows
    add(dist, strided.slice(0, 0, 1));                       // a row broadcast over the columns
  });
}

}  // namespace surfgrad
