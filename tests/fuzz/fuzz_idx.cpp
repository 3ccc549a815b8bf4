// libFuzzer target: IDX bytes (plain or gzip) through the host decoder.
#include "fuzz_support.hpp"
#include "io/host_formats.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz_one([&] {
    surfgrad::IdxArray a = surfgrad::io::decode_idx(as_text(data, size), "fuzz.idx");
    size_t n = 1;
    for (int64_t d : a.shape) n *= size_t(d);
    if (a.values.size() != n) __builtin_trap();
  });
}
