// Exact kNN on subgroup matrices (knn_subgroup_matrix.hpp). Three steps:
//  1. prep (knn_sgmat_prep.wgsl): the points centred and scaled by a power of two s, rounded to
//     f16 (row-major and transposed copies, D padded to DP, a multiple of 16), with the norms of
//     each point's f16 rounding and of its residual;
//  2. candidates: knn_fused.wgsl's streaming top-k with its inner products replaced by 16×16×16
//     f16 subgroup-matrix products (f32 accumulate) into a workgroup tile, keeping KP ≥ k
//     candidates a row by the f16 key;
//  3. re-check (knn_sgmat_check.wgsl): the candidates' distances in f32, the k best of them, and a
//     flag where the f16 error bound could hide a true neighbour past the KP-th candidate; the
//     flagged rows are recomputed by the f32 kernel. So the lists are those of the f32 kernel
//     (recall 1.0), whatever the data (ties and duplicates end up flagged, never wrong).
#include "maps/knn_subgroup_matrix.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "kernels/subgroup_matrix_emulation.hpp"
#include "maps/knn_prune.hpp"
#include "maps/knn_sgmat_internal.hpp"
#include "tensor/internal.hpp"

namespace surfgrad {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

// Workgroup memory: knn_fused's without its staging tiles and its merge scratch (in the product
// tile: scratch_in_prod), plus the BM×(BN + pad) product tile and, staged, the BN points' panels
// (BN/16 panels of 16 rows of DP + 8 halves).
uint64_t candidate_bytes(const KnnFusedShape& f, const KnnSgmatVariant& v, bool staged, int dp) {
  return f.workgroup_bytes() - 4ull * uint64_t(f.bk) * uint64_t(f.bm + f.bn + 8) -
         (f.scratch_in_tiles() ? 0ull : 8ull * uint64_t(f.scratch)) + 4ull * uint64_t(f.bm) * uint64_t(f.bn + v.pad) +
         (staged ? (v.split ? 4ull : 2ull) * uint64_t(f.bn) * uint64_t(dp + 8) : 0);
}

// A merge's copies of the merging rows' lists (knn_fused.wgsl's scratch) in the product tile: the
// merges run after every thread has read its cells from it and before the next tile's products
// are stored (barriers on both sides), so it holds nothing live then; 4 KiB less workgroup
// memory, which put the staged kernel within lavapipe's 32 KiB. An id goes in as two exact f32
// halves (its bits as a float would be a subnormal for small ids: moves of those need not keep
// them). Needs 3·SCRATCH ≤ BM·PS.
const char* scratch_in_prod = R"(fn scratch_put(i: u32, key: f32, id: i32) {
  prod[i] = key;
  prod[SCRATCH + i] = f32(u32(id) >> 16u);
  prod[2u * SCRATCH + i] = f32(u32(id) & 0xffffu);
}
fn scratch_key(i: u32) -> f32 { return prod[i]; }
fn scratch_id(i: u32) -> i32 { return i32((u32(prod[SCRATCH + i]) << 16u) | u32(prod[2u * SCRATCH + i])); })";

int padded_dims(int64_t d) { return int((d + 15) / 16 * 16); }

bool has_f16_config(const gpu::Features& f) {
  for (const auto& c : f.subgroup_matrix_configs)
    if (c.component == "f16" && c.result == "f32" && c.m == 16 && c.n == 16 && c.k == 16) return true;
  return false;
}

