// PNG writing: 8-bit RGB, zlib-compressed scanlines (filter 0), CRC-checked chunks.
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "surfgrad/io.hpp"

namespace surfgrad {

namespace {

void put_be32(std::string& s, uint32_t v) {
  for (int k = 3; k >= 0; --k) s += char((v >> (8 * k)) & 0xff);
}

void chunk(std::string& png, const char* type, const std::string& data) {
  put_be32(png, uint32_t(data.size()));
  std::string body = std::string(type, 4) + data;
  png += body;
  put_be32(png, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size()))));
}

}  // namespace

void Image::disc(double cx, double cy, double radius, uint8_t r, uint8_t g, uint8_t b) {
  int x0 = int(std::floor(cx - radius)), x1 = int(std::ceil(cx + radius));
  int y0 = int(std::floor(cy - radius)), y1 = int(std::ceil(cy + radius));
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x)
      if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= radius * radius) set(x, y, r, g, b);
}

void write_png(const std::string& path, const Image& image) {
  std::string raw;
  raw.reserve(size_t(image.height) * (size_t(image.width) * 3 + 1));
  for (int y = 0; y < image.height; ++y) {
    raw += char(0);  // filter: none
    raw.append(reinterpret_cast<const char*>(&image.rgb[size_t(y) * size_t(image.width) * 3]), size_t(image.width) * 3);
  }
  uLongf packed_size = compressBound(uLong(raw.size()));
  std::string packed(packed_size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size, reinterpret_cast<const Bytef*>(raw.data()),
                uLong(raw.size()), 6) != Z_OK)
    throw Error(ErrorKind::IO, "'" + path + "': zlib failed to compress the image");
  packed.resize(packed_size);
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  put_be32(ihdr, uint32_t(image.width));
  put_be32(ihdr, uint32_t(image.height));
  ihdr += char(8);  // bit depth
  ihdr += char(2);  // colour type: RGB
  ihdr += std::string(3, '\0');  // compression, filter, interlace
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", packed);
  chunk(png, "IEND", "");
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorKind::IO, "'" + path + "': cannot open for writing (" + std::strerror(errno) + ")");
  out.write(png.data(), std::streamsize(png.size()));
  if (!out) throw Error(ErrorKind::IO, "'" + path + "': write failed");
}

void palette(int label, uint8_t& r, uint8_t& g, uint8_t& b) {
  static const uint8_t colours[10][3] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
                                         {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  const uint8_t* c = colours[((label % 10) + 10) % 10];
  r = c[0], g = c[1], b = c[2];
}

}  // namespace surfgrad
