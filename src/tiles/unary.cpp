// Unary ops inside tile kernels. The value comes from the library's unary op table (the same
// WGSL and float64 reference as Tensor's ops); the derivative, which the table keeps as tensor
// ops, is written here in WGSL in terms of x and y = f(x), because a backward tile kernel needs
// it inside the kernel. A unary op added to the table without a row here fails the tile tests.
#include "kernels/launch.hpp"
#include "surfgrad/error.hpp"
#include "tensor/unary_ops.hpp"
#include "tiles/graph.hpp"

namespace surfgrad::tiles::detail {

namespace {

UnaryOp table_op(Unary op) { return static_cast<UnaryOp>(static_cast<int>(op)); }

}  // namespace

const char* unary_name(Unary op) { return unary_spec(table_op(op)).name; }

std::string unary_wgsl(Unary op) { return kernels::fill_template(unary_spec(table_op(op)).wgsl, {{"T", "f32"}}); }

double unary_host(Unary op, double x) { return unary_spec(table_op(op)).host(x); }

std::string unary_derivative_wgsl(Unary op) {
  switch (op) {
    case Unary::neg: return "-1.0";
    case Unary::abs: return "sign(x)";
    case Unary::exp: return "y";
    case Unary::log: return "1.0 / x";
    case Unary::sqrt: return "0.5 / y";
    case Unary::rsqrt: return "-0.5 * y * y * y";
    case Unary::sin: return "cos(x)";
    case Unary::cos: return "-sin(x)";
    case Unary::tanh: return "1.0 - y * y";
    case Unary::sigmoid: return "y * (1.0 - y)";
    case Unary::relu: return "select(0.0, 1.0, y > 0.0)";  // y > 0 exactly where x > 0
    case Unary::gelu:
      // d/dx 0.5·x·(1 + tanh(u)), u = c·(x + 0.044715·x³)
      return "gelu_derivative(x)";
  }
  throw Error(ErrorKind::Value, "tile_map: unary op " + std::to_string(int(op)) + " has no derivative in WGSL");
}

UnaryReads unary_derivative_reads(Unary op) {
  // Which of x, y the derivative above reads: the backward keeps only those tiles live (a ReLU
  // network's pre-activations die after the forward replay).
  switch (op) {
    case Unary::neg: return {false, false};
    case Unary::exp:
    case Unary::sqrt:
    case Unary::rsqrt:
    case Unary::tanh:
    case Unary::sigmoid:
    case Unary::relu: return {false, true};
    case Unary::abs:
    case Unary::log:
    case Unary::sin:
    case Unary::cos:
    case Unary::gelu: return {true, false};
  }
  return {true, true};
}

}  // namespace surfgrad::tiles::detail