// knn_fused.wgsl's values with the inner products on subgroup matrices. The kernel's D parameter
// carries NPAD (the transposed copy's row stride); DP is a constant of the pipeline. Each tile of
// points: subgroup g computes result tiles of the BM×BN block (16×16 each, DP/16 products),
// stores them into `prod` (rows PS = BN + pad floats apart), and after a barrier every thread
// reads its TM×TN cells from there (knn_cell_row/col: the layout).
//
// Hoisted (the default where DP ≤ 128): a subgroup's result tiles all lie in one row of tiles,
// so its left operands (the workgroup's query rows, the same for every tile of points) are loaded
// once before the stream, DP/16 matrices held in registers, and each tile of points loads only
// its right operands: half the loads. With emulated builtins every invocation computes whole
// tiles by itself, so "subgroups" there are 16 groups of 16 invocations, one tile each (lavapipe's
// subgroups of 8 would not split the 16 tiles evenly): the same generated code, other constants.
// Staged (hoisted only): the next tile's BN points are read as vec4s into registers while this
// tile is multiplied (LOAD), and put into per-16-point panels after the tile's first barrier
// (STORE), where every subgroup loads its right operands col_major at literal offsets.
// plain: the code before hoisting (the loop over k-steps in every tile; the next tile's norms
// read under branches), kept for the diagnostic's comparison.
// right_cols: the right operands loaded col_major from the row-major copy x (a 16-point block is
// 16 rows of DP contiguous halves) instead of row_major from xt (16 rows 2·NPAD bytes apart).
kernels::Values candidate_values(const KnnFusedShape& f, const KnnSgmatVariant& variant, bool staged, bool split,
                                 int dp, int sg, bool emulate, bool dump, bool plain, bool right_cols, bool margin_bar,
                                 int prune_group) {
  kernels::Values v = knn_fused_values(f);
  const int cells = f.tm * f.tn, across_n = f.bn / 16, tiles = (f.bm / 16) * across_n, groups = f.threads() / sg;
  std::string declare = "  var acc: array<f32, " + S(cells) + ">;\n  var sink = 0.0;\n  var pn = MAXF;\n";
  for (int w = 0; w < (cells + 31) / 32; ++w) declare += "  var pend" + S(w) + " = 0u;\n";
  const std::string across = S(across_n) + "u";
  auto one_tile = [&](const std::string& tt) {
    return knn_sgmat_tile("(" + tt + ") / " + across, "(" + tt + ") % " + across,
                          "subgroupMatrixStore<row_major>(&prod, ti * 16u * PS + tj * 16u, m, PS);");
  };
  const int vgroups = emulate ? tiles : groups, per = tiles / std::max(1, vgroups);
  const bool hoist = !plain && dp <= 128 && tiles % vgroups == 0 && across_n % per == 0;
  std::string compute = "    {\n      let NPAD = D;\n";
  if (hoist) {
    const std::string who = emulate ? "(lid / " + S(f.threads() / vgroups) + "u)" : "sgi";
    declare += "  let hti = (" + who + " * " + S(per) + "u) / " + across + ";  // this subgroup's row of tiles\n";
    for (int s = 0; s < dp / 16; ++s)
      declare += "  let hl" + S(s) + " = subgroupMatrixLoad<TA, row_major>(&x, (row0 + hti * 16u) * DP + " + S(16 * s) +
                 "u, DP);\n";
    if (split)  // the query rows' residuals: X̃_i·r̃_j + r̃_i·X̃_j complete the split products
      for (int s = 0; s < dp / 16; ++s)
        declare += "  let hr" + S(s) + " = subgroupMatrixLoad<TA, row_major>(&xr, (row0 + hti * 16u) * DP + " +
                   S(16 * s) + "u, DP);\n";
    for (int u = 0; u < per; ++u) {
      compute += "      {\n        let tj = (" + who + " * " + S(per) + "u + " + S(u) + "u) % " + across +
                 ";\n        var m = TC();\n";
      for (int s = 0; s < dp / 16; ++s) {
        std::string right =
            staged       ? "subgroupMatrixLoad<TB, col_major>(&bpan[tj], " + S(16 * s) + "u, DPS)"
            : right_cols ? "subgroupMatrixLoad<TB, col_major>(&x, (col0 + tj * 16u) * DP + " + S(16 * s) + "u, DP)"
                         : "subgroupMatrixLoad<TB, row_major>(&xt, " + S(16 * s) + "u * NPAD + col0 + tj * 16u, NPAD)";
        if (split) {
          const std::string rr = "subgroupMatrixLoad<TB, col_major>(&rpan[tj], " + S(16 * s) + "u, DPS)";
          compute += "        { let bx = " + right + ";\n          m = subgroupMatrixMultiplyAccumulate(hl" + S(s) +
                     ", bx, m);\n          m = subgroupMatrixMultiplyAccumulate(hl" + S(s) + ", " + rr +
                     ", m);\n          m = subgroupMatrixMultiplyAccumulate(hr" + S(s) + ", bx, m); }\n";
        } else {
          compute += "        m = subgroupMatrixMultiplyAccumulate(hl" + S(s) + ", " + right + ", m);\n";
        }
      }
      compute += "        subgroupMatrixStore<row_major>(&prod, hti * 16u * PS + tj * 16u, m, PS);\n      }\n";
    }
  } else if (emulate) {
    // Emulated, any invocations may share a tile: lid / sg does not depend on subgroup_id.
    compute += "      for (var tt = lid / " + S(sg) + "u; tt < " + S(tiles) + "u; tt += " + S(groups) + "u) {\n" +
               one_tile("tt") + "      }\n";
  } else if (tiles % groups == 0) {
    // Every subgroup the same number of tiles: no control flow on the subgroup's id (the
    // builtins must run in subgroup-uniform control flow).
    for (int u = 0; u < tiles / groups; ++u) compute += one_tile("sgi * " + S(tiles / groups) + "u + " + S(u) + "u");
  } else {
    compute +=
        "      for (var tt = sgi; tt < " + S(tiles) + "u; tt += " + S(groups) + "u) {\n" + one_tile("tt") + "      }\n";
  }
  compute += "    }\n    workgroupBarrier();\n";
  for (int i = 0; i < f.tm; ++i)
    for (int j = 0; j < f.tn; ++j) {
      const std::string cell = "acc[" + S(i * f.tn + j) + "]", r = "(" + knn_cell_row(f, i) + ")",
                        c = knn_cell_col(f, j);
      compute += "    " + cell + " = prod[" + r + " * PS + " + c + "];\n";
      if (dump) compute += "    dump[(row0 + " + r + ") * D + col0 + " + c + "] = " + cell + ";\n";
    }
  // The next tile's norms, read by every invocation (the index clamped, the value selected):
  // this runs just before the subgroup-matrix builtins, which need the whole subgroup converged,
  // and the matmul that passes on the H200 never branches between its last barrier and them.
  // `plain` keeps the branchy read it replaced (the diagnostic's comparison).
  std::string load = plain ? "        let lc0 = ((lt + rot) % tiles) * BN;\n        if (lid < BN) { pn = MAXF; if (lc0 "
                             "+ lid < N) { pn = "
                             "norms[lc0 + lid]; } }\n"
                           : "        let lc0 = ((lt + rot) % tiles) * BN;\n        pn = select(MAXF, norms[min(lc0 + "
                             "lid, N - 1u)], lid < BN "
                             "&& lc0 + lid < N);\n";
  std::string store = "      if (lid < BN) { b_norm[lid] = pn; }\n";
  if (staged) {
    // BN·DP/4 vec4s over the threads (DP a multiple of 16: a whole number each). Rows past N are
    // prep's zeros (xh has NPAD ≥ the last tile's end rows).
    const int quads = f.bn * dp / 4, each = quads / f.threads();
    for (int q = 0; q < each; ++q) {
      const std::string e = "(lid + " + S(q * f.threads()) + "u)", p = e + " / (DP / 4u)", c4 = e + " % (DP / 4u)";
      declare += "  var rv" + S(q) + " = vec4<f16>();\n";
      load += "        rv" + S(q) + " = xv[(lc0 + " + p + ") * (DP / 4u) + " + c4 + "];\n";
      const char* comp[] = {".x", ".y", ".z", ".w"};
      store += "      { let p = " + p + "; let at = (p % 16u) * DPS + (" + c4 + ") * 4u;";
      for (int m = 0; m < 4; ++m) store += " bpan[p / 16u][at + " + S(m) + "u] = rv" + S(q) + comp[m] + ";";
      if (split) {
        declare += "  var rw" + S(q) + " = vec4<f16>();\n";
        // (from xr itself, 4 halves: a vec4 view would be a ninth binding beside the diagnostic's dump)
        const std::string at = "((lc0 + " + p + ") * DP + (" + c4 + ") * 4u)";
        load += "        rw" + S(q) + " = vec4<f16>(xr[" + at + "], xr[" + at + " + 1u], xr[" + at + " + 2u], xr[" +
                at + " + 3u]);\n";
        for (int m = 0; m < 4; ++m) store += " rpan[p / 16u][at + " + S(m) + "u] = rw" + S(q) + comp[m] + ";";
      }
      store += " }\n";
    }
  }
  v["X_ELEM"] = "f16";
  v["EXTRA_BINDINGS"] =
      std::string(staged ? "@group(0) @binding(4) var<storage, read> xv: array<vec4<f16>>;  // xh again, as vec4s\n"
                         : "@group(0) @binding(4) var<storage, read> xt: array<f16>;  // [DP, NPAD]\n") +
      "@group(0) @binding(5) var<storage, read> margin: array<f32>;  // [NPAD + 1]: the margin bar's, then k\n" +
      std::string(split ? "@group(0) @binding(6) var<storage, read> xr: array<f16>;  // [NPAD, DP]: r̃\n" : "") +
      std::string(dump ? "@group(0) @binding(" + S(split ? 7 : 6) +
                             ") var<storage, read_write> dump: array<f32>;  // [NPAD, NPAD]\n"
                       : "") +
      "enable chromium_experimental_subgroup_matrix;\n"
      "alias TA = subgroup_matrix_left<f16, 16, 16>;\nalias TB = subgroup_matrix_right<f16, 16, 16>;\n"
      "alias TC = subgroup_matrix_result<f32, 16, 16>;\n"
      "const DP: u32 = " +
      S(dp) + "u;\nconst PS: u32 = BN + " + S(variant.pad) + "u;  // the product tile's row stride\n" +
      "var<workgroup> prod: array<f32, BM * PS>;\n" +
      (staged
           ? "const DPS: u32 = DP + 8u;  // a panel's row stride (halves): 16-byte aligned rows\n"
             "var<workgroup> bpan: array<array<f16, 16u * DPS>, BN / 16u>;  // the tile's points, 16 a panel\n" +
                 std::string(split ? "var<workgroup> rpan: array<array<f16, 16u * DPS>, BN / 16u>;  // their r̃\n" : "")
           : "");
  if (3 * f.scratch > f.bm * (f.bn + variant.pad))
    throw Error(ErrorKind::Value, "knn (subgroup matrices): a merge's scratch of " + S(f.scratch) +
                                      " entries needs 3 floats each, more than the product tile holds");
  v["SCRATCH_MEMORY"] = scratch_in_prod;
  if (margin_bar) {
    // The margin bar (knn_exact_subgroup_matrix): once a row's k-th key is known, a candidate
    // whose key passes it by more than the row's margin cannot be a neighbour. The merges and a
    // dispatch's start (from the lists an earlier one left) lower the bar to it; ties at the bar
    // pass (id 2^31 - 1). k is margin[NPAD] (NPAD: the D parameter), read at run time so that one
    // pipeline serves every k.
    v["MERGED"] =
        "  let ks = u32(margin[arg(1u)]);\n"
        "  for (var g = lid; g < count; g += THREADS) {\n"
        "    let r = merge_rows_at[g];\n"
        "    let mb = out_key[(row0 + r - out_row0) * K + ks - 1u] + margin[row0 + r];\n"
        "    if (mb < thr_key[r]) { thr_key[r] = mb; thr_id[r] = 0x7fffffff; }\n"
        "  }\n  workgroupBarrier();\n";
    v["INIT_BAR"] =
        "      { let mb = out_key[list_base + u32(margin[D]) - 1u] + margin[my_row];\n"
        "        if (mb < tk) { tk = mb; ti = 0x7fffffff; } }\n";
  }
  v["MAIN_BUILTINS"] = ", @builtin(subgroup_id) sgi: u32";
  v["CHUNKS"] = "1u";
  v["DECLARE"] = declare;
  v["ZERO"] = "";
  v["LOAD"] = load;
  v["STORE"] = store;
  v["COMPUTE"] = compute;
  if (prune_group > 0) {
    if (dump)
      throw Error(ErrorKind::Value, "knn (subgroup matrices): tile skipping and the products' dump exclude each other");
    // A row's bar as a distance: the keys' error is at most E_i (the margin is 2.25·E_i); the norms
    // are |X_j|² of the scaled f32 points, and (1 + 2^-8) is margin besides.
    knn_prune_values(v, split ? 7 : 6, "thr_key[lid] + norms[my_row] * (1.0 + 0x1p-8f) + margin[my_row]", prune_group);
  }
  return v;
}

