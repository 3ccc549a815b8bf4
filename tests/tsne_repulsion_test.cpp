// t-SNE's FFT-accelerated repulsion against the exact all-pairs sum (itself checked against a
// float64 host sum), on clustered and uniform layouts of several extents; determinism.
#include "maps/tsne_repulsion.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// Clusters of points in 2-D spread over about `extent` units.
Tensor layout(int64_t n, double extent, uint64_t seed) {
  Tensor centres = Tensor::uniform(ctx(), {8, 2}, seed, -extent / 2, extent / 2);
  std::vector<int32_t> which;
  for (int64_t i = 0; i < n; ++i) which.push_back(int32_t(i % 8));
  Tensor c = index_select(centres, 0, Tensor::from_vector(ctx(), which, {n}));
  return add(c, Tensor::normal(ctx(), {n, 2}, seed + 1, 0, extent / 20)).contiguous();
}

struct Errors {
  double force = 0, z = 0;  // relative RMS error of the force vectors; relative error of Σ Z
};

Errors compare(const std::vector<float>& got, const std::vector<float>& want) {
  double df = 0, f = 0, zg = 0, zw = 0;
  for (size_t i = 0; i < want.size(); i += 4) {
    df += std::pow(got[i] - want[i], 2) + std::pow(got[i + 1] - want[i + 1], 2);
    f += std::pow(want[i], 2) + std::pow(want[i + 1], 2);
    zg += got[i + 2], zw += want[i + 2];
  }
  return {std::sqrt(df / f), std::abs(zg - zw) / zw};
}

}  // namespace

TEST(TsneRepulsion, ExactMatchesHostSum) {
  // 300: one workgroup's points (256) and part of another; 1,797 (scikit-learn's digits): seven
  // full tiles and a partial one, every point checked (threads hold 8 points each).
  for (int64_t n : {300, 1797}) {
    Tensor y = layout(n, 30, 5);
    std::vector<float> pos = y.to_vector<float>(), got = tsne_repulsion(y, Repulsion::Exact).to_vector<float>();
    for (int64_t i = 0; i < n; i += (n < 1000 ? 7 : 1)) {
      double fx = 0, fy = 0, z = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (j == i) continue;
        double dx = double(pos[size_t(2 * i)]) - pos[size_t(2 * j)],
               dy = double(pos[size_t(2 * i + 1)]) - pos[size_t(2 * j + 1)];
        double q = 1 / (1 + dx * dx + dy * dy);
        fx += q * q * dx, fy += q * q * dy, z += q;
      }
      EXPECT_NEAR(got[size_t(4 * i)], fx, 1e-4 * (1 + std::abs(fx))) << i;
      EXPECT_NEAR(got[size_t(4 * i + 1)], fy, 1e-4 * (1 + std::abs(fy))) << i;
      EXPECT_NEAR(got[size_t(4 * i + 2)], z, 1e-4 * z) << i;
    }
  }
}

TEST(TsneRepulsion, BoxExtentIsTheHostExtent) {
  // bounds(): tsne_bbox.wgsl on CPU adapters, y.min/y.max elsewhere; min and max are exact, so
  // the extents agree to the bit (one point, a partial thread stride, many strides).
  TsneRepulsion r(ctx());
  for (int64_t n : {1, 300, 10001}) {
    Tensor y = layout(n, 40, uint64_t(n));
    EXPECT_EQ(r.box_extent(y), TsneRepulsion::extent(y)) << n;
  }
}

TEST(TsneRepulsion, TotalQIsTheColumnSum) {
  // total_q(): tsne_z.wgsl on CPU adapters (64 partial sums), the column sum elsewhere; against
  // a float64 host sum.
  TsneRepulsion r(ctx());
  for (int64_t n : {1, 300, 10001}) {
    Tensor y = layout(n, 40, uint64_t(n)), out = tsne_repulsion(y, Repulsion::Exact);
    std::vector<float> o = out.to_vector<float>();
    double want = 0;
    for (int64_t i = 0; i < n; ++i) want += o[size_t(4 * i + 2)];
    EXPECT_NEAR(r.total_q(out).to_vector<float>()[0], want, 1e-6 * std::max(want, 1.0)) << n;
  }
}

