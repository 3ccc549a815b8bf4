// Small sets' exact kNN kernel for GPUs (knn_rows_gpu.wgsl) against brute force in float64 on the
// host: its shapes (the adapter's, WebGPU's 16 KiB fallback, and a tiny one whose slots are not a
// power of two and whose rows sort after nearly every tile), k from 1 to 128, N off every tile
// and row count, D from 1 to 1000 (vec4 and f32 reads, odd and even counts of them), row ranges
// over several dispatches, duplicates (ties by the smaller id), and the streaming kernel's lists
// where every distance is exact. On lavapipe: SURFGRAD_KNN_GPU_ROWS=1 makes knn_exact take it.
#include "maps/knn_rows_gpu.hpp"

#include <cstdlib>
#include <random>
#include <string>

#include "knn_reference.hpp"
#include "maps/knn_fused.hpp"
#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

KnnResult run(const Tensor& x, int k, int64_t r0, int64_t r1, const KnnRowsGpuShape& shape, int64_t pairs = 0) {
  return knn_rows_gpu(x, (x * x).sum({1}), k, r0, r1, pairs, &shape);
}

// Small integer coordinates: every squared distance is exact in f32 (and in any order of sums).
Tensor integer_points(int64_t n, int64_t d, uint32_t seed, std::vector<double>& v) {
  v.assign(size_t(n * d), 0.0);
  std::mt19937 rng(seed);
  for (auto& e : v) e = double(int(rng() % 5) - 2);
  return Tensor::from_vector(ctx(), std::vector<float>(v.begin(), v.end()), {n, d});
}

const KnnRowsGpuShape kShapes[] = {{8, 128, 256}, {7, 128, 256}, {3, 64, 192}};

}  // namespace

TEST(KnnRowsGpu, MatchesHostOnShapesRowsAndDispatches) {
  auto c = ctx();
  // (Each shape, and vec4 or f32 reads, is a pipeline of its own; N·D small: ~1 min on lavapipe.)
  std::vector<std::tuple<int64_t, int64_t, int>> cases = {
      {301, 1, 1}, {300, 3, 15}, {517, 64, 90}, {260, 784, 128}, {203, 1000, 90}, {131, 17, 128}, {190, 20, 64}};
  std::vector<KnnRowsGpuShape> shapes(std::begin(kShapes), std::end(kShapes));
  shapes.push_back(knn_rows_gpu_shape(*c));
  for (const KnnRowsGpuShape& shape : shapes)
    for (auto [n, d, k] : cases) {
      if (k > shape.cap - shape.threads || shape.workgroup_bytes() > c->limits().max_compute_workgroup_storage_size)
        continue;
      Ref x = random_ref({n, d}, uint32_t(n * 131 + d), DType::f32, -1, 1);
      Tensor t = upload(x, DType::f32);
      std::string what =
          shape.describe() + " n " + std::to_string(n) + " d " + std::to_string(d) + " k " + std::to_string(k);
      KnnResult all = run(t, k, 0, n, shape);
      ASSERT_EQ(all.indices.shape(), Shape({n, k})) << what;
      EXPECT_EQ(knn_mismatches(all, x.v, n, d, k, 0, what), 0) << what;
      // A range of rows in dispatches of two workgroups' rows each.
      const int64_t r0 = n / 3, r1 = n - n / 5;
      KnnResult part = run(t, k, r0, r1, shape, n * 2 * shape.rows);
      ASSERT_EQ(part.indices.shape(), Shape({r1 - r0, k})) << what;
      EXPECT_EQ(knn_mismatches(part, x.v, n, d, k, r0, what + " rows"), 0) << what;
    }
}

