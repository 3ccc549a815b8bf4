// matmul: numpy semantics (1-D promotion, broadcast batch axes), transposed operands read in
// place through their strides, run by the tuned register-tiled kernel (matmul_reg_tiled.wgsl).
#include <algorithm>
#include <cstdlib>
#include <functional>

#include "matmul_problem.hpp"
#include "matmul_subgroup_matrix.hpp"
#include "tensor/lazy.hpp"
#include "tensor/matmul_epilogue.hpp"
#include "tensor/op_prewarm.hpp"

namespace surfgrad {

MatmulProblem make_problem(const Tensor& a, const Tensor& b, const Tensor* out) {
  MatmulProblem p;
  p.ctx = a.context();
  p.a = a;
  p.b = b;
  p.M = a.shape(-2), p.K = a.shape(-1), p.N = b.shape(-1);
  if (p.K != b.shape(-2))
    throw Error(ErrorKind::Shape, "matmul: inner sizes differ: " + a.describe() + " @ " + b.describe() + " (" +
                                      std::to_string(p.K) + " vs " + std::to_string(b.shape(-2)) + ")");
  Shape a_batch(a.shape().begin(), a.shape().end() - 2), b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(a_batch, b_batch, "matmul (batch axes)");
  Shape out_shape = batch;
  out_shape.push_back(p.M);
  out_shape.push_back(p.N);
  p.c = out ? *out : Tensor::empty(p.ctx, out_shape, a.dtype());
  p.batches = shape_numel(batch);
  Shape a_full = batch, b_full = batch;
  a_full.insert(a_full.end(), {p.M, p.K});
  b_full.insert(b_full.end(), {p.K, p.N});
  Shape as = broadcast_strides(a, a_full), bs = broadcast_strides(b, b_full);
  p.meta.assign(38, 0);
  uint32_t* m = p.meta.data();
  m[0] = uint32_t(p.M), m[1] = uint32_t(p.N), m[2] = uint32_t(p.K), m[5] = uint32_t(p.batches);
  m[6] = uint32_t(a.strides()[size_t(a.rank() - 2)]), m[7] = uint32_t(a.strides()[size_t(a.rank() - 1)]);
  m[8] = uint32_t(b.strides()[size_t(b.rank() - 2)]), m[9] = uint32_t(b.strides()[size_t(b.rank() - 1)]);
  m[10] = uint32_t(a.offset()), m[11] = uint32_t(b.offset()), m[12] = uint32_t(p.c.offset());
  m[13] = uint32_t(batch.size());
  for (size_t d = 0; d < batch.size(); ++d) {
    m[14 + d] = uint32_t(batch[d]);
    m[22 + d] = uint32_t(as[d]);
    m[30 + d] = uint32_t(bs[d]);
  }
  return p;
}

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  check_same_context(a_in, b_in, "matmul");
  if (a_in.dtype() != b_in.dtype())
    throw Error(ErrorKind::DType, "matmul: dtypes differ (" + a_in.describe() + " @ " + b_in.describe() + ")");
  if (!is_float(a_in.dtype()))
    throw Error(ErrorKind::DType, "matmul needs f32 or f16 operands, got " + a_in.describe() + "; cast first");
  if (a_in.rank() == 0 || b_in.rank() == 0)
    throw Error(ErrorKind::Shape,
                "matmul: operands must have rank ≥ 1, got " + a_in.describe() + " @ " + b_in.describe());
  // Lazy mode: a 2-D f32 product is recorded, so that the elementwise tree that reads it (bias,
  // activation) can run in its store step (matmul_epilogue.hpp).
  if (lazy_enabled() && a_in.rank() == 2 && b_in.rank() == 2 && a_in.dtype() == DType::f32 &&
      a_in.shape(1) == b_in.shape(0) && a_in.shape(1) > 0 && a_in.shape(0) > 0 && b_in.shape(1) > 0)
    return lazy_record_matmul(a_in, b_in);
  Tensor a = a_in.rank() == 1 ? a_in.unsqueeze(0) : a_in;  // [K] → [1, K]
  Tensor b = b_in.rank() == 1 ? b_in.unsqueeze(1) : b_in;  // [K] → [K, 1]
  MatmulProblem p = make_problem(a, b);
  if (p.c.numel() > 0) {
    if (p.K == 0) {
      p.c.assign(scalar_like(p.c, 0));
    } else {
      run_matmul(p);
    }
  }
  // Undo the 1-D promotions, as numpy does.
  Shape final_shape(p.c.shape().begin(), p.c.shape().end() - 2);
  if (a_in.rank() > 1) final_shape.push_back(p.M);
  if (b_in.rank() > 1) final_shape.push_back(p.N);
  return p.c.reshape(final_shape);
}

Tensor Tensor::matmul(const Tensor& other) const { return surfgrad::matmul(*this, other); }

