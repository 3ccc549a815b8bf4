// Tensor core: dtypes, shapes, views, creation and host transfer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "internal.hpp"
#include "tensor/lazy.hpp"

namespace surfgrad {

size_t dtype_size(DType d) { return d == DType::f16 ? 2 : 4; }
const char* dtype_name(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::i32: return "i32";
    case DType::u32: return "u32";
  }
  return "?";
}
bool is_float(DType d) { return d == DType::f32 || d == DType::f16; }
const char* wgsl_type(DType d) { return dtype_name(d); }  // WGSL spells them the same way

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Every shape's element count, and its C-order strides, must fit int64: a shape built from a
// file or from arithmetic on user sizes is checked here rather than wrapping around (signed
// overflow is undefined behaviour). Zero-size axes count as 1 for the check, since the strides
// of [0, 2^40, 2^40] overflow although it holds nothing.
static int64_t checked_extent(const Shape& shape) {
  int64_t extent = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(ErrorKind::Shape, "shape " + shape_str(shape) + " has a negative size " + std::to_string(d));
    if (__builtin_mul_overflow(extent, std::max<int64_t>(d, 1), &extent))
      throw Error(ErrorKind::LimitExceeded, "shape " + shape_str(shape) +
                                                " has more elements than a 64-bit count holds; no device can hold it "
                                                "(check the sizes, e.g. a file's header or a reshape)");
  }
  return extent;
}

