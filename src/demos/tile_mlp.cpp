// An MLP that learns an image (coordinates → colour), fused into one tile kernel forward and one
// backward, beside the same network on ordinary ops (see demos.hpp).
//
// The parameters of the fused network are one array [rows, hidden]: per layer its weight rows
// (fan-in of them) and then its bias row; the output layer uses the first 3 columns. One array
// keeps the backward kernel's bindings at 5 (coordinates, targets, parameters, the loss's
// gradient, the parameters' gradient) and the optimizer at one fused step. The weights are read
// in place from global memory (every block shares them; a 64×64 f32 matrix alone is 16 KiB of
// the 16–48 KiB of workgroup memory adapters have); only the activations of the block's pixels
// are tiles.
//
// The loss is in the kernel too, as in Warp's tile MLP: each block sums its pixels' squared
// errors, scales by 1/(3N) and adds the sum into a one-word output. A training step is then a
// few dispatches (zeroing, the f16 copy, forward, backward, Adam) where the loss on ordinary ops
// took nine more. A second kernel of the same network stores the image itself, for the result.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "surfgrad/demos.hpp"
#include "surfgrad/optim.hpp"
#include "surfgrad/tiles.hpp"

namespace surfgrad::demos {

namespace {

double smooth_disc(double u, double v, double cu, double cv, double radius) {
  double d = std::sqrt((u - cu) * (u - cu) + (v - cv) * (v - cv));
  return std::clamp((radius - d) / 0.03 + 0.5, 0.0, 1.0);
}

// The image to learn: a colour gradient with two discs and a ring (soft-edged, so an MLP of
// this size can approach it).
void target_colour(double u, double v, float rgb[3]) {
  double r = 0.15 + 0.6 * u, g = 0.2 + 0.5 * v, b = 0.55 - 0.3 * u * v;
  double sun = smooth_disc(u, v, 0.32, 0.35, 0.17), lake = smooth_disc(u, v, 0.7, 0.68, 0.2);
  double ring = smooth_disc(u, v, 0.62, 0.3, 0.12) * (1 - smooth_disc(u, v, 0.62, 0.3, 0.07));
  r = r * (1 - sun) + 0.98 * sun, g = g * (1 - sun) + 0.8 * sun, b = b * (1 - sun) + 0.15 * sun;
  r = r * (1 - lake) + 0.1 * lake, g = g * (1 - lake) + 0.35 * lake, b = b * (1 - lake) + 0.85 * lake;
  r = r * (1 - ring) + 0.9 * ring, g = g * (1 - ring) + 0.2 * ring, b = b * (1 - ring) + 0.5 * ring;
  rgb[0] = float(r), rgb[1] = float(g), rgb[2] = float(b);
}

struct Layer {
  int fan_in, fan_out, row;  // its weights are rows row … row + fan_in − 1, the bias row after
};

std::vector<Layer> layout(const TileMlpOptions& opt) {
  std::vector<Layer> layers;
  int row = 0, fan_in = 2;
  for (int l = 0; l <= opt.layers; ++l) {
    int fan_out = l == opt.layers ? 3 : opt.hidden;
    layers.push_back({fan_in, fan_out, row});
    row += fan_in + 1;
    fan_in = fan_out;
  }
  return layers;
}

// The network on one block of pixels: coordinates → colours (a tile_rows × 3 tile).
tiles::Tile network(const TileMlpOptions& opt, const std::vector<Layer>& layers, const tiles::Array& coords,
                    const tiles::Array& params) {
  using namespace tiles;
  Tile h = tile_load(coords, {opt.tile_rows, 2}, {Coord::block(0), 0});
  for (size_t l = 0; l < layers.size(); ++l) {
    const Layer& L = layers[l];
    Tile z = tile_matmul(h, params, L.fan_out, L.row);
    Tile bias = tile_load(params, {1, L.fan_out}, {Coord::element(L.row + L.fan_in), 0});
    z = z + tile_broadcast(bias, {opt.tile_rows, L.fan_out});
    h = tile_map(l + 1 == layers.size() ? Unary::sigmoid : Unary::relu, z);
  }
  return h;
}

// The image: rgb [N, 3].
tiles::Kernel image_kernel(const TileMlpOptions& opt, const std::vector<Layer>& layers, DType weights) {
  using namespace tiles;
  Kernel k("tile_mlp", opt.threads);
  Array coords = k.input("coords", /*differentiable=*/false), params = k.input("params", true, weights);
  tile_store(k.output("rgb"), network(opt, layers, coords, params), {Coord::block(0), 0});
  return k;
}

// The loss: mean over the N×3 values of (network − target)², into a [1, 1] output. `target` is
// [N, 4]: the colour, then 1 (a pixel that exists). Past the last pixel a block's tile reads
// zeros, the network's output there is not zero, and the mask column removes those rows; it is
// generated only when N is not a multiple of the tile's rows.
tiles::Kernel loss_kernel(const TileMlpOptions& opt, const std::vector<Layer>& layers, DType weights, int64_t n) {
  using namespace tiles;
  Kernel k("tile_mlp_loss", opt.threads);
  Array coords = k.input("coords", /*differentiable=*/false), target = k.input("target", /*differentiable=*/false),
        params = k.input("params", true, weights);
  Tile y = network(opt, layers, coords, params);
  Tile t = tile_load(target, {opt.tile_rows, 4}, {Coord::block(0), 0});
  Tile d = y - tile_view(t, {opt.tile_rows, 3});
  if (n % opt.tile_rows != 0) d = d * tile_broadcast(tile_view(t, {opt.tile_rows, 1}, 0, 3), {opt.tile_rows, 3});
  tile_atomic_add(k.output("loss"), tile_sum(d * d) * (1.0 / double(3 * n)));
  return k;
}

// "auto" → f16 where the adapter has it.
DType weight_dtype(const gpu::Context& ctx, const std::string& weights) {
  if (weights == "f32") return DType::f32;
  if (weights == "f16") {
    if (!ctx.features().shader_f16)
      throw Error(ErrorKind::Unsupported, "tile-mlp: weights f16, but this adapter (" + ctx.info().name +
                                              ") has no shader-f16; use weights f32 or auto");
    return DType::f16;
  }
  if (weights == "auto") return ctx.features().shader_f16 ? DType::f16 : DType::f32;
  throw Error(ErrorKind::Value, "tile-mlp: weights '" + weights + "'; use f32, f16 or auto");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

TileMlpResult train_tile_mlp(const gpu::ContextPtr& ctx, const TileMlpOptions& options, const Progress& progress) {
  TileMlpOptions opt = options;
  auto at_least = [](const char* name, int value, int least) {
    if (value < least)
      throw Error(ErrorKind::Value, std::string("tile-mlp: ") + name + " is " + std::to_string(value) +
                                        "; it must be ≥ " + std::to_string(least));
  };
  at_least("side", opt.side, 2);
  at_least("hidden", opt.hidden, 3);  // the output layer uses 3 of the parameter array's columns
  at_least("layers", opt.layers, 1);
  if (opt.tile_rows < 0) at_least("tile rows", opt.tile_rows, 0);
  if (opt.threads < 0) at_least("threads", opt.threads, 0);
  if (opt.tile_rows == 0 || opt.threads == 0) {
    // The larger block where the backward kernel's tiles fit (weights staged or not): its
    // weight gradients take half the atomic adds, and 512 threads keep every SM busy.
    const gpu::Limits& L = ctx->limits();
    TileMlpOptions big = opt;
    big.tile_rows = 16;
    big.threads =
        int(std::min<uint32_t>(512, std::min(L.max_compute_invocations_per_workgroup, L.max_compute_workgroup_size_x)));
    bool fits = loss_kernel(big, layout(big), DType::f32, int64_t(opt.side) * opt.side).workgroup_bytes(true) <=
                L.max_compute_workgroup_storage_size;
    if (opt.tile_rows == 0) opt.tile_rows = fits ? 16 : 8;
    if (opt.threads == 0) opt.threads = fits ? big.threads : std::min(128, big.threads);
  }
  at_least("steps", opt.steps, 2);  // the first two steps are untimed (compile, count dispatches)
  const DType weights = opt.fused ? weight_dtype(*ctx, opt.weights) : DType::f32;
  const int64_t n = int64_t(opt.side) * opt.side;
  std::vector<float> uv(size_t(n) * 2), colour(size_t(n) * 3);
  for (int y = 0; y < opt.side; ++y)
    for (int x = 0; x < opt.side; ++x) {
      size_t i = size_t(y) * size_t(opt.side) + size_t(x);
      double u = (x + 0.5) / opt.side, v = (y + 0.5) / opt.side;
      uv[2 * i] = float(2 * u - 1), uv[2 * i + 1] = float(2 * v - 1);
      target_colour(u, v, &colour[3 * i]);
    }
  Tensor coords = Tensor::from_host(ctx, uv.data(), {n, 2}, DType::f32);
  Tensor target = Tensor::from_host(ctx, colour.data(), {n, 3}, DType::f32);

  // Kaiming-uniform weights, zero biases; the same numbers for both forms.
  std::vector<Layer> layers = layout(opt);
  int rows = layers.back().row + layers.back().fan_in + 1;
  std::vector<float> packed(size_t(rows) * size_t(opt.hidden), 0.0f);
  std::mt19937_64 gen(opt.seed);
  for (const Layer& L : layers) {
    std::uniform_real_distribution<double> w(-std::sqrt(6.0 / L.fan_in), std::sqrt(6.0 / L.fan_in));
    for (int i = 0; i < L.fan_in; ++i)
      for (int j = 0; j < L.fan_out; ++j) packed[size_t(L.row + i) * size_t(opt.hidden) + size_t(j)] = float(w(gen));
  }

  TileMlpResult result;
  result.weights = dtype_name(weights);
  result.tile_rows = opt.tile_rows;
  result.threads = opt.threads;
  std::vector<Var> params;
  std::function<Var()> forward;  // the image [N, 3]
  std::function<Var()> loss_of;  // the loss [1, 1]
  // The fused one-kernel step: the loss, its gradient added into the parameters' (no tape).
  std::function<Var()> loss_and_gradient;
  tiles::Kernel kernel = image_kernel(opt, layers, weights), fused_loss = loss_kernel(opt, layers, weights, n);
  kernel.set_weight_staging(opt.stage_weights);
  fused_loss.set_weight_staging(opt.stage_weights);
  if (opt.fused) {
    // Refused here, naming the options, rather than by the first launch (the backward kernel holds
    // every layer's activations of a block).
    uint64_t need = fused_loss.workgroup_bytes(true), limit = ctx->limits().max_compute_workgroup_storage_size;
    if (need > limit)
      throw Error(ErrorKind::LimitExceeded,
                  "tile-mlp: hidden " + std::to_string(opt.hidden) + ", layers " + std::to_string(opt.layers) +
                      " and tile rows " + std::to_string(opt.tile_rows) + " need " + std::to_string(need) +
                      " bytes of workgroup memory (the backward kernel), over this adapter's limit of " +
                      std::to_string(limit) +
                      " (maxComputeWorkgroupStorageSize): use fewer tile rows or a smaller "
                      "hidden width");
    params.push_back(Var::param(Tensor::from_host(ctx, packed.data(), {rows, opt.hidden}, DType::f32)));
    std::vector<float> masked(size_t(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
      for (int c = 0; c < 3; ++c) masked[size_t(4 * i + c)] = colour[size_t(3 * i + c)];
      masked[size_t(4 * i + 3)] = 1.0f;
    }
    Tensor target4 = Tensor::from_host(ctx, masked.data(), {n, 4}, DType::f32);
    tiles::Grid grid{uint32_t((n + opt.tile_rows - 1) / opt.tile_rows), 1, 1};
    // The kernels' copy of the weights: the f32 parameters themselves, or cast to f16 (the cast's
    // backward passes the kernel's f32 gradient through to them).
    auto weights_var = [&params, weights] { return weights == DType::f32 ? params[0] : params[0].cast(DType::f16); };
    forward = [&, grid, weights_var] { return kernel({Var(coords), weights_var()}, {n, 3}, grid); };
    loss_of = [&, grid, target4, weights_var] {
      return fused_loss({Var(coords), Var(target4), weights_var()}, {1, 1}, grid);
    };
    if (opt.one_kernel) {
      Tensor seed = Tensor::ones(ctx, {1, 1});  // ∂loss/∂loss, made once
      loss_and_gradient = [&, grid, target4, seed] {
        Tensor w = weights == DType::f32 ? params[0].value() : params[0].value().cast(DType::f16);
        Tensor loss = Tensor::zeros(ctx, {1, 1}), grad = Tensor::zeros(ctx, params[0].shape());
        fused_loss.launch_forward_backward({coords, target4, w}, {loss}, {seed}, {grad}, grid);
        params[0].accumulate_grad(grad);
        return Var(loss);
      };
    }
    bool staged = fused_loss.stages_weights(*ctx, true);
    result.workgroup_bytes = fused_loss.workgroup_bytes(true) + (staged ? fused_loss.weight_stage_bytes() : 0);
    result.forward_wgsl =
        fused_loss.forward_wgsl(ctx->features().float32_atomics, fused_loss.stages_weights(*ctx, false));
    result.backward_wgsl = opt.one_kernel ? fused_loss.forward_backward_wgsl(ctx->features().float32_atomics, staged)
                                          : fused_loss.backward_wgsl(ctx->features().float32_atomics, staged);
  } else {
    for (const Layer& L : layers) {
      std::vector<float> w(size_t(L.fan_in) * size_t(L.fan_out)), b(size_t(L.fan_out));
      for (int i = 0; i < L.fan_in; ++i)
        for (int j = 0; j < L.fan_out; ++j)
          w[size_t(i) * size_t(L.fan_out) + size_t(j)] = packed[size_t(L.row + i) * size_t(opt.hidden) + size_t(j)];
      for (int j = 0; j < L.fan_out; ++j)
        b[size_t(j)] = packed[size_t(L.row + L.fan_in) * size_t(opt.hidden) + size_t(j)];
      params.push_back(Var::param(Tensor::from_host(ctx, w.data(), {L.fan_in, L.fan_out}, DType::f32)));
      params.push_back(Var::param(Tensor::from_host(ctx, b.data(), {1, L.fan_out}, DType::f32)));
    }
    forward = [&] {
      Var h(coords);
      for (size_t l = 0; l < layers.size(); ++l) {
        h = h.matmul(params[2 * l]) + params[2 * l + 1];
        h = l + 1 == layers.size() ? h.sigmoid() : h.relu();
      }
      return h;
    };
    loss_of = [&] {
      Var diff = forward() - Var(target);
      return (diff * diff).mean();
    };
  }
  // The parameters' gradient in the packed layout, whichever form holds them.
  auto packed_gradient = [&] {
    if (opt.fused) return params[0].grad().to_vector<float>();
    std::vector<float> g(packed.size(), 0.0f);
    for (size_t l = 0; l < layers.size(); ++l) {
      const Layer& L = layers[l];
      std::vector<float> w = params[2 * l].grad().to_vector<float>(), b = params[2 * l + 1].grad().to_vector<float>();
      for (int i = 0; i <= L.fan_in; ++i)  // the weight rows, then the bias row
        for (int j = 0; j < L.fan_out; ++j)
          g[size_t(L.row + i) * size_t(opt.hidden) + size_t(j)] =
              i < L.fan_in ? w[size_t(i) * size_t(L.fan_out) + size_t(j)] : b[size_t(j)];
    }
    return g;
  };
  optim::Adam adam(params, opt.lr);
  auto step = [&](bool keep_gradient = false) {
    Var loss;
    if (loss_and_gradient) {
      adam.zero_grad();
      loss = loss_and_gradient();
    } else {
      loss = loss_of();
      adam.zero_grad();
      loss.backward();
    }
    if (keep_gradient) result.first_gradient = packed_gradient();
    adam.step();
    return loss;
  };

  ctx->sync();
  Var loss = step(/*keep_gradient=*/true);                 // also compiles the kernels
  result.first_loss = loss.value().to_vector<float>()[0];  // at the initial parameters
  result.losses.push_back({1, result.first_loss});
  ctx->flush();
  uint64_t before = ctx->pending_dispatches();
  loss = step();
  result.dispatches_per_step = ctx->pending_dispatches() - before;
  std::vector<double> per_step;
  const int group = std::max(1, std::min(50, opt.steps / 10));
  for (int done = 2; done < opt.steps;) {
    int count = std::min(group, opt.steps - done);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) loss = step();
    double value = loss.value().to_vector<float>()[0];  // the sync point
    per_step.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                       count);
    done += count;
    result.final_loss = value;
    result.losses.push_back({done, value});
    if (progress) {
      char line[160];
      std::snprintf(line, sizeof line, "step %d/%d  loss %.5f  %.3f ms/step", done, opt.steps, value, per_step.back());
      progress(line, done >= opt.steps);
    }
  }
  if (per_step.empty()) {
    result.final_loss = loss.value().to_vector<float>()[0];
    result.losses.push_back({opt.steps, result.final_loss});
  }
  result.ms_per_step = per_step.empty() ? 0 : median(per_step);

  {
    NoGradGuard no_grad;
    result.fitted = forward().value().to_vector<float>();
  }
  double se = 0;
  for (size_t i = 0; i < result.fitted.size(); ++i)
    se += double(result.fitted[i] - colour[i]) * (result.fitted[i] - colour[i]);
  result.psnr = 10 * std::log10(1.0 / std::max(se / double(result.fitted.size()), 1e-12));
  return result;
}

}  // namespace surfgrad::demos
