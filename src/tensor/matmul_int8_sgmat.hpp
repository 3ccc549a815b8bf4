// int8 matmul on Dawn's i8 subgroup matrices (16×16×32, i32 accumulation; issue 34), and the
// symmetric int8 quantization it shares with the dot4I8Packed rung.
#pragma once
#include <string>
#include <vector>

#include "matmul_problem.hpp"

namespace surfgrad {

// A quantized by rows, B by columns (scale = max|x| / 127), packed four int8 a u32 along K:
// qa is [mp, k4] and qb is Bᵀ, [np, k4]; rows past M / N and values past K are zero.
struct Int8Operands {
  int64_t mp = 0, np = 0, k4 = 0;
  Tensor qa, qb, a_scale, b_scale;  // u32, u32, f32 [M], f32 [N]
};
// Rows padded to multiples of `mn_align`, K to a multiple of `k_align` (a multiple of 4).
Int8Operands quantize_int8(const MatmulProblem& p, int64_t k_align, int64_t mn_align);

// Why the i8 subgroup-matrix rung cannot run `p` here ("" when it can).
std::string int8_subgroup_matrix_unsupported(const MatmulProblem& p);
// The kernel's WGSL body (after common.wgsl) for subgroup size `sg`: public for the parse test.
// `words`: the loads' offsets and strides in i32 words of the packed arrays, the unit Dawn takes
// (H200, 2026-11-27: the words form matches float64, 2.7e-4; in i8 values the products were
// wrong, error 0.5-0.7). `words = false` is kept for the parse test only.
std::string int8_subgroup_matrix_wgsl(int sg, bool words = true);
// Quantizes (untimed) and returns the dispatch: 4×4 tiles of 16×16 a subgroup, loaded straight
// from the padded buffers (A row-major, Bᵀ as B col_major), scaled to f32 in the epilogue.
std::function<void()> int8_subgroup_matrix_prepare(const MatmulProblem& p, bool words = true);

}  // namespace surfgrad
