// UMAP on the GPU: fuzzy memberships from the exact kNN graph (umap_membership.wgsl),
// symmetrised by fuzzy union (umap_union.wgsl), PCA initialisation, then epochs of
// umap_step.wgsl. The layout follows umap-learn's gradients (clipped to ±4, linearly decaying
// step, negative sampling) but applies them per epoch to all points at once from the previous
// positions, so the map is deterministic for a seed on a device.
#include <algorithm>
#include <cmath>
#include <map>

#include "kernels/launch.hpp"
#include "maps/graph.hpp"
#include "maps/layout.hpp"
#include "surfgrad/maps.hpp"
#include "surfgrad/reference.hpp"

namespace surfgrad {

namespace {

// The curve 1 / (1 + a·d^(2b)) closest (least squares on d in [0, 3]) to UMAP's target
// membership: 1 below min_dist, exp(−(d − min_dist) / spread) beyond.
void fit_ab(double min_dist, double spread, double& a, double& b) {
  auto cost = [&](double ta, double tb) {
    double c = 0;
    for (int s = 1; s <= 300; ++s) {
      double d = 3.0 * s / 300;
      double want = d < min_dist ? 1.0 : std::exp(-(d - min_dist) / spread);
      double got = 1 / (1 + ta * std::pow(d, 2 * tb));
      c += (got - want) * (got - want);
    }
    return c;
  };
  a = 1, b = 1;
  double best = cost(a, b);
  for (double step = 0.5; step > 1e-5; step *= 0.5)  // pattern search, shrinking
    for (bool moved = true; moved;) {
      moved = false;
      for (auto [da, db] : {std::pair{step, 0.0}, {-step, 0.0}, {0.0, step}, {0.0, -step}}) {
        double ta = a + da * a, tb = b + db;
        if (ta <= 0 || tb <= 0) continue;
        double c = cost(ta, tb);
        if (c < best) best = c, a = ta, b = tb, moved = true;
      }
    }
}

}  // namespace

Tensor umap_fuzzy_union(const Tensor& w, const Tensor& indices, int epochs) {
  auto ctx = w.context();
  int64_t n = w.shape(0), k = w.shape(1);
  Tensor u = Tensor::empty(ctx, {n, k});
  auto fuzzy_union = kernels::Program::file(ctx, "umap_union.wgsl", {{"K", std::to_string(k)}});
  auto groups = kernels::groups_for(*ctx, uint64_t(n * k), 64);
  fuzzy_union.launch({u, w, indices}, {n * k, 0u, 0.0f, 0.0f}, groups);
  float umax = float(HostArray::from(u.max()).item());
  fuzzy_union.launch({u, w, indices}, {n * k, 1u, std::max(umax, 1e-30f), 1.0f / float(epochs)}, groups);
  return u;
}

Tensor umap(const Tensor& x, const UmapOptions& opt, const MapProgress& progress, const KnnResult* neighbours) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  return umap_layout(x, opt, progress, neighbours, nullptr);
}

Tensor umap_layout(const Tensor& x, const UmapOptions& opt, const MapProgress& progress, const KnnResult* neighbours,
                   const Tensor* start) {
  if (x.rank() != 2) throw Error(ErrorKind::Shape, "umap: points must be [N, D], got " + x.describe());
  int64_t n = x.shape(0);
  validate(opt, n);  // n_neighbors in [2, min(128, N − 1)], min_dist, epochs, rates
  int k = opt.n_neighbors;
  auto ctx = x.context();
  KnnResult nn = graph_for(x, k, opt.seed, neighbours, "umap", "n_neighbors");
  if (nn.blocked())
    throw Error(ErrorKind::LimitExceeded, "umap: " + std::to_string(n) + " points × " + std::to_string(k) +
                                              " neighbours are more than one storage binding holds on this adapter; "
                                              "lower n_neighbors (--n-neighbors) or map fewer points");
  Tensor w = Tensor::empty(ctx, {n, k});
  kernels::Program::file(ctx, "umap_membership.wgsl", {{"K", std::to_string(k)}})
      .launch({w, nn.distances}, {n}, kernels::groups_for(*ctx, uint64_t(n), 64));

  // Fuzzy union w + wᵀ − w∘wᵀ per pair, then scaled by its largest value, dropping what would
  // never be sampled (umap_union.wgsl).
  int epochs = opt.epochs > 0 ? opt.epochs : (n <= 10000 ? 500 : 200);
  Tensor u_t = umap_fuzzy_union(w, nn.indices, epochs);
  IncomingEdges in = incoming_edges_gpu(nn.indices);

  // Start from the first two principal components scaled to ±10 (umap-learn's spectral
  // initialisation is scaled the same way).
  Tensor y;
  if (start) {
    y = start->cast(DType::f32).clone();  // the epochs swap y with a buffer of their own
  } else if (x.shape(1) >= 2) {
    Tensor scores = pca(x, 2, opt.seed).scores;
    double m = HostArray::from(scores.abs().max()).item();
    y = (scores * (10.0 / std::max(m, 1e-30))).contiguous();
  } else {
    y = Tensor::uniform(ctx, {n, 2}, opt.seed, -10, 10);
  }
  Tensor y_next = Tensor::empty(ctx, {n, 2});
  double a, b;
  fit_ab(opt.min_dist, 1.0, a, b);
  auto step = kernels::Program::file(ctx, "umap_step.wgsl", {{"K", std::to_string(k)}});
  if (progress) {
    ctx->sync();
    progress(0, epochs, y);
  }
  for (int ep = 0; ep < epochs; ++ep) {
    float alpha = float(opt.learning_rate * (1.0 - double(ep) / epochs));
    step.launch({y_next, y, nn.indices, u_t, in.offsets, in.edges[0]},
                {n, 0u, ep, alpha, a, b, opt.negative_sample_rate}, kernels::groups_for(*ctx, uint64_t(n), 64));
    std::swap(y, y_next);
    if (progress && (ep % 50 == 49 || ep + 1 == epochs)) progress(ep + 1, epochs, y);
  }
  return y;
}

}  // namespace surfgrad
