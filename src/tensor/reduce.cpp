// Reductions over any set of axes: leading axes of a contiguous tensor are reduced in place over
// columns (reduce_columns.wgsl); otherwise the reduced axes are moved last and made contiguous, then
// reduce.wgsl (long rows) or reduce_small.wgsl (short rows) reduce [rows, R] blocks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "internal.hpp"
#include "tensor/lazy.hpp"

namespace surfgrad {

namespace {

enum class Reduce { Sum, Max, Min };

struct Plan {
  Tensor rows;      // contiguous [rows, R] (not made for a fused input)
  Shape out_shape;  // result shape (keepdim applied)
  int64_t R = 1;
  std::vector<int> order;  // x's axes, kept then reduced: rows is x permuted to it
};

Plan plan(const Tensor& x, std::vector<int> axes, bool keepdim, const char* op, bool copy = true) {
  int r = x.rank();
  if (axes.empty()) {
    axes.resize(r);
    std::iota(axes.begin(), axes.end(), 0);
  }
  std::vector<bool> reduced(r, false);
  for (int a : axes) {
    int n = normalize_axis(a, r, op);
    if (r == 0) continue;  // a 0-d tensor reduces to itself
    if (reduced[n]) throw Error(ErrorKind::Shape, std::string(op) + ": axis " + std::to_string(a) + " given twice");
    reduced[n] = true;
  }
  std::vector<int> order;
  Shape out_shape, kept_shape;
  int64_t R = 1;
  for (int d = 0; d < r; ++d)
    if (!reduced[d]) {
      order.push_back(d);
      kept_shape.push_back(x.shape()[d]);
    }
  for (int d = 0; d < r; ++d)
    if (reduced[d]) {
      order.push_back(d);
      R *= x.shape()[d];
    }
  for (int d = 0; d < r; ++d) {
    if (!reduced[d])
      out_shape.push_back(x.shape()[d]);
    else if (keepdim)
      out_shape.push_back(1);
  }
  Tensor rows = copy ? x.permute(order).contiguous() : Tensor();
  return {rows, out_shape, R, order};
}

std::string acc_type(DType d) { return is_float(d) ? "f32" : wgsl_type(d); }

std::string identity(Reduce op, DType d) {
  if (op == Reduce::Sum) return acc_type(d) + "(0)";
  bool max = op == Reduce::Max;
  if (is_float(d)) return max ? "-0x1.fffffep+127f" : "0x1.fffffep+127f";
  if (d == DType::i32) return max ? "i32(-2147483647 - 1)" : "2147483647i";
  return max ? "0u" : "4294967295u";
}

kernels::Values reduce_values(Reduce op, DType in, DType out, float scale) {
  std::string combine = op == Reduce::Sum ? "a + b" : op == Reduce::Max ? "max(a, b)" : "min(a, b)";
  std::string finish = scale != 1.0f ? "partial[0] * arg_f32(5u)" : "partial[0]";
  return {{"OUT_T", wgsl_type(out)},
          {"IN_T", wgsl_type(in)},
          {"ACC_T", acc_type(in)},
          {"COMBINE", combine},
          {"IDENTITY", identity(op, in)},
          {"FINISH", finish},
          {"INPUT", std::string("@group(0) @binding(1) var<storage, read> inp: array<") + wgsl_type(in) +
                        ">;\nfn load(i: u32) -> " + wgsl_type(in) + " { return inp[i]; }"}};
}

// One of the reduce kernels for op over `in` values into `out` values, times scale (a mean's 1/R).
kernels::Program reduce_program(const gpu::ContextPtr& ctx, const char* file, Reduce op, DType in, DType out,
                                float scale) {
  return kernels::Program::file(ctx, file, reduce_values(op, in, out, scale),
                                {.f16 = in == DType::f16 || out == DType::f16});
}

// ---------------------------------------------------------------- lazy mode: a fused input

// A pending elementwise tree (lazy.hpp's FusedRead) as the reduction's input: `fn load(e)`
// evaluates it at element e of the logical block the kernel reduces (the tree's axes in `order`:
// [rows, R], or [R, C] for the column kernel), so the reduction is one dispatch and needs no
// buffer of the tree. Each element is the value realising the tree would store, read in the same
// order as from that buffer: the same bits as eager mode. Where other handles keep the pending
// tensor (an autograd gradient that a matmul reads next, say), load also stores each value into
// `store`, which then becomes the tensor's buffer: realised in the same pass, not by a second one.
struct FusedInput {
  FusedRead read;
  Tensor store;                // contiguous, the tree's shape and dtype (undefined: not stored)
  Shape shape;                 // the logical block's axes, merged where every operand allows it
  std::vector<Shape> strides;  // per leaf, then for `store`, over `shape`
};

FusedInput fused_input(const Tensor& x, const std::vector<int>& order) {
  bool store = lazy_shared(x);
  // 8 storage bindings: the reduction's output, the leaves, the store.
  FusedInput f{lazy_fused_read(x, store ? 6 : 7), Tensor(), {}, {}};
  std::vector<Shape> strides = f.read.strides;
  if (store) {
    f.store = Tensor::empty(x.context(), x.shape(), x.dtype());
    strides.push_back(f.store.strides());
  }
  size_t n = strides.size();
  f.strides.resize(n);
  for (int d : order) {
    int64_t extent = x.shape()[size_t(d)];
    if (extent == 1) continue;
    bool merge = !f.shape.empty();
    for (size_t k = 0; k < n && merge; ++k) merge = f.strides[k].back() == strides[k][size_t(d)] * extent;
    if (merge) {
      f.shape.back() *= extent;
      for (size_t k = 0; k < n; ++k) f.strides[k].back() = strides[k][size_t(d)];
    } else {
      f.shape.push_back(extent);
      for (size_t k = 0; k < n; ++k) f.strides[k].push_back(strides[k][size_t(d)]);
    }
  }
  return f;
}

// The fused input's INPUT: the operands' bindings, the tree's functions and `fn load`. Its index
// parameters follow the reduction's six: [rank, shape[8], then per operand offset, strides[8]],
// then the tree's constants.
std::string fused_input_source(const FusedInput& f, DType root) {
  constexpr size_t first = 6;
  size_t n = f.strides.size(), leaves = f.read.leaves.size();
  std::string s, init, step, loads;
  auto S = [](size_t v) { return std::to_string(v) + "u"; };
  for (size_t k = 0; k < n; ++k) {
    std::string i = "i" + std::to_string(k);
    if (k < leaves) {
      s += "@group(0) @binding(" + std::to_string(k + 1) + ") var<storage, read> in" + std::to_string(k) + ": array<" +
           wgsl_type(f.read.leaves[k].dtype()) + ">;\n";
      loads += "  let v" + std::to_string(k) + " = in" + std::to_string(k) + "[" + i + "];\n";
    } else {
      s += "@group(0) @binding(" + std::to_string(k + 1) + ") var<storage, read_write> stored: array<" +
           wgsl_type(root) + ">;\n";
    }
    init += "  var " + i + " = arg(" + S(first + 9 + 9 * k) + ");\n";
    step += "    " + i + " += c * arg(" + S(first + 10 + 9 * k) + " + u32(d));\n";
  }
  s += "const PARAMS: u32 = " + S(first + 9 + 9 * n) + ";\n";
  s += "fn param_f32(k: u32) -> f32 { return arg_f32(PARAMS + k); }\n";
  s += "fn param_i32(k: u32) -> i32 { return arg_i32(PARAMS + k); }\n";
  s += "fn param_u32(k: u32) -> u32 { return arg(PARAMS + k); }\n";
  s += f.read.functions;
  std::string t = wgsl_type(root);
  std::string keep = f.store.defined() ? "  stored[i" + std::to_string(leaves) + "] = value;\n" : "";
  s += "fn load(e: u32) -> " + t + " {\n  var rem = e;\n" + init + "  for (var d = i32(arg(" + S(first) +
       ")) - 1; d >= 0; d--) {\n    let extent = arg(" + S(first + 1) + " + u32(d));\n    let c = rem % extent;\n" +
       "    rem = rem / extent;\n" + step + "  }\n" + loads + "  let value = " + t + "(" + f.read.expr + ");\n" + keep +
       "  return value;\n}\n";
  return s;
}

// Reduces the fused input as reduce_pass / reduce_columns reduce a buffer: `file`'s kernel with
// parameters `head` (offset 0: the logical block starts at element 0) and `groups` workgroups.
void reduce_fused_pass(const gpu::ContextPtr& ctx, const char* file, Reduce op, const FusedInput& f, DType root,
                       const Tensor& out, float scale, const std::vector<uint32_t>& head, uint64_t groups) {
  bool f16 = root == DType::f16 || out.dtype() == DType::f16 || f.read.functions.find("f16") != std::string::npos;
  for (const Tensor& l : f.read.leaves) f16 |= l.dtype() == DType::f16;
  std::string key = std::string("reduce-fused|") + file + "|" + f.read.name + "|" + dtype_name(root) + ">" +
                    dtype_name(out.dtype()) + "|" + std::to_string(int(op)) + (scale != 1.0f ? "|scaled|" : "|") +
                    (f.store.defined() ? "stored|" : "") + f.read.expr + "|" + f.read.functions + "|";
  for (const Tensor& l : f.read.leaves) key += dtype_name(l.dtype()) + std::string(",");
  auto kernel = kernels::Program::generated(ctx, key,
                                            [&] {
                                              kernels::Values v = reduce_values(op, root, out.dtype(), scale);
                                              v["INPUT"] = fused_input_source(f, root);
                                              return kernels::fill_template(kernels::wgsl_source(file), v);
                                            },
                                            {.f16 = f16});
  std::vector<uint32_t> meta = head;
  meta.resize(6 + 9 + 9 * f.strides.size(), 0);
  meta[6] = uint32_t(f.shape.size());
  for (size_t d = 0; d < f.shape.size(); ++d) meta[7 + d] = kernels::Param(f.shape[d]).word;
  std::vector<kernels::Arg> args = {kernels::Arg(out)};
  for (size_t k = 0; k < f.strides.size(); ++k) {
    const Tensor& t = k < f.read.leaves.size() ? f.read.leaves[k] : f.store;
    meta[15 + 9 * k] = kernels::Param(t.offset()).word;
    for (size_t d = 0; d < f.shape.size(); ++d) meta[16 + 9 * k + d] = kernels::Param(f.strides[k][d]).word;
    args.push_back(kernels::view(t));
  }
  meta.insert(meta.end(), f.read.params.begin(), f.read.params.end());
  kernel.launch(std::span<const kernels::Arg>(args), meta, ctx->grid_for(groups));
}

std::vector<uint32_t> words(std::initializer_list<kernels::Param> ps) {
  std::vector<uint32_t> w;
  for (const auto& p : ps) w.push_back(p.word);
  return w;
}

// Reduces [rows, R] into out[rows·parts] once: `in` (contiguous from its offset, which the kernel
// takes as a parameter), or the fused input `f` of dtype `root` where it is given.
void reduce_pass(const gpu::ContextPtr& ctx, Reduce op, const Tensor& in, int64_t rows, int64_t R, int64_t parts,
                 const Tensor& out, float scale, const FusedInput* f = nullptr, DType root = DType::f32) {
  bool small = R <= 64 && parts == 1;
  const char* file = small ? "reduce_small.wgsl" : "reduce.wgsl";
  int64_t chunk = (R + parts - 1) / parts;
  uint64_t groups = small ? (uint64_t(rows) + 255) / 256 : uint64_t(rows) * uint64_t(parts);
  if (f) {
    reduce_fused_pass(ctx, file, op, *f, root, out, scale, words({rows, R, int64_t(0), parts, chunk, scale}), groups);
    return;
  }
  auto kernel = reduce_program(ctx, file, op, in.dtype(), out.dtype(), scale);
  kernel.launch({out, kernels::view(in)}, {rows, R, in.offset(), parts, chunk, scale}, ctx->grid_for(groups));
}

// The number of leading axes `axes` reduces when they are exactly a prefix of x's axes (the
// rest kept), else 0: then x, if contiguous, is [R, C] reduced over its columns in place.
int leading_prefix(const Tensor& x, std::vector<int> axes) {
  int r = x.rank();
  for (int& a : axes) a = a < 0 ? a + r : a;
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != int(i)) return 0;
  return int(axes.size()) < r ? int(axes.size()) : 0;
}

// Column reduction (reduce_columns.wgsl): each of the C outputs sums R entries C apart.
void reduce_columns(const gpu::ContextPtr& ctx, Reduce op, const Tensor& x, int64_t C, int64_t R, const Tensor& out,
                    float scale) {
  DType d = x.dtype();
  auto kernel = reduce_program(ctx, "reduce_columns.wgsl", op, d, out.dtype(), scale);
  kernel.launch({out, kernels::view(x)}, {C, R, x.offset(), 0, 0, scale}, ctx->grid_for((uint64_t(C) + 31) / 32));
}

Tensor reduce(const Tensor& x, Reduce op, const std::vector<int>& axes, bool keepdim, bool mean, const char* name) {
  if (mean && !is_float(x.dtype()))
    throw Error(ErrorKind::DType, std::string(name) + " needs a floating dtype, got " + x.describe());
  // Leading axes of a contiguous tensor (a bias gradient's batch axis), rows not too long for
  // 8 lanes a column: reduced in place over columns, without the transposing copy below.
  // Lazy mode: a pending elementwise input is evaluated inside the reduction (FusedInput).
  bool fused = lazy_inlinable(x) && x.numel() > 0;
  if (int lead = leading_prefix(x, axes); lead > 0 && x.is_contiguous() && x.numel() > 0) {
    int64_t R = 1;
    for (int d = 0; d < lead; ++d) R *= x.shape()[size_t(d)];
    int64_t C = x.numel() / R;
    if (R <= 4096) {
      Shape out_shape;
      for (int d = 0; d < x.rank(); ++d)
        if (d >= lead)
          out_shape.push_back(x.shape()[size_t(d)]);
        else if (keepdim)
          out_shape.push_back(1);
      Tensor out = Tensor::empty(x.context(), out_shape, x.dtype());
      float scale = mean ? float(1.0 / double(R)) : 1.0f;
      if (fused) {
        std::vector<int> order(size_t(x.rank()));
        std::iota(order.begin(), order.end(), 0);
        FusedInput f = fused_input(x, order);
        reduce_fused_pass(x.context(), "reduce_columns.wgsl", op, f, x.dtype(), out, scale,
                          words({C, R, int64_t(0), int64_t(0), int64_t(0), scale}), (uint64_t(C) + 31) / 32);
        if (f.store.defined()) lazy_realized_by(x, f.store);
      } else {
        reduce_columns(x.context(), op, x, C, R, out, scale);
      }
      return out;
    }
  }
  Plan p = plan(x, axes, keepdim, name, !fused);
  auto ctx = x.context();
  int64_t rows = shape_numel(p.out_shape);
  std::optional<FusedInput> f;
  if (fused && rows > 0 && p.R > 0) f = fused_input(x, p.order);
  if (fused && !f) p.rows = x.permute(p.order).contiguous();
  if (p.R == 0 && rows > 0) {  // as numpy: an empty sum is 0, an empty mean NaN, max/min undefined
    if (op != Reduce::Sum)
      throw Error(ErrorKind::Shape, std::string(name) + ": reducing " + x.describe() + " over an empty axis");
    return Tensor::full(ctx, p.out_shape, mean ? NAN : 0.0, x.dtype());
  }
  Tensor out = Tensor::empty(ctx, p.out_shape, x.dtype());
  if (rows == 0) return out;
  float scale = mean ? float(1.0 / double(p.R)) : 1.0f;
  // Few long rows would leave most of the GPU idle (and sum long sequential runs): split each
  // row into parts reduced in parallel, then reduce the partials.
  int64_t parts = 1;
  if (p.R > 16384 && rows < 4096) parts = std::min<int64_t>((p.R + 8191) / 8192, 1024);
  if (parts > 1) {
    Tensor partial = Tensor::empty(ctx, {rows, parts}, is_float(x.dtype()) ? DType::f32 : x.dtype());
    reduce_pass(ctx, op, p.rows, rows, p.R, parts, partial, 1.0f, f ? &*f : nullptr, x.dtype());
    reduce_pass(ctx, op, partial, rows, parts, 1, out, scale);
  } else {
    reduce_pass(ctx, op, p.rows, rows, p.R, 1, out, scale, f ? &*f : nullptr, x.dtype());
  }
  if (f && f->store.defined()) lazy_realized_by(x, f->store);
  return out;
}

Tensor argreduce(const Tensor& x, int axis, bool keepdim, bool max, const char* name) {
  if (x.rank() == 0) return Tensor::zeros(x.context(), {}, DType::i32);
  Plan p = plan(x, {axis}, keepdim, name);
  auto ctx = x.context();
  int64_t rows = shape_numel(p.out_shape);
  if (p.R == 0 && rows > 0)
    throw Error(ErrorKind::Shape,
                std::string(name) + ": " + x.describe() + " is empty along axis " + std::to_string(axis));
  Tensor out = Tensor::empty(ctx, p.out_shape, DType::i32);
  if (rows == 0) return out;
  auto kernel = kernels::Program::file(ctx, "argreduce.wgsl",
                                       {{"IN_T", wgsl_type(x.dtype())},
                                        {"CMP", max ? ">" : "<"},
                                        {"WORST", max ? "-0x1.fffffep+127f" : "0x1.fffffep+127f"}},
                                       {.f16 = x.dtype() == DType::f16});
  kernel.launch({out, kernels::view(p.rows)}, {rows, p.R, p.rows.offset()}, ctx->grid_for(uint64_t(rows)));
  return out;
}

}  // namespace

