// Every differentiable op gradchecked (GPU autograd vs float64 finite differences on the host
// reference) on fuzzed small shapes with broadcasting and size-1 axes; then the tape's
// semantics and its errors.
#include "surfgrad/gradcheck.hpp"
#include "surfgrad/reference.hpp"
#include "tensor/binary_ops.hpp"
#include "tensor/unary_ops.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

Shape small_shape(std::mt19937& gen, int min_rank = 0, int max_rank = 3) {
  static const int64_t sizes[] = {1, 2, 3, 5};
  int rank = std::uniform_int_distribution<int>(min_rank, max_rank)(gen);
  Shape s;
  for (int i = 0; i < rank; ++i) s.push_back(sizes[gen() % 4]);
  return s;
}

Tensor rand_tensor(const Shape& s, uint32_t seed, double lo = -2, double hi = 2) {
  return upload(random_ref(s, seed, DType::f32, lo, hi), DType::f32);
}

void check(const GradcheckResult& r, const std::string& what) { EXPECT_TRUE(r.ok) << what << "\n" << r.report; }

}  // namespace

TEST(Gradcheck, UnaryOps) {
  std::mt19937 gen(101);
  struct Op {
    const char* name;
    double lo, hi;
    std::function<Var(const Var&)> v;
    std::function<HostArray(const HostArray&)> h;
  };
#define UNARY(name, lo, hi, expr)                                                             \
  Op {                                                                                        \
    #name, lo, hi, [](const Var& x) { return expr; }, [](const HostArray& x) { return expr; } \
  }
  std::vector<Op> ops = {UNARY(pow_2_5, 0.2, 2, x.pow(2.5)), UNARY(pow_3, -2, 2, x.pow(3)),
                         UNARY(scalar_ops, -2, 2, (2.0 - x * 3.0) / 4.0 + 1.0)};
#undef UNARY
  // Every row of the unary op table, through the public methods (the macro list defines them);
  // ops with a kink at 0 on each side of it.
  for (const UnarySpec& spec : unary_specs()) {
    auto method = [op = spec.op](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      switch (op) {
#define SURFGRAD_UNARY(name) \
  case UnaryOp::name: return T(x.name());
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY
      }
      return T(x);
    };
    std::vector<std::pair<double, double>> ranges = {{spec.grad_lo, spec.grad_hi}};
    if (spec.kink_at_zero) ranges = {{spec.grad_lo, -0.1}, {0.1, spec.grad_hi}};
    for (auto [lo, hi] : ranges)
      ops.push_back({spec.name, lo, hi, [method](const Var& x) { return method(x); },
                     [method](const HostArray& x) { return method(x); }});
  }
  for (const auto& op : ops)
    for (int trial = 0; trial < 2; ++trial) {
      uint32_t seed = gen();
      Shape s = small_shape(gen);
      SG_SEEDED(seed);
      check(gradcheck(
                [&](const auto& x) {
                  if constexpr (std::is_same_v<std::decay_t<decltype(x[0])>, Var>)
                    return op.v(x[0]);
                  else
                    return op.h(x[0]);
                },
                {rand_tensor(s, seed, op.lo, op.hi)}),
            std::string(op.name) + " " + shape_str(s));
    }
}

// Every differentiable row of the binary op table, through the public functions (the macro list
// defines them), against finite differences of its float64 reference; then a shared operand.
TEST(Gradcheck, BinaryOpsWithBroadcasting) {
  std::mt19937 gen(102);
  auto run = [&](const char* name, auto f, double lo, double hi) {
    for (int trial = 0; trial < 4; ++trial) {
      uint32_t seed = gen();
      Shape s = small_shape(gen, 1, 3);
      Shape p = broadcast_partner(gen, s);
      if (trial % 2) std::swap(s, p);
      SG_SEEDED(seed);
      check(gradcheck(f, {rand_tensor(s, seed, lo, hi), rand_tensor(p, seed + 7, lo, hi)}),
            std::string(name) + " " + shape_str(s) + " with " + shape_str(p));
    }
  };
  for (const BinarySpec& spec : binary_specs()) {
    if (spec.comparison) continue;
    run(
        spec.name,
        [op = spec.op](const auto& x) {
          using T = std::decay_t<decltype(x[0])>;
          switch (op) {
#define SURFGRAD_BINARY(name) \
  case BinaryOp::name: return T(name(x[0], x[1]));
#define SURFGRAD_COMPARISON(name) \
  case BinaryOp::name: break;
#include "surfgrad/binary_ops.inc"
#undef SURFGRAD_COMPARISON
#undef SURFGRAD_BINARY
          }
          return T(x[0]);
        },
        spec.grad_lo, spec.grad_hi);
  }
  run("used twice", [](const auto& x) { return x[0] * x[0] + x[0] * x[1]; }, -2, 2);
  // The operators are the table's add, sub, mul and div.
  run("operators", [](const auto& x) { return (x[0] + x[1]) * x[0] - x[1] / (x[0] * x[0] + 1.0); }, -2, 2);
}

