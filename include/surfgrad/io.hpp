// Host-side file formats that need no GPU: IDX (MNIST's format, plain or gzip-compressed) and
// PNG images (for decision boundaries and embedding maps).
//
//   IdxArray images = read_idx("t10k-images-idx3-ubyte.gz");   // shape {10000, 28, 28}
//   Image img(400, 300);  img.fill(255, 255, 255);  img.set(10, 20, 255, 0, 0);  write_png("a.png", img);
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "surfgrad/error.hpp"

namespace surfgrad {

struct IdxArray {
  std::vector<int64_t> shape;
  std::vector<double> values;  // converted from the file's element type
  int64_t numel() const { return int64_t(values.size()); }
};
// Reads an IDX file (u8, i8, i16, i32, f32, f64 elements; gzip-compressed or not).
IdxArray read_idx(const std::string& path);

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes per pixel
  Image(int w, int h) : width(w), height(h), rgb(size_t(w) * size_t(h) * 3, 255) {}
  void set(int x, int y, uint8_t r, uint8_t g, uint8_t b) {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    uint8_t* p = &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
    p[0] = r, p[1] = g, p[2] = b;
  }
  void fill(uint8_t r, uint8_t g, uint8_t b) {
    for (size_t i = 0; i < rgb.size(); i += 3) rgb[i] = r, rgb[i + 1] = g, rgb[i + 2] = b;
  }
  void disc(double cx, double cy, double radius, uint8_t r, uint8_t g, uint8_t b);
};
void write_png(const std::string& path, const Image& image);

// A qualitative palette of 10 distinguishable colours (labels 0–9, then repeating).
void palette(int label, uint8_t& r, uint8_t& g, uint8_t& b);

}  // namespace surfgrad
