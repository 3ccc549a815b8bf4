// The tile builder: each primitive checks its shapes and appends one node to its kernel's
// program. Errors name the kernel, the primitive and the shapes, and come before any GPU work.
#include <cctype>
#include <cmath>

#include "surfgrad/error.hpp"
#include "tiles/graph.hpp"

namespace surfgrad::tiles {

struct Access {
  static Tile make(const std::shared_ptr<detail::Graph>& g, int node) {
    Tile t;
    t.graph_ = g;
    t.node_ = node;
    t.shape_ = g->nodes[size_t(node)].shape;
    return t;
  }
  static const std::shared_ptr<detail::Graph>& graph(const Tile& t) { return t.graph_; }
  static const std::shared_ptr<detail::Graph>& graph(const Array& a) { return a.graph_; }
};

namespace {

using detail::Graph;
using detail::Node;
using detail::Op;

std::string where(const Graph& g, const char* primitive) { return "tile kernel '" + g.name + "', " + primitive + ": "; }

Graph& graph_of(const Tile& t, const char* primitive) {
  if (!Access::graph(t))
    throw Error(ErrorKind::Value, std::string(primitive) + ": an empty tile (default-constructed)");
  return *Access::graph(t);
}

void same_kernel(const Tile& a, const Tile& b, const char* primitive) {
  if (Access::graph(a) != Access::graph(b))
    throw Error(ErrorKind::Value, where(*Access::graph(a), primitive) + "its tiles belong to different kernels");
}

Graph& graph_of(const Array& a, const char* primitive) {
  if (!Access::graph(a))
    throw Error(ErrorKind::Value, std::string(primitive) + ": an empty array (default-constructed)");
  return *Access::graph(a);
}

void check_coord(const Graph& g, const char* primitive, const Coord& c) {
  if (c.axis < -1 || c.axis > 2)
    throw Error(ErrorKind::Value, where(g, primitive) + "block axis " + std::to_string(c.axis) + " is not 0, 1 or 2");
  if (c.offset < 0)
    throw Error(ErrorKind::Value, where(g, primitive) + "element offset " + std::to_string(c.offset) + " is negative");
  if (c.axis == -1 && c.constant < 0)
    throw Error(ErrorKind::Value, where(g, primitive) + "tile index " + std::to_string(c.constant) + " is negative");
}

Tile append(const Tile& from, Node n) {
  Graph& g = *Access::graph(from);
  g.nodes.push_back(std::move(n));
  return Access::make(Access::graph(from), int(g.nodes.size()) - 1);
}

void write(const Array& array, const Tile& tile, At at, Op op) {
  const char* primitive = detail::op_name(op);
  Graph& g = graph_of(array, primitive);
  if (Access::graph(tile).get() != &g)
    throw Error(ErrorKind::Value, where(g, primitive) + "the tile belongs to another kernel");
  detail::ArrayParam& p = g.arrays[size_t(array.index())];
  if (!p.output)
    throw Error(ErrorKind::Value, where(g, primitive) + "'" + p.name + "' is an input; write to an output");
  bool atomic = op == Op::atomic_add;
  if ((atomic && p.stored) || (!atomic && p.atomic))
    throw Error(ErrorKind::Value, where(g, primitive) + "'" + p.name +
                                      "' is written both by tile_store and tile_atomic_add; use one of them");
  (atomic ? p.atomic : p.stored) = true;
  check_coord(g, primitive, at.row);
  check_coord(g, primitive, at.col);
  check_coord(g, primitive, at.batch);
  Node n{op, tile.shape(), {tile.node()}};
  n.array = array.index();
  n.at = at;
  g.nodes.push_back(n);
}

}  // namespace

namespace detail {

std::string shape_text(TileShape s) { return std::to_string(s.rows) + "×" + std::to_string(s.cols); }

}  // namespace detail

Kernel::Kernel(std::string name, int threads) : graph_(std::make_shared<Graph>()) {
  if (threads < 1 || threads > 1024)
    throw Error(ErrorKind::Value, "tile kernel '" + name + "': " + std::to_string(threads) +
                                      " threads per workgroup; use 1 … 1024 (the adapter may allow fewer)");
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      throw Error(ErrorKind::Value, "tile kernel '" + name + "': names are letters, digits and '_' (WGSL comments)");
  graph_->name = std::move(name);
  graph_->threads = threads;
}

static Array add_array(const std::shared_ptr<Graph>& g, const std::string& name, bool output, Array a) {
  if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0])))
    throw Error(ErrorKind::Value, "tile kernel '" + g->name + "': array name '" + name + "' must start with a letter");
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      throw Error(ErrorKind::Value, "tile kernel '" + g->name + "': array name '" + name +
                                        "' may hold letters, digits and '_' only (it names a WGSL binding)");
  for (const auto& p : g->arrays)
    if (p.name == name) throw Error(ErrorKind::Value, "tile kernel '" + g->name + "': two arrays named '" + name + "'");
  g->arrays.push_back({name, output});
  (void)a;
  return a;
}

