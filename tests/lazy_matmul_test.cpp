// Lazy mode (issue 36): matmul epilogues. A 2-D f32 product is recorded, and the elementwise
// tree realised over it runs in the product's store step: relu(x @ W + b) one dispatch, x @ W
// never stored. The per-element order is eager's (the tree applied to the finished dot product,
// converted to f32 as eager's store does), so every epilogue here gives eager's bits; against a
// float64 product too, and gradcheck through the fused forms.
#include <cmath>
#include <cstring>

#include "lazy_test_util.hpp"
#include "surfgrad/autograd.hpp"
#include "surfgrad/gradcheck.hpp"
#include "surfgrad/nn.hpp"
#include "surfgrad/optim.hpp"
#include "tensor/matmul_epilogue.hpp"
#include "tensor/matmul_problem.hpp"
#include "test_util.hpp"
#include "tiles_test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// `program` eagerly and lazily: the same bits; `lazy_dispatches` (if ≥ 0) of the lazy run.
void expect_same_bits(const std::string& what, const std::function<Tensor()>& program, int lazy_dispatches = -1) {
  std::vector<float> eager, lazy;
  {
    LazyScope mode(false);
    eager = program().to_vector<float>();
  }
  {
    LazyScope mode(true);
    Tensor r;
    uint64_t n = dispatches_of([&] { r = program().realize(); });
    if (lazy_dispatches >= 0) {
      EXPECT_EQ(n, uint64_t(lazy_dispatches)) << what;
    }
    lazy = r.to_vector<float>();
  }
  ASSERT_EQ(eager.size(), lazy.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < eager.size(); ++i) {
    if (same_bits_or_close(eager[i], lazy[i])) continue;  // bits, but for GLES (lazy_test_util.hpp)
    if (bad++ < 5) ADD_FAILURE() << what << ": element " << i << " eager " << eager[i] << " lazy " << lazy[i];
  }
  EXPECT_EQ(bad, 0u) << what;
}

// ULP of |v| as a float (the gap to the next float up).
double ulp_of(float v) {
  float a = std::abs(v);
  return double(std::nextafter(a, INFINITY)) - double(a);
}

// `tree(product())` where the tree is p * p + p: eagerly and lazily. On a CPU adapter the same
// bits. On a GPU the fused kernel may compute fma(p, p, p) (one rounding) where eager rounds p * p
// and then the sum: the two differ by at most half an ulp of p * p before the sum's rounding and
// one ulp of the result after it, so each element must lie within ulp(p * p) + ulp(result) of
// eager's (a wrong epilogue, off by a term or an operand, lies far outside).
void expect_same_bits_or_contracted(const std::string& what, const std::function<Tensor()>& product,
                                    const std::function<Tensor(const Tensor&)>& tree) {
  // CPU adapters: eager's bits exactly; then the GPUs' bound check runs here too.
  if (ctx()->info().is_cpu) expect_same_bits(what, [&] { return tree(product()); }, 1);
  std::vector<float> eager, lazy, p;
  {
    LazyScope mode(false);
    Tensor pe = product();
    p = pe.to_vector<float>();
    eager = tree(pe).to_vector<float>();
  }
  {
    LazyScope mode(true);
    lazy = tree(product()).to_vector<float>();
  }
  ASSERT_EQ(eager.size(), lazy.size()) << what;
  size_t bad = 0, differ = 0;
  for (size_t i = 0; i < eager.size(); ++i) {
    differ += eager[i] != lazy[i];
    double bound = ulp_of(p[i] * p[i]) + ulp_of(eager[i]);
    if (std::abs(double(eager[i]) - double(lazy[i])) <= bound) continue;
    if (bad++ < 5) ADD_FAILURE() << what << ": element " << i << " eager " << eager[i] << " lazy " << lazy[i];
  }
  EXPECT_EQ(bad, 0u) << what;
  std::printf("%s: %zu of %zu elements differ from eager's bits, all within the contraction's bound\n", what.c_str(),
              differ, eager.size());
}

}  // namespace