void check_points(const Tensor& x, int k, int64_t row_begin, int64_t row_end) {
  if (x.rank() != 2 || x.dtype() != DType::f32)
    throw Error(ErrorKind::Shape, "knn (subgroup matrices): points must be f32 [N, D], got " + x.describe());
  const int64_t n = x.shape(0);
  if (k < 1 || k > 128 || k >= n)
    throw Error(ErrorKind::Value,
                "knn (subgroup matrices): k = " + S(k) + " must be in [1, 128] and below N = " + S(n));
  if (row_begin < 0 || row_end > n || row_begin >= row_end)
    throw Error(ErrorKind::Value, "knn (subgroup matrices): rows [" + S(row_begin) + ", " + S(row_end) +
                                      ") are not a non-empty range of the " + S(n) + " points");
}

}  // namespace

std::string knn_subgroup_matrix_unsupported(const gpu::Context& ctx, int64_t d, const KnnSubgroupMatrixOptions& o) {
  const gpu::Features& f = ctx.features();
  if (!f.shader_f16 || !f.subgroups) return "needs shader-f16 and subgroups";
  if (!o.emulate && !f.subgroup_matrix)
    return "no subgroup matrices on this device (Dawn's chromium-experimental-subgroup-matrix)";
  if (!o.emulate && !has_f16_config(f)) return "the adapter has no f16xf16->f32 16x16x16 subgroup-matrix config";
  if (f.subgroup_min_size != f.subgroup_max_size || f.subgroup_min_size == 0)
    return "needs one known subgroup size (the adapter reports " + S(f.subgroup_min_size) + "-" +
           S(f.subgroup_max_size) + ")";
  const KnnSgmatVariant v = knn_sgmat_variant();
  KnnFusedShape shape = knn_sgmat_shape(v);
  const int groups = shape.threads() / int(f.subgroup_min_size), tiles = (shape.bm / 16) * (shape.bn / 16);
  if (!o.emulate && (groups < 1 || tiles % groups != 0))
    return "subgroups of " + S(f.subgroup_min_size) + " do not split the 16 result tiles evenly";
  if (d > 4096) return "D above 4096";
  const int dp = padded_dims(d);
  const uint64_t bytes = candidate_bytes(shape, v, knn_sgmat_staged(ctx, v, dp, false, o.right_cols), dp);
  if (bytes > ctx.limits().max_compute_workgroup_storage_size)
    return S(int64_t(bytes)) + " bytes of workgroup memory (" + v.describe() + "), more than the adapter's " +
           S(ctx.limits().max_compute_workgroup_storage_size);
  return "";
}

