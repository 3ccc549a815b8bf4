// SURFGRAD_PROFILE: GPU time per kernel. The table counts every dispatch of every kernel, across
// the read-backs it makes when its query set fills, and goes to the named file when the context
// closes.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// A context made while SURFGRAD_PROFILE=value.
gpu::ContextPtr profiled_context(const std::string& value) {
  setenv("SURFGRAD_PROFILE", value.c_str(), 1);
  auto c = gpu::Context::create();
  unsetenv("SURFGRAD_PROFILE");
  return c;
}

// The dispatch count on the table's row for `label`, or −1.
long long dispatches_of(const std::string& table, const std::string& label) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);)
    if (line.size() > label.size() && line.compare(line.size() - label.size(), label.size(), label) == 0)
      return std::stoll(line);
  return -1;
}

}  // namespace

TEST(GpuProfile, CountsEveryDispatchPerKernelAcrossReadBacks) {
  if (!ctx()->features().timestamp_query) GTEST_SKIP() << "adapter has no timestamp queries";
  auto c = profiled_context("1");
  // Eager mode whatever SURFGRAD_LAZY says: lazy mode would fuse the adds 64 to a kernel, and
  // this counts the profiler's passes across a read-back, which needs 2,500 dispatches.
  const bool was_lazy = lazy_mode();
  set_lazy(false);
  Tensor a = Tensor::full(c, {1000}, 1.0), b = Tensor::full(c, {1000}, 2.0);
  // 2,500 adds: more than one query set's 2,048 passes, so the table spans a read-back.
  for (int i = 0; i < 2500; ++i) a = add(a, b);
  set_lazy(was_lazy);
  EXPECT_NEAR(a.to_vector<float>()[0], 5001.0, 1e-3);
  std::string table = c->profile_table();
  EXPECT_NE(table.find("GPU time per kernel"), std::string::npos) << table;
  // (the key names the operands as the vec4 path reads them: v = 4-wide, s = a broadcast scalar)
  EXPECT_EQ(dispatches_of(table, "values|add|a + b||vvv|f32f32f32"), 2500) << table;
  EXPECT_EQ(dispatches_of(table, "fill.wgsl|T=f32|VALUE=f32(arg_f32(2u) + f32(i) * arg_f32(3u))"), 2) << table;
  EXPECT_GT(dispatches_of(table, "all kernels"), 2501) << table;
  // Without the variable nothing is profiled.
  EXPECT_EQ(ctx()->profile_table(), "");
}

TEST(GpuProfile, WritesTheTableToTheNamedFileWhenTheContextCloses) {
  if (!ctx()->features().timestamp_query) GTEST_SKIP() << "adapter has no timestamp queries";
  std::string path = ::testing::TempDir() + "/surfgrad_profile.txt";
  std::filesystem::remove(path);
  {
    auto c = profiled_context(path);
    Tensor x = Tensor::full(c, {64, 64}, 0.5);
    EXPECT_NEAR(x.matmul(x).to_vector<float>()[0], 16.0, 1e-4);
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("matmul|"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("all kernels"), std::string::npos) << text.str();
}
