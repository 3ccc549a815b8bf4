// t-SNE's attraction kernel (tsne_attraction.wgsl) against a float64 host sum over each point's
// out-edges and in-edges: K not a multiple of the lanes a point shares, N not a multiple of the
// points a workgroup takes, hubs with many in-edges and points with none.
#include <cmath>
#include <random>

#include "kernels/launch.hpp"
#include "maps/graph.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

TEST(TsneAttraction, MatchesFloat64AndIsDeterministic) {
  for (auto [n, k] : {std::pair<int64_t, int>{1000, 5}, {777, 17}, {300, 90}}) {
    std::mt19937 rng(uint32_t(n + k));
    std::uniform_real_distribution<float> pos(-20, 20), weight(0, 1e-3f);
    std::vector<float> y(size_t(n) * 2), w(size_t(n * k));
    std::vector<int32_t> nbr(size_t(n * k));
    for (float& v : y) v = pos(rng);
    for (float& v : w) v = weight(rng);
    for (int64_t i = 0; i < n; ++i)
      for (int s = 0; s < k; ++s) {
        int32_t j = rng() % 4 == 0 ? 3 : int32_t(rng() % uint32_t(n));  // point 3 is a hub
        nbr[size_t(i * k + s)] = j == i ? int32_t((i + 1) % n) : j;
      }
    std::vector<double> want(size_t(n) * 2, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int s = 0; s < k; ++s) {
        int64_t j = nbr[size_t(i * k + s)];
        double dx = double(y[size_t(2 * i)]) - y[size_t(2 * j)],
               dy = double(y[size_t(2 * i + 1)]) - y[size_t(2 * j + 1)];
        double q = double(w[size_t(i * k + s)]) / (1 + dx * dx + dy * dy);
        want[size_t(2 * i)] += q * dx, want[size_t(2 * i + 1)] += q * dy;  // out-edge i → j
        want[size_t(2 * j)] -= q * dx, want[size_t(2 * j + 1)] -= q * dy;  // in-edge of j: y_j − y_i
      }
    // The in-edges' weights in CSR order beside the CSR of edge ids (as tsne.cpp prepares them).
    std::vector<int32_t> csr = incoming_edges(nbr, n, k);
    std::vector<float> w_in(size_t(n * k));
    for (size_t t = 0; t < w_in.size(); ++t) w_in[t] = w[size_t(csr[size_t(n + 1) + t])];
    auto run = [&] {
      Tensor out = Tensor::empty(ctx(), {n, 2});
      kernels::Program::file(ctx(), "tsne_attraction.wgsl", {{"K", std::to_string(k)}})
          .launch({out, Tensor::from_vector(ctx(), y, {n, 2}), Tensor::from_vector(ctx(), nbr, {n, int64_t(k)}),
                   Tensor::from_vector(ctx(), w, {n, int64_t(k)}), Tensor::from_vector(ctx(), csr, {n + 1 + n * k}),
                   Tensor::from_vector(ctx(), w_in, {n * k})},
                  {n}, kernels::groups_for(*ctx(), uint64_t(n), 16));
      return out.to_vector<float>();
    };
    std::vector<float> got = run();
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    for (size_t e = 0; e < got.size(); ++e)
      ASSERT_NEAR(got[e], want[e], 1e-5 * scale) << "n " << n << ", k " << k << ", point " << e / 2;
    EXPECT_EQ(run(), got) << "the sum's order is fixed";
  }
}