std::vector<std::pair<int64_t, int64_t>> knn_sgmat_recompute_ranges(const std::vector<int32_t>& flag, int64_t gap) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  const int64_t rows = int64_t(flag.size());
  for (int64_t a = 0; a < rows;) {
    if (!flag[size_t(a)]) {
      ++a;
      continue;
    }
    int64_t b = a;
    while (b < rows && flag[size_t(b)]) ++b;
    if (!ranges.empty() && a - ranges.back().second < gap)
      ranges.back().second = b;  // the rows between cost less than a dispatch of their own
    else
      ranges.push_back({a, b});
    a = b;
  }
  return ranges;
}

bool knn_subgroup_matrix_rule(const std::string& env, const std::string& adapter, bool runs, int64_t rows, int k,
                              bool ordered) {
  if (!env.empty() && env != "0" && env != "1")
    throw Error(ErrorKind::Value, "SURFGRAD_KNN_SUBGROUP_MATRIX='" + env +
                                      "': use 1 (the kNN on subgroup matrices wherever it runs), 0 (never), or "
                                      "leave it unset (NVIDIA adapters, k <= " +
                                      S(kKnnSubgroupMatrixMaxK) + " (" + S(kKnnSubgroupMatrixMaxKOrdered) +
                                      " on points sorted by cell), from " + S(kKnnSubgroupMatrixMinPoints) + " rows)");
  if (env == "0" || !runs) return false;
  if (env == "1") return true;
  std::string name = adapter;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const int max_k = ordered ? kKnnSubgroupMatrixMaxKOrdered : kKnnSubgroupMatrixMaxK;
  return name.find("nvidia") != std::string::npos && k <= max_k && rows >= kKnnSubgroupMatrixMinPoints;
}

