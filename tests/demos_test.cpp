// End-to-end training (CI-sized) and the IDX files the MNIST demo reads (PNG: io_png_test.cpp).
#include "surfgrad/demos.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "surfgrad/io.hpp"
#include "test_util.hpp"

using namespace sgtest;
using namespace surfgrad;

namespace {

std::string mnist_dir() {
  std::string dir = std::string(SURFGRAD_SHARED_DATA) + "/mnist10k";
  if (!std::filesystem::exists(dir + "/t10k-images-idx3-ubyte.gz"))
    ADD_FAILURE() << "MNIST test data not found at " << dir
                  << " (the suite expects ../shared/data beside the checkout)";
  return dir;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) | (uint32_t(uint8_t(s[at + 2])) << 8) |
         uint8_t(s[at + 3]);
}

}  // namespace

TEST(Demos, MoonsReaches99PercentAndDrawsTheBoundary) {
  demos::MoonsOptions opt;
  opt.png = ::testing::TempDir() + "/surfgrad_moons.png";
  auto r = demos::train_moons(ctx(), opt);
  EXPECT_GE(r.train_accuracy, 0.99);
  std::string png = slurp(opt.png);
  ASSERT_GT(png.size(), 100u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  EXPECT_EQ(be32(png, 16), 480u);
  EXPECT_EQ(be32(png, 20), 360u);
}

TEST(Demos, MnistReaches95PercentHeldOut) {
  demos::MnistOptions opt;
  opt.data_dir = mnist_dir();
  opt.epochs = 4;  // CI-sized; BENCHMARKS.md records the full run
  auto r = demos::train_mnist(ctx(), opt);
  EXPECT_GE(r.test_accuracy, 0.95) << "held-out accuracy after " << opt.epochs << " epochs";
}

TEST(Io, ReadsMnistIdx) {
  std::string dir = mnist_dir();
  IdxArray images = read_idx(dir + "/t10k-images-idx3-ubyte.gz");
  IdxArray labels = read_idx(dir + "/t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(images.shape, (std::vector<int64_t>{10000, 28, 28}));
  EXPECT_EQ(labels.shape, (std::vector<int64_t>{10000}));
  std::vector<int> counts(10, 0);
  for (double l : labels.values) {
    ASSERT_GE(l, 0);
    ASSERT_LE(l, 9);
    counts[size_t(l)]++;
  }
  for (int c : counts) EXPECT_GT(c, 800);
  double max_pixel = 0;
  for (double p : images.values) max_pixel = std::max(max_pixel, p);
  EXPECT_EQ(max_pixel, 255);
}

TEST(Io, BadIdxFilesGiveClearErrors) {
  std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
    return dir + "/" + name;
  };
  std::string header = std::string("\0\0\x08\x01\0\0\0\x0a", 8);  // u8, 1-D, 10 elements
  for (auto [path, needle] : std::vector<std::pair<std::string, std::string>>{
           {write("trunc.idx", header + "12345"), "truncated"},
           {write("magic.idx", "\x01\x02\x08\x01"), "not an IDX"},
           {write("type.idx", std::string("\0\0\x07\x01\0\0\0\x01", 8) + "x"), "element type"},
           {dir + "/missing.idx", "cannot open"}}) {
    try {
      read_idx(path);
      ADD_FAILURE() << path << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::IO);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  IdxArray ok = read_idx(write("ok.idx", header + "0123456789"));
  EXPECT_EQ(ok.values[9], double('9'));
}