Array Kernel::input(const std::string& name, bool differentiable, DType dtype) {
  if (dtype != DType::f32 && dtype != DType::f16)
    throw Error(ErrorKind::DType, "tile kernel '" + graph_->name + "': input '" + name + "' of dtype " +
                                      dtype_name(dtype) + "; tile inputs are f32 or f16");
  Array a;
  a.graph_ = graph_;
  a.index_ = int(graph_->arrays.size());
  add_array(graph_, name, false, a);
  graph_->arrays.back().differentiable = differentiable;
  graph_->arrays.back().dtype = dtype;
  return a;
}

Array Kernel::output(const std::string& name) {
  Array a;
  a.graph_ = graph_;
  a.index_ = int(graph_->arrays.size());
  return add_array(graph_, name, true, a);
}

const std::string& Kernel::name() const { return graph_->name; }
int Kernel::threads() const { return graph_->threads; }

Tile tile_load(const Array& array, TileShape shape, At at) {
  Graph& g = graph_of(array, "tile_load");
  const detail::ArrayParam& p = g.arrays[size_t(array.index())];
  if (p.output)
    throw Error(ErrorKind::Value, where(g, "tile_load") + "'" + p.name + "' is an output; tiles load from inputs");
  if (shape.rows < 1 || shape.cols < 1)
    throw Error(ErrorKind::Shape, where(g, "tile_load") + "tile shape " + detail::shape_text(shape) + " is empty");
  check_coord(g, "tile_load", at.row);
  check_coord(g, "tile_load", at.col);
  check_coord(g, "tile_load", at.batch);
  Node n{Op::load, shape};
  n.array = array.index();
  n.at = at;
  g.nodes.push_back(n);
  return Access::make(Access::graph(array), int(g.nodes.size()) - 1);
}

void tile_store(const Array& array, const Tile& tile, At at) { write(array, tile, at, Op::store); }
void tile_atomic_add(const Array& array, const Tile& tile, At at) { write(array, tile, at, Op::atomic_add); }

Tile tile_map(Unary op, const Tile& x) {
  graph_of(x, "tile_map");
  Node n{Op::unary, x.shape(), {x.node()}};
  n.unary = op;
  return append(x, n);
}

Tile tile_map(Binary op, const Tile& a, const Tile& b) {
  Graph& g = graph_of(a, "tile_map");
  same_kernel(a, b, "tile_map");
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw Error(ErrorKind::Shape, where(g, "tile_map") + "tiles of shapes " + detail::shape_text(a.shape()) + " and " +
                                      detail::shape_text(b.shape()) +
                                      " differ; tile_broadcast one of them to the other's shape first");
  Node n{Op::binary, a.shape(), {a.node(), b.node()}};
  n.binary = op;
  return append(a, n);
}

