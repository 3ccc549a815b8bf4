// Lazy mode (issue 36) on the MLP 784-1024-1024-10 Adam step of `surfgrad bench lazy`: the same
// losses as eager mode over a few steps, and at most half of eager's dispatches per step (counted
// between syncs on the same adapter, in one process), so that the matmul epilogues and the other
// fusions of a training step cannot silently stop applying.
#include "lazy_test_util.hpp"
#include "surfgrad/autograd.hpp"
#include "surfgrad/nn.hpp"
#include "surfgrad/optim.hpp"
#include "tensor/matmul_problem.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

struct StepRun {
  std::vector<float> losses;
  uint64_t dispatches = 0;  // of the last step, without its loss read
};

// `steps` Adam steps of the bench's MLP on a batch of `batch` rows; the losses read after each.
StepRun run_steps(bool lazy, int steps, int64_t batch, const std::vector<int64_t>& widths) {
  LazyScope mode(lazy);
  auto model = nn::mlp(ctx(), widths, nn::Activation::ReLU, 1);
  optim::Adam adam(model->parameters(), 1e-3);
  Tensor xb = Tensor::normal(ctx(), {batch, widths.front()}, 2);
  Tensor yb = Tensor::arange(ctx(), 0, double(batch), 1, DType::i32);
  yb = sub(yb, mul(div(yb, scalar_like(yb, 10)), scalar_like(yb, 10)));  // labels 0..9
  yb.realize();
  StepRun r;
  for (int s = 0; s < steps; ++s) {
    ctx()->sync();
    uint64_t before = ctx()->pending_dispatches();
    Var loss = nn::cross_entropy(model->forward(Var(xb)), yb);
    adam.zero_grad();
    loss.backward();
    adam.step();
    loss.value().realize();
    r.dispatches = ctx()->pending_dispatches() - before;
    r.losses.push_back(loss.value().to_vector<float>()[0]);
  }
  return r;
}

}  // namespace

TEST(LazyMlpStep, LossesEqualEagersAndDispatchesHalve) {
  const std::vector<int64_t> widths = {784, 1024, 1024, 10};
  StepRun eager = run_steps(false, 3, 512, widths);
  StepRun lazy = run_steps(true, 3, 512, widths);
  ASSERT_EQ(eager.losses.size(), lazy.losses.size());
  for (size_t i = 0; i < eager.losses.size(); ++i) EXPECT_EQ(eager.losses[i], lazy.losses[i]) << "step " << i;
  std::printf("MLP step dispatches: eager %llu, lazy %llu\n", (unsigned long long)eager.dispatches,
              (unsigned long long)lazy.dispatches);
  EXPECT_LE(2 * lazy.dispatches, eager.dispatches);
}

// The same step with the matmul choices a GPU makes (matmul_as_gpu: tiled kernels, split-K where
// split_k_factor says so; on lavapipe this reproduces the H200's counts: 40 / 24 at e66cc88, 36 / 20 at 7c3a579).
// Per step, lazily: the forward's three split products (partials, then their sums inlined into
// bias + relu, bias: 2 dispatches each) and cross-entropy (1); its backward with the logits' bias
// gradient (1); dX3 = g @ W3^T (1) and the masked bias gradient that stores g2 (1); dW3, dW2,
// dW1 split (their partials: 1 each; Adam's group kernel sums the slices in place, so no sum
// dispatch: 20 before that); dX2 split with its sum inside the masked bias gradient (2); Adam (2):
// 17. Eagerly 36. The split views read transposed operands in place (before: a strided copy per
// split x^T @ g and g @ W^T, 4 a step each way). Halved with a GPU's choices too, on any adapter.
TEST(LazyMlpStep, GpuMatmulChoicesKeepEagersLossesAndCopyNoOperand) {
  struct AsGpu {
    bool previous = matmul_as_gpu();
    AsGpu() { matmul_as_gpu() = true; }
    ~AsGpu() { matmul_as_gpu() = previous; }
  } as_gpu;
  const std::vector<int64_t> widths = {784, 1024, 1024, 10};
  StepRun eager = run_steps(false, 1, 512, widths);
  StepRun lazy = run_steps(true, 1, 512, widths);
  EXPECT_EQ(eager.losses, lazy.losses);
  std::printf("MLP step dispatches with a GPU's matmul choices: eager %llu, lazy %llu\n",
              (unsigned long long)eager.dispatches, (unsigned long long)lazy.dispatches);
  EXPECT_LE(2 * lazy.dispatches, eager.dispatches);
  // Exact on CPU adapters (no tuning cache there; a GPU's tuned tiles may split otherwise).
  if (ctx()->info().is_cpu) {
    EXPECT_EQ(eager.dispatches, 36u);
    EXPECT_EQ(lazy.dispatches, 17u);
  }
}

// nn::cross_entropy's backward recorded lazily (cross_entropy_backward.wgsl's expression with a
// column index and the inlined seed): eager's bits, and with the logits' bias gradient it is one
// dispatch (the column sum evaluates it and stores it for the matmul that reads it next).
TEST(LazyMlpStep, CrossEntropyBackwardMatchesEagerBitsInsideTheBiasSum) {
  const int64_t n = 37, c = 11;
  Tensor x = Tensor::normal(ctx(), {n, c}, 5), yv = Tensor::arange(ctx(), 0, double(n), 1, DType::i32);
  yv = sub(yv, mul(div(yv, scalar_like(yv, int(c))), scalar_like(yv, int(c))));
  Tensor b = Tensor::normal(ctx(), {c}, 6);
  auto grads = [&](bool lazy, uint64_t* backward_dispatches) {
    LazyScope mode(lazy);
    Var xv = Var::param(x), bv = Var::param(b);
    Var loss = nn::cross_entropy(xv + bv, yv);
    loss.value().realize();
    ctx()->sync();
    uint64_t before = ctx()->pending_dispatches();
    loss.backward();
    bv.grad().realize();
    *backward_dispatches = ctx()->pending_dispatches() - before;
    return std::pair{xv.grad().to_vector<float>(), bv.grad().to_vector<float>()};
  };
  uint64_t eager_n = 0, lazy_n = 0;
  auto [ex, eb] = grads(false, &eager_n);
  auto [lx, lb] = grads(true, &lazy_n);
  EXPECT_EQ(ex, lx);
  EXPECT_EQ(eb, lb);
  EXPECT_EQ(lazy_n, 1u);  // eager: the seed's fill, the kernel, the column sum
  EXPECT_EQ(eager_n, 3u);
  // Against float64: softmax minus the one-hot, over n.
  std::vector<float> xs = x.to_vector<float>();
  std::vector<int32_t> ys = yv.to_vector<int32_t>();
  std::vector<float> bs = b.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    double m = -1e300, s = 0;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, double(xs[size_t(i * c + j)]) + bs[size_t(j)]);
    for (int64_t j = 0; j < c; ++j) s += std::exp(double(xs[size_t(i * c + j)]) + bs[size_t(j)] - m);
    for (int64_t j = 0; j < c; ++j) {
      double p = std::exp(double(xs[size_t(i * c + j)]) + bs[size_t(j)] - m) / s - (ys[size_t(i)] == j ? 1 : 0);
      ASSERT_NEAR(lx[size_t(i * c + j)], p / double(n), 1e-6) << i << "," << j;
    }
  }
}
