// What Dawn's subgroup-matrix builtins do on a device, one idea at a time (issue 34: the panel
// matmul is right on the H200 while the tile_matmul path gives wrong integer sums there, though
// both pass with the builtins emulated). Each variant is a tiny kernel that multiplies small
// integers (exact in f16 and f32, so any difference is a layout/offset/control fault, never
// rounding) and is checked exactly against the host; variants step from the known-good form
// (loads from storage buffers, WGSL-literal offsets, one subgroup) toward the tile kernel's form
// (flat f16 workgroup arrays staged by scalar writes, runtime offsets that robustness predicates,
// a runtime k loop, results stored to workgroup memory and handed out by lanes, subgroups that
// redo a tile into a spare slot). Besides the random product, each variant runs two decoding
// products: B selecting A's columns (C = A's first 16 columns, or its k-step 1 columns) and A
// selecting B's rows, with entries numbered 1.. so that a wrong entry names the operand element
// that landed there ("C[0,1] = A[1,0]": the left operand transposed).
// SgmatSemantics.Probe prints a pass/fail table (always passes itself unless the known-good
// baseline fails: it is a probe); SgmatSemantics.AllVariantsExact asserts every variant. On an
// adapter without the feature both run emulated (kernels/subgroup_matrix_emulation.hpp) where it
// has shader-f16 and subgroups: all pass (that checks the probe's own indexing).
// GPU machine: bench/sgmat_probe_gpu.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "kernels/launch.hpp"
#include "kernels/subgroup_matrix_emulation.hpp"
#include "surfgrad/tiles.hpp"
#include "test_util.hpp"
#include "tiles_test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
namespace tl = surfgrad::tiles;

