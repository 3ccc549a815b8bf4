// File formats, all in one place: .npy/.npz (NumPy's), IDX (MNIST's, plain or gzip-compressed),
// CSV points, PNG images; the points of a map from any of them, the built-in data set, and a
// map's outputs.
//
//   IdxArray images = read_idx("t10k-images-idx3-ubyte.gz");   // shape {10000, 28, 28}
//   Image img(400, 300);  img.fill(255, 255, 255);  img.set(10, 20, 255, 0, 0);  write_png("a.png", img);
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "surfgrad/error.hpp"
#include "surfgrad/point_blocks.hpp"
#include "surfgrad/tensor.hpp"

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

// ---- .npy and .npz files (NumPy's formats; np.load reads what these write) ----
Tensor load_npy(const gpu::ContextPtr& ctx, const std::string& path);
void save_npy(const Tensor& t, const std::string& path);
Tensor decode_npy(const gpu::ContextPtr& ctx, std::istream& in, const std::string& name);
std::string encode_npy(const Tensor& t);
// .npz: a zip archive of .npy files, one per name. Reads stored and deflated entries
// (np.savez and np.savez_compressed); writes stored ones.
void save_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays);
std::vector<std::pair<std::string, Tensor>> load_npz(const gpu::ContextPtr& ctx, const std::string& path);

// Points as f32 [N, D] from .npy (any float or int dtype; more axes flattened), IDX (plain or
// gzip, e.g. MNIST images) or CSV (numbers, an optional header line). Refuses empty files and
// NaN or infinite values, naming the point. Duplicate points are kept (they get distance 0).
// Blocks hold at most max_block_bytes (0: a quarter of the adapter's binding limit).
PointBlocks load_point_blocks(const gpu::ContextPtr& ctx, const std::string& path, uint64_t max_block_bytes = 0);
Tensor load_points(const gpu::ContextPtr& ctx, const std::string& path);  // load_point_blocks(…).single()
// Labels (i32 [n], integers 0 … 2^31 − 1) from the same formats; the count must be n.
Tensor load_labels(const gpu::ContextPtr& ctx, const std::string& path, int64_t n);
// Class labels from values read from `file` (e.g. IdxArray::values): each must be an integer
// 0 … 2^31 − 1, else a Value error naming the file, the label and its value.
std::vector<int32_t> labels_from_values(const std::vector<double>& values, const std::string& file);
// The built-in data set: n points of 10 Gaussian clusters in 768 dimensions, labels 0–9
// (point i in cluster i mod 10), generated on the GPU in blocks of 32,768 rows: the same
// points whatever the adapter's limits.
PointBlocks builtin_point_blocks(const gpu::ContextPtr& ctx, int64_t n, Tensor& labels);
Tensor builtin_points(const gpu::ContextPtr& ctx, int64_t n, Tensor& labels);
// Writes OUT.npy (f32 [N, 2]), OUT.csv (x,y[,label]) and OUT.png (coloured by label).
void write_outputs(const std::string& out, const Tensor& embedding, const Tensor& labels);
// The same three, each at its own path (e.g. one staged under a hidden name, one a device).
void write_outputs(const std::string& npy, const std::string& csv, const std::string& png, const Tensor& embedding,
                   const Tensor& labels);

}  // namespace surfgrad
