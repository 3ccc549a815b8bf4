// libFuzzer target: .npy bytes through the host decoder, once from a seekable stream and once
// from one that cannot seek (sizes unknown in advance); both must agree.
#include <cstring>
#include <sstream>

#include "fuzz_support.hpp"
#include "io/host_formats.hpp"

namespace {
class UnseekableBuf : public std::streambuf {
 public:
  UnseekableBuf(const char* data, size_t size) {
    setg(const_cast<char*>(data), const_cast<char*>(data), const_cast<char*>(data) + size);
  }
};

size_t element_size(surfgrad::DType d) { return d == surfgrad::DType::f16 ? 2 : 4; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  bool seekable_ok = false;
  surfgrad::io::NpyArray a;
  fuzz_one([&] {
    std::istringstream in(bytes);
    a = surfgrad::io::decode_npy_host(in, "fuzz.npy");
    seekable_ok = true;
    size_t n = 1;
    for (int64_t d : a.shape) n *= size_t(d);
    if (a.data.size() != n * element_size(a.dtype)) __builtin_trap();
  });
  fuzz_one([&] {
    UnseekableBuf buf(bytes.data(), bytes.size());
    std::istream in(&buf);
    surfgrad::io::NpyArray b = surfgrad::io::decode_npy_host(in, "fuzz.npy");
    if (!seekable_ok || b.shape != a.shape || b.data != a.data) __builtin_trap();
  });
  return 0;
}
