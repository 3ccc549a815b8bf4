// Tile programs with adjoints (the model of NVIDIA Warp's tiles, on WebGPU).
//
// A tile kernel runs one workgroup per block of a launch grid. Inside it the whole workgroup
// cooperatively loads 2-D tiles from tensors, combines them, and stores or atomically adds them
// back. Tile shapes are fixed when the kernel is built: they become constants of the generated
// WGSL, and every shape is checked by the builder (a mismatch is an error naming the primitive
// and both shapes, before anything reaches the GPU). Tensors keep their runtime shapes; tiles
// that hang over a tensor's edge read zeros there and write nothing.
//
//   tiles::Kernel k("affine_relu", /*threads=*/64);
//   tiles::Array x = k.input("x"), w = k.input("w"), y = k.output("y");
//   auto row = tiles::Coord::block(0);                          // workgroup id x picks the rows
//   tiles::Tile xt = tiles::tile_load(x, {16, 8}, {row, 0});    // x[16·bx .. +16, 0 .. 8]
//   tiles::Tile wt = tiles::tile_load(w, {8, 4});
//   tiles::tile_store(y, tiles::tile_map(tiles::Unary::relu, tiles::tile_matmul(xt, wt)), {row, 0});
//   k.launch({x_tensor, w_tensor}, {y_tensor}, {blocks, 1, 1});  // through kernels::Program
//   Var yv = k(std::vector<Var>{xv, wv}, {n, 4}, {blocks, 1, 1}); // one op on the autograd tape
//
// Every primitive has an adjoint: the generated backward kernel replays the forward, then runs
// the adjoints in reverse (loads become atomic adds of gradients, stores become loads of the
// output's gradient). `k(std::vector<HostArray>...)` interprets the same program in float64 on
// the host — the reference for tests and for gradcheck. SURFGRAD_DUMP_WGSL=DIR writes both
// generated kernels (with a comment per primitive) as they are compiled. Element type: f32.
//
// Linear algebra on small square tiles (as workgroup memory allows: a 64×64 factorisation alone
// takes 32 KiB forward, and its backward keeps four n×n tiles live, so n ≤ 45 in 32 KiB): L =
// tile_cholesky(A) factors a symmetric positive definite A = L·Lᵀ (A read as ½(A + Aᵀ), so its
// gradient is symmetric; a tile that is not positive definite gives an all-NaN L on the GPU and an
// error from the host reference), tile_lower_solve(L, B) = L⁻¹·B, tile_upper_solve(U, B) = U⁻¹·B
// (each reading only its triangle) and tile_cholesky_solve(L, B) = (L·Lᵀ)⁻¹·B. The workgroup
// factors and substitutes cooperatively, one barrier per pivot; every one has an adjoint.
//
// Fourier transforms along the rows of a tile: tile_fft / tile_ifft over a ComplexTile {re, im}
// (two f32 tiles), each row a signal whose length (the tile's columns) is a power of two; the
// inverse is scaled by 1/n. With tile_complex_mul, an FFT convolution of a block of signals with a
// filter is one kernel (src/demos/tile_fftconv.cpp).
//
// Blocks: tile_view(x, shape, r, c) is the block x[r .. +rows, c .. +cols] (a copy in a tile of its
// own), and tile_assign(dst, src, r, c) a new tile equal to dst with that block replaced by src —
// Warp's in-place tile_assign in functional form (rebind: dst = tile_assign(dst, src, r, c)).
//
// Memory: every tile lives in workgroup memory, and tiles whose lifetimes do not overlap share
// it (the backward kernel keeps a value only while an adjoint still reads it); weights that
// every block reads can stay in global memory (the tile_matmul overload taking an Array).
// Inputs declared with differentiable = false (data) get no gradient and no adjoint work. A
// Var made by a kernel shares the kernel's program: add no primitives to it before backward.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "surfgrad/autograd.hpp"
#include "surfgrad/reference.hpp"
#include "surfgrad/tensor.hpp"