TEST(LazyMatmul, BiasReluEpilogueIsOneDispatchWithEagersBitsAndTheFloat64Product) {
  // Sizes the CPU adapter runs with the direct kernel and ones with ragged edges.
  for (auto [M, K, N] : {std::tuple<int64_t, int64_t, int64_t>{64, 96, 128}, {37, 50, 29}, {5, 1, 7}, {130, 64, 1}}) {
    SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N));
    Tensor x = rand_tensor({M, K}, 1), w = rand_tensor({K, N}, 2), b = rand_tensor({N}, 3);
    expect_same_bits("relu(x @ w + b)", [&] { return (x.matmul(w) + b).relu(); }, 1);
    LazyScope mode(true);
    Tensor y = (x.matmul(w) + b).relu();
    HostArray ref = (HostArray::from(x).matmul(HostArray::from(w)) + HostArray::from(b)).relu();
    std::vector<float> got = y.to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], ref.values()[i], 1e-4 * (1 + std::abs(ref.values()[i]))) << "element " << i;
  }
}

TEST(LazyMatmul, EveryEpilogueFormMatchesEagerBits) {
  Tensor x = rand_tensor({48, 40}, 4), w = rand_tensor({40, 24}, 5), b = rand_tensor({24}, 6);
  Tensor col = rand_tensor({48, 1}, 7), full = rand_tensor({48, 24}, 8), xt = rand_tensor({40, 48}, 9);
  expect_same_bits("plain product read", [&] { return x.matmul(w); }, 1);
  expect_same_bits("bias only", [&] { return x.matmul(w) + b; }, 1);
  // Exactly rounded ops only: a transcendental's bits may differ between kernels (see the tiled
  // kernels' test below).
  expect_same_bits("scalars and abs", [&] { return (x.matmul(w) * 0.5 + 0.25).abs(); }, 1);
  expect_same_bits("column broadcast, full operand", [&] { return (x.matmul(w) - col) * full; }, 1);
  expect_same_bits("transposed operands", [&] { return (xt.t().matmul(w) + b).relu(); }, 1);
  expect_same_bits("product on the right", [&] { return b - x.matmul(w); }, 1);
  // The product read twice in one tree, and two products in one tree (one epilogue, one stored).
  // p * p + p multiplies into an add inside one kernel, which a GPU compiler may contract into an
  // fma (WGSL lets it; naga emits no NoContraction): NVIDIA's does, 1 ulp off eager's separate
  // kernels at a third of the elements (H200, 2026-11-28). Exact bits on CPU adapters (lavapipe
  // does not contract), within the contraction's bound on GPUs.
  expect_same_bits_or_contracted(
      "product twice", [&] { return x.matmul(w); }, [](const Tensor& p) { return p * p + p; });
  // x * 2 runs when the second product is recorded; the first product is stored, the second
  // runs the tree.
  expect_same_bits("two products", [&] { return x.matmul(w) + (x * 2.0).matmul(w); }, 3);
  // A mask (u32 → f32 cast) and a comparison inside the epilogue.
  expect_same_bits("mask", [&] {
    Tensor p = x.matmul(w);
    return p * gt(full, scalar_like(full, 0)).cast(DType::f32);
  });
}

TEST(LazyMatmul, TheProductReadsItsOperandsAsTheyWereWhenRecorded) {
  LazyScope mode(true);
  Tensor x = rand_tensor({8, 16}, 10), w = rand_tensor({16, 4}, 11), b = rand_tensor({4}, 12);
  Tensor expected;
  {
    LazyScope eager(false);
    expected = (x.matmul(w) + b).relu();
  }
  Tensor y = (x.matmul(w) + b).relu();  // pending: the product and its epilogue
  w.assign(Tensor::zeros(ctx(), {16, 4}));
  b.assign(Tensor::zeros(ctx(), {4}));
  EXPECT_EQ(y.to_vector<float>(), expected.to_vector<float>());
}

