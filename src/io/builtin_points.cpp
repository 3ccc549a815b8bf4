// The built-in data set of `surfgrad map`: 10 Gaussian clusters in 768 dimensions, generated on
// the GPU by counter-based random numbers, in fixed row blocks so that the points are the same
// whatever the adapter's limits.
#include <algorithm>
#include <cstdint>

#include "surfgrad/io.hpp"

namespace surfgrad {

PointBlocks builtin_point_blocks(const gpu::ContextPtr& ctx, int64_t n, Tensor& labels) {
  if (n < 1 || n > int64_t(INT32_MAX))
    throw Error(ErrorKind::Value, "built-in data set: " + std::to_string(n) + " points asked; give 1 to 2147483647");
  // Eagerly, as the map path runs: the kernels are the ones the prewarm lists name (the CLI's,
  // Python's and the browser's built-in points alike; a lazy add would be a fused kernel).
  EagerScope eager;
  std::vector<int32_t> lab(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lab[size_t(i)] = int32_t(i % 10);
  labels = Tensor::from_vector(ctx, lab, {n});
  Tensor centres = Tensor::normal(ctx, {10, 768}, 7, 0, 0.35);
  const int64_t rows = 32768;  // 96 MiB: inside every adapter's binding limit
  PointBlocks out;
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    int64_t r1 = std::min(n, r0 + rows);
    Tensor noise = Tensor::normal(ctx, {r1 - r0, 768}, 8 + uint64_t(r0 / rows));
    out.blocks.push_back(add(index_select(centres, 0, labels.slice(0, r0, r1)), noise));
  }
  return out;
}

Tensor builtin_points(const gpu::ContextPtr& ctx, int64_t n, Tensor& labels) {
  return builtin_point_blocks(ctx, n, labels).single();
}

}  // namespace surfgrad
