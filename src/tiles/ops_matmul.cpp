// tile_matmul: C = A·B of two tiles, or of a tile and a weight matrix read in place from an array
// (staged in workgroup memory where it fits); one record (see op_record.hpp).
#include "tiles/matmul_sgmat.hpp"
#include "tiles/op_record.hpp"

namespace surfgrad::tiles::detail {

namespace {

// B(k, j) (or B(j, k)) of in-place weights for a product of `out` with `inner` terms: staged in
// f32 workgroup memory as emit_weight_stage says, except for a product on subgroup matrices,
// which copies its operands into f16 scratch itself (matmul_sgmat.cpp) and reads B where it is.
std::string weight_operand(Wgsl& w, const Graph& g, int n, bool transposed, TileShape out, int inner) {
  if (!sgmat_product(w, out, inner)) return emit_weight_stage(w, g, n, transposed);
  bool staged = w.stage_weights;
  w.stage_weights = false;
  std::string b = emit_weight_stage(w, g, n, transposed);
  w.stage_weights = staged;
  return b;
}

std::string matmul_describe(const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  if (node.array >= 0)
    return "tile_matmul(" + tile_name(g, node.args[0]) + ", " + g.arrays[size_t(node.array)].name + "[rows " +
           std::to_string(node.at.row.offset) + " +" + std::to_string(g.nodes[size_t(node.args[0])].shape.cols) +
           ", cols 0 +" + std::to_string(node.shape.cols) + "] in global memory)";
  return "tile_matmul(" + tile_name(g, node.args[0]) + ", " + tile_name(g, node.args[1]) + ")";
}

void matmul_forward(Wgsl& w, const Graph& g, int n) {
  const Node& node = g.nodes[size_t(n)];
  std::string t = tile_ref(g, n), x = tile_ref(g, node.args[0]);
  TileShape a = g.nodes[size_t(node.args[0])].shape;
  if (node.array >= 0) {  // B is the array itself, exactly [a.cols, cols] (checked at launch)
    std::string rhs = weight_operand(w, g, n, false, node.shape, a.cols);  // B(k, j), staged or in place
    emit_matmul(w, g, t, false, node.shape, a.cols, x + "[i * " + u32(a.cols) + " + k]", rhs);
    return;
  }
  TileShape b = g.nodes[size_t(node.args[1])].shape;
  emit_matmul(w, g, t, false, node.shape, a.cols, x + "[i * " + u32(a.cols) + " + k]",
              tile_ref(g, node.args[1]) + "[k * " + u32(b.cols) + " + j]");
}

// C = A·B: dA = dC·Bᵀ, dB = Aᵀ·dC.
void matmul_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& node = g.nodes[size_t(n)];
  const AdjointNames nm{g, needs};
  auto shape = [&](int m) { return g.nodes[size_t(m)].shape; };
  if (node.array >= 0) {
    // B in global memory: dA reads it there; dB goes straight to its gradient, atomically
    // (every block adds its share).
    int x = node.args[0];
    TileShape as = shape(x);
    int cols = node.shape.cols;
    const ArrayParam& b = g.arrays[size_t(node.array)];
    std::string row0 = u32(node.at.row.offset);
    if (nm.wants(x)) {
      w.line("// adjoint of " + nm.tn(n) + ": " + nm.an(x) + " += " + nm.an(n) + " · " + b.name + "ᵀ");
      std::string rhs = weight_operand(w, g, n, true, as, cols);  // B(j, k)
      emit_matmul(w, g, nm.a(x), true, as, cols, nm.a(n) + "[i * " + u32(cols) + " + k]", rhs);
    }
    if (!b.differentiable) return;
    w.line("// adjoint of " + nm.tn(n) + ": " + grad_name(b) + " += " + nm.tn(x) + "ᵀ · " + nm.an(n) +
           " (atomic adds)");
    // The product in registers (emit_matmul's blocked forms: a 64×64 gradient in 4×4 blocks
    // reads a quarter as much workgroup memory as one output a thread), each sum added
    // atomically. With a barrier after (as every step): the loop reads t<x> and a<n>, whose
    // slots the next step may reuse (see emit_write).
    emit_matmul(w, g, "", false, {as.cols, cols}, as.rows, nm.t(x) + "[k * " + u32(as.cols) + " + i]",
                nm.a(n) + "[k * " + u32(cols) + " + j]",
                [&](Wgsl& out, const std::string& i, const std::string& j, const std::string& value) {
                  out.open("{");
                  emit_atomic_add_f32(
                      out, grad_name(b) + "[(" + row0 + " + " + i + ") * " + b.name + "_cols + " + j + "]", value);
                  out.close();
                });
    return;
  }
  int x = node.args[0], y = node.args[1];
  TileShape as = shape(x), bs = shape(y);
  if (nm.wants(x)) {
    w.line("// adjoint of " + nm.tn(n) + ": " + nm.an(x) + " += " + nm.an(n) + " · " + nm.tn(y) + "ᵀ");
    emit_matmul(w, g, nm.a(x), true, as, bs.cols, nm.a(n) + "[i * " + u32(bs.cols) + " + k]",
                nm.t(y) + "[j * " + u32(bs.cols) + " + k]");
  }
  if (nm.wants(y)) {
    w.line("// adjoint of " + nm.tn(n) + ": " + nm.an(y) + " += " + nm.tn(x) + "ᵀ · " + nm.an(n));
    emit_matmul(w, g, nm.a(y), true, bs, as.rows, nm.t(x) + "[k * " + u32(as.cols) + " + i]",
                nm.a(n) + "[k * " + u32(bs.cols) + " + j]");
  }
}

// dA reads B and dB reads A; weights in place: dB (if wanted) reads A.
std::vector<int> matmul_reads(const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& node = g.nodes[size_t(n)];
  std::vector<int> r;
  if (node.array >= 0) {
    if (g.arrays[size_t(node.array)].differentiable) r.push_back(node.args[0]);
    return r;
  }
  if (needs[size_t(node.args[0])]) r.push_back(node.args[1]);
  if (needs[size_t(node.args[1])]) r.push_back(node.args[0]);
  return r;
}

HostArray matmul_host(const HostStep& s) {
  const Node& n = s.n();
  if (n.array < 0) return s.arg(0).matmul(s.arg(1));
  int64_t row0 = n.at.row.offset;
  return s.arg(0).matmul(
      s.inputs[size_t(s.slot[size_t(n.array)])].slice(0, row0, row0 + s.arg(0).shape()[1]).slice(1, 0, n.shape.cols));
}

}  // namespace

std::vector<OpRecord> matmul_records() {
  return {
      {Op::matmul, "tile_matmul", nullptr, matmul_describe, matmul_forward, matmul_adjoint, matmul_reads, matmul_host}};
}

}  // namespace surfgrad::tiles::detail
