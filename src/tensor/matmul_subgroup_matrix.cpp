// f16 matmul on subgroup matrices (matmul_subgroup_matrix.hpp). A workgroup of wm × wn
// subgroups owns a BM × BN block of C (BM = wm·tm·16, BN = wn·tn·16); each subgroup owns tm × tn
// 16×16 result tiles, accumulated in f32 subgroup matrices. Staged: every BK step the workgroup
// copies A's BM × BK and B's BK × BN panels into workgroup memory (zeros past the edges, so any
// shape, stride, offset and batch works), and the subgroups load their 16×16 operands from there.
// Unstaged (the probe that measured 73 TFLOP/s on the H100): operands loaded straight from the
// buffers, so only whole blocks of contiguous matrices. Either way the result goes through a
// per-subgroup 16×16 f32 scratch in workgroup memory to C (f16), guarded by M and N.
#include "matmul_subgroup_matrix.hpp"

#include <regex>

#include "kernels/launch.hpp"

namespace surfgrad {

namespace {

constexpr int kTile = 16;  // the f16×f16→f32 16×16×16 configuration

std::string S(long v) { return std::to_string(v); }

bool has_f16_16x16x16(const gpu::Features& f) {
  for (const auto& c : f.subgroup_matrix_configs)
    if (c.component == "f16" && c.result == "f32" && c.m == 16 && c.n == 16 && c.k == 16) return true;
  return false;
}

int block_m(const SubgroupMatrixParams& sm) { return sm.wm * sm.tm * kTile; }
int block_n(const SubgroupMatrixParams& sm) { return sm.wn * sm.tn * kTile; }

uint64_t workgroup_bytes(const SubgroupMatrixParams& sm) {
  uint64_t scratch = uint64_t(sm.wm * sm.wn) * kTile * kTile * 4;
  if (!sm.staged) return scratch;
  return scratch + uint64_t(block_m(sm) + block_n(sm)) * uint64_t(sm.bk) * 2;
}

// Staging loads: the workgroup's threads copy A[row0.., k0..] and B[k0.., col0..] into as_ and
// bs_, four elements a thread and step where the layout allows vec4 loads.
std::string staging(bool vec4) {
  if (!vec4)
    return R"(    for (var e = lid; e < BM * BK; e += WG) {
      let r = row0 + e / BK; let k = k0 + e % BK;
      var v = f16(0.0);
      if (r < M && k < K) { v = a[bases.x + r * a_rs + k * a_cs]; }
      as_[e] = v;
    }
    for (var e = lid; e < BK * BN; e += WG) {
      let k = k0 + e / BN; let col = col0 + e % BN;
      var v = f16(0.0);
      if (k < K && col < N) { v = b[bases.y + k * b_rs + col * b_cs]; }
      bs_[e] = v;
    }
)";
  // K, N, the row strides and offsets are multiples of 4 (matmul_vec4_staging): a quad is wholly
  // inside or outside the matrix.
  return R"(    for (var e = lid; e < BM * BK / 4u; e += WG) {
      let r = row0 + e / (BK / 4u); let k = k0 + (e % (BK / 4u)) * 4u;
      var v = vec4<f16>();
      if (r < M && k < K) { v = a[(bases.x + r * a_rs + k) / 4u]; }
      let at = (e / (BK / 4u)) * BK + (e % (BK / 4u)) * 4u;
      as_[at] = v.x; as_[at + 1u] = v.y; as_[at + 2u] = v.z; as_[at + 3u] = v.w;
    }
    for (var e = lid; e < BK * BN / 4u; e += WG) {
      let k = k0 + e / (BN / 4u); let col = col0 + (e % (BN / 4u)) * 4u;
      var v = vec4<f16>();
      if (k < K && col < N) { v = b[(bases.y + k * b_rs + col) / 4u]; }
      let at = e * 4u;
      bs_[at] = v.x; bs_[at + 1u] = v.y; bs_[at + 2u] = v.z; bs_[at + 3u] = v.w;
    }
)";
}

