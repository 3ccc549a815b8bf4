// Checked size arithmetic and the host memory budget for the file readers.
#include "io/input_limits.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "platform/host_resources.hpp"
#if SURFGRAD_HOST_HAS_FILES
#include <fstream>
#endif
#include <limits>

namespace surfgrad::io {

namespace {
constexpr uint64_t kMax63 = uint64_t(std::numeric_limits<int64_t>::max());
// A stream of unknown size is read in chunks of this many bytes.
constexpr uint64_t kReadChunk = uint64_t(16) << 20;
}  // namespace

Error file_error(const std::string& file, const std::string& what) {
  return Error(ErrorKind::IO, "'" + file + "': " + what);
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

int64_t checked_numel(const std::vector<int64_t>& dims, uint64_t element_bytes, const std::string& file) {
  // Zero-size axes count as 1 here: strides of [0, 2^62, 2^62] overflow even though it is empty.
  uint64_t extent = std::max<uint64_t>(element_bytes, 1), numel = 1;
  for (int64_t d : dims) {
    if (d < 0) throw file_error(file, "shape " + dims_text(dims) + " has a negative dimension");
    uint64_t dim = uint64_t(d);
    if (__builtin_mul_overflow(extent, std::max<uint64_t>(dim, 1), &extent) || extent > kMax63)
      throw Error(ErrorKind::LimitExceeded, "'" + file + "': the declared shape " + dims_text(dims) +
                                                " is too large (its size overflows 64 bits); the file is corrupt or "
                                                "not an array surfgrad can hold");
    numel *= dim;  // ≤ extent: cannot overflow
  }
  return int64_t(numel);
}

uint64_t host_memory_budget() { return platform::host_memory_limit(); }

std::string bytes_text(uint64_t bytes) {
  auto fixed = [](double v, const char* unit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f %s", v, unit);
    return std::string(buf);
  };
  if (bytes >= (uint64_t(1) << 30)) return fixed(double(bytes) / double(uint64_t(1) << 30), "GiB");
  if (bytes >= (uint64_t(1) << 20)) return fixed(double(bytes) / double(uint64_t(1) << 20), "MiB");
  if (bytes >= (uint64_t(1) << 10)) return fixed(double(bytes) / 1024.0, "KiB");
  return std::to_string(bytes) + " bytes";
}

void check_host_budget(const std::string& file, const std::string& what, uint64_t bytes) {
  uint64_t budget = host_memory_budget();
  if (bytes > budget)
    throw Error(ErrorKind::LimitExceeded, "'" + file + "': " + what + " needs " + bytes_text(bytes) +
                                              " of host memory to read, more than this machine's " +
                                              bytes_text(budget) +
                                              "; split the array into smaller files (or convert it to f32 / reduce "
                                              "its dimensions first)");
}

std::optional<uint64_t> remaining_bytes(std::istream& in) {
  std::streampos here = in.tellg();
  if (here < 0) {
    in.clear();
    return std::nullopt;
  }
  in.seekg(0, std::ios::end);
  std::streampos end = in.tellg();
  in.clear();
  in.seekg(here);
  if (end < here || !in) {
    in.clear();
    return std::nullopt;
  }
  return uint64_t(end - here);
}

uint64_t read_exactly(std::istream& in, uint64_t bytes, std::vector<char>& out) {
  // A seekable stream holds what it holds: never allocate past that. Otherwise grow as data
  // arrives (doubling, from one chunk), so a lying header cannot make us allocate its claim.
  std::optional<uint64_t> left = remaining_bytes(in);
  uint64_t target = left ? std::min(bytes, *left) : bytes;
  out.clear();
  out.resize(size_t(left ? target : std::min(target, kReadChunk)));
  uint64_t got = 0;
  while (got < target) {
    if (got == out.size()) out.resize(size_t(std::min(target, got + std::max(kReadChunk, got))));
    in.read(out.data() + got, std::streamsize(out.size() - got));
    got += uint64_t(in.gcount());
    if (!in) break;
  }
  out.resize(size_t(got));
  return got;
}

#if SURFGRAD_HOST_HAS_FILES
std::vector<char> read_whole_file(const std::string& path, const char* format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw file_error(path, std::string("cannot open for reading (") + std::strerror(errno) + ")");
  std::optional<uint64_t> size = remaining_bytes(in);
  if (size) check_host_budget(path, std::string("a ") + format + " file of " + bytes_text(*size), *size);
  std::vector<char> bytes;
  // A pipe's size is unknown: read at most one byte past the budget, then refuse.
  uint64_t budget = host_memory_budget();
  read_exactly(in, size ? *size : budget + 1, bytes);
  if (in.bad()) throw file_error(path, "read failed (" + std::string(std::strerror(errno)) + ")");
  if (!size && bytes.size() > budget) check_host_budget(path, std::string("a ") + format + " stream", bytes.size());
  return bytes;
}

#endif

}  // namespace surfgrad::io