std::string TiledParams::str() const {
  if (direct())
    return "direct " + std::to_string(bm) + "x" + std::to_string(bn) + " reg " + std::to_string(tm) + "x" +
           std::to_string(tn);

  return "tiled " + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + " reg " +
         std::to_string(tm) + "x" + std::to_string(tn) + (double_buffer ? " db" : "") +
         (swizzle > 1 ? " swizzle" + std::to_string(swizzle) : "") + (f32_accumulate ? "" : " acc16") +
         (tm % 4 == 0 && tn % 4 == 0 ? " v4" : "");
}

std::string tiled_unsupported(const gpu::Context& ctx, const TiledParams& p, DType dtype) {
  if (p.bm % p.tm || p.bn % p.tn) return "tile not divisible by the register tile";
  if (p.direct()) {
    if (p.bm != p.tm || p.bn % p.tn || p.bn / p.tn > 256)
      return "a direct tile is TM rows by up to 256 threads' TN columns";
    if (uint32_t(p.bn / p.tn) > ctx.limits().max_compute_invocations_per_workgroup)
      return "too many threads per workgroup";
    if (dtype == DType::f16 && !ctx.features().shader_f16) return "no shader-f16";
    return "";
  }
  int threads = (p.bm / p.tm) * (p.bn / p.tn);
  if (uint32_t(threads) > ctx.limits().max_compute_invocations_per_workgroup) return "too many threads per workgroup";
  if (uint32_t(threads) > ctx.limits().max_compute_workgroup_size_x) return "workgroup too wide";
  size_t acc = (dtype == DType::f16 && !p.f32_accumulate) ? 2 : 4;
  if ((size_t(p.bk) * size_t(p.bm + p.bn + 4)) * acc > ctx.limits().max_compute_workgroup_storage_size)
    return "tiles exceed workgroup memory";
  if (dtype == DType::f16 && !ctx.features().shader_f16) return "no shader-f16";
  return "";
}

bool matmul_a_columns(const MatmulProblem& prob) { return prob.meta[6] == 1 && prob.meta[7] != 1; }

static bool vec4_layout(const TiledParams& p) { return p.tm % 4 == 0 && p.tn % 4 == 0; }

// Whether the tiled kernel can stage A and B with vec4 loads: both row-major (unit column
// stride) with K and N, their row strides, offsets and batch strides multiples of 4, so every
// vec4 is aligned and lies wholly inside or outside the matrix.
bool matmul_vec4_staging(const MatmulProblem& prob) {
  const std::vector<uint32_t>& m = prob.meta;
  bool ok = m[7] == 1 && m[9] == 1 && prob.K % 4 == 0 && prob.N % 4 == 0 && m[6] % 4 == 0 && m[8] % 4 == 0 &&
            m[10] % 4 == 0 && m[11] % 4 == 0;
  for (uint32_t d = 0; d < m[13]; ++d) ok = ok && m[22 + d] % 4 == 0 && m[30 + d] % 4 == 0;
  return ok;
}

