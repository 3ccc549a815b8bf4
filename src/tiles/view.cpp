// Blocks of tiles inside a tile kernel (see view.hpp). A view is a copy of the block into a tile
// of its own, and an assign a copy of dst with the block overwritten: each is one strided loop
// over the tile it makes, and neither adjoint reads a value tile, so they keep nothing live in the
// backward kernel. The builder has checked that the block lies inside the larger tile, so every
// index below is in bounds.
#include "tiles/view.hpp"

#include "tiles/op_record.hpp"

namespace surfgrad::tiles::detail {

namespace {

// The element of a tile of `cols` columns at row r + row_offset and column c + col_offset, for
// the loop element (r, c) of the block.
std::string shifted(int cols, int row_offset, int col_offset) {
  int64_t base = int64_t(row_offset) * cols + col_offset;
  return "r * " + u32(cols) + " + c" + (base ? " + " + u32(base) : std::string());
}

// Whether the loop element (r, c) of the larger tile (`outer`) lies in the block of `inner` at
// (row_offset, col_offset); the tests that always hold are left out.
std::string in_block(TileShape outer, TileShape inner, int row_offset, int col_offset) {
  std::string test;
  auto add = [&](const std::string& t) { test += (test.empty() ? "" : " && ") + t; };
  if (row_offset > 0) add("r >= " + u32(row_offset));
  if (row_offset + inner.rows < outer.rows) add("r < " + u32(row_offset + inner.rows));
  if (col_offset > 0) add("c >= " + u32(col_offset));
  if (col_offset + inner.cols < outer.cols) add("c < " + u32(col_offset + inner.cols));
  return test.empty() ? "true" : test;
}

// The element of the block's tile (`inner`) that the loop element (r, c) of the larger tile holds
// (only meaningful inside the block, where neither difference wraps).
std::string unshifted(TileShape inner, int row_offset, int col_offset) {
  std::string row = row_offset ? "(r - " + u32(row_offset) + ")" : "r";
  std::string col = col_offset ? "(c - " + u32(col_offset) + ")" : "c";
  return row + " * " + u32(inner.cols) + " + " + col;
}

}  // namespace

void emit_block_forward(Wgsl& w, const Graph& g, int n) {
  const Node& nd = g.nodes[size_t(n)];
  std::string t = tile_ref(g, n);
  if (nd.op == Op::view) {
    TileShape xs = g.nodes[size_t(nd.args[0])].shape;
    std::string x = tile_ref(g, nd.args[0]);
    w.each(g, nd.shape,
           [&] { w.line(t + "[e] = " + x + "[" + shifted(xs.cols, nd.row_offset, nd.col_offset) + "];"); });
    return;
  }
  TileShape src = g.nodes[size_t(nd.args[1])].shape;
  std::string dst_tile = tile_ref(g, nd.args[0]), src_tile = tile_ref(g, nd.args[1]);
  w.each(g, nd.shape, [&] {
    // A branch, not select(): select would index src outside the block too.
    w.line("var v = " + dst_tile + "[e];");
    w.open("if (" + in_block(nd.shape, src, nd.row_offset, nd.col_offset) + ") {");
    w.line("v = " + src_tile + "[" + unshifted(src, nd.row_offset, nd.col_offset) + "];");
    w.close();
    w.line(t + "[e] = v;");
  });
}

void emit_block_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& nd = g.nodes[size_t(n)];
  std::string a = tile_ref(g, n, "a"), an = tile_name(g, n, "a");
  auto block = [&](TileShape s) {
    return "[rows " + std::to_string(nd.row_offset) + " +" + std::to_string(s.rows) + ", cols " +
           std::to_string(nd.col_offset) + " +" + std::to_string(s.cols) + "]";
  };
  if (nd.op == Op::view) {
    int x = nd.args[0];
    TileShape xs = g.nodes[size_t(x)].shape;
    w.line("// adjoint of " + tile_name(g, n) + ": " + tile_name(g, x, "a") + block(nd.shape) + " += " + an);
    w.each(g, nd.shape, [&] {
      w.line(tile_ref(g, x, "a") + "[" + shifted(xs.cols, nd.row_offset, nd.col_offset) + "] += " + a + "[e];");
    });
    return;
  }
  // One loop per operand (the two may be one tile) that wants a gradient.
  int dst = nd.args[0], src = nd.args[1];
  TileShape ss = g.nodes[size_t(src)].shape;
  w.line("// adjoint of " + tile_name(g, n) + ": " + tile_name(g, dst, "a") + " += " + an + " outside " + block(ss) +
         "; " + tile_name(g, src, "a") + " += " + an + block(ss));
  if (needs[size_t(dst)])
    w.each(g, nd.shape, [&] {
      w.open("if (!(" + in_block(nd.shape, ss, nd.row_offset, nd.col_offset) + ")) {");
      w.line(tile_ref(g, dst, "a") + "[e] += " + a + "[e];");
      w.close();
    });
  if (needs[size_t(src)])
    w.each(g, ss, [&] {
      w.line(tile_ref(g, src, "a") + "[e] += " + a + "[" + shifted(nd.shape.cols, nd.row_offset, nd.col_offset) + "];");
    });
}

HostArray host_view(const HostArray& x, int rows, int cols, int row_offset, int col_offset) {
  HostArray y = HostArray::full({rows, cols}, 0.0);
  int64_t x_cols = x.shape()[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      y.values()[size_t(r * cols + c)] = x.values()[size_t((r + row_offset) * x_cols + c + col_offset)];
  return y;
}

HostArray host_assign(const HostArray& dst, const HostArray& src, int row_offset, int col_offset) {
  HostArray y = dst;
  int64_t rows = src.shape()[0], cols = src.shape()[1], dst_cols = dst.shape()[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      y.values()[size_t((r + row_offset) * dst_cols + c + col_offset)] = src.values()[size_t(r * cols + c)];
  return y;
}

// ---- the records (see op_record.hpp)

namespace {

std::string view_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  return "tile_view(" + tile_name(g, node.args[0]) + "[rows " + std::to_string(node.row_offset) + " +" +
         std::to_string(node.shape.rows) + ", cols " + std::to_string(node.col_offset) + " +" +
         std::to_string(node.shape.cols) + "]), a copy";
}

std::string assign_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  TileShape s = g.nodes[size_t(node.args[1])].shape;
  return "tile_assign(" + tile_name(g, node.args[0]) + " with [rows " + std::to_string(node.row_offset) + " +" +
         std::to_string(s.rows) + ", cols " + std::to_string(node.col_offset) + " +" + std::to_string(s.cols) + "] ← " +
         tile_name(g, node.args[1]) + ")";
}

HostArray view_host(const HostStep& s) {
  const Node& n = s.n();
  return host_view(s.arg(0), n.shape.rows, n.shape.cols, n.row_offset, n.col_offset);
}

HostArray assign_host(const HostStep& s) { return host_assign(s.arg(0), s.arg(1), s.n().row_offset, s.n().col_offset); }

}  // namespace

std::vector<OpRecord> block_records() {
  return {
      {Op::view, "tile_view", nullptr, view_describe, emit_block_forward, emit_block_adjoint, nullptr, view_host},
      {Op::assign, "tile_assign", nullptr, assign_describe, emit_block_forward, emit_block_adjoint, nullptr,
       assign_host},
  };
}

}  // namespace surfgrad::tiles::detail
