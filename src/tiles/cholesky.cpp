// Cholesky factorisation and triangular solves inside a tile kernel (see cholesky.hpp).
//
// The whole workgroup works on one tile in workgroup memory. Both algorithms are right-looking
// with one barrier per step: step k removes pivot k's contribution from everything after it,
// using the pivot row or column as it stands (unscaled), which nothing writes during that step;
// a last pass divides by the diagonal. So each step is a parallel loop over the trailing
// elements, and any n works with any number of threads.
//
// Adjoints (X = M⁻¹·B, L = chol(A)); ·̄ is an adjoint:
//   solves:   B̄ = M⁻ᵀ·X̄ (a solve with the transposed triangle), M̄ = −tri(B̄·Xᵀ), where tri keeps the
//             triangle M is read from (the other one does not reach X);
//   Cholesky: P = Φ(Lᵀ·tril(L̄)), Φ = the lower triangle with its diagonal halved, and
//             Ā = ½·L⁻ᵀ·(P + Pᵀ)·L⁻¹ (Murray 2016, "Differentiation of the Cholesky decomposition").
//             With dA symmetric, L⁻¹·dA·L⁻ᵀ = L⁻¹dL + (L⁻¹dL)ᵀ and L⁻¹dL is lower triangular, so
//             dL = L·Φ(L⁻¹·dA·L⁻ᵀ); then tr(L̄ᵀ·dL) = tr(Pᵀ·L⁻¹dA·L⁻ᵀ), whose symmetric gradient is the
//             formula. The forward factors ½(A + Aᵀ), so this symmetric Ā is A's true gradient.
//             L̄'s upper triangle is dropped: L's upper triangle is the constant 0.
#include "tiles/cholesky.hpp"

#include <cmath>
#include <functional>
#include <sstream>

#include "surfgrad/error.hpp"
#include "tiles/op_record.hpp"

