// Exact kNN in one streaming kernel (knn_fused.wgsl): inner products by register tiles, per-row
// top-k by threshold and queue, no distance matrix in memory. This file picks the tile shape for
// the adapter, generates the unrolled per-thread code and splits the work over dispatches.
#include "maps/knn_fused.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>

#include "kernels/launch.hpp"
#include "maps/knn_prune.hpp"
#include "maps/knn_rows_cpu.hpp"
#include "maps/knn_rows_gpu.hpp"
#include "tensor/internal.hpp"

namespace surfgrad {

namespace {

using FusedShape = KnnFusedShape;

std::string S(int v) { return std::to_string(v); }

}  // namespace

// Measured on the H100 (BENCHMARKS.md, 500k × 50-D, k = 90): 64×64 tiles of 4×4 a thread with a
// queue of 16 merged at 12 (2.41 s) beat 128×128 of 8×8 (3.22 s), although 128×128 computes
// the inner products faster (1.12 s alone): a row's merge stalls its whole workgroup at the next
// barrier, and a workgroup of 128 rows has a merging row in more of its tiles. Bigger queues
// cost more in sorting than they save in merges (q32: 3.05 s, q64: 6.04 s). With the workgroup
// merge (H200, 2026-11-26): 1.77 s at e1, 1.73 s at e4, 1.72 s at e8; 128×128 2.19 s (1.36 s
// without pushes: its early tiles overflow 128 queues at once). What counts most on the H100 now
// (2026-11-26, fourth session; 1M × 50-D, k = 90) is the workgroups an SM holds: the merge's lists
// in the staging tiles' memory and a queue of 12 merged at 10 took 15.3 KiB down to 11.5, and
// 5.26 → 5.16 s (rows a dispatch) and 4.70 → 4.39 s (points a dispatch). The shape needs
// 11.5 KiB of workgroup memory: within WebGPU's default 16 KiB. CPU adapters
// (lavapipe) run the 128×128 shape faster (10k points, k = 90: 9.1 s against 14.4 s): no barrier stalls there. In the
// browser the 64×64 shape on every adapter: with the 128×128 one (26 KiB of workgroup memory, 64 cells unrolled a
// thread) Chromium's SwiftShader adapter lost its device on the first map (the GPU process went away); the 64×64 shape
// passes the browser suite there.
// Native GPUs with short lists (k ≤ 45) take 128×64 tiles of 8×4 cells: the selection is light
// there, and twice the rows a workgroup halves the points' staging a row (H200, 2026-11-28, 1M ×
// 50-D: k = 15 3.78 s against 4.12, k = 45 4.05 against 4.22, k = 90 4.39 both; 21 KiB of
// workgroup memory, so only where the adapter offers it).
KnnFusedShape knn_fused_shape(const gpu::Context& ctx, int k) {
  // BK stays 8 at every D: fitting it to D (BK = 10 at D = 50, no padded dimensions) was slower
  // on the H200 (1M × 50-D, k = 90: 7.54 s against 6.95 s; BENCHMARKS.md), although it
  // multiplies 12% less: the stream is not bound by its multiply-adds. With padded tile rows it
  // is still no faster on the H100 (500k: 1.312 s against 1.259 s at q12m10).
  FusedShape gpu{64, 64, 8, 4, 4, 12, 10, 8, 512}, cpu{128, 128, 8, 8, 8, 16, 8, 1},
      short_lists{128, 64, 8, 8, 4, 12, 10, 8, 512};
  auto fits = [&](const KnnFusedShape& f) {
    return f.workgroup_bytes() <= ctx.limits().max_compute_workgroup_storage_size &&
           uint32_t(f.threads()) <= ctx.limits().max_compute_invocations_per_workgroup;
  };
#if defined(__wasi__)
  (void)k;
  (void)cpu;
  (void)short_lists;
  (void)fits;
#else
  if (ctx.info().is_cpu && fits(cpu)) return cpu;
  if (!ctx.info().is_cpu && k > 0 && k <= 45 && fits(short_lists)) return short_lists;
#endif
  return gpu;
}

std::string KnnFusedShape::describe() const {
  return S(bm) + "x" + S(bn) + "x" + S(bk) + "/" + S(tm) + "x" + S(tn) + "/q" + S(queue) + "m" + S(merge_at) + "e" +
         S(merge_every) + "s" + S(scratch) + (select ? (push ? "" : "/no-push") : "/compute-only");
}

KnnFusedShape KnnFusedShape::parse(const std::string& text) {
  KnnFusedShape f;
  auto bad = [&](const std::string& why) {
    throw Error(ErrorKind::Value,
                "knn shape '" + text + "': " + why + " (form BMxBNxBK/TMxTN/qQmMeE[sS][/compute-only|/no-push])");
  };
  // The whole text must be the form: trailing or missing pieces ("…e1s", "…e8junk") are refused.
  static const std::regex form(R"(^(\d{1,4})x(\d{1,4})x(\d{1,4})/(\d{1,4})x(\d{1,4})/q(\d{1,4})m(\d{1,4})e(\d{1,4}))"
                               R"((?:s(\d{1,5}))?(?:/(compute-only|no-push))?$)");
  std::smatch m;
  if (!std::regex_match(text, m, form)) bad("not of the form");
  int* fields[] = {&f.bm, &f.bn, &f.bk, &f.tm, &f.tn, &f.queue, &f.merge_at, &f.merge_every};
  for (int i = 0; i < 8; ++i) *fields[i] = std::stoi(m[i + 1].str());
  if (m[9].matched) f.scratch = std::stoi(m[9].str());
  f.select = m[10].str() != "compute-only";
  f.push = m[10].str() != "no-push";
  if (f.merge_every < 1 || f.merge_every > 64) bad("E must be in [1, 64]");
  if (f.merge_at < 1 || f.merge_at > f.queue) bad("M must be in [1, Q]");
  if (f.tm % 4 || f.tn % 4 || f.tm < 4 || f.tn < 4) bad("TM and TN must be multiples of 4");
  if (f.bm < f.tm || f.bn < f.tn || f.bm % f.tm || f.bn % f.tn) bad("BM must be a multiple of TM and BN of TN");
  if (f.bk < 1 || f.bk > 64 || f.queue < 2 || f.queue > 64) bad("BK must be in [1, 64] and Q in [2, 64]");
  if (f.tm * f.tn > 64) bad("TM·TN must be at most 64 (pending bits)");
  if (f.scratch < 128 || f.scratch > 4096) bad("S must be in [128, 4096] (a merge needs room for k ≤ 128)");
  // A row's list is set up, flushed and finished by thread `row` (< BM); the norms by thread j < BN.
  if ((f.bk * f.bm) % 4 || f.threads() < std::max(f.bm, f.bn))
    bad("BK·BM must be a multiple of 4, and the threads at least BM and BN");
  return f;
}

namespace {

// Where a merge copies the merging rows' lists: past the staging tiles (their own arrays), or in
// them. Merges run between tiles, after every thread's last read of the tiles and before the next
// tile is staged, so the tiles hold nothing live then. Measured on the H100 (BENCHMARKS.md), the
// memory this frees (2 KiB at 256 slots, 4 at 512) raised the workgroups an SM holds: 1M × 50-D,
// k = 90, 5.63 → 5.35 s. The tiles hold u32 so that ids go through them bit for bit (bitcasts,
// no float moves).
const char* scratch_in_tiles = R"(fn scratch_put(i: u32, key: f32, id: i32) {
  a_tile[i / 4u][i % 4u] = bitcast<u32>(key);
  b_tile[i / 4u][i % 4u] = bitcast<u32>(id);
}
fn scratch_key(i: u32) -> f32 { return bitcast<f32>(a_tile[i / 4u][i % 4u]); }
fn scratch_id(i: u32) -> i32 { return bitcast<i32>(b_tile[i / 4u][i % 4u]); })";
const char* scratch_apart = R"(var<workgroup> scratch_keys: array<f32, SCRATCH>;
var<workgroup> scratch_ids: array<i32, SCRATCH>;
fn scratch_put(i: u32, key: f32, id: i32) { scratch_keys[i] = key; scratch_ids[i] = id; }
fn scratch_key(i: u32) -> f32 { return scratch_keys[i]; }
fn scratch_id(i: u32) -> i32 { return scratch_ids[i]; })";

}  // namespace

