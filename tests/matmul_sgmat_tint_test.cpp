// Every subgroup-matrix matmul configuration the GPU sweep times (subgroup_matrix_sweep(), plus
// the defaults' shapes), handed to Tint's own compiler (`tint`, the WGSL front end Dawn and
// Chromium use) with the feature allowed: no adapter here offers subgroup matrices, so this is
// where a generated kernel's types, template arguments (16×8 fragments, f16 results), pointer
// arguments and constant bounds are resolved before the GPU sees it. Dawn on lavapipe stops at
// the `enable` (NewKernelsParseUnderDawn: syntax only); Tint here checks the whole module.
// Skipped where no `tint` binary is on PATH (SURFGRAD_TINT names another). ~0.05 s a kernel.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "kernels/launch.hpp"
#include "tensor/matmul_subgroup_matrix.hpp"

using namespace surfgrad;

namespace {

std::string tint_binary() {
  const char* e = std::getenv("SURFGRAD_TINT");
  std::string t = e && *e ? e : "tint";
  return std::system(("command -v " + t + " >/dev/null 2>&1").c_str()) == 0 ? t : "";
}

// The module as the matmul launch builds it (context preamble, common.wgsl, matmul_common.wgsl,
// the kernel), with Dawn's dialect: `enable subgroups;`, the kernel's `enable` lines first.
std::string module_text(const SubgroupMatrixParams& sm) {
  std::string kernel = subgroup_matrix_wgsl(sm, 32, true), enables = "enable f16;\nenable subgroups;\n";
  for (size_t at; (at = kernel.find("enable ")) != std::string::npos;) {
    size_t end = kernel.find('\n', at) + 1;
    enables += kernel.substr(at, end - at);
    kernel.erase(at, end - at);
  }
  return enables + kernels::fill_template(kernels::wgsl_source("common.wgsl"), {{"META_BINDING", "3"}}) +
         kernels::fill_template(kernels::wgsl_source("matmul_common.wgsl"), {{"T", "f16"}}) + kernel;
}

// "" when Tint compiles `wgsl`, else its diagnostics.
std::string tint_errors(const std::string& tint, const std::string& wgsl, const std::string& name) {
  std::string dir = ::testing::TempDir(), in = dir + "sgmat_" + name + ".wgsl", log = in + ".log";
  std::ofstream(in) << wgsl;
  int rc = std::system((tint + " --format wgsl -o /dev/null " + in + " >" + log + " 2>&1").c_str());
  std::ifstream f(log);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(log.c_str());
  if (rc != 0) return text.empty() ? "tint exited " + std::to_string(rc) : text.substr(0, 4000);
  std::remove(in.c_str());
  return "";
}

}  // namespace

TEST(SubgroupMatrixTint, SweepKernelsCompile) {
  std::string tint = tint_binary();
  if (tint.empty()) GTEST_SKIP() << "no tint on PATH (SURFGRAD_TINT): the sweep's WGSL is checked where one is";
  std::vector<SubgroupMatrixParams> configs = subgroup_matrix_sweep();
  int n = 0;
  for (const auto& sm : configs) {
    std::string err = tint_errors(tint, module_text(sm), std::to_string(n++));
    EXPECT_EQ(err, "") << sm.spec();
  }
  EXPECT_GE(n, 20);
}

// A kernel Tint must refuse (a 16×16 right operand against a 16×8 result), so that the test above
// cannot pass by Tint accepting anything.
TEST(SubgroupMatrixTint, CatchesATypeError) {
  std::string tint = tint_binary();
  if (tint.empty()) GTEST_SKIP() << "no tint on PATH";
  SubgroupMatrixParams sm;
  sm.pan = true, sm.db = true, sm.wm = 2, sm.wn = 2;
  std::string wgsl = module_text(sm);
  const std::string tc = "alias TC = subgroup_matrix_result<f32, 16, 16>;";
  size_t at = wgsl.find(tc);
  ASSERT_NE(at, std::string::npos) << "the kernel's result alias moved";
  wgsl.replace(at, tc.size(), "alias TC = subgroup_matrix_result<f32, 8, 16>;");
  EXPECT_NE(tint_errors(tint, wgsl, "bad").find("subgroupMatrixMultiplyAccumulate"), std::string::npos);
}
