// Tile skipping for the exact kNN on sorted points (src/maps/knn_prune.cpp): the bounds against
// float64 on the host, and the lists with skipping bit for bit those without it, from the f32 kernel
// and the subgroup-matrix one, on separated clusters (where tiles are skipped), one cloud, points
// far from the origin (the rounding slack), in several dispatches.
#include "maps/knn_prune.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "knn_reference.hpp"
#include "maps/knn_fused.hpp"
#include "maps/knn_order.hpp"
#include "maps/knn_subgroup_matrix.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// n points around `clusters` centres with coordinates N(0, spread²) (unit noise), interleaved, plus
// `offset` on every coordinate.
std::vector<float> clustered(int64_t n, int64_t d, int clusters, uint32_t seed, float spread, float offset = 0) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centres(static_cast<size_t>(clusters * d));
  for (float& c : centres) c = spread * g(gen);
  std::vector<float> x(static_cast<size_t>(n * d));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t l = 0; l < d; ++l)
      x[size_t(i * d + l)] = offset + centres[size_t(((i * 7919) % clusters) * d + l)] + g(gen);
  // Every seventh point a duplicate of an earlier one: ties at distance 0.
  for (int64_t i = 7; i < n; i += 7) std::copy_n(&x[size_t((i / 7) * d)], d, &x[size_t(i * d)]);
  return x;
}

// The points sorted by cell (knn_order.hpp), as the exact kNN runs them.
Tensor sorted(const std::vector<float>& x, int64_t n, int64_t d) {
  Tensor t = Tensor::from_vector(ctx(), x, {n, d});
  KnnOrder o = knn_locality_order(t, 32);
  return o.defined() ? index_select(t, 0, o.order) : t;
}

void expect_same_lists(const KnnResult& a, const KnnResult& b, const std::string& what) {
  std::vector<int32_t> ai = a.indices.to_vector<int32_t>(), bi = b.indices.to_vector<int32_t>();
  std::vector<float> ad = a.distances.to_vector<float>(), bd = b.distances.to_vector<float>();
  ASSERT_EQ(ai.size(), bi.size());
  for (size_t e = 0; e < ai.size(); ++e) {
    ASSERT_EQ(ai[e], bi[e]) << what << ": entry " << e;
    ASSERT_EQ(ad[e], bd[e]) << what << ": entry " << e;
  }
}

}  // namespace

TEST(KnnPrune, BoundsMatchFloat64WithARaggedLastGroup) {
  const int64_t n = 601, d = 5, g = 64;
  std::vector<float> x = clustered(n, d, 4, 3, 3.0f);
  KnnPrune p = knn_prune_bounds(Tensor::from_vector(ctx(), x, {n, d}), g, 100, 3);
  const int64_t gr = g * 3;  // a group's rows
  ASSERT_EQ(p.groups, (n + gr - 1) / gr);
  ASSERT_EQ(p.blocks, 7);
  std::vector<uint32_t> w = p.words.to_vector<uint32_t>();
  auto word = [&](int64_t i) {
    float f;
    std::memcpy(&f, &w[size_t(i)], 4);
    return double(f);
  };
  for (auto [rows, groups, off] :
       {std::tuple{gr, p.groups, int64_t(0)}, std::tuple{int64_t(100), p.blocks, p.block_offset()}})
    for (int64_t b = 0; b < groups; ++b) {
      const int64_t r0 = b * rows, r1 = std::min(n, r0 + rows), base = off + b * p.width();
      double far = 0, big = 0;
      for (int64_t l = 0; l < d; ++l) {
        double mean = 0;
        for (int64_t r = r0; r < r1; ++r) mean += x[size_t(r * d + l)];
        mean /= double(r1 - r0);
        EXPECT_NEAR(word(base + l), mean, 1e-5 * (1 + std::abs(mean))) << "group " << b << " dim " << l;
      }
      for (int64_t r = r0; r < r1; ++r) {
        double s = 0, nn = 0;
        for (int64_t l = 0; l < d; ++l) {
          const double v = x[size_t(r * d + l)], e = v - word(base + l);  // from the centre as stored
          s += e * e, nn += v * v;
        }
        far = std::max(far, s), big = std::max(big, nn);
      }
      EXPECT_NEAR(word(base + d), std::sqrt(far), 1e-5 * (1 + std::sqrt(far))) << "group " << b;
      EXPECT_NEAR(word(base + d + 1), big, 1e-5 * (1 + big)) << "group " << b;
    }
  for (int64_t b = 0; b < p.blocks; ++b) EXPECT_EQ(w[size_t(p.stats_offset() + b)], 0u);  // the counts start at 0
  EXPECT_THROW(knn_prune_bounds(Tensor::from_vector(ctx(), x, {n * d}), g, 100, 3), Error);
  EXPECT_THROW(knn_prune_bounds(Tensor::from_vector(ctx(), x, {n, d}), g, 100, 0), Error);
}

