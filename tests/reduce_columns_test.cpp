// Reductions over leading axes of contiguous tensors run in place over columns
// (reduce_columns.wgsl: no transposing copy): sum, mean, max, min over 1 and 2 leading axes,
// keepdim, a view starting past its buffer's beginning, i32, against float64 on the host; one
// dispatch each; rows past 4,096 still take the row kernels.
#include <cmath>

#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

TEST(ReduceColumns, LeadingAxesAgainstFloat64) {
  struct Case {
    Shape shape;
    int lead;
  };
  for (const Case& k : {Case{{512, 1024}, 1}, Case{{512, 10}, 1}, Case{{7, 3, 33}, 2}, Case{{1, 5}, 1},
                        Case{{4096, 3}, 1}, Case{{5000, 2}, 1}, Case{{6, 4, 2}, 1}}) {
    int64_t n = shape_numel(k.shape), R = 1;
    for (int d = 0; d < k.lead; ++d) R *= k.shape[size_t(d)];
    int64_t C = n / R;
    // A view from element 8 of a longer buffer: the kernel reads at the view's offset.
    Tensor base = Tensor::uniform(ctx(), {n + 8}, 11, -2, 2);
    Tensor x = base.slice(0, 8, n + 8).reshape(k.shape);
    std::vector<float> h = base.to_vector<float>();
    std::vector<int> axes;
    for (int d = 0; d < k.lead; ++d) axes.push_back(d);
    ctx()->sync();
    uint64_t before = ctx()->pending_dispatches();
    Tensor s = x.sum(axes), m = x.mean(axes, true), mx = x.max(axes), mn = x.min(axes);
    if (R <= 4096) {
      EXPECT_EQ(ctx()->pending_dispatches() - before, 4u) << shape_str(k.shape);
    }
    Shape kept = m.shape();
    for (int d = 0; d < k.lead; ++d) EXPECT_EQ(kept[size_t(d)], 1) << "keepdim";
    std::vector<float> gs = s.to_vector<float>(), gm = m.to_vector<float>(), gx = mx.to_vector<float>(),
                       gn = mn.to_vector<float>();
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0, hi = -1e300, lo = 1e300;
      for (int64_t r = 0; r < R; ++r) {
        double v = h[size_t(8 + r * C + c)];
        sum += v;
        hi = std::max(hi, v);
        lo = std::min(lo, v);
      }
      ASSERT_NEAR(gs[size_t(c)], sum, 1e-5 * double(R)) << shape_str(k.shape) << " column " << c;
      ASSERT_NEAR(gm[size_t(c)], sum / double(R), 1e-5) << shape_str(k.shape) << " column " << c;
      ASSERT_EQ(gx[size_t(c)], float(hi)) << shape_str(k.shape) << " column " << c;
      ASSERT_EQ(gn[size_t(c)], float(lo)) << shape_str(k.shape) << " column " << c;
    }
  }
}

TEST(ReduceColumns, Integers) {
  std::vector<int32_t> v(300 * 7);
  for (size_t i = 0; i < v.size(); ++i) v[i] = int32_t(i % 101) - 50;
  std::vector<int32_t> got = Tensor::from_vector(ctx(), v, {300, 7}).sum({0}).to_vector<int32_t>();
  for (size_t c = 0; c < 7; ++c) {
    int32_t want = 0;
    for (size_t r = 0; r < 300; ++r) want += v[r * 7 + c];
    EXPECT_EQ(got[c], want) << c;
  }
}
