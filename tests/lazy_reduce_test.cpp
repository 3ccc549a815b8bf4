// Lazy mode (issue 36): a reduction whose input is a pending elementwise tree evaluates the tree
// inside the reduction kernel (one dispatch, no buffer for the tree) and gives eager mode's bits:
// every reduction kernel (rows, short rows, long rows split in parts, leading axes over columns),
// every axis pattern, f32 and f16, against eager mode and a float64 reference; softmax, log-softmax
// and an MSE loss then run in fewer dispatches.
#include <cmath>
#include <cstring>

#include "lazy_test_util.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

std::vector<float> values(const Tensor& t) { return t.cast(DType::f32).to_vector<float>(); }

// `program` eagerly and lazily: the same bits (NaNs compared as NaNs).
void expect_same_bits(const std::string& what, const std::function<Tensor()>& program) {
  std::vector<float> eager, lazy;
  {
    LazyScope mode(false);
    eager = values(program());
  }
  {
    LazyScope mode(true);
    lazy = values(program());
  }
  ASSERT_EQ(eager.size(), lazy.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < eager.size(); ++i) {
    uint32_t e, l;
    std::memcpy(&e, &eager[i], 4);
    std::memcpy(&l, &lazy[i], 4);
    if (e == l || (std::isnan(eager[i]) && std::isnan(lazy[i]))) continue;
    if (bad++ < 5) ADD_FAILURE() << what << ": element " << i << " eager " << eager[i] << " lazy " << lazy[i];
  }
  EXPECT_EQ(bad, 0u) << what;
}

enum class Op { Sum, Mean, Max, Min };
const char* op_name(Op op) { return op == Op::Sum ? "sum" : op == Op::Mean ? "mean" : op == Op::Max ? "max" : "min"; }
Tensor reduce(const Tensor& t, Op op, const std::vector<int>& axes, bool keepdim) {
  switch (op) {
    case Op::Sum: return t.sum(axes, keepdim);
    case Op::Mean: return t.mean(axes, keepdim);
    case Op::Max: return t.max(axes, keepdim);
    default: return t.min(axes, keepdim);
  }
}

// The tree the tests reduce: exactly rounded ops (same bits fused or not), a broadcast operand,
// a constant.
Tensor tree(const Tensor& x, const Tensor& y) { return (x * y - 0.25).abs() + x / (y + 2.0); }

}  // namespace

TEST(LazyReduce, EveryKernelAndAxisPatternMatchesEagerBits) {
  std::mt19937 gen(361);
  struct Case {
    Shape shape;
    std::vector<int> axes;
  };
  // Rows (last axes), short rows (R ≤ 64), long rows split in parts (R > 16384, few rows), leading
  // axes over columns, middle axes (moved last), all axes, negative axes.
  std::vector<Case> cases = {{{37, 300}, {1}},     {{500, 9}, {-1}},       {{2, 40000}, {1}},     {{300, 70}, {0}},
                             {{6, 5, 70}, {0, 1}}, {{7, 11, 13}, {1}},     {{7, 11, 13}, {0, 2}}, {{33, 65}, {}},
                             {{5000, 3}, {0}},     {{3, 4, 5, 6}, {1, 3}}, {{1, 17, 1, 3}, {1}},  {{40000}, {0}}};
  for (const Case& c : cases)
    for (Op op : {Op::Sum, Op::Mean, Op::Max, Op::Min})
      for (bool keepdim : {false, true}) {
        uint32_t seed = gen();
        SG_SEEDED(seed);
        Tensor x = upload(random_ref(c.shape, seed, DType::f32, -2, 2), DType::f32);
        Shape ys = c.shape;
        ys.front() = 1;  // broadcast over the first axis
        Tensor y = upload(random_ref(ys, seed + 1, DType::f32, 0.5, 1.5), DType::f32);
        std::string what = std::string(op_name(op)) + " of " + shape_str(c.shape) + " over " +
                           std::to_string(c.axes.size()) + " axes" + (keepdim ? " keepdim" : "");
        expect_same_bits(what, [&] { return reduce(tree(x, y), op, c.axes, keepdim); });
      }
}