namespace surfgrad::tiles {

namespace detail {
struct Graph;
}

struct TileShape {
  int rows = 1, cols = 1;
};

// A tile index along one axis of an array (the element offset is index × the tile's extent,
// plus `offset`), or the batch index of a rank-3 array: a constant, or the workgroup's block
// index on grid axis 0, 1 or 2. element(e) is a fixed element offset: for parameters packed
// into one array (a layer's bias row after its weight rows).
struct Coord {
  Coord(int constant = 0) : constant(constant) {}
  static Coord block(int axis) {
    Coord c;
    c.axis = axis;
    return c;
  }
  static Coord element(int offset) {
    Coord c;
    c.offset = offset;
    return c;
  }
  int axis = -1;  // -1: the constant
  int constant = 0;
  int offset = 0;
};
// Where a tile lies in an array [rows, cols] or [batch, rows, cols].
struct At {
  Coord row = 0, col = 0, batch = 0;
};

// The unary ops of the library's unary op table (surfgrad/unary_ops.inc), in its order.
enum class Unary {
#define SURFGRAD_UNARY(name) name,
#include "surfgrad/unary_ops.inc"
#undef SURFGRAD_UNARY
};
enum class Binary { add, sub, mul };
enum class Reduce { sum, max };  // max: the gradient goes to the maxima, split between ties

struct Grid {
  uint32_t x = 1, y = 1, z = 1;
};

class Kernel;

// A tensor parameter of a kernel: an input (read) or an output (stored or atomically added to).
class Array {
 public:
  Array() = default;
  int index() const { return index_; }

 private:
  friend class Kernel;
  friend struct Access;
  std::shared_ptr<detail::Graph> graph_;
  int index_ = -1;
};

// A tile value inside a kernel: a node of the kernel's program.
class Tile {
 public:
  Tile() = default;
  int rows() const { return shape_.rows; }
  int cols() const { return shape_.cols; }
  TileShape shape() const { return shape_; }
  int node() const { return node_; }