TEST(Gradcheck, Where) {
  Tensor mask = Tensor::from_vector(ctx(), std::vector<uint32_t>{1, 0, 0, 1, 1, 0}, {2, 3});
  HostArray hmask = HostArray::from(mask);
  check(gradcheck(
            [&](const auto& x) {
              if constexpr (std::is_same_v<std::decay_t<decltype(x[0])>, Var>)
                return where(mask, x[0], x[1]);
              else
                return where(hmask, x[0], x[1]);
            },
            {rand_tensor({2, 3}, 1), rand_tensor({3}, 2)}),
        "where with broadcast b");
}

TEST(Gradcheck, Views) {
  check(gradcheck([](const auto& x) { return x[0].reshape({3, -1}) * 2.0; }, {rand_tensor({2, 3, 2}, 3)}), "reshape");
  check(gradcheck([](const auto& x) { return x[0].permute({2, 0, 1}).exp(); }, {rand_tensor({2, 3, 4}, 4)}), "permute");
  check(gradcheck([](const auto& x) { return x[0].transpose(0, 1).sin(); }, {rand_tensor({3, 2}, 5)}), "transpose");
  check(gradcheck([](const auto& x) { return x[0].slice(1, 1, 5, 2).tanh(); }, {rand_tensor({2, 6}, 6)}), "slice");
  check(gradcheck([](const auto& x) { return x[0].expand({4, 3, 2}) * x[1]; },
                  {rand_tensor({3, 1}, 7), rand_tensor({4, 3, 2}, 8)}),
        "expand");
  check(gradcheck([](const auto& x) { return x[0].unsqueeze(1).squeeze(0) * 3.0; }, {rand_tensor({1, 4}, 9)}),
        "(un)squeeze");
  check(gradcheck([](const auto& x) { return x[0].t().contiguous().cos(); }, {rand_tensor({3, 4}, 10)}), "contiguous");
}

TEST(Gradcheck, Reductions) {
  std::mt19937 gen(103);
  for (int trial = 0; trial < 4; ++trial) {
    uint32_t seed = gen();
    Shape s = small_shape(gen, 1, 3);
    std::vector<int> axes;
    for (int d = 0; d < int(s.size()); ++d)
      if (gen() % 2) axes.push_back(d);
    bool keep = trial % 2;
    SG_SEEDED(seed);
    std::string what = shape_str(s) + " axes " + shape_str({axes.begin(), axes.end()}) + (keep ? " keepdim" : "");
    Tensor x = rand_tensor(s, seed);
    check(gradcheck([&](const auto& v) { return v[0].sum(axes, keep); }, {x}), "sum " + what);
    check(gradcheck([&](const auto& v) { return v[0].mean(axes, keep); }, {x}), "mean " + what);
    check(gradcheck([&](const auto& v) { return v[0].max(axes, keep); }, {x}), "max " + what);
    check(gradcheck([&](const auto& v) { return v[0].min(axes, keep); }, {x}), "min " + what);
    if (!axes.empty())
      check(gradcheck([&](const auto& v) { return v[0].logsumexp(axes, keep); }, {x}), "logsumexp " + what);
    int axis = int(gen() % s.size());
    check(gradcheck([&](const auto& v) { return v[0].softmax(axis); }, {x}), "softmax " + what);
    check(gradcheck([&](const auto& v) { return v[0].log_softmax(axis); }, {x}), "log_softmax " + what);
  }
}

TEST(Gradcheck, MaxTiesSplitTheGradient) {
  Var x = Var::param(Tensor::from_vector(ctx(), std::vector<float>{1, 3, 3, 2}, {4}));
  x.max().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 0.5f, 0.5f, 0}));
  Var a = Var::param(Tensor::from_vector(ctx(), std::vector<float>{1, 2}, {2}));
  Var b = Var::param(Tensor::from_vector(ctx(), std::vector<float>{1, 0}, {2}));
  maximum(a, b).sum().backward();
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{0.5f, 1}));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{0.5f, 0}));
}

