// Backward rules. Each primitive maps the output gradient g to its inputs' gradients; the
// composites at the end (logsumexp, softmax, log_softmax) need no rules of their own.
#include <numeric>

#include "autograd/softmax_rows.hpp"
#include "autograd/var_access.hpp"
#include "surfgrad/autograd.hpp"
#include "tensor/binary_ops.hpp"
#include "tensor/internal.hpp"
#include "tensor/unary_ops.hpp"

namespace surfgrad {

namespace {

Tensor like(const Tensor& t, double v) { return scalar_like(t, v); }
Tensor mask_of(const Tensor& m, DType dtype) { return m.cast(dtype); }  // u32 0/1 → 0.0/1.0

std::vector<int> all_axes(int rank) {
  std::vector<int> a(static_cast<size_t>(rank));
  std::iota(a.begin(), a.end(), 0);
  return a;
}

// Shape of a reduction's result with the reduced axes kept as size 1. An axis out of range is
// refused here, naming the op, before it could index past the shape (the reduction itself checks
// too, but it runs after this: a bad axis once wrote past this vector's end and corrupted the heap
// of the Python suite's process, which crashed elsewhere, now and then, much later).
Shape keepdim_shape(const Shape& shape, std::vector<int> axes, const char* op) {
  int r = int(shape.size());
  if (axes.empty()) axes = all_axes(r);
  Shape s = shape;
  for (int a : axes) {
    const int at = normalize_axis(a, r, op);
    if (size_t(at) < s.size()) s[size_t(at)] = 1;  // (a scalar's axis 0 names no dimension)
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------------- binary

// Every differentiable row of the binary op table: the value through Tensor, the gradients by
// the table's rule, summed over the axes each operand was broadcast along.
static Var binary(const Var& a, const Var& b, BinaryOp op) {
  const BinarySpec& s = binary_spec(op);
  Tensor av = a.value(), bv = b.value(), y = apply_binary(av, bv, op);
  bool ga = a.requires_grad(), gb = b.requires_grad();
  return VarAccess::make(y, s.name, {a, b}, [=, &s](const Tensor& g) {
    auto [da, db] = s.backward(av, bv, y, g, ga, gb);
    return std::vector<Tensor>{ga && da.defined() ? sum_to(da, av.shape()) : Tensor(),
                               gb && db.defined() ? sum_to(db, bv.shape()) : Tensor()};
  });
}

#define SURFGRAD_BINARY(name) \
  Var name(const Var& a, const Var& b) { return binary(a, b, BinaryOp::name); }
#define SURFGRAD_COMPARISON(name)
#include "surfgrad/binary_ops.inc"
#undef SURFGRAD_COMPARISON
#undef SURFGRAD_BINARY

Var where(const Tensor& mask, const Var& a, const Var& b) {
  Shape as = a.shape(), bs = b.shape();
  return VarAccess::make(where(mask, a.value(), b.value()), "where", {a, b}, [=](const Tensor& g) {
    Tensor zero = like(g, 0);
    return std::vector<Tensor>{sum_to(where(mask, g, zero), as), sum_to(where(mask, zero, g), bs)};
  });
}

// ---------------------------------------------------------------- unary

// Every op of the unary table: the value through Tensor, the gradient by the table's rule.
#define SURFGRAD_UNARY(name)                                                                                           \
  Var Var::name() const {                                                                                              \
    Tensor x = value(), y = x.name();                                                                                  \
    return make(y, #name, {*this},                                                                                     \
                [x, y](const Tensor& g) { return std::vector<Tensor>{unary_spec(UnaryOp::name).backward(x, y, g)}; }); \
  }
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY

Var Var::pow(double p) const {
  Tensor x = value();
  return make(x.pow(p), "pow", {*this},
              [x, p](const Tensor& g) { return std::vector<Tensor>{mul(g, x.pow(p - 1) * p)}; });
}

Var Var::cast(DType dtype) const {
  DType from = value().dtype();
  return make(value().cast(dtype), "cast", {*this},
              [from](const Tensor& g) { return std::vector<Tensor>{g.cast(from)}; });
}

Var Var::contiguous() const {
  return make(value().contiguous(), "contiguous", {*this}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

// ---------------------------------------------------------------- views

Var Var::reshape(const Shape& shape) const {
  Shape in = this->shape();
  return make(value().reshape(shape), "reshape", {*this},
              [in](const Tensor& g) { return std::vector<Tensor>{g.reshape(in)}; });
}

Var Var::permute(const std::vector<int>& axes) const {
  Tensor out = value().permute(axes);  // checks the axes (a permutation of this rank) before they index below
  std::vector<int> inverse(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) inverse[size_t(axes[i] < 0 ? axes[i] + rank() : axes[i])] = int(i);
  return make(out, "permute", {*this}, [inverse](const Tensor& g) { return std::vector<Tensor>{g.permute(inverse)}; });
}

Var Var::transpose(int a, int b) const {
  return make(value().transpose(a, b), "transpose", {*this},
              [a, b](const Tensor& g) { return std::vector<Tensor>{g.transpose(a, b)}; });
}

Var Var::t() const { return transpose(-2, -1); }

Var Var::slice(int axis, int64_t start, int64_t stop, int64_t step) const {
  Tensor x = value();
  return make(x.slice(axis, start, stop, step), "slice", {*this}, [=](const Tensor& g) {
    Tensor full = Tensor::zeros(g.context(), x.shape(), g.dtype());
    full.slice(axis, start, stop, step).assign(g);
    return std::vector<Tensor>{full};
  });
}

Var Var::expand(const Shape& shape) const {
  Shape in = this->shape();
  return make(value().expand(shape), "expand", {*this},
              [in](const Tensor& g) { return std::vector<Tensor>{sum_to(g, in)}; });
}

Var Var::unsqueeze(int axis) const {
  Shape in = shape();
  return make(value().unsqueeze(axis), "unsqueeze", {*this},
              [in](const Tensor& g) { return std::vector<Tensor>{g.reshape(in)}; });
}

Var Var::squeeze(int axis) const {
  Shape in = shape();
  return make(value().squeeze(axis), "squeeze", {*this},
              [in](const Tensor& g) { return std::vector<Tensor>{g.reshape(in)}; });
}

// ---------------------------------------------------------------- reductions

Var Var::sum(const std::vector<int>& axes, bool keepdim) const {
  Shape in = shape(), kept = keepdim_shape(in, axes, "sum");
  return make(value().sum(axes, keepdim), "sum", {*this},
              [in, kept](const Tensor& g) { return std::vector<Tensor>{g.reshape(kept).expand(in)}; });
}

Var Var::mean(const std::vector<int>& axes, bool keepdim) const {
  Shape in = shape(), kept = keepdim_shape(in, axes, "mean");
  double count = double(shape_numel(in)) / double(std::max<int64_t>(1, shape_numel(kept)));
  return make(value().mean(axes, keepdim), "mean", {*this},
              [in, kept, count](const Tensor& g) { return std::vector<Tensor>{(g / count).reshape(kept).expand(in)}; });
}

static Var extreme_over(const Var& v, const std::vector<int>& axes, bool keepdim, bool max) {
  Tensor x = v.value();
  Tensor y = max ? x.max(axes, true) : x.min(axes, true);
  Shape out_shape = (max ? x.max(axes, keepdim) : x.min(axes, keepdim)).shape();
  return VarAccess::make(y.reshape(out_shape), max ? "max" : "min", {v}, [x, y, axes](const Tensor& g) {
    Tensor hit = mask_of(eq(x, y), g.dtype());  // ties share the gradient equally
    Tensor count = hit.sum(axes, true);
    return std::vector<Tensor>{mul(div(hit, count), g.reshape(y.shape()))};
  });
}
Var Var::max(const std::vector<int>& axes, bool keepdim) const { return extreme_over(*this, axes, keepdim, true); }
Var Var::min(const std::vector<int>& axes, bool keepdim) const { return extreme_over(*this, axes, keepdim, false); }

// Composites: the maximum is a constant shift (detached), so its gradient is not needed.
Var Var::logsumexp(const std::vector<int>& axes, bool keepdim) const {
  Var m = max(axes, true).detach();
  Var s = add(sub(*this, m).exp().sum(axes, true).log(), m);
  return keepdim ? s : s.reshape(value().sum(axes, false).shape());
}

Var Var::softmax(int axis) const {
  if (softmax_rows_applies(*this, axis)) return softmax_rows(*this);
  Var e = sub(*this, max({axis}, true).detach()).exp();
  return div(e, e.sum({axis}, true));
}

Var Var::log_softmax(int axis) const { return sub(*this, logsumexp({axis}, true)); }

// ---------------------------------------------------------------- matmul and indexing

Var matmul(const Var& a_in, const Var& b_in) {
  // numpy's 1-D promotion, done with differentiable views so the rule below sees ≥ 2-D.
  bool a1 = a_in.rank() == 1, b1 = b_in.rank() == 1;
  if (a1 || b1) {
    Var c = matmul(a1 ? a_in.unsqueeze(0) : a_in, b1 ? b_in.unsqueeze(1) : b_in);
    if (b1) c = c.squeeze(-1);
    if (a1) c = c.squeeze(b1 ? -1 : -2);
    return c;
  }
  Tensor a = a_in.value(), b = b_in.value();
  bool ga = a_in.requires_grad(), gb = b_in.requires_grad();
  return VarAccess::make(matmul(a, b), "matmul", {a_in, b_in}, [=](const Tensor& g) {
    // Transposes are views: the kernel reads them in place.
    return std::vector<Tensor>{ga ? sum_to(matmul(g, b.transpose(-1, -2)), a.shape()) : Tensor(),
                               gb ? sum_to(matmul(a.transpose(-1, -2), g), b.shape()) : Tensor()};
  });
}
Var Var::matmul(const Var& other) const { return surfgrad::matmul(*this, other); }

Var gather(const Var& x, int axis, const Tensor& index) {
  Shape xs = x.shape();
  return VarAccess::make(gather(x.value(), axis, index), "gather", {x}, [=](const Tensor& g) {
    return std::vector<Tensor>{scatter_add(Tensor::zeros(g.context(), xs, g.dtype()), axis, index, g)};
  });
}

Var index_select(const Var& x, int axis, const Tensor& index) {
  Shape xs = x.shape();
  return VarAccess::make(index_select(x.value(), axis, index), "index_select", {x}, [=](const Tensor& g) {
    return std::vector<Tensor>{index_add(Tensor::zeros(g.context(), xs, g.dtype()), axis, index, g)};
  });
}

Var scatter_add(const Var& x, int axis, const Tensor& index, const Var& src) {
  return VarAccess::make(scatter_add(x.value(), axis, index, src.value()), "scatter_add", {x, src},
                         [=](const Tensor& g) { return std::vector<Tensor>{g, gather(g, axis, index)}; });
}

Var index_add(const Var& x, int axis, const Tensor& index, const Var& src) {
  return VarAccess::make(index_add(x.value(), axis, index, src.value()), "index_add", {x, src},
                         [=](const Tensor& g) { return std::vector<Tensor>{g, index_select(g, axis, index)}; });
}

Var concat(const std::vector<Var>& vars, int axis) {
  std::vector<Tensor> values;
  std::vector<int64_t> sizes;
  for (const Var& v : vars) {
    values.push_back(v.value());
    sizes.push_back(v.shape(axis));
  }
  return VarAccess::make(concat(values, axis), "concat", vars, [=](const Tensor& g) {
    std::vector<Tensor> grads;
    int64_t at = 0;
    for (int64_t n : sizes) {
      grads.push_back(g.slice(axis, at, at + n));
      at += n;
    }
    return grads;
  });
}

// ---------------------------------------------------------------- operators

static Var constant(const Var& like_var, double v) { return Var(scalar_like(like_var.value(), v)); }

Var operator+(const Var& a, const Var& b) { return add(a, b); }
Var operator-(const Var& a, const Var& b) { return sub(a, b); }
Var operator*(const Var& a, const Var& b) { return mul(a, b); }
Var operator/(const Var& a, const Var& b) { return div(a, b); }
Var operator-(const Var& a) { return a.neg(); }
Var operator+(const Var& a, double b) { return add(a, constant(a, b)); }
Var operator-(const Var& a, double b) { return sub(a, constant(a, b)); }
Var operator*(const Var& a, double b) { return mul(a, constant(a, b)); }
Var operator/(const Var& a, double b) { return div(a, constant(a, b)); }
Var operator+(double a, const Var& b) { return add(constant(b, a), b); }
Var operator-(double a, const Var& b) { return sub(constant(b, a), b); }
Var operator*(double a, const Var& b) { return mul(constant(b, a), b); }
Var operator/(double a, const Var& b) { return div(constant(b, a), b); }

}  // namespace surfgrad
