// .npz on the host: the zip container (end record, central directory, local headers) around
// .npy entries. Every offset and length read from the archive is bounds-checked; a deflated
// entry's declared size is checked against what deflate can produce from its compressed bytes
// (at most 1032×) and against the host's memory before it is inflated.
#include <zlib.h>

#include <sstream>

#include "io/host_formats.hpp"
#include "io/input_limits.hpp"

namespace surfgrad::io {

namespace {

constexpr uint32_t kEndRecord = 0x06054b50, kCentralEntry = 0x02014b50, kLocalEntry = 0x04034b50;
constexpr uint64_t kDeflateMaxRatio = 1032;

void put16(std::string& s, uint32_t v) {
  s += char(v & 0xff);
  s += char((v >> 8) & 0xff);
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}

// Little-endian fields of the archive, each read only after its bounds are checked.
class ZipReader {
 public:
  ZipReader(std::string_view zip, const std::string& file) : zip_(zip), file_(file) {}
  uint32_t u16(uint64_t at, const char* what) const {
    need(at, 2, what);
    return uint8_t(zip_[at]) | (uint32_t(uint8_t(zip_[at + 1])) << 8);
  }
  uint32_t u32(uint64_t at, const char* what) const { return u16(at, what) | (u16(at + 2, what) << 16); }
  std::string_view bytes(uint64_t at, uint64_t n, const char* what) const {
    need(at, n, what);
    return zip_.substr(at, n);
  }
  void need(uint64_t at, uint64_t n, const char* what) const {
    if (at > zip_.size() || n > zip_.size() - at)
      throw file_error(file_, std::string("truncated or corrupt .npz (zip) archive: the ") + what +
                                  " lies past its end (" + std::to_string(zip_.size()) + " bytes)");
  }
  size_t size() const { return zip_.size(); }