int64_t shape_numel(const Shape& shape) {
  checked_extent(shape);  // before any product that could overflow
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  checked_extent(shape);
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

void check_rank(const Shape& shape, const char* op) {
  if (shape.size() > kMaxRank)
    throw Error(ErrorKind::Shape, std::string(op) + ": shape " + shape_str(shape) + " has rank " +
                                      std::to_string(shape.size()) + "; surfgrad supports rank ≤ 8");
  for (int64_t d : shape)
    if (d < 0) throw Error(ErrorKind::Shape, std::string(op) + ": shape " + shape_str(shape) + " has a negative size");
}

int normalize_axis(int axis, int rank, const char* op) {
  int r = std::max(rank, 1);
  if (axis < -r || axis >= r)
    throw Error(ErrorKind::Shape, std::string(op) + ": axis " + std::to_string(axis) + " is out of range for rank " +
                                      std::to_string(rank) + " (valid: " + std::to_string(-r) + " to " +
                                      std::to_string(r - 1) + ")");
  return axis < 0 ? axis + r : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1)
      throw Error(ErrorKind::Shape, std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                                        " do not broadcast (axis " + std::to_string(i) + ": " + std::to_string(x) +
                                        " vs " + std::to_string(y) + "); sizes must match or be 1");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  Shape s(shape.size(), 0);
  size_t lead = shape.size() - t.shape().size();
  for (size_t i = 0; i < t.shape().size(); ++i) s[lead + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  return s;
}

void check_same_context(const Tensor& a, const Tensor& b, const char* op) {
  if (!a.defined() || !b.defined())
    throw Error(ErrorKind::Value, std::string(op) + ": an operand is an empty Tensor()");
  if (a.context() != b.context())
    throw Error(ErrorKind::Value, std::string(op) + ": operands live on different contexts; move one with from_host");
}

void check_f16_supported(const gpu::ContextPtr& ctx, DType dtype, const char* op) {
  if (dtype == DType::f16 && !ctx->features().shader_f16)
    throw Error(ErrorKind::Unsupported, std::string(op) + ": f16 tensors need shader-f16, which " + ctx->info().name +
                                            " does not offer; use f32");
}

// ---------------------------------------------------------------- metadata

int64_t Tensor::shape(int axis) const { return shape_[normalize_axis(axis, rank(), "shape")]; }

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

const gpu::ContextPtr& Tensor::context() const {
  if (!storage_) throw Error(ErrorKind::Value, "this Tensor is empty (default-constructed)");
  return storage_->ctx;
}

std::string Tensor::describe() const { return std::string(dtype_name(dtype_)) + shape_str(shape_); }

// ---------------------------------------------------------------- creation

Tensor Tensor::empty(const gpu::ContextPtr& ctx, const Shape& shape, DType dtype) {
  check_rank(shape, "empty");
  check_f16_supported(ctx, dtype, "empty");
  int64_t n = shape_numel(shape);
  auto storage = std::make_shared<Storage>();
  storage->ctx = ctx;
  uint64_t bytes = uint64_t(std::max<int64_t>(n, 1)) * dtype_size(dtype);
  if (n > int64_t(UINT32_MAX))
    throw Error(ErrorKind::LimitExceeded, "tensor " + std::string(dtype_name(dtype)) + shape_str(shape) + " has " +
                                              std::to_string(n) +
                                              " elements; kernels index with 32 bits (≤ 4294967295)");
  try {
    storage->buffer = ctx->alloc(bytes, "this tensor");
  } catch (const Error& e) {  // name the tensor only when it is needed: this is the hot path
    throw Error(e.kind(), "tensor " + std::string(dtype_name(dtype)) + shape_str(shape) + ": " + e.message());
  }
  storage->elements = n;
  return TensorAccess::make(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

static std::vector<uint32_t> scalar_bits(DType dtype, double v) {
  if (dtype == DType::i32) return {uint32_t(int32_t(v))};
  if (dtype == DType::u32) return {uint32_t(v)};
  return {f32_bits(float(v))};
}

static void fill(const Tensor& out, double start, double step) {
  auto ctx = out.context();
  DType d = out.dtype();
  std::string value;
  if (d == DType::i32)
    value = "arg_i32(2u) + i32(i) * arg_i32(3u)";
  else if (d == DType::u32)
    value = "arg(2u) + i * arg(3u)";
  else
    value = std::string(wgsl_type(d)) + "(arg_f32(2u) + f32(i) * arg_f32(3u))";
  auto fill =
      kernels::Program::file(ctx, "fill.wgsl", {{"T", wgsl_type(d)}, {"VALUE", value}}, {.f16 = d == DType::f16});
  int64_t n = out.numel();
  fill.launch({kernels::view(out)}, {n, out.offset(), scalar_bits(d, start)[0], scalar_bits(d, step)[0]},
              kernels::groups_for(*ctx, uint64_t(n), 256));
}

Tensor Tensor::full(const gpu::ContextPtr& ctx, const Shape& shape, double value, DType dtype) {
  Tensor t = empty(ctx, shape, dtype);
  fill(t, value, 0);
  return t;
}
Tensor Tensor::zeros(const gpu::ContextPtr& ctx, const Shape& shape, DType dtype) { return full(ctx, shape, 0, dtype); }
Tensor Tensor::ones(const gpu::ContextPtr& ctx, const Shape& shape, DType dtype) { return full(ctx, shape, 1, dtype); }

Tensor Tensor::arange(const gpu::ContextPtr& ctx, double start, double stop, double step, DType dtype) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw Error(ErrorKind::Value, "arange: start, stop and step must be finite and step non-zero");
  int64_t n = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
  Tensor t = empty(ctx, {n}, dtype);
  fill(t, start, step);
  return t;
}

// Lazy mode: a scalar operand is a parameter word of the kernel that reads it, no buffer. (Shaped
// full/zeros/ones stay eager: they are mostly written into, and allocation errors surface there.)
Tensor scalar_like(const Tensor& like, double value) {
  if (lazy_enabled()) return lazy_full(like.context(), {}, value, like.dtype());
  return Tensor::full(like.context(), {}, value, like.dtype());
}

Tensor Tensor::from_host(const gpu::ContextPtr& ctx, const void* data, const Shape& shape, DType dtype) {
  Tensor t = empty(ctx, shape, dtype);
  uint64_t bytes = uint64_t(t.numel()) * dtype_size(dtype);
  if (bytes) ctx->upload(*TensorAccess::buffer(t), data, bytes);
  return t;
}

template <typename T>
static Tensor from_vec(const gpu::ContextPtr& ctx, const std::vector<T>& data, const Shape& shape, DType dtype) {
  check_rank(shape, "from_vector");
  if (int64_t(data.size()) != shape_numel(shape))
    throw Error(ErrorKind::Shape, "from_vector: " + std::to_string(data.size()) + " values do not fill shape " +
                                      shape_str(shape) + " (" + std::to_string(shape_numel(shape)) + " elements)");
  return Tensor::from_host(ctx, data.data(), shape, dtype);
}
Tensor Tensor::from_vector(const gpu::ContextPtr& ctx, const std::vector<float>& d, const Shape& s) {
  return from_vec(ctx, d, s, DType::f32);
}
Tensor Tensor::from_vector(const gpu::ContextPtr& ctx, const std::vector<int32_t>& d, const Shape& s) {
  return from_vec(ctx, d, s, DType::i32);
}
Tensor Tensor::from_vector(const gpu::ContextPtr& ctx, const std::vector<uint32_t>& d, const Shape& s) {
  return from_vec(ctx, d, s, DType::u32);
}

void Tensor::to_host(void* data) const {
  Tensor c = contiguous();
  uint64_t bytes = uint64_t(numel()) * dtype_size(dtype_);
  auto& ctx = context();
  if (bytes)
    ctx->download(*TensorAccess::buffer(c), data, bytes, uint64_t(c.offset()) * dtype_size(dtype_));
  else
    ctx->sync();
  if (uint32_t faults = ctx->take_faults())
    throw Error(ErrorKind::Index, std::string("an index was out of range in ") +
                                      ((faults & 1)   ? "gather/index_select"
                                       : (faults & 4) ? "nn::cross_entropy's labels"
                                                      : "scatter_add/index_add") +
                                      " (detected on the GPU; out-of-range entries read as 0 and were not added). "
                                      "Indices must lie in [0, size of the indexed axis)");
}

gpu::PendingDownload Tensor::to_host_later() const {
  Tensor c = contiguous();
  return context()->download_later(*TensorAccess::buffer(c), uint64_t(numel()) * dtype_size(dtype_),
                                   uint64_t(c.offset()) * dtype_size(dtype_));
}

template <>
std::vector<float> Tensor::to_vector<float>() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  if (dtype_ == DType::f32) {
    to_host(out.data());
  } else if (dtype_ == DType::f16) {
    std::vector<uint16_t> h(out.size());
    to_host(h.data());
    for (size_t i = 0; i < h.size(); ++i) out[i] = half_to_float(h[i]);
  } else if (dtype_ == DType::i32) {
    std::vector<int32_t> v(out.size());
    to_host(v.data());
    for (size_t i = 0; i < v.size(); ++i) out[i] = float(v[i]);
  } else {
    std::vector<uint32_t> v(out.size());
    to_host(v.data());
    for (size_t i = 0; i < v.size(); ++i) out[i] = float(v[i]);
  }
  return out;
}

template <typename T>
static std::vector<T> to_int_vector(const Tensor& t, DType want) {
  if (t.dtype() != want)
    throw Error(ErrorKind::DType, std::string("to_vector: tensor is ") + dtype_name(t.dtype()) + ", asked for " +
                                      dtype_name(want) + "; use to_vector<float>() or cast first");
  std::vector<T> out(static_cast<size_t>(t.numel()));
  t.to_host(out.data());
  return out;
}
template <>
std::vector<int32_t> Tensor::to_vector<int32_t>() const {
  return to_int_vector<int32_t>(*this, DType::i32);
}
template <>
std::vector<uint32_t> Tensor::to_vector<uint32_t>() const {
  return to_int_vector<uint32_t>(*this, DType::u32);
}

// ---------------------------------------------------------------- views

Tensor Tensor::reshape(const Shape& shape_in) const {
  Shape shape = shape_in;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw Error(ErrorKind::Shape, "reshape: more than one -1 in " + shape_str(shape_in));
      infer = int(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) shape[infer] = known ? numel() / known : 0;
  check_rank(shape, "reshape");
  if (shape_numel(shape) != numel())
    throw Error(ErrorKind::Shape, "reshape: cannot view " + describe() + " (" + std::to_string(numel()) +
                                      " elements) as " + shape_str(shape_in));
  if (is_contiguous()) return TensorAccess::make(storage_, shape, contiguous_strides(shape), offset_, dtype_);
  return contiguous().reshape(shape);
}

Tensor Tensor::permute(const std::vector<int>& axes) const {
  if (int(axes.size()) != rank())
    throw Error(ErrorKind::Shape, "permute: " + std::to_string(axes.size()) + " axes given for " + describe());
  Shape s(axes.size()), st(axes.size());
  std::vector<bool> seen(axes.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int a = normalize_axis(axes[i], rank(), "permute");
    if (seen[a]) throw Error(ErrorKind::Shape, "permute: axis " + std::to_string(a) + " appears twice");
    seen[a] = true;
    s[i] = shape_[a];
    st[i] = strides_[a];
  }
  return TensorAccess::make(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::transpose(int a, int b) const {
  std::vector<int> axes(rank());
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[normalize_axis(a, rank(), "transpose")], axes[normalize_axis(b, rank(), "transpose")]);
  return permute(axes);
}

Tensor Tensor::t() const {
  if (rank() < 2) throw Error(ErrorKind::Shape, "t(): needs rank ≥ 2, got " + describe());
  return transpose(-2, -1);
}

Tensor Tensor::slice(int axis, int64_t start, int64_t stop, int64_t step) const {
  int a = normalize_axis(axis, rank(), "slice");
  if (step <= 0) throw Error(ErrorKind::Value, "slice: step must be positive, got " + std::to_string(step));
  int64_t n = shape_[a];
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::clamp<int64_t>(start, 0, n);
  stop = std::clamp<int64_t>(stop, start, n);
  Shape s = shape_, st = strides_;
  s[a] = (stop - start + step - 1) / step;
  st[a] = strides_[a] * step;
  return TensorAccess::make(storage_, s, st, offset_ + start * strides_[a], dtype_);
}

Tensor Tensor::expand(const Shape& shape) const {
  check_rank(shape, "expand");
  if (shape.size() < shape_.size())
    throw Error(ErrorKind::Shape, "expand: cannot expand " + describe() + " to fewer axes " + shape_str(shape));
  Shape st(shape.size(), 0);
  size_t lead = shape.size() - shape_.size();
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] == shape[lead + i])
      st[lead + i] = strides_[i];
    else if (shape_[i] != 1)
      throw Error(ErrorKind::Shape, "expand: " + describe() + " cannot expand to " + shape_str(shape) + " (axis " +
                                        std::to_string(i) + " has size " + std::to_string(shape_[i]) + ", not 1)");
  }
  return TensorAccess::make(storage_, shape, st, offset_, dtype_);
}

