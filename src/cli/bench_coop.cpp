// `surfgrad bench coop`: a probe of wgpu-native's experimental CooperativeMatrix feature (tensor
// cores from WGSL through naga's `wgpu_cooperative_matrix` extension). It compiles a set of
// kernels — matmuls with the shapes and element types naga might accept, and small kernels that
// try the extension's syntax — records naga's exact error for those refused, checks each
// matmul that compiles against a float64 host reference, and times it with timestamp queries.
//
// Every case runs in its own child process (`bench coop --case NAME`): the feature is marked
// experimental, and a panic inside wgpu-native (naga's SPIR-V writer, the driver) aborts the
// process, which must not end the probe.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "io/write_file.hpp"
#include "kernels/launch.hpp"

namespace surfgrad::cli {

namespace {

// ---- host f16 -------------------------------------------------------------------------------
uint16_t to_half(float f) {  // round to nearest even; inputs here are in [-1, 1], no overflow
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0) {  // subnormal half
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000u;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(exp) << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return uint16_t(sign | h);
}
float from_half(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  float v;
  if (exp == 0)
    v = std::ldexp(float(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(float(mant | 0x400u), int(exp) - 25);
  return sign ? -v : v;
}

// ---- the cases --------------------------------------------------------------------------------
struct Case {
  std::string name, what;
  std::string wgsl;
  bool matmul = false;                // runnable C = A·B (row-major A[M,K], B[K,N], C[M,N])
  int tile = 16, rows = 1, cols = 1;  // tile edge; tiles per subgroup (rows × cols)
  bool ab16 = true, c16 = false;
};

std::string mat(int t, const std::string& type, const std::string& role) {
  return "coop_mat" + std::to_string(t) + "x" + std::to_string(t) + "<" + type + ", " + role + ">";
}

std::string header(bool ab16, bool c16, bool enable_coop = true) {
  std::string s;
  if (ab16 || c16) s += "enable f16;\n";
  if (enable_coop) s += "enable wgpu_cooperative_matrix;\n";
  s += std::string("@group(0) @binding(0) var<storage, read> a: array<") + (ab16 ? "f16" : "f32") + ">;\n";
  s += std::string("@group(0) @binding(1) var<storage, read> b: array<") + (ab16 ? "f16" : "f32") + ">;\n";
  s += std::string("@group(0) @binding(2) var<storage, read_write> c: array<") + (c16 ? "f16" : "f32") + ">;\n";
  return s;
}

// style "T": coopLoadT/coopStoreT (row-major memory), A tiles as role A, B tiles as role B.
// style "swap": plain coopLoad/coopStore (column-major memory): row-major B read column-major
//   is Bᵀ, used as role A; Aᵀ as role B; Bᵀ·Aᵀ = (A·B)ᵀ, stored column-major = A·B row-major.
// style "smem": like "T", but each K step first stages the A and B tiles in workgroup memory.
Case matmul_case(int t, bool ab16, bool c16, const std::string& style, int rows, int cols, bool enable_coop = true) {
  Case k;
  k.matmul = true, k.tile = t, k.rows = rows, k.cols = cols, k.ab16 = ab16, k.c16 = c16;
  std::string ab = ab16 ? "f16" : "f32", cr = c16 ? "f16" : "f32", T = std::to_string(t) + "u";
  k.name = "mm" + std::to_string(t) + "-" + ab + "-" + cr + "-" + style + "-" + std::to_string(rows) + "x" +
           std::to_string(cols) + (enable_coop ? "" : "-noenable");
  k.what = "C[" + cr + "] += A[" + ab + "]·B[" + ab + "], " + std::to_string(t) + "×" + std::to_string(t) + " tiles, " +
           std::to_string(rows) + "×" + std::to_string(cols) + " tiles per subgroup, " + style;
  std::ostringstream w;
  w << header(ab16, c16, enable_coop);
  w << "@group(0) @binding(3) var<uniform> meta_u: array<vec4<u32>, 64>;\n";
  bool swap = style == "swap", smem = style == "smem";
  std::string load = swap ? "coopLoad" : "coopLoadT", store = swap ? "coopStore" : "coopStoreT";
  if (smem)
    w << "var<workgroup> sa: array<" << ab << ", " << t * t << ">;\nvar<workgroup> sb: array<" << ab << ", " << t * t
      << ">;\n";
  w << "@compute @workgroup_size(32)\nfn main(@builtin(workgroup_id) wid: vec3<u32>"
    << (smem ? ", @builtin(local_invocation_index) lid: u32" : "") << ") {\n";
  w << "  let M = meta_u[0].x; let N = meta_u[0].y; let K = meta_u[0].z;\n";
  w << "  let row0 = wid.y * " << rows * t << "u; let col0 = wid.x * " << cols * t << "u;\n";
  // Every pointer argument indexes with a `let`: naga 29's SPIR-V writer panics ("internal error:
  // entered unreachable code: Expression [n] is not cached!", in write_bounds_check) when the
  // pointer of a coopStore/coopStoreT statement indexes with inline arithmetic (its
  // subexpressions are never emitted); loads tolerate it, but the same rule keeps them safe.
  auto ctile = [&](int i, int j) { return "&c[ic" + std::to_string(i) + std::to_string(j) + "]"; };
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      w << "  let ic" << i << j << " = (row0 + " << i * t << "u) * N + col0 + " << j * t << "u;\n"
        << "  var acc" << i << j << " = " << load << "<" << mat(t, cr, "C") << ">(" << ctile(i, j) << ", N);\n";
  w << "  for (var k = 0u; k < K; k += " << T << ") {\n";
  if (smem) {
    w << "    for (var e = lid; e < " << t * t << "u; e += 32u) {\n";
    w << "      sa[e] = a[(row0 + e / " << T << ") * K + k + e % " << T << "];\n";
    w << "      sb[e] = b[(k + e / " << T << ") * N + col0 + e % " << T << "];\n";
    w << "    }\n    workgroupBarrier();\n";
    w << "    let a0 = coopLoadT<" << mat(t, ab, "A") << ">(&sa[0], " << T << ");\n";
    w << "    let b0 = coopLoadT<" << mat(t, ab, "B") << ">(&sb[0], " << T << ");\n";
    w << "    acc00 = coopMultiplyAdd(a0, b0, acc00);\n    workgroupBarrier();\n";
  } else {
    for (int i = 0; i < rows; ++i)
      w << "    let ia" << i << " = (row0 + " << i * t << "u) * K + k;\n    let a" << i << " = " << load << "<"
        << mat(t, ab, swap ? "B" : "A") << ">(&a[ia" << i << "], K);\n";
    for (int j = 0; j < cols; ++j)
      w << "    let ib" << j << " = k * N + col0 + " << j * t << "u;\n    let b" << j << " = " << load << "<"
        << mat(t, ab, swap ? "A" : "B") << ">(&b[ib" << j << "], N);\n";
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        w << "    acc" << i << j << " = coopMultiplyAdd(" << (swap ? "b" + std::to_string(j) : "a" + std::to_string(i))
          << ", " << (swap ? "a" + std::to_string(i) : "b" + std::to_string(j)) << ", acc" << i << j << ");\n";
  }
  w << "  }\n";
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) w << "  " << store << "(acc" << i << j << ", " << ctile(i, j) << ", N);\n";
  w << "}\n";
  k.wgsl = w.str();
  return k;
}

// Small kernels for the extension's syntax; compiled only.
Case syntax_case(const std::string& name, const std::string& what, const std::string& body, bool ab16 = true,
                 bool c16 = false) {
  Case k;
  k.name = name, k.what = what, k.ab16 = ab16, k.c16 = c16;
  k.wgsl = header(ab16, c16) + "@compute @workgroup_size(32)\nfn main() {\n" + body + "}\n";
  return k;
}

std::vector<Case> all_cases() {
  std::vector<Case> v;
  // The matmuls: f16 operands with f32 accumulation first, then the rest.
  v.push_back(matmul_case(16, true, false, "T", 1, 1));
  v.push_back(matmul_case(16, true, false, "swap", 1, 1));
  v.push_back(matmul_case(16, true, false, "smem", 1, 1));
  v.push_back(matmul_case(16, true, false, "T", 2, 2));
  v.push_back(matmul_case(16, true, false, "T", 4, 2));
  v.push_back(matmul_case(16, true, false, "swap", 2, 2));
  v.push_back(matmul_case(16, true, true, "T", 1, 1));
  v.push_back(matmul_case(16, true, true, "T", 2, 2));
  v.push_back(matmul_case(8, true, false, "T", 1, 1));
  v.push_back(matmul_case(8, true, true, "T", 1, 1));
  v.push_back(matmul_case(8, false, false, "T", 1, 1));
  v.push_back(matmul_case(16, false, false, "T", 1, 1));
  v.push_back(matmul_case(16, true, false, "T", 1, 1, false));
  {  // the form naga 29's SPIR-V writer panics on: an inline index expression in a coop pointer
    Case k = matmul_case(16, true, false, "T", 1, 1);
    k.name = "inline-index-panic";
    k.what = "coopStoreT(acc00, &c[(row0 + 0u) * N + col0 + 0u], N): inline index arithmetic in a store's pointer";
    k.matmul = false;
    size_t p = k.wgsl.rfind("&c[ic00], N);");
    k.wgsl.replace(p, 8, "&c[(row0 + 0u) * N + col0 + 0u]");
    v.push_back(k);
  }
  // Syntax.
  const std::string A16 = "coop_mat16x16<f16, A>", B16 = "coop_mat16x16<f16, B>", C32 = "coop_mat16x16<f32, C>";
  v.push_back(syntax_case("zero-ctor", "zero-value constructor of an accumulator: " + C32 + "()",
                          "  var acc = " + C32 + "();\n  acc = coopMultiplyAdd(coopLoadT<" + A16 +
                              ">(&a[0], 16u), coopLoadT<" + B16 +
                              ">(&b[0], 16u), acc);\n  coopStoreT(acc, &c[0], 16u);\n"));
  v.push_back(syntax_case("load-no-stride", "coopLoad<T>(ptr) without the stride argument",
                          "  let x = coopLoad<" + C32 + ">(&c[0]);\n  coopStore(x, &c[0]);\n"));
  v.push_back(syntax_case("load-scalar-role", "coopLoadT<f16, A>(ptr, stride) (element type and role as templates)",
                          "  let x = coopLoadT<f32, C>(&c[0], 16u);\n  coopStoreT(x, &c[0], 16u);\n"));
  v.push_back(syntax_case("add", "component-wise acc + acc",
                          "  let x = coopLoadT<" + C32 + ">(&c[0], 16u);\n  coopStoreT(x + x, &c[0], 16u);\n"));
  v.push_back(syntax_case("scale", "acc * 2.0 (scalar times matrix)",
                          "  let x = coopLoadT<" + C32 + ">(&c[0], 16u);\n  coopStoreT(x * 2.0, &c[0], 16u);\n"));
  v.push_back(syntax_case("store-role-a", "coopStoreT of a role-A matrix",
                          "  let x = coopLoadT<coop_mat16x16<f32, A>>(&c[0], 16u);\n  coopStoreT(x, &c[0], 16u);\n"));
  for (const char* shape : {"32x32", "16x8", "8x16", "16x32", "32x16", "8x32", "4x4"})
    v.push_back(syntax_case(std::string("shape-") + shape, std::string("type coop_mat") + shape + "<f32, C>",
                            std::string("  let x = coopLoadT<coop_mat") + shape + "<f32, C>>(&c[0], 32u);\n" +
                                "  coopStoreT(x, &c[0], 32u);\n"));
  v.push_back(syntax_case("type-i32", "type coop_mat16x16<i32, C>", "  let x = coop_mat16x16<i32, C>();\n  _ = x;\n"));
  v.push_back(syntax_case("mixed-8x8-16x16", "coopMultiplyAdd of 16×16 A·B into an 8×8 C (must be refused)",
                          "  var acc = coopLoadT<coop_mat8x8<f32, C>>(&c[0], 8u);\n  acc = coopMultiplyAdd(coopLoadT<" +
                              A16 + ">(&a[0], 16u), coopLoadT<" + B16 +
                              ">(&b[0], 16u), acc);\n  coopStoreT(acc, &c[0], 8u);\n"));
  // Isolated names, for --no-enable on a device without the feature: naga then names the first
  // construct it knows to need the extension ("enable extension is not enabled") and calls
  // the ones it does not know unknown, which maps what naga 29 parses without the feature.
  for (const char* shape : {"8x8", "16x16", "32x32", "16x8", "8x16", "4x4", "64x64"})
    for (const char* type : {"f32", "f16", "i32", "u32", "i8", "bf16"})
      v.push_back(syntax_case(std::string("type-") + shape + "-" + type,
                              std::string("var<private> x: coop_mat") + shape + "<" + type + ", C>", "  _ = &x;\n",
                              true, false));
  for (auto& k : v)
    if (k.name.rfind("type-", 0) == 0 && k.name != "type-i32") {
      k.wgsl.insert(k.wgsl.find("@compute"), k.what + ";\n");
      k.wgsl.replace(k.wgsl.find("  _ = &x;\n"), 10, "  let y = x;\n  _ = y;\n");
    }
  for (const char* role : {"A", "B", "C", "D", "Acc"})
    v.push_back(syntax_case(std::string("role-") + role,
                            std::string("var<private> x: coop_mat16x16<f32, ") + role + ">",
                            "  let y = x;\n  _ = y;\n"));
  for (auto& k : v)
    if (k.name.rfind("role-", 0) == 0) k.wgsl.insert(k.wgsl.find("@compute"), k.what + ";\n");
  for (const char* fn :
       {"coopLoad", "coopLoadT", "coopStore", "coopStoreT", "coopMultiplyAdd", "coopMultiply", "coopLength", "coopFoo"})
    v.push_back(syntax_case(std::string("fn-") + fn, std::string("a call of ") + fn + " (no templates)",
                            std::string("  _ = ") + fn + "(&c[0], 16u);\n"));
  return v;
}

// ---- one case, in this process --------------------------------------------------------------
std::string first_part(const std::string& message) {  // naga's message without the listing
  size_t cut = message.find("\n--- source ---");
  return cut == std::string::npos ? message : message.substr(0, cut);
}

int run_case(const gpu::ContextPtr& ctx, const Case& k, const std::vector<int64_t>& sizes, int reps) {
  std::optional<kernels::Program> kernel;
  auto t0 = std::chrono::steady_clock::now();
  try {
    kernel = kernels::Program::verbatim(ctx, k.wgsl, /*validated=*/true);
  } catch (const Error& e) {
    std::printf("case %s: REFUSED (%s)\n  %s\n", k.name.c_str(), k.what.c_str(), first_part(e.what()).c_str());
    return 10;
  }
  double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("case %s: compiled in %.0f ms (%s)\n", k.name.c_str(), compile_ms, k.what.c_str());
  if (!k.matmul) return 0;
  int status = 0;
  for (int64_t n : sizes) {
    const int64_t M = n, N = n, K = n;
    std::mt19937_64 rng(uint64_t(n) * 7919 + 1);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    // Inputs rounded to the operand type, so the reference sees exactly what the GPU sees.
    std::vector<double> A(size_t(M * K)), B(size_t(K * N));
    std::vector<uint16_t> a16, b16;
    std::vector<float> a32, b32;
    auto fill = [&](std::vector<double>& x, std::vector<uint16_t>& h, std::vector<float>& f) {
      for (auto& v : x) {
        float r = u(rng);
        if (k.ab16)
          h.push_back(to_half(r)), v = from_half(h.back());
        else
          f.push_back(r), v = r;
      }
    };
    fill(A, a16, a32);
    fill(B, b16, b32);
    uint64_t ab_bytes = k.ab16 ? 2 : 4, c_bytes = k.c16 ? 2 : 4;
    auto a = ctx->alloc(uint64_t(M * K) * ab_bytes, "A"), b = ctx->alloc(uint64_t(K * N) * ab_bytes, "B"),
         c = ctx->alloc(uint64_t(M * N) * c_bytes, "C");
    ctx->upload(*a, k.ab16 ? (const void*)a16.data() : (const void*)a32.data(), a->size());
    ctx->upload(*b, k.ab16 ? (const void*)b16.data() : (const void*)b32.data(), b->size());
    std::vector<uint8_t> zeros(c->size(), 0);
    ctx->upload(*c, zeros.data(), c->size());
    int64_t bm = int64_t(k.rows) * k.tile, bn = int64_t(k.cols) * k.tile;
    if (M % bm || N % bn || K % k.tile) {
      std::printf("  %ld³: skipped (not a multiple of the %ld×%ld block)\n", (long)n, (long)bm, (long)bn);
      continue;
    }
    std::vector<uint32_t> meta = {uint32_t(M), uint32_t(N), uint32_t(K), 0};
    gpu::Workgroups groups{uint32_t(N / bn), uint32_t(M / bm), 1};
    auto dispatch = [&] { kernel->launch({*a, *b, *c}, kernels::Params(meta), groups); };
    // Correctness: one product into a zeroed C, against float64 (every row up to 512, else 16 rows).
    dispatch();
    std::vector<float> out(size_t(M * N));
    if (k.c16) {
      std::vector<uint16_t> h(out.size());
      ctx->download(*c, h.data(), c->size());
      for (size_t i = 0; i < h.size(); ++i) out[i] = from_half(h[i]);
    } else {
      ctx->download(*c, out.data(), c->size());
    }
    std::vector<int64_t> rows;
    if (M <= 512)
      for (int64_t r = 0; r < M; ++r) rows.push_back(r);
    else
      for (int64_t i = 0; i < 16; ++i) rows.push_back((i * 977 + 5) % M);
    double num = 0, den = 0, num_t = 0, max_abs = 0;
    std::vector<double> ref(static_cast<size_t>(N));
    for (int64_t r : rows) {
      std::fill(ref.begin(), ref.end(), 0.0);
      for (int64_t kk = 0; kk < K; ++kk) {
        double av = A[size_t(r * K + kk)];
        const double* brow = &B[size_t(kk * N)];
        for (int64_t j = 0; j < N; ++j) ref[size_t(j)] += av * brow[j];
      }
      for (int64_t j = 0; j < N; ++j) {
        double d = double(out[size_t(r * N + j)]) - ref[size_t(j)];
        num += d * d, den += ref[size_t(j)] * ref[size_t(j)];
        max_abs = std::max(max_abs, std::fabs(d));
        if (M == N && r < N && j < M) {  // against the transpose too: tells a layout mix-up from noise
          double dt = double(out[size_t(j * N + r)]) - ref[size_t(j)];
          num_t += dt * dt;
        }
      }
    }
    double err = std::sqrt(num / den), err_t = std::sqrt(num_t / den);
    bool ok = std::isfinite(err) && err < (k.ab16 ? (k.c16 ? 5e-2 : 1e-3) : 1e-5);
    std::printf("  %ld³: normalised error vs float64 %.3e (max abs %.3e; vs the transpose %.3e) over %zu rows: %s\n",
                (long)n, err, max_abs, err_t, rows.size(), ok ? "ok" : "WRONG");
    if (!ok) status = 20;
    // Timing: C += A·B repeatedly (the values are not checked again), median of timestamp-query times.
    dispatch();
    ctx->sync();
    std::vector<double> times;
    double total = 0;
    for (int r = 0; r < reps && total < 2000; ++r) {
      double ms = ctx->timed_ms(dispatch);  // (without timestamps: the wall time, waiting included)
      times.push_back(ms);
      total += ms;
    }
    std::sort(times.begin(), times.end());
    double ms = times[times.size() / 2];
    std::printf("  %ld³: %.3f ms median of %zu, %.2f TFLOP/s\n", (long)n, ms, times.size(),
                2.0 * double(M) * double(N) * double(K) / (ms * 1e9));
  }
  return status;
}

struct CoopArgs {
  std::string only, sizes = "64,4096", dump_dir;
  int reps = 10;
  bool list = false, print_wgsl = false;
  bool compile_anyway = false;
  bool no_enable = false;  // drop `enable wgpu_cooperative_matrix;` from every case  // compile on a device without the
                           // feature: naga's errors for that case
};

int bench_coop(const gpu::ContextPtr& ctx, const CoopArgs& args) {
  std::vector<int64_t> sizes;
  {
    std::stringstream ss(args.sizes);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      long v = std::strtol(item.c_str(), &end, 10);
      if (!end || *end || v <= 0 || v > 16384) throw UsageError("--sizes: '" + item + "' is not a size in 1..16384");
      sizes.push_back(v);
    }
  }
  auto cases = all_cases();
  if (!args.dump_dir.empty()) {  // every case as DIR/NAME.wgsl, its matmul shape in a first-line comment
    for (auto& k : cases) {
      std::string path = args.dump_dir + "/" + k.name + ".wgsl";
      char head[160];
      std::snprintf(head, sizeof head, "// case %s matmul=%d tile=%d rows=%d cols=%d ab16=%d c16=%d\n", k.name.c_str(),
                    int(k.matmul), k.tile, k.rows, k.cols, int(k.ab16), int(k.c16));
      io::write_whole_file(path, head + k.wgsl);  // checked through its close: a full disk is an error
    }
    return 0;
  }
  if (args.list) {
    for (auto& k : cases) std::printf("%s\n", k.name.c_str());
    return 0;
  }
  if (!args.only.empty()) {  // one case, here (the child)
    for (auto& k : cases)
      if (k.name == args.only) {
        if (args.print_wgsl) std::printf("--- %s ---\n%s", k.name.c_str(), k.wgsl.c_str());
        const auto& f = ctx->features();
        if (!f.cooperative_matrix && !args.compile_anyway) {
          std::printf("case %s: not run: %s\n", k.name.c_str(),
                      !f.cooperative_matrix_refusal.empty()
                          ? ("device request refused: " + f.cooperative_matrix_refusal).c_str()
                      : f.cooperative_matrix_offered ? "the device was created without the feature"
                                                     : "the adapter does not offer native:cooperative-matrix");
          return 3;
        }
        if (!f.cooperative_matrix) std::printf("case %s: compiling on a device WITHOUT the feature\n", k.name.c_str());
        Case c = k;
        if (args.no_enable)
          if (size_t p = c.wgsl.find("enable wgpu_cooperative_matrix;\n"); p != std::string::npos) c.wgsl.erase(p, 32);
        return run_case(ctx, c, sizes, args.reps);
      }
    throw UsageError("--case: no case '" + args.only + "' (see --list)");
  }
  std::printf("bench coop on %s (%s, %s, driver %s), %s\n", ctx->info().name.c_str(), ctx->info().backend.c_str(),
              ctx->info().implementation.c_str(), ctx->info().driver.c_str(), today().c_str());
  std::printf("adapter offers native:cooperative-matrix: %s\n",
              ctx->features().cooperative_matrix_offered ? "yes" : "no");
  if (!ctx->features().cooperative_matrix_offered && !args.compile_anyway) return 3;
  if (!args.compile_anyway) {  // offered is not granted: wgpu-native 29.0.1.1 refuses it (BENCHMARKS.md)
    auto probe = gpu::Context::create({.quiet = true, .request_cooperative_matrix = true});
    if (!probe->features().cooperative_matrix) {
      std::printf(
          "a device with it was refused: %s\n(--compile-anyway compiles the cases without it; "
          "bench/coop_rs runs them through the wgpu crate)\n",
          probe->features().cooperative_matrix_refusal.c_str());
      return 3;
    }
  }
  std::fflush(stdout);
  // Each case in a child process with the feature requested.
  setenv("SURFGRAD_COOPERATIVE_MATRIX", "1", 1);
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw Error(ErrorKind::IO, "bench coop: cannot read /proc/self/exe");
  self[len] = 0;
  std::vector<std::pair<std::string, std::string>> summary;
  for (auto& k : cases) {
    std::string cmd = "timeout 120 '" + std::string(self) + "' bench coop --case " + k.name + " --sizes " + args.sizes +
                      " --reps " + std::to_string(args.reps) + (args.print_wgsl ? " --wgsl" : "") +
                      (args.compile_anyway ? " --compile-anyway" : "") + (args.no_enable ? " --no-enable" : "") +
                      " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) throw Error(ErrorKind::IO, "bench coop: could not start a child process");
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) fwrite(buf, 1, n, stdout);
    int st = pclose(p);
    std::string verdict = WIFSIGNALED(st)          ? "crashed (signal " + std::to_string(WTERMSIG(st)) + ")"
                          : !WIFEXITED(st)         ? "?"
                          : WEXITSTATUS(st) == 0   ? (k.matmul ? "compiled, correct" : "compiled")
                          : WEXITSTATUS(st) == 10  ? "refused by naga/wgpu"
                          : WEXITSTATUS(st) == 20  ? "compiled, WRONG result"
                          : WEXITSTATUS(st) == 3   ? "not run"
                          : WEXITSTATUS(st) == 124 ? "timed out (120 s)"
                                                   : "failed (exit " + std::to_string(WEXITSTATUS(st)) + ")";
    summary.push_back({k.name, verdict});
    std::fflush(stdout);
  }
  std::printf("\nsummary\n");
  for (auto& [name, verdict] : summary) std::printf("  %-28s %s\n", name.c_str(), verdict.c_str());
  return 0;
}

}  // namespace

