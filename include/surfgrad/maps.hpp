// Embedding maps (t-SNE, UMAP) and what they stand on: k-nearest neighbours on the GPU.
//
//   KnnResult nn = knn_exact(x, 15);      // x: f32 [N, D] on the GPU
//   // nn.indices: i32 [N, 15], nearest first (a point is never its own neighbour)
//   // nn.distances: f32 [N, 15], squared Euclidean distances
#pragma once
#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct KnnResult {
  Tensor indices;    // i32 [N, k]
  Tensor distances;  // f32 [N, k], squared Euclidean, ascending
};

// Exact k-nearest neighbours by brute force: squared distances |x|² + |y|² − 2·x·y for blocks of
// rows through the tuned matmul (the other operand a transposed view, no copy), then a top-k
// selection per row. block_rows = 0 picks a block that keeps the distance tile under 256 MiB.
KnnResult knn_exact(const Tensor& x, int k, int64_t block_rows = 0);

}  // namespace surfgrad