// The unrolled per-thread blocks of matmul_reg_tiled.wgsl: register names carry their indices.
// `a_columns`: A's columns are contiguous (a transposed operand, x^T of a weight gradient): its
// tile is staged with consecutive threads along M instead of K, so their loads coalesce (the
// same elements into the same tile slots: the arithmetic, and so the bits, are unchanged).
static std::map<std::string, std::string> tiled_code(const TiledParams& p, int threads, const std::string& acc,
                                                     const std::string& t, bool vec4_loads, bool epilogue = false,
                                                     bool a_columns = false) {
  auto S = [](long v) { return std::to_string(v); };
  // The stored value: the accumulator in T, through the epilogue where there is one.
  const std::string open = epilogue ? "mm_epilogue(" + t + "(" : t + "(", close = epilogue ? "), r, col)" : ")";
  int a_loads = (p.bm * p.bk + threads - 1) / threads, b_loads = (p.bk * p.bn + threads - 1) / threads;
  std::string declare, load, stage, compute, store;
  for (int i = 0; i < p.tm; ++i)
    for (int j = 0; j < p.tn; ++j) declare += "  var c_" + S(i) + "_" + S(j) + ": " + acc + " = 0.0;\n";
  for (int l = 0; l < a_loads; ++l) declare += "  var a_next_" + S(l) + ": " + acc + " = 0.0;\n";
  for (int l = 0; l < b_loads; ++l) declare += "  var b_next_" + S(l) + ": " + acc + " = 0.0;\n";
  // Global → registers: consecutive threads take consecutive k of A (row-major A reads
  // coalesce) and consecutive n of B. k1 is the step being loaded.
  // Each operand's loads and stores: `pos` and `guard` in terms of i (the thread's element of the
  // tile) and of the operand's tile extents; `read` the global element; `slot` its tile index.
  auto stage_operand = [&](const char* name, int loads, const std::string& extent, const std::string& pos,
                           const std::string& guard, const std::string& read, const std::string& slot) {
    for (int l = 0; l < loads; ++l) {
      std::string i = "(lid + " + S(l * threads) + "u)", next = std::string(name) + "_next_" + S(l);
      load += "    { let i = " + i + "; " + pos + "\n      " + next + " = 0.0;\n      if (valid && i < " + extent +
              " && " + guard + ") { " + next + " = " + acc + "(" + read + "); } }\n";
      stage +=
          "    { let i = " + i + "; if (i < " + extent + ") { " + name + "_tile[" + slot + "] = " + next + "; } }\n";
    }
  };
  stage_operand(
      "a", a_loads, "BM * BK",
      a_columns ? "let r = row0 + i % BM; let k = k1 + i / BM;" : "let r = row0 + i / BK; let k = k1 + i % BK;",
      "r < M && k < K", "a[bases.x + r * a_rs + k * a_cs]", a_columns ? "i" : "(i % BK) * BM + i / BK");
  // The tile slot (k, m) of a staged A element i, in the vec4 layout's padded rows.
  const std::string a_slot4 = a_columns ? "(i / BM) * (BM + 4u) + i % BM" : "(i % BK) * (BM + 4u) + i / BK";
  stage_operand("b", b_loads, "BK * BN", "let col = col0 + i % BN; let k = k1 + i / BN;", "col < N && k < K",
                "b[bases.y + k * b_rs + col * b_cs]", "i");
  std::string shared = "var<workgroup> a_tile: array<" + acc +
                       ", BK * BM>;  // [k][m]\n"
                       "var<workgroup> b_tile: array<" +
                       acc + ", BK * BN>;  // [k][n]\n";
  if (vec4_layout(p)) {
    // Contiguous per-thread rows/columns; tiles read as vec4, accumulators are vec4 rows.
    // A's rows in the tile are padded by 4: staging writes a column of A (consecutive threads,
    // consecutive k), which with a stride of BM (a multiple of 32 words) hit one bank 8 times.
    shared = "var<workgroup> a_tile4: array<vec4<" + acc +
             ">, BK * (BM + 4u) / 4u>;  // [k][m/4], padded\n"
             "var<workgroup> b_tile4: array<vec4<" +
             acc + ">, BK * BN / 4u>;  // [k][n/4]\n";
    stage.clear();
    for (int l = 0; l < a_loads; ++l) {
      std::string i = "(lid + " + S(l * threads) + "u)";
      stage += "    { let i = " + i + "; if (i < BM * BK) { let x = " + a_slot4 +
               "; a_tile4[x / 4u][x % 4u] = a_next_" + S(l) + "; } }\n";
    }
    for (int l = 0; l < b_loads; ++l) {
      std::string i = "(lid + " + S(l * threads) + "u)";
      stage += "    { let i = " + i + "; if (i < BK * BN) { b_tile4[i / 4u][i % 4u] = b_next_" + S(l) + "; } }\n";
    }
    declare.clear();
    for (int i = 0; i < p.tm; ++i)
      for (int j = 0; j < p.tn / 4; ++j) declare += "  var c_" + S(i) + "_" + S(j) + " = vec4<" + acc + ">(0.0);\n";
    if (vec4_loads) {
      // Thread i loads B's vec4 at (k i / (BN/4), column (i mod BN/4)·4): consecutive threads
      // read consecutive 16 bytes, and each is one workgroup-memory store.
      const int b4 = (p.bk * p.bn / 4 + threads - 1) / threads;
      load.clear();
      stage.clear();
      // A stays scalar: vec4s along K would land on four rows
      // of the transposed tile, two-way conflicting, and measured slower (v11).
      for (int l = 0; l < a_loads; ++l) {
        std::string i = "(lid + " + S(l * threads) + "u)";
        declare += "  var a_next_" + S(l) + ": " + acc + " = 0.0;\n";
        load += "    { let i = " + i +
                "; let r = row0 + i / BK; let k = k1 + i % BK; let e = bases.x + r * a_rs + k;\n"
                "      a_next_" +
                S(l) +
                " = 0.0;\n"
                "      if (valid && i < BM * BK && r < M && k < K) { a_next_" +
                S(l) + " = " + acc + "(a[e]); } }\n";
        stage += "    { let i = " + i +
                 "; if (i < BM * BK) { let x = (i % BK) * (BM + 4u) + i / BK; a_tile4[x / 4u][x % 4u] = a_next_" +
                 S(l) + "; } }\n";
      }
      for (int l = 0; l < b4; ++l) {
        std::string i = "(lid + " + S(l * threads) + "u)";
        declare += "  var b_next_" + S(l) + " = vec4<" + acc + ">(0.0);\n";
        load += "    { let i = " + i +
                "; let col = col0 + (i % (BN / 4u)) * 4u; let k = k1 + i / (BN / 4u);\n"
                "      b_next_" +
                S(l) + " = vec4<" + acc +
                ">(0.0);\n"
                "      if (valid && i < BK * BN / 4u && col < N && k < K) { b_next_" +
                S(l) + " = vec4<" + acc + ">(b[(bases.y + k * b_rs + col) / 4u]); } }\n";
        stage += "    { let i = " + i + "; if (i < BK * BN / 4u) { b_tile4[i] = b_next_" + S(l) + "; } }\n";
      }
    } else {
      for (int l = 0; l < a_loads; ++l) declare += "  var a_next_" + S(l) + ": " + acc + " = 0.0;\n";
      for (int l = 0; l < b_loads; ++l) declare += "  var b_next_" + S(l) + ": " + acc + " = 0.0;\n";
    }
    // A thread's TN columns are TN/4 vec4 groups spaced TX groups apart, so that a warp's
    // consecutive threads read consecutive vec4s of B's tile (with a thread's groups adjacent,
    // 16 threads read at a stride of 32 bytes: 2-way bank conflicts on half the tile reads).
    declare += "  let a_off = ty * TM / 4u;\n  let b_off = tx;\n";
    const int tx_count = p.bn / p.tn;
    const char* lane[] = {"x", "y", "z", "w"};
    for (int kk = 0; kk < p.bk; ++kk) {
      compute += "    {\n";
      for (int i = 0; i < p.tm / 4; ++i)
        compute += "      let a_" + S(i) + " = a_tile4[a_off + " + S(kk * (p.bm + 4) / 4 + i) + "u];\n";
      for (int j = 0; j < p.tn / 4; ++j)
        compute += "      let b_" + S(j) + " = b_tile4[b_off + " + S(kk * p.bn / 4 + j * tx_count) + "u];\n";
      for (int i = 0; i < p.tm; ++i)
        for (int j = 0; j < p.tn / 4; ++j) {
          std::string c = "c_" + S(i) + "_" + S(j);
          compute += "      " + c + " = fma(vec4<" + acc + ">(a_" + S(i / 4) + "." + lane[i % 4] + "), b_" + S(j) +
                     ", " + c + ");\n";
        }
      compute += "    }\n";
    }
    for (int i = 0; i < p.tm; ++i) {
      store += "  { let r = row0 + ty * TM + " + S(i) + "u;\n    if (r < M) {\n";
      for (int j = 0; j < p.tn; ++j)
        store += "      { let col = col0 + (" + S(j / 4 * tx_count) + "u + tx) * 4u + " + S(j % 4) +
                 "u; if (col < N) { c[c_base + r * N + col] = " + open + "c_" + S(i) + "_" + S(j / 4) + "." +
                 lane[j % 4] + close + "; } }\n";
      store += "    }\n  }\n";
    }
  } else {
    for (int kk = 0; kk < p.bk; ++kk) {
      compute += "    {\n";
      for (int i = 0; i < p.tm; ++i)
        compute += "      let a_" + S(i) + " = a_tile[" + S(kk * p.bm) + "u + ty + " + S(i) + "u * TY];\n";
      for (int j = 0; j < p.tn; ++j)
        compute += "      let b_" + S(j) + " = b_tile[" + S(kk * p.bn) + "u + tx + " + S(j) + "u * TX];\n";
      for (int i = 0; i < p.tm; ++i)
        for (int j = 0; j < p.tn; ++j) {
          std::string c = "c_" + S(i) + "_" + S(j);
          compute += "      " + c + " = fma(a_" + S(i) + ", b_" + S(j) + ", " + c + ");\n";
        }
      compute += "    }\n";
    }
    for (int i = 0; i < p.tm; ++i) {
      store += "  { let r = row0 + ty + " + S(i) + "u * TY;\n    if (r < M) {\n";
      for (int j = 0; j < p.tn; ++j)
        store += "      { let col = col0 + tx + " + S(j) + "u * TX; if (col < N) { c[c_base + r * N + col] = " + open +
                 "c_" + S(i) + "_" + S(j) + close + "; } }\n";
      store += "    }\n  }\n";
    }
  }
  return {{"BM", S(p.bm)},           {"BN", S(p.bn)},
          {"BK", S(p.bk)},           {"TM", S(p.tm)},
          {"TN", S(p.tn)},           {"THREADS", S(threads)},
          {"SWIZZLE", S(p.swizzle)}, {"DOUBLE", p.double_buffer ? "true" : "false"},
          {"DECLARE", declare},      {"LOAD", load},
          {"STAGE", stage},          {"COMPUTE", compute},
          {"STORE", store},          {"SHARED", shared}};
}

