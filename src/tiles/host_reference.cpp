// The float64 host reference of a tile kernel: the same program, block by block, with each
// primitive computed by the library's host reference (HostArray: matmul, sum, max, expand,
// transpose, the unary table's float64 functions; Cholesky and the triangular solves by the
// textbook loops of cholesky.cpp, Fourier transforms by the O(n²) sums of fft.cpp, views and
// assigns by element loops in view.cpp) — nothing
// shared with the WGSL generators except the program itself. gradcheck differentiates it by
// finite differences.
#include "surfgrad/error.hpp"
#include "tiles/cholesky.hpp"
#include "tiles/fft.hpp"
#include "tiles/graph.hpp"
#include "tiles/view.hpp"

namespace surfgrad::tiles {

using detail::Graph;
using detail::Node;
using detail::Op;

namespace {

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

}  // namespace

std::vector<HostArray> Kernel::reference(const std::vector<HostArray>& inputs, std::vector<HostArray> outputs,
                                         Grid grid) const {
  const Graph& g = *graph_;
  std::vector<int> ins = g.inputs(), outs = g.outputs();
  if (inputs.size() != ins.size() || outputs.size() != outs.size())
    throw Error(ErrorKind::Value, "tile kernel '" + g.name + "' (host reference): " + std::to_string(ins.size()) +
                                      " inputs and " + std::to_string(outs.size()) + " outputs declared, " +
                                      std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()) +
                                      " given");
  std::vector<int> slot(g.arrays.size());  // the array's position among the inputs or outputs
  for (size_t i = 0; i < ins.size(); ++i) slot[size_t(ins[i])] = int(i);
  for (size_t i = 0; i < outs.size(); ++i) slot[size_t(outs[i])] = int(i);
  std::vector<HostArray> value(g.nodes.size());
  for (int64_t z = 0; z < grid.z; ++z)
    for (int64_t y = 0; y < grid.y; ++y)
      for (int64_t x = 0; x < grid.x; ++x) {
        const int64_t block[3] = {x, y, z};
        for (size_t k = 0; k < g.nodes.size(); ++k) {
          const Node& n = g.nodes[k];
          auto arg = [&](size_t i) -> const HostArray& { return value[size_t(n.args[i])]; };
          Shape tile_shape = {n.shape.rows, n.shape.cols};
          switch (n.op) {
            case Op::load: {
              const HostArray& a = inputs[size_t(slot[size_t(n.array)])];
              HostArray t = HostArray::full(tile_shape, 0.0);
              each_inside(n, extent_of(g, n.array, a), block,
                          [&](int64_t gi, int64_t e) { t.values()[size_t(e)] = a.values()[size_t(gi)]; });
              value[k] = t;
              break;
            }
            case Op::store:
            case Op::atomic_add: {
              HostArray& a = outputs[size_t(slot[size_t(n.array)])];
              const HostArray& t = arg(0);
              bool add = n.op == Op::atomic_add;
              each_inside(n, extent_of(g, n.array, a), block, [&](int64_t gi, int64_t e) {
                double v = t.values()[size_t(e)];
                a.values()[size_t(gi)] = add ? a.values()[size_t(gi)] + v : v;
              });
              break;
            }
            case Op::unary: {
              HostArray t = arg(0);
              for (double& v : t.values()) v = detail::unary_host(n.unary, v);
              value[k] = t;
              break;
            }
            case Op::binary:
              value[k] = n.binary == Binary::add   ? add(arg(0), arg(1))
                         : n.binary == Binary::sub ? sub(arg(0), arg(1))
                                                   : mul(arg(0), arg(1));
              break;
            case Op::scale: {
              HostArray t = arg(0);
              for (double& v : t.values()) v *= double(float(n.scalar));  // the kernel's f32 factor
              value[k] = t;
              break;
            }
            case Op::broadcast: value[k] = arg(0).expand(tile_shape); break;
            case Op::transpose: value[k] = arg(0).t(); break;
            case Op::reduce:
              value[k] = n.reduce == Reduce::sum ? arg(0).sum({n.axis}, true) : arg(0).max({n.axis}, true);
              break;
            case Op::matmul:
              if (n.array >= 0) {
                int64_t row0 = n.at.row.offset;
                value[k] = arg(0).matmul(inputs[size_t(slot[size_t(n.array)])]
                                             .slice(0, row0, row0 + arg(0).shape()[1])
                                             .slice(1, 0, n.shape.cols));
              } else {
                value[k] = arg(0).matmul(arg(1));
              }
              break;
            case Op::cholesky:
              value[k] =
                  detail::host_cholesky(arg(0), "tile kernel '" + g.name + "' (host reference), tile_cholesky " +
                                                    detail::tile_name(g, int(k)) + " in block (" + std::to_string(x) +
                                                    ", " + std::to_string(y) + ", " + std::to_string(z) + "): ");
              break;
            case Op::lower_solve:
            case Op::upper_solve:
              value[k] = detail::host_triangular_solve(arg(0), arg(1), n.op == Op::upper_solve);
              break;
            case Op::fft: value[k] = detail::host_fft(arg(0), n.args.size() > 1 ? &arg(1) : nullptr, n.inverse); break;
            case Op::fft_part: value[k] = arg(0).slice(0, n.axis * n.shape.rows, (n.axis + 1) * n.shape.rows); break;
            case Op::view:
              value[k] = detail::host_view(arg(0), n.shape.rows, n.shape.cols, n.row_offset, n.col_offset);
              break;
            case Op::assign: value[k] = detail::host_assign(arg(0), arg(1), n.row_offset, n.col_offset); break;
          }
        }
      }
  return outputs;
}

HostArray Kernel::operator()(const std::vector<HostArray>& inputs, const Shape& output_shape, Grid grid) const {
  if (graph_->outputs().size() != 1)
    throw Error(ErrorKind::Value, "tile kernel '" + graph_->name + "' has " + std::to_string(graph_->outputs().size()) +
                                      " outputs; this call needs one");
  return reference(inputs, {HostArray::full(output_shape, 0.0)}, grid)[0];
}

}  // namespace surfgrad::tiles
