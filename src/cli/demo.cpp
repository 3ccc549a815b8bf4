// `surfgrad demo`: a few GPU tensor ops, each checked against the same computation on the host.
#include <chrono>
#include <cmath>
#include <cstdio>

#include "cli.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad::cli {

namespace {

bool report(const char* what, double got, double want) {
  bool ok = std::abs(got - want) <= 1e-3 * (1 + std::abs(want));
  std::printf("  %-34s gpu %-12.6g host (float64) %-12.6g %s\n", what, got, want, ok ? "ok" : "MISMATCH");
  return ok;
}

}  // namespace

int cmd_demo_tensors(const gpu::ContextPtr& ctx) {
  std::printf("surfgrad demo on %s (%s, %s)\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str());
  auto t0 = std::chrono::steady_clock::now();
  const int64_t n = 512, d = 256;
  Tensor x = Tensor::normal(ctx, {n, d}, /*seed=*/7);
  Tensor w = Tensor::uniform(ctx, {d, 64}, /*seed=*/8, -0.1, 0.1);
  Tensor h = x.matmul(w).relu();  // [512, 64]
  Tensor p = h.softmax(1);        // rows sum to 1
  Tensor row_sums = p.sum({1});
  Tensor top = p.argmax(1);
  Tensor norms = (x * x).sum({1}).sqrt();
  std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>();
  std::vector<float> hs = h.to_vector<float>(), rs = row_sums.to_vector<float>(), ns = norms.to_vector<float>();
  std::vector<int32_t> tops = top.to_vector<int32_t>();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  bool ok = true;
  double mean = 0, var = 0;
  for (float v : xs) mean += v;
  mean /= double(xs.size());
  for (float v : xs) var += (v - mean) * (v - mean);
  var /= double(xs.size());
  std::printf("  normal(seed 7) over %zu values: mean %.4f, variance %.4f\n", xs.size(), mean, var);
  ok &= std::abs(mean) < 0.01 && std::abs(var - 1) < 0.02;
  // Host float64 versions of the same computations.
  size_t i = 0, j = 0;  // the largest activation, so the check is not a trivial relu(…) = 0
  for (size_t k = 0; k < hs.size(); ++k)
    if (hs[k] > hs[i * 64 + j]) i = k / 64, j = k % 64;
  double hij = 0;
  for (int64_t k = 0; k < d; ++k) hij += double(xs[i * d + size_t(k)]) * double(ws[size_t(k) * 64 + j]);
  ok &= report("max of relu(x @ w)", hs[i * 64 + j], std::max(hij, 0.0));
  ok &= report("softmax(h)[3].sum()", rs[3], 1.0);
  double norm5 = 0;
  for (int64_t k = 0; k < d; ++k) norm5 += double(xs[size_t(5 * d + k)]) * xs[size_t(5 * d + k)];
  ok &= report("||x[5]||", ns[5], std::sqrt(norm5));
  int best = 0;
  for (int k = 1; k < 64; ++k)
    if (hs[size_t(9 * 64 + k)] > hs[size_t(9 * 64 + best)]) best = k;
  ok &= report("argmax(softmax(h)[9])", tops[9], best);
  auto stats = ctx->pool_stats();
  std::printf("%s in %.1f ms; %zu kernels compiled, %llu live buffers (%.1f MiB), %llu pooled\n",
              ok ? "all checks passed" : "CHECKS FAILED", ms, ctx->kernel_cache_size(),
              (unsigned long long)stats.live_buffers, double(stats.live_bytes) / (1 << 20),
              (unsigned long long)stats.pooled_buffers);
  return ok ? 0 : 1;
}

}  // namespace surfgrad::cli