bool knn_subgroup_matrix_chosen(const gpu::Context& ctx, int64_t rows, int64_t d, int k, bool ordered) {
  const char* env = std::getenv("SURFGRAD_KNN_SUBGROUP_MATRIX");
  const std::string asked = env ? env : "";
  // (Whether it runs is asked only where the answer matters: it compiles nothing, but reads limits.)
  const bool runs = asked != "0" && knn_subgroup_matrix_unsupported(ctx, d).empty();
  return knn_subgroup_matrix_rule(asked, ctx.info().vendor + " " + ctx.info().name, runs, rows, k, ordered);
}

std::string KnnSgmatVariant::describe() const {
  return std::string(strided ? "strided" : "blocked") + "|pad" + S(pad) + (staged ? "|staged" : "") +
         (split ? "|split" : "") + "|q" + S(queue) + "m" + S(merge_at);
}

KnnSgmatVariant knn_sgmat_variant() {
  KnnSgmatVariant v;
  auto text = [](const char* name) {
    const char* e = std::getenv(name);
    return std::string(e ? e : "");
  };
  const std::string layout = text("SURFGRAD_KNN_SGMAT_LAYOUT"), pad = text("SURFGRAD_KNN_SGMAT_PAD"),
                    stage = text("SURFGRAD_KNN_SGMAT_STAGE"), queue = text("SURFGRAD_KNN_SGMAT_QUEUE"),
                    split = text("SURFGRAD_KNN_SGMAT_SPLIT"), extra = text("SURFGRAD_KNN_SGMAT_EXTRA");
  if (!extra.empty()) {
    if (extra.size() > 3 || extra.find_first_not_of("0123456789") != std::string::npos || std::stoi(extra) > 256)
      throw Error(ErrorKind::Value, "SURFGRAD_KNN_SGMAT_EXTRA='" + extra +
                                        "': use the candidates a row keeps past k, 0 to 256 (unset: KP = 2k + 16)");
    v.extra = std::stoi(extra);
  }
  if (!split.empty() && split != "0" && split != "1")
    throw Error(ErrorKind::Value, "SURFGRAD_KNN_SGMAT_SPLIT='" + split + "': use 1 (split products) or 0");
  v.split = split == "1";
  if (v.split) v.queue = 16, v.merge_at = 12;  // (room for the second panel within 48 KiB)
  if (!layout.empty() && layout != "strided" && layout != "blocked")
    throw Error(ErrorKind::Value, "SURFGRAD_KNN_SGMAT_LAYOUT='" + layout + "': use strided or blocked");
  if (!stage.empty() && stage != "0" && stage != "1")
    throw Error(ErrorKind::Value, "SURFGRAD_KNN_SGMAT_STAGE='" + stage + "': use 1 (staged) or 0");
  if (!pad.empty() && (pad.size() > 2 || pad.find_first_not_of("0123456789") != std::string::npos ||
                       std::stoi(pad) % 4 != 0 || std::stoi(pad) > 32))
    throw Error(ErrorKind::Value, "SURFGRAD_KNN_SGMAT_PAD='" + pad + "': use a multiple of 4 in [0, 32] (floats)");
  if (!queue.empty()) {
    int q = 0, m = 0;
    char tail = 0;
    if (queue.size() > 5 || queue.find_first_not_of("0123456789,") != std::string::npos ||
        std::sscanf(queue.c_str(), "%d,%d%c", &q, &m, &tail) != 2 || q < 2 || q > 64 || m < 1 || m > q)
      throw Error(ErrorKind::Value, "SURFGRAD_KNN_SGMAT_QUEUE='" + queue + "': use Q,M with 2 <= Q <= 64, 1 <= M <= Q");
    v.queue = q, v.merge_at = m;
  }
  if (!layout.empty()) v.strided = layout == "strided";
  if (!stage.empty()) v.staged = stage == "1";
  if (!pad.empty()) v.pad = std::stoi(pad);
  return v;
}

KnnFusedShape knn_sgmat_shape(const KnnSgmatVariant& v) {
  if (!v.strided) return KnnFusedShape{64, 64, 4, 4, 4, v.queue, v.merge_at, 8, 512};
  KnnFusedShape f{64, 64, 4, 8, 2, v.queue, v.merge_at, 8, 512};  // TX = 32: a subgroup reads one row's 32 columns
  f.strided = true;
  return f;
}

