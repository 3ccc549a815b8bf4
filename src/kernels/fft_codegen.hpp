// WGSL generation for Stockham FFT passes, shared by the line FFTs (src/maps/fft_lines.cpp) and
// the tile FFT (src/tiles/fft.cpp): the plan of radices, each radix's small DFT written out as
// straight-line code with constant twiddles, and one butterfly of a pass.
//
// Conventions (both users): complex values are vec2<f32> (re, im); `dir` is a WGSL f32 in scope,
// −1 for the forward transform exp(−2πi·nk/M) and +1 for the inverse (unscaled); the code calls
// the helpers cmul and quarter (kComplexHelpers). A Stockham pass of radix R over a line of
// M = R·T values, after passes whose radices multiply to p: butterfly i < T reads
// x_r = line[i + r·T] (r < R), turns x_r by exp(dir·2πi·r·k/(p·R)) with k = i mod p, takes the
// R-point DFT, and writes y_r to (i − k)·R + k + r·p. After the last pass the line is in natural
// order, with no bit reversal.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace surfgrad::kernels::fft {

// cmul(a, b): the complex product; quarter(v, s): i·s·v (s = ±1, or a scale).
inline constexpr const char* kComplexHelpers =
    "fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> { return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * "
    "b.x); }\n"
    "// i·s·v: a quarter turn (s = ±1, or a scale).\n"
    "fn quarter(v: vec2<f32>, s: f32) -> vec2<f32> { return vec2<f32>(-s * v.y, s * v.x); }\n";

// Straight-line WGSL: every value a `let` with a fresh name.
struct Emitter {
  std::string code, indent = "    ";
  int next = 0;
  std::string let(const std::string& expr);
};

// The radices of a Stockham plan for m = 2^a or 3·2^a (a radix-3 pass first where 3 divides m,
// then radix-16 passes, then the remaining 2, 4 or 8), first pass first; none for m = 1.
std::vector<uint32_t> stockham_radices(uint32_t m);

// y_k = Σ_n x_n·exp(dir·2πi·nk/R), R = x.size() (2, 3, 4 or a power of two up to 16), as code.
std::vector<std::string> dft(Emitter& e, const std::vector<std::string>& x);

// One butterfly of a pass of radix R = x.size() over a line of m values after sub-transforms of
// p: x (the values read from i + r·T) turned by the pass twiddles, then the R-point DFT. `k` is
// the WGSL expression i mod p; `twiddle(t)` the code of exp(dir·2πi·t/m) for the u32 expression
// t (< m). The outputs go to (i − k)·R + k + r·p.
std::vector<std::string> stockham_butterfly(Emitter& e, std::vector<std::string> x, const std::string& k, uint32_t p,
                                            uint32_t m, const std::function<std::string(const std::string&)>& twiddle);

}  // namespace surfgrad::kernels::fft
