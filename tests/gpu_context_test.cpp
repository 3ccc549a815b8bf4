// The gpu layer: the header matches the library, features and limits are what the device
// reports, kernels are cached, the pool recycles, batches submit, and f16 runs where offered.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

TEST(GpuContext, HeaderMatchesLibrary) {
  // Reads limits into structs guarded by canary bytes and checks that what was requested is
  // what the device reports: a header from another build of the library fails here.
  auto problems = ctx()->verify_header_matches_library();
  for (const auto& p : problems) ADD_FAILURE() << p;
  EXPECT_FALSE(ctx()->info().name.empty());
  const char* chosen = std::getenv("SURFGRAD_WEBGPU");  // Dawn under scripts/run_tests.sh's Dawn stage
  bool dawn = chosen && std::string(chosen) == "dawn";
  EXPECT_NE(ctx()->info().implementation.find(dawn ? "Dawn" : "wgpu-native"), std::string::npos);
}

TEST(GpuContext, LimitsAreTheAdapters) {
  const auto& l = ctx()->limits();
  EXPECT_GE(l.max_compute_invocations_per_workgroup, 256u);
  EXPECT_GE(l.max_storage_buffers_per_shader_stage, 8u);
  EXPECT_GE(l.max_compute_workgroups_per_dimension, 65535u);
  EXPECT_GE(l.max_storage_buffer_binding_size, 128ull << 20);
  EXPECT_GE(l.max_compute_workgroup_storage_size, 16384u);
}

TEST(GpuContext, F16KernelCompilesAndRunsWhereOffered) {
  if (!ctx()->features().shader_f16) GTEST_SKIP() << "adapter has no shader-f16";
  // 1/3 in f16 is 0x3555; the kernel must really compute in f16 storage.
  Tensor t = Tensor::full(ctx(), {5}, 1.0 / 3.0, DType::f16);
  std::vector<uint16_t> h(5);
  t.to_host(h.data());
  for (uint16_t v : h) EXPECT_EQ(v, 0x3555);
  EXPECT_NEAR((t * 3.0).to_vector<float>()[0], 1.0, 1e-3);
}

TEST(GpuContext, F16RefusedWithoutFeature) {
  auto no_f16 = gpu::Context::create({.quiet = true, .request_f16 = false});
  EXPECT_FALSE(no_f16->features().shader_f16);
  try {
    Tensor::zeros(no_f16, {4}, DType::f16);
    FAIL() << "f16 tensor created without shader-f16";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("shader-f16"), std::string::npos) << e.what();
  }
  Tensor ok = Tensor::ones(no_f16, {4});
  EXPECT_EQ(ok.to_vector<float>()[3], 1.0f);
}

// Asking for cooperative matrices never costs the context: where the adapter lacks the feature
// (lavapipe) or wgpu-native refuses it (29.0.1.1 on an H100: "experimental features are not
// enabled"), the device is created without it, and a kernel that wants it gets Unsupported.
TEST(GpuContext, CooperativeMatrixRequestNeverBreaksTheContext) {
  auto coop = gpu::Context::create({.quiet = true, .request_cooperative_matrix = true});
  const auto& f = coop->features();
  EXPECT_TRUE(f.cooperative_matrix_offered || !f.cooperative_matrix);
  EXPECT_TRUE(f.cooperative_matrix || !f.cooperative_matrix_refusal.empty() || !f.cooperative_matrix_offered);
  if (f.cooperative_matrix) {
    EXPECT_NE(coop->wgsl_preamble(false, false, true).find("enable wgpu_cooperative_matrix;"), std::string::npos);
  } else {
    sgtest::expect_error(
        ErrorKind::Unsupported, [&] { coop->wgsl_preamble(false, false, true); }, {"cooperative matrices"},
        "preamble without the feature");
  }
  Tensor ok = Tensor::ones(coop, {4});
  EXPECT_EQ(ok.to_vector<float>()[3], 1.0f);
}

TEST(GpuContext, AdapterByIndex) {
  // "#N" picks the N-th adapter listed (identical GPUs share a name); an index past the list is
  // refused with the list, each adapter with its index; "#" without a number is a usage error.
  std::string listed;
  try {
    gpu::Context::create({.adapter = "#999", .quiet = true});
  } catch (const Error& e) {
    listed = e.message();
  }
  EXPECT_NE(listed.find("no adapter matches '#999'"), std::string::npos) << listed;
  EXPECT_NE(listed.find("#0 "), std::string::npos) << listed;
  auto first = gpu::Context::create({.adapter = "#0", .quiet = true});
  EXPECT_NE(listed.find("#0 " + first->info().name), std::string::npos) << listed;
  EXPECT_EQ(Tensor::ones(first, {3}).to_vector<float>()[2], 1.0f);
  sgtest::expect_error(
      ErrorKind::Value, [] { gpu::Context::create({.adapter = "#one", .quiet = true}); }, {"#one", "index"},
      "adapter index");
}

