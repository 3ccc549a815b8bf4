// Randomized PCA (Halko, Martinsson & Tropp 2011): the large products run through the tuned
// matmul on the GPU; only (k+p)×(k+p) problems are solved on the host, in float64.
#include <algorithm>
#include <cmath>
#include <vector>

#include "maps/layout_prewarm.hpp"
#include "surfgrad/maps.hpp"
#include "surfgrad/reference.hpp"
#include "tensor/op_prewarm.hpp"

namespace surfgrad {

namespace {

using Matrix = std::vector<double>;  // row-major, square unless noted

// Eigen-decomposition of a symmetric s×s matrix by cyclic Jacobi rotations: values descending,
// vectors as columns of `vec`.
void symmetric_eigen(Matrix a, int s, std::vector<double>& val, Matrix& vec) {
  vec.assign(size_t(s) * s, 0.0);
  for (int i = 0; i < s; ++i) vec[size_t(i) * s + i] = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int i = 0; i < s; ++i)
      for (int j = i + 1; j < s; ++j) off += a[size_t(i) * s + j] * a[size_t(i) * s + j];
    if (off < 1e-22) break;
    for (int p = 0; p < s; ++p)
      for (int q = p + 1; q < s; ++q) {
        double apq = a[size_t(p) * s + q];
        if (std::abs(apq) < 1e-300) continue;
        double theta = (a[size_t(q) * s + q] - a[size_t(p) * s + p]) / (2 * apq);
        double t = (theta >= 0 ? 1 : -1) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        double c = 1 / std::sqrt(t * t + 1), sn = t * c;
        for (int k = 0; k < s; ++k) {  // A ← Jᵀ A J
          double akp = a[size_t(k) * s + p], akq = a[size_t(k) * s + q];
          a[size_t(k) * s + p] = c * akp - sn * akq;
          a[size_t(k) * s + q] = sn * akp + c * akq;
        }
        for (int k = 0; k < s; ++k) {
          double apk = a[size_t(p) * s + k], aqk = a[size_t(q) * s + k];
          a[size_t(p) * s + k] = c * apk - sn * aqk;
          a[size_t(q) * s + k] = sn * apk + c * aqk;
        }
        for (int k = 0; k < s; ++k) {
          double vkp = vec[size_t(k) * s + p], vkq = vec[size_t(k) * s + q];
          vec[size_t(k) * s + p] = c * vkp - sn * vkq;
          vec[size_t(k) * s + q] = sn * vkp + c * vkq;
        }
      }
  }
  std::vector<int> order(static_cast<size_t>(s));
  for (int i = 0; i < s; ++i) order[size_t(i)] = i;
  std::sort(order.begin(), order.end(), [&](int x, int y) { return a[size_t(x) * s + x] > a[size_t(y) * s + y]; });
  Matrix sorted(size_t(s) * s);
  val.resize(size_t(s));
  for (int c = 0; c < s; ++c) {
    val[size_t(c)] = a[size_t(order[size_t(c)]) * s + order[size_t(c)]];
    for (int r = 0; r < s; ++r) sorted[size_t(r) * s + c] = vec[size_t(r) * s + order[size_t(c)]];
  }
  vec = sorted;
}

// Orthonormal columns spanning Y [N, s], held as row blocks (so no [N, s] tensor has to fit one
// binding: at 10M points an s = 60 sketch is 2.4 GB): Y·W with W = V·Λ^(−1/2) from the
// eigenvectors of YᵀY = Σ YᵢᵀYᵢ (an eigen-based "Cholesky QR", safe when Y is close to
// rank-deficient: tiny directions are dropped to zero instead of blowing up).
std::vector<Tensor> orthonormalize(const std::vector<Tensor>& y) {
  int s = int(y[0].shape(1));
  Tensor gram;
  for (const Tensor& b : y) gram = gram.defined() ? add(gram, b.t().matmul(b)) : b.t().matmul(b);
  HostArray g = HostArray::from(gram);
  std::vector<double> val;
  Matrix vec;
  symmetric_eigen(g.values(), s, val, vec);
  std::vector<float> w(size_t(s) * s, 0.0f);
  double floor = std::max(val[0], 1e-300) * 1e-12;
  for (int c = 0; c < s; ++c) {
    double scale = val[size_t(c)] > floor ? 1 / std::sqrt(val[size_t(c)]) : 0.0;
    for (int r = 0; r < s; ++r) w[size_t(r) * s + c] = float(vec[size_t(r) * s + c] * scale);
  }
  Tensor wt = Tensor::from_vector(y[0].context(), w, {s, s});
  std::vector<Tensor> q;
  for (const Tensor& b : y) q.push_back(b.matmul(wt));
  return q;
}

}  // namespace

PcaResult pca(const Tensor& x, int components, uint64_t seed, int power_iterations) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (x.rank() != 2) throw Error(ErrorKind::Shape, "pca: points must be [N, D], got " + x.describe());
  return pca(PointBlocks{{x.cast(DType::f32)}}, components, seed, power_iterations);
}

