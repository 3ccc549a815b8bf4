#include "maps/tsne_cell_order.hpp"

namespace surfgrad {

TsneCellOrder::TsneCellOrder(gpu::ContextPtr ctx) : ctx_(ctx), scan_(std::move(ctx)) {}

void TsneCellOrder::update(const Tensor& y, const Tensor& frame, int g) {
  if (y.rank() != 2 || y.shape(1) != 2 || y.dtype() != DType::f32)
    throw Error(ErrorKind::Shape, "tsne cell order: positions must be f32 [N, 2], got " + y.describe());
  if (g < 4) throw Error(ErrorKind::Value, "tsne cell order: a grid of " + std::to_string(g) + " nodes a side");
  const int64_t n = y.shape(0);
  if (!bin_) {
    bin_ = kernels::Program::file(ctx_, "tsne_fft_bin.wgsl");
    scatter_ = kernels::Program::file(ctx_, "tsne_fft_order.wgsl");
  }
  if (!order_.defined() || order_.shape(0) != n) {
    order_ = Tensor::empty(ctx_, {n}, DType::u32);
    cell_rank_ = Tensor::empty(ctx_, {n, 2}, DType::u32);
  }
  Tensor count = Tensor::zeros(ctx_, {int64_t(g) * g}, DType::u32);
  const auto groups = kernels::groups_for(*ctx_, uint64_t(n), 256);
  bin_->launch({count, cell_rank_, y, frame}, {n, g}, groups);
  scan_.run(count);
  scatter_->launch({order_, cell_rank_, count}, {n}, groups);
}

}  // namespace surfgrad
