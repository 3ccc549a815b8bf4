// The exact kNN's float64 reference on the host, shared by the kernels' tests (knn_test.cpp,
// knn_rows_cpu_test.cpp, knn_rows_gpu_test.cpp).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "surfgrad/knn.hpp"

namespace sgtest {

// Row i's neighbours as (squared distance, id) in float64, sorted (ties by the smaller id), the
// point itself left out: the first `keep` of them (all where keep < 0).
inline std::vector<std::pair<double, int>> host_neighbours(const std::vector<double>& x, int64_t n, int64_t d,
                                                           int64_t i, int keep = -1) {
  std::vector<std::pair<double, int>> all;
  for (int64_t j = 0; j < n; ++j) {
    if (j == i) continue;
    double s = 0;
    for (int64_t c = 0; c < d; ++c) {
      double t = x[size_t(i * d + c)] - x[size_t(j * d + c)];
      s += t * t;
    }
    all.emplace_back(s, int(j));
  }
  const size_t k = keep < 0 ? all.size() : std::min(all.size(), size_t(keep));
  std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(k), all.end());
  all.resize(k);
  return all;
}

// Rows [r0, r0 + rows) of a kernel's lists against the reference: distances within f32 rounding
// (1e-4 · (1 + d)), ids the reference's except inside runs of distances equal to rounding (then
// either order is right). Returns the number of other id mismatches.
inline int knn_mismatches(const surfgrad::KnnResult& r, const std::vector<double>& x, int64_t n, int64_t d, int k,
                          int64_t r0, const std::string& what) {
  auto idx = r.indices.to_vector<int32_t>();
  auto dist = r.distances.to_vector<float>();
  int bad = 0;
  for (int64_t i = 0; i < r.indices.shape(0); ++i) {
    auto want = host_neighbours(x, n, d, r0 + i, k + 1);  // (the (k+1)-th: a tie with the k-th)
    for (int q = 0; q < k; ++q) {
      double w = want[size_t(q)].first, tol = 1e-4 * (1 + w);
      EXPECT_NEAR(dist[size_t(i * k + q)], w, tol) << what << " row " << r0 + i << " rank " << q;
      bool tie = (q > 0 && std::abs(want[size_t(q - 1)].first - w) <= 2 * tol) ||
                 (size_t(q + 1) < want.size() && std::abs(want[size_t(q + 1)].first - w) <= 2 * tol);
      if (idx[size_t(i * k + q)] != want[size_t(q)].second && !tie) ++bad;
    }
  }
  return bad;
}

}  // namespace sgtest
