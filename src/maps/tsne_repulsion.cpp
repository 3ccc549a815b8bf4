// t-SNE's repulsion, Σ_j q_ij²·(y_i − y_j) and Σ_j q_ij for every point, two ways:
// - exact (tsne_repulsion.wgsl): all pairs, O(N²);
// - FFT-accelerated interpolation (after Linderman et al.'s FIt-SNE, as in openTSNE): unit charges
//   spread onto a uniform G×G grid with cubic Lagrange weights, convolved by 2-D FFTs of size 2G
//   with the force kernel and with q (fft_lines.hpp), and interpolated back: O(N + G² log G). Fourteen
//   dispatches, three of them skipped on the GPU while the kernels' transforms still hold; no
//   readback.
#include "maps/tsne_repulsion.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "surfgrad/reference.hpp"

namespace surfgrad {

namespace {

kernels::Program program(const gpu::ContextPtr& ctx, const char* file) { return kernels::Program::file(ctx, file); }

}  // namespace

int TsneRepulsion::max_grid_nodes(const gpu::Context& ctx) {
  // A line of M = 2G complex f32 values must fit in workgroup memory, and five M×M arrays of
  // them in one binding.
  auto fits = [&](uint64_t g) {
    return 2 * g <= FftLines::max_length(ctx) &&
           5 * (2 * g) * (2 * g) * 8 <= ctx.limits().max_storage_buffer_binding_size;
  };
  int best = 16;
  for (int g = 16; g <= 8192; g *= 2)
    for (int s : {g, 3 * g / 2})
      if (fits(uint64_t(s))) best = std::max(best, s);
  return best;
}

int TsneRepulsion::grid_nodes_for(double extent, double spacing, int max_nodes) {
  // Sizes 2^a and 3·2^(a−1) (the FFTs take 2G = 2^(a+1) and 3·2^a): consecutive sizes differ by
  // 1.5× or 1.33×, not 2×, so the grid wastes less of its area.
  for (int g = 32;; g *= 2)
    for (int s : {g, 3 * g / 2})
      if (s >= max_nodes || double(s - 4) * spacing >= extent) return std::min(s, max_nodes);
}

// The pipelines are looked up once, at the first call of their method, not per dispatch.
TsneRepulsion::TsneRepulsion(gpu::ContextPtr ctx, Spread spread) : ctx_(std::move(ctx)), spread_mode_(spread) {}

bool TsneRepulsion::sorted_spread(const gpu::Context& ctx, Spread spread) {
  if (spread == Spread::Auto) {
    const char* env = std::getenv("SURFGRAD_TSNE_SPREAD");
    if (env && *env) {
      if (std::strcmp(env, "sorted") == 0)
        spread = Spread::Sorted;
      else if (std::strcmp(env, "plain") == 0)
        spread = Spread::Plain;
      else
        throw Error(ErrorKind::Value, std::string("SURFGRAD_TSNE_SPREAD=") + env +
                                          ": give sorted or plain (or leave it unset for the adapter's default)");
    }
  }
  if (spread == Spread::Sorted && (!ctx.features().subgroups || ctx.features().subgroup_max_size > 128))
    throw Error(ErrorKind::Unsupported,
                "tsne: the sorted FFT spread needs subgroups of at most 128 invocations, "
                "which " +
                    ctx.info().name + " does not offer; use the plain spread (SURFGRAD_TSNE_SPREAD=plain)");
  if (spread != Spread::Auto) return spread == Spread::Sorted;
  // (Runs of one cell span at most 128 lanes: the kernel's steps and its 16-bit halves' sums go
  // that far, and WGSL's subgroups are at most 128 wide.)
  return !ctx.info().is_cpu && ctx.features().subgroups && ctx.features().subgroup_max_size <= 128;
}

int TsneRepulsion::order_every() {
  const char* env = std::getenv("SURFGRAD_TSNE_ORDER_EVERY");
  if (!env || !*env) return 1;
  char* end = nullptr;
  long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 1 || v > 100000)
    throw Error(ErrorKind::Value, std::string("SURFGRAD_TSNE_ORDER_EVERY=") + env +
                                      ": give the iterations between two sorts of the points, 1 to 100000");
  return int(v);
}

double TsneRepulsion::extent(const Tensor& y) {
  HostArray lo = HostArray::from(y.min({0})), hi = HostArray::from(y.max({0}));
  return std::max(hi.values()[0] - lo.values()[0], hi.values()[1] - lo.values()[1]);
}

