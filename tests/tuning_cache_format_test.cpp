// The tuning cache's file format 1 is unchanged by the move to nlohmann-json: a file in the
// layout the earlier hand-written writer produced (escaped adapter key, one entry per line)
// loads, and what save() writes now is read back the same.
#include <cstdio>
#include <fstream>

#include "surfgrad/matmul_tuning.hpp"
#include "test_util.hpp"

using namespace surfgrad;

TEST(TuningCacheFormat, FilesOfTheEarlierWriterLoad) {
  std::string path = ::testing::TempDir() + "/surfgrad_tune_format_test.json";
  std::string key = "GPU \"X\" \\ 1 | driver 2 | vulkan | wgpu-native";
  std::ofstream(path)
      << "{\n  \"format\": 1,\n  \"adapter\": \"GPU \\\"X\\\" \\\\ 1 | driver 2 | vulkan | wgpu-native\",\n"
         "  \"entries\": {\n    \"f32/large\": [128,128,8,8,8,1,8,1],\n"
         "    \"f16/small\": [32,32,0,32,2,0,1,0]\n  }\n}\n";
  std::string warning;
  TuningCache c = TuningCache::load(path, key, &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  ASSERT_EQ(c.entries.size(), 2u);
  EXPECT_TRUE((c.entries["f32/large"] == TiledParams{128, 128, 8, 8, 8, true, 8, true}));
  EXPECT_TRUE((c.entries["f16/small"] == TiledParams{32, 32, 0, 32, 2, false, 1, false}));
  c.save(path);
  TuningCache again = TuningCache::load(path, key, &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  EXPECT_EQ(again.entries, c.entries);
  std::remove(path.c_str());
}
