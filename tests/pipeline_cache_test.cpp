// The on-disk pipeline cache (src/gpu/pipeline_cache.*; issue 35): entries survive a new store
// (a new process), and anything wrong with one (another adapter's, corrupt, truncated, a folder
// that cannot be written) is a miss, never an error. Under Dawn (scripts/run_tests.sh's Dawn
// stage) a second device reads back what the first one stored: the canary for Dawn's
// DawnCacheDeviceDescriptor ABI. Under wgpu-native, the start-up numbers are counted.
#include "gpu/pipeline_cache.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gpu/impl.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;
using namespace surfgrad::gpu;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("surfgrad_pcache_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  return d;
}

// What load hands back for `key` the way Dawn asks: the size first, then the bytes.
std::string load_all(BlobStore& s, const std::string& key) {
  size_t n = s.load(key.data(), key.size(), nullptr, 0);
  if (n == 0) return "";
  std::string v(n, '\0');
  size_t got = s.load(key.data(), key.size(), v.data(), v.size());
  return got == n ? v : "<size changed>";
}

void put(BlobStore& s, const std::string& key, const std::string& value) {
  s.store(key.data(), key.size(), value.data(), value.size());
}

const std::string kValue = "compiled pipeline bytes \x01\x02\x03 and more";

}  // namespace

TEST(PipelineCache, AnEntryStoredIsReadBackByAFreshStore) {
  fs::path dir = fresh_dir("roundtrip");
  {
    BlobStore writer(dir.string(), "adapter A | driver 1");
    put(writer, "key-1", kValue);
    EXPECT_EQ(writer.stats().stores, 1u);
    EXPECT_EQ(writer.stats().store_failures, 0u) << writer.stats().last_failure;
  }
  BlobStore reader(dir.string(), "adapter A | driver 1");  // a new process, in effect
  EXPECT_EQ(load_all(reader, "key-1"), kValue);
  EXPECT_EQ(load_all(reader, "key-2"), "");
  EXPECT_EQ(reader.stats().hits, 1u);
  EXPECT_EQ(reader.stats().misses, 1u);
  // No temporary files left behind.
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".bin") << e.path();
  }
  EXPECT_EQ(files, 1);
}

TEST(PipelineCache, AnotherAdaptersOrKeysEntryIsAMiss) {
  fs::path dir = fresh_dir("scope");
  BlobStore a(dir.string(), "adapter A | driver 1"), b(dir.string(), "adapter A | driver 2");
  put(a, "key-1", kValue);
  EXPECT_EQ(load_all(b, "key-1"), "");  // another driver version: other file name, and the scope is checked
  // The same file under another name (a hash collision, or a file copied by hand): the stored
  // scope and key are compared in full.
  fs::copy_file(a.path_for("key-1"), a.path_for("key-9"));
  EXPECT_EQ(load_all(a, "key-9"), "");
  fs::copy_file(a.path_for("key-1"), b.path_for("key-1"));
  EXPECT_EQ(load_all(b, "key-1"), "");
  EXPECT_EQ(load_all(a, "key-1"), kValue);
}

TEST(PipelineCache, CorruptOrTruncatedEntriesAreMissesNotErrors) {
  fs::path dir = fresh_dir("corrupt");
  BlobStore s(dir.string(), "adapter A");
  put(s, "key-1", kValue);
  const std::string path = s.path_for("key-1");
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), kValue.size());
  auto write = [&](const std::string& b) { std::ofstream(path, std::ios::binary | std::ios::trunc) << b; };
  // One flipped bit in the value: the checksum catches it.
  std::string flipped = bytes;
  flipped[flipped.size() - 3] ^= 0x10;
  write(flipped);
  EXPECT_EQ(load_all(s, "key-1"), "");
  // Cut anywhere: in the value, in the lengths, inside the magic.
  for (size_t keep : {bytes.size() - 1, size_t(40), size_t(20), size_t(5), size_t(0)}) {
    write(bytes.substr(0, keep));
    EXPECT_EQ(load_all(s, "key-1"), "") << keep << " bytes kept";
  }
  // A length that claims more than the file holds.
  std::string lying = bytes;
  lying[16] = char(0xff), lying[17] = char(0xff), lying[22] = char(0x7f);
  write(lying);
  EXPECT_EQ(load_all(s, "key-1"), "");
  EXPECT_EQ(s.stats().rejected, 7u);
  EXPECT_EQ(s.stats().hits, 0u);
  // A fresh store replaces the bad entry.
  put(s, "key-1", kValue);
  EXPECT_EQ(load_all(s, "key-1"), kValue);
}

