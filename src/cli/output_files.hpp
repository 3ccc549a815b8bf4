// Outputs that are never left half-written: files are written under a hidden staging name in
// their own folder (so the rename cannot cross file systems) and renamed into place once all
// are complete; on failure the staged files are removed. Output paths that resolve to an input
// file are refused before any work. (The writers themselves, write_outputs and save_npy, live
// in the io layer and know nothing of this.)
#pragma once
#include <string>
#include <vector>

namespace surfgrad::cli {

class StagedOutputs {
 public:
  // The files stem + each extension ("" for stem itself). Throws Error(Value) for an empty
  // stem, a folder, or a path that resolves to one of `inputs`; Error(IO) if the folder cannot
  // be written. `option` names the CLI option in messages ("-o").
  StagedOutputs(std::string stem, std::vector<std::string> extensions, const std::vector<std::string>& inputs,
                const std::string& option);
  ~StagedOutputs();
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;

  // Where to write: the staging stem (append the extensions to it, as to the final stem).
  const std::string& staging_stem() const { return staging_; }
  // Renames every staged file into place.
  void commit();

 private:
  std::string stem_, staging_;
  std::vector<std::string> extensions_;
  bool committed_ = false;
};

// Writes `content` to `path` through a staged file and a rename (for --json outputs).
void write_file_atomically(const std::string& path, const std::string& content, const std::string& option);

}  // namespace surfgrad::cli
