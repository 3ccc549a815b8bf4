// Adam updating up to three parameters in one dispatch (optim_adam_group.wgsl: each parameter and
// its gradient bound, every m and v in one state buffer): the same values as each parameter
// updated alone and as float64 on the host, for Adam and AdamW on parameters of unequal sizes,
// the same bits as optim_adam.wgsl (one parameter a dispatch, what Adam ran before pairs and
// groups), and a parameter listed twice (one group would bind its buffer writable twice).
#include "kernels/launch.hpp"
#include "surfgrad/optim.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// loss = Σ_k Σ p_k³ / 3 (gradient p²), `steps` Adam steps over `params` with one optimizer.
void run(std::vector<Var>& params, bool decoupled, int steps) {
  std::unique_ptr<optim::Optimizer> opt;
  if (decoupled)
    opt = std::make_unique<optim::AdamW>(params, 0.01, 0.9, 0.99, 1e-8, 0.1);
  else
    opt = std::make_unique<optim::Adam>(params, 0.01, 0.9, 0.99, 1e-8, 0.1);
  for (int t = 0; t < steps; ++t) {
    opt->zero_grad();
    Var loss = (params[0].pow(3) / 3.0).sum();
    for (size_t k = 1; k < params.size(); ++k) loss = loss + (params[k].pow(3) / 3.0).sum();
    loss.backward();
    opt->step();
  }
}

}  // namespace

TEST(OptimAdamPair, PairsMatchSingleUpdatesAndFloat64) {
  const std::vector<int64_t> sizes = {37, 5, 1000, 3, 64};
  for (bool decoupled : {false, true}) {
    std::vector<Tensor> init;
    for (size_t k = 0; k < sizes.size(); ++k) init.push_back(Tensor::uniform(ctx(), {sizes[k]}, 40 + k, -1, 1));
    std::vector<Var> together, alone;
    for (const Tensor& t : init) together.push_back(Var::param(t.clone()));
    run(together, decoupled, 4);
    for (const Tensor& t : init) {
      std::vector<Var> one = {Var::param(t.clone())};
      run(one, decoupled, 4);
      alone.push_back(one[0]);
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
      std::vector<float> a = together[k].value().to_vector<float>(), b = alone[k].value().to_vector<float>();
      std::vector<float> p0 = init[k].to_vector<float>();
      for (size_t i = 0; i < a.size(); ++i) {
        // The host's float64 Adam.
        double p = p0[i], m = 0, v = 0;
        for (int t = 1; t <= 4; ++t) {
          double g = p * p;
          if (!decoupled) g += 0.1 * p;
          m = 0.9 * m + 0.1 * g;
          v = 0.99 * v + 0.01 * g * g;
          if (decoupled) p -= 0.01 * 0.1 * p;
          p -= 0.01 * (m / (1 - std::pow(0.9, t))) / (std::sqrt(v / (1 - std::pow(0.99, t))) + 1e-8);
        }
        ASSERT_NEAR(a[i], b[i], 1e-6 * std::max(1.0, std::abs(double(b[i])))) << "parameter " << k << " element " << i;
        ASSERT_NEAR(a[i], p, 2e-5) << "parameter " << k << " element " << i << (decoupled ? " (AdamW)" : " (Adam)");
      }
    }
  }
}

TEST(OptimAdamPair, DispatchesAndAParameterListedTwice) {
  std::vector<Var> params = {Var::param(Tensor::ones(ctx(), {8})), Var::param(Tensor::ones(ctx(), {3})),
                             Var::param(Tensor::ones(ctx(), {5}))};
  optim::Adam opt(params, 0.1);
  (params[0].sum() + params[1].sum() + params[2].sum()).backward();
  ctx()->sync();
  uint64_t before = ctx()->pending_dispatches();
  opt.step();
  EXPECT_EQ(ctx()->pending_dispatches() - before, 1u) << "three parameters in one group";
  // Five: a group of three, then one of two.
  std::vector<Var> five;
  for (int64_t n : {4, 7, 1, 9, 2}) five.push_back(Var::param(Tensor::ones(ctx(), {n})));
  optim::Adam opt5(five, 0.1);
  Var sum5 = five[0].sum();
  for (size_t k = 1; k < five.size(); ++k) sum5 = sum5 + five[k].sum();
  sum5.backward();
  ctx()->sync();
  before = ctx()->pending_dispatches();
  opt5.step();
  EXPECT_EQ(ctx()->pending_dispatches() - before, 2u) << "five parameters: groups of three and two";
  for (const Var& v : five)
    for (float x : v.value().to_vector<float>()) EXPECT_NEAR(x, 0.9, 1e-4);
  // The same parameter twice: each update alone (Adam's first step moves a parameter by ~lr).
  Var p = Var::param(Tensor::zeros(ctx(), {4}));
  optim::Adam twice({p, p}, 0.1);
  p.sum().backward();
  twice.step();
  for (float x : p.value().to_vector<float>()) EXPECT_NEAR(x, -0.2, 1e-4);
}

// The grouped kernel against optim_adam.wgsl (one parameter, its own m and v), two steps of
// Adam and of AdamW: bit for bit.
TEST(OptimAdamPair, GroupsGiveTheSingleKernelsBits) {
  const std::vector<int64_t> sizes = {37, 5, 1000};
  for (bool decoupled : {false, true}) {
    std::vector<Var> params;
    std::vector<Tensor> single, grads, m, v;
    for (size_t k = 0; k < sizes.size(); ++k) {
      Tensor p = Tensor::uniform(ctx(), {sizes[k]}, 60 + k, -1, 1);
      params.push_back(Var::param(p.clone()));
      single.push_back(p.clone());
      grads.push_back(Tensor::uniform(ctx(), {sizes[k]}, 70 + k, -1, 1));
      m.push_back(Tensor::zeros(ctx(), {sizes[k]}));
      v.push_back(Tensor::zeros(ctx(), {sizes[k]}));
    }
    const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.1;
    optim::Adam opt(params, lr, b1, b2, eps, wd, decoupled);
    for (int t = 1; t <= 2; ++t) {
      opt.zero_grad();
      Var loss = (params[0] * Var(grads[0])).sum();
      for (size_t k = 1; k < params.size(); ++k) loss = loss + (params[k] * Var(grads[k])).sum();
      loss.backward();  // each parameter's gradient is grads[k]
      opt.step();
      float c1 = float(1.0 / (1.0 - std::pow(b1, double(t)))), c2 = float(1.0 / (1.0 - std::pow(b2, double(t))));
      for (size_t k = 0; k < sizes.size(); ++k)
        kernels::Program::file(ctx(), "optim_adam.wgsl")
            .launch({single[k], grads[k], m[k], v[k]}, {sizes[k], lr, b1, b2, eps, wd, c1, c2, decoupled},
                    kernels::groups_for(*ctx(), uint64_t(sizes[k]), 256));
    }
    for (size_t k = 0; k < sizes.size(); ++k)
      EXPECT_EQ(params[k].value().to_vector<float>(), single[k].to_vector<float>())
          << "parameter " << k << (decoupled ? " (AdamW)" : " (Adam)");
  }
}