TEST(GpuContext, KernelsAreCachedByContent) {
  Tensor a = Tensor::ones(ctx(), {10});
  (void)(a + a).to_vector<float>();
  size_t before = ctx()->kernel_cache_size();
  for (int i = 0; i < 5; ++i) (void)(a + a).to_vector<float>();
  EXPECT_EQ(ctx()->kernel_cache_size(), before);
}

TEST(GpuContext, PoolRecyclesBuffers) {
  Tensor x = Tensor::ones(ctx(), {1000});
  for (int i = 0; i < 3; ++i) (void)(x * 2.0 + 1.0).to_vector<float>();
  auto before = ctx()->pool_stats();
  for (int i = 0; i < 50; ++i) (void)(x * 2.0 + 1.0).to_vector<float>();
  auto after = ctx()->pool_stats();
  EXPECT_EQ(after.live_buffers, before.live_buffers);
  EXPECT_EQ(after.allocations, before.allocations) << "steady state must not allocate";
  EXPECT_GT(after.reuses, before.reuses);
  EXPECT_GE(after.peak_live_bytes, after.live_bytes);
  EXPECT_GE(after.peak_live_bytes, before.peak_live_bytes);
}

TEST(GpuContext, TrimmedPoolAndCachedBindGroupsStayCorrect) {
  // Bind groups are cached by buffer identity; trimming the pool releases the buffers, and new
  // buffers must never hit a stale cached group.
  for (int round = 0; round < 3; ++round) {
    Tensor a = Tensor::full(ctx(), {300}, double(round + 1));
    Tensor b = Tensor::full(ctx(), {300}, 10.0);
    EXPECT_EQ((a + b).to_vector<float>()[299], float(round + 11));
    a = Tensor();
    b = Tensor();
    ctx()->trim_pool();
    EXPECT_EQ(ctx()->pool_stats().pooled_buffers, 0u);
  }
}

TEST(GpuContext, ManyOpsBatchBeforeOneReadback) {
  Tensor y = Tensor::zeros(ctx(), {64});
  ctx()->sync();
  for (int i = 0; i < 3000; ++i) y = y + 1.0;  // crosses the per-batch dispatch cap
  EXPECT_EQ(y.to_vector<float>()[63], 3000.0f);
}

TEST(GpuContext, UploadIntoRecycledBufferWaitsForPendingWork) {
  // A buffer released while a recorded (unsubmitted) kernel still reads it, then reused for
  // an upload: the upload must not overtake the kernel.
  for (int trial = 0; trial < 5; ++trial) {
    Tensor out;
    {
      Tensor a = Tensor::from_vector(ctx(), std::vector<float>(4096, 1.0f), {4096});
      out = a * 2.0;
    }  // a's buffer is back in the pool, the multiply not yet submitted
    Tensor b = Tensor::from_vector(ctx(), std::vector<float>(4096, 7.0f), {4096});
    EXPECT_EQ(out.to_vector<float>()[100], 2.0f);
    EXPECT_EQ(b.to_vector<float>()[100], 7.0f);
  }
}

TEST(GpuContext, LargeGridsSplitOverTwoDimensions) {
  // Pretend the adapter allows 8 workgroups per dimension: every kernel family must then
  // spread its grid over x, y and z and still cover every element exactly once.
  auto small = gpu::Context::create({.quiet = true, .max_workgroups_per_dimension = 8});
  const int64_t n = 256 * 70 + 3;  // 71 workgroups > 8²
  Tensor x = Tensor::arange(small, 0, double(n));
  auto v = (x * 2.0).to_vector<float>();
  for (int64_t i = 0; i < n; i += 997) EXPECT_EQ(v[size_t(i)], 2.0f * float(i));
  EXPECT_EQ(v[size_t(n - 1)], 2.0f * float(n - 1));
  // 300 rows reduce with one workgroup per row.
  Tensor m = Tensor::ones(small, {300, 300});
  auto s = m.sum({1}).to_vector<float>();
  EXPECT_EQ(s.size(), 300u);
  for (float x2 : s) EXPECT_EQ(x2, 300.0f);
  // Matmul tiles: 20×20 tiles = 400 workgroups.
  Tensor a = Tensor::ones(small, {320, 5}), b = Tensor::ones(small, {5, 320});
  auto c = a.matmul(b).to_vector<float>();
  for (size_t i = 0; i < c.size(); i += 1013) EXPECT_EQ(c[i], 5.0f);
  EXPECT_EQ(c.back(), 5.0f);
  // Random numbers do not depend on the grid shape.
  EXPECT_EQ(Tensor::uniform(small, {5000}, 42).to_vector<float>(),
            Tensor::uniform(ctx(), {5000}, 42).to_vector<float>());
}

