// t-SNE's mutual edges folded before the optimisation (tsne_mutual_edges.wgsl): where i and j are
// in each other's lists, the in-edge's weight goes into the out-edge's and is zeroed (the
// attraction then skips it). Against the host: exactly those in-edges zeroed, exactly those out
// weights grown by the f32 sum; run in one dispatch and in two runs of rows (as list blocks are);
// and the attraction over the folded weights still the float64 sum over the original edges.
#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/launch.hpp"
#include "maps/graph.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

TEST(TsneMutualEdges, FoldsEachMutualPairOnceAndKeepsTheForces) {
  const int64_t n = 700;
  const int k = 12;
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> pos(-10, 10), weight(1e-5f, 1e-3f);
  // Lists of true nearest neighbours of points in the plane: many pairs are mutual, not all.
  std::vector<float> p(size_t(2 * n)), y(size_t(2 * n)), w(size_t(n * k));
  for (float& v : p) v = pos(rng);
  for (float& v : y) v = pos(rng);
  for (float& v : w) v = weight(rng);
  std::vector<int32_t> nbr(size_t(n * k));
  for (int64_t i = 0; i < n; ++i) {
    std::vector<std::pair<float, int32_t>> d;
    for (int64_t j = 0; j < n; ++j)
      if (j != i) {
        float dx = p[size_t(2 * i)] - p[size_t(2 * j)], dy = p[size_t(2 * i + 1)] - p[size_t(2 * j + 1)];
        d.push_back({dx * dx + dy * dy, int32_t(j)});
      }
    std::partial_sort(d.begin(), d.begin() + k, d.end());
    for (int s = 0; s < k; ++s) nbr[size_t(i * k + s)] = d[size_t(s)].second;
  }
  std::vector<int32_t> csr = incoming_edges(nbr, n, k);
  std::vector<int32_t> offsets(csr.begin(), csr.begin() + (n + 1)), ids(csr.begin() + (n + 1), csr.end());
  std::vector<float> w_in(ids.size());
  for (size_t t = 0; t < ids.size(); ++t) w_in[t] = w[size_t(ids[t])];

  // The host's fold.
  std::vector<float> want_w = w, want_in = w_in;
  int64_t mutual = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t t = offsets[size_t(i)]; t < offsets[size_t(i + 1)]; ++t) {
      int32_t s = ids[size_t(t)] / k;
      for (int o = 0; o < k; ++o)
        if (nbr[size_t(i * k + o)] == s) {
          want_w[size_t(i * k + o)] += want_in[size_t(t)];
          want_in[size_t(t)] = 0.0f;
          ++mutual;
          break;
        }
    }
  ASSERT_GT(mutual, n * k / 4) << "the test's lists should have many mutual pairs";
  ASSERT_LT(mutual, n * k) << "and some one-way edges";

  auto fold = kernels::Program::file(ctx(), "tsne_mutual_edges.wgsl", {{"K", std::to_string(k)}});
  Tensor offsets_t = Tensor::from_vector(ctx(), offsets, {n + 1});
  for (int64_t cut : {n, n / 3 + 1}) {
    std::vector<float> got_w(w.size()), got_in(w_in.size());
    // Runs [0, cut) and [cut, n) with their own list rows and in-edge positions, as tsne.cpp runs blocks.
    for (auto [a, c] : {std::pair<int64_t, int64_t>{0, cut}, {cut, n}}) {
      if (a == c) continue;
      const int64_t e0 = offsets[size_t(a)], e1 = offsets[size_t(c)];
      Tensor wr = Tensor::from_vector(ctx(), std::vector<float>(w.begin() + a * k, w.begin() + c * k), {c - a, k});
      Tensor nr =
          Tensor::from_vector(ctx(), std::vector<int32_t>(nbr.begin() + a * k, nbr.begin() + c * k), {c - a, k});
      Tensor wi = Tensor::from_vector(ctx(), std::vector<float>(w_in.begin() + e0, w_in.begin() + e1), {e1 - e0});
      Tensor ir = Tensor::from_vector(ctx(), std::vector<int32_t>(ids.begin() + e0, ids.begin() + e1), {e1 - e0});
      fold.launch({wr, wi, nr, offsets_t, ir}, {a, c, a, e0}, kernels::groups_for(*ctx(), uint64_t(c - a), 64));
      std::vector<float> a_w = wr.to_vector<float>(), a_in = wi.to_vector<float>();
      std::copy(a_w.begin(), a_w.end(), got_w.begin() + a * k);
      std::copy(a_in.begin(), a_in.end(), got_in.begin() + e0);
    }
    EXPECT_EQ(got_w, want_w) << "cut " << cut;
    EXPECT_EQ(got_in, want_in) << "cut " << cut;
  }

  // The attraction over the folded weights against float64 over the original edges.
  std::vector<double> want(size_t(2 * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int s = 0; s < k; ++s) {
      int64_t j = nbr[size_t(i * k + s)];
      double dx = double(y[size_t(2 * i)]) - y[size_t(2 * j)], dy = double(y[size_t(2 * i + 1)]) - y[size_t(2 * j + 1)];
      double q = double(w[size_t(i * k + s)]) / (1 + dx * dx + dy * dy);
      want[size_t(2 * i)] += q * dx, want[size_t(2 * i + 1)] += q * dy;
      want[size_t(2 * j)] -= q * dx, want[size_t(2 * j + 1)] -= q * dy;
    }
  std::vector<uint32_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = uint32_t(i);
  Tensor out = Tensor::empty(ctx(), {n, 2});
  kernels::Program::file(ctx(), "tsne_attraction.wgsl", {{"K", std::to_string(k)}, {"LANES", "16"}})
      .launch({out, Tensor::from_vector(ctx(), y, {n, 2}), Tensor::from_vector(ctx(), nbr, {n, int64_t(k)}),
               Tensor::from_vector(ctx(), want_w, {n, int64_t(k)}), offsets_t,
               Tensor::from_vector(ctx(), ids, {int64_t(ids.size())}),
               Tensor::from_vector(ctx(), want_in, {int64_t(want_in.size())}), Tensor::from_vector(ctx(), order, {n})},
              {int64_t(0), n, int64_t(0), int64_t(0)}, kernels::groups_for(*ctx(), uint64_t(n), 16));
  std::vector<float> got = out.to_vector<float>();
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t e = 0; e < got.size(); ++e) ASSERT_NEAR(got[e], want[e], 1e-5 * scale) << "point " << e / 2;
}
