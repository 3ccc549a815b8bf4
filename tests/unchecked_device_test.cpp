// ContextOptions::own_kernels_only: under Dawn, a device without robustness (no bounds clamps,
// no robust buffer access) for contexts that run only surfgrad's kernels (`surfgrad map`, the
// Python estimators' map context). What makes that safe is that no map-path kernel reads or
// writes out of bounds. Where one did, the unchecked device reads whatever lies past the buffer
// (lavapipe: host memory) instead of zero or a clamped value, so a map that differs by a bit from
// the checked device's, or a crash, shows it — when what lies there is not zero too: a read
// planted 3,000 elements past t-SNE's update buffer went unseen here. The GPU machine's runs of
// the map-path suites under `disable_robustness` are the stronger check (BENCHMARKS.md). The
// maps here take the paths a GPU's map takes
// where lavapipe can run them (the streaming kNN on sorted points with tile skipping, small sets'
// kNN kernel, neighbour descent, t-SNE's attraction over the kNN graph and the sorted spread),
// beside the CPU adapter's defaults. Under wgpu-native the option changes nothing (checked).
#include <cstring>
#include <string>
#include <vector>

#include "surfgrad/map_pipeline.hpp"
#include "surfgrad/tiles.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

std::vector<float> map_on(const gpu::ContextPtr& c, MapMethod method, KnnMethod knn) {
  MapOptions o;
  o.method = method;
  o.knn = knn;
  o.tsne.iterations = 60;
  o.tsne.exaggeration_iterations = 20;
  o.umap.epochs = 30;
  return map_points(Tensor::normal(c, {700, 12}, 5), o).embedding.to_vector<float>();
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(UncheckedDevice, OnlyUnderDawnAndNotWhenChecksAreAsked) {
  auto c = gpu::Context::create({.quiet = true, .own_kernels_only = true});
  const bool dawn = c->info().implementation.rfind("Dawn", 0) == 0;
  EXPECT_EQ(c->unchecked_device(), dawn) << c->info().implementation;
  EXPECT_FALSE(gpu::Context::create({.quiet = true})->unchecked_device());
  EnvVar checked("SURFGRAD_CHECKED_KERNELS", "1");
  EXPECT_FALSE(gpu::Context::create({.quiet = true, .own_kernels_only = true})->unchecked_device());
}

TEST(UncheckedDevice, TileProgramsRefuseIt) {
  auto c = gpu::Context::create({.quiet = true, .own_kernels_only = true});
  if (!c->unchecked_device()) GTEST_SKIP() << "the device keeps its checks here (" << c->info().implementation << ")";
  namespace tl = surfgrad::tiles;
  tl::Kernel k("copy", 32);
  tl::Array x = k.input("x"), y = k.output("y");
  tl::At at{tl::Coord::block(0), 0};
  tl::tile_store(y, tl::tile_load(x, {4, 4}, at), at);
  Tensor xt = Tensor::normal(c, {8, 4}, 1), yt = Tensor::zeros(c, {8, 4});
  try {
    k.launch({xt}, {yt}, {2, 1, 1});
    ADD_FAILURE() << "a tile program ran on an unchecked device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("own_kernels_only"), std::string::npos) << e.what();
  }
}

TEST(UncheckedDevice, MapsAreBitwiseTheCheckedDevicesOnEveryPath) {
  auto checked = gpu::Context::create({.quiet = true});
  auto unchecked = gpu::Context::create({.quiet = true, .own_kernels_only = true});
  if (!unchecked->unchecked_device())
    GTEST_SKIP() << "the device keeps its checks here (" << unchecked->info().implementation << ")";
  struct Path {
    const char* what;
    MapMethod method;
    KnnMethod knn;
    std::vector<std::pair<const char*, const char*>> env;
  };
  const std::vector<Path> paths = {
      {"t-SNE, the adapter's defaults", MapMethod::Tsne, KnnMethod::Auto, {}},
      {"t-SNE, a GPU's kernels: sorted streaming kNN with tile skipping, attraction over the graph, sorted spread",
       MapMethod::Tsne,
       KnnMethod::Exact,
       {{"SURFGRAD_KNN_ORDER", "cells"},
        {"SURFGRAD_KNN_PRUNE", "1"},
        {"SURFGRAD_KNN_CPU_ROWS", "0"},
        {"SURFGRAD_KNN_GPU_ROWS", "0"},
        {"SURFGRAD_TSNE_FUSED", "0"},
        {"SURFGRAD_TSNE_SPREAD", "sorted"}}},
      {"UMAP, small sets' GPU kNN kernel", MapMethod::Umap, KnnMethod::Exact, {{"SURFGRAD_KNN_GPU_ROWS", "1"}}},
      {"UMAP, neighbour descent", MapMethod::Umap, KnnMethod::Descent, {}},
  };
  for (const Path& p : paths) {
    std::vector<std::unique_ptr<EnvVar>> env;
    for (const auto& [name, value] : p.env) env.push_back(std::make_unique<EnvVar>(name, value));
    EXPECT_TRUE(same_bits(map_on(checked, p.method, p.knn), map_on(unchecked, p.method, p.knn))) << p.what;
  }
}
