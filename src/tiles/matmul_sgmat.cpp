// tile_matmul on tensor cores: Dawn's subgroup matrices (chromium_experimental_subgroup_matrix,
// the f16×f16→f32 16×16×16 configuration; issue 34). Tiles are f32, so each operand is split
// into two f16 parts, x·s = hi + lo (hi: x·s cut to f16's 11 significant bits, lo = f16(x·s − hi)),
// and the product is
// a_hi·b_hi + a_hi·b_lo + a_lo·b_hi accumulated in f32 (a_lo·b_lo, below 2⁻²² of |a||b|, is
// dropped): about f32's accuracy from three f16 products. s is a power of two per operand per
// product (exact to apply and undo) that puts the operand's largest |value| in [2¹⁴, 2¹⁵), so
// nothing overflows f16 and small values (a loss's 1/N gradients) do not fall into f16's
// subnormals. The operands are copied into f16 workgroup scratch through emit_matmul's index
// expressions, so a transposed operand (Bᵀ in dA = dC·Bᵀ, Aᵀ in dB = Aᵀ·dC) is a transposing
// copy and every load is row_major. Each subgroup takes 16×16 output tiles in turn, then its
// lanes hand the sums to emit_matmul's writer (a tile, +=, or atomic adds into a gradient).
// Products whose M, N or K is not a multiple of 16 stay on the scalar code (emit.cpp): the
// fragment is 16×16×16 and padding a tile to it would cost more than the product.
// Alignment: Vulkan requires a cooperative-matrix load's pointer (and stride) to be 16-byte
// aligned (VUID-RuntimeSpirv-OpCooperativeMatrixLoadKHR-08986), and WGSL cannot align a
// workgroup variable. With an 8-byte sgm_max (the only array that was not a multiple of 16 bytes)
// the fragments were read from the wrong place on NVIDIA (H200 and H100: wrong integer sums; the
// H200's match the host's product with every fragment read 4 halves early), and with sgm_max at
// 16 bytes they are exact (bench/sgmat_probe_gpu.sh, tests/sgmat_semantics_test.cpp).
// So every workgroup array of a kernel with these products is a multiple of 16 bytes
// (sgmat_aligned; sgm_max 4 words; the f16 scratch 8 halves), whatever order they are laid in.
#include "tiles/matmul_sgmat.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "surfgrad/error.hpp"
#include "tiles/emit.hpp"

