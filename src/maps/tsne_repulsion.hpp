// The two ways t-SNE's repulsion is computed (exact pairs, FFT-accelerated interpolation), with
// the FFT path's buffers kept from one iteration to the next.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "kernels/launch.hpp"
#include "maps/fft_lines.hpp"
#include "surfgrad/maps.hpp"

namespace surfgrad {

class TsneRepulsion {
 public:
  explicit TsneRepulsion(gpu::ContextPtr ctx);
  // Both record dispatches writing out[i] = (Σ_j q_ij²·(y_i − y_j), Σ_{j≠i} q_ij, 0) for f32 y [N, 2].
  void exact(const Tensor& y, const Tensor& out);
  // The exact kernel's threads a workgroup (8 points each) and its template values, for exact()
  // and the prewarm lists: 8 on CPU adapters, 32 on GPUs; CPU adapters also divide once for
  // two pairs (tsne_repulsion.wgsl says why).
  static int exact_threads(const gpu::Context& ctx);
  static kernels::Values exact_values(const gpu::Context& ctx);
  // The template values of the FFT's spread and charges kernels: 32-bit grid sums on CPU
  // adapters (one atomic a node), 64-bit on GPUs (tsne_fft_spread.wgsl says why).
  static kernels::Values charge_values(const gpu::Context& ctx);
  void interpolated(const Tensor& y, const Tensor& out, int grid_nodes);

  // The largest grid (nodes per side) this adapter's workgroup memory allows for the FFT.
  static int max_grid_nodes(const gpu::Context& ctx);
  // Nodes per side (2^a or 3·2^a, at least 32) so that neighbouring nodes are at most `spacing`
  // apart over an embedding `extent` wide, capped at max_nodes.
  static int grid_nodes_for(double extent, double spacing, int max_nodes);
  // The larger side of the bounding box of positions [N, 2] (reads back to the host).
  static double extent(const Tensor& y);
  // The same through bounds() (one dispatch on CPU adapters).
  double box_extent(const Tensor& y);
  // Z, the sum of out's third column ([1]): a column sum on GPUs, one dispatch on CPU adapters.
  Tensor total_q(const Tensor& out);

 private:
  void resize(int g);
  // The per-axis minimum and maximum of positions [N, 2] as two [2] tensors: y.min/y.max on
  // GPUs, one single-workgroup dispatch (tsne_bbox.wgsl) on CPU adapters.
  void bounds(const Tensor& y, Tensor& lo, Tensor& hi);
  // One pass of 1-D FFTs over `lines` rows (or columns) of `arrays` M×M arrays from `array` on.
  void fft_pass(uint32_t array, uint32_t arrays, uint32_t lines, bool rows, bool inverse, bool indirect);
  gpu::ContextPtr ctx_;
  int g_ = 0;
  Tensor acc_, grid_, frame_, args_;
  // Made on first use: a map uses one method (the other's pipelines would be compiled for
  // nothing, in a cold start too: issue 35).
  std::optional<kernels::Program> exact_, frame_k_, kernels_k_, spread_, charges_, multiply_, mirror_, interpolate_;
  std::unique_ptr<FftLines> fft_;
  std::optional<kernels::Program> bbox_, z_;  // made on first use, on CPU adapters only
};

}  // namespace surfgrad
