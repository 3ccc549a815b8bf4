// GPU diagnostic for the subgroup-matrix exact kNN (issue 34): on the H200 under Dawn its lists
// held non-neighbours while the emulated builtins pass. This checks its pieces one at a time
// against the host and prints where and how they differ:
//  - prep: the f16 copies (row-major xh and transposed xt) against host rounding of s·(x − mean);
//  - products, three ways, each against float64 products of the device's own xh:
//      direct    one subgroup a workgroup, one 16×16 tile, stored straight to a global buffer;
//      block     256 invocations, two tiles a subgroup (by subgroup_id) into the workgroup tile
//                `prod`, then copied out by every invocation (the candidate kernel's compute
//                block without its stream);
//      kernel    the candidate kernel itself (knn_fused.wgsl on subgroup matrices), dumping the
//                products its selection reads.
//    All three use knn_sgmat_tile's code (the kNN's own load/MMA/store lines).
// A mismatch report names the first mismatches and tests patterns: zeros, tile transposed, only
// the first/last 16 dimensions, an operand transposed, another tile's values, doubled.
// Device only (skipped without subgroup matrices) unless SURFGRAD_KNN_DIAG_EMULATE=1, which runs
// the same checks on the emulated builtins (the diagnostic's own test, ~30 s on lavapipe).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/launch.hpp"
#include "kernels/subgroup_matrix_emulation.hpp"
#include "maps/knn_sgmat_internal.hpp"
#include "maps/knn_subgroup_matrix.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

std::string S(int64_t v) { return std::to_string(v); }

bool emulated_run() {
  const char* e = std::getenv("SURFGRAD_KNN_DIAG_EMULATE");
  return e && std::string(e) == "1";
}

// "" when the diagnostic runs here; else why not.
std::string why_skip() {
  if (emulated_run()) return knn_subgroup_matrix_unsupported(*ctx(), 16, {.emulate = true});
  if (std::string why = knn_subgroup_matrix_unsupported(*ctx(), 16); !why.empty())
    return why + " (SURFGRAD_KNN_DIAG_EMULATE=1 runs the diagnostic on emulated builtins)";
  return "";
}

std::vector<float> points(int64_t n, int64_t d, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> x(size_t(n * d));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t l = 0; l < d; ++l) x[size_t(i * d + l)] = g(gen) + 3.0f * float((i % 5) == (l % 5)) + 100.0f;
  return x;
}

// The standalone product kernels (direct, block) over all NPAD × NPAD products into `out`.
std::string standalone_wgsl(int dp, int sg, bool block, bool emulate) {
  std::string s =
      "enable chromium_experimental_subgroup_matrix;\n"
      "@group(0) @binding(0) var<storage, read_write> out: array<f32>;  // [NPAD, NPAD]\n"
      "@group(0) @binding(1) var<storage, read> x: array<f16>;          // [NPAD, DP]\n"
      "@group(0) @binding(2) var<storage, read> xt: array<f16>;         // [DP, NPAD]\n"
      "alias TA = subgroup_matrix_left<f16, 16, 16>;\nalias TB = subgroup_matrix_right<f16, 16, 16>;\n"
      "alias TC = subgroup_matrix_result<f32, 16, 16>;\nconst DP: u32 = " +
      S(dp) + "u;\n";
  if (block) s += "const BN: u32 = 64u;\nvar<workgroup> prod: array<f32, 4096>;\n";
  s += "@compute @workgroup_size(" + S(block ? 256 : sg) + ")\n";
  s += "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
       "        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sgi: u32) {\n"
       "  let NPAD = arg(0u); let g = linear_group(wid, nwg);\n";
  const std::string edge = block ? "64u" : "16u";
  s += "  let across = NPAD / " + edge + ";\n  if (g >= across * across) { return; }\n";
  s += "  let row0 = (g / across) * " + edge + "; let col0 = (g % across) * " + edge + ";\n";
  if (!block) {
    s += knn_sgmat_tile("0u", "0u", "subgroupMatrixStore<row_major>(&out, row0 * NPAD + col0, m, NPAD);");
  } else {
    const std::string store = "subgroupMatrixStore<row_major>(&prod, ti * 16u * BN + tj * 16u, m, BN);";
    const int groups = 256 / sg;
    if (emulate) {
      s += "  for (var tt = lid / " + S(sg) + "u; tt < 16u; tt += " + S(groups) + "u) {\n" +
           knn_sgmat_tile("tt / 4u", "tt % 4u", store) + "  }\n";
    } else {
      for (int u = 0; u < 16 / groups; ++u) {
        std::string tt = "(sgi * " + S(16 / groups) + "u + " + S(u) + "u)";
        s += knn_sgmat_tile(tt + " / 4u", tt + " % 4u", store);
      }
    }
    s += "  workgroupBarrier();\n  let ty = lid / 16u; let tx = lid % 16u;\n"
         "  for (var i = 0u; i < 4u; i++) { for (var j = 0u; j < 4u; j++) {\n"
         "    out[(row0 + ty * 4u + i) * NPAD + col0 + tx * 4u + j] = prod[(ty * 4u + i) * BN + tx * 4u + j];\n"
         "  } }\n";
  }
  s += "}\n";
  return emulate ? kernels::emulate_subgroup_matrix(s) : s;
}

