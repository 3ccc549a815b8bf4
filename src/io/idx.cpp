// IDX files (MNIST's): a big-endian magic (0, 0, element type, rank), one big-endian u32 per
// dimension, then the elements, big-endian; plain or gzip-compressed. Decoded on the host from
// the file's bytes: the declared size is checked for overflow, against the bytes present (for
// gzip: against what deflate can produce from them, then by inflating incrementally) and against
// the host's memory before the values are allocated.
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "io/host_formats.hpp"
#include "io/input_limits.hpp"

namespace surfgrad {

namespace {

constexpr uint64_t kDeflateMaxRatio = 1032;
constexpr size_t kChunk = size_t(1) << 20;

std::string hex_byte(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", unsigned(b));
  return buf;
}

// Bytes of the file in order, gunzipped when it is gzip (members concatenated as gzip allows).
class ByteStream {
 public:
  ByteStream(std::string_view bytes, const std::string& file) : in_(bytes), file_(file) {
    gzip_ = bytes.size() >= 2 && uint8_t(bytes[0]) == 0x1f && uint8_t(bytes[1]) == 0x8b;
    if (gzip_) {
      if (inflateInit2(&z_, 15 + 16) != Z_OK) throw io::file_error(file, "zlib failed to start");
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
      z_.avail_in = uInt(std::min<size_t>(bytes.size(), UINT32_MAX));
      fed_ = z_.avail_in;
    }
  }
  ~ByteStream() {
    if (gzip_) inflateEnd(&z_);
  }
  ByteStream(const ByteStream&) = delete;
  ByteStream& operator=(const ByteStream&) = delete;

  bool gzip() const { return gzip_; }
  // Input bytes not yet consumed (compressed ones for gzip).
  uint64_t input_left() const { return gzip_ ? uint64_t(z_.avail_in) + (in_.size() - fed_) : in_.size() - at_; }

  // Up to n bytes into dst; fewer only at the end of the data.
  size_t read(void* dst, size_t n) {
    if (!gzip_) {
      size_t k = std::min(n, in_.size() - at_);
      std::memcpy(dst, in_.data() + at_, k);
      at_ += k;
      return k;
    }
    z_.next_out = static_cast<Bytef*>(dst);
    z_.avail_out = uInt(n);
    while (z_.avail_out > 0 && !finished_) {
      if (z_.avail_in == 0 && fed_ < in_.size()) {
        z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in_.data() + fed_));
        z_.avail_in = uInt(std::min<size_t>(in_.size() - fed_, UINT32_MAX));
        fed_ += z_.avail_in;
      }
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // Another gzip member may follow; anything else after the stream is ignored.
        if (z_.avail_in >= 2 && z_.next_in[0] == 0x1f && z_.next_in[1] == 0x8b)
          inflateReset(&z_);
        else
          finished_ = true;
      } else if (rc == Z_BUF_ERROR) {
        finished_ = true;  // no input left: the stream is truncated
        truncated_ = true;
      } else if (rc != Z_OK) {
        throw io::file_error(file_, std::string("corrupt gzip data (zlib: ") +
                                        (z_.msg ? z_.msg : "error " + std::to_string(rc)) +
                                        "); the file is damaged: download it again");
      }
    }
    return n - z_.avail_out;
  }
  bool truncated_gzip() const { return truncated_; }

 private:
  std::string_view in_;
  const std::string& file_;
  bool gzip_ = false, finished_ = false, truncated_ = false;
  size_t at_ = 0, fed_ = 0;
  z_stream z_{};
};

}  // namespace

IdxArray io::decode_idx(std::string_view bytes, const std::string& name) {
  ByteStream in(bytes, name);
  uint8_t magic[4];
  size_t got = in.read(magic, 4);
  if (got < 4 || magic[0] != 0 || magic[1] != 0)
    throw io::file_error(name,
                         "not an IDX file (it must start with two zero bytes, an element type and a rank; found " +
                             std::to_string(got) + " bytes" +
                             (got >= 2 ? " starting " + hex_byte(magic[0]) + " " + hex_byte(magic[1]) : "") + ")");
  int size = 0;
  const char* type = "";
  switch (magic[2]) {
    case 0x08: size = 1, type = "u8"; break;
    case 0x09: size = 1, type = "i8"; break;
    case 0x0B: size = 2, type = "i16"; break;
    case 0x0C: size = 4, type = "i32"; break;
    case 0x0D: size = 4, type = "f32"; break;
    case 0x0E: size = 8, type = "f64"; break;
    default:
      throw io::file_error(name, "unknown IDX element type " + hex_byte(magic[2]) +
                                     " (known: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64)");
  }
  if (magic[3] > kMaxRank)
    throw io::file_error(name, "IDX rank " + std::to_string(magic[3]) + "; surfgrad reads rank ≤ 8");
  IdxArray out;
  for (int d = 0; d < magic[3]; ++d) {
    uint8_t b[4];
    if (in.read(b, 4) < 4)
      throw io::file_error(name, "truncated IDX header (" + std::to_string(int(magic[3])) + " dimensions declared)");
    out.shape.push_back(int64_t((uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3]));
  }
  std::string what = "IDX shape " + io::dims_text(out.shape) + " of " + type;
  int64_t n = io::checked_numel(out.shape, 8, name);  // 8: the values are held as doubles
  uint64_t data_bytes = uint64_t(n) * uint64_t(size), left = in.input_left();
  if (!in.gzip() && left < data_bytes)
    throw io::file_error(name, "truncated IDX data: " + what + " needs " + std::to_string(data_bytes) +
                                   " bytes, the file holds " + std::to_string(left) + " after its header");
  if (in.gzip() && data_bytes > left * kDeflateMaxRatio + 1024)
    throw io::file_error(name, "truncated or corrupt IDX data: " + what + " needs " + std::to_string(data_bytes) +
                                   " bytes, more than the " + std::to_string(left) +
                                   " compressed bytes left can hold (deflate expands at most 1032×)");
  io::check_host_budget(name, what, uint64_t(n) * 8 + kChunk);
  out.values.resize(size_t(n));
  std::vector<uint8_t> raw(kChunk - kChunk % 8);
  for (size_t i = 0; i < size_t(n);) {
    size_t want = std::min(raw.size() / size_t(size), size_t(n) - i),
           bytes_read = in.read(raw.data(), want * size_t(size));
    if (bytes_read < want * size_t(size))
      throw io::file_error(name, "truncated IDX data: " + what + " needs " + std::to_string(data_bytes) +
                                     " bytes, the data ends after " + std::to_string(i * size_t(size) + bytes_read) +
                                     (in.truncated_gzip() ? " (the gzip stream is cut short)" : ""));
    for (size_t k = 0; k < want; ++k) {
      const uint8_t* p = &raw[k * size_t(size)];
      uint64_t be = 0;
      for (int b = 0; b < size; ++b) be = (be << 8) | p[b];
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
        default: std::memcpy(&v, &be, 8); break;
      }
      out.values[i + k] = v;
    }
    i += want;
  }
  // Drain a little past the data so a damaged gzip stream (bad CRC at its end) is reported.
  if (in.gzip()) {
    uint8_t rest[4096];
    in.read(rest, sizeof rest);
  }
  return out;
}

IdxArray read_idx(const std::string& path) {
  return io::host_memory_guard(path, [&] {
    std::vector<char> bytes = io::read_whole_file(path, "IDX");
    return io::decode_idx(std::string_view(bytes.data(), bytes.size()), path);
  });
}

}  // namespace surfgrad
