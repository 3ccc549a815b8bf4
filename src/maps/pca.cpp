// Randomized PCA (Halko, Martinsson & Tropp 2011): the large products run through the tuned
// matmul on the GPU; only (k+p)×(k+p) problems are solved on the host, in float64.
#include <algorithm>
#include <cmath>
#include <vector>

#include "surfgrad/maps.hpp"

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

// Orthonormal columns spanning Y [N, s]: Y·W with W = V·Λ^(−1/2) from the eigenvectors of YᵀY
// (an eigen-based "Cholesky QR", safe when Y is close to rank-deficient: tiny directions are
// dropped to zero instead of blowing up).
Tensor orthonormalize(const Tensor& y) {
  int s = int(y.shape(1));
  HostArray g = HostArray::from(y.t().matmul(y));
  std::vector<double> val;
  Matrix vec;
  symmetric_eigen(g.values(), s, val, vec);
  std::vector<float> w(size_t(s) * s, 0.0f);
  double floor = std::max(val[0], 1e-300) * 1e-12;
  for (int c = 0; c < s; ++c) {
    double scale = val[size_t(c)] > floor ? 1 / std::sqrt(val[size_t(c)]) : 0.0;
    for (int r = 0; r < s; ++r) w[size_t(r) * s + c] = float(vec[size_t(r) * s + c] * scale);
  }
  return y.matmul(Tensor::from_vector(y.context(), w, {s, s}));
}

}  // namespace

PcaResult pca(const Tensor& x_in, int components, uint64_t seed, int power_iterations) {
  if (x_in.rank() != 2) throw Error(ErrorKind::Shape, "pca: points must be [N, D], got " + x_in.describe());
  int64_t n = x_in.shape(0), d = x_in.shape(1);
  if (components < 1 || components > std::min(n, d))
    throw Error(ErrorKind::Value, "pca: " + std::to_string(components) + " components from " + x_in.describe() +
                                      "; at most min(N, D)");
  auto ctx = x_in.context();
  Tensor x = x_in.cast(DType::f32);
  Tensor mean = x.mean({0}, true);
  Tensor xc = sub(x, mean).contiguous();
  int s = int(std::min<int64_t>(std::min(n, d), components + 10));  // oversampling
  Tensor q = orthonormalize(xc.matmul(Tensor::normal(ctx, {d, s}, seed)));
  for (int it = 0; it < power_iterations; ++it) q = orthonormalize(xc.matmul(xc.t().matmul(q)));
  // B = Qᵀ X [s, D]; its small Gram matrix B·Bᵀ gives the singular vectors on the Q side.
  Tensor b = q.t().matmul(xc);
  HostArray bb = HostArray::from(b.matmul(b.t()));
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
  out.scores = mul(q.matmul(uu), Tensor::from_vector(ctx, sigma, {components}));
  out.mean = mean.reshape({d});
  return out;
}

}  // namespace surfgrad
