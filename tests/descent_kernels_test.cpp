// Neighbour descent's two kernels (nndescent_common.wgsl): a thread a point (CPU adapters) and a
// workgroup a point (GPUs). A list is the K best distinct candidates by (distance, id) whatever
// the order they are looked at, so both must give the same bits, on ties and duplicates too; and
// one round from a given graph must be what a float64 host search of the same candidates finds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "maps/list_blocks.hpp"
#include "surfgrad/maps.hpp"
#include "test_util.hpp"

namespace {

using namespace surfgrad;
using sgtest::ctx;

// Restores the default kernel choice, even if a check throws.
struct KernelChoice {
  explicit KernelChoice(DescentKernel k) { set_descent_kernel(k); }
  ~KernelChoice() { set_descent_kernel(DescentKernel::Auto); }
};

struct Lists {
  std::vector<int32_t> ids;
  std::vector<float> dist;
};

Lists host_lists(const KnnResult& r) {
  Lists l{std::vector<int32_t>(size_t(r.rows() * r.k())), std::vector<float>(size_t(r.rows() * r.k()))};
  r.to_host(l.ids.data(), l.dist.data());
  return l;
}

// What a list must be whichever kernel made it: sorted by (distance, id), no point twice, never
// the point itself.
void expect_well_formed(const Lists& l, int64_t n, int k, const std::string& what) {
  for (int64_t i = 0; i < n; ++i) {
    std::set<int32_t> ids;
    for (int s = 0; s < k; ++s) {
      size_t e = size_t(i * k + s);
      ASSERT_NE(l.ids[e], i) << what << ": row " << i << " lists itself";
      if (l.ids[e] >= 0) {
        ASSERT_TRUE(ids.insert(l.ids[e]).second) << what << ": row " << i << " lists " << l.ids[e] << " twice";
      }
      if (s > 0) {
        bool sorted = l.dist[e - 1] < l.dist[e] || (l.dist[e - 1] == l.dist[e] && l.ids[e - 1] < l.ids[e]);
        ASSERT_TRUE(sorted || l.ids[e] < 0) << what << ": row " << i << " unsorted at " << s;
      }
    }
  }
}

// Every way the maps run descent, with each kernel: the lists must be equal bit for bit.
TEST(DescentKernels, ThreadAndWorkgroupKernelsGiveTheSameBits) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0, 1);
  const int64_t d = 12;
  std::vector<float> normal(size_t(1500 * d));
  for (float& v : normal) v = g(rng);
  // Points on a grid of {0, 1, 2}^6: 729 places for 1,200 points, so duplicates (distance 0) and
  // ties of equal distances everywhere: only the (distance, id) order decides.
  std::vector<float> grid(size_t(1200 * 6));
  for (float& v : grid) v = float(rng() % 3);
  struct Case {
    const char* name;
    const std::vector<float>* points;
    int64_t dims;
    std::function<KnnResult(const Tensor&)> run;
  };
  const std::vector<int32_t> start = [] {  // a given graph with empty slots
    std::vector<int32_t> s(size_t(1500 * 8));
    for (size_t e = 0; e < s.size(); ++e) s[e] = e % 5 == 4 ? -1 : int32_t((e * 7919 + 13) % 1500);
    return s;
  }();
  const std::vector<Case> cases = {
      {"k = 90 (4 rounds, 8 reverse)", &normal, d,
       [](const Tensor& x) { return nearest_neighbours(x, 90, 3, KnnMethod::Descent); }},
      {"k = 15 (lists of 48)", &normal, d,
       [](const Tensor& x) { return nearest_neighbours(x, 15, 3, KnnMethod::Descent); }},
      {"k = 5, no reverse", &normal, d, [](const Tensor& x) { return knn_approx(x, 5, 3, 9, 0); }},
      {"refined from a graph with holes", &normal, d,
       [&](const Tensor& x) { return knn_refine(x, Tensor::from_vector(x.context(), start, {1500, 8}), 3, 4); }},
      {"grid: duplicates and ties, k = 20", &grid, 6, [](const Tensor& x) { return knn_approx(x, 20, 4, 2, 8); }},
  };
  for (const Case& c : cases) {
    const int64_t n = int64_t(c.points->size()) / c.dims;
    auto lists = [&](DescentKernel kernel) {
      KernelChoice choice(kernel);
      return host_lists(c.run(Tensor::from_vector(ctx(), *c.points, {n, c.dims})));
    };
    Lists thread = lists(DescentKernel::ThreadAPoint), group = lists(DescentKernel::WorkgroupAPoint);
    const int k = int(thread.ids.size() / size_t(n));
    expect_well_formed(group, n, k, c.name);
    EXPECT_EQ(group.ids, thread.ids) << c.name;
    EXPECT_EQ(group.dist, thread.dist) << c.name;
  }
}