PcaResult pca(const PointBlocks& x, int components, uint64_t seed, int power_iterations) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (x.blocks.empty()) throw Error(ErrorKind::Value, "pca: no points");
  for (const Tensor& b : x.blocks)
    if (b.rank() != 2 || b.shape(1) != x.dims() || b.dtype() != DType::f32)
      throw Error(ErrorKind::Shape,
                  "pca: row blocks must be f32 [n, " + std::to_string(x.dims()) + "], got " + b.describe());
  int64_t n = x.rows(), d = x.dims();
  if (components < 1 || components > std::min(n, d))
    throw Error(ErrorKind::Value, "pca: " + std::to_string(components) + " components from " + std::to_string(n) +
                                      " × " + std::to_string(d) + " points; at most min(N, D)");
  auto ctx = x.blocks[0].context();
  Tensor mean;
  for (const Tensor& b : x.blocks) mean = mean.defined() ? add(mean, b.sum({0}, true)) : b.sum({0}, true);
  mean = mean / double(n);
  // One pass over the centred data, block by block: X·M (row blocks like X's) or Xᵀ·Q (summed).
  // GPUs centre a block again for every product (no second copy of the points in device memory);
  // CPU adapters centre each block once and keep it: there the subtraction is a strided pass
  // over N×D floats, 44 ms at MNIST 10k × 784 on lavapipe, which the 13 products repeated
  // (0.58 s of PCA's 1.4 s). The kept blocks hold the same values, so the products are the same.
  std::vector<Tensor> kept;
  if (ctx->info().is_cpu)
    for (const Tensor& b : x.blocks) kept.push_back(sub(b, mean));
  auto centred = [&](size_t i) { return kept.empty() ? sub(x.blocks[i], mean) : kept[i]; };
  using Blocks = std::vector<Tensor>;
  auto times = [&](const Tensor& m) {
    Blocks parts;
    for (size_t i = 0; i < x.blocks.size(); ++i) parts.push_back(centred(i).matmul(m));
    return parts;
  };
  auto transposed_times = [&](const Blocks& q) {
    Tensor sum;
    for (size_t i = 0; i < x.blocks.size(); ++i) {
      Tensor part = centred(i).t().matmul(q[i]);
      sum = sum.defined() ? add(sum, part) : part;
    }
    return sum;
  };
  int s = int(std::min<int64_t>(std::min(n, d), components + 10));  // oversampling
  Blocks q = orthonormalize(times(Tensor::normal(ctx, {d, s}, seed)));
  for (int it = 0; it < power_iterations; ++it) q = orthonormalize(times(transposed_times(q)));
  // B = Qᵀ X [s, D] (as (Xᵀ Q)ᵀ); its small Gram matrix B·Bᵀ gives the singular vectors on the
  // Q side.
  Tensor bt = transposed_times(q);  // [D, s]
  HostArray bb = HostArray::from(bt.t().matmul(bt));
  std::vector<double> val;
  Matrix vec;
  symmetric_eigen(bb.values(), s, val, vec);
  std::vector<float> u(size_t(s) * components);
  PcaResult out;
  for (int c = 0; c < components; ++c) {
    for (int r = 0; r < s; ++r) u[size_t(r) * components + c] = float(vec[size_t(r) * s + c]);
    out.explained_variance.push_back(std::max(0.0, val[size_t(c)]) / double(std::max<int64_t>(1, n - 1)));
  }
  // Scores X·V = Q·U·Σ = Q·(Qᵀ X Xᵀ Q eigenvectors) scaled: Q·B·Bᵀ·U / σ = Q·U·σ.
  Tensor uu = Tensor::from_vector(ctx, u, {s, components});
  std::vector<float> sigma(static_cast<size_t>(components));
  for (int c = 0; c < components; ++c) sigma[size_t(c)] = float(std::sqrt(std::max(0.0, val[size_t(c)])));
  Tensor scale = Tensor::from_vector(ctx, sigma, {components});
  Blocks scores;
  for (const Tensor& b : q) scores.push_back(mul(b.matmul(uu), scale));
  out.scores = scores.size() == 1 ? scores[0] : concat(scores, 0);
  out.mean = mean.reshape({d});
  return out;
}

// pca()'s kernels for one block of n × d points, line by line as pca() asks for them (cold start:
// layout_prewarm.hpp; the elementwise ops on small tensors of the same layouts, the products by
// their sizes).
void prewarm_pca(const gpu::ContextPtr& ctx, int64_t n, int64_t d, int components, int power_iterations) {
  const int64_t s = std::min<int64_t>(std::min(n, d), components + 10);
  // The mean: a column sum over the rows (R = n; past 600,000 rows the same kernels), divided.
  prewarm_ops(ctx, [&] {
    Tensor rows = Tensor::empty(ctx, {std::min<int64_t>(n, 600001), std::min<int64_t>(d, 4 + d % 4)});
    rows.sum({0}, true) / double(n);
    Tensor block = layout_sample(ctx, OpLayout::Strided);
    sub(block, block.slice(0, 0, 1));  // the centred rows: the mean's row broadcast over them
    Tensor::normal(ctx, {1, 4}, 0);
    // scores · sigma, a row broadcast over [n, components]
    mul(layout_sample(ctx, OpLayout::Strided), layout_sample(ctx, OpLayout::Vec4));
  });
  prewarm_matmul(ctx, DType::f32, n, s, d);                                  // X·M
  prewarm_matmul(ctx, DType::f32, s, s, n, true);                            // orthonormalize: YᵀY
  prewarm_matmul(ctx, DType::f32, n, s, s);                                  // Y·W
  if (power_iterations > 0) prewarm_matmul(ctx, DType::f32, d, s, n, true);  // Xᵀ·Q
  prewarm_matmul(ctx, DType::f32, d, s, n, true);                            // Bᵀ = Xᵀ·Q
  prewarm_matmul(ctx, DType::f32, s, s, d, true);                            // B·Bᵀ
  prewarm_matmul(ctx, DType::f32, n, components, s);                         // Q·U
}

}  // namespace surfgrad