TEST(KnnPrune, StreamingKernelSkipsTilesOfSeparatedClustersAndKeepsItsLists) {
  knn_prune_record_stats(true);  // (off by default: a readback after each kNN)
  if (!ctx()->features().subgroups) GTEST_SKIP() << "tile skipping needs subgroups";
  // Separated clusters skip tiles, also 1,000 units from the origin (where the keys' rounding slack
  // is ~300 squared units); one cloud (spread 0) skips none; every case, in several dispatches, gives the
  // lists of the kernel without skipping, bit for bit (that kernel's lists are checked against
  // float64 in knn_test.cpp; here duplicates' distances, ~1e-4 where float64 has 0 on the H200,
  // would miss its tolerance).
  for (auto [n, d, k, spread, offset] :
       {std::tuple{3000, 12, 15, 20.0f, 0.0f}, std::tuple{2600, 7, 40, 6.0f, 0.0f},
        std::tuple{2000, 10, 20, 0.0f, 0.0f}, std::tuple{2000, 6, 10, 100.0f, 1000.0f}}) {
    std::vector<float> x = clustered(n, d, 4, 7, spread, offset);  // (clusters larger than a group of tiles)
    Tensor t = sorted(x, n, d);
    const KnnFusedShape shape = knn_fused_shape(*ctx(), k);
    const std::string what = "n " + std::to_string(n) + ", d " + std::to_string(d) + ", k " + std::to_string(k) +
                             ", spread " + std::to_string(spread) + ", offset " + std::to_string(offset);
    // Two dispatches for the clusters (a dispatch's last tile is never skipped; the first covers
    // most tiles, so that its skips keep the test on: kKnnPruneKeepAbove); a few for the cloud,
    // whose first skips nothing, so that the rest runs without the test.
    const int64_t tiles = (n + shape.bn - 1) / shape.bn, blocks = (n + shape.bm - 1) / shape.bm;
    const int64_t pairs = int64_t(n) * shape.bn * (spread > 0 ? tiles * 4 / 5 : 3);
    KnnResult plain = knn_exact_shaped(t, k, shape, 0, -1, pairs, false);
    KnnResult pruned = knn_exact_shaped(t, k, shape, 0, -1, pairs, true);
    const KnnPruneStats st = knn_prune_last_stats();
    expect_same_lists(pruned, plain, what);
    EXPECT_EQ(st.pairs, tiles * blocks) << what;
    EXPECT_LE(st.skipped, st.pairs - blocks) << what;  // (a dispatch's last tile is never skipped)
    if (spread > 0) {
      EXPECT_GT(st.skipped, spread > 10 && offset == 0 ? st.pairs / 4 : st.pairs / 10) << what;
      EXPECT_FALSE(st.abandoned) << what;
    }
    if (spread == 0) {
      EXPECT_EQ(st.skipped, 0) << what;
      EXPECT_TRUE(st.abandoned) << what;
    }
  }
}

TEST(KnnPrune, SubgroupMatrixKernelSkipsTilesAndKeepsItsLists) {
  knn_prune_record_stats(true);  // (off by default: a readback after each kNN)
  if (!ctx()->features().subgroups) GTEST_SKIP() << "tile skipping needs subgroups";
  const int64_t n = 2100, d = 16;
  const int k = 12;
  std::vector<float> x = clustered(n, d, 4, 13, 6.0f);
  Tensor t = sorted(x, n, d);
  KnnSubgroupMatrixOptions opt;
  opt.emulate = !ctx()->features().subgroup_matrix;
  opt.pairs_per_dispatch = int64_t(1) << 22;  // two dispatches (see above)
  if (std::string why = knn_subgroup_matrix_unsupported(*ctx(), d, opt); !why.empty()) GTEST_SKIP() << why;
  KnnResult plain = knn_exact_subgroup_matrix(t, k, 0, n, opt);
  opt.prune = true;
  KnnResult pruned = knn_exact_subgroup_matrix(t, k, 0, n, opt);
  const KnnPruneStats st = knn_prune_last_stats();
  expect_same_lists(pruned, plain, "subgroup matrices");
  EXPECT_GT(st.skipped, st.pairs / 4);
  std::vector<float> host = t.to_vector<float>();
  std::vector<double> x64(host.begin(), host.end());
  EXPECT_EQ(knn_mismatches(pruned, x64, n, d, k, 0, "subgroup matrices, tiles skipped"), 0);
}

