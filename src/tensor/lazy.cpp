// Lazy mode: recording elementwise ops and realising a pending tree as one fused kernel (see
// lazy.hpp for the rules).
#include "tensor/lazy.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "internal.hpp"
#include "tensor/matmul_epilogue.hpp"

namespace surfgrad {

namespace {

// -1: not decided yet (read the environment on first use).
std::atomic<int> g_lazy{-1};

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

bool env_zero(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "0") == 0;
}

// EagerScopes alive on this thread: while any is, this thread's ops dispatch eagerly.
thread_local int t_eager_scopes = 0;

// Whether input `t` of a node can be computed inside the node's kernel: a pending tensor that
// is its node's whole, plain result (not a permuted, sliced or reshaped view of it).
// A pending matmul is never inlined (it is a leaf; see pending_matmul).
bool inlinable(const Tensor& t) {
  const auto& st = TensorAccess::storage(t);
  return st->pending && !st->pending->matmul && t.offset() == 0 && t.shape() == st->pending->shape && t.is_contiguous();
}

// Whether `t` is a pending matmul's whole result: a leaf of the trees that read it, kept pending
// so that the tree realised over it can run as the product's epilogue.
bool pending_matmul(const Tensor& t) {
  const auto& st = TensorAccess::storage(t);
  return st->pending && st->pending->matmul && t.offset() == 0 && t.shape() == st->pending->shape && t.is_contiguous();
}

// Readers lists of long-lived tensors (parameters read every step) drop their dead entries
// when they grow, so they stay as long as the live readers.
void add_reader(Storage& s, const std::shared_ptr<Storage>& reader) {
  if (s.readers.size() >= 16 && (s.readers.size() & (s.readers.size() - 1)) == 0)
    std::erase_if(s.readers, [](const std::weak_ptr<Storage>& w) {
      auto r = w.lock();
      return !r || !r->pending;
    });
  s.readers.push_back(reader);
}

// ---------------------------------------------------------------- the fused kernel's plan

// One fused kernel: a WGSL function per inlined op (op0, op1, ...), `expr` the call tree at the
// root, `leaves` the buffers read with their strides in the root's shape.
struct Plan {
  struct Leaf {
    const Tensor* tensor;
    Shape strides;
  };
  std::vector<Leaf> leaves;
  std::string helpers, functions, expr;
  std::vector<std::string> ops;  // op names in emission order (the kernel's name)
  std::set<std::string> helper_set;
  std::vector<uint32_t> params;
  int functions_count = 0;
};

// `axes[j]`: the root axis coordinate j of this node follows, or -1 where it is always 0.
std::string emit(Plan& plan, const LazyNode& n, const std::vector<int>& axes, size_t root_rank) {
  std::string args;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Tensor& in = n.inputs[k];
    size_t lead = n.shape.size() - in.shape().size();
    std::vector<int> in_axes(in.shape().size(), -1);
    for (size_t j = 0; j < in.shape().size(); ++j)
      if (in.shape()[j] != 1) in_axes[j] = axes[lead + j];
    std::string arg;
    if (inlinable(in)) {
      arg = emit(plan, *TensorAccess::storage(in)->pending, in_axes, root_rank);
    } else {
      Shape strides(root_rank, 0);
      for (size_t j = 0; j < in_axes.size(); ++j)
        if (in_axes[j] >= 0) strides[size_t(in_axes[j])] += in.strides()[j];
      size_t i = 0;
      for (; i < plan.leaves.size(); ++i) {
        const Plan::Leaf& l = plan.leaves[i];
        if (l.tensor->shares_storage(in) && l.tensor->offset() == in.offset() && l.strides == strides &&
            l.tensor->dtype() == in.dtype())
          break;
      }
      if (i == plan.leaves.size()) plan.leaves.push_back({&in, strides});
      arg = "v" + std::to_string(i);
    }
    args += (k ? ", " : "") + arg;
  }
  std::string f = "op" + std::to_string(plan.functions_count++);  // not fN: f16, f32 are types
  std::string params;
  for (size_t k = 0; k < n.inputs.size(); ++k)
    params += (k ? ", " : "") + n.names[k] + ": " + wgsl_type(n.inputs[k].dtype());
  std::string t = wgsl_type(n.dtype);
  std::string expr = n.expr;
  if (n.has_param) {
    expr = kernels::fill_template(expr, {{"P", std::to_string(plan.params.size()) + "u"}});
    plan.params.push_back(n.param);
  }
  plan.functions += "fn " + f + "(" + params + ") -> " + t + " { return " + t + "(" + expr + "); }\n";
  if (!n.helpers.empty() && plan.helper_set.insert(n.helpers).second) plan.helpers += n.helpers;
  plan.ops.push_back(n.name);
  return f + "(" + args + ")";
}

