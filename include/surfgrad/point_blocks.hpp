// A set of points larger than one GPU binding, as row blocks.
#pragma once
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

// A set of points as row blocks of f32 [n_b, D] tensors. A tensor must fit one GPU binding
// (2 GiB on most GPUs, 128 MiB on lavapipe); a million 768-D points are 3 GiB.
struct PointBlocks {
  std::vector<Tensor> blocks;
  int64_t rows() const;
  int64_t dims() const;
  // All rows as one tensor; throws (naming the size, the limit and --pca) where they do not fit.
  Tensor single() const;
};

}  // namespace surfgrad
