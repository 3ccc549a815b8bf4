// A map's outputs: OUT.npy (f32 [N, 2]), OUT.csv (x,y[,label]) and OUT.png (coloured by label).
// At 10M points the CSV is ~190 MB of text: its rows are formatted in parallel parts with
// std::to_chars (the same digits as `ostream << float`, printf's %g: 6 significant digits) and
// written part after part; the PNG's discs are drawn in one pass and encoded fast.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "io/write_file.hpp"
#include "platform/parallel.hpp"
#include "surfgrad/io.hpp"

namespace surfgrad {

namespace {

// Rows [begin, end) as CSV text: "x,y[,label]\n", each number as printf("%g").
std::string csv_rows(const float* p, const int32_t* lab, int64_t begin, int64_t end) {
  std::string s(size_t(end - begin) * 48, '\0');  // two floats of ≤ 13 chars, a label of ≤ 11, separators
  char* c = s.data();
  for (int64_t i = begin; i < end; ++i) {
    char* e = c + 48;
    c = std::to_chars(c, e, p[2 * i], std::chars_format::general, 6).ptr;
    *c++ = ',';
    c = std::to_chars(c, e, p[2 * i + 1], std::chars_format::general, 6).ptr;
    if (lab) {
      *c++ = ',';
      c = std::to_chars(c, e, lab[i]).ptr;
    }
    *c++ = '\n';
  }
  s.resize(size_t(c - s.data()));
  return s;
}

// Image::disc, on image rows [ya, yb] only (the same pixels of those rows).
void disc_rows(Image& img, double cx, double cy, double radius, int ya, int yb, uint8_t r, uint8_t g, uint8_t b) {
  int x0 = int(std::floor(cx - radius)), x1 = int(std::ceil(cx + radius));
  for (int y = ya; y <= yb; ++y)
    for (int x = x0; x <= x1; ++x)
      if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= radius * radius) img.set(x, y, r, g, b);
}

}  // namespace

void write_outputs(const std::string& out, const Tensor& y, const Tensor& labels) {
  write_outputs(out + ".npy", out + ".csv", out + ".png", y, labels);
}

void write_outputs(const std::string& npy, const std::string& csv_path, const std::string& png, const Tensor& y,
                   const Tensor& labels) {
  save_npy(y, npy);
  std::vector<float> p = y.to_vector<float>();
  std::vector<int32_t> lab;
  if (labels.defined()) lab = labels.to_vector<int32_t>();
  int64_t n = y.shape(0);

  // Parts of at least 64k rows, so a small map is one part on the calling thread.
  const int parts = int(std::clamp<int64_t>(n / 65536, 1, platform::host_threads()));
  std::vector<std::string> pieces(size_t(parts) + 1);
  pieces[0] = lab.empty() ? "x,y\n" : "x,y,label\n";
  platform::parallel_parts(parts, [&](int part) {
    pieces[size_t(part) + 1] = csv_rows(p.data(), lab.empty() ? nullptr : lab.data(),
                                        platform::part_begin(n, part, parts), platform::part_begin(n, part + 1, parts));
  });
  io::write_whole_file(csv_path, pieces);
  pieces.clear();

  float x0 = 1e30f, x1 = -1e30f, y0 = 1e30f, y1 = -1e30f;
  for (int64_t i = 0; i < n; ++i) {
    float a = p[size_t(2 * i)], b = p[size_t(2 * i + 1)];
    x0 = std::min(x0, a), x1 = std::max(x1, a), y0 = std::min(y0, b), y1 = std::max(y1, b);
  }
  const int W = 1000, H = 1000, margin = 20;
  Image img(W, H);
  double scale = std::min((W - 2 * margin) / std::max(1e-9f, x1 - x0), (H - 2 * margin) / std::max(1e-9f, y1 - y0));
  double radius = n > 100000 ? 0.8 : n > 20000 ? 1.2 : 2.0;
  // Bands of image rows in parallel: each part draws every point's disc clipped to its band, in
  // the points' order, so every pixel ends as the serial loop would leave it.
  const int bands = int(std::clamp<int64_t>(n / 65536, 1, platform::host_threads()));
  platform::parallel_parts(bands, [&](int band) {
    const int top = int(platform::part_begin(H, band, bands)), bottom = int(platform::part_begin(H, band + 1, bands));
    for (int64_t i = 0; i < n; ++i) {
      double cx = margin + (p[size_t(2 * i)] - x0) * scale, cy = H - margin - (p[size_t(2 * i + 1)] - y0) * scale;
      int ya = std::max(top, int(std::floor(cy - radius))), yb = std::min(bottom - 1, int(std::ceil(cy + radius)));
      if (ya > yb) continue;
      uint8_t r = 60, g = 90, b = 160;
      if (!lab.empty()) palette(lab[size_t(i)], r, g, b);
      disc_rows(img, cx, cy, radius, ya, yb, r, g, b);
    }
  });
  write_png(png, img);
}

}  // namespace surfgrad
