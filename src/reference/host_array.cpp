// The float64 host reference: plain loops over C-order arrays, numpy semantics.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "surfgrad/reference.hpp"
#include "surfgrad/tensor.hpp"
#include "tensor/binary_ops.hpp"
#include "tensor/unary_ops.hpp"

namespace surfgrad {

namespace {

Shape strides_of(const Shape& s) {
  Shape st(s.size());
  int64_t k = 1;
  for (size_t i = s.size(); i-- > 0;) st[i] = k, k *= s[i];
  return st;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

int axis_of(int axis, int rank, const char* op) {
  int r = std::max(rank, 1);
  if (axis < -r || axis >= r)
    throw Error(ErrorKind::Shape,
                std::string(op) + ": axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

// Calls f(out_index, coordinates) for every element of `shape`.
void for_each(const Shape& shape, const std::function<void(int64_t, const Shape&)>& f) {
  int64_t n = numel_of(shape);
  Shape c(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, c);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

// Offset into an array of shape `own` for output coordinate `c` under broadcasting.
int64_t broadcast_offset(const Shape& own, const Shape& c) {
  int64_t off = 0, k = 1;
  size_t lead = c.size() - own.size();
  for (size_t d = own.size(); d-- > 0;) {
    off += (own[d] == 1 ? 0 : c[lead + d]) * k;
    k *= own[d];
  }
  return off;
}

HostArray map1(const HostArray& x, double (*f)(double)) {
  HostArray out = x;
  for (double& v : out.values()) v = f(v);
  return out;
}

HostArray map2(const HostArray& a, const HostArray& b, const std::function<double(double, double)>& f, const char* op) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  std::vector<double> v(size_t(numel_of(shape)));
  for_each(shape, [&](int64_t i, const Shape& c) {
    v[size_t(i)] =
        f(a.values()[size_t(broadcast_offset(a.shape(), c))], b.values()[size_t(broadcast_offset(b.shape(), c))]);
  });
  return HostArray(shape, std::move(v));
}

enum class Red { Sum, Max, Min };

HostArray reduce(const HostArray& x, std::vector<int> axes, bool keepdim, Red op, bool mean) {
  int r = x.rank();
  if (axes.empty()) {
    axes.resize(size_t(r));
    std::iota(axes.begin(), axes.end(), 0);
  }
  std::vector<bool> red(size_t(r), false);
  for (int a : axes)
    if (r) red[size_t(axis_of(a, r, "reduce"))] = true;
  Shape out_shape, kept;
  int64_t count = 1;
  for (int d = 0; d < r; ++d) {
    if (!red[size_t(d)])
      out_shape.push_back(x.shape()[size_t(d)]), kept.push_back(x.shape()[size_t(d)]);
    else {
      count *= x.shape()[size_t(d)];
      if (keepdim) out_shape.push_back(1);
    }
  }
  double init = op == Red::Sum ? 0.0 : op == Red::Max ? -INFINITY : INFINITY;
  std::vector<double> acc(size_t(numel_of(kept)), init);
  for_each(x.shape(), [&](int64_t i, const Shape& c) {
    int64_t o = 0;
    for (int d = 0; d < r; ++d)
      if (!red[size_t(d)]) o = o * x.shape()[size_t(d)] + c[size_t(d)];
    double v = x.values()[size_t(i)];
    double& a = acc[size_t(o)];
    a = op == Red::Sum ? a + v : op == Red::Max ? std::max(a, v) : std::min(a, v);
  });
  if (mean)
    for (double& a : acc) a /= double(count);
  return HostArray(out_shape, std::move(acc));
}

}  // namespace

HostArray::HostArray(Shape shape, std::vector<double> values) : shape_(std::move(shape)), v_(std::move(values)) {
  if (int64_t(v_.size()) != numel_of(shape_))
    throw Error(ErrorKind::Shape, "HostArray: " + std::to_string(v_.size()) + " values for shape " + shape_str(shape_));
}

HostArray HostArray::full(const Shape& shape, double value) {
  return HostArray(shape, std::vector<double>(size_t(numel_of(shape)), value));
}

HostArray HostArray::from(const Tensor& t) {
  std::vector<double> v;
  if (t.dtype() == DType::i32) {
    for (int32_t x : t.to_vector<int32_t>()) v.push_back(x);
  } else if (t.dtype() == DType::u32) {
    for (uint32_t x : t.to_vector<uint32_t>()) v.push_back(x);
  } else {
    for (float x : t.to_vector<float>()) v.push_back(x);
  }
  return HostArray(t.shape(), std::move(v));
}

double HostArray::item() const {
  if (v_.size() != 1) throw Error(ErrorKind::Shape, "item(): array has " + std::to_string(v_.size()) + " elements");
  return v_[0];
}

HostArray HostArray::reshape(const Shape& s_in) const {
  Shape s = s_in;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == -1)
      infer = int(i);
    else
      known *= s[i];
  if (infer >= 0) s[size_t(infer)] = known ? numel() / known : 0;
  return HostArray(s, v_);
}

HostArray HostArray::permute(const std::vector<int>& axes) const {
  Shape s(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) s[i] = shape_[size_t(axis_of(axes[i], rank(), "permute"))];
  Shape st = strides_of(shape_);
  std::vector<double> v(v_.size());
  for_each(s, [&](int64_t i, const Shape& c) {
    int64_t off = 0;
    for (size_t d = 0; d < axes.size(); ++d) off += c[d] * st[size_t(axis_of(axes[d], rank(), "permute"))];
    v[size_t(i)] = v_[size_t(off)];
  });
  return HostArray(s, std::move(v));
}

HostArray HostArray::transpose(int a, int b) const {
  std::vector<int> axes(static_cast<size_t>(rank()));
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[size_t(axis_of(a, rank(), "transpose"))], axes[size_t(axis_of(b, rank(), "transpose"))]);
  return permute(axes);
}

HostArray HostArray::t() const { return transpose(-2, -1); }

HostArray HostArray::slice(int axis, int64_t start, int64_t stop, int64_t step) const {
  int a = axis_of(axis, rank(), "slice");
  int64_t n = shape_[size_t(a)];
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::clamp<int64_t>(start, 0, n);
  stop = std::clamp<int64_t>(stop, start, n);
  Shape s = shape_;
  s[size_t(a)] = (stop - start + step - 1) / step;
  Shape st = strides_of(shape_);
  std::vector<double> v(size_t(numel_of(s)));
  for_each(s, [&](int64_t i, const Shape& c) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) off += (int(d) == a ? start + c[d] * step : c[d]) * st[d];
    v[size_t(i)] = v_[size_t(off)];
  });
  return HostArray(s, std::move(v));
}

