// The matmul ladder: every rung from a one-thread-per-workgroup kernel to tuned tiling, each
// with the conditions it needs and its validation tolerance. `surfgrad bench matmul` times them,
// tests/matmul_ladder_test.cpp checks each against the float64 reference.
#include <cmath>
#include <random>

#include "matmul_int8_sgmat.hpp"
#include "matmul_problem.hpp"
#include "matmul_subgroup_matrix.hpp"
#include "surfgrad/reference.hpp"

namespace surfgrad {

namespace {

// The 4×4 bodies of the int8 and subgroup rungs, unrolled: "v_i_j" names instead of arrays.
std::string int8_body() {
  auto S = [](int v) { return std::to_string(v); };
  std::string s;
  for (int i = 0; i < 16; ++i) s += "  var acc_" + S(i) + " = 0i;\n";
  s += "  for (var k = 0u; k < K4; k++) {\n";
  for (int i = 0; i < 4; ++i) s += "    let a_" + S(i) + " = a[min(r0 + " + S(i) + "u, M - 1u) * K4 + k];\n";
  for (int j = 0; j < 4; ++j) s += "    let b_" + S(j) + " = bt[min(c0 + " + S(j * 16) + "u, N - 1u) * K4 + k];\n";
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) s += "    acc_" + S(i * 4 + j) + " += dot4I8Packed(a_" + S(i) + ", b_" + S(j) + ");\n";
  s += "  }\n";
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      s += "  { let r = r0 + " + S(i) + "u; let col = c0 + " + S(j * 16) +
           "u; if (r < M && col < N) { c[r * N + col] = f32(acc_" + S(i * 4 + j) +
           ") * a_scale[r] * b_scale[col]; } }\n";
  return s;
}

std::string subgroup_body() {
  auto S = [](int v) { return std::to_string(v); };
  std::string s;
  for (int i = 0; i < 16; ++i) s += "  var acc_" + S(i) + " = 0.0;\n";
  s += "  for (var k0 = 0u; k0 < K; k0 += sg) {\n    let k = k0 + lane;\n";
  for (int i = 0; i < 4; ++i)
    s += "    var mine_" + S(i) + " = 0.0;\n    if (r0 + " + S(i) + "u < M && k < K) { mine_" + S(i) +
         " = f32(a[bases.x + (r0 + " + S(i) + "u) * a_rs + k * a_cs]); }\n";
  s += "    let steps = min(sg, K - k0);\n    for (var kk = 0u; kk < steps; kk++) {\n";
  for (int j = 0; j < 4; ++j)
    s += "      let b_" + S(j) + " = f32(b[bases.y + (k0 + kk) * b_rs + min(c0 + " + S(j) + "u, N - 1u) * b_cs]);\n";
  for (int i = 0; i < 4; ++i) {
    s += "      let a_" + S(i) + " = subgroupShuffle(mine_" + S(i) + ", kk);\n";
    for (int j = 0; j < 4; ++j)
      s += "      acc_" + S(i * 4 + j) + " = fma(a_" + S(i) + ", b_" + S(j) + ", acc_" + S(i * 4 + j) + ");\n";
  }
  s += "    }\n  }\n  if (!valid) { return; }\n  let c_base = arg(12u) + batch * M * N;\n";
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      s += "  if (r0 + " + S(i) + "u < M && c0 + " + S(j) + "u < N) { c[c_base + (r0 + " + S(i) + "u) * N + c0 + " +
           S(j) + "u] = {{T}}(acc_" + S(i * 4 + j) + "); }\n";
  return s;
}

// Runs `file` with C, A, B bound and tiles of tile_m × tile_n outputs per workgroup.
std::function<void()> simple(const MatmulProblem& p, const std::string& key, const char* file,
                             std::map<std::string, std::string> v, int64_t tile_m, int64_t tile_n,
                             int64_t tiles_per_group = 1) {
  auto kernel = matmul_program(p, "ladder|" + key, file, [&] { return v; }, false);
  int64_t tm = (p.M + tile_m - 1) / tile_m, tn = (p.N + tile_n - 1) / tile_n;
  uint64_t tiles = uint64_t(p.batches) * uint64_t(tm) * uint64_t(tn);
  uint64_t groups = (tiles + uint64_t(tiles_per_group) - 1) / uint64_t(tiles_per_group);
  return [=] { launch_matmul(p, kernel, p.meta, tm, tn, groups); };
}

std::string none(const MatmulProblem&) { return ""; }

MatmulVariant sgmat(const std::string& name, const std::string& what, SubgroupMatrixParams sm) {
  return {10,
          name,
          what,
          2e-3,
          [sm](const MatmulProblem& p) { return subgroup_matrix_unsupported(p, sm); },
          [sm](const MatmulProblem& p) { return subgroup_matrix_matmul(p, sm); }};
}

std::function<void()> naive(const MatmulProblem& p, int wg) {
  std::string w = std::to_string(wg);
  auto kernel =
      matmul_program(p, "ladder|naive" + w, "matmul_naive.wgsl", [&] { return kernels::Values{{"WG", w}}; }, false);
  uint64_t outputs = uint64_t(p.batches) * uint64_t(p.M) * uint64_t(p.N);
  return [=] { launch_matmul(p, kernel, p.meta, 0, 0, (outputs + uint64_t(wg) - 1) / uint64_t(wg)); };
}

std::string reg_inner(int tm, int tn, bool unrolled) {
  if (!unrolled)
    return "    for (var i = 0u; i < TM; i++) { av[i] = f32(a[bases.x + min(r0 + i, M - 1u) * a_rs + k * a_cs]); }\n"
           "    for (var j = 0u; j < TN; j++) { bv[j] = f32(b[bases.y + k * b_rs + min(c0 + j * 16u, N - 1u) * b_cs]); "
           "}\n"
           "    for (var i = 0u; i < TM; i++) {\n      for (var j = 0u; j < TN; j++) { acc[i * TN + j] = fma(av[i], "
           "bv[j], "
           "acc[i * TN + j]); }\n    }";
  std::string s;
  for (int i = 0; i < tm; ++i)
    s += "    av[" + std::to_string(i) + "] = f32(a[bases.x + min(r0 + " + std::to_string(i) +
         "u, M - 1u) * a_rs + k * a_cs]);\n";
  for (int j = 0; j < tn; ++j)
    s += "    bv[" + std::to_string(j) + "] = f32(b[bases.y + k * b_rs + min(c0 + " + std::to_string(j * 16) +
         "u, N - 1u) * b_cs]);\n";
  for (int i = 0; i < tm; ++i)
    for (int j = 0; j < tn; ++j) {
      std::string at = std::to_string(i * tn + j);
      s +=
          "    acc[" + at + "] = fma(av[" + std::to_string(i) + "], bv[" + std::to_string(j) + "], acc[" + at + "]);\n";
    }
  return s;
}

MatmulVariant reg(int rung, int tm, int tn, bool unrolled) {
  std::string name = "reg-" + std::to_string(tm) + "x" + std::to_string(tn) + (unrolled ? "-unrolled" : "-loops");
  return {rung,
          name,
          "register tiling, " + std::to_string(tm) + "×" + std::to_string(tn) + " outputs per thread" +
              (unrolled ? ", fully unrolled" : ", loops"),
          1e-5,
          none,
          [=](const MatmulProblem& p) {
            return simple(
                p, name, "matmul_reg.wgsl",
                {{"TM", std::to_string(tm)}, {"TN", std::to_string(tn)}, {"INNER", reg_inner(tm, tn, unrolled)}},
                16 * tm, 16 * tn);
          }};
}

MatmulVariant tiled(int rung, const std::string& name, const std::string& what, TiledParams params, double tol = 1e-5) {
  return {rung,
          name,
          what + " (" + params.str() + ")",
          tol,
          [=](const MatmulProblem& p) {
            if (params.f32_accumulate == false && p.dtype() != DType::f16) return std::string("needs f16 operands");
            return tiled_unsupported(*p.ctx, params, p.dtype());
          },
          [=](const MatmulProblem& p) { return std::function<void()>([p, params] { run_tiled(p, params); }); }};
}

// int8 rung: quantize A by rows and B by columns to int8 (symmetric, scale = max|x| / 127),
// pack four values per u32 along K, upload, and return the dispatch.
std::function<void()> int8_prepare(const MatmulProblem& p) {
  auto ctx = p.ctx;
  Int8Operands q = quantize_int8(p, 4, 1);
  int64_t k4 = q.k4;
  Tensor ta = q.qa, tb = q.qb, tsa = q.a_scale, tsb = q.b_scale;
  auto kernel = kernels::Program::generated(ctx, "ladder|int8", [&] {
    return kernels::fill_template(kernels::wgsl_source("matmul_int8.wgsl"), {{"BODY", int8_body()}});
  });
  int64_t tm = (p.M + 63) / 64, tn = (p.N + 63) / 64;
  kernels::Params meta = {p.M, p.N, k4, tm, tn};
  Tensor c = p.c;
  return [=] { kernel.launch({c, ta, tb, tsa, tsb}, meta, ctx->grid_for(uint64_t(tm * tn))); };
}

}  // namespace

