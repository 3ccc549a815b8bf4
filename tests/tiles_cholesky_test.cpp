// tile_cholesky and the triangular solves (surfgrad/tiles.hpp): the forward against the float64
// host reference on fuzzed n, right-hand-side widths and thread counts, and independently by the
// residuals ‖L·Lᵀ − A‖ and ‖A·X − B‖ of the GPU's results; every adjoint and a whole SPD solve
// by gradcheck; what a matrix that is not positive definite gives; the builder's errors.
#include <algorithm>
#include <cmath>
#include <random>

#include "surfgrad/gradcheck.hpp"
#include "surfgrad/tiles.hpp"
#include "test_util.hpp"
#include "tiles_test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
namespace tl = surfgrad::tiles;

namespace {

Tensor to_tensor(const HostArray& a) { return upload(Ref{a.shape(), a.values()}, DType::f32); }

// `batch` symmetric positive definite n×n matrices M·Mᵀ + n·I (M uniform in [−1, 1]), rounded to
// f32 so that the GPU and the reference see the same matrix; `skew` adds an antisymmetric part
// (the factorisation reads ½(A + Aᵀ), so it changes nothing but the input).
HostArray spd(int64_t batch, int64_t n, uint32_t seed, double skew = 0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  HostArray a = HostArray::full({batch, n, n}, 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> m(size_t(n * n));
    for (double& x : m) x = u(gen);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        double s = i == j ? double(n) : 0;
        for (int64_t k = 0; k < n; ++k) s += m[size_t(i * n + k)] * m[size_t(j * n + k)];
        double d = i == j ? 0 : skew * u(gen);
        a.values()[size_t((b * n + i) * n + j)] = double(float(s + d));
        a.values()[size_t((b * n + j) * n + i)] = double(float(s - d));
      }
  }
  return a;
}

HostArray uniform(const Shape& s, uint32_t seed, double lo = -1, double hi = 1) {
  Ref r = random_ref(s, seed, DType::f32, lo, hi);
  return HostArray(r.shape, r.v);
}

// A triangular n×n matrix, diagonal in [1, 2] (well conditioned), the other triangle filled with
// garbage that the solve must not read.
HostArray triangular(int64_t n, bool upper, uint32_t seed) {
  HostArray m = uniform({n, n}, seed, -0.5, 0.5);
  std::mt19937 gen(seed + 1);
  for (int64_t i = 0; i < n; ++i) {
    m.values()[size_t(i * n + i)] = double(float(std::uniform_real_distribution<double>(1, 2)(gen)));
    for (int64_t j = 0; j < n; ++j)
      if ((upper && j < i) || (!upper && j > i)) m.values()[size_t(i * n + j)] = 1e3;
  }
  return m;
}

// Matrix i of a [batch, rows, cols] array, as a float64 2-D array.
HostArray slice(const Ref& r, int64_t i) {
  int64_t rows = r.shape[1], cols = r.shape[2];
  auto first = r.v.begin() + i * rows * cols;
  return HostArray({rows, cols}, std::vector<double>(first, first + rows * cols));
}

double max_abs(const HostArray& a) {
  double m = 0;
  for (double v : a.values()) m = std::max(m, std::abs(v));
  return m;
}

}  // namespace

