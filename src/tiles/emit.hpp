// Pieces of generated WGSL that the forward and backward tile kernels share: the loop in which
// each thread visits its strided share of a tile's elements, tile loads (masked at the array's
// edges), writes of a tile to an array (plain or atomic f32 adds) and the matmul loop.
#pragma once
#include <functional>
#include <string>

#include "tiles/graph.hpp"
#include "tiles/memory.hpp"

namespace surfgrad::tiles::detail {

class Wgsl {
 public:
  void line(const std::string& text) { out_ += std::string(size_t(indent_) * 2, ' ') + text + "\n"; }
  void blank() { out_ += "\n"; }
  void open(const std::string& text) { line(text), ++indent_; }
  void close(const std::string& text = "}") { --indent_, line(text); }
  // for (e = lid; e < rows·cols; e += threads) with `r`, `c` the element's row and column; then
  // a barrier, so the next primitive sees every thread's elements.
  void each(const Graph& g, TileShape shape, const std::function<void()>& body, bool barrier = true);
  const std::string& text() const { return out_; }
  // f32 atomic adds in hardware (atomic<f32>, where the device has them) rather than
  // compare-and-swap loops on u32 words: one instruction instead of a retry loop that contended
  // words (every block adding into one weight gradient) serialise on.
  bool float_atomics = false;
  // Weights read in place (tile_matmul with B an array) staged in workgroup memory first, one
  // matrix at a time (where the adapter's workgroup memory has room: Kernel::launch decides).
  bool stage_weights = false;
  // Products of 16-multiple shapes on subgroup matrices (matmul_sgmat.hpp): the subgroup size
  // (0: the scalar code), and how many subgroups' result tiles the scratch holds.
  int sgmat_sg = 0;
  int sgmat_units = 0;
  std::string atomic_array() const { return float_atomics ? "array<atomic<f32>>" : "array<atomic<u32>>"; }

 private:
  std::string out_;
  int indent_ = 0;
};

std::string u32(int64_t v);
// A constant factor as a WGSL f32 expression (the f32 nearest it).
std::string scalar_literal(double v);
// The element offset of a tile's first row / column: tile index (constant or block id) × extent.
std::string coord_expr(const Coord& c);

// `target` (= or +=) the tile of `shape` at `at` of array `array`, read from buffer `buffer`
// (whose shape is array's), zero past the array's edges.
void emit_load(Wgsl& w, const Graph& g, const std::string& target, bool accumulate, int array,
               const std::string& buffer, TileShape shape, At at);
// Writes tile `source` into buffer `buffer` (array `array`'s shape) at `at`, skipping elements
// past the edges: a plain store, or an f32 add by compare-and-swap on the words (WGSL has no
// float atomics; the loop retries when another workgroup changed the word in between).
void emit_write(Wgsl& w, const Graph& g, const std::string& source, int array, const std::string& buffer,
                TileShape shape, At at, bool atomic);
// word (an atomic<u32> holding f32 bits) += value, by compare-and-swap (WGSL has no f32 atomics).
void emit_atomic_add_f32(Wgsl& w, const std::string& word, const std::string& value);
// Emits what becomes of output (i, j) of a product, given index expressions and its sum.
using MatmulWriter = std::function<void(Wgsl& w, const std::string& i, const std::string& j, const std::string& value)>;
// target[i, j] (= or +=) Σ_k lhs(i, k) · rhs(k, j), target of `shape` (i < rows, j < cols),
// the index expressions given in terms of i, j and k; or, with `writer`, whatever it emits
// (the sums into global memory atomically, say).
void emit_matmul(Wgsl& w, const Graph& g, const std::string& target, bool accumulate, TileShape shape, int inner,
                 const std::string& lhs_element, const std::string& rhs_element, const MatmulWriter& writer = {});
// In-place weights (tile_matmul with B an array, node n): with w.stage_weights, emits the copy of
// B's block into workgroup memory ([K][N + 1]: rows padded so a column's reads fall in
// different banks) and returns B(k, j) read there (`transposed`: B(j, k), for dA = dC·Bᵀ);
// otherwise the same element read in global memory.
std::string emit_weight_stage(Wgsl& w, const Graph& g, int n, bool transposed);
// The staging array's declaration (module scope), with w.stage_weights; its size in elements.
void emit_weight_stage_slot(Wgsl& w, const Graph& g);
int64_t weight_stage_elements(const Graph& g);

// Bindings of the arrays and the per-array shape lets (<name>_batch, _rows, _cols, from the
// parameter block: three words per array, in declaration order).
void emit_shape_lets(Wgsl& w, const Graph& g);
// A comment line describing node `n` (its primitive, shapes and operands); op_record.cpp.
std::string describe(const Graph& g, int n);
// The forward code of one node (its record's): into its tile t<n>, or, for a store or atomic
// add, into its array.
void emit_forward_node(Wgsl& w, const Graph& g, int n);
// The workgroup slots (module scope) and, inside the entry point, one pointer let per tile into
// its slot, named as the tile (t<n>_…, a<n>_…, scratch s<n>_…), so the code reads (*t3_matmul)[e].
void emit_slots(Wgsl& w, const MemoryPlan& plan);
void emit_tile_pointers(Wgsl& w, const Graph& g, const MemoryPlan& plan);
// Helper functions for the unary ops the kernel uses (and their derivatives if `derivatives`).
void emit_unary_functions(Wgsl& w, const Graph& g, bool derivatives);
std::string entry_point(const Graph& g);

}  // namespace surfgrad::tiles::detail