void TsneRepulsion::bounds(const Tensor& y, Tensor& lo, Tensor& hi) {
  if (!ctx_->info().is_cpu) {
    lo = y.min({0});
    hi = y.max({0});
    return;
  }
  if (!bbox_) bbox_ = program(ctx_, "tsne_bbox.wgsl");
  lo = Tensor::empty(ctx_, {2});
  hi = Tensor::empty(ctx_, {2});
  bbox_->launch({lo, hi, y}, {y.shape(0)}, {1, 1, 1});
}

Tensor TsneRepulsion::total_q(const Tensor& out) {
  if (!ctx_->info().is_cpu) return out.slice(1, 2, 3).sum();
  if (!z_) z_ = program(ctx_, "tsne_z.wgsl");
  Tensor z = Tensor::empty(ctx_, {1});
  z_->launch({z, out}, {out.shape(0)}, {1, 1, 1});
  return z;
}

double TsneRepulsion::box_extent(const Tensor& y) {
  Tensor lo, hi;
  bounds(y, lo, hi);
  std::vector<float> a = lo.to_vector<float>(), b = hi.to_vector<float>();
  return std::max(double(b[0]) - a[0], double(b[1]) - a[1]);
}

TsneRepulsion::ExtentRead TsneRepulsion::box_extent_later(const Tensor& y) {
  Tensor lo, hi;
  bounds(y, lo, hi);
  return {lo.to_host_later(), hi.to_host_later()};
}

double TsneRepulsion::ExtentRead::wait() {
  float a[2], b[2];
  lo.wait(a);
  hi.wait(b);
  return std::max(double(b[0]) - a[0], double(b[1]) - a[1]);
}

int TsneRepulsion::exact_threads(const gpu::Context& ctx) { return ctx.info().is_cpu ? 8 : 32; }

kernels::Values TsneRepulsion::exact_values(const gpu::Context& ctx) {
  return {{"THREADS", std::to_string(exact_threads(ctx))}, {"PAIRED", ctx.info().is_cpu ? "true" : "false"}};
}

kernels::Values TsneRepulsion::charge_values(const gpu::Context& ctx, Spread spread) {
  // The sorted spread sums 64 bits (its runs' totals would not fit the narrow scale's margin).
  return {{"NARROW", ctx.info().is_cpu && !sorted_spread(ctx, spread) ? "true" : "false"}};
}

void TsneRepulsion::exact(const Tensor& y, const Tensor& out) {
  int64_t n = y.shape(0);
  if (!exact_) exact_ = kernels::Program::file(ctx_, "tsne_repulsion.wgsl", exact_values(*ctx_));
  exact_->launch({out, y}, {n}, kernels::groups_for(*ctx_, uint64_t(n), 8 * uint64_t(exact_threads(*ctx_))));
}

void TsneRepulsion::resize(int g) {
  if (g == g_) return;
  g_ = g;
  int64_t m = 2 * int64_t(g);
  acc_ = Tensor::zeros(ctx_, {int64_t(g) * g * 2}, DType::u32);  // the charges kernel re-zeroes it
  // Arrays: 0 charges, 1 and 2 the transformed kernels (kept), 3 and 4 the products.
  grid_ = Tensor::empty(ctx_, {5 * m * m * 2});
  frame_ = Tensor::zeros(ctx_, {16});  // G = 0 in the frame: the kernels are stale
  args_ = Tensor::zeros(ctx_, {8}, DType::u32);
  fft_ = std::make_unique<FftLines>(ctx_, uint32_t(m));
}

void TsneRepulsion::fft_pass(uint32_t array, uint32_t arrays, uint32_t lines, bool rows, bool inverse, bool indirect) {
  uint32_t m = uint32_t(2 * g_), mm = m * m;
  FftLines::Layout at{lines, arrays, array * mm, mm, rows ? m : 1, rows ? 1 : m};
  if (indirect)
    fft_->run_indirect(grid_, at, inverse, args_, 3);
  else
    fft_->run(grid_, at, inverse);
}