HostArray HostArray::expand(const Shape& shape) const {
  std::vector<double> v(size_t(numel_of(shape)));
  for_each(shape, [&](int64_t i, const Shape& c) { v[size_t(i)] = v_[size_t(broadcast_offset(shape_, c))]; });
  return HostArray(shape, std::move(v));
}

HostArray HostArray::unsqueeze(int axis) const {
  Shape s = shape_;
  int a = axis < 0 ? axis + rank() + 1 : axis;
  if (a < 0 || a > rank())
    throw Error(ErrorKind::Shape,
                "unsqueeze: axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank()));
  s.insert(s.begin() + a, 1);
  return HostArray(s, v_);
}

HostArray HostArray::squeeze(int axis) const {
  Shape s = shape_;
  s.erase(s.begin() + axis_of(axis, rank(), "squeeze"));
  return HostArray(s, v_);
}

#define SURFGRAD_UNARY(name) \
  HostArray HostArray::name() const { return map1(*this, unary_spec(UnaryOp::name).host); }
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY
HostArray HostArray::pow(double p) const {
  HostArray out = *this;
  for (double& v : out.values()) v = std::pow(v, p);
  return out;
}

HostArray HostArray::sum(const std::vector<int>& axes, bool keepdim) const {
  return reduce(*this, axes, keepdim, Red::Sum, false);
}
HostArray HostArray::mean(const std::vector<int>& axes, bool keepdim) const {
  return reduce(*this, axes, keepdim, Red::Sum, true);
}
HostArray HostArray::max(const std::vector<int>& axes, bool keepdim) const {
  return reduce(*this, axes, keepdim, Red::Max, false);
}
HostArray HostArray::min(const std::vector<int>& axes, bool keepdim) const {
  return reduce(*this, axes, keepdim, Red::Min, false);
}
HostArray HostArray::logsumexp(const std::vector<int>& axes, bool keepdim) const {
  HostArray m = max(axes, true);
  HostArray s = add((*this - m).exp().sum(axes, true).log(), m);
  return keepdim ? s : HostArray(max(axes, false).shape(), s.values());
}
HostArray HostArray::softmax(int axis) const {
  HostArray e = sub(*this, max({axis}, true)).exp();
  return div(e, e.sum({axis}, true));
}
HostArray HostArray::log_softmax(int axis) const { return sub(*this, logsumexp({axis}, true)); }

HostArray HostArray::matmul(const HostArray& other) const { return surfgrad::matmul(*this, other); }

HostArray matmul(const HostArray& a_in, const HostArray& b_in) {
  HostArray a = a_in.rank() == 1 ? a_in.unsqueeze(0) : a_in;
  HostArray b = b_in.rank() == 1 ? b_in.unsqueeze(1) : b_in;
  int64_t M = a.shape()[size_t(a.rank() - 2)], K = a.shape().back(), N = b.shape().back();
  if (b.shape()[size_t(b.rank() - 2)] != K) throw Error(ErrorKind::Shape, "matmul: inner sizes differ");
  Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ab, bb, "matmul");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  std::vector<double> v(size_t(numel_of(out_shape)), 0.0);
  for_each(batch, [&](int64_t bi, const Shape& c) {
    int64_t ao = broadcast_offset(ab, c) * M * K, bo = broadcast_offset(bb, c) * K * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += a.values()[size_t(ao + i * K + k)] * b.values()[size_t(bo + k * N + j)];
        v[size_t((bi * M + i) * N + j)] = s;
      }
  });
  Shape final_shape = batch;
  if (a_in.rank() > 1) final_shape.push_back(M);
  if (b_in.rank() > 1) final_shape.push_back(N);
  return HostArray(final_shape, std::move(v));
}

