// FFT convolution of a batch of signals with one filter (tile-fftconv, see demos.hpp): fused into
// one tile kernel each way, beside the same computation as four tile kernels (one per step).
//
// The signals [B, L] are read as [2, B/2, L]: signal b and signal b + B/2 travel as the real and
// imaginary parts of one complex signal z = x_b + i·x_(b+B/2). The filter h is real, so its
// circular convolution is complex linear with a real kernel: ifft(fft(z)·fft(h)) = x_b ⊛ h +
// i·(x_(b+B/2) ⊛ h), two convolutions for one complex transform each way (the classic packing of
// two real FFTs into one complex one). The filter's taps are loaded as a 1×L tile from a [1, taps]
// array, so the tile's edge pads it with zeros to L, and its spectrum is computed in the kernel.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "surfgrad/demos.hpp"
#include "surfgrad/tiles.hpp"

namespace surfgrad::demos {

namespace {

using namespace tiles;

// The filter's spectrum H (taps zero-padded to L) broadcast to R rows.
ComplexTile filter_spectrum(const Array& filter, int rows, int length) {
  ComplexTile h = tile_fft(tile_load(filter, {1, length}));
  return {tile_broadcast(h.re, {rows, length}), tile_broadcast(h.im, {rows, length})};
}

// At batch 0 (real parts) and 1 (imaginary parts) of a [2, B/2, L] array, rows of block x.
At part(int batch) { return {Coord::block(0), 0, batch}; }

ComplexTile load_pair(const Array& a, int rows, int length) {
  return {tile_load(a, {rows, length}, part(0)), tile_load(a, {rows, length}, part(1))};
}

void store_pair(const Array& a, const ComplexTile& z) {
  tile_store(a, z.re, part(0));
  tile_store(a, z.im, part(1));
}

Kernel fused_kernel(int rows, int length, int threads) {
  Kernel k("fftconv", threads);
  Array x = k.input("signals"), h = k.input("filter"), y = k.output("out");
  ComplexTile z = tile_fft(load_pair(x, rows, length));
  store_pair(y, tile_ifft(tile_complex_mul(z, filter_spectrum(h, rows, length))));
  return k;
}

// The unfused form: the spectra of the signals and of the filter, the product, the inverse.
struct Steps {
  Kernel signal_fft, filter_fft, product, inverse;
};

Steps step_kernels(int rows, int length, int threads) {
  Steps s{Kernel("fftconv_signal_fft", threads), Kernel("fftconv_filter_fft", threads),
          Kernel("fftconv_product", threads), Kernel("fftconv_ifft", threads)};
  {
    Array x = s.signal_fft.input("signals"), z = s.signal_fft.output("spectrum");
    store_pair(z, tile_fft(load_pair(x, rows, length)));
  }
  {
    Array h = s.filter_fft.input("filter"), hz = s.filter_fft.output("spectrum");
    ComplexTile f = tile_fft(tile_load(h, {1, length}));
    tile_store(hz, f.re, {0, 0, 0});
    tile_store(hz, f.im, {0, 0, 1});
  }
  {
    Array z = s.product.input("spectrum"), hz = s.product.input("filter_spectrum"), y = s.product.output("product");
    ComplexTile f{tile_load(hz, {1, length}, {0, 0, 0}), tile_load(hz, {1, length}, {0, 0, 1})};
    ComplexTile fb{tile_broadcast(f.re, {rows, length}), tile_broadcast(f.im, {rows, length})};
    store_pair(y, tile_complex_mul(load_pair(z, rows, length), fb));
  }
  {
    Array z = s.inverse.input("product"), y = s.inverse.output("out");
    store_pair(y, tile_ifft(load_pair(z, rows, length)));
  }
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

TileFftConvResult run_tile_fftconv(const gpu::ContextPtr& ctx, const TileFftConvOptions& opt) {
  const int L = opt.length;
  if (opt.signals < 2 || opt.signals % 2 != 0)
    throw Error(ErrorKind::Value, "tile-fftconv: " + std::to_string(opt.signals) +
                                      " signals; an even number ≥ 2 (they are transformed in pairs)");
  if (L < 1 || (L & (L - 1)) != 0)
    throw Error(ErrorKind::Value,
                "tile-fftconv: signal length " + std::to_string(L) + "; a power of two (tile_fft's rows)");
  if (opt.taps < 1 || opt.taps > L)
    throw Error(ErrorKind::Value, "tile-fftconv: " + std::to_string(opt.taps) + " filter taps; 1 … the length (" +
                                      std::to_string(L) + ")");
  if (opt.steps < 1) throw Error(ErrorKind::Value, "tile-fftconv: steps ≥ 1");
  if (opt.tile_rows < 0 || opt.threads < 1)
    throw Error(ErrorKind::Value, "tile-fftconv: tile rows ≥ 0 (0: the most that fit) and threads ≥ 1, got tile rows " +
                                      std::to_string(opt.tile_rows) + ", threads " + std::to_string(opt.threads));
  const int64_t B = opt.signals, pairs = B / 2;

  // Pairs per workgroup: as given, or the most (a power of two) whose backward kernel fits.
  uint64_t limit = ctx->limits().max_compute_workgroup_storage_size;
  int rows = opt.tile_rows;
  if (rows == 0) {
    rows = 1;
    for (int r = 2; r <= 64 && r <= pairs; r *= 2)
      if (fused_kernel(r, L, opt.threads).workgroup_bytes(true) <= limit) rows = r;
  }
  Kernel fused = fused_kernel(rows, L, opt.threads);
  Steps steps = step_kernels(rows, L, opt.threads);
  // Refused here, naming the options, rather than by the first launch that does not fit (every
  // kernel runs backward too: the gradients are checked).
  uint64_t need = fused.workgroup_bytes(true);
  for (const Kernel* k : {&steps.signal_fft, &steps.filter_fft, &steps.product, &steps.inverse})
    need = std::max(need, k->workgroup_bytes(true));
  if (need > limit)
    throw Error(ErrorKind::LimitExceeded,
                "tile-fftconv: signal length " + std::to_string(L) + " with " + std::to_string(rows) +
                    " signal pair(s) per workgroup (tile rows) needs " + std::to_string(need) +
                    " bytes of workgroup memory, over this adapter's limit of " + std::to_string(limit) +
                    " (maxComputeWorkgroupStorageSize): use a shorter length or fewer tile rows");
  const Grid grid{uint32_t((pairs + rows - 1) / rows), 1, 1};

  std::mt19937_64 gen(opt.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> xs(size_t(B * L)), hs(size_t(opt.taps)), gs(size_t(B * L));
  for (float& v : xs) v = normal(gen);
  for (size_t j = 0; j < hs.size(); ++j) hs[j] = normal(gen) * std::exp(-double(j) / (0.25 * opt.taps + 1));
  for (float& v : gs) v = normal(gen);
  Tensor signals = Tensor::from_host(ctx, xs.data(), {B, L}, DType::f32);
  Tensor filter = Tensor::from_host(ctx, hs.data(), {1, opt.taps}, DType::f32);
  Tensor upstream = Tensor::from_host(ctx, gs.data(), {B, L}, DType::f32);  // ∂loss/∂y for backward

  auto fused_forward = [&](const Var& x, const Var& h) {
    return fused({x.reshape({2, pairs, L}), h}, {2, pairs, L}, grid).reshape({B, L});
  };
  auto unfused_forward = [&](const Var& x, const Var& h) {
    Var z = steps.signal_fft({x.reshape({2, pairs, L})}, {2, pairs, L}, grid);
    Var hz = steps.filter_fft({h}, {2, 1, L}, {1, 1, 1});
    Var y = steps.product({z, hz}, {2, pairs, L}, grid);
    return steps.inverse({y}, {2, pairs, L}, grid).reshape({B, L});
  };

  TileFftConvResult result;
  result.tile_rows = rows;
  result.workgroup_bytes = fused.workgroup_bytes(true);
  result.forward_wgsl = fused.forward_wgsl();
  result.backward_wgsl = fused.backward_wgsl();

  // Correctness: both forms against a direct float64 circular convolution on a few signals, and
  // their gradients against each other.
  std::vector<std::vector<float>> outputs, grads_x, grads_h;
  for (bool is_fused : {true, false}) {
    Var x = Var::param(signals), h = Var::param(filter);
    Var y = is_fused ? fused_forward(x, h) : unfused_forward(x, h);
    y.backward(upstream);
    outputs.push_back(y.value().to_vector<float>());
    grads_x.push_back(x.grad().to_vector<float>());
    grads_h.push_back(h.grad().to_vector<float>());
  }
  const int64_t checked[] = {0, 1, pairs - 1, pairs, B - 1};
  double scale = 0;
  for (int64_t b : checked)
    for (int i = 0; i < L; ++i) {
      double want = 0;
      for (int j = 0; j < opt.taps; ++j) want += double(hs[size_t(j)]) * xs[size_t(b * L + (i - j + L) % L)];
      scale = std::max(scale, std::abs(want));
      result.max_error = std::max(result.max_error, std::abs(outputs[0][size_t(b * L + i)] - want));
      result.unfused_max_error = std::max(result.unfused_max_error, std::abs(outputs[1][size_t(b * L + i)] - want));
    }
  result.output_scale = scale;
  for (size_t i = 0; i < grads_x[0].size(); ++i)
    result.grad_difference = std::max(result.grad_difference, double(std::abs(grads_x[0][i] - grads_x[1][i])));
  for (size_t i = 0; i < grads_h[0].size(); ++i)
    result.grad_difference = std::max(result.grad_difference, double(std::abs(grads_h[0][i] - grads_h[1][i])));

  // Global memory traffic per step, as a model: each kernel reads its inputs once and writes its
  // output once, each output is zero-filled first, atomic adds (gradients) read and write; the
  // backward kernels replay the forward, so they read the forward's inputs again.
  const double S = double(B) * L * 4, F = double(opt.taps) * 4, H = 2.0 * L * 4;
  TileFftConvTiming& fu = result.fused;
  TileFftConvTiming& un = result.unfused;
  fu.forward_bytes = uint64_t(S + F + 2 * S);
  un.forward_bytes = uint64_t((S + 2 * S) + (F + 2 * H) + (S + H + 2 * S) + (S + 2 * S));
  // fused backward: x, h and dy read; dx filled and added to; dh (one row per block) added to.
  fu.train_bytes = fu.forward_bytes + uint64_t(3 * S + F + 3 * S + 2 * F * grid.x);
  un.train_bytes = un.forward_bytes +
                   uint64_t((2 * S + 3 * S) + (2 * S + H + 3 * S + 2 * H * grid.x) + (F + H + 3 * F) + (2 * S + 3 * S));

  for (bool is_fused : {true, false}) {
    TileFftConvTiming& t = is_fused ? fu : un;
    auto timed = [&](bool train, double& ms, uint64_t& dispatches) {
      auto once = [&] {
        Var x = Var::param(signals), h = Var::param(filter);  // fresh leaves: no gradient accumulation
        if (train) {
          (is_fused ? fused_forward(x, h) : unfused_forward(x, h)).backward(upstream);
        } else {
          NoGradGuard no_grad;
          is_fused ? fused_forward(x, h) : unfused_forward(x, h);
        }
      };
      once();  // compiles
      ctx->sync();
      uint64_t before = ctx->pending_dispatches();
      once();
      dispatches = ctx->pending_dispatches() - before;
      ctx->sync();
      // Five groups of `steps` steps, each group ending in a sync: the median group's ms per step.
      std::vector<double> per_step;
      for (int group = 0; group < 5; ++group) {
        auto t0 = std::chrono::steady_clock::now();
        for (int s = 0; s < opt.steps; ++s) once();
        ctx->sync();
        per_step.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                           opt.steps);
      }
      ms = median(per_step);
    };
    timed(false, t.forward_ms, t.forward_dispatches);
    timed(true, t.train_ms, t.train_dispatches);
  }
  return result;
}

}  // namespace surfgrad::demos
