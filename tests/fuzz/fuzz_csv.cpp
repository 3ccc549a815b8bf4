// libFuzzer target: CSV text through the strict host parser.
#include <cmath>

#include "fuzz_support.hpp"
#include "io/host_formats.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz_one([&] {
    surfgrad::io::CsvTable t = surfgrad::io::decode_csv(as_text(data, size), "fuzz.csv");
    if (t.values.size() != size_t(t.rows * t.cols)) __builtin_trap();
    for (double v : t.values)
      if (!std::isfinite(v)) __builtin_trap();
  });
}
