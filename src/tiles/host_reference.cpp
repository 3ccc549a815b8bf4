// The float64 host reference of a tile kernel: the same program, block by block, each primitive
// computed by its record's host reference (op_record.hpp), which uses the library's (HostArray:
// matmul, sum, max, expand, transpose, the unary table's float64 functions; Cholesky and the
// triangular solves by the textbook loops of cholesky.cpp, Fourier transforms by the O(n²) sums
// of fft.cpp, views and assigns by element loops in view.cpp) — nothing shared with the WGSL
// generators except the program itself. gradcheck differentiates it by finite differences.
#include "surfgrad/error.hpp"
#include "tiles/op_record.hpp"

namespace surfgrad::tiles {

using detail::Graph;

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
          detail::HostStep step{g, int(k), block, value, inputs, outputs, slot};
          value[k] = detail::op_record(g.nodes[k].op).host(step);
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