 private:
  friend struct Access;
  std::shared_ptr<detail::Graph> graph_;
  int node_ = -1;
  TileShape shape_;
};

// The primitives. Each checks its shapes when called.
Tile tile_load(const Array& array, TileShape shape, At at = {});
void tile_store(const Array& array, const Tile& tile, At at = {});
void tile_atomic_add(const Array& array, const Tile& tile, At at = {});  // f32 adds, any order
Tile tile_map(Unary op, const Tile& x);
Tile tile_map(Binary op, const Tile& a, const Tile& b);  // same shapes (tile_broadcast first)
Tile operator+(const Tile& a, const Tile& b);
Tile operator-(const Tile& a, const Tile& b);
Tile operator*(const Tile& a, const Tile& b);
// x · s for a constant s (a loss's 1/N, a step size), fixed when the kernel is built.
Tile tile_scale(const Tile& x, double s);
Tile operator*(const Tile& x, double s);
Tile operator*(double s, const Tile& x);
// A tile of 1 row and/or 1 column repeated to `shape`.
Tile tile_broadcast(const Tile& x, TileShape shape);
Tile tile_transpose(const Tile& x);
// Along axis 0 (→ 1 × cols) or 1 (→ rows × 1).
Tile tile_reduce(Reduce op, const Tile& x, int axis);
Tile tile_sum(const Tile& x, int axis);
Tile tile_sum(const Tile& x);  // the whole tile → 1 × 1
Tile tile_matmul(const Tile& a, const Tile& b);
// A · B where B is rows [row_offset, row_offset + a.cols) and columns [0, cols) of the input
// array `b` (rank 2), read where it lies in global memory instead of staged in workgroup
// memory: for weights every block shares that would not fit beside the activations (a 64×64
// f32 matrix is 16 KiB). Its gradient Aᵀ·dC is added atomically straight into b's gradient.
Tile tile_matmul(const Tile& a, const Array& b, int cols, int row_offset = 0);
// Dense linear algebra on small square tiles (src/tiles/cholesky.cpp has the algorithms and
// adjoints). L = tile_cholesky(A): the lower-triangular factor of A = L·Lᵀ (upper triangle zero)
// of an n×n tile A, read as its symmetric part ½(A + Aᵀ), so A's gradient is symmetric. A must be
// positive definite (a tile over an array's edge reads zeros there, so it is not): a pivot that is
// not positive makes the GPU's L entirely NaN (the host reference throws an error naming the
// pivot).
Tile tile_cholesky(const Tile& a);
// X = L⁻¹·B for an n×n tile L, of which only the lower triangle (with the diagonal) is read, and
// an n×m tile B; the upper analogue reads only U's upper triangle. No pivoting: a zero diagonal
// element gives infinities or NaN.
Tile tile_lower_solve(const Tile& l, const Tile& b);
Tile tile_upper_solve(const Tile& u, const Tile& b);
// X = (L·Lᵀ)⁻¹·B = tile_upper_solve(tile_transpose(L), tile_lower_solve(L, B)): A·X = B given
// L = tile_cholesky(A).
Tile tile_cholesky_solve(const Tile& l, const Tile& b);

// Complex tiles: a pair of f32 tiles of one shape, the real and the imaginary parts.
struct ComplexTile {
  Tile re, im;
};
// The discrete Fourier transform of each row of an R×n tile (every row a signal of n values),
// y_k = Σ_j x_j·exp(−2πi·jk/n), unnormalised; tile_ifft is the inverse, x_j = (1/n)·Σ_k y_k·
// exp(+2πi·jk/n), so tile_ifft(tile_fft(x)) = x. n (the tile's columns) must be a power of two
// (1, 2, 4, …); any number of rows. The workgroup transforms all rows at once in workgroup memory
// (radix-16/8/4/2 Stockham passes, one barrier each: src/tiles/fft.cpp); the transform takes a
// 4R×n work tile (real, imaginary, and their ping-pong partner), so a 4×256 tile's transform
// needs 16 KiB of workgroup memory besides its input and output. Adjoints: fft's is n·ifft of
// the output's adjoint, ifft's is fft(ȳ)/n (the transforms are linear; real and imaginary parts
// are independent real variables). The one-tile overloads take a real input (imaginary part 0;
// its adjoint keeps only the real part).
ComplexTile tile_fft(const Tile& re, const Tile& im);
ComplexTile tile_fft(const Tile& re);
ComplexTile tile_fft(const ComplexTile& x);
ComplexTile tile_ifft(const Tile& re, const Tile& im);
ComplexTile tile_ifft(const ComplexTile& x);
// (a.re + i·a.im)·(b.re + i·b.im), element by element, from tile_map's products and sums.
ComplexTile tile_complex_mul(const ComplexTile& a, const ComplexTile& b);

// Blocks of a tile (Warp's tile_view and tile_assign). tile_view: the `shape` block of x whose
// first element is x[row_offset, col_offset], copied into a new tile (not an alias: later
// primitives cannot change x through it, and it takes workgroup memory of its own while live).
// Its adjoint adds the view's adjoint into that block of x's. tile_assign: a new tile of dst's
// shape, equal to dst except for the block of src's shape at (row_offset, col_offset), which
// holds src. Warp assigns in place; here the result is a new node so the program stays
// single-assignment and differentiable: write dst = tile_assign(dst, src, r, c). dst's adjoint gets
// the output's adjoint with the block zeroed, src's gets the block. Both refuse (a Shape error
// naming the primitive, the shapes and the offsets) a block that does not lie inside the tile.
Tile tile_view(const Tile& x, TileShape shape, int row_offset = 0, int col_offset = 0);
Tile tile_assign(const Tile& dst, const Tile& src, int row_offset = 0, int col_offset = 0);

class Kernel {
 public:
  // `threads`: the workgroup's size; each thread owns a strided set of every tile's elements.
  explicit Kernel(std::string name, int threads = 128);
  // `differentiable` false: a constant (data, targets) that gets no gradient, so the backward
  // kernel binds one tensor fewer (the launch seam binds at most 8). `dtype` f16: the tensor is
  // half precision (weights, say: half the bytes each block reads), read as f32 in the kernel;
  // its gradient is f32, and the kernel needs an adapter with shader-f16 (launch says so).
  Array input(const std::string& name, bool differentiable = true, DType dtype = DType::f32);
  Array output(const std::string& name);

