// Small sets on GPUs: the exact kNN as distance tiles through the matmul, then a top-k selection
// per row (knn_exact_blocked), in place of the streaming kernel (knn_fused.hpp).
//
// Why: a process's first map on a machine compiles every kernel, and on NVIDIA the streaming
// kernel is by far the slowest to compile (knn_fused|64x64x8/4x4/...: 343 ms of pipeline
// creation on the H200, driver 580, against 7-92 ms for each of the map's other 40 kernels), so a
// cold MNIST 10k t-SNE waited ~0.24 s for it after its points had loaded, while the kNN itself
// runs in 14 ms. The blocked path's kernels (a tiled matmul, three elementwise ops, the
// selection) compile in tens of milliseconds each, in parallel on the prewarm's workers. Below
// kKnnSmallGpuPoints points its distance tiles stay small (<= 64 MiB a block).
#pragma once
#include <cstdint>

#include "surfgrad/knn.hpp"

namespace surfgrad {

// Whether knn_exact takes the blocked path for n points: GPUs natively (CPU adapters have their
// row kernel, knn_rows_cpu.hpp; the browser keeps the streaming kernel), n <= kKnnSmallGpuPoints.
// SURFGRAD_KNN_SMALL=0 keeps the streaming kernel; =1 takes the blocked path on any adapter and
// size (measurements, tests).
constexpr int64_t kKnnSmallGpuPoints = 16384;
bool knn_small_gpu_used(const gpu::Context& ctx, int64_t n);

// Rows of the distance tile one block computes: blocks of equal size whose [rows, n] f32 tile
// is at most 64 MiB (the three elementwise ops' results are alive at once).
int64_t knn_small_gpu_block_rows(int64_t n);

// Rows [row_begin, row_end) of the exact lists (x: f32 [N, D]), as knn_exact_blocked computes them.
KnnResult knn_small_gpu(const Tensor& x, int k, int64_t row_begin, int64_t row_end);

// Queues its kernels for the prewarm's workers (cold start): with n == 0 (the points not read
// yet) only the selection's for k, with n and d known also the product and the elementwise ops.
void prewarm_knn_small_gpu(const gpu::ContextPtr& ctx, int k, int64_t n = 0, int64_t d = 0);

}  // namespace surfgrad
