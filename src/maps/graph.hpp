// The kNN graph's incoming edges, shared by t-SNE and UMAP: attraction kernels gather them per
// point (in a fixed order, so results do not depend on thread timing).
#pragma once
#include <cstdint>
#include <vector>

namespace surfgrad {

// CSR in one array: [offset_0 … offset_N, edge ids…]; the edges into point i are
// list[N + 1 + offset_i … N + 1 + offset_{i+1}), each an index e of the [N, k] neighbour list
// (its source point is e / k). Hubs cost their degree, not a padded row of the largest degree.
inline std::vector<int32_t> incoming_edges(const std::vector<int32_t>& neighbours, int64_t n, int64_t k) {
  std::vector<int32_t> list(size_t(n + 1 + n * k), 0);
  for (int64_t e = 0; e < n * k; ++e) list[size_t(neighbours[size_t(e)]) + 1]++;
  for (int64_t i = 0; i < n; ++i) list[size_t(i + 1)] += list[size_t(i)];
  std::vector<int32_t> fill(list.begin(), list.begin() + n);
  for (int64_t e = 0; e < n * k; ++e) list[size_t(n + 1 + fill[size_t(neighbours[size_t(e)])]++)] = int32_t(e);
  return list;
}

}  // namespace surfgrad