Tile tile_scale(const Tile& x, double s) {
  Graph& g = graph_of(x, "tile_scale");
  // The factor becomes a WGSL f32 literal: it must be one.
  if (!std::isfinite(s) || std::fabs(s) > 3.4e38)
    throw Error(ErrorKind::Value, where(g, "tile_scale") + "the factor " + std::to_string(s) +
                                      " is not a finite f32; scale by a finite number");
  Node n{Op::scale, x.shape(), {x.node()}};
  n.scalar = s;
  return append(x, n);
}
Tile operator*(const Tile& x, double s) { return tile_scale(x, s); }
Tile operator*(double s, const Tile& x) { return tile_scale(x, s); }

Tile operator+(const Tile& a, const Tile& b) { return tile_map(Binary::add, a, b); }
Tile operator-(const Tile& a, const Tile& b) { return tile_map(Binary::sub, a, b); }
Tile operator*(const Tile& a, const Tile& b) { return tile_map(Binary::mul, a, b); }

Tile tile_broadcast(const Tile& x, TileShape shape) {
  Graph& g = graph_of(x, "tile_broadcast");
  bool rows_ok = x.rows() == shape.rows || x.rows() == 1, cols_ok = x.cols() == shape.cols || x.cols() == 1;
  if (!rows_ok || !cols_ok || shape.rows < 1 || shape.cols < 1)
    throw Error(ErrorKind::Shape, where(g, "tile_broadcast") + "a tile of shape " + detail::shape_text(x.shape()) +
                                      " does not broadcast to " + detail::shape_text(shape) +
                                      " (only axes of extent 1 repeat)");
  return append(x, Node{Op::broadcast, shape, {x.node()}});
}

Tile tile_transpose(const Tile& x) {
  graph_of(x, "tile_transpose");
  return append(x, Node{Op::transpose, {x.cols(), x.rows()}, {x.node()}});
}

Tile tile_reduce(Reduce op, const Tile& x, int axis) {
  Graph& g = graph_of(x, "tile_reduce");
  if (axis != 0 && axis != 1)
    throw Error(ErrorKind::Value, where(g, "tile_reduce") + "axis " + std::to_string(axis) + " of a " +
                                      detail::shape_text(x.shape()) + " tile; tiles have axes 0 and 1");
  Node n{Op::reduce, axis == 0 ? TileShape{1, x.cols()} : TileShape{x.rows(), 1}, {x.node()}};
  n.reduce = op;
  n.axis = axis;
  return append(x, n);
}

Tile tile_sum(const Tile& x, int axis) { return tile_reduce(Reduce::sum, x, axis); }
Tile tile_sum(const Tile& x) { return tile_sum(tile_sum(x, 0), 1); }

Tile tile_matmul(const Tile& a, const Tile& b) {
  Graph& g = graph_of(a, "tile_matmul");
  same_kernel(a, b, "tile_matmul");
  if (a.cols() != b.rows())
    throw Error(ErrorKind::Shape, where(g, "tile_matmul") + "A is " + detail::shape_text(a.shape()) + " and B is " +
                                      detail::shape_text(b.shape()) + ": A's columns (" + std::to_string(a.cols()) +
                                      ") must equal B's rows (" + std::to_string(b.rows()) + ")");
  return append(a, Node{Op::matmul, {a.rows(), b.cols()}, {a.node(), b.node()}});
}

