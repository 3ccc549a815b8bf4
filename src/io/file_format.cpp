#include "io/file_format.hpp"

#include <cstring>
#include <fstream>

namespace surfgrad::io {

FileFormat sniff_format(const std::string& path) {
  char head[8] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  size_t got = size_t(in.gcount());
  auto starts = [&](const char* magic, size_t n) { return got >= n && std::memcmp(head, magic, n) == 0; };
  if (starts("\x93NUMPY", 6)) return FileFormat::Npy;
  if (starts("PK\x03\x04", 4) || starts("PK\x05\x06", 4)) return FileFormat::Zip;  // an archive, or an empty one
  if (starts("\x1f\x8b", 2)) return FileFormat::Gzip;
  if (starts("PAR1", 4)) return FileFormat::Parquet;
  if (starts("\x89HDF\r\n\x1a\n", 8)) return FileFormat::Hdf5;
  if (starts("\x89PNG", 4)) return FileFormat::Png;
  if (got >= 2 && head[0] == 0 && head[1] == 0) return FileFormat::Unknown;  // IDX, perhaps
  bool text = got > 0;
  for (size_t i = 0; i < got; ++i) {
    unsigned char c = static_cast<unsigned char>(head[i]);
    text &= c >= 0x20 ? c != 0x7f : (c == '\n' || c == '\r' || c == '\t');
  }
  return text ? FileFormat::Text : FileFormat::Unknown;
}

std::string format_name(FileFormat format) {
  switch (format) {
    case FileFormat::Npy: return "a NumPy array (.npy)";
    case FileFormat::Zip: return "a zip archive (.npz)";
    case FileFormat::Gzip: return "a gzip file";
    case FileFormat::Parquet: return "a Parquet file";
    case FileFormat::Hdf5: return "an HDF5 file";
    case FileFormat::Png: return "a PNG image";
    case FileFormat::Text: return "a text file";
    case FileFormat::Unknown: break;
  }
  return "a file of unknown format";
}

}  // namespace surfgrad::io
