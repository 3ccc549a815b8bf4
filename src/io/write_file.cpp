#include "io/write_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "surfgrad/error.hpp"

namespace surfgrad::io {

namespace {

Error write_error(const std::string& path, const char* what, int err) {
  std::string name = path == "-" ? "standard output" : "'" + path + "'";
  return Error(ErrorKind::IO, name + ": " + what + " (" + (err ? std::strerror(err) : "unknown error") +
                                  (err == ENOSPC ? "; free some space or write elsewhere" : "") + ")");
}

}  // namespace

void write_whole_file(const std::string& path, std::string_view bytes) {
  write_whole_file(path, std::vector<std::string_view>{bytes});
}

void write_whole_file(const std::string& path, const std::vector<std::string>& pieces) {
  write_whole_file(path, std::vector<std::string_view>(pieces.begin(), pieces.end()));
}

void write_whole_file(const std::string& path, const std::vector<std::string_view>& pieces) {
  const bool out = path == "-";
  errno = 0;
  std::FILE* f = out ? stdout : std::fopen(path.c_str(), "wb");
  if (!f) throw write_error(path, "cannot write", errno);
  errno = 0;
  bool ok = true;
  for (std::string_view bytes : pieces) ok = ok && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fflush(f) == 0 && ok && !std::ferror(f);
  int err = errno;
  // Standard output stays open for the rest of the program (main checks it again at exit).
  if (!out && std::fclose(f) != 0 && ok) ok = false, err = errno;
  if (!ok) throw write_error(path, "cannot write", err);
}

}  // namespace surfgrad::io
