// .npz archives: the zip container (local headers, central directory) around .npy entries.
// Written uncompressed, as np.savez does; read stored or deflated (zlib), CRC-checked.
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "surfgrad/io.hpp"
#include "internal.hpp"

namespace surfgrad {

namespace {

Error npz_error(const std::string& path, const std::string& what) { return Error(ErrorKind::IO, "'" + path + "': " + what); }

void put16(std::string& s, uint32_t v) {
  s += char(v & 0xff);
  s += char((v >> 8) & 0xff);
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}
uint32_t get16(const std::string& s, size_t at) { return uint8_t(s[at]) | (uint32_t(uint8_t(s[at + 1])) << 8); }
uint32_t get32(const std::string& s, size_t at) { return get16(s, at) | (get16(s, at + 2) << 16); }

}  // namespace

void save_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays) {
  std::string zip, central;
  for (const auto& [name, tensor] : arrays) {
    std::string file = name + ".npy";
    std::string data = encode_npy(tensor);
    if (data.size() >= 0xffffffffu) throw npz_error(path, "array '" + name + "' is over 4 GiB (zip64 is not written)");
    uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size())));
    uint32_t offset = uint32_t(zip.size());
    auto header = [&](std::string& s, bool central_entry) {
      put32(s, central_entry ? 0x02014b50 : 0x04034b50);
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
  put32(zip, 0x06054b50);
  put16(zip, 0);
  put16(zip, 0);
  put16(zip, uint32_t(arrays.size()));
  put16(zip, uint32_t(arrays.size()));
  put32(zip, uint32_t(central.size()));
  put32(zip, central_at);
  put16(zip, 0);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw npz_error(path, "cannot open for writing (" + std::string(std::strerror(errno)) + ")");
  out.write(zip.data(), std::streamsize(zip.size()));
  if (!out) throw npz_error(path, "write failed (disk full?)");
}

std::vector<std::pair<std::string, Tensor>> load_npz(const gpu::ContextPtr& ctx, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw npz_error(path, "cannot open for reading (" + std::string(std::strerror(errno)) + ")");
  std::string zip((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The end-of-central-directory record is in the last 64 KiB + 22 bytes.
  size_t eocd = std::string::npos;
  for (size_t i = zip.size() >= 22 ? zip.size() - 22 : std::string::npos; i != std::string::npos && i + 65557 >= zip.size(); --i) {
    if (get32(zip, i) == 0x06054b50) {
      eocd = i;
      break;
    }
    if (i == 0) break;
  }
  if (eocd == std::string::npos) throw npz_error(path, "not a .npz (zip) archive, or truncated: no end-of-archive record");
  uint32_t count = get16(zip, eocd + 10), central_at = get32(zip, eocd + 16);
  std::vector<std::pair<std::string, Tensor>> out;
  size_t at = central_at;
  for (uint32_t e = 0; e < count; ++e) {
    if (at + 46 > zip.size() || get32(zip, at) != 0x02014b50) throw npz_error(path, "corrupt zip central directory");
    uint32_t method = get16(zip, at + 10), crc = get32(zip, at + 16), packed = get32(zip, at + 20),
             size = get32(zip, at + 24), name_len = get16(zip, at + 28), extra_len = get16(zip, at + 30),
             comment_len = get16(zip, at + 32), local = get32(zip, at + 42);
    std::string name = zip.substr(at + 46, name_len);
    at += 46 + name_len + extra_len + comment_len;
    if (local + 30 > zip.size() || get32(zip, local) != 0x04034b50) throw npz_error(path, "corrupt zip entry '" + name + "'");
    size_t data_at = local + 30 + get16(zip, local + 26) + get16(zip, local + 28);
    if (data_at + packed > zip.size()) throw npz_error(path, "entry '" + name + "' is truncated");
    std::string data;
    if (method == 0) {
      data = zip.substr(data_at, packed);
    } else if (method == 8) {  // raw deflate
      data.resize(size);
      z_stream z{};
      z.next_in = reinterpret_cast<Bytef*>(zip.data() + data_at);
      z.avail_in = packed;
      z.next_out = reinterpret_cast<Bytef*>(data.data());
      z.avail_out = size;
      if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw npz_error(path, "zlib failed to start");
      int rc = inflate(&z, Z_FINISH);
      inflateEnd(&z);
      if (rc != Z_STREAM_END) throw npz_error(path, "entry '" + name + "' does not inflate (corrupt)");
    } else {
      throw npz_error(path, "entry '" + name + "' uses zip method " + std::to_string(method) + " (only stored and deflate)");
    }
    if (uint32_t(crc32(0, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size()))) != crc)
      throw npz_error(path, "entry '" + name + "' fails its CRC check (corrupt file)");
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    std::istringstream entry(data);
    out.emplace_back(name, decode_npy(ctx, entry, path + ":" + name));
  }
  return out;
}

}  // namespace surfgrad
