// Reductions over any set of axes (keepdim or not), arg-reductions, logsumexp, softmax and
// log_softmax against the float64 reference, including long rows and millions of rows.
#include <numeric>

#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

enum class Op { Sum, Mean, Max, Min, LogSumExp };

Ref reduce_ref(const Ref& x, std::vector<int> axes, bool keepdim, Op op) {
  int r = int(x.shape.size());
  if (axes.empty()) {
    axes.resize(size_t(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  std::vector<bool> red(size_t(r), false);
  for (int a : axes) red[size_t(a < 0 ? a + r : a)] = true;
  Shape out_shape, kept;
  for (int d = 0; d < r; ++d) {
    if (!red[size_t(d)])
      out_shape.push_back(x.shape[size_t(d)]), kept.push_back(x.shape[size_t(d)]);
    else if (keepdim)
      out_shape.push_back(1);
  }
  int64_t n_out = shape_numel(kept);
  std::vector<std::vector<double>> groups(static_cast<size_t>(n_out));
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto c = unravel(i, x.shape);
    int64_t o = 0;
    for (int d = 0; d < r; ++d)
      if (!red[size_t(d)]) o = o * x.shape[size_t(d)] + c[size_t(d)];
    groups[size_t(o)].push_back(x.v[size_t(i)]);
  }
  Ref out{out_shape, {}};
  for (auto& g : groups) {
    double v = 0;
    if (op == Op::Sum || op == Op::Mean) {
      for (double e : g) v += e;
      if (op == Op::Mean) v /= double(g.size());
    } else if (op == Op::Max) {
      v = *std::max_element(g.begin(), g.end());
    } else if (op == Op::Min) {
      v = *std::min_element(g.begin(), g.end());
    } else {
      double m = *std::max_element(g.begin(), g.end());
      for (double e : g) v += std::exp(e - m);
      v = std::log(v) + m;
    }
    out.v.push_back(v);
  }
  return out;
}

std::vector<int> random_axes(std::mt19937& gen, int rank) {
  std::vector<int> axes;
  for (int d = 0; d < rank; ++d)
    if (std::uniform_int_distribution<int>(0, 1)(gen))
      axes.push_back(std::uniform_int_distribution<int>(0, 1)(gen) ? d : d - rank);
  return axes;  // may be empty: reduce all
}

}  // namespace

TEST(Reduce, AllOpsFuzzedAxes) {
  std::mt19937 gen(41);
  struct Case {
    const char* name;
    Op op;
    std::function<Tensor(const Tensor&, const std::vector<int>&, bool)> gpu;
  };
  std::vector<Case> cases = {
      {"sum", Op::Sum, [](const Tensor& t, const std::vector<int>& a, bool k) { return t.sum(a, k); }},
      {"mean", Op::Mean, [](const Tensor& t, const std::vector<int>& a, bool k) { return t.mean(a, k); }},
      {"max", Op::Max, [](const Tensor& t, const std::vector<int>& a, bool k) { return t.max(a, k); }},
      {"min", Op::Min, [](const Tensor& t, const std::vector<int>& a, bool k) { return t.min(a, k); }},
      {"logsumexp", Op::LogSumExp,
       [](const Tensor& t, const std::vector<int>& a, bool k) { return t.logsumexp(a, k); }},
  };
  for (DType dt : float_dtypes())
    for (const auto& c : cases)
      for (int trial = 0; trial < 5; ++trial) {
        uint32_t seed = gen();
        SG_SEEDED(seed);
        Shape s = random_shape(gen, 1, 4, 20000);
        auto axes = random_axes(gen, int(s.size()));
        bool keepdim = trial % 2;
        Ref x = random_ref(s, seed, dt, -3, 3);
        Ref want = reduce_ref(x, axes, keepdim, c.op);
        // Sums accumulate in f32; compare by error normalised to the sum of magnitudes.
        Tol tol = dt == DType::f16 ? Tol{2e-2, 2e-3} : Tol{1e-4, 1e-5};
        if (c.op == Op::Sum) tol.atol *= std::sqrt(double(x.numel()) / double(std::max<int64_t>(1, want.numel())));
        EXPECT_TRUE(close(read(c.gpu(upload(x, dt), axes, keepdim)), want, tol,
                          std::string(c.name) + " " + dtype_name(dt) + shape_str(s) + " axes " +
                              shape_str({axes.begin(), axes.end()}) + (keepdim ? " keepdim" : "")));
      }
}

TEST(Reduce, IntegerSumMaxMin) {
  Ref x = random_ref({13, 31}, 4, DType::i32, -50, 50);
  Tensor t = upload(x, DType::i32);
  EXPECT_TRUE(close(read(t.sum({1})), reduce_ref(x, {1}, false, Op::Sum), {0, 0}, "sum i32"));
  EXPECT_TRUE(close(read(t.max({0})), reduce_ref(x, {0}, false, Op::Max), {0, 0}, "max i32"));
  EXPECT_TRUE(close(read(t.min({})), reduce_ref(x, {}, false, Op::Min), {0, 0}, "min i32"));
  EXPECT_THROW(t.mean(), Error);
}

TEST(Reduce, ArgmaxArgminFirstIndexOnTies) {
  std::mt19937 gen(42);
  for (int trial = 0; trial < 8; ++trial) {
    uint32_t seed = gen();
    SG_SEEDED(seed);
    Shape s = random_shape(gen, 1, 3, 20000);
    int axis = std::uniform_int_distribution<int>(0, int(s.size()) - 1)(gen);
    Ref x = random_ref(s, seed, DType::i32, -1, 1);  // few distinct values: many ties
    Tensor t = upload(x, DType::f32);
    for (bool max : {true, false}) {
      Ref got = read(max ? t.argmax(axis) : t.argmin(axis));
      Shape out_shape = s;
      out_shape.erase(out_shape.begin() + axis);
      ASSERT_EQ(got.shape, out_shape);
      auto st = strides_of(s);
      for (int64_t o = 0; o < got.numel(); ++o) {
        auto c = unravel(o, out_shape);
        c.insert(c.begin() + axis, 0);
        int64_t base = 0;
        for (size_t d = 0; d < c.size(); ++d) base += c[d] * st[d];
        int64_t best = 0;
        for (int64_t j = 1; j < s[size_t(axis)]; ++j) {
          double v = x.v[size_t(base + j * st[size_t(axis)])], b = x.v[size_t(base + best * st[size_t(axis)])];
          if (max ? v > b : v < b) best = j;
        }
        ASSERT_EQ(got.v[size_t(o)], double(best))
            << (max ? "argmax" : "argmin") << " at output " << o << " of " << shape_str(s);
      }
    }
  }
}

TEST(Reduce, SoftmaxAndLogSoftmax) {
  std::mt19937 gen(43);
  for (DType dt : float_dtypes())
    for (int trial = 0; trial < 6; ++trial) {
      uint32_t seed = gen();
      SG_SEEDED(seed);
      Shape s = random_shape(gen, 1, 4, 20000);
      int axis = std::uniform_int_distribution<int>(0, int(s.size()) - 1)(gen);
      Ref x = random_ref(s, seed, dt, -30, 30);  // large logits: needs the max subtraction
      Ref lse = reduce_ref(x, {axis}, true, Op::LogSumExp);
      Ref logp = map2(x, lse, [](double a, double b) { return a - b; });
      Ref p = logp;
      for (auto& v : p.v) v = std::exp(v);
      Tensor t = upload(x, dt);
      Tol tol = dt == DType::f16 ? Tol{5e-3, 1e-2} : Tol{2e-6, 1e-5};
      EXPECT_TRUE(close(read(t.softmax(axis)), p, tol, "softmax " + shape_str(s)));
      Tol ltol = dt == DType::f16 ? Tol{5e-2, 1e-2} : Tol{1e-4, 1e-5};
      EXPECT_TRUE(close(read(t.log_softmax(axis)), logp, ltol, "log_softmax " + shape_str(s)));
    }
}

TEST(Reduce, LongRowsSplitAcrossWorkgroups) {
  // 3 rows of 1,000,003 elements: each row is reduced in parts, then the parts.
  const int64_t n = 1000003;
  Ref x = random_ref({3, n}, 44, DType::f32, -1, 1);
  Tensor t = upload(x, DType::f32);
  Ref sum = reduce_ref(x, {1}, false, Op::Sum), mx = reduce_ref(x, {1}, false, Op::Max);
  EXPECT_TRUE(close(read(t.sum({1})), sum, {2e-3, 1e-5}, "sum of long rows"));
  EXPECT_TRUE(close(read(t.max({1})), mx, {0, 0}, "max of long rows"));
  EXPECT_TRUE(close(read(t.mean({1})), reduce_ref(x, {1}, false, Op::Mean), {2e-9, 1e-5}, "mean of long rows"));
  Ref sm = read(t.softmax(1).sum({1}));
  for (double v : sm.v) EXPECT_NEAR(v, 1.0, 1e-4);
  EXPECT_EQ(read(t.argmax(1)).v.size(), 3u);
}

TEST(Reduce, MillionsOfShortRows) {
  const int64_t rows = 1 << 21;  // 2M rows of 3: one thread per row
  Ref x = random_ref({rows, 3}, 45, DType::f32, -1, 1);
  Tensor t = upload(x, DType::f32);
  Ref got = read(t.sum({1}));
  ASSERT_EQ(got.v.size(), size_t(rows));
  for (int64_t r = 0; r < rows; r += 4099)
    EXPECT_NEAR(got.v[size_t(r)], x.v[size_t(3 * r)] + x.v[size_t(3 * r + 1)] + x.v[size_t(3 * r + 2)], 1e-6);
  Ref sm = read(t.softmax(1));
  for (int64_t r = 0; r < rows; r += 7919)
    EXPECT_NEAR(sm.v[size_t(3 * r)] + sm.v[size_t(3 * r + 1)] + sm.v[size_t(3 * r + 2)], 1.0, 1e-6);
  // Many medium rows (one workgroup each, > 65,535 workgroups: a 2-D grid).
  Ref y = random_ref({70000, 70}, 46, DType::f32, -1, 1);
  Ref ymax = read(upload(y, DType::f32).max({1}));
  EXPECT_TRUE(close(ymax, reduce_ref(y, {1}, false, Op::Max), {0, 0}, "max of 70000 rows"));
}

TEST(Reduce, ZeroDimAndEmpty) {
  Tensor s = Tensor::full(ctx(), {}, 5.0);
  EXPECT_EQ(s.sum().to_vector<float>(), std::vector<float>{5.0f});
  EXPECT_EQ(Tensor::zeros(ctx(), {0, 3}).sum({0}).to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_TRUE(std::isnan(Tensor::zeros(ctx(), {0, 3}).mean({0}).to_vector<float>()[1]));
  EXPECT_EQ(Tensor::zeros(ctx(), {3, 0}).sum({0}).numel(), 0);
  EXPECT_THROW(Tensor::zeros(ctx(), {0, 3}).max({0}), Error);
  EXPECT_THROW(Tensor::zeros(ctx(), {0, 3}).argmax(0), Error);
}
