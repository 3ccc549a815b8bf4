// Generated WGSL shared by the forward and backward tile kernels (see emit.hpp). Every tile lives
// in workgroup memory as a row-major array; thread `lid` owns elements lid, lid + threads, …,
// so any tile shape works with any workgroup size (shapes need not be multiples of it).
#include "tiles/emit.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "tiles/matmul_sgmat.hpp"

namespace surfgrad::tiles::detail {

std::string u32(int64_t v) { return std::to_string(v) + "u"; }

std::string scalar_literal(double v) {
  // Nine significant digits name the f32 nearest v exactly (and read back as that f32).
  char text[40];
  std::snprintf(text, sizeof text, "f32(%.9g)", double(float(v)));
  return text;
}

std::string coord_expr(const Coord& c) {
  if (c.axis < 0) return u32(c.constant);
  return std::string("wid.") + "xyz"[c.axis];
}

void Wgsl::each(const Graph& g, TileShape shape, const std::function<void()>& body, bool barrier) {
  open("for (var e = lid; e < " + u32(int64_t(shape.rows) * shape.cols) + "; e += " + u32(g.threads) + ") {");
  line("let r = e / " + u32(shape.cols) + ";");
  line("let c = e % " + u32(shape.cols) + ";");
  body();
  close();
  if (barrier) line("workgroupBarrier();");
}

namespace {

// The element (gb, gr, gc) of the array the tile at `at` covers, and whether it is inside.
void emit_global_index(Wgsl& w, const Graph& g, int array, TileShape shape, At at) {
  const std::string& a = g.arrays[size_t(array)].name;
  auto offset = [](const Coord& c) { return c.offset ? " + " + u32(c.offset) : std::string(); };
  w.line("let gb = " + coord_expr(at.batch) + offset(at.batch) + ";");
  w.line("let gr = " + coord_expr(at.row) + " * " + u32(shape.rows) + offset(at.row) + " + r;");
  w.line("let gc = " + coord_expr(at.col) + " * " + u32(shape.cols) + offset(at.col) + " + c;");
  w.line("let inside = gb < " + a + "_batch && gr < " + a + "_rows && gc < " + a + "_cols;");
  w.line("let gi = (gb * " + a + "_rows + gr) * " + a + "_cols + gc;");
}

}  // namespace

void emit_atomic_add_f32(Wgsl& w, const std::string& word, const std::string& value) {
  if (w.float_atomics) {
    w.line("atomicAdd(&" + word + ", " + value + ");");
    return;
  }
  w.line("var old = atomicLoad(&" + word + ");");
  w.open("loop {");
  w.line("let swap = atomicCompareExchangeWeak(&" + word + ", old, bitcast<u32>(bitcast<f32>(old) + " + value + "));");
  w.line("if (swap.exchanged) { break; }");
  w.line("old = swap.old_value;");
  w.close();
}

void emit_load(Wgsl& w, const Graph& g, const std::string& target, bool accumulate, int array,
               const std::string& buffer, TileShape shape, At at) {
  w.each(g, shape, [&] {
    emit_global_index(w, g, array, shape, at);
    // select() would read the buffer even outside; the branch keeps every read in bounds.
    w.line("var v = 0.0;");
    w.open("if (inside) {");
    const ArrayParam& a = g.arrays[size_t(array)];
    // An f16 input is read as f32; gradient buffers (d_…) are f32 whatever the input's type.
    w.line("v = " + (buffer == binding_name(a) ? input_element(a, "gi") : buffer + "[gi]") + ";");
    w.close();
    w.line(target + "[e] " + (accumulate ? "+=" : "=") + " v;");
  });
}

void emit_write(Wgsl& w, const Graph& g, const std::string& source, int array, const std::string& buffer,
                TileShape shape, At at, bool atomic) {
  // A barrier after, although nothing in the kernel reads what it writes to global memory: the
  // loop reads `source`, whose workgroup slot the next step may reuse (memory.cpp frees a tile
  // after its last reader). Without it, threads that finish early overwrite the slot while others
  // still read it: wrong gradients wherever a workgroup's threads do not run in lockstep
  // (SwiftShader, lavapipe at 128 threads, GPUs with more than one warp per workgroup).
  w.each(g, shape, [&] {
    emit_global_index(w, g, array, shape, at);
    w.open("if (inside) {");
    if (!atomic) {
      w.line(buffer + "[gi] = " + source + "[e];");
    } else {
      emit_atomic_add_f32(w, buffer + "[gi]", source + "[e]");
    }
    w.close();
  });
}

void emit_matmul(Wgsl& w, const Graph& g, const std::string& target, bool accumulate, TileShape shape, int inner,
                 const std::string& lhs_element, const std::string& rhs_element, const MatmulWriter& writer) {
  // Each output (i, j) with its sum: into the tile, or however `writer` says.
  auto put = [&](const std::string& i, const std::string& j, const std::string& value) {
    if (writer) {
      writer(w, i, j, value);
      return;
    }
    w.line(target + "[(" + i + ") * " + u32(shape.cols) + " + " + j + "] " + (accumulate ? "+=" : "=") + " " + value +
           ";");
  };
  if (sgmat_product(w, shape, inner)) {
    emit_matmul_sgmat(
        w, g, shape, inner, lhs_element, rhs_element,
        [&](Wgsl&, const std::string& i, const std::string& j, const std::string& value) { put(i, j, value); });
    return;
  }
  if (shape.rows % 4 == 0 && shape.cols % 4 == 0 && int64_t(shape.rows) * shape.cols / 16 >= g.threads) {
    // Large outputs (a weight gradient Aᵀ·dC, say): 4×4 outputs a thread, four lhs and four rhs
    // reads for sixteen products, while every thread still has a block.
    const int64_t blocks = int64_t(shape.rows) * shape.cols / 16;
    w.open("for (var q = lid; q < " + u32(blocks) + "; q += " + u32(g.threads) + ") {");
    w.line("let i0 = (q / " + u32(shape.cols / 4) + ") * 4u;");
    w.line("let j0 = (q % " + u32(shape.cols / 4) + ") * 4u;");
    // Zeroed by its initializer on every pass of the loop: declared without one, the second
    // block a thread took began from the first one's sums on lavapipe (the variable is declared
    // once for the whole function in the SPIR-V), caught by TileGradcheck.MatmulThreadBlocks.
    w.line("var acc = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));");
    w.open("for (var k = 0u; k < " + u32(inner) + "; k++) {");
    w.line("var rhs: vec4<f32>;");
    for (int m = 0; m < 4; ++m)
      w.line("{ let j = j0 + " + u32(m) + "; rhs[" + std::to_string(m) + "] = " + rhs_element + "; }");
    for (int l = 0; l < 4; ++l)
      w.line("{ let i = i0 + " + u32(l) + "; acc[" + std::to_string(l) + "] += " + lhs_element + " * rhs; }");
    w.close();
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 4; ++m)
        put("i0 + " + u32(l), "j0 + " + u32(m), "acc[" + std::to_string(l) + "][" + std::to_string(m) + "]");
    w.close();
    w.line("workgroupBarrier();");
    return;
  }
  if (shape.cols % 4 == 0) {
    // Four outputs of a row a thread: one read of lhs(i, k) serves four products, and the four
    // sums are independent chains. (lhs names only i and k, rhs only k and j.)
    const int64_t quads = int64_t(shape.rows) * shape.cols / 4;
    w.open("for (var q = lid; q < " + u32(quads) + "; q += " + u32(g.threads) + ") {");
    w.line("let i = q / " + u32(shape.cols / 4) + ";");
    w.line("let j0 = (q % " + u32(shape.cols / 4) + ") * 4u;");
    w.line("var acc = vec4<f32>(0.0);");
    w.open("for (var k = 0u; k < " + u32(inner) + "; k++) {");
    w.line("let lhs = " + lhs_element + ";");
    for (int m = 0; m < 4; ++m)
      w.line("{ let j = j0 + " + u32(m) + "; acc[" + std::to_string(m) + "] += lhs * " + rhs_element + "; }");
    w.close();
    for (int m = 0; m < 4; ++m) put("i", "j0 + " + u32(m), "acc[" + std::to_string(m) + "]");
    w.close();
    w.line("workgroupBarrier();");
    return;
  }
  w.each(g, shape, [&] {
    w.line("let i = r;");
    w.line("let j = c;");
    w.line("var acc = 0.0;");
    w.open("for (var k = 0u; k < " + u32(inner) + "; k++) {");
    w.line("acc += " + lhs_element + " * " + rhs_element + ";");
    w.close();
    put("i", "j", "acc");
  });
}

