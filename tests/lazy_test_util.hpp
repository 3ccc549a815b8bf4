// Helpers the lazy-mode tests share (lazy_*_test.cpp): a scope that switches the mode, and the
// dispatches a piece of work records.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "surfgrad/tensor.hpp"
#include "test_util.hpp"

namespace sgtest {

// Lazy mode on or off for one scope, the previous mode after it.
struct LazyScope {
  bool previous;
  explicit LazyScope(bool on) : previous(surfgrad::lazy_mode()) { surfgrad::set_lazy(on); }
  ~LazyScope() { surfgrad::set_lazy(previous); }
};

// Dispatches `work` records, counted from an idle queue (sync first: nothing pending).
inline uint64_t dispatches_of(const std::function<void()>& work) {
  ctx()->sync();
  uint64_t before = ctx()->pending_dispatches();
  work();
  return ctx()->pending_dispatches() - before;
}

// Whether a fused kernel promises eager's bits on this backend. Through SPIR-V (Vulkan) each
// WGSL operation keeps its rounding; the GLES backend compiles GLSL ES, whose compilers may
// contract multiply-adds and reassociate arithmetic not marked precise (Mesa's NIR does), so two
// kernels summing the same terms in the same written order may round differently there: by the
// terms' magnitude, not the result's (llvmpipe's GLES: 1e-7 on a 0.025 sum of terms near 10).
inline bool fused_bits_promised() {
  const std::string& b = ctx()->info().backend;
  return b != "gles" && b != "opengl";  // wgpu-native names llvmpipe's GL backend "opengl"
}

// Equal bits where fused_bits_promised(), else within 1e-5 · (1 + |value|): float32 rounding of
// sums of a few terms of the same magnitude (a wrong term or operand lies far outside).
inline bool same_bits_or_close(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  if (x == y || (std::isnan(a) && std::isnan(b))) return true;
  if (fused_bits_promised()) return false;
  return std::abs(double(a) - double(b)) <= 1e-5 * (1.0 + std::max(std::abs(double(a)), std::abs(double(b))));
}

// Element-wise same_bits_or_close over lists of tensors' values; the first mismatches reported.
inline void expect_same_values(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                               const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  int reported = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    ASSERT_EQ(a[t].size(), b[t].size()) << what << " tensor " << t;
    for (size_t i = 0; i < a[t].size(); ++i)
      if (!same_bits_or_close(a[t][i], b[t][i]) && reported++ < 5)
        ADD_FAILURE() << what << ": tensor " << t << " element " << i << ": " << a[t][i] << " vs " << b[t][i];
  }
  EXPECT_EQ(reported, 0) << what;
}

}  // namespace sgtest
