// Batched SPD solves x = (Jᵀ·M·J + diag R)⁻¹·f, fused into one tile kernel and as four launches
// (see demos.hpp).
//
// The fused kernel keeps everything of one system in workgroup memory: J and M come in as one
// array [B, m, n + m] (two tile loads at different columns), Jᵀ·M·J is two tile matmuls, diag R is
// R's row broadcast to n×n times an identity tile (a constant input, loaded once per block from the
// same n×n tensor), then the Cholesky factor and both substitutions. Its backward kernel replays all
// of it and runs the adjoints, so one launch each way replaces the unfused form's four forward and
// four backward launches and their intermediates in global memory (JᵀM, H, L).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "surfgrad/demos.hpp"
#include "surfgrad/error.hpp"

namespace surfgrad::demos {

namespace {

using tiles::Array;
using tiles::At;
using tiles::Coord;
using tiles::Kernel;
using tiles::Tile;

At system() { return At{0, 0, Coord::block(0)}; }

// diag(R) for a 1×n tile R: its row repeated down n rows, times the identity.
Tile diagonal(const Tile& r, const Tile& eye) { return tiles::tile_broadcast(r, {r.cols(), r.cols()}) * eye; }

Kernel make_fused(const TileSpdShape& s) {
  Kernel k("spd_fused", s.threads);
  Array jm = k.input("jm"), r = k.input("r"), f = k.input("f"), eye = k.input("eye", /*differentiable=*/false);
  Array x = k.output("x");
  Tile j = tiles::tile_load(jm, {s.m, s.n}, system());
  Tile m = tiles::tile_load(jm, {s.m, s.m}, {0, Coord::element(s.n), Coord::block(0)});
  Tile jtmj = tiles::tile_matmul(tiles::tile_matmul(tiles::tile_transpose(j), m), j);
  Tile h = jtmj + diagonal(tiles::tile_load(r, {1, s.n}, system()), tiles::tile_load(eye, {s.n, s.n}));
  Tile l = tiles::tile_cholesky(h);
  tiles::tile_store(x, tiles::tile_cholesky_solve(l, tiles::tile_load(f, {s.n, s.rhs}, system())), system());
  return k;
}

Kernel make_jtm(const TileSpdShape& s) {
  Kernel k("spd_jtm", s.threads);
  Array j = k.input("j"), m = k.input("m"), a = k.output("jtm");
  Tile jt = tiles::tile_transpose(tiles::tile_load(j, {s.m, s.n}, system()));
  tiles::tile_store(a, tiles::tile_matmul(jt, tiles::tile_load(m, {s.m, s.m}, system())), system());
  return k;
}

Kernel make_h(const TileSpdShape& s) {
  Kernel k("spd_h", s.threads);
  Array a = k.input("jtm"), j = k.input("j"), r = k.input("r"), eye = k.input("eye", false), h = k.output("h");
  Tile jtmj = tiles::tile_matmul(tiles::tile_load(a, {s.n, s.m}, system()), tiles::tile_load(j, {s.m, s.n}, system()));
  Tile reg = diagonal(tiles::tile_load(r, {1, s.n}, system()), tiles::tile_load(eye, {s.n, s.n}));
  tiles::tile_store(h, jtmj + reg, system());
  return k;
}

Kernel make_cholesky(const TileSpdShape& s) {
  Kernel k("spd_cholesky", s.threads);
  Array h = k.input("h"), l = k.output("l");
  tiles::tile_store(l, tiles::tile_cholesky(tiles::tile_load(h, {s.n, s.n}, system())), system());
  return k;
}

Kernel make_solve(const TileSpdShape& s) {
  Kernel k("spd_solve", s.threads);
  Array l = k.input("l"), f = k.input("f"), x = k.output("x");
  Tile lt = tiles::tile_load(l, {s.n, s.n}, system());
  tiles::tile_store(x, tiles::tile_cholesky_solve(lt, tiles::tile_load(f, {s.n, s.rhs}, system())), system());
  return k;
}

HostArray identity(int n) {
  HostArray e = HostArray::full({n, n}, 0.0);
  for (int i = 0; i < n; ++i) e.values()[size_t(i) * size_t(n) + size_t(i)] = 1;
  return e;
}

// Bytes a tile kernel launch moves (see SpdSolver::traffic), from element counts.
uint64_t forward_bytes(const std::vector<int64_t>& inputs, int64_t output) {
  int64_t e = 2 * output;  // zero-filled, then written
  for (int64_t i : inputs) e += i;
  return uint64_t(e) * 4;
}
uint64_t backward_bytes(const std::vector<int64_t>& inputs, int64_t output, const std::vector<int64_t>& grads) {
  int64_t e = output;
  for (int64_t i : inputs) e += i;
  for (int64_t g : grads) e += 3 * g;  // zero-filled, then read and written by atomic adds
  return uint64_t(e) * 4;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// max over systems of ‖H·x − f‖₂ / ‖f‖₂, H = JᵀMJ + diag R formed in float64 from the inputs.
double max_residual(const std::vector<float>& J, const std::vector<float>& M, const std::vector<float>& R,
                    const std::vector<float>& F, const std::vector<float>& X, int64_t systems, const TileSpdShape& s) {
  const size_t n = size_t(s.n), m = size_t(s.m), k = size_t(s.rhs);
  double worst = 0;
  std::vector<double> jtm(n * m), h(n * n);
  for (size_t b = 0; b < size_t(systems); ++b) {
    const float *j = &J[b * m * n], *mm = &M[b * m * m], *r = &R[b * n], *f = &F[b * n * k], *x = &X[b * n * k];
    for (size_t i = 0; i < n; ++i)
      for (size_t c = 0; c < m; ++c) {
        double acc = 0;
        for (size_t a = 0; a < m; ++a) acc += double(j[a * n + i]) * mm[a * m + c];
        jtm[i * m + c] = acc;
      }
    for (size_t i = 0; i < n; ++i)
      for (size_t c = 0; c < n; ++c) {
        double acc = i == c ? double(r[i]) : 0.0;
        for (size_t a = 0; a < m; ++a) acc += jtm[i * m + a] * j[a * n + c];
        h[i * n + c] = acc;
      }
    double res = 0, norm = 0;
    for (size_t i = 0; i < n; ++i)
      for (size_t c = 0; c < k; ++c) {
        double acc = -double(f[i * k + c]);
        for (size_t a = 0; a < n; ++a) acc += h[i * n + a] * x[a * k + c];
        res += acc * acc, norm += double(f[i * k + c]) * f[i * k + c];
      }
    worst = std::max(worst, std::sqrt(res / std::max(norm, 1e-300)));
  }
  return worst;
}

// The backward kernels checked against each other: the gradients of J, M, R and f from the same
// output gradient, fused (J and M packed side by side) and unfused, as max |difference| over max
// |unfused gradient|. Leaves the gradients zero.
double gradient_difference(const SpdSolver& solver, const Var& jm, const SpdSystems& p, const Tensor& seed) {
  solver.fused(jm, p.r, p.f).backward(seed);
  std::vector<float> fused_jm = jm.grad().to_vector<float>(), fused_r = p.r.grad().to_vector<float>(),
                     fused_f = p.f.grad().to_vector<float>();
  p.r.zero_grad();
  p.f.zero_grad();
  solver.unfused(p).backward(seed);
  std::vector<float> j = p.j.grad().to_vector<float>(), m = p.m.grad().to_vector<float>(),
                     r = p.r.grad().to_vector<float>(), f = p.f.grad().to_vector<float>();
  double diff = 0, scale = 0;
  auto compare = [&](float a, float b) {
    diff = std::max(diff, double(std::abs(a - b))), scale = std::max(scale, double(std::abs(b)));
  };
  const size_t n = size_t(solver.shape().n), cols = n + size_t(solver.shape().m);
  for (size_t row = 0; row < fused_jm.size() / cols; ++row)  // rows of J|M: B·m of them
    for (size_t c = 0; c < cols; ++c)
      compare(fused_jm[row * cols + c], c < n ? j[row * n + c] : m[row * (cols - n) + (c - n)]);
  for (size_t i = 0; i < r.size(); ++i) compare(fused_r[i], r[i]);
  for (size_t i = 0; i < f.size(); ++i) compare(fused_f[i], f[i]);
  for (const Var& v : {jm, p.j, p.m, p.r, p.f}) v.zero_grad();
  return scale > 0 ? diff / scale : 1.0;  // all-zero gradients are a failure too
}

}  // namespace

SpdSystems make_spd_systems(const gpu::ContextPtr& ctx, int64_t systems, const TileSpdShape& s, uint64_t seed,
                            bool requires_grad) {
  if (systems < 1 || s.n < 1 || s.m < 1 || s.rhs < 1)
    throw Error(ErrorKind::Value, "tile-spd: systems, n, m and rhs must be ≥ 1");
  const size_t B = size_t(systems), n = size_t(s.n), m = size_t(s.m), k = size_t(s.rhs);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1), reg(0.1, 1);
  std::vector<float> J(B * m * n), M(B * m * m), R(B * n), F(B * n * k), G(m * m);
  for (float& v : J) v = float(u(gen));
  for (size_t b = 0; b < B; ++b) {
    for (float& v : G) v = float(u(gen));
    float* mb = &M[b * m * m];
    for (size_t i = 0; i < m; ++i)
      for (size_t c = 0; c <= i; ++c) {
        double acc = i == c ? 0.5 : 0.0;
        for (size_t a = 0; a < m; ++a) acc += double(G[i * m + a]) * G[c * m + a] / double(m);
        mb[i * m + c] = mb[c * m + i] = float(acc);
      }
  }
  for (float& v : R) v = float(reg(gen));
  for (float& v : F) v = float(u(gen));
  auto var = [&](const std::vector<float>& v, const Shape& shape) {
    return Var(Tensor::from_host(ctx, v.data(), shape, DType::f32), requires_grad);
  };
  int64_t sn = s.n, sm = s.m;
  return {var(J, {systems, sm, sn}), var(M, {systems, sm, sm}), var(R, {systems, 1, sn}),
          var(F, {systems, sn, int64_t(s.rhs)})};
}

SpdSolver::SpdSolver(const gpu::ContextPtr& ctx, const TileSpdShape& shape)
    : shape_(shape),
      eye_host_(identity(std::max(shape.n, 1))),
      fused_("spd_fused"),
      jtm_("spd_jtm"),
      h_("spd_h"),
      cholesky_("spd_cholesky"),
      solve_("spd_solve") {
  if (shape.n < 1 || shape.m < 1 || shape.rhs < 1 || shape.threads < 1)
    throw Error(ErrorKind::Value, "tile-spd: n, m, rhs and threads must be ≥ 1, got n " + std::to_string(shape.n) +
                                      ", m " + std::to_string(shape.m) + ", rhs " + std::to_string(shape.rhs) +
                                      ", threads " + std::to_string(shape.threads));
  fused_ = make_fused(shape);
  jtm_ = make_jtm(shape);
  h_ = make_h(shape);
  cholesky_ = make_cholesky(shape);
  solve_ = make_solve(shape);
  std::vector<float> e(eye_host_.values().begin(), eye_host_.values().end());
  eye_ = Tensor::from_host(ctx, e.data(), {shape.n, shape.n}, DType::f32);
}

Var SpdSolver::pack(const Var& j, const Var& m) { return concat({j, m}, 2); }
HostArray SpdSolver::pack(const HostArray& j, const HostArray& m) { return concat({j, m}, 2); }

void SpdSolver::check(const Shape& jm, const Shape& r, const Shape& f, int64_t j_cols) const {
  const int64_t n = shape_.n, m = shape_.m, k = shape_.rhs;
  bool packed = j_cols == n + m;
  int64_t B = jm.size() == 3 ? jm[0] : 0;
  Shape want_jm = {B, m, j_cols}, want_r = {B, 1, n}, want_f = {B, n, k};
  std::string what = packed ? "J|M (J and M side by side)" : "J";
  std::string msg;
  if (jm.size() != 3 || B < 1 || jm != want_jm)
    msg = what + " is " + shape_str(jm) + ", expected [B, m, " + (packed ? "n + m" : "n") +
          "] = " + shape_str({B < 1 ? 1 : B, m, j_cols});
  else if (r != want_r)
    msg = "R is " + shape_str(r) + ", expected [B, 1, n] = " + shape_str(want_r);
  else if (f != want_f)
    msg = "f is " + shape_str(f) + ", expected [B, n, rhs] = " + shape_str(want_f);
  if (!msg.empty())
    throw Error(ErrorKind::Shape, "tile-spd (n " + std::to_string(n) + ", m " + std::to_string(m) + ", rhs " +
                                      std::to_string(k) + "): " + msg);
}

Var SpdSolver::fused(const Var& jm, const Var& r, const Var& f) const {
  check(jm.shape(), r.shape(), f.shape(), shape_.n + shape_.m);
  int64_t B = jm.shape(0);
  if (B > int64_t(UINT32_MAX)) throw Error(ErrorKind::LimitExceeded, "tile-spd: too many systems");
  return fused_({jm, r, f, Var(eye_)}, {B, shape_.n, shape_.rhs}, {uint32_t(B), 1, 1});
}

Var SpdSolver::unfused(const SpdSystems& s) const {
  check(s.j.shape(), s.r.shape(), s.f.shape(), shape_.n);
  int64_t B = s.j.shape(0), n = shape_.n, m = shape_.m;
  if (s.m.shape() != Shape{B, m, m})
    throw Error(ErrorKind::Shape,
                "tile-spd: M is " + shape_str(s.m.shape()) + ", expected [B, m, m] = " + shape_str({B, m, m}));
  tiles::Grid grid{uint32_t(B), 1, 1};
  Var a = jtm_({s.j, s.m}, {B, n, m}, grid);
  Var h = h_({a, s.j, s.r, Var(eye_)}, {B, n, n}, grid);
  Var l = cholesky_({h}, {B, n, n}, grid);
  return solve_({l, s.f}, {B, n, int64_t(shape_.rhs)}, grid);
}

HostArray SpdSolver::fused_reference(const HostArray& jm, const HostArray& r, const HostArray& f) const {
  check(jm.shape(), r.shape(), f.shape(), shape_.n + shape_.m);
  int64_t B = jm.shape()[0];
  return fused_({jm, r, f, eye_host_}, {B, shape_.n, shape_.rhs}, {uint32_t(B), 1, 1});
}

HostArray SpdSolver::unfused_reference(const HostArray& j, const HostArray& m, const HostArray& r,
                                       const HostArray& f) const {
  check(j.shape(), r.shape(), f.shape(), shape_.n);
  int64_t B = j.shape()[0], n = shape_.n;
  tiles::Grid grid{uint32_t(B), 1, 1};
  HostArray a = jtm_({j, m}, {B, n, shape_.m}, grid);
  HostArray h = h_({a, j, r, eye_host_}, {B, n, n}, grid);
  HostArray l = cholesky_({h}, {B, n, n}, grid);
  return solve_({l, f}, {B, n, int64_t(shape_.rhs)}, grid);
}

uint64_t SpdSolver::unfused_workgroup_bytes(bool backward) const {
  uint64_t most = 0;
  for (const Kernel* k : {&jtm_, &h_, &cholesky_, &solve_}) most = std::max(most, k->workgroup_bytes(backward));
  return most;
}

SpdSolver::Traffic SpdSolver::traffic(int64_t B, bool fused, bool backward) const {
  const int64_t n = shape_.n, m = shape_.m, k = shape_.rhs;
  const int64_t J = B * m * n, M = B * m * m, R = B * n, F = B * n * k, E = n * n, A = B * n * m, H = B * n * n;
  Traffic t;
  if (fused) {
    t.bytes = forward_bytes({J + M, R, F, E}, F);
    t.kernels = 1;
    if (backward) t.bytes += backward_bytes({J + M, R, F, E}, F, {J + M, R, F}), t.kernels += 1;
    return t;
  }
  t.bytes =
      forward_bytes({J, M}, A) + forward_bytes({A, J, R, E}, H) + forward_bytes({H}, H) + forward_bytes({H, F}, F);
  t.kernels = 4;
  if (backward) {
    t.bytes += backward_bytes({H, F}, F, {H, F}) + backward_bytes({H}, H, {H}) +
               backward_bytes({A, J, R, E}, H, {A, J, R}) + backward_bytes({J, M}, A, {J, M});
    t.bytes += uint64_t(3 * J) * 4;  // J's two gradients added
    t.kernels += 4;
  }
  return t;
}

TileSpdResult run_tile_spd(const gpu::ContextPtr& ctx, const TileSpdOptions& opt, const Progress& progress) {
  if (opt.steps < 1 || opt.repeats < 1) throw Error(ErrorKind::Value, "tile-spd: steps and repeats must be ≥ 1");
  const TileSpdShape& s = opt.shape;
  const int64_t B = opt.systems;
  SpdSolver solver(ctx, s);
  // Refused before the data is made (the launches would refuse too, later).
  const uint64_t limit = ctx->limits().max_compute_workgroup_storage_size;
  uint64_t forward_bytes =
      std::max(solver.fused_kernel().workgroup_bytes(false), solver.unfused_workgroup_bytes(false));
  if (forward_bytes > limit)
    throw Error(ErrorKind::LimitExceeded, "tile-spd: n " + std::to_string(s.n) + ", m " + std::to_string(s.m) +
                                              " needs " + std::to_string(forward_bytes) +
                                              " bytes of workgroup memory forward, over this adapter's limit of " +
                                              std::to_string(limit) +
                                              " (maxComputeWorkgroupStorageSize): use smaller n or m");
  SpdSystems data = make_spd_systems(ctx, B, s, opt.seed);
  Var jm;
  {
    NoGradGuard no_grad;
    jm = Var(SpdSolver::pack(data.j, data.m).value());  // the fused kernel's layout, made once
  }
  TileSpdResult result;
  result.workgroup_bytes_forward = solver.fused_kernel().workgroup_bytes(false);
  result.workgroup_bytes_backward = solver.fused_kernel().workgroup_bytes(true);
  result.forward_wgsl = solver.fused_kernel().forward_wgsl();
  result.backward_wgsl = solver.fused_kernel().backward_wgsl();

  // Correctness first: the fused solve against H formed in float64, and against the unfused.
  std::vector<float> xf = solver.fused(jm, data.r, data.f).value().to_vector<float>();
  std::vector<float> xu = solver.unfused(data).value().to_vector<float>();
  result.residual = max_residual(data.j.value().to_vector<float>(), data.m.value().to_vector<float>(),
                                 data.r.value().to_vector<float>(), data.f.value().to_vector<float>(), xf, B, s);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < xf.size(); ++i)
    diff = std::max(diff, double(std::abs(xf[i] - xu[i]))), scale = std::max(scale, double(std::abs(xf[i])));
  result.unfused_difference = diff / std::max(scale, 1e-30);
  if (progress) {
    char line[200];
    std::snprintf(line, sizeof line, "max ‖Hx − f‖/‖f‖ %.2e, fused vs unfused %.2e", result.residual,
                  result.unfused_difference);
    progress(line, false);
  }

