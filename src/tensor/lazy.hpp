// Lazy mode (issue 36): elementwise ops record a node instead of dispatching, and a chain or tree
// of them runs as ONE generated kernel when its value is first needed (a read, a kernel binding
// it, explicit realize(), an in-place write to something it reads, or the size budget).
//
// A pending tensor owns a Storage without a buffer whose `pending` is the node below. Realising
// it (lazy.cpp) inlines every pending input that is a plain, whole view of its node (no other
// views are composed yet: a permuted or sliced pending tensor is realised when an op records on
// it) and reads the rest as buffers, through the same launch_values path eager ops take, so a
// fused kernel computes each op exactly as its eager kernel does: same expression, same
// conversion to the op's dtype. Intermediates that only the fused tree reads get no buffer.
#pragma once
#include <string>
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct LazyNode {
  std::string name;                // the op ("add", "gelu", "const")
  std::string expr;                // WGSL over `names` ({{T}} filled), converted to `dtype`
  std::string helpers;             // WGSL functions expr calls
  std::vector<Tensor> inputs;      // broadcast to `shape` (numpy rules)
  std::vector<std::string> names;  // one per input
  Shape shape;
  DType dtype = DType::f32;
  int size = 1;  // ops in the tree a realisation would inline (the size budget)
  // A scalar the op reads (a constant's value, pow's exponent) as a parameter word, so kernels
  // are cached by the tree's shape, not by its constants: `{{P}}` in expr names its index.
  bool has_param = false;
  uint32_t param = 0;
  // A matrix product inputs[0] @ inputs[1] (2-D f32, recorded by matmul in lazy mode): never
  // inlined into a tree, but a tree whose leaf it is may run it with the tree as the product's
  // store step (a matmul epilogue: relu(x @ W + b) as one dispatch, lazy.cpp).
  bool matmul = false;
};

// Largest tree one fused kernel inlines: past it, the inputs of the next op are realised.
constexpr int kMaxFusedOps = 64;

// Whether ops record (lazy) or dispatch (eager) on this thread: eager inside an EagerScope, else
// set_lazy(), else lazy unless SURFGRAD_EAGER=1 or SURFGRAD_LAZY=0.
bool lazy_enabled();

// Records out = dtype(expr(inputs)) over `shape`; checks are the caller's (as for an eager op).
Tensor lazy_record(const gpu::ContextPtr& ctx, const char* name, const Shape& shape, DType dtype,
                   std::vector<Tensor> inputs, std::vector<std::string> names, std::string expr,
                   std::string helpers = "", const uint32_t* param = nullptr);
// Records a @ b (2-D f32 operands, K > 0), realised alone as eager's matmul (same kernel, same
// bits) or as the product under an elementwise tree that reads it (the tree as its epilogue).
Tensor lazy_record_matmul(const Tensor& a, const Tensor& b);
// A tensor of `shape` holding `value` as Tensor::full would (same bits).
Tensor lazy_full(const gpu::ContextPtr& ctx, const Shape& shape, double value, DType dtype);

// A pending tree read by another kernel that evaluates it per element (a reduction: reduce.cpp),
// instead of realising it into a buffer first. `expr` calls the WGSL functions in `functions`
// on the leaves v0, v1, ... (buffers read at `strides`, given in the pending tensor's shape) and
// is the value realising would store, converted to the tree's dtype: the same bits per element.
// Its constants are words after the reader's own parameters: the reader defines
// param_f32/param_i32/param_u32(k) over them.
struct FusedRead {
  std::vector<Tensor> leaves;
  std::vector<Shape> strides;
  std::string functions, expr;
  std::vector<uint32_t> params;
  std::string name;  // "fused:" and its ops, for the profiler
};
// Whether `t` is a pending tree a reader may inline: its node's whole, plain result.
bool lazy_inlinable(const Tensor& t);
// The tree of an inlinable `t`, with at most `max_leaves` buffers (subtrees realised to fit).
FusedRead lazy_fused_read(const Tensor& t, size_t max_leaves);
// A pending split-K sum (lazy_record_matmul's sum_slices node, `t` its whole result) as its
// partial products: `first` is slice 0 of the contiguous [S, n] partials (slice s at
// first.offset() + s·n), so a kernel binding them once sums the S slices in place in
// sum_slices.wgsl's order, ((0 + p0) + p1) + ...: the bits realising `t` would store, without
// that dispatch (Adam's group kernel reads weight gradients so). slices == 0: not such a node.
struct PendingSlices {
  Tensor first;
  int64_t slices = 0;
};
PendingSlices lazy_pending_slices(const Tensor& t);
// Whether handles other than `t` share its pending storage (a reader evaluating the tree may
// then store it too: it is likely read again).
bool lazy_shared(const Tensor& t);
// Completes the pending `t` with `values` (contiguous, its shape and dtype), which a reader filled
// with the tree's values while evaluating it: `t`'s storage takes that buffer.
void lazy_realized_by(const Tensor& t, const Tensor& values);

}  // namespace surfgrad
