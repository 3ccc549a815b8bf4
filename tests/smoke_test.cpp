#include <gtest/gtest.h>
#include "surfgrad/tensor.hpp"
TEST(Smoke, Add) {
  auto ctx = surfgrad::gpu::Context::create();
  auto a = surfgrad::Tensor::arange(ctx, 0, 10);
  auto v = (a + 1.0).to_vector<float>();
  EXPECT_EQ(v[3], 4.0f);
}