TEST(LazyMatmul, GradcheckThroughFusedLinearLayers) {
  LazyScope mode(true);
  auto f = [](const auto& v) { return (v[0].matmul(v[1]) + v[2]).relu().matmul(v[3]).tanh(); };
  // Values away from relu's kink at 0 so that finite differences do not cross it.
  GradcheckResult r = gradcheck(
      f, {rand_tensor({6, 5}, 13), rand_tensor({5, 7}, 14), rand_tensor({7}, 15, 0.3, 1), rand_tensor({7, 3}, 16)});
  EXPECT_TRUE(r.ok) << r.report;
}

// Split-K (GPUs, for products with few output tiles and a long K): the epilogue runs in the pass
// that sums the slices, on the sum eager's pass stores. CPU adapters never split, so the split
// is forced here and compared with eager's split-K product followed by the eager ops.
TEST(LazyMatmul, SplitKRunsTheEpilogueInTheSlicesSum) {
  const int64_t M = 24, K = 64, N = 20;
  Tensor x = rand_tensor({M, K}, 17), w = rand_tensor({K, N}, 18), b = rand_tensor({N}, 19);
  Tensor wt = rand_tensor({N, K}, 20);
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "B transposed" : "B row-major");
    LazyScope mode(false);
    Tensor wb = transposed ? wt.t() : w;
    for (int slices : {2, 4}) {
      MatmulProblem prob = make_problem(x, wb);
      uint64_t eager_n = dispatches_of(
          [&] { run_split_k(prob, slices, matmul_params(ctx(), DType::f32, M, N, K, matmul_vec4_staging(prob))); });
      std::vector<float> want = (prob.c + b).relu().to_vector<float>();
      MatmulEpilogue e;
      e.leaves = {b};
      e.strides = {{0, 1}};
      e.names = {"v1"};
      e.acc_name = "v0";
      e.functions =
          "fn op0(a: f32, b: f32) -> f32 { return f32(a + b); }\n"
          "fn op1(x: f32) -> f32 { return f32(max(x, f32(0))); }\n";
      e.expr = "op1(op0(v0, v1))";
      Tensor out = Tensor::empty(ctx(), {M, N});
      uint64_t n = dispatches_of([&] { ASSERT_TRUE(run_matmul_epilogue(out, x, wb, e, slices)); });
      // Eager's split-K dispatches (the slices' products and their sum; a transposed B is read
      // in place through its strides, as the unsplit kernel reads it), the epilogue inside the sum.
      EXPECT_EQ(n, eager_n);
      EXPECT_EQ(n, 2u);
      EXPECT_EQ(out.to_vector<float>(), want) << slices << " slices";
      // The same bits as split-K over a contiguous copy of the operand (what it ran before the
      // views read transposed operands in place: the same products in the same order).
      MatmulProblem copied = make_problem(x, wb.contiguous());
      run_split_k(copied, slices, matmul_params(ctx(), DType::f32, M, N, K, matmul_vec4_staging(copied)));
      EXPECT_EQ(copied.c.to_vector<float>(), prob.c.to_vector<float>()) << slices << " slices";
    }
  }
}

