// Tensor: an n-dimensional array that lives on the GPU.
//
//   auto ctx = surfgrad::gpu::Context::create();
//   Tensor a = Tensor::uniform(ctx, {128, 64}, /*seed=*/1);
//   Tensor b = Tensor::arange(ctx, 0, 64).reshape({64, 1});
//   Tensor c = (a.matmul(b) + 1.0).relu().sum({0});   // recorded, nothing read back yet
//   std::vector<float> host = c.to_vector<float>();     // submits, waits, reads
//
// A tensor is a view: shape, strides (in elements) and an offset into shared storage.
// reshape/permute/transpose/slice/expand make views without copies; contiguous() copies when
// needed. Ops record GPU work; to_host/to_vector are the sync points.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "surfgrad/error.hpp"
#include "surfgrad/gpu.hpp"

namespace surfgrad {

enum class DType { f32, f16, i32, u32 };
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
bool is_float(DType dtype);

using Shape = std::vector<int64_t>;
constexpr int kMaxRank = 8;
std::string shape_str(const Shape& shape);
// numpy's broadcasting of two shapes; a Shape error naming `op` and the axis where they differ.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast");
int64_t shape_numel(const Shape& shape);

struct Storage;  // the device buffer a tensor views (private to the tensor layer)

class Tensor {
 public:
  Tensor() = default;

  // ---- creation (on the GPU; no host data travels except for from_host) ----
  static Tensor empty(const gpu::ContextPtr& ctx, const Shape& shape, DType dtype = DType::f32);
  static Tensor zeros(const gpu::ContextPtr& ctx, const Shape& shape, DType dtype = DType::f32);
  static Tensor ones(const gpu::ContextPtr& ctx, const Shape& shape, DType dtype = DType::f32);
  static Tensor full(const gpu::ContextPtr& ctx, const Shape& shape, double value, DType dtype = DType::f32);
  static Tensor arange(const gpu::ContextPtr& ctx, double start, double stop, double step = 1,
                       DType dtype = DType::f32);
  // Counter-based (Philox-4x32-10): the same seed gives the same numbers on every device.
  static Tensor uniform(const gpu::ContextPtr& ctx, const Shape& shape, uint64_t seed, double low = 0, double high = 1,
                        DType dtype = DType::f32);
  static Tensor normal(const gpu::ContextPtr& ctx, const Shape& shape, uint64_t seed, double mean = 0,
                       double stddev = 1, DType dtype = DType::f32);
  // Host data in the tensor's dtype (f16 as IEEE binary16 bit patterns, uint16_t).
  static Tensor from_host(const gpu::ContextPtr& ctx, const void* data, const Shape& shape, DType dtype);
  static Tensor from_vector(const gpu::ContextPtr& ctx, const std::vector<float>& data, const Shape& shape);
  static Tensor from_vector(const gpu::ContextPtr& ctx, const std::vector<int32_t>& data, const Shape& shape);
  static Tensor from_vector(const gpu::ContextPtr& ctx, const std::vector<uint32_t>& data, const Shape& shape);

  // ---- host I/O (sync points) ----
  void to_host(void* data) const;  // numel() elements of dtype(), C order
  // The same bytes, collected later by the result's wait(data): no sync now, and the wait blocks
  // only until the GPU has reached the copy (gpu::PendingDownload), not for all queued work.
  gpu::PendingDownload to_host_later() const;
  template <typename T>
  std::vector<T> to_vector() const;  // float (any dtype converted), int32_t, uint32_t

  // ---- metadata ----
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t shape(int axis) const;
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  bool is_contiguous() const;
  const gpu::ContextPtr& context() const;
  // Whether this tensor and `other` are views of the same device storage.
  bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }
  std::string describe() const;  // "f32[3, 4]"

  // ---- views (no copies) ----
  Tensor reshape(const Shape& shape) const;  // one -1 allowed; copies only if not viewable
  Tensor permute(const std::vector<int>& axes) const;
  Tensor transpose(int a, int b) const;
  Tensor t() const;  // transpose of the last two axes
  Tensor slice(int axis, int64_t start, int64_t stop, int64_t step = 1) const;
  Tensor expand(const Shape& shape) const;  // numpy broadcasting of size-1 (and missing) axes
  Tensor unsqueeze(int axis) const;
  Tensor squeeze(int axis) const;
  Tensor contiguous() const;  // itself when already contiguous
  // Writes `src` (broadcast to this shape) into this tensor's elements, in place: the one op
  // that mutates. On a view it writes through to the viewed storage.
  void assign(const Tensor& src) const;
  Tensor clone() const;  // always a fresh contiguous copy
  // Lazy mode: computes this tensor now if it is a pending result (eager tensors: nothing).
  const Tensor& realize() const;
  Tensor cast(DType dtype) const;

