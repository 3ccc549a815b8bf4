// t-SNE on the GPU (see maps.hpp): affinities, then a loop of attraction over the kNN graph
// (tsne_attraction.wgsl), exact repulsion (tsne_repulsion.wgsl), the sum Z, and a fused update
// (tsne_update.wgsl): four dispatches an iteration, no readback.
#include <algorithm>
#include <cmath>
#include <map>

#include "surfgrad/maps.hpp"
#include "tensor/internal.hpp"

namespace surfgrad {

namespace {

gpu::Kernel load(const gpu::ContextPtr& ctx, const char* file, uint32_t bindings, std::map<std::string, std::string> v = {}) {
  std::string key = std::string("tsne|") + file;
  for (auto& [a, b] : v) key += "|" + a + "=" + b;
  return ctx->kernel(key, [&] { return kernel_source(*ctx, file, v, false, bindings); });
}

}  // namespace

Tensor tsne(const Tensor& x, const TsneOptions& opt, const MapProgress& progress) {
  if (x.rank() != 2) throw Error(ErrorKind::Shape, "tsne: points must be [N, D], got " + x.describe());
  int64_t n = x.shape(0);
  int k = int(std::min<double>(double(n - 1), std::floor(3 * opt.perplexity)));
  if (opt.perplexity <= 1 || n < 4 || k < 2 || 3 * opt.perplexity > double(n - 1))
    throw Error(ErrorKind::Value, "tsne: perplexity " + std::to_string(opt.perplexity) + " needs more than " +
                                      std::to_string(int(3 * opt.perplexity)) + " points (got " + std::to_string(n) +
                                      "); lower --perplexity to at most (N - 1) / 3");
  auto ctx = x.context();
  KnnResult nn = knn_exact(x.cast(DType::f32), k);

  // p_{j|i} per kNN edge, then edge weights p_{j|i} / 2N of the symmetrised P.
  Tensor pcond = Tensor::empty(ctx, {n, k});
  std::vector<uint32_t> meta = {uint32_t(n), f32_bits(float(std::log(opt.perplexity)))};
  ctx->dispatch(load(ctx, "tsne_affinity.wgsl", 2, {{"K", std::to_string(k)}}),
                {pcond.storage()->buffer.get(), nn.distances.storage()->buffer.get()}, meta,
                ctx->grid_for(uint64_t((n + 63) / 64)));
  Tensor w = (pcond / double(2 * n)).contiguous();  // [N, k] edge weights

  // Incoming edges of every point (host, once): gathering them keeps the sum's order fixed,
  // where scattering with atomics would not.
  std::vector<int32_t> idx = nn.indices.to_vector<int32_t>();
  std::vector<std::vector<int32_t>> incoming(static_cast<size_t>(n));
  for (int64_t e = 0; e < n * k; ++e) incoming[size_t(idx[size_t(e)])].push_back(int32_t(e));
  size_t r = 1;
  for (auto& in : incoming) r = std::max(r, in.size());
  std::vector<int32_t> rev(size_t(n) * r, -1);
  for (int64_t i = 0; i < n; ++i)
    for (size_t q = 0; q < incoming[size_t(i)].size(); ++q) rev[size_t(i) * r + q] = incoming[size_t(i)][q];
  Tensor rev_t = Tensor::from_vector(ctx, rev, {n, int64_t(r)});

  Tensor y;
  if (opt.pca_init && x.shape(1) >= 2) {
    Tensor scores = pca(x, 2, opt.seed).scores;
    double sd = std::sqrt(HostArray::from(scores.slice(1, 0, 1)).pow(2).mean().item());
    y = (scores * (1e-4 / std::max(sd, 1e-30))).contiguous();
  } else {
    y = Tensor::normal(ctx, {n, 2}, opt.seed, 0, 1e-4);
  }
  Tensor update = Tensor::zeros(ctx, {n, 2}), gains = Tensor::ones(ctx, {n, 2});
  Tensor rep = Tensor::empty(ctx, {n, 4});
  double lr = opt.learning_rate > 0 ? opt.learning_rate : std::max(double(n) / opt.exaggeration, 50.0);
  gpu::Kernel repulsion = load(ctx, "tsne_repulsion.wgsl", 2), step = load(ctx, "tsne_update.wgsl", 6);
  gpu::Kernel attraction = load(ctx, "tsne_attraction.wgsl", 5, {{"K", std::to_string(k)}});
  Tensor attract = Tensor::empty(ctx, {n, 2});
  if (progress) {
    ctx->sync();  // so that a caller timing the phases sees kNN and affinities finished
    progress(0, opt.iterations);
  }
  for (int it = 0; it < opt.iterations; ++it) {
    bool early = it < opt.exaggeration_iterations;
    std::vector<uint32_t> ameta = {uint32_t(n), uint32_t(r)};
    ctx->dispatch(attraction,
                  {attract.storage()->buffer.get(), y.storage()->buffer.get(), nn.indices.storage()->buffer.get(),
                   w.storage()->buffer.get(), rev_t.storage()->buffer.get()},
                  ameta, ctx->grid_for(uint64_t((n + 63) / 64)));
    std::vector<uint32_t> rmeta = {uint32_t(n)};
    ctx->dispatch(repulsion, {rep.storage()->buffer.get(), y.storage()->buffer.get()}, rmeta,
                  ctx->grid_for(uint64_t((n + 255) / 256)));
    Tensor z = rep.slice(1, 2, 3).sum();
    std::vector<uint32_t> umeta = {uint32_t(n), f32_bits(float(lr)), f32_bits(early ? 0.5f : 0.8f),
                                   f32_bits(float(early ? opt.exaggeration : 1.0))};
    ctx->dispatch(step,
                  {y.storage()->buffer.get(), update.storage()->buffer.get(), gains.storage()->buffer.get(),
                   attract.storage()->buffer.get(), rep.storage()->buffer.get(), z.storage()->buffer.get()},
                  umeta, ctx->grid_for(uint64_t((n + 255) / 256)));
    if (progress && (it % 50 == 49 || it + 1 == opt.iterations)) progress(it + 1, opt.iterations);
  }
  return y;
}

MapQuality evaluate_map(const Tensor& x, const Tensor& embedding, const Tensor& labels, int k) {
  int64_t n = x.shape(0);
  if (embedding.rank() != 2 || embedding.shape(0) != n)
    throw Error(ErrorKind::Shape, "evaluate_map: embedding " + embedding.describe() + " does not match points " + x.describe());
  if (labels.defined() && (labels.rank() != 1 || labels.shape(0) != n))
    throw Error(ErrorKind::Shape, "evaluate_map: labels " + labels.describe() + " must be [" + std::to_string(n) + "]");
  auto high = knn_exact(x.cast(DType::f32), k).indices.to_vector<int32_t>();
  auto low = knn_exact(embedding.cast(DType::f32), k).indices.to_vector<int32_t>();
  MapQuality q;
  double kept = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) kept += high[size_t(i * k + a)] == low[size_t(i * k + b)];
  q.knn_recall = kept / double(n * k);
  q.trustworthiness = trustworthiness(x, embedding, k);
  q.kl_divergence = kl_divergence(x, embedding, std::min(30.0, double(n - 1) / 3.0));
  if (labels.defined()) {
    auto lab = labels.to_vector<int32_t>();
    double right = 0;
    for (int64_t i = 0; i < n; ++i) {
      std::map<int32_t, int> votes;
      for (int a = 0; a < k; ++a) votes[lab[size_t(low[size_t(i * k + a)])]]++;
      int32_t best = std::max_element(votes.begin(), votes.end(), [](auto& u, auto& v) {
                       return u.second < v.second || (u.second == v.second && u.first > v.first);
                     })->first;
      right += best == lab[size_t(i)];
    }
    q.knn_accuracy = right / double(n);
  }
  return q;
}

