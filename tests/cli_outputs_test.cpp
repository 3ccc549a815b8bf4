// The `surfgrad` program's outputs and inputs as a hostile user meets them (issue 31): devices
// given as outputs stay devices, "-" is standard output where one output makes sense, every
// write error (standard output, SURFGRAD_PROFILE, SURFGRAD_DUMP_WGSL included) ends in a
// message and exit 1, long legal names work, errors name the output rather than its staging
// name, a demo that fails says why, and .npz inputs are read while other formats are named.
// (scripts/cli_hostile.sh runs the same kinds of case on the ASan + UBSan build.)
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cli_test_util.hpp"
#include "io/host_formats.hpp"

using namespace cli_test;

namespace {

constexpr int kPoints = 60;

float point_value(int i, int j) { return float((i * (7 + j) + 3 * j) % 11) + 0.25f * float(i % 3); }

std::string csv_points() {
  std::string s = "a,b,c\n";
  for (int i = 0; i < kPoints; ++i)
    s += std::to_string(point_value(i, 0)) + "," + std::to_string(point_value(i, 1)) + "," +
         std::to_string(point_value(i, 2)) + "\n";
  return s;
}

// A .npy file's bytes: `values` (f32 or i32 by T) of `shape`.
template <typename T>
std::string npy(const std::vector<T>& values, const surfgrad::Shape& shape) {
  std::string bytes =
      surfgrad::io::encode_npy_header(shape, std::is_same_v<T, float> ? surfgrad::DType::f32 : surfgrad::DType::i32);
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return bytes;
}

std::vector<float> points_f32() {
  std::vector<float> v;
  for (int i = 0; i < kPoints; ++i)
    for (int j = 0; j < 3; ++j) v.push_back(point_value(i, j));
  return v;
}

bool is_device(const char* path) { return fs::is_character_file(fs::symlink_status(path)); }

}  // namespace

class CliOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(cli_binary())) GTEST_SKIP() << "no " << cli_binary() << " beside the tests";
  }
};

TEST_F(CliOutputs, DevicesStayDevicesAndDashIsStandardOutput) {
  Scratch s("cli_outputs");
  const std::string knn = "bench knn --points 200 --dims 8 --methods exact --recall-sample 50";
  Exit r = run(knn + " --json /dev/null");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(is_device("/dev/null"));
  // A device that refuses the data: an error naming it, and it stays a device.
  r = run(knn + " --json /dev/full");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("'/dev/full': cannot write"), std::string::npos) << r.output;
  EXPECT_TRUE(is_device("/dev/full"));
  r = run(knn + " --json -");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("\"bench\": \"knn\""), std::string::npos) << r.output;
  // map -o names three files: neither a device nor "-" can hold them.
  std::string pts = s.file("pts.csv", csv_points());
  r = run("map '" + pts + "' -o /dev/full --perplexity 5 --iterations 10");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("-o '/dev/full' is a character device"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists("/dev/full.npy"));
  EXPECT_TRUE(is_device("/dev/full"));
  r = run("map '" + pts + "' -o - --perplexity 5 --iterations 10");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("standard output cannot hold"), std::string::npos) << r.output;
  // A symbolic link is written through, never replaced by a file.
  fs::create_symlink(s.path("target.json"), s.path("link.json"));
  r = run(knn + " --json '" + s.path("link.json") + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(s.path("link.json")));
  EXPECT_NE(read_file(s.path("target.json")).find("\"bench\": \"knn\""), std::string::npos);
}

TEST_F(CliOutputs, LongNamesFitAndWriteErrorsNameTheOutput) {
  Scratch s("cli_outputs");
  const std::string knn = "bench knn --points 200 --dims 8 --methods exact --recall-sample 50";
  // A 254-byte name is legal; the staging name must not be longer than the limit.
  std::string long_json = s.path(std::string(249, 'j') + ".json");
  Exit r = run(knn + " --json '" + long_json + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_regular_file(long_json));
  EXPECT_EQ(s.entries(), 1u) << "nothing staged is left behind";
  std::string pts = s.file("pts.csv", csv_points());
  std::string stem = s.path(std::string(251, 'm'));  // + ".npy": 255 bytes
  r = run("map '" + pts + "' -o '" + stem + "' --perplexity 5 --iterations 20");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* ext : {".npy", ".csv", ".png"}) EXPECT_TRUE(fs::is_regular_file(stem + ext)) << ext;
  // A name too long for the folder is refused up front, naming the option.
  r = run("map '" + pts + "' -o '" + s.path(std::string(253, 'n')) + "' --perplexity 5 --iterations 20");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("more than the 255"), std::string::npos) << r.output;
  // A disk that fills part way (a tmpfs of 8 KiB, mounted in a user namespace of its own: the
  // PNG does not fit) is an error naming the output, not its hidden staging file, and leaves
  // nothing in the folder (listed from inside the namespace, before the mount goes away).
  fs::create_directory(s.path("small"));
  std::string disk =
      "unshare -rm sh -c 'mount -t tmpfs -o size=8k tmpfs \"$0\" && \"$@\"; s=$?; ls -A \"$0\"; exit $s' '" +
      s.path("small") + "'";
  r = run("map '" + pts + "' -o '" + s.path("small/full") + "' --perplexity 5 --iterations 20", disk);
  if (r.output.find("unshare:") != std::string::npos || r.output.find("mount:") != std::string::npos)
    GTEST_SKIP() << "no user namespaces here for a small file system: " << r.output;
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("'" + s.path("small/full.png") + "': cannot write (No space left on device"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find(".sg"), std::string::npos) << "staging names in messages or left behind:\n" << r.output;
  // The error line comes after what the run printed, though stdout (a pipe here) is buffered.
  EXPECT_GT(r.output.find("cannot write"), r.output.find("t-SNE of")) << r.output;
}

