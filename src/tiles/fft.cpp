// Fourier transforms along the rows of a tile inside a tile kernel (see fft.hpp).
//
// The transform of node n works in its 4R×n tile: rows 0 … 2R − 1 hold the result (R rows of real
// parts, then R of imaginary parts), rows 2R … 4R − 1 the same for a second buffer. Stockham
// passes (kernels/fft_codegen.hpp: radix 16 while it divides, then 8, 4 or 2) are out of place, so
// they alternate between the two halves, chosen so that the last pass lands in the first half; the
// first pass reads the operand tiles. In each pass the workgroup's threads stride over the
// butterflies of all R rows at once (R·n/radix of them), with one barrier after the pass, so any
// R, n and thread count work. Twiddles inside a butterfly's small DFT are constants; those between
// passes are computed with sin and cos of an angle reduced to (−π, π].
//
// Adjoints, with real and imaginary parts independent real variables and a complex adjoint
// x̄ = ∂L/∂Re x + i·∂L/∂Im x: for y = A·x with A complex linear, dL = Re(ȳᴴ·dy) = Re((Aᴴȳ)ᴴ·dx), so
// x̄ = Aᴴ·ȳ. The DFT matrix F is symmetric, so Fᴴ = conj(F): the unnormalised transform of the
// other direction. So fft's adjoint is the unscaled inverse (n·ifft(ȳ)) and ifft's (A = F̄/n) is
// fft(ȳ)/n: the same passes with the sign of the exponent flipped and the same scale. A real
// input keeps the real part of x̄. The parts' adjoints add into the first half of the transform's
// adjoint; the transform's adjoint runs its passes in that adjoint tile and adds the last pass
// into the operands' adjoints.
#include "tiles/fft.hpp"

#include <cmath>
#include <complex>
#include <cstdio>
#include <numbers>
#include <sstream>

#include "kernels/fft_codegen.hpp"
#include "tiles/op_record.hpp"

