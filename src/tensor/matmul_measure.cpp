// measure_matmul (matmul_measure.hpp).
#include "matmul_measure.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "matmul_subgroup_matrix.hpp"

namespace surfgrad {

std::vector<MatmulVariant> matmul_bench_variants() {
  std::vector<MatmulVariant> variants = matmul_variants();
  auto needs_f16 = [](const MatmulProblem& p) {
    return p.ctx->features().shader_f16 ? std::string() : std::string("no shader-f16");
  };
  variants.push_back({13, "tuned", "what Tensor::matmul runs: the autotuner's pick or the heuristic", 1e-5,
                      [](const MatmulProblem&) { return std::string(); },
                      [](const MatmulProblem& p) { return std::function<void()>([p] { run_matmul(p); }); }});
  variants.push_back({13, "f16-tuned", "Tensor::matmul on f16 tensors (subgroup matrices where the adapter has them)",
                      2e-3, needs_f16, [](const MatmulProblem& p) {
                        if (auto sm = subgroup_matrix_choice(p)) return subgroup_matrix_matmul(p, *sm);
                        TiledParams params = matmul_params(p.ctx, p.dtype(), p.M, p.N, p.K, matmul_vec4_staging(p));
                        return std::function<void()>([p, params] { run_tiled(p, params); });
                      }});
  variants.push_back({13, "f16-tuned-tiled", "Tensor::matmul's tiled f16 kernel (no subgroup matrices)", 2e-3,
                      needs_f16, [](const MatmulProblem& p) {
                        TiledParams params = matmul_params(p.ctx, p.dtype(), p.M, p.N, p.K, matmul_vec4_staging(p));
                        return std::function<void()>([p, params] { run_tiled(p, params); });
                      }});
  return variants;
}

double time_matmul_run(const gpu::ContextPtr& ctx, const std::function<void()>& run, int max_reps) {
  // A GPU left idle while a kernel compiles and the result is checked on the host drops its
  // clock (the H200 to 345 of 1,980 MHz): 100 ms of work first. Without it the subgroup-matrix
  // sweep timed the same staged kernel at 23.8 TFLOP/s (4096^3, 5 runs of ~6 ms) and 78.8 (8192^3).
  for (auto w0 = std::chrono::steady_clock::now();
       std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(100);) {
    run();
    ctx->sync();
  }
  std::vector<double> t;
  double total = 0;
  for (int r = 0; r < max_reps && (r < 3 || total < 300); ++r) {
    double ms = ctx->timed_ms(run);
    t.push_back(ms);
    total += ms;
    if (ms > 2000) break;  // slow rungs at large sizes: one timed run is enough
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

MatmulMeasurement measure_matmul(const MatmulVariant& v, MatmulProblem& p, int max_reps) {
  MatmulMeasurement m;
  m.skipped = v.unsupported(p);
  if (!m.skipped.empty()) return m;
  try {  // a kernel the implementation refuses ends its own row, not the run
    std::function<void()> run = v.prepare(p);
    p.c.assign(scalar_like(p.c, 0));
    run();  // compile, warm up, and validate before timing
    m.error = matmul_error(p, 256, 99);
    m.valid = m.error <= v.tolerance;
    if (m.valid) {
      m.ms = time_matmul_run(p.ctx, run, max_reps);
      m.tflops = 2.0 * double(p.M) * double(p.N) * double(p.K) * double(p.batches) / (m.ms * 1e9);
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::DeviceLost) throw;
    m.failed = e.what();
  }
  return m;
}

}  // namespace surfgrad