// Host products of the device's f16 rows, in float64, with the pattern candidates.
struct HostProducts {
  int64_t np;
  int dp;
  std::vector<float> xh;  // [np, dp]
  std::vector<float> xr;  // [np, dp]: the residuals in f16 (split products)
  bool split = false;     // dot() of the whole rows is X̃_i·X̃_j + X̃_i·r̃_j + r̃_i·X̃_j
  double dot(int64_t i, int64_t j, int l0 = 0, int l1 = -1) const {
    double s = 0;
    for (int l = l0; l < (l1 < 0 ? dp : l1); ++l) {
      const size_t a = size_t(i * dp + l), b = size_t(j * dp + l);
      s += double(xh[a]) * double(xh[b]);
      if (split && l0 == 0 && l1 < 0) s += double(xh[a]) * double(xr[b]) + double(xr[a]) * double(xh[b]);
    }
    return s;
  }
  double norm(int64_t i) const { return std::sqrt(dot(i, i)); }
  // The product as if the right operand's 16×16 blocks were loaded transposed (col_major), and
  // the left's.
  double right_transposed(int64_t i, int64_t j) const {
    const int64_t c0 = j / 16 * 16, b = j % 16;
    double s = 0;
    for (int kk = 0; kk < dp; kk += 16)
      for (int k = 0; k < 16; ++k)
        s += double(xh[size_t(i * dp + kk + k)]) * double(xh[size_t((c0 + k) * dp + kk + b)]);
    return s;
  }
  double left_transposed(int64_t i, int64_t j) const {
    const int64_t r0 = i / 16 * 16, a = i % 16;
    double s = 0;
    for (int kk = 0; kk < dp; kk += 16)
      for (int k = 0; k < 16; ++k)
        s += double(xh[size_t((r0 + k) * dp + kk + a)]) * double(xh[size_t(j * dp + kk + k)]);
    return s;
  }
};