// A batch of SPD systems, one per workgroup (grid axis z): L = chol(A), Y = L⁻¹·B, X = L⁻ᵀ·Y, and
// tile_cholesky_solve(L, B) in one kernel. Each output against the float64 reference, and the
// GPU's own results against A and B: L lower triangular with L·Lᵀ = A, A·X = B.
TEST(TileCholesky, ForwardMatchesFloat64AndSolvesTheSystem) {
  std::mt19937 gen(5);
  const int sizes[] = {1, 3, 7, 16, 17, 33};
  for (int trial = 0; trial < 6; ++trial) {
    int n = sizes[trial], m = std::uniform_int_distribution<int>(1, 5)(gen), threads = kThreads[trial % 5];
    const int64_t batch = 2;
    tl::Kernel k("spd_solve", threads);
    tl::Array a = k.input("a"), b = k.input("b");
    tl::Array lo = k.output("l"), yo = k.output("y"), xo = k.output("x"), xo2 = k.output("x2");
    tl::At at{0, 0, tl::Coord::block(2)};
    tl::Tile l = tl::tile_cholesky(tl::tile_load(a, {n, n}, at));
    tl::Tile bt = tl::tile_load(b, {n, m}, at);
    tl::Tile y = tl::tile_lower_solve(l, bt);
    tl::tile_store(lo, l, at);
    tl::tile_store(yo, y, at);
    tl::tile_store(xo, tl::tile_upper_solve(tl::tile_transpose(l), y), at);
    tl::tile_store(xo2, tl::tile_cholesky_solve(l, bt), at);

    HostArray ah = spd(batch, n, 10 + uint32_t(trial)), bh = uniform({batch, n, m}, 20 + uint32_t(trial), -2, 2);
    Tensor at_ = to_tensor(ah), bt_ = to_tensor(bh);
    std::vector<Tensor> outs = {Tensor::full(ctx(), {batch, n, n}, 7.0), Tensor::full(ctx(), {batch, n, m}, 7.0),
                                Tensor::full(ctx(), {batch, n, m}, 7.0), Tensor::full(ctx(), {batch, n, m}, 7.0)};
    tl::Grid grid{1, 1, uint32_t(batch)};
    k.launch({at_, bt_}, outs, grid);
    std::vector<HostArray> start;
    for (const Tensor& t : outs) start.push_back(HostArray::full(t.shape(), 7.0));
    std::vector<HostArray> want = k.reference({ah, bh}, start, grid);
    std::string what =
        "n " + std::to_string(n) + ", m " + std::to_string(m) + ", " + std::to_string(threads) + " threads";
    const char* names[] = {"L", "Y", "X", "cholesky_solve X"};
    for (size_t i = 0; i < outs.size(); ++i)
      EXPECT_TRUE(close(read(outs[i]), ref_of(want[i]), {1e-4, 1e-4}, std::string(names[i]) + ", " + what));

    Ref lg = read(outs[0]), xg = read(outs[2]);
    for (int64_t s = 0; s < batch; ++s) {
      HostArray l2 = slice(lg, s), x2 = slice(xg, s);
      HostArray a2 = slice(Ref{ah.shape(), ah.values()}, s), b2 = slice(Ref{bh.shape(), bh.values()}, s);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) EXPECT_EQ(l2.values()[size_t(i * n + j)], 0.0) << what;
      double factor = max_abs(sub(l2.matmul(l2.t()), a2)) / max_abs(a2);
      double solve = max_abs(sub(a2.matmul(x2), b2)) / max_abs(b2);
      EXPECT_LT(factor, 1e-5) << "‖L·Lᵀ − A‖ / ‖A‖, " << what;
      EXPECT_LT(solve, 1e-4) << "‖A·X − B‖ / ‖B‖, " << what;
    }
  }
}

// The largest tile: a 64×64 factorisation, its A and L tiles (16 KiB each) filling lavapipe's
// 32 KiB of workgroup memory; skipped where the adapter has less.
TEST(TileCholesky, Factor64x64) {
  const int n = 64;
  tl::Kernel k("cholesky64", 64);
  tl::Array a = k.input("a"), lo = k.output("l");
  tl::tile_store(lo, tl::tile_cholesky(tl::tile_load(a, {n, n})));
  // Forward: A and L. Backward, at the Cholesky adjoint: L, its adjoint, A's adjoint and the
  // adjoint's work tile (A's value is dead by then).
  EXPECT_EQ(k.workgroup_bytes(false), uint64_t(2 * n * n * 4));
  EXPECT_EQ(k.workgroup_bytes(true), uint64_t(4 * n * n * 4));
  if (k.workgroup_bytes(false) > ctx()->limits().max_compute_workgroup_storage_size)
    GTEST_SKIP() << k.workgroup_bytes(false) << " bytes of workgroup memory needed";
  HostArray ah = spd(1, n, 90).reshape({n, n});
  Tensor l = Tensor::zeros(ctx(), {n, n});
  k.launch({to_tensor(ah)}, {l}, {1, 1, 1});
  EXPECT_TRUE(close(read(l), ref_of(k({ah}, {n, n}, {1, 1, 1})), {1e-4, 1e-4}, "64×64"));
  HostArray lh = HostArray::from(l);
  EXPECT_LT(max_abs(sub(lh.matmul(lh.t()), ah)) / max_abs(ah), 1e-5);
}

