// HostArray: a float64 array on the host with the same op names as Tensor and Var, written for
// clarity rather than speed. It is the trusted reference: tests compare kernels with it, and
// gradcheck differentiates it numerically. Generic code (`auto` lambdas) runs on all three.
//
//   HostArray x = HostArray::from(tensor);          // read a GPU tensor as float64
//   HostArray y = (x * 2.0).exp().sum({1});
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "surfgrad/error.hpp"

namespace surfgrad {

using Shape = std::vector<int64_t>;
class Tensor;

class HostArray {
 public:
  HostArray() = default;
  HostArray(Shape shape, std::vector<double> values);
  static HostArray full(const Shape& shape, double value);
  static HostArray from(const Tensor& t);  // a sync point

  const Shape& shape() const { return shape_; }
  int rank() const { return int(shape_.size()); }
  int64_t numel() const { return int64_t(v_.size()); }
  const std::vector<double>& values() const { return v_; }
  std::vector<double>& values() { return v_; }
  double item() const;  // the value of a one-element array

  // Views (copies here) and layout.
  HostArray reshape(const Shape& shape) const;
  HostArray permute(const std::vector<int>& axes) const;
  HostArray transpose(int a, int b) const;
  HostArray t() const;
  HostArray slice(int axis, int64_t start, int64_t stop, int64_t step = 1) const;
  HostArray expand(const Shape& shape) const;
  HostArray unsqueeze(int axis) const;
  HostArray squeeze(int axis) const;
  HostArray contiguous() const { return *this; }

#define SURFGRAD_UNARY(name) HostArray name() const;
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY
  HostArray pow(double exponent) const;

  HostArray sum(const std::vector<int>& axes = {}, bool keepdim = false) const;
  HostArray mean(const std::vector<int>& axes = {}, bool keepdim = false) const;
  HostArray max(const std::vector<int>& axes = {}, bool keepdim = false) const;
  HostArray min(const std::vector<int>& axes = {}, bool keepdim = false) const;
  HostArray logsumexp(const std::vector<int>& axes, bool keepdim = false) const;
  HostArray softmax(int axis) const;
  HostArray log_softmax(int axis) const;
  HostArray matmul(const HostArray& other) const;

 private:
  Shape shape_;
  std::vector<double> v_;
};

// The differentiable binary ops of binary_ops.inc: add, sub, mul, div, pow, maximum, minimum.
#define SURFGRAD_BINARY(name) HostArray name(const HostArray& a, const HostArray& b);
#define SURFGRAD_COMPARISON(name)
#include "surfgrad/binary_ops.inc"
#undef SURFGRAD_COMPARISON
#undef SURFGRAD_BINARY
HostArray where(const HostArray& mask, const HostArray& a, const HostArray& b);
HostArray matmul(const HostArray& a, const HostArray& b);
HostArray gather(const HostArray& x, int axis, const HostArray& index);
HostArray index_select(const HostArray& x, int axis, const HostArray& index);
HostArray scatter_add(const HostArray& x, int axis, const HostArray& index, const HostArray& src);
HostArray index_add(const HostArray& x, int axis, const HostArray& index, const HostArray& src);
HostArray concat(const std::vector<HostArray>& arrays, int axis);

HostArray operator+(const HostArray& a, const HostArray& b);
HostArray operator-(const HostArray& a, const HostArray& b);
HostArray operator*(const HostArray& a, const HostArray& b);
HostArray operator/(const HostArray& a, const HostArray& b);
HostArray operator-(const HostArray& a);
HostArray operator+(const HostArray& a, double b);
HostArray operator-(const HostArray& a, double b);
HostArray operator*(const HostArray& a, double b);
HostArray operator/(const HostArray& a, double b);
HostArray operator+(double a, const HostArray& b);
HostArray operator-(double a, const HostArray& b);
HostArray operator*(double a, const HostArray& b);
HostArray operator/(double a, const HostArray& b);

}  // namespace surfgrad