std::string knn_cell_row(const KnnFusedShape& f, int i) {
  return f.strided ? "ty + " + S(i * (f.bm / f.tm)) + "u" : "ty * TM + " + S(i) + "u";
}
std::string knn_cell_col(const KnnFusedShape& f, int j) {
  return f.strided ? "tx + " + S(j * (f.bn / f.tn)) + "u" : "tx * TN + " + S(j) + "u";
}

namespace {

// The per-thread blocks of knn_fused.wgsl, unrolled: every register index is a constant.
kernels::Values generate(const FusedShape& f) {
  const int cells = f.tm * f.tn;
  auto cell = [&](int i, int j) { return "acc[" + S(i * f.tn + j) + "]"; };
  auto bit = [&](int e) { return "(1u << " + S(e % 32) + "u)"; };
  auto word = [&](int e) { return "pend" + S(e / 32); };
  auto local_row = [&](int i) { return knn_cell_row(f, i); };
  auto local_col = [&](int j) { return knn_cell_col(f, j); };
  auto col = [&](int j) { return "i32(col0 + " + local_col(j) + ")"; };
  std::string declare = "  var acc: array<f32, " + S(cells) + ">;\n  var sink = 0.0;\n";
  for (int w = 0; w < (cells + 31) / 32; ++w) declare += "  var pend" + S(w) + " = 0u;\n";
  std::string zero;
  for (int e = 0; e < cells; ++e) zero += "    acc[" + S(e) + "] = 0.0;\n";
  // Staging with prefetch: LOAD reads chunk (lt, lk) — the next one — from global memory into
  // registers while the current chunk is multiplied; STORE puts them into workgroup memory after
  // the barrier. Without it every chunk waited for its loads (measured on the H100: the
  // inner products alone ran at 11 TFLOP/s). Zero past N and D; norms past N are MAXF.
  std::string load = "        let lc0 = ((lt + rot) % tiles) * BN; let lk0 = lk * BK;\n";
  std::string store;
  // One tile's registers (prefix p), first row `base`, `rows` (BM or BN) rows, into `tile`.
  // BK·rows values over the threads: where the threads do not divide them (BK = 10 for D = 50,
  // say: no padded dimensions), the last register of some threads has nothing to stage.
  auto stage = [&](const std::string& p, const std::string& base, int rows, const std::string& extent,
                   const std::string& tile) {
    const int values = f.bk * rows, per = (values + f.threads() - 1) / f.threads();
    for (int s = 0; s < per; ++s) {
      std::string e = "(lid + " + S(s * f.threads()) + "u)", reg = p + S(s);
      bool ragged = (s + 1) * f.threads() > values;
      std::string guard = ragged ? e + " < " + S(values) + "u && " : "";
      declare += "  var " + reg + " = 0.0;\n";
      load += "        { let g = " + base + " + " + e + " / BK; let gk = lk0 + " + e + " % BK; " + reg +
              " = 0.0; if (" + guard + "g < N && gk < D) { " + reg + " = x[g * D + gk]; } }\n";
      store += std::string("      ") + (ragged ? "if (" + e + " < " + S(values) + "u) " : "") + "{ let at = (" + e +
               " % BK) * " + extent + " + " + e + " / BK; " + tile + "[at / 4u][at % 4u] = bitcast<u32>(" + reg +
               "); }\n";
    }
  };
  stage("pa", "row0", f.bm, "AS", "a_tile");  // the query rows
  stage("pb", "lc0", f.bn, "BS", "b_tile");   // the points of the next tile
  declare += "  var pn = MAXF;\n";
  load += "        if (lk == 0u && lid < BN) { pn = MAXF; if (lc0 + lid < N) { pn = norms[lc0 + lid]; } }\n";
  store += "      if (c == 0u && lid < BN) { b_norm[lid] = pn; }\n";
  // BK rank-1 updates: a thread's TM rows and TN columns are contiguous, read as vec4s.
  std::string compute;
  const char* lane = "xyzw";
  for (int kk = 0; kk < f.bk; ++kk) {
    compute += "    {\n";
    for (int i4 = 0; i4 < f.tm / 4; ++i4)
      compute += "      let a" + S(i4) + " = bitcast<vec4<f32>>(a_tile[" + S(kk * (f.bm + 4) / 4) +
                 "u + ty * (TM / 4u) + " + S(i4) + "u]);\n";
    for (int j4 = 0; j4 < f.tn / 4; ++j4)
      compute += "      let b" + S(j4) + " = bitcast<vec4<f32>>(b_tile[" + S(kk * (f.bn + 4) / 4) +
                 "u + tx * (TN / 4u) + " + S(j4) + "u]);\n";
    for (int i = 0; i < f.tm; ++i)
      for (int j = 0; j < f.tn; ++j)
        compute += "      " + cell(i, j) + " = fma(a" + S(i / 4) + "." + lane[i % 4] + ", b" + S(j / 4) + "." +
                   lane[j % 4] + ", " + cell(i, j) + ");\n";
    compute += "    }\n";
  }
  // Keys |x_j|² − 2·x_i·x_j, and the candidates that beat their row's bar (its threshold read
  // once per row, the points' norms once per tile). After the first tiles almost no key beats
  // its bar, so a row's keys are first tested together, their minimum against the bar: the exact
  // test (ties, the row itself, rows past the end) runs only where one may pass. "Not above"
  // rather than "at most" sends a NaN minimum to the exact test too.
  std::string select;
  if (f.select) {
    for (int j = 0; j < f.tn; ++j) select += "    let bn" + S(j) + " = b_norm[" + local_col(j) + "];\n";
    for (int i = 0; i < f.tm; ++i) {
      select += "    {\n      let r = " + local_row(i) + "; let tk = thr_key[r];\n";
      std::string least;
      for (int j = 0; j < f.tn; ++j) {
        select += "      " + cell(i, j) + " = bn" + S(j) + " - 2.0 * " + cell(i, j) + ";\n";
        least = j == 0 ? cell(i, j) : "min(" + least + ", " + cell(i, j) + ")";
      }
      select += "      if (!(" + least +
                " > tk)) {\n        let row = row0 + r; let live = row < row_end; let ti = thr_id[r];\n";
      for (int j = 0; j < f.tn; ++j) {
        int e = i * f.tn + j;
        select += "        { let id = " + col(j) + "; if (live && u32(id) != row && before(" + cell(i, j) +
                  ", id, tk, ti)) { " + word(e) + " |= " + bit(e) + "; } }\n";
      }
      select += "      }\n    }\n";
    }
  } else {
    for (int e = 0; e < cells; ++e) select += "    sink += acc[" + S(e) + "];\n";
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
  kernels::Values v{{"BM", S(f.bm)},
                    {"BN", S(f.bn)},
                    {"BK", S(f.bk)},
                    {"TM", S(f.tm)},
                    {"TN", S(f.tn)},
                    {"THREADS", S(f.threads())},
                    {"Q", S(f.queue)},
                    {"MERGE_AT", S(f.merge_at)},
                    {"MERGE_EVERY", S(f.merge_every)},
                    {"SCRATCH", S(f.scratch)},
                    {"SCRATCH_MEMORY", f.scratch_in_tiles() ? scratch_in_tiles : scratch_apart},
                    {"SELECTING", f.select ? "true" : "false"},
                    {"PUSHING", f.push ? "true" : "false"},
                    {"DECLARE", declare},
                    {"ZERO", zero},
                    {"LOAD", load},
                    {"STORE", store},
                    {"COMPUTE", compute},
                    {"SELECT", select},
                    {"PUSH", push},
                    {"REFILTER", refilter},
                    {"X_ELEM", "f32"},
                    {"EXTRA_BINDINGS", ""},
                    {"MERGED", ""},
                    {"INIT_BAR", ""},
                    {"MAIN_BUILTINS", ""},
                    {"CHUNKS", "(D + BK - 1u) / BK"}};
  knn_prune_values_off(v);
  return v;
}

}  // namespace

kernels::Values knn_fused_values(const KnnFusedShape& f) { return generate(f); }

namespace {
// The program knn_fused_rows asks for (prewarm_knn_fused asks for the same). prune_group: the
// tiles a skip test covers (knn_prune.hpp; the keys in the points' own units); 0: no test.
std::string fused_key(const KnnFusedShape& f, int prune_group = 0) {
  return "knn_fused|" + f.describe() + (prune_group > 0 ? "|prune" + std::to_string(prune_group) : "");
}
std::string fused_source(const KnnFusedShape& f, int prune_group = 0) {
  kernels::Values v = generate(f);
  if (prune_group > 0) knn_prune_values(v, 4, "thr_key[lid] + norms[my_row]", prune_group);
  return kernels::fill_template(kernels::wgsl_source("knn_fused.wgsl"), v);
}
}  // namespace

bool prewarm_knn_fused(const gpu::ContextPtr& ctx, int64_t n, int64_t d, int k, bool prune) {
  // Small sets' kernel: with N unknown, wherever the adapter may take it (a few ms of a worker
  // where the set turns out large, against 240-400 ms waited for where it is small).
  bool queued = false;
  if (n > 0 ? knn_rows_gpu_used(*ctx, n, d) : knn_rows_gpu_used(*ctx, 2, 4)) {
    queued = prewarm_knn_rows_gpu(ctx, n > 0 ? d : 0);
    if (n > 0) return queued;
  }
  if (knn_rows_cpu_used(*ctx, 1)) return queued;  // CPU adapters take knn_rows_cpu (prewarmed by its D)
  const KnnFusedShape f = knn_fused_shape(*ctx, k);
  if (prune) {  // the bounds' kernel, and the kernel without the test (knn_fused_dispatch may drop it)
    queued = kernels::prewarm(ctx, "knn_prune_bounds.wgsl") || queued;
    queued =
        kernels::prewarm_generated(ctx, fused_key(f), [&] { return fused_source(f); }, {.validated = true}) || queued;
  }
  const int group = prune ? knn_prune_group_tiles(kKnnPruneGroupTiles) : 0;
  return kernels::prewarm_generated(ctx, fused_key(f, group), [&] { return fused_source(f, group); },
                                    {.subgroups = prune, .validated = true}) ||
         queued;
}

KnnResult knn_fused_rows(const Tensor& x, const Tensor& norms, int k, int64_t row_begin, int64_t row_end,
                         const KnnFusedShape& f, int64_t pairs_per_dispatch, const KnnPrune* prune) {
  auto ctx = x.context();
  const int64_t n = x.shape(0), d = x.shape(1);
  if (f.workgroup_bytes() > ctx->limits().max_compute_workgroup_storage_size ||
      uint32_t(f.threads()) > ctx->limits().max_compute_invocations_per_workgroup)
    throw Error(ErrorKind::Value, "knn: shape " + f.describe() + " needs " + std::to_string(f.workgroup_bytes()) +
                                      " bytes of workgroup memory and " + std::to_string(f.threads()) +
                                      " threads; this adapter offers " +
                                      std::to_string(ctx->limits().max_compute_workgroup_storage_size) + " and " +
                                      std::to_string(ctx->limits().max_compute_invocations_per_workgroup));
  const bool pruned = prune && prune->defined();
  const int group = pruned ? int(prune->group_tiles) : 0;  // (the bounds' groups: one reading of the setting)
  auto program = kernels::Program::generated(ctx, fused_key(f, group), [&] { return fused_source(f, group); },
                                             {.subgroups = pruned, .validated = true});
  int64_t rows = row_end - row_begin;
  KnnResult out{Tensor::empty(ctx, {rows, k}, DType::i32), Tensor::empty(ctx, {rows, k}, DType::f32)};
  if (pruned) {
    const kernels::Arg args[] = {out.indices, out.distances, x, norms, prune->words};
    knn_fused_dispatch(program, args, n, d, k, row_begin, row_end, f, pairs_per_dispatch, prune, 1.0, [&] {
      return kernels::Program::generated(ctx, fused_key(f), [&] { return fused_source(f); }, {.validated = true});
    });
  } else {
    const kernels::Arg args[] = {out.indices, out.distances, x, norms};
    knn_fused_dispatch(program, args, n, d, k, row_begin, row_end, f, pairs_per_dispatch);
  }
  return out;
}

}  // namespace surfgrad

