// Adam reading a weight gradient that is a pending split-K sum (lazy mode, GPUs' dW = x^T @ g):
// optim_adam_group.wgsl binds the partial products and sums the S slices at load in
// sum_slices.wgsl's order, so the step is the group's one dispatch (no sum dispatch per
// gradient) and every bit equals Adam over the realised gradient and over eager's.
#include "kernels/launch.hpp"
#include "lazy_test_util.hpp"
#include "surfgrad/autograd.hpp"
#include "surfgrad/optim.hpp"
#include "tensor/lazy.hpp"
#include "tensor/matmul_epilogue.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

struct ForcedSlices {
  int previous;
  explicit ForcedSlices(int s) : previous(matmul_forced_slices()) { matmul_forced_slices() = s; }
  ~ForcedSlices() { matmul_forced_slices() = previous; }
};

enum class Grad { pending, realised, eager };

struct Result {
  std::vector<std::vector<float>> params, grads;
  uint64_t step_dispatches = 0;  // of the second step
  bool pending = false;          // whether the split gradients were pending sums at the step
};

// Three parameters in one Adam group: W0 [24, 20] with a 4-slice gradient (K = 32), b [20] with a
// plain one, W2 [12, 8] with a 2-slice one (K = 6); two steps (AdamW), the gradients set directly.
Result run(Grad how) {
  LazyScope mode(how != Grad::eager);
  Tensor gb = Tensor::normal(ctx(), {20}, 79);
  std::vector<Var> params = {Var::param(Tensor::normal(ctx(), {24, 20}, 76)),
                             Var::param(Tensor::normal(ctx(), {20}, 77)),
                             Var::param(Tensor::normal(ctx(), {12, 8}, 78))};
  optim::AdamW adam(params, 0.01, 0.9, 0.99, 1e-8, 0.1);
  Result r;
  for (int step = 0; step < 2; ++step) {
    adam.zero_grad();
    // New operands each step (the second step's gradients differ from the first's).
    Tensor a0 = Tensor::normal(ctx(), {24, 32}, 71 + step), b0 = Tensor::normal(ctx(), {32, 20}, 73 + step);
    Tensor a2 = Tensor::normal(ctx(), {12, 6}, 75 + step), b2 = Tensor::normal(ctx(), {6, 8}, 77 + step);
    Tensor g0, g2;
    {
      ForcedSlices four(4);
      g0 = matmul(a0, b0);
    }
    {
      ForcedSlices two(2);
      g2 = matmul(a2, b2);
    }
    if (how == Grad::realised || how == Grad::eager) realize({g0, g2});
    params[0].accumulate_grad(g0);
    params[1].accumulate_grad(gb);
    params[2].accumulate_grad(g2);
    r.pending = lazy_pending_slices(params[0].grad()).slices == 4 && lazy_pending_slices(params[2].grad()).slices == 2;
    ctx()->sync();
    uint64_t before = ctx()->pending_dispatches();
    adam.step();
    r.step_dispatches = ctx()->pending_dispatches() - before;
  }
  for (const Var& p : params) {
    r.params.push_back(p.value().to_vector<float>());
    r.grads.push_back(p.grad().to_vector<float>());  // a pending sum realised now
  }
  // The gradients against float64 (the last step's products), so that the bits compared are right.
  std::vector<float> a = Tensor::normal(ctx(), {24, 32}, 72).to_vector<float>(),
                     b = Tensor::normal(ctx(), {32, 20}, 74).to_vector<float>();
  for (int64_t i = 0; i < 24; ++i)
    for (int64_t j = 0; j < 20; ++j) {
      double ref = 0;
      for (int64_t k = 0; k < 32; ++k) ref += double(a[size_t(i * 32 + k)]) * b[size_t(k * 20 + j)];
      EXPECT_NEAR(r.grads[0][size_t(i * 20 + j)], ref, 1e-4 * (1 + std::abs(ref))) << i << "," << j;
    }
  return r;
}

}  // namespace

TEST(LazyAdamSplitGrad, SumsSlicesInPlaceWithTheRealisedGradientsBits) {
  Result pending = run(Grad::pending), realised = run(Grad::realised), eager = run(Grad::eager);
  // Lazily the split sums reach Adam pending and its group is the step's only dispatch; realised
  // first (either mode) the same one dispatch reads buffers.
  EXPECT_TRUE(pending.pending);
  EXPECT_FALSE(realised.pending);
  EXPECT_EQ(pending.step_dispatches, 1u);
  EXPECT_EQ(realised.step_dispatches, 1u);
  EXPECT_EQ(eager.step_dispatches, 1u);
  // Bit for bit (close on GLES: lazy_test_util.hpp's fused_bits_promised).
  expect_same_values(pending.params, realised.params, "params, pending vs realised");
  expect_same_values(pending.params, eager.params, "params, pending vs eager");
  expect_same_values(pending.grads, realised.grads, "grads, pending vs realised");
  expect_same_values(pending.grads, eager.grads, "grads, pending vs eager");
}
