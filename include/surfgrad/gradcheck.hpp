// gradcheck: compares the GPU autograd gradient of a function with central finite differences
// computed in float64 on the host reference (HostArray).
//
//   auto f = [](const auto& x) { return (x[0].tanh() * x[1]).sum({1}); };  // generic lambda
//   GradcheckResult r = gradcheck(f, {a, b});
//   if (!r.ok) std::cerr << r.report;
//
// `f` is called once with std::vector<Var> (on the GPU) and many times with
// std::vector<HostArray> (float64), so it must be written against the names both offer. A
// non-scalar output y is reduced to L = sum(y · w) with fixed random weights w, so every output
// element contributes. The forward values are compared too.
#pragma once
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "surfgrad/autograd.hpp"
#include "surfgrad/reference.hpp"

namespace surfgrad {

struct GradcheckOptions {
  double eps = 1e-4;   // finite-difference step (float64, on the host)
  double atol = 2e-3;  // the GPU computes in f32: |analytic − numeric| ≤ atol + rtol·|numeric|
  double rtol = 2e-2;
  uint64_t seed = 1234;  // for the output weights
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  std::string report;  // the first mismatches, with input, index and both values
};

template <typename F>
GradcheckResult gradcheck(F&& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opt = {}) {
  GradcheckResult result;
  std::ostringstream report;
  // GPU: analytic gradients of L = sum(f(x) · w).
  std::vector<Var> vars;
  for (const Tensor& t : inputs) vars.push_back(Var::param(t));
  Var out = f(vars);
  Tensor w = Tensor::uniform(out.context(), out.shape(), opt.seed, -1, 1, out.dtype());
  (out * Var(w)).sum().backward();
  std::vector<HostArray> analytic;
  for (const Var& v : vars)
    analytic.push_back(v.grad().defined() ? HostArray::from(v.grad()) : HostArray::full(v.shape(), 0.0));

  // Host: the same function in float64.
  std::vector<HostArray> xs;
  for (const Tensor& t : inputs) xs.push_back(HostArray::from(t));
  HostArray wh = HostArray::from(w);
  auto loss = [&](const std::vector<HostArray>& x) { return (f(x) * wh).sum().item(); };
  HostArray out_gpu = HostArray::from(out.value()), out_ref = f(xs);
  int bad = 0;
  for (size_t i = 0; i < out_ref.values().size() && i < out_gpu.values().size(); ++i) {
    double r = out_ref.values()[i], g = out_gpu.values()[i];
    if (!(std::abs(g - r) <= opt.atol + opt.rtol * std::abs(r)) && bad++ < 5)
      report << "forward value " << i << ": gpu " << g << ", float64 reference " << r << "\n";
  }
  if (out_gpu.shape() != out_ref.shape()) report << "forward shapes differ\n", ++bad;
  for (size_t k = 0; k < xs.size(); ++k) {
    for (int64_t j = 0; j < xs[k].numel(); ++j) {
      double saved = xs[k].values()[size_t(j)];
      xs[k].values()[size_t(j)] = saved + opt.eps;
      double lp = loss(xs);
      xs[k].values()[size_t(j)] = saved - opt.eps;
      double lm = loss(xs);
      xs[k].values()[size_t(j)] = saved;
      double numeric = (lp - lm) / (2 * opt.eps);
      double a = analytic[k].values()[size_t(j)];
      double err = std::abs(a - numeric);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (!(err <= opt.atol + opt.rtol * std::abs(numeric)) && bad++ < 8)
        report << "input " << k << " element " << j << ": autograd " << a << ", finite differences " << numeric << "\n";
    }
  }
  result.ok = bad == 0;
  result.report = report.str();
  return result;
}

}  // namespace surfgrad