const std::vector<MatmulVariant>& matmul_variants() {
  static const std::vector<MatmulVariant> variants = {
      {1, "naive", "one thread per workgroup, one output per thread", 1e-5, none,
       [](const MatmulProblem& p) { return naive(p, 1); }},
      {2, "1d-256", "256 threads per workgroup over a 1-D grid of outputs", 1e-5, none,
       [](const MatmulProblem& p) { return naive(p, 256); }},
      {3, "2d-x-columns", "16×16 workgroups, x along columns (coalesced B reads)", 1e-5, none,
       [](const MatmulProblem& p) {
         return simple(p, "2d-cols", "matmul_2d.wgsl", {{"ROW_LANE", "lid.y"}, {"COL_LANE", "lid.x"}}, 16, 16);
       }},
      {3, "2d-x-rows", "16×16 workgroups, x along rows (strided B reads)", 1e-5, none,
       [](const MatmulProblem& p) {
         return simple(p, "2d-rows", "matmul_2d.wgsl", {{"ROW_LANE", "lid.x"}, {"COL_LANE", "lid.y"}}, 16, 16);
       }},
      reg(4, 1, 4, false),
      reg(4, 4, 4, false),
      reg(5, 4, 4, true),
      reg(5, 8, 8, true),
      {6, "vec4-4x4", "vec4 loads of B and stores of C, 4×4 outputs per thread", 1e-5,
       [](const MatmulProblem& p) -> std::string {
         if (p.dtype() != DType::f32) return "f32 only";
         if (p.N % 4 || p.meta[9] != 1 || p.meta[8] % 4 || p.meta[11] % 4 || p.meta[12] % 4)
           return "needs contiguous B and N % 4 == 0";
         for (uint32_t d = 0; d < p.meta[13]; ++d)
           if (p.meta[30 + d] % 4) return "needs batch strides of B that are multiples of 4";
         return "";
       },
       [](const MatmulProblem& p) {
         auto kernel = matmul_program(p, "ladder|vec4", "matmul_vec4.wgsl", [] { return kernels::Values{}; }, false);
         int64_t tm = (p.M + 63) / 64, tn = (p.N + 63) / 64;
         uint64_t groups = uint64_t(p.batches * tm * tn);
         return std::function<void()>([=] { launch_matmul(p, kernel, p.meta, tm, tn, groups); });
       }},
      tiled(5, "direct-8x8", "8×8 per thread from the buffers, rows shared by a workgroup of 16 (CPU adapters' layout)",
            {8, 128, 0, 8, 8, false, 1, true}),
      tiled(7, "tiled-64", "workgroup-memory 2-D block tiling", {64, 64, 16, 4, 4, false, 1, true}),
      tiled(7, "tiled-128", "workgroup-memory 2-D block tiling, larger tiles", {128, 128, 8, 8, 8, false, 1, true}),
      tiled(7, "tiled-128-db", "block tiling, double-buffered (next step loaded during compute)",
            {128, 128, 8, 8, 8, true, 1, true}),
      {8, "subgroup-shuffle", "subgroupShuffle shares A across the lanes of a subgroup", 1e-5,
       [](const MatmulProblem& p) -> std::string {
         const auto& f = p.ctx->features();
         if (!f.subgroups) return "adapter has no subgroups";
         if (f.subgroup_min_size != f.subgroup_max_size || f.subgroup_min_size == 0 || 64 % f.subgroup_min_size)
           return "needs one known subgroup size dividing 64";
         return "";
       },
       [](const MatmulProblem& p) {
         int64_t sg = p.ctx->features().subgroup_min_size;
         std::string body = subgroup_body();
         std::string t = wgsl_type(p.dtype());
         for (size_t at; (at = body.find("{{T}}")) != std::string::npos;) body.replace(at, 5, t);
         return simple(p, "subgroup", "matmul_subgroup.wgsl", {{"BODY", body}}, 4, 4 * sg, 64 / sg);
       }},
      tiled(9, "f16-tiled", "f16 storage and f16 arithmetic (shader-f16)", {128, 128, 16, 8, 8, true, 1, false}, 1e-2),
      tiled(9, "f16-tiled-acc32", "f16 storage, f32 accumulation", {128, 128, 16, 8, 8, true, 1, true}, 2e-3),
      // Rung 10: tensor cores through Dawn's subgroup matrices (f16 operands, f32 accumulation),
      // from the probe's kernel to staged, several-subgroup workgroups (matmul_subgroup_matrix.cpp).
      sgmat("f16-sgmat-direct", "subgroup matrices from the buffers, 4x4 tiles of 16x16 a subgroup (the probe)",
            {4, 4, 1, 1, 32, false}),
      sgmat("f16-sgmat-staged", "subgroup matrices, A and B panels staged in workgroup memory, one subgroup",
            {4, 4, 1, 1, 32, true}),
      sgmat("f16-sgmat-2x2", "staged, 2x2 subgroups a workgroup (128x128 blocks)", {4, 4, 2, 2, 32, true}),
      sgmat("f16-sgmat-4x2", "staged, 4x2 subgroups a workgroup (256x128 blocks)", {4, 4, 4, 2, 16, true}),
      sgmat("f16-sgmat-pan",
            "staged in per-subgroup panels (loads Tint need not predicate), 2x4 subgroups of 4x4 tiles "
            "(128x256 blocks), bk 16, two buffers, one barrier a step (the evening sweep's best)",
            [] {
              SubgroupMatrixParams sm{4, 4, 2, 4, 16, true};
              sm.pad = 8, sm.db = true, sm.pan = true;
              return sm;
            }()),
      sgmat("f16-sgmat-pan-bk32",
            "the panels 32 deep a step in one buffer, two barriers a step (the night sweep's best; the default)",
            [] {
              SubgroupMatrixParams sm{4, 4, 2, 4, 32, true};
              sm.pad = 8, sm.db = true, sm.pan = true, sm.nb = 1;
              return sm;
            }()),
      // f32 through split f16 products on subgroup matrices (3 MMAs where f16 takes 1).
      {10, "f32-sgmat-split", "f32 as hi+lo f16 halves, Ahi.Bhi + Ahi.Blo + Alo.Bhi on subgroup matrices (direct 4x4)",
       1e-5, [](const MatmulProblem& p) { return subgroup_matrix_split_unsupported(p, {4, 4, 1, 1, 32, false}); },
       [](const MatmulProblem& p) { return subgroup_matrix_split_f32(p, {4, 4, 1, 1, 32, false}); }},
      {10, "f32-sgmat-split-staged", "f32 as hi+lo f16 halves on subgroup matrices, staged 4x2 tiles, 2x2 subgroups",
       1e-5,
       [](const MatmulProblem& p) {
         SubgroupMatrixParams sm{4, 2, 2, 2, 32, true};
         sm.pad = 8, sm.db = true;
         return subgroup_matrix_split_unsupported(p, sm);
       },
       [](const MatmulProblem& p) {
         SubgroupMatrixParams sm{4, 2, 2, 2, 32, true};
         sm.pad = 8, sm.db = true;
         return subgroup_matrix_split_f32(p, sm);
       }},
      {11, "int8-sgmat", "int8 on i8 subgroup matrices (16x16x32, i32 accumulation), 4x4 tiles from the buffers", 3e-2,
       int8_subgroup_matrix_unsupported, [](const MatmulProblem& p) { return int8_subgroup_matrix_prepare(p); }},
      {11, "int8-dot4", "int8 operands with dot4I8Packed and f32 scales (quantized per row/column)", 3e-2,
       [](const MatmulProblem& p) -> std::string {
         if (p.dtype() != DType::f32) return "takes f32 inputs to quantize";
         if (p.batches != 1) return "single matrices only";
         return "";
       },
       int8_prepare},
      tiled(12, "tiled-128-swizzle", "block tiling with tiles visited in groups of 8 tile rows",
            {128, 128, 8, 8, 8, false, 8, true}),
  };
  return variants;
}

}  // namespace surfgrad
