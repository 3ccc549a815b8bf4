// int8 matmul on i8 subgroup matrices (matmul_int8_sgmat.hpp). The operands are quantized and
// padded on the host (rows to 64, K to 32), so the kernel loads whole 16×32 / 32×16 tiles
// without guards; the epilogue writes only rows < M and columns < N. Offsets and strides of i8
// subgroup-matrix loads count i32 words of the packed arrays (four i8 values each): counted in i8
// values, the products were wrong on the H200.
#include "matmul_int8_sgmat.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/launch.hpp"
#include "surfgrad/reference.hpp"

namespace surfgrad {

namespace {

std::string S(long v) { return std::to_string(v); }

constexpr int kTm = 4, kTn = 4;  // 16×16 result tiles a subgroup: 64×64 blocks

bool has_i8_16x16x32(const gpu::Features& f) {
  for (const auto& c : f.subgroup_matrix_configs)
    if (c.component == "i8" && c.result == "i32" && c.m == 16 && c.n == 16 && c.k == 32) return true;
  return false;
}

}  // namespace

std::string int8_subgroup_matrix_wgsl(int sg, bool words) {
  // Offsets and strides count i8 values, or (words) i32 words: KP and k are multiples of 32.
  const std::string at = words ? ") / 4u, KP / 4u);\n" : ", KP);\n";
  std::string s =
      "enable chromium_experimental_subgroup_matrix;\n"
      "// Parameters: [M, N, KP (i8 values a padded row), tiles_m, tiles_n]\n"
      "@group(0) @binding(0) var<storage, read_write> c: array<f32>;\n"
      "@group(0) @binding(1) var<storage, read> a: array<i32>;\n"
      "@group(0) @binding(2) var<storage, read> bt: array<i32>;\n"
      "@group(0) @binding(3) var<storage, read> a_scale: array<f32>;\n"
      "@group(0) @binding(4) var<storage, read> b_scale: array<f32>;\n"
      "alias TA = subgroup_matrix_left<i8, 32, 16>;\nalias TB = subgroup_matrix_right<i8, 16, 32>;\n"
      "alias TC = subgroup_matrix_result<i32, 16, 16>;\n"
      "var<workgroup> cs_: array<i32, 256>;\n"
      "@compute @workgroup_size(" +
      S(sg) +
      ")\n"
      "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
      "        @builtin(subgroup_invocation_id) lane: u32) {\n"
      "  let M = arg(0u); let N = arg(1u); let KP = arg(2u); let tiles_n = arg(4u);\n"
      "  let t = linear_group(wid, nwg);\n"
      "  if (t >= arg(3u) * tiles_n) { return; }\n"
      "  let row0 = (t / tiles_n) * 64u; let col0 = (t % tiles_n) * 64u;\n";
  for (int i = 0; i < kTm; ++i)
    for (int j = 0; j < kTn; ++j) s += "  var acc_" + S(i) + "_" + S(j) + ": TC;\n";
  s += "  for (var k = 0u; k < KP; k += 32u) {\n";
  for (int i = 0; i < kTm; ++i)
    s += "    let a_" + S(i) + " = subgroupMatrixLoad<TA, row_major>(&a, " + (words ? "(" : "") + "(row0 + " +
         S(16 * i) + "u) * KP + k" + at;
  for (int j = 0; j < kTn; ++j)
    s += "    let b_" + S(j) + " = subgroupMatrixLoad<TB, col_major>(&bt, " + (words ? "(" : "") + "(col0 + " +
         S(16 * j) + "u) * KP + k" + at;
  for (int i = 0; i < kTm; ++i)
    for (int j = 0; j < kTn; ++j)
      s += "    acc_" + S(i) + "_" + S(j) + " = subgroupMatrixMultiplyAccumulate(a_" + S(i) + ", b_" + S(j) + ", acc_" +
           S(i) + "_" + S(j) + ");\n";
  s += "  }\n";
  for (int i = 0; i < kTm; ++i)
    for (int j = 0; j < kTn; ++j) {
      s += "  subgroupMatrixStore<row_major>(&cs_, 0u, acc_" + S(i) + "_" + S(j) + ", 16u);\n  workgroupBarrier();\n";
      s += "  for (var e = lane; e < 256u; e += " + S(sg) + "u) {\n";
      s += "    let r = row0 + " + S(16 * i) + "u + e / 16u; let col = col0 + " + S(16 * j) + "u + e % 16u;\n";
      s += "    if (r < M && col < N) { c[r * N + col] = f32(cs_[e]) * a_scale[r] * b_scale[col]; }\n";
      s += "  }\n  workgroupBarrier();\n";
    }
  s += "}\n";
  return s;
}

Int8Operands quantize_int8(const MatmulProblem& p, int64_t k_align, int64_t mn_align) {
  Int8Operands q;
  HostArray a = HostArray::from(p.a.reshape({p.M, p.K})), b = HostArray::from(p.b.reshape({p.K, p.N}));
  q.k4 = (p.K + k_align - 1) / k_align * k_align / 4;
  q.mp = (p.M + mn_align - 1) / mn_align * mn_align, q.np = (p.N + mn_align - 1) / mn_align * mn_align;
  std::vector<uint32_t> qa(size_t(q.mp * q.k4), 0), qb(size_t(q.np * q.k4), 0);
  std::vector<float> sa(size_t(p.M)), sb(size_t(p.N));
  auto pack = [&](std::vector<uint32_t>& w, int64_t row, int64_t k, double v, double scale) {
    int q8 = int(std::lround(scale > 0 ? v / scale : 0));
    q8 = std::max(-127, std::min(127, q8));
    w[size_t(row * q.k4 + k / 4)] |= (uint32_t(uint8_t(int8_t(q8))) << (8 * (k % 4)));
  };
  const auto& av = a.values();
  const auto& bv = b.values();
  for (int64_t r = 0; r < p.M; ++r) {
    double m = 0;
    for (int64_t k = 0; k < p.K; ++k) m = std::max(m, std::abs(av[size_t(r * p.K + k)]));
    sa[size_t(r)] = float(m / 127);
    for (int64_t k = 0; k < p.K; ++k) pack(qa, r, k, av[size_t(r * p.K + k)], sa[size_t(r)]);
  }
  for (int64_t col = 0; col < p.N; ++col) {
    double m = 0;
    for (int64_t k = 0; k < p.K; ++k) m = std::max(m, std::abs(bv[size_t(k * p.N + col)]));
    sb[size_t(col)] = float(m / 127);
    for (int64_t k = 0; k < p.K; ++k) pack(qb, col, k, bv[size_t(k * p.N + col)], sb[size_t(col)]);
  }
  q.qa = Tensor::from_vector(p.ctx, qa, {q.mp, q.k4}), q.qb = Tensor::from_vector(p.ctx, qb, {q.np, q.k4});
  q.a_scale = Tensor::from_vector(p.ctx, sa, {p.M}), q.b_scale = Tensor::from_vector(p.ctx, sb, {p.N});
  return q;
}

std::string int8_subgroup_matrix_unsupported(const MatmulProblem& p) {
  const gpu::Features& f = p.ctx->features();
  if (p.dtype() != DType::f32) return "takes f32 inputs to quantize";
  if (p.batches != 1) return "single matrices only";
  if (!f.subgroup_matrix)
    return "no subgroup matrices on this device (Dawn's chromium-experimental-subgroup-matrix: run with "
           "SURFGRAD_WEBGPU=dawn on a GPU that offers it)";
  if (!has_i8_16x16x32(f)) return "the adapter has no i8xi8->i32 16x16x32 subgroup-matrix config";
  if (f.subgroup_min_size != f.subgroup_max_size || f.subgroup_min_size == 0) return "needs one known subgroup size";
  return "";
}

std::function<void()> int8_subgroup_matrix_prepare(const MatmulProblem& p, bool words) {
  if (std::string why = int8_subgroup_matrix_unsupported(p); !why.empty())
    throw Error(ErrorKind::Unsupported, "int8 subgroup-matrix matmul: " + why);
  Int8Operands q = quantize_int8(p, 32, 64);
  // The packed words are u32 (int8-dot4's form); subgroupMatrixLoad of i8 reads array<i32>: the
  // same bits as i32 tensors (the H200 refused the u32 ones at the launch seam).
  auto as_i32 = [&](const Tensor& t) {
    std::vector<uint32_t> w = t.to_vector<uint32_t>();
    std::vector<int32_t> v(w.size());
    std::memcpy(v.data(), w.data(), w.size() * sizeof(uint32_t));
    return Tensor::from_vector(p.ctx, v, t.shape());
  };
  q.qa = as_i32(q.qa), q.qb = as_i32(q.qb);
  int sg = int(p.ctx->features().subgroup_min_size);
  auto kernel = kernels::Program::generated(p.ctx, "sgmat-int8|sg" + S(sg) + (words ? "|words" : ""),
                                            [&] { return int8_subgroup_matrix_wgsl(sg, words); }, {.subgroups = true});
  int64_t tm = q.mp / 64, tn = q.np / 64;
  kernels::Params meta = {p.M, p.N, q.k4 * 4, tm, tn};
  Tensor c = p.c;
  auto ctx = p.ctx;
  return [=] { kernel.launch({c, q.qa, q.qb, q.a_scale, q.b_scale}, meta, ctx->grid_for(uint64_t(tm * tn))); };
}

}  // namespace surfgrad
