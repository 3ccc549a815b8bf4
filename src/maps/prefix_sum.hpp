// Exclusive prefix sums of a u32 tensor on the GPU, in place (prefix_sum_blocks.wgsl,
// prefix_sum_add.wgsl): the offsets of a counting sort (tsne_cell_order.hpp) without a readback.
// The programs and the block totals' scratch are kept from one call to the next.
#pragma once
#include <optional>
#include <vector>

#include "kernels/launch.hpp"

namespace surfgrad {

class ExclusiveScan {
 public:
  explicit ExclusiveScan(gpu::ContextPtr ctx);
  // words: dense u32 [n], n ≥ 1; becomes (0, w0, w0 + w1, …), modulo 2^32. Records dispatches only.
  void run(const Tensor& words);

 private:
  void level(const Tensor& words, uint64_t n, size_t depth);
  gpu::ContextPtr ctx_;
  std::optional<kernels::Program> blocks_, add_;
  std::vector<Tensor> sums_;  // a level's block totals, by depth
};

}  // namespace surfgrad
