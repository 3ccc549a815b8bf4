// f16 matmul on subgroup matrices (matmul_subgroup_matrix.hpp). A workgroup of wm × wn
// subgroups owns a BM × BN block of C (BM = wm·tm·16, BN = wn·tn·16); each subgroup owns tm × tn
// 16×16 result tiles, accumulated in f32 subgroup matrices. Staged: every BK step the workgroup
// copies A's BM × BK and B's BK × BN panels into workgroup memory (zeros past the edges, so any
// shape, stride, offset and batch works), and the subgroups load their 16×16 operands from there.
// Unstaged (the probe that measured 73 TFLOP/s on the H100): operands loaded straight from the
// buffers, so only whole blocks of contiguous matrices. Either way the result goes through a
// per-subgroup 16×16 f32 scratch in workgroup memory to C (f16), guarded by M and N.
#include "matmul_subgroup_matrix.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "kernels/launch.hpp"
#include "kernels/subgroup_matrix_emulation.hpp"
#include "tensor/matmul_sgmat_detail.hpp"

namespace surfgrad {

namespace {

constexpr int kTile = 16;  // the f16×f16→f32 16×16×16 configuration

std::string S(long v) { return std::to_string(v); }

// The adapter's f16 configuration the kernel needs: 16×16×16 (or 16×8×16 with n8), f32 results
// (or f16 with acc16).
bool has_f16_config(const gpu::Features& f, const SubgroupMatrixParams& sm) {
  const std::string result = sm.acc16 ? "f16" : "f32";
  const uint32_t n = sm.n8 ? 8 : 16;
  for (const auto& c : f.subgroup_matrix_configs)
    if (c.component == "f16" && c.result == result && c.m == 16 && c.n == n && c.k == 16) return true;
  return false;
}

int block_m(const SubgroupMatrixParams& sm) { return sm.wm * sm.tm * kTile; }
int block_n(const SubgroupMatrixParams& sm) { return sm.wn * sm.tn * kTile; }

uint64_t workgroup_bytes(const SubgroupMatrixParams& sm) {
  if (sm.pan) return sgmat::panel_workgroup_bytes(sm);
  uint64_t scratch = uint64_t(sm.wm * sm.wn) * kTile * kTile * 4;
  if (!sm.staged) return scratch;
  uint64_t b =
      sm.bt ? uint64_t(block_n(sm)) * uint64_t(sm.bk + sm.pad) : uint64_t(sm.bk) * uint64_t(block_n(sm) + sm.pad);
  return scratch + (uint64_t(block_m(sm)) * uint64_t(sm.bk + sm.pad) + b) * 2;
}

}  // namespace

// Staging, vec4 layouts (matmul_sgmat_detail.hpp): the workgroup's invocations each load CA quads of A's BM × BK panel
// and CB of B's BK × BN panel into registers (ra_i, rb_j: consecutive invocations take consecutive quads of a row, so
// the reads coalesce), then write them to as_ / bs_ (rows BKP / BNP apart). Split in two so that with `db` the next
// step's loads are in flight during this step's MMAs. K, N, the row strides and offsets are multiples of 4
// (matmul_vec4_staging): a quad is wholly inside or outside the matrix.
namespace sgmat {

Staging staging_shape(const SubgroupMatrixParams& sm, int wg) {
  int qa = block_m(sm) * sm.bk / 4, qb = sm.bk * block_n(sm) / 4;
  return {(qa + wg - 1) / wg, (qb + wg - 1) / wg, qa % wg != 0, qb % wg != 0};
}

std::string quad_loads(const Staging& st, const std::string& k0) {
  std::string s;
  for (int i = 0; i < st.ca; ++i)
    s += "    { let e = lid + " + S(i) + "u * WG; let r = row0 + e / (BK / 4u); let k = " + k0 +
         " + (e % (BK / 4u)) * 4u;\n      ra_" + S(i) + " = vec4<f16>();\n      if (" +
         (st.a_partial ? "e < BM * BK / 4u && " : "") + "r < M && k < K) { ra_" + S(i) +
         " = a[(bases.x + r * a_rs + k) / 4u]; } }\n";
  for (int j = 0; j < st.cb; ++j)
    s += "    { let e = lid + " + S(j) + "u * WG; let k = " + k0 +
         " + e / (BN / 4u); let col = col0 + (e % (BN / 4u)) * 4u;\n      rb_" + S(j) + " = vec4<f16>();\n      if (" +
         (st.b_partial ? "e < BK * BN / 4u && " : "") + "k < K && col < N) { rb_" + S(j) +
         " = b[(bases.y + k * b_rs + col) / 4u]; } }\n";
  return s;
}

// subgroup_id and subgroup_invocation_id, not local_invocation_index / SG: the subgroup a lane
// is really in, and a value the uniformity analysis knows to be uniform in its subgroup.
std::string kernel_prologue(const SubgroupMatrixParams& sm, int wg) {
  std::string s = "@compute @workgroup_size(" + S(wg) + ")\n";
  s += "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
       "        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sgi: u32,\n"
       "        @builtin(subgroup_invocation_id) lane: u32) {\n";
  s += "  let M = mm_m(); let N = mm_n(); let K = mm_k();\n";
  s += "  var tile = mm_locate(linear_group(wid, nwg));\n";
  if (sm.sw > 1)
    s += "  let rc = mm_tile(tile.row * arg(4u) + tile.col, arg(3u), arg(4u), " + S(sm.sw) +
         "u);\n  tile.row = rc.x; tile.col = rc.y;\n";
  s += "  let bases = mm_batch_bases(min(tile.batch, arg(5u) - 1u));\n";
  s += "  let a_rs = arg(6u); let a_cs = arg(7u); let b_rs = arg(8u); let b_cs = arg(9u);\n";
  s += "  let row0 = tile.row * BM; let col0 = tile.col * BN;\n";
  return s;
}

}  // namespace sgmat

namespace {

using sgmat::quad_loads;
using sgmat::Staging;
using sgmat::staging_shape;

// bt: B's panel stored transposed, n-major (column n's BK values contiguous, BKP apart), for
// col_major loads of the right operand.
std::string quad_stores(const Staging& st, bool bt) {
  std::string s;
  for (int i = 0; i < st.ca; ++i) {
    std::string r = "ra_" + S(i);
    s += "    { let e = lid + " + S(i) + "u * WG; " + (st.a_partial ? "if (e < BM * BK / 4u) " : "") +
         "{ let at = (e / (BK / 4u)) * BKP + (e % (BK / 4u)) * 4u;\n      as_[at] = " + r + ".x; as_[at + 1u] = " + r +
         ".y; as_[at + 2u] = " + r + ".z; as_[at + 3u] = " + r + ".w; } }\n";
  }
  for (int j = 0; j < st.cb && bt; ++j) {
    std::string r = "rb_" + S(j);
    s += "    { let e = lid + " + S(j) + "u * WG; " + (st.b_partial ? "if (e < BK * BN / 4u) " : "") +
         "{ let at = (e % (BN / 4u)) * 4u * BKP + e / (BN / 4u);\n      bs_[at] = " + r + ".x; bs_[at + BKP] = " + r +
         ".y; bs_[at + 2u * BKP] = " + r + ".z; bs_[at + 3u * BKP] = " + r + ".w; } }\n";
  }
  for (int j = 0; j < st.cb && !bt; ++j) {
    std::string r = "rb_" + S(j);
    s += "    { let e = lid + " + S(j) + "u * WG; " + (st.b_partial ? "if (e < BK * BN / 4u) " : "") +
         "{ let at = (e / (BN / 4u)) * BNP + (e % (BN / 4u)) * 4u;\n      bs_[at] = " + r + ".x; bs_[at + 1u] = " + r +
         ".y; bs_[at + 2u] = " + r + ".z; bs_[at + 3u] = " + r + ".w; } }\n";
  }
  return s;
}

// Staging, any layout: element by element, every invocation striding over the panels.
std::string scalar_staging(bool bt) {
  std::string b_at = bt ? "(e % BN) * BKP + e / BN" : "(e / BN) * BNP + e % BN";
  return std::string(R"(    for (var e = lid; e < BM * BK; e += WG) {
      let r = row0 + e / BK; let k = k0 + e % BK;
      var v = f16(0.0);
      if (r < M && k < K) { v = a[bases.x + r * a_rs + k * a_cs]; }
      as_[(e / BK) * BKP + e % BK] = v;
    }
    for (var e = lid; e < BK * BN; e += WG) {
      let k = k0 + e / BN; let col = col0 + e % BN;
      var v = f16(0.0);
      if (k < K && col < N) { v = b[bases.y + k * b_rs + col * b_cs]; }
      bs_[)") +
         b_at + R"(] = v;
    }
)";
}

}  // namespace

