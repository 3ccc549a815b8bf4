// Batched SPD solves x = (Jᵀ·M·J + diag R)⁻¹·f (demos::SpdSolver, surfgrad/demos.hpp): the fused
// tile kernel against its float64 host reference and against H formed and solved independently in
// float64 (Gaussian elimination, not Cholesky), on fuzzed shapes and thread counts; the unfused form
// (four kernels) against the fused one; gradcheck of both through J, M, R and f; shapes and tiles
// that cannot work refused before any GPU work; the demo's bench run.
#include <algorithm>
#include <cmath>
#include <random>
#include <type_traits>

#include "surfgrad/demos.hpp"
#include "surfgrad/gradcheck.hpp"
#include "test_util.hpp"
#include "tiles_test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
using demos::SpdSolver;
using demos::SpdSystems;
using demos::TileSpdShape;

namespace {

struct HostSystems {
  HostArray j, m, r, f;
};
HostSystems host(const SpdSystems& s) {
  return {HostArray::from(s.j.value()), HostArray::from(s.m.value()), HostArray::from(s.r.value()),
          HostArray::from(s.f.value())};
}

// x = H⁻¹·f for every system, H = JᵀMJ + diag R in float64, by Gaussian elimination with partial
// pivoting; also returns max ‖H·x_gpu − f‖ / ‖f‖ for the GPU's x.
HostArray solve_float64(const HostSystems& s, const HostArray& x_gpu, double& residual) {
  const int64_t B = s.j.shape()[0], m = s.j.shape()[1], n = s.j.shape()[2], k = s.f.shape()[2];
  HostArray x = HostArray::full({B, n, k}, 0.0);
  residual = 0;
  for (int64_t b = 0; b < B; ++b) {
    auto J = [&](int64_t i, int64_t c) { return s.j.values()[size_t((b * m + i) * n + c)]; };
    auto M = [&](int64_t i, int64_t c) { return s.m.values()[size_t((b * m + i) * m + c)]; };
    std::vector<double> h(size_t(n * n)), a(size_t(n * (n + k)));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < n; ++c) {
        double acc = i == c ? s.r.values()[size_t(b * n + i)] : 0.0;
        for (int64_t p = 0; p < m; ++p)
          for (int64_t q = 0; q < m; ++q) acc += J(p, i) * M(p, q) * J(q, c);
        h[size_t(i * n + c)] = acc;
      }
    auto F = [&](int64_t i, int64_t c) { return s.f.values()[size_t((b * n + i) * k + c)]; };
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < n; ++c) a[size_t(i * (n + k) + c)] = h[size_t(i * n + c)];
      for (int64_t c = 0; c < k; ++c) a[size_t(i * (n + k) + n + c)] = F(i, c);
    }
    const int64_t w = n + k;
    for (int64_t p = 0; p < n; ++p) {
      int64_t best = p;
      for (int64_t i = p + 1; i < n; ++i)
        if (std::abs(a[size_t(i * w + p)]) > std::abs(a[size_t(best * w + p)])) best = i;
      for (int64_t c = 0; c < w; ++c) std::swap(a[size_t(p * w + c)], a[size_t(best * w + c)]);
      for (int64_t i = p + 1; i < n; ++i) {
        double factor = a[size_t(i * w + p)] / a[size_t(p * w + p)];
        for (int64_t c = p; c < w; ++c) a[size_t(i * w + c)] -= factor * a[size_t(p * w + c)];
      }
    }
    for (int64_t i = n - 1; i >= 0; --i)
      for (int64_t c = 0; c < k; ++c) {
        double v = a[size_t(i * w + n + c)];
        for (int64_t q = i + 1; q < n; ++q) v -= a[size_t(i * w + q)] * x.values()[size_t((b * n + q) * k + c)];
        x.values()[size_t((b * n + i) * k + c)] = v / a[size_t(i * w + i)];
      }
    double res = 0, norm = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < k; ++c) {
        double v = -F(i, c);
        for (int64_t q = 0; q < n; ++q) v += h[size_t(i * n + q)] * x_gpu.values()[size_t((b * n + q) * k + c)];
        res += v * v, norm += F(i, c) * F(i, c);
      }
    residual = std::max(residual, std::sqrt(res / norm));
  }
  return x;
}

