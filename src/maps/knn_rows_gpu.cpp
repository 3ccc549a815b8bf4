// Exact kNN for small sets on GPUs (knn_rows_gpu.hpp): the shape, the per-row lines of the
// kernel (R of them: the accumulators stay in registers) and the dispatches.
#include "maps/knn_rows_gpu.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/launch.hpp"

namespace surfgrad {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

// The kernel's template values: `vec4` when D is a multiple of 4 (the points read as vec4s),
// else f32 reads. R rows' lines unrolled by the host, nothing else. Two elements of the point a
// step: a thread's two vec4 loads take one 32-byte sector whole (a point's row is its own, 3 KiB
// from the next thread's at 784-D, and the L1 left beside 7 workgroups' slots cannot keep a
// sector until the next step: every load would fetch 32 bytes from L2 for 16).
kernels::Values values(const KnnRowsGpuShape& f, bool vec4) {
  std::string rows, dot = "      ", offer, two, one;
  for (int r = 0; r < f.rows; ++r) {
    const std::string a = "a" + S(r), q = "q" + S(r);
    rows += "  let row" + S(r) + " = min(first + " + S(r) + "u, last);\n  let " + q + " = row" + S(r) + " * DV;\n";
    dot += "var " + a + " = 0.0; ";
    two += "        " + a + " += dotv(x[" + q + " + c], p) + dotv(x[" + q + " + c + 1u], p2);\n";
    one += "        " + a + " += dotv(x[" + q + " + c], p);\n";
    offer += "      offer(" + S(r) + "u, row" + S(r) + ", j, nj - 2.0 * " + a + ");\n";
  }
  dot +=
      "\n      var c = 0u;\n      for (; c + 1u < DV; c += 2u) {\n        let p = x[pj + c];\n"
      "        let p2 = x[pj + c + 1u];\n" +
      two + "      }\n      if (c < DV) {\n        let p = x[pj + c];\n" + one + "      }";
  return {{"R", S(f.rows)},
          {"WG", S(f.threads)},
          {"CAP", S(f.cap)},
          {"ELEM", vec4 ? "vec4<f32>" : "f32"},
          {"DOTV", vec4 ? "dot(a, b)" : "a * b"},
          {"ROWS", rows},
          {"DOT", dot},
          {"OFFER", offer}};
}

const char* env_choice() { return std::getenv("SURFGRAD_KNN_GPU_ROWS"); }

}  // namespace

std::string KnnRowsGpuShape::describe() const { return "r" + S(rows) + "t" + S(threads) + "c" + S(cap); }

KnnRowsGpuShape knn_rows_gpu_shape(const gpu::Context& ctx) {
  // SURFGRAD_KNN_GPU_SHAPE=rRtTcC: another shape (measurements: bench/knn_cold_compile.sh).
  if (const char* env = std::getenv("SURFGRAD_KNN_GPU_SHAPE"); env && *env) {
    KnnRowsGpuShape f;
    char tail = 0;
    if (std::sscanf(env, "r%dt%dc%d%c", &f.rows, &f.threads, &f.cap, &tail) != 3 || f.rows < 1 || f.rows > 32 ||
        f.threads < 32 || f.threads > 1024 || f.cap - f.threads < 1 || f.cap > 4096)
      throw Error(ErrorKind::Value, "SURFGRAD_KNN_GPU_SHAPE='" + std::string(env) +
                                        "': not rRtTcC with R in [1, 32], T in [32, 1024], T < C <= 4096 "
                                        "(rows a workgroup, threads, slots a row; e.g. r8t256c512)");
    return f;
  }
  const uint64_t memory = ctx.limits().max_compute_workgroup_storage_size;
  const uint32_t threads = ctx.limits().max_compute_invocations_per_workgroup;
  // More rows a workgroup: each point's load serves more inner products (at 8 rows, MNIST 10k's
  // points are read from L2 1,250 times). 512 slots leave a row room for K ≤ 128 and a tile of
  // 256 between sorts; 256 slots a tile of 128.
  for (KnnRowsGpuShape f : {KnnRowsGpuShape{8, 256, 512}, KnnRowsGpuShape{8, 128, 256}}) {
    while (f.rows > 1 && f.workgroup_bytes() > memory) --f.rows;
    if (f.workgroup_bytes() <= memory && uint32_t(f.threads) <= threads && (f.rows >= 4 || f.threads == 128)) return f;
  }
  return {1, 64, 192};  // (no adapter offers less than WebGPU's 16 KiB and 256 threads)
}

