// Exact kNN on the GPU against brute force in float64 on the host: the streaming kernel
// (knn_exact) on fuzzed shapes, ties and duplicates, and the blocked baseline (knn_exact_blocked)
// with one and several row blocks and segments.
#include <algorithm>
#include <numeric>
#include <random>

#include "knn_reference.hpp"
#include "maps/knn_fused.hpp"
#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// Every row's true neighbours as (squared distance, id), sorted, the point itself left out.
std::vector<std::vector<std::pair<double, int>>> host_lists(const std::vector<double>& x, int64_t n, int64_t d) {
  std::vector<std::vector<std::pair<double, int>>> lists(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lists[size_t(i)] = host_neighbours(x, n, d, i);
  return lists;
}

// Distances within rounding of the reference; ids equal except where the reference's distances
// are equal to rounding (then either order is right). Returns the number of mismatched ids.
int compare_lists(const KnnResult& r, const std::vector<std::vector<std::pair<double, int>>>& ref, int64_t row0, int k,
                  const std::string& what) {
  int64_t rows = r.indices.shape(0);
  auto idx = r.indices.to_vector<int32_t>();
  auto dist = r.distances.to_vector<float>();
  int mismatched = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const auto& all = ref[size_t(row0 + i)];
    for (int q = 0; q < k; ++q) {
      double want = all[size_t(q)].first, tol = 1e-4 * (1 + want);
      EXPECT_NEAR(dist[size_t(i * k + q)], want, tol) << what << " row " << row0 + i << " rank " << q;
      bool tie_after = q + 1 < int(all.size()) && std::abs(all[size_t(q + 1)].first - want) <= 2 * tol;
      bool tie_before = q > 0 && std::abs(all[size_t(q - 1)].first - want) <= 2 * tol;
      if (idx[size_t(i * k + q)] != all[size_t(q)].second && !tie_after && !tie_before) ++mismatched;
      EXPECT_NE(idx[size_t(i * k + q)], int(row0 + i)) << what << ": a point is not its own neighbour";
    }
  }
  return mismatched;
}

}  // namespace

TEST(Knn, StreamingMatchesHostOnFuzzedShapes) {
  // N around and off the tile sizes (64 and 128), D off the staging step (8), k up to 128.
  std::mt19937 rng(2026);
  std::vector<std::tuple<int64_t, int64_t, int>> cases = {{300, 17, 10}, {129, 3, 128}, {40, 1, 1}, {65, 50, 64}};
  for (int c = 0; c < 6; ++c) {
    int64_t n = 2 + int64_t(rng() % 1400), d = 1 + int64_t(rng() % 70);
    int k = 1 + int(rng() % uint32_t(std::min<int64_t>(n - 1, 128)));
    cases.emplace_back(n, d, k);
  }
  for (auto [n, d, k] : cases) {
    Ref x = random_ref({n, d}, uint32_t(n * 131 + d), DType::f32, -1, 1);
    KnnResult r = knn_exact(upload(x, DType::f32), k);
    ASSERT_EQ(r.indices.shape(), Shape({n, k}));
    std::string what = "n " + std::to_string(n) + " d " + std::to_string(d) + " k " + std::to_string(k);
    EXPECT_EQ(compare_lists(r, host_lists(x.v, n, d), 0, k, what), 0) << what;
  }
}

TEST(Knn, StreamingBreaksTiesByIndex) {
  // Small integer coordinates: every squared distance is exact in f32, many are equal, and
  // every point has duplicates. The lists must be exactly the reference's (distance, id) order.
  for (auto [n, d, k] : std::vector<std::tuple<int64_t, int64_t, int>>{{500, 3, 40}, {300, 9, 90}, {150, 1, 128}}) {
    std::vector<double> v(size_t(n * d));
    std::mt19937 rng(uint32_t(n + d));
    for (auto& e : v) e = double(int(rng() % 5) - 2);
    Tensor x = Tensor::from_vector(ctx(), std::vector<float>(v.begin(), v.end()), {n, d});
    KnnResult r = knn_exact(x, k);
    auto ref = host_lists(v, n, d);
    auto idx = r.indices.to_vector<int32_t>();
    auto dist = r.distances.to_vector<float>();
    for (int64_t i = 0; i < n; ++i)
      for (int q = 0; q < k; ++q) {
        ASSERT_EQ(idx[size_t(i * k + q)], ref[size_t(i)][size_t(q)].second)
            << "n " << n << " row " << i << " rank " << q;
        ASSERT_EQ(double(dist[size_t(i * k + q)]), ref[size_t(i)][size_t(q)].first) << "row " << i << " rank " << q;
      }
    // And the same bits again (no dependence on timing), and with the points streamed over many
    // dispatches (a bar read back from the lists an earlier one left decides ties by id too).
    EXPECT_EQ(knn_exact(x, k).indices.to_vector<int32_t>(), idx);
    KnnResult split = knn_exact_shaped(x, k, KnnFusedShape::parse("64x64x8/4x4/q12m10e8s512"), 0, -1, 64 * 64);
    EXPECT_EQ(split.indices.to_vector<int32_t>(), idx) << "n " << n << " split";
    EXPECT_EQ(split.distances.to_vector<float>(), dist) << "n " << n << " split";
  }
}

