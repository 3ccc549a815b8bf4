// Maps do not depend on the points' unit: the rescaling by a power of two (maps/input_scale),
// and the same map quality from points ×1e-20 to ×1e15 for t-SNE and UMAP, exact and descent kNN.
#include "maps/input_scale.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace surfgrad;
using sgtest::ctx;

namespace {

constexpr int64_t kPoints = 240;

// Three well-separated Gaussian clusters in 16-D (point i in cluster i mod 3), spread ~40 per
// coordinate: every map of them at every scale should reach a 10-NN accuracy of 1.
Tensor clusters() {
  Tensor centres = Tensor::normal(ctx(), {3, 16}, 3, 0, 8);
  std::vector<int32_t> which(static_cast<size_t>(kPoints));
  for (int64_t i = 0; i < kPoints; ++i) which[size_t(i)] = int32_t(i % 3);
  Tensor labels = Tensor::from_vector(ctx(), which, {kPoints});
  return add(index_select(centres, 0, labels), Tensor::normal(ctx(), {kPoints, 16}, 4)).contiguous();
}

Tensor labels() {
  std::vector<int32_t> which(static_cast<size_t>(kPoints));
  for (int64_t i = 0; i < kPoints; ++i) which[size_t(i)] = int32_t(i % 3);
  return Tensor::from_vector(ctx(), which, {kPoints});
}

PointBlocks blocks_of(const Tensor& x) {
  PointBlocks b;
  b.blocks.push_back(x);
  return b;
}

std::string error_of(const Tensor& x) {
  try {
    PointBlocks b = blocks_of(x);
    normalise_input_scale(b);
  } catch (const Error& e) {
    EXPECT_EQ(int(e.kind()), int(ErrorKind::Value)) << e.what();
    return e.message();
  }
  return "";
}

MapOptions options(MapMethod method, KnnMethod knn) {
  MapOptions o;
  o.method = method;
  o.knn = knn;
  o.seed = 7;
  o.tsne.perplexity = 10;
  o.tsne.iterations = 250;
  o.tsne.exaggeration_iterations = 100;
  o.umap.n_neighbors = 12;
  o.umap.epochs = 150;
  if (method == MapMethod::Umap) o.pca_components = 8;  // PCA runs on the rescaled points too
  return o;
}

// A map that is not collapsed: finite, and wider than a unit on both axes.
void expect_spread_out(const Tensor& y, const std::string& what) {
  std::vector<float> v = y.to_vector<float>();
  float lo[2] = {v[0], v[1]}, hi[2] = {v[0], v[1]};
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_TRUE(std::isfinite(v[i])) << what;
    lo[i % 2] = std::min(lo[i % 2], v[i]);
    hi[i % 2] = std::max(hi[i % 2], v[i]);
  }
  EXPECT_GT(hi[0] - lo[0], 1.0f) << what;
  EXPECT_GT(hi[1] - lo[1], 1.0f) << what;
}

}  // namespace

TEST(InputScale, PointsInsideTheBandAreUsedAsTheyAre) {
  Tensor x = clusters();
  PointBlocks b = blocks_of(x);
  EXPECT_EQ(normalise_input_scale(b), 0);
  EXPECT_EQ(b.blocks[0].to_vector<float>(), x.to_vector<float>());
}

TEST(InputScale, TinyAndHugePointsAreScaledByAnExactPowerOfTwo) {
  Tensor x = clusters();
  for (double scale : {1e-30, 1e-20, 1e-9, 1e10, 1e30}) {
    Tensor in = (x * scale).contiguous();
    std::vector<float> before = in.to_vector<float>();
    PointBlocks b = blocks_of(in);
    int shift = normalise_input_scale(b);
    EXPECT_NE(shift, 0) << scale;
    EXPECT_EQ(in.to_vector<float>(), before) << "the caller's points must not change";
    std::vector<float> out = b.blocks[0].to_vector<float>();
    ASSERT_EQ(out.size(), before.size());
    float spread = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out[i], std::ldexp(before[i], shift)) << "scale " << scale << ", value " << i;
      spread = std::max(spread, std::abs(out[i] - out[i % 16]));
    }
    EXPECT_GE(spread, 1.0f) << scale;
    EXPECT_LT(spread, 2.0f) << scale;
  }
}

