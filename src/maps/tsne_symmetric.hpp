// t-SNE's attraction graph made symmetric on the host, for CPU adapters (tsne.cpp).
// The attraction on point i sums over its out-edges (its kNN, weights p_{j|i}/2N) and its
// in-edges (points that list i, weights p_{i|s}/2N). Where j lists i and i lists j (74% of the
// directed edges of the digits at k = 90) both edges join i and j: one entry with the summed
// weight computes the same force with one q instead of two. The union as CSR visits the
// digits' edges 204k times an iteration instead of 323k, and reads each entry (neighbour id,
// weight) from one consecutive array instead of the K-strided lists and the in-edge CSR.
#pragma once
#include <cstdint>
#include <vector>

#include "surfgrad/gpu.hpp"

namespace surfgrad {

// Whether t-SNE takes this path here (tsne.cpp, whose lists are one block): on CPU adapters, or
// as SURFGRAD_TSNE_FUSED (0 or 1) says, for measurements.
bool tsne_fused_step(const gpu::Context& ctx);

struct SymmetricEdges {
  std::vector<int32_t> offsets;   // [N + 1]: point i's entries at [offsets[i], offsets[i + 1])
  std::vector<uint32_t> entries;  // pairs (neighbour id, weight's f32 bits), ids ascending a row
};

// From the kNN lists nbr [N, K] (ids; negative, out-of-range and self entries skipped) and
// their weights w [N, K]: for every unordered pair {i, j} joined by an edge either way, the entry
// j in row i and i in row j, both with weight w_ij + w_ji (0 for a missing direction).
SymmetricEdges symmetric_edges(const std::vector<int32_t>& nbr, const std::vector<float>& w, int64_t n, int k);

}  // namespace surfgrad