// The tiled kernels GPUs run (CPU adapters pick the direct one): vec4 rows with B staged as vec4s,
// vec4 rows without, scalar register tiles, double buffering and swizzling: eager's tiled product
// followed by the eager ops, bit for bit where the ops are exactly rounded (add, mul, max). A
// transcendental is not: lavapipe's exp inside the tiled kernel differs from the elementwise
// kernel's at some inputs (the same WGSL compiled in another context: 2.7e-6 relative at
// exp(37), within WGSL's 3 + 2|x| ulps for exp), so a sigmoid epilogue is checked to 1e-5.
TEST(LazyMatmul, TiledKernelsTakeTheEpilogueToo) {
  Tensor b = rand_tensor({36}, 21), col = rand_tensor({40, 1}, 22);
  for (const TiledParams& p :
       {TiledParams{64, 64, 16, 4, 4, false, 1, true}, TiledParams{32, 32, 8, 2, 2, true, 1, true},
        TiledParams{64, 64, 8, 8, 8, true, 8, true}}) {
    for (bool dense : {true, false}) {
      SCOPED_TRACE(p.str() + (dense ? " dense" : " A transposed, K ragged"));
      LazyScope mode(false);
      Tensor x = dense ? rand_tensor({40, 48}, 23) : rand_tensor({45, 40}, 24).t();
      Tensor w = rand_tensor({x.shape(1), 36}, 25);
      MatmulProblem prob = make_problem(x, w);
      run_tiled(prob, p);
      std::vector<float> want = ((prob.c + b) * col).relu().to_vector<float>();
      MatmulEpilogue e;
      e.leaves = {b, col};
      e.strides = {{0, 1}, {1, 0}};
      e.names = {"v1", "v2"};
      e.acc_name = "v0";
      e.functions =
          "fn op0(a: f32, b: f32) -> f32 { return f32(a + b); }\n"
          "fn op1(a: f32, b: f32) -> f32 { return f32(a * b); }\n"
          "fn op2(x: f32) -> f32 { return f32(max(x, f32(0))); }\n";
      e.expr = "op2(op1(op0(v0, v1), v2))";
      Tensor out = Tensor::empty(ctx(), {40, 36});
      uint64_t n = dispatches_of([&] { ASSERT_TRUE(run_matmul_epilogue(out, x, w, e, 1, &p)); });
      EXPECT_EQ(n, 1u);
      EXPECT_EQ(out.to_vector<float>(), want);
      std::vector<float> want_sigmoid = ((prob.c + b) * col).sigmoid().to_vector<float>();
      e.functions += "fn op3(x: f32) -> f32 { return f32(1.0 / (1.0 + exp(-f32(x)))); }\n";
      e.expr = "op3(op1(op0(v0, v1), v2))";
      ASSERT_TRUE(run_matmul_epilogue(out, x, w, e, 1, &p));
      std::vector<float> got = out.to_vector<float>();
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want_sigmoid[i], 1e-5 * std::abs(want_sigmoid[i])) << "element " << i;
    }
  }
}

// A transposed A (x^T of a weight gradient, read in place, split or not) is staged with
// consecutive threads along M ("|acol" kernels): the same tile slots, so the same bits as the
// product of its contiguous copy, on every tiled layout (vec4 rows, scalar, double-buffered and
// swizzled), with ragged M, N, K; and within rounding of float64.
TEST(LazyMatmul, TransposedATilesStageAlongMWithTheCopysBits) {
  for (const TiledParams& p :
       {TiledParams{64, 64, 16, 4, 4, false, 1, true}, TiledParams{32, 32, 16, 2, 2, false, 1, true},
        TiledParams{64, 64, 8, 8, 8, true, 8, true}, TiledParams{64, 64, 16, 4, 4, true, 1, true}}) {
    for (auto [M, K, N] : {std::tuple<int64_t, int64_t, int64_t>{96, 80, 72}, {37, 50, 29}}) {
      SCOPED_TRACE(p.str() + " " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N));
      LazyScope mode(false);
      Tensor xt = rand_tensor({K, M}, 40), w = rand_tensor({K, N}, 41);
      MatmulProblem in_place = make_problem(xt.t(), w), copied = make_problem(xt.t().contiguous(), w);
      ASSERT_TRUE(matmul_a_columns(in_place));
      ASSERT_FALSE(matmul_a_columns(copied));
      run_tiled(in_place, p);
      run_tiled(copied, p);
      std::vector<float> got = in_place.c.to_vector<float>();
      EXPECT_EQ(got, copied.c.to_vector<float>());
      HostArray ref = HostArray::from(xt).t().matmul(HostArray::from(w));
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], ref.values()[i], 1e-4 * (1 + std::abs(ref.values()[i]))) << "element " << i;
    }
  }
}

namespace {
// Split K wherever it divides K while it lives (CPU adapters never split otherwise).
struct ForcedSlices {
  int previous;
  explicit ForcedSlices(int s) : previous(matmul_forced_slices()) { matmul_forced_slices() = s; }
  ~ForcedSlices() { matmul_forced_slices() = previous; }
};
}  // namespace

