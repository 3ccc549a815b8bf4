// t-SNE's symmetric attraction graph (tsne_symmetric.hpp) and the CPU adapters' fused
// attraction + update kernel (tsne_step_cpu.wgsl): the graph against a map of unordered pairs
// built naively, the kernel's step against a float64 host step (the attraction over each
// point's out- and in-edges, as tsne_attraction.wgsl sums it, then tsne_update.wgsl's rule),
// the same bits whatever order the slots visit the points in.
#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "kernels/launch.hpp"
#include "maps/tsne_symmetric.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

struct Graph {
  int64_t n;
  int k;
  std::vector<int32_t> nbr;
  std::vector<float> w;
};

// Random lists with a hub (point 3), mutual pairs, and the invalid entries the builder skips.
Graph random_graph(int64_t n, int k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> weight(0, 1e-3f);
  Graph g{n, k, std::vector<int32_t>(size_t(n * k)), std::vector<float>(size_t(n * k))};
  for (int64_t i = 0; i < n; ++i)
    for (int s = 0; s < k; ++s) {
      uint32_t r = rng() % 8;
      int32_t j = r == 0 ? 3 : r == 1 ? int32_t((i + 1) % n) : int32_t(rng() % uint32_t(n));
      g.nbr[size_t(i * k + s)] = j;
      g.w[size_t(i * k + s)] = weight(rng);
    }
  return g;
}

}  // namespace

TEST(TsneSymmetric, EveryPairOnceWithBothWeights) {
  // The hand example: 0 → 1 both ways, 0 → 2 one way, 2 → 2 (itself) and −1 skipped.
  SymmetricEdges s = symmetric_edges({1, 2, 0, -1, 2, 0}, {1.0f, 2.0f, 4.0f, 8.0f, 16.0f, 32.0f}, 3, 2);
  EXPECT_EQ(s.offsets, (std::vector<int32_t>{0, 2, 3, 4}));
  auto f = [](float v) { return std::bit_cast<uint32_t>(v); };
  EXPECT_EQ(s.entries, (std::vector<uint32_t>{1, f(5.0f), 2, f(34.0f), 0, f(5.0f), 0, f(34.0f)}));

  for (auto [n, k] : {std::pair<int64_t, int>{500, 7}, {97, 30}}) {
    Graph g = random_graph(n, k, uint32_t(n));
    std::map<std::pair<int32_t, int32_t>, double> want;  // (row, neighbour) → weight
    for (int64_t i = 0; i < n; ++i)
      for (int t = 0; t < k; ++t) {
        int32_t j = g.nbr[size_t(i * k + t)];
        if (j == i) continue;
        want[{int32_t(i), j}] += g.w[size_t(i * k + t)];
        want[{j, int32_t(i)}] += g.w[size_t(i * k + t)];
      }
    SymmetricEdges s = symmetric_edges(g.nbr, g.w, n, k);
    ASSERT_EQ(s.offsets.size(), size_t(n + 1));
    ASSERT_EQ(size_t(s.offsets.back()) * 2, s.entries.size());
    std::map<std::pair<int32_t, int32_t>, double> got;
    for (int64_t i = 0; i < n; ++i)
      for (int32_t e = s.offsets[size_t(i)]; e < s.offsets[size_t(i) + 1]; ++e) {
        int32_t j = int32_t(s.entries[size_t(2 * e)]);
        if (e > s.offsets[size_t(i)]) {
          EXPECT_LT(int32_t(s.entries[size_t(2 * e - 2)]), j) << "ids ascend";
        }
        got[{int32_t(i), j}] = std::bit_cast<float>(s.entries[size_t(2 * e + 1)]);
      }
    ASSERT_EQ(got.size(), want.size());
    for (auto& [key, v] : want) EXPECT_NEAR(got[key], v, 1e-6 * v) << key.first << " → " << key.second;
  }
  EXPECT_THROW(symmetric_edges({1}, {1.0f, 2.0f}, 2, 1), Error);
}