namespace surfgrad::tiles::detail {

namespace {

namespace fft = kernels::fft;

// Where a pass reads or writes R×n complex values: the real parts at re[re_at + element], the
// imaginary parts at im[im_at + element]. An empty `im`: zeros when read (a real input), not
// written; an empty `re`: not written.
struct Place {
  std::string re, im;
  int64_t re_at = 0, im_at = 0;
};

std::string index(const std::string& tile, int64_t at, const std::string& element) {
  return tile + "[" + (at ? u32(at) + " + " : "") + element + "]";
}

std::string number(double v) {
  char s[64];
  std::snprintf(s, sizeof s, "%.9g", v);
  std::string t = s;
  return t.find_first_of(".e") == std::string::npos ? t + ".0" : t;
}

// The passes of an R×n transform from `src` into `dst` (= or += `accumulate`, times `scale`),
// pass q (1-based, before the last) writing `between[q − 1]`. `dir` is a let in scope.
void emit_passes(Wgsl& w, const Graph& g, int rows, int n, const Place& src, const std::vector<Place>& between,
                 const Place& dst, bool accumulate, double scale) {
  std::vector<uint32_t> radices = fft::stockham_radices(uint32_t(n));
  const std::string assign = accumulate ? " += " : " = ", scaled = scale == 1 ? "" : " * " + number(scale);
  if (radices.empty()) {  // n = 1: the transform is the identity
    w.each(g, {rows, n}, [&] {
      if (!dst.re.empty())
        w.line(index(dst.re, dst.re_at, "e") + assign + index(src.re, src.re_at, "e") + scaled + ";");
      if (!dst.im.empty())
        w.line(index(dst.im, dst.im_at, "e") + assign +
               (src.im.empty() ? "0.0" : index(src.im, src.im_at, "e") + scaled) + ";");
    });
    return;
  }
  uint32_t p = 1;
  for (size_t q = 0; q < radices.size(); ++q) {
    const uint32_t r = radices[q], t = uint32_t(n) / r;
    const bool last = q + 1 == radices.size();
    const Place& from = q == 0 ? src : between[q - 1];
    const Place& to = last ? dst : between[q];
    w.line("// pass " + std::to_string(q + 1) + ": radix " + std::to_string(r) + " after sub-transforms of " +
           std::to_string(p) + ", " + std::to_string(int64_t(rows) * t) + " butterflies");
    w.open("for (var b = lid; b < " + u32(int64_t(rows) * t) + "; b += " + u32(g.threads) + ") {");
    w.line("let l0 = (b / " + u32(t) + ") * " + u32(n) + ";");
    w.line("let i = b % " + u32(t) + ";");
    w.line("let k = i % " + u32(p) + ";");
    fft::Emitter e;
    e.indent = "";
    std::vector<std::string> x;
    for (uint32_t j = 0; j < r; ++j) {
      std::string at = "l0 + i + " + u32(int64_t(j) * t);
      std::string im = from.im.empty() ? "0.0" : index(from.im, from.im_at, at);
      x.push_back(e.let("vec2<f32>(" + index(from.re, from.re_at, at) + ", " + im + ")"));
    }
    std::vector<std::string> y = fft::stockham_butterfly(e, x, "k", p, uint32_t(n), [&](const std::string& tw) {
      return "fft_twiddle(" + tw + ", " + u32(n) + ", dir)";
    });
    std::istringstream lines(e.code);
    for (std::string l; std::getline(lines, l);) w.line(l);
    w.line("let o = l0 + (i - k) * " + u32(r) + " + k;");
    for (uint32_t j = 0; j < r; ++j) {
      std::string at = "o + " + u32(int64_t(j) * p), s = last ? scaled : "";
      if (!to.re.empty()) w.line(index(to.re, to.re_at, at) + (last ? assign : " = ") + y[j] + ".x" + s + ";");
      if (!to.im.empty()) w.line(index(to.im, to.im_at, at) + (last ? assign : " = ") + y[j] + ".y" + s + ";");
    }
    w.close();
    w.line("workgroupBarrier();");
    p *= r;
  }
}

// Half h (0 or 1) of a transform's 4R×n tile `tile`.
Place half(const std::string& tile, int rows, int n, int h) {
  int64_t e = int64_t(rows) * n;
  return {tile, tile, 2 * h * e, 2 * h * e + e};
}

void emit_transform(Wgsl& w, const Graph& g, int node) {
  const Node& nd = g.nodes[size_t(node)];
  int rows = nd.shape.rows / 4, n = nd.shape.cols;
  std::string t = tile_ref(g, node);
  Place src{tile_ref(g, nd.args[0]), nd.args.size() > 1 ? tile_ref(g, nd.args[1]) : ""};
  size_t passes = fft::stockham_radices(uint32_t(n)).size();
  std::vector<Place> between;  // pass q writes half (P − q) mod 2, so pass P writes half 0
  for (size_t q = 1; q < passes; ++q) between.push_back(half(t, rows, n, int((passes - q) % 2)));
  w.open("{");
  w.line(std::string("let dir = ") + (nd.inverse ? "1.0" : "-1.0") + ";");
  emit_passes(w, g, rows, n, src, between, half(t, rows, n, 0), false, nd.inverse ? 1.0 / n : 1.0);
  w.close();
}

void emit_transform_adjoint(Wgsl& w, const Graph& g, int node, const std::vector<bool>& needs) {
  const Node& nd = g.nodes[size_t(node)];
  int rows = nd.shape.rows / 4, n = nd.shape.cols;
  std::string a = tile_ref(g, node, "a");
  bool want_re = needs[size_t(nd.args[0])], want_im = nd.args.size() > 1 && needs[size_t(nd.args[1])];
  Place dst{want_re ? tile_ref(g, nd.args[0], "a") : "", want_im ? tile_ref(g, nd.args[1], "a") : ""};
  size_t passes = fft::stockham_radices(uint32_t(n)).size();
  std::vector<Place> between;  // pass q reads half (q − 1) mod 2 and writes half q mod 2
  for (size_t q = 1; q < passes; ++q) between.push_back(half(a, rows, n, int(q % 2)));
  w.line("// adjoint of " + tile_name(g, node) + ": the " +
         (nd.inverse ? "forward transform / n" : "inverse, unscaled") + " of " + tile_name(g, node, "a") +
         ", added into " + (want_re ? tile_name(g, nd.args[0], "a") : std::string()) +
         (want_re && want_im ? " and " : "") + (want_im ? tile_name(g, nd.args[1], "a") : std::string()));
  w.open("{");
  w.line(std::string("let dir = ") + (nd.inverse ? "-1.0" : "1.0") + ";");
  emit_passes(w, g, rows, n, half(a, rows, n, 0), between, dst, true, nd.inverse ? 1.0 / n : 1.0);
  w.close();
}

}  // namespace

void emit_fft_forward(Wgsl& w, const Graph& g, int n) {
  const Node& nd = g.nodes[size_t(n)];
  if (nd.op == Op::fft) return emit_transform(w, g, n);
  int64_t at = int64_t(nd.axis) * nd.shape.rows * nd.shape.cols;
  w.each(g, nd.shape, [&] { w.line(tile_ref(g, n) + "[e] = " + index(tile_ref(g, nd.args[0]), at, "e") + ";"); });
}

void emit_fft_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& nd = g.nodes[size_t(n)];
  if (nd.op == Op::fft) return emit_transform_adjoint(w, g, n, needs);
  int64_t at = int64_t(nd.axis) * nd.shape.rows * nd.shape.cols;
  w.line("// adjoint of " + tile_name(g, n) + ": its part of " + tile_name(g, nd.args[0], "a") +
         " += " + tile_name(g, n, "a"));
  w.each(g, nd.shape,
         [&] { w.line(index(tile_ref(g, nd.args[0], "a"), at, "e") + " += " + tile_ref(g, n, "a") + "[e];"); });
}

