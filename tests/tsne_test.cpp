// t-SNE: separated clusters in 50-D come out as separated groups in 2-D; deterministic for a
// seed; the perplexity/N check.
#include <algorithm>
#include <fstream>
#include <random>

#include "maps/layout.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/maps.hpp"
#include "surfgrad/reference.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// 6 Gaussian clusters of 100 points in 50-D, centres 6σ apart.
void clusters(Tensor& x, Tensor& labels) {
  Tensor centres = Tensor::normal(ctx(), {6, 50}, 3, 0, 6);
  std::vector<int32_t> lab;
  for (int c = 0; c < 6; ++c)
    for (int i = 0; i < 100; ++i) lab.push_back(c);
  labels = Tensor::from_vector(ctx(), lab, {600});
  x = add(index_select(centres, 0, labels), Tensor::normal(ctx(), {600, 50}, 4));
}

// What the cluster maps run with: 600 points allow perplexity 20; 400 iterations separate them.
TsneOptions cluster_options() {
  TsneOptions opt;
  opt.perplexity = 20;
  opt.iterations = 400;
  return opt;
}

}  // namespace

TEST(Tsne, SeparatesClustersAndIsDeterministic) {
  Tensor x, labels;
  clusters(x, labels);
  TsneOptions opt = cluster_options();
  Tensor y = tsne(x, opt);
  ASSERT_EQ(y.shape(), Shape({600, 2}));
  for (float v : y.to_vector<float>()) ASSERT_TRUE(std::isfinite(v));
  MapQuality q = evaluate_map(x, y, labels);
  EXPECT_GE(q.knn_accuracy, 0.98) << "10-NN accuracy in 2-D";
  EXPECT_GT(q.knn_recall, 0.2) << "kNN recall@10";
  EXPECT_EQ(tsne(x, opt).to_vector<float>(), y.to_vector<float>()) << "same seed, same device: same map";
  EXPECT_GT(q.trustworthiness, 0.9);
  // The optimised map has a lower t-SNE objective than a random one.
  double kl = kl_divergence(x, y, 20);
  EXPECT_LT(kl, kl_divergence(x, Tensor::normal(ctx(), {600, 2}, 9), 20));
  EXPECT_GT(kl, 0.0);
}

TEST(Tsne, FftRepulsionMakesTheSameQualityOfMap) {
  Tensor x, labels;
  clusters(x, labels);
  TsneOptions opt = cluster_options();
  opt.repulsion = Repulsion::Exact;
  MapQuality exact = evaluate_map(x, tsne(x, opt), labels);
  opt.repulsion = Repulsion::Fft;
  Tensor y = tsne(x, opt);
  MapQuality fft = evaluate_map(x, y, labels);
  EXPECT_GE(fft.knn_accuracy, 0.98);
  EXPECT_NEAR(fft.knn_recall, exact.knn_recall, 0.03);
  EXPECT_NEAR(fft.trustworthiness, exact.trustworthiness, 0.01);
  EXPECT_EQ(tsne(x, opt).to_vector<float>(), y.to_vector<float>()) << "FFT path: same seed, same device, same map";
}

TEST(Tsne, StepsAreClippedToMaxStepNorm) {
  // From the random start N(0, 1e-4²), three steps of at most 1e-5 each move no point further
  // than 3e-5; without the clip the first step alone (learning rate N/12) goes far past it.
  Tensor x, labels;
  clusters(x, labels);
  TsneOptions opt;
  opt.perplexity = 20, opt.iterations = 3, opt.pca_init = false, opt.max_step_norm = 1e-5;
  std::vector<float> y0 = Tensor::normal(ctx(), {600, 2}, opt.seed, 0, 1e-4).to_vector<float>();
  std::vector<float> y = tsne(x, opt).to_vector<float>();
  double moved = 0;
  for (size_t i = 0; i < y.size(); i += 2)
    moved = std::max(moved, std::hypot(double(y[i]) - y0[i], double(y[i + 1]) - y0[i + 1]));
  EXPECT_LE(moved, 3e-5 * (1 + 1e-4));
  EXPECT_GT(moved, 1e-5);
  opt.max_step_norm = 0;
  std::vector<float> free = tsne(x, opt).to_vector<float>();
  double far = 0;
  for (size_t i = 0; i < y.size(); i += 2)
    far = std::max(far, std::hypot(double(free[i]) - y0[i], double(free[i + 1]) - y0[i + 1]));
  EXPECT_GT(far, 1e-4);
}

