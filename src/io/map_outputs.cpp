// A map's outputs: OUT.npy (f32 [N, 2]), OUT.csv (x,y[,label]) and OUT.png (coloured by label).
#include <algorithm>
#include <sstream>

#include "io/write_file.hpp"
#include "surfgrad/io.hpp"

namespace surfgrad {

void write_outputs(const std::string& out, const Tensor& y, const Tensor& labels) {
  write_outputs(out + ".npy", out + ".csv", out + ".png", y, labels);
}

void write_outputs(const std::string& npy, const std::string& csv_path, const std::string& png, const Tensor& y,
                   const Tensor& labels) {
  save_npy(y, npy);
  std::vector<float> p = y.to_vector<float>();
  std::vector<int32_t> lab;
  if (labels.defined()) lab = labels.to_vector<int32_t>();
  std::ostringstream csv;
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
  io::write_whole_file(csv_path, csv.str());
  const int W = 1000, H = 1000, margin = 20;
  Image img(W, H);
  double scale = std::min((W - 2 * margin) / std::max(1e-9f, x1 - x0), (H - 2 * margin) / std::max(1e-9f, y1 - y0));
  double radius = n > 100000 ? 0.8 : n > 20000 ? 1.2 : 2.0;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t r = 60, g = 90, b = 160;
    if (!lab.empty()) palette(lab[size_t(i)], r, g, b);
    img.disc(margin + (p[size_t(2 * i)] - x0) * scale, H - margin - (p[size_t(2 * i + 1)] - y0) * scale, radius, r, g,
             b);
  }
  write_png(png, img);
}

}  // namespace surfgrad
