// Inputs and outputs of `surfgrad map`: points from .npy, IDX or CSV, labels, the built-in
// data set, and the written map (.npy, .csv, .png).
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "surfgrad/io.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/maps.hpp"
#include "tensor/internal.hpp"

namespace surfgrad {

namespace {

bool ends_with(const std::string& s, const std::string& e) { return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0; }

std::vector<double> read_csv(const std::string& path, int64_t& rows, int64_t& cols) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::IO, "'" + path + "': cannot open");
  std::vector<double> v;
  std::string line;
  rows = 0, cols = -1;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::string cell;
    int64_t c = 0;
    while (std::getline(ss, cell, ',')) {
      char* end = nullptr;
      double x = std::strtod(cell.c_str(), &end);
      if (end == cell.c_str()) {
        if (rows == 0 && v.empty()) { c = -1; break; }  // a header line
        throw Error(ErrorKind::IO, "'" + path + "': line " + std::to_string(rows + 1) + " has a non-number '" + cell + "'");
      }
      v.push_back(x);
      ++c;
    }
    if (c < 0) continue;
    if (cols >= 0 && c != cols)
      throw Error(ErrorKind::IO, "'" + path + "': line " + std::to_string(rows + 1) + " has " + std::to_string(c) +
                                     " values, earlier lines " + std::to_string(cols));
    cols = c;
    ++rows;
  }
  return v;
}

// Points as f32 [N, D] from .npy, IDX (plain or .gz) or CSV; more axes are flattened.
}  // namespace

int64_t PointBlocks::rows() const {
  int64_t n = 0;
  for (const Tensor& b : blocks) n += b.shape(0);
  return n;
}

int64_t PointBlocks::dims() const { return blocks.empty() ? 0 : blocks[0].shape(1); }

Tensor PointBlocks::single() const {
  if (blocks.size() == 1) return blocks[0];
  if (blocks.empty()) throw Error(ErrorKind::Value, "no points");
  const auto& ctx = blocks[0].context();
  uint64_t bytes = uint64_t(rows()) * uint64_t(dims()) * 4, limit = ctx->limits().max_storage_buffer_binding_size;
  if (bytes > limit)
    throw Error(ErrorKind::LimitExceeded, std::to_string(rows()) + " × " + std::to_string(dims()) + " points take " +
                                              std::to_string(bytes >> 20) + " MiB, over this adapter's " +
                                              std::to_string(limit >> 20) +
                                              " MiB per binding; reduce the dimensions first (surfgrad map --pca 50)");
  return concat(blocks, 0);
}

namespace {

// Uploads host rows [N, D] in blocks of at most max_block_bytes.
PointBlocks upload_blocks(const gpu::ContextPtr& ctx, const float* v, int64_t n, int64_t d, uint64_t max_block_bytes) {
  if (max_block_bytes == 0) max_block_bytes = ctx->limits().max_storage_buffer_binding_size / 4;
  int64_t rows = std::max<int64_t>(1, int64_t(max_block_bytes / (uint64_t(d) * 4)));
  PointBlocks out;
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    int64_t r1 = std::min(n, r0 + rows);
    out.blocks.push_back(Tensor::from_host(ctx, v + r0 * d, {r1 - r0, d}, DType::f32));
  }
  return out;
}

void check_finite(const std::string& path, const float* v, size_t count, int64_t d) {
  for (size_t i = 0; i < count; ++i)
    if (!std::isfinite(v[i]))
      throw Error(ErrorKind::Value, "'" + path + "': point " + std::to_string(i / size_t(d)) + " has a NaN or infinite value");
}

}  // namespace

