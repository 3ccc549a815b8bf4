// Adam updating parameters two by two in one dispatch (optim_adam_pair.wgsl): the same values as
// each parameter updated alone (optim_adam.wgsl) and as float64 on the host, for Adam and AdamW
// on parameters of unequal sizes (an odd one out alone), and a parameter listed twice (its
// pair would bind one buffer writable twice: updated one at a time).
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
  EXPECT_EQ(ctx()->pending_dispatches() - before, 2u) << "one pair and one alone";
  // The same parameter twice: each update alone (Adam's first step moves a parameter by ~lr).
  Var p = Var::param(Tensor::zeros(ctx(), {4}));
  optim::Adam twice({p, p}, 0.1);
  p.sum().backward();
  twice.step();
  for (float x : p.value().to_vector<float>()) EXPECT_NEAR(x, -0.2, 1e-4);
}