TEST(KnnPrune, KnnExactSkipsOnSortedPointsUnlessTurnedOff) {
  knn_prune_record_stats(true);  // (off by default: a readback after each kNN)
  const int64_t n = 2400, d = 8;
  const int k = 10;
  std::vector<float> x = clustered(n, d, 4, 21, 20.0f);
  Tensor t = Tensor::from_vector(ctx(), x, {n, d});
  // The streaming kernel on sorted points, not small sets' kernels (GPUs' knn_rows_gpu, CPU
  // adapters' knn_rows_cpu), which take a set this small by default.
  EnvVar order("SURFGRAD_KNN_ORDER", "cells"), gpu_rows("SURFGRAD_KNN_GPU_ROWS", "0"),
      cpu_rows("SURFGRAD_KNN_CPU_ROWS", "0");
  KnnResult on, off;
  {
    EnvVar prune("SURFGRAD_KNN_PRUNE", nullptr);
    knn_prune_set_last({});
    on = knn_exact(t, k);
  }
  const KnnPruneStats st = knn_prune_last_stats();
  {
    EnvVar prune("SURFGRAD_KNN_PRUNE", "1");
    off = knn_exact(t, k);
  }
  ASSERT_TRUE(knn_order_applies(*ctx(), n, d));
  if (knn_prune_enabled(*ctx())) {
    EXPECT_GT(st.skipped, st.pairs / 10);
  }
  expect_same_lists(on, off, "knn_exact");
  {
    EnvVar group("SURFGRAD_KNN_PRUNE_GROUP", nullptr);
    EXPECT_EQ(knn_prune_group_tiles(3), 3);
  }
  {
    EnvVar group("SURFGRAD_KNN_PRUNE_GROUP", "8");
    EXPECT_EQ(knn_prune_group_tiles(3), 8);
  }
  for (const char* v : {"0", "65", "2x", "-1"}) {
    EnvVar group("SURFGRAD_KNN_PRUNE_GROUP", v);
    EXPECT_THROW(knn_prune_group_tiles(3), Error) << v;
  }
  EnvVar bad("SURFGRAD_KNN_PRUNE", "yes");
  try {
    knn_prune_enabled(*ctx());
    FAIL() << "SURFGRAD_KNN_PRUNE=yes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SURFGRAD_KNN_PRUNE"), std::string::npos) << e.what();
  }
}

// A pruned kNN keeps no GPU buffer once its lists are dropped, stats recorded or not: the last
// counts were once a tensor in a static, which outlived the device at exit and crashed NVIDIA's
// driver after every sorted map had written its outputs.
TEST(KnnPrune, KeepsNoBufferAfterTheLists) {
  auto own = gpu::Context::create({.quiet = true});
  if (!own->features().subgroups) GTEST_SKIP() << "tile skipping needs subgroups";
  const int64_t n = 2400, d = 8;
  std::vector<float> x = clustered(n, d, 4, 21, 20.0f);
  EnvVar order("SURFGRAD_KNN_ORDER", "cells"), gpu_rows("SURFGRAD_KNN_GPU_ROWS", "0"),
      cpu_rows("SURFGRAD_KNN_CPU_ROWS", "0"), prune("SURFGRAD_KNN_PRUNE", "1");
  uint64_t kept = 0;
  for (bool recording : {false, true}) {
    knn_prune_record_stats(recording);
    {
      Tensor t = Tensor::from_vector(own, x, {n, d});
      KnnResult r = knn_exact(t, 10);
      r.indices.to_vector<int32_t>();
    }
    own->sync();
    // Nothing outside the context holds it (a tensor holds its context), nor more of its buffers
    // than the context itself keeps (a workspace of the order's ops, reused).
    EXPECT_EQ(own.use_count(), 1) << "recording " << recording;
    if (recording) {
      EXPECT_EQ(own->pool_stats().live_buffers, kept) << "recording " << recording;
    }
    kept = own->pool_stats().live_buffers;
    if (recording) {
      EXPECT_GT(knn_prune_last_stats().skipped, 0);
    }
  }
  knn_prune_record_stats(false);
}
