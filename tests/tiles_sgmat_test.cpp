// tile_matmul on subgroup matrices (src/tiles/matmul_sgmat.cpp): on the device's feature where
// it has one (the GPU machine under Dawn: bench/tile_sgmat_gpu.sh), else with the builtins
// emulated (SURFGRAD_TILE_SGMAT=emulate; lavapipe has shader-f16 and subgroups), against the
// float64 host reference and by gradcheck: the staging's index expressions (transposing copies
// for both adjoints), the split-f16 arithmetic and its scaling. Emulated backward kernels take
// minutes to compile on lavapipe, so those tests run here only with SURFGRAD_TILE_SGMAT_EMULATED=1
// (CI runs the forward one, ~1 s). And the tile MLP demo's kernels on subgroup matrices go
// through Tint's own compiler (/usr/local/bin/tint; skipped without it), which checks what the
// emulation rewrites away (fragment types, the builtins' arguments, uniformity).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "kernels/launch.hpp"
#include "surfgrad/demos.hpp"
#include "surfgrad/tiles.hpp"
#include "test_util.hpp"
#include "tiles_test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
namespace tl = surfgrad::tiles;

namespace {

// SURFGRAD_TILE_SGMAT set for one scope.
struct SgmatEnv {
  explicit SgmatEnv(const char* value) {
    const char* e = std::getenv("SURFGRAD_TILE_SGMAT");
    had = e != nullptr;
    if (had) old = e;
    setenv("SURFGRAD_TILE_SGMAT", value, 1);
  }
  ~SgmatEnv() { had ? (void)setenv("SURFGRAD_TILE_SGMAT", old.c_str(), 1) : (void)unsetenv("SURFGRAD_TILE_SGMAT"); }
  bool had = false;
  std::string old;
};

// `slow`: the test compiles emulated backward kernels (lavapipe: ~1 min each, so the gradient
// tests run only with SURFGRAD_TILE_SGMAT_EMULATED=1; CI runs the forward one, ~10 s).
std::string emulation_missing(bool slow) {
  const char* opt_in = std::getenv("SURFGRAD_TILE_SGMAT_EMULATED");
  if (slow && !(opt_in && std::string(opt_in) == "1"))
    return "emulated backward kernels take minutes to compile on lavapipe: SURFGRAD_TILE_SGMAT_EMULATED=1 runs them";
  const gpu::Features& f = ctx()->features();
  if (!f.shader_f16 || !f.subgroups) return "this adapter has no shader-f16 or no subgroups";
  if (f.subgroup_min_size == 0 || f.subgroup_min_size != f.subgroup_max_size)
    return "this adapter's subgroup size is not fixed";
  if (64 % f.subgroup_min_size != 0) return "subgroup size does not divide 64";
  return "";
}

// The mode the tests put products on subgroup matrices with: the device's (auto) where it has
// them (the GPU machine under Dawn), else emulated; "" (and `why`) where neither runs here.
std::string mode_here(bool slow, std::string& why) {
  for (const auto& c : ctx()->features().subgroup_matrix_configs)
    if (ctx()->features().subgroup_matrix && c.component == "f16" && c.result == "f32" && c.m == 16 && c.n == 16 &&
        c.k == 16)
      return "auto";
  why = emulation_missing(slow);
  return why.empty() ? "emulate" : "";
}

void expect_reference(const tl::Kernel& k, const std::vector<Tensor>& inputs, const Shape& out, tl::Grid grid,
                      const std::string& what, Tol tol) {
  Tensor y = Tensor::full(ctx(), out, 7.0);
  k.launch(inputs, {y}, grid);
  std::vector<HostArray> hin;
  for (const Tensor& t : inputs) hin.push_back(HostArray::from(t));
  HostArray want = k.reference(hin, {HostArray::full(out, 7.0)}, grid)[0];
  EXPECT_TRUE(close(read(y), ref_of(want), tol, what));
}

// The tile MLP demo's fused loss kernel (src/demos/tile_mlp.cpp: coordinates → hidden layers of
// `hidden` → 3 colours, weights read in place from one packed array, a mean squared error added
// atomically), built here because the demo keeps its kernels to itself.
tl::Kernel mlp_loss_kernel(int rows, int hidden, int layers, int threads, DType weights) {
  using namespace tl;
  Kernel k("tile_mlp_loss", threads);
  Array coords = k.input("coords", false), target = k.input("target", false), params = k.input("params", true, weights);
  Tile h = tile_load(coords, {rows, 2}, {Coord::block(0), 0});
  int row = 0, fan_in = 2;
  for (int l = 0; l <= layers; ++l) {
    int fan_out = l == layers ? 3 : hidden;
    Tile z = tile_matmul(h, params, fan_out, row);
    z = z + tile_broadcast(tile_load(params, {1, fan_out}, {Coord::element(row + fan_in), 0}), {rows, fan_out});
    h = tile_map(l == layers ? Unary::sigmoid : Unary::relu, z);
    row += fan_in + 1;
    fan_in = fan_out;
  }
  Tile d = h - tile_view(tile_load(target, {rows, 4}, {Coord::block(0), 0}), {rows, 3});
  tile_atomic_add(k.output("loss"), tile_sum(d * d) * (1.0 / 4096.0));
  return k;
}

std::string tint_binary() {
  const char* e = std::getenv("SURFGRAD_TINT");
  std::string t = e && *e ? e : "tint";
  return std::system(("command -v " + t + " >/dev/null 2>&1").c_str()) == 0 ? t : "";
}

// The module as the launch seam builds it under Dawn: enable lines first, common.wgsl's parameter
// block after the kernel's storage bindings, then the kernel.
std::string module_text(std::string kernel) {
  std::string enables = "enable f16;\nenable subgroups;\n";
  for (size_t at; (at = kernel.find("enable ")) != std::string::npos;) {
    size_t end = kernel.find('\n', at) + 1;
    enables += kernel.substr(at, end - at);
    kernel.erase(at, end - at);
  }
  int bindings = 0;
  for (size_t at = 0; (at = kernel.find("var<storage", at)) != std::string::npos; ++at) ++bindings;
  return enables +
         kernels::fill_template(kernels::wgsl_source("common.wgsl"), {{"META_BINDING", std::to_string(bindings)}}) +
         kernel;
}

std::string tint_errors(const std::string& tint, const std::string& wgsl, const std::string& name) {
  std::string in = ::testing::TempDir() + "tile_sgmat_" + name + ".wgsl", log = in + ".log";
  std::ofstream(in) << wgsl;
  int rc = std::system((tint + " --format wgsl -o /dev/null " + in + " >" + log + " 2>&1").c_str());
  std::ifstream f(log);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(log.c_str());
  if (rc != 0) return (text.empty() ? "tint exited " + std::to_string(rc) : text.substr(0, 4000)) + " (" + in + ")";
  std::remove(in.c_str());
  return "";
}

}  // namespace