bool knn_rows_gpu_used(const gpu::Context& ctx, int64_t n, int64_t d) {
  const char* env = env_choice();
  if (env && std::string(env) == "0") return false;
  if (env && std::string(env) == "1") return true;
  // Up to ~13,200 points in 784-D (knn_rows_gpu.hpp: the H100's numbers): there a warm run loses
  // at most ~25 ms to the streaming kernel, whose cold compile takes 0.4-0.6 s.
  return !ctx.info().is_cpu && n <= kKnnRowsGpuMaxPoints && double(n) * double(n) * double(d) <= kKnnRowsGpuMaxWork;
}

bool prewarm_knn_rows_gpu(const gpu::ContextPtr& ctx, int64_t d) {
  return kernels::prewarm(ctx, "knn_rows_gpu.wgsl", values(knn_rows_gpu_shape(*ctx), d <= 0 || d % 4 == 0));
}

KnnResult knn_rows_gpu(const Tensor& x, const Tensor& norms, int k, int64_t row_begin, int64_t row_end,
                       int64_t pairs_per_dispatch, const KnnRowsGpuShape* shape) {
  auto ctx = x.context();
  const int64_t n = x.shape(0), d = x.shape(1), rows = row_end - row_begin;
  const KnnRowsGpuShape f = shape ? *shape : knn_rows_gpu_shape(*ctx);
  if (k > f.cap - f.threads || f.workgroup_bytes() > ctx->limits().max_compute_workgroup_storage_size ||
      uint32_t(f.threads) > ctx->limits().max_compute_invocations_per_workgroup)
    throw Error(ErrorKind::Value, "knn: the GPU row kernel's shape " + f.describe() + " takes k ≤ " +
                                      S(f.cap - f.threads) + " (got " + S(k) + ") and needs " +
                                      S(int64_t(f.workgroup_bytes())) + " bytes of workgroup memory and " +
                                      S(f.threads) + " threads; this adapter offers " +
                                      S(int64_t(ctx->limits().max_compute_workgroup_storage_size)) + " and " +
                                      S(ctx->limits().max_compute_invocations_per_workgroup));
  const bool vec4 = d % 4 == 0;
  auto program = kernels::Program::file(ctx, "knn_rows_gpu.wgsl", values(f, vec4));
  KnnResult out{Tensor::empty(ctx, {rows, k}, DType::i32), Tensor::empty(ctx, {rows, k}, DType::f32)};
  // Whole workgroups of rows a dispatch, about as many pairs as the streaming kernel's (a
  // browser's GPU process has a watchdog): one dispatch for any set this kernel is chosen for.
  const int64_t pairs = pairs_per_dispatch > 0 ? pairs_per_dispatch : int64_t(1) << (ctx->info().is_cpu ? 28 : 36);
  const int64_t per = std::max<int64_t>(f.rows, (pairs / n) / f.rows * f.rows);
  for (int64_t r0 = row_begin; r0 < row_end; r0 += per) {
    const int64_t r1 = std::min(row_end, r0 + per);
    program.launch({out.indices, out.distances, x, norms}, {n, vec4 ? d / 4 : d, r0, r1, row_begin, k},
                   kernels::groups_for(*ctx, uint64_t(r1 - r0), uint64_t(f.rows)));
  }
  return out;
}

}  // namespace surfgrad