namespace {

std::string S(int64_t v) { return std::to_string(v); }

bool device_has_sgmat() {
  const gpu::Features& f = ctx()->features();
  if (!f.subgroup_matrix) return false;
  for (const auto& c : f.subgroup_matrix_configs)
    if (c.component == "f16" && c.result == "f32" && c.m == 16 && c.n == 16 && c.k == 16) return true;
  return false;
}

bool env_is(const char* name, const char* value) {
  const char* e = std::getenv(name);
  return e && std::string(e) == value;
}

// "" where the probe runs: device builtins, or emulated on an adapter with f16 and subgroups with
// SURFGRAD_SGMAT_PROBE_EMULATE=1 (lavapipe compiles each emulated variant in ~5 s of CPU: not in CI).
std::string why_skip() {
  if (device_has_sgmat()) return "";
  const gpu::Features& f = ctx()->features();
  if (!f.shader_f16 || !f.subgroups) return "no subgroup matrices, and no shader-f16/subgroups to emulate them";
  if (!env_is("SURFGRAD_SGMAT_PROBE_EMULATE", "1"))
    return "no subgroup matrices here; SURFGRAD_SGMAT_PROBE_EMULATE=1 runs the probe on emulated builtins (minutes)";
  return "";
}

// One kernel shape. C [16·S, 16] = A [16·S, K] · B [K, 16] (S subgroups of 32, subgroup s: rows 16s..).
struct Variant {
  std::string name;
  std::string src = "global";  // operands loaded from: global (storage), wg (flat f16 workgroup arrays), nest (panels)
  bool dyn = false;            // offsets from runtime values (robustness predicates the loads), not literals
  bool wg_store = false;       // result stored to a workgroup f32 array, then copied out
  bool lane_put = false;       // (wg_store) each subgroup's lanes copy its own tile (subgroup_invocation_id/size)
  int threads = 32;
  bool kloop = false;  // runtime k loop (else unrolled, literal k offsets)
  bool bcol = false;   // B loaded col_major from its transposed copy
  int K = 32;
  int work = 0;  // >0: only `work` subgroups have a tile; the others redo the last one into a spare slot (tile form)
  // Workgroup atomics used before everything else, `pre` u32s of them (the tile kernel's sgm_max: 2), then an f32
  // array: a driver that lays workgroup variables out in order of first use puts the operands after them.
  int pre = 0;
  bool dyn_stride = false;  // strides from runtime values too
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  auto add = [&](std::string name, std::function<void(Variant&)> f) {
    Variant x;
    x.name = std::move(name);
    f(x);
    v.push_back(x);
  };
  add("global-literal (known good)", [](Variant&) {});
  add("global-dyn", [](Variant& x) { x.dyn = true; });
  add("global-dyn-kloop", [](Variant& x) { x.dyn = x.kloop = true; });
  add("global-dyn-K16", [](Variant& x) { x.dyn = true, x.K = 16; });
  add("global-dyn-K48", [](Variant& x) { x.dyn = true, x.K = 48; });
  add("global-dyn-bcol", [](Variant& x) { x.dyn = x.bcol = true; });
  add("global-dyn-stride", [](Variant& x) { x.dyn = x.dyn_stride = true; });
  add("global-dyn-64thr", [](Variant& x) { x.dyn = true, x.threads = 64; });
  add("global-dyn-256thr", [](Variant& x) { x.dyn = true, x.threads = 256; });
  add("global-wgstore", [](Variant& x) { x.wg_store = true; });
  add("global-wgstore-lane", [](Variant& x) { x.wg_store = x.lane_put = true, x.dyn = true, x.threads = 64; });
  add("nest-literal (panel form)", [](Variant& x) { x.src = "nest"; });
  add("nest-64thr", [](Variant& x) { x.src = "nest", x.threads = 64; });
  add("wg-literal", [](Variant& x) { x.src = "wg"; });
  add("wg-dyn", [](Variant& x) { x.src = "wg", x.dyn = true; });
  add("wg-dyn-kloop", [](Variant& x) { x.src = "wg", x.dyn = x.kloop = true; });
  add("wg-dyn-K16", [](Variant& x) { x.src = "wg", x.dyn = true, x.K = 16; });
  add("wg-dyn-bcol", [](Variant& x) { x.src = "wg", x.dyn = x.bcol = true; });
  add("wg-dyn-64thr", [](Variant& x) { x.src = "wg", x.dyn = true, x.threads = 64; });
  add("wg-dyn-256thr", [](Variant& x) { x.src = "wg", x.dyn = true, x.threads = 256; });
  add("wg-dyn-wgstore", [](Variant& x) { x.src = "wg", x.dyn = x.wg_store = true; });
  add("wg-dyn-wgstore-lane-64thr",
      [](Variant& x) { x.src = "wg", x.dyn = x.wg_store = x.lane_put = true, x.threads = 64; });
  // Alignment: Vulkan asks a cooperative-matrix load's pointer and stride to be 16-byte aligned
  // (VUID-RuntimeSpirv-OpCooperativeMatrixLoadKHR-08986); WGSL cannot align a workgroup variable.
  add("wg-after-8B-atomics (tile's sgm_max)", [](Variant& x) { x.src = "wg", x.dyn = true, x.pre = 2; });
  add("wg-after-16B-atomics", [](Variant& x) { x.src = "wg", x.dyn = true, x.pre = 4; });
  add("wg-literal-after-8B-atomics", [](Variant& x) { x.src = "wg", x.pre = 2; });
  add("wg-after-4B-atomics", [](Variant& x) { x.src = "wg", x.dyn = true, x.pre = 1; });
  add("global-wgstore-after-8B-atomics", [](Variant& x) { x.wg_store = true, x.pre = 2; });
  add("tile-mimic (64thr, 1 working sg, kloop, wg store, lanes, 8 B atomics)", [](Variant& x) {
    x.src = "wg", x.dyn = x.kloop = x.wg_store = x.lane_put = true, x.threads = 64, x.work = 1, x.pre = 2;
  });
  add("tile-mimic, atomics padded to 16 B", [](Variant& x) {
    x.src = "wg", x.dyn = x.kloop = x.wg_store = x.lane_put = true, x.threads = 64, x.work = 1, x.pre = 4;
  });
  add("tile-mimic, no atomics",
      [](Variant& x) { x.src = "wg", x.dyn = x.kloop = x.wg_store = x.lane_put = true, x.threads = 64, x.work = 1; });
  add("tile-mimic-global-operands",
      [](Variant& x) { x.dyn = x.kloop = x.wg_store = x.lane_put = true, x.threads = 64, x.work = 1, x.pre = 2; });
  return v;
}

// Result tiles (16 rows each): one a subgroup, or `work` where only some subgroups have one.
int tiles_of(const Variant& v) { return v.work > 0 ? v.work : v.threads / 32; }

// The variant's WGSL. Emulated, a "subgroup" is 32 consecutive invocations (lid / 32) whatever
// the adapter's size, and the builtins are rewritten.
std::string wgsl(const Variant& v, bool emulate) {
  const int sgs = v.threads / 32, K = v.K, rows = 16 * tiles_of(v);
  std::string s =
      "enable chromium_experimental_subgroup_matrix;\n"
      "@group(0) @binding(0) var<storage, read_write> out: array<f32>;\n"
      "@group(0) @binding(1) var<storage, read> a: array<f16>;\n"
      "@group(0) @binding(2) var<storage, read> b: array<f16>;\n"
      "@group(0) @binding(3) var<storage, read> bt: array<f16>;\n"
      "alias TA = subgroup_matrix_left<f16, 16, 16>;\nalias TB = subgroup_matrix_right<f16, 16, 16>;\n"
      "alias TC = subgroup_matrix_result<f32, 16, 16>;\n";
  if (v.pre)
    s += "var<workgroup> ex_max: array<atomic<u32>, " + S(v.pre) + ">;\nvar<workgroup> ex_t: array<f32, 512>;\n";
  // One row of padding past each operand (what the tile kernel allocates).
  if (v.src == "wg")
    s += "var<workgroup> wa: array<f16, " + S(rows * K + K) + ">;\nvar<workgroup> wb: array<f16, " + S(K * 16 + 16) +
         ">;\n";
  if (v.src == "nest")
    s += "var<workgroup> wa: array<array<f16, " + S(16 * K) + ">, " + S(sgs) +
         ">;\nvar<workgroup> wb: array<array<f16, " + S(K * 16) + ">, 1>;\n";
  const int slots = v.work > 0 ? v.work + 1 : sgs;
  if (v.wg_store) s += "var<workgroup> wc: array<f32, " + S(256 * slots) + ">;\n";
  s += "@compute @workgroup_size(" + S(v.threads) + ")\nfn main(@builtin(local_invocation_index) lid: u32" +
       (emulate ? "" : ", @builtin(subgroup_id) sgid: u32, @builtin(subgroup_invocation_id) lane_id: u32") +
       ", @builtin(subgroup_size) sg_size: u32) {\n";
  s += "  let zero = arg(0u);\n";  // 0 at run time: makes an expression non-constant
  if (emulate)
    s += "  let sgi = lid / 32u; let lane = lid % 32u; let lanes = 32u;\n";
  else
    s += "  let sgi = sgid; let lane = lane_id; let lanes = sg_size;\n";
  if (v.pre)
    s += "  if (lid == 0u) { for (var q = 0u; q < " + S(v.pre) +
         "u; q++) { atomicStore(&ex_max[q], 0u); } }\n"
         "  workgroupBarrier();\n"
         "  for (var e = lid; e < 512u; e += " +
         S(v.threads) + "u) { ex_t[e] = f32(e); atomicMax(&ex_max[0], e); }\n  workgroupBarrier();\n";
  // Staging: scalar f16 copies by every invocation.
  if (v.src == "wg")
    s += "  for (var e = lid; e < " + S(rows * K) + "u; e += " + S(v.threads) + "u) { wa[e] = a[e]; }\n" +
         "  for (var e = lid; e < " + S(K * 16) + "u; e += " + S(v.threads) + "u) { wb[e] = " + (v.bcol ? "bt" : "b") +
         "[e]; }\n  workgroupBarrier();\n";
  if (v.src == "nest")
    s += "  for (var e = lid; e < " + S(rows * K) + "u; e += " + S(v.threads) + "u) { wa[e / " + S(16 * K) + "u][e % " +
         S(16 * K) + "u] = a[e]; }\n" + "  for (var e = lid; e < " + S(K * 16) + "u; e += " + S(v.threads) +
         "u) { wb[0][e] = b[e]; }\n  workgroupBarrier();\n";
  // The tile this subgroup computes and where its result goes.
  if (v.work > 0) {
    s += "  let working = sgi < " + S(v.work) + "u;\n  let tc = select(" + S(v.work - 1) + "u, sgi, working);\n" +
         "  let slot = select(" + S(v.work) + "u, sgi, working) * 256u;\n";
  } else {
    s += "  let working = true;\n  let tc = sgi;\n  let slot = sgi * 256u;\n";
  }
  s += "  let r0 = " + std::string(v.dyn || sgs > 1 || v.work > 0 ? "tc * 16u + zero" : "0u") + ";\n";
  const std::string ks = v.dyn_stride ? "(" + S(K) + "u + zero)" : S(K) + "u";
  const std::string ns = v.dyn_stride ? "(16u + zero)" : "16u";
  auto step = [&](const std::string& k0) {
    std::string t;
    std::string aoff = v.dyn || sgs > 1 || v.work > 0 ? "r0 * " + S(K) + "u + " + k0 : k0;
    std::string boff = v.bcol ? k0 : k0 + " * 16u";
    if (v.dyn) boff = "(" + boff + " + zero)";
    if (v.src == "nest") {
      t += "    let la = subgroupMatrixLoad<TA, row_major>(&wa[ga], " + k0 + ", " + S(K) + "u);\n";
      t += "    let lb = subgroupMatrixLoad<TB, row_major>(&wb[gb], " + k0 + " * 16u, 16u);\n";
    } else {
      const std::string an = v.src == "wg" ? "wa" : "a", bn = v.src == "wg" ? "wb" : (v.bcol ? "bt" : "b");
      t += "    let la = subgroupMatrixLoad<TA, row_major>(&" + an + ", " + aoff + ", " + ks + ");\n";
      t += v.bcol ? "    let lb = subgroupMatrixLoad<TB, col_major>(&" + bn + ", " + boff + ", " + ks + ");\n"
                  : "    let lb = subgroupMatrixLoad<TB, row_major>(&" + bn + ", " + boff + ", " + ns + ");\n";
    }
    t += "    acc = subgroupMatrixMultiplyAccumulate(la, lb, acc);\n";
    return t;
  };
  if (v.src == "nest") s += "  let ga = sgi; let gb = zero;\n";
  s += "  {\n    var acc = TC();\n";
  if (v.kloop) {
    s += "    for (var k0 = 0u; k0 < " + S(K) + "u; k0 += 16u) {\n" + step("k0") + "    }\n";
  } else {
    for (int k0 = 0; k0 < K; k0 += 16) s += "    {\n" + step(S(k0) + "u") + "    }\n";
  }
  if (v.wg_store) {
    s += "    subgroupMatrixStore<row_major>(&wc, slot, acc, 16u);\n  }\n  workgroupBarrier();\n";
    if (v.lane_put)
      s += "  if (working) {\n    for (var e = lane; e < 256u; e += lanes) { out[tc * 256u + e] = wc[slot + e]; }\n  "
           "}\n";
    else
      s += "  for (var e = lid; e < " + S(256 * sgs) + "u; e += " + S(v.threads) + "u) { out[e] = wc[e]; }\n";
  } else {
    s += "    if (working) { subgroupMatrixStore<row_major>(&out, r0 * 16u, acc, 16u); }\n  }\n";
  }
  if (v.pre) s += "  if (lid == 0u && atomicLoad(&ex_max[0]) != 511u) { out[0] = -1.0; }\n";
  s += "}\n";
  return emulate ? kernels::emulate_subgroup_matrix(s) : s;
}

struct Run {
  int bad = 0;
  std::string first;  // the first mismatches, decoded
};

// C = A·B for host ints; `decode`: 1 (B selects A's columns at k-step `step`: C[i,j] = A[i, 16·step + j]),
// 2 (A selects B's rows: C[i,j] = B[16·step + i, j]), 0 random.
Run run_one(const Variant& v, bool emulate, int decode, int step, uint32_t seed) {
  const int K = v.K, M = 16 * tiles_of(v);
  std::vector<float> A(size_t(M * K), 0), B(size_t(K * 16), 0), Bt(size_t(16 * K));
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(-4, 4);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      float& x = A[size_t(i * K + k)];
      if (decode == 0) x = float(d(gen));
      if (decode == 1) x = float(1 + (i % 16) * K + k);  // numbered within each subgroup's rows: ≤ 768, exact in f16
      if (decode == 2) x = float(k == 16 * step + i % 16);
    }
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < 16; ++j) {
      float& x = B[size_t(k * 16 + j)];
      if (decode == 0) x = float(d(gen));
      if (decode == 1) x = float(k == 16 * step + j);
      if (decode == 2) x = float(1 + k * 16 + j);
    }
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < 16; ++j) Bt[size_t(j * K + k)] = B[size_t(k * 16 + j)];
  auto f16 = [](const std::vector<float>& x, Shape s) {
    return upload(Ref{s, std::vector<double>(x.begin(), x.end())}, DType::f16);
  };
  Tensor ta = f16(A, {M, K}), tb = f16(B, {K, 16}), tbt = f16(Bt, {16, K});
  Tensor out = Tensor::full(ctx(), {M, 16}, std::nan(""));
  auto prog = kernels::Program::generated(ctx(), "sgmat_probe|" + v.name + (emulate ? "|emu" : ""),
                                          [&] { return wgsl(v, emulate); }, {.f16 = true, .subgroups = true});
  prog.launch({out, ta, tb, tbt}, {0u}, {1, 1, 1});
  std::vector<float> c = out.to_vector<float>();
  Run r;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < 16; ++j) {
      double want = 0;
      for (int k = 0; k < K; ++k) want += double(A[size_t(i * K + k)]) * double(B[size_t(k * 16 + j)]);
      const float got = c[size_t(i * 16 + j)];
      if (double(got) == want) continue;
      if (++r.bad > 6) continue;
      char line[160];
      std::string what;
      const long gi = std::lround(got);
      if (std::isnan(got))
        what = "unwritten";
      else if (got == 0)
        what = "zero";
      else if (decode == 1 && double(gi) == got && gi >= 1 && gi <= 16 * K)
        what = "A[" + S(i / 16 * 16 + (gi - 1) / K) + "," + S((gi - 1) % K) + "] (or another subgroup's)";
      else if (decode == 2 && double(gi) == got && gi >= 1 && gi <= K * 16)
        what = "B[" + S((gi - 1) / 16) + "," + S((gi - 1) % 16) + "]";
      std::snprintf(line, sizeof line, " C[%d,%d]=%g want %g%s%s;", i, j, double(got), want, what.empty() ? "" : " = ",
                    what.c_str());
      r.first += line;
    }
  return r;
}

