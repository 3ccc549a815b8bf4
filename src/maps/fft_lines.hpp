// Batched 1-D FFTs of complex f32 lines — the rows or columns of 2-D arrays in one buffer — one
// workgroup per line, for lengths 2^a and 3·2^a. The kernel is generated per length: a Stockham
// plan of radix-16/8/4/3/2 passes (no bit reversal), each pass's small DFT written out in
// registers with constant twiddles, so a 1024-point line takes three passes through workgroup
// memory where radix-2 stages took ten.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/launch.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

class FftLines {
 public:
  // Where the lines are: element e of line l of array a sits at
  // first + a·array_stride + l·line_stride + e·elem_stride (in complex elements).
  struct Layout {
    uint32_t lines, arrays, first, array_stride, line_stride, elem_stride;
  };

  FftLines(gpu::ContextPtr ctx, uint32_t length);
  static bool supported_length(uint32_t length);  // 2^a or 3·2^a, from 4 up
  // The radices of the plan, first pass first (their product is the length).
  static std::vector<uint32_t> plan(uint32_t length);
  // The longest line the adapter's workgroup memory holds (one line of complex f32).
  static uint32_t max_length(const gpu::Context& ctx);
  // Queues the kernel FftLines(ctx, length) builds for a worker thread (kernels::prewarm; cold
  // start). Whether a build was queued.
  static bool prewarm(const gpu::ContextPtr& ctx, uint32_t length);

  // Forward: y_k = Σ_n x_n·exp(−2πi·nk/M); inverse: the conjugate sign, unscaled. In place.
  // `data`: f32 complex values (pairs), dense.
  void run(const Tensor& data, const Layout& at, bool inverse);
  // The same with the workgroup count read from `counts` (u32) at word `word` (0 skips the pass).
  void run_indirect(const Tensor& data, const Layout& at, bool inverse, const Tensor& counts, uint64_t word);

 private:
  static kernels::Values values(uint32_t length);  // fft_lines.wgsl's, for the constructor and prewarm
  kernels::Params meta(const Layout& at, bool inverse) const;
  gpu::ContextPtr ctx_;
  uint32_t m_;
  Tensor twiddle_;  // [M] exp(−2πit/M), rounded from double
  std::optional<kernels::Program> kernel_;
};

}  // namespace surfgrad
