// The panel kernel (SubgroupMatrixParams::pan): staged subgroup-matrix matmul whose operand loads
// Tint's robustness transform leaves alone, with one barrier a K step.
//
// Why: under robustness (always on in a browser) Tint predicates every subgroupMatrixLoad/Store
// whose array length, offset and stride are not all constants: `if (offset + 15·stride + 16 <=
// length) { v = load } else { v = zero }` through a function-scope variable (Dawn's
// core::ir::transform::Robustness, PredicateSubgroupMatrixCall). The staged kernel's offsets
// depend on the subgroup's id, so each of its loads was a branch and a spill; on the H200 it ran
// 77.7 TFLOP/s with robustness and 139.8 without at 4096³. Here workgroup memory is an array of
// per-subgroup panels, `as_: array<array<f16, AP>, 2·WM>` (one panel per subgroup row and
// buffer), and a subgroup loads from `&as_[ga]` (a pointer to one panel: its index is clamped
// with a min, no branch) at an offset and stride that are WGSL constants, so the length check is
// decided at compile time and no predicate is emitted. The same for B (`bs_`, one panel per
// subgroup column) and the epilogue's scratch (`cs_[sgi]`).
//
// Two buffers (ping-pong): step t's panels go to buffer t % 2, one barrier, then step t+1's
// global loads are issued into registers (ra_i / rb_j) while step t's MMAs run. One barrier a
// step suffices: an invocation writing buffer (t+1) % 2 in step t+1 has passed step t's barrier,
// which every invocation reached after its step t-1 MMAs (the last reads of that buffer).
//
// Needs vec4 staging (matmul_vec4_staging: K, N, strides and offsets multiples of 4); any M, N,
// K, batch and offsets within that (zeros past the edges, the result guarded by M and N).
#include <string>

#include "tensor/matmul_sgmat_detail.hpp"

