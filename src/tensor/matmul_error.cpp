// Validation of a matmul against a float64 host product: used by the autotuner (a candidate
// must be correct before it is timed), by `surfgrad bench matmul` and by the tests. It lives in
// the library, apart from the ladder (matmul_variants.cpp), which the library does not carry.
#include <algorithm>
#include <cmath>
#include <random>

#include "matmul_problem.hpp"
#include "surfgrad/reference.hpp"

namespace surfgrad {

double matmul_error(const MatmulProblem& prob, int samples, uint64_t seed) {
  // Batch 0 of each operand (its broadcast base offset is the tensor's own offset).
  Tensor a0 = prob.a, b0 = prob.b, c0 = prob.c;
  while (a0.rank() > 2) a0 = a0.slice(0, 0, 1).squeeze(0);
  while (b0.rank() > 2) b0 = b0.slice(0, 0, 1).squeeze(0);
  while (c0.rank() > 2) c0 = c0.slice(0, 0, 1).squeeze(0);
  // A grid of r × r sampled outputs: read only those rows of A, columns of B and entries of C.
  int r = std::max(1, int(std::sqrt(double(samples))));
  std::mt19937_64 gen(seed);
  std::vector<int32_t> rows(static_cast<size_t>(r)), cols(static_cast<size_t>(r));
  for (auto& x : rows) x = int32_t(gen() % uint64_t(prob.M));
  for (auto& x : cols) x = int32_t(gen() % uint64_t(prob.N));
  Tensor ri = Tensor::from_vector(prob.ctx, rows, {r}), ci = Tensor::from_vector(prob.ctx, cols, {r});
  HostArray a = HostArray::from(index_select(a0, 0, ri));                       // [r, K]
  HostArray b = HostArray::from(index_select(b0, 1, ci));                       // [K, r]
  HostArray c = HostArray::from(index_select(index_select(c0, 0, ri), 1, ci));  // [r, r]
  double worst = 0;
  for (int i = 0; i < r; ++i)
    for (int j = 0; j < r; ++j) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < prob.K; ++k) {
        double x = a.values()[size_t(i * prob.K + k)] * b.values()[size_t(k * r + j)];
        ref += x;
        mag += std::abs(x);
      }
      double got = c.values()[size_t(i * r + j)];
      double err = std::isnan(got) ? INFINITY : std::abs(got - ref) / std::max(mag, 1e-30);
      worst = std::max(worst, err);
    }
  return worst;
}

}  // namespace surfgrad