int64_t weight_stage_elements(const Graph& g) {
  int64_t most = 0;
  for (const Node& n : g.nodes)
    if (n.op == Op::matmul && n.array >= 0)
      most = std::max(most, int64_t(g.nodes[size_t(n.args[0])].shape.cols) * (n.shape.cols + 1));
  return most;
}

std::string emit_weight_stage(Wgsl& w, const Graph& g, int n, bool transposed) {
  const Node& node = g.nodes[size_t(n)];
  const ArrayParam& b = g.arrays[size_t(node.array)];
  const int K = g.nodes[size_t(node.args[0])].shape.cols, N = node.shape.cols;
  // B's element (row, col) of the block, row < K, col < N: k and j, or j and k transposed.
  const std::string row = transposed ? "j" : "k", col = transposed ? "k" : "j";
  if (!w.stage_weights)
    return input_element(b, "(" + u32(node.at.row.offset) + " + " + row + ") * " + b.name + "_cols + " + col);
  // Every element lies inside B: launch checks B has the rows and columns the product reads.
  w.line("// " + b.name + " rows " + std::to_string(node.at.row.offset) + " +" + std::to_string(K) + ", cols 0 +" +
         std::to_string(N) + " into workgroup memory (rows padded to " + std::to_string(N + 1) + ")");
  w.open("for (var e = lid; e < " + u32(int64_t(K) * N) + "; e += " + u32(g.threads) + ") {");
  w.line("let k = e / " + u32(N) + ";");
  w.line("let j = e % " + u32(N) + ";");
  w.line("weight_stage[k * " + u32(N + 1) +
         " + j] = " + input_element(b, "(" + u32(node.at.row.offset) + " + k) * " + b.name + "_cols + j") + ";");
  w.close();
  w.line("workgroupBarrier();");
  return "weight_stage[" + row + " * " + u32(N + 1) + " + " + col + "]";
}

