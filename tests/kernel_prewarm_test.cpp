// Prewarming (kernels::prewarm, gpu::Context::prewarm; issue 35's cold start): a kernel built on a
// worker thread gives the same bits as one built at first use; a build that fails is thrown at
// first use, naming the kernel, and leaves the context working; several threads asking at once
// for the same and different kernels get one pipeline per kernel.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>
#include <thread>

#include "kernels/launch.hpp"
#include "surfgrad/map_pipeline.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

// out[i] = a chain of transcendental functions of a[i] and the constant C (distinct kernels per
// C): the driver's compile decides these bits, so a different pipeline could show.
std::string chain_kernel(int c) {
  return R"(
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= arg(0u)) { return; }
  let x = a[i];
  out[i] = exp(sin(x) * 0.75) + log(1.0 + x * x) * tanh(x) + sqrt(abs(x)) / (1.0 + )" +
         std::to_string(c) + R"(.0) + fma(x, x, 0.5);
}
)";
}

Tensor input(const gpu::ContextPtr& c, int64_t n) {
  std::vector<float> v(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (auto& x : v) x = u(rng);
  return Tensor::from_vector(c, v, {n});
}

std::vector<float> run(const kernels::Program& k, const gpu::ContextPtr& c, const Tensor& a) {
  int64_t n = a.numel();
  Tensor out = Tensor::zeros(c, {n});
  k.launch({out, a}, {uint32_t(n)}, kernels::groups_for(*c, uint64_t(n), 64));
  return out.to_vector<float>();
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(KernelPrewarm, PrewarmedKernelGivesTheSameBits) {
  // Fresh contexts: nothing cached from other tests.
  auto warm = gpu::Context::create({.quiet = true});
  auto plain = gpu::Context::create({.quiet = true});
  const std::string key = "test|prewarm-chain";
  auto make = [] { return chain_kernel(3); };
  size_t before = warm->kernel_cache_size();
  bool queued = kernels::prewarm_generated(warm, key, make);
  // A file kernel too, with its values, as the maps prewarm them.
  kernels::prewarm(warm, "tsne_attraction.wgsl", {{"K", "4"}, {"LANES", "16"}});
  auto k = kernels::Program::generated(warm, key, make);
  auto attraction = kernels::Program::file(warm, "tsne_attraction.wgsl", {{"K", "4"}, {"LANES", "16"}});
  EXPECT_EQ(warm->kernel_cache_size(), before + 2) << "each kernel built once";
  EXPECT_FALSE(kernels::prewarm_generated(warm, key, make)) << "built already: nothing queued";
  EXPECT_EQ(k.kernel().state, kernels::Program::generated(warm, key, make).kernel().state);
  if (queued) {
    EXPECT_GE(warm->startup_stats().prewarmed, 2u);
  }

  Tensor a = input(warm, 10'001), b = input(plain, 10'001);
  auto got = run(k, warm, a);
  auto want = run(kernels::Program::generated(plain, key, make), plain, b);
  EXPECT_TRUE(same_bits(got, want)) << "a prewarmed kernel's results differ from one built at first use";
  EXPECT_EQ(attraction.kernel().storage_bindings().size(), 8u);
}

TEST(KernelPrewarm, BuildErrorIsThrownAtFirstUseNamingTheKernel) {
  auto c = gpu::Context::create({.quiet = true});
  const std::string key = "test|prewarm-broken-kernel";
  auto broken = [] {
    return std::string("@compute @workgroup_size(64)\nfn main() { let x: f32 = undefined_name; }\n");
  };
  kernels::prewarm_generated(c, key, broken);  // no throw here
  // The context goes on working while (and after) the build fails on its worker.
  auto good = kernels::Program::generated(c, "test|prewarm-good", [] { return chain_kernel(5); });
  Tensor a = input(c, 300);
  auto first = run(good, c, a);
  try {
    kernels::Program::generated(c, key, broken);
    FAIL() << "a kernel that does not compile was returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::ShaderCompile) << e.what();
    EXPECT_NE(std::string(e.what()).find("test|prewarm-broken-kernel"), std::string::npos)
        << "the message names the kernel: " << e.what();
    EXPECT_NE(std::string(e.what()).find("undefined_name"), std::string::npos) << e.what();
  }
  // Asked again: built again, thrown again (not a stale success).
  EXPECT_THROW(kernels::Program::generated(c, key, broken), Error);
  // No error leaked into the context's sticky state.
  EXPECT_TRUE(same_bits(run(good, c, a), first));
  c->sync();
}

TEST(KernelPrewarm, ConcurrentFirstUseBuildsEachKernelOnce) {
  auto c = gpu::Context::create({.quiet = true});
  constexpr int kThreads = 6, kKernels = 4;
  size_t before = c->kernel_cache_size();
  // Half the kernels prewarmed, half not: first uses race with the workers and with each other.
  for (int j = 0; j < kKernels; j += 2)
    kernels::prewarm_generated(c, "test|race-" + std::to_string(j), [j] { return chain_kernel(10 + j); });
  std::vector<std::vector<const gpu::KernelState*>> seen(kThreads);
  std::atomic<int> failures{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      try {
        // Every thread asks for every kernel, in a different order, and one of its own.
        for (int i = 0; i < kKernels; ++i) {
          int j = (i + t) % kKernels;
          auto p =
              kernels::Program::generated(c, "test|race-" + std::to_string(j), [j] { return chain_kernel(10 + j); });
          seen[t].push_back(p.kernel().state.get());
        }
        kernels::Program::generated(c, "test|race-own-" + std::to_string(t), [t] { return chain_kernel(100 + t); });
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
        ++failures;
      }
    });
  go = true;
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures, 0);
  EXPECT_EQ(c->kernel_cache_size(), before + kKernels + kThreads) << "one pipeline per distinct kernel";
  // One kernel object per key, whichever thread asked first.
  for (int i = 0; i < kKernels; ++i) {
    std::set<const gpu::KernelState*> states;
    for (int t = 0; t < kThreads; ++t) states.insert(seen[t][(i - t + kKernels * kThreads) % kKernels]);
    EXPECT_EQ(states.size(), 1u) << "kernel " << i << " was built more than once";
  }
  // And each computes what it should (here, on this thread).
  Tensor a = input(c, 1000);
  auto plain = gpu::Context::create({.quiet = true});
  Tensor b = input(plain, 1000);
  for (int j = 0; j < kKernels; ++j) {
    auto make = [j] { return chain_kernel(10 + j); };
    auto got = run(kernels::Program::generated(c, "test|race-" + std::to_string(j), make), c, a);
    auto want = run(kernels::Program::generated(plain, "test|race-" + std::to_string(j), make), plain, b);
    EXPECT_TRUE(same_bits(got, want)) << "kernel " << j;
  }
}

