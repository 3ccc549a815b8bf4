// The subgroup-matrix builtins (Dawn's chromium_experimental_subgroup_matrix) rewritten as plain
// WGSL, so that kernels written for them run and are tested on adapters without the feature
// (lavapipe, SwiftShader): the matmul ladder's subgroup-matrix rungs and the exact kNN on tensor
// cores share this one rewrite.
#pragma once

#include <string>

namespace surfgrad::kernels {

// Rewrites `wgsl` so that it needs no subgroup matrices: the 16×16 f16 left/right and f32 result
// types become array<f32, 256> (row-major), and every subgroupMatrixLoad<_, row_major|col_major>(&buf,
// off, stride), subgroupMatrixStore<row_major>(&buf, off, m, stride) and
// subgroupMatrixMultiplyAccumulate(l, r, acc) becomes a call of a function generated for that buffer
// and layout. Every lane of a subgroup computes the whole tile (stores are a benign race: the lanes
// write equal values), so the result matches the hardware's up to f32 summation order. Store
// targets must be f32 arrays. Only the 16×16×16 f16 → f32 configuration is rewritten.
std::string emulate_subgroup_matrix(const std::string& wgsl);

}  // namespace surfgrad::kernels