Tile tile_matmul(const Tile& a, const Array& b, int cols, int row_offset) {
  Graph& g = graph_of(a, "tile_matmul");
  if (Access::graph(b).get() != &g)
    throw Error(ErrorKind::Value, where(g, "tile_matmul") + "the array belongs to another kernel");
  const detail::ArrayParam& p = g.arrays[size_t(b.index())];
  if (p.output)
    throw Error(ErrorKind::Value, where(g, "tile_matmul") + "'" + p.name + "' is an output; B must be an input");
  if (cols < 1)
    throw Error(ErrorKind::Shape,
                where(g, "tile_matmul") + "B ('" + p.name + "') has " + std::to_string(cols) + " columns; at least 1");
  if (row_offset < 0)
    throw Error(ErrorKind::Value, where(g, "tile_matmul") + "row offset " + std::to_string(row_offset) + " into '" +
                                      p.name + "' is negative");
  Node n{Op::matmul, {a.rows(), cols}, {a.node()}};
  n.array = b.index();
  n.at.row = Coord::element(row_offset);
  return append(a, n);
}

namespace {

// A triangular or symmetric matrix operand must be square; `role` is its name in the message.
void check_square(const Graph& g, const char* primitive, const char* role, const Tile& m, const char* fix) {
  if (m.rows() != m.cols())
    throw Error(ErrorKind::Shape, where(g, primitive) + role + " is " + detail::shape_text(m.shape()) + "; " + fix);
}

Tile triangular_solve(Op op, const Tile& m, const Tile& b) {
  const char* primitive = detail::op_name(op);
  const char* role = op == Op::lower_solve ? "L" : "U";
  Graph& g = graph_of(m, primitive);
  same_kernel(m, b, primitive);
  check_square(g, primitive, role, m, "a triangular matrix must be a square tile (n×n)");
  if (b.rows() != m.rows())
    throw Error(ErrorKind::Shape, where(g, primitive) + role + " is " + detail::shape_text(m.shape()) + " and B is " +
                                      detail::shape_text(b.shape()) + ": B's rows (" + std::to_string(b.rows()) +
                                      ") must equal " + role + "'s (" + std::to_string(m.rows()) + ")");
  return append(m, Node{op, b.shape(), {m.node(), b.node()}});
}

}  // namespace

Tile tile_cholesky(const Tile& a) {
  Graph& g = graph_of(a, "tile_cholesky");
  check_square(g, "tile_cholesky", "A", a,
               "Cholesky factors a square symmetric positive definite tile (n×n); load A with a square shape");
  return append(a, Node{Op::cholesky, a.shape(), {a.node()}});
}

Tile tile_lower_solve(const Tile& l, const Tile& b) { return triangular_solve(Op::lower_solve, l, b); }
Tile tile_upper_solve(const Tile& u, const Tile& b) { return triangular_solve(Op::upper_solve, u, b); }

Tile tile_cholesky_solve(const Tile& l, const Tile& b) {
  // Checked here so that the message names this primitive rather than the substitutions.
  Graph& g = graph_of(l, "tile_cholesky_solve");
  same_kernel(l, b, "tile_cholesky_solve");
  check_square(g, "tile_cholesky_solve", "L", l, "pass the n×n factor tile_cholesky returned");
  if (b.rows() != l.rows())
    throw Error(ErrorKind::Shape, where(g, "tile_cholesky_solve") + "L is " + detail::shape_text(l.shape()) +
                                      " and B is " + detail::shape_text(b.shape()) + ": B's rows (" +
                                      std::to_string(b.rows()) + ") must equal L's (" + std::to_string(l.rows()) + ")");
  Tile y = tile_lower_solve(l, b);  // its own statement: the nodes in this order
  return tile_upper_solve(tile_transpose(l), y);
}

