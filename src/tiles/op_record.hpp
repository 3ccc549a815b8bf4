// One record per tile primitive, as NVIDIA Warp's builtins are: its name, the comment line the
// generated code carries, its forward WGSL, its adjoint, the value tiles that adjoint reads (for
// the memory plan) and its float64 host reference. The generators (forward.cpp, backward.cpp),
// the memory plan (memory.cpp) and the host interpreter (host_reference.cpp) walk the program and
// ask each node's record; a family of primitives keeps its records in one file (ops_memory.cpp,
// ops_elementwise.cpp, ops_layout.cpp, ops_matmul.cpp, cholesky.cpp, fft.cpp, view.cpp).
// Adding a primitive: an Op, its builder function, and its record in its family's file.
#pragma once
#include <string>
#include <vector>

#include "surfgrad/reference.hpp"
#include "tiles/emit.hpp"

namespace surfgrad::tiles::detail {

// What a record's host reference sees of the interpreter at node `node` of block `block`.
struct HostStep {
  const Graph& g;
  int node;
  const int64_t* block;                  // the block's x, y, z
  const std::vector<HostArray>& value;   // the tiles made so far, by node
  const std::vector<HostArray>& inputs;  // the kernel's inputs, outputs, in declaration order
  std::vector<HostArray>& outputs;
  const std::vector<int>& slot;  // an array's position among the inputs (or the outputs)
  const Node& n() const { return g.nodes[size_t(node)]; }
  const HostArray& arg(size_t i) const { return value[size_t(n().args[i])]; }
};

struct OpRecord {
  Op op;
  const char* primitive;  // the builder's function, in messages and comments (tile_load, …)
  // The tile's name after t<n>_ (null: the primitive without "tile_").
  std::string (*tile_suffix)(const Graph& g, const Node& n);
  // The comment line's text after "t<n> (rows×cols) = " (the whole line for a store).
  std::string (*describe)(const Graph& g, int n);
  // The forward code: into the node's tile t<n> (a store or atomic add: into its array).
  void (*forward)(Wgsl& w, const Graph& g, int n);
  // Adds into the adjoints of those operands that `needs` (or, for a load, the input's gradient).
  void (*adjoint)(Wgsl& w, const Graph& g, int n, const std::vector<bool>& needs);
  // The value tiles the adjoint reads (kept live until it runs; null: none).
  std::vector<int> (*adjoint_reads)(const Graph& g, int n, const std::vector<bool>& needs);
  // The float64 value of the node's tile (a store or atomic add writes its output and returns
  // an empty array).
  HostArray (*host)(const HostStep& s);
};

const OpRecord& op_record(Op op);

// What an adjoint's code and comments name: node m's value tile t(m) and adjoint a(m) in code,
// tn(m) and an(m) in comments; wants(m): whether m wants a gradient.
struct AdjointNames {
  const Graph& g;
  const std::vector<bool>& needs;
  std::string t(int m) const { return tile_ref(g, m); }
  std::string a(int m) const { return tile_ref(g, m, "a"); }
  std::string tn(int m) const { return tile_name(g, m); }
  std::string an(int m) const { return tile_name(g, m, "a"); }
  bool wants(int m) const { return needs[size_t(m)]; }
};

// The families' records (each in its own file).
std::vector<OpRecord> memory_records();       // load, store, atomic_add
std::vector<OpRecord> elementwise_records();  // unary, scale, binary
std::vector<OpRecord> layout_records();       // broadcast, transpose, reduce
std::vector<OpRecord> matmul_records();       // matmul
std::vector<OpRecord> linalg_records();       // cholesky, lower_solve, upper_solve
std::vector<OpRecord> fft_records();          // fft, fft_part
std::vector<OpRecord> block_records();        // view, assign

}  // namespace surfgrad::tiles::detail
