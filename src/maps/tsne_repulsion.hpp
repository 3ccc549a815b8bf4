// The two ways t-SNE's repulsion is computed (exact pairs, FFT-accelerated interpolation), with
// the FFT path's buffers kept from one iteration to the next.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "kernels/launch.hpp"
#include "maps/fft_lines.hpp"
#include "maps/tsne_cell_order.hpp"
#include "surfgrad/maps.hpp"

namespace surfgrad {

class TsneRepulsion {
 public:
  // How the FFT's spread visits the points. Plain: in index order, each point adding its 16
  // stencil contributions with its own atomics (tsne_fft_spread.wgsl). Sorted: cell by cell
  // (TsneCellOrder, refreshed every order_every() calls), the contributions of a cell's points
  // in one subgroup added together before the atomics (tsne_fft_spread_sorted.wgsl; 64-bit sums,
  // the same grid to the bit). Auto: sorted on GPUs with subgroups, plain on CPU adapters (whose
  // atomics are not contended: lavapipe runs them one lane at a time anyway). The environment's
  // SURFGRAD_TSNE_SPREAD=plain|sorted overrides Auto (benchmarks; docs/environment.md).
  enum class Spread { Auto, Plain, Sorted };
  explicit TsneRepulsion(gpu::ContextPtr ctx, Spread spread = Spread::Auto);
  // What Auto means on this adapter (with the environment's override).
  static bool sorted_spread(const gpu::Context& ctx, Spread spread = Spread::Auto);
  // Calls of interpolated() between two sorts of the points: SURFGRAD_TSNE_ORDER_EVERY, else the
  // default. A stale order costs only speed (shorter runs of one cell), never bits.
  static int order_every();
  // Both record dispatches writing out[i] = (Σ_j q_ij²·(y_i − y_j), Σ_{j≠i} q_ij, 0) for f32 y [N, 2].
  void exact(const Tensor& y, const Tensor& out);
  // The exact kernel's threads a workgroup (8 points each) and its template values, for exact()
  // and the prewarm lists: 8 on CPU adapters, 32 on GPUs; CPU adapters also divide once for
  // two pairs (tsne_repulsion.wgsl says why).
  static int exact_threads(const gpu::Context& ctx);
  static kernels::Values exact_values(const gpu::Context& ctx);
  // The template values of the FFT's spread and charges kernels: 32-bit grid sums on CPU
  // adapters (one atomic a node), 64-bit on GPUs (tsne_fft_spread.wgsl says why).
  static kernels::Values charge_values(const gpu::Context& ctx, Spread spread = Spread::Auto);
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
  // box_extent's readback queued now, its value collected later (no sync: tsne.cpp).
  struct ExtentRead {
    gpu::PendingDownload lo, hi;
    bool pending() const { return lo.pending(); }
    double wait();
  };
  ExtentRead box_extent_later(const Tensor& y);
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
  Spread spread_mode_ = Spread::Auto;
  bool sorted_ = false;  // what spread_mode_ means here, decided at the FFT's first call
  int order_every_ = 1, since_order_ = 0;
  std::optional<TsneCellOrder> order_;
  int g_ = 0;
  Tensor acc_, grid_, frame_, args_;
  // Made on first use: a map uses one method (the other's pipelines would be compiled for
  // nothing, in a cold start too: issue 35).
  std::optional<kernels::Program> exact_, frame_k_, kernels_k_, spread_, charges_, multiply_, mirror_, interpolate_;
  std::unique_ptr<FftLines> fft_;
  std::optional<kernels::Program> bbox_, z_;  // made on first use, on CPU adapters only
};

}  // namespace surfgrad
