#include "output_files.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "surfgrad/error.hpp"

namespace fs = std::filesystem;

namespace surfgrad::cli {

namespace {

// Whether two paths name the same file: the same inode where both exist, else the same
// normalised absolute path (symbolic links resolved as far as they exist).
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec);
}

}  // namespace

StagedOutputs::StagedOutputs(std::string stem, std::vector<std::string> extensions,
                             const std::vector<std::string>& inputs, const std::string& option)
    : stem_(std::move(stem)), extensions_(std::move(extensions)) {
  fs::path p(stem_);
  if (stem_.empty() || !p.has_filename())
    throw Error(ErrorKind::Value, option + " '" + stem_ + "': give an output name (e.g. " + option +
                                      " map writes map.npy), not an empty path or a folder");
  std::error_code ec;
  for (const std::string& ext : extensions_) {
    fs::path out(stem_ + ext);
    if (fs::is_directory(out, ec))
      throw Error(ErrorKind::Value, option + " '" + stem_ + "': '" + out.string() + "' is a folder");
    for (const std::string& in : inputs)
      if (!in.empty() && same_file(out, in))
        throw Error(ErrorKind::Value, option + " '" + stem_ + "' would overwrite the input '" + in + "' (as '" +
                                          out.string() + "'); choose another output name");
  }
  fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorKind::IO, option + " '" + stem_ + "': the folder '" + dir.string() + "' does not exist");
  staging_ = (dir / ("." + p.filename().string() + ".partial-" + std::to_string(getpid()))).string();
  // Fail before the work if the folder cannot be written; leave nothing behind either way.
  std::string probe = staging_ + ".probe";
  {
    std::ofstream f(probe, std::ios::binary);
    if (!f) throw Error(ErrorKind::IO, option + " '" + stem_ + "': cannot write in the folder '" + dir.string() + "'");
  }
  fs::remove(probe, ec);
}

StagedOutputs::~StagedOutputs() {
  if (committed_) return;
  std::error_code ec;
  for (const std::string& ext : extensions_) fs::remove(staging_ + ext, ec);
}

void StagedOutputs::commit() {
  for (const std::string& ext : extensions_) {
    std::error_code ec;
    fs::rename(staging_ + ext, stem_ + ext, ec);
    if (ec)
      throw Error(ErrorKind::IO, "'" + stem_ + ext + "': cannot move the finished file into place: " + ec.message());
  }
  committed_ = true;
}

void write_file_atomically(const std::string& path, const std::string& content, const std::string& option) {
  StagedOutputs out(path, {""}, {}, option);
  {
    std::ofstream f(out.staging_stem(), std::ios::binary);
    f << content;
    if (!f.flush()) throw Error(ErrorKind::IO, "'" + path + "': cannot write");
  }
  out.commit();
}

}  // namespace surfgrad::cli
