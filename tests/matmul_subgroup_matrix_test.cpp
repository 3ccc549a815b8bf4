// The subgroup-matrix matmul (src/tensor/matmul_subgroup_matrix.cpp) with its builtins emulated
// (SubgroupMatrixParams::emulate), on adapters without the feature: the staging, tile indexing,
// epilogue and edge guards of every rung's configuration against the float64 product on fuzzed
// shapes (sizes 1, primes, non-multiples of every block), batched, broadcast and transposed. On a
// GPU with subgroup matrices the ladder test (matmul_ladder_test.cpp) runs the real kernels.
#include "tensor/matmul_subgroup_matrix.hpp"

#include "gpu/impl.hpp"
#include "kernels/launch.hpp"
#include "sgmat_test_util.hpp"
#include "tensor/matmul_int8_sgmat.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

TEST(SubgroupMatrixEmulated, EveryRungMatchesFloat64) {
  if (!ctx()->features().shader_f16 || !ctx()->features().subgroups)
    GTEST_SKIP() << "the emulation needs shader-f16 and subgroups";
  // Small tiles: the emulation holds whole 16×16 tiles in each invocation, which lavapipe's
  // compiler takes minutes over at the rungs' 4×4 tiles. The indexing is the same code.
  const SubgroupMatrixParams rungs[] = {{1, 1, 1, 1, 16, false, true},
                                        {1, 1, 1, 1, 32, true, true},
                                        {1, 1, 2, 2, 16, true, true},
                                        {2, 1, 2, 1, 16, true, true}};
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  std::mt19937 gen(11);
  static const int64_t sizes[] = {1, 7, 16, 33, 100, 131};
  std::vector<Case> cases = {{{48, 48}, {48, 32}, false, false},  // whole blocks: the unstaged rung runs
                             {{2, 33, 20}, {20, 36}, false, false},
                             {{40, 24}, {48, 40}, true, true},
                             {{64, 32}, {32, 68}, false, false}};  // K, N multiples of 4: vec4 staging
  for (int i = 0; i < 2; ++i)
    cases.push_back({{sizes[gen() % 6], sizes[gen() % 6]}, {0, sizes[gen() % 6]}, false, false});
  int ran = 0;
  for (auto c : cases) {
    if (c.b[0] == 0) c.b[0] = c.a[1];
    for (const auto& sm : rungs) {
      uint32_t seed = gen();
      SG_SEEDED(seed);
      Tensor a = upload(random_ref(c.a, seed, DType::f16, -1, 1), DType::f16);
      Tensor b = upload(random_ref(c.b, seed + 1, DType::f16, -1, 1), DType::f16);
      if (c.ta) a = a.t();
      if (c.tb) b = b.t();
      MatmulProblem p = make_problem(a, b);
      if (!subgroup_matrix_unsupported(p, sm).empty()) continue;
      p.c.assign(scalar_like(p.c, NAN));
      subgroup_matrix_matmul(p, sm)();
      double err = matmul_error(p, 200, seed);
      EXPECT_LE(err, 2e-3) << sm.str() << " " << shape_str(a.shape()) << " @ " << shape_str(b.shape());
      for (float x : p.c.to_vector<float>()) ASSERT_FALSE(std::isnan(x)) << sm.str() << ": an output was not written";
      ++ran;
    }
  }
  EXPECT_GE(ran, 16);  // 19 of the 24 (shape, rung) pairs fit
}

