// The first map on a machine (cold start, issue 35): no kernel record yet, so what the map path
// prewarms by itself must cover the kernels it uses, the tensor ops' included (fills, elementwise
// ops, reductions, PCA's products: prewarm_map_tensor_ops, tensor/op_prewarm.hpp). Each map runs
// on a fresh context with an empty record folder, after its prewarm lists have been built on the
// workers; then the map itself may build at most a few pipelines on its own thread. A change in
// the map path that its prewarm lists do not follow fails here, naming the kernels
// (SURFGRAD_PROFILE=1 names them too). That the prewarmed maps give the same bits as unprewarmed
// ones, and build no pipeline they do not use, is kernel_prewarm_test's
// MapsAreBitwiseTheSameAndBuildNoExtraPipelines. ~5 s on lavapipe with Mesa's cache warm (~25 s
// with it empty: llvmpipe compiles each kernel at its first dispatch).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "gpu/testing.hpp"
#include "maps/knn_fused.hpp"
#include "maps/layout_prewarm.hpp"
#include "surfgrad/map_pipeline.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
namespace fs = std::filesystem;

namespace {

// Points uploaded from the host (no kernel: Tensor::normal would build one before the map).
Tensor points(const gpu::ContextPtr& c, int64_t n, int64_t d) {
  std::vector<float> v(size_t(n * d));
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (size_t i = 0; i < v.size(); ++i) v[i] = g(rng) + float(i / size_t(d) % 5) * 3.0f;  // five clusters
  return Tensor::from_vector(c, v, {n, d});
}

struct FirstMap {
  size_t at_use = 0;   // pipelines the map built on its own thread
  std::string detail;  // for the failure message
};

// On a fresh context with no record: the map path's prewarm lists queued as `surfgrad map` and
// map_points queue them (the CLI's before the points are read: `cli_first`), the workers left to
// finish, then the map.
//
// Eager mode whatever SURFGRAD_LAZY says: the prewarm lists name eager mode's kernels, and lazy
// mode's fused kernels are generated per graph shape when first realised (never prewarmed:
// docs/architecture.md), so a lazy first map builds them at first use by design.
FirstMap first_map(const MapOptions& o, int64_t n, int64_t d, bool cli_first) {
  struct Eager {
    bool was = lazy_mode();
    Eager() { set_lazy(false); }
    ~Eager() { set_lazy(was); }
  } eager;
  const fs::path dir = fs::path(::testing::TempDir()) / ("surfgrad_first_map_" + std::to_string(getpid()));
  fs::remove_all(dir);
  EnvVar cache("SURFGRAD_PIPELINE_CACHE", dir.c_str());
  auto c = gpu::Context::create({.quiet = true});
  Tensor x = points(c, n, d);
  if (cli_first) prewarm_map_kernels(c, o);
  prewarm_map_tensor_ops(c, o, n, d);
  prewarm_layout_kernels(c, o, n, map_neighbours(o, n));
  prewarm_knn_fused(c);
  gpu::ContextTesting::wait_for_prewarm(*c);
  const size_t before = c->startup_stats().built_at_use;
  const size_t kernels_before = c->kernel_cache_size();
  map_points(x, o);
  FirstMap r;
  r.at_use = c->startup_stats().built_at_use - before;
  r.detail = std::to_string(c->kernel_cache_size() - kernels_before) +
             " pipelines created by the map; "
             "run with SURFGRAD_PROFILE=1 to see their names ('at first use: ...')";
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

bool prewarm_works() {
  if (const char* v = std::getenv("SURFGRAD_PREWARM"); v && std::string(v) == "0") return false;
  auto c = gpu::Context::create({.quiet = true});
  return c->prewarm("test|first-map-probe", R"(
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x < arg(0u)) { out[gid.x] = 1.0; }
}
)");
}

MapOptions small(MapMethod method) {
  MapOptions o;
  o.method = method;
  o.tsne.iterations = 30;
  o.tsne.exaggeration_iterations = 10;
  o.umap.epochs = 20;
  return o;
}

}  // namespace

// t-SNE as a GPU runs it (the attraction and update kernels, FFT repulsion) and as a CPU adapter
// does (the fused step, exact repulsion); PCA on the points first where they have many
// dimensions (a CPU adapter projects 300 × 256 to 100 components).
TEST(FirstMapPrewarm, TsneBuildsAlmostNothingAtFirstUse) {
  if (!prewarm_works()) GTEST_SKIP() << "prewarming does nothing here (SURFGRAD_PREWARM=0, or Dawn)";
  for (const char* fused : {"0", "1"}) {
    EnvVar env("SURFGRAD_TSNE_FUSED", fused);
    MapOptions o = small(MapMethod::Tsne);
    if (std::string(fused) == "0") o.tsne.repulsion = Repulsion::Fft;
    for (int64_t d : {8, 256}) {
      for (bool cli : {false, true}) {
        if (cli && d > 8) continue;  // (the CLI's lists do not depend on the points: once is enough)
        FirstMap m = first_map(o, 300, d, cli);
        EXPECT_LE(m.at_use, 1u) << "SURFGRAD_TSNE_FUSED=" << fused << ", 300 x " << d
                                << (cli ? ", CLI's lists too" : "") << ": " << m.at_use << " built at first use ("
                                << m.detail << ")";
      }
    }
  }
}

TEST(FirstMapPrewarm, UmapBuildsAlmostNothingAtFirstUse) {
  if (!prewarm_works()) GTEST_SKIP() << "prewarming does nothing here (SURFGRAD_PREWARM=0, or Dawn)";
  FirstMap m = first_map(small(MapMethod::Umap), 300, 8, true);
  EXPECT_LE(m.at_use, 1u) << m.at_use << " built at first use (" << m.detail << ")";
}
