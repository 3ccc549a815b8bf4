// The primitives that move tiles between arrays and workgroup memory: tile_load, tile_store and
// tile_atomic_add, one record each (see op_record.hpp). A load's adjoint is an atomic add into
// the input's gradient (several blocks may load the same elements); a store's and an atomic
// add's adjoint reads the output's gradient where they wrote.
#include "surfgrad/error.hpp"
#include "tiles/op_record.hpp"

namespace surfgrad::tiles::detail {

namespace {

std::string at_text(const Graph& g, int array, TileShape s, At at) {
  auto axis = [](const Coord& c, int extent) {
    if (c.axis < 0) return std::to_string(c.constant * extent + c.offset);  // a fixed element
    std::string base = std::string("block.") + "xyz"[c.axis];
    base = extent == 1 ? base : std::to_string(extent) + "·" + base;
    return c.offset ? base + " + " + std::to_string(c.offset) : base;
  };
  std::string t = g.arrays[size_t(array)].name + "[";
  if (at.batch.axis >= 0 || at.batch.constant != 0) t += axis(at.batch, 1) + ", ";
  return t + "rows " + axis(at.row, s.rows) + " +" + std::to_string(s.rows) + ", cols " + axis(at.col, s.cols) + " +" +
         std::to_string(s.cols) + "]";
}

// ---- the host reference's view of an array

struct Extent {
  int64_t batch, rows, cols;
};

Extent extent_of(const Graph& g, int array, const HostArray& a) {
  if (a.rank() != 2 && a.rank() != 3)
    throw Error(ErrorKind::Shape, "tile kernel '" + g.name + "' (host reference): array '" +
                                      g.arrays[size_t(array)].name + "' must be rank 2 or 3, got " +
                                      shape_str(a.shape()));
  return {a.rank() == 3 ? a.shape()[0] : 1, a.shape()[size_t(a.rank() - 2)], a.shape()[size_t(a.rank() - 1)]};
}

int64_t coord(const Coord& c, const int64_t block[3]) { return c.axis < 0 ? c.constant : block[c.axis]; }

// Calls `visit(flat index in the array, tile element)` for each element of the tile at `at`
// that lies inside the array.
template <typename F>
void each_inside(const Node& n, Extent x, const int64_t block[3], F&& visit) {
  int64_t b = coord(n.at.batch, block) + n.at.batch.offset,
          r0 = coord(n.at.row, block) * n.shape.rows + n.at.row.offset,
          c0 = coord(n.at.col, block) * n.shape.cols + n.at.col.offset;
  if (b >= x.batch) return;
  for (int64_t r = 0; r < n.shape.rows; ++r)
    for (int64_t c = 0; c < n.shape.cols; ++c)
      if (r0 + r < x.rows && c0 + c < x.cols) visit(((b * x.rows) + r0 + r) * x.cols + c0 + c, r * n.shape.cols + c);
}

// ---- tile_load

std::string load_suffix(const Graph& g, const Node& n) { return g.arrays[size_t(n.array)].name; }

std::string load_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  return "tile_load(" + at_text(g, node.array, node.shape, node.at) + ")";
}

void load_forward(Wgsl& w, const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  emit_load(w, g, tile_ref(g, n), false, node.array, binding_name(g.arrays[size_t(node.array)]), node.shape, node.at);
}

void load_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>&) {
  const Node& node = g.nodes[size_t(n)];
  if (!g.arrays[size_t(node.array)].differentiable) return;  // a constant: no gradient leaves
  w.line("// adjoint of " + tile_name(g, n) + ": d_" + g.arrays[size_t(node.array)].name +
         " += " + tile_name(g, n, "a"));
  emit_write(w, g, tile_ref(g, n, "a"), node.array, grad_name(g.arrays[size_t(node.array)]), node.shape, node.at, true);
}

HostArray load_host(const HostStep& s) {
  const Node& n = s.n();
  const HostArray& a = s.inputs[size_t(s.slot[size_t(n.array)])];
  HostArray t = HostArray::full({n.shape.rows, n.shape.cols}, 0.0);
  each_inside(n, extent_of(s.g, n.array, a), s.block,
              [&](int64_t gi, int64_t e) { t.values()[size_t(e)] = a.values()[size_t(gi)]; });
  return t;
}

// ---- tile_store and tile_atomic_add

template <bool kAtomic>
std::string write_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  if (kAtomic)
    return "tile_atomic_add(" + at_text(g, node.array, node.shape, node.at) + " += " + tile_name(g, node.args[0]) + ")";
  return "tile_store(" + at_text(g, node.array, node.shape, node.at) + " ← " + tile_name(g, node.args[0]) + ")";
}

void write_forward(Wgsl& w, const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  const ArrayParam& a = g.arrays[size_t(node.array)];
  emit_write(w, g, tile_ref(g, node.args[0]), node.array, binding_name(a), node.shape, node.at,
             node.op == Op::atomic_add);
}

// Both pass the output's gradient straight to the tile written (masked like the write).
void write_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>&) {
  const Node& node = g.nodes[size_t(n)];
  int x = node.args[0];
  w.line("// adjoint of " + std::string(op_name(node.op)) + ": " + tile_name(g, x, "a") + " += d_" +
         g.arrays[size_t(node.array)].name + " at the same place");
  emit_load(w, g, tile_ref(g, x, "a"), true, node.array, grad_name(g.arrays[size_t(node.array)]), node.shape, node.at);
}

HostArray write_host(const HostStep& s) {
  const Node& n = s.n();
  HostArray& a = s.outputs[size_t(s.slot[size_t(n.array)])];
  const HostArray& t = s.arg(0);
  bool add = n.op == Op::atomic_add;
  each_inside(n, extent_of(s.g, n.array, a), s.block, [&](int64_t gi, int64_t e) {
    double v = t.values()[size_t(e)];
    a.values()[size_t(gi)] = add ? a.values()[size_t(gi)] + v : v;
  });
  return HostArray();
}

}  // namespace

std::vector<OpRecord> memory_records() {
  return {
      {Op::load, "tile_load", load_suffix, load_describe, load_forward, load_adjoint, nullptr, load_host},
      {Op::store, "tile_store", nullptr, write_describe<false>, write_forward, write_adjoint, nullptr, write_host},
      {Op::atomic_add, "tile_atomic_add", nullptr, write_describe<true>, write_forward, write_adjoint, nullptr,
       write_host},
  };
}

}  // namespace surfgrad::tiles::detail
