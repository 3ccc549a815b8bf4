// End-to-end training demos, callable from the CLI (`surfgrad demo moons|mnist`) and tests.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "surfgrad/autograd.hpp"
#include "surfgrad/gpu.hpp"
#include "surfgrad/reference.hpp"
#include "surfgrad/tiles.hpp"

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
// network and its loss, forward and backward, is one tile kernel each way (surfgrad/tiles.hpp),
// its weights and biases packed into one parameter array (f32, kept by Adam; the kernels may
// read an f16 copy); unfused: the same network and loss on ordinary ops, f32.
struct TileMlpOptions {
  int side = 64;  // the image is side × side pixels, all of them in every step
  int hidden = 64;
  int layers = 3;
  // Pixels per workgroup of the fused kernel, and its workgroup size; 0: chosen for the adapter
  // (16 pixels and 512 threads where workgroup memory holds the backward kernel's 16 rows, else
  // 8 and 128: measured on the H200, BENCHMARKS.md).
  int tile_rows = 0;
  int threads = 0;
  int steps = 500;
  double lr = 5e-3;
  uint64_t seed = 1;
  bool fused = true;
  // The fused kernels' weights: "f32", "f16" (an f16 copy of the f32 parameters, made each step:
  // mixed precision, the gradient and Adam in f32), or "auto": f16 where the adapter has
  // shader-f16. The unfused form is f32 throughout.
  std::string weights = "auto";
  // The fused kernels stage each weight matrix in workgroup memory where it fits (see
  // tiles::Kernel::set_weight_staging); false reads the weights in global memory.
  bool stage_weights = true;
  // The fused step's loss and gradient from one kernel (tiles::Kernel::launch_forward_backward:
  // the backward kernel's replay of the forward writes the loss); false: the tile kernel as an
  // autograd op, its forward kernel and then its backward kernel.
  bool one_kernel = true;
};
struct TileMlpLoss {
  int step = 0;  // 1-based: the loss computed by this step, before its update
  double loss = 0;
};
struct TileMlpResult {
  double first_loss = 0;  // at the initial parameters (the same for both forms)
  double final_loss = 0;
  std::vector<TileMlpLoss> losses;  // step 1, then the last step of each timed group
  // ∂loss/∂parameters at step 1 (the initial parameters) in the fused form's packed layout
  // [rows, hidden] (per layer its weight rows, then its bias row), for both forms: they must agree.
  std::vector<float> first_gradient;
  // The fitted image after training, side × side RGB in [0, 1], row 0 at v = −1 (the bottom):
  // callers that show it write it (the CLI as a PNG, the browser as it likes); no file I/O here.
  std::vector<float> fitted;
  double psnr = 0;         // of the fitted image against the target, dB
  double ms_per_step = 0;  // wall clock, median over groups of steps
  uint64_t dispatches_per_step = 0;
  uint64_t workgroup_bytes = 0;  // the fused backward kernel's (0 unfused)
  std::string weights = "f32";   // the fused kernels' weights as run (f32 unfused)
  // The fused kernels' generated code (backward: the one-kernel step's, with one_kernel).
  std::string forward_wgsl, backward_wgsl;
  int tile_rows = 0, threads = 0;  // the fused kernels' launch shape as run
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
// Batched SPD solves, the shape of Warp's forward-dynamics example: for each of B systems,
// x = H⁻¹·f with H = Jᵀ·M·J + diag(R) — J [B, m, n] (m constraint rows, n degrees of freedom),
// M [B, m, m] symmetric positive definite, R [B, 1, n] positive (the regularisation, e.g. joint
// armature), f [B, n, rhs]. Fused: one tile kernel, one workgroup per system (grid B), forming H,
// factoring it and solving in workgroup memory; unfused: the same maths as four tile kernels
// (JᵀM; H = (JᵀM)·J + diag R; L = chol H; x = (L·Lᵀ)⁻¹·f), each reading and writing global memory,
// as Warp's Featherstone integrator launches them. Both are one Var each, so gradients reach J, M,
// R and f.
struct TileSpdShape {
  int n = 32;        // unknowns per system
  int m = 32;        // rows of J (m ≥ n makes JᵀMJ positive definite for J of full rank)
  int rhs = 1;       // columns of f
  int threads = 64;  // workgroup size of every kernel
};
struct SpdSystems {
  Var j, m, r, f;  // [B, m, n], [B, m, m], [B, 1, n], [B, n, rhs]
};
// Well-conditioned random systems (M = G·Gᵀ/m + ½·I, R in [0.1, 1], J and f in [−1, 1]), the same
// for a seed; `requires_grad` makes them parameters.
SpdSystems make_spd_systems(const gpu::ContextPtr& ctx, int64_t systems, const TileSpdShape& shape, uint64_t seed,
                            bool requires_grad = false);

class SpdSolver {
 public:
  // Builds the kernels (checked against the shape; launches check the adapter's limits).
  SpdSolver(const gpu::ContextPtr& ctx, const TileSpdShape& shape);
  const TileSpdShape& shape() const { return shape_; }
  // J and M side by side, [B, m, n + m]: the fused kernel's input. One array for both keeps its
  // backward kernel at 8 bindings (inputs, the output's gradient, the inputs' gradients); one
  // concat, differentiable, where the caller holds them apart.
  static Var pack(const Var& j, const Var& m);
  static HostArray pack(const HostArray& j, const HostArray& m);
  // x [B, n, rhs]. The shapes are checked (an error naming them) before any GPU work.
  Var fused(const Var& jm, const Var& r, const Var& f) const;
  Var fused(const SpdSystems& s) const { return fused(pack(s.j, s.m), s.r, s.f); }
  Var unfused(const SpdSystems& s) const;
  // The fused kernel run in float64 on the host (tiles::Kernel's reference).
  HostArray fused_reference(const HostArray& jm, const HostArray& r, const HostArray& f) const;
  HostArray unfused_reference(const HostArray& j, const HostArray& m, const HostArray& r, const HostArray& f) const;
  const tiles::Kernel& fused_kernel() const { return fused_; }
  // The most workgroup memory any of the unfused form's four kernels needs.
  uint64_t unfused_workgroup_bytes(bool backward) const;
  // Global memory traffic of one solve by each form, forward or forward + backward: each tensor a
  // kernel binds read (or written) once, outputs and gradients also zero-filled, atomically added
  // gradients read and written; and the kernel launches (fills not counted here).
  struct Traffic {
    uint64_t bytes = 0, kernels = 0;
  };
  Traffic traffic(int64_t systems, bool fused, bool backward) const;

