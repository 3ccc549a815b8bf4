// t-SNE on the GPU (see maps.hpp): affinities, then a loop of attraction over the kNN graph
// (tsne_attraction.wgsl), repulsion (exact or FFT, tsne_repulsion.cpp), the sum Z, and a fused
// update (tsne_update.wgsl). The host reads the embedding's extent back every 10 iterations
// only, to size the FFT grid, and without a sync: the readback is queued five iterations ahead.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "kernels/launch.hpp"
#include "maps/attraction_order.hpp"
#include "maps/fft_grid_budget.hpp"
#include "maps/graph.hpp"
#include "maps/layout.hpp"
#include "maps/layout_prewarm.hpp"
#include "maps/list_blocks.hpp"
#include "maps/tsne_repulsion.hpp"
#include "maps/tsne_symmetric.hpp"
#include "surfgrad/maps.hpp"
#include "surfgrad/reference.hpp"

namespace surfgrad {

int tsne_neighbours(double perplexity, int64_t n) {
  TsneOptions checked;
  checked.perplexity = perplexity;
  validate(checked, n);  // names the option and its range for these n points
  return int(std::min<double>(double(n - 1), std::floor(3 * perplexity)));
}

// Threads sharing a point in tsne_attraction.wgsl: 16 on GPUs (consecutive loads); on a CPU
// adapter (lavapipe runs a workgroup's threads 8 at a time on one core, in SIMD lanes) 1: with the
// points visited heaviest in-edge list first (attraction_order.hpp), eight points of about one
// in-degree share the SIMD lanes and wait little for each other. At 1,797 points (digits) 1 lane
// and that order took 3.89 CPU s for the whole map against 4.16 with 4 lanes in row order (3
// runs each; 4 lanes gained nothing from the order; MNIST 10k the same within noise).
// (layout_prewarm.hpp declares it: the kernel is prewarmed with it.)
int tsne_attraction_lanes(const gpu::Context& ctx) { return ctx.info().is_cpu ? 1 : 16; }

// CPU adapters take the attraction over the symmetric graph and the update in one dispatch
// (tsne_step_cpu.wgsl, tsne_symmetric.hpp); SURFGRAD_TSNE_FUSED=0 keeps the GPUs' kernels there
// (for measurements). GPUs keep theirs: the in-edge lists are built on the device there, and a
// point's 16 lanes read its lists in consecutive words.
bool tsne_fused_step(const gpu::Context& ctx) {
  const char* env = std::getenv("SURFGRAD_TSNE_FUSED");
  if (env && *env) return std::string(env) != "0";
  return ctx.info().is_cpu;
}

Tensor tsne(const Tensor& x, const TsneOptions& opt, const MapProgress& progress, const KnnResult* neighbours) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  return tsne_layout(x, opt, progress, neighbours, nullptr);
}

