// What the tile tests share (tiles_*_test.cpp): random tensors and sizes, a grid's block count,
// a host array as a reference, an error expected with words it must name, gradcheck of a
// one-output tile kernel, and the workgroup sizes every primitive is tried with (none a multiple
// of the others' tiles).
#pragma once
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "surfgrad/gradcheck.hpp"
#include "surfgrad/tiles.hpp"
#include "test_util.hpp"

namespace sgtest {

// A random f32 tensor with values uniform in [lo, hi).
inline surfgrad::Tensor rand_tensor(const surfgrad::Shape& s, uint32_t seed, double lo = -2, double hi = 2) {
  return upload(random_ref(s, seed, surfgrad::DType::f32, lo, hi), surfgrad::DType::f32);
}
inline int pick(std::mt19937& gen, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); }
// Blocks of `tile` that cover `extent`.
inline uint32_t blocks(int64_t extent, int tile) { return uint32_t((extent + tile - 1) / tile); }

inline sgtest::Ref ref_of(const surfgrad::HostArray& a) { return sgtest::Ref{a.shape(), a.values()}; }

inline void expect_error(const std::function<void()>& f, surfgrad::ErrorKind kind,
                         const std::vector<std::string>& words) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning " << words[0];
  } catch (const surfgrad::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << " in " << e.what();
  }
}

// The kernel's autograd op against float64 finite differences of its host reference.
inline void check_grad(const surfgrad::tiles::Kernel& k, const std::vector<surfgrad::Tensor>& inputs,
                       const surfgrad::Shape& out, surfgrad::tiles::Grid grid, const std::string& what) {
  auto f = [&](const auto& xs) { return k(xs, out, grid); };
  surfgrad::GradcheckResult r = surfgrad::gradcheck(f, inputs);
  EXPECT_TRUE(r.ok) << what << "\n" << r.report;
}

inline constexpr int kThreads[] = {1, 7, 32, 64, 96};

}  // namespace sgtest
