// gather / index_select / scatter_add / index_add / concat against the host reference,
// including colliding scatter indices and out-of-range indices reported as errors.
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

Tensor indices(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from_vector(ctx(), v, s); }

std::vector<int32_t> random_indices(std::mt19937& gen, int64_t n, int64_t bound) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = std::uniform_int_distribution<int32_t>(0, int32_t(bound) - 1)(gen);
  return v;
}

}  // namespace

TEST(Indexing, GatherFuzzed) {
  std::mt19937 gen(61);
  for (DType dt : {DType::f32, DType::i32})
    for (int trial = 0; trial < 8; ++trial) {
      uint32_t seed = gen();
      SG_SEEDED(seed);
      Shape s = random_shape(gen, 1, 4, 5000);
      int axis = std::uniform_int_distribution<int>(0, int(s.size()) - 1)(gen);
      Shape is = s;
      is[size_t(axis)] = std::uniform_int_distribution<int64_t>(1, 9)(gen);
      Ref x = random_ref(s, seed, dt);
      auto idx = random_indices(gen, shape_numel(is), s[size_t(axis)]);
      Ref want{is, {}};
      auto st = strides_of(s);
      for (int64_t i = 0; i < shape_numel(is); ++i) {
        auto c = unravel(i, is);
        c[size_t(axis)] = idx[size_t(i)];
        int64_t o = 0;
        for (size_t d = 0; d < c.size(); ++d) o += c[d] * st[d];
        want.v.push_back(x.v[size_t(o)]);
      }
      EXPECT_TRUE(close(read(gather(upload(x, dt), axis, indices(idx, is))), want, {0, 0},
                        "gather " + shape_str(s) + " axis " + std::to_string(axis)));
    }
}

TEST(Indexing, IndexSelectRowsOfTransposedView) {
  Ref x = random_ref({9, 5}, 62, DType::f32);
  Tensor xt = upload(x, DType::f32).t();  // [5, 9], strided
  std::vector<int32_t> idx = {8, 0, 8, 3};
  Ref got = read(index_select(xt, 1, indices(idx, {4})));
  ASSERT_EQ(got.shape, Shape({5, 4}));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(got.v[size_t(i * 4 + j)], x.v[size_t(idx[size_t(j)] * 5 + i)]);
}

TEST(Indexing, ScatterAddCollisionsAllCount) {
  std::mt19937 gen(63);
  for (DType dt : {DType::f32, DType::i32})
    for (int trial = 0; trial < 6; ++trial) {
      uint32_t seed = gen();
      SG_SEEDED(seed);
      Shape s = random_shape(gen, 1, 3, 3000);
      int axis = std::uniform_int_distribution<int>(0, int(s.size()) - 1)(gen);
      Shape is = s;
      is[size_t(axis)] = std::uniform_int_distribution<int64_t>(1, 200)(gen);  // many collisions
      Ref x = random_ref(s, seed, dt), src = random_ref(is, seed + 1, dt);
      auto idx = random_indices(gen, shape_numel(is), std::max<int64_t>(1, s[size_t(axis)] / 2 + 1));
      Ref want = x;
      auto st = strides_of(s);
      for (int64_t i = 0; i < shape_numel(is); ++i) {
        auto c = unravel(i, is);
        c[size_t(axis)] = idx[size_t(i)];
        int64_t o = 0;
        for (size_t d = 0; d < c.size(); ++d) o += c[d] * st[d];
        want.v[size_t(o)] += src.v[size_t(i)];
      }
      Tensor xt = upload(x, dt);
      EXPECT_TRUE(close(read(scatter_add(xt, axis, indices(idx, is), upload(src, dt))), want,
                        dt == DType::f32 ? Tol{1e-5, 1e-5} : Tol{0, 0}, "scatter_add " + shape_str(s)));
      EXPECT_TRUE(close(read(xt), x, {0, 0}, "input untouched"));
    }
}

TEST(Indexing, IndexAddAndF16) {
  Ref x = random_ref({6, 4}, 64, DType::f32), src = random_ref({5, 4}, 65, DType::f32);
  std::vector<int32_t> idx = {2, 2, 0, 5, 2};
  Ref want = x;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) want.v[size_t(idx[size_t(i)] * 4 + j)] += src.v[size_t(i * 4 + j)];
  EXPECT_TRUE(close(read(index_add(upload(x, DType::f32), 0, indices(idx, {5}), upload(src, DType::f32))), want,
                    {1e-5, 1e-5}, "index_add"));
  if (ctx()->features().shader_f16) {
    Ref xh = random_ref({6, 4}, 64, DType::f16), sh = random_ref({5, 4}, 65, DType::f16);
    Ref wh = xh;
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 4; ++j) wh.v[size_t(idx[size_t(i)] * 4 + j)] += sh.v[size_t(i * 4 + j)];
    EXPECT_TRUE(close(read(index_add(upload(xh, DType::f16), 0, indices(idx, {5}), upload(sh, DType::f16))), wh,
                      {1e-2, 1e-2}, "index_add f16"));
  }
}

TEST(Indexing, OutOfRangeIndicesAreReported) {
  Tensor x = Tensor::arange(ctx(), 0, 10).reshape({5, 2});
  for (int32_t bad : {5, -1, 1000}) {
    try {
      (void)index_select(x, 0, indices({0, bad}, {2})).to_vector<float>();
      FAIL() << "index " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Index);
      EXPECT_NE(std::string(e.what()).find("gather"), std::string::npos) << e.what();
    }
    try {
      (void)index_add(x, 0, indices({bad}, {1}), Tensor::ones(ctx(), {1, 2})).to_vector<float>();
      FAIL() << "index " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Index);
    }
  }
  // The flag is cleared: later valid work succeeds.
  EXPECT_EQ(index_select(x, 0, indices({4}, {1})).to_vector<float>(), (std::vector<float>{8, 9}));
  EXPECT_THROW(index_select(x, 0, Tensor::zeros(ctx(), {2})), Error);  // f32 indices: dtype error
}

TEST(Indexing, Concat) {
  Ref a = random_ref({2, 3, 4}, 66, DType::f32), b = random_ref({2, 5, 4}, 67, DType::f32);
  Tensor ta = upload(a, DType::f32), tb = upload(b, DType::f32);
  Ref got = read(concat({ta, tb.slice(1, 1, 3), ta}, 1));
  ASSERT_EQ(got.shape, Shape({2, 8, 4}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < 4; ++k) {
        double want = j < 3   ? a.v[size_t((i * 3 + j) * 4 + k)]
                      : j < 5 ? b.v[size_t((i * 5 + (j - 3 + 1)) * 4 + k)]
                              : a.v[size_t((i * 3 + (j - 5)) * 4 + k)];
        EXPECT_EQ(got.v[size_t((i * 8 + j) * 4 + k)], want);
      }
  EXPECT_THROW(concat({ta, upload(random_ref({2, 3, 5}, 1, DType::f32), DType::f32)}, 1), Error);
  EXPECT_THROW(concat({ta, ta.cast(DType::i32)}, 0), Error);
}