// A map with its layout's kernels prewarmed (map_points does) against one without
// (SURFGRAD_PREWARM=0), each on a fresh context: the same bits, and the same pipelines: a
// prewarm entry whose key differs from its user's call would build one more, used by nobody.
TEST(KernelPrewarm, MapsAreBitwiseTheSameAndBuildNoExtraPipelines) {
  for (MapMethod method : {MapMethod::Tsne, MapMethod::Umap}) {
    auto map = [&](bool prewarm, size_t& pipelines, uint64_t& prewarmed) {
      ::setenv("SURFGRAD_PREWARM", prewarm ? "1" : "0", 1);
      auto c = gpu::Context::create({.quiet = true});
      MapOptions o;
      o.method = method;
      o.tsne.iterations = 60;
      o.tsne.exaggeration_iterations = 20;
      o.umap.epochs = 30;
      auto y = map_points(Tensor::normal(c, {400, 8}, 5), o).embedding.to_vector<float>();
      pipelines = c->kernel_cache_size();
      prewarmed = c->startup_stats().prewarmed;
      ::unsetenv("SURFGRAD_PREWARM");
      return y;
    };
    size_t with = 0, without = 0;
    uint64_t queued = 0, queued_off = 0;
    auto a = map(true, with, queued);
    auto b = map(false, without, queued_off);
    const char* name = method == MapMethod::Tsne ? "t-SNE" : "UMAP";
    EXPECT_TRUE(same_bits(a, b)) << name << ": the prewarmed map differs";
    // Lazy mode (SURFGRAD_LAZY=1) fuses the tensor ops whose eager kernels the prewarm lists
    // name, so there the prewarmed map may hold pipelines it does not use, never fewer.
    if (lazy_mode())
      EXPECT_GE(with, without) << name << ": the prewarmed map built fewer pipelines";
    else
      EXPECT_EQ(with, without) << name << ": prewarming built pipelines the map does not use";
    EXPECT_EQ(queued_off, 0u);
    if (queued == 0) std::cout << "[ note     ] " << name << ": nothing prewarmed on this implementation\n";
  }
}