namespace surfgrad::tiles::detail {

namespace {

constexpr int kFrag = 16;

// hi: v's 11 leading significant bits (f16's precision), by masking its f32 bits, so that v − hi
// is exact and f16(hi) too (|v| ≥ 2⁻¹⁴ after scaling; smaller values are below 2⁻²⁹ of the
// largest). Not f16(v): an f16 conversion that keeps f32 precision in registers (lavapipe does)
// would leave lo = 0 and the product at f16's accuracy.
constexpr const char* kHigh = "let h = bitcast<f32>(bitcast<u32>(v) & 0xffffe000u);";

struct Product {
  int m, n, k;
};

// Every product the kernel may emit (forward; with `backward` also both adjoints of each).
std::vector<Product> products(const Graph& g, bool backward) {
  std::vector<Product> r;
  for (const Node& node : g.nodes) {
    if (node.op != Op::matmul) continue;
    TileShape a = g.nodes[size_t(node.args[0])].shape;
    int n = node.shape.cols;
    r.push_back({a.rows, n, a.cols});
    if (backward) {
      r.push_back({a.rows, a.cols, n});  // dA = dC·Bᵀ
      r.push_back({a.cols, n, a.rows});  // dB = Aᵀ·dC
    }
  }
  return r;
}

bool eligible(const Product& p) { return p.m % kFrag == 0 && p.n % kFrag == 0 && p.k % kFrag == 0; }

// Largest scratch extents over the eligible products: A's M·K, B's K·N (each padded), C's 16×16
// tiles.
struct Extents {
  int64_t a = 0, b = 0, tiles = 0;
};
Extents extents(const Graph& g, bool backward) {
  Extents e;
  for (const Product& p : products(g, backward)) {
    if (!eligible(p)) continue;
    // One row stride more than the operand: the last fragment's load starts at (M − 16)·K + K − 16
    // and a bounds check that takes a 16-row fragment as offset + 16·stride (a robustness pass
    // clamping the offset) must not find it past the end. Rounded to 16 bytes.
    auto padded = [](int64_t n) { return (n + 7) / 8 * 8; };
    e.a = std::max(e.a, padded(int64_t(p.m) * p.k + p.k));
    e.b = std::max(e.b, padded(int64_t(p.k) * p.n + p.n));
    e.tiles = std::max(e.tiles, int64_t(p.m / kFrag) * (p.n / kFrag));
  }
  return e;
}

// Subgroups that hold a result tile at once: each needs 1 KiB of f32 scratch for its tile, so at
// most 4 (the tile MLP's backward kernel at 16 pixels × 512 threads fits NVIDIA's 48 KiB with 4;
// its largest product, a 64×64 weight gradient, takes 4 rounds of 4 tiles).
constexpr int64_t kMostUnits = 4;
int64_t units(const Graph& g, int sg, const Extents& e) {
  return std::min<int64_t>({g.threads / sg, e.tiles, kMostUnits});
}

bool has_f16_f32_config(const gpu::Features& f) {
  for (const auto& c : f.subgroup_matrix_configs)
    if (c.component == "f16" && c.result == "f32" && c.m == 16 && c.n == 16 && c.k == 16) return true;
  return false;
}

}  // namespace

std::string sgmat_diagnostic() {
  const char* e = std::getenv("SURFGRAD_TILE_SGMAT_DIAG");
  std::string v = e ? e : "";
  if (!v.empty() && v != "hi" && v != "noscale")
    throw Error(ErrorKind::Value,
                "SURFGRAD_TILE_SGMAT_DIAG='" + v +
                    "': use hi (the hi parts' product alone) or noscale (operands unscaled), or unset it");
  return v;
}

SgmatMode sgmat_mode() {
  const char* e = std::getenv("SURFGRAD_TILE_SGMAT");
  std::string v = e ? e : "";
  // Off unless asked for. Its products were wrong on the H200 (2026-11-27: misaligned f16 scratch,
  // see the top of this file) and are right since (H100, 2026-11-28: TileSgmat.* pass, and fail
  // with SURFGRAD_TILE_SGMAT_ALIGN=0); it becomes the default only where bench tile-mlp finds it
  // faster than the scalar code (bench/sgmat_fix_gpu.sh).
  if (v == "auto") return SgmatMode::automatic;
  if (v.empty() || v == "off" || v == "0") return SgmatMode::off;
  if (v == "emulate") return SgmatMode::emulate;
  throw Error(ErrorKind::Value,
              "SURFGRAD_TILE_SGMAT='" + v +
                  "': use auto (subgroup matrices where the device has them), off (the default) or emulate");
}

uint64_t sgmat_workgroup_bytes(const Graph& g, int sg, bool backward) {
  Extents e = extents(g, backward);
  if (e.tiles == 0 || sg <= 0) return 0;
  // sgm_max (16 bytes), and what sgmat_aligned adds to the kernel's other arrays (≤ 12 bytes each:
  // at most a slot a node, and the weight staging).
  return uint64_t(2 * 2 * (e.a + e.b)) + uint64_t(4 * 256 * (units(g, sg, e) + 1)) + 16 +
         12 * uint64_t(g.nodes.size() + 1);
}

// SURFGRAD_TILE_SGMAT_ALIGN=0: the arrays as they were before the fix (sgm_max 8 bytes, other
// arrays unpadded), to show the fault on hardware beside the fix (bench/sgmat_probe_gpu.sh).
static bool sgmat_align16() {
  const char* e = std::getenv("SURFGRAD_TILE_SGMAT_ALIGN");
  return !(e && std::string(e) == "0");
}

int64_t sgmat_aligned(const Wgsl& w, int64_t f32_elements) {
  return w.sgmat_sg > 0 && sgmat_align16() ? (f32_elements + 3) / 4 * 4 : f32_elements;
}

int sgmat_subgroup_size(const gpu::Context& ctx, const Graph& g, bool backward, uint64_t other_bytes) {
  SgmatMode mode = sgmat_mode();
  const gpu::Features& f = ctx.features();
  if (mode == SgmatMode::off || !f.shader_f16 || !f.subgroups) return 0;
  if (mode == SgmatMode::automatic && !(f.subgroup_matrix && has_f16_f32_config(f))) return 0;
  // The largest subgroup size the adapter may run (NVIDIA's 32, fixed): the kernel counts on
  // threads / size subgroups to hold result tiles; its lanes step by the real size.
  int sg = int(std::max(f.subgroup_min_size, f.subgroup_max_size));
  if (sg <= 0 || g.threads % sg != 0) return 0;
  uint64_t need = sgmat_workgroup_bytes(g, sg, backward);
  if (need == 0 || other_bytes + need > ctx.limits().max_compute_workgroup_storage_size) return 0;
  return sg;
}

bool sgmat_product(const Wgsl& w, TileShape out, int inner) {
  return w.sgmat_sg > 0 && eligible({out.rows, out.cols, inner});
}

void emit_sgmat_slots(Wgsl& w, const Graph& g, bool backward) {
  if (!w.sgmat_sg) return;
  Extents e = extents(g, backward);
  w.line("// tile_matmul on subgroup matrices (src/tiles/matmul_sgmat.cpp): f16 hi and lo parts of each");
  w.line("// operand, one 16×16 f32 result tile per working subgroup, the operands' largest |values|.");
  w.line("alias SgmA = subgroup_matrix_left<f16, 16, 16>;");
  w.line("alias SgmB = subgroup_matrix_right<f16, 16, 16>;");
  w.line("alias SgmC = subgroup_matrix_result<f32, 16, 16>;");
  w.line("var<workgroup> sgm_ahi: array<f16, " + u32(e.a) + ">;");
  w.line("var<workgroup> sgm_alo: array<f16, " + u32(e.a) + ">;");
  w.line("var<workgroup> sgm_bhi: array<f16, " + u32(e.b) + ">;");
  w.line("var<workgroup> sgm_blo: array<f16, " + u32(e.b) + ">;");
  w.sgmat_units = int(units(g, w.sgmat_sg, e));
  // One slot a working subgroup, and the spare one the others store into.
  w.line("var<workgroup> sgm_c: array<f32, " + u32(256 * (int64_t(w.sgmat_units) + 1)) + ">;");
  // Two used; four so that it is 16 bytes like every other array here (see sgmat_aligned).
  w.line(std::string("var<workgroup> sgm_max: array<atomic<u32>, ") + (sgmat_align16() ? "4" : "2") + ">;");
}

std::string sgmat_entry_point(const Graph& g) {
  return "@compute @workgroup_size(" + std::to_string(g.threads) +
         ")\nfn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,\n"
         "        @builtin(subgroup_id) sgi: u32, @builtin(subgroup_invocation_id) lane: u32,\n"
         "        @builtin(subgroup_size) sg_size: u32) {";
}

void emit_matmul_sgmat(Wgsl& w, const Graph& g, TileShape shape, int inner, const std::string& lhs_element,
                       const std::string& rhs_element, const MatmulWriter& put) {
  const int M = shape.rows, N = shape.cols, K = inner;
  const int64_t tiles = int64_t(M / kFrag) * (N / kFrag);
  const int64_t U = std::min<int64_t>(w.sgmat_units, tiles);
  const std::string T = u32(g.threads), MK = u32(int64_t(M) * K), KN = u32(int64_t(K) * N);
  w.line("// on subgroup matrices: " + std::to_string(M) + "×" + std::to_string(K) + " · " + std::to_string(K) + "×" +
         std::to_string(N) + " as f16 hi + lo parts, " + std::to_string(U) + " subgroups at a time");
  w.open("{");
  // Power-of-two scales from each operand's largest |value| (positive f32 bits order as u32).
  w.open("if (lid == 0u) {");
  w.line("atomicStore(&sgm_max[0], 0u);");
  w.line("atomicStore(&sgm_max[1], 0u);");
  w.close();
  w.line("workgroupBarrier();");
  w.line("var most = 0.0;");
  w.open("for (var e = lid; e < " + MK + "; e += " + T + ") {");
  w.line("let i = e / " + u32(K) + "; let k = e % " + u32(K) + ";");
  w.line("most = max(most, abs(" + lhs_element + "));");
  w.close();
  w.line("atomicMax(&sgm_max[0], bitcast<u32>(most));");
  w.line("most = 0.0;");
  w.open("for (var e = lid; e < " + KN + "; e += " + T + ") {");
  w.line("let k = e / " + u32(N) + "; let j = e % " + u32(N) + ";");
  w.line("most = max(most, abs(" + rhs_element + "));");
  w.close();
  w.line("atomicMax(&sgm_max[1], bitcast<u32>(most));");
  w.line("workgroupBarrier();");
  // |x| < 2^ex: scaled by 2^(15 − ex), the largest lies in [2^14, 2^15), below f16's 65504.
  // (SURFGRAD_TILE_SGMAT_DIAG=noscale: unscaled, for bisecting on hardware.)
  const std::string diag = sgmat_diagnostic();
  if (diag == "noscale") w.line("let ea = 0; let eb = 0;");
  if (diag != "noscale") w.line("let ea = clamp(15 - frexp(bitcast<f32>(atomicLoad(&sgm_max[0]))).exp, -126, 126);");
  if (diag != "noscale") w.line("let eb = clamp(15 - frexp(bitcast<f32>(atomicLoad(&sgm_max[1]))).exp, -126, 126);");
  w.line("let sa = ldexp(1.0, ea); let sb = ldexp(1.0, eb);");
  w.open("for (var e = lid; e < " + MK + "; e += " + T + ") {");
  w.line("let i = e / " + u32(K) + "; let k = e % " + u32(K) + ";");
  w.line("let v = (" + lhs_element + ") * sa;");
  w.line(kHigh);
  w.line("sgm_ahi[e] = f16(h); sgm_alo[e] = f16(v - h);");
  w.close();
  w.open("for (var e = lid; e < " + KN + "; e += " + T + ") {");
  w.line("let k = e / " + u32(N) + "; let j = e % " + u32(N) + ";");
  w.line("let v = (" + rhs_element + ") * sb;");
  w.line(kHigh);
  w.line("sgm_bhi[e] = f16(h); sgm_blo[e] = f16(v - h);");
  w.close();
  w.line("workgroupBarrier();");
  // Undone in two steps: 2^−ea · 2^−eb alone may leave f32's range.
  w.line("let ua = ldexp(1.0, -ea); let ub = ldexp(1.0, -eb);");
  // The loop is uniform in the workgroup (its barriers); `t < tiles` only in each subgroup, as the
  // subgroup-matrix builtins need.
  w.open("for (var t0 = 0u; t0 < " + u32(tiles) + "; t0 += " + u32(U) + ") {");
  w.line("let t = t0 + sgi;");
  w.line("let working = sgi < " + u32(U) + " && t < " + u32(tiles) + ";");
  // Every subgroup multiplies (no subgroup-matrix builtin under a branch that differs between
  // subgroups): one that has no tile this round redoes the last one into the spare result slot.
  w.line("let tc = select(" + u32(tiles - 1) + ", t, working);");
  w.line("let slot = select(" + u32(w.sgmat_units) + ", sgi, working) * 256u;");
  w.line("let r0 = (tc / " + u32(N / kFrag) + ") * 16u; let c0 = (tc % " + u32(N / kFrag) + ") * 16u;");
  w.open("{");
  w.line("var acc = SgmC();");
  w.open("for (var k0 = 0u; k0 < " + u32(K) + "; k0 += 16u) {");
  w.line("let ah = subgroupMatrixLoad<SgmA, row_major>(&sgm_ahi, r0 * " + u32(K) + " + k0, " + u32(K) + ");");
  w.line("let al = subgroupMatrixLoad<SgmA, row_major>(&sgm_alo, r0 * " + u32(K) + " + k0, " + u32(K) + ");");
  w.line("let bh = subgroupMatrixLoad<SgmB, row_major>(&sgm_bhi, k0 * " + u32(N) + " + c0, " + u32(N) + ");");
  w.line("let bl = subgroupMatrixLoad<SgmB, row_major>(&sgm_blo, k0 * " + u32(N) + " + c0, " + u32(N) + ");");
  // The small terms first, so they are not lost below the large one's rounding.
  // (SURFGRAD_TILE_SGMAT_DIAG=hi: the hi parts' product alone, f16's accuracy, for bisecting.)
  if (diag != "hi") w.line("acc = subgroupMatrixMultiplyAccumulate(al, bh, acc);");
  if (diag != "hi") w.line("acc = subgroupMatrixMultiplyAccumulate(ah, bl, acc);");
  w.line("acc = subgroupMatrixMultiplyAccumulate(ah, bh, acc);");
  w.close();
  w.line("subgroupMatrixStore<row_major>(&sgm_c, slot, acc, 16u);");
  w.close();
  w.line("workgroupBarrier();");
  w.open("if (working) {");
  w.open("for (var e = lane; e < 256u; e += sg_size) {");
  w.line("let sum = sgm_c[slot + e] * ua * ub;");
  put(w, "r0 + e / 16u", "c0 + e % 16u", "sum");
  w.close();
  w.close();
  w.line("workgroupBarrier();");
  w.close();
  w.close();
}

}  // namespace surfgrad::tiles::detail
