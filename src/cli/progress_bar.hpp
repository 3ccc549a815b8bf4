// Progress of long phases on stderr: a bar redrawn in place with rate and ETA when stderr is a
// terminal, plain lines otherwise (logs, pipes, CI). Debian packages no maintained C++
// progress-bar library, so this is ~60 lines of our own.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace surfgrad::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::FILE* out = stderr);
  ~ProgressBar() { finish(); }
  // Reports `done` of `total` steps of a phase; a new label starts a new phase (and its clock).
  void update(const std::string& label, int64_t done, int64_t total);
  // Ends the current line (a bar is left showing its last state).
  void finish();

 private:
  std::FILE* out_;
  bool terminal_;
  bool open_line_ = false;
  std::string label_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace surfgrad::cli
