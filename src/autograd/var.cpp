// The tape: nodes, gradient accumulation, topological backward pass, graph freeing.
#include <unordered_map>
#include <unordered_set>

#include "surfgrad/autograd.hpp"
#include "tensor/lazy.hpp"

namespace surfgrad {

struct Node {
  Tensor value;
  Tensor grad;  // accumulated gradient of a leaf
  bool requires_grad = false;
  const char* op = "leaf";
  std::vector<std::shared_ptr<Node>> inputs;
  BackwardFn backward;
  bool freed = false;  // its graph was released by an earlier backward
};

namespace {
thread_local bool g_grad_enabled = true;
}

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

Var::Var(Tensor value, bool requires_grad) : node_(std::make_shared<Node>()) {
  if (!value.defined()) throw Error(ErrorKind::Value, "Var: the tensor is empty (default-constructed)");
  if (requires_grad && !is_float(value.dtype()))
    throw Error(ErrorKind::DType, "Var: only floating tensors can require a gradient, got " + value.describe());
  node_->value = std::move(value);
  node_->requires_grad = requires_grad;
}

const Tensor& Var::value() const {
  if (!node_) throw Error(ErrorKind::Value, "this Var is empty (default-constructed)");
  return node_->value;
}
Tensor Var::grad() const { return node_ ? node_->grad : Tensor(); }
bool Var::requires_grad() const { return node_ && node_->requires_grad; }
bool Var::is_leaf() const { return node_ && !node_->backward; }

Var Var::detach() const { return Var(value(), false); }

void Var::zero_grad() const {
  if (node_) node_->grad = Tensor();
}

void Var::accumulate_grad(const Tensor& g) const {
  if (!node_ || !is_leaf() || !requires_grad())
    throw Error(ErrorKind::Value, "accumulate_grad: only leaves that require a gradient (Var::param) take one");
  if (g.shape() != value().shape() || g.dtype() != value().dtype())
    throw Error(ErrorKind::Shape, "accumulate_grad: the gradient " + g.describe() + " does not match the parameter " +
                                      value().describe());
  Tensor c = g.contiguous();
  node_->grad = node_->grad.defined() ? add(node_->grad, c) : c;
}

void Var::set_value(const Tensor& v) const {
  if (!is_leaf())
    throw Error(ErrorKind::Value,
                "set_value: only leaves can be replaced, this Var comes from " + std::string(node_->op));
  if (v.shape() != value().shape() || v.dtype() != value().dtype())
    throw Error(ErrorKind::Shape, "set_value: " + v.describe() + " does not match " + value().describe());
  node_->value = v;
}

Var Var::make(Tensor value, const char* op, std::vector<Var> inputs, BackwardFn backward) {
  Var out(std::move(value), false);
  if (!g_grad_enabled) return out;
  bool any = false;
  for (const Var& v : inputs) any |= v.requires_grad();
  if (!any) return out;
  out.node_->requires_grad = true;
  out.node_->op = op;
  for (const Var& v : inputs) out.node_->inputs.push_back(v.node_);
  out.node_->backward = std::move(backward);
  return out;
}

void Var::backward(bool retain_graph) const {
  if (value().numel() != 1)
    throw Error(ErrorKind::Shape, "backward() without a gradient needs a one-element output, this one is " +
                                      value().describe() + "; call backward(grad) with a gradient of that shape");
  // Lazy mode: the seed is a recorded constant, inlined by the first backward kernel that reads it.
  backward(lazy_enabled() ? lazy_full(context(), value().shape(), 1.0, value().dtype())
                          : Tensor::ones(context(), value().shape(), value().dtype()),
           retain_graph);
}

void Var::backward(const Tensor& grad_output, bool retain_graph) const {
  if (!requires_grad())
    throw Error(
        ErrorKind::Value,
        "backward: this " + value().describe() +
            " does not require a gradient (no input was made with Var::param, or it was computed under NoGradGuard)");
  if (grad_output.shape() != value().shape())
    throw Error(ErrorKind::Shape,
                "backward: gradient " + grad_output.describe() + " does not match the output " + value().describe());
  if (grad_output.dtype() != value().dtype())
    throw Error(ErrorKind::DType, "backward: gradient " + grad_output.describe() +
                                      " has another dtype than the output " + value().describe());
  // Topological order by an iterative depth-first search over nodes that need gradients.
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack = {{node_.get(), 0}};
  seen.insert(node_.get());
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (n->freed)
      throw Error(ErrorKind::Value, std::string("backward through a graph that an earlier backward freed (at op '") +
                                        n->op + "'); pass retain_graph = true to the first backward to keep it");
    if (next < n->inputs.size()) {
      Node* in = n->inputs[next++].get();
      if (in->requires_grad && seen.insert(in).second) stack.push_back({in, 0});
    } else {
      order.push_back(n);
      stack.pop_back();
    }
  }
  NoGradGuard no_grad;  // gradients of gradients are not recorded
  std::unordered_map<Node*, Tensor> grads;
  grads[node_.get()] = grad_output;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    auto g = grads.find(n);
    if (g == grads.end()) continue;
    Tensor grad = std::move(g->second);
    grads.erase(g);
    if (!n->backward) {  // a leaf: accumulate
      Tensor c = grad.contiguous();
      n->grad = n->grad.defined() ? add(n->grad, c) : (c.shares_storage(grad_output) ? c.clone() : c);
      continue;
    }
    std::vector<Tensor> input_grads = n->backward(grad);
    for (size_t i = 0; i < n->inputs.size() && i < input_grads.size(); ++i) {
      Node* in = n->inputs[i].get();
      if (!in->requires_grad || !input_grads[i].defined()) continue;
      if (input_grads[i].shape() != in->value.shape())
        throw Error(ErrorKind::Shape, std::string("internal: backward of '") + n->op + "' gave " +
                                          input_grads[i].describe() + " for input " + in->value.describe());
      auto [slot, fresh] = grads.try_emplace(in, input_grads[i]);
      if (!fresh) slot->second = add(slot->second, input_grads[i]);
    }
  }
  if (!retain_graph)
    for (Node* n : order)
      if (n->backward) {
        n->backward = nullptr;
        n->inputs.clear();
        n->freed = true;
      }
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  int lead = grad.rank() - int(shape.size());
  std::vector<int> axes;
  for (int d = 0; d < grad.rank(); ++d)
    if (d < lead || (shape[size_t(d - lead)] == 1 && grad.shape()[size_t(d)] != 1)) axes.push_back(d);
  if (axes.empty()) return grad.reshape(shape);
  return grad.sum(axes, true).reshape(shape);
}

}  // namespace surfgrad
