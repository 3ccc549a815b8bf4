// The autotuner's cache: written, read back and used by matmul, invalidated when the adapter or
// driver changes, a corrupt file ignored with a warning.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tensor/matmul_problem.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

struct CacheFile {
  // One file per test and process: ctest runs these tests in parallel processes, and a shared
  // name let one test's save land in another's "other adapter" check (seen once in CI).
  std::string path = ::testing::TempDir() + "/surfgrad_tune_test_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                     std::to_string(::getpid()) + ".json";
  CacheFile() {
    std::remove(path.c_str());
    setenv("SURFGRAD_TUNE_CACHE", path.c_str(), 1);
    forget_tuning_cache();
  }
  ~CacheFile() {
    std::remove(path.c_str());
    unsetenv("SURFGRAD_TUNE_CACHE");
    forget_tuning_cache();
  }
  void write(const std::string& text) const {
    std::ofstream(path) << text;
    forget_tuning_cache();
  }
};

}  // namespace

TEST(MatmulTuning, WinnerIsWrittenReadBackAndUsed) {
  CacheFile file;
  TuneOptions opt;
  opt.dtypes = {DType::f32};
  opt.shapes = {{96, 80, 40}};  // class "small"
  opt.candidates = {{32, 32, 8, 2, 2, false, 1, true}, {16, 16, 8, 1, 1, false, 1, true}};
  opt.reps = 2;
  auto results = tune_matmul(ctx(), opt);
  ASSERT_EQ(results.size(), 1u);
  TiledParams winner = results[0].params;
  EXPECT_TRUE(winner == opt.candidates[0] || winner == opt.candidates[1]);
  std::string warning;
  TuningCache c = TuningCache::load(file.path, adapter_key(*ctx()), &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  ASSERT_EQ(c.entries.count("f32/small"), 1u);
  EXPECT_TRUE(c.entries["f32/small"] == winner);
  EXPECT_TRUE(matmul_params(ctx(), DType::f32, 96, 80, 40) == winner);
  // And matmul still computes the right thing with the tuned choice.
  Ref a = random_ref({96, 40}, 1, DType::f32), b = random_ref({40, 80}, 2, DType::f32);
  MatmulProblem p = make_problem(upload(a, DType::f32), upload(b, DType::f32));
  run_tiled(p, matmul_params(ctx(), DType::f32, 96, 80, 40));
  EXPECT_LE(matmul_error(p, 100, 3), 1e-5);
}

TEST(MatmulTuning, AnotherAdapterOrDriverInvalidates) {
  CacheFile file;
  TiledParams odd{32, 32, 8, 2, 2, true, 8, true};
  TuningCache other{"Some Other GPU | driver 1.0 | vulkan | wgpu-native", {{"f32/large", odd}}};
  other.save(file.path);
  forget_tuning_cache();
  std::string warning;
  EXPECT_TRUE(TuningCache::load(file.path, adapter_key(*ctx()), &warning).entries.empty());
  EXPECT_TRUE(warning.empty()) << "a stale file is not an error";
  EXPECT_FALSE(matmul_params(ctx(), DType::f32, 4096, 4096, 4096) == odd);
  TuningCache mine{adapter_key(*ctx()), {{"f32/large", odd}}};
  mine.save(file.path);
  forget_tuning_cache();
  EXPECT_TRUE(matmul_params(ctx(), DType::f32, 4096, 4096, 4096) == odd);
}

TEST(MatmulTuning, CorruptFileIsIgnoredWithAWarning) {
  CacheFile file;
  for (std::string text : {std::string("{ this is not json"),
                           std::string("{\"format\": 1, \"adapter\": \"") + adapter_key(*ctx()) +
                               "\", \"entries\": {\"f32/large\": [128, 0, 8, 8, 8, 0, 1, 1]}}",
                           std::string("{\"format\": 1, \"adapter\": \"") + adapter_key(*ctx()) +
                               "\", \"entries\": {\"f32/large\": [128, \"x\"]}}"}) {
    file.write(text);
    std::string warning;
    EXPECT_TRUE(TuningCache::load(file.path, adapter_key(*ctx()), &warning).entries.empty()) << text;
    EXPECT_NE(warning.find("surfgrad tune"), std::string::npos) << text << " → " << warning;
    ::testing::internal::CaptureStderr();
    TiledParams p = matmul_params(ctx(), DType::f32, 4096, 4096, 4096);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("ignoring the matmul tuning cache"), std::string::npos) << err;
    EXPECT_TRUE(tiled_unsupported(*ctx(), p, DType::f32).empty());
  }
}
