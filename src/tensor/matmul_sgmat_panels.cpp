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
// The sweep's knobs (SubgroupMatrixParams nb, v8, il, acc16, n8) keep this structure: one buffer
// (a second barrier a step, room for deeper K steps), 8-half staging units, operand fragments
// loaded as used, f16 accumulators, 16×8×16 fragments.
//
// Needs vec4 staging (matmul_vec4_staging: K, N, strides and offsets multiples of 4); any M, N,
// K, batch and offsets within that (zeros past the edges, the result guarded by M and N).
#include <string>

#include "tensor/matmul_sgmat_detail.hpp"

namespace surfgrad::sgmat {

namespace {
std::string S(long v) { return std::to_string(v); }
}  // namespace

// The shape of a kernel's fragments and staging units (the knobs of the sweep).
struct PanelShape {
  int fn;          // result / right-operand fragment columns: 16, or 8 for the 16×8×16 config (n8)
  int nf;          // fragment columns a subgroup: tn·16 / fn
  int g;           // quads an invocation stages at once: 1, or 2 (v8: 8 consecutive halves)
  const char* at;  // accumulator type: f32, or f16 (acc16)
};
PanelShape panel_shape(const SubgroupMatrixParams& sm) {
  const int fn = sm.n8 ? 8 : 16;
  return {fn, sm.tn * 16 / fn, sm.v8 ? 2 : 1, sm.acc16 ? "f16" : "f32"};
}

uint64_t panel_workgroup_bytes(const SubgroupMatrixParams& sm) {
  const PanelShape ps = panel_shape(sm);
  const uint64_t bm = uint64_t(sm.wm) * sm.tm * 16, bn = uint64_t(sm.wn) * sm.tn * 16, bkp = sm.bk + sm.pad;
  const uint64_t a = bm * bkp, b = sm.bt ? bn * bkp : uint64_t(sm.bk) * (bn + uint64_t(sm.wn) * sm.pad);
  return uint64_t(sm.nb) * (a + b) * 2 + uint64_t(sm.wm * sm.wn) * 16 * ps.fn * (sm.acc16 ? 2 : 4);
}

namespace {

// Staging in units of G quads (G·4 consecutive halves of one row): UA units of A's BM × BK panel
// and UB of B's BK × BN a K step, unit e of a panel taken by invocation e % WG in round e / WG
// (consecutive invocations take consecutive units of a row, so the reads coalesce).
struct Units {
  int ca, cb;                 // rounds an invocation
  bool a_partial, b_partial;  // the last round covers only part of the panel
};
Units units(const SubgroupMatrixParams& sm, int g, int wg) {
  const int ua = sm.wm * sm.tm * 16 * sm.bk / (4 * g), ub = sm.bk * sm.wn * sm.tn * 16 / (4 * g);
  return {(ua + wg - 1) / wg, (ub + wg - 1) / wg, ua % wg != 0, ub % wg != 0};
}

// The WGSL that fills ra_i_q / rb_j_q with the units of the K step starting at `k0` (zeros past
// the matrices' edges; K and N are multiples of 4, so a quad is wholly in or out).
std::string unit_loads(const Units& u, int g, const std::string& k0) {
  const std::string G4 = S(4 * g) + "u";
  std::string s;
  for (int i = 0; i < u.ca; ++i) {
    s += "    { let e = lid + " + S(i) + "u * WG; let r = row0 + e / (BK / " + G4 + "); let k = " + k0 +
         " + (e % (BK / " + G4 + ")) * " + G4 + ";\n";
    for (int q = 0; q < g; ++q) {
      const std::string reg = "ra_" + S(i) + "_" + S(q), kq = q ? "k + " + S(4 * q) + "u" : "k";
      s += "      " + reg + " = vec4<f16>();\n      if (" + (u.a_partial ? "e < BM * BK / " + G4 + " && " : "") +
           "r < M && " + kq + " < K) { " + reg + " = a[(bases.x + r * a_rs + " + kq + ") / 4u]; }\n";
    }
    s += "    }\n";
  }
  for (int j = 0; j < u.cb; ++j) {
    s += "    { let e = lid + " + S(j) + "u * WG; let k = " + k0 + " + e / (BN / " + G4 +
         "); let col = col0 + (e % (BN / " + G4 + ")) * " + G4 + ";\n";
    for (int q = 0; q < g; ++q) {
      const std::string reg = "rb_" + S(j) + "_" + S(q), cq = q ? "col + " + S(4 * q) + "u" : "col";
      s += "      " + reg + " = vec4<f16>();\n      if (" + (u.b_partial ? "e < BK * BN / " + G4 + " && " : "") +
           "k < K && " + cq + " < N) { " + reg + " = b[(bases.y + k * b_rs + " + cq + ") / 4u]; }\n";
    }
    s += "    }\n";
  }
  return s;
}

// Register units to buffer `buf`'s panels. A unit of A (row r of the block) goes to subgroup row
// r / SMR's panel; a unit of B (row k, columns n..n+4G-1) to subgroup column n / SNC's (a unit
// never straddles two: SNC is a multiple of 16). The indices are written as `%` and `/` of
// lid-based values by constants so that Tint's integer range analysis (on in Dawn's SPIR-V path)
// can bound them, the last element of each unit included, and drop the clamps: the 16-bit stores
// of a unit stay adjacent, which a driver may merge.
std::string unit_stores(const Units& u, int g, bool bt) {
  const std::string G4 = S(4 * g) + "u";
  const char* comp[] = {".x", ".y", ".z", ".w"};
  std::string s;
  for (int i = 0; i < u.ca; ++i) {
    s += "    { let e = lid + " + S(i) + "u * WG; " + (u.a_partial ? "if (e < BM * BK / " + G4 + ") " : "") +
         "{ let r = e / (BK / " + G4 + "); let g = buf * WM + r / SMR; let at = (r % SMR) * BKP + (e % (BK / " + G4 +
         ")) * " + G4 + ";\n     ";
    for (int m = 0; m < 4 * g; ++m)
      s += " as_[g][at" + (m ? " + " + S(m) + "u" : "") + "] = ra_" + S(i) + "_" + S(m / 4) + comp[m % 4] + ";";
    s += " } }\n";
  }
  for (int j = 0; j < u.cb; ++j) {
    s += "    { let e = lid + " + S(j) + "u * WG; " + (u.b_partial ? "if (e < BK * BN / " + G4 + ") " : "") +
         "{ let k = e / (BN / " + G4 + "); let nq = e % (BN / " + G4 + "); let g = buf * WN + nq / (SNC / " + G4 +
         "); let n = (nq % (SNC / " + G4 + ")) * " + G4 + ";\n";
    // bt: n-major, column n's BK values contiguous, BKP apart
    s += bt ? "      let at = n * BKP + k;\n     " : "      let at = k * SNP + n;\n     ";
    for (int m = 0; m < 4 * g; ++m) {
      std::string off = m == 0 ? "" : bt ? " + " + S(m) + "u * BKP" : " + " + S(m) + "u";
      s += " bs_[g][at" + off + "] = rb_" + S(j) + "_" + S(m / 4) + comp[m % 4] + ";";
    }
    s += " } }\n";
  }
  return s;
}

// One K step's products from buffer `buf` (ga / gb: the subgroup's panels). Offsets and strides
// are literals: constants to Tint, so its bounds check is decided at compile time (off +
// 15·stride + 16 <= the panel's length holds for every fragment). il: B's fragments of a
// 16-deep slice first, then A's one at a time, each used at once (tn + 1 operand fragments live
// instead of tm + tn).
std::string step_products(const SubgroupMatrixParams& sm, const PanelShape& ps) {
  const int bkp = sm.bk + sm.pad, snp = sm.tn * 16 + sm.pad;
  std::string s;
  for (int kk = 0; kk < sm.bk; kk += 16) {
    auto a_load = [&](int i) {
      return "    let a_" + S(kk) + "_" + S(i) + " = subgroupMatrixLoad<TA, row_major>(&as_[ga], " +
             S(i * 16 * bkp + kk) + "u, " + S(bkp) + "u);\n";
    };
    auto mmas = [&](int i) {
      std::string m;
      for (int j = 0; j < ps.nf; ++j)
        m += "    acc_" + S(i) + "_" + S(j) + " = subgroupMatrixMultiplyAccumulate(a_" + S(kk) + "_" + S(i) + ", b_" +
             S(kk) + "_" + S(j) + ", acc_" + S(i) + "_" + S(j) + ");\n";
      return m;
    };
    if (!sm.il)
      for (int i = 0; i < sm.tm; ++i) s += a_load(i);
    for (int j = 0; j < ps.nf; ++j)
      s += "    let b_" + S(kk) + "_" + S(j) +
           (sm.bt
                ? " = subgroupMatrixLoad<TB, col_major>(&bs_[gb], " + S(j * ps.fn * bkp + kk) + "u, " + S(bkp) + "u);\n"
                : " = subgroupMatrixLoad<TB, row_major>(&bs_[gb], " + S(kk * snp + j * ps.fn) + "u, " + S(snp) +
                      "u);\n");
    for (int i = 0; i < sm.tm; ++i) s += (sm.il ? a_load(i) : "") + mmas(i);
  }
  return s;
}

}  // namespace

std::string panel_kernel_wgsl(const SubgroupMatrixParams& sm, int sg) {
  const PanelShape ps = panel_shape(sm);
  const int nsg = sm.wm * sm.wn, smr = sm.tm * 16, snc = sm.tn * 16, bkp = sm.bk + sm.pad, snp = snc + sm.pad;
  const std::string ct = sm.c_f32 ? "f32" : "f16", at = ps.at, fn = S(ps.fn);
  std::string s = "enable chromium_experimental_subgroup_matrix;\n";
  s += "@group(0) @binding(0) var<storage, read_write> c: array<" + ct + ">;\n";
  s += "@group(0) @binding(1) var<storage, read> a: array<vec4<f16>>;\n";
  s += "@group(0) @binding(2) var<storage, read> b: array<vec4<f16>>;\n";
  // Template arguments are (columns, rows): left M×K = <f16, 16, 16>, right K×FN, result M×FN.
  s += "alias TA = subgroup_matrix_left<f16, 16, 16>;\nalias TB = subgroup_matrix_right<f16, " + fn + ", 16>;\n";
  s += "alias TC = subgroup_matrix_result<" + at + ", " + fn + ", 16>;\n";
  s += "const BM = " + S(sm.wm * smr) + "u;\nconst BN = " + S(sm.wn * snc) + "u;\nconst BK = " + S(sm.bk) +
       "u;\nconst BKP = " + S(bkp) + "u;\nconst WM = " + S(sm.wm) + "u;\nconst WN = " + S(sm.wn) +
       "u;\nconst SMR = " + S(smr) + "u;\nconst SNC = " + S(snc) + "u;\nconst SNP = " + S(snp) +
       "u;\nconst WG = " + S(nsg * sg) + "u;\nconst SG = " + S(sg) + "u;\nconst NB = " + S(sm.nb) + "u;\n";
  s += "var<workgroup> as_: array<array<f16, " + S(smr * bkp) + ">, " + S(sm.nb * sm.wm) + ">;\n";
  s += "var<workgroup> bs_: array<array<f16, " + S(sm.bt ? snc * bkp : sm.bk * snp) + ">, " + S(sm.nb * sm.wn) + ">;\n";
  s += "var<workgroup> cs_: array<array<" + at + ", " + S(16 * ps.fn) + ">, " + S(nsg) + ">;\n";
  s += kernel_prologue(sm, nsg * sg);
  s += "  let sgr = sgi / WN; let sgc = sgi % WN;\n";
  for (int i = 0; i < sm.tm; ++i)
    for (int j = 0; j < ps.nf; ++j) s += "  var acc_" + S(i) + "_" + S(j) + ": TC;\n";
  const Units u = units(sm, ps.g, nsg * sg);
  for (int i = 0; i < u.ca; ++i)
    for (int q = 0; q < ps.g; ++q) s += "  var ra_" + S(i) + "_" + S(q) + ": vec4<f16>;\n";
  for (int j = 0; j < u.cb; ++j)
    for (int q = 0; q < ps.g; ++q) s += "  var rb_" + S(j) + "_" + S(q) + ": vec4<f16>;\n";
  s += unit_loads(u, ps.g, "0u");
  s += "  for (var k0 = 0u; k0 < K; k0 += BK) {\n    let buf = (k0 / BK) % NB;\n";
  s += unit_stores(u, ps.g, sm.bt);
  s += "    workgroupBarrier();\n";
  s += unit_loads(u, ps.g, "(k0 + BK)");
  s += "    let ga = buf * WM + sgr; let gb = buf * WN + sgc;\n";
  s += step_products(sm, ps);
  // One buffer: every subgroup's reads of it end before the next step's stores.
  if (sm.nb == 1) s += "    workgroupBarrier();\n";
  s += "  }\n";
  // Epilogue: each result fragment through the subgroup's own scratch panel to C.
  s += "  let c_base = arg(12u) + tile.batch * M * N;\n";
  for (int i = 0; i < sm.tm; ++i)
    for (int j = 0; j < ps.nf; ++j) {
      s += "  subgroupMatrixStore<row_major>(&cs_[sgi], 0u, acc_" + S(i) + "_" + S(j) + ", " + fn + "u);\n";
      s += "  workgroupBarrier();\n";
      s += "  for (var e = lane; e < " + S(16 * ps.fn) + "u; e += SG) {\n";
      s += "    let r = row0 + sgr * SMR + " + S(i * 16) + "u + e / " + fn + "u; let col = col0 + sgc * SNC + " +
           S(j * ps.fn) + "u + e % " + fn + "u;\n";
      s += "    if (tile.valid && r < M && col < N) { c[c_base + r * N + col] = " + ct + "(cs_[sgi][e]); }\n";
      s += "  }\n  workgroupBarrier();\n";
    }
  s += "}\n";
  return s;
}

}  // namespace surfgrad::sgmat
