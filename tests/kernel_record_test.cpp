// Kernel records (Context::prewarm_recorded; cold start across runs, issue 35): a second map
// whose start replays the first one's record builds no pipeline at first use (nothing compiles
// on its critical path) and gives the same bits; a record whose source differs from what the op
// now generates never serves it; a corrupt record is ignored; and the prewarm's workers of a
// context nobody closed are joined at process exit. ~5 s on lavapipe (three small t-SNE maps).
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gpu/testing.hpp"
#include "kernels/launch.hpp"
#include "maps/layout_prewarm.hpp"
#include "surfgrad/map_pipeline.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
namespace fs = std::filesystem;

namespace {

// SURFGRAD_PIPELINE_CACHE pointed at a fresh folder while it lives (the record is kept there).
struct RecordFolder {
  fs::path dir;
  std::string keep;
  bool had = false;
  explicit RecordFolder(const std::string& name) {
    dir = fs::path(::testing::TempDir()) / ("surfgrad_record_" + name + "_" + std::to_string(getpid()));
    fs::remove_all(dir);
    if (const char* v = std::getenv("SURFGRAD_PIPELINE_CACHE")) had = true, keep = v;
    ::setenv("SURFGRAD_PIPELINE_CACHE", dir.c_str(), 1);
  }
  ~RecordFolder() {
    if (had)
      ::setenv("SURFGRAD_PIPELINE_CACHE", keep.c_str(), 1);
    else
      ::unsetenv("SURFGRAD_PIPELINE_CACHE");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

MapOptions small_tsne() {
  MapOptions o;
  o.tsne.iterations = 40;
  o.tsne.exaggeration_iterations = 15;
  return o;
}

// A map as `surfgrad map` runs it: the record replayed at the start and saved at the end.
std::vector<float> recorded_map(const gpu::ContextPtr& c, const MapOptions& o) {
  MapKernelRecord record(c, o);
  Tensor x = Tensor::normal(c, {300, 8}, 5);
  auto y = map_points(x, o).embedding.to_vector<float>();
  record.save();
  return y;
}

std::string chain_kernel(int c) {
  return R"(
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= arg(0u)) { return; }
  out[i] = f32(i) * )" +
         std::to_string(c) + R"(.0;
}
)";
}

}  // namespace

TEST(KernelRecord, SecondRunBuildsNothingAtFirstUse) {
  if (std::getenv("SURFGRAD_PREWARM") && std::string(std::getenv("SURFGRAD_PREWARM")) == "0")
    GTEST_SKIP() << "SURFGRAD_PREWARM=0";
  RecordFolder folder("second_run");
  const MapOptions o = small_tsne();
  auto first = gpu::Context::create({.quiet = true});
  if (first->prewarm("test|record-probe", chain_kernel(1)) == false)
    GTEST_SKIP() << "prewarming does nothing on this implementation";
  const size_t first_before = first->startup_stats().built_at_use;
  auto a = recorded_map(first, o);
  // Without a record, the map's tensor ops (fills, random, reductions, elementwise) compile at
  // first use: what this test shows the record removes.
  EXPECT_GT(first->startup_stats().built_at_use, first_before) << "the first map built nothing at first use";
  // Named too, in build order (what the browser's sg.stats().pipelines.atUse shows).
  const auto first_stats = first->startup_stats();
  EXPECT_EQ(first_stats.built_at_use_labels.size(), first_stats.built_at_use);
  for (const std::string& label : first_stats.built_at_use_labels) EXPECT_FALSE(label.empty());

  auto second = gpu::Context::create({.quiet = true});
  const int queued = second->prewarm_recorded("map tsne");
  EXPECT_GT(queued, 10) << "the first map's record was not kept";
  gpu::ContextTesting::wait_for_prewarm(*second);  // the workers' head start, made whole
  const size_t before = second->startup_stats().built_at_use;
  auto b = recorded_map(second, o);
  const auto s = second->startup_stats();
  EXPECT_EQ(s.built_at_use, before) << "pipelines compiled on the map's critical path though the record had them "
                                       "(SURFGRAD_PROFILE=1 names them)";
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "the replayed map's bits differ";
}

TEST(KernelRecord, StaleSourceNeverServesAKernel) {
  RecordFolder folder("stale");
  auto c = gpu::Context::create({.quiet = true});
  ASSERT_TRUE(c->begin_kernel_record("test stale"));
  kernels::Program::generated(c, "test|record-stale", [] { return chain_kernel(2); });
  c->end_kernel_record(true);

  // The next process's op generates another source under the same key (a changed library).
  auto d = gpu::Context::create({.quiet = true});
  const int queued = d->prewarm_recorded("test stale");
  gpu::ContextTesting::wait_for_prewarm(*d);
  Tensor out = Tensor::zeros(d, {100});
  const size_t before = d->kernel_cache_size();
  auto k = kernels::Program::generated(d, "test|record-stale", [] { return chain_kernel(3); });
  k.launch({out}, {uint32_t(100)}, kernels::groups_for(*d, 100, 64));
  auto v = out.to_vector<float>();
  EXPECT_EQ(v[7], 21.0f) << "the recorded (stale) kernel ran instead of the op's own";
  if (queued > 0) {
    EXPECT_EQ(queued, 1);
    EXPECT_EQ(d->kernel_cache_size(), before + 1) << "the op's own source was built beside the recorded one";
  }
}

TEST(KernelRecord, CorruptRecordIsIgnored) {
  RecordFolder folder("corrupt");
  auto c = gpu::Context::create({.quiet = true});
  c->begin_kernel_record("test corrupt");
  kernels::Program::generated(c, "test|record-corrupt", [] { return chain_kernel(4); });
  c->end_kernel_record(true);
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(folder.dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u) << "one record file";
  // Truncated, then with a byte flipped in the middle: a miss, never an error or a crash.
  auto size = fs::file_size(files[0]);
  for (int damage = 0; damage < 2; ++damage) {
    if (damage == 0) {
      fs::resize_file(files[0], size / 2);
    } else {
      c->end_kernel_record(false);  // (no record open: nothing happens)
      c->begin_kernel_record("test corrupt");
      kernels::Program::generated(c, "test|record-corrupt", [] { return chain_kernel(4); });
      c->end_kernel_record(true);
      std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(std::streamoff(fs::file_size(files[0]) / 2));
      f.put('\x7f');
    }
    auto d = gpu::Context::create({.quiet = true});
    EXPECT_EQ(d->prewarm_recorded("test corrupt"), 0) << "damage " << damage;
  }
}

// A context nobody closes (leaked, as a language binding's default one may be), its workers busy
// when the process exits: they are joined by the exit handler before the process's static
// objects go, and the process exits cleanly.
TEST(KernelRecordDeathTest, WorkersOfAnUnclosedContextAreJoinedAtExit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        // Registered before the context's handler, so it runs after it.
        std::atexit([] {
          if (gpu::ContextTesting::live_prewarm_workers() != 0) std::_Exit(3);
        });
        auto* leaked = new gpu::ContextPtr(gpu::Context::create({.quiet = true}));
        for (int i = 0; i < 6; ++i) (*leaked)->prewarm("test|exit-" + std::to_string(i), chain_kernel(20 + i));
        std::exit(0);  // with the workers building (or waiting for more)
      },
      ::testing::ExitedWithCode(0), "");
}