namespace surfgrad::sgmat {

namespace {
std::string S(long v) { return std::to_string(v); }
}  // namespace

uint64_t panel_workgroup_bytes(const SubgroupMatrixParams& sm) {
  const uint64_t bm = uint64_t(sm.wm) * sm.tm * 16, bn = uint64_t(sm.wn) * sm.tn * 16, bkp = sm.bk + sm.pad;
  const uint64_t a = bm * bkp, b = sm.bt ? bn * bkp : uint64_t(sm.bk) * (bn + uint64_t(sm.wn) * sm.pad);
  return 2 * (a + b) * 2 + uint64_t(sm.wm * sm.wn) * 256 * 4;
}

// Register quads to buffer `buf`'s panels. A quad of A (row r of the block, K offset kq) goes to
// subgroup row r / SMR's panel; a quad of B (row k, columns n..n+3) to subgroup column n / SNC's
// (a quad never straddles two: SNC is a multiple of 16). The indices are written as `%` and `/`
// of lid-based values by constants so that Tint's integer range analysis (on in Dawn's SPIR-V
// path) can bound them, the last element of each quad included, and drop the clamps: the four
// 16-bit stores of a quad stay adjacent, which a driver may merge into one.
static std::string panel_stores(const Staging& st, bool bt) {
  std::string s;
  for (int i = 0; i < st.ca; ++i) {
    std::string r = "ra_" + S(i);
    s += "    { let e = lid + " + S(i) + "u * WG; " + (st.a_partial ? "if (e < BM * BK / 4u) " : "") +
         "{ let r = e / (BK / 4u); let g = buf * WM + r / SMR; let at = (r % SMR) * BKP + (e % (BK / 4u)) * 4u;\n"
         "      as_[g][at] = " +
         r + ".x; as_[g][at + 1u] = " + r + ".y; as_[g][at + 2u] = " + r + ".z; as_[g][at + 3u] = " + r + ".w; } }\n";
  }
  for (int j = 0; j < st.cb; ++j) {
    std::string r = "rb_" + S(j);
    s += "    { let e = lid + " + S(j) + "u * WG; " + (st.b_partial ? "if (e < BK * BN / 4u) " : "") +
         "{ let k = e / (BN / 4u); let nq = e % (BN / 4u); let g = buf * WN + nq / (SNC / 4u); "
         "let n = (nq % (SNC / 4u)) * 4u;\n";
    if (bt)  // n-major: column n's BK values contiguous, BKP apart
      s += "      let at = n * BKP + k;\n      bs_[g][at] = " + r + ".x; bs_[g][at + BKP] = " + r +
           ".y; bs_[g][at + 2u * BKP] = " + r + ".z; bs_[g][at + 3u * BKP] = " + r + ".w; } }\n";
    else
      s += "      let at = k * SNP + n;\n      bs_[g][at] = " + r + ".x; bs_[g][at + 1u] = " + r +
           ".y; bs_[g][at + 2u] = " + r + ".z; bs_[g][at + 3u] = " + r + ".w; } }\n";
  }
  return s;
}

std::string panel_kernel_wgsl(const SubgroupMatrixParams& sm, int sg) {
  const int nsg = sm.wm * sm.wn, smr = sm.tm * 16, snc = sm.tn * 16, bkp = sm.bk + sm.pad, snp = snc + sm.pad;
  const std::string ct = sm.c_f32 ? "f32" : "f16";
  std::string s = "enable chromium_experimental_subgroup_matrix;\n";
  s += "@group(0) @binding(0) var<storage, read_write> c: array<" + ct + ">;\n";
  s += "@group(0) @binding(1) var<storage, read> a: array<vec4<f16>>;\n";
  s += "@group(0) @binding(2) var<storage, read> b: array<vec4<f16>>;\n";
  s += "alias TA = subgroup_matrix_left<f16, 16, 16>;\nalias TB = subgroup_matrix_right<f16, 16, 16>;\n";
  s += "alias TC = subgroup_matrix_result<f32, 16, 16>;\n";
  s += "const BM = " + S(sm.wm * smr) + "u;\nconst BN = " + S(sm.wn * snc) + "u;\nconst BK = " + S(sm.bk) +
       "u;\nconst BKP = " + S(bkp) + "u;\nconst WM = " + S(sm.wm) + "u;\nconst WN = " + S(sm.wn) +
       "u;\nconst SMR = " + S(smr) + "u;\nconst SNC = " + S(snc) + "u;\nconst SNP = " + S(snp) +
       "u;\nconst WG = " + S(nsg * sg) + "u;\nconst SG = " + S(sg) + "u;\n";
  s += "var<workgroup> as_: array<array<f16, " + S(smr * bkp) + ">, " + S(2 * sm.wm) + ">;\n";
  s += "var<workgroup> bs_: array<array<f16, " + S(sm.bt ? snc * bkp : sm.bk * snp) + ">, " + S(2 * sm.wn) + ">;\n";
  s += "var<workgroup> cs_: array<array<f32, 256>, " + S(nsg) + ">;\n";
  s += kernel_prologue(sm, nsg * sg);
  s += "  let sgr = sgi / WN; let sgc = sgi % WN;\n";
  for (int i = 0; i < sm.tm; ++i)
    for (int j = 0; j < sm.tn; ++j) s += "  var acc_" + S(i) + "_" + S(j) + ": TC;\n";
  Staging st = staging_shape(sm, nsg * sg);
  for (int i = 0; i < st.ca; ++i) s += "  var ra_" + S(i) + ": vec4<f16>;\n";
  for (int j = 0; j < st.cb; ++j) s += "  var rb_" + S(j) + ": vec4<f16>;\n";
  s += quad_loads(st, "0u");
  s += "  for (var k0 = 0u; k0 < K; k0 += BK) {\n    let buf = (k0 / BK) % 2u;\n";
  s += panel_stores(st, sm.bt);
  s += "    workgroupBarrier();\n";
  s += quad_loads(st, "(k0 + BK)");
  s += "    let ga = buf * WM + sgr; let gb = buf * WN + sgc;\n";
  for (int kk = 0; kk < sm.bk; kk += 16) {
    // Offsets and strides as literals: constants to Tint, so its bounds check is decided at
    // compile time (off + 15·stride + 16 <= the panel's length holds for every tile).
    for (int i = 0; i < sm.tm; ++i)
      s += "    let a_" + S(kk) + "_" + S(i) + " = subgroupMatrixLoad<TA, row_major>(&as_[ga], " +
           S(i * 16 * bkp + kk) + "u, " + S(bkp) + "u);\n";
    for (int j = 0; j < sm.tn; ++j)
      s +=
          "    let b_" + S(kk) + "_" + S(j) +
          (sm.bt ? " = subgroupMatrixLoad<TB, col_major>(&bs_[gb], " + S(j * 16 * bkp + kk) + "u, " + S(bkp) + "u);\n"
                 : " = subgroupMatrixLoad<TB, row_major>(&bs_[gb], " + S(kk * snp + j * 16) + "u, " + S(snp) + "u);\n");
    for (int i = 0; i < sm.tm; ++i)
      for (int j = 0; j < sm.tn; ++j)
        s += "    acc_" + S(i) + "_" + S(j) + " = subgroupMatrixMultiplyAccumulate(a_" + S(kk) + "_" + S(i) + ", b_" +
             S(kk) + "_" + S(j) + ", acc_" + S(i) + "_" + S(j) + ");\n";
  }
  s += "  }\n";
  // Epilogue: each result tile through the subgroup's own scratch panel to C.
  s += "  let c_base = arg(12u) + tile.batch * M * N;\n";
  for (int i = 0; i < sm.tm; ++i)
    for (int j = 0; j < sm.tn; ++j) {
      s += "  subgroupMatrixStore<row_major>(&cs_[sgi], 0u, acc_" + S(i) + "_" + S(j) + ", 16u);\n";
      s += "  workgroupBarrier();\n";
      s += "  for (var e = lane; e < 256u; e += SG) {\n";
      s += "    let r = row0 + sgr * SMR + " + S(i * 16) + "u + e / 16u; let col = col0 + sgc * SNC + " + S(j * 16) +
           "u + e % 16u;\n";
      s += "    if (tile.valid && r < M && col < N) { c[c_base + r * N + col] = " + ct + "(cs_[sgi][e]); }\n";
      s += "  }\n  workgroupBarrier();\n";
    }
  s += "}\n";
  return s;
}

}  // namespace surfgrad::sgmat
