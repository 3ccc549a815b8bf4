// One rung of the matmul ladder measured on one problem: run once (compile, warm), checked against
// a float64 host product, then timed. Shared by `surfgrad bench matmul` and the browser build's
// benchMatmul (web/src/bench_web.cpp), so a rung is measured the same way natively and in a page.
#pragma once
#include <string>
#include <vector>

#include "matmul_problem.hpp"

namespace surfgrad {

struct MatmulMeasurement {
  std::string skipped;  // why the rung cannot run here ("" when it ran)
  std::string failed;   // the error a kernel raised (the implementation refused it, ...)
  bool valid = false;   // error within the rung's tolerance (only then timed)
  double error = 0;     // matmul_error on 256 sampled outputs
  double ms = 0;        // median of the timed runs
  double tflops = 0;    // 2·M·N·K / ms
};

// The ladder (matmul_variants()) and three rungs that run what Tensor::matmul runs: "tuned" (the
// autotuner's pick or the heuristic), "f16-tuned" (on f16 tensors: subgroup matrices where the
// adapter has them), "f16-tuned-tiled" (Tensor::matmul's tiled f16 kernel).
std::vector<MatmulVariant> matmul_bench_variants();

// Never throws for a rung the adapter cannot run or refuses (skipped / failed say why); a lost
// device is rethrown. `max_reps`: timed runs at most (fewer past 300 ms of total time).
MatmulMeasurement measure_matmul(const MatmulVariant& v, MatmulProblem& p, int max_reps);

// The median of up to `max_reps` timed runs of `run` after 100 ms of untimed ones (a GPU left idle
// while a kernel compiles drops its clock).
double time_matmul_run(const gpu::ContextPtr& ctx, const std::function<void()>& run, int max_reps);

}  // namespace surfgrad
