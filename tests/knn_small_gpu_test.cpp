// Small sets on GPUs (knn_small_gpu.hpp): knn_exact takes distance tiles through the matmul and
// a top-k selection. Lavapipe is a CPU adapter, so the path is forced (SURFGRAD_KNN_SMALL=1) and
// checked against brute force in float64; the choice itself by adapter and size, and the blocks.
#include "maps/knn_small_gpu.hpp"

#include <algorithm>
#include <cstdlib>

#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

struct ForceSmall {
  explicit ForceSmall(const char* v) { ::setenv("SURFGRAD_KNN_SMALL", v, 1); }
  ~ForceSmall() { ::unsetenv("SURFGRAD_KNN_SMALL"); }
};

// Row i's k nearest ids (itself left out) by float64 brute force; ties by the smaller id.
std::vector<std::vector<std::pair<double, int>>> nearest(const std::vector<double>& x, int64_t n, int64_t d, int k) {
  std::vector<std::vector<std::pair<double, int>>> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    std::vector<std::pair<double, int>> all;
    for (int64_t j = 0; j < n; ++j) {
      if (j == i) continue;
      double s = 0;
      for (int64_t c = 0; c < d; ++c)
        s += (x[size_t(i * d + c)] - x[size_t(j * d + c)]) * (x[size_t(i * d + c)] - x[size_t(j * d + c)]);
      all.emplace_back(s, int(j));
    }
    std::partial_sort(all.begin(), all.begin() + k + 1, all.end());
    all.resize(size_t(k + 1));  // one more: the rank after the last, for ties
    out[size_t(i)] = std::move(all);
  }
  return out;
}

}  // namespace

TEST(KnnSmallGpu, ChosenOnGpusForSmallSetsOnly) {
  {
    ForceSmall off("0");
    EXPECT_FALSE(knn_small_gpu_used(*ctx(), 100));
  }
  {
    ForceSmall on("1");
    EXPECT_TRUE(knn_small_gpu_used(*ctx(), int64_t(1) << 30));
  }
  // Unforced: never on a CPU adapter (lavapipe), on a GPU up to kKnnSmallGpuPoints.
  const bool gpu = !ctx()->info().is_cpu;
  EXPECT_EQ(knn_small_gpu_used(*ctx(), 1000), gpu);
  EXPECT_EQ(knn_small_gpu_used(*ctx(), kKnnSmallGpuPoints), gpu);
  EXPECT_FALSE(knn_small_gpu_used(*ctx(), kKnnSmallGpuPoints + 1));
}

TEST(KnnSmallGpu, BlocksAreEqualAndTheirTilesSmall) {
  for (int64_t n : std::vector<int64_t>{2, 100, 4096, 4097, 10000, 12345, kKnnSmallGpuPoints}) {
    const int64_t rows = knn_small_gpu_block_rows(n), blocks = (n + rows - 1) / rows;
    EXPECT_LE(rows * n * 4, int64_t(64) << 20) << "n " << n;
    EXPECT_GE(rows, 1);
    EXPECT_LE(blocks * rows - n, blocks - 1) << "n " << n << ": the last block is short by less than a row a block";
  }
  EXPECT_EQ(knn_small_gpu_block_rows(4096), 4096);   // 64 MiB exactly: one block
  EXPECT_EQ(knn_small_gpu_block_rows(10000), 1667);  // 6 blocks
}

TEST(KnnSmallGpu, MatchesHostBruteForceOnFuzzedShapes) {
  ForceSmall on("1");
  std::mt19937 rng(7);
  // (n, d, k): one block, and 4,200 points in two blocks of 2,100 rows.
  for (auto [n, d, k] : std::vector<std::tuple<int64_t, int64_t, int>>{{50, 3, 5}, {333, 17, 90}, {4200, 2, 15}}) {
    Ref x = random_ref({n, d}, uint32_t(rng()), DType::f32, -1, 1);
    KnnResult r = knn_exact(upload(x, DType::f32), k);
    ASSERT_EQ(r.indices.shape(), Shape({n, k}));
    auto ref = nearest(x.v, n, d, k);
    auto idx = r.indices.to_vector<int32_t>();
    auto dist = r.distances.to_vector<float>();
    int wrong = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int q = 0; q < k; ++q) {
        const auto& row = ref[size_t(i)];
        double want = row[size_t(q)].first, tol = 1e-4 * (1 + want);
        EXPECT_NEAR(dist[size_t(i * k + q)], want, tol) << "n " << n << " row " << i << " rank " << q;
        bool tie = (q > 0 && std::abs(row[size_t(q - 1)].first - want) <= 2 * tol) ||
                   std::abs(row[size_t(q + 1)].first - want) <= 2 * tol;
        if (idx[size_t(i * k + q)] != row[size_t(q)].second && !tie) ++wrong;
      }
    EXPECT_EQ(wrong, 0) << "n " << n << " d " << d << " k " << k;
  }
}

TEST(KnnSmallGpu, RowRangesAreTheWholeListsRows) {
  ForceSmall on("1");
  Tensor x = Tensor::normal(ctx(), {700, 5}, 3);
  KnnResult all = knn_exact(x, 12), part = knn_exact_rows(x, 12, 250, 420);
  EXPECT_EQ(part.indices.to_vector<int32_t>(), all.indices.slice(0, 250, 420).contiguous().to_vector<int32_t>());
  EXPECT_EQ(part.distances.to_vector<float>(), all.distances.slice(0, 250, 420).contiguous().to_vector<float>());
}