namespace surfgrad::tiles::detail {

namespace {

// An element of a row-major tile with `cols` columns.
std::string at(const std::string& tile, const std::string& i, const std::string& j, int cols) {
  return tile + "[(" + i + ") * " + u32(cols) + " + " + j + "]";
}

// Element (i, j) of a triangular matrix, as code.
using Element = std::function<std::string(const std::string& i, const std::string& j)>;

// x (n×m, in workgroup memory) := M⁻¹·x for a triangular M: forward substitution if M is lower,
// back substitution if upper. Step s takes pivot k (k = s, or n − 1 − s upwards) and subtracts
// M_ik / M_kk · x_k from each row i still to solve; x_k then holds M_kk times the solution row.
void emit_solve_in_place(Wgsl& w, const Graph& g, const std::string& x, int n, int m, const Element& tri, bool upper) {
  if (n > 1) {
    w.open("for (var s = 0u; s < " + u32(n - 1) + "; s++) {");
    w.line(std::string("let k = ") + (upper ? u32(n - 1) + " - s" : "s") + ";");
    w.line("let pivot = " + tri("k", "k") + ";");
    w.open("for (var q = lid; q < (" + u32(n - 1) + " - s) * " + u32(m) + "; q += " + u32(g.threads) + ") {");
    w.line(std::string("let i = ") + (upper ? "q / " + u32(m) : "k + 1u + q / " + u32(m)) + ";");
    w.line("let j = q % " + u32(m) + ";");
    w.line(at(x, "i", "j", m) + " -= " + tri("i", "k") + " / pivot * " + at(x, "k", "j", m) + ";");
    w.close();
    w.line("workgroupBarrier();");
    w.close();
  }
  w.each(g, {n, m}, [&] { w.line(x + "[e] = " + x + "[e] / " + tri("r", "r") + ";"); });
}

void emit_cholesky(Wgsl& w, const Graph& g, int node) {
  const Node& nd = g.nodes[size_t(node)];
  int n = nd.shape.rows;
  std::string t = tile_ref(g, node), a = tile_ref(g, nd.args[0]), N = u32(n);
  // NaN from a runtime value: WGSL rejects NaN constants.
  w.line("var nan_bits = 0x7fc00000u;");
  w.line("let nan = bitcast<f32>(nan_bits);");
  w.each(g, nd.shape,
         [&] { w.line(t + "[e] = select(0.0, 0.5 * (" + a + "[e] + " + at(a, "c", "r", n) + "), c <= r);"); });
  // Step k: the trailing lower triangle loses column k's outer product over the pivot.
  if (n > 1) {
    w.open("for (var k = 0u; k < " + u32(n - 1) + "; k++) {");
    w.line("let pivot = " + at(t, "k", "k", n) + ";");
    w.line("let rest = " + u32(n - 1) + " - k;");
    w.open("for (var q = lid; q < rest * rest; q += " + u32(g.threads) + ") {");
    w.line("let i = k + 1u + q / rest;");
    w.line("let j = k + 1u + q % rest;");
    w.open("if (j <= i) {");
    w.line(at(t, "i", "j", n) + " -= " + at(t, "i", "k", n) + " * " + at(t, "j", "k", n) + " / pivot;");
    w.close();
    w.close();
    w.line("workgroupBarrier();");
    w.close();
  }
  // The diagonal now holds the pivots. Every thread checks all of them before anyone writes, so
  // a tile that is not positive definite comes out all NaN, whatever the thread count.
  w.line("var positive = true;");
  w.open("for (var k = 0u; k < " + N + "; k++) {");
  w.line("positive = positive && " + at(t, "k", "k", n) + " > 0.0;");
  w.close();
  w.line("workgroupBarrier();");
  w.each(g, nd.shape, [&] {
    w.line("let below = " + t + "[e] / sqrt(" + at(t, "c", "c", n) + ");");
    w.open("if (r != c) {");
    w.line(t + "[e] = select(nan, select(0.0, below, r > c), positive);");
    w.close();
  });
  w.each(g, {n, 1},
         [&] { w.line(at(t, "r", "r", n) + " = select(nan, sqrt(" + at(t, "r", "r", n) + "), positive);"); });
}

void emit_solve(Wgsl& w, const Graph& g, int node) {
  const Node& nd = g.nodes[size_t(node)];
  int n = nd.shape.rows, m = nd.shape.cols;
  std::string t = tile_ref(g, node), mat = tile_ref(g, nd.args[0]), b = tile_ref(g, nd.args[1]);
  w.each(g, nd.shape, [&] { w.line(t + "[e] = " + b + "[e];"); });
  emit_solve_in_place(
      w, g, t, n, m, [&](const std::string& i, const std::string& j) { return at(mat, i, j, n); },
      nd.op == Op::upper_solve);
}

void emit_solve_adjoint(Wgsl& w, const Graph& g, int node, const std::vector<bool>& needs) {
  const Node& nd = g.nodes[size_t(node)];
  int n = nd.shape.rows, m = nd.shape.cols, mx = nd.args[0], b = nd.args[1];
  bool upper = nd.op == Op::upper_solve;
  std::string an = tile_ref(g, node, "a"), x = tile_ref(g, node), mat = tile_ref(g, mx);
  std::string name = tile_name(g, node), adj = tile_name(g, node, "a"), mname = tile_name(g, mx);
  w.line("// adjoint of " + name + ": " + adj + " := " + mname + "⁻ᵀ · " + adj + " (B's adjoint), in place");
  emit_solve_in_place(
      w, g, an, n, m, [&](const std::string& i, const std::string& j) { return at(mat, j, i, n); }, !upper);
  if (needs[size_t(b)]) {
    w.line("// " + tile_name(g, b, "a") + " += " + adj);
    w.each(g, nd.shape, [&] { w.line(tile_ref(g, b, "a") + "[e] += " + an + "[e];"); });
  }
  if (needs[size_t(mx)]) {
    w.line("// " + tile_name(g, mx, "a") + " -= the " + (upper ? "upper" : "lower") + " triangle of " + adj + " · " +
           name + "ᵀ");
    w.each(g, {n, n}, [&] {
      w.open(std::string("if (c ") + (upper ? ">=" : "<=") + " r) {");
      w.line("var acc = 0.0;");
      w.open("for (var j = 0u; j < " + u32(m) + "; j++) {");
      w.line("acc += " + at(an, "r", "j", m) + " * " + at(x, "c", "j", m) + ";");
      w.close();
      w.line(tile_ref(g, mx, "a") + "[e] -= acc;");
      w.close();
    });
  }
}

void emit_cholesky_adjoint(Wgsl& w, const Graph& g, int node, const std::vector<bool>& needs) {
  const Node& nd = g.nodes[size_t(node)];
  int n = nd.shape.rows, ax = nd.args[0];
  if (!needs[size_t(ax)]) return;
  std::string l = tile_ref(g, node), an = tile_ref(g, node, "a"), s = tile_ref(g, node, "s");
  std::string name = tile_name(g, node), adj = tile_name(g, node, "a"), sn = tile_name(g, node, "s");
  Element lt = [&](const std::string& i, const std::string& j) { return at(l, j, i, n); };  // Lᵀ, upper
  w.line("// adjoint of " + name + " (L): " + tile_name(g, ax, "a") + " += ½·L⁻ᵀ·(P + Pᵀ)·L⁻¹, P = Φ(Lᵀ·tril(" + adj +
         "))");
  // Φ reads only W's lower triangle (r ≥ c), where the sum starts at k = r ≥ c: L's zeros cut it
  // there, and the same bound keeps L̄'s upper triangle out.
  w.line("// " + sn + " = Lᵀ · tril(" + adj + "), its lower triangle");
  w.each(g, {n, n}, [&] {
    w.open("if (c <= r) {");
    w.line("var acc = 0.0;");
    w.open("for (var k = r; k < " + u32(n) + "; k++) {");
    w.line("acc += " + at(l, "k", "r", n) + " * " + at(an, "k", "c", n) + ";");
    w.close();
    w.line(s + "[e] = acc;");
    w.close();
  });
  w.line("// " + adj + " = ½(P + Pᵀ): element (r, c) is half of " + sn + "'s at (max, min)");
  w.each(g, {n, n}, [&] { w.line(an + "[e] = 0.5 * " + at(s, "max(r, c)", "min(r, c)", n) + ";"); });
  w.line("// " + adj + " := L⁻ᵀ · " + adj + "; " + sn + " := L⁻ᵀ · " + adj + "ᵀ, which is L⁻ᵀ·½(P + Pᵀ)·L⁻¹");
  emit_solve_in_place(w, g, an, n, n, lt, true);
  w.each(g, {n, n}, [&] { w.line(s + "[e] = " + at(an, "c", "r", n) + ";"); });
  emit_solve_in_place(w, g, s, n, n, lt, true);
  w.line("// symmetric up to rounding; made exactly so");
  w.each(g, {n, n},
         [&] { w.line(tile_ref(g, ax, "a") + "[e] += 0.5 * (" + s + "[e] + " + at(s, "c", "r", n) + ");"); });
}

}  // namespace

bool has_scratch(const Node& node) { return node.op == Op::cholesky; }

void emit_linalg_forward(Wgsl& w, const Graph& g, int n) {
  // A block of its own: the lets of two factorisations in one kernel must not collide.
  w.open("{");
  if (g.nodes[size_t(n)].op == Op::cholesky)
    emit_cholesky(w, g, n);
  else
    emit_solve(w, g, n);
  w.close();
}

void emit_linalg_adjoint(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs) {
  w.open("{");
  if (g.nodes[size_t(n)].op == Op::cholesky)
    emit_cholesky_adjoint(w, g, n, needs);
  else
    emit_solve_adjoint(w, g, n, needs);
  w.close();
}

HostArray host_cholesky(const HostArray& a, const std::string& where) {
  int64_t n = a.shape()[0];
  auto A = [&](int64_t i, int64_t j) { return 0.5 * (a.values()[size_t(i * n + j)] + a.values()[size_t(j * n + i)]); };
  HostArray l = HostArray::full({n, n}, 0.0);
  auto L = [&](int64_t i, int64_t j) -> double& { return l.values()[size_t(i * n + j)]; };
  for (int64_t j = 0; j < n; ++j) {
    double d = A(j, j);
    for (int64_t k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
    if (!(d > 0)) {
      std::ostringstream msg;
      msg << where << "pivot " << j << " of the " << n << "×" << n << " tile is " << d
          << ", not positive: the tile is not symmetric positive definite (on the GPU, L comes out all NaN)";
      throw Error(ErrorKind::Value, msg.str());
    }
    L(j, j) = std::sqrt(d);
    for (int64_t i = j + 1; i < n; ++i) {
      double v = A(i, j);
      for (int64_t k = 0; k < j; ++k) v -= L(i, k) * L(j, k);
      L(i, j) = v / L(j, j);
    }
  }
  return l;
}

HostArray host_triangular_solve(const HostArray& mat, const HostArray& b, bool upper) {
  int64_t n = b.shape()[0], m = b.shape()[1];
  auto M = [&](int64_t i, int64_t j) { return mat.values()[size_t(i * n + j)]; };
  HostArray x = b;
  for (int64_t s = 0; s < n; ++s) {
    int64_t i = upper ? n - 1 - s : s;
    for (int64_t j = 0; j < m; ++j) {
      double v = b.values()[size_t(i * m + j)];
      for (int64_t k = upper ? i + 1 : 0; k < (upper ? n : i); ++k) v -= M(i, k) * x.values()[size_t(k * m + j)];
      x.values()[size_t(i * m + j)] = v / M(i, i);
    }
  }
  return x;
}

// ---- the records (see op_record.hpp)

namespace {

std::string arg_name(const Graph& g, int n, size_t i) { return tile_name(g, g.nodes[size_t(n)].args[i]); }

std::string cholesky_describe(const Graph& g, int n) { return "tile_cholesky(" + arg_name(g, n, 0) + ")"; }

template <bool kUpper>
std::string solve_describe(const Graph& g, int n) {
  return std::string(kUpper ? "tile_upper_solve(" : "tile_lower_solve(") + arg_name(g, n, 0) + ", " +
         arg_name(g, n, 1) + ")";
}

std::vector<int> cholesky_reads(const Graph& g, int n, const std::vector<bool>& needs) {
  if (needs[size_t(g.nodes[size_t(n)].args[0])]) return {n};  // L
  return {};
}

std::vector<int> solve_reads(const Graph& g, int n, const std::vector<bool>& needs) {
  const Node& node = g.nodes[size_t(n)];
  std::vector<int> r = {node.args[0]};              // the triangle, for B's adjoint (which M's needs too)
  if (needs[size_t(node.args[0])]) r.push_back(n);  // X, for M's adjoint
  return r;
}

HostArray cholesky_host(const HostStep& s) {
  return host_cholesky(s.arg(0), "tile kernel '" + s.g.name + "' (host reference), tile_cholesky " +
                                     tile_name(s.g, s.node) + " in block (" + std::to_string(s.block[0]) + ", " +
                                     std::to_string(s.block[1]) + ", " + std::to_string(s.block[2]) + "): ");
}

HostArray solve_host(const HostStep& s) {
  return host_triangular_solve(s.arg(0), s.arg(1), s.n().op == Op::upper_solve);
}

}  // namespace

std::vector<OpRecord> linalg_records() {
  return {
      {Op::cholesky, "tile_cholesky", nullptr, cholesky_describe, emit_linalg_forward, emit_linalg_adjoint,
       cholesky_reads, cholesky_host},
      {Op::lower_solve, "tile_lower_solve", nullptr, solve_describe<false>, emit_linalg_forward, emit_linalg_adjoint,
       solve_reads, solve_host},
      {Op::upper_solve, "tile_upper_solve", nullptr, solve_describe<true>, emit_linalg_forward, emit_linalg_adjoint,
       solve_reads, solve_host},
  };
}

}  // namespace surfgrad::tiles::detail
