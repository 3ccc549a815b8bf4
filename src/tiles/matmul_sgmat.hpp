// tile_matmul on subgroup matrices (matmul_sgmat.cpp): which kernels use them, their workgroup
// scratch, and the emitted product.
#pragma once
#include <string>

#include "surfgrad/gpu.hpp"
#include "tiles/emit.hpp"

namespace surfgrad::tiles::detail {

// SURFGRAD_TILE_SGMAT: auto (where the device offers f16×f16→f32 16×16×16 subgroup matrices;
// right on the H100 since its workgroup arrays are 16-byte aligned: see sgmat_mode), off (the default: the scalar code
// everywhere), emulate (the subgroup-matrix code with its builtins rewritten as plain WGSL: runs, slowly, on any
// adapter with shader-f16 and subgroups, so lavapipe checks the generated code's indexing and the split-f16
// arithmetic).
enum class SgmatMode { off, automatic, emulate };
SgmatMode sgmat_mode();
// SURFGRAD_TILE_SGMAT_DIAG, for bisecting wrong products on hardware (read when a kernel is
// generated): "hi" multiplies the hi parts alone (f16's accuracy), "noscale" leaves the operands
// unscaled; "" the real code.
std::string sgmat_diagnostic();
// The subgroup size the kernel's products run on subgroup matrices with on `ctx`, or 0 (the
// scalar code): the feature (or emulate), one fixed subgroup size dividing the workgroup, and
// room for the scratch beside `other_bytes` of workgroup memory.
int sgmat_subgroup_size(const gpu::Context& ctx, const Graph& g, bool backward, uint64_t other_bytes);
// The scratch the subgroup-matrix products of the kernel take, in bytes (0: no product qualifies).
uint64_t sgmat_workgroup_bytes(const Graph& g, int subgroup_size, bool backward);
// f32_elements rounded up to 16 bytes in a kernel with subgroup-matrix products (w.sgmat_sg), else
// as is: every workgroup array there is a multiple of 16 bytes, so the fragments' scratch starts
// 16-byte aligned whatever order the driver lays the arrays out in (matmul_sgmat.cpp).
int64_t sgmat_aligned(const Wgsl& w, int64_t f32_elements);
// Whether emit_matmul puts an out-shaped product of `inner` terms on subgroup matrices.
bool sgmat_product(const Wgsl& w, TileShape out, int inner);
// Module scope: the fragment aliases and the scratch arrays (with w.sgmat_sg).
void emit_sgmat_slots(Wgsl& w, const Graph& g, bool backward);
// The entry point with the subgroup builtins (sgi, lane) the products use.
std::string sgmat_entry_point(const Graph& g);
// The product (see emit_matmul): operands staged as f16 hi / lo parts, sums handed to `put`.
void emit_matmul_sgmat(Wgsl& w, const Graph& g, TileShape shape, int inner, const std::string& lhs_element,
                       const std::string& rhs_element, const MatmulWriter& put);

}  // namespace surfgrad::tiles::detail
