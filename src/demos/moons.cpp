// The two-moons classifier: generated data, a small MLP, Adam, and a decision-boundary PNG.
#include <algorithm>
#include <cmath>
#include <random>

#include "surfgrad/demos.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/nn.hpp"
#include "surfgrad/optim.hpp"

namespace surfgrad::demos {

namespace {

// Two interleaving half circles with Gaussian noise (as scikit-learn's make_moons).
void make_moons(int n, double noise, uint64_t seed, std::vector<float>& xy, std::vector<int32_t>& labels) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> jitter(0, noise);
  int half = n / 2;
  for (int i = 0; i < n; ++i) {
    bool second = i >= half;
    int k = second ? i - half : i;
    int count = second ? n - half : half;
    double t = 3.141592653589793 * k / std::max(1, count - 1);
    double x = second ? 1 - std::cos(t) : std::cos(t);
    double y = second ? 0.5 - std::sin(t) : std::sin(t);
    xy.push_back(float(x + jitter(gen)));
    xy.push_back(float(y + jitter(gen)));
    labels.push_back(second ? 1 : 0);
  }
}

double accuracy(const Var& logits, const Tensor& labels) {
  Tensor hits = eq(logits.value().argmax(1), labels).cast(DType::f32).mean();
  return hits.to_vector<float>()[0];
}

void draw_boundary(const gpu::ContextPtr& ctx, nn::Module& model, const std::vector<float>& xy,
                   const std::vector<int32_t>& labels, const std::string& path) {
  const int W = 480, H = 360;
  float x0 = -1.6f, x1 = 2.6f, y0 = -1.2f, y1 = 1.7f;
  std::vector<float> grid;
  grid.reserve(size_t(W) * H * 2);
  for (int py = 0; py < H; ++py)
    for (int px = 0; px < W; ++px) {
      grid.push_back(x0 + (x1 - x0) * (px + 0.5f) / W);
      grid.push_back(y1 - (y1 - y0) * (py + 0.5f) / H);
    }
  std::vector<float> p1;
  {
    NoGradGuard no_grad;
    Var logits = model.forward(Var(Tensor::from_vector(ctx, grid, {int64_t(W) * H, 2})));
    p1 = logits.value().softmax(1).slice(1, 1, 2).to_vector<float>();
  }
  Image img(W, H);
  for (int py = 0; py < H; ++py)
    for (int px = 0; px < W; ++px) {
      float p = p1[size_t(py) * W + px];
      // Pale blue for class 0, pale orange for class 1, white along the boundary.
      double c0 = std::max(0.0, 1 - 2.0 * p), c1 = std::max(0.0, 2.0 * p - 1);
      img.set(px, py, uint8_t(255 - 60 * c0 + 0 * c1), uint8_t(255 - 30 * c0 - 40 * c1), uint8_t(255 - 90 * c1));
    }
  for (size_t i = 0; i < labels.size(); ++i) {
    double px = (xy[2 * i] - x0) / (x1 - x0) * W, py = (y1 - xy[2 * i + 1]) / (y1 - y0) * H;
    uint8_t r, g, b;
    palette(labels[i], r, g, b);
    img.disc(px, py, 4.5, 30, 30, 30);
    img.disc(px, py, 3.5, r, g, b);
  }
  write_png(path, img);
}

}  // namespace

MoonsResult train_moons(const gpu::ContextPtr& ctx, const MoonsOptions& opt, const Progress& progress) {
  std::vector<float> xy;
  std::vector<int32_t> labels_host;
  make_moons(opt.points, opt.noise, opt.seed, xy, labels_host);
  Tensor x = Tensor::from_vector(ctx, xy, {opt.points, 2});
  Tensor labels = Tensor::from_vector(ctx, labels_host, {opt.points});
  auto model = nn::mlp(ctx, {2, 16, 16, 2}, nn::Activation::ReLU, opt.seed);
  optim::Adam adam(model->parameters(), opt.lr);
  optim::CosineLR schedule(adam, opt.steps, opt.lr * 0.05);
  MoonsResult result;
  for (int step = 1; step <= opt.steps; ++step) {
    Var logits = model->forward(Var(x));
    Var loss = nn::cross_entropy(logits, labels);
    adam.zero_grad();
    loss.backward();
    adam.step();
    schedule.step();
    if (step % 50 == 0 || step == opt.steps) {
      result.final_loss = loss.value().to_vector<float>()[0];
      result.train_accuracy = accuracy(logits, labels);
      char line[128];
      std::snprintf(line, sizeof line, "step %4d/%d  loss %.4f  train accuracy %.1f%%", step, opt.steps,
                    result.final_loss, 100 * result.train_accuracy);
      if (progress) progress(line, step == opt.steps);
    }
  }
  {
    NoGradGuard no_grad;
    result.train_accuracy = accuracy(model->forward(Var(x)), labels);
  }
  if (!opt.png.empty()) draw_boundary(ctx, *model, xy, labels_host, opt.png);
  return result;
}

}  // namespace surfgrad::demos
