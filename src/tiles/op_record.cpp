// The table of tile primitives (see op_record.hpp): the families' records, indexed by Op.
#include "tiles/op_record.hpp"

#include <array>

#include "surfgrad/error.hpp"

namespace surfgrad::tiles::detail {

namespace {

constexpr size_t kOps = size_t(Op::assign) + 1;

std::array<OpRecord, kOps> make_table() {
  std::array<OpRecord, kOps> table{};
  std::array<bool, kOps> seen{};
  for (auto family : {memory_records, elementwise_records, layout_records, matmul_records, linalg_records, fft_records,
                      block_records})
    for (const OpRecord& r : family()) {
      if (seen[size_t(r.op)])
        throw Error(ErrorKind::Value, std::string("tile primitive ") + r.primitive + " has two records");
      seen[size_t(r.op)] = true;
      table[size_t(r.op)] = r;
    }
  for (size_t i = 0; i < kOps; ++i)
    if (!seen[i]) throw Error(ErrorKind::Value, "tile primitive " + std::to_string(i) + " has no record");
  return table;
}

}  // namespace

const OpRecord& op_record(Op op) {
  static const std::array<OpRecord, kOps> table = make_table();
  return table[size_t(op)];
}

const char* op_name(Op op) { return op_record(op).primitive; }

std::string tile_name(const Graph& g, int node, const char* prefix) {
  const Node& n = g.nodes[size_t(node)];
  const OpRecord& r = op_record(n.op);
  return prefix + std::to_string(node) + "_" + (r.tile_suffix ? r.tile_suffix(g, n) : std::string(r.primitive + 5));
}

std::string describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  std::string lhs = node.makes_tile() ? tile_name(g, n) + " (" + shape_text(node.shape) + ") = " : "";
  return lhs + op_record(node.op).describe(g, n);
}

void emit_forward_node(Wgsl& w, const Graph& g, int n) { op_record(g.nodes[size_t(n)].op).forward(w, g, n); }

}  // namespace surfgrad::tiles::detail