// The substitutions alone, on triangular matrices that are not Cholesky factors, with the other
// triangle full of garbage (it must not be read): against the reference and by residual.
TEST(TileCholesky, SubstitutionsReadOnlyTheirTriangle) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 6; ++trial) {
    int n = std::uniform_int_distribution<int>(1, 24)(gen), m = std::uniform_int_distribution<int>(1, 9)(gen);
    int threads = kThreads[(trial + 2) % 5];
    bool upper = trial % 2;
    tl::Kernel k("substitution", threads);
    tl::Array ma = k.input("m"), b = k.input("b"), xo = k.output("x");
    tl::Tile mt = tl::tile_load(ma, {n, n}), bt = tl::tile_load(b, {n, m});
    tl::tile_store(xo, upper ? tl::tile_upper_solve(mt, bt) : tl::tile_lower_solve(mt, bt));
    HostArray mh = triangular(n, upper, 30 + uint32_t(trial)), bh = uniform({n, m}, 40 + uint32_t(trial), -2, 2);
    Tensor xt = Tensor::full(ctx(), {n, m}, 7.0);
    k.launch({to_tensor(mh), to_tensor(bh)}, {xt}, {1, 1, 1});
    std::string what = std::string(upper ? "upper" : "lower") + " n " + std::to_string(n) + ", m " + std::to_string(m) +
                       ", " + std::to_string(threads) + " threads";
    EXPECT_TRUE(close(read(xt), ref_of(k({mh, bh}, {n, m}, {1, 1, 1})), {1e-4, 1e-4}, what));
    HostArray tri = mh;  // the triangle alone
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if ((upper && j < i) || (!upper && j > i)) tri.values()[size_t(i * n + j)] = 0;
    HostArray x = HostArray::from(xt);
    EXPECT_LT(max_abs(sub(tri.matmul(x), bh)) / max_abs(bh), 1e-5) << "‖M·X − B‖ / ‖B‖, " << what;
  }
}

// Not positive definite: the builder cannot know the data, so the GPU's L is all NaN (a defined
// result, whatever the thread count) and the host reference throws, naming the primitive and the
// pivot.
TEST(TileCholesky, NotPositiveDefinite) {
  for (int threads : {1, 32}) {
    tl::Kernel k("indefinite", threads);
    tl::Array a = k.input("a"), lo = k.output("l");
    tl::tile_store(lo, tl::tile_cholesky(tl::tile_load(a, {3, 3})));
    // Pivots 2, then 1 − 4/2 = −1; and a zero pivot (a singular matrix).
    for (auto values :
         {std::vector<double>{2, 2, 0, 2, 1, 0, 0, 0, 3}, std::vector<double>{1, 1, 0, 1, 1, 0, 0, 0, 1}}) {
      HostArray ah({3, 3}, values);
      Tensor l = Tensor::full(ctx(), {3, 3}, 7.0);
      k.launch({to_tensor(ah)}, {l}, {1, 1, 1});
      for (double v : read(l).v) EXPECT_TRUE(std::isnan(v)) << v << " (" << threads << " threads)";
      expect_error([&] { (void)k({ah}, {3, 3}, {1, 1, 1}); }, ErrorKind::Value,
                   {"'indefinite'", "tile_cholesky", "t1_cholesky", "pivot 1", "not symmetric positive definite"});
    }
  }
}

// ---- adjoints

// L = chol(A) alone, A with an antisymmetric part: its gradient is the symmetric one (the forward
// reads ½(A + Aᵀ)); gradcheck weights L's upper triangle too, whose zeros must pass nothing back.
TEST(TileCholeskyGradcheck, Cholesky) {
  int trial = 0;
  for (int n : {1, 2, 5}) {
    tl::Kernel k("cholesky", kThreads[trial % 5]);
    tl::Array a = k.input("a"), lo = k.output("l");
    tl::tile_store(lo, tl::tile_cholesky(tl::tile_load(a, {n, n})));
    Tensor at = to_tensor(spd(1, n, 50 + uint32_t(trial), 0.3).reshape({n, n}));
    check_grad(k, {at}, {n, n}, {1, 1, 1}, "cholesky n " + std::to_string(n));
    ++trial;
  }
}

TEST(TileCholeskyGradcheck, Substitutions) {
  int trial = 0;
  for (auto [n, m] : {std::pair{1, 1}, std::pair{3, 2}, std::pair{5, 3}})
    for (bool upper : {false, true}) {
      tl::Kernel k("substitution", kThreads[(trial + 1) % 5]);
      tl::Array ma = k.input("m"), b = k.input("b"), xo = k.output("x");
      tl::Tile mt = tl::tile_load(ma, {n, n}), bt = tl::tile_load(b, {n, m});
      tl::tile_store(xo, upper ? tl::tile_upper_solve(mt, bt) : tl::tile_lower_solve(mt, bt));
      HostArray mh = triangular(n, upper, 60 + uint32_t(trial));
      for (double& v : mh.values())
        if (v == 1e3) v = 0.25;  // moderate values off the triangle: their gradient must be 0
      check_grad(k, {to_tensor(mh), to_tensor(uniform({n, m}, 70 + uint32_t(trial)))}, {n, m}, {1, 1, 1},
                 std::string(upper ? "upper" : "lower") + " solve n " + std::to_string(n) + ", m " + std::to_string(m));
      ++trial;
    }
}

