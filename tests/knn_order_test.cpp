// The exact kNN's locality order (src/maps/knn_order.cpp): a permutation and its inverse, near
// points together, the streaming kernel's lists on the sorted points mapped back equal to its
// lists on the points as given, and the rule that turns it on.
#include "maps/knn_order.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "knn_reference.hpp"
#include "maps/knn_fused.hpp"
#include "maps/knn_subgroup_matrix.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// n points around `clusters` well separated centres, the clusters interleaved (point i in cluster
// i·7919 mod clusters, as `bench knn` makes them), with every fifth point a duplicate of an earlier
// one (ties) if `duplicates`; the centres' coordinates N(0, spread²). Returns the points and each
// one's cluster.
std::pair<std::vector<float>, std::vector<int>> clustered(int64_t n, int64_t d, int clusters, uint32_t seed,
                                                          bool duplicates = true, float spread = 20.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centres(static_cast<size_t>(clusters * d));
  for (float& c : centres) c = spread * g(gen);
  std::vector<float> x(static_cast<size_t>(n * d));
  std::vector<int> label(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    label[size_t(i)] = int((i * 7919) % clusters);
    for (int64_t l = 0; l < d; ++l) x[size_t(i * d + l)] = centres[size_t(label[size_t(i)] * d + l)] + g(gen);
  }
  for (int64_t i = 5; duplicates && i < n; i += 5) {
    std::copy_n(&x[size_t((i / 5) * d)], d, &x[size_t(i * d)]);
    label[size_t(i)] = label[size_t(i / 5)];
  }
  return {x, label};
}

bool is_permutation_of_range(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != int32_t(i)) return false;
  return true;
}

}  // namespace

TEST(KnnOrder, CentresOnALineComeInTheirOrderAlongIt) {
  // 200 points on a line in 3-D, shuffled: the order must walk the line from one end to the other.
  std::mt19937 gen(3);
  std::vector<int32_t> at(200);
  std::iota(at.begin(), at.end(), 0);
  std::shuffle(at.begin(), at.end(), gen);
  std::vector<float> c(600);
  for (int i = 0; i < 200; ++i)
    for (int l = 0; l < 3; ++l) c[size_t(i * 3 + l)] = float(at[size_t(i)]) * float(l + 1) - 50.0f;
  std::vector<int32_t> order = knn_centre_order(c, 200, 3);
  ASSERT_TRUE(is_permutation_of_range(order));
  std::vector<int32_t> walked;
  for (int32_t i : order) walked.push_back(at[size_t(i)]);
  const bool up = std::is_sorted(walked.begin(), walked.end());
  const bool down = std::is_sorted(walked.rbegin(), walked.rend());
  EXPECT_TRUE(up || down) << "first positions along the line: " << walked[0] << " " << walked[1] << " " << walked[2]
                          << " … " << walked.back();
  EXPECT_THROW(knn_centre_order(c, 199, 3), Error);
}

TEST(KnnOrder, CentrePicksAreDistinctSortedAndMeetPeriodicClusters) {
  // `bench knn`'s clusters at 1M points: point i in cluster 7919·i mod 100. Evenly spaced picks met
  // 64 of the 100 clusters; random ones meet all (about 10 each).
  for (auto [n, c] : {std::pair<int64_t, int64_t>{1000000, 1024}, {10000000, 1024}, {5000, 5000}, {7, 3}}) {
    std::vector<int32_t> p = knn_centre_picks(n, c);
    ASSERT_EQ(int64_t(p.size()), c);
    for (size_t i = 0; i < p.size(); ++i) {
      ASSERT_TRUE(p[i] >= 0 && p[i] < n) << p[i];
      if (i) {
        ASSERT_LT(p[i - 1], p[i]) << "picks must be distinct and increasing";
      }
    }
    if (c == 1024) {
      std::vector<bool> met(100, false);
      for (int32_t i : p) met[size_t((int64_t(i) * 7919) % 100)] = true;
      EXPECT_EQ(std::count(met.begin(), met.end(), true), 100) << "n " << n;
    }
  }
  EXPECT_EQ(knn_centre_picks(1000, 16), knn_centre_picks(1000, 16));  // a fixed seed: the same every run
  EXPECT_THROW(knn_centre_picks(10, 11), Error);
  EXPECT_THROW(knn_centre_picks(0, 1), Error);
}