Plan plan_for(const LazyNode& root) {
  Plan plan;
  std::vector<int> axes(root.shape.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = int(i);
  plan.expr = emit(plan, root, axes, root.shape.size());
  return plan;
}

// How many distinct buffers the fused kernel of `n` would read.
size_t leaf_count(const LazyNode& n) { return plan_for(n).leaves.size(); }

// The kernel's name: "fused:" and its ops, for the profiler and error messages.
std::string kernel_name(const std::vector<std::string>& ops) {
  if (ops.size() == 1) return ops[0];
  std::string s = "fused:";
  for (size_t i = 0; i < ops.size() && i < 8; ++i) s += (i ? "+" : "") + ops[i];
  if (ops.size() > 8) s += "+...(" + std::to_string(ops.size()) + " ops)";
  return s;
}

// SURFGRAD_GRAPH_DUMP=1: every fused kernel to stderr as it is launched (its ops, inputs, WGSL).
bool graph_dump() {
  static const bool on = env_on("SURFGRAD_GRAPH_DUMP");
  return on;
}

void dump(const Plan& plan, const LazyNode& root) {
  std::string s = "[surfgrad graph] " + kernel_name(plan.ops) + " -> " + dtype_name(root.dtype) + shape_str(root.shape);
  for (size_t i = 0; i < plan.leaves.size(); ++i) {
    const Plan::Leaf& l = plan.leaves[i];
    s += "\n  v" + std::to_string(i) + ": " + l.tensor->describe() + " strides " + shape_str(l.strides) + " offset " +
         std::to_string(l.tensor->offset());
  }
  s += "\n  " + plan.expr + "\n";
  for (size_t start = 0; start < plan.functions.size();) {
    size_t end = plan.functions.find('\n', start);
    s += "    " + plan.functions.substr(start, end - start + 1);
    start = end + 1;
  }
  std::fputs(s.c_str(), stderr);
}

constexpr size_t kMaxLeaves = 7;  // 8 storage bindings (WebGPU's default limit), one the output

}  // namespace