// SubgroupMatrixParams::emulate: the builtins as functions on array<f32, 256> tiles (row-major).
std::string emulated(const std::string& wgsl) {
  std::string s = std::regex_replace(wgsl, std::regex("enable chromium_experimental_subgroup_matrix;\n"), "");
  s = std::regex_replace(s, std::regex("subgroup_matrix_(left|right)<f16, 16, 16>|subgroup_matrix_result<f32, 16, 16>"),
                         "array<f32, 256>");
  s = std::regex_replace(s, std::regex("subgroupMatrixLoad<T[AB], row_major>\\(&(\\w+), "), "sm_load_$1(");
  s = std::regex_replace(s, std::regex("subgroupMatrixStore<row_major>\\(&(\\w+), "), "sm_store_$1(");
  s = std::regex_replace(s, std::regex("subgroupMatrixMultiplyAccumulate\\("), "sm_mma(");
  std::string fns =
      "fn sm_mma(x: array<f32, 256>, y: array<f32, 256>, z: array<f32, 256>) -> array<f32, 256> {\n"
      "  var xa = x; var ya = y; var r = z;\n"
      "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) {\n"
      "    var acc = r[i * 16u + j];\n"
      "    for (var k = 0u; k < 16u; k++) { acc = fma(xa[i * 16u + k], ya[k * 16u + j], acc); }\n"
      "    r[i * 16u + j] = acc; } }\n"
      "  return r;\n}\n";
  for (const char* src : {"as_", "bs_", "a", "b"})
    if (s.find("sm_load_" + std::string(src) + "(") != std::string::npos)
      fns += "fn sm_load_" + std::string(src) +
             "(off: u32, stride: u32) -> array<f32, 256> {\n  var r: array<f32, 256>;\n"
             "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) { r[i * 16u + j] = f32(" +
             src + "[off + i * stride + j]); } }\n  return r;\n}\n";
  // Every lane of the subgroup writes the same values: a benign race in an emulation.
  fns +=
      "fn sm_store_cs_(off: u32, v: array<f32, 256>, stride: u32) {\n  var va = v;\n"
      "  for (var i = 0u; i < 16u; i++) { for (var j = 0u; j < 16u; j++) { cs_[off + i * stride + j] = va[i * 16u + "
      "j]; } }\n}\n";
  size_t entry = s.find("@compute");
  return s.substr(0, entry) + fns + s.substr(entry);
}

}  // namespace

std::string SubgroupMatrixParams::str() const {
  return S(tm) + "x" + S(tn) + "/" + S(wm) + "x" + S(wn) + "/bk" + S(bk) + (staged ? "" : "/direct") +
         (emulate ? "/emulated" : "");
}

std::string subgroup_matrix_unsupported(const MatmulProblem& p, const SubgroupMatrixParams& sm) {
  const gpu::Features& f = p.ctx->features();
  if (sm.emulate && !f.subgroups) return "emulation: the adapter has no subgroups";
  if (sm.emulate && !f.shader_f16) return "emulation: the adapter has no shader-f16";
  if (!sm.emulate && !f.subgroup_matrix)
    return "no subgroup matrices on this device (Dawn's chromium-experimental-subgroup-matrix: run with "
           "SURFGRAD_WEBGPU=dawn on a GPU that offers it)";
  if (p.dtype() != DType::f16) return "f16 operands only";
  if (!sm.emulate && !has_f16_16x16x16(f)) return "the adapter has no f16xf16->f32 16x16x16 subgroup-matrix config";
  if (f.subgroup_min_size != f.subgroup_max_size || f.subgroup_min_size == 0)
    return "needs one known subgroup size (the adapter reports " + S(f.subgroup_min_size) + "-" +
           S(f.subgroup_max_size) + ")";
  if (uint64_t(sm.wm * sm.wn) * f.subgroup_min_size > p.ctx->limits().max_compute_invocations_per_workgroup)
    return "more invocations a workgroup than the adapter allows";
  if (workgroup_bytes(sm) > p.ctx->limits().max_compute_workgroup_storage_size)
    return S(long(workgroup_bytes(sm))) + " bytes of workgroup memory, more than the adapter's " +
           S(p.ctx->limits().max_compute_workgroup_storage_size);
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
  return sm.emulate ? emulated(kernel_wgsl(sm, sg, vec4_loads)) : kernel_wgsl(sm, sg, vec4_loads);
}

