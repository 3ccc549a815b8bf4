// What the tile tests share (tiles_test.cpp, tiles_cholesky_test.cpp): a host array as a
// reference, an error expected with words it must name, gradcheck of a one-output tile kernel,
// and the workgroup sizes every primitive is tried with (none a multiple of the others' tiles).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "surfgrad/gradcheck.hpp"
#include "surfgrad/tiles.hpp"
#include "test_util.hpp"

namespace sgtest {

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