TEST(LazyReduce, OneDispatchAndTheFloat64Reference) {
  LazyScope mode(true);
  Tensor x = Tensor::uniform(ctx(), {64, 300}, 11, -1, 1), y = Tensor::uniform(ctx(), {1, 300}, 12, 0.5, 1.5);
  auto xh = x.to_vector<float>(), yh = y.to_vector<float>();
  for (std::vector<int> axes : std::vector<std::vector<int>>{{0}, {1}}) {
    Tensor s;
    EXPECT_EQ(dispatches_of([&] {
                s = tree(x, y).sum(axes);
                s.realize();
              }),
              1u)
        << "sum over axis " << axes[0];
    std::vector<double> ref(axes[0] == 0 ? 300 : 64, 0.0);
    for (size_t i = 0; i < 64; ++i)
      for (size_t j = 0; j < 300; ++j) {
        double a = xh[i * 300 + j], b = yh[j];
        ref[axes[0] == 0 ? j : i] += std::abs(a * b - 0.25) + a / (b + 2.0);
      }
    auto got = s.to_vector<float>();
    for (size_t k = 0; k < ref.size(); ++k) EXPECT_NEAR(got[k], ref[k], 1e-4 * (1 + std::abs(ref[k]))) << k;
  }
  // The tree itself is still pending and still right when read later.
  Tensor t = tree(x, y);
  (void)t.sum({1});
  EXPECT_NEAR(t.to_vector<float>()[1], std::abs(xh[1] * yh[1] - 0.25f) + xh[1] / (yh[1] + 2.0f), 1e-6);
}

TEST(LazyReduce, F16AndIntegerTrees) {
  // f16 where the adapter has it (the GLES backend's llvmpipe does not); the rest everywhere.
  if (ctx()->features().shader_f16) {
    Tensor h = Tensor::uniform(ctx(), {40, 70}, 13, -2, 2).cast(DType::f16);
    expect_same_bits("f16 sum over rows", [&] { return (h * h + 1.0).sum({1}); });
    expect_same_bits("f16 max over columns", [&] { return (h - 0.5).abs().max({0}); });
  }
  Tensor i = Tensor::arange(ctx(), -50, 50, 1, DType::i32).reshape({10, 10});
  expect_same_bits("i32 sum", [&] { return (i * i - i).sum({1}); });
  // A product as the tree's last op, summed: the compiler must not fuse it with the accumulating
  // add (an FMA rounds once where eager rounds the product, then the sum).
  Tensor p = Tensor::normal(ctx(), {777, 21}, 9);
  expect_same_bits("squared norms of rows", [&] { return (p * p).sum({1}); });
  expect_same_bits("squared norms of columns", [&] { return (p * p).sum({0}); });
  expect_same_bits("a long product sum", [&] { return (p * 1.1).sum({}); });
  expect_same_bits("i32 max, all axes", [&] { return (i * 3).abs().max({}); });
}

TEST(LazyReduce, SoftmaxLogSoftmaxAndMseFuse) {
  Tensor x = Tensor::uniform(ctx(), {128, 10}, 14, -3, 3), t = Tensor::uniform(ctx(), {128, 10}, 15);
  expect_same_bits("mse", [&] { return ((x - t) * (x - t)).mean({}); });
  expect_same_bits("softmax", [&] { return x.softmax(1); });
  expect_same_bits("log_softmax", [&] { return x.log_softmax(1); });
  LazyScope mode(true);
  Tensor r;
  EXPECT_EQ(dispatches_of([&] {
              r = ((x - t) * (x - t)).mean({});
              r.realize();
            }),
            1u);
  // max, the fused sum of exp(x − max), the fused division.
  EXPECT_EQ(dispatches_of([&] {
              r = x.softmax(0);
              r.realize();
            }),
            3u);
  EXPECT_EQ(dispatches_of([&] {
              r = x.log_softmax(0);
              r.realize();
            }),
            3u);
}

TEST(LazyReduce, ASharedTreeIsStoredByTheReductionThatReadsIt) {
  Tensor x = Tensor::uniform(ctx(), {300, 70}, 16, -2, 2), y = Tensor::uniform(ctx(), {1, 70}, 17, 0.5, 1.5);
  Tensor xl = Tensor::uniform(ctx(), {2, 40000}, 18, -2, 2), yl = Tensor::uniform(ctx(), {1, 40000}, 19);
  struct Case {
    const Tensor *x, *y;
    std::vector<int> axes;
    uint64_t dispatches;  // rows past 16384 (21000, 40000): a second pass over the parts' results
  };
  for (const Case& c : std::vector<Case>{{&x, &y, {0}, 1}, {&x, &y, {1}, 1}, {&x, &y, {}, 2}, {&xl, &yl, {1}, 2}}) {
    std::string what = "sum over " + std::to_string(c.axes.size()) + " axes of " + c.x->describe();
    std::vector<float> eager_tree, eager_sum;
    {
      LazyScope mode(false);
      Tensor t = tree(*c.x, *c.y);
      eager_tree = values(t);
      eager_sum = values(t.sum(c.axes));
    }
    LazyScope mode(true);
    Tensor t = tree(*c.x, *c.y), held = t;  // another handle: the tree is read again later
    Tensor s;
    EXPECT_EQ(dispatches_of([&] {
                s = t.sum(c.axes);
                s.realize();
                t.realize();  // already stored by the reduction: no dispatch
              }),
              c.dispatches)
        << what;
    EXPECT_EQ(values(held), eager_tree) << what;
    EXPECT_EQ(values(s), eager_sum) << what;
  }
}