std::string SubgroupMatrixParams::str() const {
  return S(tm) + "x" + S(tn) + "/" + S(wm) + "x" + S(wn) + "/bk" + S(bk) + (staged ? "" : "/direct") +
         (pad ? "/pad" + S(pad) : "") + (db ? "/db" : "") + (bt ? "/bt" : "") + (pan ? "/pan" : "") +
         (sw > 1 ? "/sw" + S(sw) : "") + (nb != 2 ? "/nb" + S(nb) : "") + (acc16 ? "/acc16" : "") + (n8 ? "/n8" : "") +
         (v8 ? "/v8" : "") + (il ? "/il" : "") + (c_f32 ? "/c32" : "") + (emulate ? "/emulated" : "");
}

std::string SubgroupMatrixParams::spec() const {
  return "tm=" + S(tm) + ",tn=" + S(tn) + ",wm=" + S(wm) + ",wn=" + S(wn) + ",bk=" + S(bk) + ",staged=" + S(staged) +
         ",pad=" + S(pad) + ",db=" + S(db) + ",sw=" + S(sw) + (bt ? ",bt=1" : "") + (pan ? ",pan=1" : "") +
         (nb != 2 ? ",nb=" + S(nb) : "") + (acc16 ? ",acc16=1" : "") + (n8 ? ",n8=1" : "") + (v8 ? ",v8=1" : "") +
         (il ? ",il=1" : "") + (emulate ? ",emulate=1" : "");
}