double trustworthiness(const Tensor& x_in, const Tensor& embedding, int k, int64_t sample) {
  int64_t n = x_in.shape(0);
  if (3 * k + 1 >= 2 * n) throw Error(ErrorKind::Value, "trustworthiness: k = " + std::to_string(k) + " is too large for " + std::to_string(n) + " points");
  auto ctx = x_in.context();
  Tensor x = x_in.cast(DType::f32).contiguous();
  Tensor low = knn_exact(embedding.cast(DType::f32), k).indices;  // [N, k]
  // Sampled rows: every step-th point; their 2-D neighbours as targets.
  int64_t step = (n + sample - 1) / sample;
  std::vector<int32_t> rows;
  for (int64_t i = 0; i < n; i += step) rows.push_back(int32_t(i));
  int64_t s = int64_t(rows.size());
  Tensor row_ids = Tensor::from_vector(ctx, rows, {s});
  Tensor xs = index_select(x, 0, row_ids), targets = index_select(low, 0, row_ids).contiguous();  // [S, D], [S, k]
  Tensor norms = (x * x).sum({1}), norms_s = (xs * xs).sum({1});
  auto kernel = ctx->kernel("rank_count", [&] { return kernel_source(*ctx, "rank_count.wgsl", {}, false, 3); });
  // Distances of the sampled rows to every point, in blocks that fit one binding.
  uint64_t budget = std::min<uint64_t>(uint64_t(256) << 20, ctx->limits().max_storage_buffer_binding_size / 2);
  int64_t block = std::max<int64_t>(1, std::min<int64_t>(s, int64_t(budget / 4) / n));
  Tensor counts = Tensor::empty(ctx, {s, k}, DType::u32);
  for (int64_t r0 = 0; r0 < s; r0 += block) {
    int64_t r1 = std::min(s, r0 + block);
    Tensor d = add(sub(norms_s.slice(0, r0, r1).unsqueeze(1), xs.slice(0, r0, r1).matmul(x.t()) * 2.0), norms.unsqueeze(0));
    std::vector<uint32_t> meta = {uint32_t(r1 - r0), uint32_t(n), uint32_t(k), uint32_t(r0), uint32_t(d.offset())};
    ctx->dispatch(kernel, {counts.storage()->buffer.get(), d.storage()->buffer.get(), targets.storage()->buffer.get()},
                  meta, ctx->grid_for(uint64_t(((r1 - r0) * k + 63) / 64)));
  }
  // The kernel's count includes the point itself (distance 0), so it is the target's rank.
  std::vector<uint32_t> cnt = counts.to_vector<uint32_t>();
  double penalty = 0;
  for (uint32_t rank : cnt)
    if (rank > uint32_t(k)) penalty += double(rank) - k;
  return 1.0 - 2.0 / (double(s) * k * (2.0 * double(n) - 3.0 * k - 1.0)) * penalty;
}