  const std::string& name() const;
  int threads() const;
  // The generated WGSL bodies (what kernels::Program::generated compiles, before the seam adds
  // its preamble): the forward kernel and the backward kernel (replay + adjoints). Atomic f32
  // adds are compare-and-swap loops unless `float_atomics` (launches use the device's atomic<f32>
  // where it has them: gpu::Features::float32_atomics).
  // `stage_weights`: as launched where the weights are staged (see set_weight_staging).
  std::string forward_wgsl(bool float_atomics = false, bool stage_weights = false) const;
  std::string backward_wgsl(bool float_atomics = false, bool stage_weights = false) const;
  std::string forward_backward_wgsl(bool float_atomics = false, bool stage_weights = false) const;
  // tile_matmul on tensor cores (issue 34; opt-in with SURFGRAD_TILE_SGMAT=auto: its products were
  // wrong on the H200 in the first hardware run, so the default is off): where the device offers Dawn's
  // chromium-experimental-subgroup-matrix with f16×f16→f32 16×16×16 fragments, one fixed subgroup
  // size dividing `threads` and workgroup memory for the scratch, every product whose M, N and K
  // are multiples of 16 (forward and both adjoints) runs on subgroup matrices, each f32 operand
  // split into f16 hi + lo parts (f32-level accuracy from three f16 products; src/tiles/
  // matmul_sgmat.cpp); other products keep the scalar code. SURFGRAD_TILE_SGMAT=off keeps the
  // scalar code everywhere, =emulate runs the subgroup-matrix code with its builtins emulated (any
  // adapter with shader-f16 and subgroups; slow: for tests). subgroup_matrix_wgsl: that code, for
  // inspection or an offline compiler, without a device (kind 0 forward, 1 backward, 2 both);
  // uses_subgroup_matrices: whether a launch on `ctx` runs it.
  std::string subgroup_matrix_wgsl(int kind, int subgroup_size = 32, bool float_atomics = false,
                                   bool stage_weights = false) const;
  bool uses_subgroup_matrices(const gpu::Context& ctx, bool backward) const;
  // The workgroup memory those products' scratch takes beside the tiles (0: no product qualifies).
  uint64_t subgroup_matrix_bytes(bool backward, int subgroup_size = 32) const;
  // Workgroup memory the forward / backward kernel needs, in bytes (weights not staged).
  uint64_t workgroup_bytes(bool backward) const;
  // Weights read in place (the tile_matmul overload taking an Array) are copied into workgroup
  // memory first, one matrix at a time, where the adapter has room for that copy beside the
  // tiles: every thread then reads them there, not in global memory (on the H200 the global
  // reads were half the MLP's forward kernel). On by default; off keeps every read in global
  // memory. weight_stage_bytes: the copy's size (the largest such matrix, rows padded by one);
  // stages_weights: whether a launch on `ctx` stages them.
  void set_weight_staging(bool on);
  uint64_t weight_stage_bytes() const;
  bool stages_weights(const gpu::Context& ctx, bool backward) const;

  // Checks everything a launch on `ctx` needs (workgroup memory, threads, bindings, tensor
  // dtypes and ranks, grid size) and throws before any GPU work. launch() calls it.
  void validate(const gpu::Context& ctx, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                Grid grid, bool backward = false) const;
  // Tensors for the inputs, then the outputs, in declaration order; each of its array's dtype
  // (outputs f32), rank 2 or 3, dense.
  void launch(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, Grid grid) const;
  // The backward kernel: accumulates (atomically) into `input_grads` (zeros, the shapes of the
  // differentiable inputs, in order) the gradients for `output_grads`.
  void launch_backward(const std::vector<Tensor>& inputs, const std::vector<Tensor>& output_grads,
                       const std::vector<Tensor>& input_grads, Grid grid) const;
  // Forward and backward in one kernel, for a training step that wants both at once (a loss and
  // its gradient): the backward kernel's replay of the forward writes `outputs` as launch()
  // would (start them at zero for atomically added ones), and its adjoints add the input
  // gradients for `output_grads` (known before the forward ran: a loss's is 1). One kernel
  // where the autograd op runs two; it binds each output besides what launch_backward binds.
  void launch_forward_backward(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                               const std::vector<Tensor>& output_grads, const std::vector<Tensor>& input_grads,
                               Grid grid) const;

  // One op on the autograd tape: a kernel with one output, of `output_shape`, zero-initialised
  // before the kernel runs (so atomically added outputs start from zero too). Constant inputs
  // get no gradient.
  Var operator()(const std::vector<Var>& inputs, const Shape& output_shape, Grid grid) const;
  // The same program in float64 on the host (the reference; gradcheck calls both overloads).
  HostArray operator()(const std::vector<HostArray>& inputs, const Shape& output_shape, Grid grid) const;
  // The reference for kernels with several outputs: `outputs` hold their starting values.
  std::vector<HostArray> reference(const std::vector<HostArray>& inputs, std::vector<HostArray> outputs,
                                   Grid grid) const;

 private:
  // What validate checks that needs no tensors (workgroup memory, threads, bindings, grid).
  void check_limits(const gpu::Context& ctx, Grid grid, bool backward, bool with_values = false) const;
  // The backward kernel's launch; with `outputs`, the one that writes them too.
  void launch_gradients(const std::vector<Tensor>& inputs, const std::vector<Tensor>& output_grads,
                        const std::vector<Tensor>& input_grads, const std::vector<Tensor>* outputs, Grid grid) const;
  std::shared_ptr<detail::Graph> graph_;
};

}  // namespace surfgrad::tiles