TEST(TsneStepCpu, MatchesFloat64StepAndIsDeterministic) {
  const int64_t n = 777;
  const int k = 17;
  Graph g = random_graph(n, k, 5);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> pos(-20, 20), unit(-1, 1), gain(0.01f, 3);
  std::vector<float> y(size_t(n * 2)), state(size_t(n * 4)), rep(size_t(n * 4));
  for (float& v : y) v = pos(rng);
  for (int64_t i = 0; i < n; ++i) {
    state[size_t(4 * i)] = unit(rng), state[size_t(4 * i + 1)] = i % 5 == 0 ? 0.0f : unit(rng);
    state[size_t(4 * i + 2)] = gain(rng), state[size_t(4 * i + 3)] = gain(rng);
    rep[size_t(4 * i)] = unit(rng), rep[size_t(4 * i + 1)] = unit(rng), rep[size_t(4 * i + 2)] = 1,
                   rep[size_t(4 * i + 3)] = 0;
  }
  const float z = 123.5f, lr = 40, momentum = 0.8f, exaggeration = 12, max_step = 0.5f;
  // The float64 step: attraction over out-edges and in-edges, then tsne_update.wgsl's rule.
  std::vector<double> attract(size_t(n * 2), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int t = 0; t < k; ++t) {
      int64_t j = g.nbr[size_t(i * k + t)];
      if (j == i) continue;
      double dx = double(y[size_t(2 * i)]) - y[size_t(2 * j)], dy = double(y[size_t(2 * i + 1)]) - y[size_t(2 * j + 1)];
      double q = double(g.w[size_t(i * k + t)]) / (1 + dx * dx + dy * dy);
      attract[size_t(2 * i)] += q * dx, attract[size_t(2 * i + 1)] += q * dy;
      attract[size_t(2 * j)] -= q * dx, attract[size_t(2 * j + 1)] -= q * dy;
    }
  std::vector<double> want_y(size_t(n * 2)), want_state(size_t(n * 4));
  for (int64_t i = 0; i < n; ++i) {
    double nu[2];
    for (int c = 0; c < 2; ++c) {
      double grad = 4 * (exaggeration * attract[size_t(2 * i + c)] - rep[size_t(4 * i + c)] / double(z));
      double u = state[size_t(4 * i + c)], gn = state[size_t(4 * i + 2 + c)];
      gn = (grad > 0) != (u > 0) ? gn + 0.2 : gn * 0.8;
      gn = std::max(gn, 0.01);
      nu[c] = momentum * u - lr * gn * grad;
      want_state[size_t(4 * i + 2 + c)] = gn;
    }
    double len = std::hypot(nu[0], nu[1]);
    for (int c = 0; c < 2; ++c) {
      if (len > max_step) nu[c] *= max_step / len;
      want_state[size_t(4 * i + c)] = nu[c];
      want_y[size_t(2 * i + c)] = y[size_t(2 * i + c)] + nu[c];
    }
  }
  SymmetricEdges s = symmetric_edges(g.nbr, g.w, n, k);
  auto kernel = kernels::Program::file(ctx(), "tsne_step_cpu.wgsl");
  auto run = [&](bool shuffled) {
    std::vector<uint32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0u);
    if (shuffled) std::shuffle(order.begin(), order.end(), std::mt19937{3});
    Tensor y_out = Tensor::empty(ctx(), {n, 2}), st = Tensor::from_vector(ctx(), state, {n, 4});
    kernel.launch(
        {y_out, st, Tensor::from_vector(ctx(), y, {n, 2}), Tensor::from_vector(ctx(), s.offsets, {n + 1}),
         Tensor::from_vector(ctx(), s.entries, {int64_t(s.entries.size())}), Tensor::from_vector(ctx(), order, {n}),
         Tensor::from_vector(ctx(), rep, {n, 4}), Tensor::from_vector(ctx(), std::vector<float>{z}, {1})},
        {n, lr, momentum, exaggeration, max_step},
        kernels::groups_for(*ctx(), uint64_t(n), 64));  // the kernel's workgroup size
    std::vector<float> out = y_out.to_vector<float>(), s4 = st.to_vector<float>();
    out.insert(out.end(), s4.begin(), s4.end());
    return out;
  };
  std::vector<float> got = run(false);
  int clipped = 0;
  for (int64_t i = 0; i < n; ++i) {
    clipped += std::hypot(want_state[size_t(4 * i)], want_state[size_t(4 * i + 1)]) > max_step * 0.999 ? 1 : 0;
    for (int c = 0; c < 2; ++c) {
      double step = std::abs(want_state[size_t(4 * i + c)]) + 1e-3;
      ASSERT_NEAR(got[size_t(2 * i + c)], want_y[size_t(2 * i + c)],
                  1e-4 * step + 1e-5 * std::abs(want_y[size_t(2 * i + c)]))
          << "point " << i;
      ASSERT_NEAR(got[size_t(2 * n + 4 * i + c)], want_state[size_t(4 * i + c)], 1e-4 * step) << "update of " << i;
      ASSERT_NEAR(got[size_t(2 * n + 4 * i + 2 + c)], want_state[size_t(4 * i + 2 + c)], 1e-5) << "gain of " << i;
    }
  }
  EXPECT_GT(clipped, 0) << "some steps are clipped to max_step";
  EXPECT_LT(clipped, n) << "and some not";
  EXPECT_EQ(run(true), got) << "points visited in a shuffled order: the same bits";
}
