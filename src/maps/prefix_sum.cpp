#include "maps/prefix_sum.hpp"

#include <string>

namespace surfgrad {

namespace {
constexpr uint64_t kBlock = 1024;  // words a workgroup of prefix_sum_blocks.wgsl scans
}

ExclusiveScan::ExclusiveScan(gpu::ContextPtr ctx) : ctx_(std::move(ctx)) {}

void ExclusiveScan::run(const Tensor& words) {
  if (words.rank() != 1 || words.dtype() != DType::u32 || words.shape(0) < 1)
    throw Error(ErrorKind::Shape, "exclusive scan: words must be u32 [n] with n >= 1, got " + words.describe());
  if (!blocks_) {
    blocks_ = kernels::Program::file(ctx_, "prefix_sum_blocks.wgsl");
    add_ = kernels::Program::file(ctx_, "prefix_sum_add.wgsl");
  }
  level(words, uint64_t(words.shape(0)), 0);
}

void ExclusiveScan::level(const Tensor& words, uint64_t n, size_t depth) {
  const uint64_t blocks = (n + kBlock - 1) / kBlock;
  if (sums_.size() <= depth) sums_.resize(depth + 1);
  if (!sums_[depth].defined() || uint64_t(sums_[depth].shape(0)) < blocks)
    sums_[depth] = Tensor::empty(ctx_, {int64_t(blocks)}, DType::u32);
  const Tensor sums = sums_[depth];  // a handle: the recursion below may grow sums_
  blocks_->launch({words, sums}, {n}, kernels::groups_for(*ctx_, blocks, 1));
  if (blocks == 1) return;  // one block: its own sums are the answer
  level(sums, blocks, depth + 1);
  add_->launch({words, sums}, {n}, kernels::groups_for(*ctx_, blocks, 1));
}

}  // namespace surfgrad