TEST_F(CliOutputs, EveryWriteErrorFailsTheRun) {
  Scratch s("cli_outputs");
  std::string pts = s.file("pts.csv", csv_points());
  std::string xy = "x,y\n";
  for (int i = 0; i < kPoints; ++i) xy += std::to_string(point_value(i, 0)) + "," + std::to_string(i % 5) + "\n";
  std::string emb = s.file("emb.csv", xy);
  Exit r = run("eval '" + emb + "' --input '" + pts + "'", "", "> /dev/full");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("cannot write to standard output"), std::string::npos) << r.output;
  r = run("--help", "", "> /dev/full");
  EXPECT_EQ(r.status, 1) << r.output;
  // SURFGRAD_DUMP_WGSL naming a file, not a folder.
  r = run("demo tensors", "SURFGRAD_DUMP_WGSL='" + pts + "'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("SURFGRAD_DUMP_WGSL='" + pts + "': cannot write"), std::string::npos) << r.output;
  // SURFGRAD_PROFILE to a device that refuses the table.
  r = run("demo tensors", "SURFGRAD_PROFILE=/dev/full");
  if (r.output.find("no timestamp queries") != std::string::npos) GTEST_SKIP() << "no timestamp queries here";
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("SURFGRAD_PROFILE='/dev/full': cannot write the profile"), std::string::npos) << r.output;
  EXPECT_TRUE(is_device("/dev/full"));
}

TEST_F(CliOutputs, AFailingDemoSaysWhy) {
  Scratch s("cli_outputs");
  Exit r = run("demo tile-mlp --side 16 --steps 50 --lr 10 --out '" + s.path("t.png") + "'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("surfgrad: demo tile-mlp: the loss did not fall"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--lr 10 is likely too large"), std::string::npos) << r.output;
  // Its PNG to a device that refuses it: an error, and the device is not deleted.
  r = run("demo tile-mlp --side 16 --steps 50 --out /dev/full");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("'/dev/full': cannot write"), std::string::npos) << r.output;
  EXPECT_TRUE(is_device("/dev/full"));
  // The moons demo likewise: one Adam step misses the 99% target; its PNG is staged too.
  r = run("demo moons --steps 1 --out '" + s.path("m.png") + "'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("surfgrad: demo moons: train accuracy"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_regular_file(s.path("m.png")));
  r = run("demo moons --steps 5 --out /dev/full");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("'/dev/full': cannot write"), std::string::npos) << r.output;
  EXPECT_TRUE(is_device("/dev/full"));
}

TEST_F(CliOutputs, NpzIsReadAndOtherFormatsAreNamed) {
  using surfgrad::io::encode_zip;
  Scratch s("cli_outputs");
  std::vector<int32_t> labels;
  for (int i = 0; i < kPoints; ++i) labels.push_back(i % 3);
  std::string pts_npy = npy(points_f32(), {kPoints, 3});
  std::string pts = s.file("pts.npz", encode_zip({{"points.npy", pts_npy}}, "pts.npz"));
  std::string lab = s.file("lab.npz", encode_zip({{"labels.npy", npy(labels, {kPoints})}}, "lab.npz"));
  Exit r = run("map '" + pts + "' --labels '" + lab + "' -o '" + s.path("m") + "' --perplexity 5 --iterations 20");
  EXPECT_EQ(r.status, 0) << r.output;
  r = run("eval '" + s.path("m.npy") + "' --input '" + pts + "' --labels '" + lab + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("10-NN accuracy"), std::string::npos) << r.output;
  // A .npy saved under another name is still read by its magic bytes.
  std::string renamed = s.file("points.bin", pts_npy);
  r = run("eval '" + s.path("m.npy") + "' --input '" + renamed + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  // An archive of two arrays, and formats surfgrad does not read: named, not "not an IDX file".
  std::string two = s.file("two.npz", encode_zip({{"a.npy", pts_npy}, {"b.npy", pts_npy}}, "two.npz"));
  std::string parquet = s.file("pts.parquet", std::string("PAR1") + std::string(64, '\1') + "PAR1");
  std::string text = s.file("pts.txt", "1,2,3\n4,5,6\n");
  struct Case {
    std::string args, mention;
  } cases[] = {
      {"map '" + two + "' -o '" + s.path("x") + "'", "a .npz archive of 2 arrays (a, b)"},
      {"map '" + parquet + "' -o '" + s.path("x") + "'", "this is a Parquet file"},
      {"eval '" + s.path("m.npy") + "' --input '" + parquet + "'", "this is a Parquet file"},
      {"eval '" + s.path("m.npy") + "' --input '" + pts + "' --labels '" + two + "'", "2 arrays"},
      {"map '" + text + "' -o '" + s.path("x") + "'", "rename it to .csv"},
  };
  for (const Case& c : cases) {
    r = run(c.args);
    EXPECT_EQ(r.status, 1) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.mention), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("not an IDX file"), std::string::npos) << c.args << "\n" << r.output;
  }
}