TEST(Knn, EveryTileShapeGivesTheSameLists) {
  // The kernel's shape changes only the speed: tiles, queue length (2 slots: nearly every push
  // overflows and retries), merge threshold and period all give the same bits as the default,
  // which matches the host (above). N off every tile size. (The streaming kernel's default: CPU
  // adapters' knn_exact takes another kernel, knn_rows_cpu_test.cpp, whose sums round otherwise.)
  Tensor x = Tensor::normal(ctx(), {777, 21}, 9);
  for (int k : {1, 33, 128}) {
    KnnResult want = knn_exact_shaped(x, k, knn_fused_shape(*ctx(), k));
    for (const char* shape :
         {"64x64x8/4x4/q16m12e1", "64x64x8/4x4/q2m1e1", "128x64x8/8x4/q12m10e8s512", "64x64x4/4x4/q8m8e4",
          "128x128x8/8x8/q16m8e3", "64x128x8/4x8/q4m3e2", "64x64x8/4x4/q16m16e1s128", "64x64x8/4x4/q16m12e2s1024",
          // staging steps the threads do not divide (BK·BM = 640 values over 256 threads)
          "64x64x10/4x4/q16m12e8", "64x64x12/4x4/q16m12e4", "128x128x10/8x8/q16m8e3",
          // every dimension in one chunk (BK ≥ D = 21), ragged and not
          "64x64x21/4x4/q16m12e2", "64x64x24/4x4/q16m12e8", "64x128x24/4x8/q4m3e1",
          // the merged lists in the staging tiles' memory (s ≤ BK·(BM + 4)) or apart, at the edge
          "64x64x8/4x4/q16m12e8s544", "64x64x8/4x4/q16m12e8s548",
          // the GPU default (knn_fused_shape)
          "64x64x8/4x4/q12m10e8s512"}) {
      KnnResult got = knn_exact_shaped(x, k, KnnFusedShape::parse(shape));
      EXPECT_EQ(got.indices.to_vector<int32_t>(), want.indices.to_vector<int32_t>()) << shape << " k " << k;
      EXPECT_EQ(got.distances.to_vector<float>(), want.distances.to_vector<float>()) << shape << " k " << k;
    }
    // The points streamed over several dispatches, each going on from the lists the last left:
    // 777·64·3 pairs a dispatch (the 64-wide shapes: 3 tiles a dispatch, 5 over the 13 tiles; the
    // 128-wide one: 1 tile, 7 dispatches), then 128·64 (blocks of 128 rows, 1 tile a dispatch);
    // the lists' copies in the tiles and apart (s548); and rows [100, 700) only.
    for (const char* shape : {"64x64x8/4x4/q12m10e8s512", "64x64x8/4x4/q16m12e8s548", "128x128x8/8x8/q16m8e3"})
      for (int64_t pairs : {777 * 64 * 3, 128 * 64}) {
        std::string what = std::string(shape) + " pairs " + std::to_string(pairs) + " k " + std::to_string(k);
        KnnResult got = knn_exact_shaped(x, k, KnnFusedShape::parse(shape), 0, -1, pairs);
        EXPECT_EQ(got.indices.to_vector<int32_t>(), want.indices.to_vector<int32_t>()) << what;
        EXPECT_EQ(got.distances.to_vector<float>(), want.distances.to_vector<float>()) << what;
        KnnResult part = knn_exact_shaped(x, k, KnnFusedShape::parse(shape), 100, 700, pairs);
        EXPECT_EQ(part.indices.to_vector<int32_t>(), want.indices.slice(0, 100, 700).to_vector<int32_t>()) << what;
        EXPECT_EQ(part.distances.to_vector<float>(), want.distances.slice(0, 100, 700).to_vector<float>()) << what;
      }
  }
  EXPECT_THROW(KnnFusedShape::parse("64x64x8/3x4/q16m12e1"), Error);  // TM not a multiple of 4
  EXPECT_THROW(KnnFusedShape::parse("64x64x8/4x4/q16m17e1"), Error);  // M past Q
  EXPECT_THROW(KnnFusedShape::parse("64x64"), Error);
  EXPECT_THROW(KnnFusedShape::parse("64x64x8/4x4/q16m12e1s100"), Error);  // no room for k = 128
  EXPECT_THROW(KnnFusedShape::parse("128x16x8/8x4/q16m8e1"), Error);      // 64 threads for 128 rows
  // Pieces missing or left over are refused, not read as the nearest shape.
  for (const char* malformed : {"64x64x8/4x4/q16m12e1s/no-push", "64x64x8/4x4/q16m12e8junk", "64x64x8/4x4/q16m12e8/",
                                "64x64x8/4x4/q16m12e8/fast", " 64x64x8/4x4/q16m12e8", "0x0x8/4x4/q16m12e8"})
    EXPECT_THROW(KnnFusedShape::parse(malformed), Error) << malformed;
  // describe() gives back what parse() reads, every field included (it keys the pipeline cache).
  for (const char* shape : {"64x64x8/4x4/q16m12e3s512", "128x128x8/8x8/q16m8e1s256/no-push"})
    EXPECT_EQ(KnnFusedShape::parse(shape).describe(), shape);
  EXPECT_EQ(KnnFusedShape::parse("64x64x8/4x4/q16m12e1").describe(), "64x64x8/4x4/q16m12e1s256");
}