TEST(Tsne, TooFewPointsForThePerplexity) {
  Tensor x = Tensor::normal(ctx(), {50, 5}, 1);
  try {
    tsne(x, {.perplexity = 30});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_NE(std::string(e.what()).find("perplexity"), std::string::npos) << e.what();
  }
}

// ---- map inputs: bad input ends in a clear error, or documented handling ----
namespace {
std::string write_tmp(const std::string& name, const std::string& bytes) {
  std::string p = ::testing::TempDir() + "/surfgrad_map_" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}
}  // namespace

TEST(MapInputs, BadFilesAndValues) {
  expect_error(ErrorKind::IO, [] { load_points(ctx(), write_tmp("empty.csv", "")); }, {"no points"}, "no points");
  expect_error(
      ErrorKind::IO, [] { load_points(ctx(), write_tmp("ragged.csv", "1,2,3\n4,5\n")); }, {"line 2"}, "line 2");
  expect_error(
      ErrorKind::IO, [] { load_points(ctx(), write_tmp("text.csv", "1,2\nx,3\n")); }, {"non-number"}, "non-number");
  expect_error(
      ErrorKind::Value, [] { load_points(ctx(), write_tmp("nan.csv", "1,2\n3,nan\n")); }, {"point 1"}, "point 1");
  expect_error(
      ErrorKind::Value, [] { load_points(ctx(), write_tmp("inf.csv", "1,2\ninf,3\n")); }, {"infinite"}, "infinite");
  expect_error(ErrorKind::IO, [] { load_points(ctx(), write_tmp("junk.idx", "not an idx file")); }, {"IDX"}, "IDX");
  expect_error(
      ErrorKind::IO, [] { load_points(ctx(), ::testing::TempDir() + "/missing.npy"); }, {"cannot open"}, "cannot open");
  // A header line is skipped; D = 1 is a valid set of points.
  Tensor one_d = load_points(ctx(), write_tmp("oned.csv", "value\n1\n2\n3\n"));
  EXPECT_EQ(one_d.shape(), Shape({3, 1}));
  // Labels of the wrong length.
  std::string labels = write_tmp("labels.csv", "0\n1\n");
  expect_error(
      ErrorKind::Shape, [&] { load_labels(ctx(), labels, 3); }, {"2 labels for 3 points"}, "2 labels for 3 points");
  EXPECT_EQ(load_labels(ctx(), labels, 2).to_vector<int32_t>(), (std::vector<int32_t>{0, 1}));
  // An output path that cannot be written.
  expect_error(
      ErrorKind::IO, [] { write_outputs("/nonexistent-dir/map", Tensor::zeros(ctx(), {4, 2}), Tensor()); },
      {"nonexistent-dir"}, "unwritable output");
}

TEST(MapInputs, DuplicatesAndOneDimension) {
  // 200 points where every point appears twice, in 1-D: the map is finite and keeps the order
  // of the clusters' labels apart.
  std::vector<float> v;
  std::vector<int32_t> lab;
  for (int i = 0; i < 100; ++i) {
    float x = (i < 50 ? 0.0f : 10.0f) + 0.01f * float(i % 50);
    v.push_back(x), v.push_back(x);
    lab.push_back(i < 50 ? 0 : 1), lab.push_back(i < 50 ? 0 : 1);
  }
  Tensor x = Tensor::from_vector(ctx(), v, {200, 1});
  Tensor y = tsne(x, {.perplexity = 10, .iterations = 300});
  for (float f : y.to_vector<float>()) ASSERT_TRUE(std::isfinite(f));
  EXPECT_GE(evaluate_map(x, y, Tensor::from_vector(ctx(), lab, {200})).knn_accuracy, 0.95);
}

