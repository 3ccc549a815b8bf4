// The elementwise primitives: tile_map of a unary op (the library's unary op table) or of add,
// sub, mul on two tiles, and tile_scale by a constant; one record each (see op_record.hpp).
#include "tiles/op_record.hpp"

namespace surfgrad::tiles::detail {

namespace {

// ---- tile_map(unary)

std::string unary_suffix(const Graph&, const Node& n) { return unary_name(n.unary); }

std::string unary_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  return "tile_map(" + std::string(unary_name(node.unary)) + ", " + tile_name(g, node.args[0]) + ")";
}

void unary_forward(Wgsl& w, const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  std::string t = tile_ref(g, n), x = tile_ref(g, node.args[0]);
  w.each(g, node.shape, [&] { w.line(t + "[e] = unary_" + unary_name(node.unary) + "(" + x + "[e]);"); });
}

void unary_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>&) {
  const Node& node = g.nodes[size_t(n)];
  int x = node.args[0];
  std::string f = std::string("unary_") + unary_name(node.unary) + "_derivative";
  w.line("// adjoint of " + tile_name(g, n) + ": " + tile_name(g, x, "a") + " += " + tile_name(g, n, "a") + " · f'(x)");
  // Only the tiles the derivative reads are still live here (memory.cpp); 0.0 for the other.
  UnaryReads reads = unary_derivative_reads(node.unary);
  std::string xv = reads.x ? tile_ref(g, x) + "[e]" : "0.0", yv = reads.y ? tile_ref(g, n) + "[e]" : "0.0";
  std::string ax = tile_ref(g, x, "a"), an = tile_ref(g, n, "a");
  w.each(g, node.shape, [&] { w.line(ax + "[e] += " + an + "[e] * " + f + "(" + xv + ", " + yv + ");"); });
}

std::vector<int> unary_reads(const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& node = g.nodes[size_t(n)];
  std::vector<int> r;
  if (!needs[size_t(node.args[0])]) return r;
  UnaryReads reads = unary_derivative_reads(node.unary);
  if (reads.x) r.push_back(node.args[0]);
  if (reads.y) r.push_back(n);
  return r;
}

HostArray map_host(const HostStep& s) {
  HostArray t = s.arg(0);
  for (double& v : t.values()) v = unary_host(s.n().unary, v);
  return t;
}

// ---- tile_scale

std::string scale_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  return tile_name(g, node.args[0]) + " · " + scalar_literal(node.scalar);
}

void scale_forward(Wgsl& w, const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  std::string t = tile_ref(g, n), x = tile_ref(g, node.args[0]);
  w.each(g, node.shape, [&] { w.line(t + "[e] = " + x + "[e] * " + scalar_literal(node.scalar) + ";"); });
}

void scale_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>&) {
  const Node& node = g.nodes[size_t(n)];
  int x = node.args[0];
  std::string s = scalar_literal(node.scalar), ax = tile_ref(g, x, "a"), an = tile_ref(g, n, "a");
  w.line("// adjoint of " + tile_name(g, n) + ": " + tile_name(g, x, "a") + " += " + tile_name(g, n, "a") + " · " + s);
  w.each(g, node.shape, [&] { w.line(ax + "[e] += " + an + "[e] * " + s + ";"); });
}

HostArray scale_host(const HostStep& s) {
  HostArray t = s.arg(0);
  for (double& v : t.values()) v *= double(float(s.n().scalar));  // the kernel's f32 factor
  return t;
}

// ---- tile_map(add | sub | mul)

const char* binary_symbol(Binary b) { return b == Binary::add ? " + " : b == Binary::sub ? " - " : " * "; }

std::string binary_suffix(const Graph&, const Node& n) {
  return n.binary == Binary::add ? "add" : n.binary == Binary::sub ? "sub" : "mul";
}

std::string binary_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  return tile_name(g, node.args[0]) + binary_symbol(node.binary) + tile_name(g, node.args[1]);
}

void binary_forward(Wgsl& w, const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  std::string t = tile_ref(g, n), x = tile_ref(g, node.args[0]), y = tile_ref(g, node.args[1]);
  const char* sym = binary_symbol(node.binary);
  w.each(g, node.shape, [&] { w.line(t + "[e] = " + x + "[e]" + sym + y + "[e];"); });
}

void binary_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& node = g.nodes[size_t(n)];
  const AdjointNames nm{g, needs};
  int x = node.args[0], y = node.args[1];
  const char* sign = node.binary == Binary::sub ? " -= " : " += ";
  std::string factor = node.binary == Binary::mul ? " · " : "";
  w.line("// adjoint of " + nm.tn(n) + ": " + nm.an(x) + " += " + nm.an(n) + factor + (factor.empty() ? "" : nm.tn(y)) +
         "; " + nm.an(y) + sign + nm.an(n) + factor + (factor.empty() ? "" : nm.tn(x)));
  // One loop per operand: the two may be one tile (x + x). An operand that depends on no
  // differentiable input gets nothing.
  if (node.binary == Binary::mul) {
    if (nm.wants(x))
      w.each(g, node.shape, [&] { w.line(nm.a(x) + "[e] += " + nm.a(n) + "[e] * " + nm.t(y) + "[e];"); });
    if (nm.wants(y))
      w.each(g, node.shape, [&] { w.line(nm.a(y) + "[e] += " + nm.a(n) + "[e] * " + nm.t(x) + "[e];"); });
  } else {
    if (nm.wants(x)) w.each(g, node.shape, [&] { w.line(nm.a(x) + "[e] += " + nm.a(n) + "[e];"); });
    std::string op = node.binary == Binary::add ? " += " : " -= ";
    if (nm.wants(y)) w.each(g, node.shape, [&] { w.line(nm.a(y) + "[e]" + op + nm.a(n) + "[e];"); });
  }
}

// A product's adjoint reads the other operand.
std::vector<int> binary_reads(const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& node = g.nodes[size_t(n)];
  std::vector<int> r;
  if (node.binary != Binary::mul) return r;
  if (needs[size_t(node.args[0])]) r.push_back(node.args[1]);
  if (needs[size_t(node.args[1])]) r.push_back(node.args[0]);
  return r;
}

HostArray binary_host(const HostStep& s) {
  Binary b = s.n().binary;
  return b == Binary::add   ? add(s.arg(0), s.arg(1))
         : b == Binary::sub ? sub(s.arg(0), s.arg(1))
                            : mul(s.arg(0), s.arg(1));
}

}  // namespace

std::vector<OpRecord> elementwise_records() {
  return {
      {Op::unary, "tile_map", unary_suffix, unary_describe, unary_forward, unary_adjoint, unary_reads, map_host},
      {Op::scale, "tile_scale", nullptr, scale_describe, scale_forward, scale_adjoint, nullptr, scale_host},
      {Op::binary, "tile_map", binary_suffix, binary_describe, binary_forward, binary_adjoint, binary_reads,
       binary_host},
  };
}

}  // namespace surfgrad::tiles::detail