// matmul_direct.wgsl's unrolled blocks: operand offsets hoisted out of the k loop, then per k
// TM uniform loads of A, TN gathered loads of B and TM·TN FMAs.
static std::map<std::string, std::string> direct_code(int tm, int tn, int wg, const std::string& t,
                                                      bool epilogue = false) {
  auto S = [](long v) { return std::to_string(v); };
  const std::string open = epilogue ? "mm_epilogue(" + t + "(" : t + "(", close = epilogue ? "), r, col)" : ")";
  std::string declare, inner, store;
  for (int i = 0; i < tm; ++i) declare += "  let ar_" + S(i) + " = bases.x + min(r0 + " + S(i) + "u, M - 1u) * a_rs;\n";
  for (int j = 0; j < tn; ++j)
    declare += "  let bc_" + S(j) + " = bases.y + min(c0 + " + S(j * wg) + "u, N - 1u) * b_cs;\n";
  for (int i = 0; i < tm; ++i)
    for (int j = 0; j < tn; ++j) declare += "  var c_" + S(i) + "_" + S(j) + " = 0.0;\n";
  for (int i = 0; i < tm; ++i) inner += "    let a_" + S(i) + " = f32(a[ar_" + S(i) + " + k * a_cs]);\n";
  for (int j = 0; j < tn; ++j) inner += "    let b_" + S(j) + " = f32(b[bc_" + S(j) + " + k * b_rs]);\n";
  for (int i = 0; i < tm; ++i)
    for (int j = 0; j < tn; ++j) {
      std::string c = "c_" + S(i) + "_" + S(j);
      inner += "    " + c + " = fma(a_" + S(i) + ", b_" + S(j) + ", " + c + ");\n";
    }
  for (int i = 0; i < tm; ++i)
    for (int j = 0; j < tn; ++j)
      store += "  { let r = r0 + " + S(i) + "u; let col = c0 + " + S(j * wg) +
               "u; if (r < M && col < N) { c[c_base + r * N + col] = " + open + "c_" + S(i) + "_" + S(j) + close +
               "; } }\n";
  return {{"TM", S(tm)}, {"TN", S(tn)}, {"WG", S(wg)}, {"DECLARE", declare}, {"INNER", inner}, {"STORE", store}};
}

