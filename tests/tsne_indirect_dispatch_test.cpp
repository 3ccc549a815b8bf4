// t-SNE's FFT repulsion with and without indirect dispatches (SURFGRAD_INDIRECT_DISPATCH): where
// they are costly (Dawn validates each one) the kernels' transforms are recomputed every iteration
// with direct dispatches instead of only when the frame kernel finds them stale. The values must
// not change: bit for bit, over iterations whose grid spacing moves and stays.
#include <cstdlib>

#include "maps/tsne_repulsion.hpp"
#include "surfgrad/maps.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// Forces of a layout that grows step by step (the spacing moves at some steps, not at others).
std::vector<std::vector<float>> forces_over_steps(const char* indirect) {
  setenv("SURFGRAD_INDIRECT_DISPATCH", indirect, 1);
  TsneRepulsion r(ctx());
  Tensor base = Tensor::normal(ctx(), {3000, 2}, 7, 0, 1);
  std::vector<std::vector<float>> out;
  for (double scale : {1.0, 1.0, 1.1, 2.0, 2.0, 3.5}) {
    Tensor y = mul(base, scalar_like(base, scale)).contiguous();
    Tensor f = Tensor::empty(ctx(), {3000, 4});
    r.interpolated(y, f, 64);
    out.push_back(f.to_vector<float>());
  }
  unsetenv("SURFGRAD_INDIRECT_DISPATCH");
  return out;
}

}  // namespace

TEST(TsneIndirectDispatch, DirectRecomputationGivesTheSameForces) {
  auto indirect = forces_over_steps("1"), direct = forces_over_steps("0");
  ASSERT_EQ(indirect.size(), direct.size());
  for (size_t s = 0; s < indirect.size(); ++s) {
    ASSERT_EQ(indirect[s].size(), direct[s].size());
    size_t differ = 0;
    for (size_t i = 0; i < indirect[s].size(); ++i) differ += indirect[s][i] != direct[s][i];
    EXPECT_EQ(differ, 0u) << "step " << s;
  }
}
