// Workgroup memory for a tile kernel's tiles: each tile is live from the step that makes it to
// the last step that reads it, and tiles whose lifetimes do not overlap share one workgroup
// array (a slot). In the backward kernel the steps are the replay (node order) followed by the
// adjoints (reverse order): a value tile stays live until the last adjoint that reads it, an
// adjoint tile from its first contribution to its own adjoint step, a scratch tile (the Cholesky
// adjoint's work space) during its node's adjoint step only. This is what lets the
// activations of a several-layer MLP fit beside their adjoints.
#pragma once
#include <string>
#include <vector>

#include "tiles/graph.hpp"

namespace surfgrad::tiles::detail {

struct Slot {
  int64_t elements = 0;
  std::vector<std::string> holds;  // the tiles that use it, in order (for the generated comment)
  int last_use = -1;               // while planning: the last step of its current tile
};

struct MemoryPlan {
  std::vector<int> value;    // slot of t<n> (-1: no tile)
  std::vector<int> adjoint;  // slot of a<n> (-1: none; the backward kernel only)
  std::vector<int> scratch;  // slot of s<n>, a work tile of n's adjoint (-1: none; backward only)
  std::vector<Slot> slots;
  uint64_t bytes() const {
    uint64_t b = 0;
    for (const Slot& s : slots) b += uint64_t(s.elements) * 4;
    return b;
  }
};

MemoryPlan plan_memory(const Graph& g, bool backward);
// Per node, whether a gradient flows back through it: it depends on a differentiable input.
std::vector<bool> needs_grad(const Graph& g);
// Per node, whether its adjoint runs: it needs a gradient and its value reaches an output (a
// store or atomic add whose adjoint runs). Others have no adjoint tile and no code.
std::vector<bool> adjoint_runs(const Graph& g);

}  // namespace surfgrad::tiles::detail
