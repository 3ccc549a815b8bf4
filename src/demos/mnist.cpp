// An MLP on MNIST-format IDX files: minibatch Adam, held-out accuracy per epoch.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <random>

#include "surfgrad/demos.hpp"
#include "surfgrad/io.hpp"
#include "surfgrad/nn.hpp"
#include "surfgrad/optim.hpp"

namespace surfgrad::demos {

namespace {

std::string find_file(const std::string& dir, const std::string& stem) {
  for (const char* ext : {"", ".gz"}) {
    std::string p = dir + "/" + stem + ext;
    if (std::filesystem::exists(p)) return p;
  }
  throw Error(ErrorKind::IO, "no " + stem + "[.gz] in '" + dir + "'; pass --data DIR with the MNIST IDX files");
}

double evaluate(nn::Module& model, const Tensor& x, const Tensor& y) {
  NoGradGuard no_grad;
  model.eval();
  double hits = 0;
  const int64_t chunk = 1000;
  for (int64_t at = 0; at < x.shape(0); at += chunk) {
    int64_t end = std::min(x.shape(0), at + chunk);
    Var logits = model.forward(Var(x.slice(0, at, end)));
    hits += eq(logits.value().argmax(1), y.slice(0, at, end)).cast(DType::f32).sum().to_vector<float>()[0];
  }
  model.train();
  return hits / double(x.shape(0));
}

std::string bar(double fraction, int width = 24) {
  int full = int(fraction * width + 0.5);
  return "[" + std::string(size_t(full), '#') + std::string(size_t(width - full), '.') + "]";
}

}  // namespace

MnistResult train_mnist(const gpu::ContextPtr& ctx, const MnistOptions& opt, const Progress& progress) {
  if (opt.batch < 1 || opt.epochs < 1 || opt.hidden < 1 || opt.train < 1 || opt.test < 1 || !(opt.lr > 0))
    throw Error(ErrorKind::Value,
                "mnist: batch (--batch), epochs (--epochs), hidden (--hidden), train and test must be "
                "at least 1 and lr (--lr) positive");
  auto t0 = std::chrono::steady_clock::now();
  IdxArray images = read_idx(find_file(opt.data_dir, "t10k-images-idx3-ubyte"));
  IdxArray labels = read_idx(find_file(opt.data_dir, "t10k-labels-idx1-ubyte"));
  if (images.shape.size() != 3 || labels.shape.size() != 1 || images.shape[0] != labels.shape[0])
    throw Error(ErrorKind::IO, "MNIST files in '" + opt.data_dir + "' disagree: images " + shape_str(images.shape) +
                                   ", labels " + shape_str(labels.shape));
  int64_t n = images.shape[0], d = images.shape[1] * images.shape[2];
  if (opt.train + opt.test > n)
    throw Error(ErrorKind::Value, "mnist: train " + std::to_string(opt.train) + " + test " + std::to_string(opt.test) +
                                      " exceeds the " + std::to_string(n) + " images");
  // Pixels to [0, 1], then standardised with MNIST's usual mean and deviation.
  std::vector<float> pixels(images.values.size());
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = float((images.values[i] / 255.0 - 0.1307) / 0.3081);
  std::vector<int32_t> classes = labels_from_values(labels.values, find_file(opt.data_dir, "t10k-labels-idx1-ubyte"));
  Tensor all_x = Tensor::from_vector(ctx, pixels, {n, d});
  Tensor all_y = Tensor::from_vector(ctx, classes, {n});
  Tensor train_x = all_x.slice(0, 0, opt.train), train_y = all_y.slice(0, 0, opt.train);
  Tensor test_x = all_x.slice(0, n - opt.test, n), test_y = all_y.slice(0, n - opt.test, n);

  auto model = nn::mlp(ctx, {d, opt.hidden, 10}, nn::Activation::ReLU, opt.seed);
  optim::Adam adam(model->parameters(), opt.lr);
  int64_t steps_per_epoch = (opt.train + opt.batch - 1) / opt.batch;
  optim::CosineLR schedule(adam, steps_per_epoch * opt.epochs, opt.lr * 0.05);
  std::mt19937 gen(uint32_t(opt.seed));
  std::vector<int32_t> order(size_t(opt.train));
  MnistResult result;
  for (int epoch = 1; epoch <= opt.epochs; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), gen);
    Tensor perm = Tensor::from_vector(ctx, order, {opt.train});
    double loss_sum = 0;
    int loss_count = 0;
    for (int64_t s = 0; s < steps_per_epoch; ++s) {
      int64_t at = s * opt.batch, end = std::min<int64_t>(opt.train, at + opt.batch);
      Tensor rows = perm.slice(0, at, end);
      Var logits = model->forward(Var(index_select(train_x, 0, rows)));
      Var loss = nn::cross_entropy(logits, index_select(train_y, 0, rows));
      adam.zero_grad();
      loss.backward();
      adam.step();
      schedule.step();
      if (s % 16 == 15 || s + 1 == steps_per_epoch) {  // a readback every 16 steps keeps the GPU busy
        loss_sum += loss.value().to_vector<float>()[0];
        ++loss_count;
        if (progress) {
          char line[160];
          std::snprintf(line, sizeof line, "epoch %2d/%d %s  loss %.4f", epoch, opt.epochs,
                        bar(double(s + 1) / double(steps_per_epoch)).c_str(), loss_sum / loss_count);
          progress(line, false);
        }
      }
    }
    result.final_loss = loss_sum / std::max(1, loss_count);
    result.test_accuracy = evaluate(*model, test_x, test_y);
    if (progress) {
      char line[160];
      std::snprintf(line, sizeof line, "epoch %2d/%d %s  loss %.4f  held-out accuracy %.2f%%", epoch, opt.epochs,
                    bar(1).c_str(), result.final_loss, 100 * result.test_accuracy);
      progress(line, true);
    }
  }
  result.train_accuracy = evaluate(*model, train_x, train_y);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace surfgrad::demos