void TsneRepulsion::interpolated(const Tensor& y, const Tensor& out, int grid_nodes) {
  if (grid_nodes < 16 || !FftLines::supported_length(2 * uint32_t(grid_nodes)) || grid_nodes > max_grid_nodes(*ctx_))
    throw Error(ErrorKind::Value, "tsne: FFT grid of " + std::to_string(grid_nodes) +
                                      " nodes per side; it must be 2^a or 3·2^a, from 16 to " +
                                      std::to_string(max_grid_nodes(*ctx_)) + " on this adapter");
  resize(grid_nodes);
  if (!frame_k_) {
    // The spread's choice (and its environment) is read here, at the FFT's first call: exact
    // repulsion never reads it.
    sorted_ = sorted_spread(*ctx_, spread_mode_);
    if (sorted_) order_every_ = order_every();
    frame_k_ = program(ctx_, "tsne_fft_frame.wgsl");
    kernels_k_ = program(ctx_, "tsne_fft_kernels.wgsl");
    const Spread how = sorted_ ? Spread::Sorted : Spread::Plain;
    spread_ = sorted_ ? kernels::Program::file(ctx_, "tsne_fft_spread_sorted.wgsl", {}, {.subgroups = true})
                      : kernels::Program::file(ctx_, "tsne_fft_spread.wgsl", charge_values(*ctx_, how));
    charges_ = kernels::Program::file(ctx_, "tsne_fft_charges.wgsl", charge_values(*ctx_, how));
    multiply_ = program(ctx_, "tsne_fft_multiply.wgsl");
    mirror_ = program(ctx_, "tsne_fft_mirror.wgsl");
    interpolate_ = program(ctx_, "tsne_fft_interpolate.wgsl");
  }
  uint32_t n = kernels::Param(y.shape(0)).word, g = uint32_t(g_), m = 2 * g, mm = m * m;
  Tensor lo, hi;
  bounds(y, lo, hi);
  frame_k_->launch({frame_, args_, lo, hi}, {n, g, (mm + 255) / 256, 2 * m}, {1, 1, 1});
  // The kernels and their transforms, only where the frame kernel found them stale (indirect
  // counts it wrote). Where indirect dispatches are costly (Dawn validates each with a pass of its
  // own), recomputed every iteration instead: the same values, ~20 µs of GPU work an iteration.
  if (!ctx_->indirect_dispatch_costly()) {
    kernels_k_->launch_indirect({grid_, frame_}, {g}, args_, 0);
    fft_pass(1, 2, m, true, false, true);
    fft_pass(1, 2, m, false, false, true);
  } else {
    kernels_k_->launch({grid_, frame_}, {g}, {(mm + 255) / 256, 1, 1});
    fft_pass(1, 2, m, true, false, false);
    fft_pass(1, 2, m, false, false, false);
  }
  // Charges: spread, then transformed; rows G… of the padded array are zero, so only G rows.
  if (sorted_) {
    if (!order_) order_.emplace(ctx_);
    if (since_order_ % order_every_ == 0 || order_->order().shape(0) != y.shape(0)) {
      order_->update(y, frame_, g_);
      since_order_ = 0;
    }
    ++since_order_;
    spread_->launch({acc_, y, frame_, order_->order()}, {n, g}, kernels::groups_for(*ctx_, n, 256));
  } else {
    spread_->launch({acc_, y, frame_}, {n, g}, kernels::groups_for(*ctx_, n, 256));
  }
  charges_->launch({grid_, acc_, frame_}, {g}, kernels::groups_for(*ctx_, mm, 256));
  // The charges are real: after the row pass each row's spectrum is Hermitian (column M − c is
  // the conjugate of c), so the columns past M/2 are never transformed; the multiply kernel
  // reads them mirrored.
  fft_pass(0, 1, g, true, false, false);
  fft_pass(0, 1, m / 2 + 1, false, false, false);
  multiply_->launch({grid_}, {mm, m}, kernels::groups_for(*ctx_, mm, 256));
  // Back: columns first, then only the G rows the points are read from. q is real, so its
  // product is Hermitian too: half its columns, then each needed row's other half mirrored.
  fft_pass(3, 1, m, false, true, false);
  fft_pass(4, 1, m / 2 + 1, false, true, false);
  mirror_->launch({grid_}, {g}, kernels::groups_for(*ctx_, uint64_t(g) * (m / 2), 256));
  fft_pass(3, 2, g, true, true, false);
  interpolate_->launch({out, y, grid_, frame_}, {n, g, 1.0 / double(mm)}, kernels::groups_for(*ctx_, n, 256));
}

Tensor tsne_repulsion(const Tensor& y, Repulsion method, double grid_spacing) {
  EagerScope eager;  // the map path runs eagerly (tensor.hpp)
  if (y.rank() != 2 || y.shape(1) != 2 || y.dtype() != DType::f32)
    throw Error(ErrorKind::Shape, "tsne_repulsion: positions must be f32 [N, 2], got " + y.describe());
  Tensor pos = y.contiguous(), out = Tensor::empty(y.context(), {y.shape(0), 4});
  TsneRepulsion r(y.context());
  if (method == Repulsion::Exact) {
    r.exact(pos, out);
  } else {
    r.interpolated(pos, out,
                   TsneRepulsion::grid_nodes_for(TsneRepulsion::extent(pos), grid_spacing,
                                                 TsneRepulsion::max_grid_nodes(*y.context())));
  }
  return out;
}

}  // namespace surfgrad