TEST(KnnRowsGpu, TiesAndDuplicatesGiveTheStreamingKernelsLists) {
  // Integer coordinates: many equal distances, duplicate points, every sum exact. The lists are
  // fixed by the tie rule alone: the reference's exactly, and the streaming kernel's bit for bit.
  auto c = ctx();
  for (auto [n, d, k] :
       std::vector<std::tuple<int64_t, int64_t, int>>{{500, 3, 40}, {300, 9, 90}, {150, 1, 128}, {333, 784, 15}}) {
    std::vector<double> v;
    Tensor x = integer_points(n, d, uint32_t(n + d), v);
    KnnResult fused = knn_exact_shaped(x, k, KnnFusedShape::parse("64x64x8/4x4/q12m10e8s512"));
    auto want_i = fused.indices.to_vector<int32_t>();
    auto want_d = fused.distances.to_vector<float>();
    for (const KnnRowsGpuShape& shape : kShapes) {
      if (shape.workgroup_bytes() > c->limits().max_compute_workgroup_storage_size) continue;
      const std::string what = shape.describe() + " n " + std::to_string(n) + " d " + std::to_string(d);
      KnnResult r = run(x, k, 0, n, shape);
      EXPECT_EQ(r.indices.to_vector<int32_t>(), want_i) << what;
      EXPECT_EQ(r.distances.to_vector<float>(), want_d) << what;
      auto idx = r.indices.to_vector<int32_t>();
      auto dist = r.distances.to_vector<float>();
      int wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        auto ref = host_neighbours(v, n, d, i, k);
        for (int q = 0; q < k; ++q)
          wrong += idx[size_t(i * k + q)] != ref[size_t(q)].second ||
                   double(dist[size_t(i * k + q)]) != ref[size_t(q)].first;
      }
      EXPECT_EQ(wrong, 0) << what << ": entries off the reference's (distance, id) order";
    }
  }
}

TEST(KnnRowsGpu, ChosenForSmallSetsOnGpusAndByTheSwitch) {
  auto c = ctx();
  ::unsetenv("SURFGRAD_KNN_GPU_ROWS");
  EXPECT_EQ(knn_rows_gpu_used(*c, 10000, 784), !c->info().is_cpu);
  EXPECT_FALSE(knn_rows_gpu_used(*c, kKnnRowsGpuMaxPoints + 1, 4));
  EXPECT_FALSE(knn_rows_gpu_used(*c, 14000, 784));  // past kKnnRowsGpuMaxWork
  {
    EnvVar off("SURFGRAD_KNN_GPU_ROWS", "0");
    EXPECT_FALSE(knn_rows_gpu_used(*c, 1000, 8));
  }
  EnvVar on("SURFGRAD_KNN_GPU_ROWS", "1");
  EXPECT_TRUE(knn_rows_gpu_used(*c, 1000000, 50));
  // knn_exact takes it: the same lists as the kernel called directly with the adapter's shape.
  Ref x = random_ref({211, 6}, 5, DType::f32, -1, 1);
  Tensor t = upload(x, DType::f32);
  const KnnRowsGpuShape shape = knn_rows_gpu_shape(*c);
  EXPECT_EQ(knn_exact(t, 20).indices.to_vector<int32_t>(), run(t, 20, 0, 211, shape).indices.to_vector<int32_t>());
  EXPECT_EQ(knn_mismatches(knn_exact_rows(t, 20, 17, 190), x.v, 211, 6, 20, 17, "knn_exact_rows"), 0);
  // Bad input is refused before the kernel, naming what is wrong (check_exact).
  EXPECT_THROW(knn_exact(Tensor::zeros(c, {10}), 3), Error);
  EXPECT_THROW(knn_exact(Tensor::zeros(c, {10, 3}, DType::i32), 3), Error);
  EXPECT_THROW(knn_exact(t, 0), Error);
  EXPECT_THROW(knn_exact(t, 129), Error);
  EXPECT_THROW(knn_exact(t.slice(0, 0, 5).contiguous(), 5), Error);
  EXPECT_THROW(knn_exact_rows(t, 3, 10, 10), Error);
  EXPECT_THROW(knn_exact_rows(t, 3, 0, 212), Error);
  // A shape without room for k refuses it.
  const KnnRowsGpuShape tiny{3, 64, 192};
  EXPECT_THROW(run(t, 129, 0, 211, tiny), Error);
  // The adapter's shape fits its limits and leaves room for k = 128.
  EXPECT_LE(shape.workgroup_bytes(), c->limits().max_compute_workgroup_storage_size);
  EXPECT_GE(shape.cap - shape.threads, 128);
  EXPECT_GE(shape.rows, 1);
  // The measurements' shape switch: taken as given, refused naming itself where malformed.
  {
    EnvVar given("SURFGRAD_KNN_GPU_SHAPE", "r5t64c200");
    EXPECT_EQ(knn_rows_gpu_shape(*c).describe(), "r5t64c200");
    EXPECT_EQ(knn_mismatches(knn_exact(t, 20), x.v, 211, 6, 20, 0, "r5t64c200"), 0);
  }
  for (const char* bad : {"r8t256", "r8t256c512x", "r0t256c512", "r8t256c256"}) {
    EnvVar given("SURFGRAD_KNN_GPU_SHAPE", bad);
    try {
      knn_rows_gpu_shape(*c);
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("SURFGRAD_KNN_GPU_SHAPE"), std::string::npos) << e.what();
    }
  }
}