bool lazy_enabled() {
  if (t_eager_scopes > 0) return false;
  int v = g_lazy.load(std::memory_order_relaxed);
  if (v < 0) {
    // Lazy unless asked otherwise: SURFGRAD_EAGER=1 (or SURFGRAD_LAZY=0) is the way back.
    v = env_on("SURFGRAD_EAGER") || env_zero("SURFGRAD_LAZY") ? 0 : 1;
    g_lazy.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

EagerScope::EagerScope() { ++t_eager_scopes; }
EagerScope::~EagerScope() { --t_eager_scopes; }

void set_lazy(bool on) { g_lazy.store(on ? 1 : 0, std::memory_order_relaxed); }
bool lazy_mode() { return lazy_enabled(); }

Tensor lazy_record(const gpu::ContextPtr& ctx, const char* name, const Shape& shape, DType dtype,
                   std::vector<Tensor> inputs, std::vector<std::string> names, std::string expr, std::string helpers,
                   const uint32_t* param) {
  // Throws the loss now, as an eager op would (flush checks it without waiting: this may run
  // inside JavaScript's synchronous tensor calls, which cannot wait).
  if (ctx->device_lost()) ctx->flush();
  int size = 1;
  for (const Tensor& in : inputs) {
    const auto& st = TensorAccess::storage(in);
    if (!st->pending || pending_matmul(in)) continue;
    // A view of a pending result, or a tree past the budget, is computed now and read as a buffer.
    if (!inlinable(in) || size + st->pending->size > kMaxFusedOps)
      realize_storage(*st);
    else
      size += st->pending->size;
  }
  auto node = std::make_shared<LazyNode>();
  node->name = name;
  node->expr = std::move(expr);
  node->helpers = std::move(helpers);
  node->inputs = std::move(inputs);
  node->names = std::move(names);
  node->shape = shape;
  node->dtype = dtype;
  node->size = size;
  node->has_param = param != nullptr;
  node->param = param ? *param : 0;
  auto storage = std::make_shared<Storage>();
  storage->ctx = ctx;
  storage->elements = shape_numel(shape);
  storage->pending = node;
  for (const Tensor& in : node->inputs) add_reader(*TensorAccess::storage(in), storage);
  return TensorAccess::make(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

Tensor lazy_record_matmul(const Tensor& a, const Tensor& b) {
  auto ctx = a.context();
  if (ctx->device_lost()) ctx->flush();
  // The operands' own trees run now (the product reads buffers), the product when it is read.
  a.realize();
  b.realize();
  // Split K (GPUs, few output tiles): the slices' products now, their sum recorded as a tree
  // node with sum_slices.wgsl's order, ((0 + p0) + p1) + ..., so the readers inline it.
  if (Tensor parts = matmul_split_k_partials(a, b); parts.defined()) {
    const int64_t S = parts.shape(0), M = parts.shape(1), N = parts.shape(2);
    std::vector<Tensor> inputs;
    std::vector<std::string> names;
    std::string expr = "0.0";
    for (int64_t s = 0; s < S; ++s) {
      inputs.push_back(parts.slice(0, s, s + 1).reshape({M, N}));
      names.push_back("p" + std::to_string(s));
      expr = "(" + expr + " + p" + std::to_string(s) + ")";
    }
    return lazy_record(ctx, "sum_slices", {M, N}, DType::f32, std::move(inputs), std::move(names), expr);
  }
  auto node = std::make_shared<LazyNode>();
  node->name = "matmul";
  node->inputs = {a, b};
  node->names = {"a", "b"};
  node->shape = {a.shape(0), b.shape(1)};
  node->dtype = a.dtype();
  node->matmul = true;
  auto storage = std::make_shared<Storage>();
  storage->ctx = ctx;
  storage->elements = shape_numel(node->shape);
  storage->pending = node;
  for (const Tensor& in : node->inputs) add_reader(*TensorAccess::storage(in), storage);
  Shape shape = node->shape;
  return TensorAccess::make(std::move(storage), shape, contiguous_strides(shape), 0, node->dtype);
}

Tensor lazy_full(const gpu::ContextPtr& ctx, const Shape& shape, double value, DType dtype) {
  check_rank(shape, "full");
  check_f16_supported(ctx, dtype, "full");
  // The word fill.wgsl gets and what it stores: start + 0·step in the dtype (f16: from f32).
  uint32_t word;
  std::string expr;
  if (dtype == DType::i32) {
    word = uint32_t(int32_t(value));
    expr = "param_i32({{P}})";
  } else if (dtype == DType::u32) {
    word = uint32_t(value);
    expr = "param_u32({{P}})";
  } else {
    word = f32_bits(float(value));
    expr = "param_f32({{P}}) + 0.0";
  }
  return lazy_record(ctx, "full", shape, dtype, {}, {}, expr, "", &word);
}

namespace {

// Pending products the kernel of `plan` reads as buffers run first, before that kernel's launch
// binds them (the tree is not their epilogue).
void realize_matmul_leaves(const Plan& plan) {
  for (const Plan::Leaf& l : plan.leaves)
    if (TensorAccess::storage(*l.tensor)->pending) realize_storage(*TensorAccess::storage(*l.tensor));
}

// The plan of `node` reading at most `max_leaves` buffers: while it reads more, the input
// subtree reading the most is realised first.
Plan bounded_plan(const LazyNode& node, size_t max_leaves) {
  Plan plan = plan_for(node);
  while (plan.leaves.size() > max_leaves) {
    const Tensor* biggest = nullptr;  // a node has at most 3 inputs: one is a subtree
    size_t most = 0;
    for (const Tensor& in : node.inputs)
      if (inlinable(in) && leaf_count(*TensorAccess::storage(in)->pending) >= most) {
        most = leaf_count(*TensorAccess::storage(in)->pending);
        biggest = &in;
      }
    realize_storage(*TensorAccess::storage(*biggest));
    plan = plan_for(node);
  }
  return plan;
}

}  // namespace

bool lazy_inlinable(const Tensor& t) { return t.defined() && inlinable(t); }

FusedRead lazy_fused_read(const Tensor& t, size_t max_leaves) {
  std::shared_ptr<LazyNode> node = TensorAccess::storage(t)->pending;
  Plan plan = bounded_plan(*node, std::min(max_leaves, kMaxLeaves));
  realize_matmul_leaves(plan);
  FusedRead r;
  for (const Plan::Leaf& l : plan.leaves) {
    r.leaves.push_back(*l.tensor);
    r.strides.push_back(l.strides);
  }
  r.functions = plan.helpers + plan.functions;
  r.expr = plan.expr;
  r.params = plan.params;
  r.name = kernel_name(plan.ops);
  if (graph_dump()) dump(plan, *node);
  return r;
}

PendingSlices lazy_pending_slices(const Tensor& t) {
  if (!t.defined() || !inlinable(t)) return {};
  const LazyNode& n = *TensorAccess::storage(t)->pending;
  if (n.name != "sum_slices" || n.inputs.empty() || n.dtype != DType::f32) return {};
  const Tensor& p0 = n.inputs[0];
  const int64_t count = shape_numel(n.shape);
  for (size_t s = 0; s < n.inputs.size(); ++s) {
    const Tensor& p = n.inputs[s];
    if (TensorAccess::storage(p)->pending || p.dtype() != DType::f32 || !p.is_contiguous() || p.shape() != n.shape ||
        !p.shares_storage(p0) || p.offset() != p0.offset() + int64_t(s) * count)
      return {};
  }
  return {p0, int64_t(n.inputs.size())};
}

bool lazy_shared(const Tensor& t) { return TensorAccess::storage(t).use_count() > 1; }

void lazy_realized_by(const Tensor& t, const Tensor& values) {
  Storage& s = *TensorAccess::storage(t);
  s.buffer = TensorAccess::storage(values)->buffer;
  s.pending.reset();
}

namespace {

// The tree `plan` of `node` as the epilogue of the pending matmul it reads as a leaf (the first
// whose elements are the root's, element for element), run into `out`: false where there is no
// such leaf or the product cannot take it (matmul_epilogue.hpp), and nothing ran.
bool run_as_epilogue(const Plan& plan, const LazyNode& node, const Tensor& out) {
  if (node.shape.size() != 2 || node.dtype != DType::f32) return false;
  const Shape dense = contiguous_strides(node.shape);
  for (size_t i = 0; i < plan.leaves.size(); ++i) {
    const Plan::Leaf& m = plan.leaves[i];
    if (!pending_matmul(*m.tensor)) continue;
    bool elementwise = true;  // strides of axes of extent 1 do not matter (the plan zeroes them)
    for (size_t d = 0; d < 2; ++d) elementwise = elementwise && (node.shape[d] == 1 || m.strides[d] == dense[d]);
    if (!elementwise) continue;
    MatmulEpilogue e;
    e.acc_name = "v" + std::to_string(i);
    for (size_t k = 0; k < plan.leaves.size(); ++k) {
      if (k == i) continue;
      e.leaves.push_back(*plan.leaves[k].tensor);
      e.strides.push_back({plan.leaves[k].strides[0], plan.leaves[k].strides[1]});
      e.names.push_back("v" + std::to_string(k));
    }
    e.functions = plan.helpers + plan.functions;
    e.expr = plan.expr;
    e.params = plan.params;
    e.name = kernel_name(plan.ops);
    // The product's node, kept while other pending leaves (another product) run first.
    const std::shared_ptr<LazyNode> mm = TensorAccess::storage(*m.tensor)->pending;
    for (const Tensor& l : e.leaves)
      if (TensorAccess::storage(l)->pending) realize_storage(*TensorAccess::storage(l));
    return run_matmul_epilogue(out, mm->inputs[0], mm->inputs[1], e);
  }
  return false;
}

// Where GPU errors are deferred (JavaScript's synchronous calls), one of this kernel names
// the ops it fuses, which were recorded before the call that realises them.
struct DeferLabel {
  gpu::Context& ctx;
  std::string previous;
  DeferLabel(gpu::Context& c, const std::string& kernel, const LazyNode& n) : ctx(c), previous(c.defer_errors("")) {
    if (!previous.empty())
      ctx.defer_errors("the recorded op" + std::string(kernel.starts_with("fused:") ? "s " : " ") + kernel + " → " +
                       dtype_name(n.dtype) + shape_str(n.shape) + ", run by " + previous);
  }
  ~DeferLabel() { ctx.defer_errors(previous); }
};

}  // namespace

void realize_storage(Storage& root) {
  if (!root.pending) return;
  std::shared_ptr<LazyNode> node = root.pending;  // alive until the launch is recorded
  if (node->matmul) {
    DeferLabel label(*root.ctx, "matmul", *node);
    Tensor out = Tensor::empty(root.ctx, node->shape, node->dtype);
    run_matmul_into(out, node->inputs[0], node->inputs[1]);
    root.buffer = TensorAccess::storage(out)->buffer;
    root.pending.reset();
    return;
  }
  Plan plan = bounded_plan(*node, kMaxLeaves);
  Tensor out = Tensor::empty(root.ctx, node->shape, node->dtype);
  std::vector<MapOperand> ops = {map_operand(out, node->shape)};
  std::vector<std::string> names;
  for (size_t i = 0; i < plan.leaves.size(); ++i) {
    const Plan::Leaf& l = plan.leaves[i];
    ops.push_back({l.tensor, l.strides, l.tensor->dtype()});
    names.push_back("v" + std::to_string(i));
  }
  if (graph_dump()) dump(plan, *node);
  DeferLabel label(*root.ctx, kernel_name(plan.ops), *node);
  if (run_as_epilogue(plan, *node, out)) {
    root.buffer = TensorAccess::storage(out)->buffer;
    root.pending.reset();
    return;
  }
  realize_matmul_leaves(plan);
  launch_values(root.ctx, kernel_name(plan.ops), node->shape, std::move(ops), names, plan.expr,
                plan.helpers + plan.functions, plan.params);
  root.buffer = TensorAccess::storage(out)->buffer;
  root.pending.reset();
}

void realize_readers(Storage& storage) {
  std::vector<std::weak_ptr<Storage>> readers;
  readers.swap(storage.readers);
  for (const auto& w : readers)
    if (auto r = w.lock(); r && r->pending) realize_storage(*r);
}

const Tensor& Tensor::realize() const {
  if (storage_ && storage_->pending) realize_storage(*storage_);
  return *this;
}

void realize(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) t.realize();
}

}  // namespace surfgrad