TEST(InputScale, HugeValuesWhoseDifferencesOverflowAreScaled) {
  // 3e38 − (−3e38) overflows f32: the spread is then bounded by twice the largest value.
  std::vector<float> v = {3e38f, 1e38f, -3e38f, 2e38f, 1e30f, -1e37f};
  PointBlocks b = blocks_of(Tensor::from_vector(ctx(), v, {3, 2}));
  int shift = normalise_input_scale(b);
  EXPECT_EQ(shift, -std::ilogb(6e38));
  std::vector<float> out = b.blocks[0].to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(out[i], std::ldexp(v[i], shift)) << i;
}

TEST(InputScale, RefusesIdenticalAndNonFinitePointsOnly) {
  EXPECT_NE(error_of(Tensor::full(ctx(), {200, 8}, 3.5e-30)).find("identical"), std::string::npos);
  EXPECT_NE(error_of(Tensor::full(ctx(), {200, 8}, -2e30)).find("identical"), std::string::npos);
  std::vector<float> v(200 * 8, 1.0f);
  v[77] = 1.0f + 0x1p-23f;  // one ulp apart: distinct, and mapped
  EXPECT_EQ(error_of(Tensor::from_vector(ctx(), v, {200, 8})), "");
  v[78] = std::nanf("");
  EXPECT_NE(error_of(Tensor::from_vector(ctx(), v, {200, 8})).find("NaN or infinity"), std::string::npos);
  v[78] = INFINITY;
  EXPECT_NE(error_of(Tensor::from_vector(ctx(), v, {200, 8})).find("NaN or infinity"), std::string::npos);
}

// The checks are one kernel over all blocks (input_stats.wgsl): a bad value anywhere (any block,
// the last element, a NaN with a payload, −inf) is refused, and the spread the scale is chosen by
// is the host's largest |x_ij − x_0j| over every block (x_0 from the first).
TEST(InputScale, EveryBlockIsCheckedAndMeasured) {
  std::mt19937 gen(41);
  const int64_t d = 7;
  const std::vector<int64_t> rows = {1, 300, 4097, 13};
  std::vector<std::vector<float>> host;
  for (int64_t r : rows) {
    std::normal_distribution<float> g(0.0f, 1e-6f);
    std::vector<float> v(size_t(r * d));
    for (float& e : v) e = g(gen);
    host.push_back(v);
  }
  host[2][size_t(rows[2] * d - 1)] = 5e-4f;  // the largest difference: the third block's last value
  auto blocks = [&] {
    PointBlocks b;
    for (size_t i = 0; i < rows.size(); ++i) b.blocks.push_back(Tensor::from_vector(ctx(), host[i], {rows[i], d}));
    return b;
  };
  double spread = 0;
  for (const auto& v : host)
    for (size_t i = 0; i < v.size(); ++i) spread = std::max(spread, std::abs(double(v[i]) - double(host[0][i % d])));
  PointBlocks b = blocks();
  const int shift = normalise_input_scale(b);  // a spread of ~5e-4, inside the band: untouched
  EXPECT_EQ(shift, 0);
  {  // all blocks ×2^-100: the spread leaves the band, and the scale is the one it asks for
    for (auto& v : host)
      for (float& e : v) e = std::ldexp(e, -100);
    PointBlocks t = blocks();
    EXPECT_EQ(normalise_input_scale(t), 100 - std::ilogb(spread)) << spread;
    for (auto& v : host)
      for (float& e : v) e = std::ldexp(e, 100);
  }
  const uint32_t payload_nan = 0x7fc00123u;
  float nan_with_payload;
  std::memcpy(&nan_with_payload, &payload_nan, 4);
  for (float bad : {std::nanf(""), nan_with_payload, INFINITY, -INFINITY}) {
    for (size_t which : {size_t(1), size_t(3)}) {
      const float kept = host[which].back();
      host[which].back() = bad;
      PointBlocks t = blocks();
      try {
        normalise_input_scale(t);
        ADD_FAILURE() << "accepted " << bad << " in block " << which;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("NaN or infinity"), std::string::npos) << e.what();
      }
      host[which].back() = kept;
    }
  }
}

