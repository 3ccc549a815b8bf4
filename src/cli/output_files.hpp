// Outputs that are never left half-written and never replace what is not a file. A regular file
// (or a new one) is written under a short hidden staging name in its own folder (so the rename
// cannot cross file systems, and the name fits wherever the output's name fits) and renamed into
// place once all are complete; on failure the staged files are removed. Anything else, a device
// (/dev/null, /dev/full), a FIFO, a socket or a symbolic link (/dev/stdout), is written directly:
// never renamed over, replaced or deleted. "-" is standard output where there is one output.
// Output paths that resolve to an input file are refused before any work. (The writers
// themselves, write_outputs, save_npy and write_png, live in the io layer and know nothing of
// this.)
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace surfgrad::cli {

class StagedOutputs {
 public:
  // The files stem + each extension ("" for stem itself). Throws Error(Value) for an empty
  // stem, a folder, a path that resolves to one of `inputs`, and, where there are several
  // extensions, a stem that is "-" or a device (they cannot hold several files); Error(IO) if
  // the folder cannot be written. `option` names the CLI option in messages ("-o").
  StagedOutputs(std::string stem, std::vector<std::string> extensions, const std::vector<std::string>& inputs,
                const std::string& option);
  ~StagedOutputs();
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;

  // Where to write stem + `extension`: its staging name, or the output itself ("-": standard
  // output) where it is written directly.
  std::string path(const std::string& extension) const;
  // Runs `write` (which writes every path()); an error it throws names the outputs, not their
  // staging names.
  void write(const std::function<void()>& write) const;
  // Renames every staged file into place.
  void commit();

 private:
  std::string stem_, staging_;
  std::vector<std::string> extensions_;
  std::vector<bool> direct_;  // per extension: written in place, not staged
  bool committed_ = false;
};

// Writes `content` to `path` ("-": standard output) through StagedOutputs (for --json outputs).
void write_file_atomically(const std::string& path, const std::string& content, const std::string& option);

}  // namespace surfgrad::cli