namespace {

// Tile × tile on subgroup matrices (emulated here), with rows over the array's edge: values near 1e-6
// (a loss's scale) as accurate as near 1 (the operands' power-of-two scales); the mode's knob.
tl::Kernel tile_product(int tm, int K, int N) {
  tl::At rows{tl::Coord::block(0), 0};
  tl::Kernel k("sgmat_tiles", 64);
  tl::Array xa = k.input("x"), wa = k.input("w"), out = k.output("out");
  tl::tile_store(out, tl::tile_matmul(tl::tile_load(xa, {tm, K}, rows), tl::tile_load(wa, {K, N})), rows);
  return k;
}

}  // namespace

TEST(TileSgmat, ForwardMatchesFloat64) {
  std::string why, mode = mode_here(false, why);
  if (mode.empty()) GTEST_SKIP() << why;
  SgmatEnv env(mode.c_str());
  const int tm = 16, K = 32, N = 16;
  const int64_t R = 2 * tm + 5;
  tl::Kernel k = tile_product(tm, K, N);
  EXPECT_TRUE(k.uses_subgroup_matrices(*ctx(), false));
  EXPECT_TRUE(k.uses_subgroup_matrices(*ctx(), true));
  tl::Grid grid{blocks(R, tm), 1, 1};
  for (double scale : {1.0, 1e-6}) {
    Tensor x = rand_tensor({R, K}, 31, -scale, scale), w = rand_tensor({K, N}, 32, -1, 1);
    expect_reference(k, {x, w}, {R, N}, grid, "scale " + std::to_string(scale), {1e-6 * scale, 1e-5});
  }
  {
    SgmatEnv off("off");
    EXPECT_FALSE(k.uses_subgroup_matrices(*ctx(), false));
  }
  {
    SgmatEnv bad("yes");
    expect_error([&] { (void)k.uses_subgroup_matrices(*ctx(), false); }, ErrorKind::Value,
                 {"SURFGRAD_TILE_SGMAT='yes'", "auto", "off", "emulate"});
  }
}