// Every variant, three products each; prints the table. Returns the failing variants' names.
std::vector<std::string> probe_table() {
  const bool emulate = !device_has_sgmat();
  std::printf("subgroup-matrix semantics probe (%s builtins; adapter subgroup size %u-%u)\n",
              emulate ? "EMULATED" : "device", ctx()->features().subgroup_min_size,
              ctx()->features().subgroup_max_size);
  std::vector<std::string> failed;
  const char* only = std::getenv("SURFGRAD_SGMAT_PROBE_ONLY");  // a substring of the variants to run
  for (const Variant& v : variants()) {
    if (only && v.name.find(only) == std::string::npos) continue;
    std::string detail;
    int bad = 0;
    std::string error;
    try {
      const char* names[] = {"random", "A-decode k0", "A-decode k1", "B-decode k0", "B-decode k1"};
      const int decodes[][2] = {{0, 0}, {1, 0}, {1, 1}, {2, 0}, {2, 1}};
      for (int t = 0; t < 5; ++t) {
        if (decodes[t][1] * 16 >= v.K) continue;
        Run r = run_one(v, emulate, decodes[t][0], decodes[t][1], 7u + uint32_t(t));
        bad += r.bad;
        if (r.bad) detail += "    " + std::string(names[t]) + ": " + S(r.bad) + " wrong:" + r.first + "\n";
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    const bool ok = bad == 0 && error.empty();
    std::printf("%-4s %-60s %s\n", ok ? "PASS" : "FAIL", v.name.c_str(),
                error.empty() ? (S(bad) + " wrong entries").c_str() : ("error: " + error.substr(0, 300)).c_str());
    if (!detail.empty()) std::printf("%s", detail.c_str());
    std::fflush(stdout);
    if (!ok) failed.push_back(v.name);
  }
  return failed;
}

// The tile kernel itself (tile_matmul through the tiles API, SURFGRAD_TILE_SGMAT auto or
// emulate) on the decoding products, 16×K · K×16 at K 32 (one working subgroup of two).
int tile_api_probe() {
  const bool emulate = !device_has_sgmat();
  setenv("SURFGRAD_TILE_SGMAT", emulate ? "emulate" : "auto", 1);
  int bad_total = 0;
  for (int K : {16, 32}) {
    tl::At rows{tl::Coord::block(0), 0};
    tl::Kernel k("sgmat_probe_tiles", 64);
    tl::Array xa = k.input("x"), wa = k.input("w"), out = k.output("out");
    tl::tile_store(out, tl::tile_matmul(tl::tile_load(xa, {16, K}, rows), tl::tile_load(wa, {K, 16})), rows);
    for (int decode : {0, 1, 2}) {
      std::vector<float> A(size_t(16 * K)), B(size_t(K * 16));
      std::mt19937 gen(uint32_t(decode + K));
      std::uniform_int_distribution<int> d(-4, 4);
      for (int i = 0; i < 16; ++i)
        for (int kk = 0; kk < K; ++kk)
          A[size_t(i * K + kk)] = decode == 0 ? float(d(gen)) : decode == 1 ? float(1 + i * K + kk) : float(kk == i);
      for (int kk = 0; kk < K; ++kk)
        for (int j = 0; j < 16; ++j)
          B[size_t(kk * 16 + j)] = decode == 0 ? float(d(gen)) : decode == 1 ? float(kk == j) : float(1 + kk * 16 + j);
      Tensor x = Tensor::from_vector(ctx(), A, {16, K}), w = Tensor::from_vector(ctx(), B, {K, 16});
      Tensor y = Tensor::full(ctx(), {16, 16}, std::nan(""));
      k.launch({x, w}, {y}, {1, 1, 1});
      std::vector<float> c = y.to_vector<float>();
      int bad = 0;
      std::string first;
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) {
          double want = 0;
          for (int kk = 0; kk < K; ++kk) want += double(A[size_t(i * K + kk)]) * double(B[size_t(kk * 16 + j)]);
          const float got = c[size_t(i * 16 + j)];
          if (double(got) == want) continue;
          if (++bad <= 8) {
            char line[120];
            const long gi = std::lround(got);
            std::string what =
                decode == 1 && gi >= 1 && gi <= 16 * K   ? " = A[" + S((gi - 1) / K) + "," + S((gi - 1) % K) + "]"
                : decode == 2 && gi >= 1 && gi <= 16 * K ? " = B[" + S((gi - 1) / 16) + "," + S((gi - 1) % 16) + "]"
                                                         : "";
            std::snprintf(line, sizeof line, " C[%d,%d]=%g want %g%s;", i, j, double(got), want, what.c_str());
            first += line;
          }
        }
      const char* names[] = {"random", "A-decode", "B-decode"};
      std::printf("%-4s tile_matmul API, K %d, %s: %d wrong%s%s\n", bad ? "FAIL" : "PASS", K, names[decode], bad,
                  bad ? "\n   " : "", first.c_str());
      std::fflush(stdout);
      bad_total += bad;
    }
  }
  unsetenv("SURFGRAD_TILE_SGMAT");
  return bad_total;
}

}  // namespace