namespace {

// The transform node and the two copies of its parts (src/tiles/fft.cpp).
ComplexTile fourier(const Tile& re, const Tile* im, bool inverse) {
  const char* primitive = inverse ? "tile_ifft" : "tile_fft";
  Graph& g = graph_of(re, primitive);
  if (im) {
    graph_of(*im, primitive);
    same_kernel(re, *im, primitive);
    if (re.rows() != im->rows() || re.cols() != im->cols())
      throw Error(ErrorKind::Shape, where(g, primitive) + "the real part is " + detail::shape_text(re.shape()) +
                                        " and the imaginary part " + detail::shape_text(im->shape()) +
                                        "; they must have one shape");
  }
  int n = re.cols();
  if ((n & (n - 1)) != 0)
    throw Error(ErrorKind::Shape, where(g, primitive) + "a " + detail::shape_text(re.shape()) +
                                      " tile: its rows are signals of " + std::to_string(n) +
                                      " values, and the length must be a power of two (1, 2, 4, 8, …)");
  Node t{Op::fft, {4 * re.rows(), n}, {re.node()}};
  if (im) t.args.push_back(im->node());
  t.inverse = inverse;
  Tile whole = append(re, t);
  Node part{Op::fft_part, re.shape(), {whole.node()}};
  Tile real = append(re, part);
  part.axis = 1;
  return {real, append(re, part)};
}

}  // namespace

ComplexTile tile_fft(const Tile& re, const Tile& im) { return fourier(re, &im, false); }
ComplexTile tile_fft(const Tile& re) { return fourier(re, nullptr, false); }
ComplexTile tile_fft(const ComplexTile& x) { return fourier(x.re, &x.im, false); }
ComplexTile tile_ifft(const Tile& re, const Tile& im) { return fourier(re, &im, true); }
ComplexTile tile_ifft(const ComplexTile& x) { return fourier(x.re, &x.im, true); }

ComplexTile tile_complex_mul(const ComplexTile& a, const ComplexTile& b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

namespace {

// The block of shape `inner` at (row_offset, col_offset) must lie inside the tile `outer`; the
// message names both shapes, the offsets, and the rows and columns the block and the tile cover.
void check_block(const Graph& g, const char* primitive, const std::string& block, TileShape outer,
                 const std::string& tile, TileShape inner, int row_offset, int col_offset) {
  int64_t last_row = int64_t(row_offset) + inner.rows - 1, last_col = int64_t(col_offset) + inner.cols - 1;
  if (row_offset >= 0 && col_offset >= 0 && last_row < outer.rows && last_col < outer.cols) return;
  throw Error(ErrorKind::Shape,
              where(g, primitive) + "a " + detail::shape_text(inner) + " " + block + " at row offset " +
                  std::to_string(row_offset) + ", column offset " + std::to_string(col_offset) +
                  " does not lie inside the " + detail::shape_text(outer) + " " + tile + ": it covers rows " +
                  std::to_string(row_offset) + " … " + std::to_string(last_row) + " and columns " +
                  std::to_string(col_offset) + " … " + std::to_string(last_col) + "; the " + tile + " has rows 0 … " +
                  std::to_string(outer.rows - 1) + " and columns 0 … " + std::to_string(outer.cols - 1));
}

}  // namespace

Tile tile_view(const Tile& x, TileShape shape, int row_offset, int col_offset) {
  Graph& g = graph_of(x, "tile_view");
  if (shape.rows < 1 || shape.cols < 1)
    throw Error(ErrorKind::Shape, where(g, "tile_view") + "view shape " + detail::shape_text(shape) + " of the " +
                                      detail::shape_text(x.shape()) + " tile is empty");
  check_block(g, "tile_view", "view", x.shape(), "tile", shape, row_offset, col_offset);
  Node n{Op::view, shape, {x.node()}};
  n.row_offset = row_offset;
  n.col_offset = col_offset;
  return append(x, n);
}

Tile tile_assign(const Tile& dst, const Tile& src, int row_offset, int col_offset) {
  Graph& g = graph_of(dst, "tile_assign");
  graph_of(src, "tile_assign");
  same_kernel(dst, src, "tile_assign");
  check_block(g, "tile_assign", "source tile", dst.shape(), "destination tile", src.shape(), row_offset, col_offset);
  Node n{Op::assign, dst.shape(), {dst.node(), src.node()}};
  n.row_offset = row_offset;
  n.col_offset = col_offset;
  return append(dst, n);
}

}  // namespace surfgrad::tiles