static std::string kernel_wgsl(const SubgroupMatrixParams& sm, int sg, bool vec4_loads) {
  const int nsg = sm.wm * sm.wn;
  std::string s = "enable chromium_experimental_subgroup_matrix;\n";
  std::string elem = vec4_loads ? "vec4<f16>" : "f16";
  s += "@group(0) @binding(0) var<storage, read_write> c: array<f16>;\n";
  s += "@group(0) @binding(1) var<storage, read> a: array<" + elem + ">;\n";
  s += "@group(0) @binding(2) var<storage, read> b: array<" + elem + ">;\n";
  s += "alias TA = subgroup_matrix_left<f16, 16, 16>;\nalias TB = subgroup_matrix_right<f16, 16, 16>;\n";
  s += "alias TC = subgroup_matrix_result<f32, 16, 16>;\n";
  s += "const BM = " + S(block_m(sm)) + "u;\nconst BN = " + S(block_n(sm)) + "u;\nconst BK = " + S(sm.bk) +
       "u;\nconst WG = " + S(nsg * sg) + "u;\nconst SG = " + S(sg) + "u;\n";
  if (sm.staged) s += "var<workgroup> as_: array<f16, BM * BK>;\nvar<workgroup> bs_: array<f16, BK * BN>;\n";
  s += "var<workgroup> cs_: array<f32, " + S(nsg * 256) + ">;\n";
  s += "@compute @workgroup_size(" + S(nsg * sg) + ")\n";
  // subgroup_id and subgroup_invocation_id, not local_invocation_index / SG: the subgroup a lane
  // is really in, and a value the uniformity analysis knows to be uniform in its subgroup.
  s += "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
       "        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sgi: u32,\n"
       "        @builtin(subgroup_invocation_id) lane: u32) {\n";
  s += "  let M = mm_m(); let N = mm_n(); let K = mm_k();\n";
  s += "  let tile = mm_locate(linear_group(wid, nwg));\n";
  s += "  let bases = mm_batch_bases(min(tile.batch, arg(5u) - 1u));\n";
  s += "  let a_rs = arg(6u); let a_cs = arg(7u); let b_rs = arg(8u); let b_cs = arg(9u);\n";
  s += "  let row0 = tile.row * BM; let col0 = tile.col * BN;\n";
  s += "  let sr = (sgi / " + S(sm.wn) + "u) * " + S(sm.tm * kTile) + "u; let sc = (sgi % " + S(sm.wn) + "u) * " +
       S(sm.tn * kTile) + "u;\n";
  for (int i = 0; i < sm.tm; ++i)
    for (int j = 0; j < sm.tn; ++j) s += "  var acc_" + S(i) + "_" + S(j) + ": TC;\n";
  if (sm.staged) {
    s += "  for (var k0 = 0u; k0 < K; k0 += BK) {\n" + staging(vec4_loads) + "    workgroupBarrier();\n";
    for (int kk = 0; kk < sm.bk; kk += kTile) {
      for (int i = 0; i < sm.tm; ++i)
        s += "    let a_" + S(kk) + "_" + S(i) + " = subgroupMatrixLoad<TA, row_major>(&as_, (sr + " + S(i * kTile) +
             "u) * BK + " + S(kk) + "u, BK);\n";
      for (int j = 0; j < sm.tn; ++j)
        s += "    let b_" + S(kk) + "_" + S(j) + " = subgroupMatrixLoad<TB, row_major>(&bs_, " + S(kk) +
             "u * BN + sc + " + S(j * kTile) + "u, BN);\n";
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
      s += "    if (tile.valid && r < M && col < N) { c[c_base + r * N + col] = f16(cs_[sgi * 256u + e]); }\n";
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

}  // namespace surfgrad