// Scaling by a power of two is exact, and t-SNE's steps are equivariant under it (the bandwidth
// bisection doubles and halves from 1; the start is scaled to a fixed deviation), so points
// ×2^-80 and ×2^90, which collapsed or overflowed before and are rescaled now, map bitwise as ×1.
TEST(InputScale, PowerOfTwoScalesGiveBitwiseTheSameMap) {
  Tensor x = clusters();
  MapOptions o = options(MapMethod::Tsne, KnnMethod::Exact);
  o.tsne.iterations = 60;
  o.tsne.exaggeration_iterations = 20;
  // The rescale is exact: points ×2^-80 and ×2^90 are brought to the same points, those of x
  // times the power of two that puts their spread in [1, 2), which are inside the band and map
  // untouched. (Against x itself the maps agree in quality, not in bits, on every backend: the
  // GLES path is not bitwise equivariant to powers of two.)
  PointBlocks tiny;
  tiny.blocks.push_back((x * 0x1p-80).contiguous());
  const int shift = normalise_input_scale(tiny);
  std::vector<float> y = map_points((x * std::ldexp(1.0, shift - 80)).contiguous(), o).embedding.to_vector<float>();
  EXPECT_EQ(map_points((x * 0x1p-80).contiguous(), o).embedding.to_vector<float>(), y);
  EXPECT_EQ(map_points((x * 0x1p90).contiguous(), o).embedding.to_vector<float>(), y);
}

// The sweep: the same points ×1e-25 … ×1e25 (which gave all-zero maps at 1e-15 and below,
// were "identical" at 1e-25, a NaN map at 1e10 and were refused at 1e19) map as well as ×1, for
// both methods and both kNN paths.
TEST(InputScale, MapQualityIsTheSameFromTinyToHugeScales) {
  Tensor x = clusters(), l = labels();
  for (MapMethod method : {MapMethod::Tsne, MapMethod::Umap})
    for (KnnMethod knn : {KnnMethod::Exact, KnnMethod::Descent}) {
      MapOptions o = options(method, knn);
      double reference = evaluate_map(x, map_points(x, o).embedding, l).knn_accuracy;
      for (double scale : {1e-25, 1e-20, 1e-10, 1e10, 1e15, 1e25}) {
        std::string what = std::string(method == MapMethod::Tsne ? "t-SNE" : "UMAP") +
                           (knn == KnnMethod::Exact ? ", exact kNN" : ", descent kNN") + ", scale " +
                           std::to_string(scale);
        MapResult r = map_points((x * scale).contiguous(), o);
        expect_spread_out(r.embedding, what);
        EXPECT_NEAR(evaluate_map(x, r.embedding, l).knn_accuracy, reference, 0.01) << what;
      }
    }
}

// The cosine metric scales the rows to unit length through their squares, which underflow or
// overflow for tiny or huge points: those are rescaled first.
TEST(InputScale, CosineMapsOfTinyAndHugePoints) {
  Tensor x = clusters(), l = labels();
  MapOptions o = options(MapMethod::Tsne, KnnMethod::Exact);
  o.metric = MapMetric::Cosine;
  double reference = evaluate_map(x, map_points(x, o).embedding, l).knn_accuracy;
  for (double scale : {1e-25, 1e25}) {
    MapResult r = map_points((x * scale).contiguous(), o);
    expect_spread_out(r.embedding, "cosine, scale " + std::to_string(scale));
    EXPECT_NEAR(evaluate_map(x, r.embedding, l).knn_accuracy, reference, 0.01) << scale;
  }
}