TEST(KnnOrder, SortsClustersTogetherAndInvertsExactly) {
  const int64_t n = 6000, d = 12;
  const int clusters = 20;
  auto [x, label] = clustered(n, d, clusters, 5);
  KnnOrder o = knn_locality_order(Tensor::from_vector(ctx(), x, {n, d}), 256);
  std::vector<int32_t> order = o.order.to_vector<int32_t>(), inverse = o.inverse.to_vector<int32_t>();
  ASSERT_EQ(int64_t(order.size()), n);
  ASSERT_TRUE(is_permutation_of_range(order));
  for (int64_t p = 0; p < n; ++p) ASSERT_EQ(inverse[size_t(order[size_t(p)])], p) << "position " << p;
  // In the given order the cluster changes at almost every step. Sorted, a cell (256 centres,
  // every cluster holding some) is one cluster, so it changes at most where a cell ends.
  int changes = 0;
  for (int64_t p = 1; p < n; ++p) changes += label[size_t(order[size_t(p)])] != label[size_t(order[size_t(p - 1)])];
  EXPECT_LE(changes, 255) << "cluster changes along the sorted order";
}

TEST(KnnOrder, ListsOnSortedPointsMapBackToTheGivenOnes) {
  // The streaming kernel (every row block starting at its own tile) on the sorted points, mapped
  // back, against the same kernel on the points as given, in several dispatches: the same
  // distances everywhere (duplicates and all), and without duplicates (no ties) the same ids.
  for (bool duplicates : {true, false})
    for (auto [n, d, k] : {std::tuple{2500, 12, 15}, std::tuple{1800, 7, 40}}) {
      auto [x, label] = clustered(n, d, 12, 9, duplicates);
      Tensor t = Tensor::from_vector(ctx(), x, {n, d});
      const KnnFusedShape shape = knn_fused_shape(*ctx(), k);
      KnnResult want;
      {
        EnvVar rotate("SURFGRAD_KNN_ROTATE_ROWS", "0");  // every block from the first point
        want = knn_exact_shaped(t, k, shape, 0, -1, int64_t(1) << 20);
      }
      KnnOrder o = knn_locality_order(t, 32);
      // Groups of 200 rows, each from its first point's tile (not a multiple of the tiles: the
      // groups start inside tiles, and the stream wraps around at the last, partial tile).
      EnvVar rotate("SURFGRAD_KNN_ROTATE_ROWS", "200");
      KnnResult got = knn_unorder(knn_exact_shaped(index_select(t, 0, o.order), k, shape, 0, -1, int64_t(1) << 20), o);
      std::vector<float> wd = want.distances.to_vector<float>(), gd = got.distances.to_vector<float>();
      std::vector<int32_t> wi = want.indices.to_vector<int32_t>(), gi = got.indices.to_vector<int32_t>();
      for (size_t e = 0; e < wd.size(); ++e)
        ASSERT_NEAR(gd[e], wd[e], 1e-4f * std::max(1.0f, wd[e])) << "entry " << e << " (n " << n << ", k " << k << ")";
      // The ids: the same sets, except that a point may trade places with one at the same distance
      // (to the tolerance: the kernel's keys may round differently in another register cell) at
      // the end of the list.
      for (int64_t i = 0; i < n; ++i) {
        std::vector<int32_t> a(wi.begin() + i * k, wi.begin() + (i + 1) * k),
            b(gi.begin() + i * k, gi.begin() + (i + 1) * k);
        std::sort(a.begin(), a.end());
        for (int s = 0; s < k; ++s) {
          if (std::binary_search(a.begin(), a.end(), b[size_t(s)])) continue;
          const float kth = wd[size_t(i * k + k - 1)], got_d = gd[size_t(i * k + s)];
          ASSERT_NEAR(got_d, kth, 1e-4f * std::max(1.0f, kth))
              << "row " << i << ": id " << b[size_t(s)] << " at slot " << s << " is not in the given order's list"
              << " (n " << n << ", k " << k << ")";
        }
      }
    }
}

TEST(KnnOrder, RuleFollowsTheEnvironmentAdapterAndSize) {
  EXPECT_TRUE(knn_order_rule("", false, false, kKnnOrderMinPoints));
  EXPECT_FALSE(knn_order_rule("", false, false, kKnnOrderMinPoints - 1));
  EXPECT_FALSE(knn_order_rule("", true, false, 10 * kKnnOrderMinPoints));  // CPU adapters
  EXPECT_FALSE(knn_order_rule("", false, true, 10 * kKnnOrderMinPoints));  // the browser
  EXPECT_TRUE(knn_order_rule("cells", true, true, 10));
  EXPECT_FALSE(knn_order_rule("none", false, false, 10 * kKnnOrderMinPoints));
  try {
    knn_order_rule("yes", false, false, 10);
    FAIL() << "a bad SURFGRAD_KNN_ORDER was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SURFGRAD_KNN_ORDER='yes'"), std::string::npos) << e.what();
  }
}

