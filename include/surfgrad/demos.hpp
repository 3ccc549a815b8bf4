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

// An MLP that learns an image: pixel coordinates (u, v) → colour, `layers` hidden layers of
// width `hidden` with ReLU, a sigmoid output, MSE over every pixel, Adam. Fused: the whole
// network, forward and backward, is one tile kernel each way (surfgrad/tiles.hpp), its weights
// and biases packed into one parameter array; unfused: the same network on ordinary ops.
struct TileMlpOptions {
  int side = 64;  // the image is side × side pixels, all of them in every step
  int hidden = 64;
  int layers = 3;
  int tile_rows = 8;  // pixels per workgroup of the fused kernel
  int threads = 128;  // its workgroup size
  int steps = 500;
  double lr = 5e-3;
  uint64_t seed = 1;
  bool fused = true;
  std::string png;  // the fitted image; empty = none
};
struct TileMlpResult {
  double first_loss = 0;  // at the initial parameters (the same for both forms)
  double final_loss = 0;
  double psnr = 0;         // of the fitted image against the target, dB
  double ms_per_step = 0;  // wall clock, median over groups of steps
  uint64_t dispatches_per_step = 0;
  uint64_t workgroup_bytes = 0;             // the fused backward kernel's (0 unfused)
  std::string forward_wgsl, backward_wgsl;  // the fused kernels' generated code
};
TileMlpResult train_tile_mlp(const gpu::ContextPtr& ctx, const TileMlpOptions& opt, const Progress& progress = {});

}  // namespace surfgrad::demos
