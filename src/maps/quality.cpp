// How good is a map: kNN recall, 10-NN label accuracy, trustworthiness, t-SNE's KL divergence.
#include <algorithm>
#include <cmath>
#include <map>

#include "kernels/launch.hpp"
#include "surfgrad/maps.hpp"

namespace surfgrad {

MapQuality evaluate_map(const Tensor& x, const Tensor& embedding, const Tensor& labels, int k) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  int64_t n = x.shape(0);
  if (embedding.rank() != 2 || embedding.shape(0) != n)
    throw Error(ErrorKind::Shape,
                "evaluate_map: embedding " + embedding.describe() + " does not match points " + x.describe());
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

double trustworthiness(const Tensor& x_in, const Tensor& embedding, int k, int64_t sample, int64_t block_rows) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  int64_t n = x_in.shape(0);
  if (3 * k + 1 >= 2 * n)
    throw Error(ErrorKind::Value,
                "trustworthiness: k = " + std::to_string(k) + " is too large for " + std::to_string(n) + " points");
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
  auto rank_count = kernels::Program::file(ctx, "rank_count.wgsl");
  // Distances of the sampled rows to every point, in blocks that fit one binding.
  uint64_t budget = std::min<uint64_t>(uint64_t(256) << 20, ctx->limits().max_storage_buffer_binding_size / 2);
  int64_t block = block_rows > 0 ? block_rows : std::max<int64_t>(1, std::min<int64_t>(s, int64_t(budget / 4) / n));
  Tensor counts = Tensor::empty(ctx, {s, k}, DType::u32);
  for (int64_t r0 = 0; r0 < s; r0 += block) {
    int64_t r1 = std::min(s, r0 + block);
    Tensor d =
        add(sub(norms_s.slice(0, r0, r1).unsqueeze(1), xs.slice(0, r0, r1).matmul(x.t()) * 2.0), norms.unsqueeze(0));
    rank_count.launch({counts, kernels::view(d), targets}, {r1 - r0, n, k, r0, d.offset()},
                      kernels::groups_for(*ctx, uint64_t((r1 - r0) * k), 64));
  }
  // The kernel's count includes the point itself (distance 0), so it is the target's rank.
  std::vector<uint32_t> cnt = counts.to_vector<uint32_t>();
  double penalty = 0;
  for (uint32_t rank : cnt)
    if (rank > uint32_t(k)) penalty += double(rank) - k;
  return 1.0 - 2.0 / (double(s) * k * (2.0 * double(n) - 3.0 * k - 1.0)) * penalty;
}

double kl_divergence(const Tensor& x, const Tensor& embedding, double perplexity, int64_t sample) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  int64_t n = x.shape(0);
  int64_t step = (n + sample - 1) / sample;
  std::vector<int32_t> rows;
  for (int64_t i = 0; i < n; i += step) rows.push_back(int32_t(i));
  int64_t s = int64_t(rows.size());
  if (perplexity <= 1 || 3 * perplexity > double(s - 1))
    throw Error(ErrorKind::Value, "kl_divergence: perplexity " + std::to_string(perplexity) +
                                      " is too large for a sample of " + std::to_string(s));
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
      if (h > goal)
        lo = beta, beta = hi < 1e300 ? (beta + hi) / 2 : beta * 2;
      else
        hi = beta, beta = (beta + lo) / 2;
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
