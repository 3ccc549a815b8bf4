// Helpers for the file-format tests: files in a temp folder, .npy bytes by hand, the process's
// peak memory, and a check that a call ends in the documented surfgrad::Error.
#pragma once
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>
#include <functional>
#include <string>

#include "surfgrad/error.hpp"

namespace sgtest {

inline std::string io_path(const std::string& name) { return ::testing::TempDir() + "/surfgrad_io_" + name; }

inline std::string write_bytes(const std::string& name, const std::string& bytes) {
  std::string path = io_path(name);
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

// A version-1 .npy file: magic, header dict padded to 64 bytes, then `data`.
inline std::string npy_file(const std::string& dict, const std::string& data) {
  std::string h = dict;
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += char(h.size() & 0xff);
  out += char(h.size() >> 8);
  return out + h + data;
}

inline std::string npy_dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
}

// Peak resident memory of the process so far, in MiB.
inline long peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// `f` must throw surfgrad::Error of `kind` whose message names `file` and contains `needle`,
// without growing the process by more than `max_growth_mib` (no giant allocation on the way).
inline void expect_error(surfgrad::ErrorKind kind, const std::string& file, const std::string& needle,
                         const std::function<void()>& f, long max_growth_mib = 256) {
  long before = peak_rss_mib();
  try {
    f();
    ADD_FAILURE() << "no error for " << file << " (expected one containing '" << needle << "')";
  } catch (const surfgrad::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "missing '" << needle << "' in: " << e.what();
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos)
        << "the message must name " << file << ": " << e.what();
  }
  EXPECT_LE(peak_rss_mib() - before, max_growth_mib) << file << ": the reader allocated on a hostile header";
}

}  // namespace sgtest
