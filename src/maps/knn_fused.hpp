// The streaming exact-kNN kernel behind knn_exact (knn_fused.cpp, knn_fused.wgsl).
#pragma once
#include <cstdint>

#include "surfgrad/knn.hpp"

namespace surfgrad {

// Rows [row_begin, row_end) of the exact k-nearest-neighbour lists of x (f32 [N, D], dense from
// its buffer's start), given norms = |x_i|² (f32 [N]). Checked by the caller.
KnnResult knn_fused_rows(const Tensor& x, const Tensor& norms, int k, int64_t row_begin, int64_t row_end);

}  // namespace surfgrad
