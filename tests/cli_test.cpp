// The `surfgrad` program as a hostile user meets it: run as a subprocess (build/surfgrad, next
// to this test binary). Every bad input ends in a message and a non-zero status (2 for usage,
// 1 for errors), never an abort; outputs never overwrite inputs and are never left half-written.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "surfgrad/map_options.hpp"

namespace fs = std::filesystem;

namespace {

struct Exit {
  int status = -1;  // exit status; 128 + signal if killed
  std::string output;
};

fs::path cli_binary() { return fs::read_symlink("/proc/self/exe").parent_path() / "surfgrad"; }

Exit run(const std::string& args) {
  std::string cmd = "'" + cli_binary().string() + "' " + args + " 2>&1";
  Exit r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// A scratch folder, removed afterwards.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("surfgrad_cli_test_" + std::to_string(getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
  size_t entries() const { return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator())); }
};

std::string csv_points(int n, bool identical) {
  std::string s = "a,b,c\n";
  for (int i = 0; i < n; ++i)
    s += identical ? "1,2,3\n"
                   : std::to_string(i % 7) + "," + std::to_string((i * 13) % 11) + "," + std::to_string(i % 5) + "\n";
  return s;
}

}  // namespace

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(cli_binary())) GTEST_SKIP() << "no " << cli_binary() << " beside the tests";
  }
};

TEST_F(Cli, UsageErrorsExitTwoAndNameTheOption) {
  struct Case {
    std::string args, mention;
  } cases[] = {
      {"map --points -5", "--points"},
      {"map --points 10000000000", "--points"},
      {"map --iterations 1e9", "--iterations"},
      {"map --iterations 0", "--iterations"},
      {"map --epochs -4", "--epochs"},
      {"map --perplexity 50", "--perplexity"},
      {"map --perplexity 1e9", "--perplexity"},
      {"map --early-exaggeration 0", "--early-exaggeration"},
      {"map --pca 1.5", "--pca"},
      {"map --method pca", "--method"},
      {"map --no-such-option", "--no-such-option"},
      {"demo mnist --data . --batch 0", "--batch"},
      {"no-such-command", "no-such-command"},
      {"map --points 100 --perplexity 40", "perplexity (--perplexity) must be a number in (1, 33] for 100 points"},
      {"map --points 4", "no value fits a job of 4 points"},
      {"map --method umap --perplexity 5", "--perplexity is a t-SNE option; this map is UMAP"},
      {"map --learning-rate 2000 --method umap", "learning_rate (--learning-rate) must be a number in (0, 1000]"},
      {"map --negative-sample-rate 0 --method umap", "--negative-sample-rate"},
      {"map --metric manhattan", "--metric"},
      {"map --points 100 --pca 769", "--pca"},
  };
  for (const Case& c : cases) {
    Exit r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.mention), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST_F(Cli, HelpListsRangesAndDefaults) {
  Exit r = run("map --help");
  EXPECT_EQ(r.status, 0);
  // Every option of the schema, with its range and default (the flags are made from it; this
  // checks that none is lost on the way).
  for (const surfgrad::MapOptionSpec& s : surfgrad::map_option_schema()) {
    EXPECT_NE(r.output.find(std::string(s.cli) + " "), std::string::npos) << s.cli;
    EXPECT_NE(r.output.find(surfgrad::map_option_range(s)), std::string::npos) << s.cli;
    EXPECT_NE(r.output.find("default " + surfgrad::map_option_default(s)), std::string::npos) << s.cli;
  }
  EXPECT_NE(r.output.find("--perplexity"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("default 30"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[1, 1000000]"), std::string::npos) << r.output;
}

TEST_F(Cli, OutputsNeverOverwriteInputsNorStayHalfWritten) {
  Scratch s;
  std::string pts = s.file("pts.csv", csv_points(60, false));
  std::string before = csv_points(60, false);
  // -o pts would write pts.csv over the input.
  Exit r = run("map '" + pts + "' -o '" + (s.dir / "pts").string() + "' --perplexity 5 --iterations 10");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("overwrite the input"), std::string::npos) << r.output;
  std::ifstream in(pts);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), before);
  // An empty -o or a folder.
  EXPECT_NE(run("map '" + pts + "' -o ''").status, 0);
  EXPECT_NE(run("map '" + pts + "' -o '" + s.dir.string() + "/'").status, 0);
  // A run that fails after the input is read leaves no OUT.npy, partial or empty.
  std::string same = s.file("same.csv", csv_points(60, true));
  size_t files = s.entries();
  r = run("map '" + same + "' -o '" + (s.dir / "out").string() + "' --perplexity 5");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("identical"), std::string::npos) << r.output;
  EXPECT_EQ(s.entries(), files) << "nothing written, nothing staged";
  // A run that succeeds writes all three.
  r = run("map '" + pts + "' -o '" + (s.dir / "ok").string() + "' --perplexity 5 --iterations 60");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* ext : {".npy", ".csv", ".png"}) EXPECT_TRUE(fs::exists(s.dir / (std::string("ok") + ext))) << ext;
  EXPECT_EQ(s.entries(), files + 3);
  // eval of a one-column embedding: a shape error, not "nan".
  std::string one = s.file("one.csv", "x\n1\n2\n3\n");
  r = run("eval '" + one + "' --input '" + pts + "'");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("2 (or more) columns"), std::string::npos) << r.output;
}

TEST_F(Cli, HugeJobsAreRefusedBeforeTheWork) {
  Scratch s;
  // Refused by the host-memory estimate, the adapter's buffer limits or the graph's 32-bit
  // indices, whichever this machine hits first; either way at once, before generating points.
  for (const char* n : {"10000000", "30000000"}) {
    Exit r = run(std::string("map --points ") + n + " -o '" + (s.dir / "big").string() + "'");
    EXPECT_EQ(r.status, 1) << r.output;
    bool named = r.output.find("memory") != std::string::npos || r.output.find("one buffer") != std::string::npos ||
                 r.output.find("2^31") != std::string::npos;
    EXPECT_TRUE(named) << r.output;
  }
  EXPECT_EQ(s.entries(), 0u);
}

// The tile-spd bench on a tiny batch writes its JSON; shapes that cannot run are refused at once.
TEST_F(Cli, TileSpdBenchAndItsLimits) {
  Scratch s;
  std::string json = (s.dir / "spd.json").string();
  Exit r =
      run("bench tile-spd --systems 4 --n 3 --m 5 --rhs 2 --threads 7 --steps 1 --repeats 1 --json '" + json + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("dispatches"), std::string::npos) << r.output;
  std::ifstream in(json);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  for (const char* key : {"\"bench\": \"tile-spd\"", "\"form\": \"unfused\"", "\"backward\": true", "\"bytes\""})
    EXPECT_NE(text.find(key), std::string::npos) << key << " in " << text;
  r = run("demo tile-spd --n 0");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--n"), std::string::npos) << r.output;
  r = run("demo tile-spd --n 64 --m 128");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("bytes of workgroup memory forward"), std::string::npos) << r.output;
}
