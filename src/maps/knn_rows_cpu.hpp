// Exact kNN on CPU adapters: one thread a query row (knn_rows_cpu.wgsl), in place of the
// streaming kernel (knn_fused.hpp) whose queues and barriers cost more than they save there.
#pragma once
#include <cstdint>

#include "surfgrad/knn.hpp"

namespace surfgrad {

// Whether knn_exact takes the row kernel for D-dimensional points on this adapter: CPU adapters
// (natively; the browser keeps the streaming kernel), D ≤ kKnnRowsCpuMaxDims (the query row is
// unrolled into registers). SURFGRAD_KNN_CPU_ROWS=0 keeps the streaming kernel (measurements).
constexpr int64_t kKnnRowsCpuMaxDims = 256;
bool knn_rows_cpu_used(const gpu::Context& ctx, int64_t d);

// Queues the kernel knn_exact takes for k neighbours of D-dimensional points on this adapter for
// a worker thread to build (kernels::prewarm; cold start); false where it is not used or built.
bool prewarm_knn_rows_cpu(const gpu::ContextPtr& ctx, int k, int64_t d);

// Rows [row_begin, row_end) of the exact k-nearest-neighbour lists of x (f32 [N, D], dense from
// its buffer's start), given norms = |x_i|² (f32 [N]). Checked by the caller; D ≤ kKnnRowsCpuMaxDims.
// pairs_per_dispatch > 0 replaces the default 2^28 (for tests: several dispatches on small inputs).
// SURFGRAD_KNN_CPU_R=1..8 sets the query rows a thread (default 2; for measurements and tests).
KnnResult knn_rows_cpu(const Tensor& x, const Tensor& norms, int k, int64_t row_begin, int64_t row_end,
                       int64_t pairs_per_dispatch = 0);

}  // namespace surfgrad
