// tile_fft and tile_ifft (surfgrad/tiles.hpp): the forward against a float64 DFT written here
// (and against the kernel's host reference) on fuzzed tile heights, every power-of-two length
// from 1 to 256 and several thread counts, with arrays whose rows are not a multiple of the
// tile's; fft → ifft round trips; every adjoint and a whole FFT convolution by gradcheck; the
// workgroup memory a transform takes; bad input refused before any GPU work.
#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "surfgrad/gradcheck.hpp"
#include "surfgrad/tiles.hpp"
#include "test_util.hpp"
#include "tiles_test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
namespace tl = surfgrad::tiles;

namespace {

using C = std::complex<double>;

// Signals in [−1, 1).
Tensor rand_signal(const Shape& s, uint32_t seed) { return rand_tensor(s, seed, -1, 1); }

// The DFT of one row, by its definition: sign −1 forward, +1 inverse (then scaled by 1/n).
std::vector<C> dft(const std::vector<C>& x, bool inverse) {
  size_t n = x.size();
  std::vector<C> y(n);
  for (size_t k = 0; k < n; ++k) {
    for (size_t j = 0; j < n; ++j)
      y[k] += x[j] * std::polar(1.0, (inverse ? 2 : -2) * std::numbers::pi * double((j * k) % n) / double(n));
    if (inverse) y[k] /= double(n);
  }
  return y;
}

// A kernel that loads R×n tiles of re (and im) at block row bx, transforms them and stores the
// real and imaginary parts into two outputs.
tl::Kernel transform_kernel(int rows, int n, int threads, bool inverse, bool real_input) {
  tl::Kernel k(inverse ? "ifft_rows" : "fft_rows", threads);
  tl::Array re = k.input("re"), im = real_input ? tl::Array() : k.input("im");
  tl::Array yre = k.output("yre"), yim = k.output("yim");
  tl::At at{tl::Coord::block(0), 0};
  tl::Tile xr = tl::tile_load(re, {rows, n}, at);
  tl::ComplexTile y = real_input ? tl::tile_fft(xr)
                      : inverse  ? tl::tile_ifft(xr, tl::tile_load(im, {rows, n}, at))
                                 : tl::tile_fft(xr, tl::tile_load(im, {rows, n}, at));
  tl::tile_store(yre, y.re, at);
  tl::tile_store(yim, y.im, at);
  return k;
}

}  // namespace

// Every power-of-two length up to 256 (one pass, several passes, radix remainders 2, 4 and 8),
// tile heights that do not divide the array's rows (the last block reads zero rows and stores
// none) and thread counts that divide nothing: against the DFT's definition in float64.
TEST(TileFft, ForwardAndInverseMatchFloat64Dft) {
  std::mt19937 gen(15);
  int trial = 0;
  for (int n = 1; n <= 256; n *= 2)
    for (int variant = 0; variant < 3; ++variant, ++trial) {
      bool inverse = variant == 1, real_input = variant == 2;
      // Rows per tile within lavapipe's 32 KiB: a transform takes 6 R×n tiles of f32 at its peak.
      int rows = pick(gen, 1, std::max(1, std::min(9, 1024 / n))), threads = kThreads[trial % 5];
      int64_t array_rows = int64_t(rows) * 2 + pick(gen, 0, rows - 1);
      tl::Kernel k = transform_kernel(rows, n, threads, inverse, real_input);
      Tensor re = rand_signal({array_rows, n}, 100 + uint32_t(trial)), im = rand_signal({array_rows, n}, 200 + trial);
      Tensor yre = Tensor::full(ctx(), {array_rows, n}, 7.0), yim = Tensor::full(ctx(), {array_rows, n}, 7.0);
      tl::Grid grid{uint32_t((array_rows + rows - 1) / rows), 1, 1};
      std::vector<Tensor> ins = real_input ? std::vector<Tensor>{re} : std::vector<Tensor>{re, im};
      k.launch(ins, {yre, yim}, grid);
      Ref xr = read(re), xi = read(im);
      Ref want_re{{array_rows, n}, std::vector<double>(size_t(array_rows * n))}, want_im = want_re;
      for (int64_t r = 0; r < array_rows; ++r) {
        std::vector<C> x(static_cast<size_t>(n));
        for (int j = 0; j < n; ++j) x[size_t(j)] = C(xr.v[size_t(r * n + j)], real_input ? 0 : xi.v[size_t(r * n + j)]);
        std::vector<C> y = dft(x, inverse);
        for (int j = 0; j < n; ++j) {
          want_re.v[size_t(r * n + j)] = y[size_t(j)].real();
          want_im.v[size_t(r * n + j)] = y[size_t(j)].imag();
        }
      }
      std::string what = std::string(inverse      ? "ifft"
                                     : real_input ? "fft of a real input"
                                                  : "fft") +
                         " of " + std::to_string(rows) + "×" + std::to_string(n) + " tiles over " +
                         std::to_string(array_rows) + " rows, " + std::to_string(threads) + " threads";
      // f32 rounding grows like √(log n) relative to the output's scale, √n·|x| forward.
      double scale = inverse ? 1.0 / std::sqrt(double(n)) : std::sqrt(double(n));
      Tol tol{2e-6 * scale * (1 + std::log2(double(n))), 1e-5};
      EXPECT_TRUE(close(read(yre), want_re, tol, what + ", real part"));
      EXPECT_TRUE(close(read(yim), want_im, tol, what + ", imaginary part"));
      // The kernel's own float64 reference agrees (it is what gradcheck differentiates).
      std::vector<HostArray> hin;
      for (const Tensor& t : ins) hin.push_back(HostArray::from(t));
      std::vector<HostArray> ref =
          k.reference(hin, {HostArray::full({array_rows, n}, 7.0), HostArray::full({array_rows, n}, 7.0)}, grid);
      EXPECT_TRUE(close(ref_of(ref[0]), want_re, {1e-9, 1e-9}, what + ", host reference"));
      EXPECT_TRUE(close(ref_of(ref[1]), want_im, {1e-9, 1e-9}, what + ", host reference"));
    }
}