 private:
  void check(const Shape& jm, const Shape& r, const Shape& f, int64_t j_cols) const;
  TileSpdShape shape_;
  Tensor eye_;
  HostArray eye_host_;
  tiles::Kernel fused_, jtm_, h_, cholesky_, solve_;
};

struct TileSpdOptions {
  int64_t systems = 1024;
  TileSpdShape shape;
  int steps = 10;   // solves per timed group (one sync at its end)
  int repeats = 7;  // timed groups; the median is reported
  uint64_t seed = 1;
};
struct TileSpdRun {
  std::string form;  // "fused" or "unfused"
  bool backward = false;
  double ms = 0;            // per solve (forward, or forward + backward), median over the groups
  uint64_t dispatches = 0;  // per solve, counted (zero fills included)
  uint64_t kernels = 0;     // of which tile kernel launches
  uint64_t bytes = 0;       // SpdSolver::traffic
};
struct TileSpdResult {
  double residual = 0;            // max over systems of ‖H·x − f‖ / ‖f‖, H in float64, x the fused GPU solve
  double unfused_difference = 0;  // max |x_fused − x_unfused| / max |x|
  // max |∂fused − ∂unfused| / max |∂unfused| over the gradients of J, M, R and f (one output
  // gradient); −1 where a backward kernel does not fit the adapter's workgroup memory.
  double gradient_difference = -1;
  uint64_t workgroup_bytes_forward = 0, workgroup_bytes_backward = 0;  // the fused kernel's
  uint64_t unfused_workgroup_bytes_backward = 0;                       // the largest unfused one's
  std::vector<TileSpdRun> runs;  // fused, fused + backward, unfused, unfused + backward
  std::string note;              // why runs are missing (a backward kernel over the adapter's workgroup memory)
  std::string forward_wgsl, backward_wgsl;
};
// Solves opt.systems random systems by both forms, checks them, and times each.
TileSpdResult run_tile_spd(const gpu::ContextPtr& ctx, const TileSpdOptions& opt, const Progress& progress = {});

}  // namespace surfgrad::demos