bool knn_sgmat_staged(const gpu::Context& ctx, const KnnSgmatVariant& v, int dp, bool plain, bool right_cols) {
  // The staged code is the hoisted one's: a subgroup's result tiles in one row of tiles, which
  // subgroups of 128 would not have (8 tiles: two rows). (Emulated builtins hoist at any size.)
  return v.staged && dp <= 128 && !plain && !right_cols && ctx.features().subgroup_min_size <= 64 &&
         candidate_bytes(knn_sgmat_shape(v), v, true, dp) <= ctx.limits().max_compute_workgroup_storage_size;
}

bool knn_sgmat_split(const gpu::Context& ctx, const KnnSgmatVariant& v, int dp, bool plain, bool right_cols) {
  return v.split && knn_sgmat_staged(ctx, v, dp, plain, right_cols);
}

const Tensor& knn_sgmat_points(const KnnSgmatPrep& p, bool staged) { return staged ? p.xh : p.xt; }

std::string knn_sgmat_tile(const std::string& ti, const std::string& tj, const std::string& store) {
  return "      {\n        let ti = " + ti + "; let tj = " + tj +
         ";\n        var m = TC();\n        for (var kk = 0u; kk < DP; kk += 16u) {\n"
         "          let l = subgroupMatrixLoad<TA, row_major>(&x, (row0 + ti * 16u) * DP + kk, DP);\n"
         "          let r = subgroupMatrixLoad<TB, row_major>(&xt, kk * NPAD + col0 + tj * 16u, NPAD);\n"
         "          m = subgroupMatrixMultiplyAccumulate(l, r, m);\n        }\n        " +
         store + "\n      }\n";
}

std::string knn_sgmat_candidate_wgsl(const gpu::Context& ctx, int dp, int sg, bool emulate, bool dump, bool plain,
                                     bool push, bool right_cols, const KnnSgmatVariant& variant, bool margin_bar,
                                     int prune_group) {
  KnnFusedShape shape = knn_sgmat_shape(variant);
  shape.push = push;
  const bool staged = knn_sgmat_staged(ctx, variant, dp, plain, right_cols),
             split = knn_sgmat_split(ctx, variant, dp, plain, right_cols);
  std::string wgsl = kernels::fill_template(kernels::wgsl_source("knn_fused.wgsl"),
                                            candidate_values(shape, variant, staged, split, dp, sg, emulate, dump,
                                                             plain, right_cols, margin_bar, prune_group));
  return emulate ? kernels::emulate_subgroup_matrix(wgsl) : wgsl;
}

namespace {
// The candidate program's cache key.
std::string candidate_key(const gpu::Context& ctx, int dp, int sg, bool emulate, bool dump, bool plain, bool push,
                          bool right_cols, const KnnSgmatVariant& variant, bool margin_bar, int prune_group) {
  KnnFusedShape shape = knn_sgmat_shape(variant);
  shape.push = push;
  const bool staged = knn_sgmat_staged(ctx, variant, dp, plain, right_cols);
  return "knn_sgmat|" + shape.describe() + "|" + variant.describe() + (staged ? "" : "|unstaged") + "|dp" + S(dp) +
         "|sg" + S(sg) + (emulate ? "|emulated" : "") + (dump ? "|dump" : "") + (plain ? "|plain" : "|hoisted") +
         (right_cols ? "|rcols" : "") + (margin_bar ? "|mbar" : "") +
         (prune_group > 0 ? "|prune" + std::to_string(prune_group) : "");
}
const kernels::CompileOptions kCandidateOptions{.f16 = true, .subgroups = true, .validated = true};
const kernels::CompileOptions kPrepOptions{.f16 = true, .validated = true}, kCheckOptions{.validated = true};
}  // namespace

kernels::Program knn_sgmat_candidate_program(const gpu::ContextPtr& ctx, int dp, int sg, bool emulate, bool dump,
                                             bool plain, bool push, bool right_cols, const KnnSgmatVariant& variant,
                                             bool margin_bar, int prune_group) {
  return kernels::Program::generated(
      ctx, candidate_key(*ctx, dp, sg, emulate, dump, plain, push, right_cols, variant, margin_bar, prune_group),
      [&] {
        return knn_sgmat_candidate_wgsl(*ctx, dp, sg, emulate, dump, plain, push, right_cols, variant, margin_bar,
                                        prune_group);
      },
      kCandidateOptions);
}

