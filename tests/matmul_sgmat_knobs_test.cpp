// The panel kernel's sweep knobs (SubgroupMatrixParams nb, v8, il, acc16, n8;
// matmul_sgmat_panels.cpp). The ones that change indexing (one buffer, 8-half staging units,
// fragments loaded as used) run emulated against float64 here; acc16 and n8 change only types,
// which the emulation does not cover: Tint checks them (matmul_sgmat_tint_test.cpp) and the GPU
// sweep checks every configuration's products before timing it.
#include <cstdlib>

#include "gpu/impl.hpp"
#include "sgmat_test_util.hpp"
#include "tensor/matmul_subgroup_matrix.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

// All three indexing knobs in one kernel:
// bk 32 over one buffer, B n-major with 8-half units (the transposed stores), ragged M and N,
// N = 20 ending mid-unit, a batch with broadcast B, and K = 4 (one partial step).
TEST(SubgroupMatrixKnobs, IndexingKnobsMatchFloat64) {
  if (!ctx()->features().shader_f16 || !ctx()->features().subgroups)
    GTEST_SKIP() << "the emulation needs shader-f16 and subgroups";
  if (gpu::api().implementation == gpu::WebGpuImplementation::Dawn)
    GTEST_SKIP() << "checked under wgpu-native (the emulated kernel is the same text)";
  // lavapipe took 173 s over this kernel (2 cores shared, pipeline cache cold): too long for CI.
  if (!std::getenv("SURFGRAD_SGMAT_KNOB_TEST")) GTEST_SKIP() << "set SURFGRAD_SGMAT_KNOB_TEST=1 (~1-3 min)";
  SubgroupMatrixParams sm =
      parse_subgroup_matrix_spec("tm=1,tn=1,wm=1,wn=2,bk=32,pad=8,db=1,bt=1,pan=1,nb=1,v8=1,il=1,emulate=1");
  ASSERT_EQ(sm.nb, 1);
  ASSERT_TRUE(sm.v8 && sm.il && sm.bt && sm.pan);
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {{{37, 52}, {52, 44}}, {{2, 9, 36}, {36, 20}}, {{5, 4}, {4, 4}}};
  uint32_t seed = 70;
  for (const auto& c : cases) expect_sgmat_product(sm, c.a, c.b, ++seed);
}

// The knobs' spec round trip, and their refusals: knobs without pan=1, acc16 / n8 emulated,
// and an adapter without the needed config (lavapipe has none at all).
TEST(SubgroupMatrixKnobs, SpecsAndRefusals) {
  for (const char* spec : {"tm=4,tn=4,wm=2,wn=4,bk=16,staged=1,pad=8,db=1,sw=1,pan=1",
                           "tm=4,tn=8,wm=2,wn=2,bk=32,staged=1,pad=8,db=1,sw=8,pan=1,nb=1,acc16=1,n8=1,v8=1,il=1"})
    EXPECT_EQ(parse_subgroup_matrix_spec(spec).spec(), spec);
  EXPECT_THROW(parse_subgroup_matrix_spec("nb=3"), Error);
  EXPECT_NE(parse_subgroup_matrix_spec("acc16=1").str().find("/acc16"), std::string::npos);
  if (!ctx()->features().shader_f16 || !ctx()->features().subgroups) GTEST_SKIP() << "no shader-f16 or subgroups";
  Tensor a = upload(random_ref({64, 64}, 1, DType::f16, -1, 1), DType::f16);
  MatmulProblem p = make_problem(a, a);
  EXPECT_NE(subgroup_matrix_unsupported(p, parse_subgroup_matrix_spec("il=1,emulate=1")).find("pan=1"),
            std::string::npos);
  EXPECT_NE(subgroup_matrix_unsupported(p, parse_subgroup_matrix_spec("pan=1,acc16=1,emulate=1")).find("emulat"),
            std::string::npos);
  if (!ctx()->features().subgroup_matrix) {
    EXPECT_NE(subgroup_matrix_unsupported(p, parse_subgroup_matrix_spec("pan=1,n8=1")).find("no subgroup matrices"),
              std::string::npos);
  }
  // The sweep's configurations are all distinct (one ablation row each).
  std::vector<std::string> specs;
  for (const auto& sm : subgroup_matrix_sweep()) specs.push_back(sm.spec());
  std::sort(specs.begin(), specs.end());
  EXPECT_EQ(std::adjacent_find(specs.begin(), specs.end()), specs.end());
}
