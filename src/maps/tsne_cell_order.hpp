// The points of a t-SNE map in the order of their cells on the FFT repulsion's grid, for the
// spread kernel that adds a cell's charges together before its atomics
// (tsne_fft_spread_sorted.wgsl). A counting sort on the GPU, no readback: each point's cell and
// rank (tsne_fft_bin.wgsl), the cells' first slots (ExclusiveScan), the points scattered
// (tsne_fft_order.wgsl): a clear and 3 + 2·(levels − 1) dispatches (one scan level for G² ≤ 1,024 cells,
// two up to 2^20); N + 2N + G² words of buffers.
#pragma once
#include <optional>

#include "kernels/launch.hpp"
#include "maps/prefix_sum.hpp"

namespace surfgrad {

class TsneCellOrder {
 public:
  explicit TsneCellOrder(gpu::ContextPtr ctx);
  // Records the sort of positions y [N, 2] by cell of the grid of g nodes a side under `frame`
  // (tsne_fft_frame.wgsl's layout, as the spread reads it); the result, a permutation of 0…N−1,
  // is order() once the dispatches have run.
  void update(const Tensor& y, const Tensor& frame, int g);
  const Tensor& order() const { return order_; }

 private:
  gpu::ContextPtr ctx_;
  ExclusiveScan scan_;
  std::optional<kernels::Program> bin_, scatter_;
  Tensor order_, cell_rank_;
};

}  // namespace surfgrad
