// IDX files: a big-endian magic (0, 0, element type, rank), one big-endian u32 per dimension,
// then the elements, big-endian. zlib's gz* functions read gzip and plain files alike.
#include <zlib.h>

#include <cstring>

#include "surfgrad/io.hpp"

namespace surfgrad {

IdxArray read_idx(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw Error(ErrorKind::IO, "'" + path + "': cannot open (" + std::strerror(errno) + ")");
  auto read = [&](void* dst, size_t n) {
    size_t got = 0;
    while (got < n) {
      int r = gzread(f, static_cast<char*>(dst) + got, unsigned(std::min<size_t>(n - got, 1u << 30)));
      if (r <= 0) return false;
      got += size_t(r);
    }
    return true;
  };
  uint8_t magic[4];
  if (!read(magic, 4) || magic[0] != 0 || magic[1] != 0) {
    gzclose(f);
    throw Error(ErrorKind::IO, "'" + path + "': not an IDX file (the first two bytes must be zero)");
  }
  int size = 0;
  switch (magic[2]) {
    case 0x08: case 0x09: size = 1; break;
    case 0x0B: size = 2; break;
    case 0x0C: case 0x0D: size = 4; break;
    case 0x0E: size = 8; break;
    default:
      gzclose(f);
      throw Error(ErrorKind::IO, "'" + path + "': unknown IDX element type 0x" + std::to_string(magic[2]));
  }
  IdxArray out;
  int64_t n = 1;
  for (int d = 0; d < magic[3]; ++d) {
    uint8_t b[4];
    if (!read(b, 4)) {
      gzclose(f);
      throw Error(ErrorKind::IO, "'" + path + "': truncated IDX header");
    }
    int64_t dim = (int64_t(b[0]) << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
    out.shape.push_back(dim);
    n *= dim;
  }
  if (n > (int64_t(1) << 34)) {
    gzclose(f);
    throw Error(ErrorKind::IO, "'" + path + "': implausible IDX size");
  }
  std::vector<uint8_t> raw(size_t(n) * size_t(size));
  bool ok = read(raw.data(), raw.size());
  gzclose(f);
  if (!ok) throw Error(ErrorKind::IO, "'" + path + "': truncated IDX data (expected " + std::to_string(raw.size()) + " bytes)");
  out.values.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = &raw[size_t(i) * size_t(size)];
    uint64_t be = 0;
    for (int k = 0; k < size; ++k) be = (be << 8) | p[k];
    double v;
    switch (magic[2]) {
      case 0x08: v = p[0]; break;
      case 0x09: v = int8_t(p[0]); break;
      case 0x0B: v = int16_t(uint16_t(be)); break;
      case 0x0C: v = int32_t(uint32_t(be)); break;
      case 0x0D: {
        uint32_t u = uint32_t(be);
        float x;
        std::memcpy(&x, &u, 4);
        v = x;
        break;
      }
      default: {
        std::memcpy(&v, &be, 8);
        break;
      }
    }
    out.values[size_t(i)] = v;
  }
  return out;
}

}  // namespace surfgrad