TEST(PipelineCache, AFolderThatCannotBeWrittenKeepsNothingQuietly) {
  fs::path dir = fresh_dir("readonly");
  fs::create_directories(dir);
  const fs::path file = dir / "a-file";
  std::ofstream(file) << "not a folder";
  BlobStore s((file / "pipelines").string(), "adapter A");  // under a regular file: cannot exist
  put(s, "key-1", kValue);
  put(s, "key-2", kValue);
  EXPECT_EQ(s.stats().stores, 0u);
  EXPECT_EQ(s.stats().store_failures, 2u);
  EXPECT_NE(s.stats().last_failure.find("pipelines"), std::string::npos) << s.stats().last_failure;
  EXPECT_EQ(load_all(s, "key-1"), "");
  // A read-only folder (where permissions apply: not as root).
  fs::path ro = dir / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  BlobStore r(ro.string(), "adapter A");
  put(r, "key-1", kValue);
  EXPECT_EQ(r.stats().stores + r.stats().store_failures, 1u);
  fs::permissions(ro, fs::perms::owner_all);
}

TEST(PipelineCache, FolderFromTheEnvironmentAndSwitchedOff) {
  const char* saved = std::getenv("SURFGRAD_PIPELINE_CACHE");
  std::string keep = saved ? saved : "";
  setenv("SURFGRAD_PIPELINE_CACHE", "/some/where", 1);
  EXPECT_EQ(pipeline_cache_dir(), "/some/where");
  for (const char* off : {"0", "off"}) {
    setenv("SURFGRAD_PIPELINE_CACHE", off, 1);
    EXPECT_EQ(pipeline_cache_dir(), "") << off;
    EXPECT_EQ(pipeline_blob_store("scope"), nullptr) << off;
  }
  unsetenv("SURFGRAD_PIPELINE_CACHE");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  std::string keep_xdg = xdg ? xdg : "";
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(pipeline_cache_dir(), "/xdg/surfgrad/pipelines");
  if (xdg)
    setenv("XDG_CACHE_HOME", keep_xdg.c_str(), 1);
  else
    unsetenv("XDG_CACHE_HOME");
  if (saved) setenv("SURFGRAD_PIPELINE_CACHE", keep.c_str(), 1);
}

TEST(PipelineCache, StartUpIsCountedPerPipeline) {
  auto c = Context::create();
  const size_t before = c->startup_stats().pipelines;
  Tensor a = Tensor::full(c, {100}, 1.0);
  EXPECT_NEAR(add(a, a).to_vector<float>()[0], 2.0, 1e-6);
  Context::StartupStats s = c->startup_stats();
  EXPECT_GT(s.pipelines, before);
  EXPECT_GT(s.device_ms, 0.0);
  EXPECT_GT(s.module_ms + s.pipeline_ms, 0.0);
  if (api().implementation != WebGpuImplementation::Dawn) {
    EXPECT_EQ(s.pipeline_cache_dir, "");
  }
}

// Dawn's blob cache through the C API: what one device compiled, a second device (as a second
// process would) loads instead of compiling. Fails if Dawn's DawnCacheDeviceDescriptor moved.
TEST(PipelineCache, DawnReadsBackWhatItStored) {
  if (api().implementation != WebGpuImplementation::Dawn) GTEST_SKIP() << "Dawn only (SURFGRAD_WEBGPU=dawn)";
  fs::path dir = fresh_dir("dawn");
  const char* saved = std::getenv("SURFGRAD_PIPELINE_CACHE");
  std::string keep = saved ? saved : "";
  setenv("SURFGRAD_PIPELINE_CACHE", dir.string().c_str(), 1);
  auto run = [&] {
    auto c = Context::create();
    Tensor a = Tensor::full(c, {100}, 1.5);
    EXPECT_NEAR(mul(a, a).to_vector<float>()[0], 2.25, 1e-6);
    return c->startup_stats();
  };
  Context::StartupStats first = run(), second = run();
  if (saved)
    setenv("SURFGRAD_PIPELINE_CACHE", keep.c_str(), 1);
  else
    unsetenv("SURFGRAD_PIPELINE_CACHE");
  EXPECT_EQ(first.pipeline_cache_dir, dir.string());
  EXPECT_GT(first.cache_stores, 0u) << "Dawn stored nothing: was the cache descriptor ignored?";
  // The store is shared per folder and scope: the second device's hits come on top.
  EXPECT_GT(second.cache_hits, 0u) << "Dawn read nothing back";
  EXPECT_EQ(second.cache_rejected, 0u);
  EXPECT_FALSE(fs::is_empty(dir));
}
