// Cold start (issue 35; docs/cold_start.md): the tensor ops' kernels queued on the prewarm's
// worker threads before the ops run, so that a first run on a machine (no kernel record yet)
// does not compile them one by one on its critical path.
//
// They are named by calling the ops themselves under kernels::PrewarmOnly, on small tensors of
// the layout the real call will have: an op's kernel depends on its operands' dtypes and layout
// class (below), not on their sizes, so the op's own code generates the very key and source the
// real call will ask for, and queues it. No list of kernel sources to keep in step: a changed op
// queues its changed kernel. Only the matmul depends on sizes (the tile heuristic, split-K):
// prewarm_matmul takes them. tests/first_map_prewarm_test.cpp checks that a first map builds
// (almost) nothing at first use, and gives the same bits.
#pragma once
#include <cstdint>
#include <functional>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

// How an elementwise op's operands lie, which picks its kernel (tensor/map_launch.cpp):
//   Vec4:    one axis once merged, dense from a multiple of 4 elements, n a multiple of 4;
//   Flat:    one axis otherwise (n or an offset not a multiple of 4);
//   Strided: several axes (a row broadcast over rows, a transposed view).
enum class OpLayout { Vec4, Flat, Strided };

// The layout of a dense [rows, cols] tensor's elementwise ops (rows·cols a multiple of 4: Vec4).
OpLayout dense_layout(int64_t rows, int64_t cols);

// A small tensor whose elementwise ops take `layout`'s kernel: [4] (Vec4), [3] (Flat), or [2, 4]
// (Strided when combined with a broadcast row such as sample.slice(0, 0, 1), or transposed).
Tensor layout_sample(const gpu::ContextPtr& ctx, OpLayout layout, DType dtype = DType::f32);

// Whether the lists below queue anything: not under Dawn or with SURFGRAD_PREWARM=0. In
// WebAssembly they start the browser's asynchronous builds (no threads there).
bool tensor_prewarm_on(const gpu::Context& ctx);

// Runs `ops` (tensor ops on small tensors) under kernels::PrewarmOnly: each op queues the kernel
// it would build, nothing is dispatched, and the results hold no values. Where prewarming does
// nothing (SURFGRAD_PREWARM=0, Dawn) `ops` is not called.
void prewarm_ops(const gpu::ContextPtr& ctx, const std::function<void()>& ops);

// The kernel(s) Tensor::matmul runs for dense [M, K]·[K, N] of `dtype` (an operand passed as a
// .t() view of a dense tensor: transposed): its tiles, and split-K's slice sum where it splits.
void prewarm_matmul(const gpu::ContextPtr& ctx, DType dtype, int64_t M, int64_t N, int64_t K, bool a_transposed = false,
                    bool b_transposed = false);

}  // namespace surfgrad