// Compares dev [np, np] (entries with row, col < limit) against the host products; prints a
// report and returns the mismatches.
int64_t compare_products(const std::string& what, const std::vector<float>& dev, const HostProducts& h, int64_t limit) {
  const int64_t np = h.np;
  std::vector<double> nrm(static_cast<size_t>(np));
  for (int64_t i = 0; i < np; ++i) nrm[size_t(i)] = h.norm(i);
  auto tol = [&](int64_t i, int64_t j) { return double(h.dp) * 0x1p-20 * nrm[size_t(i)] * nrm[size_t(j)] + 1e-3; };
  auto near = [&](double v, double want, int64_t i, int64_t j) { return std::fabs(v - want) <= tol(i, j); };
  int64_t bad = 0, checked = 0;
  double worst = 0;
  std::map<std::string, int64_t> pattern;
  int tile_bad[4][4] = {};
  std::map<std::pair<int64_t, int64_t>, int64_t> block_bad;  // by 64×64 block (workgroup rows, tile of points)
  std::string first;
  for (int64_t i = 0; i < limit; ++i)
    for (int64_t j = 0; j < limit; ++j) {
      const double want = h.dot(i, j), v = dev[size_t(i * np + j)];
      ++checked;
      const double err = std::fabs(v - want) / (nrm[size_t(i)] * nrm[size_t(j)] + 1e-30);
      if (std::isfinite(v)) worst = std::max(worst, err);
      if (std::isfinite(v) && near(v, want, i, j)) continue;
      ++bad;
      tile_bad[(i % 64) / 16][(j % 64) / 16]++;
      block_bad[{i / 64, j / 64}]++;
      if (bad <= 6) {
        char line[200];
        std::snprintf(line, sizeof line, "    [%lld, %lld] device %.6g host %.6g\n", (long long)i, (long long)j, v,
                      want);
        first += line;
      }
      const int64_t ti = i / 16 * 16, tj = j / 16 * 16, a = i % 16, b = j % 16;
      std::string p = "unexplained";
      if (!std::isfinite(v))
        p = "NaN/inf (unwritten?)";
      else if (v == 0)
        p = "zero";
      else if (ti + b < np && tj + a < np && near(v, h.dot(ti + b, tj + a), i, j))
        p = "tile transposed";
      else if (near(v, h.dot(i, j, 0, 16), i, j))
        p = "first 16 dims only";
      else if (near(v, h.dot(i, j, h.dp - 16), i, j))
        p = "last 16 dims only";
      else if (near(v, h.right_transposed(i, j), i, j))
        p = "right operand transposed";
      else if (near(v, h.left_transposed(i, j), i, j))
        p = "left operand transposed";
      else if (near(v, 2 * want, i, j))
        p = "doubled";
      else if (j >= 64 && near(v, h.dot(i, j - 64), i, j))
        p = "the previous tile's point";
      else if (j + 64 < np && near(v, h.dot(i, j + 64), i, j))
        p = "the next tile's point";
      else {
        const int64_t bi = i / 64 * 64, bj = j / 64 * 64;
        for (int u = 0; u < 4 && p == "unexplained"; ++u)
          for (int w = 0; w < 4; ++w) {
            const int64_t oi = bi + u * 16 + a, oj = bj + w * 16 + b;
            if ((oi != i || oj != j) && oi < np && oj < np && near(v, h.dot(oi, oj), i, j)) {
              p = "another tile's value (tile " + S(u) + "," + S(w) + " of the 64x64 block)";
              break;
            }
          }
      }
      pattern[p]++;
    }
  std::printf("  %s: %lld of %lld products differ (max error %.3g of |X_i||X_j|)\n", what.c_str(), (long long)bad,
              (long long)checked, worst);
  if (bad) {
    std::printf("%s    patterns:", first.c_str());
    for (const auto& [p, c] : pattern) std::printf(" %s %lld;", p.c_str(), (long long)c);
    std::printf("\n    bad entries by 16x16 tile of the 64x64 block (rows ti, columns tj):\n");
    for (int u = 0; u < 4; ++u)
      std::printf("      %8d %8d %8d %8d\n", tile_bad[u][0], tile_bad[u][1], tile_bad[u][2], tile_bad[u][3]);
    std::printf("    bad entries by 64x64 block (row block r: counts for point tiles 0, 1, ...):\n");
    for (int64_t r = 0; r * 64 < limit; ++r) {
      std::printf("      r%lld:", (long long)r);
      for (int64_t c = 0; c * 64 < limit; ++c) std::printf(" %lld", (long long)block_bad[{r, c}]);
      std::printf("\n");
    }
  }
  std::fflush(stdout);
  return bad;
}

