// Unary, binary (broadcasting), comparison, where and cast against the float64 reference,
// on fuzzed shapes and on strided views (transposed, sliced, expanded inputs).
#include "tensor/binary_ops.hpp"
#include "tensor/unary_ops.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

struct Unary {
  const char* name;
  std::function<Tensor(const Tensor&)> gpu;
  std::function<double(double)> ref;
  double lo, hi;  // input range where the op is defined
};

// Every row of the unary op table (src/tensor/unary_ops.cpp), then pow, which takes a parameter.
std::vector<Unary> unary_ops() {
  std::vector<Unary> ops;
  for (const UnarySpec& spec : unary_specs())
    ops.push_back(
        {spec.name, [op = spec.op](const Tensor& t) { return apply_unary(t, op); }, spec.host, spec.lo, spec.hi});
  ops.push_back(
      {"pow(2.5)", [](const Tensor& t) { return t.pow(2.5); }, [](double x) { return std::pow(x, 2.5); }, 0, 4});
  ops.push_back({"pow(3)", [](const Tensor& t) { return t.pow(3); }, [](double x) { return std::pow(x, 3); }, -4, 4});
  ops.push_back(
      {"pow(-2)", [](const Tensor& t) { return t.pow(-2); }, [](double x) { return std::pow(x, -2); }, 0.5, 4});
  return ops;
}

}  // namespace

TEST(Elementwise, UnaryFloatFuzzed) {
  std::mt19937 gen(11);
  for (DType dt : float_dtypes()) {
    for (const auto& op : unary_ops()) {
      for (int trial = 0; trial < 3; ++trial) {
        uint32_t seed = gen();
        SG_SEEDED(seed);
        Shape s = random_shape(gen, 0, 4);
        Ref x = random_ref(s, seed, dt, op.lo, op.hi);
        Ref want = x;
        for (auto& v : want.v) {
          v = op.ref(v);
          if (dt == DType::f16) v = double(half_to_float(float_to_half(float(v))));
        }
        Tensor out = op.gpu(upload(x, dt));
        EXPECT_EQ(out.dtype(), dt);
        EXPECT_TRUE(
            close(read(out), want, tol_for(dt, 10), std::string(op.name) + " " + dtype_name(dt) + shape_str(s)));
      }
    }
  }
}

TEST(Elementwise, UnaryIntegers) {
  Ref x = random_ref({7, 13}, 3, DType::i32, -5, 5);
  Ref neg = x, abs = x, relu = x;
  for (size_t i = 0; i < x.v.size(); ++i)
    neg.v[i] = -x.v[i], abs.v[i] = std::abs(x.v[i]), relu.v[i] = std::max(0.0, x.v[i]);
  Tensor t = upload(x, DType::i32);
  EXPECT_TRUE(close(read(t.neg()), neg, {0, 0}, "neg i32"));
  EXPECT_TRUE(close(read(t.abs()), abs, {0, 0}, "abs i32"));
  EXPECT_TRUE(close(read(t.relu()), relu, {0, 0}, "relu i32"));
  EXPECT_THROW(t.exp(), Error);
  try {
    t.exp();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::DType);
    EXPECT_NE(std::string(e.what()).find("cast"), std::string::npos) << e.what();
  }
  EXPECT_THROW(upload(random_ref({4}, 1, DType::u32), DType::u32).neg(), Error);
}

// Every row of the binary op table (src/tensor/binary_ops.cpp) against its float64 reference.
TEST(Elementwise, BinaryBroadcastFuzzed) {
  std::mt19937 gen(12);
  std::vector<DType> dtypes = float_dtypes();
  dtypes.push_back(DType::i32);
  dtypes.push_back(DType::u32);
  for (DType dt : dtypes) {
    for (const BinarySpec& op : binary_specs()) {
      if (!is_float(dt) && op.op == BinaryOp::div) continue;  // tested separately
      if (!is_float(dt) && op.domain == BinarySpec::Float) {
        expect_error(
            ErrorKind::DType,
            [&] { apply_binary(upload(random_ref({3}, 1, dt), dt), upload(random_ref({3}, 2, dt), dt), op.op); },
            {op.name, "floating"}, std::string(op.name) + " of " + dtype_name(dt));
        continue;
      }
      for (int trial = 0; trial < 3; ++trial) {
        uint32_t seed = gen();
        SG_SEEDED(seed);
        Shape s = random_shape(gen, 0, 4);
        Shape p = broadcast_partner(gen, s);
        if (trial == 1) std::swap(s, p);
        Ref a = random_ref(s, seed, dt, op.lo, op.hi), b = random_ref(p, seed + 1, dt, op.lo, op.hi);
        if (!op.comparison && trial == 2) b = random_ref(p, seed, dt, op.lo, op.hi);  // equal values for eq/le
        // Comparisons of nearly equal values can flip after rounding: compare exact inputs.
        Ref want = map2(a, b, op.host);
        if (dt == DType::u32 && !op.comparison)  // unsigned arithmetic wraps modulo 2^32
          for (auto& v : want.v) v = v < 0 ? v + 4294967296.0 : v;
        if (dt == DType::f16 && !op.comparison)
          for (auto& v : want.v) v = double(half_to_float(float_to_half(float(v))));
        Tensor out = apply_binary(upload(a, dt), upload(b, dt), op.op);
        EXPECT_EQ(out.dtype(), op.comparison ? DType::u32 : dt);
        EXPECT_TRUE(close(read(out), want, tol_for(dt),
                          std::string(op.name) + " " + dtype_name(dt) + shape_str(s) + " with " + shape_str(p)));
      }
    }
  }
}

