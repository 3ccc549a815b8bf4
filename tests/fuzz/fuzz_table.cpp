// libFuzzer target: bytes as a Parquet or Arrow IPC file through the host half of the table
// reader (src/io/arrow_points.cpp over Apache Arrow C++) and the labels column's (arrow_labels.cpp). Every run it hands
// on must be whole, contiguous, finite rows of the dimensions it reports; anything but surfgrad::Error escaping is a
// finding. (Arrow's own libraries are the wheel's, not instrumented: this covers surfgrad's side of them, and Arrow's
// checks as they answer.)
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "io/table_io.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad {
// The tensor layer's f16 → f32 (src/tensor/tensor.cpp), which this GPU-less build leaves out.
float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(man), -24);
    return sign ? -f : f;
  }
  uint32_t bits = exp == 31 ? sign | 0x7f800000u | (man << 13) : sign | ((exp + 112) << 23) | (man << 13);
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace surfgrad

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/surfgrad_fuzz_table_" + std::to_string(getpid());
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  for (bool named : {false, true}) {
    fuzz_one([&] {
      int64_t dims = 0, seen = 0;
      std::vector<bool> covered;  // row groups may come in any order: every row exactly once
      int64_t rows = surfgrad::io::read_table_points(
          path, named ? std::vector<std::string>{"embedding"} : std::vector<std::string>{}, 4096, dims,
          [&](const float* r, int64_t first, int64_t n, int64_t d, int64_t) {
            if (first < 0 || n < 1 || d < 1 || n * d * 4 > 4096 + d * 4) __builtin_trap();
            if (covered.size() < size_t(first + n)) covered.resize(size_t(first + n));
            for (int64_t i = first; i < first + n; ++i) {
              if (covered[size_t(i)]) __builtin_trap();
              covered[size_t(i)] = true;
            }
            for (int64_t i = 0; i < n * d; ++i)
              if (!std::isfinite(r[i])) __builtin_trap();
            seen += n;
          });
      if (rows != seen || dims < 1 || int64_t(covered.size()) != rows) __builtin_trap();
    });
  }
  // --labels-column's reader over the same bytes: integer, string and dictionary columns.
  for (const char* column : {"label", "text", "id"})
    fuzz_one([&] {
      std::vector<int32_t> labels = surfgrad::io::read_table_labels(path, column, 6);
      if (labels.size() != 6) __builtin_trap();
      for (int32_t l : labels)
        if (l < 0) __builtin_trap();
    });
  return 0;
}
