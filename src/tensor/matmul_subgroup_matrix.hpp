// f16 matmul on Dawn's subgroup matrices (chromium_experimental_subgroup_matrix: tensor cores
// from WGSL; issue 34): f16 operands, f32 accumulation, f16 result.
#pragma once
#include <string>

#include "matmul_problem.hpp"

namespace surfgrad {

struct SubgroupMatrixParams {
  int tm = 4, tn = 4;  // 16×16 result tiles per subgroup (rows, columns)
  int wm = 1, wn = 1;  // subgroups per workgroup (rows, columns)
  int bk = 32;         // K per staging step (a multiple of 16)
  bool staged = true;  // false: subgroupMatrixLoad straight from the buffers (the probe's kernel)
  // Tests only: the subgroup-matrix builtins emulated by plain WGSL functions (each invocation
  // holds whole 16×16 tiles), so that the kernel's staging, indexing and edge guards run against
  // float64 on adapters without the feature (lavapipe, under either implementation).
  bool emulate = false;
  std::string str() const;
};

// Why `p` cannot run with `sm` here ("" when it can): the device lacks the feature or an
// f16×f16→f32 16×16×16 config, one subgroup size, the workgroup memory; the unstaged form also
// needs contiguous row-major single matrices with M, N multiples of its block and K of 16.
std::string subgroup_matrix_unsupported(const MatmulProblem& p, const SubgroupMatrixParams& sm);
// The kernel's WGSL body (after matmul_common.wgsl), for subgroup size `sg`: public so that a
// test can hand it to a WGSL compiler where no adapter offers the feature.
std::string subgroup_matrix_wgsl(const SubgroupMatrixParams& sm, int sg, bool vec4_loads);
// Compiles (cached) and returns the dispatch of C = A·B for `p`.
std::function<void()> subgroup_matrix_matmul(const MatmulProblem& p, const SubgroupMatrixParams& sm);

}  // namespace surfgrad