KnnSgmatPrep knn_sgmat_prep(const Tensor& x) {
  auto ctx = x.context();
  const int64_t n = x.shape(0), d = x.shape(1);
  const KnnFusedShape shape = knn_sgmat_shape();
  KnnSgmatPrep p;
  p.dp = padded_dims(d);
  // Rows padded past N by a block and a half: a dispatch's first row need not be a block's.
  p.npad = (n + shape.bm - 1) / shape.bm * shape.bm + shape.bm;
  // Centre (distances do not change; the norms, and so the bound, shrink), then scale by the power
  // of two that puts the largest |component| in [2^14, 2^15): far from f16's overflow (65504) and
  // its subnormals.
  p.mean = x.mean({0});
  std::vector<float> hi = x.max({0}).to_vector<float>(), lo = x.min({0}).to_vector<float>(),
                     mu = p.mean.to_vector<float>();
  double largest = 0;
  for (size_t l = 0; l < mu.size(); ++l)
    largest = std::max({largest, double(hi[l]) - double(mu[l]), double(mu[l]) - double(lo[l])});
  if (!std::isfinite(largest))
    throw Error(ErrorKind::Value, "knn (subgroup matrices): the points hold a NaN or an infinity");
  int e = 0;
  if (largest > 0) std::frexp(largest * (1 + 1e-6), &e);  // largest·(1+δ) < 2^e
  p.scale = std::ldexp(1.0f, 15 - e);
  p.xh = Tensor::empty(ctx, {p.npad, p.dp}, DType::f16);
  p.xt = Tensor::empty(ctx, {p.dp, p.npad}, DType::f16);
  p.norms = Tensor::empty(ctx, {p.npad});
  p.xr = Tensor::empty(ctx, {p.npad, p.dp}, DType::f16);
  p.stats = Tensor::empty(ctx, {p.npad, 4});
  auto prep = kernels::Program::file(ctx, "knn_sgmat_prep.wgsl", {}, kPrepOptions);
  prep.launch({p.xh, p.xt, p.norms, p.stats, x, p.mean, p.xr}, {n, d, p.npad, int64_t(p.dp), p.scale},
              kernels::groups_for(*ctx, uint64_t(p.npad / 2), 64));
  return p;
}

