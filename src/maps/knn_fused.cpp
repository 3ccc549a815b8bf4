// Exact kNN in one streaming kernel (knn_fused.wgsl): inner products by register tiles, per-row
// top-k by threshold and queue, no distance matrix in memory. This file picks the tile shape for
// the adapter, generates the unrolled per-thread code and splits the rows over dispatches.
#include "maps/knn_fused.hpp"

#include <algorithm>
#include <string>

#include "kernels/launch.hpp"
#include "tensor/internal.hpp"

namespace surfgrad {

namespace {

struct FusedShape {
  int bm, bn, bk, tm, tn, queue;
  int threads() const { return (bm / tm) * (bn / tn); }
  uint64_t workgroup_bytes() const {
    return 4ull * (uint64_t(bk) * bm + uint64_t(bk) * bn + bn + 3ull * bm + 2ull * bm * queue + 2);
  }
};

// 128×128 tiles of 8×8 per thread (256 threads) on GPUs: the tuned matmul's shape, 16 FMAs per
// vec4 read from workgroup memory. CPU adapters run a workgroup as loops over its threads: 64×64
// tiles of 4×4 keep the unrolled code (and its compile time on lavapipe) four times smaller.
// Adapters with little workgroup memory (WebGPU's default 16 KiB) get the small shape and Q = 8.
FusedShape shape_for(const gpu::Context& ctx) {
  FusedShape big{128, 128, 8, 8, 8, 16}, small{64, 64, 8, 4, 4, 16}, tiny{64, 64, 8, 4, 4, 8};
  uint64_t limit = ctx.limits().max_compute_workgroup_storage_size;
  uint32_t max_threads = ctx.limits().max_compute_invocations_per_workgroup;
  if (!ctx.info().is_cpu && big.workgroup_bytes() <= limit && uint32_t(big.threads()) <= max_threads) return big;
  if (small.workgroup_bytes() <= limit && uint32_t(small.threads()) <= max_threads) return small;
  return tiny;
}

std::string S(int v) { return std::to_string(v); }

// The per-thread blocks of knn_fused.wgsl, unrolled: every register index is a constant.
kernels::Values generate(const FusedShape& f) {
  const int cells = f.tm * f.tn;
  auto cell = [&](int i, int j) { return "acc[" + S(i * f.tn + j) + "]"; };
  auto bit = [&](int e) { return "(1u << " + S(e % 32) + "u)"; };
  auto word = [&](int e) { return "pend" + S(e / 32); };
  auto local_row = [&](int i) { return "ty * TM + " + S(i) + "u"; };
  auto col = [&](int j) { return "i32(col0 + tx * TN + " + S(j) + "u)"; };
  std::string declare = "  var acc: array<f32, " + S(cells) + ">;\n";
  for (int w = 0; w < (cells + 31) / 32; ++w) declare += "  var pend" + S(w) + " = 0u;\n";
  std::string zero;
  for (int e = 0; e < cells; ++e) zero += "    acc[" + S(e) + "] = 0.0;\n";
  // Staging: the query rows' and the points' next BK dimensions, zero past N and D.
  std::string stage =
      "      for (var s = lid; s < BK * BM; s += THREADS) {\n"
      "        let r = s / BK; let kk = s % BK; let gr = row0 + r; let gk = k0 + kk;\n"
      "        var v = 0.0;\n"
      "        if (gr < N && gk < D) { v = x[gr * D + gk]; }\n"
      "        let at = kk * BM + r;\n"
      "        a_tile[at / 4u][at % 4u] = v;\n"
      "      }\n"
      "      for (var s = lid; s < BK * BN; s += THREADS) {\n"
      "        let c = s / BK; let kk = s % BK; let gc = col0 + c; let gk = k0 + kk;\n"
      "        var v = 0.0;\n"
      "        if (gc < N && gk < D) { v = x[gc * D + gk]; }\n"
      "        let at = kk * BN + c;\n"
      "        b_tile[at / 4u][at % 4u] = v;\n"
      "      }\n";
  // BK rank-1 updates: a thread's TM rows and TN columns are contiguous, read as vec4s.
  std::string compute;
  const char* lane = "xyzw";
  for (int kk = 0; kk < f.bk; ++kk) {
    compute += "    {\n";
    for (int i4 = 0; i4 < f.tm / 4; ++i4)
      compute += "      let a" + S(i4) + " = a_tile[" + S(kk * f.bm / 4) + "u + ty * (TM / 4u) + " + S(i4) + "u];\n";
    for (int j4 = 0; j4 < f.tn / 4; ++j4)
      compute += "      let b" + S(j4) + " = b_tile[" + S(kk * f.bn / 4) + "u + tx * (TN / 4u) + " + S(j4) + "u];\n";
    for (int i = 0; i < f.tm; ++i)
      for (int j = 0; j < f.tn; ++j)
        compute += "      " + cell(i, j) + " = fma(a" + S(i / 4) + "." + lane[i % 4] + ", b" + S(j / 4) + "." +
                   lane[j % 4] + ", " + cell(i, j) + ");\n";
    compute += "    }\n";
  }
  // Keys |x_j|² − 2·x_i·x_j, and the candidates that beat their row's bar.
  std::string select;
  for (int i = 0; i < f.tm; ++i) {
    select += "    {\n      let r = " + local_row(i) + "; let row = row0 + r; let live = row < row_end;\n";
    for (int j = 0; j < f.tn; ++j) {
      int e = i * f.tn + j;
      select += "      " + cell(i, j) + " = b_norm[tx * TN + " + S(j) + "u] - 2.0 * " + cell(i, j) + ";\n";
      select += "      if (live && passes(" + cell(i, j) + ", " + col(j) + ", r, row)) { " + word(e) + " |= " + bit(e) +
                "; }\n";
    }
    select += "    }\n";
  }
  std::string push = "      if ((pend0";
  for (int w = 1; w < (cells + 31) / 32; ++w) push += " | pend" + S(w);
  push += ") != 0u) {\n";
  std::string refilter;
  for (int i = 0; i < f.tm; ++i)
    for (int j = 0; j < f.tn; ++j) {
      int e = i * f.tn + j;
      std::string test = "(" + word(e) + " & " + bit(e) + ") != 0u";
      push += "        if (" + test + " && push(" + local_row(i) + ", " + cell(i, j) + ", " + col(j) + ", parity)) { " +
              word(e) + " &= ~" + bit(e) + "; }\n";
      refilter += "      if (" + test + " && !passes(" + cell(i, j) + ", " + col(j) + ", " + local_row(i) +
                  ", row0 + " + local_row(i) + ")) { " + word(e) + " &= ~" + bit(e) + "; }\n";
    }
  push += "      }\n";
  return {{"BM", S(f.bm)},   {"BN", S(f.bn)},       {"BK", S(f.bk)},
          {"TM", S(f.tm)},   {"TN", S(f.tn)},       {"THREADS", S(f.threads())},
          {"Q", S(f.queue)}, {"DECLARE", declare},  {"ZERO", zero},
          {"STAGE", stage},  {"COMPUTE", compute},  {"SELECT", select},
          {"PUSH", push},    {"REFILTER", refilter}};
}

}  // namespace

KnnResult knn_fused_rows(const Tensor& x, const Tensor& norms, int k, int64_t row_begin, int64_t row_end) {
  auto ctx = x.context();
  const int64_t n = x.shape(0), d = x.shape(1);
  FusedShape f = shape_for(*ctx);
  std::string key =
      "knn_fused|" + S(f.bm) + "x" + S(f.bn) + "x" + S(f.bk) + "|" + S(f.tm) + "x" + S(f.tn) + "|" + S(f.queue);
  auto program = kernels::Program::generated(
      ctx, key, [&] { return kernels::fill_template(kernels::wgsl_source("knn_fused.wgsl"), generate(f)); });
  int64_t rows = row_end - row_begin;
  KnnResult out{Tensor::empty(ctx, {rows, k}, DType::i32), Tensor::empty(ctx, {rows, k}, DType::f32)};
  int64_t tiles = (n + f.bn - 1) / f.bn;
  // Each dispatch streams all N points for its rows: about 2^36 pairs a dispatch (a quarter of a
  // second at a million points on an H100) keeps every submission short.
  int64_t per = std::max<int64_t>(f.bm, ((int64_t(1) << 36) / std::max<int64_t>(n, 1)) / f.bm * f.bm);
  for (int64_t r0 = row_begin; r0 < row_end; r0 += per) {
    int64_t r1 = std::min(row_end, r0 + per);
    program.launch({out.indices, out.distances, x, norms}, {n, d, r0, r1, row_begin, tiles, k},
                   kernels::groups_for(*ctx, uint64_t((r1 - r0 + f.bm - 1) / f.bm), 1));
  }
  return out;
}

}  // namespace surfgrad
