// Inputs and outputs of `surfgrad map`: points from .npy, IDX or CSV, labels, the built-in
// data set, and the written map (.npy, .csv, .png).
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "surfgrad/io.hpp"
#include "surfgrad/maps.hpp"

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

Tensor load_points(const gpu::ContextPtr& ctx, const std::string& path) {
  std::vector<double> v;
  Shape shape;
  if (ends_with(path, ".npy")) {
    Tensor t = load_npy(ctx, path).cast(DType::f32);
    if (t.rank() < 1) throw Error(ErrorKind::Shape, "'" + path + "': a 0-d array is not a set of points");
    Tensor flat = t.reshape({t.shape(0), t.rank() == 1 ? 1 : -1});
    v.assign(0, 0);
    for (float x : flat.to_vector<float>()) v.push_back(x);
    shape = flat.shape();
  } else if (ends_with(path, ".csv")) {
    int64_t r, c;
    v = read_csv(path, r, c);
    shape = {r, c};
  } else {
    IdxArray a = read_idx(path);
    int64_t rest = a.shape.empty() ? 0 : a.numel() / std::max<int64_t>(1, a.shape[0]);
    shape = {a.shape.empty() ? 0 : a.shape[0], rest};
    v = std::move(a.values);
  }
  if (shape[0] == 0 || shape[1] == 0) throw Error(ErrorKind::IO, "'" + path + "': no points in the file");
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw Error(ErrorKind::Value, "'" + path + "': point " + std::to_string(i / size_t(shape[1])) + " has a NaN or infinite value");
  std::vector<float> f(v.begin(), v.end());
  return Tensor::from_vector(ctx, f, shape);
}

Tensor load_labels(const gpu::ContextPtr& ctx, const std::string& path, int64_t n) {
  Tensor l = load_points(ctx, path);
  if (l.numel() != n)
    throw Error(ErrorKind::Shape, "'" + path + "': " + std::to_string(l.numel()) + " labels for " + std::to_string(n) + " points");
  return l.reshape({n}).cast(DType::i32);
}

Tensor builtin_points(const gpu::ContextPtr& ctx, int64_t n, Tensor& labels) {
  std::vector<int32_t> lab(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lab[size_t(i)] = int32_t(i % 10);
  labels = Tensor::from_vector(ctx, lab, {n});
  Tensor centres = Tensor::normal(ctx, {10, 768}, 7, 0, 0.35);
  return add(index_select(centres, 0, labels), Tensor::normal(ctx, {n, 768}, 8));
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