TEST(Gradcheck, Matmul) {
  struct Case {
    Shape a, b;
  };
  std::vector<Case> cases = {{{3, 4}, {4, 2}}, {{1, 5}, {5, 1}}, {{2, 3, 4}, {4, 5}}, {{2, 1, 3, 2}, {3, 2, 4}},
                             {{4}, {4, 3}},    {{3, 4}, {4}},    {{5}, {5}}};
  uint32_t seed = 11;
  for (auto& c : cases) {
    check(gradcheck([](const auto& x) { return matmul(x[0], x[1]); },
                    {rand_tensor(c.a, seed), rand_tensor(c.b, seed + 1)}),
          "matmul " + shape_str(c.a) + " @ " + shape_str(c.b));
    seed += 2;
  }
  // Transposed operands (views) on both sides.
  check(gradcheck([](const auto& x) { return matmul(x[0].t(), x[1].t()); },
                  {rand_tensor({4, 3}, 20), rand_tensor({2, 4}, 21)}),
        "aT @ bT");
}

TEST(Gradcheck, IndexingAndConcat) {
  Tensor idx = Tensor::from_vector(ctx(), std::vector<int32_t>{2, 0, 2, 1}, {4});
  HostArray hidx = HostArray::from(idx);
  auto both = [](auto&& on_var, auto&& on_host) {
    return [=](const auto& x) {
      if constexpr (std::is_same_v<std::decay_t<decltype(x[0])>, Var>)
        return on_var(x);
      else
        return on_host(x);
    };
  };
  check(gradcheck(both([&](const std::vector<Var>& x) { return index_select(x[0], 0, idx); },
                       [&](const std::vector<HostArray>& x) { return index_select(x[0], 0, hidx); }),
                  {rand_tensor({3, 2}, 30)}),
        "index_select with repeats");
  Tensor gidx = Tensor::from_vector(ctx(), std::vector<int32_t>{1, 0, 1, 1, 2, 0}, {2, 3});
  HostArray hg = HostArray::from(gidx);
  check(gradcheck(both([&](const std::vector<Var>& x) { return gather(x[0], 1, gidx); },
                       [&](const std::vector<HostArray>& x) { return gather(x[0], 1, hg); }),
                  {rand_tensor({2, 4}, 31)}),
        "gather");
  check(gradcheck(both([&](const std::vector<Var>& x) { return scatter_add(x[0], 1, gidx, x[1]); },
                       [&](const std::vector<HostArray>& x) { return scatter_add(x[0], 1, hg, x[1]); }),
                  {rand_tensor({2, 4}, 32), rand_tensor({2, 3}, 33)}),
        "scatter_add with collisions");
  check(gradcheck(both([&](const std::vector<Var>& x) { return index_add(x[0], 0, idx, x[1]); },
                       [&](const std::vector<HostArray>& x) { return index_add(x[0], 0, hidx, x[1]); }),
                  {rand_tensor({3, 2}, 34), rand_tensor({4, 2}, 35)}),
        "index_add");
  check(gradcheck([](const auto& x) { return concat({x[0], x[1].exp(), x[0]}, 1); },
                  {rand_tensor({2, 1}, 36), rand_tensor({2, 3}, 37)}),
        "concat, an input used twice");
}

TEST(Gradcheck, CastRoundTrip) {
  if (!ctx()->features().shader_f16) GTEST_SKIP() << "no shader-f16";
  Var x = Var::param(Tensor::from_vector(ctx(), std::vector<float>{0.5f, -1.25f, 2}, {3}));
  (x.cast(DType::f16) * 2.0).cast(DType::f32).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(x.grad().dtype(), DType::f32);
}

TEST(Autograd, GradientsAccumulateAcrossUsesAndCalls) {
  Var x = Var::param(Tensor::from_vector(ctx(), std::vector<float>{1, 2, 3}, {3}));
  Var y = (x * x + x).sum();  // dy/dx = 2x + 1
  y.backward(true);
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3, 5, 7}));
  y.backward();  // retained graph: a second backward adds
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{6, 10, 14}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  // A gradient computed off the tape adds in the same way, and backward adds to it.
  x.accumulate_grad(Tensor::from_vector(ctx(), std::vector<float>{1, 1, 1}, {3}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1, 1, 1}));
  (x * x + x).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{4, 6, 8}));
  try {
    x.accumulate_grad(Tensor::ones(ctx(), {2}));
    ADD_FAILURE() << "a gradient of another shape was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Shape);
    EXPECT_NE(std::string(e.what()).find("f32[2]"), std::string::npos) << e.what();
  }
  try {
    (x * 2.0).accumulate_grad(Tensor::ones(ctx(), {3}));
    ADD_FAILURE() << "a non-leaf took a gradient";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("only leaves"), std::string::npos) << e.what();
  }
}

