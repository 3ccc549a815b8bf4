// The primitives that rearrange or fold a tile: tile_broadcast, tile_transpose and tile_reduce
// (sum or max along an axis), one record each (see op_record.hpp).
#include "tiles/op_record.hpp"

namespace surfgrad::tiles::detail {

namespace {

TileShape shape_of(const Graph& g, int m) { return g.nodes[size_t(m)].shape; }

// ---- tile_broadcast

std::string broadcast_describe(const Graph& g, int n) {
  return "tile_broadcast(" + tile_name(g, g.nodes[size_t(n)].args[0]) + ")";
}

void broadcast_forward(Wgsl& w, const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  TileShape s = shape_of(g, node.args[0]);
  std::string t = tile_ref(g, n), x = tile_ref(g, node.args[0]);
  std::string row = s.rows == 1 ? "0u" : "r", col = s.cols == 1 ? "0u" : "c";
  w.each(g, node.shape, [&] { w.line(t + "[e] = " + x + "[" + row + " * " + u32(s.cols) + " + " + col + "];"); });
}

// Each element of the small tile collects the adjoints of all its copies.
void broadcast_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>&) {
  const Node& node = g.nodes[size_t(n)];
  int x = node.args[0];
  TileShape s = shape_of(g, x), big = node.shape;
  std::string an = tile_ref(g, n, "a");
  w.line("// adjoint of " + tile_name(g, n) + ": " + tile_name(g, x, "a") + " += the sum of " + tile_name(g, n, "a") +
         " over the repeated axes");
  w.each(g, s, [&] {
    w.line("var acc = 0.0;");
    std::string rr = s.rows == 1 ? "rr" : "r", cc = s.cols == 1 ? "cc" : "c";
    if (s.rows == 1) w.open("for (var rr = 0u; rr < " + u32(big.rows) + "; rr++) {");
    if (s.cols == 1) w.open("for (var cc = 0u; cc < " + u32(big.cols) + "; cc++) {");
    w.line("acc += " + an + "[" + rr + " * " + u32(big.cols) + " + " + cc + "];");
    if (s.cols == 1) w.close();
    if (s.rows == 1) w.close();
    w.line(tile_ref(g, x, "a") + "[e] += acc;");
  });
}

HostArray broadcast_host(const HostStep& s) { return s.arg(0).expand({s.n().shape.rows, s.n().shape.cols}); }

// ---- tile_transpose

std::string transpose_describe(const Graph& g, int n) {
  return "tile_transpose(" + tile_name(g, g.nodes[size_t(n)].args[0]) + ")";
}

void transpose_forward(Wgsl& w, const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  std::string t = tile_ref(g, n), x = tile_ref(g, node.args[0]);
  w.each(g, node.shape, [&] { w.line(t + "[e] = " + x + "[c * " + u32(shape_of(g, node.args[0]).cols) + " + r];"); });
}

void transpose_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>&) {
  int x = g.nodes[size_t(n)].args[0];
  w.line("// adjoint of " + tile_name(g, n) + ": " + tile_name(g, x, "a") + " += transpose(" + tile_name(g, n, "a") +
         ")");
  w.each(g, shape_of(g, x), [&] {
    w.line(tile_ref(g, x, "a") + "[e] += " + tile_ref(g, n, "a") + "[c * " + u32(shape_of(g, x).rows) + " + r];");
  });
}

HostArray transpose_host(const HostStep& s) { return s.arg(0).t(); }

// ---- tile_reduce

std::string reduce_suffix(const Graph&, const Node& n) { return n.reduce == Reduce::sum ? "sum" : "max"; }

std::string reduce_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  return "tile_reduce(" + std::string(node.reduce == Reduce::sum ? "sum" : "max") + ", " + tile_name(g, node.args[0]) +
         ", axis " + std::to_string(node.axis) + ")";
}

void reduce_forward(Wgsl& w, const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  TileShape s = shape_of(g, node.args[0]);
  std::string t = tile_ref(g, n), x = tile_ref(g, node.args[0]);
  // axis 0: down the column c; axis 1: along the row r.
  std::string element = node.axis == 0 ? x + "[k * " + u32(s.cols) + " + c]" : x + "[r * " + u32(s.cols) + " + k]";
  int extent = node.axis == 0 ? s.rows : s.cols;
  w.each(g, node.shape, [&] {
    std::string first = node.axis == 0 ? x + "[c]" : x + "[r * " + u32(s.cols) + "]";
    w.line(std::string("var acc = ") + (node.reduce == Reduce::sum ? "0.0" : first) + ";");
    w.open("for (var k = 0u; k < " + u32(extent) + "; k++) {");
    w.line(node.reduce == Reduce::sum ? "acc += " + element + ";" : "acc = max(acc, " + element + ");");
    w.close();
    w.line(t + "[e] = acc;");
  });
}

void reduce_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>&) {
  const Node& node = g.nodes[size_t(n)];
  int x = node.args[0];
  TileShape s = shape_of(g, x);
  std::string tn = tile_name(g, n), an = tile_name(g, n, "a"), ax = tile_ref(g, x, "a"), a = tile_ref(g, n, "a");
  std::string out = node.axis == 0 ? "c" : "r";  // the reduced element each input element feeds
  if (node.reduce == Reduce::sum) {
    w.line("// adjoint of " + tn + ": " + tile_name(g, x, "a") + " += " + an + " broadcast back along axis " +
           std::to_string(node.axis));
    w.each(g, s, [&] { w.line(ax + "[e] += " + a + "[" + out + "];"); });
    return;
  }
  // The maxima share the gradient equally (the library's rule for ties).
  w.line("// adjoint of " + tn + ": " + tile_name(g, x, "a") + " += " + an + " / (number of maxima) where " +
         tile_name(g, x) + " is the maximum");
  int extent = node.axis == 0 ? s.rows : s.cols;
  std::string tx = tile_ref(g, x);
  std::string element = node.axis == 0 ? tx + "[k * " + u32(s.cols) + " + c]" : tx + "[r * " + u32(s.cols) + " + k]";
  w.each(g, s, [&] {
    w.line("let m = " + tile_ref(g, n) + "[" + out + "];");
    w.open("if (" + tx + "[e] == m) {");
    w.line("var ties = 0.0;");
    w.open("for (var k = 0u; k < " + u32(extent) + "; k++) {");
    w.line("ties += select(0.0, 1.0, " + element + " == m);");
    w.close();
    w.line(ax + "[e] += " + a + "[" + out + "] / ties;");
    w.close();
  });
}

// A max's adjoint compares the input with the maxima.
std::vector<int> reduce_reads(const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& node = g.nodes[size_t(n)];
  if (node.reduce == Reduce::max && needs[size_t(node.args[0])]) return {node.args[0], n};
  return {};
}

HostArray reduce_host(const HostStep& s) {
  const Node& n = s.n();
  return n.reduce == Reduce::sum ? s.arg(0).sum({n.axis}, true) : s.arg(0).max({n.axis}, true);
}

}  // namespace

std::vector<OpRecord> layout_records() {
  return {
      {Op::broadcast, "tile_broadcast", nullptr, broadcast_describe, broadcast_forward, broadcast_adjoint, nullptr,
       broadcast_host},
      {Op::transpose, "tile_transpose", nullptr, transpose_describe, transpose_forward, transpose_adjoint, nullptr,
       transpose_host},
      {Op::reduce, "tile_reduce", reduce_suffix, reduce_describe, reduce_forward, reduce_adjoint, reduce_reads,
       reduce_host},
  };
}

}  // namespace surfgrad::tiles::detail