TEST(MapQuality, TrustworthinessMatchesHostDefinition) {
  // A host brute force of Venna & Kaski's formula on a small set, against the GPU version.
  int64_t n = 120;
  Ref x = random_ref({n, 6}, 11, DType::f32), y = random_ref({n, 2}, 12, DType::f32);
  const int k = 5;
  auto sq = [](const Ref& a, int64_t i, int64_t j) {
    int64_t d = a.shape[1];
    double s = 0;
    for (int64_t c = 0; c < d; ++c)
      s += (a.v[size_t(i * d + c)] - a.v[size_t(j * d + c)]) * (a.v[size_t(i * d + c)] - a.v[size_t(j * d + c)]);
    return s;
  };
  double penalty = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<std::pair<double, int64_t>> hi, lo;
    for (int64_t j = 0; j < n; ++j)
      if (j != i) hi.emplace_back(sq(x, i, j), j), lo.emplace_back(sq(y, i, j), j);
    std::sort(hi.begin(), hi.end());
    std::sort(lo.begin(), lo.end());
    for (int q = 0; q < k; ++q) {
      int64_t j = lo[size_t(q)].second;
      int64_t rank = 0;
      while (hi[size_t(rank)].second != j) ++rank;
      if (rank + 1 > k) penalty += double(rank + 1 - k);
    }
  }
  double want = 1.0 - 2.0 / (double(n) * k * (2.0 * double(n) - 3.0 * k - 1.0)) * penalty;
  EXPECT_NEAR(trustworthiness(upload(x, DType::f32), upload(y, DType::f32), k), want, 1e-9);
  // In several distance blocks (each must write its own rows of counts).
  EXPECT_NEAR(trustworthiness(upload(x, DType::f32), upload(y, DType::f32), k, 10000, 7), want, 1e-9);
  // A map that is the data itself is perfectly trustworthy.
  Tensor p = upload(random_ref({n, 2}, 13, DType::f32), DType::f32);
  EXPECT_NEAR(trustworthiness(p, p, k), 1.0, 1e-12);
}

TEST(Pca, RecoversALowRankSubspace) {
  // Rank-3 data in 40-D (plus an offset): 3 components keep every pairwise distance and all of
  // the variance, in descending order.
  int64_t n = 500, d = 40;
  Tensor a = Tensor::normal(ctx(), {n, 3}, 21), b = Tensor::normal(ctx(), {3, d}, 22);
  Tensor x = add(matmul(mul(a, Tensor::from_vector(ctx(), std::vector<float>{3, 2, 1}, {3})), b),
                 Tensor::full(ctx(), {d}, 5.0));
  PcaResult r = pca(x, 3, 1);
  ASSERT_EQ(r.scores.shape(), Shape({n, 3}));
  HostArray hx = HostArray::from(x), hs = HostArray::from(r.scores);
  for (int64_t i = 0; i < n; i += 37)
    for (int64_t j = i + 1; j < n; j += 53) {
      double dx = 0, ds = 0;
      for (int64_t c = 0; c < d; ++c)
        dx += std::pow(hx.values()[size_t(i * d + c)] - hx.values()[size_t(j * d + c)], 2);
      for (int64_t c = 0; c < 3; ++c)
        ds += std::pow(hs.values()[size_t(i * 3 + c)] - hs.values()[size_t(j * 3 + c)], 2);
      EXPECT_NEAR(std::sqrt(ds), std::sqrt(dx), 1e-3 * (1 + std::sqrt(dx))) << i << ", " << j;
    }
  double total = 0;  // trace of the covariance
  for (int64_t c = 0; c < d; ++c) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; ++i) m += hx.values()[size_t(i * d + c)];
    m /= double(n);
    for (int64_t i = 0; i < n; ++i) v += std::pow(hx.values()[size_t(i * d + c)] - m, 2);
    total += v / double(n - 1);
  }
  double kept = r.explained_variance[0] + r.explained_variance[1] + r.explained_variance[2];
  EXPECT_NEAR(kept, total, 1e-3 * total);
  EXPECT_GE(r.explained_variance[0], r.explained_variance[1]);
  EXPECT_GE(r.explained_variance[1], r.explained_variance[2]);
  EXPECT_THROW(pca(x, 41), Error);
}

TEST(Umap, SeparatesClustersAndIsDeterministic) {
  Tensor x, labels;
  clusters(x, labels);
  Tensor y = umap(x, {.epochs = 200});
  ASSERT_EQ(y.shape(), Shape({600, 2}));
  for (float v : y.to_vector<float>()) ASSERT_TRUE(std::isfinite(v));
  MapQuality q = evaluate_map(x, y, labels);
  EXPECT_GE(q.knn_accuracy, 0.98) << "10-NN accuracy in 2-D";
  EXPECT_GT(q.knn_recall, 0.15);
  EXPECT_EQ(umap(x, {.epochs = 200}).to_vector<float>(), y.to_vector<float>()) << "same seed, same device: same map";
  EXPECT_THROW(umap(x, {.n_neighbors = 600}), Error);
}

