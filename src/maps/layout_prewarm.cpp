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
#include "maps/tsne_repulsion.hpp"
#include "maps/tsne_symmetric.hpp"
#include "surfgrad/map_options.hpp"
#include "surfgrad/map_pipeline.hpp"

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
  // graph_gpu.cpp: the kNN graph's incoming edges (both layouts), three steps.
  for (int step = 0; step < 3 && !fused; ++step) file("incoming_edges.wgsl", {{"STEP", std::to_string(step)}});
  if (options.method == MapMethod::Tsne) {
    // tsne.cpp: affinities, then the optimisation's update and attraction.
    file("tsne_affinity.wgsl", {{"K", ks}});
    if (fused) {
      file("tsne_step_cpu.wgsl");
    } else {
      file("in_edge_weights.wgsl");
      file("tsne_attraction.wgsl", {{"K", ks}, {"LANES", std::to_string(tsne_attraction_lanes(*ctx))}});
      file("tsne_update.wgsl");
    }
    // tsne_repulsion.cpp: TsneRepulsion's constructor takes all of these (not the bounds and Z
    // kernels of CPU adapters: small maps' exact repulsion does not use them).
    for (const char* f :
         {"tsne_repulsion.wgsl", "tsne_fft_frame.wgsl", "tsne_fft_kernels.wgsl", "tsne_fft_spread.wgsl",
          "tsne_fft_charges.wgsl", "tsne_fft_multiply.wgsl", "tsne_fft_mirror.wgsl", "tsne_fft_interpolate.wgsl"})
      file(f);
    // fft_lines.cpp: one line-FFT kernel per grid size (M = 2G), built as the map grows into
    // it mid-optimisation (six of them took 37-80 ms each on the H200 cold). The sizes a map of
    // 10k-1M points passes through, up to the adapter's largest grid.
    if (tsne_uses_fft(options.tsne.repulsion, n)) {
      const int max_nodes = TsneRepulsion::max_grid_nodes(*ctx);
      for (int g : {32, 48, 64, 96, 128, 192, 256})
        if (g <= max_nodes) queued += FftLines::prewarm(ctx, uint32_t(2 * g)) ? 1 : 0;
    }
  } else if (options.method == MapMethod::Umap) {
    // umap.cpp
    file("umap_union.wgsl", {{"K", ks}});
    file("umap_membership.wgsl", {{"K", ks}});
    file("umap_step.wgsl", {{"K", ks}});
  }
  return queued;
}

int prewarm_map_kernels(const gpu::ContextPtr& ctx, const MapOptions& options) {
  try {
    int queued = prewarm_knn_fused(ctx) ? 1 : 0;
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