kernels::Program matmul_program(const MatmulProblem& prob, const std::string& key, const char* file,
                                const std::function<kernels::Values()>& values, bool validated) {
  return matmul_program(prob.ctx, prob.dtype(), key, file, values, validated);
}

kernels::Program matmul_program(const gpu::ContextPtr& ctx, DType d, const std::string& key, const char* file,
                                const std::function<kernels::Values()>& values, bool validated) {
  return kernels::Program::generated(ctx, key + "|" + dtype_name(d),
                                     [&] {
                                       kernels::Values v = values();
                                       v["T"] = wgsl_type(d);
                                       return kernels::fill_template(kernels::wgsl_source("matmul_common.wgsl"), v) +
                                              kernels::fill_template(kernels::wgsl_source(file), v);
                                     },
                                     {.f16 = d == DType::f16, .validated = validated});
}

void launch_matmul(const MatmulProblem& prob, const kernels::Program& kernel, std::vector<uint32_t> meta,
                   int64_t tiles_m, int64_t tiles_n, uint64_t groups) {
  meta[3] = kernels::Param(tiles_m).word;
  meta[4] = kernels::Param(tiles_n).word;
  // A and B are read in place through the offsets and strides in `meta` (transposed views too).
  kernel.launch({prob.c, kernels::view(prob.a), kernels::view(prob.b)}, meta, prob.ctx->grid_for(groups));
}

// One workgroup per bm × bn tile of C, in every batch.
static void dispatch_tiles(const MatmulProblem& prob, const kernels::Program& kernel, int64_t bm, int64_t bn) {
  int64_t tiles_m = (prob.M + bm - 1) / bm, tiles_n = (prob.N + bn - 1) / bn;
  launch_matmul(prob, kernel, prob.meta, tiles_m, tiles_n,
                uint64_t(prob.batches) * uint64_t(tiles_m) * uint64_t(tiles_n));
}

