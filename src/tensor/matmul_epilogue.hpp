// Matmul epilogues (lazy mode, issue 36): an elementwise tree over a matrix product evaluated in
// the product's store step, so relu(x @ W + b) is one dispatch and x @ W never gets a buffer.
#pragma once
#include <string>
#include <vector>

#include "surfgrad/matmul_tuning.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {

// out[r, col] = expr, where `expr` (WGSL over `acc`, the product's element converted to its
// dtype, and the leaves v0, v1, ...) is the tree realising would store. Leaf k is read at
// offset + r·row_stride + col·col_stride of its buffer; `functions` are the tree's WGSL
// functions, `params` its constant words (param_f32/param_i32/param_u32(k) read them).
struct MatmulEpilogue {
  std::vector<Tensor> leaves;
  std::vector<std::pair<int64_t, int64_t>> strides;  // per leaf: (row, column)
  std::vector<std::string> names;                    // per leaf: its name in expr
  std::string acc_name;                              // the product's name in expr
  std::string functions, expr;
  std::vector<uint32_t> params;
  std::string name;  // the tree's kernel name ("fused:add+relu"), for the profiler
};

// Runs out = epilogue(a @ b) with the kernel eager's matmul would run (2-D f32 operands, out
// contiguous [M, N] f32; the tiled or the direct kernel, or split-K with the epilogue in the
// pass that sums the slices). False (nothing run) where the product would run otherwise or the
// epilogue has more leaves than the bindings allow: the caller realises the product first.
// Tests: `slices` > 0 forces split-K with that many slices (CPU adapters never split), `tiles`
// the kernel's tiles (CPU adapters run the direct kernel).
bool run_matmul_epilogue(const Tensor& out, const Tensor& a, const Tensor& b, const MatmulEpilogue& e, int slices = 0,
                         const TiledParams* tiles = nullptr);
// out = a @ b by eager's kernel (out contiguous, the product's shape and dtype).
void run_matmul_into(const Tensor& out, const Tensor& a, const Tensor& b);

// Where eager's matmul of 2-D f32 a @ b would split K into 2..kMaxLazySlices slices (GPUs: few
// output tiles, a long K), the slices' partial products run now into [S, M, N]; else undefined.
// Lazy mode then records their sum (sum_slices.wgsl's order) as an elementwise node, which
// the trees reading the product inline (an epilogue, a reduction's fused input) like any other.
constexpr int kMaxLazySlices = 4;
Tensor matmul_split_k_partials(const Tensor& a, const Tensor& b);

// Tests: split K into this many slices wherever it divides K (2-D f32 products, eager and lazy;
// CPU adapters never split otherwise). 0: as the adapter's heuristic says.
int& matmul_forced_slices();

}  // namespace surfgrad