TEST(TsneRepulsion, FftMatchesExact) {
  // Extents from a freshly initialised map (tiny) to a converged one (~100 units). Cubic
  // interpolation's error falls as spacing⁴: a few percent at the default spacing of 0.5 (the
  // accuracy FIt-SNE and openTSNE run at by default), under 1e-3 at 0.125 (where the adapter's
  // limits allow that fine a grid: lavapipe's 128 MiB bindings stop at 512 nodes a side).
  for (double extent : {1e-3, 1.0, 10.0, 40.0, 120.0}) {
    Tensor y = layout(2000, extent, uint64_t(extent * 10) + 3);
    std::vector<float> exact = tsne_repulsion(y, Repulsion::Exact).to_vector<float>();
    Errors e = compare(tsne_repulsion(y, Repulsion::Fft).to_vector<float>(), exact);
    Errors fine = compare(tsne_repulsion(y, Repulsion::Fft, 0.125).to_vector<float>(), exact);
    std::printf("extent %g: force rel. RMS error %.2e (spacing 0.125: %.2e), Z rel. error %.2e (%.2e)\n", extent,
                e.force, fine.force, e.z, fine.z);
    EXPECT_LT(e.force, 8e-2) << "extent " << extent;
    EXPECT_LT(e.z, 5e-3) << "extent " << extent;
    if (extent > 40) continue;
    EXPECT_LT(fine.force, 1e-3) << "extent " << extent;
    EXPECT_LT(fine.z, 1e-4) << "extent " << extent;
  }
}

TEST(TsneRepulsion, CoarserGridsAreLessAccurate) {
  // Extent 40 on grids of 64, 128 and 256 nodes a side (FFT lengths 128, 256, 512: an odd and
  // two even numbers of radix-2 stages).
  Tensor y = layout(2000, 40, 9);
  std::vector<float> exact = tsne_repulsion(y, Repulsion::Exact).to_vector<float>();
  double last = 1;
  for (double spacing : {1.0, 0.5, 0.25}) {
    double e = compare(tsne_repulsion(y, Repulsion::Fft, spacing).to_vector<float>(), exact).force;
    EXPECT_LT(e, last) << "spacing " << spacing;
    last = e;
  }
  EXPECT_LT(last, 2e-3);
}

TEST(TsneRepulsion, FftIsDeterministic) {
  // Many points on few grid nodes: the 64-bit integer grid sums do not depend on thread order.
  Tensor y = layout(20000, 5, 17);
  std::vector<float> a = tsne_repulsion(y, Repulsion::Fft).to_vector<float>();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(tsne_repulsion(y, Repulsion::Fft).to_vector<float>(), a);
}

TEST(TsneRepulsion, BadPositions) {
  EXPECT_THROW(tsne_repulsion(Tensor::zeros(ctx(), {10, 3})), Error);
  EXPECT_THROW(tsne_repulsion(Tensor::zeros(ctx(), {10})), Error);
}

