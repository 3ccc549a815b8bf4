// The generated line-FFT kernel (fft_lines.wgsl's PASSES block) and its dispatch.
//
// A Stockham pass of radix R over a line of M = R·T values, after passes whose radices multiply
// to p: butterfly i < T reads x_r = line[i + r·T] (r < R), turns x_r by exp(±2πi·r·k/(pR)) with
// k = i mod p, takes the R-point DFT, and writes y_r to (i − k)·R + k + r·p. After the last pass
// the line is in natural order. Each thread reads all its inputs before a barrier and writes
// after it, so the passes share one line of workgroup memory; the first reads and the last writes
// global memory directly.
#include "maps/fft_lines.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kernels/launch.hpp"

namespace surfgrad {

namespace {

std::string S(uint64_t v) { return std::to_string(v); }

// Straight-line WGSL: every value a `let` with a fresh name.
struct Emitter {
  std::string code, indent = "    ";
  int next = 0;
  std::string let(const std::string& expr) {
    std::string v = "v" + S(uint64_t(next++));
    code += indent + "let " + v + " = " + expr + ";\n";
    return v;
  }
};

// v·exp(dir·2πi·num/den), special-casing the quarter turns.
std::string turn(Emitter& e, const std::string& v, uint64_t num, uint64_t den) {
  num %= den;
  if (num == 0) return v;
  if (4 * num == den) return e.let("quarter(" + v + ", dir)");
  if (2 * num == den) return e.let("-" + v);
  if (4 * num == 3 * den) return e.let("quarter(" + v + ", -dir)");
  double a = 2 * std::numbers::pi * double(num) / double(den);
  char c[64], s[64];
  std::snprintf(c, sizeof c, "%.9g", std::cos(a));
  std::snprintf(s, sizeof s, "%.9g", std::sin(a));
  return e.let("cmul(" + v + ", vec2<f32>(" + c + ", dir * " + s + "))");
}

// y_k = Σ_n x_n·exp(dir·2πi·nk/R) for R = 2, 3, 4 directly, larger powers of two by splitting
// R = R1·R2 (n = R2·n1 + n2, k = k1 + R1·k2) into R2 DFTs of R1, twiddles, and R1 DFTs of R2.
std::vector<std::string> dft(Emitter& e, const std::vector<std::string>& x) {
  size_t r = x.size();
  if (r == 1) return x;
  if (r == 2) return {e.let(x[0] + " + " + x[1]), e.let(x[0] + " - " + x[1])};
  if (r == 3) {
    std::string s = e.let(x[1] + " + " + x[2]), d = e.let(x[1] + " - " + x[2]);
    std::string y0 = e.let(x[0] + " + " + s), m = e.let(x[0] + " - 0.5 * " + s);
    std::string q = e.let("quarter(" + d + ", dir * 0.866025404)");  // i·dir·(√3/2)·(x1 − x2)
    return {y0, e.let(m + " + " + q), e.let(m + " - " + q)};
  }
  if (r == 4) {
    std::string a = e.let(x[0] + " + " + x[2]), b = e.let(x[0] + " - " + x[2]);
    std::string c = e.let(x[1] + " + " + x[3]), d = e.let("quarter(" + x[1] + " - " + x[3] + ", dir)");
    return {e.let(a + " + " + c), e.let(b + " + " + d), e.let(a + " - " + c), e.let(b + " - " + d)};
  }
  size_t r1 = (r % 4 == 0) ? 4 : 2, r2 = r / r1;
  std::vector<std::vector<std::string>> inner(r2);
  for (size_t n2 = 0; n2 < r2; ++n2) {
    std::vector<std::string> in;
    for (size_t n1 = 0; n1 < r1; ++n1) in.push_back(x[r2 * n1 + n2]);
    inner[n2] = dft(e, in);
    for (size_t k1 = 0; k1 < r1; ++k1) inner[n2][k1] = turn(e, inner[n2][k1], n2 * k1, r);
  }
  std::vector<std::string> y(r);
  for (size_t k1 = 0; k1 < r1; ++k1) {
    std::vector<std::string> in;
    for (size_t n2 = 0; n2 < r2; ++n2) in.push_back(inner[n2][k1]);
    std::vector<std::string> out = dft(e, in);
    for (size_t k2 = 0; k2 < r2; ++k2) y[k1 + r1 * k2] = out[k2];
  }
  return y;
}

uint32_t threads_for(uint32_t m) { return std::clamp<uint32_t>(m / 16, 32, 256); }

// The PASSES block for a line of m values and `wg` threads.
std::string passes_code(uint32_t m, uint32_t wg) {
  std::vector<uint32_t> radices = FftLines::plan(m);
  std::string code;
  uint32_t p = 1;
  for (size_t q = 0; q < radices.size(); ++q) {
    const uint32_t r = radices[q], t = m / r, per_thread = (t + wg - 1) / wg;
    const bool first = q == 0, last = q + 1 == radices.size() && !first;
    code += "  {  // pass " + S(q + 1) + ": radix " + S(r) + ", after sub-transforms of " + S(p) + "\n";
    Emitter e;
    std::vector<std::vector<std::string>> x(per_thread);
    for (uint32_t b = 0; b < per_thread; ++b) {
      // Threads past the T butterflies redo the last one and do not store it.
      e.code += "    let i" + S(b) + " = min(lid + " + S(b * wg) + "u, " + S(t - 1) + "u);\n";
      for (uint32_t k = 0; k < r; ++k) {
        std::string at = "i" + S(b) + " + " + S(k * t) + "u";
        x[b].push_back(e.let(first ? "data[base + (" + at + ") * stride]" : "buf[" + at + "]"));
      }
    }
    if (!first) e.code += "    workgroupBarrier();  // every input read before any output lands\n";
    for (uint32_t b = 0; b < per_thread; ++b) {
      std::string i = "i" + S(b), k = "k" + S(b);
      e.code += "    let " + k + " = " + i + " % " + S(p) + "u;\n";
      if (p > 1)
        for (uint32_t j = 1; j < r; ++j)
          x[b][j] = e.let("cmul(" + x[b][j] + ", tw(" + k + " * " + S(uint64_t(j) * (m / (p * r))) + "u, dir))");
      std::vector<std::string> y = dft(e, x[b]);
      std::string guard = per_thread * wg > t ? "if (lid + " + S(b * wg) + "u < " + S(t) + "u) " : "";
      e.code += "    let j" + S(b) + " = (" + i + " - " + k + ") * " + S(r) + "u + " + k + ";\n";
      e.code += "    " + guard + "{\n";
      for (uint32_t j = 0; j < r; ++j) {
        std::string at = "j" + S(b) + " + " + S(uint64_t(j) * p) + "u";
        e.code += last ? "      data[base + (" + at + ") * stride] = " + y[j] + ";\n"
                       : "      buf[" + at + "] = " + y[j] + ";\n";
      }
      e.code += "    }\n";
    }
    if (!last) e.code += "    workgroupBarrier();\n";
    code += e.code + "  }\n";
    p *= r;
  }
  if (radices.size() == 1)  // one pass read global memory and wrote the workgroup's line: copy it out
    code += "  for (var e = lid; e < M; e += " + S(wg) + "u) { data[base + e * stride] = buf[e]; }\n";
  return code;
}

}  // namespace

bool FftLines::supported_length(uint32_t m) {
  if (m < 4) return false;
  if (m % 3 == 0) m /= 3;
  return (m & (m - 1)) == 0;
}

std::vector<uint32_t> FftLines::plan(uint32_t m) {
  if (!supported_length(m))
    throw Error(ErrorKind::Value,
                "fft: a line of " + std::to_string(m) + " values; lengths are 2^a or 3·2^a, at least 4");
  std::vector<uint32_t> radices;
  if (m % 3 == 0) radices.push_back(3), m /= 3;
  while (m >= 16) radices.push_back(16), m /= 16;
  if (m > 1) radices.push_back(m);  // 2, 4 or 8
  return radices;
}

uint32_t FftLines::max_length(const gpu::Context& ctx) {
  return uint32_t(std::min<uint64_t>(ctx.limits().max_compute_workgroup_storage_size / 8, uint64_t(1) << 20));
}

FftLines::FftLines(gpu::ContextPtr ctx, uint32_t length) : ctx_(std::move(ctx)), m_(length) {
  plan(m_);  // validates
  if (m_ > max_length(*ctx_))
    throw Error(ErrorKind::LimitExceeded, "fft: a line of " + std::to_string(m_) + " complex values needs " +
                                              std::to_string(8 * m_) + " bytes of workgroup memory; this adapter has " +
                                              std::to_string(ctx_->limits().max_compute_workgroup_storage_size));
  std::vector<float> tw(2 * size_t(m_));  // exp(−2πit/M), in double before rounding
  for (uint32_t t = 0; t < m_; ++t) {
    double a = -2 * std::numbers::pi * double(t) / double(m_);
    tw[2 * size_t(t)] = float(std::cos(a));
    tw[2 * size_t(t) + 1] = float(std::sin(a));
  }
  twiddle_ = Tensor::from_vector(ctx_, tw, {int64_t(m_), 2});
  uint32_t wg = threads_for(m_);
  kernel_ =
      kernels::Program::file(ctx_, "fft_lines.wgsl", {{"M", S(m_)}, {"WG", S(wg)}, {"PASSES", passes_code(m_, wg)}});
}

kernels::Params FftLines::meta(const Layout& at, bool inverse) const {
  return {at.lines, at.arrays, at.first, at.array_stride, at.line_stride, at.elem_stride, inverse};
}

void FftLines::run(const Tensor& data, const Layout& at, bool inverse) {
  kernel_->launch({data, twiddle_}, meta(at, inverse), ctx_->grid_for(uint64_t(at.arrays) * at.lines));
}

void FftLines::run_indirect(const Tensor& data, const Layout& at, bool inverse, const Tensor& counts, uint64_t word) {
  kernel_->launch_indirect({data, twiddle_}, meta(at, inverse), counts, word);
}

}  // namespace surfgrad
