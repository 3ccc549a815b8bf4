// The CPU adapters' exact kNN kernel (knn_rows_cpu.wgsl) against brute force in float64 on the
// host: dimensions off whole vec4s (zero-padded), rows a thread 1 and 2 (the default), row ranges, several
// dispatches, and duplicates (ties by the smaller id, as the streaming kernel breaks them).
#include "maps/knn_rows_cpu.hpp"

#include <algorithm>
#include <cstdlib>
#include <random>

#include "knn_reference.hpp"
#include "maps/knn_fused.hpp"
#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

KnnResult run(const Tensor& x, int k, int64_t r0, int64_t r1, int64_t pairs = 0) {
  return knn_rows_cpu(x, (x * x).sum({1}), k, r0, r1, pairs);
}

}  // namespace

TEST(KnnRowsCpu, MatchesHostOnShapesRowsAndDispatches) {
  auto c = ctx();
  // (Each (k, D, R) is a pipeline of its own: few of them, ~10 s on lavapipe.)
  std::vector<std::tuple<int64_t, int64_t, int>> cases = {{300, 17, 10}, {129, 3, 128}, {40, 1, 1}, {200, 100, 90}};
  for (int rows_a_thread : {1, 2}) {
    ::setenv("SURFGRAD_KNN_CPU_R", std::to_string(rows_a_thread).c_str(), 1);
    for (auto [n, d, k] : cases) {
      Ref x = random_ref({n, d}, uint32_t(n * 131 + d), DType::f32, -1, 1);
      Tensor t = upload(x, DType::f32);
      std::string what = "R " + std::to_string(rows_a_thread) + " n " + std::to_string(n) + " d " + std::to_string(d) +
                         " k " + std::to_string(k);
      EXPECT_EQ(knn_mismatches(run(t, k, 0, n), x.v, n, d, k, 0, what), 0) << what;
      // A range of rows in dispatches of one workgroup's rows each (64·R pairs' worth of points).
      const int64_t r0 = n / 3, r1 = n - n / 5;
      KnnResult part = run(t, k, r0, r1, n);
      ASSERT_EQ(part.indices.shape(), Shape({r1 - r0, k}));
      EXPECT_EQ(knn_mismatches(part, x.v, n, d, k, r0, what + " rows"), 0) << what;
    }
  }
  ::unsetenv("SURFGRAD_KNN_CPU_R");
}

TEST(KnnRowsCpu, DuplicatesGiveTheStreamingKernelsLists) {
  // Four copies of every point: equal keys, so the lists are fixed by the tie rule alone, and
  // must be the streaming kernel's bit for bit.
  auto c = ctx();
  const int64_t base = 150, d = 5, n = 4 * base;
  Ref one = random_ref({base, d}, 7, DType::f32, -1, 1);
  std::vector<double> v;
  for (int copy = 0; copy < 4; ++copy) v.insert(v.end(), one.v.begin(), one.v.end());
  Tensor x = upload(Ref{{n, d}, v}, DType::f32);
  for (int k : {3, 7, 40}) {
    KnnResult rows = run(x, k, 0, n);
    KnnResult fused = knn_exact_shaped(x, k, KnnFusedShape::parse("64x64x8/4x4/q12m10e8s512"));
    EXPECT_EQ(rows.indices.to_vector<int32_t>(), fused.indices.to_vector<int32_t>()) << "k " << k;
    EXPECT_EQ(knn_mismatches(rows, v, n, d, k, 0, "duplicates k " + std::to_string(k)), 0);
  }
}

TEST(KnnRowsCpu, UsedOnCpuAdaptersUpToItsDimensions) {
  auto c = ctx();
  EXPECT_EQ(knn_rows_cpu_used(*c, 100), c->info().is_cpu);
  EXPECT_FALSE(knn_rows_cpu_used(*c, kKnnRowsCpuMaxDims + 1));
  ::setenv("SURFGRAD_KNN_CPU_ROWS", "0", 1);
  EXPECT_FALSE(knn_rows_cpu_used(*c, 100));
  ::unsetenv("SURFGRAD_KNN_CPU_ROWS");
  Tensor wide = Tensor::zeros(c, {10, kKnnRowsCpuMaxDims + 1});
  EXPECT_THROW(run(wide, 3, 0, 10), Error);
}
