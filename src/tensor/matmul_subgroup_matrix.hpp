// f16 matmul on Dawn's subgroup matrices (chromium_experimental_subgroup_matrix: tensor cores
// from WGSL; issue 34): f16 operands, f32 accumulation, f16 result.
#pragma once
#include <optional>
#include <string>
#include <vector>

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
  int pad = 0;      // staged: f16 elements added to each workgroup-memory row (against bank conflicts)
  bool db = false;  // staged, vec4 layouts: the next K step's global loads issued before this step's MMAs
  bool bt = false;  // staged: B's panel stored n-major and loaded col_major
  // staged, vec4 layouts: per-subgroup panels in two buffers, loads at constant offsets (no
  // robustness predicate), one barrier a K step (matmul_sgmat_panels.cpp); implies prefetch.
  bool pan = false;
  // pan only (the sweep's knobs, matmul_sgmat_panels.cpp):
  int nb = 2;          // workgroup-memory buffers: 2 ping-pong (one barrier a step), 1 (two barriers)
  bool acc16 = false;  // f16 accumulators (the f16×f16→f16 config): half the registers, f16 sums
  bool n8 = false;     // 16×8×16 fragments (right operand and result 8 columns wide; tn still counts 16)
  bool v8 = false;     // each invocation stages 8 consecutive halves (two quads) at a time
  bool il = false;     // operand fragments loaded as used: B's of a 16-deep slice, then A's one at a time
  bool c_f32 = false;  // f32 result (the split-f16 f32 matmul); not part of spec()
  int sw = 1;          // workgroups visit C's blocks in groups of `sw` block rows (L2 reuse); 1 = row-major
  std::string str() const;
  // "tm=4,tn=2,wm=2,wn=2,bk=32,staged=1,pad=8,db=1,sw=8[,bt=1][,pan=1][,nb=1][,acc16=1][,n8=1][,v8=1][,il=1]":
  // parse_subgroup_matrix_spec's syntax (the pan knobs only where they differ from the defaults).
  std::string spec() const;
};

// Parses "key=value,..." (keys tm tn wm wn bk staged pad db sw bt pan nb acc16 n8 v8 il, and emulate for dry runs on
// adapters without the feature; unnamed keys keep their defaults); throws Error(Value) naming the bad key or value and
// the accepted range.
SubgroupMatrixParams parse_subgroup_matrix_spec(const std::string& spec);

// Why `p` cannot run with `sm` here ("" when it can): the device lacks the feature or an
// f16×f16→f32 16×16×16 config, one subgroup size, the workgroup memory; the unstaged form also
// needs contiguous row-major single matrices with M, N multiples of its block and K of 16.
std::string subgroup_matrix_unsupported(const MatmulProblem& p, const SubgroupMatrixParams& sm);
// The kernel's WGSL body (after matmul_common.wgsl), for subgroup size `sg`: public so that a
// test can hand it to a WGSL compiler where no adapter offers the feature.
std::string subgroup_matrix_wgsl(const SubgroupMatrixParams& sm, int sg, bool vec4_loads);
// Compiles (cached) and returns the dispatch of C = A·B for `p`.
std::function<void()> subgroup_matrix_matmul(const MatmulProblem& p, const SubgroupMatrixParams& sm);

// f32 C = A·B through split f16 products on the same kernel (f32 accumulation):
// A·B ≈ Ahi·Bhi + Ahi·Blo + Alo·Bhi. Single f32 matrices, values within f16's range.
std::string subgroup_matrix_split_unsupported(const MatmulProblem& p, const SubgroupMatrixParams& sm);
std::function<void()> subgroup_matrix_split_f32(const MatmulProblem& p, const SubgroupMatrixParams& sm);

// The configuration Tensor::matmul runs an f16 product with on this adapter, or nullopt (the
// tiled ladder: no subgroup matrices, a shape none of the defaults takes, too few blocks to fill
// a GPU). SURFGRAD_SGMAT=0 turns it off; SURFGRAD_SGMAT=<spec> (parse_subgroup_matrix_spec)
// tries that configuration first.
std::optional<SubgroupMatrixParams> subgroup_matrix_choice(const MatmulProblem& p);
// The first of `tries` that runs `p` here with at least `min_blocks` blocks of C (fewer leave
// tensor cores idle: the tiled kernel splits K for such shapes).
std::optional<SubgroupMatrixParams> subgroup_matrix_pick(const MatmulProblem& p,
                                                         const std::vector<SubgroupMatrixParams>& tries,
                                                         uint64_t min_blocks = 128);
// Runs `p` on subgroup_matrix_choice's configuration; false (nothing run) where there is none.
bool run_subgroup_matrix_default(const MatmulProblem& p);

// A bench-ladder rung for `sm`, named "f16-sgmat:" + sm.spec().
MatmulVariant subgroup_matrix_variant(const SubgroupMatrixParams& sm);
// `surfgrad bench matmul --sweep sgmat`: the grid of configurations the GPU sweep times (the
// panel kernel's block shapes, B layouts, bk, padding, swizzle, and the direct and old staged
// kernels as references); the ones an adapter cannot run are skipped by
// subgroup_matrix_unsupported with the reason.
std::vector<SubgroupMatrixParams> subgroup_matrix_sweep();

}  // namespace surfgrad
