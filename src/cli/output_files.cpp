#include "output_files.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "io/write_file.hpp"
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

std::string kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

// "OUT.npy, OUT.csv and OUT.png" for the messages about several outputs.
std::string listed(const std::vector<std::string>& extensions) {
  std::string s;
  for (size_t i = 0; i < extensions.size(); ++i)
    s += (i == 0 ? "" : i + 1 == extensions.size() ? " and " : ", ") + ("OUT" + extensions[i]);
  return s;
}

}  // namespace

StagedOutputs::StagedOutputs(std::string stem, std::vector<std::string> extensions,
                             const std::vector<std::string>& inputs, const std::string& option)
    : stem_(std::move(stem)), extensions_(std::move(extensions)) {
  const bool single = extensions_.size() == 1 && extensions_[0].empty();
  if (stem_ == "-") {
    if (single) {
      direct_ = {true};
      return;
    }
    throw Error(ErrorKind::Value, option + " -: this command writes " + std::to_string(extensions_.size()) +
                                      " files (" + listed(extensions_) +
                                      "), which standard output cannot hold; give an output name (e.g. " + option +
                                      " out)");
  }
  fs::path p(stem_);
  if (stem_.empty() || !p.has_filename())
    throw Error(ErrorKind::Value, option + " '" + stem_ + "': give an output name (e.g. " + option +
                                      " map writes map.npy), not an empty path or a folder");
  std::error_code ec;
  // Several outputs are named by appending to the stem: a device given as the stem cannot hold
  // them, and writing /dev/full.npy beside it is not what was meant.
  if (fs::file_status st = fs::status(p, ec);
      !single && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st))
    throw Error(ErrorKind::Value, option + " '" + stem_ + "' is " + kind_of(st.type()) + ": " + option +
                                      " names the files to create (" + listed(extensions_) +
                                      "), so give a name in a folder (e.g. " + option + " out)");
  fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorKind::IO, option + " '" + stem_ + "': the folder '" + dir.string() + "' does not exist");
  long name_max = pathconf(dir.c_str(), _PC_NAME_MAX);
  bool staged = false;
  for (const std::string& ext : extensions_) {
    fs::path out(stem_ + ext);
    if (fs::is_directory(out, ec))
      throw Error(ErrorKind::Value, option + " '" + stem_ + "': '" + out.string() + "' is a folder");
    for (const std::string& in : inputs)
      if (!in.empty() && same_file(out, in))
        throw Error(ErrorKind::Value, option + " '" + stem_ + "' would overwrite the input '" + in + "' (as '" +
                                          out.string() + "'); choose another output name");
    // Only a regular file (or a new one) is staged; a device, FIFO, socket or symbolic link is
    // written where it is, so it stays what it is.
    fs::file_status own = fs::symlink_status(out, ec);
    bool direct = fs::exists(own) && !fs::is_regular_file(own);
    direct_.push_back(direct);
    staged |= !direct;
    if (!direct && !fs::exists(own) && name_max > 0 && out.filename().string().size() > size_t(name_max))
      throw Error(ErrorKind::Value, option + " '" + stem_ + "': the file name '" + out.filename().string() + "' is " +
                                        std::to_string(out.filename().string().size()) + " bytes, more than the " +
                                        std::to_string(name_max) + " the folder allows; choose a shorter name");
  }
  // A short hidden name (whatever the length of the output's), unique to this output and process.
  char tag[32];
  std::snprintf(tag, sizeof tag, ".sg%08x-%ld", unsigned(std::hash<std::string>{}(p.filename().string())),
                long(getpid()));
  staging_ = (dir / tag).string();
  if (!staged) return;
  // Fail before the work if the folder cannot be written; leave nothing behind either way.
  std::string probe = staging_ + ".probe";
  errno = 0;
  if (std::FILE* f = std::fopen(probe.c_str(), "wb")) {
    std::fclose(f);
    fs::remove(probe, ec);
  } else {
    throw Error(ErrorKind::IO, option + " '" + stem_ + "': cannot write in the folder '" + dir.string() + "' (" +
                                   std::strerror(errno) + ")");
  }
}

StagedOutputs::~StagedOutputs() {
  if (committed_) return;
  std::error_code ec;
  for (size_t i = 0; i < extensions_.size(); ++i)
    if (!direct_[i]) fs::remove(staging_ + extensions_[i], ec);
}

std::string StagedOutputs::path(const std::string& extension) const {
  for (size_t i = 0; i < extensions_.size(); ++i)
    if (extensions_[i] == extension) return direct_[i] ? stem_ + extension : staging_ + extension;
  throw Error(ErrorKind::Value, "StagedOutputs: '" + stem_ + "' has no output '" + extension + "'");
}

void StagedOutputs::write(const std::function<void()>& write) const {
  try {
    write();
  } catch (const Error& e) {
    if (staging_.empty()) throw;
    std::string m = e.message();
    for (size_t at = 0; (at = m.find(staging_, at)) != std::string::npos; at += stem_.size())
      m.replace(at, staging_.size(), stem_);
    throw Error(e.kind(), m);
  }
}

void StagedOutputs::commit() {
  for (size_t i = 0; i < extensions_.size(); ++i) {
    if (direct_[i]) continue;
    std::error_code ec;
    fs::rename(staging_ + extensions_[i], stem_ + extensions_[i], ec);
    if (ec)
      throw Error(ErrorKind::IO,
                  "'" + stem_ + extensions_[i] + "': cannot move the finished file into place: " + ec.message());
  }
  committed_ = true;
}

void write_file_atomically(const std::string& path, const std::string& content, const std::string& option) {
  StagedOutputs out(path, {""}, {}, option);
  out.write([&] { io::write_whole_file(out.path(""), content); });
  out.commit();
}

}  // namespace surfgrad::cli