// The kernel of tiles `p` (direct or tiled; B staged as vec4s where `vec4_staging`): run_tiled's,
// and prewarm_matmul's.
// `epilogue`: WGSL defining mm_epilogue(value, r, col), applied to every stored element (its
// source is the cache key's tail; `epilogue_name`, the tree's ops, names it in the profiler).
// `a_columns`: A's columns contiguous (tiled_code), "|acol" in the key.
static kernels::Program tiled_program(const gpu::ContextPtr& ctx, DType dtype, const TiledParams& p, bool vec4_staging,
                                      const std::string& epilogue = "", const std::string& epilogue_name = "",
                                      bool a_columns = false) {
  const std::string t = wgsl_type(dtype);
  a_columns = a_columns && !p.direct();
  const std::string acol = a_columns ? "|acol" : "";
  const bool epi = !epilogue.empty();
  if (epi) {
    const bool vec4_loads = !p.direct() && vec4_layout(p) && vec4_staging;
    const char* file = p.direct() ? "matmul_direct.wgsl" : "matmul_reg_tiled.wgsl";
    std::string acc = (dtype == DType::f16 && !p.f32_accumulate) ? "f16" : "f32";
    int threads = (p.bm / p.tm) * (p.bn / p.tn);
    return kernels::Program::generated(ctx,
                                       "matmul|" + p.str() + (vec4_loads ? "|v4loads" : "") + acol + "|" +
                                           dtype_name(dtype) + "|+" + epilogue_name + "|" + epilogue,
                                       [&] {
                                         kernels::Values v =
                                             p.direct() ? direct_code(p.tm, p.tn, p.bn / p.tn, t, true)
                                                        : tiled_code(p, threads, acc, t, vec4_loads, true, a_columns);
                                         v["BV"] = vec4_loads ? "vec4<" + t + ">" : t;
                                         v["ACC"] = acc;
                                         v["T"] = t;
                                         return kernels::fill_template(kernels::wgsl_source("matmul_common.wgsl"), v) +
                                                kernels::fill_template(kernels::wgsl_source(file), v) + epilogue;
                                       },
                                       {.f16 = dtype == DType::f16, .validated = true});
  }
  if (p.direct())
    return matmul_program(ctx, dtype, "matmul|" + p.str(), "matmul_direct.wgsl",
                          [&] { return direct_code(p.tm, p.tn, p.bn / p.tn, t); });
  std::string acc = (dtype == DType::f16 && !p.f32_accumulate) ? "f16" : "f32";
  int threads = (p.bm / p.tm) * (p.bn / p.tn);
  const bool vec4_loads = vec4_layout(p) && vec4_staging;
  return matmul_program(ctx, dtype, "matmul|" + p.str() + (vec4_loads ? "|v4loads" : "") + acol,
                        "matmul_reg_tiled.wgsl", [&] {
                          kernels::Values v = tiled_code(p, threads, acc, t, vec4_loads, false, a_columns);
                          v["BV"] = vec4_loads ? "vec4<" + t + ">" : t;
                          v["ACC"] = acc;
                          return v;
                        });
}

void run_tiled(const MatmulProblem& prob, const TiledParams& p) {
  if (std::string why = tiled_unsupported(*prob.ctx, p, prob.dtype()); !why.empty())
    throw Error(ErrorKind::Unsupported, "matmul " + p.str() + ": " + why);
  dispatch_tiles(prob,
                 tiled_program(prob.ctx, prob.dtype(), p, matmul_vec4_staging(prob), "", "", matmul_a_columns(prob)),
                 p.bm, p.bn);
}

std::pair<Tensor, Tensor> split_k_views(const Tensor& a, const Tensor& b, int slices) {
  // Splitting K is a view whatever the operands' strides: A [M, K] as [S, M, K/S] with slice s at
  // s·(K/S) columns on, B [K, N] as [S, K/S, N]. (reshape would copy a transposed operand: the
  // GPU's weight gradients x^T @ g and dX = g @ W^T took a strided copy a product.)
  const int64_t M = a.shape(0), K = a.shape(1), N = b.shape(1), ks = K / slices;
  const auto& as = a.strides();
  const auto& bs = b.strides();
  Tensor av =
      TensorAccess::make(TensorAccess::storage(a), {slices, M, ks}, {ks * as[1], as[0], as[1]}, a.offset(), a.dtype());
  Tensor bv =
      TensorAccess::make(TensorAccess::storage(b), {slices, ks, N}, {ks * bs[0], bs[0], bs[1]}, b.offset(), b.dtype());
  return {av, bv};
}

int split_k_factor(bool cpu_adapter, DType dtype, int64_t M, int64_t N, int64_t K, int64_t batches,
                   const TiledParams& p) {
  if (cpu_adapter || dtype != DType::f32 || batches != 1 || p.direct()) return 1;
  int64_t tiles = ((M + p.bm - 1) / p.bm) * ((N + p.bn - 1) / p.bn);
  int s = 1;
  while (s < 16 && tiles * s < 512 && K % (8 * s) == 0 && K / (2 * s) >= 256) s *= 2;
  return s;
}

void run_split_k(const MatmulProblem& prob, int slices, const TiledParams& p) {
  if (prob.batches != 1 || prob.a.rank() != 2 || prob.b.rank() != 2 || slices < 1 || prob.K % slices)
    throw Error(ErrorKind::Value, "matmul split-K: " + std::to_string(slices) +
                                      " slices of K = " + std::to_string(prob.K) + " for " + prob.a.describe() + " @ " +
                                      prob.b.describe() + " (2-D operands, K a multiple of the slices)");
  auto [a, b] = split_k_views(prob.a, prob.b, slices);
  MatmulProblem part = make_problem(a, b);
  run_tiled(part, p);
  int64_t n = prob.M * prob.N;
  kernels::Program::file(prob.ctx, "sum_slices.wgsl")
      .launch({prob.c, part.c}, {n, slices}, kernels::groups_for(*prob.ctx, uint64_t(n), 256));
}