 private:
  std::string_view zip_;
  const std::string& file_;
};

std::string inflate_entry(std::string_view packed, uint64_t size, const std::string& file, const std::string& entry) {
  std::string data(size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw file_error(file, "zlib failed to start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  z.avail_in = uInt(packed.size());
  z.next_out = reinterpret_cast<Bytef*>(data.data());
  z.avail_out = uInt(size);
  int rc = inflate(&z, Z_FINISH);
  uint64_t produced = z.total_out;
  std::string message = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != size)
    throw file_error(file, "entry '" + entry + "' does not inflate to its declared " + std::to_string(size) +
                               " bytes (" +
                               (message.empty() ? "the stream ends early or runs on" : "zlib: " + message) +
                               "); the archive is corrupt");
  return data;
}

}  // namespace

std::vector<std::pair<std::string, NpyArray>> decode_npz_host(std::string_view zip, const std::string& name) {
  ZipReader r(zip, name);
  // The end-of-central-directory record: 22 bytes plus a comment of up to 65535.
  uint64_t end = UINT64_MAX;
  if (zip.size() >= 22)
    for (uint64_t i = zip.size() - 22;; --i) {
      if (r.u32(i, "end record") == kEndRecord) {
        end = i;
        break;
      }
      if (i == 0 || zip.size() - i >= 22 + 65535) break;
    }
  if (end == UINT64_MAX) throw file_error(name, "not a .npz (zip) archive, or truncated: no end-of-archive record");
  uint32_t count = r.u16(end + 10, "end record"), central_at = r.u32(end + 16, "end record");
  if (count == 0xffff || central_at == 0xffffffffu)
    throw file_error(name, "a zip64 archive (over 65535 entries or 4 GiB); surfgrad reads plain .npz files only");
  std::vector<std::pair<std::string, NpyArray>> out;
  uint64_t at = central_at;
  for (uint32_t e = 0; e < count; ++e) {
    if (r.u32(at, "central directory") != kCentralEntry) throw file_error(name, "corrupt zip central directory");
    uint32_t flags = r.u16(at + 8, "central directory"), method = r.u16(at + 10, "central directory"),
             crc = r.u32(at + 16, "central directory"), packed = r.u32(at + 20, "central directory"),
             size = r.u32(at + 24, "central directory"), name_len = r.u16(at + 28, "central directory"),
             extra_len = r.u16(at + 30, "central directory"), comment_len = r.u16(at + 32, "central directory"),
             local = r.u32(at + 42, "central directory");
    std::string entry(r.bytes(at + 46, name_len, "entry name"));
    at += 46 + uint64_t(name_len) + extra_len + comment_len;
    if (flags & 1) throw file_error(name, "entry '" + entry + "' is encrypted; surfgrad reads plain .npz files");
    if (packed == 0xffffffffu || size == 0xffffffffu)
      throw file_error(name, "entry '" + entry + "' is a zip64 entry (over 4 GiB); save it as a separate .npy file");
    if (r.u32(local, "local header") != kLocalEntry) throw file_error(name, "corrupt zip entry '" + entry + "'");
    uint64_t data_at = uint64_t(local) + 30 + r.u16(local + 26, "local header") + r.u16(local + 28, "local header");
    std::string_view raw = r.bytes(data_at, packed, "entry data");
    std::string data;
    if (method == 0) {
      if (packed != size)
        throw file_error(name, "stored entry '" + entry + "' declares " + std::to_string(size) + " bytes but holds " +
                                   std::to_string(packed) + "; the archive is corrupt");
      data = std::string(raw);
    } else if (method == 8) {
      if (size > uint64_t(packed) * kDeflateMaxRatio + 1024)
        throw file_error(name, "entry '" + entry + "' declares " + std::to_string(size) + " bytes from " +
                                   std::to_string(packed) +
                                   " compressed ones, more than deflate can produce; the "
                                   "archive is corrupt");
      check_host_budget(name, "entry '" + entry + "' (" + std::to_string(size) + " bytes)", size);
      data = inflate_entry(raw, size, name, entry);
    } else {
      throw file_error(name, "entry '" + entry + "' uses zip method " + std::to_string(method) +
                                 " (surfgrad reads stored and deflated entries: np.savez, np.savez_compressed)");
    }
    if (uint32_t(crc32(0, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size()))) != crc)
      throw file_error(name, "entry '" + entry + "' fails its CRC check (corrupt file)");
    if (entry.size() > 4 && entry.compare(entry.size() - 4, 4, ".npy") == 0) entry.resize(entry.size() - 4);
    std::istringstream npy(std::move(data));
    out.emplace_back(entry, decode_npy_host(npy, name + ":" + entry));
  }
  return out;
}

std::string encode_zip(const std::vector<std::pair<std::string, std::string>>& files, const std::string& name) {
  std::string zip, central;
  if (files.size() >= 0xffff) throw file_error(name, "more than 65534 arrays (zip64 is not written)");
  for (const auto& [file, data] : files) {
    if (data.size() >= 0xffffffffu || zip.size() + data.size() >= 0xffffffffu)
      throw file_error(name, "'" + file + "' would put the archive over 4 GiB (zip64 is not written)");
    uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size())));
    uint32_t offset = uint32_t(zip.size());
    auto header = [&](std::string& s, bool central_entry) {
      put32(s, central_entry ? kCentralEntry : kLocalEntry);
      if (central_entry) put16(s, 20);  // version made by
      put16(s, 20);                     // version needed
      put16(s, 0);                      // flags
      put16(s, 0);                      // method: stored
      put16(s, 0);                      // time
      put16(s, 0x21);                   // date: 1980-01-01
      put32(s, crc);
      put32(s, uint32_t(data.size()));
      put32(s, uint32_t(data.size()));
      put16(s, uint32_t(file.size()));
      put16(s, 0);  // extra
      if (central_entry) {
        put16(s, 0);  // comment
        put16(s, 0);  // disk
        put16(s, 0);  // internal attributes
        put32(s, 0);  // external attributes
        put32(s, offset);
      }
      s += file;
    };
    header(zip, false);
    zip += data;
    header(central, true);
  }
  uint32_t central_at = uint32_t(zip.size());
  zip += central;
  put32(zip, kEndRecord);
  put16(zip, 0);
  put16(zip, 0);
  put16(zip, uint32_t(files.size()));
  put16(zip, uint32_t(files.size()));
  put32(zip, uint32_t(central.size()));
  put32(zip, central_at);
  put16(zip, 0);
  return zip;
}

}  // namespace surfgrad::io
