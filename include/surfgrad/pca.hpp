// Randomized PCA on the GPU, of one tensor or of row blocks.
#pragma once
#include <cstdint>
#include <vector>

#include "surfgrad/point_blocks.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct PcaResult {
  Tensor scores;                           // [N, components]: centred points on the components
  Tensor mean;                             // [D]
  std::vector<double> explained_variance;  // per component, descending
};
// Randomized PCA: a Gaussian sketch, `power_iterations` subspace iterations, then the exact
// decomposition of the small projected problem. Deterministic for a seed on a device.
PcaResult pca(const Tensor& x, int components, uint64_t seed = 0, int power_iterations = 2);
// The same over row blocks (each pass over the data goes block by block): the scores are one
// tensor [N, components].
PcaResult pca(const PointBlocks& x, int components, uint64_t seed = 0, int power_iterations = 2);

}  // namespace surfgrad
