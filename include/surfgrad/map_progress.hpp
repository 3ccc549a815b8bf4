// Progress of a long map computation (t-SNE, UMAP).
#pragma once
#include <functional>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

// Called with iteration 0 once the kNN graph and affinities are ready, then every 50 iterations
// and after the last, with the current positions (f32 [N, 2] on the GPU: reading them is a
// sync). A callback may throw to stop the computation (map_points does, to cancel).
using MapProgress = std::function<void(int iteration, int total, const Tensor& embedding)>;

}  // namespace surfgrad
