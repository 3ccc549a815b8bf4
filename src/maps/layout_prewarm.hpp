// Cold start (issue 35; docs/cold_start.md): the layout's kernels built on worker threads while
// PCA and the kNN run (kernels::prewarm), so that the optimisation's first iteration finds its
// pipelines ready instead of compiling them one after another.
#pragma once
#include <cstdint>

#include "surfgrad/gpu.hpp"
#include "surfgrad/map_options.hpp"

namespace surfgrad {

// Queues the kernels options.method's layout will ask for (with the values its calls give them)
// for n points and k neighbours a point. Returns how many were queued (0 where prewarming does
// nothing).
int prewarm_layout_kernels(const gpu::ContextPtr& ctx, const MapOptions& options, int64_t n, int k);

// The tensor ops the map path runs before and around its layout (the input's checks, PCA, the
// layout's start: fills, elementwise ops, reductions, products), named by calling them
// (tensor/op_prewarm.hpp), for n points in d dimensions; n = 0: not read yet (the usual dense
// layouts are assumed, and PCA is left to map_points). Queued before the kNN's and the layout's
// kernels: they are needed first. Without them a first run on a machine (no kernel record)
// compiles each at its first use.
void prewarm_map_tensor_ops(const gpu::ContextPtr& ctx, const MapOptions& options, int64_t n, int64_t d);

// pca()'s kernels for one block of n × d points (defined beside it, in pca.cpp).
void prewarm_pca(const gpu::ContextPtr& ctx, int64_t n, int64_t d, int components, int power_iterations = 2);

// For a front end, before it reads the points (the CLI, while MNIST's file is decompressed): the
// exact kNN's kernel and the layout's for as many neighbours as a large set takes. A small set
// (fewer neighbours) builds a few pipelines it does not use, on the workers.
int prewarm_map_kernels(const gpu::ContextPtr& ctx, const MapOptions& options);

// Across runs (Context::prewarm_recorded): the kernels the last maps by this method used (the
// tensor ops' too, which no list here names), prewarmed at the start, and this map's recorded
// for the next. For a process's start (`surfgrad map`): the record lists what was used, so a
// library caller mapping several sets of one process would replay other maps' kernels. Nested,
// the outermost replays and saves.
class MapKernelRecord {
 public:
  MapKernelRecord(const gpu::ContextPtr& ctx, const MapOptions& options);
  ~MapKernelRecord();  // not saved: the map failed
  MapKernelRecord(const MapKernelRecord&) = delete;
  MapKernelRecord& operator=(const MapKernelRecord&) = delete;
  void save();  // the map went well

 private:
  gpu::ContextPtr ctx_;
  bool open_ = true;
};

// Threads sharing a point in tsne_attraction.wgsl (tsne.cpp, which says why).
int tsne_attraction_lanes(const gpu::Context& ctx);

}  // namespace surfgrad