TEST(Knn, BlockedMatchesHostBruteForce) {
  for (auto [n, d, k, block, segment] :
       std::vector<std::tuple<int64_t, int64_t, int, int64_t, int64_t>>{{300, 17, 10, 0, 0},
                                                                        {257, 3, 5, 64, 0},
                                                                        {100, 50, 15, 7, 0},
                                                                        {40, 1, 1, 0, 0},
                                                                        {1300, 8, 6, 500, 0},
                                                                        {1300, 8, 6, 500, 512},
                                                                        {300, 17, 10, 0, 10}}) {
    Ref x = random_ref({n, d}, uint32_t(n + d), DType::f32, -1, 1);
    KnnResult r = knn_exact_blocked(upload(x, DType::f32), k, 0, n, block, segment);
    ASSERT_EQ(r.indices.shape(), Shape({n, k}));
    std::string what = "blocked n " + std::to_string(n) + " d " + std::to_string(d) + " k " + std::to_string(k);
    EXPECT_EQ(compare_lists(r, host_lists(x.v, n, d), 0, k, what), 0) << what;
  }
}

TEST(Knn, BadInput) {
  Tensor x = Tensor::uniform(ctx(), {10, 3}, 1);
  EXPECT_THROW(knn_exact(x, 10), Error);  // k ≥ N
  EXPECT_THROW(knn_exact(x, 0), Error);
  EXPECT_THROW(knn_exact(x.reshape({30}), 3), Error);
  EXPECT_THROW(knn_exact(x.cast(DType::i32), 3), Error);
  EXPECT_THROW(knn_exact(x, 129), Error);
  EXPECT_THROW(knn_exact_blocked(x, 10, 0, 10), Error);
}

TEST(Knn, BlockedDefaultBlocksFitTheBindingLimit) {
  // 12,000 points need 576 MB of distances at once, past lavapipe's 128 MiB binding limit: the
  // default blocks must stay within it (this failed on lavapipe before the limit was used).
  int64_t n = 12000;
  Tensor x = Tensor::normal(ctx(), {n, 2}, 5);
  KnnResult r = knn_exact_blocked(x, 3, 0, n);
  EXPECT_EQ(r.indices.shape(), Shape({n, 3}));
  auto d = r.distances.slice(0, 0, 100).to_vector<float>();
  for (size_t i = 0; i + 1 < d.size(); i += 3) EXPECT_LE(d[i], d[i + 1]);
}

TEST(Knn, NeighbourDescentRecallsMostExactNeighbours) {
  // Clustered points in 20-D: a few rounds of neighbour descent recover ≥ 90% of the exact
  // lists, deterministically.
  int64_t n = 3000;
  Tensor centres = Tensor::normal(ctx(), {30, 20}, 31, 0, 3);
  std::vector<int32_t> lab(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lab[size_t(i)] = int32_t(i % 30);
  Tensor x = add(index_select(centres, 0, Tensor::from_vector(ctx(), lab, {n})), Tensor::normal(ctx(), {n, 20}, 32));
  KnnResult exact = knn_exact(x, 10);
  KnnResult approx = knn_approx(x, 10, 8);
  double recall = knn_recall(approx, exact);
  EXPECT_GE(recall, 0.9) << "recall@10 of neighbour descent";
  EXPECT_EQ(knn_approx(x, 10, 8).indices.to_vector<int32_t>(), approx.indices.to_vector<int32_t>());
  auto d = approx.distances.to_vector<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int q = 0; q + 1 < 10; ++q) ASSERT_LE(d[size_t(i * 10 + q)], d[size_t(i * 10 + q + 1)]);
  EXPECT_THROW(knn_approx(x, 0), Error);
  // Reverse neighbours make descent converge faster: after 3 rounds, more recall with them.
  double without = knn_recall(knn_approx(x, 10, 3, 1, 0), exact), with = knn_recall(knn_approx(x, 10, 3, 1, 10), exact);
  EXPECT_GT(with, without + 0.02) << "reverse neighbours: " << with << " vs " << without;
  // Unstructured 30-D points, the hard case for descent: nearest_neighbours' settings (a
  // search list of 32, reverse neighbours) still recall ≥ 90% of k = 15, on a sample as the
  // CLI measures it.
  Tensor hard = Tensor::normal(ctx(), {25000, 30}, 33);
  EXPECT_GE(knn_recall_sampled(hard, nearest_neighbours(hard, 15), 400), 0.9);
}