// Checks xh and xt against host rounding; returns the mismatches.
int64_t compare_prep(const std::vector<float>& x, int64_t n, int64_t d, const KnnSgmatPrep& p,
                     const std::vector<float>& xh, const std::vector<float>& xt) {
  std::vector<float> mu = p.mean.to_vector<float>();
  int64_t bad_h = 0, bad_t = 0, ulp = 0;
  std::string first;
  for (int64_t j = 0; j < p.npad; ++j)
    for (int64_t l = 0; l < p.dp; ++l) {
      float want = 0;
      if (j < n && l < d) want = half_to_float(float_to_half((x[size_t(j * d + l)] - mu[size_t(l)]) * p.scale));
      const float h = xh[size_t(j * p.dp + l)], t = xt[size_t(l * p.npad + j)];
      if (h != want || t != want) {
        const bool one_ulp = std::fabs(double(h) - want) <= std::fabs(double(want)) * 0x1p-10 &&
                             std::fabs(double(t) - want) <= std::fabs(double(want)) * 0x1p-10;
        ulp += one_ulp;
        if (one_ulp) continue;
        bad_h += h != want;
        bad_t += t != want;
        if (bad_h + bad_t <= 8) {
          char line[200];
          std::snprintf(line, sizeof line, "    point %lld dim %lld: xh %.6g xt %.6g host %.6g%s\n", (long long)j,
                        (long long)l, h, t, want,
                        h == 0 || t == 0 ? " (zero)"
                        : (l ^ 1) < p.dp && j < n && (l ^ 1) < d && h != want
                            ? (xh[size_t(j * p.dp + (l ^ 1))] == want ? " (halves swapped?)" : "")
                            : "");
          first += line;
        }
      }
    }
  std::printf(
      "  prep: %lld xh and %lld xt values differ from host rounding (%lld within one f16 ulp, allowed); "
      "scale 2^%d, DP %d, NPAD %lld\n%s",
      (long long)bad_h, (long long)bad_t, (long long)ulp, int(std::log2(p.scale)), p.dp, (long long)p.npad,
      first.c_str());
  std::fflush(stdout);
  return bad_h + bad_t;
}