void emit_fft_functions(Wgsl& w, const Graph& g) {
  bool any = false;
  for (const Node& n : g.nodes) any = any || n.op == Op::fft;
  if (!any) return;
  w.line("// Complex values as vec2<f32> (re, im), for the Fourier transforms' passes.");
  std::istringstream helpers(fft::kComplexHelpers);
  for (std::string l; std::getline(helpers, l);) w.line(l);
  w.line("// exp(dir·2πi·t/m) for t < m, the angle reduced to (−π, π], where sin and cos are most accurate.");
  w.open("fn fft_twiddle(t: u32, m: u32, dir: f32) -> vec2<f32> {");
  w.line("let s = select(i32(t), i32(t) - i32(m), 2u * t > m);");
  w.line("let a = 6.283185307179586 * f32(s) / f32(m);");
  w.line("return vec2<f32>(cos(a), dir * sin(a));");
  w.close();
  w.blank();
}

HostArray host_fft(const HostArray& re, const HostArray* im, bool inverse) {
  int64_t rows = re.shape()[0], n = re.shape()[1];
  HostArray y = HostArray::full({2 * rows, n}, 0.0);
  double sign = inverse ? 1 : -1, scale = inverse ? 1.0 / double(n) : 1.0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < n; ++k) {
      std::complex<double> acc = 0;
      for (int64_t j = 0; j < n; ++j) {
        std::complex<double> x(re.values()[size_t(r * n + j)], im ? im->values()[size_t(r * n + j)] : 0.0);
        acc += x * std::polar(1.0, sign * 2 * std::numbers::pi * double((j * k) % n) / double(n));
      }
      y.values()[size_t(r * n + k)] = acc.real() * scale;
      y.values()[size_t((rows + r) * n + k)] = acc.imag() * scale;
    }
  return y;
}

// ---- the records (see op_record.hpp)

namespace {

// ifft, re, im: a literal per case (GCC 12 warns of an uninitialised string for "re" : "im").
std::string fft_suffix(const Graph&, const Node& n) {
  if (n.inverse) return "ifft";
  return "fft";
}
std::string part_suffix(const Graph&, const Node& n) {
  if (n.axis == 0) return "re";
  return "im";
}

std::string fft_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  int r = node.shape.rows / 4;
  return (node.inverse ? "tile_ifft(" : "tile_fft(") + tile_name(g, node.args[0]) +
         (node.args.size() > 1 ? ", " + tile_name(g, node.args[1]) : "") + "): rows 0 … " + std::to_string(r - 1) +
         " real, " + std::to_string(r) + " … " + std::to_string(2 * r - 1) +
         " imaginary, the rest the passes' work space";
}

std::string part_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  return (node.axis == 0 ? "the real part of " : "the imaginary part of ") + tile_name(g, node.args[0]);
}

HostArray fft_host(const HostStep& s) {
  return host_fft(s.arg(0), s.n().args.size() > 1 ? &s.arg(1) : nullptr, s.n().inverse);
}

HostArray part_host(const HostStep& s) {
  const Node& n = s.n();
  return s.arg(0).slice(0, n.axis * n.shape.rows, (n.axis + 1) * n.shape.rows);
}

}  // namespace

std::vector<OpRecord> fft_records() {
  return {
      {Op::fft, "tile_fft", fft_suffix, fft_describe, emit_fft_forward, emit_fft_adjoint, nullptr, fft_host},
      {Op::fft_part, "tile_fft", part_suffix, part_describe, emit_fft_forward, emit_fft_adjoint, nullptr, part_host},
  };
}

}  // namespace surfgrad::tiles::detail