// Small integers (exact in f16: every lo part 0, every sum exact in f32) give the exact product:
// a wrong fragment layout, offset or stride shows as a wrong value here, apart from rounding.
// K 32 (two fragment steps), N 32 (two fragments a row), M 32 (two a column); more shapes with
// SURFGRAD_TILE_SGMAT_EMULATED=1 or on the device (each emulated kernel takes ~5 s to compile).
TEST(TileSgmat, SmallIntegersExact) {
  std::string why, mode = mode_here(false, why);
  if (mode.empty()) GTEST_SKIP() << why;
  SgmatEnv env(mode.c_str());
  const bool all = mode == "auto" || emulation_missing(true).empty();
  for (int K : {16, 32})
    for (int N : {16, 32}) {
      if (!all && (K != 32 || N != 32)) continue;
      const int tm = 32;
      const int64_t R = tm + 16;
      auto integers = [](const Shape& s, uint32_t seed) {
        HostArray a = HostArray::from(rand_tensor(s, seed, -4.5, 4.5));
        std::vector<double> v = a.values();
        for (double& x : v) x = std::round(x);
        return upload(Ref{s, v}, DType::f32);
      };
      tl::Kernel k = tile_product(tm, K, N);
      ASSERT_TRUE(k.uses_subgroup_matrices(*ctx(), false));
      expect_reference(k, {integers({R, K}, 51), integers({K, N}, 52)}, {R, N}, {blocks(R, tm), 1, 1},
                       "integers, K " + std::to_string(K) + ", N " + std::to_string(N), {1e-6, 0});
    }
}

// Both adjoints (dA = dC·Bᵀ, dB = Aᵀ·dC: transposing copies into the scratch) by gradcheck.
TEST(TileSgmat, TileGradients) {
  std::string why, mode = mode_here(true, why);
  if (mode.empty()) GTEST_SKIP() << why;
  SgmatEnv env(mode.c_str());
  const int tm = 16, K = 32, N = 16;
  const int64_t R = 2 * tm + 5;
  check_grad(tile_product(tm, K, N), {rand_tensor({R, K}, 33), rand_tensor({K, N}, 34)}, {R, N}, {blocks(R, tm), 1, 1},
             "tile x tile");
}

// Weights read in place (the MLP's form), staged and not: dA reads B transposed, dB is added
// atomically into the weights' gradient; a 16×2 first layer (K = 2) stays on the scalar code.
TEST(TileSgmat, InPlaceWeightsMatchFloat64) {
  std::string why, mode = mode_here(true, why);
  if (mode.empty()) GTEST_SKIP() << why;
  SgmatEnv env(mode.c_str());
  const int tm = 16, K = 16, N = 32, threads = 64;
  const int64_t R = 2 * tm;
  tl::At rows{tl::Coord::block(0), 0};
  for (bool staged : {true, false}) {
    tl::Kernel k("sgmat_in_place", threads);
    k.set_weight_staging(staged);
    tl::Array xa = k.input("x"), wa = k.input("w"), out = k.output("out");
    tl::Tile h = tl::tile_matmul(tl::tile_load(xa, {tm, 2}, rows), wa, K, 0);                // scalar: K = 2
    tl::tile_store(out, tl::tile_matmul(tl::tile_map(tl::Unary::tanh, h), wa, N, 2), rows);  // 16×16 · 16×32
    std::string fwd = k.subgroup_matrix_wgsl(0, 32), bwd = k.subgroup_matrix_wgsl(1, 32);
    EXPECT_EQ(fwd.find("on subgroup matrices: 16×2"), std::string::npos) << fwd;
    EXPECT_NE(fwd.find("on subgroup matrices: 16×16 · 16×32"), std::string::npos) << fwd;
    EXPECT_NE(bwd.find("on subgroup matrices: 16×32 · 32×16"), std::string::npos) << bwd;  // dA = dC·Bᵀ
    EXPECT_NE(bwd.find("on subgroup matrices: 16×16 · 16×32"), std::string::npos) << bwd;  // dB = Aᵀ·dC
    Tensor x = rand_tensor({R, 2}, 41), w = rand_tensor({K + 2, N}, 42, -0.5, 0.5);
    std::string how = staged ? "staged" : "global";
    expect_reference(k, {x, w}, {R, N}, {blocks(R, tm), 1, 1}, how, {1e-5, 1e-5});
    check_grad(k, {x, w}, {R, N}, {blocks(R, tm), 1, 1}, "in place, " + how);
  }
}