TEST(TsneRepulsion, ExactVariantsAgree) {
  // tsne_repulsion.wgsl's variants (TsneRepulsion::exact_values): GPUs' 32 threads and one
  // division a pair, CPU adapters' 8 threads and one division for two pairs, run here on this
  // adapter. Thread counts change only which thread takes a point, not its sum's order: the same
  // bits. The paired division is within a few ulps of the plain one.
  const int64_t n = 1797;
  Tensor y = layout(n, 30, 11);
  auto run = [&](int threads, bool paired) {
    auto k = kernels::Program::file(ctx(), "tsne_repulsion.wgsl",
                                    {{"THREADS", std::to_string(threads)}, {"PAIRED", paired ? "true" : "false"}});
    Tensor out = Tensor::empty(ctx(), {n, 4});
    k.launch({out, y}, {n}, kernels::groups_for(*ctx(), uint64_t(n), 8 * uint64_t(threads)));
    return out.to_vector<float>();
  };
  std::vector<float> gpu = run(32, false), eight = run(8, false), cpu = run(8, true);
  EXPECT_EQ(eight, gpu);
  double worst = 0;
  for (size_t i = 0; i < gpu.size(); ++i)
    if (i % 4 != 3) worst = std::max(worst, std::abs(double(cpu[i]) - gpu[i]) / (1e-6 + std::abs(double(gpu[i]))));
  EXPECT_LT(worst, 1e-4);
  EXPECT_GT(worst, 0.0);  // the paired kernel did run (its rounding differs somewhere)
  EXPECT_EQ(TsneRepulsion::exact_threads(*ctx()), ctx()->info().is_cpu ? 8 : 32);
}

TEST(TsneRepulsion, NarrowChargesMatchWide) {
  // The FFT's charges spread onto the grid (tsne_fft_spread.wgsl, then tsne_fft_charges.wgsl)
  // with 32-bit sums (CPU adapters: TsneRepulsion::charge_values) and 64-bit ones (GPUs), both
  // run here: each node within the 32-bit rounding of its contributions, and every variant's
  // total is N (cubic Lagrange weights sum to 1 at every point).
  const int64_t n = 5000;
  const uint32_t g = 64, m = 2 * g;
  Tensor y = Tensor::uniform(ctx(), {n, 2}, 21, 0.0, 10.0);
  const float h = 10.0f / float(g - 4), scale = std::exp2(61.0f - std::ceil(std::log2(2.0f * float(n))));
  std::vector<float> frame(16, 0.0f);
  frame[0] = frame[1] = -5.0f - h;  // the origin in coordinates centred on (5, 5)
  frame[2] = h, frame[3] = frame[4] = 5.0f, frame[5] = scale;
  Tensor f = Tensor::from_vector(ctx(), frame, {16});
  auto charges = [&](bool narrow) {
    kernels::Values v{{"NARROW", narrow ? "true" : "false"}};
    Tensor acc = Tensor::zeros(ctx(), {int64_t(g) * g * 2}, DType::u32),
           grid = Tensor::empty(ctx(), {int64_t(m) * m * 2});
    kernels::Program::file(ctx(), "tsne_fft_spread.wgsl", v)
        .launch({acc, y, f}, {n, g}, kernels::groups_for(*ctx(), uint64_t(n), 256));
    kernels::Program::file(ctx(), "tsne_fft_charges.wgsl", v)
        .launch({grid, acc, f}, {g}, kernels::groups_for(*ctx(), uint64_t(m) * m, 256));
    return grid.to_vector<float>();
  };
  std::vector<float> wide = charges(false), narrow = charges(true);
  const double step = 1.0 / (double(scale) * 0x1p-31);  // a 32-bit contribution's unit
  double worst = 0, total_wide = 0, total_narrow = 0;
  for (uint32_t e = 0; e < m * m; ++e) {
    worst = std::max(worst, std::abs(double(narrow[2 * e]) - wide[2 * e]));
    total_wide += wide[2 * e], total_narrow += narrow[2 * e];
    if (e / m >= g || e % m >= g) {
      EXPECT_EQ(narrow[2 * e], 0.0f) << e;  // the zero padding
    }
  }
  EXPECT_NEAR(total_wide, double(n), 1e-3 * double(n));
  EXPECT_NEAR(total_narrow, double(n), 1e-3 * double(n));
  // A node takes at most 16 contributions a point; the points spread over ~3,600 nodes.
  EXPECT_LT(worst, 200 * step);
  EXPECT_GT(worst, 0.0);  // the two sums round differently somewhere: both variants ran
}
