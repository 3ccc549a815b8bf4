// Stockham FFT code generation shared by the line FFTs and the tile FFT (see fft_codegen.hpp).
#include "kernels/fft_codegen.hpp"

#include <cmath>
#include <cstdio>
#include <numbers>

namespace surfgrad::kernels::fft {

namespace {

std::string S(uint64_t v) { return std::to_string(v); }

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

}  // namespace

std::string Emitter::let(const std::string& expr) {
  std::string v = "v" + S(uint64_t(next++));
  code += indent + "let " + v + " = " + expr + ";\n";
  return v;
}

std::vector<uint32_t> stockham_radices(uint32_t m) {
  std::vector<uint32_t> radices;
  if (m % 3 == 0) radices.push_back(3), m /= 3;
  while (m >= 16) radices.push_back(16), m /= 16;
  if (m > 1) radices.push_back(m);  // 2, 4 or 8
  return radices;
}

// R = 2, 3, 4 directly, larger powers of two by splitting R = R1·R2 (n = R2·n1 + n2,
// k = k1 + R1·k2) into R2 DFTs of R1, twiddles, and R1 DFTs of R2.
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

std::vector<std::string> stockham_butterfly(Emitter& e, std::vector<std::string> x, const std::string& k, uint32_t p,
                                            uint32_t m, const std::function<std::string(const std::string&)>& twiddle) {
  const uint32_t r = uint32_t(x.size());
  if (p > 1)  // exp(dir·2πi·j·k/(p·R)) = twiddle(k·j·m/(p·R))
    for (uint32_t j = 1; j < r; ++j)
      x[j] = e.let("cmul(" + x[j] + ", " + twiddle(k + " * " + S(uint64_t(j) * (m / (p * r))) + "u") + ")");
  return dft(e, x);
}

}  // namespace surfgrad::kernels::fft