// The MLP demo's fused kernels as they run where the device has subgroup matrices (16 rows, 512
// threads, hidden 64; f16 and f32 weights; forward, backward, both; staged or not), through Tint. ~0.1 s a kernel.
TEST(TileSgmatTint, MlpKernelsCompile) {
  std::string tint = tint_binary();
  if (tint.empty()) GTEST_SKIP() << "no tint on PATH (SURFGRAD_TINT): the tile kernels' WGSL is checked where one is";
  int n = 0;
  for (DType weights : {DType::f16, DType::f32}) {
    tl::Kernel k = mlp_loss_kernel(16, 64, 3, 512, weights);
    for (int kind : {0, 1, 2})
      for (bool staged : {false, true}) {
        // CAS atomics: Dawn offers no atomic<f32> (wgpu-native's extension).
        std::string wgsl = k.subgroup_matrix_wgsl(kind, 32, false, staged);
        ASSERT_NE(wgsl.find("subgroupMatrixMultiplyAccumulate"), std::string::npos) << wgsl;
        std::string name = std::to_string(n++);
        EXPECT_EQ(tint_errors(tint, module_text(wgsl), name), "")
            << dtype_name(weights) << " kind " << kind << " staged " << staged;
      }
  }
  EXPECT_EQ(n, 12);
}

// Tint must refuse a product whose fragments disagree, so that the test above cannot pass by
// Tint accepting anything.
TEST(TileSgmatTint, CatchesATypeError) {
  std::string tint = tint_binary();
  if (tint.empty()) GTEST_SKIP() << "no tint on PATH";
  std::string wgsl = module_text(mlp_loss_kernel(16, 64, 2, 128, DType::f32).subgroup_matrix_wgsl(0, 32));
  const std::string alias = "alias SgmC = subgroup_matrix_result<f32, 16, 16>;";
  size_t at = wgsl.find(alias);
  ASSERT_NE(at, std::string::npos) << "the result alias moved";
  wgsl.replace(at, alias.size(), "alias SgmC = subgroup_matrix_result<f32, 8, 16>;");
  std::string err = tint_errors(tint, wgsl, "bad");
  EXPECT_NE(err.find("subgroupMatrix"), std::string::npos) << err;
}

// Where the tile MLP benchmark runs on NVIDIA (bench/tile_sgmat_gpu.sh: 16 pixels a workgroup,
// 512 threads, hidden 64, 3 layers), the backward kernel's scratch fits beside its tiles in the
// 48 KiB NVIDIA's Vulkan driver gives a workgroup (with the f32 weight staging or without it).
TEST(TileSgmat, MlpScratchFitsNvidiaWorkgroupMemory) {
  for (DType weights : {DType::f16, DType::f32}) {
    tl::Kernel k = mlp_loss_kernel(16, 64, 3, 512, weights);
    uint64_t tiles = k.workgroup_bytes(true), scratch = k.subgroup_matrix_bytes(true), staged = k.weight_stage_bytes();
    std::printf("tile MLP loss kernel, %s weights: tiles %llu B, weights staged %llu B, sgmat scratch %llu B\n",
                dtype_name(weights), (unsigned long long)tiles, (unsigned long long)staged,
                (unsigned long long)scratch);
    EXPECT_GT(scratch, 0u);
    EXPECT_LE(tiles + scratch, 49152u);
  }
}

// The tile MLP demo with its products on subgroup matrices (16 pixels a workgroup, hidden 16:
// every hidden layer's product and both adjoints) against the same network on ordinary ops.
TEST(TileSgmat, MlpFusedMatchesUnfused) {
  std::string why, mode = mode_here(true, why);
  if (mode.empty()) GTEST_SKIP() << why;
  SgmatEnv env(mode.c_str());
  EXPECT_TRUE(mlp_loss_kernel(16, 16, 2, 64, DType::f32).uses_subgroup_matrices(*ctx(), true));
  demos::TileMlpOptions o;
  o.side = 16, o.tile_rows = 16, o.threads = 64, o.hidden = 16, o.layers = 2, o.steps = 2, o.weights = "f32";
  auto fused = demos::train_tile_mlp(ctx(), o);
  o.fused = false;
  auto unfused = demos::train_tile_mlp(ctx(), o);
  EXPECT_NEAR(fused.first_loss, unfused.first_loss, 1e-5 + 1e-4 * unfused.first_loss);
  ASSERT_EQ(fused.first_gradient.size(), unfused.first_gradient.size());
  float scale = 0;
  for (float v : unfused.first_gradient) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < fused.first_gradient.size(); ++i)
    EXPECT_NEAR(fused.first_gradient[i], unfused.first_gradient[i], 1e-4f * scale) << "parameter " << i;
}