// A whole kernel: a batch of SPD systems A·X = B solved by Cholesky and both substitutions, one
// per workgroup; the factor L feeds two solves (one through a transpose), so its adjoint gathers
// both before the Cholesky adjoint runs.
TEST(TileCholeskyGradcheck, WholeKernelSpdSolve) {
  const int n = 4, m = 3;
  const int64_t batch = 2;
  tl::Kernel k("spd_solve", 32);
  tl::Array a = k.input("a"), b = k.input("b"), xo = k.output("x");
  tl::At at{0, 0, tl::Coord::block(2)};
  tl::Tile l = tl::tile_cholesky(tl::tile_load(a, {n, n}, at));
  tl::tile_store(xo, tl::tile_cholesky_solve(l, tl::tile_load(b, {n, m}, at)), at);
  Tensor at_ = to_tensor(spd(batch, n, 80)), bt = to_tensor(uniform({batch, n, m}, 81, -2, 2));
  check_grad(k, {at_, bt}, {batch, n, m}, {1, 1, uint32_t(batch)}, "spd solve");
  // The generated kernels say what they compute, and the Cholesky adjoint has its work tile.
  std::string fwd = k.forward_wgsl(), bwd = k.backward_wgsl();
  EXPECT_NE(fwd.find("tile_cholesky(t0_a)"), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("tile_lower_solve(t1_cholesky, t2_b)"), std::string::npos) << fwd;
  EXPECT_NE(fwd.find("tile_upper_solve(t4_transpose, t3_lower_solve)"), std::string::npos) << fwd;
  EXPECT_NE(bwd.find("adjoint of t1_cholesky"), std::string::npos) << bwd;
  EXPECT_NE(bwd.find("let s1_cholesky = &slot"), std::string::npos) << bwd;
}

// The same solve on a larger tile with a thread count that divides nothing (17×17, 7 threads).
TEST(TileCholeskyGradcheck, SpdSolve17With7Threads) {
  const int n = 17, m = 2;
  tl::Kernel k("spd_solve17", 7);
  tl::Array a = k.input("a"), b = k.input("b"), xo = k.output("x");
  tl::Tile l = tl::tile_cholesky(tl::tile_load(a, {n, n}));
  tl::tile_store(xo, tl::tile_cholesky_solve(l, tl::tile_load(b, {n, m})));
  Tensor at = to_tensor(spd(1, n, 85).reshape({n, n})), bt = to_tensor(uniform({n, m}, 86, -2, 2));
  check_grad(k, {at, bt}, {n, m}, {1, 1, 1}, "spd solve 17");
}

// ---- errors, when the kernel is built

TEST(TileCholeskyErrors, ShapesNamePrimitiveAndShapes) {
  tl::Kernel k("bad", 32);
  tl::Array x = k.input("x");
  tl::Tile rect = tl::tile_load(x, {4, 3}), sq = tl::tile_load(x, {4, 4}), b = tl::tile_load(x, {3, 2});
  expect_error([&] { (void)tl::tile_cholesky(rect); }, ErrorKind::Shape, {"'bad'", "tile_cholesky", "4×3", "square"});
  expect_error([&] { (void)tl::tile_lower_solve(sq, b); }, ErrorKind::Shape,
               {"tile_lower_solve", "4×4", "3×2", "B's rows (3)", "L's (4)"});
  expect_error([&] { (void)tl::tile_upper_solve(rect, b); }, ErrorKind::Shape,
               {"tile_upper_solve", "U is 4×3", "square"});
  expect_error([&] { (void)tl::tile_cholesky_solve(sq, b); }, ErrorKind::Shape, {"tile_cholesky_solve", "4×4", "3×2"});
  tl::Kernel other("other", 32);
  tl::Tile c = tl::tile_load(other.input("z"), {4, 2});
  expect_error([&] { (void)tl::tile_lower_solve(sq, c); }, ErrorKind::Value, {"tile_lower_solve", "different kernels"});
}