Tensor tsne_layout(const Tensor& x, const TsneOptions& opt, const MapProgress& progress, const KnnResult* neighbours,
                   const Tensor* start) {
  if (x.rank() != 2) throw Error(ErrorKind::Shape, "tsne: points must be [N, D], got " + x.describe());
  int64_t n = x.shape(0);
  validate(opt, n);
  check_fft_grid_spacing(opt, n);  // before kNN and affinities: a spacing no grid can honour
  int k = tsne_neighbours(opt.perplexity, n);
  auto ctx = x.context();
  KnnResult nn = graph_for(x, k, opt.seed, neighbours, "tsne", "⌊3·perplexity⌋");
  // Lists past one binding (10M points at k = 90) are row blocks: every step below runs a block
  // (or a pair of blocks) at a time, and one block is the plain lists.
  std::vector<Tensor> nbr = index_blocks(nn), dist = distance_blocks(nn);
  const int64_t block_rows = nn.blocked() ? nn.block_rows : n;

  // p_{j|i} per kNN edge, then edge weights p_{j|i} / 2N of the symmetrised P.
  auto affinity = kernels::Program::file(ctx, "tsne_affinity.wgsl", {{"K", std::to_string(k)}});
  std::vector<Tensor> w;  // [rows, k] edge weights a block
  for (const Tensor& d : dist) {
    Tensor pcond = Tensor::empty(ctx, {d.shape(0), k});
    affinity.launch({pcond, d}, {d.shape(0), std::log(opt.perplexity)},
                    kernels::groups_for(*ctx, uint64_t(d.shape(0)), 64));
    w.push_back((pcond / double(2 * n)).contiguous());
  }

  // One list block on a CPU adapter: the symmetric graph, built on the host (the same memory).
  const bool fused = tsne_fused_step(*ctx) && nbr.size() == 1;
  Tensor sym_offsets, sym_edges, order;
  if (fused) {
    SymmetricEdges sym = symmetric_edges(nbr[0].to_vector<int32_t>(), w[0].to_vector<float>(), n, k);
    std::vector<uint32_t> visit;
    if (uses_heavy_first_order(true)) {
      visit = heavy_first_order(sym.offsets, {{0, n}});
    } else {
      visit.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) visit[size_t(i)] = uint32_t(i);
    }
    order = Tensor::from_vector(ctx, visit, {n});
    sym_offsets = Tensor::from_vector(ctx, sym.offsets, {n + 1});
    sym_edges = Tensor::from_vector(ctx, sym.entries, {int64_t(sym.entries.size())});
  }
  // Incoming edges of every point (once, on the GPU): gathering them keeps the sum's order fixed,
  // where scattering with atomics would not.
  IncomingEdges in = fused ? IncomingEdges{} : incoming_edges_gpu(nbr, block_rows);
  // The in-edges' weights in the same order (one gather on the GPU, a pass a pair of blocks):
  // the attraction kernel then reads them in consecutive words, as it reads the edge ids.
  std::vector<Tensor> w_in;
  auto gather = kernels::Program::file(ctx, "in_edge_weights.wgsl");
  for (size_t q = 0; q < in.edges.size(); ++q) {
    int64_t ids = in.first_edge[q + 1] - in.first_edge[q];
    w_in.push_back(Tensor::empty(ctx, {std::max<int64_t>(ids, 1)}));
    for (size_t b = 0; b < w.size() && ids > 0; ++b)
      gather.launch({in.edges[q], w[b], w_in.back()}, {ids, int64_t(b) * block_rows * k, w[b].numel()},
                    kernels::groups_for(*ctx, uint64_t(ids), 256));
  }
  // The attraction's dispatches: runs of rows inside one list block and one block of in-edges.
  struct Run {
    int64_t a, c;
    size_t list, edges;
  };
  std::vector<Run> runs;
  for (int64_t a = 0; a < n && !fused;) {
    size_t b = size_t(a / block_rows), q = 0;
    while (in.first_target[q + 1] <= a) ++q;
    int64_t c = std::min({n, int64_t(b + 1) * block_rows, in.first_target[q + 1]});
    runs.push_back({a, c, b, q});
    a = c;
  }
  // The order each run visits its points in: heaviest in-edge lists first, or their own order.
  std::vector<uint32_t> visit;
  if (fused) {
    // the symmetric graph's order, above
  } else if (uses_heavy_first_order(ctx->info().is_cpu)) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const Run& r : runs) ranges.emplace_back(r.a, r.c);
    visit = heavy_first_order(in.offsets.to_vector<int32_t>(), ranges);
  } else {
    visit.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) visit[size_t(i)] = uint32_t(i);
  }
  if (!fused) order = Tensor::from_vector(ctx, visit, {n});
  visit = {};

  Tensor y;
  if (start) {
    y = start->cast(DType::f32).clone();  // the layout updates y in place
  } else if (opt.pca_init && x.shape(1) >= 2) {
    Tensor scores = pca(x, 2, opt.seed).scores;
    double sd = std::sqrt(HostArray::from(scores.slice(1, 0, 1)).pow(2).mean().item());
    y = (scores * (1e-4 / std::max(sd, 1e-30))).contiguous();
  } else {
    y = Tensor::normal(ctx, {n, 2}, opt.seed, 0, 1e-4);
  }
  Tensor update, gains, state, y_next;
  if (fused) {
    std::vector<float> start_state(size_t(n) * 4, 1.0f);  // (update 0, 0; gains 1, 1) a point
    for (size_t i = 0; i < start_state.size(); i += 4) start_state[i] = start_state[i + 1] = 0.0f;
    state = Tensor::from_vector(ctx, start_state, {n, 4});
    y_next = Tensor::empty(ctx, {n, 2});
  } else {
    update = Tensor::zeros(ctx, {n, 2});
    gains = Tensor::ones(ctx, {n, 2});
  }
  Tensor rep = Tensor::empty(ctx, {n, 4});
  double lr = opt.learning_rate > 0 ? opt.learning_rate : std::max(double(n) / opt.early_exaggeration, 50.0);
  TsneRepulsion repulsion(ctx);
  bool use_fft = tsne_uses_fft(opt.repulsion, n);
  int max_nodes = TsneRepulsion::max_grid_nodes(*ctx), grid_nodes = 32;
  double last_extent = -1;
  TsneRepulsion::ExtentRead extent_ahead;  // the extent's readback, queued before a look
  const int lanes = tsne_attraction_lanes(*ctx);
  std::optional<kernels::Program> attraction, step, fused_step;
  if (fused) {
    fused_step = kernels::Program::file(ctx, "tsne_step_cpu.wgsl");
  } else {
    attraction = kernels::Program::file(ctx, "tsne_attraction.wgsl",
                                        {{"K", std::to_string(k)}, {"LANES", std::to_string(lanes)}});
    step = kernels::Program::file(ctx, "tsne_update.wgsl");
  }
  Tensor attract = fused ? Tensor() : Tensor::empty(ctx, {n, 2});
  if (progress) {
    ctx->sync();  // so that a caller timing the phases sees kNN and affinities finished
    progress(0, opt.iterations, y);
  }
  for (int it = 0; it < opt.iterations; ++it) {
    bool early = it < opt.exaggeration_iterations;
    for (const Run& r : runs)
      attraction->launch({attract, y, nbr[r.list], w[r.list], in.offsets, in.edges[r.edges], w_in[r.edges], order},
                         {r.a, r.c, int64_t(r.list) * block_rows, in.first_edge[r.edges]},
                         kernels::groups_for(*ctx, uint64_t(r.c - r.a), uint64_t(256 / lanes)));
    if (!use_fft) {
      repulsion.exact(y, rep);
    } else {
      // The extent is read five iterations before each look, queued without a sync: the GPU
      // keeps five iterations of work while the host waits for it (a sync each look left the GPU
      // idle while the host recorded the next iterations: 0.15–0.2 s of the 1M map's 2 s on an
      // H200). Only the first look, with nothing read ahead, waits.
      if (it % 10 == 5 && it + 5 < opt.iterations) extent_ahead = repulsion.box_extent_later(y);
      if (it % 10 == 0) {  // the grid grows with the map; the frame kernel fits it each iteration
        // Sized for the extent the map will have at the next look (15 iterations past the
        // reading) if it keeps growing twice as fast as between the last two readings. Growing
        // faster only coarsens the spacing until then (the frame kernel fits the spacing to the
        // grid); a larger margin (1.5× the extent) cost MNIST's last 350 iterations a 2× larger
        // grid.
        double e = extent_ahead.pending() ? extent_ahead.wait() : repulsion.box_extent(y);
        double grown = std::max(0.0, e - (last_extent < 0 ? e : last_extent));
        last_extent = e;
        grid_nodes = fft_grid_nodes_within_budget(e + 3 * grown, opt.grid_spacing, max_nodes, n, it);
      }
      repulsion.interpolated(y, rep, grid_nodes);
    }
    Tensor z = repulsion.total_q(rep);
    float momentum = early ? 0.5f : 0.8f, exaggeration = float(early ? opt.early_exaggeration : 1.0);
    float max_step = opt.max_step_norm > 0 ? float(opt.max_step_norm) : 3.4e38f;
    if (fused) {
      fused_step->launch({y_next, state, y, sym_offsets, sym_edges, order, rep, z},
                         {n, float(lr), momentum, exaggeration, max_step}, kernels::groups_for(*ctx, uint64_t(n), 64));
      std::swap(y, y_next);
    } else {
      step->launch({y, update, gains, attract, rep, z}, {n, float(lr), momentum, exaggeration, max_step},
                   kernels::groups_for(*ctx, uint64_t(n), 256));
    }
    if (progress && (it % 50 == 49 || it + 1 == opt.iterations)) progress(it + 1, opt.iterations, y);
  }
  return y;
}

}  // namespace surfgrad