// ifft(fft(x)) = x, for a complex and a real input, in one kernel; and fft(ifft(x)) = x.
TEST(TileFft, RoundTripsReturnTheInput) {
  const int rows = 3, n = 64;
  for (int order = 0; order < 3; ++order) {
    tl::Kernel k("round_trip", 32);
    tl::Array re = k.input("re"), im = k.input("im"), yre = k.output("yre"), yim = k.output("yim");
    tl::At at{tl::Coord::block(0), 0};
    tl::ComplexTile x{tl::tile_load(re, {rows, n}, at), tl::tile_load(im, {rows, n}, at)};
    tl::ComplexTile y = order == 0   ? tl::tile_ifft(tl::tile_fft(x))
                        : order == 1 ? tl::tile_fft(tl::tile_ifft(x))
                                     : tl::tile_ifft(tl::tile_fft(x.re));
    tl::tile_store(yre, y.re, at);
    tl::tile_store(yim, y.im, at);
    Tensor a = rand_signal({7, n}, 31), b = rand_signal({7, n}, 32);
    Tensor ya = Tensor::full(ctx(), {7, n}, 7.0), yb = Tensor::full(ctx(), {7, n}, 7.0);
    k.launch({a, b}, {ya, yb}, {3, 1, 1});
    Ref want_im = order == 2 ? Ref{{7, n}, std::vector<double>(size_t(7 * n), 0.0)} : read(b);
    std::string what = order == 0 ? "ifft(fft(x))" : order == 1 ? "fft(ifft(x))" : "ifft(fft(real x))";
    EXPECT_TRUE(close(read(ya), read(a), {2e-6, 1e-5}, what + ", real part"));
    EXPECT_TRUE(close(read(yb), want_im, {2e-6, 1e-5}, what + ", imaginary part"));
  }
}

// The transform's work tile is 4R×n; with its two operands that is 6 R×n tiles at its peak (the
// parts reuse the operands' slots).
TEST(TileFft, WorkgroupMemoryOfATransform) {
  tl::Kernel k = transform_kernel(4, 64, 64, false, false);
  EXPECT_EQ(k.workgroup_bytes(false), uint64_t(6 * 4 * 64 * 4));
}

// Each primitive's adjoint: both parts of the output stored into one array [2, R, n] (real at
// batch 0, imaginary at batch 1), so the weighted sum gradcheck differentiates reaches both.
TEST(TileFft, GradcheckEachTransform) {
  struct Case {
    int rows, n, threads;
    bool inverse, real_input;
  };
  const Case cases[] = {{3, 8, 7, false, false}, {2, 16, 32, true, false}, {3, 32, 96, false, true},
                        {2, 1, 1, false, false}, {5, 2, 7, true, false},   {1, 4, 64, true, true}};
  uint32_t seed = 50;
  for (const Case& c : cases) {
    tl::Kernel k("fft_grad", c.threads);
    tl::Array re = k.input("re"), im = c.real_input ? tl::Array() : k.input("im"), y = k.output("y");
    tl::At at{tl::Coord::block(0), 0};
    tl::Tile xr = tl::tile_load(re, {c.rows, c.n}, at);
    tl::ComplexTile z;
    if (c.real_input)
      z = c.inverse ? tl::tile_ifft(xr, xr * xr) : tl::tile_fft(xr);
    else
      z = c.inverse ? tl::tile_ifft(xr, tl::tile_load(im, {c.rows, c.n}, at))
                    : tl::tile_fft(xr, tl::tile_load(im, {c.rows, c.n}, at));
    tl::tile_store(y, z.re, {tl::Coord::block(0), 0, 0});
    tl::tile_store(y, z.im, {tl::Coord::block(0), 0, 1});
    int64_t array_rows = 2 * c.rows - (c.rows > 1 ? 1 : 0);  // the second block hangs over the edge
    Tensor first = rand_signal({array_rows, c.n}, seed++);
    std::vector<Tensor> ins =
        c.real_input ? std::vector<Tensor>{first} : std::vector<Tensor>{first, rand_signal({array_rows, c.n}, seed++)};
    check_grad(k, ins, {2, array_rows, c.n}, {2, 1, 1},
               std::string(c.inverse ? "ifft " : "fft ") + std::to_string(c.rows) + "×" + std::to_string(c.n) +
                   (c.real_input ? " (real input)" : ""));
  }
}

