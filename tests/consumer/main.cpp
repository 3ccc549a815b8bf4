// Uses surfgrad as an outside project would: a context, a tensor op and a backward pass, each
// checked against the same numbers computed on the host. Prints OK or what differs.
#include <cmath>
#include <cstdio>
#include <surfgrad/surfgrad.hpp>
#include <vector>

using namespace surfgrad;

namespace {

int failures = 0;

void expect_near(const char* what, const std::vector<float>& got, const std::vector<double>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (i >= got.size() || !(std::abs(got[i] - want[i]) <= 1e-4 + 1e-4 * std::abs(want[i]))) {
      std::printf("%s[%zu]: got %g, want %g\n", what, i, i < got.size() ? got[i] : NAN, want[i]);
      ++failures;
      return;
    }
  }
}

}  // namespace

int main() {
  try {
    auto ctx = gpu::Context::create();
    const std::vector<float> x_host = {1, 2, 3, 4, 5, 6};           // [2, 3]
    const std::vector<float> w_host = {0.5f, -1, 2, 0.25f, -3, 1};  // [3, 2]

    // Forward: y = x·w on the GPU.
    Tensor x = Tensor::from_vector(ctx, x_host, {2, 3});
    Var w = Var::param(Tensor::from_vector(ctx, w_host, {3, 2}));
    Var y = Var(x).matmul(w);
    std::vector<double> y_ref(4, 0.0);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 3; ++k)
          y_ref[size_t(i * 2 + j)] += double(x_host[size_t(i * 3 + k)]) * w_host[size_t(k * 2 + j)];
    expect_near("x·w", y.value().to_vector<float>(), y_ref);

    // Backward: loss = Σ y², so d loss / d w = xᵀ·(2y).
    Var loss = y.pow(2).sum();
    loss.backward();
    std::vector<double> grad_ref(6, 0.0);
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 2; ++j)
        for (int i = 0; i < 2; ++i)
          grad_ref[size_t(k * 2 + j)] += x_host[size_t(i * 3 + k)] * 2 * y_ref[size_t(i * 2 + j)];
    expect_near("d loss / d w", w.grad().to_vector<float>(), grad_ref);

    if (failures) return 1;
    std::printf("OK (%s)\n", ctx->info().name.c_str());
    return 0;
  } catch (const Error& e) {
    std::printf("surfgrad error: %s\n", e.what());
    return 1;
  }
}