// Split-K in lazy mode: up to 4 slices, the partial products run when the product is recorded
// and their sum is a tree node in sum_slices.wgsl's order, which the readers inline: bias + relu
// over it is one more dispatch, a bias gradient's column sum over a masked product too. Past 4
// slices the product stays a matmul node (the epilogue in the sum pass). Eager's bits throughout.
TEST(LazyMatmul, SplitKSumsAreTreesTheReadersInline) {
  Tensor x = rand_tensor({48, 64}, 26), w = rand_tensor({64, 40}, 27), b = rand_tensor({40}, 28);
  Tensor y = rand_tensor({48, 40}, 29);
  for (int slices : {2, 4, 8}) {
    SCOPED_TRACE(std::to_string(slices) + " slices");
    ForcedSlices forced(slices);
    uint64_t eager_n = 0;
    {
      LazyScope mode(false);
      eager_n = dispatches_of([&] { (x.matmul(w) + b).relu().realize(); });
    }
    EXPECT_EQ(eager_n, 4u);  // the slices' products, their sum, add, relu
    expect_same_bits("relu(x @ w + b)", [&] { return (x.matmul(w) + b).relu(); }, 2);
    expect_same_bits("the product alone", [&] { return x.matmul(w); }, 2);
    // A bias gradient's pattern: the masked product summed over rows.
    expect_same_bits(
        "column sum of a masked product",
        [&] { return (x.matmul(w) * gt(y, scalar_like(y, 0)).cast(DType::f32)).sum({0}); },
        slices <= kMaxLazySlices ? 2 : 3);
  }
}

// The MLP step with every product split in two (as GPUs split the long-K ones): losses bit-equal
// to eager's, and the counts printed (not asserted: the split products' sums of the weight
// gradients stay dispatches of their own, Adam reads them as buffers).
TEST(LazyMatmul, MlpStepWithSplitKKeepsEagersLosses) {
  ForcedSlices forced(2);
  auto run = [](bool lazy, uint64_t* dispatches) {
    LazyScope mode(lazy);
    Tensor xb = Tensor::normal(ctx(), {64, 48}, 30);
    Tensor yb = Tensor::arange(ctx(), 0, 64, 1, DType::i32);
    yb = sub(yb, mul(div(yb, scalar_like(yb, 10)), scalar_like(yb, 10)));
    yb.realize();
    std::vector<Var> params = {Var::param(Tensor::uniform(ctx(), {48, 32}, 31, -0.3, 0.3)),
                               Var::param(Tensor::uniform(ctx(), {32}, 32, -0.3, 0.3)),
                               Var::param(Tensor::uniform(ctx(), {32, 10}, 33, -0.3, 0.3)),
                               Var::param(Tensor::uniform(ctx(), {10}, 34, -0.3, 0.3))};
    optim::Adam adam(params, 1e-2);
    std::vector<float> losses;
    for (int s = 0; s < 3; ++s) {
      ctx()->sync();
      uint64_t before = ctx()->pending_dispatches();
      Var h = (Var(xb).matmul(params[0]) + params[1]).relu();
      Var loss = nn::cross_entropy(h.matmul(params[2]) + params[3], yb);
      adam.zero_grad();
      loss.backward();
      adam.step();
      loss.value().realize();
      *dispatches = ctx()->pending_dispatches() - before;
      losses.push_back(loss.value().to_vector<float>()[0]);
    }
    return losses;
  };
  uint64_t eager_n = 0, lazy_n = 0;
  std::vector<float> eager = run(false, &eager_n), lazy = run(true, &lazy_n);
  EXPECT_EQ(eager, lazy);
  std::printf("2-layer MLP step, every product split in two: eager %llu, lazy %llu dispatches\n",
              (unsigned long long)eager_n, (unsigned long long)lazy_n);
  EXPECT_LT(lazy_n, eager_n);
}
