// UMAP on the GPU: fuzzy memberships from the kNN graph, then epochs of attraction and negative sampling.
#pragma once
#include <cstdint>

#include "surfgrad/knn.hpp"
#include "surfgrad/map_progress.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct UmapOptions {
  int n_neighbors = 15;
  double min_dist = 0.1;
  int epochs = 0;  // 0: 500 up to 10,000 points, else 200 (umap-learn's defaults)
  double learning_rate = 1.0;
  double negative_sample_rate = 5;
  uint64_t seed = 1;
};
// UMAP of f32 [N, D] points to f32 [N, 2]: fuzzy simplicial set from the kNN graph (exact up to
// 20,000 points, neighbour descent beyond)
// (bisection for σ, fuzzy union), PCA initialisation, then per-epoch updates of all points with
// umap-learn's gradients and negative sampling (deterministic: no edge-by-edge races).
Tensor umap(const Tensor& x, const UmapOptions& options = {}, const MapProgress& progress = {},
            const KnnResult* neighbours = nullptr);  // n_neighbors neighbours, where given

}  // namespace surfgrad