TEST(Autograd, ExplicitOutputGradient) {
  Var x = Var::param(Tensor::from_vector(ctx(), std::vector<float>{1, 2}, {2}));
  Var y = x * 3.0;
  y.backward(Tensor::from_vector(ctx(), std::vector<float>{10, -1}, {2}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{30, -3}));
}

TEST(Autograd, DetachAndNoGrad) {
  Var x = Var::param(Tensor::ones(ctx(), {2}));
  Var y = (x * x.detach()).sum();  // only the left factor carries gradient
  y.backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1, 1}));
  {
    NoGradGuard guard;
    Var z = x * 2.0;
    EXPECT_FALSE(z.requires_grad());
    EXPECT_FALSE(grad_enabled());
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_TRUE((x * 2.0).requires_grad());
  Var c(Tensor::ones(ctx(), {2}));
  EXPECT_FALSE((c * 2.0).requires_grad());
}

TEST(Autograd, GraphIsFreedAfterBackward) {
  Var x = Var::param(Tensor::ones(ctx(), {2}));
  Var y = (x.exp() * 2.0).sum();
  y.backward();
  try {
    y.backward();
    FAIL() << "second backward through a freed graph";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos) << e.what();
  }
}

TEST(Autograd, BadBackwardCalls) {
  Var x = Var::param(Tensor::ones(ctx(), {2, 3}));
  Var y = x * 2.0;
  try {
    y.backward();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Shape);
    EXPECT_NE(std::string(e.what()).find("backward(grad)"), std::string::npos) << e.what();
  }
  try {
    y.backward(Tensor::ones(ctx(), {3, 2}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Shape);
    EXPECT_NE(std::string(e.what()).find("[3, 2]"), std::string::npos) << e.what();
  }
  Var c(Tensor::ones(ctx(), {1}));
  EXPECT_THROW(c.sum().backward(), Error);
  EXPECT_THROW(Var::param(Tensor::ones(ctx(), {2}, DType::i32)), Error);
}

TEST(Autograd, ReductionsAndPermuteRefuseBadAxesBeforeUsingThem) {
  // Axes out of range (or too many for a permutation) are an error naming the op and the axis,
  // raised before anything indexes a shape with them: a sum over axis 5 of a matrix once wrote
  // past the end of a vector first (found by AddressSanitizer in the Python suite, whose heap it
  // corrupted). The sanitizer stage runs this test under ASan.
  Var x = Var::param(Tensor::ones(ctx(), {2, 3}));
  for (int axis : {2, 5, -3, 1000000}) {
    for (bool keep : {false, true}) {
      try {
        x.sum({axis}, keep);
        ADD_FAILURE() << "sum over axis " << axis << " was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Shape);
        EXPECT_NE(std::string(e.what()).find("sum: axis " + std::to_string(axis)), std::string::npos) << e.what();
      }
      EXPECT_THROW(x.mean({0, axis}, keep), Error) << axis;
      EXPECT_THROW(x.max({axis}, keep), Error) << axis;
      EXPECT_THROW(x.min({axis}, keep), Error) << axis;
    }
  }
  EXPECT_THROW(x.permute({0, 7}), Error);
  EXPECT_THROW(x.permute({1, 0, 2}), Error);
  EXPECT_THROW(x.permute({-5, 0}), Error);
  // In range, negative axes still count from the end.
  EXPECT_EQ(x.sum({-1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(x.mean({-2}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(x.permute({-1, 0}).shape(), (Shape{3, 2}));
}

TEST(Autograd, DeepChainKeepsBuffersFlat) {
  // A long training-like loop: the pool must not grow once warm.
  Var w = Var::param(Tensor::normal(ctx(), {8, 8}, 1, 0, 0.1));
  Tensor x = Tensor::normal(ctx(), {4, 8}, 2);
  auto step = [&] {
    Var loss = Var(x).matmul(w).tanh().pow(2).mean();
    loss.backward();
    w.zero_grad();
    ctx()->sync();
  };
  for (int i = 0; i < 5; ++i) step();
  auto before = ctx()->pool_stats();
  for (int i = 0; i < 50; ++i) step();
  auto after = ctx()->pool_stats();
  EXPECT_EQ(after.live_buffers, before.live_buffers);
  EXPECT_EQ(after.allocations, before.allocations);
}