void diagnose(int64_t n, int64_t d, uint32_t seed) {
  const bool emulate = emulated_run();
  const int sg = int(ctx()->features().subgroup_min_size);
  std::printf("knn sgmat diag: n %lld d %lld (%s builtins, subgroup size %d)\n", (long long)n, (long long)d,
              emulate ? "emulated" : "device", sg);
  std::vector<float> x = points(n, d, seed);
  Tensor t = Tensor::from_vector(ctx(), x, {n, d});
  KnnSgmatPrep p = knn_sgmat_prep(t);
  HostProducts h{p.npad, p.dp, p.xh.to_vector<float>(), p.xr.to_vector<float>()};
  std::vector<float> xt = p.xt.to_vector<float>();
  EXPECT_EQ(compare_prep(x, n, d, p, h.xh, xt), 0) << "prep's f16 copies";

  for (bool block : {false, true}) {
    auto prog = kernels::Program::generated(
        ctx(), "knn_sgmat_diag|" + S(p.dp) + "|" + S(sg) + (block ? "|block" : "|direct") + (emulate ? "|emu" : ""),
        [&] { return standalone_wgsl(p.dp, sg, block, emulate); }, {.f16 = true, .subgroups = true});
    Tensor out = Tensor::full(ctx(), {p.npad, p.npad}, std::nan(""));
    const int64_t edge = block ? 64 : 16, groups = (p.npad / edge) * (p.npad / edge);
    prog.launch({out, p.xh, p.xt}, {p.npad}, kernels::groups_for(*ctx(), uint64_t(groups), 1));
    EXPECT_EQ(compare_products(block ? "block (8 subgroups, workgroup tile)" : "direct (one tile a subgroup)",
                               out.to_vector<float>(), h, p.npad),
              0);
  }

  // The candidate kernel, dumping its products (rows and points up to whole 64-blocks of N); as
  // the kNN runs it (the environment's variant), as it first passed on the H200
  // (knn_sgmat_internal.hpp: `plain`), with the experimental col_major right operands
  // (KnnSubgroupMatrixOptions::right_cols), and each layout/staging variant.
  const int kp = int(std::min<int64_t>(n - 1, 64));
  struct Case {
    std::string name;
    bool plain, right_cols;
    KnnSgmatVariant variant;
  };
  std::vector<Case> cases = {
      {"kernel (the candidate kernel's own products, " + knn_sgmat_variant().describe() + ")", false, false,
       knn_sgmat_variant()},
      {"kernel, plain (as first passed on the H200)", true, false, {false, 0, false}},
      {"kernel, right operands col_major from xh (experimental)", false, true, {false, 0, false}},
      {"kernel, blocked cells, pad 0, unstaged (before 2026-11-28)", false, false, {false, 0, false}},
      {"kernel, strided cells, pad 8, unstaged", false, false, {true, 8, false}},
      {"kernel, strided cells, pad 8, staged", false, false, {true, 8, true, false, 12, 10}},
      {"kernel, blocked cells, pad 8, staged", false, false, {false, 8, true, false, 12, 10}},
      {"kernel, blocked cells, pad 8, staged, split products", false, false, {false, 8, true, true, 12, 10}},
  };
  for (const Case& c : cases) {
    const KnnFusedShape shape = knn_sgmat_shape(c.variant);
    const bool staged = knn_sgmat_staged(*ctx(), c.variant, p.dp, c.plain, c.right_cols);
    const bool split = knn_sgmat_split(*ctx(), c.variant, p.dp, c.plain, c.right_cols);
    if (c.variant.staged != staged || c.variant.split != split) {
      std::printf("  %s: runs %s here (the panels do not fit this adapter's workgroup memory at DP %d)\n",
                  c.name.c_str(), staged ? "unsplit" : "unstaged", p.dp);
    }
    h.split = split;
    auto cand = knn_sgmat_candidate_program(ctx(), p.dp, sg, emulate, true, c.plain, true, c.right_cols, c.variant);
    Tensor dump = Tensor::full(ctx(), {p.npad, p.npad}, std::nan(""));
    Tensor ci = Tensor::empty(ctx(), {n, kp}, DType::i32), ck = Tensor::empty(ctx(), {n, kp});
    Tensor margin = Tensor::zeros(ctx(), {p.npad});  // read only where ks > 0 (not here)
    const kernels::Arg args[] = {ci, ck, p.xh, p.norms, knn_sgmat_points(p, staged), margin, dump};
    const kernels::Arg split_args[] = {ci, ck, p.xh, p.norms, knn_sgmat_points(p, staged), margin, p.xr, dump};
    knn_fused_dispatch(cand, split ? std::span<const kernels::Arg>(split_args) : std::span<const kernels::Arg>(args), n,
                       p.npad, kp, 0, n, shape);
    const int64_t bad = compare_products(c.name, dump.to_vector<float>(), h, (n + 63) / 64 * 64);
    if (!c.plain) {
      EXPECT_EQ(bad, 0) << c.name;
    }
  }
}

}  // namespace

TEST(KnnSgmatDiag, PrepAndProductsMatchHost) {
  if (std::string why = why_skip(); !why.empty()) GTEST_SKIP() << why;
  diagnose(200, 50, 1);  // DP 64: four k-steps, a ragged last block
  diagnose(130, 16, 2);  // DP 16: one k-step
  if (!emulated_run()) {
    diagnose(1000, 100, 3);  // DP 112
    diagnose(333, 7, 4);
  }
}
