// The generated line FFTs (src/maps/fft_lines.cpp) against a float64 DFT on the host: every
// supported length class (radix-2/4/8/16 remainders, with and without the radix-3 pass, one pass
// and several), rows and columns of several arrays, forward and inverse; bad lengths refused.
#include "maps/fft_lines.hpp"

#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

using C = std::complex<double>;

std::vector<C> dft(const std::vector<C>& x, bool inverse) {
  size_t m = x.size();
  std::vector<C> w(m), y(m);
  for (size_t t = 0; t < m; ++t) w[t] = std::polar(1.0, (inverse ? 2 : -2) * std::numbers::pi * double(t) / double(m));
  for (size_t k = 0; k < m; ++k)
    for (size_t n = 0; n < m; ++n) y[k] += x[n] * w[(n * k) % m];
  return y;
}

}  // namespace

TEST(FftLines, PlansMultiplyToTheLength) {
  EXPECT_EQ(FftLines::plan(1024), (std::vector<uint32_t>{16, 16, 4}));
  EXPECT_EQ(FftLines::plan(768), (std::vector<uint32_t>{3, 16, 16}));
  EXPECT_EQ(FftLines::plan(12), (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(FftLines::plan(16), (std::vector<uint32_t>{16}));
  for (uint32_t bad : {0u, 1u, 2u, 3u, 5u, 6u * 5u, 100u, 1000u}) EXPECT_THROW(FftLines::plan(bad), Error) << bad;
  EXPECT_THROW(FftLines(ctx(), FftLines::max_length(*ctx()) * 2), Error);
}

TEST(FftLines, MatchFloat64Dft) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  for (uint32_t m : {4u, 8u, 12u, 16u, 24u, 32u, 48u, 64u, 96u, 128u, 192u, 384u, 512u, 768u, 1024u, 2048u, 4096u}) {
    if (m > FftLines::max_length(*ctx())) continue;
    FftLines fft(ctx(), m);
    // Two arrays of 5 lines of m (rows) or m lines of 5 (columns); transform lines 1–3 of each.
    for (bool rows : {true, false})
      for (bool inverse : {false, true}) {
        uint32_t lines = 3, w = 5, size = m * w;
        std::vector<float> host(2 * size_t(2 * size));
        for (auto& v : host) v = float(normal(rng));
        Tensor data = Tensor::from_vector(ctx(), host, {int64_t(2 * size), 2});
        FftLines::Layout at{lines, 2, rows ? m : 1u, size, rows ? m : 1u, rows ? 1u : w};
        fft.run(data, at, inverse);
        std::vector<float> got = data.to_vector<float>();
        double err = 0, scale = 0;
        for (uint32_t a = 0; a < 2; ++a)
          for (uint32_t l = 0; l < lines; ++l) {
            std::vector<C> x(m);
            auto idx = [&](uint32_t e) {
              return size_t(at.first + a * at.array_stride + l * at.line_stride + e * at.elem_stride);
            };
            for (uint32_t e = 0; e < m; ++e) x[e] = C(host[2 * idx(e)], host[2 * idx(e) + 1]);
            std::vector<C> want = dft(x, inverse);
            for (uint32_t e = 0; e < m; ++e) {
              err = std::max(err, std::abs(C(got[2 * idx(e)], got[2 * idx(e) + 1]) - want[e]));
              scale = std::max(scale, std::abs(want[e]));
            }
          }
        EXPECT_LT(err / scale, 2e-6) << "m " << m << (rows ? " rows" : " columns")
                                     << (inverse ? " inverse" : " forward");
        // Lines outside the layout are untouched.
        EXPECT_EQ(got[0], host[0]) << "m " << m;
        EXPECT_EQ(got[got.size() - 1], host[host.size() - 1]) << "m " << m;
      }
  }
}