TEST(KnnOrder, KnnExactTakesItWhenAskedAndKeepsTheLists) {
  // Through knn_exact with SURFGRAD_KNN_ORDER=cells, the streaming kernel forced (this adapter's
  // small-set kernels would take these sizes): the path is taken, and the lists (no ties: no
  // duplicate points) are those without it, ids and all.
  EnvVar rows_gpu("SURFGRAD_KNN_GPU_ROWS", "0");
  EnvVar rows_cpu("SURFGRAD_KNN_CPU_ROWS", "0");
  const int64_t n = 1500, d = 8;
  const int k = 10;
  auto [x, label] = clustered(n, d, 9, 21, false, 4.0f);
  Tensor t = Tensor::from_vector(ctx(), x, {n, d});
  KnnResult plain, sorted;
  {
    EnvVar order("SURFGRAD_KNN_ORDER", "none");
    EXPECT_FALSE(knn_order_applies(*ctx(), n, d));
    plain = knn_exact(t, k);
  }
  {
    EnvVar order("SURFGRAD_KNN_ORDER", "cells");
    ASSERT_TRUE(knn_order_applies(*ctx(), n, d));
    sorted = knn_exact(t, k);
  }
  std::vector<float> a = plain.distances.to_vector<float>(), b = sorted.distances.to_vector<float>();
  std::vector<int32_t> ai = plain.indices.to_vector<int32_t>(), bi = sorted.indices.to_vector<int32_t>();
  int64_t same_ids = 0;
  for (size_t e = 0; e < a.size(); ++e) {
    ASSERT_NEAR(b[e], a[e], 1e-4f * std::max(1.0f, a[e])) << "entry " << e;
    same_ids += ai[e] == bi[e];
  }
  // (A near-tie may swap two neighbours' places: nearly all ids must still agree.)
  EXPECT_GE(same_ids, int64_t(a.size()) - 20) << "ids equal, of " << a.size();
}

TEST(KnnOrder, NonFinitePointsLeaveThePointsAsGiven) {
  // A NaN coordinate leaves a point without a nearest centre: no order (never an index out of
  // range), and knn_exact's lists are exactly those without the order.
  EnvVar rows_gpu("SURFGRAD_KNN_GPU_ROWS", "0");
  EnvVar rows_cpu("SURFGRAD_KNN_CPU_ROWS", "0");
  const int64_t n = 700, d = 6;
  const int k = 5;
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity(), 3e30f}) {
    auto [x, label] = clustered(n, d, 5, 31, false, 4.0f);
    x[size_t(123 * d + 2)] = bad;
    Tensor t = Tensor::from_vector(ctx(), x, {n, d});
    EXPECT_FALSE(knn_locality_order(t, 16).defined()) << bad;
    KnnResult plain, sorted;
    {
      EnvVar order("SURFGRAD_KNN_ORDER", "none");
      plain = knn_exact(t, k);
    }
    {
      EnvVar order("SURFGRAD_KNN_ORDER", "cells");
      sorted = knn_exact(t, k);
    }
    EXPECT_EQ(plain.indices.to_vector<int32_t>(), sorted.indices.to_vector<int32_t>()) << bad;
  }
  // Centres on the host with infinite coordinates: still a permutation (no comparator on NaN).
  std::vector<float> c = {0, 1, std::numeric_limits<float>::infinity(), 2, 3,
                          4, 5, -std::numeric_limits<float>::infinity()};
  EXPECT_TRUE(is_permutation_of_range(knn_centre_order(c, 4, 2)));
}

TEST(KnnOrder, SubgroupMatrixListsMatchFloat64WhenSortedAndRotated) {
  // The tensor-core kNN (builtins emulated where the adapter has none) on sorted points in
  // rotated groups, mapped back: the float64 reference's lists.
  const int64_t n = 2100, d = 16;
  const int k = 12;
  // Centres close enough that f32's rounding of |a|² + |b|² − 2a·b stays within the reference's
  // tolerance (at a spread of 20 it is a few 1e-4 of the distance in any order).
  auto [x, label] = clustered(n, d, 10, 13, true, 4.0f);
  Tensor t = Tensor::from_vector(ctx(), x, {n, d});
  KnnOrder o = knn_locality_order(t, 24);
  EnvVar rotate("SURFGRAD_KNN_ROTATE_ROWS", "256");
  KnnSubgroupMatrixOptions opt;
  opt.emulate = !ctx()->features().subgroup_matrix;
  opt.pairs_per_dispatch = int64_t(1) << 19;
  if (std::string why = knn_subgroup_matrix_unsupported(*ctx(), d, opt); !why.empty()) GTEST_SKIP() << why;
  KnnResult got = knn_unorder(knn_exact_subgroup_matrix(index_select(t, 0, o.order), k, 0, n, opt), o);
  std::vector<double> x64(x.begin(), x.end());
  EXPECT_EQ(knn_mismatches(got, x64, n, d, k, 0, "sorted, rotated"), 0);
}

