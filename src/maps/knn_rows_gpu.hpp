// Exact kNN for small sets on GPUs (knn_rows_gpu.wgsl): a workgroup a few query rows, the points
// strided over its threads, selection by a shared bar. Its code is short, so a cold driver
// compiles it fast: the streaming kernel (knn_fused.hpp) is faster on large sets but takes
// 240-400 ms of NVIDIA's compiler, most of what a cold MNIST 10k map waited for (issue 35).
#pragma once
#include <cstdint>
#include <string>

#include "surfgrad/knn.hpp"

namespace surfgrad {

// R query rows a workgroup of `threads` (a tile of points), `cap` (key, id) slots a row in
// workgroup memory: the K best so far and the candidates appended since (K ≤ cap − threads).
struct KnnRowsGpuShape {
  int rows = 8, threads = 256, cap = 512;
  uint64_t workgroup_bytes() const { return uint64_t(rows) * uint64_t(cap) * 8 + 16ull * uint64_t(rows) + 4; }
  std::string describe() const;  // "r8t256c512"
};
// The shape for this adapter's workgroup memory: 256 threads and 512 slots, as many rows (up to
// 8) as fit; below 4 rows (WebGPU's default 16 KiB) 128 threads and 256 slots (7 rows).
// SURFGRAD_KNN_GPU_SHAPE=rRtTcC replaces it (measurements; checked against the limits and k at use).
KnnRowsGpuShape knn_rows_gpu_shape(const gpu::Context& ctx);

// Whether knn_exact takes this kernel for N points in D dimensions: on GPUs (not CPU adapters,
// which take knn_rows_cpu) up to kKnnRowsGpuMaxPoints points and kKnnRowsGpuMaxWork N²·D.
// SURFGRAD_KNN_GPU_ROWS=1 takes it for every set on every adapter (tests, measurements), =0 never.
// On the H100 (2026-11-28) it runs MNIST 10k (10,000 x 784, k = 90) in 26 ms against the streaming
// kernel's 14 and compiles cold in 124-190 ms against 376-646: past ~13,000 points in 784-D a warm
// run would lose more than ~25 ms (the ratio grows with N²·D), which every run pays, to save a
// compile that only a first run pays.
constexpr int64_t kKnnRowsGpuMaxPoints = 32768;
constexpr double kKnnRowsGpuMaxWork = 137438953472.0;  // 2^37: 13,200 points in 784-D
bool knn_rows_gpu_used(const gpu::Context& ctx, int64_t n, int64_t d);

// Queues the kernel for D-dimensional points (D ≤ 0: not known yet, a multiple of 4 assumed) for
// a worker thread to build (kernels::prewarm; cold start). Its key depends on neither N nor k.
bool prewarm_knn_rows_gpu(const gpu::ContextPtr& ctx, int64_t d);

// Rows [row_begin, row_end) of the exact k-nearest-neighbour lists of x (f32 [N, D], dense from
// its buffer's start), given norms = |x_i|² (f32 [N]). Checked by the caller (knn_exact_rows).
// pairs_per_dispatch > 0 replaces the default (2^36 pairs a dispatch on GPUs, 2^28 on CPU
// adapters); `shape` replaces the adapter's (tests).
KnnResult knn_rows_gpu(const Tensor& x, const Tensor& norms, int k, int64_t row_begin, int64_t row_end,
                       int64_t pairs_per_dispatch = 0, const KnnRowsGpuShape* shape = nullptr);

}  // namespace surfgrad