TEST(Elementwise, IntegerDivisionAndPow) {
  Ref a = random_ref({33}, 5, DType::i32, -5, 5), b = random_ref({33}, 6, DType::i32, 1, 4);
  Ref want = map2(a, b, [](double x, double y) { return double(int(x) / int(y)); });  // truncation, as C
  EXPECT_TRUE(close(read(div(upload(a, DType::i32), upload(b, DType::i32))), want, {0, 0}, "div i32"));
  Ref fa = random_ref({5, 7}, 7, DType::f32, 0.2, 3), fb = random_ref({7}, 8, DType::f32, -2, 2);
  EXPECT_TRUE(close(read(pow(upload(fa, DType::f32), upload(fb, DType::f32))),
                    map2(fa, fb, [](double x, double y) { return std::pow(x, y); }), {1e-5, 1e-4}, "pow f32"));
}

TEST(Elementwise, ScalarOperators) {
  Ref x = random_ref({4, 5}, 9, DType::f32);
  Tensor t = upload(x, DType::f32);
  Ref want = x;
  for (auto& v : want.v) v = double(float(2.0 - (float(v) * 3.0f + 1.0f) / 4.0f));
  EXPECT_TRUE(close(read(2.0 - (t * 3.0 + 1.0) / 4.0), want, tol_for(DType::f32), "scalar ops"));
  for (auto& v : want.v) v = -v;
  EXPECT_TRUE(close(read(-(2.0 - (t * 3.0 + 1.0) / 4.0)), want, tol_for(DType::f32), "negated"));
}

TEST(Elementwise, WhereBroadcasts) {
  std::mt19937 gen(13);
  for (int trial = 0; trial < 6; ++trial) {
    uint32_t seed = gen();
    SG_SEEDED(seed);
    Shape s = random_shape(gen, 1, 4);
    Shape ms = broadcast_partner(gen, s), as = broadcast_partner(gen, s);
    Ref m = random_ref(ms, seed, DType::u32, 0, 0.1), a = random_ref(as, seed + 1, DType::f32),
        b = random_ref(s, seed + 2, DType::f32);
    Ref ma = map2(m, a, [](double mv, double av) { return mv != 0 ? av : NAN; });
    Ref want = map2(ma, b, [](double v, double bv) { return std::isnan(v) ? bv : v; });
    EXPECT_TRUE(close(read(where(upload(m, DType::u32), upload(a, DType::f32), upload(b, DType::f32))), want, {0, 0},
                      "where " + shape_str(ms) + shape_str(as) + shape_str(s)));
  }
  // A comparison mask feeds where directly.
  Tensor x = Tensor::arange(ctx(), -3, 3);
  auto v = where(gt(x, scalar_like(x, 0)), x, x * 10.0).to_vector<float>();
  EXPECT_EQ(v, (std::vector<float>{-30, -20, -10, 0, 1, 2}));
}

TEST(Elementwise, OpsOnStridedViews) {
  Ref x = random_ref({6, 10}, 21, DType::f32);
  Tensor t = upload(x, DType::f32);
  // Transposed, sliced with step, and expanded views go straight into kernels.
  Tensor tt = t.t();                // [10, 6]
  Tensor sl = t.slice(1, 1, 9, 3);  // [6, 3]: columns 1, 4, 7
  Tensor ex = t.slice(0, 2, 3).expand({4, 6, 10});
  Ref got_t = read(tt.exp());
  Ref got_s = read(sl * 2.0);
  Ref got_e = read(add(ex, t));
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 6; ++j)
      EXPECT_NEAR(got_t.v[size_t(i * 6 + j)], std::exp(x.v[size_t(j * 10 + i)]), 1e-5 * std::exp(3.0));
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_FLOAT_EQ(float(got_s.v[size_t(i * 3 + j)]), float(2 * x.v[size_t(i * 10 + 1 + 3 * j)]));
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 10; ++j)
        EXPECT_FLOAT_EQ(float(got_e.v[size_t((k * 6 + i) * 10 + j)]),
                        float(x.v[size_t(20 + j)] + x.v[size_t(i * 10 + j)]));
  // Writing ops never alias their inputs: the view's storage is unchanged.
  EXPECT_TRUE(close(read(t), x, {0, 0}, "input untouched"));
}

TEST(Elementwise, CastBetweenAllDtypes) {
  Ref x = random_ref({3, 17}, 31, DType::i32, 0, 4);  // small non-negative integers: exact in every dtype
  std::vector<DType> all = {DType::f32, DType::i32, DType::u32};
  if (ctx()->features().shader_f16) all.push_back(DType::f16);
  for (DType from : all)
    for (DType to : all) {
      Tensor c = upload(x, from).cast(to);
      EXPECT_EQ(c.dtype(), to);
      EXPECT_TRUE(close(read(c), x, {0, 0}, std::string("cast ") + dtype_name(from) + "→" + dtype_name(to)));
    }
  // Float → int truncates toward zero, as C.
  auto v = Tensor::from_vector(ctx(), std::vector<float>{-2.7f, -0.5f, 0.5f, 2.7f}, {4})
               .cast(DType::i32)
               .to_vector<int32_t>();
  EXPECT_EQ(v, (std::vector<int32_t>{-2, 0, 0, 2}));
}
