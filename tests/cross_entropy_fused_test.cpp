// nn::cross_entropy's fused kernels (src/nn/cross_entropy.cpp) against float64 on the host: the
// loss and d loss / d logits on fuzzed [N, C] (one workgroup and several: past 4,096 rows), an
// incoming gradient other than 1, rows far from 0 (logsumexp's max shift), one dispatch each
// way, and a label out of range reported at the read with the op named.
#include <cmath>

#include "surfgrad/nn.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

uint64_t dispatches_of(const std::function<void()>& work) {
  ctx()->sync();
  uint64_t before = ctx()->pending_dispatches();
  work();
  return ctx()->pending_dispatches() - before;
}

}  // namespace

TEST(CrossEntropyFused, LossAndGradientAgainstFloat64) {
  std::mt19937 gen(7);
  struct Case {
    int64_t n, c;
  };
  for (Case k : {Case{1, 1}, Case{3, 2}, Case{512, 10}, Case{37, 129}, Case{5000, 3}, Case{9000, 11}}) {
    std::vector<float> x(size_t(k.n * k.c));
    std::uniform_real_distribution<float> u(-4.f, 4.f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = u(gen) + (i % 3 == 0 ? 60.f : 0.f);
    std::vector<int32_t> y(static_cast<size_t>(k.n));
    for (auto& v : y) v = int32_t(gen() % uint32_t(k.c));
    Var logits = Var::param(Tensor::from_vector(ctx(), x, {k.n, k.c}));
    Var loss;
    uint64_t forward = dispatches_of([&] {
      loss = nn::cross_entropy(logits, Tensor::from_vector(ctx(), y, {k.n}));
      loss.value().realize();
    });
    EXPECT_LE(forward, k.n > 4096 ? 2u + 1u : 1u) << k.n << "x" << k.c;  // + the partials' sum
    Tensor seed = Tensor::full(ctx(), {}, 2.5);
    uint64_t backward = dispatches_of([&] {
      loss.backward(seed);
      logits.grad().realize();
    });
    EXPECT_EQ(backward, 1u) << k.n << "x" << k.c;
    double ref = 0;
    std::vector<double> lse(static_cast<size_t>(k.n));
    for (int64_t i = 0; i < k.n; ++i) {
      double m = -1e300, s = 0;
      for (int64_t j = 0; j < k.c; ++j) m = std::max(m, double(x[size_t(i * k.c + j)]));
      for (int64_t j = 0; j < k.c; ++j) s += std::exp(double(x[size_t(i * k.c + j)]) - m);
      lse[size_t(i)] = std::log(s) + m;
      ref += (lse[size_t(i)] - x[size_t(i * k.c + y[size_t(i)])]) / double(k.n);
    }
    EXPECT_NEAR(loss.value().to_vector<float>()[0], ref, 1e-5 * std::max(1.0, std::abs(ref))) << k.n << "x" << k.c;
    std::vector<float> g = logits.grad().to_vector<float>();
    for (int64_t i = 0; i < k.n; ++i)
      for (int64_t j = 0; j < k.c; ++j) {
        double p = std::exp(double(x[size_t(i * k.c + j)]) - lse[size_t(i)]);
        double want = 2.5 * (p - (j == y[size_t(i)] ? 1.0 : 0.0)) / double(k.n);
        // exp(x - lse) in f32: x - lse is off by ~an ulp of |x| (up to 64 here), so p by ~8e-6 p
        ASSERT_NEAR(g[size_t(i * k.c + j)], want, 2.5 * 2e-5 / double(k.n) + 2e-5 * std::abs(want))
            << k.n << "x" << k.c << " at " << i << ", " << j;
      }
  }
}

TEST(CrossEntropyFused, LabelOutOfRangeIsReportedAtTheRead) {
  Var logits = Var::param(Tensor::from_vector(ctx(), std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}));
  for (int32_t bad : {3, -1}) {
    Var loss = nn::cross_entropy(logits, Tensor::from_vector(ctx(), std::vector<int32_t>{0, bad}, {2}));
    try {
      (void)loss.value().to_vector<float>();
      FAIL() << "label " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cross_entropy"), std::string::npos) << e.what();
    }
  }
}