  // ---- elementwise ----
  // neg, abs, exp, log, sqrt, rsqrt, sin, cos, tanh, sigmoid, relu, gelu (tanh form): the list in
  // unary_ops.inc
#define SURFGRAD_UNARY(name) Tensor name() const;
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY
  Tensor pow(double exponent) const;

  // ---- reductions (axes may be negative; empty = all axes) ----
  Tensor sum(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Tensor mean(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Tensor max(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Tensor min(const std::vector<int>& axes = {}, bool keepdim = false) const;
  Tensor argmax(int axis, bool keepdim = false) const;  // i32; first index of the maximum
  Tensor argmin(int axis, bool keepdim = false) const;
  Tensor logsumexp(const std::vector<int>& axes, bool keepdim = false) const;
  Tensor softmax(int axis) const;
  Tensor log_softmax(int axis) const;

  // ---- linear algebra ----
  Tensor matmul(const Tensor& other) const;

 private:
  friend struct TensorAccess;
  std::shared_ptr<Storage> storage_;
  Shape shape_, strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::f32;
};

// ---- binary ops with numpy broadcasting (same dtype on both sides; binary_ops.inc): add, sub,
// mul, div, pow, maximum, minimum; the comparisons eq, ne, lt, le, gt, ge give u32 masks (1 where
// true, 0 where false).
#define SURFGRAD_BINARY(name) Tensor name(const Tensor& a, const Tensor& b);
#define SURFGRAD_COMPARISON(name) SURFGRAD_BINARY(name)
#include "surfgrad/binary_ops.inc"
#undef SURFGRAD_COMPARISON
#undef SURFGRAD_BINARY
// where(mask, a, b): a where mask != 0, else b; all three broadcast together.
Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b);
// A 0-d tensor holding `value` in `like`'s dtype on `like`'s device (for scalar operands).
Tensor scalar_like(const Tensor& like, double value);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// matmul: 2-D, or batched with numpy-broadcast batch axes; 1-D operands are promoted as numpy.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- indexing ----
// index_select: picks entries `index` (i32, 1-D) along `axis`.
Tensor index_select(const Tensor& x, int axis, const Tensor& index);
// gather (torch semantics): out[..i..] = x[..index[..i..]..] along axis; index has x's rank.
Tensor gather(const Tensor& x, int axis, const Tensor& index);
// scatter_add: a copy of x with src added at index along axis (colliding indices all add).
Tensor scatter_add(const Tensor& x, int axis, const Tensor& index, const Tensor& src);
// index_add: a copy of x with src's slices added at rows `index` (1-D) along axis.
Tensor index_add(const Tensor& x, int axis, const Tensor& index, const Tensor& src);
Tensor concat(const std::vector<Tensor>& tensors, int axis);

// ---- lazy mode (issue 36) ----
// In lazy mode elementwise ops (unary, binary, where, cast, full, scalars) record instead of
// dispatching; a tree of them runs as one generated kernel when a value is needed: read
// (to_host), bound by another kernel (reductions, matmul, ...), realize(), or written in place.
// Results are the same bits as eager mode. On by default; set_lazy(false), SURFGRAD_EAGER=1 or
// SURFGRAD_LAZY=0 turn it off (eager: one dispatch an op). Process-wide: switch it between ops.
void set_lazy(bool on);
bool lazy_mode();
void realize(const std::vector<Tensor>& tensors);

// While one lives, this thread's ops run eagerly whatever set_lazy says (nestable). The map path
// (kNN, PCA, t-SNE, UMAP, their prewarm lists) runs under one: its kernels are compiled ahead by
// name (cold start), and its few elementwise ops gain nothing from fusion. Pending inputs are
// computed when an eager op reads them.
class EagerScope {
 public:
  EagerScope();
  ~EagerScope();
  EagerScope(const EagerScope&) = delete;
  EagerScope& operator=(const EagerScope&) = delete;
};

// ---- host helpers ----
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);

}  // namespace surfgrad