// The table; fails only if the known-good form fails (the probe then measures nothing).
TEST(SgmatSemantics, Probe) {
  if (std::string why = why_skip(); !why.empty()) GTEST_SKIP() << why;
  std::vector<std::string> failed = probe_table();
  std::printf("%zu variants failed\n", failed.size());
  for (const auto& f : failed) EXPECT_NE(f, "global-literal (known good)");
}

// The tile kernel on the decoding products: as built (16-byte aligned workgroup arrays), and with
// SURFGRAD_TILE_SGMAT_ALIGN=0 in the environment, as it was (bench/sgmat_probe_gpu.sh runs both).
TEST(SgmatSemantics, TileApiDecode) {
  if (std::string why = why_skip(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EQ(tile_api_probe(), 0);
}

// Every variant's device WGSL through Tint's own compiler (the emulated run rewrites the builtins
// away): types, pointer arguments, uniformity. ~0.05 s a variant; skipped without `tint`.
TEST(SgmatSemanticsTint, VariantsCompile) {
  const char* t = std::getenv("SURFGRAD_TINT");
  const std::string tint = t && *t ? t : "tint";
  if (std::system(("command -v " + tint + " >/dev/null 2>&1").c_str()) != 0) GTEST_SKIP() << "no tint on PATH";
  const std::string common = kernels::fill_template(kernels::wgsl_source("common.wgsl"), {{"META_BINDING", "4"}});
  for (const Variant& v : variants()) {
    std::string body = wgsl(v, false);
    const std::string en = "enable chromium_experimental_subgroup_matrix;\n";
    body.erase(body.find(en), en.size());
    const std::string in = ::testing::TempDir() + "sgmat_probe.wgsl", log = in + ".log";
    std::FILE* f = std::fopen(in.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(("enable f16;\nenable subgroups;\n" + en + common + body).c_str(), f);
    std::fclose(f);
    const int rc = std::system((tint + " --format wgsl -o /dev/null " + in + " >" + log + " 2>&1").c_str());
    std::string text;
    if (std::FILE* l = std::fopen(log.c_str(), "r")) {
      char buf[4096];
      size_t n = std::fread(buf, 1, sizeof buf, l);
      text.assign(buf, n);
      std::fclose(l);
    }
    EXPECT_EQ(rc, 0) << v.name << ": " << text;
  }
}

namespace {

// Each `var<workgroup> name: array<T, N>` of `wgsl` whose byte size is not a multiple of 16;
// `arrays`: how many there are.
std::vector<std::string> unaligned_arrays(const std::string& wgsl, int* arrays = nullptr) {
  std::vector<std::string> bad;
  if (arrays) *arrays = 0;
  const std::regex decl(R"(var<workgroup> (\w+): array<(\w+|atomic<u32>), (\d+)u?>;)");
  for (auto it = std::sregex_iterator(wgsl.begin(), wgsl.end(), decl); it != std::sregex_iterator(); ++it) {
    if (arrays) ++*arrays;
    const std::string type = (*it)[2].str();
    const long bytes = std::stol((*it)[3].str()) * (type == "f16" ? 2 : 4);
    if (bytes % 16 != 0) bad.push_back((*it)[1].str() + " (" + S(bytes) + " bytes)");
  }
  return bad;
}

}  // namespace

// A tile kernel with subgroup-matrix products keeps every workgroup array a multiple of 16 bytes
// (matmul_sgmat.cpp: the fragments' scratch must start 16-byte aligned, whatever order the driver
// lays arrays out in), odd tiles (a 1×3 bias, a 16×3 product) included, forward and backward; and
// the check finds the old layout's 8-byte sgm_max (SURFGRAD_TILE_SGMAT_ALIGN=0). No GPU work.
TEST(SgmatSemanticsLayout, TileArraysAre16ByteMultiples) {
  auto kernel = [] {
    tl::At rows{tl::Coord::block(0), 0};
    tl::Kernel k("sgmat_layout", 64);
    tl::Array xa = k.input("x"), wa = k.input("w"), ba = k.input("b"), out = k.output("out");
    tl::Tile h = tl::tile_matmul(tl::tile_load(xa, {16, 16}, rows), tl::tile_load(wa, {16, 16}));
    tl::Tile z = tl::tile_matmul(h, wa, 3, 0) + tl::tile_broadcast(tl::tile_load(ba, {1, 3}), {16, 3});
    tl::tile_store(out, z, rows);
    return k;
  };
  for (int kind : {0, 1}) {
    const std::string wgsl = kernel().subgroup_matrix_wgsl(kind, 32);
    ASSERT_NE(wgsl.find("subgroupMatrixLoad"), std::string::npos) << wgsl;
    int arrays = 0;
    std::vector<std::string> bad = unaligned_arrays(wgsl, &arrays);
    EXPECT_GE(arrays, 7) << wgsl;  // 4 f16 scratch, sgm_c, sgm_max, slots
    EXPECT_TRUE(bad.empty()) << "kind " << kind << ": " << bad.front() << "\n" << wgsl;
  }
  setenv("SURFGRAD_TILE_SGMAT_ALIGN", "0", 1);
  const std::string old_wgsl = kernel().subgroup_matrix_wgsl(0, 32);
  unsetenv("SURFGRAD_TILE_SGMAT_ALIGN");
  const std::vector<std::string> old = unaligned_arrays(old_wgsl);
  ASSERT_FALSE(old.empty());
  EXPECT_EQ(old.front().rfind("sgm_max", 0), 0u) << old.front() << "\n" << old_wgsl;
}
