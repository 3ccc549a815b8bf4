// The elementwise kernels' contiguous fast path (tensor/map_launch.cpp: vec4 loads where every
// operand is contiguous from a vec4 boundary or a broadcast scalar, n a multiple of 4) against
// host arithmetic, bit for bit, beside the cases that must fall back to the scalar kernel: n not
// a multiple of 4, offsets off a vec4 boundary, a view ending inside a buffer, i32, f16.
#include <cstring>

#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

std::vector<float> ramp(int64_t n, float scale, float shift) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i % 97) * scale + shift;
  return v;
}

void expect_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0) << what << " element " << i << ": " << got[i] << " vs " << want[i];
}

}  // namespace

TEST(MapVec4, ContiguousAndFallbackSizesMatchHost) {
  // Multiples of 4 (vec4 path; 16 elements a thread, so partial last threads) and not (fallback).
  for (int64_t n : {1, 3, 4, 8, 12, 60, 1024, 1028, 4097, 16388, 65536 + 4}) {
    std::vector<float> a = ramp(n, 0.37f, -3.f), b = ramp(n + 5, -1.3f, 0.25f);
    b.resize(size_t(n));
    Tensor ta = Tensor::from_vector(ctx(), a, {n}), tb = Tensor::from_vector(ctx(), b, {n});
    std::vector<float> sum(static_cast<size_t>(n)), scaled(static_cast<size_t>(n));
    for (size_t i = 0; i < size_t(n); ++i) {
      sum[i] = a[i] + b[i];
      scaled[i] = a[i] * 0.75f;
    }
    expect_bits((ta + tb).to_vector<float>(), sum, "add n=" + std::to_string(n));
    expect_bits((ta * 0.75).to_vector<float>(), scaled, "mul by a broadcast scalar n=" + std::to_string(n));
    expect_bits(ta.clone().to_vector<float>(), a, "copy n=" + std::to_string(n));
  }
}

TEST(MapVec4, ViewsOnAndOffVec4Boundaries) {
  const int64_t n = 40;
  std::vector<float> a = ramp(n, 0.5f, 1.f);
  Tensor t = Tensor::from_vector(ctx(), a, {n});
  // [start, stop): offsets 4 and 8 take the vec4 path, 2 and 3 fall back; stop 36 ends a view
  // inside its buffer (the binding is the whole buffer).
  for (auto [start, stop] : std::vector<std::pair<int64_t, int64_t>>{{4, 36}, {8, 40}, {2, 38}, {3, 39}, {0, 36}}) {
    Tensor v = t.slice(0, start, stop);
    std::vector<float> want;
    for (int64_t i = start; i < stop; ++i) want.push_back(a[size_t(i)] * 2.f + a[size_t(i)]);
    expect_bits((v * 2.0 + v).to_vector<float>(), want,
                "view [" + std::to_string(start) + ", " + std::to_string(stop) + ")");
    // Written in place through a view on and off the boundary.
    Tensor dst = Tensor::zeros(ctx(), {n + 4});
    dst.slice(0, start, stop).assign(v);
    std::vector<float> got = dst.to_vector<float>();
    for (int64_t i = 0; i < n + 4; ++i) {
      float w = i >= start && i < stop ? a[size_t(i)] : 0.f;
      ASSERT_EQ(got[size_t(i)], w) << "assign into [" << start << ", " << stop << ") element " << i;
    }
  }
}

// A buffer whose size is not a multiple of 16 bytes (10 floats) bound as vec4s: WebGPU binds it
// whole, the kernel reads only the view's first 8 elements.
TEST(MapVec4, BufferNotAMultipleOfAVec4) {
  std::vector<float> a = ramp(10, 1.5f, -2.f);
  Tensor t = Tensor::from_vector(ctx(), a, {10});
  std::vector<float> want;
  for (size_t i = 0; i < 8; ++i) want.push_back(a[i] * 2.f);
  expect_bits((t.slice(0, 0, 8) * 2.0).to_vector<float>(), want, "view [0, 8) of 10");
  want.clear();
  for (size_t i = 4; i < 8; ++i) want.push_back(a[i] * 2.f);
  expect_bits((t.slice(0, 4, 8) * 2.0).to_vector<float>(), want, "view [4, 8) of 10");
}

TEST(MapVec4, IntegersAndBroadcastRows) {
  const int64_t n = 4096;
  std::vector<int32_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    a[size_t(i)] = int32_t(i * 7 - 9000);
    b[size_t(i)] = int32_t(i % 13 - 6);
  }
  Tensor ta = Tensor::from_vector(ctx(), a, {n}), tb = Tensor::from_vector(ctx(), b, {n});
  std::vector<int32_t> got = (ta * tb).to_vector<int32_t>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[size_t(i)], a[size_t(i)] * b[size_t(i)]) << i;
  // A row broadcast over columns is strided (two axes after coalescing): the general kernel.
  std::vector<float> m = ramp(64 * 16, 0.1f, 0.f), row = ramp(16, 1.f, 0.5f);
  Tensor tm = Tensor::from_vector(ctx(), m, {64, 16}), tr = Tensor::from_vector(ctx(), row, {16});
  std::vector<float> out = (tm + tr).to_vector<float>();
  for (size_t i = 0; i < m.size(); ++i) ASSERT_EQ(out[i], m[i] + row[i % 16]) << i;
}