void add_bench_coop_command(CLI::App& bench, CommandFn& chosen) {
  auto a = std::make_shared<CoopArgs>();
  CLI::App* c = bench.add_subcommand(
      "coop", "probe: cooperative-matrix (tensor core) matmuls through naga's wgpu_cooperative_matrix extension");
  c->add_option("--sizes", a->sizes, "square sizes N (N×N×N), comma-separated")->capture_default_str();
  c->add_option("--reps", a->reps, "timed repetitions (median)")->check(CLI::Range(1, 10000))->capture_default_str();
  c->add_option("--case", a->only, "run only this case, in this process");
  c->add_flag("--list", a->list, "list the cases");
  c->add_option("--dump", a->dump_dir, "write every case's WGSL to DIR/NAME.wgsl (for other WebGPU implementations)");
  c->add_flag("--wgsl", a->print_wgsl, "print each case's WGSL");
  c->add_flag("--no-enable", a->no_enable, "drop `enable wgpu_cooperative_matrix;` from every case");
  c->add_flag("--compile-anyway", a->compile_anyway,
              "compile (and run) the cases even on a device without the feature: records naga's errors there");
  c->callback([a, &chosen] { chosen = [a](const gpu::ContextPtr& ctx) { return bench_coop(ctx, *a); }; });
}

}  // namespace surfgrad::cli
