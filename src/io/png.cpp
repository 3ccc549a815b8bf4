// PNG writing through libpng's simplified API (8-bit RGB); libpng reports its errors in the
// image struct, so no setjmp/longjmp crosses C++ frames here.
#include <png.h>

#include <cmath>
#include <string>

#include "io/write_file.hpp"
#include "surfgrad/io.hpp"

namespace surfgrad {

void Image::disc(double cx, double cy, double radius, uint8_t r, uint8_t g, uint8_t b) {
  int x0 = int(std::floor(cx - radius)), x1 = int(std::ceil(cx + radius));
  int y0 = int(std::floor(cy - radius)), y1 = int(std::ceil(cy + radius));
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x)
      if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= radius * radius) set(x, y, r, g, b);
}

void write_png(const std::string& path, const Image& image) {
  if (image.width <= 0 || image.height <= 0 || image.rgb.size() != size_t(image.width) * size_t(image.height) * 3)
    throw Error(ErrorKind::Value, "'" + path + "': cannot write a " + std::to_string(image.width) + " × " +
                                      std::to_string(image.height) + " image (width and height must be ≥ 1)");
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = png_uint_32(image.width);
  png.height = png_uint_32(image.height);
  png.format = PNG_FORMAT_RGB;
  // Encoded in memory, then written by write_whole_file: libpng's own file writer removes the
  // path when a write fails, which would delete a device (/dev/full) given as the output.
  png_alloc_size_t size = 0;
  std::string bytes;
  bool ok = png_image_write_to_memory(&png, nullptr, &size, 0, image.rgb.data(), png_int_32(image.width) * 3, nullptr);
  if (ok) {
    bytes.resize(size);
    ok =
        png_image_write_to_memory(&png, bytes.data(), &size, 0, image.rgb.data(), png_int_32(image.width) * 3, nullptr);
  }
  if (!ok) {
    std::string why = png.message[0] ? png.message : "unknown libpng error";
    png_image_free(&png);
    throw Error(ErrorKind::IO, "'" + path + "': cannot encode the PNG (" + why + ")");
  }
  bytes.resize(size);
  io::write_whole_file(path, bytes);
}

void palette(int label, uint8_t& r, uint8_t& g, uint8_t& b) {
  static const uint8_t colours[10][3] = {{31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                                         {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {127, 127, 127},
                                         {188, 189, 34},  {23, 190, 207}};
  const uint8_t* c = colours[((label % 10) + 10) % 10];
  r = c[0], g = c[1], b = c[2];
}

}  // namespace surfgrad
