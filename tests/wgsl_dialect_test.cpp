// The naga -> Tint WGSL fix-ups (src/gpu/wgsl_dialect.cpp), and the subgroup-matrix matmul's
// generated WGSL parsed by Dawn's Tint where no adapter offers the feature (lavapipe): Tint
// parses the whole module before it refuses the extension, so a refusal that names the
// extension (and no syntax error) says the text parsed.
#include "gpu/impl.hpp"
#include "kernels/launch.hpp"
#include "tensor/matmul_subgroup_matrix.hpp"
#include "test_util.hpp"

using namespace surfgrad;

TEST(WgslDialect, EnablesHoistedAndSubgroupsAdded) {
  std::string out = gpu::dawn_wgsl(
      "enable f16;\nfn f() {}\n  enable chromium_experimental_subgroup_matrix;\n"
      "fn g(x: f32) -> f32 { return subgroupAdd(x); }\n");
  EXPECT_EQ(out.rfind("enable subgroups;\nenable f16;\nenable chromium_experimental_subgroup_matrix;\n", 0), 0u) << out;
  EXPECT_EQ(out.find("enable", 90), std::string::npos) << out;  // each directive once, at the top
  std::string plain = gpu::dawn_wgsl("fn f() -> u32 { return 1u; }\n");
  EXPECT_EQ(plain, "fn f() -> u32 { return 1u; }\n");
  std::string builtin = gpu::dawn_wgsl("@compute @workgroup_size(1) fn m(@builtin(subgroup_size) s: u32) {}\n");
  EXPECT_EQ(builtin.rfind("enable subgroups;\n", 0), 0u);
  std::string already = gpu::dawn_wgsl("enable subgroups;\nfn g(x: f32) -> f32 { return subgroupAdd(x); }\n");
  EXPECT_EQ(already.find("enable subgroups;", 1), std::string::npos) << already;
}

TEST(WgslDialect, SubgroupMatrixKernelParsesUnderDawn) {
  const auto& ctx = sgtest::ctx();
  if (gpu::api().implementation != gpu::WebGpuImplementation::Dawn)
    GTEST_SKIP() << "SURFGRAD_WEBGPU is not dawn (naga does not know the extension)";
  if (ctx->features().subgroup_matrix)
    GTEST_SKIP() << "the adapter offers subgroup matrices: the ladder test runs the kernels instead";
  if (!ctx->features().shader_f16) GTEST_SKIP() << "no shader-f16";
  for (bool staged : {false, true})
    for (bool vec4 : {false, true}) {
      SubgroupMatrixParams sm{4, 4, 2, 2, 32, staged};
      std::string wgsl = ctx->wgsl_preamble(true, true) +
                         kernels::fill_template(kernels::wgsl_source("common.wgsl"), {{"META_BINDING", "3"}}) +
                         kernels::fill_template(kernels::wgsl_source("matmul_common.wgsl"), {{"T", "f16"}}) +
                         subgroup_matrix_wgsl(sm, 32, vec4 && staged);
      try {
        ctx->kernel(wgsl, "main");
        ADD_FAILURE() << "Dawn compiled a subgroup-matrix kernel without the feature";
      } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("chromium_experimental_subgroup_matrix"), std::string::npos) << m;
        EXPECT_EQ(m.find("expected"), std::string::npos) << "a syntax error: " << m;
      }
    }
}
