// Softmax and layer norm as fused row kernels (issue 36): Var::softmax over the last axis
// (softmax_rows.wgsl) and nn::LayerNorm (layer_norm_rows.wgsl, layer_norm_backward.wgsl) against
// float64 by gradcheck on rows shorter and longer than a workgroup (1, 7, 520 columns: three strides), with
// leading axes; one dispatch forward and one backward (layer norm's: the input's gradient and the
// weight's and bias's in one grid).
#include "surfgrad/gradcheck.hpp"
#include "surfgrad/nn.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

Tensor rand_tensor(const Shape& s, uint64_t seed, double lo, double hi) {
  return Tensor::uniform(ctx(), s, seed, lo, hi);
}

uint64_t dispatches_of(const std::function<void()>& work) {
  ctx()->sync();
  uint64_t before = ctx()->pending_dispatches();
  work();
  return ctx()->pending_dispatches() - before;
}

const std::vector<Shape> kShapes = {{1, 1}, {5, 7}, {2, 520}, {2, 3, 33}};

}  // namespace

TEST(RowKernels, SoftmaxGradcheckAndDispatches) {
  uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    int last = int(s.size()) - 1;
    GradcheckResult r = gradcheck([&](const auto& x) { return x[0].softmax(last); }, {rand_tensor(s, seed++, -6, 6)});
    EXPECT_TRUE(r.ok) << shape_str(s) << "\n" << r.report;
    Var x = Var::param(rand_tensor(s, seed++, -3, 3));
    Var y;
    EXPECT_EQ(dispatches_of([&] { y = x.softmax(-1); }), 1u) << shape_str(s);
    Tensor g = rand_tensor(s, seed++, -1, 1);
    EXPECT_EQ(dispatches_of([&] {
                y.backward(g);
                x.grad().realize();
              }),
              1u)
        << shape_str(s);
  }
}

TEST(RowKernels, LayerNormGradcheckAndDispatches) {
  uint64_t seed = 100;
  for (const Shape& s : kShapes) {
    int64_t c = s.back();
    // nn::LayerNorm's formula written for both Var (the fused kernels) and HostArray (float64).
    auto f = [&](const auto& in) {
      if constexpr (std::is_same_v<std::decay_t<decltype(in[0])>, Var>) {
        nn::LayerNorm ln(ctx(), c, 1e-5);
        ln.weight = in[1];
        ln.bias = in[2];
        return ln.forward(in[0]);
      } else {
        auto centered = in[0] - in[0].mean({-1}, true);
        auto var = (centered * centered).mean({-1}, true);
        return centered * (var + 1e-5).rsqrt() * in[1] + in[2];
      }
    };
    GradcheckResult r = gradcheck(
        f, {rand_tensor(s, seed, -2, 2), rand_tensor({c}, seed + 1, 0.5, 1.5), rand_tensor({c}, seed + 2, -1, 1)});
    seed += 3;
    EXPECT_TRUE(r.ok) << shape_str(s) << "\n" << r.report;
    nn::LayerNorm ln(ctx(), c);
    Var x = Var::param(rand_tensor(s, seed++, -3, 3)), y;
    EXPECT_EQ(dispatches_of([&] { y = ln.forward(x); }), 1u) << shape_str(s);
    Tensor g = rand_tensor(s, seed++, -1, 1);
    EXPECT_EQ(dispatches_of([&] {
                y.backward(g);
                realize({x.grad(), ln.weight.grad(), ln.bias.grad()});
              }),
              1u)
        << shape_str(s);
  }
}
