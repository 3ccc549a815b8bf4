// Pieces the subgroup-matrix matmul generators share (matmul_subgroup_matrix.cpp, the staged and
// direct kernels; matmul_sgmat_panels.cpp, the panel kernel). Internal to src/tensor.
#pragma once
#include <string>

#include "matmul_subgroup_matrix.hpp"

namespace surfgrad::sgmat {

// Vec4 staging: each invocation loads `ca` quads (vec4<f16>) of A's BM × BK panel and `cb` of
// B's BK × BN panel a K step into registers ra_i / rb_j.
struct Staging {
  int ca, cb;                 // quads per invocation
  bool a_partial, b_partial;  // the last round covers only part of the panel
};
Staging staging_shape(const SubgroupMatrixParams& sm, int wg);
// The WGSL that fills ra_i / rb_j with the quads of the K step starting at `k0` (zeros past the
// matrices' edges). Expects M N K row0 col0 bases a_rs b_rs lid and the consts BM BN BK WG.
std::string quad_loads(const Staging& st, const std::string& k0);

// The entry point's header shared by the kernels: `@compute @workgroup_size(wg)`, the builtins
// (wid nwg lid sgi lane), then M N K, the block's `tile` (swizzled in groups of sm.sw block rows),
// the batch's `bases`, the strides a_rs a_cs b_rs b_cs and the block's row0 col0 (the consts BM BN).
std::string kernel_prologue(const SubgroupMatrixParams& sm, int wg);

// The panel kernel's WGSL body (pan=1; matmul_sgmat_panels.cpp).
std::string panel_kernel_wgsl(const SubgroupMatrixParams& sm, int sg);
// Its workgroup memory in bytes.
uint64_t panel_workgroup_bytes(const SubgroupMatrixParams& sm);

}  // namespace surfgrad::sgmat
