// End-to-end training demos, callable from the CLI (`surfgrad demo moons|mnist`) and tests.
#pragma once
#include <functional>
#include <string>

#include "surfgrad/gpu.hpp"

namespace surfgrad::demos {

// Progress lines ("step 100/500  loss 0.231  acc 97.5%"); the CLI prints them, tests ignore.
using Progress = std::function<void(const std::string& line, bool final_line)>;

struct MoonsOptions {
  int points = 200;  // half per class
  double noise = 0.1;
  int steps = 400;  // full-batch Adam steps
  double lr = 0.03;
  uint64_t seed = 1;
  std::string png;  // decision boundary image; empty = none
};
struct MoonsResult {
  double train_accuracy = 0;
  double final_loss = 0;
};
// A 2-16-16-2 MLP classifier on the two-moons set (micrograd's demo).
MoonsResult train_moons(const gpu::ContextPtr& ctx, const MoonsOptions& opt, const Progress& progress = {});

struct MnistOptions {
  std::string data_dir;           // holds t10k-images-idx3-ubyte[.gz] and t10k-labels-idx1-ubyte[.gz]
  int train = 8000, test = 2000;  // the first `train` images train, the last `test` are held out
  int epochs = 8;
  int hidden = 256;
  int batch = 128;
  double lr = 2e-3;
  uint64_t seed = 1;
};
struct MnistResult {
  double test_accuracy = 0;
  double train_accuracy = 0;
  double final_loss = 0;
  double seconds = 0;
};
// A 784-hidden-10 MLP on MNIST-format IDX files.
MnistResult train_mnist(const gpu::ContextPtr& ctx, const MnistOptions& opt, const Progress& progress = {});

}  // namespace surfgrad::demos
