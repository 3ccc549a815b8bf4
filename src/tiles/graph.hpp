// The program a tile kernel is: arrays (its tensor parameters) and nodes (one per primitive, in
// the order they were called). The builder (builder.cpp) appends nodes after checking shapes;
// the WGSL generators (forward.cpp, backward.cpp) and the host reference (host_reference.cpp)
// walk them, asking each node's primitive for its record (op_record.hpp).
#pragma once
#include <string>
#include <vector>

#include "surfgrad/tiles.hpp"

namespace surfgrad::tiles::detail {

enum class Op {
  load,
  store,
  atomic_add,
  unary,
  scale,  // args: x; x · scalar (a constant of the program)
  binary,
  broadcast,
  transpose,
  reduce,
  matmul,
  cholesky,     // args: A (n×n)
  lower_solve,  // args: L (n×n, its lower triangle read), B (n×m)
  upper_solve,  // args: U (n×n, its upper triangle read), B (n×m)
  // args: re (R×n) and optionally im (absent: a real input). Its tile is 4R×n: rows 0 … R − 1
  // the result's real part, R … 2R − 1 its imaginary part, the rest the passes' work space.
  fft,
  fft_part,  // args: an fft node; axis 0 copies its real part, 1 its imaginary part (R×n)
  view,      // args: x; a copy of the block of x at (row_offset, col_offset) of this node's shape
  assign     // args: dst, src; dst with its block at (row_offset, col_offset) replaced by src
};

struct Node {
  Op op;
  TileShape shape;        // the tile this node makes (store / atomic add: the tile written)
  std::vector<int> args;  // the nodes it reads
  int array = -1;         // load, store, atomic add; matmul: B read from this array in place
  At at;
  Unary unary = Unary::neg;
  Binary binary = Binary::add;
  Reduce reduce = Reduce::sum;
  int axis = 0;
  double scalar = 1;                   // scale: the factor
  bool inverse = false;                // fft: the inverse transform, scaled by 1/n
  int row_offset = 0, col_offset = 0;  // view, assign: the block's first row and column
  bool makes_tile() const { return op != Op::store && op != Op::atomic_add; }
};

struct ArrayParam {
  std::string name;
  bool output = false;
  bool atomic = false;         // written by tile_atomic_add (bound as atomic words)
  bool stored = false;         // written by tile_store
  bool differentiable = true;  // an input whose gradient the backward kernel computes
  // An input's element type: f32, or f16 (weights kept in half precision; read as f32, its
  // gradient f32).
  DType dtype = DType::f32;
};

// Binding names in the generated WGSL: in_<name>, out_<name> and d_<name> (gradients), so no
// array name can collide with the kernels' own variables.
inline std::string binding_name(const ArrayParam& a) { return (a.output ? "out_" : "in_") + a.name; }
inline std::string grad_name(const ArrayParam& a) { return "d_" + a.name; }

// How the kernels read element `index` of input array `a` (bound as its binding name): as f32.
inline std::string input_element(const ArrayParam& a, const std::string& index) {
  std::string e = binding_name(a) + "[" + index + "]";
  return a.dtype == DType::f16 ? "f32(" + e + ")" : e;
}
inline std::string input_type(const ArrayParam& a) { return a.dtype == DType::f16 ? "array<f16>" : "array<f32>"; }

struct Graph {
  std::string name;
  int threads = 128;
  std::vector<ArrayParam> arrays;
  std::vector<Node> nodes;
  // The generated kernels, made once rather than at every launch (a
  // large kernel's source takes longer to build than the GPU takes to run it); valid while the
  // program has the node and array counts it was made for (both only grow).
  struct Generated {
    size_t nodes = 0, arrays = 0;
    std::string text;
  };
  // [forward, backward, both][float atomics][weights staged][scalar, subgroup matrices, emulated]
  Generated generated[3][2][2][3];
  bool weight_staging = true;  // Kernel::set_weight_staging

  std::vector<int> inputs() const {
    std::vector<int> r;
    for (size_t i = 0; i < arrays.size(); ++i)
      if (!arrays[i].output) r.push_back(int(i));
    return r;
  }
  std::vector<int> differentiable_inputs() const {
    std::vector<int> r;
    for (size_t i = 0; i < arrays.size(); ++i)
      if (!arrays[i].output && arrays[i].differentiable) r.push_back(int(i));
    return r;
  }
  std::vector<int> outputs() const {
    std::vector<int> r;
    for (size_t i = 0; i < arrays.size(); ++i)
      if (arrays[i].output) r.push_back(int(i));
    return r;
  }
};

// Readable names for the generated code: t<node>_<primitive>, and the primitive's name.
const char* op_name(Op op);
std::string tile_name(const Graph& g, int node, const char* prefix = "t");
// The tile in code: a pointer let into its workgroup slot (memory.hpp), dereferenced.
inline std::string tile_ref(const Graph& g, int node, const char* prefix = "t") {
  return "(*" + tile_name(g, node, prefix) + ")";
}
std::string shape_text(TileShape s);
const char* unary_name(Unary op);

// Unary ops in WGSL: the value (from the library's unary op table) and the derivative dy/dx in
// terms of x and y (unary_derivatives.cpp); the host reference's float64 value.
std::string unary_wgsl(Unary op);
std::string unary_derivative_wgsl(Unary op);
double unary_host(Unary op, double x);
struct UnaryReads {
  bool x, y;
};
UnaryReads unary_derivative_reads(Unary op);

// The generated kernels (forward.cpp / backward.cpp share the per-primitive emitters).
// `float_atomics`: the device adds f32 atomically in hardware (see Wgsl::float_atomics).
// `stage_weights`: in-place weights staged in workgroup memory (see Wgsl::stage_weights).
// `with_values`: the backward kernel also writes the forward's outputs during its replay (one
// kernel for both; Kernel::launch_forward_backward), bound after the input gradients.
// `sgmat_sg`: the subgroup size products run on subgroup matrices with (0: scalar code; see
// matmul_sgmat.hpp).
std::string forward_wgsl(const Graph& g, bool float_atomics, bool stage_weights, int sgmat_sg = 0);
std::string backward_wgsl(const Graph& g, bool float_atomics, bool stage_weights, bool with_values = false,
                          int sgmat_sg = 0);

}  // namespace surfgrad::tiles::detail