// gradcheck through J, M, R and f of the fused form (J and M packed by a differentiable concat)
// or of the unfused one: each overload of the solver for Var and for HostArray.
auto spd_function(const SpdSolver& solver, bool fused) {
  return [&solver, fused](const auto& x) {
    using T = std::decay_t<decltype(x[0])>;
    if constexpr (std::is_same_v<T, Var>)
      return fused ? solver.fused(SpdSolver::pack(x[0], x[1]), x[2], x[3]) : solver.unfused({x[0], x[1], x[2], x[3]});
    else
      return fused ? solver.fused_reference(SpdSolver::pack(x[0], x[1]), x[2], x[3])
                   : solver.unfused_reference(x[0], x[1], x[2], x[3]);
  };
}

}  // namespace

// Fuzzed n (primes and 1, none a multiple of the thread counts), m ≥ n, right-hand sides and
// thread counts; three systems per launch (grid 3, the batch coordinate the block index).
// The kernels' source depends on the shape and thread count only, and each new one costs a
// compilation (most of these tests' time on lavapipe), so the later tests share one shape.
TEST(TileSpd, FusedMatchesFloat64AndUnfused) {
  std::mt19937 gen(11);
  const int sizes[] = {1, 3, 5, 7, 13, 17};
  for (int trial = 0; trial < 6; ++trial) {
    TileSpdShape s;
    s.n = sizes[trial];
    s.m = s.n + std::uniform_int_distribution<int>(0, 6)(gen);
    s.rhs = std::uniform_int_distribution<int>(1, 3)(gen);
    s.threads = kThreads[trial % 5];
    const int64_t B = 3;
    std::string what = "n " + std::to_string(s.n) + ", m " + std::to_string(s.m) + ", rhs " + std::to_string(s.rhs) +
                       ", " + std::to_string(s.threads) + " threads";
    SpdSolver solver(ctx(), s);
    SpdSystems sys = demos::make_spd_systems(ctx(), B, s, 100 + uint64_t(trial));
    HostSystems h = host(sys);
    Var x = solver.fused(sys);
    HostArray xg = HostArray::from(x.value());
    // The kernel's own float64 interpretation, and the unfused chain of four kernels.
    EXPECT_TRUE(close(read(x.value()), ref_of(solver.fused_reference(SpdSolver::pack(h.j, h.m), h.r, h.f)),
                      {1e-4, 1e-4}, "fused vs its host reference, " + what));
    if (trial % 3 == 1) {  // four more kernels to compile (seconds on lavapipe): on two of the shapes
      EXPECT_TRUE(close(read(solver.unfused(sys).value()), read(x.value()), {1e-4, 1e-4}, "unfused vs fused, " + what));
    }
    // Independently: H in float64, solved without Cholesky; and the GPU's x by its residual.
    double residual = 0;
    HostArray want = solve_float64(h, xg, residual);
    EXPECT_TRUE(close(read(x.value()), ref_of(want), {1e-4, 1e-4}, "fused vs Gaussian elimination, " + what));
    EXPECT_LT(residual, 1e-5) << "max ‖H·x − f‖ / ‖f‖, " << what;
  }
}

// One shape for the gradchecks and the demo's run (kernels compiled once): n = 3 and m = 5 on 7
// threads, two systems, two right-hand sides.
constexpr TileSpdShape kSmall{3, 5, 2, 7};

TEST(TileSpdGradcheck, FusedThroughJMRF) {
  SpdSolver solver(ctx(), kSmall);
  SpdSystems sys = demos::make_spd_systems(ctx(), 2, kSmall, 7);
  GradcheckResult r =
      gradcheck(spd_function(solver, true), {sys.j.value(), sys.m.value(), sys.r.value(), sys.f.value()});
  EXPECT_TRUE(r.ok) << r.report;
}

TEST(TileSpdGradcheck, UnfusedThroughJMRF) {
  SpdSolver solver(ctx(), kSmall);
  SpdSystems sys = demos::make_spd_systems(ctx(), 2, kSmall, 21);
  GradcheckResult r =
      gradcheck(spd_function(solver, false), {sys.j.value(), sys.m.value(), sys.r.value(), sys.f.value()});
  EXPECT_TRUE(r.ok) << r.report;
}

