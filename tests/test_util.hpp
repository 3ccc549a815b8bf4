// Test helpers: one shared context, seeded fuzzing, a float64 host reference, and comparison
// that prints the first mismatches with their indices and the seed.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "surfgrad/tensor.hpp"

namespace sgtest {

using surfgrad::DType;
using surfgrad::Shape;
using surfgrad::Tensor;

// An environment variable set (or unset: nullptr) while it lives; what was there before is
// restored (tests of variants chosen through the environment).
struct EnvVar {
  std::string name, keep;
  bool had = false;
  EnvVar(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) had = true, keep = v;
    if (value)
      ::setenv(n, value, 1);
    else
      ::unsetenv(n);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;
  ~EnvVar() {
    if (had)
      ::setenv(name.c_str(), keep.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

inline const surfgrad::gpu::ContextPtr& ctx() {
  static auto c = surfgrad::gpu::Context::create({.quiet = true});
  return c;
}

// A context whose storage bindings hold 200 KiB, so that a few thousand points' kNN lists come
// in row blocks (list_blocks.hpp), as 10M points' do on a real GPU.
constexpr uint64_t kSmallBinding = 200 << 10;
inline const surfgrad::gpu::ContextPtr& small_binding_ctx() {
  static auto c = surfgrad::gpu::Context::create({.quiet = true, .max_binding_bytes = kSmallBinding});
  return c;
}

// A dense C-order float64 array on the host: the reference every kernel is compared with.
struct Ref {
  Shape shape;
  std::vector<double> v;
  int64_t numel() const { return int64_t(v.size()); }
};

inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t k = 1;
  for (size_t i = s.size(); i-- > 0;) st[i] = k, k *= s[i];
  return st;
}

inline std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> c(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    c[d] = s[d] ? i % s[d] : 0;
    i = s[d] ? i / s[d] : 0;
  }
  return c;
}

inline Ref read(const Tensor& t) {
  Ref r{t.shape(), {}};
  if (t.dtype() == DType::i32) {
    for (int32_t x : t.to_vector<int32_t>()) r.v.push_back(x);
  } else if (t.dtype() == DType::u32) {
    for (uint32_t x : t.to_vector<uint32_t>()) r.v.push_back(x);
  } else {
    for (float x : t.to_vector<float>()) r.v.push_back(x);
  }
  return r;
}

// Host values representable in `dtype` (f16 values are rounded to f16).
inline Ref random_ref(const Shape& shape, uint32_t seed, DType dtype, double lo = -2, double hi = 2) {
  std::mt19937 gen(seed);
  Ref r{shape, std::vector<double>(size_t(surfgrad::shape_numel(shape)))};
  for (auto& x : r.v) {
    if (dtype == DType::i32)
      x = double(std::uniform_int_distribution<int>(int(lo * 10), int(hi * 10))(gen));
    else if (dtype == DType::u32)
      x = double(std::uniform_int_distribution<int>(0, int(std::abs(hi) * 10) + 1)(gen));
    else
      x = std::uniform_real_distribution<double>(lo, hi)(gen);
    if (dtype == DType::f32) x = double(float(x));
    if (dtype == DType::f16) x = double(surfgrad::half_to_float(surfgrad::float_to_half(float(x))));
  }
  return r;
}

inline Tensor upload(const Ref& r, DType dtype) {
  size_t n = r.v.size();
  if (dtype == DType::f32) {
    std::vector<float> f(r.v.begin(), r.v.end());
    return Tensor::from_host(ctx(), f.data(), r.shape, dtype);
  }
  if (dtype == DType::f16) {
    std::vector<uint16_t> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = surfgrad::float_to_half(float(r.v[i]));
    return Tensor::from_host(ctx(), h.data(), r.shape, dtype);
  }
  if (dtype == DType::i32) {
    std::vector<int32_t> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = int32_t(r.v[i]);
    return Tensor::from_host(ctx(), x.data(), r.shape, dtype);
  }
  std::vector<uint32_t> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = uint32_t(r.v[i]);
  return Tensor::from_host(ctx(), x.data(), r.shape, dtype);
}

struct Tol {
  double atol, rtol;
};
inline Tol tol_for(DType d, double scale = 1) {
  if (d == DType::f16) return {2e-3 * scale, 4e-3 * scale};
  if (d == DType::f32) return {1e-5 * scale, 2e-5 * scale};
  return {0, 0};
}

// |got − want| ≤ atol + rtol·|want|, NaNs must match; prints the first 5 mismatches.
inline ::testing::AssertionResult close(const Ref& got, const Ref& want, Tol tol, const std::string& what) {
  if (got.shape != want.shape)
    return ::testing::AssertionFailure() << what << ": shape " << surfgrad::shape_str(got.shape) << " vs expected "
                                         << surfgrad::shape_str(want.shape);
  int bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < want.v.size(); ++i) {
    double g = got.v[i], w = want.v[i];
    bool ok = (std::isnan(w) && std::isnan(g)) || (std::isinf(w) && g == w) ||
              std::abs(g - w) <= tol.atol + tol.rtol * std::abs(w);
    if (!ok && bad++ < 5) {
      auto c = unravel(int64_t(i), want.shape);
      msg << "\n  at " << surfgrad::shape_str(c) << ": got " << g << ", want " << w;
    }
  }
  if (bad)
    return ::testing::AssertionFailure() << what << ": " << bad << " of " << want.v.size() << " mismatch" << msg.str();
  return ::testing::AssertionSuccess();
}

// Seeded shape fuzzing: sizes 1, primes and non-multiples of 16/64/256.
inline Shape random_shape(std::mt19937& gen, int min_rank, int max_rank, int64_t max_numel = 6000) {
  static const int64_t sizes[] = {1, 2, 3, 5, 7, 13, 17, 31, 33, 63, 65, 129, 257};
  int rank = std::uniform_int_distribution<int>(min_rank, max_rank)(gen);
  Shape s;
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) {
    int64_t d;
    do d = sizes[std::uniform_int_distribution<int>(0, 12)(gen)];
    while (n * d > max_numel && d > 1);
    s.push_back(d);
    n *= d;
  }
  return s;
}

