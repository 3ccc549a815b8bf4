// A set of points larger than one GPU binding, as row blocks.
#pragma once
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

// A set of points as row blocks of f32 [n_b, D] tensors. A tensor must fit one GPU binding
// (2 GiB on most GPUs, 128 MiB on lavapipe); a million 768-D points are 3 GiB.
struct PointBlocks {
  std::vector<Tensor> blocks;
  // n × d row-major floats from the host, in blocks of at most a quarter of the adapter's
  // binding limit (what the Python and browser bindings hand to map_points). Not synced.
  static PointBlocks from_host(const gpu::ContextPtr& ctx, const float* rows, int64_t n, int64_t d);
  int64_t rows() const;
  int64_t dims() const;
  // All rows as one tensor; throws (naming the size, the limit and --pca) where they do not fit.
  Tensor single() const;
};

}  // namespace surfgrad