PointBlocks load_point_blocks(const gpu::ContextPtr& ctx, const std::string& path, uint64_t max_block_bytes) {
  std::vector<float> f;
  Shape shape;
  if (ends_with(path, ".npy")) {
    // Decoded on the host, so that arrays over one binding load too.
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::IO, "'" + path + "': cannot open for reading (" + std::strerror(errno) + ")");
    NpyHost h = decode_npy_host(in, path);
    if (h.shape.empty()) throw Error(ErrorKind::Shape, "'" + path + "': a 0-d array is not a set of points");
    int64_t n = h.shape[0], count = shape_numel(h.shape);
    shape = {n, n == 0 ? 0 : count / n};
    if (h.fortran && h.shape.size() > 1) {
      // Small arrays only in practice: transpose through the GPU path.
      Tensor t = load_npy(ctx, path).cast(DType::f32);
      f = t.reshape({n, -1}).to_vector<float>();
    } else if (h.dtype == DType::f32) {
      f.resize(size_t(count));
      std::memcpy(f.data(), h.data.data(), size_t(count) * 4);
    } else if (h.dtype == DType::f16) {
      f = Tensor::from_host(ctx, h.data.data(), {count}, DType::f16).cast(DType::f32).to_vector<float>();
    } else {
      f.resize(size_t(count));
      for (int64_t i = 0; i < count; ++i) {
        uint32_t u;
        std::memcpy(&u, h.data.data() + i * 4, 4);
        f[size_t(i)] = h.dtype == DType::i32 ? float(int32_t(u)) : float(u);
      }
    }
  } else {
    std::vector<double> v;
    if (ends_with(path, ".csv")) {
      int64_t r, c;
      v = read_csv(path, r, c);
      shape = {r, c};
    } else {
      IdxArray a = read_idx(path);
      int64_t rest = a.shape.empty() ? 0 : a.numel() / std::max<int64_t>(1, a.shape[0]);
      shape = {a.shape.empty() ? 0 : a.shape[0], rest};
      v = std::move(a.values);
    }
    f.assign(v.begin(), v.end());
  }
  if (shape[0] == 0 || shape[1] == 0) throw Error(ErrorKind::IO, "'" + path + "': no points in the file");
  check_finite(path, f.data(), f.size(), shape[1]);
  return upload_blocks(ctx, f.data(), shape[0], shape[1], max_block_bytes);
}

Tensor load_points(const gpu::ContextPtr& ctx, const std::string& path) { return load_point_blocks(ctx, path).single(); }

Tensor load_labels(const gpu::ContextPtr& ctx, const std::string& path, int64_t n) {
  Tensor l = load_points(ctx, path);
  if (l.numel() != n)
    throw Error(ErrorKind::Shape, "'" + path + "': " + std::to_string(l.numel()) + " labels for " + std::to_string(n) + " points");
  return l.reshape({n}).cast(DType::i32);
}

PointBlocks builtin_point_blocks(const gpu::ContextPtr& ctx, int64_t n, Tensor& labels) {
  std::vector<int32_t> lab(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lab[size_t(i)] = int32_t(i % 10);
  labels = Tensor::from_vector(ctx, lab, {n});
  Tensor centres = Tensor::normal(ctx, {10, 768}, 7, 0, 0.35);
  const int64_t rows = 32768;  // 96 MiB: inside every adapter's binding limit
  PointBlocks out;
  for (int64_t r0 = 0; r0 < n; r0 += rows) {
    int64_t r1 = std::min(n, r0 + rows);
    Tensor noise = Tensor::normal(ctx, {r1 - r0, 768}, 8 + uint64_t(r0 / rows));
    out.blocks.push_back(add(index_select(centres, 0, labels.slice(0, r0, r1)), noise));
  }
  return out;
}

Tensor builtin_points(const gpu::ContextPtr& ctx, int64_t n, Tensor& labels) {
  return builtin_point_blocks(ctx, n, labels).single();
}

void write_outputs(const std::string& out, const Tensor& y, const Tensor& labels) {
  save_npy(y, out + ".npy");
  std::vector<float> p = y.to_vector<float>();
  std::vector<int32_t> lab;
  if (labels.defined()) lab = labels.to_vector<int32_t>();
  std::ofstream csv(out + ".csv");
  if (!csv) throw Error(ErrorKind::IO, "'" + out + ".csv': cannot open for writing");
  csv << (lab.empty() ? "x,y\n" : "x,y,label\n");
  int64_t n = y.shape(0);
  float x0 = 1e30f, x1 = -1e30f, y0 = 1e30f, y1 = -1e30f;
  for (int64_t i = 0; i < n; ++i) {
    float a = p[size_t(2 * i)], b = p[size_t(2 * i + 1)];
    csv << a << "," << b;
    if (!lab.empty()) csv << "," << lab[size_t(i)];
    csv << "\n";
    x0 = std::min(x0, a), x1 = std::max(x1, a), y0 = std::min(y0, b), y1 = std::max(y1, b);
  }
  const int W = 1000, H = 1000, margin = 20;
  Image img(W, H);
  double scale = std::min((W - 2 * margin) / std::max(1e-9f, x1 - x0), (H - 2 * margin) / std::max(1e-9f, y1 - y0));
  double radius = n > 100000 ? 0.8 : n > 20000 ? 1.2 : 2.0;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t r = 60, g = 90, b = 160;
    if (!lab.empty()) palette(lab[size_t(i)], r, g, b);
    img.disc(margin + (p[size_t(2 * i)] - x0) * scale, H - margin - (p[size_t(2 * i + 1)] - y0) * scale, radius, r, g, b);
  }
  write_png(out + ".png", img);
}

}  // namespace surfgrad