namespace surfgrad {

int64_t knn_rotate_rows() {
  const char* env = std::getenv("SURFGRAD_KNN_ROTATE_ROWS");
  if (!env || !*env) return kKnnRotateRows;
  char* end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  if (*end != 0 || v < 0 || v > (int64_t(1) << 30))
    throw Error(ErrorKind::Value, "SURFGRAD_KNN_ROTATE_ROWS='" + std::string(env) +
                                      "': use a count of rows in [0, 2^30] (0: every row block starts at the first "
                                      "point; unset: " +
                                      std::to_string(kKnnRotateRows) + ")");
  return v;
}

void knn_fused_dispatch(const kernels::Program& program, std::span<const kernels::Arg> args, int64_t n, int64_t d,
                        int k, int64_t row_begin, int64_t row_end, const KnnFusedShape& f, int64_t pairs_per_dispatch,
                        const KnnPrune* prune, double unit, const std::function<kernels::Program()>& unpruned) {
  auto ctx = program.context();
  int64_t tiles = (n + f.bn - 1) / f.bn;
  // About 2^36 pairs a dispatch (a quarter of a second at a million points on an H100) keeps every
  // submission short; on CPU adapters 2^28 (a browser's GPU process has a watchdog). A dispatch
  // takes all the rows (up to that many pairs a tile) and as many tiles of points as fit: the
  // next dispatch goes on from the lists it left (knn_fused.wgsl).
  const int64_t pairs = pairs_per_dispatch > 0 ? pairs_per_dispatch : int64_t(1) << (ctx->info().is_cpu ? 28 : 36);
  const int64_t rows_per = std::max<int64_t>(f.bm, (pairs / f.bn) / f.bm * f.bm);
  const int64_t rot_rows = knn_rotate_rows();
  bool pruning = prune && prune->defined();
  std::optional<kernels::Program> plain;  // the kernel without the skip test, once it is dropped
  for (int64_t r0 = row_begin; r0 < row_end; r0 += rows_per) {
    const int64_t r1 = std::min(row_end, r0 + rows_per), blocks = (r1 - r0 + f.bm - 1) / f.bm;
    const int64_t tiles_per = std::max<int64_t>(1, pairs / ((r1 - r0) * f.bn));
    for (int64_t t0 = 0; t0 < tiles; t0 += tiles_per) {
      const auto groups = kernels::groups_for(*ctx, uint64_t(blocks), 1);
      const int64_t t1 = std::min(tiles, t0 + tiles_per);
      if (!pruning) {
        (plain ? *plain : program)
            .launch(plain ? args.first(args.size() - 1) : args, {n, d, r0, r1, row_begin, t0, t1, tiles, k, rot_rows},
                    groups);
        continue;
      }
      program.launch(args,
                     {n, d, r0, r1, row_begin, t0, t1, tiles, k, rot_rows, prune->dims, unit, prune->block_offset(),
                      prune->stats_offset()},
                     groups);
      // After the first dispatch (where there are more): if it skipped too little, the rest streams
      // without the test (kKnnPruneKeepAbove; one readback of its counts).
      if (r0 == row_begin && t0 == 0 && t1 < tiles && unpruned) {
        const int64_t b0 = r0 / f.bm;
        uint64_t skipped = 0;
        for (uint32_t c : prune->words.slice(0, prune->stats_offset() + b0, prune->stats_offset() + b0 + blocks)
                              .to_vector<uint32_t>())
          skipped += c;
        if (double(skipped) < kKnnPruneKeepAbove * double(blocks) * double(t1 - t0)) {
          pruning = false;
          prune->abandoned = true;
          plain = unpruned();
        }
      }
    }
  }
}

}  // namespace surfgrad