KnnResult knn_exact_subgroup_matrix(const Tensor& x_in, int k, int64_t row_begin, int64_t row_end,
                                    const KnnSubgroupMatrixOptions& o, KnnSubgroupMatrixStats* stats) {
  check_points(x_in, k, row_begin, row_end);
  auto ctx = x_in.context();
  const int64_t n = x_in.shape(0), d = x_in.shape(1);
  if (std::string why = knn_subgroup_matrix_unsupported(*ctx, d, o); !why.empty())
    throw Error(ErrorKind::Unsupported, "knn (subgroup matrices): " + why);
  if (o.candidates != 0 && (o.candidates < k || o.candidates > 256))
    throw Error(ErrorKind::Value, "knn (subgroup matrices): candidates = " + S(o.candidates) + " must be in [k, 256]");
  Tensor x = kernels::dense(x_in);
  const int sg = int(ctx->features().subgroup_min_size);
  const KnnSgmatVariant variant = knn_sgmat_variant();
  const int kp = int(std::min<int64_t>(
      n - 1, o.candidates ? o.candidates : std::min(variant.extra >= 0 ? k + variant.extra : 2 * k + 16, 256)));
  // With time_steps: seconds since the last mark, the GPU's work included.
  auto last = std::chrono::steady_clock::now();
  auto mark = [&](double& into) {
    if (!o.time_steps) return;
    ctx->sync();
    auto now = std::chrono::steady_clock::now();
    into += std::chrono::duration<double>(now - last).count();
    last = now;
  };
  KnnSubgroupMatrixStats st;
  st.rows = row_end - row_begin, st.candidates = kp;
  KnnSgmatPrep p = knn_sgmat_prep(x);
  const int dp = p.dp;
  const int64_t npad = p.npad;
  const float s = p.scale;
  st.scale = s;
  const Tensor &xh = p.xh, &norms = p.norms, &point_stats = p.stats, &mean = p.mean;
  std::vector<float> most = point_stats.max({0}).to_vector<float>();  // max |X̃_j|, |r_j|, |q_j|
  const KnnFusedShape shape = knn_sgmat_shape(variant);
  const bool staged = knn_sgmat_staged(*ctx, variant, dp, false, o.right_cols);
  // Tile skipping (knn_prune.hpp) where asked for: the bounds of the f32 points in the kernel's
  // tiles and row blocks, in the scaled keys' units (s²).
  KnnPrune prune;
  if (o.prune) prune = knn_prune_bounds(x, shape.bn, shape.bm, knn_prune_group_tiles(kKnnPruneGroupTiles));
  auto candidates = knn_sgmat_candidate_program(ctx, dp, sg, o.emulate, false, false, !o.no_push, o.right_cols, variant,
                                                true, o.prune ? prune.group_tiles : 0);
  auto check = kernels::Program::file(ctx, "knn_sgmat_check.wgsl", {}, kCheckOptions);
  mark(st.prep_seconds);

  const int64_t rows = row_end - row_begin;
  KnnResult out{Tensor::empty(ctx, {rows, k}, DType::i32), Tensor::empty(ctx, {rows, k}, DType::f32)};
  Tensor flags = Tensor::empty(ctx, {rows}, DType::i32);
  // Candidate lists a chunk of rows at a time, each list within one binding.
  // (Whole row blocks: a block's rows then match the bounds' blocks.)
  const int64_t chunk = std::max<int64_t>(
      shape.bm, std::min<int64_t>(
                    rows, int64_t(ctx->limits().max_storage_buffer_binding_size / (4ull * kp)) / shape.bm * shape.bm));
  // The bound on a key's error (knn_sgmat_check.wgsl): E_i = 1.0625·(2(|X̃_i|A + |r_i|B + |q_i|C) +
  // c32(|X̃_i| + |r_i| + R̃ + ρ)²), A, B, C for one product or the split three.
  const bool split = knn_sgmat_split(*ctx, variant, dp, false, o.right_cols);
  const double Rh = most[0], rho = most[1], rho2 = most[2], c32 = double(3 * d + 32) * 0x1p-24;
  const double g = double(dp) * 0x1p-22, g3 = 3.0 * double(dp) * 0x1p-22;
  const double A = split ? rho2 + g3 * (Rh + rho + rho2) : rho + g * Rh, B = split ? rho + g3 * Rh : Rh + rho,
               C = split ? Rh * (1 + g3) : 0.0;
  // The margin bar (the candidate kernel's bar stops at a row's k-th key plus its margin): a point
  // whose f16 key passes the k-th by more than 2·E_i (in the keys' scaled units) is farther than the
  // true k-th neighbour, so no list needs it and the re-check's flag stays sound (knn_sgmat_check.wgsl).
  // 2.25·E_i: slack for the sums' own rounding. Most of a row's candidates then never pass.
  // E_i, computed once: the re-check takes it, the margin bar 2.25·E_i.
  Tensor h = point_stats.slice(1, 0, 1).reshape({npad}), a = point_stats.slice(1, 1, 2).reshape({npad}),
         q = point_stats.slice(1, 2, 3).reshape({npad});
  Tensor spread = h + a + (Rh + rho);
  Tensor err = (2.0 * (h * A + a * B + q * C) + c32 * (spread * spread)) * 1.0625;
  Tensor margin = Tensor::empty(ctx, {npad + 1});  // then k, read by the kernel at run time
  margin.slice(0, 0, npad).assign(err * 2.25);
  margin.slice(0, npad, npad + 1).assign(Tensor::full(ctx, {1}, double(k)));
  for (int64_t c0 = row_begin; c0 < row_end; c0 += chunk) {
    const int64_t c1 = std::min(row_end, c0 + chunk);
    Tensor cand_i = Tensor::empty(ctx, {c1 - c0, kp}, DType::i32), cand_k = Tensor::empty(ctx, {c1 - c0, kp});
    if (o.prune) {
      // The keys' unit s², as an f32 no larger than 2^126: a smaller unit only lowers the bound (skips
      // less), where an infinite one would skip every group.
      const double prune_unit = std::min(double(s) * double(s), 0x1p126);
      const kernels::Arg args[] = {cand_i, cand_k, xh, norms, knn_sgmat_points(p, staged), margin, p.xr, prune.words};
      const kernels::Arg no_split[] = {cand_i, cand_k, xh, norms, knn_sgmat_points(p, staged), margin, prune.words};
      knn_fused_dispatch(candidates,
                         split ? std::span<const kernels::Arg>(args) : std::span<const kernels::Arg>(no_split), n, npad,
                         kp, c0, c1, shape, o.pairs_per_dispatch, &prune, prune_unit, [&] {
                           return knn_sgmat_candidate_program(ctx, dp, sg, o.emulate, false, false, !o.no_push,
                                                              o.right_cols, variant, true);
                         });
    } else {
      const kernels::Arg args[] = {cand_i, cand_k, xh, norms, knn_sgmat_points(p, staged), margin, p.xr};
      knn_fused_dispatch(candidates, std::span<const kernels::Arg>(args, split ? 7 : 6), n, npad, kp, c0, c1, shape,
                         o.pairs_per_dispatch);
    }
    mark(st.candidates_seconds);
    if (o.no_push) continue;  // nothing in the lists to check (bench knn's timing of the stream alone)
    check.launch({out.indices, out.distances, flags, cand_i, cand_k, x, err},
                 {d, c0, c1 - c0, row_begin, k, kp, 1.0f / (s * s), int64_t(kp == n - 1)},
                 kernels::groups_for(*ctx, uint64_t(c1 - c0), 1));
    mark(st.check_seconds);
  }
  if (o.no_push) {
    if (stats) *stats = st;
    return out;
  }
  // Flagged rows again through the f32 kernel, in ranges (knn_sgmat_recompute_ranges).
  std::vector<int32_t> flag = flags.to_vector<int32_t>();
  Tensor centred, f32_norms;
  for (auto [a, b] : knn_sgmat_recompute_ranges(flag, kKnnSgmatRecomputeGap)) {
    // Centred like the candidates: |a|² + |b|² − 2a·b loses less to cancellation near the origin.
    if (!f32_norms.defined()) {
      centred = kernels::dense(sub(x, mean.unsqueeze(0)));
      f32_norms = (centred * centred).sum({1});
    }
    KnnResult r = knn_fused_rows(centred, f32_norms, k, row_begin + a, row_begin + b, knn_fused_shape(*ctx, k));
    out.indices.slice(0, a, b).assign(r.indices);
    out.distances.slice(0, a, b).assign(r.distances);
    for (int64_t i = a; i < b; ++i) st.recomputed += flag[size_t(i)] != 0;
  }
  mark(st.recompute_seconds);
  if (o.prune) {
    const KnnPruneCounts counts = knn_prune_counts(prune, (n + shape.bn - 1) / shape.bn);
    knn_prune_set_last(counts);
    if (o.time_steps) st.prune = counts.read();
  }
  if (stats) *stats = st;
  return out;
}

}  // namespace surfgrad