TEST(Knn, RowsAndSampledRecall) {
  Tensor x = Tensor::normal(ctx(), {700, 12}, 41);
  KnnResult all = knn_exact(x, 7);
  // The streaming kernel on a row range (off its 64/128-row blocks) gives the same bits.
  KnnResult part = knn_exact_rows(x, 7, 300, 420);
  EXPECT_EQ(part.indices.to_vector<int32_t>(), all.indices.slice(0, 300, 420).to_vector<int32_t>());
  EXPECT_EQ(part.distances.to_vector<float>(), all.distances.slice(0, 300, 420).to_vector<float>());
  // The blocked path: several blocks inside the range; one segment a row (the CPU default) or
  // segments of 64. Same ids; distances to rounding (another summation order).
  for (int64_t segment : {0, 64}) {
    KnnResult rows = knn_exact_blocked(x, 7, 300, 420, 50, segment);
    EXPECT_EQ(rows.indices.to_vector<int32_t>(), all.indices.slice(0, 300, 420).to_vector<int32_t>());
    auto got = rows.distances.to_vector<float>(), want = all.distances.slice(0, 300, 420).to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + want[i]));
  }
  EXPECT_THROW(knn_exact_rows(x, 7, 500, 500), Error);
  EXPECT_THROW(knn_exact_rows(x, 7, 600, 701), Error);
  // Sampled recall: 1 for the exact lists, and that of the whole set (within sampling) for
  // approximate ones.
  EXPECT_DOUBLE_EQ(knn_recall_sampled(x, all, 200), 1.0);
  KnnResult approx = knn_approx(x, 7, 2);
  double full = knn_recall(approx, all), sampled = knn_recall_sampled(x, approx, 350);
  EXPECT_LT(full, 1.0);
  EXPECT_NEAR(sampled, full, 0.08);
}

// Descent from a given graph (knn_refine): a graph whose lists lost half their entries (−1) and
// had a quarter of the rest replaced by far points gets most of its recall back in one round;
// refining the exact graph changes nothing; the same input gives the same bits; entries that are
// not rows are refused.
TEST(Knn, RefineFromAGivenGraph) {
  int64_t n = 2000;
  const int k = 8;
  Tensor x = Tensor::normal(ctx(), {n, 10}, 51);
  KnnResult exact = knn_exact(x, k);
  std::vector<int32_t> idx = exact.indices.to_vector<int32_t>();
  for (size_t e = 0; e < idx.size(); ++e) {
    if (e % 2 == 1) idx[e] = -1;
    if (e % 8 == 0) idx[e] = int32_t((e * 7919) % size_t(n));
  }
  Tensor damaged = Tensor::from_vector(ctx(), idx, {n, k});
  KnnResult damaged_lists{damaged, Tensor::zeros(ctx(), {n, k})};
  double before = knn_recall(damaged_lists, exact);
  KnnResult refined = knn_refine(x, damaged, 1);
  double after = knn_recall(refined, exact);
  EXPECT_GT(after, before + 0.2) << "recall " << before << " → " << after;
  EXPECT_EQ(knn_refine(x, damaged, 1).indices.to_vector<int32_t>(), refined.indices.to_vector<int32_t>());
  KnnResult again = knn_refine(x, exact.indices, 2);
  EXPECT_EQ(again.indices.to_vector<int32_t>(), exact.indices.to_vector<int32_t>());
  std::vector<int32_t> bad = exact.indices.to_vector<int32_t>();
  bad[17] = int32_t(n);
  EXPECT_THROW(knn_refine(x, Tensor::from_vector(ctx(), bad, {n, k}), 1), Error);
  EXPECT_THROW(knn_refine(x, exact.indices, 0), Error);
  EXPECT_THROW(knn_refine(x, exact.indices.slice(0, 0, 10).contiguous(), 1), Error);
}
