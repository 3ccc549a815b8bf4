// The `surfgrad` program run as a subprocess (the binary beside this test binary), for the CLI
// suites: its exit status and everything it printed, and a scratch folder.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace cli_test {

namespace fs = std::filesystem;

struct Exit {
  int status = -1;  // exit status; 128 + signal if killed
  std::string output;
};

inline fs::path cli_binary() { return fs::read_symlink("/proc/self/exe").parent_path() / "surfgrad"; }

// Runs `env surfgrad args 2>&1 redirect`: stderr (and stdout, unless `redirect` sends it
// elsewhere, e.g. "> /dev/full") is captured.
inline Exit run(const std::string& args, const std::string& env = "", const std::string& redirect = "") {
  std::string cmd = env + " '" + cli_binary().string() + "' " + args + " 2>&1 " + redirect;
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
  fs::path dir;
  explicit Scratch(const std::string& tag)
      : dir(fs::temp_directory_path() / ("surfgrad_" + tag + "_" + std::to_string(getpid()))) {
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string file(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
  size_t entries() const { return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator())); }
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace cli_test