void emit_weight_stage_slot(Wgsl& w, const Graph& g) {
  if (!w.stage_weights) return;
  w.line("// Weights read in place, staged here one matrix at a time: every thread reads each many times.");
  w.line("var<workgroup> weight_stage: array<f32, " + u32(sgmat_aligned(w, weight_stage_elements(g))) + ">;");
}

void emit_shape_lets(Wgsl& w, const Graph& g) {
  for (size_t i = 0; i < g.arrays.size(); ++i) {
    const std::string& a = g.arrays[i].name;
    w.line("let " + a + "_batch = arg(" + u32(int64_t(3 * i)) + ");");
    w.line("let " + a + "_rows = arg(" + u32(int64_t(3 * i + 1)) + ");");
    w.line("let " + a + "_cols = arg(" + u32(int64_t(3 * i + 2)) + ");");
  }
}

void emit_slots(Wgsl& w, const MemoryPlan& plan) {
  w.line("// Workgroup memory: tiles whose lifetimes do not overlap share a slot.");
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    std::string holds;
    for (const auto& h : plan.slots[i].holds) holds += (holds.empty() ? "" : ", ") + h;
    w.line("var<workgroup> slot" + std::to_string(i) + ": array<f32, " + u32(sgmat_aligned(w, plan.slots[i].elements)) +
           ">;  // " + holds);
  }
}

void emit_tile_pointers(Wgsl& w, const Graph& g, const MemoryPlan& plan) {
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (plan.value[n] >= 0) w.line("let " + tile_name(g, int(n)) + " = &slot" + std::to_string(plan.value[n]) + ";");
    if (plan.adjoint[n] >= 0)
      w.line("let " + tile_name(g, int(n), "a") + " = &slot" + std::to_string(plan.adjoint[n]) + ";");
    if (!plan.scratch.empty() && plan.scratch[n] >= 0)
      w.line("let " + tile_name(g, int(n), "s") + " = &slot" + std::to_string(plan.scratch[n]) + ";");
  }
}

void emit_unary_functions(Wgsl& w, const Graph& g, bool derivatives) {
  std::set<int> used;
  for (const Node& n : g.nodes)
    if (n.op == Op::unary) used.insert(int(n.unary));
  for (int u : used) {
    Unary op = Unary(u);
    w.line("fn unary_" + std::string(unary_name(op)) + "(x: f32) -> f32 { return " + unary_wgsl(op) + "; }");
    if (derivatives)
      w.line("fn unary_" + std::string(unary_name(op)) + "_derivative(x: f32, y: f32) -> f32 { return " +
             unary_derivative_wgsl(op) + "; }");
  }
  if (derivatives && used.count(int(Unary::gelu))) {
    // d/dx 0.5·x·(1 + tanh(u)), u = c·(x + 0.044715·x³): the tanh form's exact derivative.
    w.open("fn gelu_derivative(x: f32) -> f32 {");
    w.line("let t = tanh(clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -15.0, 15.0));");
    w.line("return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x);");
    w.close();
  }
  if (!used.empty()) w.blank();
}

std::string entry_point(const Graph& g) {
  return "@compute @workgroup_size(" + std::to_string(g.threads) +
         ")\nfn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {";
}

}  // namespace surfgrad::tiles::detail
