// PointBlocks: a set of points as row blocks, and their joining into one tensor where it fits.
#include "surfgrad/point_blocks.hpp"

#include <algorithm>
#include <string>

#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"

namespace surfgrad {

PointBlocks PointBlocks::from_host(const gpu::ContextPtr& ctx, const float* rows, int64_t n, int64_t d) {
  if (n <= 0 || d <= 0)
    throw Error(ErrorKind::Shape,
                "points must be n × d with n, d > 0, got " + std::to_string(n) + " × " + std::to_string(d));
  PointBlocks x;
  uint64_t block_bytes = ctx->limits().max_storage_buffer_binding_size / 4;
  int64_t per_block = std::max<int64_t>(1, int64_t(block_bytes / (uint64_t(d) * 4)));
  for (int64_t r0 = 0; r0 < n; r0 += per_block)
    x.blocks.push_back(Tensor::from_host(ctx, rows + r0 * d, {std::min(n, r0 + per_block) - r0, d}, DType::f32));
  return x;
}

int64_t PointBlocks::rows() const {
  int64_t n = 0;
  for (const Tensor& b : blocks) n += b.shape(0);
  return n;
}

int64_t PointBlocks::dims() const { return blocks.empty() ? 0 : blocks[0].shape(1); }

Tensor PointBlocks::single() const {
  if (blocks.size() == 1) return blocks[0];
  if (blocks.empty()) throw Error(ErrorKind::Value, "no points");
  const auto& ctx = blocks[0].context();
  uint64_t bytes = uint64_t(rows()) * uint64_t(dims()) * 4, limit = ctx->limits().max_storage_buffer_binding_size;
  if (bytes > limit)
    throw Error(ErrorKind::LimitExceeded, std::to_string(rows()) + " × " + std::to_string(dims()) + " points take " +
                                              std::to_string(bytes >> 20) + " MiB, over this adapter's " +
                                              std::to_string(limit >> 20) +
                                              " MiB per binding; reduce the dimensions first (surfgrad map --pca 50)");
  return concat(blocks, 0);
}

}  // namespace surfgrad