// Single rounds, where later rounds cannot repair a difference: the random start alone, and one
// round from it, on the grid's ties and duplicates, with lists longer than a workgroup's threads
// (K = 33 on 32 threads, K = 70 on 64) and more than one word of new-bits; and descent in three
// row blocks (a context whose bindings hold 200 KB) against the plain thread kernel.
TEST(DescentKernels, SingleRoundsAndBlocksGiveTheSameBits) {
  std::mt19937 rng(8);
  std::vector<float> grid(size_t(1200 * 6));
  for (float& v : grid) v = float(rng() % 3);
  for (int k : {33, 70}) {
    for (int rounds : {0, 1}) {
      auto lists = [&](DescentKernel kernel) {
        KernelChoice choice(kernel);
        return host_lists(knn_approx(Tensor::from_vector(ctx(), grid, {1200, 6}), k, rounds, 4, 8));
      };
      Lists thread = lists(DescentKernel::ThreadAPoint), group = lists(DescentKernel::WorkgroupAPoint);
      expect_well_formed(group, 1200, k, "grid");
      EXPECT_EQ(group.ids, thread.ids) << "k = " << k << ", rounds " << rounds;
      EXPECT_EQ(group.dist, thread.dist) << "k = " << k << ", rounds " << rounds;
    }
  }
  const gpu::ContextPtr& small = sgtest::small_binding_ctx();
  std::normal_distribution<float> g(0, 1);
  std::vector<float> x(size_t(2000 * 8));
  for (float& v : x) v = g(rng);
  auto lists = [&](const gpu::ContextPtr& c, DescentKernel kernel) {
    KernelChoice choice(kernel);
    KnnResult r = knn_approx(Tensor::from_vector(c, x, {2000, 8}), 64, 2, 6, 8);
    EXPECT_EQ(r.index_blocks.size(), c == small ? 3u : 0u);
    return host_lists(r);
  };
  Lists blocked = lists(small, DescentKernel::WorkgroupAPoint), plain = lists(ctx(), DescentKernel::ThreadAPoint);
  EXPECT_EQ(blocked.ids, plain.ids) << "three blocks";
  EXPECT_EQ(blocked.dist, plain.dist) << "three blocks";
}

// One round from a given graph, no reverse neighbours: each point looks at its list and its
// neighbours' lists, all of them (every entry is new). The float64 host search of the same
// candidates must find the same ids, and distances to f32 rounding.
TEST(DescentKernels, OneRoundMatchesAFloat64Search) {
  const int64_t n = 800, d = 16;
  const int k = 10;
  std::mt19937 rng(21);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> x(size_t(n * d));
  for (float& v : x) v = g(rng);
  std::vector<int32_t> graph(size_t(n * k));
  for (size_t e = 0; e < graph.size(); ++e) graph[e] = e % 7 == 3 ? -1 : int32_t(rng() % uint32_t(n));
  for (int64_t i = 0; i < n; ++i)  // a list names each point once (the kernels' invariant)
    for (int s = 0; s < k; ++s)
      for (int t = 0; t < s; ++t)
        if (graph[size_t(i * k + s)] == graph[size_t(i * k + t)]) graph[size_t(i * k + s)] = -1;
  auto dist = [&](int64_t a, int64_t b) {
    double s = 0;
    for (int64_t c = 0; c < d; ++c) {
      double t = double(x[size_t(a * d + c)]) - double(x[size_t(b * d + c)]);
      s += t * t;
    }
    return s;
  };
  std::vector<int32_t> want(size_t(n * k), -1);
  std::vector<double> want_d(size_t(n * k), 0);
  for (int64_t i = 0; i < n; ++i) {
    std::set<int32_t> seen;
    for (int a = 0; a < k; ++a) {
      int32_t u = graph[size_t(i * k + a)];
      if (u < 0) continue;
      seen.insert(u);
      for (int s = 0; s < k; ++s)
        if (graph[size_t(u * k + s)] >= 0) seen.insert(graph[size_t(u * k + s)]);
    }
    seen.erase(int32_t(i));
    std::vector<std::pair<double, int32_t>> cand;
    for (int32_t j : seen) cand.emplace_back(dist(i, j), j);
    std::sort(cand.begin(), cand.end());
    for (size_t s = 0; s < std::min(cand.size(), size_t(k)); ++s) {
      want[size_t(i * k) + s] = cand[s].second;
      want_d[size_t(i * k) + s] = cand[s].first;
    }
  }
  for (DescentKernel kernel : {DescentKernel::ThreadAPoint, DescentKernel::WorkgroupAPoint}) {
    KernelChoice choice(kernel);
    Tensor xt = Tensor::from_vector(ctx(), x, {n, d});
    Lists got = host_lists(knn_refine(xt, Tensor::from_vector(ctx(), graph, {n, k}), 1, 0));
    const char* name = kernel == DescentKernel::ThreadAPoint ? "a thread a point" : "a workgroup a point";
    ASSERT_EQ(got.ids, want) << name;
    for (size_t e = 0; e < want.size(); ++e)
      if (want[e] >= 0) {
        ASSERT_NEAR(got.dist[e], want_d[e], 1e-5 * (1 + want_d[e])) << name << ", entry " << e;
      }
  }
}

}  // namespace