double kl_divergence(const Tensor& x, const Tensor& embedding, double perplexity, int64_t sample) {
  int64_t n = x.shape(0);
  int64_t step = (n + sample - 1) / sample;
  std::vector<int32_t> rows;
  for (int64_t i = 0; i < n; i += step) rows.push_back(int32_t(i));
  int64_t s = int64_t(rows.size());
  if (perplexity <= 1 || 3 * perplexity > double(s - 1))
    throw Error(ErrorKind::Value, "kl_divergence: perplexity " + std::to_string(perplexity) + " is too large for a sample of " +
                                      std::to_string(s));
  Tensor ids = Tensor::from_vector(x.context(), rows, {s});
  std::vector<float> hx = index_select(x.cast(DType::f32), 0, ids).to_vector<float>();
  std::vector<float> hy = index_select(embedding.cast(DType::f32), 0, ids).to_vector<float>();
  int64_t d = x.shape(1);
  auto sqdist = [](const std::vector<float>& a, int64_t dim, int64_t i, int64_t j) {
    double t = 0;
    for (int64_t c = 0; c < dim; ++c) {
      double u = double(a[size_t(i * dim + c)]) - double(a[size_t(j * dim + c)]);
      t += u * u;
    }
    return t;
  };
  std::vector<double> P(size_t(s * s), 0.0), dist(static_cast<size_t>(s));
  double goal = std::log(perplexity);
  for (int64_t i = 0; i < s; ++i) {
    double dmin = 1e300;
    for (int64_t j = 0; j < s; ++j) {
      dist[size_t(j)] = j == i ? 0 : sqdist(hx, d, i, j);
      if (j != i) dmin = std::min(dmin, dist[size_t(j)]);
    }
    double beta = 1, lo = 0, hi = 1e300;
    for (int it = 0; it < 200; ++it) {
      double sum = 0, weighted = 0;
      for (int64_t j = 0; j < s; ++j)
        if (j != i) {
          double w = std::exp(-beta * (dist[size_t(j)] - dmin));
          sum += w, weighted += w * (dist[size_t(j)] - dmin);
        }
      double h = std::log(sum) + beta * weighted / sum;
      if (std::abs(h - goal) < 1e-10) break;
      if (h > goal) lo = beta, beta = hi < 1e300 ? (beta + hi) / 2 : beta * 2;
      else hi = beta, beta = (beta + lo) / 2;
    }
    double sum = 0;
    for (int64_t j = 0; j < s; ++j)
      if (j != i) sum += (P[size_t(i * s + j)] = std::exp(-beta * (dist[size_t(j)] - dmin)));
    for (int64_t j = 0; j < s; ++j) P[size_t(i * s + j)] /= sum;
  }
  double z = 0;
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < s; ++j)
      if (j != i) z += 1 / (1 + sqdist(hy, 2, i, j));
  double kl = 0;
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < s; ++j) {
      if (j == i) continue;
      double p = (P[size_t(i * s + j)] + P[size_t(j * s + i)]) / (2.0 * double(s));
      double q = 1 / (1 + sqdist(hy, 2, i, j)) / z;
      if (p > 0) kl += p * std::log(p / q);
    }
  return kl;
}

}  // namespace surfgrad