// Circular convolution of a block of real signals with one filter, in one kernel: the filter's
// spectrum computed in the kernel, broadcast to the block, multiplied, transformed back; its
// gradient with respect to both the signals and the filter.
TEST(TileFft, GradcheckFftConvolutionKernel) {
  const int rows = 3, n = 16;
  tl::Kernel k("fftconv", 32);
  tl::Array x = k.input("x"), h = k.input("h"), y = k.output("y");
  tl::At at{tl::Coord::block(0), 0};
  tl::ComplexTile xs = tl::tile_fft(tl::tile_load(x, {rows, n}, at));
  tl::ComplexTile hs = tl::tile_fft(tl::tile_load(h, {1, n}));
  tl::ComplexTile hb{tl::tile_broadcast(hs.re, {rows, n}), tl::tile_broadcast(hs.im, {rows, n})};
  tl::tile_store(y, tl::tile_ifft(tl::tile_complex_mul(xs, hb)).re, at);
  Tensor xt = rand_signal({5, n}, 71), ht = rand_signal({1, n}, 72);
  // The forward against the convolution's definition: y_i = Σ_j x_j·h_(i−j mod n).
  Tensor yt = Tensor::zeros(ctx(), {5, n});
  k.launch({xt, ht}, {yt}, {2, 1, 1});
  Ref xr = read(xt), hr = read(ht);
  Ref want{{5, n}, std::vector<double>(size_t(5 * n))};
  for (int64_t r = 0; r < 5; ++r)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) want.v[size_t(r * n + i)] += xr.v[size_t(r * n + j)] * hr.v[size_t((i - j + n) % n)];
  EXPECT_TRUE(close(read(yt), want, {1e-5, 1e-5}, "circular convolution"));
  check_grad(k, {xt, ht}, {5, n}, {2, 1, 1}, "fft convolution");
}

TEST(TileFft, BadInputIsRefusedBeforeGpuWork) {
  tl::Kernel k("bad", 32);
  tl::Array x = k.input("x"), y = k.output("y");
  tl::Tile t12 = tl::tile_load(x, {4, 12}), t8 = tl::tile_load(x, {4, 8}), t16 = tl::tile_load(x, {4, 16});
  expect_error([&] { tl::tile_fft(t12); }, ErrorKind::Shape, {"tile_fft", "4×12", "12", "power of two"});
  expect_error([&] { tl::tile_ifft(t12, t12); }, ErrorKind::Shape, {"tile_ifft", "power of two"});
  expect_error([&] { tl::tile_fft(t8, t16); }, ErrorKind::Shape, {"tile_fft", "4×8", "4×16"});
  expect_error([&] { tl::tile_ifft(t8, tl::tile_load(x, {3, 8})); }, ErrorKind::Shape, {"tile_ifft", "4×8", "3×8"});
  tl::Kernel other("other", 32);
  tl::Tile elsewhere = tl::tile_load(other.input("z"), {4, 8});
  expect_error([&] { tl::tile_fft(t8, elsewhere); }, ErrorKind::Value, {"tile_fft", "different kernels"});
  expect_error([&] { tl::tile_fft(tl::Tile()); }, ErrorKind::Value, {"tile_fft", "empty"});

  // 16 rows of 1024: far over any adapter's workgroup memory, refused at launch.
  tl::Kernel big("big_fft", 64);
  tl::Array bx = big.input("x"), by = big.output("y");
  tl::tile_store(by, tl::tile_fft(tl::tile_load(bx, {16, 1024})).re);
  Tensor xt = rand_signal({16, 1024}, 3), yt = Tensor::zeros(ctx(), {16, 1024});
  expect_error([&] { big.launch({xt}, {yt}, {1, 1, 1}); }, ErrorKind::LimitExceeded,
               {"big_fft", "workgroup memory", "t1_fft", "64×1024"});
}