TEST(KnnOrder, RotationRowsComeFromTheEnvironmentOrAreRefused) {
  {
    EnvVar rotate("SURFGRAD_KNN_ROTATE_ROWS", nullptr);
    EXPECT_EQ(knn_rotate_rows(), kKnnRotateRows);
  }
  {
    EnvVar rotate("SURFGRAD_KNN_ROTATE_ROWS", "64");
    EXPECT_EQ(knn_rotate_rows(), 64);
  }
  for (const char* bad : {"-1", "12x", "99999999999"}) {
    EnvVar rotate("SURFGRAD_KNN_ROTATE_ROWS", bad);
    EXPECT_THROW(knn_rotate_rows(), Error) << bad;
  }
}

// Each point's nearest centre against float64 on fuzzed shapes: the one kernel (D up to 64: D not
// a multiple of 4, N not of 256, C not of 64) and the matmul-and-argmin chunks past it. Where the
// best two keys are within f32 rounding either may be chosen, and the chosen key is then within
// that rounding of the best; elsewhere the index is the float64 one. Ties between equal centres
// go to the smaller index; a NaN point has none (−1).
TEST(KnnOrder, NearestCentresMatchFloat64) {
  std::mt19937 gen(61);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (auto [n, d, c] : {std::tuple{1, 1, 1}, std::tuple{300, 3, 70}, std::tuple{1000, 50, 1024},
                         std::tuple{513, 64, 65}, std::tuple{257, 17, 128}, std::tuple{200, 80, 33}}) {
    std::vector<float> x(size_t(n * d)), cen(size_t(c * d));
    for (float& v : x) v = g(gen);
    for (float& v : cen) v = g(gen);
    if (c > 2) std::copy(cen.begin(), cen.begin() + d, cen.begin() + 2 * d);  // centre 2 repeats centre 0
    std::vector<int32_t> got =
        knn_nearest_centres(Tensor::from_vector(ctx(), x, {n, d}), Tensor::from_vector(ctx(), cen, {c, d}))
            .to_vector<int32_t>();
    const std::string what = "n " + std::to_string(n) + ", d " + std::to_string(d) + ", c " + std::to_string(c);
    for (int64_t i = 0; i < n; ++i) {
      std::vector<double> key(static_cast<size_t>(c));
      double scale = 0;
      for (int64_t j = 0; j < c; ++j) {
        double dot = 0, norm = 0, mag = 0;
        for (int64_t e = 0; e < d; ++e) {
          const double a = x[size_t(i * d + e)], b = cen[size_t(j * d + e)];
          dot += a * b, norm += b * b, mag += std::abs(a * b);
        }
        key[size_t(j)] = norm - 2 * dot;
        scale = std::max(scale, norm + 2 * mag);
      }
      const int32_t best = int32_t(std::min_element(key.begin(), key.end()) - key.begin());
      const int32_t at = got[size_t(i)];
      ASSERT_TRUE(at >= 0 && at < c) << what << ", point " << i << ": " << at;
      const double slack = 4.0 * (d + 2) * 0x1p-24 * scale;
      EXPECT_LE(key[size_t(at)], key[size_t(best)] + slack) << what << ", point " << i;
      if (at != best) {
        EXPECT_TRUE(key[size_t(at)] == key[size_t(best)] ? at < best : key[size_t(at)] - key[size_t(best)] <= slack)
            << what << ", point " << i << ": " << at << " for " << best;
      }
      EXPECT_NE(at, 2) << what << ": centre 2 repeats centre 0, which wins the tie";
    }
  }
  std::vector<float> x = {1, 2, std::nanf(""), 4}, cen = {0, 0, 1, 1};
  EXPECT_EQ(knn_nearest_centres(Tensor::from_vector(ctx(), x, {2, 2}), Tensor::from_vector(ctx(), cen, {2, 2}))
                .to_vector<int32_t>(),
            (std::vector<int32_t>{1, -1}));
}