// The panel kernel (pan=1: per-subgroup panels, constant-offset loads, two buffers and one
// barrier a K step) with its builtins emulated, against float64: odd and even step counts (the
// ping-pong's last buffer), partial blocks, a batch, B row-major and n-major, padded and not,
// bk 16 and 32, several subgroup rows and columns. A shape without vec4 staging is refused with
// the reason (the other configurations take it).
TEST(SubgroupMatrixEmulated, PanelKernelMatchesFloat64) {
  if (!ctx()->features().shader_f16 || !ctx()->features().subgroups)
    GTEST_SKIP() << "the emulation needs shader-f16 and subgroups";
  auto pan = [](int tm, int tn, int wm, int wn, int bk, int pad, bool bt) {
    SubgroupMatrixParams sm{tm, tn, wm, wn, bk, true, true};
    sm.pad = pad, sm.bt = bt, sm.pan = true;
    return sm;
  };
  // Two configurations, small tiles and shapes: lavapipe takes ~24 s to compile each emulated
  // kernel. Under Dawn only NewKernelsParseUnderDawn runs (the indexing is the same WGSL).
  if (gpu::api().implementation == gpu::WebGpuImplementation::Dawn)
    GTEST_SKIP() << "checked under wgpu-native (the emulated kernel is the same text)";
  const SubgroupMatrixParams configs[] = {pan(1, 1, 2, 2, 16, 8, false), pan(1, 1, 1, 2, 32, 0, true)};
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {{{37, 52}, {52, 44}},    // 4 steps of 16, 2 of 32; ragged M, N
                        {{2, 9, 36}, {36, 20}},  // batched, broadcast B; 3 steps of 16 (odd), 2 of 32
                        {{5, 4}, {4, 4}}};       // one partial step
  int ran = 0;
  uint32_t seed = 40;
  for (const auto& c : cases)
    for (const auto& sm : configs) {
      expect_sgmat_product(sm, c.a, c.b, ++seed);
      ++ran;
    }
  EXPECT_EQ(ran, 6);
  Tensor a = upload(random_ref({8, 7}, 1, DType::f16, -1, 1), DType::f16);
  Tensor b = upload(random_ref({7, 8}, 2, DType::f16, -1, 1), DType::f16);
  EXPECT_NE(subgroup_matrix_unsupported(make_problem(a, b), configs[0]).find("multiples of 4"), std::string::npos);
  EXPECT_EQ(parse_subgroup_matrix_spec(configs[1].spec()).pan, true) << configs[1].spec();
}

// f32 through split f16 halves (hi + lo) on the emulated kernel: f32-kernel accuracy against
// float64 (the f16 rungs' error is ~1e-4 on the same inputs), on a ragged shape (staged) and on
// whole blocks (direct).
TEST(SubgroupMatrixEmulated, SplitF32MatchesFloat64) {
  if (!ctx()->features().shader_f16 || !ctx()->features().subgroups)
    GTEST_SKIP() << "the emulation needs shader-f16 and subgroups";
  SubgroupMatrixParams staged{1, 1, 2, 2, 16, true, true};
  staged.pad = 8, staged.db = true;
  const SubgroupMatrixParams direct{1, 1, 2, 1, 16, false, true};
  struct Case {
    Shape a, b;
    SubgroupMatrixParams sm;
  };
  const Case cases[] = {{{37, 52}, {52, 44}, staged}, {{33, 20}, {20, 7}, staged}, {{64, 48}, {48, 32}, direct}};
  for (const auto& c : cases) {
    Tensor a = upload(random_ref(c.a, 5, DType::f32, -1, 1), DType::f32);
    Tensor b = upload(random_ref(c.b, 6, DType::f32, -1, 1), DType::f32);
    MatmulProblem p = make_problem(a, b);
    ASSERT_EQ(subgroup_matrix_split_unsupported(p, c.sm), "") << c.sm.str();
    p.c.assign(scalar_like(p.c, NAN));
    subgroup_matrix_split_f32(p, c.sm)();
    double err = matmul_error(p, 400, 3);
    EXPECT_LE(err, 2e-6) << c.sm.str() << " " << shape_str(c.a) << " @ " << shape_str(c.b);
    std::printf("split f32 %s %s: error %.2e\n", c.sm.str().c_str(), shape_str(c.a).c_str(), err);
  }
}

