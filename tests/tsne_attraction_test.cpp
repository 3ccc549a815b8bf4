// t-SNE's attraction kernel (tsne_attraction.wgsl) against a float64 host sum over each point's
// out-edges and in-edges: K not a multiple of the lanes a point shares, N not a multiple of the
// points a workgroup takes, hubs with many in-edges and points with none; points visited in
// their order or shuffled within each run of rows (as attraction_order.hpp orders them), to the
// same bits.
#include <algorithm>
#include <cmath>
#include <numeric>
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
    // In one dispatch, or in runs of rows as tsne.cpp dispatches list blocks: rows [a, c) with
    // the lists from row0 and the in-edges from position e0.
    std::vector<int32_t> offsets(csr.begin(), csr.begin() + (n + 1)), ids(csr.begin() + (n + 1), csr.end());
    Tensor yt = Tensor::from_vector(ctx(), y, {n, 2});
    // The order the slots visit the points in: the identity, or shuffled within each run.
    auto run = [&](int lanes, int64_t cut, bool shuffled = false) {
      std::vector<uint32_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0u);
      if (shuffled) {
        std::mt19937 mix{uint32_t(cut)};
        std::shuffle(order.begin(), order.begin() + cut, mix);
        std::shuffle(order.begin() + cut, order.end(), mix);
      }
      Tensor out = Tensor::empty(ctx(), {n, 2});
      auto kernel = kernels::Program::file(ctx(), "tsne_attraction.wgsl",
                                           {{"K", std::to_string(k)}, {"LANES", std::to_string(lanes)}});
      for (auto [a, c] : {std::pair<int64_t, int64_t>{0, cut}, {cut, n}}) {
        if (a == c) continue;
        int64_t e0 = offsets[size_t(a)], e1 = std::max<int64_t>(offsets[size_t(c)], e0 + 1);
        std::vector<int32_t> nb_rows(nbr.begin() + a * k, nbr.begin() + c * k);
        std::vector<float> w_rows(w.begin() + a * k, w.begin() + c * k);
        std::vector<int32_t> ids_run(size_t(e1 - e0), 0);
        std::vector<float> w_in_run(size_t(e1 - e0), 0);
        for (int64_t t = e0; t < offsets[size_t(c)]; ++t)
          ids_run[size_t(t - e0)] = ids[size_t(t)], w_in_run[size_t(t - e0)] = w_in[size_t(t)];
        kernel.launch({out, yt, Tensor::from_vector(ctx(), nb_rows, {c - a, int64_t(k)}),
                       Tensor::from_vector(ctx(), w_rows, {c - a, int64_t(k)}),
                       Tensor::from_vector(ctx(), offsets, {n + 1}), Tensor::from_vector(ctx(), ids_run, {e1 - e0}),
                       Tensor::from_vector(ctx(), w_in_run, {e1 - e0}), Tensor::from_vector(ctx(), order, {n})},
                      {a, c, a, e0}, kernels::groups_for(*ctx(), uint64_t(c - a), uint64_t(256 / lanes)));
      }
      return out.to_vector<float>();
    };
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    // 16 lanes a point (GPUs), 4 (CPU adapters: tsne_attraction_lanes) and 1 (no lane sum).
    for (int lanes : {16, 4, 1}) {
      std::vector<float> got = run(lanes, n);
      for (size_t e = 0; e < got.size(); ++e)
        ASSERT_NEAR(got[e], want[e], 1e-5 * scale)
            << "n " << n << ", k " << k << ", lanes " << lanes << ", point " << e / 2;
      EXPECT_EQ(run(lanes, n), got) << "the sum's order is fixed";
      EXPECT_EQ(run(lanes, n / 3 + 1), got) << "in two runs of rows, as list blocks are dispatched";
      EXPECT_EQ(run(lanes, n, true), got) << "points visited in a shuffled order";
      EXPECT_EQ(run(lanes, n / 3 + 1, true), got) << "shuffled within two runs of rows";
    }
  }
}