SubgroupMatrixParams parse_subgroup_matrix_spec(const std::string& spec) {
  SubgroupMatrixParams sm;
  struct Key {
    const char* name;
    int lo, hi, step;
    std::function<void(int)> set;
  };
  const Key keys[] = {
      {"tm", 1, 8, 1, [&](int v) { sm.tm = v; }},          {"tn", 1, 8, 1, [&](int v) { sm.tn = v; }},
      {"wm", 1, 8, 1, [&](int v) { sm.wm = v; }},          {"wn", 1, 8, 1, [&](int v) { sm.wn = v; }},
      {"bk", 16, 128, 16, [&](int v) { sm.bk = v; }},      {"staged", 0, 1, 1, [&](int v) { sm.staged = v; }},
      {"pad", 0, 64, 1, [&](int v) { sm.pad = v; }},       {"db", 0, 1, 1, [&](int v) { sm.db = v; }},
      {"sw", 1, 64, 1, [&](int v) { sm.sw = v; }},         {"bt", 0, 1, 1, [&](int v) { sm.bt = v; }},
      {"pan", 0, 1, 1, [&](int v) { sm.pan = v; }},        {"nb", 1, 2, 1, [&](int v) { sm.nb = v; }},
      {"acc16", 0, 1, 1, [&](int v) { sm.acc16 = v; }},    {"n8", 0, 1, 1, [&](int v) { sm.n8 = v; }},
      {"v8", 0, 1, 1, [&](int v) { sm.v8 = v; }},          {"il", 0, 1, 1, [&](int v) { sm.il = v; }},
      {"emulate", 0, 1, 1, [&](int v) { sm.emulate = v; }}};
  size_t at = 0;
  while (at <= spec.size() && !spec.empty()) {
    size_t end = spec.find(',', at);
    std::string item = spec.substr(at, end == std::string::npos ? std::string::npos : end - at);
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const Key* k = nullptr;
    for (const auto& c : keys)
      if (key == c.name) k = &c;
    if (!k)
      throw Error(ErrorKind::Value,
                  "subgroup-matrix config '" + spec + "': unknown key '" + key +
                      "' (keys: tm tn wm wn bk staged pad db sw bt pan nb acc16 n8 v8 il emulate, as key=value)");
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (value.empty() || used != value.size() || v < k->lo || v > k->hi || (v - k->lo) % k->step)
      throw Error(ErrorKind::Value, "subgroup-matrix config '" + spec + "': " + key + "='" + value + "' is not " +
                                        (k->step > 1 ? "a multiple of " + S(k->step) + " " : "an integer ") + "in " +
                                        S(k->lo) + ".." + S(k->hi));
    k->set(v);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return sm;
}

std::string subgroup_matrix_unsupported(const MatmulProblem& p, const SubgroupMatrixParams& sm) {
  const gpu::Features& f = p.ctx->features();
  if (sm.emulate && !f.subgroups) return "emulation: the adapter has no subgroups";
  if (sm.emulate && !f.shader_f16) return "emulation: the adapter has no shader-f16";
  if (!sm.emulate && !f.subgroup_matrix)
    return "no subgroup matrices on this device (Dawn's chromium-experimental-subgroup-matrix: run with "
           "SURFGRAD_WEBGPU=dawn on a GPU that offers it)";
  if (p.dtype() != DType::f16) return "f16 operands only";
  if (p.c.dtype() != (sm.c_f32 ? DType::f32 : DType::f16)) return "the result's dtype differs from the kernel's";
  if ((sm.nb != 2 || sm.acc16 || sm.n8 || sm.v8 || sm.il) && !sm.pan)
    return "nb, acc16, n8, v8 and il are knobs of the panel kernel (pan=1)";
  if (sm.emulate && (sm.acc16 || sm.n8))
    return "emulation: only 16x16x16 fragments with f32 results are emulated (acc16 and n8 are checked by Tint "
           "and on the GPU)";
  if (!sm.emulate && !has_f16_config(f, sm))
    return std::string("the adapter has no f16xf16->") + (sm.acc16 ? "f16" : "f32") + " 16x" + (sm.n8 ? "8" : "16") +
           "x16 subgroup-matrix config";
  if (f.subgroup_min_size != f.subgroup_max_size || f.subgroup_min_size == 0)
    return "needs one known subgroup size (the adapter reports " + S(f.subgroup_min_size) + "-" +
           S(f.subgroup_max_size) + ")";
  if (uint64_t(sm.wm * sm.wn) * f.subgroup_min_size > p.ctx->limits().max_compute_invocations_per_workgroup)
    return "more invocations a workgroup than the adapter allows";
  if (workgroup_bytes(sm) > p.ctx->limits().max_compute_workgroup_storage_size)
    return S(long(workgroup_bytes(sm))) + " bytes of workgroup memory, more than the adapter's " +
           S(p.ctx->limits().max_compute_workgroup_storage_size);
  if (sm.bt && !sm.staged) return "bt (B stored n-major) needs staging";
  if (sm.pan && !sm.staged) return "pan (per-subgroup panels) needs staging";
  if (sm.pan && !matmul_vec4_staging(p))
    return "pan: K, N, the row strides and offsets must be multiples of 4 (vec4 staging)";
  if (sm.staged && matmul_vec4_staging(p)) {
    Staging st = staging_shape(sm, sm.wm * sm.wn * int(f.subgroup_min_size));
    if (st.ca + st.cb > 64)
      return "staging needs " + S(st.ca + st.cb) + " quads an invocation (at most 64): more subgroups or a smaller bk";
  }
  if (!sm.staged) {
    const auto& m = p.meta;
    if (p.batches != 1 || m[7] != 1 || m[9] != 1 || m[6] != p.K || m[8] != p.N)
      return "unstaged: contiguous row-major single matrices only";
    if (p.M % block_m(sm) || p.N % block_n(sm) || p.K % kTile)
      return "unstaged: M a multiple of " + S(block_m(sm)) + ", N of " + S(block_n(sm)) + ", K of 16";
  }
  return "";
}

static std::string kernel_wgsl(const SubgroupMatrixParams& sm, int sg, bool vec4_loads);
std::string subgroup_matrix_wgsl(const SubgroupMatrixParams& sm, int sg, bool vec4_loads) {
  std::string s = sm.pan ? sgmat::panel_kernel_wgsl(sm, sg) : kernel_wgsl(sm, sg, vec4_loads);
  return sm.emulate ? kernels::emulate_subgroup_matrix(s) : s;
}

static std::string kernel_wgsl(const SubgroupMatrixParams& sm, int sg, bool vec4_loads) {
  const int nsg = sm.wm * sm.wn;
  std::string s = "enable chromium_experimental_subgroup_matrix;\n";
  std::string elem = vec4_loads ? "vec4<f16>" : "f16";
  const std::string ct = sm.c_f32 ? "f32" : "f16";
  s += "@group(0) @binding(0) var<storage, read_write> c: array<" + ct + ">;\n";
  s += "@group(0) @binding(1) var<storage, read> a: array<" + elem + ">;\n";
  s += "@group(0) @binding(2) var<storage, read> b: array<" + elem + ">;\n";
  s += "alias TA = subgroup_matrix_left<f16, 16, 16>;\nalias TB = subgroup_matrix_right<f16, 16, 16>;\n";
  s += "alias TC = subgroup_matrix_result<f32, 16, 16>;\n";
  const bool pf = vec4_loads && sm.staged;  // staging through registers (ra_i, rb_j)
  s += "const BM = " + S(block_m(sm)) + "u;\nconst BN = " + S(block_n(sm)) + "u;\nconst BK = " + S(sm.bk) +
       "u;\nconst BKP = " + S(sm.bk + sm.pad) + "u;\nconst BNP = " + S(block_n(sm) + sm.pad) +
       "u;\nconst WG = " + S(nsg * sg) + "u;\nconst SG = " + S(sg) + "u;\n";
  if (sm.staged)
    s += "var<workgroup> as_: array<f16, BM * BKP>;\nvar<workgroup> bs_: array<f16, " +
         std::string(sm.bt ? "BN * BKP" : "BK * BNP") + ">;\n";
  s += "var<workgroup> cs_: array<f32, " + S(nsg * 256) + ">;\n";
  s += sgmat::kernel_prologue(sm, nsg * sg);
  s += "  let sr = (sgi / " + S(sm.wn) + "u) * " + S(sm.tm * kTile) + "u; let sc = (sgi % " + S(sm.wn) + "u) * " +
       S(sm.tn * kTile) + "u;\n";
  for (int i = 0; i < sm.tm; ++i)
    for (int j = 0; j < sm.tn; ++j) s += "  var acc_" + S(i) + "_" + S(j) + ": TC;\n";
  if (sm.staged) {
    Staging st = staging_shape(sm, nsg * sg);
    if (pf) {
      for (int i = 0; i < st.ca; ++i) s += "  var ra_" + S(i) + ": vec4<f16>;\n";
      for (int j = 0; j < st.cb; ++j) s += "  var rb_" + S(j) + ": vec4<f16>;\n";
    }
    // db: step k0's panels are already in registers; the loads of step k0 + BK go out after the
    // stores, before the MMAs (past the last step they read nothing: k >= K).
    if (pf && sm.db) s += quad_loads(st, "0u");
    s += "  for (var k0 = 0u; k0 < K; k0 += BK) {\n";
    if (!pf)
      s += scalar_staging(sm.bt);
    else if (!sm.db)
      s += quad_loads(st, "k0") + quad_stores(st, sm.bt);
    else
      s += quad_stores(st, sm.bt);
    s += "    workgroupBarrier();\n";
    if (pf && sm.db) s += quad_loads(st, "(k0 + BK)");
    for (int kk = 0; kk < sm.bk; kk += kTile) {
      for (int i = 0; i < sm.tm; ++i)
        s += "    let a_" + S(kk) + "_" + S(i) + " = subgroupMatrixLoad<TA, row_major>(&as_, (sr + " + S(i * kTile) +
             "u) * BKP + " + S(kk) + "u, BKP);\n";
      for (int j = 0; j < sm.tn; ++j)
        s += "    let b_" + S(kk) + "_" + S(j) +
             (sm.bt ? " = subgroupMatrixLoad<TB, col_major>(&bs_, (sc + " + S(j * kTile) + "u) * BKP + " + S(kk) +
                          "u, BKP);\n"
                    : " = subgroupMatrixLoad<TB, row_major>(&bs_, " + S(kk) + "u * BNP + sc + " + S(j * kTile) +
                          "u, BNP);\n");
      for (int i = 0; i < sm.tm; ++i)
        for (int j = 0; j < sm.tn; ++j)
          s += "    acc_" + S(i) + "_" + S(j) + " = subgroupMatrixMultiplyAccumulate(a_" + S(kk) + "_" + S(i) + ", b_" +
               S(kk) + "_" + S(j) + ", acc_" + S(i) + "_" + S(j) + ");\n";
    }
    s += "    workgroupBarrier();\n  }\n";
  } else {
    s += "  for (var k = 0u; k < K; k += 16u) {\n";
    for (int i = 0; i < sm.tm; ++i)
      s += "    let a_" + S(i) + " = subgroupMatrixLoad<TA, row_major>(&a, bases.x + (row0 + sr + " + S(i * kTile) +
           "u) * K + k, K);\n";
    for (int j = 0; j < sm.tn; ++j)
      s += "    let b_" + S(j) + " = subgroupMatrixLoad<TB, row_major>(&b, bases.y + k * N + col0 + sc + " +
           S(j * kTile) + "u, N);\n";
    for (int i = 0; i < sm.tm; ++i)
      for (int j = 0; j < sm.tn; ++j)
        s += "    acc_" + S(i) + "_" + S(j) + " = subgroupMatrixMultiplyAccumulate(a_" + S(i) + ", b_" + S(j) +
             ", acc_" + S(i) + "_" + S(j) + ");\n";
    s += "  }\n";
  }
  // Epilogue: each result tile through the subgroup's scratch to C, converted to f16.
  s += "  let c_base = arg(12u) + tile.batch * M * N;\n";
  for (int i = 0; i < sm.tm; ++i)
    for (int j = 0; j < sm.tn; ++j) {
      s += "  subgroupMatrixStore<row_major>(&cs_, sgi * 256u, acc_" + S(i) + "_" + S(j) + ", 16u);\n";
      s += "  workgroupBarrier();\n";
      s += "  for (var e = lane; e < 256u; e += SG) {\n";
      s += "    let r = row0 + sr + " + S(i * kTile) + "u + e / 16u; let col = col0 + sc + " + S(j * kTile) +
           "u + e % 16u;\n";
      s += "    if (tile.valid && r < M && col < N) { c[c_base + r * N + col] = " + ct + "(cs_[sgi * 256u + e]); }\n";
      s += "  }\n  workgroupBarrier();\n";
    }
  s += "}\n";
  return s;
}

std::function<void()> subgroup_matrix_matmul(const MatmulProblem& p, const SubgroupMatrixParams& sm) {
  if (std::string why = subgroup_matrix_unsupported(p, sm); !why.empty())
    throw Error(ErrorKind::Unsupported, "subgroup-matrix matmul " + sm.str() + ": " + why);
  int sg = int(p.ctx->features().subgroup_min_size);
  bool vec4 = sm.staged && matmul_vec4_staging(p);
  std::string key = "sgmat|" + sm.str() + "|sg" + S(sg) + (vec4 ? "|v4" : "");
  auto kernel = kernels::Program::generated(p.ctx, key,
                                            [&] {
                                              return kernels::fill_template(kernels::wgsl_source("matmul_common.wgsl"),
                                                                            {{"T", "f16"}}) +
                                                     subgroup_matrix_wgsl(sm, sg, vec4);
                                            },
                                            {.f16 = true, .subgroups = true});
  int64_t tm = (p.M + block_m(sm) - 1) / block_m(sm), tn = (p.N + block_n(sm) - 1) / block_n(sm);
  uint64_t groups = uint64_t(p.batches) * uint64_t(tm) * uint64_t(tn);
  MatmulProblem q = p;
  return [q, kernel, tm, tn, groups] { launch_matmul(q, kernel, q.meta, tm, tn, groups); };
}

MatmulVariant subgroup_matrix_variant(const SubgroupMatrixParams& sm) {
  return {10,
          "f16-sgmat:" + sm.spec(),
          "subgroup matrices, " + sm.str(),
          2e-3,
          [sm](const MatmulProblem& p) { return subgroup_matrix_unsupported(p, sm); },
          [sm](const MatmulProblem& p) { return subgroup_matrix_matmul(p, sm); }};
}

// The sweep of the panel kernel's knobs (issue 34, toward 0.5x cuBLAS). The first GPU sweeps
// (bench/results/2026-11-27-h200-dawn-sgmat-pan*.json) put 4x4 tiles on 2x4 subgroups (128x256
// blocks), bk 16, pad 8, two buffers first (149.8 / 155.3 TFLOP/s at 4096^3 / 8192^3); B n-major,
// one subgroup a workgroup and smaller tiles all lost, so they are dropped here. What is left
// untried: registers (f16 accumulators, fragments loaded as used, 4x8 tiles that f16 sums make
// room for), the 16x8x16 fragment, wider staging units (v8), one buffer with deeper K steps
// (bk 32 / 64 do not fit two buffers in 48 KiB at 128x256), padding on the winner. Each differs
// from the winner in one or two knobs, so the table reads as an ablation. ~30 configurations.
std::vector<SubgroupMatrixParams> subgroup_matrix_sweep() {
  std::vector<SubgroupMatrixParams> out;
  struct Knobs {
    int tm = 4, tn = 4, wm = 2, wn = 4, bk = 16, pad = 8, nb = 2, sw = 1;
    bool acc16 = false, n8 = false, v8 = false, il = false;
  };
  auto pan = [&](Knobs k) {
    SubgroupMatrixParams sm{k.tm, k.tn, k.wm, k.wn, k.bk, true};
    sm.pad = k.pad, sm.db = true, sm.pan = true, sm.sw = k.sw, sm.nb = k.nb;
    sm.acc16 = k.acc16, sm.n8 = k.n8, sm.v8 = k.v8, sm.il = k.il;
    out.push_back(sm);
  };
  pan({});  // the default (the winner so far)
  pan({.il = true});
  pan({.v8 = true});
  pan({.v8 = true, .il = true});
  pan({.n8 = true});
  pan({.n8 = true, .il = true});
  pan({.acc16 = true});
  pan({.acc16 = true, .il = true});
  pan({.acc16 = true, .v8 = true, .il = true});
  pan({.nb = 1});
  pan({.nb = 1, .il = true});
  pan({.bk = 32, .nb = 1});
  pan({.bk = 32, .nb = 1, .il = true});
  pan({.bk = 32, .nb = 1, .v8 = true, .il = true});
  pan({.bk = 32, .nb = 1, .acc16 = true, .il = true});
  pan({.bk = 64, .pad = 8, .nb = 1, .il = true});  // ~57 KiB: skipped where 48 KiB is the limit
  pan({.pad = 16, .il = true});
  pan({.pad = 24, .il = true});
  pan({.sw = 8, .il = true});
  pan({.sw = 16, .v8 = true, .il = true});
  // Other block shapes: 256x128 (4x2 subgroups), 128x128 (2x2), and the 4x8 / 8x4 tiles that f16
  // accumulators leave registers for (32 fragments: 128 registers a lane in f16, 256 in f32).
  pan({.wm = 4, .wn = 2, .il = true});
  pan({.wm = 2, .wn = 2, .pad = 0, .il = true});
  pan({.wm = 2, .wn = 2, .pad = 0, .acc16 = true, .il = true});
  pan({.tn = 8, .wm = 2, .wn = 2, .acc16 = true, .il = true});
  pan({.tn = 8, .wm = 2, .wn = 2, .acc16 = true, .v8 = true, .il = true});
  pan({.tm = 8, .wm = 2, .wn = 2, .acc16 = true, .il = true});
  pan({.tn = 8, .wm = 2, .wn = 2, .il = true});           // f32: expected to spill, the register bound's check
  pan({.tm = 2, .tn = 4, .wm = 4, .wn = 4, .il = true});  // 16 subgroups, 512 invocations, 128x256
  // References: the direct kernel (the probe's) and the old staged kernel.
  out.push_back(SubgroupMatrixParams{4, 4, 1, 1, 16, false});
  SubgroupMatrixParams staged{2, 2, 2, 4, 16, true};
  staged.pad = 8, staged.db = true;
  out.push_back(staged);
  return out;
}

std::string subgroup_matrix_split_unsupported(const MatmulProblem& p, const SubgroupMatrixParams& sm) {
  if (p.dtype() != DType::f32) return "f32 operands only (split into f16 halves)";
  if (p.batches != 1) return "single matrices only";
  // Before the f16 stand-ins below: an adapter without shader-f16 refuses f16 tensors outright.
  if (!p.ctx->features().shader_f16) return "the adapter has no shader-f16 (the halves are f16)";
  MatmulProblem q =
      make_problem(Tensor::empty(p.ctx, {p.M, 3 * p.K}, DType::f16), Tensor::empty(p.ctx, {3 * p.K, p.N}, DType::f16));
  q.c = p.c;
  SubgroupMatrixParams s32 = sm;
  s32.c_f32 = true;
  return subgroup_matrix_unsupported(q, s32);
}

// x = hi + lo with hi = f16(x) and lo = f16(x − hi): A·B ≈ Ahi·Bhi + Ahi·Blo + Alo·Bhi (Alo·Blo,
// ~2^-22 of |A||B|, dropped), computed as one f16 product over K concatenated three times:
// [Ahi | Ahi | Alo] · [Bhi; Blo; Bhi], f32 accumulation and an f32 result. Inputs beyond f16's
// range (|x| > 65504) overflow; values below 2^-14 lose bits in lo's subnormals.
std::function<void()> subgroup_matrix_split_f32(const MatmulProblem& p, const SubgroupMatrixParams& sm) {
  if (std::string why = subgroup_matrix_split_unsupported(p, sm); !why.empty())
    throw Error(ErrorKind::Unsupported, "f32 matmul through split f16 " + sm.str() + ": " + why);
  SubgroupMatrixParams s32 = sm;
  s32.c_f32 = true;
  Tensor a = p.a.reshape({p.M, p.K}), b = p.b.reshape({p.K, p.N}), c = p.c;
  return [a, b, c, s32] {
    Tensor ahi = a.cast(DType::f16), bhi = b.cast(DType::f16);
    Tensor alo = (a - ahi.cast(DType::f32)).cast(DType::f16), blo = (b - bhi.cast(DType::f32)).cast(DType::f16);
    MatmulProblem q = make_problem(concat({ahi, ahi, alo}, 1), concat({bhi, blo, bhi}, 0));
    q.c = c;
    q.meta[12] = uint32_t(c.offset());
    subgroup_matrix_matmul(q, s32)();
  };
}

// The defaults, best first. The panel kernel with 2x4 subgroups of 4x4 tiles (128x256 blocks, pad
// 8), K 32 deep a step through one workgroup buffer (two barriers a step: two buffers of bk 32 do
// not fit 48 KiB), measured 174.8 / 184.4 TFLOP/s at 4096^3 / 8192^3 on the H200 with Dawn's
// robustness on, 0.25x / 0.25x cuBLAS fp16 in the same call (bk 16 with two buffers, the earlier
// default: 149.8 / 155.3; bench/results/2026-11-27-h200-dawn-sgmat-night-sweep.json, 28 configurations),
// where vec4 staging applies (K, N, strides multiples of 4). Else the probe's
// direct 4x4 tiles (74.9 / 77.0) where M, N are multiples of 64 and K of 16; else the old staged
// kernel, 2x2 tiles, 2x4 subgroups, bk 16, padded rows and prefetch (77.7 / 78.8, any shape).
static const std::vector<SubgroupMatrixParams>& default_configs() {
  static const std::vector<SubgroupMatrixParams> configs = [] {
    SubgroupMatrixParams pan{4, 4, 2, 4, 32, true};
    pan.pad = 8, pan.db = true, pan.pan = true, pan.nb = 1;
    SubgroupMatrixParams staged{2, 2, 2, 4, 16, true};
    staged.pad = 8, staged.db = true;
    return std::vector<SubgroupMatrixParams>{pan, {4, 4, 1, 1, 16, false}, staged};
  }();
  return configs;
}

std::optional<SubgroupMatrixParams> subgroup_matrix_choice(const MatmulProblem& p) {
  static const std::string env = [] {
    const char* e = std::getenv("SURFGRAD_SGMAT");
    return std::string(e ? e : "");
  }();
  if (env == "0" || p.dtype() != DType::f16 || !p.ctx->features().subgroup_matrix) return std::nullopt;
  std::vector<SubgroupMatrixParams> tries = default_configs();
  if (!env.empty() && env != "1") tries.insert(tries.begin(), parse_subgroup_matrix_spec(env));
  return subgroup_matrix_pick(p, tries);
}

std::optional<SubgroupMatrixParams> subgroup_matrix_pick(const MatmulProblem& p,
                                                         const std::vector<SubgroupMatrixParams>& tries,
                                                         uint64_t min_blocks) {
  for (const auto& sm : tries) {
    uint64_t blocks = uint64_t(p.batches) * uint64_t((p.M + block_m(sm) - 1) / block_m(sm)) *
                      uint64_t((p.N + block_n(sm) - 1) / block_n(sm));
    if (blocks >= min_blocks && subgroup_matrix_unsupported(p, sm).empty()) return sm;
  }
  return std::nullopt;
}

bool run_subgroup_matrix_default(const MatmulProblem& p) {
  std::optional<SubgroupMatrixParams> sm = subgroup_matrix_choice(p);
  if (!sm) return false;
  subgroup_matrix_matmul(p, *sm)();
  return true;
}

}  // namespace surfgrad