  // Parameters for the backward runs: the same tensors, as leaves that want gradients.
  Var jm_p = Var::param(jm.value()), j_p = Var::param(data.j.value()), m_p = Var::param(data.m.value()),
      r_p = Var::param(data.r.value()), f_p = Var::param(data.f.value());
  Tensor seed = Tensor::uniform(ctx, {B, s.n, s.rhs}, opt.seed + 1, -1, 1);
  // A backward kernel may not fit where its forward does: that form's backward run is left out.
  result.unfused_workgroup_bytes_backward = solver.unfused_workgroup_bytes(true);
  for (bool fused : {true, false}) {
    uint64_t need = fused ? result.workgroup_bytes_backward : result.unfused_workgroup_bytes_backward;
    if (need > limit)
      result.note += std::string(result.note.empty() ? "" : "; ") + (fused ? "fused" : "unfused") +
                     " forward + backward not run: a backward kernel needs " + std::to_string(need) +
                     " bytes of workgroup memory, this adapter has " + std::to_string(limit);
  }
  if (result.workgroup_bytes_backward <= limit && result.unfused_workgroup_bytes_backward <= limit)
    result.gradient_difference = gradient_difference(solver, jm_p, {j_p, m_p, r_p, f_p}, seed);
  for (bool fused : {true, false})
    for (bool backward : {false, true}) {
      if (backward && (fused ? result.workgroup_bytes_backward : result.unfused_workgroup_bytes_backward) > limit)
        continue;
      std::function<void()> step;
      if (fused && !backward)
        step = [&] { (void)solver.fused(jm, data.r, data.f); };
      else if (fused)
        step = [&] {
          for (const Var& v : {jm_p, r_p, f_p}) v.zero_grad();
          solver.fused(jm_p, r_p, f_p).backward(seed);
        };
      else if (!backward)
        step = [&] { (void)solver.unfused(data); };
      else
        step = [&] {
          for (const Var& v : {j_p, m_p, r_p, f_p}) v.zero_grad();
          solver.unfused({j_p, m_p, r_p, f_p}).backward(seed);
        };
      step();  // compiles the kernels
      ctx->sync();
      uint64_t before = ctx->pending_dispatches();
      step();
      TileSpdRun run;
      run.form = fused ? "fused" : "unfused";
      run.backward = backward;
      run.dispatches = ctx->pending_dispatches() - before;
      SpdSolver::Traffic t = solver.traffic(B, fused, backward);
      run.bytes = t.bytes, run.kernels = t.kernels;
      ctx->sync();
      std::vector<double> ms;
      for (int r = 0; r < opt.repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < opt.steps; ++i) step();
        ctx->sync();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                     opt.steps);
      }
      run.ms = median(ms);
      result.runs.push_back(run);
      if (progress) {
        char line[200];
        std::snprintf(line, sizeof line, "%-8s %-19s %9.3f ms  %3llu dispatches  %8.2f MiB", run.form.c_str(),
                      backward ? "forward + backward" : "forward", run.ms, (unsigned long long)run.dispatches,
                      double(run.bytes) / (1 << 20));
        progress(line, false);
      }
    }
  if (progress && !result.note.empty()) progress(result.note, false);
  return result;
}

}  // namespace surfgrad::demos
