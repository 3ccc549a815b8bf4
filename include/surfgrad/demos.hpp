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

// FFT convolution (tile-fftconv): `signals` real signals of `length` (a power of two) circularly
// convolved with one real filter of `taps` ≤ length taps (zero-padded to the length), y_b[i] =
// Σ_j h[j]·x_b[(i − j) mod length]. Fused: one tile kernel each way (load, fft, multiply by the
// filter's spectrum computed in the same kernel, ifft, store; two real signals per complex
// transform); unfused: the same steps as four tile kernels. Both enter autograd (gradients with
// respect to the signals and the filter); forward and forward + backward are timed.
struct TileFftConvOptions {
  int signals = 4096;  // even: transformed in pairs
  int length = 256;
  int taps = 64;
  int tile_rows = 0;  // signal pairs per workgroup; 0: the most whose backward kernel fits
  int threads = 256;
  int steps = 20;  // per timed group (five groups, median)
  uint64_t seed = 1;
};
struct TileFftConvTiming {
  double forward_ms = 0, train_ms = 0;  // forward; forward + backward (wall clock per step)
  uint64_t forward_dispatches = 0, train_dispatches = 0;
  uint64_t forward_bytes = 0, train_bytes = 0;  // global memory traffic per step (a model)
};
struct TileFftConvResult {
  // max |y − y_float64| over a few signals (direct convolution), and the output's scale there.
  double max_error = 0, unfused_max_error = 0, output_scale = 0;
  double grad_difference = 0;  // max |fused − unfused| over both gradients
  int tile_rows = 0;
  uint64_t workgroup_bytes = 0;  // the fused backward kernel's
  TileFftConvTiming fused, unfused;
  std::string forward_wgsl, backward_wgsl;
};
TileFftConvResult run_tile_fftconv(const gpu::ContextPtr& ctx, const TileFftConvOptions& opt);

}  // namespace surfgrad::demos
