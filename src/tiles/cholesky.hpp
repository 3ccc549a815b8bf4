// Cholesky factorisation and triangular solves on square tiles (tile_cholesky, tile_lower_solve,
// tile_upper_solve): their WGSL, forward and adjoint, and their float64 host reference.
#pragma once
#include <string>
#include <vector>

#include "surfgrad/reference.hpp"
#include "tiles/emit.hpp"

namespace surfgrad::tiles::detail {

// The forward code of node n (Op::cholesky, lower_solve or upper_solve) into its tile t<n>.
void emit_linalg_forward(Wgsl& w, const Graph& g, int n);
// Node n's adjoint: adds into its operands' adjoints those that `needs`. The solves overwrite
// their own adjoint a<n> (dead afterwards) with B's; the Cholesky adjoint also uses the scratch
// tile s<n> (n×n, live during this step only: memory.cpp).
void emit_linalg_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs);
bool has_scratch(const Node& node);

// float64: L of ½(A + Aᵀ) = L·Lᵀ, or an error naming `where` and the first pivot that is not
// positive; X = M⁻¹·B for M's lower (or upper) triangle.
HostArray host_cholesky(const HostArray& a, const std::string& where);
HostArray host_triangular_solve(const HostArray& m, const HostArray& b, bool upper);

}  // namespace surfgrad::tiles::detail