Tensor Tensor::unsqueeze(int axis) const {
  int a = axis < 0 ? axis + rank() + 1 : axis;
  if (a < 0 || a > rank())
    throw Error(ErrorKind::Shape, "unsqueeze: axis " + std::to_string(axis) + " out of range for " + describe());
  Shape s = shape_, st = strides_;
  s.insert(s.begin() + a, 1);
  st.insert(st.begin() + a, a < rank() ? strides_[a] * shape_[a] : 1);
  check_rank(s, "unsqueeze");
  return TensorAccess::make(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::squeeze(int axis) const {
  int a = normalize_axis(axis, rank(), "squeeze");
  if (shape_[a] != 1)
    throw Error(ErrorKind::Shape, "squeeze: axis " + std::to_string(axis) + " of " + describe() + " is not 1");
  Shape s = shape_, st = strides_;
  s.erase(s.begin() + a);
  st.erase(st.begin() + a);
  return TensorAccess::make(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(context(), shape_, dtype_);
  copy_into(*this, out);
  return out;
}

// ---------------------------------------------------------------- f16 on the host

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf / nan
  int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00u);  // overflow → inf
  if (e <= 0) {                                  // subnormal or zero, round to nearest even
    if (e < -10) return uint16_t(sign);
    mant |= 0x800000u;
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;  // may carry into the exponent: correct
  return uint16_t(half);
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        mant <<= 1;
        e++;
      } while (!(mant & 0x400u));
      x = sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace surfgrad