// A shape that broadcasts against `s`: leading axes dropped, some axes set to 1.
inline Shape broadcast_partner(std::mt19937& gen, const Shape& s) {
  int drop = std::uniform_int_distribution<int>(0, int(s.size()))(gen);
  Shape p(s.begin() + drop, s.end());
  for (auto& d : p)
    if (std::uniform_int_distribution<int>(0, 2)(gen) == 0) d = 1;
  return p;
}

inline Shape broadcast(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Points in 8 Gaussian clusters in d dimensions (point i in cluster i mod 8; fixed seed): distinct
// distances, so kNN lists are well defined, and clusters a map should separate.
inline std::vector<float> clustered(int64_t n, int64_t d) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> centre(size_t(8 * d)), x(size_t(n * d));
  for (float& v : centre) v = 6 * g(rng);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) x[size_t(i * d + c)] = centre[size_t((i % 8) * d + c)] + g(rng);
  return x;
}

// Element of `r` at output coordinate `c` under broadcasting.
inline double at_broadcast(const Ref& r, const std::vector<int64_t>& c) {
  size_t lead = c.size() - r.shape.size();
  int64_t off = 0, k = 1;
  for (size_t d = r.shape.size(); d-- > 0;) {
    int64_t coord = r.shape[d] == 1 ? 0 : c[lead + d];
    off += coord * k;
    k *= r.shape[d];
  }
  return r.v[size_t(off)];
}

inline Ref map2(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  Ref out{broadcast(a.shape, b.shape), {}};
  int64_t n = surfgrad::shape_numel(out.shape);
  out.v.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    auto c = unravel(i, out.shape);
    out.v[size_t(i)] = f(at_broadcast(a, c), at_broadcast(b, c));
  }
  return out;
}

inline std::vector<DType> float_dtypes() {
  std::vector<DType> d = {DType::f32};
  if (ctx()->features().shader_f16) d.push_back(DType::f16);
  return d;
}

#define SG_SEEDED(seed) SCOPED_TRACE("seed " + std::to_string(seed))

// `f` must throw surfgrad::Error of `kind` whose message contains every one of `needles`
// (`what` names the case in failure messages).
template <typename F>
void expect_error(surfgrad::ErrorKind kind, F&& f, const std::vector<std::string>& needles, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no error";
  } catch (const surfgrad::Error& e) {
    EXPECT_EQ(e.kind(), kind) << what << ": " << e.what();
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << what << ": '" << n << "' not in: " << e.what();
  }
}

}  // namespace sgtest
