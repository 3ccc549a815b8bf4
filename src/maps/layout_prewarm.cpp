// The layouts' kernels, prewarmed (layout_prewarm.hpp). Each entry must ask for the kernel
// exactly as its user does (file, values, options): a different key builds a pipeline nobody
// uses. tests/kernel_prewarm_test.cpp checks that a small map builds no more pipelines with
// prewarming than without.
#include "maps/layout_prewarm.hpp"

#include <string>

#include "kernels/launch.hpp"
#include "maps/fft_grid_budget.hpp"
#include "maps/fft_lines.hpp"
#include "maps/knn_fused.hpp"
#include "maps/knn_order.hpp"
#include "maps/knn_prune.hpp"
#include "maps/knn_rows_cpu.hpp"
#include "maps/knn_rows_gpu.hpp"
#include "maps/knn_subgroup_matrix.hpp"
#include "maps/tsne_repulsion.hpp"
#include "maps/tsne_symmetric.hpp"
#include "surfgrad/map_options.hpp"
#include "surfgrad/map_pipeline.hpp"
#include "tensor/op_prewarm.hpp"

namespace surfgrad {

int prewarm_layout_kernels(const gpu::ContextPtr& ctx, const MapOptions& options, int64_t n, int k) {
  const std::string ks = std::to_string(k);
  int queued = 0;
  auto file = [&](const char* name, const kernels::Values& values = {}) {
    queued += kernels::prewarm(ctx, name, values) ? 1 : 0;
  };
  // t-SNE on CPU adapters: the symmetric graph is built on the host, and one kernel attracts
  // and updates (tsne_symmetric.hpp).
  const bool fused = options.method == MapMethod::Tsne && tsne_fused_step(*ctx);
  // graph_gpu.cpp: the kNN graph's incoming edges (both layouts; its three steps are one kernel).
  if (!fused) file("incoming_edges.wgsl");
  if (options.method == MapMethod::Tsne) {
    // tsne.cpp: affinities, then the optimisation's update and attraction.
    file("tsne_affinity.wgsl", {{"K", ks}});
    file("in_edge_weights.wgsl");  // (asked for on the fused path too, though not launched there)
    if (fused) {
      file("tsne_step_cpu.wgsl");
    } else {
      file("tsne_attraction.wgsl", {{"K", ks}, {"LANES", std::to_string(tsne_attraction_lanes(*ctx))}});
      file("tsne_update.wgsl");
    }
    // tsne_repulsion.cpp: the exact kernel, or the FFT's (each made at its method's first call);
    // CPU adapters also the Z kernel and, with FFT repulsion, the bounds kernel (GPUs reduce with
    // tensor ops instead: prewarm_map_tensor_ops).
    const bool fft = tsne_uses_fft(options.tsne.repulsion, n);
    if (!fft) file("tsne_repulsion.wgsl", TsneRepulsion::exact_values(*ctx));
    for (const char* f : {"tsne_fft_frame.wgsl", "tsne_fft_kernels.wgsl", "tsne_fft_multiply.wgsl",
                          "tsne_fft_mirror.wgsl", "tsne_fft_interpolate.wgsl"})
      if (fft) file(f);
    // The spread: cell by cell on GPUs with subgroups (the sort's four kernels and the sorted
    // spread), in index order elsewhere (TsneRepulsion::Spread).
    const bool sorted = fft && TsneRepulsion::sorted_spread(*ctx);
    if (sorted) {
      for (const char* f :
           {"tsne_fft_bin.wgsl", "prefix_sum_blocks.wgsl", "prefix_sum_add.wgsl", "tsne_fft_order.wgsl"})
        file(f);
      queued += kernels::prewarm(ctx, "tsne_fft_spread_sorted.wgsl", {}, {.subgroups = true}) ? 1 : 0;
    } else if (fft) {
      file("tsne_fft_spread.wgsl", TsneRepulsion::charge_values(*ctx));
    }
    if (fft) file("tsne_fft_charges.wgsl", TsneRepulsion::charge_values(*ctx));
    if (ctx->info().is_cpu) file("tsne_z.wgsl");
    if (ctx->info().is_cpu && fft) file("tsne_bbox.wgsl");
    // fft_lines.cpp: one line-FFT kernel per grid size (M = 2G), built as the map grows into
    // it mid-optimisation (six of them took 37-80 ms each on the H200 cold). The sizes a map of
    // 10k-1M points passes through, up to the adapter's largest grid.
    if (fft) {
      const int max_nodes = TsneRepulsion::max_grid_nodes(*ctx);
      // GPUs also the next two (MNIST 10k grows to 384 late in its optimisation: a 76 ms build at
      // first use on the H200 cold); CPU adapters compile them slowly (LLVM: 1-7 s) on cores the
      // map needs, and only a map that reaches them should pay that.
      for (int g : {32, 48, 64, 96, 128, 192, 256, 384, 512})
        if (g <= max_nodes && (g <= 256 || !ctx->info().is_cpu))
          queued += FftLines::prewarm(ctx, uint32_t(2 * g)) ? 1 : 0;
    }
  } else if (options.method == MapMethod::Umap) {
    // umap.cpp
    file("umap_union.wgsl", {{"K", ks}});
    file("umap_membership.wgsl", {{"K", ks}});
    file("umap_step.wgsl", {{"K", ks}});
  }
  return queued;
}

void prewarm_map_tensor_ops(const gpu::ContextPtr& ctx, const MapOptions& options, int64_t n, int64_t d) {
  // Each block mirrors the code named (what it asks for, on small tensors of the same layout):
  // a change there that is not mirrored here shows as kernels built at first use
  // (tests/first_map_prewarm_test.cpp, SURFGRAD_PROFILE=1).
  // With the points' size known (map_points) these are needed next: queued ahead of the kNN's and
  // the layout's kernels a front end may have queued before it read the points.
  kernels::PrewarmOnly ahead(n > 0);
  // input_scale.cpp, normalise_input_scale: one kernel over the blocks, its three words zeroed.
  kernels::prewarm(ctx, "input_stats.wgsl", {});
  prewarm_ops(ctx, [&] { Tensor::zeros(ctx, {3}, DType::u32); });
  if (n <= 0) return;
  const bool cpu = ctx->info().is_cpu;
  const int pca = map_pca_components(options, n, d, cpu);
  if (pca > 0) prewarm_pca(ctx, n, d, pca);
  const int64_t features = pca > 0 ? pca : d;
  // knn.cpp: the points' squared norms (a row sum of x·x) before the exact kNN.
  prewarm_ops(ctx, [&] {
    Tensor x = layout_sample(ctx, dense_layout(n, features));
    x* x;
    Tensor::empty(ctx, {2, features}).sum({1});
  });
  // knn.cpp: the exact kNN's kernel, the one knn_exact takes for these points: small sets' on GPUs
  // (knn_rows_gpu.hpp) or the streaming kernel (both queued by `surfgrad map` before it knew N),
  // CPU adapters' by k and D (knn_rows_cpu.hpp).
  // Not where the kNN on subgroup matrices is chosen: that is under Dawn, where nothing is built
  // ahead (kernels::prewarm), so its kernels are built at first use.
  const int k_map = int(map_neighbours(options, n));
  const bool ordered = n > 0 && knn_order_applies(*ctx, n, features);  // (knn_exact_rows: the points sorted by cell)
  if (knn_is_exact(*ctx, n, features, options.knn, k_map) &&
      !knn_subgroup_matrix_chosen(*ctx, n, features, k_map, ordered)) {
    prewarm_knn_fused(ctx, n, features, k_map, ordered && knn_prune_enabled(*ctx));
    if (!knn_rows_gpu_used(*ctx, n, features)) prewarm_knn_rows_cpu(ctx, k_map, features);
  }
  // Reductions over the points (R = n rows; past 600,000 rows the same kernels as at 600,001).
  const int64_t rows = std::min<int64_t>(n, 600001);
  // map_pipeline.cpp: the layout's finiteness check, a sum of the map's n × 2 coordinates.
  if (options.check_finite) prewarm_ops(ctx, [&] { Tensor::empty(ctx, {std::min<int64_t>(2 * n, 600001)}).sum(); });
  if (options.method == MapMethod::Tsne) {
    // tsne.cpp: the start (PCA's first two components scaled; a column's copy read back), the
    // affinities' weights, the optimisation's zeros and ones (fills), the graph's counters.
    if (!options.init.defined() && options.tsne.pca_init && features >= 2) prewarm_pca(ctx, n, features, 2);
    const int64_t k = map_neighbours(options, n);
    const bool fused = tsne_fused_step(*ctx);  // (one list block below 10M points)
    prewarm_ops(ctx, [&] {
      layout_sample(ctx, dense_layout(n, 2)) * 2.0;
      layout_sample(ctx, OpLayout::Strided).slice(1, 0, 1).contiguous();
      layout_sample(ctx, dense_layout(n, k)) / 2.0;
      if (!fused) Tensor::zeros(ctx, {2}, DType::i32);                                    // graph_gpu.cpp's counters
      if (tsne_uses_fft(options.tsne.repulsion, n)) Tensor::zeros(ctx, {2}, DType::u32);  // the grid's accumulator
      if (!cpu) {
        // tsne_repulsion.cpp on GPUs: Z (a column's sum), and the FFT grid's bounds (the map's
        // column min and max).
        Tensor::empty(ctx, {rows, 4}).slice(1, 2, 3).sum();
        Tensor y = Tensor::empty(ctx, {rows, 2});
        if (tsne_uses_fft(options.tsne.repulsion, n)) y.min({0}), y.max({0});
      }
    });
  } else if (options.method == MapMethod::Umap) {
    // umap.cpp: the largest membership (a full max over n·k), the graph's counters, the start
    // (PCA's first two components scaled by their largest |value|).
    const int64_t k = map_neighbours(options, n);
    if (!options.init.defined() && features >= 2) prewarm_pca(ctx, n, features, 2);
    prewarm_ops(ctx, [&] {
      Tensor::empty(ctx, {std::min<int64_t>(n * k, 600001)}).max();
      Tensor::zeros(ctx, {2}, DType::i32);
      Tensor two = layout_sample(ctx, dense_layout(n, 2));
      two.abs(), two * 2.0;
      Tensor::empty(ctx, {std::min<int64_t>(n * 2, 600001)}).max();
    });
  }
}

int prewarm_map_kernels(const gpu::ContextPtr& ctx, const MapOptions& options) {
  try {
    prewarm_map_tensor_ops(ctx, options, 0, 0);
    int queued = prewarm_knn_fused(ctx, 0, 0, map_neighbours(options, int64_t(1) << 40)) ? 1 : 0;
    const int64_t large = int64_t(1) << 40;  // the points are not read yet
    return queued + prewarm_layout_kernels(ctx, options, large, map_neighbours(options, large));
  } catch (const Error&) {
    return 0;  // options the map refuses later, with its own message; prewarming is only a head start
  }
}

MapKernelRecord::MapKernelRecord(const gpu::ContextPtr& ctx, const MapOptions& options) : ctx_(ctx) {
  const std::string name = "map " + std::string(map_method_name(options.method));
  if (ctx_->begin_kernel_record(name)) ctx_->prewarm_recorded(name);
}

MapKernelRecord::~MapKernelRecord() {
  if (open_) ctx_->end_kernel_record(false);
}

void MapKernelRecord::save() {
  if (open_) ctx_->end_kernel_record(true);
  open_ = false;
}

}  // namespace surfgrad