bool& matmul_as_gpu() {
  static bool on = [] {
    const char* v = std::getenv("SURFGRAD_MATMUL_AS_GPU");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

bool matmul_cpu_choices(const gpu::Context& ctx) { return ctx.info().is_cpu && !matmul_as_gpu(); }

int& matmul_forced_slices() {
  static int slices = 0;
  return slices;
}

// The slices split-K takes for a 2-D product (1: none): the heuristic's, or the tests' forced.
static int slices_for(const gpu::ContextPtr& ctx, DType dtype, int64_t M, int64_t N, int64_t K, int64_t batches,
                      const TiledParams& p) {
  const int forced = matmul_forced_slices();
  if (forced > 1) return dtype == DType::f32 && batches == 1 && K % forced == 0 ? forced : 1;
  return split_k_factor(matmul_cpu_choices(*ctx), dtype, M, N, K, batches, p);
}

void run_matmul_with(const MatmulProblem& prob, const TiledParams& p) {
  int slices = slices_for(prob.ctx, prob.dtype(), prob.M, prob.N, prob.K, prob.batches, p);
  if (slices > 1 && prob.a.rank() == 2 && prob.b.rank() == 2)
    run_split_k(prob, slices, p);
  else
    run_tiled(prob, p);
}

void prewarm_matmul(const gpu::ContextPtr& ctx, DType dtype, int64_t M, int64_t N, int64_t K, bool a_transposed,
                    bool b_transposed) {
  // matmul_vec4_staging for dense operands from their buffers' start (a transposed one's columns
  // are not unit-stride); split-K's slices keep it (K/S is a multiple of 8).
  const bool vec4 = !a_transposed && !b_transposed && K % 4 == 0 && N % 4 == 0;
  if (!tensor_prewarm_on(*ctx)) return;
  try {
    const TiledParams p = matmul_params(ctx, dtype, M, N, K, vec4);
    if (!tiled_unsupported(*ctx, p, dtype).empty()) return;
    kernels::PrewarmOnly only;
    if (split_k_factor(matmul_cpu_choices(*ctx), dtype, M, N, K, 1, p) > 1)
      kernels::Program::file(ctx, "sum_slices.wgsl");
    tiled_program(ctx, dtype, p, vec4, "", "", a_transposed);
  } catch (const Error&) {
    // a head start only: the product reports its own errors
  }
}

void run_matmul(const MatmulProblem& prob) {
  if (run_subgroup_matrix_default(prob)) return;  // f16 on tensor cores where the adapter has them
  run_matmul_with(prob, matmul_params(prob.ctx, prob.dtype(), prob.M, prob.N, prob.K, matmul_vec4_staging(prob)));
}

// ---------------------------------------------------------------- lazy mode: epilogues

void run_matmul_into(const Tensor& out, const Tensor& a, const Tensor& b) {
  MatmulProblem p = make_problem(a, b, &out);
  if (p.c.numel() == 0) return;
  if (p.K == 0)
    p.c.assign(scalar_like(p.c, 0));
  else
    run_matmul(p);
}

// mm_epilogue's WGSL: the leaves' bindings from `binding`, their offsets and (row, column)
// strides as parameter words from `word` (three a leaf), then the tree's constants.
static std::string epilogue_source(const MatmulEpilogue& e, const std::string& t, size_t binding, size_t word) {
  auto U = [](size_t v) { return std::to_string(v) + "u"; };
  std::string s, loads;
  for (size_t k = 0; k < e.leaves.size(); ++k) {
    std::string buf = "mm_e" + std::to_string(k);
    s += "@group(0) @binding(" + std::to_string(binding + k) + ") var<storage, read> " + buf + ": array<" +
         wgsl_type(e.leaves[k].dtype()) + ">;\n";
    size_t w = word + 3 * k;
    loads += "  let " + e.names[k] + " = " + buf + "[arg(" + U(w) + ") + r * arg(" + U(w + 1) + ") + col * arg(" +
             U(w + 2) + ")];\n";
  }
  size_t params = word + 3 * e.leaves.size();
  s += "fn param_f32(k: u32) -> f32 { return arg_f32(" + U(params) + " + k); }\n";
  s += "fn param_i32(k: u32) -> i32 { return arg_i32(" + U(params) + " + k); }\n";
  s += "fn param_u32(k: u32) -> u32 { return arg(" + U(params) + " + k); }\n";
  s += e.functions;
  s += "fn mm_epilogue(" + e.acc_name + ": " + t + ", r: u32, col: u32) -> " + t + " {\n" + loads + "  return " + t +
       "(" + e.expr + ");\n}\n";
  return s;
}

// The words after a kernel's own parameters: per leaf offset, row and column strides; constants.
static void append_epilogue_words(std::vector<uint32_t>& meta, const MatmulEpilogue& e) {
  for (size_t k = 0; k < e.leaves.size(); ++k) {
    meta.push_back(kernels::Param(e.leaves[k].offset()).word);
    meta.push_back(kernels::Param(e.strides[k].first).word);
    meta.push_back(kernels::Param(e.strides[k].second).word);
  }
  meta.insert(meta.end(), e.params.begin(), e.params.end());
}

bool run_matmul_epilogue(const Tensor& out, const Tensor& a, const Tensor& b, const MatmulEpilogue& e,
                         int forced_slices, const TiledParams* tiles) {
  if (a.rank() != 2 || b.rank() != 2 || a.dtype() != DType::f32 || b.dtype() != DType::f32 ||
      out.dtype() != DType::f32 || !out.is_contiguous() || out.offset() != 0 || e.leaves.size() > 5)
    return false;
  for (const Tensor& l : e.leaves)
    if (l.dtype() == DType::f16) return false;
  MatmulProblem prob = make_problem(a, b, &out);
  if (prob.K == 0 || prob.c.numel() == 0 || prob.c.shape() != out.shape()) return false;
  const bool vec4 = matmul_vec4_staging(prob);
  const TiledParams p = tiles ? *tiles : matmul_params(prob.ctx, prob.dtype(), prob.M, prob.N, prob.K, vec4);
  if (!tiled_unsupported(*prob.ctx, p, prob.dtype()).empty()) return false;
  const std::string t = wgsl_type(prob.dtype());
  std::vector<kernels::Arg> args = {kernels::Arg(prob.c)};
  int slices = forced_slices > 0 ? forced_slices : slices_for(prob.ctx, prob.dtype(), prob.M, prob.N, prob.K, 1, p);
  if (slices > 1 && prob.K % slices) return false;
  if (slices > 1) {
    // As run_split_k: the slices' partial products, then their sum in slice order with the
    // epilogue applied to each sum (the value eager's sum pass stores).
    auto [as, bs] = split_k_views(prob.a, prob.b, slices);
    MatmulProblem part = make_problem(as, bs);
    run_tiled(part, p);
    const std::string src = epilogue_source(e, t, 2, 3);
    auto kernel = kernels::Program::generated(prob.ctx, "sum_slices.wgsl|+" + e.name + "|" + src, [&] {
      std::string s(kernels::wgsl_source("sum_slices.wgsl"));
      const std::string store = "c[i] = total;";
      s.replace(s.find(store), store.size(), "c[i] = mm_epilogue(total, i / arg(2u), i % arg(2u));");
      return s + src;
    });
    int64_t n = prob.M * prob.N;
    std::vector<uint32_t> meta = {kernels::Param(n).word, kernels::Param(slices).word, kernels::Param(prob.N).word};
    append_epilogue_words(meta, e);
    args.push_back(kernels::Arg(part.c));
    for (const Tensor& l : e.leaves) args.push_back(kernels::view(l));
    kernel.launch(std::span<const kernels::Arg>(args), meta, kernels::groups_for(*prob.ctx, uint64_t(n), 256));
    return true;
  }
  auto kernel =
      tiled_program(prob.ctx, prob.dtype(), p, vec4, epilogue_source(e, t, 3, 38), e.name, matmul_a_columns(prob));
  int64_t tiles_m = (prob.M + p.bm - 1) / p.bm, tiles_n = (prob.N + p.bn - 1) / p.bn;
  std::vector<uint32_t> meta = prob.meta;
  meta[3] = kernels::Param(tiles_m).word;
  meta[4] = kernels::Param(tiles_n).word;
  append_epilogue_words(meta, e);
  args.push_back(kernels::view(prob.a));
  args.push_back(kernels::view(prob.b));
  for (const Tensor& l : e.leaves) args.push_back(kernels::view(l));
  kernel.launch(std::span<const kernels::Arg>(args), meta, prob.ctx->grid_for(uint64_t(tiles_m) * uint64_t(tiles_n)));
  return true;
}

Tensor matmul_split_k_partials(const Tensor& a, const Tensor& b) {
  if (a.rank() != 2 || b.rank() != 2 || a.dtype() != DType::f32 || b.dtype() != DType::f32) return Tensor();
  const int64_t M = a.shape(0), K = a.shape(1), N = b.shape(1);
  if (K == 0 || M == 0 || N == 0 || b.shape(0) != K) return Tensor();
  // matmul_vec4_staging for 2-D operands (without building a problem and its output).
  const bool vec4 = a.strides()[1] == 1 && b.strides()[1] == 1 && K % 4 == 0 && N % 4 == 0 && a.strides()[0] % 4 == 0 &&
                    b.strides()[0] % 4 == 0 && a.offset() % 4 == 0 && b.offset() % 4 == 0;
  const TiledParams p = matmul_params(a.context(), DType::f32, M, N, K, vec4);
  const int slices = slices_for(a.context(), DType::f32, M, N, K, 1, p);
  if (slices < 2 || slices > kMaxLazySlices || K % slices) return Tensor();
  // run_split_k's views and product, without its sum.
  auto [as, bs] = split_k_views(a, b, slices);
  MatmulProblem part = make_problem(as, bs);
  run_tiled(part, p);
  return part.c;
}

}  // namespace surfgrad