TEST(GpuContext, SubgroupsWhereOffered) {
  if (!ctx()->features().subgroups) GTEST_SKIP() << "adapter has no subgroups";
  uint32_t size = ctx()->features().subgroup_min_size;
  EXPECT_TRUE(size == 4 || size == 8 || size == 16 || size == 32 || size == 64 || size == 128) << size;
  // A subgroup reduction over a full workgroup: each subgroup sums its lanes.
  auto buf = ctx()->alloc(4 * 64);
  auto k = ctx()->kernel(ctx()->wgsl_preamble(false, true) +
                             "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n"
                             "@compute @workgroup_size(64) fn main(@builtin(local_invocation_index) i: u32) {\n"
                             "  out[i] = subgroupAdd(i);\n}",
                         "main");
  ctx()->dispatch(k, {buf.get()}, {}, {1, 1, 1});
  std::vector<uint32_t> got(64);
  ctx()->download(*buf, got.data(), 4 * 64);
  for (uint32_t i = 0; i < 64; ++i) {
    uint32_t first = i / size * size, want = 0;
    for (uint32_t j = first; j < first + size; ++j) want += j;
    EXPECT_EQ(got[i], want) << "lane " << i;
  }
}

TEST(GpuContext, TimestampTiming) {
  if (!ctx()->features().timestamp_query) GTEST_SKIP() << "no timestamp-query";
  Tensor x = Tensor::ones(ctx(), {1 << 16});
  ctx()->begin_timing();
  Tensor y = x * 3.0;
  double ms = ctx()->end_timing_ms();
  EXPECT_GE(ms, 0.0);
  EXPECT_LT(ms, 10000.0);
  EXPECT_EQ(y.to_vector<float>()[7], 3.0f);
}

TEST(GpuContext, IndirectDispatchReadsItsCountsOnTheDevice) {
  // Each workgroup adds 1 to out[0]; the counts come from a buffer: (3, 2, 1), then (0, 1, 1).
  auto out = ctx()->alloc(4), args = ctx()->alloc(32);
  uint32_t zero = 0;
  std::vector<uint32_t> counts = {3, 2, 1, 0, 1, 1, 0, 0};
  ctx()->upload(*out, &zero, 4);
  ctx()->upload(*args, counts.data(), 32);
  auto k = ctx()->kernel(
      "@group(0) @binding(0) var<storage, read_write> out: array<atomic<u32>>;\n"
      "@compute @workgroup_size(1) fn main() { atomicAdd(&out[0], 1u); }",
      "main");
  ctx()->dispatch_indirect(k, {out.get()}, {}, *args, 0);
  ctx()->dispatch_indirect(k, {out.get()}, {}, *args, 12);  // zero workgroups: skipped
  uint32_t got = 0;
  ctx()->download(*out, &got, 4);
  EXPECT_EQ(got, 6u);
  EXPECT_THROW(ctx()->dispatch_indirect(k, {out.get()}, {}, *args, 2), Error) << "unaligned";
  EXPECT_THROW(ctx()->dispatch_indirect(k, {out.get()}, {}, *args, 24), Error) << "past the end";
  EXPECT_THROW(ctx()->dispatch_indirect(k, {args.get()}, {}, *args, 0), Error) << "bound as well";
}

TEST(GpuContext, DumpsCompiledKernelsWhenAsked) {
  // SURFGRAD_DUMP_WGSL=DIR: each kernel compiled from then on is written to DIR, unchanged.
  std::string dir = ::testing::TempDir() + "surfgrad-dump-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string wgsl = "// dump test " + dir + "\n@compute @workgroup_size(1) fn main() {}\n";
  ::setenv("SURFGRAD_DUMP_WGSL", dir.c_str(), 1);
  ctx()->kernel(wgsl);
  ::unsetenv("SURFGRAD_DUMP_WGSL");
  int found = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream f(e.path());
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    found += text == wgsl;
  }
  EXPECT_EQ(found, 1);
  std::filesystem::remove_all(dir);
}

// A readback collected later holds the values the tensor had when it was asked for, whatever
// the GPU writes there afterwards; several can be pending at once, in any order of waiting; one
// dropped unwaited costs nothing; a second wait is refused by name.
TEST(GpuContext, DownloadLaterReadsTheValuesAtItsPlaceInTheQueue) {
  std::vector<float> first(1000), second(1000);
  for (size_t i = 0; i < first.size(); ++i) first[i] = float(i) * 0.5f, second[i] = -float(i);
  Tensor t = Tensor::from_vector(ctx(), first, {1000});
  gpu::PendingDownload a = t.slice(0, 3, 10).to_host_later();  // an offset not at the buffer's start
  t.assign(Tensor::from_vector(ctx(), second, {1000}));
  gpu::PendingDownload b = t.to_host_later();
  {
    gpu::PendingDownload dropped = (t * 2.0).to_host_later();
  }
  t.assign(Tensor::zeros(ctx(), {1000}));
  EXPECT_TRUE(a.pending() && b.pending());
  std::vector<float> got_b(1000), got_a(7);
  b.wait(got_b.data());
  a.wait(got_a.data());
  EXPECT_EQ(got_b, second);
  EXPECT_EQ(got_a, std::vector<float>(first.begin() + 3, first.begin() + 10));
  EXPECT_FALSE(a.pending());
  try {
    a.wait(got_a.data());
    ADD_FAILURE() << "a second wait was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("PendingDownload"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(1000, 0.0f));
}
