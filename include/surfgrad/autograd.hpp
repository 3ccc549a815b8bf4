// Reverse-mode automatic differentiation over GPU tensors, in the spirit of micrograd.
//
//   Var w = Var::param(Tensor::normal(ctx, {3, 2}, 1));   // a leaf that wants a gradient
//   Var x(Tensor::uniform(ctx, {5, 3}, 2));                // a constant input
//   Var loss = x.matmul(w).tanh().pow(2).mean();
//   loss.backward();                                       // w.grad() now holds d loss / d w
//
// A Var wraps a Tensor and remembers the op that made it. backward() visits the graph in
// reverse topological order, calling each op's backward rule; gradients of a Var used twice add
// up. Gradients are GPU tensors computed by the same batched kernels as the forward pass. The
// graph is freed after backward unless retain_graph is set. Inside a NoGradGuard nothing is
// recorded. Composite ops (softmax, logsumexp, gelu's pieces, ...) are built from primitives,
// so the set of backward rules stays small (src/autograd/ops.cpp).
//
// Ties: the gradient of max/min over axes and of maximum/minimum is split equally between tied
// elements.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "surfgrad/tensor.hpp"

namespace surfgrad {

struct Node;
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

class Var {
 public:
  Var() = default;
  explicit Var(Tensor value, bool requires_grad = false);
  static Var param(Tensor value) { return Var(std::move(value), true); }

  const Tensor& value() const;
  Tensor grad() const;  // an undefined Tensor until a backward pass reaches this leaf
  bool requires_grad() const;
  bool is_leaf() const;
  bool defined() const { return node_ != nullptr; }
  const Shape& shape() const { return value().shape(); }
  int64_t shape(int axis) const { return value().shape(axis); }
  DType dtype() const { return value().dtype(); }
  int rank() const { return value().rank(); }
  int64_t numel() const { return value().numel(); }
  const gpu::ContextPtr& context() const { return value().context(); }

  // Seeds with 1 (the Var must hold one element) or with `grad_output` (the Var's shape).
  void backward(bool retain_graph = false) const;
  void backward(const Tensor& grad_output, bool retain_graph = false) const;
  Var detach() const;  // same value, cut from the graph
  void zero_grad() const;
  // Adds `grad` (this leaf's shape and dtype) into its gradient as backward() would: for
  // gradients computed off the tape (a fused kernel's loss and gradient in one launch,
  // tiles::Kernel::launch_forward_backward), so an optimizer steps on them.
  void accumulate_grad(const Tensor& grad) const;
  // Replaces the value of a leaf (e.g. loading parameters); the shape must stay the same.
  void set_value(const Tensor& value) const;

  // ---- the ops of Tensor, differentiable ----
  Var reshape(const Shape& shape) const;
  Var permute(const std::vector<int>& axes) const;
  Var transpose(int a, int b) const;
  Var t() const;
  Var slice(int axis, int64_t start, int64_t stop, int64_t step = 1) const;
  Var expand(const Shape& shape) const;
  Var unsqueeze(int axis) const;
  Var squeeze(int axis) const;
  Var contiguous() const;
  Var cast(DType dtype) const;

#define SURFGRAD_UNARY(name) Var name() const;
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY
  Var pow(double exponent) const;

  Var sum(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Var mean(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Var max(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Var min(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Var logsumexp(const std::vector<int>& axes, bool keepdim = false) const;
  Var softmax(int axis) const;
  Var log_softmax(int axis) const;
  Var matmul(const Var& other) const;

 private:
  friend struct VarAccess;  // src/autograd/var_access.hpp: for op implementations
  // A result Var whose backward rule maps the output gradient to one gradient per input (an
  // undefined Tensor for none).
  static Var make(Tensor value, const char* op, std::vector<Var> inputs, BackwardFn backward);
  std::shared_ptr<Node> node_;
};

// Records nothing while alive (e.g. evaluation, optimizer steps).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};
bool grad_enabled();

// The differentiable binary ops of binary_ops.inc: add, sub, mul, div, pow, maximum, minimum.
#define SURFGRAD_BINARY(name) Var name(const Var& a, const Var& b);
#define SURFGRAD_COMPARISON(name)
#include "surfgrad/binary_ops.inc"
#undef SURFGRAD_COMPARISON
#undef SURFGRAD_BINARY
Var where(const Tensor& mask, const Var& a, const Var& b);
Var matmul(const Var& a, const Var& b);
Var gather(const Var& x, int axis, const Tensor& index);
Var index_select(const Var& x, int axis, const Tensor& index);
Var scatter_add(const Var& x, int axis, const Tensor& index, const Var& src);
Var index_add(const Var& x, int axis, const Tensor& index, const Var& src);
Var concat(const std::vector<Var>& vars, int axis);

Var operator+(const Var& a, const Var& b);
Var operator-(const Var& a, const Var& b);
Var operator*(const Var& a, const Var& b);
Var operator/(const Var& a, const Var& b);
Var operator-(const Var& a);
Var operator+(const Var& a, double b);
Var operator-(const Var& a, double b);
Var operator*(const Var& a, double b);
Var operator/(const Var& a, double b);
Var operator+(double a, const Var& b);
Var operator-(double a, const Var& b);
Var operator*(double a, const Var& b);
Var operator/(double a, const Var& b);

// Reduces a broadcast gradient to `shape` (sums the broadcast axes).
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace surfgrad
