// Fourier transforms along the rows of a tile (tile_fft, tile_ifft): their WGSL, forward and
// adjoint, and their float64 host reference.
#pragma once
#include <string>
#include <vector>

#include "surfgrad/reference.hpp"
#include "tiles/emit.hpp"

namespace surfgrad::tiles::detail {

// The forward code of node n (Op::fft or Op::fft_part) into its tile t<n>.
void emit_fft_forward(Wgsl& w, const Graph& g, int n);
// Node n's adjoint: fft_part adds a<n> into its part of the transform's adjoint; fft transforms
// its adjoint back (using the adjoint's work rows) and adds the result into its operands' adjoints.
void emit_fft_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs);
// The module-scope helpers the transform's code calls, if the kernel has one.
void emit_fft_functions(Wgsl& w, const Graph& g);

// float64, by the O(n²) sums: the DFT (or the inverse, scaled by 1/n) of each row of re + i·im
// (im null: zero), as [2R, n]: the real parts' rows, then the imaginary parts'.
HostArray host_fft(const HostArray& re, const HostArray* im, bool inverse);

}  // namespace surfgrad::tiles::detail
