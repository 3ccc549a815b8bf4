// Blocks of tiles (tile_view, tile_assign): their WGSL, forward and adjoint, and their float64
// host reference.
#pragma once
#include <vector>

#include "surfgrad/reference.hpp"
#include "tiles/emit.hpp"

namespace surfgrad::tiles::detail {

// The forward code of node n (Op::view or Op::assign) into its tile t<n>.
void emit_block_forward(Wgsl& w, const Graph& g, int n);
// Node n's adjoint, into those of its operands' adjoints that `needs`: a view adds a<n> into its
// block of x's adjoint; an assign adds a<n> outside the block into dst's adjoint and the block
// into src's.
void emit_block_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs);

// float64: the rows × cols block of x at (row_offset, col_offset); dst with that block replaced
// by src (of the block's shape).
HostArray host_view(const HostArray& x, int rows, int cols, int row_offset, int col_offset);
HostArray host_assign(const HostArray& dst, const HostArray& src, int row_offset, int col_offset);

}  // namespace surfgrad::tiles::detail
