// The backward tile kernel: it replays the forward (its tiles are not kept between kernels),
// then runs each primitive's adjoint in reverse order. Adjoint tiles a<n> live beside the value
// tiles t<n>; a primitive's adjoint adds into its operands' adjoints (+=, so a tile used twice
// collects both contributions), with a barrier after each update. Gradients leave the kernel
// where values entered it: a tile_load's adjoint is an atomic add into d_<input>, because
// several blocks may have loaded the same elements (a weight matrix every block reads).
#include "tiles/cholesky.hpp"
#include "tiles/emit.hpp"
#include "tiles/fft.hpp"
#include "tiles/view.hpp"

namespace surfgrad::tiles::detail {

namespace {

void emit_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& node = g.nodes[size_t(n)];
  auto wants = [&](int m) { return bool(needs[size_t(m)]); };
  auto t = [&](int m) { return tile_ref(g, m); };  // in code
  auto a = [&](int m) { return tile_ref(g, m, "a"); };
  auto tn = [&](int m) { return tile_name(g, m); };  // in comments
  auto an = [&](int m) { return tile_name(g, m, "a"); };
  auto shape = [&](int m) { return g.nodes[size_t(m)].shape; };
  switch (node.op) {
    case Op::load: {
      if (!g.arrays[size_t(node.array)].differentiable) return;  // a constant: no gradient leaves
      w.line("// adjoint of " + tn(n) + ": d_" + g.arrays[size_t(node.array)].name + " += " + an(n));
      emit_write(w, g, a(n), node.array, grad_name(g.arrays[size_t(node.array)]), node.shape, node.at, true);
      return;
    }
    case Op::store:
    case Op::atomic_add: {
      // Both pass the output's gradient straight to the tile written (masked like the write).
      int x = node.args[0];
      w.line("// adjoint of " + std::string(op_name(node.op)) + ": " + an(x) + " += d_" +
             g.arrays[size_t(node.array)].name + " at the same place");
      emit_load(w, g, a(x), true, node.array, grad_name(g.arrays[size_t(node.array)]), node.shape, node.at);
      return;
    }
    case Op::unary: {
      int x = node.args[0];
      std::string f = std::string("unary_") + unary_name(node.unary) + "_derivative";
      w.line("// adjoint of " + tn(n) + ": " + an(x) + " += " + an(n) + " · f'(x)");
      // Only the tiles the derivative reads are still live here (memory.cpp); 0.0 for the other.
      UnaryReads reads = unary_derivative_reads(node.unary);
      std::string xv = reads.x ? t(x) + "[e]" : "0.0", yv = reads.y ? t(n) + "[e]" : "0.0";
      w.each(g, node.shape, [&] { w.line(a(x) + "[e] += " + a(n) + "[e] * " + f + "(" + xv + ", " + yv + ");"); });
      return;
    }
    case Op::scale: {
      int x = node.args[0];
      std::string s = scalar_literal(node.scalar);
      w.line("// adjoint of " + tn(n) + ": " + an(x) + " += " + an(n) + " · " + s);
      w.each(g, node.shape, [&] { w.line(a(x) + "[e] += " + a(n) + "[e] * " + s + ";"); });
      return;
    }
    case Op::binary: {
      int x = node.args[0], y = node.args[1];
      const char* sign = node.binary == Binary::sub ? " -= " : " += ";
      std::string factor = node.binary == Binary::mul ? " · " : "";
      w.line("// adjoint of " + tn(n) + ": " + an(x) + " += " + an(n) + factor + (factor.empty() ? "" : tn(y)) + "; " +
             an(y) + sign + an(n) + factor + (factor.empty() ? "" : tn(x)));
      // One loop per operand: the two may be one tile (x + x). An operand that depends on no
      // differentiable input gets nothing.
      if (node.binary == Binary::mul) {
        if (wants(x)) w.each(g, node.shape, [&] { w.line(a(x) + "[e] += " + a(n) + "[e] * " + t(y) + "[e];"); });
        if (wants(y)) w.each(g, node.shape, [&] { w.line(a(y) + "[e] += " + a(n) + "[e] * " + t(x) + "[e];"); });
      } else {
        if (wants(x)) w.each(g, node.shape, [&] { w.line(a(x) + "[e] += " + a(n) + "[e];"); });
        std::string op = node.binary == Binary::add ? " += " : " -= ";
        if (wants(y)) w.each(g, node.shape, [&] { w.line(a(y) + "[e]" + op + a(n) + "[e];"); });
      }
      return;
    }
    case Op::broadcast: {
      // Each element of the small tile collects the adjoints of all its copies.
      int x = node.args[0];
      TileShape s = shape(x), big = node.shape;
      w.line("// adjoint of " + tn(n) + ": " + an(x) + " += the sum of " + an(n) + " over the repeated axes");
      w.each(g, s, [&] {
        w.line("var acc = 0.0;");
        std::string rr = s.rows == 1 ? "rr" : "r", cc = s.cols == 1 ? "cc" : "c";
        if (s.rows == 1) w.open("for (var rr = 0u; rr < " + u32(big.rows) + "; rr++) {");
        if (s.cols == 1) w.open("for (var cc = 0u; cc < " + u32(big.cols) + "; cc++) {");
        w.line("acc += " + a(n) + "[" + rr + " * " + u32(big.cols) + " + " + cc + "];");
        if (s.cols == 1) w.close();
        if (s.rows == 1) w.close();
        w.line(a(x) + "[e] += acc;");
      });
      return;
    }
    case Op::transpose: {
      int x = node.args[0];
      w.line("// adjoint of " + tn(n) + ": " + an(x) + " += transpose(" + an(n) + ")");
      w.each(g, shape(x), [&] { w.line(a(x) + "[e] += " + a(n) + "[c * " + u32(shape(x).rows) + " + r];"); });
      return;
    }
    case Op::reduce: {
      int x = node.args[0];
      TileShape s = shape(x);
      std::string out = node.axis == 0 ? "c" : "r";  // the reduced element each input element feeds
      if (node.reduce == Reduce::sum) {
        w.line("// adjoint of " + tn(n) + ": " + an(x) + " += " + an(n) + " broadcast back along axis " +
               std::to_string(node.axis));
        w.each(g, s, [&] { w.line(a(x) + "[e] += " + a(n) + "[" + out + "];"); });
      } else {
        // The maxima share the gradient equally (the library's rule for ties).
        w.line("// adjoint of " + tn(n) + ": " + an(x) + " += " + an(n) + " / (number of maxima) where " + tn(x) +
               " is the maximum");
        int extent = node.axis == 0 ? s.rows : s.cols;
        std::string element =
            node.axis == 0 ? t(x) + "[k * " + u32(s.cols) + " + c]" : t(x) + "[r * " + u32(s.cols) + " + k]";
        w.each(g, s, [&] {
          w.line("let m = " + t(n) + "[" + out + "];");
          w.open("if (" + t(x) + "[e] == m) {");
          w.line("var ties = 0.0;");
          w.open("for (var k = 0u; k < " + u32(extent) + "; k++) {");
          w.line("ties += select(0.0, 1.0, " + element + " == m);");
          w.close();
          w.line(a(x) + "[e] += " + a(n) + "[" + out + "] / ties;");
          w.close();
        });
      }
      return;
    }
    case Op::matmul: {
      // C = A·B: dA = dC·Bᵀ, dB = Aᵀ·dC.
      if (node.array >= 0) {
        // B in global memory: dA reads it there; dB goes straight to its gradient, atomically
        // (every block adds its share).
        int x = node.args[0];
        TileShape as = shape(x);
        int cols = node.shape.cols;
        const ArrayParam& b = g.arrays[size_t(node.array)];
        std::string row0 = u32(node.at.row.offset);
        if (wants(x)) {
          w.line("// adjoint of " + tn(n) + ": " + an(x) + " += " + an(n) + " · " + b.name + "ᵀ");
          std::string rhs = emit_weight_stage(w, g, n, true);  // B(j, k)
          emit_matmul(w, g, a(x), true, as, cols, a(n) + "[i * " + u32(cols) + " + k]", rhs);
        }
        if (!b.differentiable) return;
        w.line("// adjoint of " + tn(n) + ": " + grad_name(b) + " += " + tn(x) + "ᵀ · " + an(n) + " (atomic adds)");
        // The product in registers (emit_matmul's blocked forms: a 64×64 gradient in 4×4 blocks
        // reads a quarter as much workgroup memory as one output a thread), each sum added
        // atomically. With a barrier after (as every step): the loop reads t<x> and a<n>, whose
        // slots the next step may reuse (see emit_write).
        emit_matmul(w, g, "", false, {as.cols, cols}, as.rows, t(x) + "[k * " + u32(as.cols) + " + i]",
                    a(n) + "[k * " + u32(cols) + " + j]",
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
      if (wants(x)) {
        w.line("// adjoint of " + tn(n) + ": " + an(x) + " += " + an(n) + " · " + tn(y) + "ᵀ");
        emit_matmul(w, g, a(x), true, as, bs.cols, a(n) + "[i * " + u32(bs.cols) + " + k]",
                    t(y) + "[j * " + u32(bs.cols) + " + k]");
      }
      if (wants(y)) {
        w.line("// adjoint of " + tn(n) + ": " + an(y) + " += " + tn(x) + "ᵀ · " + an(n));
        emit_matmul(w, g, a(y), true, bs, as.rows, t(x) + "[k * " + u32(as.cols) + " + i]",
                    a(n) + "[k * " + u32(bs.cols) + " + j]");
      }
      return;
    }
    case Op::cholesky:
    case Op::lower_solve:
    case Op::upper_solve: emit_linalg_adjoint(w, g, n, needs); return;
    case Op::fft:
    case Op::fft_part: emit_fft_adjoint(w, g, n, needs); return;
    case Op::view:
    case Op::assign: emit_block_adjoint(w, g, n, needs); return;
  }
}

}  // namespace

std::string backward_wgsl(const Graph& g, bool float_atomics, bool stage_weights, bool with_values) {
  Wgsl w;
  w.float_atomics = float_atomics;
  w.stage_weights = stage_weights;
  w.line("// Tile kernel '" + g.name + "', backward: generated by surfgrad's tile builder (src/tiles).");
  w.line("// Replays the forward into the value tiles t<n>, then runs the adjoints in reverse into the");
  w.line("// adjoint tiles a<n>. Reads the inputs and d_<output> (the outputs' gradients); adds the inputs'");
  w.line("// gradients atomically into d_<input>, which start at zero. " + std::to_string(g.threads) +
         " threads per workgroup.");
  std::vector<int> ins = g.inputs(), outs = g.outputs();
  int binding = 0;
  auto bind = [&](const std::string& name, const std::string& access, const std::string& type) {
    w.line("@group(0) @binding(" + std::to_string(binding++) + ") var<storage, " + access + "> " + name + ": " + type +
           ";");
  };
  for (int i : ins) bind(binding_name(g.arrays[size_t(i)]), "read", input_type(g.arrays[size_t(i)]));
  for (int o : outs) bind(grad_name(g.arrays[size_t(o)]), "read", "array<f32>");
  for (int i : g.differentiable_inputs()) bind(grad_name(g.arrays[size_t(i)]), "read_write", w.atomic_array());
  if (with_values)
    for (int o : outs) {
      const ArrayParam& a = g.arrays[size_t(o)];
      bind(binding_name(a), "read_write", a.atomic ? w.atomic_array() : "array<f32>");
    }
  w.blank();
  MemoryPlan plan = plan_memory(g, true);
  emit_slots(w, plan);
  emit_weight_stage_slot(w, g);
  w.blank();
  emit_unary_functions(w, g, true);
  emit_fft_functions(w, g);
  w.line("@compute @workgroup_size(" + std::to_string(g.threads) + ")");
  w.open("fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {");
  emit_shape_lets(w, g);
  emit_tile_pointers(w, g, plan);
  w.line(with_values ? "// ---- the forward, its outputs written as the forward kernel writes them"
                     : "// ---- replay of the forward");
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!g.nodes[n].makes_tile() && !with_values) continue;
    w.line("// " + describe(g, int(n)));
    emit_forward_node(w, g, int(n));
  }
  w.line("// ---- adjoints, last primitive first; an adjoint tile is zeroed before its first contribution");
  std::vector<bool> runs = adjoint_runs(g), needs = needs_grad(g), zeroed(g.nodes.size(), false);
  for (size_t n = g.nodes.size(); n-- > 0;) {
    if (!runs[n]) continue;  // no gradient wanted, or its value reaches no output
    bool zeroing = false;
    for (int x : g.nodes[n].args) {
      if (zeroed[size_t(x)] || !needs[size_t(x)]) continue;
      zeroed[size_t(x)] = zeroing = true;
      w.each(g, g.nodes[size_t(x)].shape, [&] { w.line(tile_ref(g, x, "a") + "[e] = 0.0;"); }, false);
    }
    if (zeroing) w.line("workgroupBarrier();");
    emit_adjoint(w, g, int(n), needs);
  }
  w.close();
  return w.text();
}

}  // namespace surfgrad::tiles::detail