Tensor Tensor::sum(const std::vector<int>& axes, bool keepdim) const {
  return reduce(*this, Reduce::Sum, axes, keepdim, false, "sum");
}
Tensor Tensor::mean(const std::vector<int>& axes, bool keepdim) const {
  return reduce(*this, Reduce::Sum, axes, keepdim, true, "mean");
}
Tensor Tensor::max(const std::vector<int>& axes, bool keepdim) const {
  return reduce(*this, Reduce::Max, axes, keepdim, false, "max");
}
Tensor Tensor::min(const std::vector<int>& axes, bool keepdim) const {
  return reduce(*this, Reduce::Min, axes, keepdim, false, "min");
}
Tensor Tensor::argmax(int axis, bool keepdim) const { return argreduce(*this, axis, keepdim, true, "argmax"); }
Tensor Tensor::argmin(int axis, bool keepdim) const { return argreduce(*this, axis, keepdim, false, "argmin"); }

// Numerically stable compositions: subtract the maximum before exponentiating.
Tensor Tensor::logsumexp(const std::vector<int>& axes, bool keepdim) const {
  if (!is_float(dtype_)) throw Error(ErrorKind::DType, "logsumexp needs a floating dtype, got " + describe());
  Tensor m = max(axes, true);
  Tensor s = add(sub(*this, m).exp().sum(axes, true).log(), m);
  if (keepdim) return s;
  Plan p = plan(m, axes, false, "logsumexp");  // m has size-1 reduced axes: a cheap view
  return s.reshape(p.out_shape);
}

Tensor Tensor::softmax(int axis) const {
  if (!is_float(dtype_)) throw Error(ErrorKind::DType, "softmax needs a floating dtype, got " + describe());
  Tensor e = sub(*this, max({axis}, true)).exp();
  return div(e, e.sum({axis}, true));
}

Tensor Tensor::log_softmax(int axis) const {
  if (!is_float(dtype_)) throw Error(ErrorKind::DType, "log_softmax needs a floating dtype, got " + describe());
  return sub(*this, logsumexp({axis}, true));
}

}  // namespace surfgrad