// Shapes that do not fit the solver, and tiles larger than the adapter's workgroup memory: errors
// naming what is wrong, and not one dispatch recorded.
TEST(TileSpdErrors, RefusedBeforeGpuWork) {
  TileSpdShape s{5, 6, 2, 32}, wide{5, 6, 3, 32};
  SpdSolver solver(ctx(), s);
  SpdSystems sys = demos::make_spd_systems(ctx(), 3, s, 3), two = demos::make_spd_systems(ctx(), 2, s, 4);
  SpdSystems wide_f = demos::make_spd_systems(ctx(), 3, wide, 5);
  Var jm = SpdSolver::pack(sys.j, sys.m);
  // 64 unknowns, 96 rows: J alone is a 24 KiB tile, M 36 KiB.
  TileSpdShape big{64, 96, 1, 64};
  SpdSolver huge(ctx(), big);
  ASSERT_GT(huge.fused_kernel().workgroup_bytes(false), ctx()->limits().max_compute_workgroup_storage_size);
  SpdSystems bs = demos::make_spd_systems(ctx(), 1, big, 6);
  Var big_jm = SpdSolver::pack(bs.j, bs.m);
  ctx()->sync();
  uint64_t before = ctx()->pending_dispatches();

  expect_error([&] { (void)solver.fused(jm, two.r, sys.f); }, ErrorKind::Shape,
               {"tile-spd", "R is [2, 1, 5]", "[B, 1, n] = [3, 1, 5]"});
  expect_error([&] { (void)solver.fused(jm, sys.r, wide_f.f); }, ErrorKind::Shape,
               {"f is [3, 5, 3]", "[B, n, rhs] = [3, 5, 2]"});
  expect_error([&] { (void)solver.fused(sys.j, sys.r, sys.f); }, ErrorKind::Shape,
               {"J|M", "[3, 6, 5]", "[B, m, n + m] = [3, 6, 11]"});
  expect_error([&] { (void)solver.fused(jm.reshape({18, 11}), sys.r, sys.f); }, ErrorKind::Shape, {"J|M", "[18, 11]"});
  expect_error([&] { (void)solver.unfused({sys.j, two.m, sys.r, sys.f}); }, ErrorKind::Shape,
               {"M is [2, 6, 6]", "[3, 6, 6]"});
  expect_error([&] { (void)solver.unfused({jm, sys.m, sys.r, sys.f}); }, ErrorKind::Shape,
               {"J is [3, 6, 11]", "[B, m, n] = [3, 6, 5]"});
  expect_error([&] { SpdSolver bad(ctx(), TileSpdShape{0, 4, 1, 32}); }, ErrorKind::Value, {"tile-spd", "n 0"});
  expect_error([&] { (void)huge.fused(big_jm, bs.r, bs.f); }, ErrorKind::LimitExceeded,
               {"'spd_fused'", "bytes of workgroup memory", "use smaller tiles"});
  expect_error([&] { (void)huge.unfused(bs); }, ErrorKind::LimitExceeded, {"'spd_jtm'", "workgroup memory"});
  EXPECT_EQ(ctx()->pending_dispatches(), before);
}

// The demo's whole run on a small batch: both forms checked and timed, the fused one in fewer
// dispatches and bytes.
TEST(TileSpd, DemoRunsBothForms) {
  demos::TileSpdOptions o;
  o.systems = 9;
  o.shape = kSmall;
  o.steps = 1;
  o.repeats = 1;
  demos::TileSpdResult r = demos::run_tile_spd(ctx(), o);
  EXPECT_LT(r.residual, 1e-5);
  EXPECT_LT(r.unfused_difference, 1e-4);
  EXPECT_GE(r.gradient_difference, 0);  // both backward kernels fit
  EXPECT_LT(r.gradient_difference, 1e-4);
  ASSERT_EQ(r.runs.size(), 4u);
  for (bool backward : {false, true}) {
    const auto& f = r.runs[backward ? 1 : 0];
    const auto& u = r.runs[backward ? 3 : 2];
    EXPECT_EQ(f.form, "fused");
    EXPECT_EQ(u.form, "unfused");
    EXPECT_EQ(f.kernels, backward ? 2u : 1u);
    EXPECT_EQ(u.kernels, backward ? 8u : 4u);
    EXPECT_LT(f.dispatches, u.dispatches) << (backward ? "forward + backward" : "forward");
    EXPECT_LT(f.bytes, u.bytes);
    EXPECT_GT(f.ms, 0);
  }
  EXPECT_NE(r.forward_wgsl.find("tile_cholesky"), std::string::npos);
  EXPECT_NE(r.backward_wgsl.find("adjoint of"), std::string::npos);
}
