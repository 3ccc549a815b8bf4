// libFuzzer target: .npz (zip) bytes through the host decoder.
#include "fuzz_support.hpp"
#include "io/host_formats.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz_one([&] { surfgrad::io::decode_npz_host(as_text(data, size), "fuzz.npz"); });
}