TEST(Umap, FuzzyUnionMatchesHost) {
  // Random lists (some pairs both ways, some one way, a few −1 slots) and memberships, against
  // the union computed in float64 on the host.
  int64_t n = 300;
  int k = 7;
  std::mt19937 rng(5);
  std::vector<int32_t> idx(static_cast<size_t>(n * k));
  std::vector<float> w(idx.size());
  for (int64_t i = 0; i < n; ++i)
    for (int s = 0; s < k; ++s) {
      // Neighbours among the next 12 points (wrapping), so many pairs appear both ways.
      idx[size_t(i * k + s)] = rng() % 40 == 0 ? -1 : int32_t((i + 1 + rng() % 12) % n);
      w[size_t(i * k + s)] = float(rng() % 1000) / 1000.0f;
    }
  int epochs = 20;
  Tensor u = umap_fuzzy_union(Tensor::from_vector(ctx(), w, {n, k}), Tensor::from_vector(ctx(), idx, {n, k}), epochs);
  std::vector<double> want(idx.size());
  double umax = 0;
  for (int64_t e = 0; e < n * k; ++e) {
    int64_t i = e / k, j = idx[size_t(e)];
    double a = w[size_t(e)], b = 0;
    bool both = false;
    for (int s = 0; j >= 0 && s < k && !both; ++s)
      if (idx[size_t(j * k + s)] == i) b = w[size_t(j * k + s)], both = true;
    double v = a + b - a * b;
    want[size_t(e)] = both ? v / 2 : v;
    umax = std::max(umax, want[size_t(e)]);
  }
  auto got = u.to_vector<float>();
  int zeroed = 0;
  for (size_t e = 0; e < got.size(); ++e) {
    double v = want[e] / umax;
    if (std::abs(v - 1.0 / epochs) < 1e-5) continue;  // at the cut: either side is right
    if (v < 1.0 / epochs) {
      EXPECT_EQ(got[e], 0.0f) << e;
      ++zeroed;
    } else {
      EXPECT_NEAR(got[e], v, 1e-5) << e;
    }
  }
  EXPECT_GT(zeroed, 0) << "some weights fall below the cut";
}

TEST(PointBlocks, LoadInBlocksAndPcaOverBlocks) {
  // A .npy file loaded in blocks of 100 rows gives the same points as one load; PCA over the
  // blocks gives the same scores as over one tensor.
  Tensor x = add(matmul(Tensor::normal(ctx(), {450, 4}, 31), Tensor::normal(ctx(), {4, 30}, 32)),
                 Tensor::normal(ctx(), {450, 30}, 33, 0, 0.01));
  std::string path = ::testing::TempDir() + "/surfgrad_blocks.npy";
  save_npy(x, path);
  PointBlocks b = load_point_blocks(ctx(), path, 100 * 30 * 4);
  ASSERT_EQ(b.blocks.size(), 5u);
  EXPECT_EQ(b.rows(), 450);
  EXPECT_EQ(b.dims(), 30);
  EXPECT_EQ(b.single().to_vector<float>(), x.to_vector<float>());
  PcaResult one = pca(x, 3, 5), blocked = pca(b, 3, 5);
  std::vector<float> s1 = one.scores.to_vector<float>(), s2 = blocked.scores.to_vector<float>();
  ASSERT_EQ(s1.size(), s2.size());
  double scale = 0;
  for (float v : s1) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < s1.size(); ++i) ASSERT_NEAR(s1[i], s2[i], 1e-3 * scale) << i;
  for (int c = 0; c < 3; ++c)
    EXPECT_NEAR(one.explained_variance[size_t(c)], blocked.explained_variance[size_t(c)],
                1e-4 * one.explained_variance[0]);
  // The built-in set is generated in fixed blocks of 32,768 rows: a smaller set is a prefix of a
  // larger one, whatever the adapter.
  Tensor la, lb;
  PointBlocks big = builtin_point_blocks(ctx(), 40000, la);
  EXPECT_EQ(big.blocks.size(), 2u);
  EXPECT_EQ(builtin_points(ctx(), 100, lb).to_vector<float>(), big.blocks[0].slice(0, 0, 100).to_vector<float>());
  EXPECT_EQ(lb.to_vector<int32_t>(), la.slice(0, 0, 100).to_vector<int32_t>());
}