// Every differentiable row of the binary op table, by its float64 reference.
#define SURFGRAD_BINARY(name) \
  HostArray name(const HostArray& a, const HostArray& b) { return map2(a, b, binary_spec(BinaryOp::name).host, #name); }
#define SURFGRAD_COMPARISON(name)
#include "surfgrad/binary_ops.inc"
#undef SURFGRAD_COMPARISON
#undef SURFGRAD_BINARY
HostArray where(const HostArray& mask, const HostArray& a, const HostArray& b) {
  Shape shape = broadcast_shapes(broadcast_shapes(mask.shape(), a.shape(), "where"), b.shape(), "where");
  std::vector<double> v(size_t(numel_of(shape)));
  for_each(shape, [&](int64_t i, const Shape& c) {
    bool m = mask.values()[size_t(broadcast_offset(mask.shape(), c))] != 0;
    v[size_t(i)] =
        m ? a.values()[size_t(broadcast_offset(a.shape(), c))] : b.values()[size_t(broadcast_offset(b.shape(), c))];
  });
  return HostArray(shape, std::move(v));
}

HostArray gather(const HostArray& x, int axis, const HostArray& index) {
  int a = axis_of(axis, x.rank(), "gather");
  Shape st = strides_of(x.shape());
  std::vector<double> v(size_t(index.numel()));
  for_each(index.shape(), [&](int64_t i, const Shape& c) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) off += (int(d) == a ? int64_t(index.values()[size_t(i)]) : c[d]) * st[d];
    v[size_t(i)] = x.values()[size_t(off)];
  });
  return HostArray(index.shape(), std::move(v));
}

HostArray index_select(const HostArray& x, int axis, const HostArray& index) {
  int a = axis_of(axis, x.rank(), "index_select");
  Shape s = x.shape(), view(size_t(x.rank()), 1);
  s[size_t(a)] = index.numel();
  view[size_t(a)] = index.numel();
  return gather(x, a, index.reshape(view).expand(s));
}

HostArray scatter_add(const HostArray& x, int axis, const HostArray& index, const HostArray& src) {
  int a = axis_of(axis, x.rank(), "scatter_add");
  Shape st = strides_of(x.shape());
  HostArray out = x;
  for_each(index.shape(), [&](int64_t i, const Shape& c) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) off += (int(d) == a ? int64_t(index.values()[size_t(i)]) : c[d]) * st[d];
    out.values()[size_t(off)] += src.values()[size_t(i)];
  });
  return out;
}

HostArray index_add(const HostArray& x, int axis, const HostArray& index, const HostArray& src) {
  int a = axis_of(axis, x.rank(), "index_add");
  Shape view(size_t(x.rank()), 1);
  view[size_t(a)] = index.numel();
  return scatter_add(x, a, index.reshape(view).expand(src.shape()), src);
}

HostArray concat(const std::vector<HostArray>& arrays, int axis) {
  int a = axis_of(axis, arrays.at(0).rank(), "concat");
  Shape s = arrays[0].shape();
  s[size_t(a)] = 0;
  for (const auto& x : arrays) s[size_t(a)] += x.shape()[size_t(a)];
  std::vector<double> v(size_t(numel_of(s)));
  Shape st = strides_of(s);
  int64_t at = 0;
  for (const auto& x : arrays) {
    for_each(x.shape(), [&](int64_t i, const Shape& c) {
      int64_t off = 0;
      for (size_t d = 0; d < c.size(); ++d) off += (int(d) == a ? c[d] + at : c[d]) * st[d];
      v[size_t(off)] = x.values()[size_t(i)];
    });
    at += x.shape()[size_t(a)];
  }
  return HostArray(s, std::move(v));
}

HostArray operator+(const HostArray& a, const HostArray& b) { return add(a, b); }
HostArray operator-(const HostArray& a, const HostArray& b) { return sub(a, b); }
HostArray operator*(const HostArray& a, const HostArray& b) { return mul(a, b); }
HostArray operator/(const HostArray& a, const HostArray& b) { return div(a, b); }
HostArray operator-(const HostArray& a) { return a.neg(); }
HostArray operator+(const HostArray& a, double b) { return add(a, HostArray({}, {b})); }
HostArray operator-(const HostArray& a, double b) { return sub(a, HostArray({}, {b})); }
HostArray operator*(const HostArray& a, double b) { return mul(a, HostArray({}, {b})); }
HostArray operator/(const HostArray& a, double b) { return div(a, HostArray({}, {b})); }
HostArray operator+(double a, const HostArray& b) { return add(HostArray({}, {a}), b); }
HostArray operator-(double a, const HostArray& b) { return sub(HostArray({}, {a}), b); }
HostArray operator*(double a, const HostArray& b) { return mul(HostArray({}, {a}), b); }
HostArray operator/(double a, const HostArray& b) { return div(HostArray({}, {a}), b); }

}  // namespace surfgrad
