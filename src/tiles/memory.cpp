// Lifetimes of tiles and their assignment to shared workgroup arrays (see memory.hpp).
#include "tiles/memory.hpp"

#include <algorithm>

#include "tiles/cholesky.hpp"
#include "tiles/op_record.hpp"

namespace surfgrad::tiles::detail {

namespace {

// The nodes whose values node n's adjoint reads (its record's), given which of its operands want
// a gradient.
std::vector<int> adjoint_reads(const Graph& g, int n, const std::vector<bool>& needs) {
  auto reads = op_record(g.nodes[size_t(n)].op).adjoint_reads;
  return reads ? reads(g, n, needs) : std::vector<int>{};
}

enum class Kind { value, adjoint, scratch };

struct Interval {
  int start, end;
  int node;
  Kind kind;
};

}  // namespace

std::vector<bool> needs_grad(const Graph& g) {
  std::vector<bool> needs(g.nodes.size(), false);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.op == Op::load || (node.op == Op::matmul && node.array >= 0))
      needs[n] = g.arrays[size_t(node.array)].differentiable;
    for (int a : node.args) needs[n] = needs[n] || needs[size_t(a)];
  }
  return needs;
}

std::vector<bool> adjoint_runs(const Graph& g) {
  std::vector<bool> needs = needs_grad(g), runs(g.nodes.size(), false);
  for (size_t m = g.nodes.size(); m-- > 0;) {
    if (!g.nodes[m].makes_tile()) runs[m] = needs[m];
    if (runs[m])
      for (int a : g.nodes[m].args) runs[size_t(a)] = runs[size_t(a)] || needs[size_t(a)];
  }
  return runs;
}

MemoryPlan plan_memory(const Graph& g, bool backward) {
  int count = int(g.nodes.size());
  auto adjoint_step = [&](int m) { return 2 * count - 1 - m; };
  std::vector<bool> runs = adjoint_runs(g), needs = needs_grad(g);
  // last_consumer: the consumer whose adjoint runs first (it contributes to a<n> first).
  std::vector<int> value_end(size_t(count), -1), last_consumer(size_t(count), -1);
  for (int m = 0; m < count; ++m) {
    value_end[size_t(m)] = m;
    for (int a : g.nodes[size_t(m)].args) {
      value_end[size_t(a)] = std::max(value_end[size_t(a)], m);
      if (runs[size_t(m)] && needs[size_t(a)]) last_consumer[size_t(a)] = std::max(last_consumer[size_t(a)], m);
    }
  }
  std::vector<Interval> intervals;
  if (backward)  // what an adjoint reads stays live until that adjoint has run
    for (int n = 0; n < count; ++n)
      if (g.nodes[size_t(n)].makes_tile() && runs[size_t(n)])
        for (int r : adjoint_reads(g, n, needs)) value_end[size_t(r)] = std::max(value_end[size_t(r)], adjoint_step(n));
  for (int n = 0; n < count; ++n) {
    if (!g.nodes[size_t(n)].makes_tile()) continue;
    intervals.push_back({n, value_end[size_t(n)], n, Kind::value});
    if (backward && last_consumer[size_t(n)] >= 0)
      intervals.push_back({adjoint_step(last_consumer[size_t(n)]), adjoint_step(n), n, Kind::adjoint});
    if (backward && runs[size_t(n)] && has_scratch(g.nodes[size_t(n)]))
      intervals.push_back({adjoint_step(n), adjoint_step(n), n, Kind::scratch});
  }
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.node < b.node;
  });
  MemoryPlan plan;
  plan.value.assign(size_t(count), -1);
  plan.adjoint.assign(size_t(count), -1);
  plan.scratch.assign(size_t(count), -1);
  for (const Interval& iv : intervals) {
    int64_t need = int64_t(g.nodes[size_t(iv.node)].shape.rows) * g.nodes[size_t(iv.node)].shape.cols;
    // The free slot closest in size; a larger one wastes its tail, a smaller one grows.
    int best = -1;
    for (size_t s = 0; s < plan.slots.size(); ++s) {
      const Slot& slot = plan.slots[s];
      if (slot.last_use >= iv.start) continue;
      auto cost = [&](const Slot& x) { return x.elements >= need ? x.elements - need : 4 * (need - x.elements); };
      if (best < 0 || cost(slot) < cost(plan.slots[size_t(best)])) best = int(s);
    }
    if (best < 0) {
      plan.slots.push_back({});
      best = int(plan.slots.size()) - 1;
    }
    Slot& slot = plan.slots[size_t(best)];
    slot.elements = std::max(slot.elements, need);
    slot.last_use = iv.end;
    const char* prefix = iv.kind == Kind::value ? "t" : iv.kind == Kind::adjoint ? "a" : "s";
    slot.holds.push_back(tile_name(g, iv.node, prefix));
    (iv.kind == Kind::value     ? plan.value
     : iv.kind == Kind::adjoint ? plan.adjoint
                                : plan.scratch)[size_t(iv.node)] = best;
  }
  return plan;
}

}  // namespace surfgrad::tiles::detail
