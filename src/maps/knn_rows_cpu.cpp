// Exact kNN on CPU adapters (knn_rows_cpu.hpp): the kernel's unrolled blocks and its dispatches.
#include "maps/knn_rows_cpu.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernels/launch.hpp"

namespace surfgrad {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

// The thread's R query rows as registers q<r>_<c> (vec4s), and their inner products with point j
// (its first vec4 at b): each vec4 of the point loaded once for the R rows, two running sums a
// row (independent multiply-adds, not one chain), then each row's key offered to its heap.
kernels::Values values(int k, int64_t d4, int r) {
  std::string load, dot;
  for (int i = 0; i < r; ++i) {
    load += "  let row" + S(i) + " = min(first + " + S(i) + "u * WG, last_row);\n";
    for (int64_t c = 0; c < d4; ++c)
      load += "  let q" + S(i) + "_" + S(c) + " = x4[row" + S(i) + " * D4 + " + S(c) + "u];\n";
    dot += "    var a" + S(i) + " = vec4<f32>();\n    var b" + S(i) + " = vec4<f32>();\n";
  }
  for (int64_t c = 0; c < d4; ++c) {
    dot += "    let p" + S(c) + " = x4[b + " + S(c) + "u];\n";
    for (int i = 0; i < r; ++i) {
      const std::string s = (c % 2 ? "b" : "a") + S(i);
      dot += "    " + s + " = fma(q" + S(i) + "_" + S(c) + ", p" + S(c) + ", " + s + ");\n";
    }
  }
  for (int i = 0; i < r; ++i) {
    const std::string s = "s" + S(i);
    dot += "    let " + s + " = a" + S(i) + " + b" + S(i) + ";\n";
    dot += "    offer(" + S(i) + "u, row" + S(i) + ", j, norms[j] - 2.0 * ((" + s + ".x + " + s + ".y) + (" + s +
           ".z + " + s + ".w)));\n";
  }
  return {{"K", S(k)}, {"D4", S(d4)}, {"R", S(r)}, {"LOAD_QUERY", load}, {"DOT", dot}};
}

// Query rows a thread (R): each point's load serves R rows.
int rows_a_thread() {
  const char* env = std::getenv("SURFGRAD_KNN_CPU_R");
  return env && *env ? std::clamp(std::atoi(env), 1, 8) : 2;
}

}  // namespace

bool knn_rows_cpu_used(const gpu::Context& ctx, int64_t d) {
#if defined(__wasi__) || defined(__EMSCRIPTEN__)
  (void)ctx;
  (void)d;
  return false;
#else
  const char* env = std::getenv("SURFGRAD_KNN_CPU_ROWS");
  if (env && std::string(env) == "0") return false;
  return ctx.info().is_cpu && d >= 1 && d <= kKnnRowsCpuMaxDims;
#endif
}

bool prewarm_knn_rows_cpu(const gpu::ContextPtr& ctx, int k, int64_t d) {
  if (k < 1 || k > 128 || !knn_rows_cpu_used(*ctx, d)) return false;
  return kernels::prewarm(ctx, "knn_rows_cpu.wgsl", values(k, (d + 3) / 4, rows_a_thread()));
}

KnnResult knn_rows_cpu(const Tensor& x, const Tensor& norms, int k, int64_t row_begin, int64_t row_end,
                       int64_t pairs_per_dispatch) {
  auto ctx = x.context();
  const int64_t n = x.shape(0), d = x.shape(1), rows = row_end - row_begin;
  if (d < 1 || d > kKnnRowsCpuMaxDims)
    throw Error(ErrorKind::Value, "knn: the CPU row kernel takes 1 to " + S(kKnnRowsCpuMaxDims) + " dimensions, got " +
                                      x.describe() + " (use knn_exact, which picks the kernel)");
  // Rows padded with zeros to whole vec4s (the inner products do not change).
  const int64_t d4 = (d + 3) / 4;
  const Tensor padded = d % 4 ? concat({x, Tensor::zeros(ctx, {n, 4 * d4 - d})}, 1).contiguous() : x;
  const int r = rows_a_thread();
  auto program = kernels::Program::file(ctx, "knn_rows_cpu.wgsl", values(k, d4, r));
  KnnResult out{Tensor::empty(ctx, {rows, k}, DType::i32), Tensor::empty(ctx, {rows, k}, DType::f32)};
  // About 2^28 pairs a dispatch, as the streaming kernel takes on CPU adapters: every submission
  // stays short (seconds), whole workgroups of rows each.
  const int64_t pairs = pairs_per_dispatch > 0 ? pairs_per_dispatch : int64_t(1) << 28;
  const int64_t wg_rows = 64 * int64_t(r), per = std::max<int64_t>(wg_rows, (pairs / n) / wg_rows * wg_rows);
  for (int64_t r0 = row_begin; r0 < row_end; r0 += per) {
    const int64_t r1 = std::min(row_end, r0 + per);
    program.launch({out.indices, out.distances, padded, norms}, {n, r0, r1, row_begin},
                   kernels::groups_for(*ctx, uint64_t(r1 - r0), uint64_t(wg_rows)));
  }
  return out;
}

}  // namespace surfgrad