// The default's choice (subgroup_matrix_pick, with emulated configurations standing in for the
// adapter's feature): the first configuration that takes a shape runs it, against float64;
// shapes none takes (or too few blocks) are left to the tiled kernel. And where the adapter has
// no subgroup matrices (lavapipe), Tensor::matmul on f16 picks none and still matches float64.
TEST(SubgroupMatrixEmulated, DefaultChoiceOnFuzzedShapes) {
  if (!ctx()->features().shader_f16 || !ctx()->features().subgroups)
    GTEST_SKIP() << "the emulation needs shader-f16 and subgroups";
  const SubgroupMatrixParams direct{1, 1, 1, 1, 16, false, true};
  SubgroupMatrixParams staged{1, 1, 2, 2, 16, true, true};
  staged.bt = true, staged.pad = 8;  // B n-major, col_major loads (EveryRungMatchesFloat64 runs row-major)
  const std::vector<SubgroupMatrixParams> tries = {direct, staged};
  std::mt19937 gen(7);
  int direct_ran = 0, staged_ran = 0, none = 0;
  for (int i = 0; i < 10; ++i) {
    // Multiples of 16 half the time (the direct form), any size else.
    auto dim = [&] { return gen() % 2 ? int64_t(16 * (1 + gen() % 8)) : int64_t(1 + gen() % 130); };
    Shape sa = {dim(), dim()}, sb = {sa[1], dim()};
    uint32_t seed = gen();
    SG_SEEDED(seed);
    Tensor a = upload(random_ref(sa, seed, DType::f16, -1, 1), DType::f16);
    Tensor b = upload(random_ref(sb, seed + 1, DType::f16, -1, 1), DType::f16);
    MatmulProblem p = make_problem(a, b);
    EXPECT_FALSE(subgroup_matrix_choice(p).has_value()) << "lavapipe has no subgroup matrices";
    auto sm = subgroup_matrix_pick(p, tries, 4);
    if (!sm) {
      ++none;
      continue;
    }
    (sm->staged ? staged_ran : direct_ran)++;
    p.c.assign(scalar_like(p.c, NAN));
    subgroup_matrix_matmul(p, *sm)();
    EXPECT_LE(matmul_error(p, 200, seed), 2e-3) << sm->str() << " " << shape_str(sa) << " @ " << shape_str(sb);
  }
  std::printf("default choice: %d direct, %d staged, %d left to the tiled kernel\n", direct_ran, staged_ran, none);
  EXPECT_GT(direct_ran + staged_ran, 0);
  EXPECT_GT(none, 0);  // small shapes: fewer than 4 blocks
  // Tensor::matmul on f16 without the feature: the tiled kernel, same answer.
  Tensor a = upload(random_ref({70, 33}, 1, DType::f16, -1, 1), DType::f16);
  Tensor b = upload(random_ref({33, 41}, 2, DType::f16, -1, 1), DType::f16);
  MatmulProblem p = make_problem(a, b);
  p.c = a.matmul(b);
  EXPECT_LE(matmul_error(p, 200, 1), 2e-3);
}

// The kernels the emulation cannot stand in for, parsed by Dawn's Tint where no adapter offers
// the feature (as WgslDialect.SubgroupMatrixKernelParsesUnderDawn does for the f16 kernel): the
// col_major B loads (bt), the f32 result of the split-f16 path, the panel kernel (pointers to
// inner arrays) and the i8 kernel. A refusal that
// names the extension and no syntax error says the text parsed.
TEST(SubgroupMatrixWgsl, NewKernelsParseUnderDawn) {
  const auto& c = ctx();
  if (gpu::api().implementation != gpu::WebGpuImplementation::Dawn)
    GTEST_SKIP() << "SURFGRAD_WEBGPU is not dawn (naga does not know the extension)";
  if (c->features().subgroup_matrix) GTEST_SKIP() << "the adapter offers subgroup matrices: the ladder runs them";
  if (!c->features().shader_f16) GTEST_SKIP() << "no shader-f16";
  SubgroupMatrixParams bt{2, 2, 2, 4, 16, true};
  bt.bt = true, bt.pad = 8, bt.db = true;
  SubgroupMatrixParams c32{4, 4, 1, 1, 16, false};
  c32.c_f32 = true;
  SubgroupMatrixParams pan{4, 4, 2, 2, 16, true};
  pan.pad = 8, pan.bt = true, pan.pan = true;
  std::string common = kernels::fill_template(kernels::wgsl_source("common.wgsl"), {{"META_BINDING", "3"}});
  std::string mm = kernels::fill_template(kernels::wgsl_source("matmul_common.wgsl"), {{"T", "f16"}});
  const std::string kernels_[] = {
      c->wgsl_preamble(true, true) + common + mm + subgroup_matrix_wgsl(bt, 32, true),
      c->wgsl_preamble(true, true) + common + mm + subgroup_matrix_wgsl(bt, 32, false),
      c->wgsl_preamble(true, true) + common + mm + subgroup_matrix_wgsl(c32, 32, false),
      c->wgsl_preamble(true, true) + common + mm + subgroup_matrix_wgsl(pan, 32, true),
      c->wgsl_preamble(false, true) +
          kernels::fill_template(kernels::wgsl_source("common.wgsl"), {{"META_BINDING", "5"}}) +
          int8_subgroup_matrix_wgsl(32),
      c->wgsl_preamble(false, true) +
          kernels::fill_template(kernels::wgsl_source("common.wgsl"), {{"META_BINDING", "5"}}) +
          int8_subgroup_matrix_wgsl(32, false)};
  for (const auto& wgsl : kernels_) {
    try {
      c->kernel(wgsl, "main");
      ADD_FAILURE() << "Dawn compiled a subgroup-matrix kernel without the feature";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("chromium_experimental_subgroup_matrix"), std::string::npos) << m;
      EXPECT_EQ(m.find("expected"), std::string::npos) << "a syntax error: " << m;
    }
  }
}
